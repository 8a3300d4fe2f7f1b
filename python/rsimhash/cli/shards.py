"""Inputs of many shards: ``--input`` repeated, a directory or a glob.

``resolve`` turns the ``--input`` values of ``dedup``, ``cluster`` and
``find-all`` into what the command reads:

* one value naming a file (or ``-``): that path, read as it always was;
* anything else (several values, a directory, a quoted glob): ``Shards``,
  a list of files in a deterministic order. The values are taken in the
  order given; a directory's files in sorted order of their path relative
  to it, recursively (Hive-style partition folders ``day=2024-01-01/`` are
  folders like any other); a glob's matches sorted. Every file of a
  directory whose name says another format, or no format (``_SUCCESS``,
  ``.crc``), or that starts with ``.`` or ``_`` is skipped and never opened.

Each shard has a relative name (``rel``): its path inside the directory
given, or inside a glob's fixed leading folder, or its file name; with
several ``--input`` values, prefixed by the value's own name, so that
``--input day1 --input day2`` keeps both days' ``part-0.jsonl`` apart. The
outputs of ``dedup --output DIR`` are written under these names; two shards
of one name are refused.

Refused before any work, with a message naming the path: a directory with
no file of the format, a glob matching nothing, shards of mixed formats, a
symlink loop, a shard given twice.

``ShardedSource`` reads the shards one after another as one ``Source``:
its chunks carry the shard they came from (``chunk.shard``), record
positions run on across shards, and it remembers the position at which
each shard began (``starts``), so a position names its shard.
"""

from __future__ import annotations

import argparse
import glob
import os
from typing import TYPE_CHECKING, Any, Callable, Dict, Iterator, List, Optional, Sequence, Tuple, Union

import numpy as np

from .._records import Chunk, RecordRequestError, Source, guess_format
from .errors import BadLines, InputError, UsageError

if TYPE_CHECKING:  # Python 3.10 has it in typing
    from typing_extensions import TypeGuard

_MAGIC = set("*?[")


class Shard:
    """One input file: its path as given and its relative name."""

    __slots__ = ("path", "rel", "size")

    def __init__(self, path: str, rel: str, size: int):
        self.path, self.rel, self.size = path, rel, size

    def __repr__(self) -> str:
        return f"Shard({self.path!r}, {self.rel!r})"


class Shards(list):
    """The input shards of a run, in reading order (a list of ``Shard``)."""

    def __init__(self, items: Sequence[Shard], values: Sequence[str], directories: Sequence[str]):
        super().__init__(items)
        self.values = list(values)  # the --input values as given
        self.directories = sorted(set(directories))  # every directory read (links followed), resolved

    def __str__(self) -> str:
        return " ".join(self.values)


def is_sharded(value: Any) -> TypeGuard[Shards]:
    return isinstance(value, Shards)


def _is_glob(value: str) -> bool:
    return bool(_MAGIC & set(value)) and not os.path.exists(value)


def _format_of(name: str, fmt: str, lenient: bool) -> Optional[str]:
    """The format a file is read as, or None when ``lenient`` and its name says none."""
    if fmt != "auto":
        return fmt
    try:
        return guess_format(name, "auto")
    except RecordRequestError:
        if lenient:
            return None
        raise


