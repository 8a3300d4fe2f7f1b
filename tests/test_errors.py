"""Bad input to the fingerprint functions raises a clear exception, never a
crash and never a silently wrong answer.  Message checks are loose,
case-insensitive substrings."""

from __future__ import annotations

import numpy as np
import pytest

rsimhash = pytest.importorskip("rsimhash")

RANGE_WORDS = r"(?i)(negative|unsigned|range|u64|uint64|64.bit|overflow|too large|too big)"
U64_ERRORS = (ValueError, OverflowError)


# ---------------------------------------------------------------------------
# fingerprint
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("bad", [123, None, 1.5, ["a"]])
def test_fingerprint_non_str(bad):
    with pytest.raises(TypeError):
        rsimhash.fingerprint(bad)


@pytest.mark.parametrize("mode", ["words", "chars"])
@pytest.mark.parametrize("width", [0, -1])
def test_fingerprint_width_below_one(mode, width):
    with pytest.raises(ValueError, match=r"(?i)width"):
        rsimhash.fingerprint("x", mode=mode, width=width)


def test_fingerprint_width_wrong_type():
    with pytest.raises(TypeError):
        rsimhash.fingerprint("x", width="3")


def test_fingerprint_unknown_mode():
    with pytest.raises(ValueError, match=r"(?i)mode"):
        rsimhash.fingerprint("x", mode="bogus")


# ---------------------------------------------------------------------------
# fingerprints
# ---------------------------------------------------------------------------
def test_fingerprints_bad_item_names_position():
    with pytest.raises(TypeError, match="1"):
        rsimhash.fingerprints(["a", 5])
    with pytest.raises(TypeError, match="2"):
        rsimhash.fingerprints(["a", "b", None])


def test_fingerprints_bad_item_in_object_array():
    arr = np.array(["a", "b", "c", 7], dtype=object)
    with pytest.raises(TypeError, match="3"):
        rsimhash.fingerprints(arr)


def test_fingerprints_bare_str_rejected():
    with pytest.raises(TypeError):
        rsimhash.fingerprints("not a list")


def test_fingerprints_not_iterable():
    with pytest.raises(TypeError):
        rsimhash.fingerprints(5)


def test_fingerprints_bad_width_and_mode():
    with pytest.raises(ValueError, match=r"(?i)width"):
        rsimhash.fingerprints(["a b c"], width=0)
    with pytest.raises(ValueError, match=r"(?i)mode"):
        rsimhash.fingerprints(["a b c"], mode="bogus")


# ---------------------------------------------------------------------------
# fingerprint_weighted
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("w", [float("nan"), float("inf"), float("-inf")])
def test_weighted_non_finite_weight(w):
    with pytest.raises(ValueError, match=r"(?i)finite"):
        rsimhash.fingerprint_weighted([("a", w)])
    with pytest.raises(ValueError, match=r"(?i)finite"):
        rsimhash.fingerprint_weighted([("a", 1.0), (b"b", w)])


@pytest.mark.parametrize("feature", [-1, 2**64, -(2**70), 2**100])
def test_weighted_int_feature_out_of_range(feature):
    with pytest.raises(U64_ERRORS, match=RANGE_WORDS):
        rsimhash.fingerprint_weighted([(feature, 1.0)])


def test_weighted_int_feature_bounds_ok():
    assert rsimhash.fingerprint_weighted([(0, 1.0)]) == 0
    assert rsimhash.fingerprint_weighted([(2**64 - 1, 1.0)]) == 2**64 - 1


def test_weighted_surrogate_str():
    with pytest.raises(ValueError):  # UnicodeEncodeError is a ValueError
        rsimhash.fingerprint_weighted([("a\ud800b", 1.0)])


