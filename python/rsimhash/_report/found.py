"""What a run found, as the report needs it: matches and groups of ids.

``Found`` holds the ids the outputs name, each once (``names``, as the
outputs write them; a *code* is a position in ``names``), and:

* matches ``(a[i], b[i])``: for a dedup, the kept record and a record removed
  as its near-duplicate (one per removed record); for clusters, the first
  member of a cluster and each other member; for find-all, each pair. With
  their Hamming ``distance`` (int16, when the outputs give it or their
  fingerprints) and ``similarity`` (float32, verified runs);
* groups ``members[starts[g]:starts[g + 1]]``, the first member first: a kept
  record with the records removed for it, a cluster, or a connected
  component of the pairs.

The outputs are read as the commands write them (see ``rsimhash.cli``):
``dedup --removed``: ``id<TAB>duplicate_of<TAB>distance`` (``jaccard`` or
``containment`` with ``--jaccard``); ``cluster``: ``id<TAB>hash<TAB>cluster``
or ``id<TAB>cluster``; ``find-all``: one JSON ``[a, b]`` of fingerprint
values a line (``values``: the names are fingerprints, a value given twice
pairs with itself), or ``id_a<TAB>id_b<TAB>jaccard|containment|distance``.
Memory and time are linear in the rows.
"""

from __future__ import annotations

import gzip
import json
import os
from typing import Any, Dict, Iterable, Iterator, List, Optional, Sequence, Tuple

import numpy as np

from .._optional import module

KINDS = ("dedup", "cluster", "find-all")
SIMILARITY = ("jaccard", "containment")


class OutputFormatError(ValueError):
    """An output file or table that is not what the run writes."""


class Found:
    def __init__(
        self,
        kind: str,
        names: List[str],
        a: np.ndarray,
        b: np.ndarray,
        *,
        distance: Optional[np.ndarray] = None,
        similarity: Optional[np.ndarray] = None,
        measure: Optional[str] = None,
        hashes: Optional[np.ndarray] = None,
        values: bool = False,
        groups: Optional[Tuple[np.ndarray, np.ndarray]] = None,
    ):
        self.kind = kind
        self.names = names
        self.a = np.asarray(a, dtype=np.int64)
        self.b = np.asarray(b, dtype=np.int64)
        self.similarity = similarity
        self.measure = measure
        self.hashes = hashes  # uint64 by code, when the outputs give the fingerprints
        self.values = values
        if distance is None and hashes is not None:
            distance = _hamming(hashes[self.a], hashes[self.b])
        self.distance = distance
        self.members, self.starts = groups if groups is not None else _groups_of_pairs(len(names), self.a, self.b)
        # Names are SHARD:ID (a sharded dedup's --removed names each record's shard):
        # the records' ids are to be read the same way.
        self.by_shard = False

    @property
    def sizes(self) -> np.ndarray:
        return np.diff(self.starts)

    def set_distance(self, fps: np.ndarray) -> None:
        """The matches' distances from each code's fingerprint."""
        self.distance = _hamming(fps[self.a], fps[self.b])


