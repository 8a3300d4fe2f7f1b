"""Ids of the user's own kind and missing texts (issue 26): ``ids=`` takes
ints of any integer kind or strings and gives them back, an id given twice
is an error, a pandas Series names its pairs by its index, and ``nulls=``
keeps or drops a missing text on ``fingerprints``, ``dedup`` and
``similar_pairs``, checked against the same calls without the nulls."""

from __future__ import annotations

import numpy as np
import pytest

import rsimhash

TEXTS = [
    "the city council voted to approve a new budget for the library",
    "weather: heavy rain is expected over the northern valleys",
    "the city council voted to approve a new budget for the library!",
    "weather: heavy rain is expected over the northern valleys today",
]


def test_repeated_ids_are_an_error():
    with pytest.raises(ValueError, match="distinct: 5 is given at positions 0 and 2"):
        rsimhash.similar_pairs(TEXTS, 0.8, ids=[5, 6, 5, 7])
    with pytest.raises(ValueError, match="one id per text"):
        rsimhash.similar_pairs(TEXTS, 0.8, ids=[1, 2])


@pytest.mark.parametrize("kind", ["list", "int64", "int8", "pandas"])
def test_int_ids_of_any_kind(kind):
    ids = [40, 30, 20, 10]
    given = {"list": ids, "int64": np.array(ids), "int8": np.array(ids, dtype=np.int8), "pandas": None}[kind]
    if kind == "pandas":
        pd = pytest.importorskip("pandas")
        given = pd.Index(ids)
    pairs, sims = rsimhash.similar_pairs(TEXTS, 0.8, ids=given)
    plain, plain_sims = rsimhash.similar_pairs(TEXTS, 0.8)
    assert pairs.dtype == np.uint64
    want = sorted(tuple(sorted((ids[a], ids[b]))) for a, b in plain.tolist())
    assert [tuple(p) for p in pairs.tolist()] == want and len(want) == 2
    assert sorted(sims.tolist()) == sorted(plain_sims.tolist())
    with pytest.raises(ValueError, match="non-negative"):
        rsimhash.similar_pairs(TEXTS, 0.8, ids=np.array([-1, 2, 3, 4]))


def test_string_ids_and_series_labels():
    pairs, _ = rsimhash.similar_pairs(TEXTS, 0.8, ids=["d", "c", "b", "a"])
    assert pairs.dtype == object and pairs.tolist() == [["a", "c"], ["b", "d"]]
    pd = pytest.importorskip("pandas")
    s = pd.Series(TEXTS, index=["n1", "n2", "n3", "n4"])
    assert rsimhash.similar_pairs(s, 0.8)[0].tolist() == [["n1", "n3"], ["n2", "n4"]]
    s = pd.Series(TEXTS, index=[100, 200, 300, 400])
    assert rsimhash.similar_pairs(s, 0.8)[0].tolist() == [[100, 300], [200, 400]]
    assert rsimhash.similar_pairs(pd.Series(TEXTS), 0.8)[0].tolist() == [[0, 2], [1, 3]]


@pytest.mark.parametrize("null", [None, float("nan")])
def test_nulls_keep_and_drop(null):
    texts = [TEXTS[0], null, TEXTS[1], TEXTS[2], null, TEXTS[3]]
    where = [0, 2, 3, 5]  # the texts' positions
    with pytest.raises(TypeError, match="texts\\[1\\]"):
        rsimhash.similar_pairs(texts, 0.8)
    with pytest.raises(ValueError, match="nulls must be"):
        rsimhash.dedup(texts, nulls="skip")
    plain, sims = rsimhash.similar_pairs(TEXTS, 0.8)
    for nulls in ("keep", "drop"):
        pairs, s = rsimhash.similar_pairs(texts, 0.8, nulls=nulls)
        assert pairs.tolist() == [[where[a], where[b]] for a, b in plain.tolist()] and s.tolist() == sims.tolist()
    keep = rsimhash.dedup(TEXTS).tolist()
    full = rsimhash.dedup(texts, nulls="keep").tolist()
    assert [full[p] for p in where] == keep and full[1] is True and full[4] is True
    full = rsimhash.dedup(texts, jaccard=0.8, nulls="drop").tolist()
    assert [full[p] for p in where] == rsimhash.dedup(TEXTS, jaccard=0.8).tolist() and not full[1] and not full[4]
    fps = rsimhash.fingerprints(TEXTS)
    assert rsimhash.fingerprints(texts, nulls="drop").tolist() == fps.tolist()
    masked = rsimhash.fingerprints(texts, nulls="keep")
    assert masked.mask.tolist() == [False, True, False, False, True, False]
    assert masked.compressed().tolist() == fps.tolist()


