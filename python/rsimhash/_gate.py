"""The one gate every write goes through: may this run write here?

Before a run writes anything it declares, in a ``Plan``, every path it
reads and every path it writes, and ``Plan.check`` compares them all at
once on real paths (globs expanded, directories walked, symlinks and
``..`` resolved). It refuses, with one line naming both paths:

* an output that is an input (the same real path, or the same file under
  another name: a hard link), or lies inside an input directory or a store;
* an output directory (``dedup --output DIR`` of shards) that is, holds or
  lies inside an input or a store, or that holds a symlink anywhere (a
  link would carry a shard's output out of it, or into an input); a shard
  name that would leave it (absolute, or with ``..``);
* a store the run adds to (``--save-fingerprints``) that is, holds or lies
  inside an input;
* two outputs under one name.

A device or a pipe given as an output (``-``, ``/dev/null``, a FIFO) is
written in place, never renamed over: it is no file of the user's to lose.

``Plan.hold`` then locks each output directory and each store for the
run: an advisory lock the kernel drops when the process ends, however it
ends. A second run into the same place is refused (``BusyError``), naming
the process that holds it.

The command line declares each command's paths in ``rsimhash.cli.paths``;
the batch jobs with ``out=`` in ``rsimhash.batch``.
"""

from __future__ import annotations

import contextlib
import os
import stat
from typing import Iterator, List, Optional, Sequence, Tuple

LOCK = ".rsimhash.lock"  # in each output directory and store, for the run's duration
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)


class GateError(ValueError):
    """A run may not write where it was asked to (one line naming both paths)."""


class BusyError(GateError):
    """Another run holds the lock of an output directory or a store."""


def real(path: str) -> str:
    """The real path of ``path``, which need not exist yet."""
    return os.path.realpath(os.path.abspath(os.fspath(path)))


def inside(child: str, parent: str) -> bool:
    """Whether real path ``child`` lies strictly inside real path ``parent``."""
    return child != parent and child.startswith(parent.rstrip(os.sep) + os.sep)


def _identity(path: str) -> Optional[Tuple[int, int]]:
    try:
        st = os.stat(path)
    except (OSError, ValueError):
        return None
    return st.st_dev, st.st_ino


def is_special(path: str) -> bool:
    """Whether ``path`` is stdout (``-``) or exists as neither a regular file
    nor a directory (a device, a FIFO): written in place, never replaced."""
    if path == "-":
        return True
    try:
        mode = os.stat(path).st_mode
    except (OSError, ValueError):
        return False
    return not (stat.S_ISREG(mode) or stat.S_ISDIR(mode))


class _Path:
    __slots__ = ("flag", "path", "real", "identity", "is_dir", "store")

    def __init__(self, flag: str, path: str, is_dir: bool = False, store: bool = False):
        self.flag, self.path = flag, os.fspath(path)
        self.real = real(self.path)
        self.identity = _identity(self.path)
        self.is_dir, self.store = is_dir, store

    def __str__(self) -> str:
        return f"{self.flag} {self.path}" if self.flag else self.path


def _escapes(rel: str) -> bool:
    norm = os.path.normpath(rel)
    return (
        os.path.isabs(rel)
        or norm in (".", "..")
        or norm.startswith(".." + os.sep)
        or (os.altsep is not None and norm.startswith(".." + os.altsep))
    )


