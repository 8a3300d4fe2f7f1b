"""Index files written once and committed (``tests/data/golden_v1_*.rsh``,
made by ``tests/data/make_golden.py``; ``golden_cli_v1.rsh`` and
``golden_cli_v2.rsh``, by ``make_golden_cli.py``): today's reader loads them and answers
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


_cli_spec = importlib.util.spec_from_file_location(
    "make_golden_cli", os.path.join(os.path.dirname(__file__), "data", "make_golden_cli.py")
)
assert _cli_spec is not None and _cli_spec.loader is not None
golden_cli = importlib.util.module_from_spec(_cli_spec)
_cli_spec.loader.exec_module(golden_cli)


@pytest.mark.parametrize("mmap", [True, False])
def test_golden_cli_files_load_and_answer(mmap):
    """``golden_cli_v2.rsh`` (string ids, metadata) answers the records' URLs;
    ``golden_cli_v1.rsh`` (the ids-file era) answers ids 0..59 as before."""
    recs = golden_cli.records()
    fps = rsimhash.fingerprints([r["text"] for r in recs])
    new = rsimhash.Index.load(golden_cli.path(2), mmap=mmap)
    old = rsimhash.Index.load(golden_cli.path(1), mmap=mmap)
    assert (new.info()["format_version"], new.info()["keys"], len(new)) == (2, "str", 60)
    assert (old.info()["format_version"], old.info()["keys"], len(old)) == (1, "int", 60)
    assert new.metadata == {"mode": "words", "width": "3"} and old.metadata == {}
    urls = np.array([r["id"] for r in recs], dtype=object)
    for q in [int(f) for f in fps[::7]] + [int(fps[3]) ^ 0b11]:
        assert sorted(i for i, _ in new.query(q)) == sorted(urls[_brute(fps, np.arange(60), q, 3)].tolist())
        assert sorted(i for i, _ in old.query(q)) == _brute(fps, np.arange(60, dtype=np.uint64), q, 3)
    assert new.items()[1].tolist() == urls.tolist()


def test_the_writer_makes_the_same_bytes_of_the_cli_v2_file(tmp_path):
    golden_cli.golden_v2().save(tmp_path / "v2.rsh")
    with open(golden_cli.path(2), "rb") as f:
        assert (tmp_path / "v2.rsh").read_bytes() == f.read(), "the version-2 writer changed its bytes"
