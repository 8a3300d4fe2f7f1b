"""Files rsimhash writes for itself: temporary names, work files and work
directories, as the Rust core writes its own (``src/files.rs``).

* A file is only ever created new (``O_CREAT | O_EXCL | O_NOFOLLOW``): a
  name someone else made, such as a symlink planted in a work directory, is
  never opened, written through or truncated.
* A temporary name carries the writer's process id, so that a later run can
  tell the leftovers of a dead process (removed) from those of a live one
  (left alone). Only names of rsimhash's own patterns are looked at.
* A work directory of rsimhash's own holds a marker file; only directories
  with the marker, named by the pattern and left by a dead process, are ever
  removed whole.
"""

from __future__ import annotations

import errno
import os
import re
import shutil
from typing import IO, Any, Iterator, Optional, Pattern

MARKER = "rsimhash-temporary"
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_BINARY = getattr(os, "O_BINARY", 0)


def create_new(path: str, buffering: int = -1) -> IO[bytes]:
    """``path`` created for writing, as a binary file object; ``FileExistsError``
    if anything (a file, a symlink) is there."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC | _BINARY, 0o666)
    return os.fdopen(fd, "wb", buffering=buffering)


def create_fresh(path: str, buffering: int = -1) -> IO[bytes]:
    """``create_new`` after removing a file of ours that a killed run left
    under that name (a symlink is removed, never followed)."""
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
    return create_new(path, buffering)


def blocks(path: str, size: int = 4 << 20) -> Iterator[bytes]:
    """The bytes of file ``path``, ``size`` at a time."""
    with open(path, "rb") as f:
        while True:
            block = f.read(size)
            if not block:
                return
            yield block


def pid_alive(pid: int) -> bool:
    """Whether process ``pid`` may be running: only one known to be gone is dead."""
    if pid == os.getpid() or pid <= 0:
        return True
    if os.name != "posix":
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True
    return True


def remove_stale(directory: str, pattern: Pattern[str], dirs: bool = False) -> None:
    """Removes the entries of ``directory`` whose whole name matches
    ``pattern`` (its group ``pid`` the writer's process id) when that
    process is gone: files, or with ``dirs`` directories holding ``MARKER``.
    Best effort: another run may be removing the same leftovers."""
    try:
        names = os.listdir(directory)
    except OSError:
        return
    for name in names:
        m = pattern.fullmatch(name)
        if m is None or pid_alive(int(m.group("pid"))):
            continue
        path = os.path.join(directory, name)
        try:
            if dirs:
                if os.path.isdir(path) and not os.path.islink(path) and os.path.isfile(os.path.join(path, MARKER)):
                    shutil.rmtree(path, ignore_errors=True)
            elif not os.path.isdir(path) or os.path.islink(path):
                os.unlink(path)
        except OSError:
            pass


_NAME_BYTES = 200  # a stem this long, plus ".PID.RANDOM.tmp", fits the usual 255-byte limit


def stem(name: str) -> str:
    """``name`` as the stem of a temporary name: itself when short, else its
    first bytes and a digest of the whole (a name of 250 bytes plus a suffix
    would pass the file system's limit of 255)."""
    raw = os.fsencode(name)
    if len(raw) <= _NAME_BYTES:
        return name
    import hashlib  # here: loading OpenSSL is start-up most commands never need

    digest = hashlib.sha256(raw).hexdigest()[:16]
    return raw[: _NAME_BYTES - 20].decode("utf-8", "ignore") + "~" + digest


def temporary_name(path: str) -> str:
    """A hidden name beside ``path`` for a file renamed over it when complete:
    ``.NAME.PID.RANDOM.tmp`` (``NAME`` shortened by ``stem`` where long); the
    leftovers of dead processes are removed."""
    directory, name = os.path.split(os.path.abspath(path))
    name = stem(name)
    remove_stale(directory, re.compile(re.escape(f".{name}.") + r"(?P<pid>\d+)\.[0-9a-f]+\.tmp"))
    return os.path.join(directory, f".{name}.{os.getpid()}.{os.urandom(4).hex()}.tmp")


def write_whole(path: str, data: Any, *, replace: bool = True, sync: bool = False) -> None:
    """``data`` written to ``path`` whole or not at all: into a temporary name
    beside it (created new), with ``sync`` fsynced, then renamed over
    ``path`` (``replace``) or linked where no file is (``FileExistsError``
    where one is; on a file system without hard links, renamed there). The
    temporary file never outlives the call."""
    tmp = temporary_name(path)
    try:
        with create_new(tmp) as f:
            f.write(data)
            if sync:
                f.flush()
                os.fsync(f.fileno())
        if replace:
            os.replace(tmp, path)
            return
        try:
            os.link(tmp, path)
        except FileExistsError:
            raise
        except OSError:  # no hard links here: the caller's lock keeps other writers out
            if os.path.lexists(path):
                raise FileExistsError(errno.EEXIST, "File exists", path) from None
            os.rename(tmp, path)
    finally:
        try:
            os.unlink(tmp)
        except OSError:
            pass


def own_directory(parent: Optional[str], prefix: str) -> str:
    """A new directory ``PREFIXPID-RANDOM`` in ``parent`` (the system's
    temporary directory by default) with the marker that makes it rsimhash's;
    those that dead processes left there are removed first."""
    import tempfile

    parent = parent if parent is not None else tempfile.gettempdir()
    remove_stale(parent, re.compile(re.escape(prefix) + r"(?P<pid>\d+)-[0-9a-z_]+"), dirs=True)
    path = tempfile.mkdtemp(prefix=f"{prefix}{os.getpid()}-", dir=parent)
    create_new(os.path.join(path, MARKER)).close()
    return path


def remove_directory(path: Any) -> None:
    """Removes a directory of ``own_directory``'s, whole."""
    shutil.rmtree(path, ignore_errors=True)
