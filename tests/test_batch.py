"""``rsimhash.batch`` against ``Index`` (itself tested against brute force)
and against brute force directly: every answer equal on random, heavily
clustered, duplicated and extreme fingerprints, k = 0..8, in memory, in
parts and spilled; every source kind; ids; outputs; bad input.

The resume and kill tests are in tests/test_batch_resume.py.
"""

from __future__ import annotations

import os
import sys

import numpy as np
import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

import rsimhash  # noqa: E402
from rsimhash import batch  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)
from brute import popcount64  # noqa: E402

U64_MAX = (1 << 64) - 1
_HC = [HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much]
MEDIUM = settings(max_examples=60, deadline=None, suppress_health_check=_HC)

# How a job may run: in memory; each table in many parts read again from the
# source; each table in many parts spilled to disk (a 1 KiB limit leaves 64
# items a part).
HOW = [dict(), dict(memory_limit=1024, _spill=False), dict(memory_limit=1024, _spill=True)]


@st.composite
def fingerprints(draw, max_centers=40, max_near=300):
    """Centers (random, 0, 2**64-1, one-block values) and items 0 to 9 bits
    from one of them, exact copies included."""
    special = st.sampled_from([0, U64_MAX, 1, U64_MAX - 1, 0xFFFF, 0xFFFF << 48])
    centers = draw(st.lists(st.one_of(st.integers(0, U64_MAX), special), min_size=1, max_size=max_centers))
    near = draw(
        st.lists(st.tuples(st.integers(0, len(centers) - 1), st.lists(st.integers(0, 63), max_size=9)), max_size=max_near)
    )
    out = list(centers)
    for c, flips in near:
        v = centers[c]
        for b in flips:
            v ^= 1 << b
        out.append(v)
    order = draw(st.permutations(range(len(out))))
    return np.array([out[i] for i in order], dtype=np.uint64)


def brute_pairs(fps: np.ndarray, k: int) -> np.ndarray:
    n = len(fps)
    if n < 2:
        return np.empty((0, 2), dtype=np.uint64)
    d = popcount64(fps[:, None] ^ fps[None, :])
    a, b = np.nonzero(np.triu(d <= k, 1))
    return np.stack([a, b], axis=1).astype(np.uint64)


def index_of(fps: np.ndarray, k: int, ids=None) -> rsimhash.Index:
    index = rsimhash.Index(k)
    if len(fps):
        index.add(fps, ids)
    return index


def flat(clusters) -> "tuple[np.ndarray, np.ndarray]":
    ids = np.concatenate(clusters) if clusters else np.empty(0, np.uint64)
    labels = np.repeat(np.arange(len(clusters), dtype=np.uint64), [len(c) for c in clusters])
    return ids, labels


@MEDIUM
@given(fps=fingerprints(), k=st.integers(0, 8), how=st.sampled_from(HOW))
def test_find_all_equals_index_and_brute_force(fps, k, how):
    got = batch.find_all(fps, k, **how)
    assert got.dtype == np.uint64 and got.shape[1:] == (2,)
    np.testing.assert_array_equal(got, brute_pairs(fps, k))
    np.testing.assert_array_equal(got, index_of(fps, k).find_all())


@MEDIUM
@given(fps=fingerprints(), k=st.integers(0, 8), how=st.sampled_from(HOW), min_size=st.integers(1, 3))
def test_clusters_equal_index(fps, k, how, min_size):
    index = index_of(fps, k)
    for method in ("connected", "leader"):
        ids, labels = batch.clusters(fps, k, method=method, min_size=min_size, **how)
        want_ids, want_labels = flat(index.cluster(min_size=min_size, method=method))
        np.testing.assert_array_equal(ids, want_ids)
        np.testing.assert_array_equal(labels, want_labels)


