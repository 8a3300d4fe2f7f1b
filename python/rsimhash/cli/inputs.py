"""Record readers: JSON lines, hash TSV, decimal lines and Parquet, in chunks.

A ``Source`` opens one input (a path, or ``-`` for stdin) and yields
``Chunk``s of at most about ``chunk_bytes`` of input: the records' line
numbers, ids, texts (or fingerprints, for hash inputs) and, for the line
formats, each record's line as read, so that a command can write records
back byte for byte. Memory is bounded by the chunk size, never by the input.

Formats (``auto`` guesses from the file name; stdin defaults to ``json``):

* ``json``: one JSON object per line with a text field (``--text-column``,
  default ``text``) and an id field (``--id-column``, default ``id``; an int
  or a str, kept as written). When ``--id-column`` is not given and the first
  record has no ``id`` field, every record's id is its line number. Blank
  lines are skipped. gzip and zstd compressed input is recognised by its
  first bytes, whatever the file is called. These are read, parsed and
  fingerprinted by the core (``_rsimhash.JsonLines``) on threads of its own;
  the few lines it leaves to ``json.loads`` (invalid ones, whose errors are
  worded here, and rare forms such as lone surrogates) go through the
  reference reader below, which is also the reader of record for tests.
* ``hash``: a TSV whose header line names the columns ``id`` and ``hash``
  (the original simhash tool's format); the hash is a decimal u64.
* ``lines``: one decimal u64 fingerprint per line (simhash-find-all's input);
  the id of each is its line number; blank lines are skipped.

  Both are read and parsed by the core too (``format=`` of
  ``_rsimhash.JsonLines``), compressed or not; the header and any line it
  cannot read go through the reference reader below, which words the error.
* ``parquet``: a Parquet file (needs ``pyarrow``) with a string text column
  and, optionally, an int or string id column (else the 1-based row number).

Line numbers are 1-based and count every physical line, the header included.
"""

from __future__ import annotations

import gzip
import json
import os
from typing import Any, BinaryIO, Dict, Iterator, List, Optional, Tuple, Union

import numpy as np

from .. import _arrow
from .._optional import module
from .errors import BadLines, InputError, UsageError
from .stdio import stdin_binary, stdin_fd

FORMATS = ("json", "hash", "lines", "parquet")
U64_MAX = (1 << 64) - 1
CHUNK_BYTES = 8 << 20
# A line longer than this is a bad line, never a buffer: a file of zeros or a
# dump without line ends would otherwise be read whole into memory.
MAX_RECORD_BYTES = 256 << 20

Id = Union[int, str]

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
_MISSING = object()


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
        raise UsageError(f"cannot tell the format of {path} from its name; give --format ({', '.join(FORMATS)})")
    return guess


