"""Shared pieces of the report tests: a fast seeded corpus, the page parsed
strictly by html5lib, its numbers and pairs read back, and the summary
lines of the runs parsed into numbers."""

from __future__ import annotations

import json
import re
from typing import Any, Dict, List, Optional

import numpy as np

html5lib = None
try:  # the tests that need it skip without it
    import html5lib  # type: ignore[no-redef]
except ImportError:  # pragma: no cover
    pass


def corpus_lines(n: int, seed: int = 3, words: int = 24, dup_share: float = 0.3) -> bytes:
    """``n`` JSON lines ``{"id": "r<i>", "text": ...}`` of ``words`` random
    six-letter words from a fixed vocabulary; about ``dup_share`` of them
    copy an earlier original with 0 to 4 words replaced, so the distances
    fall on both sides of small k. Built with numpy (10^5 lines in a fraction
    of a second): a text is a row of a byte matrix."""
    rng = np.random.default_rng(seed)
    vocab = rng.integers(ord("a"), ord("z") + 1, size=(4000, 7), dtype=np.uint8)
    vocab[:, 6] = ord(" ")
    idx = rng.integers(0, len(vocab), size=(n, words))
    copy = rng.random(n) < dup_share
    copy[0] = False
    originals = np.flatnonzero(~copy)
    rows = np.flatnonzero(copy)
    # each copy's original is one of the originals before it
    before = np.searchsorted(originals, rows) - 1
    source = originals[(rng.random(len(rows)) * (before + 1)).astype(np.int64)]
    idx[rows] = idx[source]
    changes = rng.integers(0, 5, size=len(rows))
    at = rng.integers(0, words, size=(len(rows), 4))
    new = rng.integers(0, len(vocab), size=(len(rows), 4))
    for j in range(4):
        hit = changes > j
        idx[rows[hit], at[hit, j]] = new[hit, j]
    text = vocab[idx].reshape(n, words * 7)[:, :-1]
    return b"".join(b'{"id": "r%d", "text": "%s"}\n' % (i, t) for i, t in enumerate(map(bytes, text)))


def parse(page: bytes) -> Any:
    """The page as an ElementTree, parsed by html5lib in strict mode (any
    parse error raises)."""
    assert html5lib is not None
    parser = html5lib.HTMLParser(strict=True, namespaceHTMLElements=False)
    return parser.parse(page)


def numbers(doc: Any) -> Dict[str, str]:
    """The run-in-numbers table: ``data-key`` -> ``data-value``."""
    return {td.get("data-key"): td.get("data-value") for td in doc.iter("td") if td.get("data-key")}


def shown_text(elem: Any) -> str:
    """The text an element shows with its folds open: everything but the
    ``<summary>`` of each ``details.fold``."""
    out = [elem.text or ""]
    for child in elem:
        if child.tag != "summary":
            out.append(shown_text(child))
        out.append(child.tail or "")
    return "".join(out)


def classes(elem: Any) -> List[str]:
    return (elem.get("class") or "").split()


def pairs(doc: Any) -> List[Dict[str, Any]]:
    """Each pair article: distance, similarity, ids and the two texts shown."""
    out = []
    for art in doc.iter("article"):
        if "pair" not in classes(art):
            continue
        sides = [d for d in art.iter("div") if "side" in classes(d)]
        ids = [next(c for c in side.iter("code")).text for side in sides]
        texts = [next((shown_text(t) for t in side.iter("div") if "text" in classes(t)), None) for side in sides]
        out.append(
            {
                "distance": art.get("data-distance"),
                "similarity": art.get("data-similarity"),
                "ids": ids,
                "texts": texts,
                "id": art.get("id"),
            }
        )
    return out


def as_shown(text: str, limit: int) -> str:
    """A text as the page shows it (cut, then with the characters HTML
    cannot carry replaced, line ends as an HTML parser reads them)."""
    from rsimhash._report.markup import clean

    return clean(text[:limit]).replace("\r\n", "\n").replace("\r", "\n")


_INT = r"([\d,]+)"
SUMMARY = {
    "dedup": re.compile(
        rf"^rsimhash dedup: {_INT} records? read, {_INT} removed as near-duplicates \(.*?\), "
        rf"{_INT} kept, {_INT} bad lines?"
    ),
    "cluster": re.compile(
        rf"^rsimhash cluster: {_INT} records? read, {_INT} clusters(?: of two or more)? holding "
        rf"{_INT} records?.*?, {_INT} bad lines?"
    ),
    "find-all": re.compile(
        rf"^rsimhash find-all: {_INT} (?:fingerprints?|records?) read(?: \({_INT} distinct\))?, "
        rf"{_INT} pairs? .*?, {_INT} bad lines?"
    ),
}
KEYS = {
    "dedup": ["records", "removed", "kept", "bad_lines"],
    "cluster": ["records", "clusters", "clustered", "bad_lines"],
    "find-all": ["records", "distinct", "pairs", "bad_lines"],
}


def summary_numbers(kind: str, line: str) -> Dict[str, str]:
    """The numbers of a run's summary line, by the page's keys."""
    m = SUMMARY[kind].match(line)
    assert m, f"not a {kind} summary line: {line!r}"
    return {k: v.replace(",", "") for k, v in zip(KEYS[kind], m.groups()) if v is not None}


def texts_by_id(path: Any) -> Dict[str, str]:
    out: Dict[str, str] = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            r = json.loads(line)
            out.setdefault(str(r["id"]), r["text"])
    return out


def check_pairs(doc: Any, texts: Dict[str, str], limit: int, ids: Optional[List[str]] = None) -> int:
    """Every pair shown reconstructs both texts from its diff; returns how many."""
    found = pairs(doc)
    for p in found:
        for rid, shown in zip(p["ids"], p["texts"]):
            value = re.match(r"^\d+ \(record (.*)\)$", rid)  # find-all's value pairs name the record
            rid = value.group(1) if value else rid
            assert shown == as_shown(texts[rid], limit), (p["id"], rid)
    return len(found)