@MEDIUM
@given(fps=fingerprints(), k=st.integers(0, 8), how=st.sampled_from(HOW))
def test_dedup_equals_add_unique(fps, k, how):
    keep, matched = batch.dedup(fps, k, return_matched=True, **how)
    is_new, index_matched = rsimhash.Index(k).add_unique(fps)
    np.testing.assert_array_equal(keep, is_new)
    np.testing.assert_array_equal(matched[~keep], index_matched[~is_new])
    np.testing.assert_array_equal(matched[keep], np.flatnonzero(keep))
    np.testing.assert_array_equal(batch.dedup(fps, k, **how), keep)


@MEDIUM
@given(fps=fingerprints(max_near=120), k=st.integers(0, 5), seed=st.integers(0, 2**32 - 1))
def test_ids_in_any_order(fps, k, seed):
    rng = np.random.default_rng(seed)
    # Distinct (an odd multiplier is a bijection of uint64), large and in no order.
    ids = rng.permutation(len(fps)).astype(np.uint64) * np.uint64(0x9E3779B97F4A7C15)
    index = index_of(fps, k, ids)
    np.testing.assert_array_equal(batch.find_all(fps, k, ids=ids), index.find_all())
    got = batch.clusters(fps, k, ids=ids, min_size=1)
    want = flat(index.cluster(min_size=1))
    np.testing.assert_array_equal(got[0], want[0])
    np.testing.assert_array_equal(got[1], want[1])


def planted(n: int, seed: int = 5) -> np.ndarray:
    """Random fingerprints, 1 % of them an earlier one with 1 to 3 bits flipped,
    a few exact copies, and the extremes."""
    rng = np.random.default_rng(seed)
    fps = rng.integers(0, 2**64, size=n, dtype=np.uint64)
    dup = np.flatnonzero(rng.random(n) < 0.01)
    dup = dup[dup > 0]
    src = (rng.random(len(dup)) * dup).astype(np.int64)
    flips = np.zeros(len(dup), dtype=np.uint64)
    for _ in range(3):
        flips ^= np.left_shift(np.uint64(1), rng.integers(0, 64, size=len(dup)).astype(np.uint64))
    fps[dup] = fps[src] ^ flips
    fps[-4:] = [0, 0, U64_MAX, fps[0]]
    return fps


@pytest.mark.parametrize("how", HOW[1:], ids=["parts", "spilled"])
def test_large_input_in_parts(how, tmp_path):
    fps = planted(60_000)
    want = index_of(fps, 3).find_all()
    np.testing.assert_array_equal(batch.find_all(fps, 3, **how), want)
    path = tmp_path / "fps.npy"
    np.save(path, fps)
    np.testing.assert_array_equal(batch.find_all(str(path), 3, **how), want)
    assert sorted(os.listdir(tmp_path)) == ["fps.npy"], "nothing left behind"


def test_sources_all_give_the_same_answer(tmp_path):
    fps = planted(20_000)
    want = batch.find_all(fps, 3)
    np.save(tmp_path / "all.npy", fps)
    parts = tmp_path / "parts"
    parts.mkdir()
    for i, lo in enumerate(range(0, len(fps), 7000)):
        np.save(parts / f"{i:02d}.npy", fps[lo : lo + 7000])
    mm = np.load(tmp_path / "all.npy", mmap_mode="r")
    for source in (
        str(tmp_path / "all.npy"),
        tmp_path / "all.npy",
        mm,
        str(parts),
        sorted(str(p) for p in parts.iterdir()),
        np.memmap(tmp_path / "all.npy", dtype=np.uint64, mode="r", offset=128),
    ):
        np.testing.assert_array_equal(batch.find_all(source, 3), want)
    strided = np.repeat(fps, 2)[::2]
    np.testing.assert_array_equal(batch.find_all(strided, 3), want)


