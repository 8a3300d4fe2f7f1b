"""What the batch jobs share: their checked arguments and resources
(``_Job``), outputs named by the caller, and cluster answers in id order."""

from __future__ import annotations

import os
from contextlib import ExitStack
from typing import Any, Callable, Dict, List, Optional, Tuple, Union

import numpy as np

from .. import _files, _gate
from .. import _rsimhash as _core
from .._memory import memory_limit as _memory_limit
from .._progress import Bars
from ._sources import check_writable, parent_of

Progress = Union[None, bool, Callable[..., Any]]
Memory = Union[None, int, float, str]


class _Job:
    """Arguments shared by the three jobs, checked, and the resources they hold."""

    def __init__(
        self,
        stack: ExitStack,
        *,
        k: int,
        memory_limit: Memory,
        workdir: Any,
        out: Optional[str],
        threads: Optional[int],
        progress: Progress,
        blocks: Optional[int],
        tables: Optional[int],
        spill: Optional[bool],
        desc: str,
    ):
        if isinstance(k, bool) or not isinstance(k, (int, np.integer)):
            raise TypeError(f"k must be an int, got {type(k).__name__}")
        self.stack = stack
        self.limit = _memory_limit(memory_limit)
        self.out = out
        self.workdir = os.fspath(workdir) if workdir is not None else None
        self.temp_parent = parent_of(out)
        bars = Bars(progress, desc)
        stack.callback(bars.close)
        self.kwargs: Dict[str, Any] = dict(
            k=int(k),
            memory_limit=self.limit,
            workdir=self.workdir,
            temp_parent=self.temp_parent,
            threads=threads,
            blocks=blocks,
            tables=tables,
            spill=spill,
            progress=bars,
        )
        self._spill_dir: Optional[str] = None

    def check_ids(self, ids: Optional[np.ndarray]) -> None:
        """Ids given twice are an error (``find_all`` checks its own in the core)."""
        if ids is not None:
            _core.batch_check_ids(ids, memory_limit=self.limit, workdir=self.workdir, temp_parent=self.temp_parent)

    def spill_dir(self) -> str:
        """Where copies of Parquet columns go: a directory of the job's own
        (``rsimhash-spill-PID-...``, removed at the end) in the work
        directory, else beside ``out``, else in the system's temporary one.
        A work directory the job makes for this is removed too, if empty."""
        if self._spill_dir is None:
            parent = self.workdir if self.workdir is not None else self.temp_parent
            if parent is not None and not os.path.isdir(parent):
                os.makedirs(parent)
                self.stack.callback(_remove_if_empty, parent)
            self._spill_dir = _files.own_directory(parent, "rsimhash-spill-")
            self.stack.callback(_files.remove_directory, self._spill_dir)
        return self._spill_dir


def _in_id_order(members: np.ndarray, starts: np.ndarray, ids: Optional[np.ndarray]) -> Tuple[np.ndarray, np.ndarray]:
    """Clusters ``(members, starts)`` of positions, in the order of ``ids``
    when they do not increase with position (``_by_id``)."""
    if ids is not None and len(ids) > 1 and not bool(np.all(ids[1:] > ids[:-1])):
        return _by_id(members, starts, ids)
    return members, starts


def _id_labels(members: np.ndarray, starts: np.ndarray, ids: Optional[np.ndarray]) -> Tuple[np.ndarray, np.ndarray]:
    """``(ids, labels)`` of clusters ``(members, starts)``: each member's id
    (its position without ``ids``) and its cluster's number."""
    sizes = np.diff(starts).astype(np.int64)
    labels = np.repeat(np.arange(len(sizes), dtype=np.uint64), sizes)
    pos = members.astype(np.uint64)
    return (pos if ids is None else ids[pos]), labels


def _by_id(members: np.ndarray, starts: np.ndarray, ids: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
    """Clusters reordered for ids that do not increase with position:
    members by id, clusters by their smallest id."""
    sizes = np.diff(starts).astype(np.int64)
    labels = np.repeat(np.arange(len(sizes)), sizes)
    order = np.lexsort((ids[members], labels))
    members = members[order]
    first = ids[members[starts[:-1].astype(np.int64)]] if len(sizes) else np.empty(0, np.uint64)
    rank = np.argsort(first, kind="stable")
    parts = [members[starts[c] : starts[c + 1]] for c in rank.tolist()]
    members = np.concatenate(parts) if parts else members
    new_starts = np.concatenate([[0], np.cumsum(sizes[rank])]).astype(np.uint64)
    return members, new_starts


def _output(out: Any, allowed: Tuple[str, ...], job: str, source: Any = None) -> Tuple[Optional[str], str]:
    if out is None:
        return None, ""
    path = os.fspath(out)
    # The write gate: out= may not be (or lie inside) a file or directory the job reads.
    plan = _gate.Plan()
    for p in _source_paths(source):
        plan.read("source", p)
    plan.write("out=", path)
    plan.check()
    parent, ext = check_writable(path)
    if ext not in allowed:
        raise ValueError(f"out={path!r}: {job} writes {' or '.join(allowed)} files; name the file with one of those extensions")
    _remove_stale_temporaries(parent, os.path.basename(path))
    return path, ext


def _source_paths(source: Any) -> List[str]:
    """The paths a source names (none for an array)."""
    if isinstance(source, (str, os.PathLike)):
        return [os.fspath(source)]
    if isinstance(source, (list, tuple)):
        return [os.fspath(p) for p in source if isinstance(p, (str, os.PathLike))]
    return []


def _remove_stale_temporaries(directory: str, name: str) -> None:
    """Removes the hidden temporary files of ``name`` (``.NAME[.npy].PID[.N].tmp``
    and the same under a second dot) that a killed job left: those whose
    process is gone."""
    for entry in os.listdir(directory):
        if not entry.endswith(".tmp") or name not in entry:
            continue
        rest = entry.lstrip(".")
        if not rest.startswith(name):
            continue
        numbers = [p for p in rest[len(name) :].split(".") if p.isdigit()]
        if not numbers or int(numbers[0]) == os.getpid() or _alive(int(numbers[0])):
            continue
        try:
            os.remove(os.path.join(directory, entry))
        except OSError:
            pass


def _alive(pid: int) -> bool:
    return _files.pid_alive(pid)


def _remove_if_empty(path: str) -> None:
    try:
        os.rmdir(path)
    except OSError:
        pass
