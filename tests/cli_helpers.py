"""Shared pieces of the command-line tests: seeded corpora with planted
near-duplicates, a runner for ``python -m rsimhash.cli``, brute-force
references and checks of the one-line error contract.

Corpora: documents of random words from a fixed vocabulary; a share of them
are copies of an earlier document with a few words replaced (0 to 4), so
their fingerprints fall on both sides of small distances and a wrong
threshold, order or id mapping changes the expected output.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from typing import Any, Dict, List, Optional, Sequence

import numpy as np

import rsimhash

_SYLLABLES = ["ka", "lo", "mi", "ne", "ru", "sa", "ti", "vo", "zu", "pe", "gra", "sto", "fen", "dal", "wix"]


def vocabulary(seed: int = 7, size: int = 600) -> List[str]:
    rng = random.Random(seed)
    words = set()
    while len(words) < size:
        words.add("".join(rng.choice(_SYLLABLES) for _ in range(rng.randint(1, 4))))
    return sorted(words)


def make_records(
    n: int, seed: int = 0, *, dup_share: float = 0.4, words: Sequence[int] = (40, 120), string_ids: bool = False
) -> List[Dict[str, Any]]:
    """``n`` records ``{"id", "text"}``; about ``dup_share`` of them are an
    earlier text with 0..4 words replaced (0: an exact duplicate)."""
    rng = random.Random(seed)
    vocab = vocabulary()
    texts: List[str] = []
    for _ in range(n):
        if texts and rng.random() < dup_share:
            base = rng.choice(texts).split()
            for _ in range(rng.choice([0, 1, 1, 2, 3, 4])):
                base[rng.randrange(len(base))] = rng.choice(vocab)
            texts.append(" ".join(base))
        else:
            texts.append(" ".join(rng.choice(vocab) for _ in range(rng.randint(*words))))
    ids: List[Any] = [f"doc-{i:04d}" for i in range(n)] if string_ids else [1000 + 7 * i for i in range(n)]
    return [{"id": i, "text": t} for i, t in zip(ids, texts)]


def write_jsonl(path: Any, records: List[Dict[str, Any]], end: str = "\n") -> bytes:
    data = "".join(json.dumps(r) + end for r in records).encode("utf-8")
    with open(path, "wb") as f:
        f.write(data)
    return data


def lines_of(data: bytes) -> List[bytes]:
    return data.splitlines(keepends=True)


def run_cli(
    *args: Any, input: Optional[bytes] = None, cwd: Any = None, env: Optional[Dict[str, str]] = None
) -> "subprocess.CompletedProcess[bytes]":
    """``python -m rsimhash.cli ARGS``, stdout and stderr captured (so: piped)."""
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "rsimhash.cli",
            *[a if isinstance(a, str) else os.fspath(a) if isinstance(a, os.PathLike) else str(a) for a in args],
        ],
        input=input,
        capture_output=True,
        cwd=cwd,
        timeout=120,
        env=env,
    )


def ok(proc: "subprocess.CompletedProcess[bytes]") -> "subprocess.CompletedProcess[bytes]":
    """Asserts a successful run with no traceback; returns it."""
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")
    assert b"Traceback" not in proc.stderr
    return proc


def stderr_lines(proc: "subprocess.CompletedProcess[bytes]") -> List[str]:
    return proc.stderr.decode("utf-8", "replace").splitlines()


def assert_one_error(proc: "subprocess.CompletedProcess[bytes]", code: int, *needles: str) -> str:
    """A failed run: exit ``code``, exactly one stderr line (``rsimhash: error: ...``)
    containing every needle, and no traceback. Returns the line."""
    lines = stderr_lines(proc)
    assert proc.returncode == code, (proc.returncode, lines)
    assert b"Traceback" not in proc.stderr
    assert len(lines) == 1, lines
    assert lines[0].startswith("rsimhash: error: "), lines
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])
    return lines[0]


def leftovers(directory: Any) -> List[str]:
    """Temporary files an output left behind in ``directory``."""
    return [n for n in os.listdir(directory) if n.endswith(".tmp")]


def read_tsv(data: bytes) -> List[List[str]]:
    return [line.split("\t") for line in data.decode("utf-8").splitlines()]


def fingerprints_of(records: List[Dict[str, Any]], **options: Any) -> np.ndarray:
    """One ``rsimhash.fingerprint`` call per text: independent of the batch path."""
    return np.array([rsimhash.fingerprint(r["text"], **options) for r in records], dtype=np.uint64)


def brute_dedup(fps: np.ndarray, k: int) -> "tuple[List[bool], List[Optional[int]]]":
    """Keep flags in order, and for each removed item the position of the
    earliest kept item within ``k`` (a plain loop over ``rsimhash.hamming``)."""
    kept_pos: List[int] = []
    keep: List[bool] = []
    match: List[Optional[int]] = []
    for i, fp in enumerate(fps.tolist()):
        first = next((j for j in kept_pos if rsimhash.hamming(fp, int(fps[j])) <= k), None)
        keep.append(first is None)
        match.append(first)
        if first is None:
            kept_pos.append(i)
    return keep, match


def build_ids_era(source: Any, idx: Any, k: int = 3, mode: str = "words", width: Optional[int] = None) -> None:
    """What ``rsimhash index build --input SOURCE --output IDX`` wrote before
    index files kept the records' ids (issue 38, item 6): a version-1 index
    of ids 0, 1, ... and the ids file ``IDX.ids`` beside it (settings line,
    ``hash<TAB>id`` lines, end line with the count and CRC-32), for the
    tests of files of that era."""
    import zlib

    width = width or (3 if mode == "words" else 4)
    with open(source, "rb") as f:
        records = [json.loads(line) for line in f if line.strip()]
    fps = rsimhash.fingerprints([r["text"] for r in records], mode=mode, width=width)
    index = rsimhash.Index(k)
    index.add(fps)
    index.save(idx)
    body = b"# rsimhash index ids, format 2: " + json.dumps({"mode": mode, "width": width}, sort_keys=True).encode() + b"\n"
    body += "".join(f"{int(h)}\t{r['id']}\n" for h, r in zip(fps, records)).encode()
    with open(os.fspath(idx) + ".ids", "wb") as f:
        f.write(body + b"# rsimhash index ids end: %d lines, crc32 %08x\n" % (len(records), zlib.crc32(body)))
