"""``rsimhash.dedup``: the keep mask equals a brute-force reference loop, for
lists, numpy arrays, iterables, pandas, polars and pyarrow columns."""

from __future__ import annotations

import os
import sys

import numpy as np
import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

from cli_helpers import brute_dedup, fingerprints_of, make_records  # noqa: E402

rsimhash = pytest.importorskip("rsimhash")

RECORDS = make_records(250, seed=11)
TEXTS = [r["text"] for r in RECORDS]


def reference(k, **options):
    keep, _ = brute_dedup(fingerprints_of(RECORDS, **options), k)
    return np.array(keep, dtype=bool)


@pytest.mark.parametrize("k", [0, 3, 7])
def test_list_and_iterables(k):
    want = reference(k)
    assert 0 < np.count_nonzero(~want) < len(want)
    got = rsimhash.dedup(TEXTS, k)
    assert isinstance(got, np.ndarray) and got.dtype == bool
    assert np.array_equal(got, want)
    assert np.array_equal(rsimhash.dedup(iter(TEXTS), k=k), want)
    assert np.array_equal(rsimhash.dedup(tuple(TEXTS), k=k), want)
    assert np.array_equal(rsimhash.dedup(np.array(TEXTS, dtype=object), k=k), want)


def test_options_and_edges():
    want = reference(5, mode="chars", width=6)
    assert np.array_equal(rsimhash.dedup(TEXTS, 5, mode="chars", width=6, threads=1), want)
    assert rsimhash.dedup([], 3).shape == (0,)
    assert rsimhash.dedup(["same text here", "same text here", "Same TEXT here!"]).tolist() == [True, False, False]
    with pytest.raises(ValueError):
        rsimhash.dedup(TEXTS, 17)
    with pytest.raises(TypeError, match="1"):
        rsimhash.dedup(["a", None])
    with pytest.raises(ValueError, match="mode"):
        rsimhash.dedup(TEXTS, mode="letters")


def test_pandas_series():
    pd = pytest.importorskip("pandas")
    series = pd.Series(TEXTS, index=pd.RangeIndex(500, 750), name="text")
    got = rsimhash.dedup(series, 3)
    assert isinstance(got, pd.Series) and got.dtype == bool
    assert got.index.equals(series.index) and got.name == "text"
    assert np.array_equal(got.to_numpy(), reference(3))
    frame = pd.DataFrame({"text": TEXTS, "n": range(len(TEXTS))})
    assert len(frame[rsimhash.dedup(frame["text"])]) == np.count_nonzero(reference(3))
    with pytest.raises(TypeError, match="1"):
        rsimhash.dedup(pd.Series(["a", np.nan]))


def test_polars_series():
    pl = pytest.importorskip("polars")
    pytest.importorskip("pyarrow")  # polars hands its strings over as Arrow
    series = pl.Series("text", TEXTS)
    got = rsimhash.dedup(series, 3)
    assert isinstance(got, pl.Series) and got.dtype == pl.Boolean and got.name == "text"
    assert np.array_equal(got.to_numpy(), reference(3))
    frame = pl.DataFrame({"text": TEXTS})
    assert frame.filter(rsimhash.dedup(frame["text"])).height == np.count_nonzero(reference(3))
    with pytest.raises(TypeError, match="null"):
        rsimhash.dedup(pl.Series(["a", None]))


def test_pyarrow_arrays():
    pa = pytest.importorskip("pyarrow")
    want = reference(3)
    for column in (pa.array(TEXTS), pa.array(TEXTS, type=pa.large_string()), pa.chunked_array([TEXTS[:100], TEXTS[100:]])):
        got = rsimhash.dedup(column, 3)
        assert isinstance(got, pa.BooleanArray)
        assert got.to_pylist() == want.tolist()
    table = pa.table({"text": TEXTS})
    assert table.filter(rsimhash.dedup(table["text"])).num_rows == np.count_nonzero(want)