class Chunk:
    """Consecutive records of one input, in input order.

    A chunk of the core's JSON-lines reader (``core``) keeps its block of
    lines there: ``entries`` are the records' indices into it, the texts
    are decoded only when asked for (``texts``), and kept lines are written
    from the block (``write_lines``)."""

    def __init__(
        self,
        lines: Any,
        ids: Optional[List[Id]] = None,
        *,
        texts: Any = None,
        hashes: Optional[np.ndarray] = None,
        raw: Optional[List[bytes]] = None,
        final_newline: bool = True,
        nbytes: int = 0,
        batch: Any = None,
        rows: Optional[np.ndarray] = None,
        core: Any = None,
        entries: Optional[np.ndarray] = None,
        shingling: Any = None,
        extra_texts: Optional[Dict[int, str]] = None,
    ):
        self.lines = lines  # 1-based line (or row) number of each record
        self._ids = ids  # each record's id as written; None: the line numbers
        self._texts = texts  # list of str, pyarrow string array or ArrowBuffers
        self.hashes = hashes  # uint64 fingerprints: of hash/lines inputs, or the core's
        self.shingling = shingling  # (mode, width) the core's hashes were made with
        self.raw = raw  # each record's line without its b"\n"
        self.final_newline = final_newline  # False when raw[-1] ends the input with no b"\n"
        self.nbytes = nbytes  # (uncompressed) input bytes this chunk covers
        self.batch = batch  # parquet: the RecordBatch the records come from
        self.rows = rows  # parquet: each record's row in ``batch``
        self.core = core  # the core's RecordChunk
        self.entries = entries  # the records' entries in ``core``
        self.extra_texts = extra_texts or {}  # entry -> text, of lines the reference reader read
        self.shard = 0  # the input shard the records come from (see shards.py)

    def __len__(self) -> int:
        return len(self.lines)

    @property
    def ids(self) -> List[Id]:
        if self._ids is None:
            self._ids = self.lines.tolist() if isinstance(self.lines, np.ndarray) else list(self.lines)
        return self._ids

    @property
    def has_texts(self) -> bool:
        """Whether the records hold texts: a fingerprint file's (its hashes
        read, not made from texts) do not."""
        from_texts = self.hashes is None or self.shingling is not None
        return self._texts is not None or (self.core is not None and from_texts)

    @property
    def texts(self) -> Any:
        if self._texts is None and self.core is not None:
            self._texts = self._core_texts()
        return self._texts

    def _core_texts(self) -> Any:
        from .._texts import ArrowBuffers

        assert self.entries is not None
        if not self.extra_texts:
            return ArrowBuffers(*self.core.texts(self.entries))
        # Some texts came from json.loads (and may hold lone surrogates): a list.
        entries = self.entries.tolist()
        parsed = [e for e in entries if e not in self.extra_texts]
        decoded = iter(ArrowBuffers(*self.core.texts(np.array(parsed, dtype=np.int64))).to_pylist())
        return [self.extra_texts[e] if e in self.extra_texts else next(decoded) for e in entries]

    def write_lines(self, keep: np.ndarray) -> bytes:
        """The lines of the records where ``keep`` (a bool mask) is set, as
        read, each with its line end (but the input's last line if it had none)."""
        if self.core is not None:
            assert self.entries is not None
            return bytes(self.core.write(self.entries[keep]))
        raw = self.raw
        assert raw is not None
        lines = raw if keep.all() else [raw[j] for j in np.flatnonzero(keep).tolist()]
        if not lines:
            return b""
        end = b"\n" if self.final_newline or not keep[-1] else b""
        return b"\n".join(lines) + end

    def record_bytes(self) -> int:
        """Bytes of the records' lines, line ends included."""
        if self.core is not None:
            return len(self.write_lines(np.ones(len(self), dtype=bool)))
        return sum(len(r) + 1 for r in self.raw or ())

    def head(self, n: int) -> "Chunk":
        """The first ``n`` records."""
        if n >= len(self):
            return self
        cut = Chunk(
            self.lines[:n],
            None if self._ids is None else self._ids[:n],
            texts=None if self._texts is None else self._texts[:n],
            hashes=None if self.hashes is None else self.hashes[:n],
            raw=None if self.raw is None else self.raw[:n],
            final_newline=True,
            nbytes=self.nbytes,
            batch=self.batch,
            rows=None if self.rows is None else self.rows[:n],
            core=self.core,
            entries=None if self.entries is None else self.entries[:n],
            shingling=self.shingling,
            extra_texts=self.extra_texts,
        )
        cut.shard = self.shard
        return cut


