"""The streaming pipeline of the commands: a reader thread ahead of the
consumer, and the fingerprints of a chunk.

JSON lines are read, parsed and fingerprinted by the core's reader on
threads of its own; the other formats are parsed in Python, which holds the
GIL while ``fingerprints`` and the index release it, so the commands read
the next chunk on a thread while the current one is worked on.
"""

from __future__ import annotations

import queue
import threading
from typing import Any, Iterator, Optional, Tuple, TypeVar

import numpy as np

from .._records import Chunk

T = TypeVar("T")


def fingerprints_of(chunk: Chunk, mode: str, width: Optional[int], threads: Optional[int]) -> np.ndarray:
    """The chunk's fingerprints: read from a hash input, made by the core's
    reader as it parsed the texts (when with this mode and width), else
    computed from the texts."""
    if chunk.hashes is not None and (chunk.shingling is None or chunk.shingling == (mode, width)):
        return chunk.hashes
    from .. import fingerprints

    return fingerprints(chunk.texts, mode=mode, width=width, threads=threads)


def blocks_of(source: Any, mode: str, width: Optional[int], threads: Optional[int]) -> Iterator[Tuple[np.ndarray, Any]]:
    """The input's fingerprints and ids, a block at a time: ``(fingerprints,
    ids)``, the ids a ``Chunk`` (for ``Ids.extend_chunk``) or, from a hash
    TSV opened with ``values_only``, packed by the core as ``(bytes,
    offsets)``: no per-line entries and no object an id. Chunks are read
    on a thread ahead of the caller (``prefetch``)."""
    if getattr(source, "values_only", False) and source.format == "hash":  # a ShardedSource reads chunks
        # The core reads and parses ahead on threads of its own: no thread
        # here (handing each block over through one cost more than it hid).
        return source.values_and_ids()  # type: ignore[no-any-return]
    # Fingerprinted here, while the thread parses the next chunk.
    return ((fingerprints_of(chunk, mode, width, threads), chunk) for chunk in prefetch(source.chunks()))


def expected_records(source: Any) -> int:
    """The records the whole input holds, estimated from those read so far
    and the share of the file they came from (0 when unknown)."""
    total, at = getattr(source, "total", None), source.position()
    return int(source.records * total / at) if total and at else 0


class _Failure:
    def __init__(self, error: BaseException):
        self.error = error


def prefetch(chunks: Iterator[T], depth: int = 2) -> Iterator[T]:
    """Runs ``chunks`` on a thread ``depth`` chunks ahead of the consumer.

    Reading and JSON parsing hold the GIL while fingerprinting and the index
    release it, so the next chunk is parsed while this one is fingerprinted.
    An exception of the reader is raised in the consumer, in order.
    """
    q: "queue.Queue[Any]" = queue.Queue(maxsize=depth)
    stop = threading.Event()
    done = object()

    def put(item: Any) -> bool:
        while not stop.is_set():
            try:
                q.put(item, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def work() -> None:
        try:
            for chunk in chunks:
                if not put(chunk):
                    return
            put(done)
        except BaseException as e:  # handed to the consumer, which re-raises it
            put(_Failure(e))

    thread = threading.Thread(target=work, name="rsimhash-reader", daemon=True)
    thread.start()
    try:
        while True:
            item = q.get()
            if item is done:
                return
            if isinstance(item, _Failure):
                raise item.error
            yield item
    finally:
        stop.set()
        thread.join(timeout=1)  # a thread blocked reading stdin is left behind (a daemon)