def test_nulls_of_pandas_and_pyarrow_columns():
    pd = pytest.importorskip("pandas")
    s = pd.Series([TEXTS[0], None, TEXTS[2]], index=[7, 8, 9])
    assert rsimhash.similar_pairs(s, 0.8, nulls="keep")[0].tolist() == [[7, 9]]
    mask = rsimhash.dedup(s, nulls="drop")
    assert mask.tolist() == [True, False, False] and list(mask.index) == [7, 8, 9]
    pa = pytest.importorskip("pyarrow")
    column = pa.chunked_array([[TEXTS[0], None], [TEXTS[2]]])
    assert rsimhash.dedup(column, nulls="keep").to_pylist() == [True, True, False]
    assert rsimhash.fingerprints(column, nulls="drop").tolist() == rsimhash.fingerprints([TEXTS[0], TEXTS[2]]).tolist()


def test_fingerprints_keep_nulls_in_the_columns_own_kind():
    # Issue 38 item 3: a masked uint64 array put in a DataFrame became
    # float64 (1.3526276673382384e+19: the fingerprint lost). A pandas
    # Series gives a nullable UInt64 Series on its index, a pyarrow column
    # a uint64 array with nulls; every value exact, above 2**53 too.
    pd = pytest.importorskip("pandas")
    fps = [int(x) for x in rsimhash.fingerprints([TEXTS[0], TEXTS[2], TEXTS[3]])]
    assert max(fps) > 2**53
    s = pd.Series([TEXTS[0], None, TEXTS[2], TEXTS[3]], index=["a", "b", "c", "d"], name="text")
    out = rsimhash.fingerprints(s, nulls="keep")
    assert isinstance(out, pd.Series) and str(out.dtype) == "UInt64"
    assert list(out.index) == ["a", "b", "c", "d"] and out.name == "text"
    assert out.isna().tolist() == [False, True, False, False]
    assert [int(out[i]) for i in ("a", "c", "d")] == fps
    df = pd.DataFrame({"text": s})
    df["simhash"] = rsimhash.fingerprints(df["text"], nulls="keep")
    assert str(df["simhash"].dtype) == "UInt64" and int(df.loc["d", "simhash"]) == fps[2]
    whole = rsimhash.fingerprints(pd.Series([TEXTS[0]], index=[5]), nulls="keep")  # no null: the same kind
    assert str(whole.dtype) == "UInt64" and whole.to_dict() == {5: fps[0]}
    pa = pytest.importorskip("pyarrow")
    for column in (pa.chunked_array([[TEXTS[0], None], [TEXTS[2], TEXTS[3]]]), pa.array([TEXTS[0], None, TEXTS[2], TEXTS[3]])):
        got = rsimhash.fingerprints(column, nulls="keep")
        assert isinstance(got, pa.Array) and got.type == pa.uint64()
        assert got.to_pylist() == [fps[0], None, fps[1], fps[2]]
    assert rsimhash.fingerprints(pa.array([TEXTS[0]]), nulls="keep").null_count == 0
    pl = pytest.importorskip("polars")
    got = rsimhash.fingerprints(pl.Series("text", [TEXTS[0], None, TEXTS[2], TEXTS[3]]), nulls="keep")
    assert got.dtype == pl.UInt64 and got.name == "text" and got.to_list() == [fps[0], None, fps[1], fps[2]]
    # A list still gives the masked array; the other modes their plain arrays.
    assert isinstance(rsimhash.fingerprints([TEXTS[0], None], nulls="keep"), np.ma.MaskedArray)
    assert type(rsimhash.fingerprints(s, nulls="drop")) is np.ndarray
