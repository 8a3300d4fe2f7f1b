"""Output files that appear whole or not at all.

An ``Output`` writes to a temporary file beside its target (same directory,
so the final rename stays on one file system) and renames it into place only
when the run succeeds: a run stopped by a bad line, an error or Ctrl-C leaves
an existing file untouched and no partial file behind. The temporary name,
``.NAME.PID.RANDOM.tmp``, is created new (never through a symlink); a killed
run's are removed by the next run writing the same output. ``-`` is stdout,
written as the run goes, and so is a target that is not a regular file (a
device such as ``/dev/null``, a FIFO, a shell's ``>(...)``): renaming over
it would replace the device with a file. A name ending in ``.gz`` (or ``.zst``, with
``zstandard`` installed) is compressed.
"""

from __future__ import annotations

import gzip
import os
import sys
from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from typing import Any, Deque, Iterator, List, Optional

from .._files import create_new, temporary_name
from .._gate import is_special
from .._optional import module
from .errors import InputError, UsageError
from .stdio import stdout_binary

_WRITEBACK_BYTES = 32 << 20
_WRITEBACK_WINDOW = 256 << 20


def _start_writeback(fd: int, offset: int, length: int) -> None:
    # Linux starts writing dirty pages back when told they are not needed.
    os.posix_fadvise(fd, offset, length, os.POSIX_FADV_DONTNEED)


_fadvise = _start_writeback if sys.platform.startswith("linux") and hasattr(os, "posix_fadvise") else None


class Behind:
    """Calls run in order on one thread of their own, at most ``depth`` behind
    the caller (a call past that waits for the oldest, and raises its failure)."""

    def __init__(self, name: str, depth: int):
        self.name, self.depth = name, depth
        self._thread: Optional[ThreadPoolExecutor] = None
        self._pending: Deque[Future] = deque()

    def submit(self, fn: Any, *args: Any) -> None:
        if self._thread is None:
            self._thread = ThreadPoolExecutor(1, thread_name_prefix=self.name)
        self._pending.append(self._thread.submit(fn, *args))
        while len(self._pending) > self.depth:
            self._pending.popleft().result()

    def wait(self) -> None:
        """Waits for every call; raises the first failure (the rest are dropped)."""
        while self._pending:
            future = self._pending.popleft()
            try:
                future.result()
            except BaseException:
                self._pending.clear()
                raise

    def close(self, errors: bool = True) -> None:
        """Waits for every call (raising the first failure unless ``errors`` is
        false) and stops the thread."""
        try:
            if errors:
                self.wait()
            else:
                for future in self._pending:
                    try:
                        future.result()
                    except BaseException:
                        pass
                self._pending.clear()
        finally:
            if self._thread is not None:
                self._thread.shutdown(wait=True)
                self._thread = None


