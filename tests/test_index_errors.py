"""Bad input to ``rsimhash.Index`` raises a clear exception (the type the
contract names, with a message naming the problem), never crashes and never
leaves the index changed.  Message checks are loose, case-insensitive."""

from __future__ import annotations

import numpy as np
import pytest

rsimhash = pytest.importorskip("rsimhash")
if not hasattr(rsimhash, "Index"):
    pytest.skip("rsimhash.Index is not built yet", allow_module_level=True)

Index = rsimhash.Index
U64_MAX = (1 << 64) - 1

RANGE_WORDS = r"(?i)(negative|unsigned|range|u64|uint64|64.bit|overflow|too large|too big)"
DTYPE_WORDS = r"(?i)(uint64|u64|dtype|unsigned|type)"
DIM_WORDS = r"(?i)(1-d|1d|one.dim|dimension|ndim|shape|2-d|2d)"
K_WORDS = r"(?i)(\bk\b|distance|threshold)"
LEN_WORDS = r"(?i)(length|len|size|shape|same number|count|mismatch|per fingerprint|\d+ ids? for \d+)"
ID_WORDS = r"(?i)(\bids?\b|duplicate|already|exist|stored)"


def filled(k=3, n=10):
    idx = Index(k=k)
    fps = np.array([(i * 0x9E3779B97F4A7C15) % (1 << 64) for i in range(n)], dtype=np.uint64)
    fps[1] = fps[0] ^ np.uint64(1)  # one pair within k
    idx.add(fps)
    return idx


def snapshot(idx):
    return (
        len(idx),
        idx.find_all().tolist(),
        idx.query(0),
        idx.query(U64_MAX),
        idx.query_batch(np.array([1, 2], dtype=np.uint64))[1].tolist(),
    )


class Unchanged:
    """Context manager: the block raises, and the index answers as before."""

    def __init__(self, idx, exc, match=None):
        self.idx, self.exc, self.match = idx, exc, match

    def __enter__(self):
        self.before = snapshot(self.idx)
        self.raises = pytest.raises(self.exc, match=self.match)
        return self.raises.__enter__()

    def __exit__(self, *exc_info):
        out = self.raises.__exit__(*exc_info)
        assert snapshot(self.idx) == self.before, "index changed by a failed call"
        return out


# ---------------------------------------------------------------------------
# Constructor
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("k", [-1, -100])
def test_negative_k(k):
    with pytest.raises(ValueError, match=r"(?i)(\bk\b|negative|range|distance)"):
        Index(k=k)


@pytest.mark.parametrize("k", [1.5, "3", [3]])
def test_k_wrong_type(k):
    with pytest.raises(TypeError):
        Index(k=k)


def test_k_9_constructs_or_raises_valueerror():
    for k in (9, 10, 16, 64):
        try:
            idx = Index(k=k)
        except ValueError as e:
            assert str(e), "empty message"
            continue
        assert idx.k == k


@pytest.mark.parametrize("k", [65, 1000, 1 << 70])
def test_absurd_k(k):
    """Constructs (k is then reported back) or raises ValueError; no crash."""
    try:
        idx = Index(k=k)
    except (ValueError, OverflowError):
        return
    assert idx.k == k


def test_blocks_and_tables_are_keyword_only():
    with pytest.raises(TypeError):
        Index(3, 4)


@pytest.mark.parametrize("k,blocks", [(3, 3), (3, 2), (3, 1), (0, 0), (5, 5), (1, 0), (3, -1)])
def test_blocks_not_above_k(k, blocks):
    with pytest.raises(ValueError, match=r"(?i)block"):
        Index(k=k, blocks=blocks)


@pytest.mark.parametrize("blocks", [65, 1000])
def test_blocks_more_than_bits(blocks):
    with pytest.raises(ValueError, match=r"(?i)block"):
        Index(k=3, blocks=blocks)


@pytest.mark.parametrize("k", [1, 3, 5])
def test_unachievable_tables_names_the_achievable(k):
    ok = []
    for t in range(1, 61):
        try:
            Index(k=k, tables=t)
            ok.append(t)
        except ValueError:
            pass
    for bad in (0, 10**6):
        with pytest.raises(ValueError, match=r"(?i)table") as info:
            Index(k=k, tables=bad)
        msg = str(info.value)
        assert any(str(t) in msg for t in ok), "message should name the achievable table counts %s: %r" % (ok[:10], msg)
    bad = next((t for t in range(1, 61) if t not in ok), None)
    if bad is not None:
        with pytest.raises(ValueError, match=r"(?i)table"):
            Index(k=k, tables=bad)


def test_negative_tables():
    with pytest.raises(ValueError, match=r"(?i)table"):
        Index(k=3, tables=-1)


