"""What the commands keep on disk when their input would not fit in memory.

``Workspace`` is the command's own work directory, ``.rsimhash-work-PID-...``,
made inside ``--workdir`` when given, else beside the output, else in the
system's temporary directory, and removed whole when the command ends:
nothing of the user's in ``--workdir`` is ever touched, and ``--workdir``
itself stays (unless the command made it and it is empty). Those that killed
runs left in the same place are removed by the next run. ``Fingerprints``
holds the fingerprints read so far in memory until they pass a share of the
memory limit, then in a ``.npy`` file that the batch engine reads a chunk at
a time. ``Ids`` does the same for record ids (their text, as the outputs
write them, with an offsets array for random access). Every file is created
new (``O_EXCL | O_NOFOLLOW``).
"""

from __future__ import annotations

import os
from typing import Any, Iterator, List, Optional, Sequence, Tuple, Union

import numpy as np

from .. import _rsimhash
from .._files import create_new, own_directory, remove_directory
from .errors import CliError, utf8
from .stdio import stdin_fd

NPY_HEADER = 128  # bytes: a 1-D uint64 header padded to 128 holds any length
PREFIX = ".rsimhash-work-"


class WorkdirError(CliError):
    """A work directory that cannot be made or written."""

    def __init__(self, path: str, reason: str):
        super().__init__(f"--workdir {path}: {reason}")


class Workspace:
    """The command's own work directory, made on first use."""

    def __init__(self, workdir: Optional[str], output: Optional[str]):
        self.given = workdir
        self.near = None if output in (None, "-") else os.path.dirname(os.path.abspath(output or "."))
        self._path: Optional[str] = None
        self._made_given = False
        self._files: List[str] = []
        if workdir is not None:
            _ = self.path  # a --workdir that cannot be written is an error before any work

    @property
    def path(self) -> str:
        if self._path is None:
            if self.given is not None:
                try:
                    if not os.path.isdir(self.given):
                        os.makedirs(self.given)
                        self._made_given = True
                    self._path = own_directory(self.given, PREFIX)
                except OSError as e:
                    raise WorkdirError(self.given, f"cannot be written ({e.strerror or e})") from None
            else:
                try:
                    self._path = own_directory(self.near, PREFIX)
                except OSError:
                    self._path = own_directory(None, PREFIX[1:])
        return self._path

    def spilled(self) -> int:
        """Bytes in the command's own files now."""
        total = 0
        for f in self._files:
            try:
                total += os.path.getsize(f)
            except OSError:
                pass
        return total

    def file(self, name: str, suffix: str = "") -> str:
        """A path for a file of the command's own, removed at the end."""
        path = os.path.join(self.path, f"{name}-{os.getpid()}{suffix}")
        self._files.append(path)
        return path

    def __enter__(self) -> "Workspace":
        return self

    def __exit__(self, *exc: object) -> None:
        if self._path is None:
            return
        remove_directory(self._path)
        if self._made_given and self.given is not None:
            try:
                os.rmdir(self.given)
            except OSError:
                pass