def json_type(value: Any) -> str:
    """The JSON name of a parsed value's type, for messages."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return f"a number ({value!r})"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    return "an object"


def _check_id(value: Any, column: str) -> Optional[str]:
    """None if ``value`` is a usable id, else what is wrong with it."""
    kind = type(value)
    if kind is int:
        return None
    if kind is str:
        if "\t" in value or "\n" in value or "\r" in value:
            return f'"{column}" holds a tab or a line break, which a TSV output cannot hold'
        return None
    return f'"{column}" must be an integer or a string, got {json_type(value)}'


class Source:
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
        bad: Optional[BadLines] = None,
        limit: Optional[int] = None,
        full_rows: bool = False,
        chunk_bytes: int = CHUNK_BYTES,
        shingling: Optional[Tuple[str, Optional[int]]] = None,
        threads: Optional[int] = None,
        engine: str = "core",
        max_record_bytes: int = MAX_RECORD_BYTES,
    ):
        self.path = path
        self.format = guess_format(path, fmt)
        self.text_column = text_column
        self.id_column = id_column if id_column is not None else "id"
        self.id_given = id_column is not None
        self.need_ids = need_ids
        self.bad = bad if bad is not None else BadLines(False)
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
    def _error(self, line: Union[int, str, None], message: str) -> InputError:
        return InputError(self.path, line, message)

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
        self._raw = raw
        if hasattr(raw, "peek"):
            head = raw.peek(4)[:4]
        else:
            head, error = _read_block(raw, 4)  # a pipe may give fewer at a time
            if error is not None:
                raise error
            raw = _Prefixed(head, raw)
        self._compression = "plain"
        if head[:2] == b"\x1f\x8b":
            self._compression = "gzip"
            self._stream = gzip.GzipFile(fileobj=raw, mode="rb")
        elif head == b"\x28\xb5\x2f\xfd":
            self._compression = "zstd"
            try:
                zstandard = module("zstandard")
            except ImportError:
                raise self._error(
                    None, "is zstd-compressed; reading it needs the zstandard package (pip install zstandard)"
                ) from None
            self._stream = _ZstdFrames(zstandard, raw)
        else:
            self._stream = raw

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
            )
        except OSError as e:
            raise self._error(None, f"cannot read: {e.strerror or e}") from None

    def _open_parquet(self) -> None:
        try:
            pa = module("pyarrow")
            pq = module("pyarrow.parquet")
        except ImportError:
            raise UsageError("reading Parquet needs the pyarrow package (pip install pyarrow)") from None
        try:
            if self.path == "-":
                source: Any = pa.BufferReader(stdin_binary().read())
            else:
                source = self.path
                self.total = os.path.getsize(self.path)
            # Column chunks are read as the batches need them: pre-buffering
            # holds whole row groups ahead (3 x the memory, and slower here).
            self._parquet = pq.ParquetFile(source, pre_buffer=False)
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

    # -- reading -------------------------------------------------------------
    def chunks(self) -> Iterator[Chunk]:
        """The input's records, in order, in chunks of bounded size."""
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

    def _too_long(self, lineno: int) -> InputError:
        limit = self.max_record_bytes
        size = f"{limit / (1 << 20):g} MiB" if limit >= 1 << 20 else f"{limit:,} bytes"
        return self._error(
            lineno, f"is longer than {size}, the most a record may take (raise it with --max-record-mb, or max_record_mb=)"
        )

    def _blocks(self) -> Iterator[Tuple[Optional[bytes], bool]]:
        """Blocks of whole lines (each ending in b"\\n"), then the last line if
        it has no b"\\n" (flag False). ``None`` stands for one line longer
        than the record limit, which is read past, never held whole."""
        carry = b""
        while True:
            data, error = _read_block(self._stream, self.chunk_bytes)
            if error is not None:
                # As the core reader does: the lines read whole, then the failure at the next line.
                data = carry + data
                cut = data.rfind(b"\n")
                if cut >= 0:
                    yield data[: cut + 1], True
                self._failure = _stopped(self._compression, error)
                return
            if not data:
                break
            if carry:
                data = carry + data
            cut = data.rfind(b"\n")
            if len(data) - (cut + 1) > self.max_record_bytes:
                if cut >= 0:
                    yield data[: cut + 1], True
                yield None, True
                rest = self._skip_line()
                if rest is None:
                    return
                carry = rest
                continue
            if cut < 0:
                carry = data
                continue
            if cut + 1 < len(data):
                carry = data[cut + 1 :]
                data = data[: cut + 1]
            else:
                carry = b""
            yield data, True
        if carry:
            yield carry, False

    def _skip_line(self) -> Optional[bytes]:
        """Reads past the rest of a line too long to hold; the bytes after
        its b"\\n", or None when the input ends (or fails) first."""
        while True:
            data, error = _read_block(self._stream, min(self.chunk_bytes, 8 << 20))
            if error is not None:
                self._failure = _stopped(self._compression, error)
                return None
            if not data:
                return None
            end = data.find(b"\n")
            if end >= 0:
                return data[end + 1 :]

    def _line_chunks(self) -> Iterator[Chunk]:
        parse = {"json": self._parse_json, "hash": self._parse_hash, "lines": self._parse_lines}[self.format]
        lineno = 0
        for block, complete in self._blocks():
            if block is None:
                lineno += 1
                self.bad(self._too_long(lineno))
                continue
            parts = block.split(b"\n")
            if complete:
                parts.pop()  # the empty piece after the final b"\n"
            self.nbytes += len(block)
            if any(len(part) > self.max_record_bytes for part in parts):
                for j, part in enumerate(parts):
                    if len(part) > self.max_record_bytes:
                        self.bad(self._too_long(lineno + j + 1))
                        parts[j] = b""  # a blank line: read as nothing
            chunk = parse(parts, lineno)
            chunk.nbytes = len(block)
            chunk.final_newline = complete
            lineno += len(parts)
            yield chunk
        if self._failure is not None:
            self.bad(self._error(lineno + 1, self._failure))

    # -- the core's reader -----------------------------------------------------
    def _core_chunks(self) -> Iterator[Chunk]:
        for item in self._core:
            if isinstance(item, tuple):  # the input stopped early, at this line
                line, compression, error = item
                self.bad(self._error(line, _stopped(compression, error)))
                return
            self.nbytes += item.nbytes
            self._consumed = item.consumed
            yield self._from_core(item)

    def _from_core(self, rc: Any) -> Chunk:
        """A chunk of the core's records, its rare lines read by the reference reader."""
        if self.format != "json":
            return self._from_core_hashes(rc)
        status = rc.status()
        lines = rc.lines()
        fps = rc.fingerprints()
        keep = status == 0
        extra: Dict[int, str] = {}
        extra_ids: Dict[int, Id] = {}
        special = np.flatnonzero(status != 0).tolist()
        if special:
            first_record = int(np.argmax(keep)) if keep.any() else len(status)
            seen_record = self.records > 0
            for i in special:
                first = not seen_record and i < first_record
                lineno = int(lines[i])
                if status[i] == 3:  # longer than the record limit: not read
                    self.bad(self._too_long(lineno))
                    continue
                if status[i] == 1 and (self.line_ids or (first and not self.id_given)):
                    self.line_ids = True  # no id field in the first record: ids are line numbers
                    keep[i] = True
                else:
                    found = self._json_record(rc.line(i), lineno, first)
                    if found is None:
                        continue
                    keep[i] = True
                    if status[i] == 2:  # a line the core left to json.loads: its text comes from there
                        extra[i] = found[0]
                        if fps is not None and self.shingling is not None:
                            from .. import fingerprints

                            mode, width = self.shingling
                            fps[i] = fingerprints([found[0]], mode=mode, width=width)[0]
                    extra_ids[i] = found[1]
                seen_record = True
        entries = np.flatnonzero(keep)
        ids: Optional[List[Id]] = None
        if self.need_ids and not self.line_ids:
            all_ids = rc.ids()
            for i, rid in extra_ids.items():
                all_ids[i] = rid
            ids = [all_ids[i] for i in entries.tolist()] if len(entries) < len(all_ids) else all_ids
        return Chunk(
            lines[entries],
            ids,
            hashes=None if fps is None else fps[entries],
            shingling=self.shingling if fps is not None else None,
            nbytes=rc.nbytes,
            core=rc,
            entries=entries,
            extra_texts=extra,
        )

    def _from_core_hashes(self, rc: Any) -> Chunk:
        """A chunk of a fingerprint file read by the core: the header line
        and the lines it could not read go through the reference reader,
        which reads the header and words each bad line's error."""
        status = rc.status()
        lines = rc.lines()
        fps: np.ndarray = rc.fingerprints()  # always given for a fingerprint file
        special = np.flatnonzero(status)
        ids: Optional[List[Id]] = None  # lines: the line numbers
        if not len(special):  # the usual chunk: every line a record, nothing to pick
            if self.format == "hash" and self.need_ids:
                ids = rc.ids()
            return Chunk(lines, ids, hashes=fps, nbytes=rc.nbytes, core=rc, entries=np.arange(len(lines), dtype=np.int64))
        keep = status == 0
        extra_ids: Dict[int, Id] = {}
        for i in special.tolist():
            if status[i] == 4:
                self._read_header(rc.line(i))
                continue
            if status[i] == 3:  # longer than the record limit: not read
                self.bad(self._too_long(int(lines[i])))
                continue
            parse = self._parse_hash if self.format == "hash" else self._parse_lines
            found = parse([rc.line(i)], int(lines[i]) - 1)
            if len(found) and found.hashes is not None:  # read after all (the core leaves any doubtful line here)
                keep[i] = True
                fps[i] = found.hashes[0]
                extra_ids[i] = found.ids[0]
        entries = np.flatnonzero(keep)
        if self.format == "hash" and self.need_ids:
            all_ids = rc.ids()
            for i, rid in extra_ids.items():
                all_ids[i] = rid
            ids = [all_ids[i] for i in entries.tolist()] if len(entries) < len(all_ids) else all_ids
        return Chunk(lines[entries], ids, hashes=fps[entries], nbytes=rc.nbytes, core=rc, entries=entries)

    def _parse_json(self, parts: List[bytes], lineno: int) -> Chunk:
        """The reference reader: each line through ``json.loads``."""
        lines: List[int] = []
        ids: List[Id] = []
        texts: List[str] = []
        raw: List[bytes] = []
        for part in parts:
            lineno += 1
            if not part or part.isspace():
                continue
            found = self._json_record(part, lineno, self.records == 0 and not lines)
            if found is None:
                continue
            lines.append(lineno)
            texts.append(found[0])
            ids.append(found[1])
            raw.append(part)
        return Chunk(lines, ids, texts=texts, raw=raw)

    def _json_record(self, part: bytes, lineno: int, first: bool) -> Optional[Tuple[str, Id]]:
        """The text and id of one non-blank line (``first``: no record came
        before it), or None when it is bad (reported to ``self.bad``)."""
        try:
            record = json.loads(part)
        except UnicodeDecodeError as e:
            self.bad(self._error(lineno, f"is not valid UTF-8 (byte {e.start + 1} of the line)"))
            return None
        except ValueError as e:
            # json's messages end where it would name the place ("... starting at").
            detail = (
                f"{e.msg}{'' if e.msg.endswith(' at') else ' at'} column {e.colno}"
                if isinstance(e, json.JSONDecodeError)
                else str(e)
            )
            self.bad(self._error(lineno, f"is not valid JSON ({detail})"))
            return None
        if type(record) is not dict:
            self.bad(self._error(lineno, f"expected a JSON object, got {json_type(record)}"))
            return None
        text_column, id_column = self.text_column, self.id_column
        text = record.get(text_column, _MISSING)
        if type(text) is not str:
            if text is _MISSING:
                self.bad(self._error(lineno, f'has no "{text_column}" field (the text field is set with --text-column)'))
            else:
                self.bad(self._error(lineno, f'"{text_column}" must be a string, got {json_type(text)}'))
            return None
        if not self.need_ids or self.line_ids:
            return text, lineno
        rid = record.get(id_column, _MISSING)
        if rid is _MISSING and not self.id_given and first:
            self.line_ids = True  # no id field in the first record: ids are line numbers
            return text, lineno
        if rid is _MISSING:
            self.bad(self._error(lineno, f'has no "{id_column}" field (the id field is set with --id-column)'))
            return None
        problem = _check_id(rid, id_column)
        if problem is not None:
            self.bad(self._error(lineno, problem))
            return None
        return text, rid

    def _parse_hash(self, parts: List[bytes], lineno: int) -> Chunk:
        lines: List[int] = []
        ids: List[Id] = []
        hashes: List[int] = []
        raw: List[bytes] = []
        for part in parts:
            lineno += 1
            if lineno == 1:
                self._read_header(part)
                continue
            if not part or part.isspace():
                continue
            fields = part.rstrip(b"\r").split(b"\t")
            if len(fields) != self._ncols:
                self.bad(self._error(lineno, f"expected {self._ncols} tab-separated fields, got {len(fields)}"))
                continue
            value = _parse_u64(fields[self._hash_col])
            if value is None:
                self.bad(self._error(lineno, f"hash {_show(fields[self._hash_col])} is not a decimal integer in 0..2**64-1"))
                continue
            try:
                rid = fields[self._id_col].decode("utf-8")
            except UnicodeDecodeError:
                self.bad(self._error(lineno, "the id is not valid UTF-8"))
                continue
            lines.append(lineno)
            ids.append(rid)
            hashes.append(value)
            raw.append(part)
        return Chunk(lines, ids, hashes=np.array(hashes, dtype=np.uint64), raw=raw)

    def _read_header(self, part: bytes) -> None:
        names = [n.strip() for n in part.rstrip(b"\r").decode("utf-8", "replace").split("\t")]
        if names and names[0].startswith("\ufeff"):
            names[0] = names[0][1:]
        if self.id_column not in names or "hash" not in names:
            raise self._error(
                1,
                f'expected a header line naming the columns "{self.id_column}" and "hash", separated by a tab, got {_show(part)}',
            )
        self.header = part + b"\n"
        self._ncols = len(names)
        self._id_col = names.index(self.id_column)
        self._hash_col = names.index("hash")

    def _parse_lines(self, parts: List[bytes], lineno: int) -> Chunk:
        lines: List[int] = []
        hashes: List[int] = []
        raw: List[bytes] = []
        for part in parts:
            lineno += 1
            value = _parse_u64(part)
            if value is None:
                if not part or part.isspace():
                    continue
                message = f"{_show(part)} is not a decimal integer in 0..2**64-1"
                if lineno == 1 and any(c.isalpha() for c in part.decode("utf-8", "replace")):
                    message += (
                        "; it looks like a header, which a lines input does not have (one "
                        "fingerprint per line; a TSV with an id and a hash column is --format hash)"
                    )
                self.bad(self._error(lineno, message))
                continue
            lines.append(lineno)
            hashes.append(value)
            raw.append(part)
        return Chunk(lines, list(lines), hashes=np.array(hashes, dtype=np.uint64), raw=raw)

    # -- parquet ---------------------------------------------------------------
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
        if not (pa.types.is_string(text_type) or pa.types.is_large_string(text_type) or pa.types.is_string_view(text_type)):
            raise self._error(None, f'column "{self.text_column}" has type {text_type}, not string')
        use_ids = self.need_ids and (self.id_given or self.id_column in names)
        if use_ids:
            if self.id_column not in names:
                raise self._error(
                    None, f'has no column "{self.id_column}" (columns: {", ".join(names)}); the id column is set with --id-column'
                )
            id_type = pf.schema_arrow.field(self.id_column).type
            if not (
                pa.types.is_integer(id_type)
                or pa.types.is_string(id_type)
                or pa.types.is_large_string(id_type)
                or pa.types.is_string_view(id_type)
            ):
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