# ---------------------------------------------------------------------------
# add: fingerprints
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("bad", [-1, U64_MAX + 1, 1 << 100, -(1 << 64)])
def test_add_int_out_of_range(bad):
    idx = filled()
    with Unchanged(idx, ValueError, RANGE_WORDS):
        idx.add(bad)


@pytest.mark.parametrize("bad", [[1, -1], [U64_MAX + 1], [0, 1, 1 << 65]])
def test_add_list_out_of_range(bad):
    idx = filled()
    with Unchanged(idx, ValueError, RANGE_WORDS):
        idx.add(bad)


@pytest.mark.parametrize("bad", [1.0, 1.5, "x", None, object()])
def test_add_wrong_type(bad):
    idx = filled()
    with Unchanged(idx, TypeError):
        idx.add(bad)


@pytest.mark.parametrize("bad", [[1, 2.5], [1, "2"], [None]])
def test_add_list_with_non_int(bad):
    idx = filled()
    with Unchanged(idx, TypeError):
        idx.add(bad)


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int64, np.int32, np.int8])
def test_add_wrong_dtype(dtype):
    idx = filled()
    with Unchanged(idx, TypeError, DTYPE_WORDS):
        idx.add(np.array([1, 2, 3], dtype=dtype))


def test_add_object_array():
    idx = filled()
    with Unchanged(idx, (TypeError, ValueError)):
        idx.add(np.array([1, "x"], dtype=object))


@pytest.mark.parametrize("shape", [(2, 2), (1, 3), (3, 1), (0, 2), (2, 2, 2)])
def test_add_not_1d(shape):
    idx = filled()
    with Unchanged(idx, ValueError, DIM_WORDS):
        idx.add(np.zeros(shape, dtype=np.uint64))


def test_add_0d_array_is_one_fp_or_rejected():
    """A 0-d uint64 array is either one fingerprint or a clear error."""
    idx = filled()
    n = len(idx)
    try:
        got = idx.add(np.array(7, dtype=np.uint64))
    except (TypeError, ValueError):
        assert len(idx) == n
        return
    assert len(got) == 1 and len(idx) == n + 1
    assert (int(got[0]), 0) in idx.query(7)


@pytest.mark.parametrize("dtype", [">u8", np.uint32, np.uint8, np.bool_])
def test_add_other_unsigned_dtypes_are_right_or_rejected(dtype):
    """Never silently wrong: either rejected, or the values are stored as given."""
    idx = Index(k=0)
    vals = np.array([1, 2, 200], dtype=dtype) if dtype != np.bool_ else np.array([True, False])
    try:
        ids = idx.add(vals)
    except (TypeError, ValueError):
        assert len(idx) == 0
        return
    for i, v in zip(ids.tolist(), vals.tolist()):
        assert idx.query(int(v)) and (i, 0) in idx.query(int(v)), (dtype, v)


# ---------------------------------------------------------------------------
# add: ids
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("n_ids", [0, 2, 4])
def test_add_ids_wrong_length(n_ids):
    idx = filled()
    with Unchanged(idx, ValueError, LEN_WORDS):
        idx.add(np.array([1, 2, 3], dtype=np.uint64), ids=np.arange(100, 100 + n_ids, dtype=np.uint64))


def test_add_ids_wrong_length_list():
    idx = filled()
    with Unchanged(idx, ValueError, LEN_WORDS):
        idx.add([1, 2, 3], ids=[100, 101])
    with Unchanged(idx, ValueError, LEN_WORDS):
        idx.add(5, ids=[100, 101])


def test_add_duplicate_id_in_one_call():
    idx = filled()
    with Unchanged(idx, ValueError, ID_WORDS):
        idx.add([1, 2, 3], ids=[100, 101, 100])


def test_add_id_already_stored():
    idx = filled()  # ids 0..9
    with Unchanged(idx, ValueError, ID_WORDS):
        idx.add([1], ids=[5])
    with Unchanged(idx, ValueError, ID_WORDS):  # only the last one clashes
        idx.add([1, 2, 3], ids=[100, 101, 9])


def test_failed_add_leaves_the_id_counter_alone():
    idx = filled()  # ids 0..9
    with pytest.raises(ValueError):
        idx.add([1, 2], ids=[1000, 3])
    assert idx.add(7).tolist() == [10]


def test_readding_a_removed_id_is_allowed():
    idx = filled()
    assert idx.remove(5) == 1
    assert idx.add([123], ids=[5]).tolist() == [5]
    assert (5, 0) in idx.query(123)


