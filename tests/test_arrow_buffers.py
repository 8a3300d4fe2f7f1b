"""Arrow arrays made from numpy buffers (``rsimhash._arrow``): the same
arrays ``pyarrow.array`` makes, without importing pandas (pyarrow asks its
pandas shim about every object it is given, which imports pandas: a second
and more of a command's start-up)."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

from rsimhash import _arrow  # noqa: E402


@settings(deadline=None)
@given(st.lists(st.integers(0, 2**63 - 1), max_size=50), st.sampled_from([np.int64, np.uint64, np.int32, np.uint32]))
def test_numbers_are_pyarrows_arrays(values, dtype):
    arr = np.array([v % (2**31) if np.dtype(dtype).itemsize == 4 else v for v in values], dtype=dtype)
    got = _arrow.numbers(arr)
    assert got.equals(pa.array(arr)) and got.to_pylist() == arr.tolist()


@settings(deadline=None)
@given(st.lists(st.booleans(), max_size=70))
def test_booleans_are_pyarrows_arrays(values):
    got = _arrow.booleans(np.array(values, dtype=bool))
    assert got.equals(pa.array(values, type=pa.bool_()))


@settings(deadline=None)
@given(st.lists(st.text(st.characters(blacklist_categories=("Cs",))), max_size=30))
def test_strings_are_pyarrows_arrays(values):
    got = _arrow.strings(values)
    assert got.equals(pa.array(values, type=pa.string()))


def test_numbers_refuses_what_it_cannot_hold():
    with pytest.raises(TypeError, match="1-D array of 32- or 64-bit ints"):
        _arrow.numbers(np.zeros(3, dtype=np.float64))
    with pytest.raises(TypeError, match="1-D array of 32- or 64-bit ints"):
        _arrow.numbers(np.zeros((2, 2), dtype=np.int64))


def test_a_parquet_dedup_imports_neither_pandas_nor_arrow_compute(tmp_path):
    texts = ["the cat sat on the mat today", "the cat sat on the mat today", "dogs bark at night"]
    pq.write_table(pa.table({"id": ["a", "b", "c"], "text": texts}), tmp_path / "in.parquet")
    code = (
        "import sys; from rsimhash.cli import main; "
        f"c = main(['dedup', '--input', {str(tmp_path / 'in.parquet')!r}, '--output', {str(tmp_path / 'out.parquet')!r}, '-q']); "
        "print(c, 'pandas' in sys.modules, 'pyarrow.compute' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["0", "False", "False"], out
    assert pq.read_table(tmp_path / "out.parquet")["id"].to_pylist() == ["a", "c"]


@settings(deadline=None)
@given(st.lists(st.booleans(), max_size=60))
def test_rows_are_the_kept_rows_in_order(mask):
    batch = pa.record_batch({"id": list(range(len(mask))), "text": [f"t{i}" for i in range(len(mask))]})
    keep = np.flatnonzero(np.array(mask, dtype=bool))
    got = _arrow.rows(batch, keep)
    assert got.schema == batch.schema
    assert got.to_pydict() == {"id": keep.tolist(), "text": [f"t{i}" for i in keep.tolist()]}
