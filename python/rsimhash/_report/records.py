"""The input records, read once for what the page shows of them.

A report reads its input as ``Shard``s (one today; one per input shard once
the commands take several), each a function that opens the shard and
yields ``Block``s of consecutive records: their ids as read, their
fingerprints on demand, and the texts of the rows asked for. The command
line makes blocks of its readers' chunks, ``rsimhash.report`` of columns in
memory; this module never opens a file itself.

``scan`` passes over the shards once and keeps, per code of ``Found`` (an
id the outputs name): whether the input holds it, its fingerprint (when
asked: the Hamming distances of verified runs), and only the texts of the
few records the page shows. Time is linear in the records, memory in the
codes plus the texts asked for. The first record of an id counts; with
fingerprint values for names (find-all of ``lines``), the first two
records of each value (a value given twice pairs with itself).
"""

from __future__ import annotations

from itertools import repeat
from typing import Any, Callable, Dict, Iterator, List, NamedTuple, Optional, Sequence

import numpy as np

from .found import Found


class Block:
    """Consecutive records of one shard: ``ids`` as read (int or str),
    ``fingerprints()`` a uint64 array of them, ``texts(rows)`` the texts of
    those rows (None when the input holds fingerprints, not texts)."""

    def __init__(
        self, ids: Sequence[Any], fingerprints: Callable[[], np.ndarray], texts: Optional[Callable[[List[int]], List[str]]]
    ):
        self.ids = ids
        self.fingerprints = fingerprints
        self.texts = texts


class Shard(NamedTuple):
    name: str
    blocks: Callable[[], Iterator[Block]]  # opens the shard and reads it


class Scan:
    """What one pass over the shards found (see the module doc)."""

    def __init__(self, n_codes: int):
        self.records: List[int] = []  # records of each shard
        self.flagged: List[int] = []  # of which removed (or in a pair, a cluster)
        self.seen = np.zeros(n_codes, bool)  # the input holds the code
        self.fps = np.zeros(n_codes, np.uint64)
        self.texts: Dict[int, str] = {}
        self.ids: Dict[int, Any] = {}  # the record id of a fingerprint value (values mode)
        self.second_texts: Dict[int, str] = {}  # a value's second record (values mode)
        self.second_ids: Dict[int, Any] = {}
        self.has_texts = True
        self.distinct: Optional[int] = None  # distinct fingerprints read (values mode)
        self._values: List[np.ndarray] = []

    @property
    def total(self) -> int:
        return sum(self.records)


def lookup(names: List[str]) -> Dict[Any, int]:
    """Codes by id as a reader gives it: the name, and for a name that is a
    decimal integer written plainly also the int (a JSON id 5 is written 5)."""
    table: Dict[Any, int] = {}
    for code, name in enumerate(names):
        table[name] = code
        if name.isdecimal() and name.isascii() and (name == "0" or name[0] != "0"):
            table[int(name)] = code
        elif name[:1] == "-" and name[1:].isdecimal() and name[1:].isascii() and name[1:2] != "0":
            table[int(name)] = code
    return table


def scan(shards: Sequence[Shard], found: Found, want_texts: np.ndarray, *, want_fps: bool, flagged: np.ndarray) -> Scan:
    """One pass: see the module doc. ``want_texts`` and ``flagged`` are bool by code."""
    out = Scan(len(found.names))
    if found.values:
        assert found.hashes is not None
        order = np.argsort(found.hashes, kind="stable")
        values = found.hashes[order]
        for shard in shards:
            _values_shard(shard, out, order, values, want_texts, flagged)
        out.distinct = len(np.unique(np.concatenate(out._values))) if out._values else 0
        out._values = []
        return out
    table = lookup(found.names)
    for shard in shards:
        _ids_shard(shard, out, table, want_texts, want_fps, flagged)
    return out


def _ids_shard(
    shard: Shard, out: Scan, table: Dict[Any, int], want_texts: np.ndarray, want_fps: bool, flagged: np.ndarray
) -> None:
    records = hits = 0
    get = table.get
    for block in shard.blocks():
        n = len(block.ids)
        records += n
        codes = np.array(list(map(get, block.ids, repeat(-1, n))), dtype=np.int64) if n else np.zeros(0, np.int64)
        rows = np.flatnonzero(codes >= 0)
        if not len(rows):
            continue
        c = codes[rows]
        hits += int(np.count_nonzero(flagged[c]))
        c, first = np.unique(c, return_index=True)  # an id given twice: its first record
        rows = rows[first]
        new = ~out.seen[c]
        c, rows = c[new], rows[new]
        if not len(c):
            continue
        out.seen[c] = True
        if want_fps:
            out.fps[c] = block.fingerprints()[rows]
        _texts(block, out, c, rows, want_texts, out.texts)
    out.records.append(records)
    out.flagged.append(hits)


def _values_shard(
    shard: Shard, out: Scan, order: np.ndarray, values: np.ndarray, want_texts: np.ndarray, flagged: np.ndarray
) -> None:
    records = hits = 0
    taken = np.zeros(len(out.seen), np.int64)  # records kept so far for each value: 0, 1 or 2
    for block in shard.blocks():
        fps = block.fingerprints()
        records += len(fps)
        out._values.append(np.unique(fps))
        if not len(values):
            continue
        at = np.minimum(np.searchsorted(values, fps), len(values) - 1)
        rows = np.flatnonzero(values[at] == fps)
        if not len(rows):
            continue
        c = order[at[rows]]
        hits += int(np.count_nonzero(flagged[c]))
        # the how-many-th record of its value each row is, counting earlier blocks
        sort = np.argsort(c, kind="stable")
        cs = c[sort]
        starts = np.concatenate([[0], np.flatnonzero(np.diff(cs)) + 1])
        nth = np.empty(len(c), np.int64)
        nth[sort] = np.arange(len(cs)) - np.repeat(starts, np.diff(np.append(starts, len(cs))))
        nth += taken[c]
        np.add.at(taken, c, 1)
        for which, (ids, texts) in enumerate(((out.ids, out.texts), (out.second_ids, out.second_texts))):
            pick = nth == which
            cp, rp = c[pick], rows[pick]
            if which == 0:
                out.seen[cp] = True
                out.fps[cp] = fps[rp]
            shown = want_texts[cp]
            for code, row in zip(cp[shown].tolist(), rp[shown].tolist()):
                ids[code] = block.ids[row]
            _texts(block, out, cp, rp, want_texts, texts)
    out.records.append(records)
    out.flagged.append(hits)


def _texts(block: Block, out: Scan, codes: np.ndarray, rows: np.ndarray, want: np.ndarray, into: Dict[int, str]) -> None:
    pick = want[codes]
    if not pick.any():
        return
    if block.texts is None:
        out.has_texts = False
        return
    got = block.texts(rows[pick].tolist())
    for code, text in zip(codes[pick].tolist(), got):
        into[code] = text