@pytest.mark.parametrize("bad", [[-1], [U64_MAX + 1]])
def test_add_ids_out_of_range(bad):
    idx = filled()
    with Unchanged(idx, ValueError, RANGE_WORDS):
        idx.add([1], ids=bad)


def test_add_ids_float_dtype():
    idx = filled()
    with Unchanged(idx, TypeError, DTYPE_WORDS):
        idx.add(np.array([1], dtype=np.uint64), ids=np.array([100.0]))


def test_add_ids_2d():
    idx = filled()
    with Unchanged(idx, ValueError, DIM_WORDS):
        idx.add(np.array([1, 2], dtype=np.uint64), ids=np.array([[100], [101]], dtype=np.uint64))


# ---------------------------------------------------------------------------
# query / query_batch
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("bad", [-1, U64_MAX + 1, 1 << 64, 1 << 100])
def test_query_out_of_range(bad):
    idx = filled()
    with pytest.raises(ValueError, match=RANGE_WORDS):
        idx.query(bad)


@pytest.mark.parametrize("bad", ["x", b"x", 1.5, 1.0, None, [1], np.array([1], dtype=np.uint64)])
def test_query_wrong_type(bad):
    idx = filled()
    with pytest.raises(TypeError):
        idx.query(bad)


@pytest.mark.parametrize("dtype", [np.float64, np.int64, np.int32])
def test_query_batch_wrong_dtype(dtype):
    idx = filled()
    with pytest.raises(TypeError, match=DTYPE_WORDS):
        idx.query_batch(np.array([1, 2], dtype=dtype))


def test_query_batch_not_1d():
    idx = filled()
    with pytest.raises(ValueError, match=DIM_WORDS):
        idx.query_batch(np.zeros((2, 2), dtype=np.uint64))


@pytest.mark.parametrize("bad", [[-1], [U64_MAX + 1]])
def test_query_batch_list_out_of_range(bad):
    idx = filled()
    with pytest.raises(ValueError, match=RANGE_WORDS):
        idx.query_batch(bad)


def test_query_batch_wrong_type():
    idx = filled()
    with pytest.raises(TypeError):
        idx.query_batch("abc")
    with pytest.raises(TypeError):
        idx.query_batch([1.5])


# ---------------------------------------------------------------------------
# k argument of every query-like method
# ---------------------------------------------------------------------------
def _calls(idx, k):
    fps = np.array([1, 2], dtype=np.uint64)
    return {
        "query": lambda: idx.query(1, k=k),
        "query_batch": lambda: idx.query_batch(fps, k=k),
        "find_all": lambda: idx.find_all(k=k),
        "cluster": lambda: idx.cluster(k=k),
        "cluster_leader": lambda: idx.cluster(k=k, method="leader"),
        "add_unique": lambda: idx.add_unique(fps, k=k),
    }


METHODS = ["query", "query_batch", "find_all", "cluster", "cluster_leader", "add_unique"]


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("index_k,k", [(3, 4), (3, 64), (0, 1), (5, 6), (3, 1 << 40)])
def test_k_above_index_k(method, index_k, k):
    idx = filled(k=index_k)
    with Unchanged(idx, ValueError, K_WORDS):
        _calls(idx, k)[method]()


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("k", [-1, -5])
def test_negative_k_argument(method, k):
    idx = filled()
    with Unchanged(idx, ValueError, r"(?i)(\bk\b|negative|range|distance)"):
        _calls(idx, k)[method]()


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("k", [1.5, "2"])
def test_k_argument_wrong_type(method, k):
    idx = filled()
    with Unchanged(idx, TypeError):
        _calls(idx, k)[method]()


@pytest.mark.parametrize("method", ["query", "query_batch", "find_all", "cluster", "cluster_leader"])
def test_k_equal_to_index_k_and_zero_work(method):
    idx = filled(k=3)
    _calls(idx, 3)[method]()
    _calls(idx, 0)[method]()


# ---------------------------------------------------------------------------
# cluster
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("method", ["", "Connected", "components", "single", None, "leader "])
def test_cluster_unknown_method(method):
    idx = filled()
    with pytest.raises((ValueError, TypeError) if method is None else ValueError, match=r"(?i)(method|connected|leader)"):
        idx.cluster(method=method)


@pytest.mark.parametrize("min_size", [0, -1])
def test_cluster_min_size_below_one(min_size):
    idx = filled()
    with pytest.raises(ValueError, match=r"(?i)min.?size"):
        idx.cluster(min_size=min_size)
    with pytest.raises(ValueError, match=r"(?i)min.?size"):
        idx.cluster(min_size=min_size, method="leader")


def test_cluster_min_size_wrong_type():
    idx = filled()
    with pytest.raises(TypeError):
        idx.cluster(min_size=1.5)


