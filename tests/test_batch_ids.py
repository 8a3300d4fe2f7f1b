"""Ids of the user's own kind in the batch jobs (issue 26): ``ids=`` takes
ints of any kind (a list, any integer dtype, a pandas Index) or strings,
and every answer carries them back: the same answer as positions mapped
through the ids, strings ordered as Python orders them. A repeated id is
an error naming it, on every job."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rsimhash import batch

pd = pytest.importorskip("pandas")


def clustered(draw_seeds, n):
    """Fingerprints in a few tight clusters, with copies."""
    rng = np.random.default_rng(draw_seeds)
    centres = rng.integers(0, 2**63, size=max(1, n // 5), dtype=np.uint64)
    fps = centres[rng.integers(0, len(centres), size=n)]
    flips = rng.integers(0, 64, size=n).astype(np.uint64)
    flip = rng.random(n) < 0.5
    fps[flip] ^= np.uint64(1) << flips[flip]
    return fps


names_st = st.text(st.characters(blacklist_categories=("Cs",)), max_size=6)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 2**32), st.lists(names_st, min_size=0, max_size=40, unique=True))
def test_string_ids_answer_as_positions_mapped(seed, names):
    fps = clustered(seed, len(names))
    ids = np.empty(len(names), dtype=object)
    ids[:] = names
    k = 2
    # find_all: pairs of names, smaller first, rows sorted as strings
    want = sorted(tuple(sorted((names[a], names[b]))) for a, b in batch.find_all(fps, k).tolist())
    got = batch.find_all(fps, k, ids=names)
    assert [tuple(r) for r in got.tolist()] == want
    # dedup: the same mask, matched named
    keep, matched = batch.dedup(fps, k, return_matched=True)
    keep_s, matched_s = batch.dedup(fps, k, ids=names, return_matched=True)
    assert keep_s.tolist() == keep.tolist()
    assert matched_s.tolist() == [names[m] for m in matched.tolist()]
    # clusters: the same groups, members and clusters in string order
    members, labels = batch.clusters(fps, k)
    groups = {}
    for m, c in zip(members.tolist(), labels.tolist()):
        groups.setdefault(c, []).append(names[m])
    want_c = sorted(sorted(g) for g in groups.values())
    got_m, got_l = batch.clusters(fps, k, ids=names)
    rows = list(zip(got_m.tolist(), got_l.tolist()))
    got_groups = {}
    for m, c in rows:
        got_groups.setdefault(c, []).append(m)
    assert [got_groups[c] for c in sorted(got_groups)] == want_c
    assert all(g == sorted(g) for g in got_groups.values())


@pytest.mark.parametrize("kind", ["list", "int64", "int8", "pandas"])
def test_int_ids_of_any_kind_in_batch_jobs(kind):
    fps = np.array([0b1011, 0b1001, 1 << 40, 0b1011], dtype=np.uint64)
    raw = [7, 3, 9, 1]
    ids = {"list": raw, "int64": np.array(raw, np.int64), "int8": np.array(raw, np.int8), "pandas": pd.Index(raw)}[kind]
    assert batch.find_all(fps, 1, ids=ids).tolist() == [[1, 3], [1, 7], [3, 7]]
    assert batch.dedup(fps, 1, ids=ids, return_matched=True)[1].tolist() == [7, 7, 9, 7]
    members, labels = batch.clusters(fps, 1, ids=ids)
    assert members.tolist() == [1, 3, 7] and labels.tolist() == [0, 0, 0]


def test_string_ids_against_a_store_and_to_files(tmp_path):
    fps = np.array([0b1011, 0b1001, 1 << 40, 0b1011], dtype=np.uint64)
    old = np.array([0b0011, 1 << 41], dtype=np.uint64)
    names = ["d", "b", "c", "a"]
    got = batch.find_all(fps, 1, ids=names, against=old, against_ids=["old-x", "old-y"])
    assert got.tolist() == [["a", "old-x"], ["d", "old-x"]]
    keep, matched, in_old = batch.dedup(fps, 1, ids=names, against=old, against_ids=np.array([10, 11]), return_matched=True)
    assert keep.tolist() == [False, True, True, False]  # 0b1001 is 2 bits from the store
    assert matched.tolist() == [10, "b", "c", 10] and in_old.tolist() == [True, False, False, True]
    pq = pytest.importorskip("pyarrow.parquet")
    assert batch.find_all(fps, 1, ids=names, out=tmp_path / "p.parquet") == 3
    t = pq.read_table(tmp_path / "p.parquet")
    assert list(zip(t["id_a"].to_pylist(), t["id_b"].to_pylist())) == [("a", "b"), ("a", "d"), ("b", "d")]
    with pytest.raises(TypeError, match="with string ids write a .parquet file"):
        batch.find_all(fps, 1, ids=names, out=tmp_path / "p.npy")
    assert batch.clusters(fps, 1, ids=names, out=tmp_path / "c.tsv") == 3
    assert (tmp_path / "c.tsv").read_text() == "id\tcluster\na\t0\nb\t0\nd\t0\n"
    assert batch.clusters(fps, 1, ids=names, out=tmp_path / "c.parquet") == 3
    assert pq.read_table(tmp_path / "c.parquet")["id"].to_pylist() == ["a", "b", "d"]
    with pytest.raises(ValueError, match="tab or a line break"):
        batch.clusters(fps, 1, ids=["a\tb", "x", "y", "z"], out=tmp_path / "bad.tsv")
    assert not (tmp_path / "bad.tsv").exists()


def test_a_parquet_column_of_string_ids(tmp_path):
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    fps = np.array([0b1011, 0b1001, 1 << 40, 0b1011], dtype=np.uint64)
    pq.write_table(pa.table({"fp": fps, "url": ["u/d", "u/b", "u/c", "u/a"]}), tmp_path / "f.parquet")
    got = batch.find_all(tmp_path / "f.parquet", 1, column="fp", ids="url")
    assert got.tolist() == [["u/a", "u/b"], ["u/a", "u/d"], ["u/b", "u/d"]]


@pytest.mark.parametrize("ids", [[5, 6, 5, 7], ["a", "b", "a", "c"]])
def test_repeated_ids_are_an_error_in_every_job(ids, tmp_path):
    fps = np.array([1, 2, 3, 4], dtype=np.uint64)
    texts = ["a b c d", "e f g h", "a b c d e", "x y z"]
    calls = [
        lambda: batch.find_all(fps, 3, ids=ids),
        lambda: batch.dedup(fps, 3, ids=ids),
        lambda: batch.clusters(fps, 3, ids=ids),
        lambda: batch.similar_pairs(texts, 0.5, ids=ids, progress=False),
        lambda: batch.similar_clusters(texts, 0.5, ids=ids, progress=False),
    ]
    for call in calls:
        with pytest.raises(ValueError, match="distinct|given twice|more than once|repeated"):
            call()


def test_a_series_names_the_verified_pairs_by_its_labels():
    texts = pd.Series(
        ["the cat sat on the mat today", "dogs bark at night", "the cat sat on the mat today!"],
        index=["p", "q", "r"],
    )
    pairs, sims = batch.similar_pairs(texts, 0.9, progress=False)
    assert pairs.tolist() == [["p", "r"]]
    ids, labels = batch.similar_clusters(texts, 0.9, progress=False)
    assert ids.tolist() == ["p", "r"] and labels.tolist() == [0, 0]
