"""What a batch job writes besides ``.npy`` (which the core writes itself):
Parquet and TSV files, each through a temporary name renamed into place
once complete. (Its progress bars are ``rsimhash._progress.Bars``.)
"""

from __future__ import annotations

import errno
import os
import stat
from typing import Any, Iterator, List, Optional, Tuple

import numpy as np

from .. import _arrow, _files, _ids
from .._optional import module

ROWS = 1 << 20  # rows written at a time


class Atomic:
    """A file written under a temporary name beside ``path`` (``.NAME.PID.tmp``,
    created new, never through a symlink), renamed over it by ``commit()``;
    removed if the job fails first."""

    def __init__(self, path: str):
        self.path = path
        try:
            mode = os.stat(path).st_mode
        except OSError:
            mode = None
        if mode is not None and not stat.S_ISREG(mode):
            # Renamed over, a device or a pipe (/dev/null, a FIFO) would become a plain file.
            what = "a directory" if stat.S_ISDIR(mode) else "a device, a pipe or a socket, which the finished file would replace"
            raise OSError(errno.EINVAL, f"cannot write there: it is {what}; name a file", path)
        directory, name = os.path.split(os.path.abspath(path))
        self.tmp = os.path.join(directory, f".{_files.stem(name)}.{os.getpid()}.tmp")

    def open(self) -> Any:
        """The temporary file, made new (a leftover of ours under its name is replaced)."""
        return _files.create_fresh(self.tmp, buffering=1 << 20)

    def commit(self) -> None:
        with open(self.tmp, "rb") as f:
            os.fsync(f.fileno())
        os.replace(self.tmp, self.path)

    def discard(self) -> None:
        try:
            os.remove(self.tmp)
        except FileNotFoundError:
            pass


def _pyarrow() -> Tuple[Any, Any]:
    try:
        return module("pyarrow"), module("pyarrow.parquet")
    except ImportError:
        raise ImportError("writing Parquet needs pyarrow: pip install 'rsimhash[parquet]'") from None


def pairs_npy_to_parquet(npy: str, path: str, names: Optional[np.ndarray] = None) -> None:
    """The ``(P, 2)`` pairs of ``npy`` as a Parquet file of columns ``id_a``,
    ``id_b``: ``uint64``, or strings ``names[id]`` when ``names`` are given."""
    pa, pq = _pyarrow()
    pairs = np.load(npy, mmap_mode="r")
    kind = pa.uint64() if names is None else pa.string()
    schema = pa.schema([("id_a", kind), ("id_b", kind)])
    out = Atomic(path)

    def column(ids: np.ndarray) -> Any:
        return ids.copy() if names is None else _arrow.strings(_utf8_ids(names[ids.astype(np.intp)].tolist(), path))

    try:
        with out.open() as f, pq.ParquetWriter(f, schema) as writer:
            for lo in range(0, max(len(pairs), 1), ROWS):
                block = np.asarray(pairs[lo : lo + ROWS])
                writer.write_table(pa.table([column(block[:, 0]), column(block[:, 1])], schema=schema))
        out.commit()
    except OSError as e:
        raise _naming(e, path) from None
    finally:
        out.discard()


def cluster_rows(members: np.ndarray, starts: np.ndarray, ids: Optional[np.ndarray]) -> Iterator[Tuple[np.ndarray, np.ndarray]]:
    """``(ids, labels)`` blocks of the clusters' rows, in order."""
    sizes = np.diff(starts).astype(np.int64)
    labels = np.repeat(np.arange(len(sizes), dtype=np.uint64), sizes)
    for lo in range(0, len(members), ROWS):
        pos = members[lo : lo + ROWS].astype(np.uint64)
        yield (pos if ids is None else ids[pos]), labels[lo : lo + ROWS]


def write_clusters(path: str, ext: str, rows: Iterator[Tuple[np.ndarray, np.ndarray]]) -> int:
    """Rows ``id``, ``cluster`` as TSV (with a header line) or Parquet; returns the row count."""
    out = Atomic(path)
    n = 0
    try:
        if ext == ".parquet":
            pa, pq = _pyarrow()
            schema: Any = None
            writer: Any = None
            with out.open() as f:
                try:
                    for ids, labels in rows:
                        column = _arrow.strings(_utf8_ids(ids.tolist(), path)) if ids.dtype == object else ids
                        if schema is None:  # string ids as strings
                            kind = pa.string() if ids.dtype == object else pa.uint64()
                            schema = pa.schema([("id", kind), ("cluster", pa.uint64())])
                            writer = pq.ParquetWriter(f, schema)
                        writer.write_table(pa.table([column, labels], schema=schema))
                        n += len(ids)
                    if writer is None:
                        writer = pq.ParquetWriter(f, pa.schema([("id", pa.uint64()), ("cluster", pa.uint64())]))
                finally:
                    if writer is not None:  # closed while its file is open, also when the job fails
                        writer.close()
        else:
            with out.open() as f:
                f.write(b"id\tcluster\n")
                for ids, labels in rows:
                    bad = next((x for x in ids if "\t" in x or "\n" in x or "\r" in x), None) if ids.dtype == object else None
                    if bad is not None:
                        why = "holds a tab or a line break, which a TSV row cannot hold; write .parquet"
                        raise ValueError(f"{path}: the id {bad!r} {why}")
                    text = "".join(f"{a}\t{b}\n" for a, b in zip(_utf8_ids(ids.tolist(), path), labels.tolist()))
                    f.write(text.encode("utf-8"))
                    n += len(ids)
        out.commit()
    except OSError as e:
        raise _naming(e, path) from None
    finally:
        out.discard()
    return n


def _utf8_ids(ids: List[Any], path: str) -> List[Any]:
    """``ids``, after checking that UTF-8 can hold each string among them (a
    lone surrogate, as ``"\\ud800"`` in JSON makes, it cannot): a
    ``ValueError`` naming the id and the output otherwise."""
    for x in ids:
        if isinstance(x, str):
            try:
                x.encode("utf-8")
            except UnicodeEncodeError as e:
                raise ValueError(f"{path}: {_ids.not_utf8(x, e.start)}") from None
    return ids


def _naming(e: OSError, path: str) -> OSError:
    """``e`` (a full disk, say) as the same ``OSError`` subclass naming the output."""
    if path in str(e):
        return e
    message = f"{path}: cannot write ({e.strerror or e})"
    return type(e)(e.errno, message) if e.errno is not None else type(e)(message)
