"""A new batch against a store of old fingerprints (``find_all`` and
``dedup`` with ``against=``), held to brute force: pairs between the two
sides only, the dedup of old + new among the new items, copies and dense
groups on either side, empty sides, 0 and 2**64-1, stores as arrays,
``.npy`` directories and Parquet."""

from __future__ import annotations

import os
import sys

import numpy as np
import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from rsimhash import batch  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)
from brute import popcount64  # noqa: E402
from test_batch import fingerprints  # noqa: E402

U64_MAX = (1 << 64) - 1
SETTINGS = settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def brute_cross(new: np.ndarray, old: np.ndarray, k: int) -> np.ndarray:
    if len(new) == 0 or len(old) == 0:
        return np.empty((0, 2), dtype=np.uint64)
    a, b = np.nonzero(popcount64(new[:, None] ^ old[None, :]) <= k)
    return np.stack([a, b], axis=1).astype(np.uint64)


def brute_dedup_against(new: np.ndarray, old: np.ndarray, k: int):
    """Keep, matched and matched_old as ``dedup(..., return_matched=True)``."""
    keep = np.zeros(len(new), dtype=bool)
    matched = np.arange(len(new), dtype=np.uint64)
    in_old = np.zeros(len(new), dtype=bool)
    kept: list = []
    for j, fp in enumerate(new):
        close_old = np.nonzero(popcount64(old ^ fp) <= k)[0] if len(old) else []
        if len(close_old):
            matched[j], in_old[j] = close_old[0], True
            continue
        close_new = [i for i in kept if popcount64(np.array([new[i] ^ fp]))[0] <= k]
        if close_new:
            matched[j] = close_new[0]
        else:
            keep[j] = True
            kept.append(j)
    return keep, matched, in_old


def plain_dedup(fps: np.ndarray, k: int) -> np.ndarray:
    return batch.dedup(fps, k=k, progress=False) if len(fps) else np.zeros(0, dtype=bool)


@st.composite
def two_sides(draw):
    """New and old drawn from one corpus (so that they share neighbours),
    with copies of new items in old now and then."""
    fps = draw(fingerprints(max_near=150))
    at = draw(st.integers(0, len(fps)))
    old, new = fps[:at], fps[at:]
    if len(new) and draw(st.booleans()):
        old = np.concatenate([old, np.repeat(new[:3], draw(st.integers(1, 40)))])
    return new, old


# A memory limit of 1 KiB works one table a pass (the store read once per table).
HOW = [dict(), dict(memory_limit=1024)]


@SETTINGS
@given(sides=two_sides(), k=st.integers(0, 6), how=st.sampled_from(HOW))
def test_pairs_between_the_sides_equal_brute_force(sides, k, how):
    new, old = sides
    got = batch.find_all(new, k=k, against=old, progress=False, **how)
    assert got.dtype == np.uint64 and got.shape[1] == 2
    assert got.tolist() == brute_cross(new, old, k).tolist()


@SETTINGS
@given(sides=two_sides(), k=st.integers(0, 6), how=st.sampled_from(HOW))
def test_dedup_against_equals_brute_force(sides, k, how):
    new, old = sides
    keep, matched, in_old = batch.dedup(new, k=k, against=old, return_matched=True, progress=False, **how)
    want = brute_dedup_against(new, old, k)
    assert keep.tolist() == want[0].tolist()
    assert matched.tolist() == want[1].tolist()
    assert in_old.tolist() == want[2].tolist()


@SETTINGS
@given(fps=fingerprints(max_near=150), k=st.integers(0, 5), data=st.data())
def test_incremental_days_equal_the_dedup_of_all(fps, k, data):
    """Day by day, each day against what the days before kept: the same
    items kept as one dedup of every day."""
    cuts = sorted(data.draw(st.lists(st.integers(0, len(fps)), min_size=2, max_size=2)))
    days = [fps[: cuts[0]], fps[cuts[0] : cuts[1]], fps[cuts[1] :]]
    store = np.empty(0, dtype=np.uint64)
    masks = []
    for day in days:
        keep = batch.dedup(day, k=k, against=store, progress=False) if len(day) else np.zeros(0, dtype=bool)
        masks.append(keep)
        store = np.concatenate([store, day[keep]])
    assert np.concatenate(masks).tolist() == plain_dedup(fps, k).tolist()


