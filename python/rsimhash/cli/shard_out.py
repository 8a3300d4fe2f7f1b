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
  nothing and changes no file but its own outputs and manifest. The run's
  other outputs given inside ``DIR`` (``--removed DIR/removed.tsv``) are
  its own files. Whether ``DIR`` may be written at all (it holds no input,
  lies in none, links nowhere) is the write gate's question
  (``rsimhash._gate``), asked before the run starts, which also locks it.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import zlib
from typing import Any, Dict, List, Sequence, Set

from .. import _gate
from .._files import blocks, write_whole
from .errors import InputError, UsageError
from .outputs import Output, sync_files
from .shards import Shards

MANIFEST = ".rsimhash-shards.json"
FORMAT = "rsimhash-shards"
VERSION = 1
# Settings that do not change which records are kept or how they are written.
_NOT_RUN = {"quiet", "threads", "memory_limit", "workdir", "chunk_mb", "argv", "run", "report", "removed"}
_NOT_RUN |= {"save_fingerprints", "overwrite", "output", "input", "against_stores", "blocks", "command"}
_NOT_RUN |= {"against", "plan", "inputs_resolved", "notes", "input_digest", "own_part"}
# Tests only: the process kills itself (SIGKILL) once it has finished this many shards.
KILL_HOOK = "RSIMHASH_TEST_KILL_AFTER_SHARDS"


def input_digest(args: argparse.Namespace, shards: Sequence[Any]) -> str:
    """What makes two runs' kept records the same, stores aside: the inputs
    (names, real paths, sizes, modification times) and the settings. A store
    part records the digest of the input that made it."""
    settings = {k: v for k, v in sorted(vars(args).items()) if k not in _NOT_RUN and not callable(v)}
    inputs = []
    for s in shards:
        st = os.stat(s.path)
        inputs.append([s.rel, os.path.realpath(s.path), st.st_size, st.st_mtime_ns])
    return _sha256(json.dumps({"settings": settings, "inputs": inputs}, sort_keys=True, default=str))


def run_digest(args: argparse.Namespace, shards: Shards) -> str:
    """What makes two runs' outputs the same: inputs, settings and the store
    parts checked against (``args.against_stores``, as the run reads them)."""
    stores = []
    against = getattr(args, "against_stores", None)
    for path in against.paths if against is not None else []:
        stores.append([os.path.realpath(path), os.path.getsize(path)])
    return _sha256(json.dumps({"inputs": input_digest(args, shards), "stores": stores}, sort_keys=True))


def _sha256(text: str) -> str:
    import hashlib  # here: loading OpenSSL is start-up the runs of one input never need

    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def _crc(path: str) -> int:
    crc = 0
    for block in blocks(path):
        crc = zlib.crc32(block, crc)
    return crc


def _is_ours(name: str) -> bool:
    """Names rsimhash writes for itself in an output directory: the manifest and temporary files."""
    return name in (MANIFEST, _gate.LOCK) or name.startswith(MANIFEST + ".") or (name.startswith(".") and name.endswith(".tmp"))


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
    """The output directory of a sharded ``dedup``: resume and manifest.

    The write gate (``rsimhash._gate``, declared in ``paths.py``) has checked
    the directory against the inputs and locked it for the run."""

    def __init__(self, directory: str, shards: Shards, args: argparse.Namespace):
        self.directory = directory
        self.shards = shards
        self.run = run_digest(args, shards)
        self.finished_here = 0
        self.unsynced: List[str] = []
        old = self._read_manifest()
        written: Set[str] = set(old.get("written", []))
        rels = {s.rel for s in shards}
        plan = getattr(args, "plan", None)
        own = set(plan.own_files(directory)) if plan is not None else set()  # --removed DIR/removed.tsv
        present = _files(directory) if os.path.isdir(directory) else []
        foreign = [f for f in present if f not in own and (f not in rels or f not in written)]
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
        if self.done:
            notes = getattr(args, "notes", None)
            if notes is not None:
                notes.append(f"resumed: {len(self.done):,} of {len(shards):,} shards were already done")
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
        except (OSError, ValueError, RecursionError) as e:
            why = "nested too deeply" if isinstance(e, RecursionError) else str(e)
            raise InputError(
                path, None, f"cannot be read as rsimhash's record of the shards written ({why}); remove it"
            ) from None
        if not isinstance(data, dict) or data.get("format") != FORMAT or data.get("version") != VERSION:
            raise InputError(path, None, "is not rsimhash's record of the shards written (of this version); remove it")
        written, finished = data.get("written", []), data.get("finished", {})
        if not (isinstance(written, list) and all(isinstance(w, str) for w in written)) or not (
            isinstance(finished, dict) and all(isinstance(v, dict) for v in finished.values())
        ):
            raise InputError(
                path, None, "is damaged (its 'written' or 'finished' entries are not what rsimhash writes); remove it"
            )
        return data

    def _save(self) -> None:
        path = os.path.join(self.directory, MANIFEST)
        data = {"format": FORMAT, "version": VERSION, "run": self.run, "written": self.written, "finished": self.finished}
        try:  # synced with the shards at the end of the run (``sync``)
            write_whole(path, json.dumps(data, indent=1, sort_keys=True).encode("utf-8", "surrogatepass"))
        except OSError as e:
            raise InputError(path, None, f"cannot write: {e.strerror or e}") from None

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
