"""Fingerprint stores: what ``rsimhash dedup --save-fingerprints DIR`` keeps
of a run for later runs, and what ``--against DIR`` checks a new run against.

A store is a directory::

    DIR/
      store.json              {"format": "rsimhash-fingerprints", "version": 1,
                               "spec": 1, "distance": K, "mode": ..., "width": ...}
      part-00000.npy          the kept records' fingerprints of one run (uint64)
      part-00000.ids          their ids, one a line (UTF-8), in the same order
      part-00000.shards       of a sharded input: each id's shard (relative name), one a line
      part-00001.npy ...      the next run's

``--against`` also takes an index file made by ``rsimhash index build``
(``IDX`` and its ``IDX.ids``, which holds each item's fingerprint and id):
refused before any work when its fingerprints were made with another
shingle mode or width; its items are copied into the run's work directory
as a part (``Stores.materialize``) before they are streamed.

Each run adds one part, written under a temporary name and renamed into
place when complete, so a part present is a part finished. A run against a
store refuses, before any work, a directory that is not a store, or a store
of another distance, fingerprint spec, shingle mode or width: its
fingerprints would not mean the same thing.
"""

from __future__ import annotations

import argparse
import json
import os
from typing import Any, Dict, List, Optional, Sequence

import numpy as np

from .errors import InputError, UsageError

MANIFEST = "store.json"
FORMAT = "rsimhash-fingerprints"
VERSION = 1
SPEC = 1


def settings(args: argparse.Namespace) -> Dict[str, Any]:
    """What a store's fingerprints depend on."""
    return {"format": FORMAT, "version": VERSION, "spec": SPEC, "distance": args.distance, "mode": args.mode, "width": args.width}


def _read_manifest(directory: str) -> Dict[str, Any]:
    path = os.path.join(directory, MANIFEST)
    try:
        with open(path, encoding="utf-8") as f:
            manifest = json.load(f)
    except FileNotFoundError:
        raise InputError(
            directory, None, f"is not a fingerprint store (no {MANIFEST}; make one with --save-fingerprints)"
        ) from None
    except (OSError, ValueError) as e:
        raise InputError(path, None, f"cannot be read as a fingerprint store's manifest ({e})") from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise InputError(path, None, f"is not a fingerprint store's manifest (format is not {FORMAT!r})")
    if manifest.get("version") != VERSION:
        raise InputError(path, None, f"is a store of version {manifest.get('version')!r}; this rsimhash reads version {VERSION}")
    return manifest


def check(directory: str, args: argparse.Namespace, flag: str) -> None:
    """Refuses a store whose fingerprints do not match this run's."""
    if not os.path.isdir(directory):
        raise InputError(directory, None, f"{flag}: no such directory")
    manifest = _read_manifest(directory)
    want = settings(args)
    for key in ("spec", "distance", "mode", "width"):
        if manifest.get(key) != want[key]:
            raise UsageError(
                f"{flag} {directory}: the store was made with {key} {manifest.get(key)!r}, this run uses {want[key]!r}; "
                "its fingerprints cannot be compared (use the same settings, or another store)"
            )


def parts(directory: str) -> List[str]:
    """The store's finished parts (``.npy`` paths), in order."""
    names = sorted(n for n in os.listdir(directory) if n.startswith("part-") and n.endswith(".npy"))
    return [os.path.join(directory, n) for n in names]


def open_stores(directories: Sequence[str], args: argparse.Namespace) -> "Stores":
    paths: List[str] = []
    indexes: List[str] = []
    for d in directories:
        if os.path.isfile(d):
            _check_index(d, args)
            indexes.append(d)
            paths.append(d)  # replaced by its part in the work directory (materialize)
            continue
        check(d, args, "--against")
        paths.extend(parts(d))
    return Stores(paths, indexes)


def _check_index(path: str, args: argparse.Namespace) -> None:
    """Refuses an index file whose fingerprints were made otherwise than this run's."""
    from .index import IdsFile

    ids = IdsFile(path)
    try:
        recorded = (ids.settings.get("mode"), ids.settings.get("width"))
    finally:
        ids.close()
    if recorded[0] is None:  # built from a hash TSV: its fingerprints' settings are not known
        if getattr(args, "format", None) not in ("hash", "lines"):
            raise UsageError(
                f"--against {path}: the index was built from fingerprints (a hash TSV), not texts; "
                "its fingerprints can only be compared with fingerprints read the same way (--format hash)"
            )
        return
    want = (args.mode, args.width if args.width is not None else (3 if args.mode == "words" else 4))
    got = (recorded[0], recorded[1] if recorded[1] is not None else (3 if recorded[0] == "words" else 4))
    if got != want:
        raise UsageError(
            f"--against {path}: the index was built with --mode {got[0]} --window {got[1]}, this run uses "
            f"--mode {want[0]} --window {want[1]}; its fingerprints cannot be compared"
        )


