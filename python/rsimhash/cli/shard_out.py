"""``rsimhash dedup --output DIR`` of sharded inputs: one output per input
shard, under the shard's relative name, resumable.

Invariants:

* Each output shard holds the kept records of its input shard, as read and
  in order, in the same format and (by its name) compression; an input
  shard with no kept record gives an empty file (a hash TSV its header, a
  Parquet file its schema and no rows).
* Each is written under a temporary name and renamed into place when
  complete (``outputs.Output``; the fsyncs of all shards wait for the end
  of the run, ``sync``, so that writing one shard never waits for the disk
  to finish the one before: a shard lost to a crash of the machine fails
  its CRC and is written again), then recorded in the manifest
  ``DIR/.rsimhash-shards.json`` with its size and CRC-32: a shard present
  under its final name and matching the manifest is a shard finished.
* The manifest names the run (a digest of the inputs' names, sizes and
  modification times, the stores against, and every setting that changes
  which records are kept): a rerun of the same run skips the shards already
  finished and resumes at the first unfinished one, giving the same bytes
  as a run that was never stopped (whether a record is kept depends only on
  the records before it, so a finished shard never changes).
* ``DIR`` holding a file this command did not write, or a file that is not
  one of this run's shards (an earlier run of other inputs), is refused
  before any work unless ``--overwrite``; even then the command deletes
  nothing and changes no file but its own outputs and manifest.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import signal
import zlib
from typing import Any, Callable, Dict, List, Optional, Set

import numpy as np

from .._files import create_fresh
from .._records import Chunk
from .errors import InputError, UsageError
from .outputs import Output, sync_files
from .shards import Shards

MANIFEST = ".rsimhash-shards.json"
FORMAT = "rsimhash-shards"
VERSION = 1
# Settings that do not change which records are kept or how they are written.
_NOT_RUN = {"quiet", "threads", "memory_limit", "workdir", "chunk_mb", "argv", "run", "report", "removed"}
_NOT_RUN |= {"save_fingerprints", "overwrite", "output", "input", "against_stores", "blocks", "command"}
# Tests only: the process kills itself (SIGKILL) once it has finished this many shards.
KILL_HOOK = "RSIMHASH_TEST_KILL_AFTER_SHARDS"


def run_digest(args: argparse.Namespace, shards: Shards) -> str:
    """What makes two runs' outputs the same: inputs, stores and settings."""
    settings = {k: v for k, v in sorted(vars(args).items()) if k not in _NOT_RUN and not callable(v)}
    inputs = []
    for s in shards:
        st = os.stat(s.path)
        inputs.append([s.rel, os.path.realpath(s.path), st.st_size, st.st_mtime_ns])
    stores = []
    for d in getattr(args, "against", None) or []:
        for name in sorted(os.listdir(d)) if os.path.isdir(d) else [d]:
            path = os.path.join(d, name) if os.path.isdir(d) else d
            stores.append([os.path.realpath(path), os.path.getsize(path)])
    text = json.dumps({"settings": settings, "inputs": inputs, "stores": stores}, sort_keys=True, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _crc(path: str) -> int:
    crc = 0
    with open(path, "rb") as f:
        while True:
            block = f.read(4 << 20)
            if not block:
                return crc
            crc = zlib.crc32(block, crc)


def _is_ours(name: str) -> bool:
    """Names rsimhash writes for itself in an output directory: the manifest and temporary files."""
    return name == MANIFEST or name.startswith(MANIFEST + ".") or (name.startswith(".") and name.endswith(".tmp"))


def _files(directory: str) -> List[str]:
    """Every file under ``directory``, relative, but rsimhash's own."""
    found = []
    for folder, dirs, names in os.walk(directory):
        dirs[:] = sorted(d for d in dirs if not d.startswith(".rsimhash-"))  # work directories of rsimhash's own
        for name in sorted(names):
            if _is_ours(name):
                continue
            found.append(os.path.relpath(os.path.join(folder, name), directory))
    return found


class ShardOutputs:
    """The output directory of a sharded ``dedup``: checks, resume, manifest."""

    def __init__(self, directory: str, shards: Shards, args: argparse.Namespace):
        self.directory = directory
        self.shards = shards
        self.run = run_digest(args, shards)
        self.finished_here = 0
        self.unsynced: List[str] = []
        if os.path.exists(directory) and not os.path.isdir(directory):
            raise UsageError(f"--output {directory}: is a file; with several input shards --output names a directory")
        real = os.path.realpath(directory)
        for d in shards.directories:
            if real == d or real.startswith(d + os.sep):
                raise UsageError(f"--output {directory}: is inside the input directory {d}; write the outputs elsewhere")
        for s in shards:
            if os.path.realpath(os.path.join(directory, s.rel)) == os.path.realpath(s.path):
                raise UsageError(f"--output {directory}: would write over the input {s.path}")
        old = self._read_manifest()
        written: Set[str] = set(old.get("written", []))
        rels = {s.rel for s in shards}
        present = _files(directory) if os.path.isdir(directory) else []
        foreign = [f for f in present if f not in rels or f not in written]
        if foreign and not args.overwrite:
            shown = ", ".join(foreign[:3]) + (f" and {len(foreign) - 3:,} more" if len(foreign) > 3 else "")
            raise UsageError(
                f"--output {directory}: holds files this run would not write or did not write ({shown}); "
                "give an empty or new directory, or --overwrite to write this run's shards beside them"
            )
        finished: Dict[str, Any] = old.get("finished", {}) if old.get("run") == self.run else {}
        self.done: Set[int] = set()
        for i, s in enumerate(shards):
            entry = finished.get(s.rel)
            path = os.path.join(directory, s.rel)
            if isinstance(entry, dict) and os.path.isfile(path) and not os.path.islink(path):
                if os.path.getsize(path) == entry.get("size") and _crc(path) == entry.get("crc32"):
                    self.done.add(i)
        self.finished = {s.rel: finished[s.rel] for i, s in enumerate(shards) if i in self.done}
        # Every shard of this run is recorded as rsimhash's before any is written: a run
        # killed between a rename and the manifest's next update leaves no file unaccounted.
        self.written = sorted(written | rels)
        os.makedirs(directory, exist_ok=True)
        self._save()

    def _read_manifest(self) -> Dict[str, Any]:
        path = os.path.join(self.directory, MANIFEST)
        try:
            with open(path, encoding="utf-8") as f:
                data = json.load(f)
        except FileNotFoundError:
            return {}
        except (OSError, ValueError) as e:
            raise InputError(path, None, f"cannot be read as rsimhash's record of the shards written ({e}); remove it") from None
        if not isinstance(data, dict) or data.get("format") != FORMAT or data.get("version") != VERSION:
            raise InputError(path, None, "is not rsimhash's record of the shards written (of this version); remove it")
        return data

    def _save(self) -> None:
        path = os.path.join(self.directory, MANIFEST)
        tmp = f"{path}.{os.getpid()}.tmp"
        data = {"format": FORMAT, "version": VERSION, "run": self.run, "written": self.written, "finished": self.finished}
        with create_fresh(tmp) as f:
            f.write(json.dumps(data, indent=1, sort_keys=True).encode("utf-8"))
        os.replace(tmp, path)

    def sync(self) -> None:
        """The shards finished by this run, and the manifest, on disk."""
        sync_files(self.unsynced + [os.path.join(self.directory, MANIFEST)])
        self.unsynced = []

    def is_done(self, i: int) -> bool:
        return i in self.done

    def open(self, i: int) -> Output:
        path = os.path.join(self.directory, self.shards[i].rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        return Output(path)

    def finish(self, i: int, out: Output) -> None:
        """Moves shard ``i``'s output into place and records it."""
        out.commit(sync=False)
        path = out.path
        self.unsynced.append(path)
        self.finished[self.shards[i].rel] = {"size": os.path.getsize(path), "crc32": _crc(path)}
        self._save()
        self.finished_here += 1
        hook = os.environ.get(KILL_HOOK)
        if hook is not None and self.finished_here >= int(hook):
            os.kill(os.getpid(), signal.SIGKILL)


class ShardedKeptWriter:
    """``KeptWriter`` of a sharded input read in order: each chunk's kept
    records go to its shard's output; a shard is finished (renamed into
    place) when the chunks move past it. Shards already finished by an
    earlier run of the same run are read past, not written."""

    def __init__(self, outputs: ShardOutputs, sources: Callable[[], Any]):
        from .dedup_writer import KeptWriter

        self._kept_writer = KeptWriter
        self.outputs = outputs
        self.sources = sources  # the ShardedSource being read (its shards' Sources)
        self.at = -1
        self.out: Optional[Output] = None
        self.writer: Any = None

    def _advance(self, to: int) -> None:
        while self.at < to:
            self._finish()
            self.at += 1
            if not self.outputs.is_done(self.at):
                self.out = self.outputs.open(self.at)
                self.writer = self._kept_writer(self.out, self.sources().sources[self.at])

    def _finish(self) -> None:
        if self.writer is not None and self.out is not None:
            self.writer.close()
            self.outputs.finish(self.at, self.out)
        self.writer = self.out = None

    def write(self, chunk: Chunk, is_new: np.ndarray) -> None:
        self._advance(chunk.shard)
        if self.writer is not None:
            self.writer.write(chunk, is_new)

    def close(self) -> None:
        self._advance(len(self.outputs.shards) - 1)
        self._finish()
        self.outputs.sync()

    def discard(self) -> None:
        if self.out is not None:
            self.out.discard()
        self.writer = self.out = None
