#!/usr/bin/env python3
"""A wheel's answers against the x86-64 build's, on saved reference data.

    python scripts/wheel-smoke.py --write DIR    # on x86-64: make the reference
    python scripts/wheel-smoke.py --check DIR [--out DIR2]

``--write`` (run once with an x86-64 build, its output kept in
tests/data/wheel_reference/) saves 300 mixed-Unicode texts (ASCII, accents,
Greek, Cyrillic, CJK, Arabic, emoji, combining marks, odd spaces; empty to
several kilobytes, so the x86-64 build's vector paths run on them), their
fingerprints in three settings, an index's answers (``query_batch`` and
``find_all`` at k = 3 and 6) and the index file itself.

``--check`` (scripts/test-wheel-aarch64.sh runs it under emulation) computes
the same with the installed rsimhash and fails on any difference: the
fingerprints one by one and in a batch, the answers of an index built here,
the x86-64 index file loaded here (``verify``, the same answers) and this
build's own save of the same index, which must be byte-identical to the
x86-64 file (so files go both ways). ``--out`` keeps that file.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import sys
import tempfile
from pathlib import Path

import numpy as np

import rsimhash

SETTINGS = [("words", 3), ("chars", 4), ("words", 1)]
KS = (3, 6)
POOLS = [
    "the quick brown fox jumps over lazy dog city council voted budget library rain weekend".split(),
    "café naïve résumé über straße façade jalapeño smørrebrød Ærø Œuvre".split(),
    "αλφα βήτα γάμμα δέλτα Ελλάδα μήλο".split(),
    "привет мир Москва ёлка съезд Україна".split(),
    ["漢字", "日本語", "中文", "東京", "北京", "한국어", "カタカナ", "ひらがな"],
    "مرحبا العالم كتاب مدرسة".split(),
    ["😀", "🎉", "👩\u200d💻", "🇫🇷", "🧪", "❤\ufe0f"],
    ["e\u0301", "a\u0308", "n\u0303", "\u0915\u094d\u0937", "Z\u0351\u0352"],
    ["2026", "3.14", "#42", "U.S.A.", "e-mail", "don't", "C++", "a_b"],
]
SPACES = [" ", " ", " ", "  ", "\t", "\n", "\u00a0", "\u3000", "\u2009", ", ", ". ", "! ", " — "]


def make_texts(n: int = 300, seed: int = 41) -> list[str]:
    rnd = random.Random(seed)
    texts = ["", " ", "a", "😀", "e\u0301"]
    while len(texts) < n:
        words = rnd.choice([3, 12, 60, 150, 500])
        pools = rnd.sample(range(len(POOLS)), rnd.randint(1, 3))
        parts = []
        for _ in range(rnd.randint(1, words)):
            parts.append(rnd.choice(POOLS[rnd.choice(pools)]))
            parts.append(rnd.choice(SPACES))
        text = "".join(parts)
        if rnd.random() < 0.3 and texts:  # a near-copy of an earlier text
            base = rnd.choice(texts)
            text = base[: len(base) // 2] + rnd.choice(SPACES) + text[:40] + base[len(base) // 2 :]
        texts.append(text)
    return texts


def fingerprints(texts: list[str]) -> dict[str, list[int]]:
    return {f"{mode}/{width}": [rsimhash.fingerprint(t, mode=mode, width=width) for t in texts] for mode, width in SETTINGS}


def answers(index: rsimhash.Index, fps: np.ndarray) -> dict[str, list]:
    out: dict[str, list] = {}
    for k in KS:
        qi, ids, dist = index.query_batch(fps, k=k)
        out[f"query_batch/{k}"] = [qi.tolist(), ids.tolist(), dist.tolist()]
        out[f"find_all/{k}"] = index.find_all(k=k).tolist()
    return out


def build_index(fps: np.ndarray) -> rsimhash.Index:
    index = rsimhash.Index(k=max(KS))
    index.add(fps)
    return index


def write(ref: Path) -> None:
    ref.mkdir(parents=True, exist_ok=True)
    texts = make_texts()
    fps = fingerprints(texts)
    first = np.array(fps["words/3"], dtype=np.uint64)
    index = build_index(first)
    index.save(ref / "index_x86_64.rsh")
    doc = {"rsimhash": rsimhash.__version__, "texts": texts, "fingerprints": fps, "answers": answers(index, first)}
    (ref / "reference.json").write_text(json.dumps(doc, ensure_ascii=False, separators=(",", ":")) + "\n", encoding="utf-8")
    print(f"wrote {ref}: {len(texts)} texts, {sum(len(v) for v in fps.values())} fingerprints")


def check(ref: Path, out: Path | None) -> int:
    doc = json.loads((ref / "reference.json").read_text(encoding="utf-8"))
    texts = doc["texts"]
    bad: list[str] = []

    def same(what: str, got: object, want: object) -> None:
        print(f"  {'ok  ' if got == want else 'FAIL'}  {what}")
        if got != want:
            bad.append(what)

    mine = fingerprints(texts)
    for key, want in doc["fingerprints"].items():
        same(f"fingerprint, {key}: {len(want)} texts", mine[key], want)
        mode, width = key.split("/")
        batch = rsimhash.fingerprints(texts, mode=mode, width=int(width)).tolist()
        same(f"fingerprints (batch), {key}", batch, want)
    fps = np.array(doc["fingerprints"]["words/3"], dtype=np.uint64)
    index = build_index(fps)
    same("index built here: query_batch and find_all at k = 3, 6", answers(index, fps), doc["answers"])
    loaded = rsimhash.Index.load(ref / "index_x86_64.rsh")
    loaded.verify()
    same("x86-64 index file loaded here: verify, query_batch and find_all", answers(loaded, fps), doc["answers"])
    with tempfile.TemporaryDirectory() as tmp:
        mine_file = Path(tmp) / "index_here.rsh"
        index.save(mine_file)
        same(
            "this build's save of the same index is byte-identical to the x86-64 file",
            mine_file.read_bytes(),
            (ref / "index_x86_64.rsh").read_bytes(),
        )
        if out is not None:
            out.mkdir(parents=True, exist_ok=True)
            shutil.copy(mine_file, out / "index_here.rsh")
    print(f"wheel-smoke: {len(bad)} of the checks failed" if bad else "wheel-smoke: every answer equals the x86-64 build's")
    return 1 if bad else 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    group = ap.add_mutually_exclusive_group(required=True)
    group.add_argument("--write", type=Path, metavar="DIR")
    group.add_argument("--check", type=Path, metavar="DIR")
    ap.add_argument("--out", type=Path, help="with --check: keep this build's index file here")
    args = ap.parse_args()
    where = Path(rsimhash.__file__).parent
    print(f"rsimhash {rsimhash.__version__} from {where}, portable paths: {rsimhash._rsimhash.portable_paths()}")
    if args.write:
        write(args.write)
        return 0
    return check(args.check, args.out)


if __name__ == "__main__":
    sys.exit(main())