def _index_part(path: str, directory: str, n: int) -> str:
    """The items of index file ``path`` as a store part in ``directory``: the ``.npy`` path."""
    from .index import IdsFile, load_index

    count = len(load_index(path))
    fps = np.empty(count, dtype=np.uint64)
    base = os.path.join(directory, f"against-{n:05d}")
    ids = IdsFile(path)
    try:
        with open(base + ".ids", "xb") as out:
            at = 0
            for _, fp, rid in ids.lines(limit=count):
                fps[at] = fp
                out.write(rid.replace(b"\n", b" ") + b"\n")
                at += 1
    finally:
        ids.close()
    if at != count:
        raise InputError(ids.path, None, f"holds {at:,} items, its index {count:,}: they do not belong together")
    np.save(base + ".npy", fps)
    return base + ".npy"


class Stores:
    """The parts of every ``--against`` store, as one batch source."""

    def __init__(self, paths: List[str], indexes: Sequence[str] = ()):
        self.indexes = list(indexes)  # index files, to be read into parts of the work directory
        self.paths = paths
        self._measure()

    def _measure(self) -> None:
        self.lengths = [int(np.load(p, mmap_mode="r").shape[0]) if p.endswith(".npy") else 0 for p in self.paths]
        self.starts = np.cumsum([0] + self.lengths).astype(np.int64)

    def materialize(self, directory: str) -> None:
        """Each index file's items copied into ``directory`` as a part."""
        if not self.indexes:
            return
        for n, index in enumerate(self.indexes):
            self.paths[self.paths.index(index)] = _index_part(index, directory, n)
        self.indexes = []
        self._measure()

    def __len__(self) -> int:
        return int(self.starts[-1])

    def fingerprints(self, positions: np.ndarray) -> np.ndarray:
        positions = np.asarray(positions, dtype=np.int64)
        out = np.empty(len(positions), dtype=np.uint64)
        part = np.searchsorted(self.starts, positions, side="right") - 1
        for p in np.unique(part).tolist():
            here = part == p
            out[here] = np.load(self.paths[p], mmap_mode="r")[positions[here] - self.starts[p]]
        return out

    def ids(self, positions: np.ndarray) -> List[str]:
        """The ids of the stored records at ``positions`` (read from the
        parts' ``.ids`` files, each scanned once)."""
        return [s or "" for s in self._lines(positions, ".ids")]

    def shards(self, positions: np.ndarray) -> List[Optional[str]]:
        """The shards of the stored records at ``positions``: "" for a part
        saved from one input file (no ``.shards`` file)."""
        return [s or "" for s in self._lines(positions, ".shards")]

    def _lines(self, positions: np.ndarray, suffix: str) -> List[Optional[str]]:
        positions = np.asarray(positions, dtype=np.int64)
        out: List[Optional[str]] = [None] * len(positions)
        part = np.searchsorted(self.starts, positions, side="right") - 1
        for p in np.unique(part).tolist():
            at = np.flatnonzero(part == p)
            wanted: Dict[int, List[int]] = {int(positions[i] - self.starts[p]): [] for i in at}
            for i in at:
                wanted[int(positions[i] - self.starts[p])].append(int(i))
            side = self.paths[p][: -len(".npy")] + suffix
            if not os.path.exists(side):
                continue
            with open(side, "rb") as f:
                for line_no, line in enumerate(f):
                    for j in wanted.get(line_no, ()):
                        out[j] = line.rstrip(b"\n").decode("utf-8", "surrogatepass")
        return out


def save(
    directory: str, args: argparse.Namespace, fps: np.ndarray, ids: Sequence[Any], shards: Optional[Sequence[str]] = None
) -> str:
    """Adds a part of kept records to the store (made when missing), with
    the shard of each record when the input was sharded."""
    os.makedirs(directory, exist_ok=True)
    manifest_path = os.path.join(directory, MANIFEST)
    if os.path.exists(manifest_path):
        check(directory, args, "--save-fingerprints")
    else:
        if any(n.startswith("part-") for n in os.listdir(directory)):
            raise InputError(directory, None, "--save-fingerprints: holds parts but no store.json; not a store this run made")
        tmp = manifest_path + f".{os.getpid()}.tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump(settings(args), f, indent=1)
        os.replace(tmp, manifest_path)
    n = len(parts(directory))
    base = os.path.join(directory, f"part-{n:05d}")
    with open(base + f".ids.{os.getpid()}.tmp", "wb") as f:
        for i in ids:
            f.write(str(i).replace("\n", " ").encode("utf-8", "surrogatepass") + b"\n")
    os.replace(base + f".ids.{os.getpid()}.tmp", base + ".ids")
    if shards is not None:
        with open(base + f".shards.{os.getpid()}.tmp", "wb") as f:
            f.write(b"".join(s.replace("\n", " ").encode("utf-8", "surrogatepass") + b"\n" for s in shards))
        os.replace(base + f".shards.{os.getpid()}.tmp", base + ".shards")
    with open(base + f".{os.getpid()}.tmp", "wb") as f:
        np.save(f, np.ascontiguousarray(fps, dtype=np.uint64))
    # The .npy last: a part is its .npy, present only once the ids are.
    os.replace(base + f".{os.getpid()}.tmp", base + ".npy")
    return base + ".npy"
