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
(its items, ids and fingerprint settings are in the file; for a file made
before index files kept ids, in ``IDX.ids`` beside it):
refused before any work when its fingerprints were made with another
shingle mode or width; its items are copied into the run's work directory
as a part (``Stores.materialize``) before they are streamed.

Each run adds one part, numbered past the highest present (a part aged
out by removing it frees no number), each file written under a temporary
name and linked into place only where no file of that name is (never
replacing one), so a part present is a part finished. ``part-NNNNN.json``
records the digest of the input that made the part (``input_digest``): a
rerun of the same input finds its own part, is checked against the store
as it was before that part (the same outputs, byte for byte), and adds no
second part. The write gate locks the store for the run.

A run against a store refuses, before any work, a directory that is not a
store, or a store of another distance, fingerprint spec, shingle mode or
width (its fingerprints would not mean the same thing), and a part whose
files do not belong together (a ``.npy`` that is not a one-dimensional
little-endian uint64 array, an ``.ids`` file missing or of another
length), in one line naming the part.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import re
from typing import Any, Dict, List, Optional, Sequence

import numpy as np

from .._files import blocks, write_whole
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


_PART = re.compile(r"part-(\d+)\.npy")


def parts(directory: str, before: Optional[int] = None) -> List[str]:
    """The store's finished parts (``.npy`` paths), by number; with ``before``,
    only those numbered below it."""
    numbered = []
    for name in os.listdir(directory):
        m = _PART.fullmatch(name)
        if m is not None and (before is None or int(m.group(1)) < before):
            numbered.append((int(m.group(1)), name))
    return [os.path.join(directory, n) for _, n in sorted(numbered)]


def _next_number(directory: str) -> int:
    """The number past every part's (finished or not) in ``directory``."""
    numbers = [int(m.group(1)) for m in (re.match(r"part-(\d+)\.", n) for n in os.listdir(directory)) if m]
    return max(numbers, default=-1) + 1


def own_part(directory: str, digest: str) -> Optional[int]:
    """The number of the part of ``directory`` made from the input of ``digest``, or None."""
    if not os.path.isdir(directory):
        return None
    for path in parts(directory):
        meta = path[: -len(".npy")] + ".json"
        try:
            with open(meta, encoding="utf-8") as f:
                data = json.load(f)
        except (OSError, ValueError, RecursionError):
            continue
        if isinstance(data, dict) and data.get("input") == digest:
            m = _PART.fullmatch(os.path.basename(path))
            assert m is not None
            return int(m.group(1))
    return None


def check_part(path: str) -> int:
    """The number of records of part ``path`` (``.npy``), after checking that
    its files belong together; ``InputError`` naming the part otherwise."""
    try:
        fps = np.load(path, mmap_mode="r")
    except (OSError, ValueError, EOFError) as e:
        raise InputError(path, None, f"cannot be read as a store part ({e}); remove the part or restore it") from None
    if fps.ndim != 1 or fps.dtype != np.dtype("<u8"):
        raise InputError(
            path, None, f"is a {fps.ndim}-D {fps.dtype.str} array, not the one-dimensional little-endian uint64 a store part is"
        )
    n = int(fps.shape[0])
    ids = path[: -len(".npy")] + ".ids"
    try:
        lines = _count_lines(ids)
    except FileNotFoundError:
        raise InputError(path, None, f"has no {os.path.basename(ids)}: the part cannot name its records") from None
    except OSError as e:
        raise InputError(ids, None, f"cannot read: {e.strerror or e}") from None
    if lines != n:
        raise InputError(
            ids, None, f"names {lines:,} records, its part {os.path.basename(path)} holds {n:,}: they do not belong together"
        )
    return n


def _count_lines(path: str) -> int:
    return sum(block.count(b"\n") for block in blocks(path))


def open_stores(directories: Sequence[str], args: argparse.Namespace, own: Optional[Dict[str, int]] = None) -> "Stores":
    """The parts of every ``--against`` store, checked; ``own`` maps a store's
    real path to the number of this input's own part in it: that part and
    the later ones are left out (the store as it was when the input was run)."""
    paths: List[str] = []
    indexes: List[str] = []
    for d in directories:
        if os.path.isfile(d):
            _check_index(d, args)
            indexes.append(d)
            paths.append(d)  # replaced by its part in the work directory (materialize)
            continue
        check(d, args, "--against")
        found = parts(d, before=(own or {}).get(os.path.realpath(d)))
        for p in found:
            check_part(p)
        paths.extend(found)
    return Stores(paths, indexes)


def _check_index(path: str, args: argparse.Namespace) -> None:
    """Refuses an index file whose fingerprints were made otherwise than this run's."""
    from .index import IdsFile, file_settings, load_index

    settings = file_settings(load_index(path), path)
    if settings is None:  # a file of the ids-file era: its settings are in IDX.ids
        ids = IdsFile(path)
        try:
            settings = ids.settings
        finally:
            ids.close()
    recorded = (settings.get("mode"), settings.get("width"))
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
    from .index import IdsFile, file_settings, items_of, load_index

    index = load_index(path)
    base = os.path.join(directory, f"against-{n:05d}")
    if file_settings(index, path) is not None:  # made by index build: the ids are in the file
        fps, names = items_of(index)
        with open(base + ".ids", "xb") as out:
            out.write("".join(name.replace("\n", " ") + "\n" for name in names).encode("utf-8", "surrogateescape"))
        np.save(base + ".npy", fps)
        return base + ".npy"
    count = len(index)
    del index
    fps = np.empty(count, dtype=np.uint64)
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
    directory: str,
    args: argparse.Namespace,
    fps: np.ndarray,
    ids: Sequence[Any],
    shards: Optional[Sequence[str]] = None,
    digest: Optional[str] = None,
) -> str:
    """Adds a part of kept records to the store (made when missing), with
    the shard of each record when the input was sharded and the digest of
    the input that made it."""
    os.makedirs(directory, exist_ok=True)
    manifest_path = os.path.join(directory, MANIFEST)
    if os.path.exists(manifest_path):
        check(directory, args, "--save-fingerprints")
    else:
        if any(_PART.fullmatch(n) for n in os.listdir(directory)):
            raise InputError(directory, None, "--save-fingerprints: holds parts but no store.json; not a store this run made")
        _place(manifest_path, json.dumps(settings(args), indent=1).encode("utf-8"), replace=True)
    base = os.path.join(directory, f"part-{_next_number(directory):05d}")
    text = b"".join(str(i).replace("\n", " ").encode("utf-8", "surrogatepass") + b"\n" for i in ids)
    _place(base + ".ids", text)
    if shards is not None:
        _place(base + ".shards", b"".join(s.replace("\n", " ").encode("utf-8", "surrogatepass") + b"\n" for s in shards))
    meta = {"input": digest, "records": int(len(fps))}
    _place(base + ".json", json.dumps(meta, indent=1).encode("utf-8"))
    buffer = io.BytesIO()
    np.save(buffer, np.ascontiguousarray(fps, dtype="<u8"))
    # The .npy last: a part is its .npy, present only once the rest is.
    _place(base + ".npy", buffer.getbuffer())
    return base + ".npy"


def _place(path: str, data: Any, replace: bool = False) -> None:
    """``data`` written to ``path`` whole and synced; linked into place only
    where no file is (``replace``: renamed over one)."""
    try:
        write_whole(path, data, replace=replace, sync=True)
    except FileExistsError:
        raise InputError(path, None, "exists already: another run added this part; run again") from None
    except OSError as e:
        raise InputError(path, None, f"cannot write: {e.strerror or e}") from None
