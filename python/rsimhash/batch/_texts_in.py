"""Texts for the verified batch jobs, readable twice in the same order: a
column in memory, JSON lines or Parquet files, or a function that reads
them in chunks."""

from __future__ import annotations

import os
from typing import Any, Callable, Iterator, List

from .. import _texts

Reader = Callable[[], Iterator[Any]]


def reader(texts: Any, column: str, max_record_mb: Any = 256) -> Reader:
    """A function giving the texts' pieces (see ``_texts.pieces``) from the start each time.
    Files: a line longer than ``max_record_mb`` MiB is an error, never read into memory."""
    if callable(texts):
        return lambda: _pieces_of(texts())
    limit = record_limit(max_record_mb)
    if isinstance(texts, (str, os.PathLike)):
        return _files_reader([os.fspath(texts)], column, limit)
    if isinstance(texts, (list, tuple)) and texts and all(isinstance(t, os.PathLike) for t in texts):
        return _files_reader([os.fspath(t) for t in texts], column, limit)
    if not _texts.kind(texts) and iter(texts) is texts:
        raise TypeError(
            "texts is read twice: give a sequence, a column, paths or a function that "
            "returns a fresh iterable of chunks, not a one-shot iterator"
        )
    pieces = [_untuple(p) for p in _texts.pieces(texts)]
    return lambda: iter(pieces)


def _pieces_of(chunks: Any) -> Iterator[Any]:
    for chunk in chunks:
        yield from map(_untuple, _texts.pieces(chunk))


def _untuple(piece: Any) -> Any:
    """A tuple of texts as a list: past here a tuple is Arrow buffers ``(offsets, data)``."""
    return list(piece) if isinstance(piece, tuple) else piece


def record_limit(max_record_mb: Any) -> int:
    """``max_record_mb`` (MiB, more than 0 and at most 1 TiB) in bytes."""
    if isinstance(max_record_mb, bool) or not isinstance(max_record_mb, (int, float)):
        raise TypeError(f"max_record_mb must be a number of MiB, got {type(max_record_mb).__name__}")
    if not 0 < max_record_mb <= 1 << 20:
        raise ValueError(f"max_record_mb must be more than 0 and at most 1048576 (1 TiB), got {max_record_mb!r}")
    return max(1, int(max_record_mb * (1 << 20)))


def _files_reader(paths: List[str], column: str, max_record_bytes: int) -> Reader:
    for path in paths:
        if not os.path.exists(path):
            raise FileNotFoundError(f"texts: no such file: {path!r}")

    def read() -> Iterator[Any]:
        from .._records import RecordError, RecordRequestError, Source, guess_format

        for path in paths:
            fmt = guess_format(path, "auto")
            if fmt not in ("json", "parquet"):
                raise ValueError(f"{path}: verified jobs read texts from JSON lines or Parquet files, not {fmt} files")
            try:
                with Source(path, fmt, text_column=column, need_ids=False, max_record_bytes=max_record_bytes) as source:
                    for chunk in source.chunks():
                        yield from _texts.pieces(chunk.texts)
            except (RecordError, RecordRequestError) as e:
                # The reader's messages name the command line's flags; here the option is an argument.
                raise ValueError(str(e).replace("with --text-column", "with column=")) from None

    return read