def _walk(top: str, folders: Optional[List[str]] = None) -> Iterator[str]:
    """Every file under ``top``, sorted by relative path, following symlinks;
    a symlink back to a folder above is an ``InputError``. The real path of
    each folder read is added to ``folders``: a link may lead anywhere, and
    the write gate keeps outputs out of every folder an input was read from."""
    seen: Dict[Tuple[int, int], str] = {}

    def visit(folder: str, rel: str, chain: Tuple[Tuple[int, int], ...]) -> Iterator[str]:
        try:
            st = os.stat(folder)
        except OSError as e:
            raise InputError(folder, None, f"cannot read: {e.strerror or e}") from None
        if folders is not None:
            folders.append(os.path.realpath(folder))
        key = (st.st_dev, st.st_ino)
        if key in chain:
            raise InputError(
                folder, None, f"is a symlink loop (it leads back to {seen[key]}); remove the link or give the folders"
            )
        seen.setdefault(key, folder)
        try:
            names = sorted(os.listdir(folder))
        except OSError as e:
            raise InputError(folder, None, f"cannot read: {e.strerror or e}") from None
        for name in names:
            if name.startswith((".", "_")):
                continue  # hidden files, _SUCCESS, _metadata, rsimhash's own temporary files
            path = os.path.join(folder, name)
            sub = os.path.join(rel, name) if rel else name
            if os.path.isdir(path):
                yield from visit(path, sub, chain + (key,))
            else:
                yield sub

    yield from visit(top, "", ())


def resolve(values: Union[str, Sequence[str], None], fmt: str, lenient_default: Optional[str] = None) -> Tuple[Any, str]:
    """``(input, format)``: the path of a single input file (as given), or
    ``Shards``; and the format they are read as (``fmt`` when not ``auto``).

    ``lenient_default``: the format of a file whose name says none (find-all
    reads such files as fingerprint lines); files in a directory still need a
    name of the format."""
    if values is None or isinstance(values, str):
        values = [] if values is None else [values]
    values = list(values)
    if len(values) == 1 and not os.path.isdir(values[0]) and not _is_glob(values[0]):
        return values[0], fmt
    if "-" in values:
        raise UsageError("--input -: stdin cannot be one of several inputs")
    several = len(values) > 1
    found: List[Tuple[str, str, Optional[str], str]] = []  # (path, rel, format, value)
    directories: List[str] = []
    for value in values:
        # The folder's own name (of its real path: '.' and '..' name no folder).
        prefix = os.path.basename(os.path.realpath(value)) if several and not _is_glob(value) else ""
        if os.path.isdir(value):
            walked = _walk(value, directories)
            files = [(os.path.join(value, rel), os.path.join(prefix, rel) if prefix else rel) for rel in walked]
            # A file of a directory is read when its name says the format (or, under
            # auto, any format): README.md or _SUCCESS beside the shards is not a shard.
            typed = [(p, r, _format_of(p, "auto", True)) for p, r in files]
            typed = [t for t in typed if t[2] is not None and (fmt == "auto" or t[2] == fmt)]
            formats = sorted({t[2] for t in typed if t[2] is not None})
            if fmt == "auto" and len(formats) > 1:
                raise UsageError(
                    f"--input {value}: holds files of mixed formats ({', '.join(formats)}); give one format per run "
                    "(--format, or a glob such as '{value}/**/*.jsonl.gz')"
                )
            if not typed:
                what = (
                    f"{fmt} file"
                    if fmt != "auto"
                    else "file of a format rsimhash reads (.jsonl, .parquet, .tsv, .txt, maybe .gz/.zst)"
                )
                raise InputError(value, None, f"holds no {what}")
            found.extend((p, r, f, value) for p, r, f in typed)
        elif _is_glob(value):
            # Sorted as a directory is read: by path, folder by folder.
            matches = sorted(glob.glob(value, recursive=True), key=lambda m: os.path.normpath(m).split(os.sep))
            if not matches:
                raise InputError(value, None, "matches no file (quote a glob so that rsimhash, not the shell, expands it)")
            base = _glob_base(value)
            # The folders a glob's matches lie in are read as a directory is:
            # an output there would be matched by the next run of the same glob.
            directories.extend(os.path.realpath(os.path.dirname(m) or ".") for m in matches)
            for m in matches:
                if os.path.isdir(m):
                    for rel in _walk(m, directories):
                        p = os.path.join(m, rel)
                        f = _format_of(p, "auto", True)
                        if f is not None and (fmt == "auto" or f == fmt):
                            found.append((p, os.path.relpath(p, base), f, value))
                else:
                    found.append(
                        (m, os.path.relpath(m, base), _format_of(m, fmt, lenient_default is not None) or lenient_default, value)
                    )
        else:
            f = _format_of(value, fmt, lenient_default is not None) or lenient_default
            found.append((value, os.path.join(prefix, os.path.basename(value)) if prefix else os.path.basename(value), f, value))
    formats = sorted({f for _, _, f, _ in found if f is not None})
    if len(formats) > 1:
        first = {f: p for p, _, f, _ in reversed(found) if f is not None}
        raise UsageError(
            "the inputs are of mixed formats: "
            + ", ".join(f"{first[f]} is {f}" for f in formats)
            + "; give shards of one format per run"
        )
    shards: List[Shard] = []
    rels: Dict[str, str] = {}
    reals: Dict[str, str] = {}
    for path, rel, _, _ in found:
        rel = os.path.normpath(rel)
        _check_name(path, rel)
        real = os.path.realpath(path)
        if real in reals:
            raise UsageError(f"--input: {path} is given twice (also as {reals[real]}); each shard is read once")
        reals[real] = path
        if rel in rels:
            raise UsageError(f"--input: {path} and {rels[rel]} would both be written as {rel}; give them as separate runs")
        rels[rel] = path
        try:
            size = os.path.getsize(path)
        except OSError as e:
            raise InputError(path, None, f"cannot read: {e.strerror or e}") from None
        shards.append(Shard(path, rel, size))
    return Shards(shards, values, directories), formats[0] if formats else fmt