def test_parquet_sources(tmp_path):
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    fps = planted(10_000)
    ids = np.arange(10_000, dtype=np.uint64) * 3 + 7
    signed = fps.view(np.int64)
    pq.write_table(pa.table({"fp": fps, "doc": ids, "text": ["x"] * len(fps)}), tmp_path / "u.parquet", row_group_size=3000)
    pq.write_table(pa.table({"simhash": signed}), tmp_path / "s.parquet")
    want = batch.find_all(fps, 3)
    np.testing.assert_array_equal(batch.find_all(tmp_path / "u.parquet", 3, column="fp"), want)
    np.testing.assert_array_equal(batch.find_all(tmp_path / "s.parquet", 3), want)  # its one integer column
    np.testing.assert_array_equal(batch.find_all(tmp_path / "u.parquet", 3, column="fp", ids="doc"), ids[want])
    keep = batch.dedup(str(tmp_path / "u.parquet"), 3, column="fp")
    np.testing.assert_array_equal(keep, batch.dedup(fps, 3))
    with pytest.raises(ValueError, match="no column 'nope'.*fp, doc, text"):
        batch.find_all(tmp_path / "u.parquet", 3, column="nope")
    with pytest.raises(TypeError, match="'text' has type string"):
        batch.find_all(tmp_path / "u.parquet", 3, column="text")
    with pytest.raises(ValueError, match="name the fingerprint column"):
        batch.find_all(tmp_path / "u.parquet", 3)
    pq.write_table(pa.table({"fp": pa.array([1, None, 3], type=pa.uint64())}), tmp_path / "null.parquet")
    with pytest.raises(ValueError, match="row 2: column 'fp' is null"):
        batch.find_all(tmp_path / "null.parquet", 3)
    assert sorted(os.listdir(tmp_path)) == ["null.parquet", "s.parquet", "u.parquet"]


def test_outputs(tmp_path):
    fps = planted(20_000)
    want = batch.find_all(fps, 3)
    assert batch.find_all(fps, 3, out=tmp_path / "p.npy") == len(want)
    np.testing.assert_array_equal(np.load(tmp_path / "p.npy"), want)
    pq = pytest.importorskip("pyarrow.parquet")
    assert batch.find_all(fps, 3, out=str(tmp_path / "p.parquet")) == len(want)
    table = pq.read_table(tmp_path / "p.parquet")
    assert table.column_names == ["id_a", "id_b"]
    np.testing.assert_array_equal(np.stack([table["id_a"].to_numpy(), table["id_b"].to_numpy()], 1), want)
    ids, labels = batch.clusters(fps, 3)
    assert batch.clusters(fps, 3, out=tmp_path / "c.tsv") == len(ids)
    lines = (tmp_path / "c.tsv").read_text().splitlines()
    assert lines[0] == "id\tcluster" and lines[1:] == [f"{a}\t{b}" for a, b in zip(ids.tolist(), labels.tolist())]
    assert batch.clusters(fps, 3, out=tmp_path / "c.parquet", method="leader") == len(batch.clusters(fps, 3, method="leader")[0])
    assert sorted(os.listdir(tmp_path)) == ["c.parquet", "c.tsv", "p.npy", "p.parquet"], "no work files left"


def test_empty_and_tiny_sources(tmp_path):
    for n in (0, 1):
        fps = np.zeros(n, dtype=np.uint64)
        assert batch.find_all(fps, 3).shape == (0, 2)
        assert batch.dedup(fps, 3).tolist() == [True] * n
        ids, labels = batch.clusters(fps, 3, min_size=1)
        assert ids.tolist() == list(range(n)) and labels.tolist() == [0] * n
    assert batch.find_all(np.zeros(0, np.uint64), 3, out=tmp_path / "e.npy") == 0
    assert np.load(tmp_path / "e.npy").shape == (0, 2)


def test_progress_callback_counts_to_the_total():
    fps = planted(200_000)
    seen = []
    batch.find_all(fps, 3, memory_limit=1 << 20, progress=lambda *a: seen.append(a))
    assert seen, "called at least once, at the end"
    done, total = seen[-1][0], seen[-1][1]
    assert 0 < done == total
    assert all(a[0] <= b[0] for a, b in zip(seen, seen[1:])), "done only grows"
    assert len({a[1] for a in seen}) == 1, "one total for the whole job"


