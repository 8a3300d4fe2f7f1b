"""Version-1 index files written once and committed (``tests/data/golden_v1_*.rsh``,
made by ``tests/data/make_golden.py``): today's reader loads them and answers
exactly, and today's writer makes the same bytes. A writer change that
alters the format fails here; it needs a new format version."""

from __future__ import annotations

import importlib.util
import os

import numpy as np
import pytest

import rsimhash

_spec = importlib.util.spec_from_file_location("make_golden", os.path.join(os.path.dirname(__file__), "data", "make_golden.py"))
assert _spec is not None and _spec.loader is not None
golden = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(golden)


def _brute(fps: np.ndarray, ids: np.ndarray, q: int, k: int) -> list:
    d = np.array([bin(int(f) ^ q).count("1") for f in fps])
    return sorted(int(i) for i in ids[d <= k])


@pytest.mark.parametrize("compress", [True, False])
@pytest.mark.parametrize("mmap", [True, False])
def test_golden_file_loads_and_answers(compress, mmap):
    index = rsimhash.Index.load(golden.path(compress), mmap=mmap)
    info = index.info()
    got = (info["items"], info["k"], info["compressed"], info["format_version"], info["spec_version"])
    assert got == (1503, 3, compress, 1, 1)
    assert info["runs"] == 1 and info["buffered"] == 103, "a table run and a buffer, both read"
    fps = golden.golden_fingerprints()
    ids = np.arange(len(fps), dtype=np.uint64) * 7
    for q in [int(f) for f in fps[::37]] + [0, 2**64 - 1, int(fps[5]) ^ 0b111]:
        got = sorted(int(i) for i, _ in index.query(q))
        assert got == _brute(fps, ids, q, 3), hex(q)
    pairs = index.find_all()
    assert len(pairs) == len({(int(a), int(b)) for a, b in pairs}) > 150


@pytest.mark.parametrize("compress", [True, False])
def test_the_writer_makes_the_same_bytes(tmp_path, compress):
    out = tmp_path / "again.rsh"
    golden.golden_index(compress).save(out)
    with open(golden.path(compress), "rb") as f:
        expected = f.read()
    assert out.read_bytes() == expected, "the version-1 writer changed its bytes: a new format needs a new version"