def _stopped(compression: str, error: object) -> str:
    """The bad line's message when an input stops early (both readers)."""
    what = "the file" if compression == "plain" else f"the {compression} stream"
    return f"{what} cannot be read past this line: it is cut short or damaged ({error})"


def _read_block(stream: Any, n: int) -> Tuple[bytes, Optional[BaseException]]:
    """``n`` bytes, fewer at the end of the input (a pipe gives a little at a
    time) or when an error stops the reading: then the error too."""
    parts: List[bytes] = []
    got = 0
    while got < n:
        try:
            more = stream.read(min(n - got, 1 << 16))
        except Exception as e:  # OSError, EOFError, zlib.error, zstandard.ZstdError, ...
            return b"".join(parts), e
        if not more:
            break
        parts.append(more)
        got += len(more)
    return b"".join(parts), None


class _ZstdFrames:
    """zstd frames one after another, read as one stream; a last frame cut
    short is an error (``zstandard``'s stream reader ends quietly there)."""

    def __init__(self, zstandard: Any, raw: Any):
        self.zstandard, self.raw = zstandard, raw
        self.frame: Any = None  # the frame being decompressed, if one is begun
        self.pending = b""

    def read(self, n: int) -> bytes:
        while len(self.pending) < n:
            data = self.raw.read(1 << 20)
            if not data:
                if self.frame is not None:
                    raise EOFError("incomplete frame")
                break
            while data:
                if self.frame is None:
                    self.frame = self.zstandard.ZstdDecompressor().decompressobj()
                self.pending += self.frame.decompress(data)
                data = b""
                if self.frame.eof:
                    data = self.frame.unused_data
                    self.frame = None
        out, self.pending = self.pending[:n], self.pending[n:]
        return out

    def close(self) -> None:
        self.raw.close()


class _Prefixed:
    """A stream whose first bytes were already read (to recognise compression)."""

    def __init__(self, head: bytes, raw: Any):
        self.head = head
        self.raw = raw

    def read(self, n: int = -1) -> bytes:
        if not self.head:
            return self.raw.read(n)
        if n is None or n < 0:
            head, self.head = self.head, b""
            return head + self.raw.read()
        head, self.head = self.head[:n], self.head[n:]
        return head

    def close(self) -> None:
        self.raw.close()


def _parse_u64(field: bytes) -> Optional[int]:
    """The value of an ASCII decimal u64 (surrounding spaces allowed), or None."""
    field = field.strip()
    # 2**64-1 has 20 digits: a longer field is no u64 (and int() of a
    # million digits is refused by Python, or slow).
    if not field.isdigit() or len(field.lstrip(b"0")) > 20:
        return None
    value = int(field)
    return value if value <= U64_MAX else None


def _show(part: bytes, limit: int = 40) -> str:
    """A bad field or line, quoted and cut short, for a message."""
    text = part.decode("utf-8", "replace")
    if len(text) > limit:
        text = text[:limit] + "..."
    return json.dumps(text, ensure_ascii=False)