def _hamming(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    from .. import hamming

    if not len(x):
        return np.zeros(0, np.int16)
    return hamming(np.ascontiguousarray(x, np.uint64), np.ascontiguousarray(y, np.uint64)).astype(np.int16)


class _Codes:
    """Ids as written, each given a code in order of first mention."""

    def __init__(self) -> None:
        self.codes: Dict[str, int] = {}

    def of(self, items: Iterable[str]) -> np.ndarray:
        codes = self.codes
        setdefault = codes.setdefault
        return np.fromiter((setdefault(x, len(codes)) for x in items), dtype=np.int64)

    @property
    def names(self) -> List[str]:
        return list(self.codes)


# -- from the rows of each output ---------------------------------------------
def removed(ids: Sequence[str], kept: Sequence[str], values: Any, column: str) -> Found:
    """``dedup --removed``: each removed record, the kept record it matched, and their
    distance (``column`` "distance") or similarity."""
    codes = _Codes()
    b, a = codes.of(ids), codes.of(kept)
    dist, sim = _measures(values, column)
    return Found(
        "dedup",
        codes.names,
        a,
        b,
        distance=dist,
        similarity=sim,
        measure=column if column in SIMILARITY else None,
        groups=_groups_by_head(a, b),
    )


def clusters(ids: Sequence[str], labels: Sequence[Any], hashes: Optional[Sequence[Any]] = None) -> Found:
    """``cluster``: each record's cluster label (and fingerprint). Groups are the
    clusters in order of their first row, members in row order."""
    codes = _Codes()
    members = codes.of(ids)
    names = codes.names
    fps = None
    if hashes is not None:
        fps = np.zeros(len(names), np.uint64)
        fps[members] = np.asarray([int(h) for h in hashes], dtype=np.uint64)
    lab = _labels(labels)
    _, first, inverse = np.unique(lab, return_index=True, return_inverse=True)
    rank = np.argsort(np.argsort(first, kind="stable"), kind="stable")  # cluster number by first row
    order = np.argsort(rank[inverse.reshape(-1)], kind="stable")
    members = members[order]
    sizes = np.bincount(rank[inverse.reshape(-1)], minlength=len(first)) if len(first) else np.zeros(0, np.int64)
    starts = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    heads = np.repeat(members[starts[:-1]], sizes) if len(sizes) else np.zeros(0, np.int64)
    rest = np.ones(len(members), bool)
    rest[starts[:-1]] = False
    return Found("cluster", names, heads[rest], members[rest], hashes=fps, groups=(members, starts))


def pairs(
    a: Sequence[str], b: Sequence[str], values: Any = None, column: Optional[str] = None, fingerprints: bool = False
) -> Found:
    """``find-all``: pairs of ids with their distance or similarity, or pairs of
    fingerprint values (``fingerprints``)."""
    codes = _Codes()
    ca, cb = codes.of(a), codes.of(b)
    names = codes.names
    dist, sim = _measures(values, column) if column is not None and values is not None else (None, None)
    hashes = np.array([int(x) for x in names], dtype=np.uint64) if fingerprints else None
    return Found(
        "find-all",
        names,
        ca,
        cb,
        distance=dist,
        similarity=sim,
        measure=column if column in SIMILARITY else None,
        hashes=hashes,
        values=fingerprints,
    )


def _labels(labels: Sequence[Any]) -> np.ndarray:
    arr = np.asarray(labels)
    if arr.dtype.kind in "iu":
        return arr.astype(np.int64)
    try:
        return np.asarray([int(x) for x in labels], dtype=np.int64)
    except (TypeError, ValueError):
        return np.unique(np.asarray([str(x) for x in labels]), return_inverse=True)[1].astype(np.int64)


def _measures(values: Any, column: Optional[str]) -> Tuple[Optional[np.ndarray], Optional[np.ndarray]]:
    """``(distance, similarity)`` of a value column."""
    if column == "distance":
        try:
            dist = np.asarray(values, dtype=np.int64).reshape(-1)
            wrong = dist[(dist < 0) | (dist > 64)]
            bad = str(wrong[0]) if len(wrong) else None
        except OverflowError:
            bad = next(str(v).strip() for v in values if not -(1 << 63) <= int(v) < (1 << 63))
        if bad is not None:
            raise ValueError(f"the distance {bad} is not a number of bits of a 64-bit fingerprint (0 to 64)")
        return dist.astype(np.int16), None
    return None, np.asarray(values, dtype=np.float32).reshape(-1)


def _groups_by_head(a: np.ndarray, b: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
    """Each distinct ``a`` followed by its ``b``s, groups in order of ``a``'s first row."""
    if not len(a):
        return np.zeros(0, np.int64), np.zeros(1, np.int64)
    heads, first, inverse = np.unique(a, return_index=True, return_inverse=True)
    rank = np.argsort(np.argsort(first, kind="stable"), kind="stable")
    group = rank[inverse.reshape(-1)]
    order = np.argsort(group, kind="stable")
    counts = np.bincount(group, minlength=len(heads))
    starts = np.concatenate([[0], np.cumsum(counts + 1)]).astype(np.int64)
    members = np.empty(len(a) + len(heads), np.int64)
    head_at = starts[:-1]
    members[head_at] = heads[np.argsort(rank)]
    rest = np.ones(len(members), bool)
    rest[head_at] = False
    members[rest] = b[order]
    return members, starts


def _groups_of_pairs(n: int, a: np.ndarray, b: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
    """Connected components of the pairs (codes ``0..n-1``) of two or more
    members, each by its smallest code, in order of it, members ascending."""
    label = np.arange(n, dtype=np.int64)
    if len(a):
        while True:
            # Hook each root to the smallest root it is paired with, then jump
            # pointers until every label is a root: O(P) per round, few rounds.
            la, lb = label[a], label[b]
            low = np.minimum(la, lb)
            new = label.copy()
            np.minimum.at(new, la, low)
            np.minimum.at(new, lb, low)
            while True:
                jumped = new[new]
                if np.array_equal(jumped, new):
                    break
                new = jumped
            if np.array_equal(new, label):
                break
            label = new
    order = np.argsort(label, kind="stable")
    sorted_labels = label[order]
    cuts = np.flatnonzero(np.diff(sorted_labels)) + 1
    bounds = np.concatenate([[0], cuts, [n]]).astype(np.int64)
    sizes = np.diff(bounds)
    keep = np.repeat(sizes >= 2, sizes)
    members = order[keep]
    kept_sizes = sizes[sizes >= 2]
    return members, np.concatenate([[0], np.cumsum(kept_sizes)]).astype(np.int64)


# -- from files ------------------------------------------------------------------
def _open_text(path: str) -> Iterator[str]:
    """The lines of a text output (maybe gzip or zstd compressed), without line ends."""
    try:
        raw = open(path, "rb")
    except OSError as e:
        raise OSError(e.errno, f"{path}: cannot read: {e.strerror or e}") from None
    with raw:
        head = raw.peek(4)[:4]
        stream: Any = raw
        if head[:2] == b"\x1f\x8b":
            stream = gzip.GzipFile(fileobj=raw, mode="rb")
        elif head == b"\x28\xb5\x2f\xfd":
            stream = module("zstandard").ZstdDecompressor().stream_reader(raw, read_across_frames=True)
        for lineno, line in enumerate(stream, 1):
            try:
                yield line.decode("utf-8").rstrip("\r\n")
            except UnicodeDecodeError:
                raise OutputFormatError(f"{path}:{lineno}: is not valid UTF-8") from None


def read(path: str, expect: Optional[str] = None) -> Found:
    """A run's output file: ``dedup --removed``, ``cluster`` or ``find-all``,
    told apart by its header; ``expect`` names the one wanted."""
    lines = _open_text(path)
    header = next(lines, None)
    if header is None:
        if expect in (None, "find-all"):  # find-all's JSON pairs: none found
            return pairs([], [], fingerprints=True)
        raise OutputFormatError(f"{path}: is empty (the output of {expect} starts with a header line)")
    cols = header.split("\t")
    kind, column = _kind(cols)
    if kind is None:
        if header.startswith("[") or header == "":
            kind = "find-all"
        else:
            raise OutputFormatError(
                f"{path}:1: expected the header of a run's output: 'id<TAB>duplicate_of<TAB>distance' (dedup "
                "--removed, maybe with '<TAB>shard<TAB>duplicate_of_shard'), 'id<TAB>hash<TAB>cluster' or "
                "'id<TAB>cluster' (cluster), 'id_a<TAB>id_b<TAB>jaccard' "
                f"or JSON [a, b] lines (find-all); got {header[:80]!r}"
            )
    if expect is not None and kind != expect:
        raise OutputFormatError(f"{path}: is the output of {kind}, not of {expect}")
    if kind == "find-all" and column is None:
        return _value_pairs(path, header, lines)
    width = len(cols)
    rows: List[List[str]] = [[] for _ in range(width)]
    for lineno, line in enumerate(lines, 2):
        if not line:
            continue
        fields = line.split("\t")
        if len(fields) != width:
            raise OutputFormatError(f"{path}:{lineno}: expected {width} tab-separated fields, got {len(fields)}")
        for r, f in zip(rows, fields):
            r.append(f)
    try:
        if kind == "dedup" and width == 5:  # of sharded inputs: ids are unique within their shard
            assert column is not None
            ids = [f"{s}:{i}" for i, s in zip(rows[0], rows[3])]
            kept = [f"{s}:{i}" for i, s in zip(rows[1], rows[4])]
            found = removed(ids, kept, rows[2], column)
            found.by_shard = True
            return found
        if kind == "dedup":
            assert column is not None
            return removed(rows[0], rows[1], rows[2], column)
        if kind == "cluster":
            if width == 3:
                return clusters(rows[0], rows[2], rows[1])
            return clusters(rows[0], rows[1])
        return pairs(rows[0], rows[1], rows[2], column)
    except ValueError as e:
        raise OutputFormatError(f"{path}: a value is not a number ({e})") from None
    except OverflowError as e:
        raise OutputFormatError(f"{path}: a value is out of range ({e})") from None


def _kind(cols: List[str]) -> Tuple[Optional[str], Optional[str]]:
    if len(cols) == 3 and cols[:2] == ["id", "duplicate_of"] and cols[2] in SIMILARITY + ("distance",):
        return "dedup", cols[2]
    sharded = cols[3:] == ["shard", "duplicate_of_shard"]
    if len(cols) == 5 and sharded and cols[:2] == ["id", "duplicate_of"] and cols[2] in SIMILARITY + ("distance",):
        return "dedup", cols[2]  # of sharded inputs
    if cols in (["id", "hash", "cluster"], ["id", "cluster"]):
        return "cluster", None
    if len(cols) == 3 and cols[:2] == ["id_a", "id_b"] and cols[2] in SIMILARITY + ("distance",):
        return "find-all", cols[2]
    return None, None


def _value_pairs(path: str, first: str, lines: Iterator[str]) -> Found:
    a: List[str] = []
    b: List[str] = []
    for lineno, line in enumerate([first], 1):
        _value_pair(path, lineno, line, a, b)
    for lineno, line in enumerate(lines, 2):
        _value_pair(path, lineno, line, a, b)
    return pairs(a, b, fingerprints=True)


def _value_pair(path: str, lineno: int, line: str, a: List[str], b: List[str]) -> None:
    if not line:
        return
    try:
        # "[a, b]" as find-all writes it, split without a JSON parser (10 times faster)
        x, y = (int(v) for v in line[1:-1].split(",")) if line[0] == "[" and line[-1] == "]" else json.loads(line)
        if not (type(x) is int and type(y) is int and 0 <= x < 1 << 64 and 0 <= y < 1 << 64):
            raise ValueError
    except (ValueError, TypeError):
        raise OutputFormatError(f"{path}:{lineno}: expected a JSON pair [a, b] of fingerprints, got {line[:80]!r}") from None
    a.append(str(x))
    b.append(str(y))


def default_path(path: Any) -> Optional[str]:
    """``path`` as a str when it names a file (str or PathLike), else None."""
    if isinstance(path, (str, os.PathLike)):
        return os.fspath(path)  # type: ignore[return-value]
    return None