# ---------------------------------------------------------------------------
# remove
# ---------------------------------------------------------------------------
def test_remove_unknown_ids_count_zero():
    idx = filled()  # ids 0..9
    assert idx.remove([100, 200]) == 0
    assert idx.remove(np.array([3, 100], dtype=np.uint64)) == 1
    assert idx.remove(3) == 0
    assert len(idx) == 9


@pytest.mark.parametrize("bad", [-1, U64_MAX + 1, [1, -1], [U64_MAX + 1]])
def test_remove_out_of_range(bad):
    idx = filled()
    with Unchanged(idx, ValueError, RANGE_WORDS):
        idx.remove(bad)


@pytest.mark.parametrize("bad", ["x", 1.5, None, [1.5], np.array([1.0])])
def test_remove_wrong_type(bad):
    idx = filled()
    with Unchanged(idx, TypeError):
        idx.remove(bad)


def test_remove_2d():
    idx = filled()
    with Unchanged(idx, ValueError, DIM_WORDS):
        idx.remove(np.zeros((2, 2), dtype=np.uint64))


# ---------------------------------------------------------------------------
# add_unique
# ---------------------------------------------------------------------------
def test_add_unique_bad_fps():
    idx = filled()
    with Unchanged(idx, TypeError, DTYPE_WORDS):
        idx.add_unique(np.array([1.0, 2.0]))
    with Unchanged(idx, TypeError, DTYPE_WORDS):
        idx.add_unique(np.array([1, 2], dtype=np.int64))
    with Unchanged(idx, ValueError, DIM_WORDS):
        idx.add_unique(np.zeros((2, 2), dtype=np.uint64))
    with Unchanged(idx, ValueError, RANGE_WORDS):
        idx.add_unique([1, -1])
    with Unchanged(idx, ValueError, RANGE_WORDS):
        idx.add_unique([U64_MAX + 1])
    with Unchanged(idx, TypeError):
        idx.add_unique("abc")


def test_add_unique_ids_wrong_length():
    idx = filled()
    with Unchanged(idx, ValueError, LEN_WORDS):
        idx.add_unique(np.array([1, 2, 3], dtype=np.uint64), ids=np.array([100, 101], dtype=np.uint64))
    with Unchanged(idx, ValueError, LEN_WORDS):
        idx.add_unique([1, 2, 3], ids=[100, 101, 102, 103])


def test_add_unique_ids_checked_like_add():
    """Explicit ids of add_unique are checked like add's, for every input."""
    idx = filled()  # ids 0..9
    with Unchanged(idx, ValueError, ID_WORDS):
        idx.add_unique([1 << 40, 1 << 41], ids=[100, 100])
    with Unchanged(idx, ValueError, ID_WORDS):
        idx.add_unique([1 << 40, 1 << 41], ids=[100, 3])
    with Unchanged(idx, ValueError, RANGE_WORDS):
        idx.add_unique([1 << 40], ids=[-1])


def test_largest_id_then_default_ids_run_out():
    idx = Index(k=0)
    assert idx.add([1], ids=[U64_MAX]).tolist() == [U64_MAX]
    assert idx.query(1) == [(U64_MAX, 0)]
    with Unchanged(idx, ValueError, r"(?i)id"):
        idx.add(2)
    with Unchanged(idx, ValueError, r"(?i)id"):
        idx.add_unique([2])
    assert idx.add([2], ids=[0]).tolist() == [0]  # explicit ids still work


def test_default_ids_reaching_the_top_exactly():
    idx = Index(k=0)
    idx.add([1], ids=[U64_MAX - 2])
    assert idx.add([2, 3]).tolist() == [U64_MAX - 1, U64_MAX]
    assert idx.find_all().shape == (0, 2)
    idx.add([3], ids=[5])
    assert idx.find_all().tolist() == [[5, U64_MAX]]


# ---------------------------------------------------------------------------
# After all those errors the index still works
# ---------------------------------------------------------------------------
def test_index_usable_after_errors():
    idx = filled()
    for call in (
        lambda: idx.add(-1),
        lambda: idx.add(np.zeros((2, 2), dtype=np.uint64)),
        lambda: idx.query(1 << 64),
        lambda: idx.find_all(k=4),
        lambda: idx.add([1], ids=[0]),
        lambda: idx.cluster(method="x"),
    ):
        with pytest.raises((TypeError, ValueError)):
            call()
    assert len(idx) == 10
    assert idx.add(0xDEADBEEFDEADBEEF).tolist() == [10]
    assert (10, 0) in idx.query(0xDEADBEEFDEADBEEF)
    assert idx.find_all().tolist() == [[0, 1]]