@pytest.mark.parametrize(
    "feats",
    [
        [(1.5, 1.0)],  # float feature
        [(None, 1.0)],
        [("a", "1.0")],  # str weight
        [("a", None)],
        [("a",)],  # not a pair
        [("a", 1.0, 2.0)],
        ["ab"],
        [5],
    ],
)
def test_weighted_malformed_items(feats):
    with pytest.raises((TypeError, ValueError)):
        rsimhash.fingerprint_weighted(feats)


def test_weighted_not_iterable():
    with pytest.raises(TypeError):
        rsimhash.fingerprint_weighted(5)


# ---------------------------------------------------------------------------
# compute
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("hashes", [[-1], [2**64], [1, 2, -5], [2**100]])
def test_compute_out_of_range(hashes):
    with pytest.raises(U64_ERRORS, match=RANGE_WORDS):
        rsimhash.compute(hashes)


def test_compute_non_int_items():
    with pytest.raises(TypeError):
        rsimhash.compute(["a"])
    with pytest.raises(TypeError):
        rsimhash.compute([1.5])


def test_compute_float_array():
    with pytest.raises(TypeError, match=r"(?i)uint64|dtype"):
        rsimhash.compute(np.array([1.5]))


@pytest.mark.parametrize("dtype", [np.int64, np.int32, np.uint32, np.uint8])
def test_compute_wrong_int_dtype_suggests_uint64(dtype):
    with pytest.raises(TypeError, match=r"(?i)uint64"):
        rsimhash.compute(np.array([1], dtype=dtype))


def test_compute_2d_array():
    with pytest.raises(ValueError, match=r"(?i)(1-d|1d|one-dim|dimension|ndim|2-d|shape)"):
        rsimhash.compute(np.zeros((2, 2), dtype=np.uint64))


def test_compute_not_iterable():
    with pytest.raises(TypeError):
        rsimhash.compute(5)


# ---------------------------------------------------------------------------
# fnv1a64
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("bad", [5, None, 1.5, ["a"]])
def test_fnv1a64_wrong_type(bad):
    with pytest.raises(TypeError):
        rsimhash.fnv1a64(bad)


def test_fnv1a64_surrogate():
    with pytest.raises(ValueError):  # UnicodeEncodeError is a ValueError
        rsimhash.fnv1a64("\udc80")


# ---------------------------------------------------------------------------
# hamming
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("a,b", [(-1, 0), (0, -1), (2**64, 0), (0, 2**64)])
def test_hamming_int_out_of_range(a, b):
    with pytest.raises(U64_ERRORS):
        rsimhash.hamming(a, b)


def test_hamming_float_array():
    with pytest.raises(TypeError, match=r"(?i)uint64|dtype"):
        rsimhash.hamming(np.array([1.0]), np.array([1], dtype=np.uint64))
    with pytest.raises(TypeError, match=r"(?i)uint64|dtype"):
        rsimhash.hamming(np.array([1], dtype=np.uint64), np.array([1.0]))


def test_hamming_signed_array():
    with pytest.raises(TypeError, match=r"(?i)uint64"):
        rsimhash.hamming(np.array([1], dtype=np.int64), np.array([1], dtype=np.uint64))


def test_hamming_shapes_not_broadcastable():
    with pytest.raises(ValueError):
        rsimhash.hamming(np.zeros(2, dtype=np.uint64), np.zeros(3, dtype=np.uint64))


def test_hamming_wrong_type():
    with pytest.raises(TypeError):
        rsimhash.hamming("a", 0)


# ---------------------------------------------------------------------------
# still healthy afterwards
# ---------------------------------------------------------------------------
def test_still_works_after_errors():
    for bad in ([("a", float("nan"))], [(-1, 1.0)]):
        with pytest.raises(U64_ERRORS):
            rsimhash.fingerprint_weighted(bad)
    assert rsimhash.fingerprint("a b c") == rsimhash.fnv1a64(b"a b c")
    assert rsimhash.fingerprints(["a b c"] * 3, threads=2).tolist() == [rsimhash.fnv1a64("a b c")] * 3