def _check_name(path: str, rel: str) -> None:
    """Refuses a shard whose name the outputs cannot hold: the TSV outputs
    name shards, and a tab or a line break would split their rows."""
    bad = next((c for c in ("\t", "\n", "\r") if c in rel), None)
    if bad is not None:
        shown = path.replace("\t", "\\t").replace("\n", "\\n").replace("\r", "\\r")  # one line
        raise InputError(shown, None, f"its name holds a {repr(bad)[1:-1]}, which the TSV outputs cannot hold; rename the file")
    try:
        rel.encode("utf-8")
    except UnicodeEncodeError:
        shown = os.fsencode(path).decode("ascii", "backslashreplace")
        raise InputError(shown, None, "its name is not UTF-8, which the outputs name shards in; rename the file") from None


def _glob_base(pattern: str) -> str:
    """The folder of a glob before its first wildcard."""
    parts = pattern.split(os.sep)
    fixed: List[str] = []
    for part in parts[:-1]:
        if _MAGIC & set(part):
            break
        fixed.append(part)
    base = os.sep.join(fixed)
    return base if base else ("/" if pattern.startswith(os.sep) else ".")


def resolve_args(args: argparse.Namespace, lenient_default: Optional[str] = None) -> None:
    """``args.input`` and ``args.format`` resolved in place (see ``resolve``);
    a second call changes nothing."""
    if getattr(args, "inputs_resolved", False):
        return
    args.inputs_resolved = True
    args.input, fmt = resolve(args.input, getattr(args, "format", "auto"), lenient_default)
    if is_sharded(args.input):
        args.format = fmt


def input_format(args: argparse.Namespace) -> str:
    """The format ``args.input`` is read as: resolved shards carry theirs."""
    if is_sharded(args.input):
        return str(args.format)
    return guess_format(args.input, getattr(args, "format", "auto"))