def test_copies_and_dense_balls_on_both_sides():
    rng = np.random.default_rng(7)
    centre = np.uint64(0x0123_4567_89AB_CDEF)
    flips = rng.integers(0, 12, size=(6000, 3))
    masks = (np.uint64(1) << flips.astype(np.uint64)).astype(np.uint64)
    ball = centre ^ masks[:, 0] ^ masks[:, 1] ^ masks[:, 2]
    new = np.concatenate([np.full(50_000, 0xFF, np.uint64), ball[:3000], np.array([0, U64_MAX], np.uint64)])
    old = np.concatenate([np.full(50_000, 0xFF, np.uint64), ball[3000:], np.array([U64_MAX - 1], np.uint64)])
    keep, matched, in_old = batch.dedup(new, k=3, against=old, return_matched=True, progress=False)
    assert not keep[:50_000].any() and (matched[:50_000] == 0).all() and in_old[:50_000].all()
    assert keep[-2] and not keep[-1] and matched[-1] == len(old) - 1
    small_new = new[49_990:50_010]
    pairs = batch.find_all(small_new, k=3, against=old, progress=False)
    assert pairs.tolist() == brute_cross(small_new, old, 3).tolist()


def test_empty_sides():
    some = np.array([0, U64_MAX, 5], dtype=np.uint64)
    empty = np.empty(0, dtype=np.uint64)
    assert batch.find_all(empty, k=3, against=some, progress=False).shape == (0, 2)
    assert batch.find_all(some, k=3, against=empty, progress=False).shape == (0, 2)
    assert batch.dedup(some, k=3, against=empty, progress=False).tolist() == [True, True, False]
    assert batch.dedup(empty, k=3, against=some, progress=False).tolist() == []


def test_stores_on_disk_and_ids(tmp_path):
    rng = np.random.default_rng(3)
    old = rng.integers(0, 2**63, size=3000, dtype=np.uint64)
    new = np.concatenate([old[::7] ^ np.uint64(0b101), rng.integers(0, 2**63, size=500, dtype=np.uint64)])
    store = tmp_path / "store"
    store.mkdir()
    for i, part in enumerate(np.array_split(old, 4)):
        np.save(store / f"part-{i:03d}.npy", part)
    want = brute_cross(new, old, 3)
    assert batch.find_all(new, k=3, against=str(store), progress=False).tolist() == want.tolist()
    new_ids = np.arange(len(new), dtype=np.uint64) + 1000
    old_ids = np.arange(len(old), dtype=np.uint64) * 3
    got = batch.find_all(new, k=3, against=old, ids=new_ids, against_ids=old_ids, progress=False)
    assert got.tolist() == np.stack([new_ids[want[:, 0]], old_ids[want[:, 1]]], axis=1).tolist()
    keep, matched, in_old = batch.dedup(new, k=3, against=str(store), ids=new_ids, return_matched=True, progress=False)
    assert (~keep[: len(old[::7])]).all() and in_old[: len(old[::7])].all()
    assert (matched[: len(old[::7])] == np.arange(0, len(old), 7)).all()
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    pq.write_table(pa.table({"fp": old, "doc": old_ids}), tmp_path / "store.parquet")
    got = batch.find_all(
        new, k=3, against=str(tmp_path / "store.parquet"), against_column="fp", against_ids="doc", progress=False
    )
    assert got[:, 1].tolist() == old_ids[want[:, 1]].tolist()


def test_bad_arguments(tmp_path):
    fps = np.array([1, 2], dtype=np.uint64)
    with pytest.raises(TypeError, match="against"):
        batch.dedup(fps, k=3, against=np.array([1.0, 2.0]), progress=False)
    with pytest.raises(ValueError, match="out="):
        batch.find_all(fps, k=3, against=fps, out=str(tmp_path / "p.npy"), progress=False)
    with pytest.raises(ValueError, match="copies"):
        batch.find_all(fps, k=3, against=fps, copies="first", progress=False)
    with pytest.raises(ValueError, match="ids"):
        batch.find_all(fps, k=3, against=fps, against_ids=np.arange(3, dtype=np.uint64), progress=False)
    with pytest.raises(OSError):
        batch.dedup(fps, k=3, against=str(tmp_path / "missing"), progress=False)
