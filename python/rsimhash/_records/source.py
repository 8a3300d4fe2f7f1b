"""``Source``: one input (a path, or ``-`` for stdin) read in ``Chunk``s.

Each format's reading is a class of its own module, mixed in here:
``json_lines.JsonRecords``, ``fingerprints.FingerprintRecords`` (hash TSV and
decimal lines), ``parquet.ParquetRecords``, and ``blocks.LineBlocks`` (the
reference reader's stream and blocks of lines). This module opens the input,
hands the line formats to the core's reader when it can, and stops after
``limit`` records. A chunk covers at most about ``chunk_bytes`` of input, so
memory is bounded by the chunk size, never by the input.
"""

from __future__ import annotations

import os
from typing import Any, BinaryIO, Callable, Iterator, Optional, Tuple, Union

import numpy as np

from .blocks import LineBlocks, _stopped
from .chunk import Chunk
from .errors import RecordError, RecordRequestError, raise_bad
from .fingerprints import FingerprintRecords
from .json_lines import JsonRecords
from .parquet import ParquetRecords
from .stdin import stdin_fd

FORMATS = ("json", "hash", "lines", "parquet")
CHUNK_BYTES = 8 << 20
# A line longer than this is a bad line, never a buffer: a file of zeros or a
# dump without line ends would otherwise be read whole into memory.
MAX_RECORD_BYTES = 256 << 20

_EXTENSIONS = {
    ".jsonl": "json",
    ".json": "json",
    ".ndjson": "json",
    ".jsonlines": "json",
    ".tsv": "hash",
    ".txt": "lines",
    ".parquet": "parquet",
    ".pq": "parquet",
}


def _hashes(chunk: Chunk) -> np.ndarray:
    if chunk.hashes is None:
        raise ValueError("values() reads fingerprint files, or texts fingerprinted as they are parsed")
    return chunk.hashes


def guess_format(path: str, fmt: str) -> str:
    """The format to read ``path`` as: ``fmt`` itself, or a guess from the name."""
    if fmt != "auto":
        return fmt
    if path == "-":
        return "json"
    name = os.path.basename(path).lower()
    for suffix in (".gz", ".zst"):
        if name.endswith(suffix):
            name = name[: -len(suffix)]
    guess = _EXTENSIONS.get(os.path.splitext(name)[1])
    if guess is None:
        raise RecordRequestError(f"cannot tell the format of {path} from its name; give --format ({', '.join(FORMATS)})")
    return guess


