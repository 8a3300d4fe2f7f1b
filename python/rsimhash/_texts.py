"""Columns of texts as the core reads them: Arrow string buffers in place,
other kinds as sequences of ``str``. pandas, polars and pyarrow are never
imported unless the column is theirs."""

from __future__ import annotations

from typing import Any, Iterator, List, Tuple

import numpy as np

from . import _rsimhash
from ._optional import module


class ArrowBuffers:
    """The ``offsets`` (int64) and ``data`` (uint8) buffers of one chunk of
    an Arrow large-string array, read in place."""

    __slots__ = ("offsets", "data")

    def __init__(self, offsets: np.ndarray, data: np.ndarray):
        self.offsets = offsets
        self.data = data

    def __len__(self) -> int:
        return len(self.offsets) - 1

    def __getitem__(self, items: slice) -> "ArrowBuffers":
        """The texts ``items`` (a slice with no step), in place."""
        start, stop, step = items.indices(len(self))
        if step != 1:
            raise ValueError("ArrowBuffers slices take no step")
        return ArrowBuffers(self.offsets[start : max(start, stop) + 1], self.data)

    def core(self) -> Tuple[np.ndarray, np.ndarray]:
        """The pair the core's functions take in place of a list of texts."""
        return self.offsets, self.data

    def to_pylist(self) -> List[str]:
        """The texts as ``str`` objects."""
        data, offsets = self.data, self.offsets.tolist()
        return [bytes(data[a:b]).decode("utf-8") for a, b in zip(offsets, offsets[1:])]


def kind(texts: Any) -> str:
    """``"pandas"``, ``"polars"``, ``"pyarrow"`` or ``""`` (anything else)."""
    name = type(texts).__module__.split(".", 1)[0]
    if name in ("pandas", "polars") and type(texts).__name__ == "Series":
        return name
    return "pyarrow" if name == "pyarrow" else ""


def pieces(texts: Any) -> Iterator[Any]:
    """The texts in pieces the core takes whole: each chunk of a pyarrow
    array (or of a polars Series, through Arrow) as ``(offsets, data)``
    buffers read in place; the values of a pandas Series; anything else
    (a list, tuple, numpy object array or iterable of str) as it is.

    A missing value (None, NaN, null) is a ``TypeError`` naming its position."""
    k = kind(texts)
    if k == "pandas":
        yield texts.to_numpy(dtype=object, na_value=None)
    elif k == "polars":
        if texts.null_count():
            first = texts.is_null().arg_true()[0]
            raise TypeError(f"texts[{first}] must be str, got None (a null in the polars Series)")
        yield from arrow_pieces(texts.to_arrow())
    elif k == "pyarrow":
        yield from arrow_pieces(texts)
    else:
        yield texts


def arrow_pieces(column: Any) -> Iterator[ArrowBuffers]:
    """``(offsets, data)`` of each chunk of a pyarrow string array, in place."""
    pa = module("pyarrow")

    if isinstance(column, pa.ChunkedArray):
        for chunk in column.chunks:
            yield from arrow_pieces(chunk)
        return
    if not isinstance(column, pa.Array):
        raise TypeError(f"texts must be a pyarrow Array or ChunkedArray, got {type(column).__name__}")
    if pa.types.is_string_view(column.type):
        column = column.cast(pa.large_string())
    small = pa.types.is_string(column.type)
    if not small and not pa.types.is_large_string(column.type):
        raise TypeError(f"texts must be a pyarrow string array, got type {column.type}")
    if column.null_count:
        first = column.is_null().index(True).as_py()
        raise TypeError(f"texts[{first}] must be str, got None (a null in the Arrow array)")
    _, offsets_buf, data_buf = column.buffers()
    n = len(column)
    # 32-bit offsets widened here (8 bytes a text), the text read in place:
    # a cast to large_string would copy every byte of text (and import
    # pyarrow.compute, a second of start-up).
    width = 4 if small else 8
    offsets = np.frombuffer(offsets_buf, dtype=np.int32 if small else np.int64, count=n + 1, offset=column.offset * width)
    offsets = offsets.astype(np.int64) if small else offsets
    data = np.frombuffer(data_buf, dtype=np.uint8) if data_buf is not None else np.empty(0, np.uint8)
    yield ArrowBuffers(offsets, data)


def fingerprint_pieces(pieces: Any, **options: Any) -> np.ndarray:
    """Fingerprints of texts given in pieces (see ``_texts.pieces``), concatenated."""
    parts = [
        _rsimhash.fingerprints_arrow(*piece.core(), **options)
        if isinstance(piece, ArrowBuffers)
        else _rsimhash.fingerprints(piece, **options)
        for piece in pieces
    ]
    if len(parts) == 1:
        return parts[0]
    return np.concatenate(parts) if parts else np.empty(0, dtype=np.uint64)