class Fingerprints:
    """Fingerprints in input order: in memory up to ``cap`` of them, then
    all of them in a ``.npy`` file of the workspace.

    In memory they are copied into one growing array as they come (or,
    ``as_parts``, kept as the arrays added, for a caller whose core reads
    them as one): the copy runs while the reader parses the next block, not
    after the last one (at 10^7 values, a concatenation at the end cost 0.3 s of the
    command's critical path)."""

    def __init__(self, cap: int, workspace: Workspace, *, as_parts: bool = False):
        self.cap = cap
        self.workspace = workspace
        self._held = np.empty(0, dtype=np.uint64)
        # With ``as_parts`` the caller reads the parts as one (the core does):
        # the arrays added are kept as they are, never copied.
        self._parts: Optional[List[np.ndarray]] = [] if as_parts else None
        self.count = 0
        self.path: Optional[str] = None
        self._file: Any = None

    @property
    def parts(self) -> List[np.ndarray]:
        """The fingerprints held in memory, as parts (none once spilled)."""
        if self._file is not None or not self.count:
            return []
        return self._parts if self._parts is not None else [self._held[: self.count]]

    @property
    def spilled(self) -> bool:
        return self.path is not None

    def add(self, fps: np.ndarray, expect: int = 0) -> None:
        """Adds ``fps``; ``expect``: how many the input is thought to hold
        in all (room for them is made at once, not by doubling: in a fresh
        process every page is touched for the first time, and doubling
        touched twice the pages)."""
        held = self.count
        self.count += len(fps)
        if self._file is None and self.count > self.cap:
            self.path = self.workspace.file("fingerprints", ".npy")
            self._file = create_new(self.path)
            self._file.write(_header(0))
            for part in self._parts if self._parts is not None else [self._held[:held]]:
                self._write(part)
            self._held, self._parts = np.empty(0, dtype=np.uint64), None
        if self._file is not None:
            self._write(fps)
            return
        if self._parts is not None:
            self._parts.append(fps)
            return
        if self.count > len(self._held):
            # Room for what is expected (within the cap), else twice the
            # room: the pages of room not yet used are never touched.
            room = max(self.count, 2 * len(self._held), 1 << 16)
            if expect > self.count:
                room = min(max(self.count, expect + expect // 32), max(self.cap, self.count))
            grown = np.empty(room, dtype=np.uint64)
            grown[:held] = self._held[:held]
            self._held = grown
        self._held[held : self.count] = fps

    def _write(self, fps: np.ndarray) -> None:
        try:
            self._file.write(np.ascontiguousarray(fps, dtype="<u8").tobytes())
        except OSError as e:
            raise WorkdirError(self.workspace.path, f"cannot be written ({e.strerror or e})") from None

    def finish(self, parts: bool = False) -> Any:
        """The fingerprints: an array (with ``parts``, the list of arrays as
        added, for a caller that reads them as one without a copy), or the
        path of the complete ``.npy`` file."""
        if self._file is None:
            if parts:
                return self.parts
            if self._parts is not None:
                return np.concatenate(self._parts) if self._parts else self._held
            return self._held[: self.count]
        self._file.seek(0)
        self._file.write(_header(self.count))
        self._file.close()
        self._file = None
        return self.path  # type: ignore[return-value]

    def close(self) -> None:
        if self._file is not None:
            self._file.close()


def _header(n: int) -> bytes:
    dict_ = f"{{'descr': '<u8', 'fortran_order': False, 'shape': ({n},), }}"
    head = b"\x93NUMPY\x01\x00" + (NPY_HEADER - 10).to_bytes(2, "little")
    return head + dict_.encode("ascii").ljust(NPY_HEADER - 11) + b"\n"


class _Lines:
    """A piece of ids that are line numbers, as a uint64 array."""

    __slots__ = ("values",)

    def __init__(self, values: np.ndarray):
        self.values = values


class Ids:
    """Record ids as text, in input order: in memory up to ``cap`` of them
    (pieces: a list of ids, a chunk's ids packed by the core as text and
    offsets, or its line numbers: no Python object an id), then a file with
    an offsets array (``.npy``) beside it."""

    def __init__(self, cap: int, workspace: Optional[Workspace]):
        self.cap = cap
        self.workspace = workspace  # None: never more than ``cap`` ids
        self.memory: List[Any] = []  # the pieces, in order
        self._piece_starts: List[int] = [0]  # the first position of each piece, and the count
        self._starts_array: Optional[np.ndarray] = None  # the same, as an array, until a piece is added
        self.count = 0
        self._text: Any = None
        self._offsets: List[np.ndarray] = []  # pending offsets of the ids in the file
        self._pending = 0
        self._at = 0
        self._mm: Any = None
        self._starts: Optional[np.ndarray] = None

    def extend(self, ids: Sequence[Any]) -> None:
        """Adds ids given as a list."""
        self._add(ids, len(ids))

    def extend_chunk(self, chunk: Any) -> None:
        """Adds a chunk's ids (packed by the core where it holds them all,
        an array where they are line numbers), or ids already packed:
        ``(text, offsets)``, the text a uint8 array or ``bytes``."""
        if isinstance(chunk, tuple):
            self._add(chunk, len(chunk[1]) - 1)
        elif (lines := chunk.line_ids()) is not None:
            self._add(_Lines(lines), len(lines))
        elif (packed := chunk.packed_ids()) is not None:
            self._add(packed, len(packed[1]) - 1)
        else:
            self.extend(chunk.ids)

    def _add(self, piece: Any, n: int) -> None:
        self.count += n
        if self._text is None and self.count > self.cap:
            path = self._workspace().file("ids")
            self._text = create_new(path)
            self._path = path
            pending, self.memory, self._piece_starts = self.memory, [], [0]
            for held in pending:
                self._write(held)
        if self._text is not None:
            self._write(piece)
        elif n:
            self.memory.append(piece)
            self._piece_starts.append(self._piece_starts[-1] + n)
            self._starts_array = None

    def _workspace(self) -> Workspace:
        assert self.workspace is not None, "more ids than the cap of an Ids without a workspace"
        return self.workspace

    def _which(self, at: np.ndarray) -> np.ndarray:
        """The piece in memory each position of ``at`` falls in."""
        if self._starts_array is None:
            self._starts_array = np.asarray(self._piece_starts)
        return np.searchsorted(self._starts_array, at, side="right") - 1

    def _by_piece(self, at: np.ndarray) -> Iterator[Tuple[int, np.ndarray]]:
        """Each piece in memory the positions ``at`` fall in, ascending, with
        the indices into ``at`` of those in it (in their order in ``at``)."""
        which = self._which(at)
        order = np.argsort(which, kind="stable")
        pieces, cuts = np.unique(which[order], return_index=True)
        return zip(pieces.tolist(), np.split(order, cuts[1:]))

    def _write(self, piece: Any) -> None:
        if isinstance(piece, tuple):
            blob, offsets = piece
            starts = offsets[:-1].astype("<u8") + np.uint64(self._at)
        else:
            blob, offsets = _packed(piece.values.tolist() if isinstance(piece, _Lines) else piece)
            starts = offsets[:-1].astype("<u8") + np.uint64(self._at)
        self._offsets.append(starts)
        self._pending += len(starts)
        self._at += len(blob)
        try:
            self._text.write(blob)
        except OSError as e:
            raise WorkdirError(self._workspace().path, f"cannot be written ({e.strerror or e})") from None
        if self._pending > 1 << 20:
            self._flush_offsets()

    def _flush_offsets(self) -> None:
        if not hasattr(self, "_offsets_file"):
            self._offsets_path = self._workspace().file("id-offsets")
            self._offsets_file = create_new(self._offsets_path)
        if self._offsets:
            self._offsets_file.write(np.concatenate(self._offsets).astype("<u8").tobytes())
        self._offsets, self._pending = [], 0

    def finish(self) -> None:
        """Ready for ``text``: the files are closed and mapped."""
        if self._text is None:
            return
        self._text.close()
        self._offsets.append(np.array([self._at], dtype="<u8"))
        self._flush_offsets()
        self._offsets_file.close()
        self._starts = np.fromfile(self._offsets_path, dtype="<u8")
        self._mm = np.memmap(self._path, dtype=np.uint8, mode="r") if self._at else np.empty(0, np.uint8)

    def text(self, positions: Union[Sequence[int], np.ndarray]) -> List[str]:
        """The ids of these records, as text."""
        at = np.asarray(positions, dtype=np.int64)
        if self._starts is not None:
            return _slices(self._mm, self._starts, at)
        # Each piece's positions at once: the byte ranges gathered by numpy,
        # not looked up one id at a time.
        out: List[Any] = [None] * len(at)
        for w, mine in self._by_piece(at):
            piece, local = self.memory[w], at[mine] - self._piece_starts[w]
            if isinstance(piece, tuple):
                texts = _slices(piece[0], piece[1], local)
            elif isinstance(piece, _Lines):
                texts = [str(i) for i in piece.values[local].tolist()]
            else:
                texts = [str(piece[i]) for i in local.tolist()]
            for j, t in zip(mine.tolist(), texts):
                out[j] = t
        return out

    def rows(self, columns: Sequence[Tuple[str, Any]]) -> bytes:
        """TSV rows made by the core, a field of each column in turn:
        ``("id", positions)``, these records' ids; ``("number", values)``,
        integers in decimal. An id UTF-8 cannot hold is an
        ``UnencodableError`` naming it, as ``utf8`` names it."""
        named = [np.asarray(v, dtype=np.int64) for kind, v in columns if kind == "id"]
        pieces, starts = self._packed_pieces(np.concatenate(named) if named else np.empty(0, np.int64))
        fields = [("text" if kind == "id" else "number", np.ascontiguousarray(v, dtype=np.uint64)) for kind, v in columns]
        out = _rsimhash.text_rows(pieces, starts, fields)
        if isinstance(out, int):  # that row's id: named through the text path
            for at in named:
                utf8(self.text(at[out : out + 1])[0])
            raise AssertionError(f"row {out} was not UTF-8 but its ids are")
        return out  # type: ignore[no-any-return]

    def _packed_pieces(self, named: np.ndarray) -> Tuple[List[Any], List[int]]:
        """The ids as the core's ``text_rows`` takes them: the pieces the
        positions ``named`` are in (packed text, or line numbers) and the
        first position of each, so that a block of rows costs its own
        pieces, not all of them. A piece held as a list is packed the first
        time and kept packed: the removed records of each chunk name kept
        ones in any earlier chunk, and packing the named entries anew at
        each call cost a piece's length each time, the square of the chunks
        in all."""
        if self._starts is not None:
            return [(self._mm, self._starts)], [0]
        pieces: List[Any] = []
        starts: List[int] = []
        # The pieces named, by a count of each (a sort of the positions,
        # np.unique, cost more than the rows they name).
        for w in np.flatnonzero(np.bincount(self._which(named), minlength=len(self.memory))).tolist():
            piece, start = self.memory[w], self._piece_starts[w]
            starts.append(start)
            if isinstance(piece, _Lines):
                pieces.append(piece.values)
                continue
            if not isinstance(piece, tuple):  # a list
                piece = self.memory[w] = _packed(piece)
            pieces.append((np.frombuffer(piece[0], dtype=np.uint8), np.ascontiguousarray(piece[1], dtype=np.uint64)))
        return pieces, starts

    def close(self) -> None:
        for f in (self._text, getattr(self, "_offsets_file", None)):
            if f is not None and not f.closed:
                f.close()
        self._mm = None


def _packed(ids: Sequence[Any]) -> Tuple[bytes, np.ndarray]:
    """Ids given as a list, as text packed: ``(bytes, n + 1 offsets)``."""
    data = [str(i).encode("utf-8", "surrogatepass") for i in ids]
    offsets = np.zeros(len(data) + 1, dtype=np.uint64)
    np.cumsum([len(d) for d in data], out=offsets[1:])
    return b"".join(data), offsets


def _slices(blob: Any, offsets: np.ndarray, at: np.ndarray) -> List[str]:
    """The texts ``blob[offsets[i]:offsets[i + 1]]`` for each ``i`` in ``at``."""
    lo, hi = offsets[at].tolist(), offsets[at + 1].tolist()
    view = memoryview(blob)
    return [str(view[a:b], "utf-8", "surrogatepass") for a, b in zip(lo, hi)]


def engine_part(workspace: Workspace) -> str:
    """The summary's note that the batch engine ran, and what it spilled."""
    size = workspace.spilled()
    amount = next(
        f"{size / 10**p:,.1f} {unit}" for p, unit in ((9, "GB"), (6, "MB"), (3, "kB"), (0, "B")) if size >= 10**p or p == 0
    )
    return f"batch engine ({amount} spilled to {workspace.path})"


def copy_stdin(workspace: Workspace) -> str:
    """Standard input copied into the workspace, to be read twice."""
    path = workspace.file("stdin")
    src = open(os.dup(stdin_fd()), "rb", buffering=0)
    try:
        with create_new(path) as out:
            while True:
                block = src.read(8 << 20)
                if not block:
                    break
                out.write(block)
    except OSError as e:
        raise WorkdirError(workspace.path, f"cannot hold a copy of stdin ({e.strerror or e})") from None
    finally:
        src.close()
    return path