class Source(JsonRecords, FingerprintRecords, ParquetRecords, LineBlocks):
    """One input, read in chunks; a context manager that closes the file.

    ``need_ids=False`` skips reading ids (each record's id is then its line
    number): dedup without ``--removed`` never names a record. ``limit``
    stops after that many records (``--sample``). ``bad`` decides whether a
    bad line stops the run or is reported and skipped.
    """

    def __init__(
        self,
        path: str,
        fmt: str = "auto",
        *,
        text_column: str = "text",
        id_column: Optional[str] = None,
        need_ids: bool = True,
        bad: Optional[Callable[[RecordError], None]] = None,
        limit: Optional[int] = None,
        full_rows: bool = False,
        chunk_bytes: int = CHUNK_BYTES,
        shingling: Optional[Tuple[str, Optional[int]]] = None,
        threads: Optional[int] = None,
        engine: str = "core",
        max_record_bytes: int = MAX_RECORD_BYTES,
        values_only: bool = False,
    ):
        self.path = path
        self.format = guess_format(path, fmt)
        self.text_column = text_column
        self.id_column = id_column if id_column is not None else "id"
        self.id_given = id_column is not None
        self.need_ids = need_ids
        self.bad = bad if bad is not None else raise_bad
        self.limit = limit
        self.full_rows = full_rows
        self.chunk_bytes = chunk_bytes
        # JSON lines: fingerprint the texts this way (mode, width) as they are parsed
        self.shingling = shingling
        self.threads = threads
        if engine not in ("core", "python"):
            raise ValueError(f"engine must be 'core' or 'python', got {engine!r}")
        self.engine = engine
        self.max_record_bytes = max_record_bytes  # longer lines are bad lines
        # Read with values() (a hash TSV: values_and_ids()) alone: the core
        # hands a fingerprint file's plain blocks over as arrays
        self.values_only = values_only and self.format in ("lines", "hash") and limit is None
        self.records = 0  # records yielded so far
        self.nbytes = 0  # input bytes read so far (uncompressed)
        self.line_ids = False  # ids are line numbers (json without an id field)
        self.total: Optional[int] = None  # size of the input file, when known
        self.header: Optional[bytes] = None  # hash TSV: the header line as read, with its b"\n"
        self._raw: Optional[BinaryIO] = None
        self._compression = "plain"
        self._failure: Optional[str] = None  # why a compressed stream stopped early
        self._stream: Any = None
        self._parquet: Any = None
        self._core: Any = None  # the core's JsonLines reader
        self._consumed = 0  # file bytes behind the chunks yielded (core reader)
        self._open()

    # -- opening -------------------------------------------------------------
    def _open(self) -> None:
        if self.format == "parquet":
            self._open_parquet()
            return
        if self.path == "-":
            # A private unbuffered handle on a copy of fd 0: if Ctrl-C comes while the reader
            # thread waits for stdin, neither closing it here nor the interpreter's shutdown
            # has to wait for a buffer lock that thread holds.
            raw: Any = open(os.dup(stdin_fd()), "rb", buffering=0)
        else:
            try:
                raw = open(self.path, "rb")
            except OSError as e:
                raise self._error(None, f"cannot read: {e.strerror or e}") from None
            try:
                self.total = os.fstat(raw.fileno()).st_size
            except OSError:
                self.total = None
        if self.engine == "core" and (os.name == "posix" or self.path != "-"):
            self._open_core(raw)
            return
        self._open_stream(raw)

    def _open_core(self, raw: BinaryIO) -> None:
        from .. import _rsimhash

        try:
            source: Any = os.dup(raw.fileno()) if os.name == "posix" else self.path
        finally:
            raw.close()
        mode, width = self.shingling if self.shingling is not None else (None, None)
        if self.format != "json":
            mode = width = None  # a fingerprint file: the hashes are read, not made
        try:
            self._core = _rsimhash.JsonLines(
                source,
                text_field=self.text_column,
                id_field=self.id_column if self.need_ids or self.format == "hash" else None,
                mode=mode,
                width=width,
                threads=self.threads,
                chunk_bytes=self.chunk_bytes,
                format=self.format,
                max_record_bytes=self.max_record_bytes,
                values_only=self.values_only,
            )
        except OSError as e:
            raise self._error(None, f"cannot read: {e.strerror or e}") from None

    def position(self) -> int:
        """Bytes consumed from the file (compressed, when it is): for a progress bar."""
        if self._core is not None:
            return self._consumed if self.path != "-" else self.nbytes
        if self._raw is not None and self.path != "-":
            try:
                return self._raw.tell()
            except (OSError, ValueError):
                pass
        return self.nbytes

    def close(self) -> None:
        if self._core is not None:
            self._core.close()
        for f in (self._stream, self._raw):
            if f is not None:
                try:
                    f.close()
                except Exception:  # closing a half-read compressed stream can complain
                    pass

    def __enter__(self) -> "Source":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def chunks(self) -> Iterator[Chunk]:
        """The input's records, in order, in chunks of bounded size."""
        if self.values_only and self._core is not None:
            raise ValueError("this Source was opened with values_only: read it with values()")
        if self.format == "parquet":
            it = self._parquet_chunks()
        elif self._core is not None:
            it = self._core_chunks()
        else:
            it = self._line_chunks()
        for chunk in it:
            if self.limit is not None and self.records + len(chunk) >= self.limit:
                chunk = chunk.head(self.limit - self.records)
                self.records += len(chunk)
                if len(chunk):
                    yield chunk
                return
            self.records += len(chunk)
            yield chunk

    def _core_chunks(self) -> Iterator[Chunk]:
        for item in self._core_items():
            yield self._from_core(item)

    def _core_items(self) -> Iterator[Any]:
        """The core reader's chunks (or value blocks), the bytes behind each
        counted; an early stop (a cut-short stream, a read error) is a bad
        line at the line it stopped at."""
        for item in self._core:
            if isinstance(item, tuple):  # the input stopped early, at this line
                line, compression, error = item
                self.bad(self._error(line, _stopped(compression, error)))
                return
            self.nbytes += item.nbytes
            self._consumed = item.consumed
            yield item

    def values(self) -> Iterator[np.ndarray]:
        """The records' fingerprints alone (uint64 arrays), in order, for a
        caller that never names a record (``find-all`` on a fingerprint
        file). Opened with ``values_only``, a ``lines`` file's blocks of
        plain numbers come from the core as one array each, without the
        per-line entries ``chunks`` keeps (at 10^7 lines those cost more than
        the parsing); a block with any other line is read as ``chunks``
        reads it, its bad lines reported the same way."""
        for fps, _ in self.values_and_ids():
            yield fps

    def values_and_ids(self) -> Iterator[Tuple[np.ndarray, Union[Tuple[np.ndarray, np.ndarray], Chunk, None]]]:
        """``values`` with each block's ids: ``(fingerprints, ids)``, the ids
        packed by the core (``(text, offsets)``, see ``RecordValues.ids``)
        for a hash TSV's block of well-formed records (None for a ``lines``
        file's block of plain numbers), else the block's ``Chunk`` (read as
        ``chunks`` reads it, its bad lines reported the same way)."""
        if not (self.values_only and self._core is not None):
            for chunk in self.chunks():
                yield _hashes(chunk), chunk
            return
        from .._rsimhash import RecordValues

        for item in self._core_items():
            ids: Union[Tuple[np.ndarray, np.ndarray], Chunk, None]
            if isinstance(item, RecordValues):
                fps, ids = item.fingerprints, item.ids
            else:
                chunk = self._from_core(item)
                fps, ids = _hashes(chunk), chunk
            self.records += len(fps)
            yield fps, ids

    def _from_core(self, rc: Any) -> Chunk:
        """A chunk of the core's records, its rare lines read by the reference reader."""
        if self.format != "json":
            return self._from_core_hashes(rc)
        return self._from_core_json(rc)
