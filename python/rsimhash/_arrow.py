"""Arrow arrays made from numpy buffers directly.

``pyarrow.array(x)`` asks pyarrow's pandas shim whether ``x`` is a pandas
Series, which imports pandas: about 1.4 s of a command's start-up, a third
of a 200 MB Parquet dedup, for a process that never uses pandas. These make
the same arrays from their buffers without that question."""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from ._optional import module

__all__ = ["booleans", "numbers", "rows", "strings"]

_TYPES = {"i": {4: "int32", 8: "int64"}, "u": {4: "uint32", 8: "uint64"}}


def numbers(values: np.ndarray) -> Any:
    """A 1-D int32/int64/uint32/uint64 numpy array as an Arrow array (no nulls)."""
    pa = module("pyarrow")
    values = np.ascontiguousarray(values)
    kind = _TYPES.get(values.dtype.kind, {}).get(values.dtype.itemsize)
    if kind is None or values.ndim != 1:
        raise TypeError(f"numbers() takes a 1-D array of 32- or 64-bit ints, got {values.dtype} of shape {values.shape}")
    return pa.Array.from_buffers(getattr(pa, kind)(), len(values), [None, pa.py_buffer(values)])


def booleans(mask: np.ndarray) -> Any:
    """A 1-D numpy bool array as an Arrow boolean array (no nulls)."""
    pa = module("pyarrow")
    bits = np.packbits(np.ascontiguousarray(mask, dtype=bool), bitorder="little")
    return pa.Array.from_buffers(pa.bool_(), len(mask), [None, pa.py_buffer(bits)])


def strings(values: Sequence[str]) -> Any:
    """Python strings as an Arrow string array (no nulls)."""
    pa = module("pyarrow")
    encoded = [s.encode("utf-8") for s in values]
    offsets = np.zeros(len(encoded) + 1, dtype=np.int64)
    np.cumsum([len(b) for b in encoded], out=offsets[1:])
    large = bool(offsets[-1] >= 2**31)
    kind = pa.large_string() if large else pa.string()
    offsets_buffer = pa.py_buffer(offsets if large else offsets.astype(np.int32))
    return pa.Array.from_buffers(kind, len(encoded), [None, offsets_buffer, pa.py_buffer(b"".join(encoded))])


def rows(batch: Any, keep: np.ndarray) -> Any:
    """The rows of a record batch at the ascending positions ``keep``, as a
    table of zero-copy slices of its runs of kept rows (``take`` would
    copy them and import ``pyarrow.compute``, most of a second)."""
    pa = module("pyarrow")
    keep = np.asarray(keep, dtype=np.int64)
    if len(keep) == 0:
        return pa.Table.from_batches([batch.slice(0, 0)])
    breaks = np.flatnonzero(np.diff(keep) != 1) + 1
    starts = np.concatenate([[0], breaks])
    ends = np.concatenate([breaks, [len(keep)]])
    slices = [batch.slice(int(keep[a]), int(b - a)) for a, b in zip(starts.tolist(), ends.tolist())]
    return pa.Table.from_batches(slices)
