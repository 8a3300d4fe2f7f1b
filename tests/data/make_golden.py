"""Writes the golden version-1 index files (``golden_v1_*.rsh``) that
``tests/test_golden_index.py`` loads: 1,503 fingerprints from a seeded
generator (pairs 2 bits apart, 0, 2**64-1 and a copy), ids ``7 * i``, k = 3,
added in two calls (a table run of 1,400 and 103 buffered), one file with
compressed tables (256-byte blocks) and one without.

Run it only to make a new format version: the test fails when a writer
change makes different bytes for version 1.

    python tests/data/make_golden.py
"""

from __future__ import annotations

import os

import numpy as np


def golden_fingerprints() -> np.ndarray:
    rng = np.random.default_rng(1)
    fps = rng.integers(0, 2**64, size=1500, dtype=np.uint64)
    fps[1::10] = fps[::10] ^ np.uint64(0b101)
    return np.concatenate([fps, np.array([0, 2**64 - 1, 0], dtype=np.uint64)])


def golden_index(compress: bool):
    import rsimhash

    fps = golden_fingerprints()
    index = rsimhash.Index(3, compress=compress, block_bytes=256) if compress else rsimhash.Index(3, compress=False)
    ids = np.arange(len(fps), dtype=np.uint64) * 7
    index.add(fps[:1400], ids=ids[:1400])
    index.add(fps[1400:], ids=ids[1400:])
    return index


def path(compress: bool) -> str:
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), f"golden_v1_{'compressed' if compress else 'raw'}.rsh")


if __name__ == "__main__":
    for compress in (True, False):
        golden_index(compress).save(path(compress))
        print(path(compress), os.path.getsize(path(compress)), "bytes")