def test_progress_total_is_set_once_for_parts_and_spills(tmp_path):
    """The total a caller sees is fixed when the job begins (fingerprints
    times passes), through reading, parts and spills, and only grows to it;
    each step counts its own items."""
    fps = planted(300_000)
    for spill in (False, True):
        seen: list = []
        report = lambda *a, seen=seen: seen.append(a)  # noqa: E731
        batch.find_all(fps, 3, memory_limit=1 << 20, _spill=spill, workdir=tmp_path / f"w{spill}", progress=report)
        totals = {a[1] for a in seen if a[1]}
        assert len(totals) == 1, totals
        (total,) = totals
        assert total % len(fps) == 0, "fingerprints times passes"
        assert seen[-1][0] == total
        assert all(a[0] <= b[0] for a, b in zip(seen, seen[1:]))
        assert all(0 <= a[3] <= a[4] for a in seen), "a step's items within its size"


def test_memory_limits():
    from rsimhash.batch import parse_memory

    assert parse_memory("8GiB") == 8 << 30
    assert parse_memory("8g") == 8 << 30
    assert parse_memory("500MB") == 500 * 10**6
    assert parse_memory("1.5G") == 3 << 29
    assert parse_memory(4096) == 4096
    for bad in ("lots", "8 parsecs", "-1G", "0"):
        with pytest.raises(ValueError, match="memory_limit"):
            parse_memory(bad)
    with pytest.raises(TypeError, match="memory_limit"):
        parse_memory([8])


def test_bad_input(tmp_path):
    fps = planted(1000)
    with pytest.raises(TypeError, match=r"dtype uint64, got int64.*np.ascontiguousarray"):
        batch.find_all(fps.astype(np.int64), 3)
    with pytest.raises(ValueError, match=r"one-dimensional.*shape \(500, 2\)"):
        batch.find_all(fps.reshape(500, 2), 3)
    with pytest.raises(TypeError, match="source must be"):
        batch.find_all([1, 2, 3], 3)
    with pytest.raises(FileNotFoundError, match="missing.npy"):
        batch.find_all(tmp_path / "missing.npy", 3)
    (tmp_path / "text.npy").write_text("not an array")
    with pytest.raises(ValueError, match="text.npy"):
        batch.find_all(tmp_path / "text.npy", 3)
    np.save(tmp_path / "signed.npy", fps.view(np.int64))
    with pytest.raises((TypeError, ValueError), match=r"signed.npy.*int64"):
        batch.find_all(tmp_path / "signed.npy", 3)
    (tmp_path / "empty").mkdir()
    with pytest.raises(FileNotFoundError, match="no .npy or .parquet files"):
        batch.find_all(tmp_path / "empty", 3)
    with pytest.raises(ValueError, match="2 ids for 1000"):
        batch.find_all(fps, 3, ids=np.arange(2, dtype=np.uint64))
    with pytest.raises(ValueError, match="id 0 given twice"):
        batch.find_all(fps, 3, ids=np.zeros(1000, dtype=np.uint64))
    with pytest.raises(ValueError, match="k must be (an integer )?from 0 to 16"):
        batch.find_all(fps, 17)
    with pytest.raises(ValueError, match="method"):
        batch.clusters(fps, 3, method="nearest")
    with pytest.raises(ValueError, match="min_size"):
        batch.clusters(fps, 3, min_size=0)
    with pytest.raises(ValueError, match=r"\.npy or \.parquet"):
        batch.find_all(fps, 3, out=tmp_path / "pairs.csv")
    with pytest.raises(FileNotFoundError, match="does not exist"):
        batch.find_all(fps, 3, out=tmp_path / "no" / "such" / "pairs.npy")
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    with pytest.raises(OSError, match="a-file"):
        batch.find_all(fps, 3, workdir=blocker / "work")
    with pytest.raises(ValueError, match="threads"):
        batch.find_all(fps, 3, threads=0)
    assert sorted(os.listdir(tmp_path)) == ["a-file", "empty", "signed.npy", "text.npy"]