class Plan:
    """The paths of one run: what it reads, what it writes."""

    def __init__(self) -> None:
        self.reads: List[_Path] = []
        self.writes: List[_Path] = []
        self.trees: List[Tuple[_Path, List[Tuple[str, str]]]] = []
        self.stores: List[_Path] = []  # stores added to

    # -- declaring ---------------------------------------------------------------
    def read(self, flag: str, path: Optional[str]) -> None:
        """A file or a directory the run reads (``-``, stdin, is none)."""
        if path is None or path == "-":
            return
        self.reads.append(_Path(flag, path, is_dir=os.path.isdir(path)))

    def read_store(self, flag: str, path: str) -> None:
        """A store the run reads (``--against``): the run may add to it too."""
        self.reads.append(_Path(flag, path, is_dir=True, store=True))

    def write(self, flag: str, path: Optional[str]) -> None:
        """A file the run writes (made under a temporary name, renamed into place)."""
        if path is None or is_special(path):
            return
        self.writes.append(_Path(flag, path))

    def tree(self, flag: str, directory: str, names: Sequence[Tuple[str, str]]) -> None:
        """An output directory and the ``(relative name, what it is written from)``
        of each file the run writes in it."""
        self.trees.append((_Path(flag, directory, is_dir=True), list(names)))

    def store(self, flag: str, directory: str) -> None:
        """A store the run adds a part to."""
        self.stores.append(_Path(flag, directory, is_dir=True, store=True))

    def own_files(self, directory: str) -> List[str]:
        """The run's other outputs inside output directory ``directory``,
        relative to it (``--removed DIR/removed.tsv``): files of the run's own."""
        top = real(directory)
        return sorted(os.path.relpath(w.real, top) for w in self.writes if inside(w.real, top))

    # -- checking ----------------------------------------------------------------
    def check(self) -> None:
        """Raises ``GateError`` for the first path the run may not write."""
        inputs = [r for r in self.reads if not r.store]
        stores_read = [r for r in self.reads if r.store]
        seen: List[_Path] = []
        for w in self.writes:
            for other in seen:
                if w.real == other.real or (w.identity is not None and w.identity == other.identity):
                    raise GateError(f"{w.path} is given as two outputs ({other.flag} and {w.flag})")
            seen.append(w)
            for r in inputs:
                if w.real == r.real or (w.identity is not None and w.identity == r.identity):
                    raise GateError(f"{w} is the input {r}; name another file (rsimhash never writes over what it reads)")
                if r.is_dir and inside(w.real, r.real):
                    raise GateError(f"{w} lies inside the input directory {r}; write it elsewhere")
            for s in stores_read + self.stores:
                if w.real == s.real or inside(w.real, s.real):
                    raise GateError(f"{w} lies inside the store {s}; write it elsewhere")
        for t, names in self.trees:
            self._check_tree(t, names, inputs, stores_read)
        for s in self.stores:
            if os.path.exists(s.path) and not os.path.isdir(s.path):
                raise GateError(f"{s}: is a file; a store is a directory")
            for r in inputs:
                if s.real == r.real or inside(s.real, r.real) or inside(r.real, s.real):
                    raise GateError(f"{s} overlaps the input {r}; keep the store apart from the inputs")

    def _check_tree(self, t: _Path, names: List[Tuple[str, str]], inputs: List[_Path], stores: List[_Path]) -> None:
        if os.path.lexists(t.path) and not os.path.isdir(t.path):
            raise GateError(f"{t}: is a file; with several input shards {t.flag} names a directory")
        if os.path.islink(t.path):
            raise GateError(f"{t}: is a symlink (to {os.path.realpath(t.path)}); name the directory itself")
        for r in inputs:
            if t.real == r.real:
                raise GateError(f"{t} is the input directory {r}; write the outputs elsewhere")
            if r.is_dir and inside(t.real, r.real):
                raise GateError(f"{t} lies inside the input directory {r}; write the outputs elsewhere")
            if inside(r.real, t.real):
                raise GateError(f"{t} holds the input {r}; write the outputs elsewhere")
        for s in stores + self.stores:
            if t.real == s.real or inside(t.real, s.real) or inside(s.real, t.real):
                raise GateError(f"{t} overlaps the store {s}; keep the store apart from the outputs")
        link = _first_symlink(t.path)
        if link is not None:
            raise GateError(
                f"{t}: holds the symlink {link} (to {os.path.realpath(link)}); rsimhash writes no output "
                "directory that links elsewhere: remove the link or give another directory"
            )
        for rel, source in names:
            if _escapes(rel) or not inside(real(os.path.join(t.real, os.path.normpath(rel))), t.real):
                raise GateError(
                    f"{t}: the input {source} would be written as {rel}, outside the directory; "
                    "give inputs without '..' (or separate runs)"
                )

    # -- holding -----------------------------------------------------------------
    @contextlib.contextmanager
    def hold(self) -> Iterator["Plan"]:
        """Locks every output directory and store (made when missing) for the block."""
        with contextlib.ExitStack() as stack:
            done = set()
            for p in [t for t, _ in self.trees] + self.stores:
                if p.real in done:
                    continue
                done.add(p.real)
                stack.enter_context(lock(p.path, p.flag))
            yield self


def _first_symlink(top: str) -> Optional[str]:
    """The first symlink under ``top`` (not following any), or None."""
    for folder, dirs, files in os.walk(top):
        for name in sorted(dirs) + sorted(files):
            path = os.path.join(folder, name)
            if os.path.islink(path):
                return path
    return None


def _holder(fd: int) -> str:
    try:
        os.lseek(fd, 0, os.SEEK_SET)
        text = os.read(fd, 64).decode("ascii", "replace").strip()
    except OSError:
        text = ""
    return f"process {text}" if text.isdigit() else "another process"


@contextlib.contextmanager
def lock(directory: str, flag: str = "") -> Iterator[None]:
    """An exclusive advisory lock on ``directory`` (made when missing) for the
    block: ``DIR/.rsimhash.lock`` holds the holder's process id. A directory
    locked by another process is a ``BusyError``."""
    os.makedirs(directory, exist_ok=True)
    path = os.path.join(directory, LOCK)
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | _NOFOLLOW | _CLOEXEC, 0o644)
    except OSError as e:
        raise OSError(e.errno, f"{path}: cannot make the run's lock file ({e.strerror})") from None
    try:
        if not _try_lock(fd):
            name = f"{flag} {directory}" if flag else directory
            raise BusyError(f"{name}: another rsimhash run ({_holder(fd)}) is writing there; wait for it to end, or stop it")
        try:
            os.ftruncate(fd, 0)
            os.lseek(fd, 0, os.SEEK_SET)
            os.write(fd, str(os.getpid()).encode("ascii"))
        except OSError:
            pass  # the lock holds without the note of who holds it
        yield
    finally:
        os.close(fd)  # drops the lock


def _try_lock(fd: int) -> bool:
    try:
        import fcntl
    except ImportError:  # Windows
        try:
            import msvcrt
        except ImportError:
            return True
        try:
            msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)  # type: ignore[attr-defined]
        except OSError:
            return False
        return True
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    except OSError:
        return True  # a file system without locks: run unlocked, as before
    return True