class Output:
    """One output: a path written atomically, or ``-`` for stdout."""

    def __init__(self, path: str):
        self.path = path
        self._tmp: Optional[str] = None
        self._raw: Any = None
        self._written = 0  # bytes written by write_records
        self._flushed = 0  # of which the disk was asked to start writing
        self._writer = Behind("rsimhash-write", 3)  # write_records' thread
        self._in_place = False  # a device or a pipe, written as the run goes
        if path == "-":
            self._file: Any = stdout_binary()
            return
        if os.path.isdir(path):
            raise InputError(path, None, "cannot write: it is a directory")
        name = os.path.basename(path)
        if is_special(path):
            try:
                self._raw = open(path, "wb", buffering=1 << 20)  # closed by commit or discard
            except OSError as e:
                raise InputError(path, None, f"cannot write: {e.strerror or e}") from None
            self._file = self._raw
            self._in_place = True
            return
        # .NAME.PID.RANDOM.tmp, made new (never through a symlink); those
        # that killed runs left beside the output are removed.
        tmp = temporary_name(path)
        try:
            self._raw = create_new(tmp, buffering=1 << 20)
        except OSError as e:
            raise InputError(path, None, f"cannot write: {e.strerror or e}") from None
        self._tmp = tmp
        self._file = self._raw
        if name.endswith(".gz"):
            self._file = gzip.GzipFile(filename=name[:-3], fileobj=self._raw, mode="wb", compresslevel=6, mtime=0)
        elif name.endswith(".zst"):
            try:
                zstandard = module("zstandard")
            except ImportError:
                self.discard()
                raise UsageError(f"writing {path} needs the zstandard package (pip install zstandard)") from None
            self._file = zstandard.ZstdCompressor().stream_writer(self._raw, closefd=False)

    def write(self, data: bytes) -> None:
        with self._named():
            self._writer.wait()
            self._file.write(data)

    def write_records(self, chunk: Any, keep: Any) -> None:
        """The lines of a chunk's records where ``keep`` is set, as read.

        Lines of the core's reader go from its block straight to an
        uncompressed output's file descriptor (one ``writev`` of runs of
        adjacent lines, no copy), on a thread of the output's own so the
        next chunk is worked on meanwhile (at most a few chunks behind); the
        disk is asked to start writing each 32 MiB behind the run, so the
        final fsync has little left to wait for."""
        plain = self._file is self._raw or self.path == "-"
        if chunk.core is None or not plain or os.name != "posix":
            self.write(chunk.write_lines(keep))
            return
        with self._named():
            self._file.flush()  # anything written through the file object first
            self._writer.submit(self._write_core, chunk.core, chunk.entries[keep])

    @contextmanager
    def _named(self) -> Iterator[None]:
        """A failed write names this output: the core's errors and the file's
        name none (a full disk said only "No space left on device"). A closed
        pipe stays what it is: the command ends quietly on one."""
        try:
            yield
        except BrokenPipeError:
            raise
        except OSError as e:
            raise InputError(self.path, None, f"cannot write: {e.strerror or e}") from None

    def _write_core(self, core: Any, entries: Any) -> None:
        fd = self._file.fileno()
        self._written += core.write_to(fd, entries)
        if self._tmp is not None and self._written - self._flushed >= _WRITEBACK_BYTES and _fadvise is not None:
            # The window reaches back over earlier requests: pages written
            # since are dropped from the cache, which keeps the page cache
            # (and a memory-limited container's dirty-page throttling) small.
            # The core asks on a thread of its pool while this one writes on
            # (on this thread, the asking was the run's busiest thread).
            start = max(0, self._written - _WRITEBACK_WINDOW)
            try:
                core.start_writeback(fd, start, self._written - start)
            except OSError:
                pass
            self._flushed = self._written

    def commit(self, sync: bool = True) -> None:
        """Flushes the output and, for a file, moves it into place (fsync, rename,
        fsync of the directory). ``sync=False`` leaves the fsyncs to the caller
        (``sync_files``): outputs of many shards are synced together at the end."""
        try:
            self._writer.close()
        except OSError as e:
            self.discard()
            raise InputError(self.path, None, f"cannot write: {e.strerror or e}") from None
        if self._tmp is None:
            try:
                self._file.flush()
                if self._in_place:
                    self._raw.close()
            except OSError as e:
                raise InputError(self.path, None, f"cannot write: {e.strerror or e}") from None
            return
        try:
            if self._file is not self._raw:
                self._file.close()
            self._raw.flush()
            if sync:
                os.fsync(self._raw.fileno())
            elif _fadvise is not None:
                # The disk starts writing the file now, so the caller's fsync at
                # the end of the run has little left to wait for.
                try:
                    _fadvise(self._raw.fileno(), 0, 0)
                except OSError:
                    pass
            self._raw.close()
            os.replace(self._tmp, self.path)
        except OSError as e:
            self.discard()
            raise InputError(self.path, None, f"cannot write: {e.strerror or e}") from None
        self._tmp = None
        if sync:
            _fsync_dir(os.path.dirname(os.path.abspath(self.path)))

    def discard(self) -> None:
        """Drops a file output's temporary file; the target is left as it was."""
        self._writer.close(errors=False)
        if self._in_place:
            try:
                self._raw.close()
            except OSError:
                pass
        if self._tmp is None:
            return
        for f in (self._file, self._raw):
            try:
                f.close()
            except Exception:  # a compressor on a closed file, a full disk: nothing to save
                pass
        try:
            os.unlink(self._tmp)
        except OSError:
            pass
        self._tmp = None


def sync_files(paths: List[str]) -> None:
    """fsync of each file, then of each of their directories."""
    for path in paths:
        try:
            fd = os.open(path, os.O_RDONLY)
        except OSError as e:
            raise InputError(path, None, f"cannot write: {e.strerror or e}") from None
        try:
            os.fsync(fd)
        except OSError as e:
            raise InputError(path, None, f"cannot write: {e.strerror or e}") from None
        finally:
            os.close(fd)
    for directory in sorted({os.path.dirname(os.path.abspath(p)) for p in paths}):
        _fsync_dir(directory)


def _fsync_dir(directory: str) -> None:
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


class Outputs:
    """The outputs of one run: all committed when the block ends normally,
    all discarded when it raises (or is interrupted)."""

    def __init__(self) -> None:
        self._items: List[Output] = []

    def open(self, path: str) -> Output:
        if path == "-" and any(o.path == "-" for o in self._items):
            raise UsageError("only one output can be stdout (-)")
        # Two files under one name would overwrite each other; a device such
        # as /dev/null takes both.
        same = path != "-" and any(os.path.abspath(o.path) == os.path.abspath(path) for o in self._items)
        if same and not is_special(path):
            raise UsageError(f"{path} is given as two outputs")
        out = Output(path)
        self._items.append(out)
        return out

    def __enter__(self) -> "Outputs":
        return self

    def __exit__(self, kind: Any, value: Any, tb: Any) -> None:
        if kind is not None:
            for out in self._items:
                out.discard()
            return
        for i, out in enumerate(self._items):
            try:
                out.commit()
            except BaseException:
                for rest in self._items[i + 1 :]:
                    rest.discard()
                raise
