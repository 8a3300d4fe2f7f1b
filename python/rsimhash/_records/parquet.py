"""Parquet: the one place rsimhash opens and reads Parquet files (needs ``pyarrow``).

``Source`` reads a string text column and, optionally, an int or string id
column (else the 1-based row number) in batches of rows; the batch jobs
(``batch._sources``) read a fingerprint or id column a row group at a time
through ``open_file`` and ``null_rows`` below. ``Source`` reads column
chunks as the batches need them: pre-buffering holds whole row groups ahead
(3 x the memory, and slower there).
"""

from __future__ import annotations

import os
from typing import Any, Iterator, List, Optional, Tuple

import numpy as np

from .. import _arrow
from .._optional import module
from .base import Reading
from .chunk import Chunk
from .errors import RecordRequestError
from .json_lines import _check_id
from .stdin import stdin_binary


def modules() -> Tuple[Any, Any]:
    """``pyarrow`` and ``pyarrow.parquet``; ``ImportError`` when missing."""
    return module("pyarrow"), module("pyarrow.parquet")


def open_file(source: Any, pre_buffer: bool = False) -> Any:
    """A ``pyarrow.parquet.ParquetFile`` of ``source`` (a path or a buffer).
    Without ``pre_buffer`` its column chunks are read as the batches ask
    for them; with it, a row group's are read ahead together (pyarrow's
    default, for readers that take a whole row group at a time)."""
    return module("pyarrow.parquet").ParquetFile(source, pre_buffer=pre_buffer)


def is_string(pa: Any, arrow_type: Any) -> bool:
    """Whether an Arrow type holds strings (plain, large or view)."""
    return bool(pa.types.is_string(arrow_type) or pa.types.is_large_string(arrow_type) or pa.types.is_string_view(arrow_type))


def null_rows(column: Any) -> np.ndarray:
    """The positions of the nulls in an Arrow array (or chunked array)."""
    return np.flatnonzero(np.asarray(column.is_null().to_numpy(zero_copy_only=False), dtype=bool))


class ParquetRecords(Reading):
    """The Parquet half of ``Source``."""

    def _open_parquet(self) -> None:
        try:
            pa, _ = modules()
        except ImportError:
            raise RecordRequestError("reading Parquet needs the pyarrow package (pip install pyarrow)") from None
        try:
            if self.path == "-":
                source: Any = pa.BufferReader(stdin_binary().read())
            else:
                source = self.path
                self.total = os.path.getsize(self.path)
            self._parquet = open_file(source)
        except RecordRequestError:  # a closed stdin: the request's error, not the file's
            raise
        except OSError as e:  # pyarrow's ArrowIOError is an OSError; so is a missing file
            if isinstance(e, FileNotFoundError) or getattr(e, "strerror", None):
                raise self._error(None, f"cannot read: {e.strerror or e}") from None
            raise self._error(None, f"is not a readable Parquet file ({e})") from None
        except (pa.ArrowException, ValueError) as e:
            raise self._error(None, f"is not a readable Parquet file ({e})") from None

    def schema(self) -> Any:
        """The Arrow schema of a Parquet input."""
        return self._parquet.schema_arrow

    def rows(self) -> int:
        """The rows of a Parquet input, from its metadata."""
        return int(self._parquet.metadata.num_rows)

    def _parquet_chunks(self) -> Iterator[Chunk]:
        pa = module("pyarrow")

        pf = self._parquet
        names = pf.schema_arrow.names
        if self.text_column not in names:
            raise self._error(
                None,
                f'has no column "{self.text_column}" (columns: {", ".join(names)}); the text column is set with --text-column',
            )
        text_type = pf.schema_arrow.field(self.text_column).type
        if not is_string(pa, text_type):
            raise self._error(None, f'column "{self.text_column}" has type {text_type}, not string')
        use_ids = self.need_ids and (self.id_given or self.id_column in names)
        if use_ids:
            if self.id_column not in names:
                raise self._error(
                    None, f'has no column "{self.id_column}" (columns: {", ".join(names)}); the id column is set with --id-column'
                )
            id_type = pf.schema_arrow.field(self.id_column).type
            if not (pa.types.is_integer(id_type) or is_string(pa, id_type)):
                raise self._error(None, f'column "{self.id_column}" has type {id_type}, not an integer or string')
        else:
            self.line_ids = True
        columns = None if self.full_rows else ([self.text_column] + ([self.id_column] if use_ids else []))
        row = 0
        try:
            # rows of about 4 KB (the usual document) per chunk
            for batch in pf.iter_batches(batch_size=max(1, self.chunk_bytes >> 12), columns=columns):
                n = batch.num_rows
                text = batch.column(batch.schema.get_field_index(self.text_column))
                valid = np.ones(n, dtype=bool)
                if text.null_count:
                    valid &= ~np.asarray(text.is_null().to_numpy(zero_copy_only=False), dtype=bool)
                ids: Optional[List[Any]] = None  # None: the row numbers (made only if asked for)
                if use_ids:
                    idcol = batch.column(batch.schema.get_field_index(self.id_column))
                    ids = idcol.to_pylist()
                    if idcol.null_count:
                        valid &= ~np.asarray(idcol.is_null().to_numpy(zero_copy_only=False), dtype=bool)
                problems = {}
                for j in np.flatnonzero(~valid).tolist():
                    what = self.text_column if text[j].as_py() is None else self.id_column
                    problems[j] = f'"{what}" is null'
                if ids is not None and not pa.types.is_integer(idcol.type):
                    for j, rid in enumerate(ids):
                        if rid is not None and ("\t" in rid or "\n" in rid or "\r" in rid):
                            problems[j] = str(_check_id(rid, self.id_column))
                            valid[j] = False
                for j in sorted(problems):
                    self.bad(self._error(f"row {row + j + 1}", problems[j]))
                rows = np.flatnonzero(valid)
                nbytes = int(text.nbytes)
                self.nbytes += nbytes
                if len(rows) < n:
                    text = text.take(_arrow.numbers(rows.astype(np.int64)))
                    if ids is not None:
                        ids = [ids[j] for j in rows.tolist()]
                # The texts stay Arrow buffers, read in place by the core.
                yield Chunk(rows + (row + 1), ids, texts=text, nbytes=nbytes, batch=batch, rows=rows)
                row += n
        except (OSError, pa.ArrowException) as e:
            raise self._error(None, f"cannot be read past row {row}: {e}") from None