class ShardedSource:
    """The shards read one after another, as one ``Source``.

    ``make(path, bad)`` opens one shard as a ``Source``; every shard shares
    one ``BadLines``, so ``--skip-bad-lines`` counts over the whole run.
    When the records' ids are their line numbers and ``qualify_line_ids``,
    each id is ``REL:LINE`` (a line number alone names no record among
    several shards)."""

    def __init__(
        self,
        shards: Shards,
        fmt: str,
        make: Callable[[str, BadLines], Source],
        bad: BadLines,
        limit: Optional[int] = None,
        qualify_line_ids: bool = True,
    ):
        self.shards = shards
        self.format = fmt
        self._make = make
        self.bad = bad
        self.limit = limit
        self.qualify_line_ids = qualify_line_ids
        self.total: Optional[int] = sum(s.size for s in shards)
        self.sources: List[Source] = []  # each shard's Source, once opened (kept for its header and schema)
        self.starts: List[int] = []  # the position of each opened shard's first record
        self.records = 0
        self._done_bytes = 0  # file bytes of the shards read whole
        self._current: Optional[Source] = None
        self._ahead: Optional[Source] = None  # the next shard, opened while this one is read
        # A shard that cannot be opened fails here, before any work (the first is opened now).
        self._first = self._make(shards[0].path, bad) if len(shards) else None

    @property
    def path(self) -> str:
        return str(self.shards)

    @property
    def nbytes(self) -> int:
        return sum(s.nbytes for s in self.sources)

    @property
    def header(self) -> Optional[bytes]:
        return next((s.header for s in self.sources if s.header is not None), None)

    @property
    def line_ids(self) -> bool:
        return any(s.line_ids for s in self.sources)

    def schema(self) -> Any:
        assert self._first is not None or self.sources
        return (self.sources[0] if self.sources else self._first).schema()  # type: ignore[union-attr]

    def rows(self) -> int:
        from .._optional import module

        pq = module("pyarrow.parquet")
        return sum(int(pq.read_metadata(s.path).num_rows) for s in self.shards)

    def position(self) -> int:
        current = self._current
        return self._done_bytes + (current.position() if current is not None else 0)

    def shards_done(self) -> int:
        return max(0, len(self.sources) - (1 if self._current is not None else 0))

    def shard_of(self, positions: np.ndarray) -> np.ndarray:
        """The shard of each record position read so far."""
        starts = np.asarray(list(self.starts), dtype=np.int64)
        return np.searchsorted(starts, np.asarray(positions, dtype=np.int64), side="right") - 1

    def chunks(self) -> Iterator[Chunk]:
        # The next shard is opened when this one starts: the core's reader reads
        # ahead on threads of its own, so no shard boundary stalls the pipeline.
        ahead = self._first
        self._first = None
        try:
            yield from self._chunks(ahead)
        finally:
            if self._ahead is not None:
                self._ahead.close()
                self._ahead = None

    def values(self) -> Iterator[np.ndarray]:
        """The records' fingerprints alone, shard after shard (as ``Source.values``)."""
        for chunk in self.chunks():
            assert chunk.hashes is not None, "values() reads fingerprint files"
            yield chunk.hashes

    def _chunks(self, ahead: Optional[Source]) -> Iterator[Chunk]:
        self._ahead = ahead
        for i, shard in enumerate(self.shards):
            source = self._ahead if self._ahead is not None else self._make(shard.path, self.bad)
            self._ahead = None
            if i + 1 < len(self.shards):
                self._ahead = self._make(self.shards[i + 1].path, self.bad)
            self.sources.append(source)
            self.starts.append(self.records)
            self._current = source
            try:
                for chunk in source.chunks():
                    if self.limit is not None and self.records + len(chunk) >= self.limit:
                        chunk = chunk.head(self.limit - self.records)
                    chunk.shard = i
                    if self.qualify_line_ids and source.line_ids and len(chunk):
                        chunk._ids = [f"{shard.rel}:{line}" for line in np.asarray(chunk.lines).tolist()]
                    self.records += len(chunk)
                    if len(chunk):
                        yield chunk
                    if self.limit is not None and self.records >= self.limit:
                        return
            finally:
                source.close()
                self._current = None
                self._done_bytes += shard.size

    def close(self) -> None:
        for s in self.sources:
            s.close()
        if self._first is not None:
            self._first.close()

    def __enter__(self) -> "ShardedSource":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
