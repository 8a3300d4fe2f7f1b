"""``IDX.ids``: the ids file that ``rsimhash index build`` wrote beside an
index file before the index file kept the records' ids itself (issue 38,
item 6). Files made then are still read by every ``rsimhash index``
action and by ``dedup --against IDX``, and ``index add`` keeps such a pair
a pair (it rewrites the ids file).

An index file of then stores ``uint64`` ids only (item ``i`` under id
``i``), so the ids file holds each item's own id, int or string: a first
line ``# rsimhash index ids, format 2: {...}`` with the fingerprint
settings as JSON (``mode`` and ``width``; ``null`` when the index was built
from hashes), then one line ``hash<TAB>id`` per item, item ``i`` on line
``i + 2``, and a last line ``# rsimhash index ids end: N lines, crc32
XXXXXXXX``: the number of id lines and the CRC-32 of every byte before that
line, checked whenever the file is read, so an edited id or settings line
is an error, never a wrong id. Files of format 1 (no end line, written
before the checksum) are still read, checked only by the spot checks
(``check_items``); ``verify`` says they have no checksum, and the next
``add`` rewrites them in format 2.

Both files are replaced atomically, the ids file first: a crash between
the two leaves an ids file with lines for items the index does not hold,
which are ignored (an index of N items reads the first N). Every use checks
a sample of the lines against the index (``verify`` checks all of them), so
a pair of files that do not belong together is an error, never wrong ids.
"""

from __future__ import annotations

import json
import zlib
from typing import Any, BinaryIO, Dict, Iterator, List, Optional, Tuple

import numpy as np

from .errors import InputError
from .outputs import Output

IDS_MAGIC = b"# rsimhash index ids, format 2: "
IDS_MAGIC_V1 = b"# rsimhash index ids, format 1: "
IDS_END = b"# rsimhash index ids end: "
SPOT_CHECKS = 64


def ids_path(index_path: str) -> str:
    return index_path + ".ids"


class IdsFile:
    """Reader of ``IDX.ids``: the settings line, then ``(lineno, hash, id)``
    lines; the end line's count and checksum are checked when the lines have
    been read (format 2)."""

    def __init__(self, index_path: str, required: bool = True):
        self.path = ids_path(index_path)
        self.index_path = index_path
        self.settings: Dict[str, Any] = {}
        self.file: Optional[BinaryIO] = None
        self.checksummed = False  # format 2: an end line with the count and CRC
        try:
            self.file = open(self.path, "rb")
        except FileNotFoundError:
            if required:
                raise InputError(
                    self.path, None, f"is missing: {index_path} was not made by rsimhash index build (or the ids file was moved)"
                ) from None
            return
        except OSError as e:
            raise InputError(self.path, None, f"cannot read: {e.strerror or e}") from None
        first = self.file.readline()
        self._crc = zlib.crc32(first)
        if first.startswith(IDS_MAGIC):
            self.checksummed = True
        elif not first.startswith(IDS_MAGIC_V1):
            raise InputError(
                self.path, 1, f"is not an rsimhash ids file (its first line should start with {IDS_MAGIC.decode()!r})"
            )
        try:
            settings = json.loads(first[len(IDS_MAGIC) :])
            if not isinstance(settings, dict):
                raise ValueError("not an object")
        except ValueError:
            raise InputError(self.path, 1, "the settings after the first line's colon are not a JSON object") from None
        self.settings = settings

    @property
    def exists(self) -> bool:
        return self.file is not None

    def lines(self, limit: Optional[int] = None) -> Iterator[Tuple[int, int, bytes]]:
        """``(lineno, hash, id)`` of the first ``limit`` items (all by default).
        A checksummed file is read to its end line, which must match."""
        assert self.file is not None
        lineno = 1
        crc = self._crc
        for n, line in enumerate(self.file):
            lineno += 1
            if self.checksummed and line.startswith(IDS_END):
                self._check_end(line, lineno, n, crc)
                return
            crc = zlib.crc32(line, crc)
            if limit is not None and n >= limit:
                if not self.checksummed:
                    return
                continue  # lines past the index's items: not used, but checksummed
            fp, tab, rid = line.rstrip(b"\n").partition(b"\t")
            if not tab or not fp.isdigit() or int(fp) >= 1 << 64:
                raise InputError(self.path, lineno, "expected 'hash<TAB>id'")
            yield lineno, int(fp), rid
        if self.checksummed:
            raise InputError(
                self.path,
                None,
                "is cut short: its end line (count and checksum) is missing; rebuild it with rsimhash index build",
            )

    def _check_end(self, line: bytes, lineno: int, count: int, crc: int) -> None:
        expected = ids_end(count, crc)
        if line != expected:
            raise InputError(
                self.path,
                lineno,
                "fails its checksum: the file was edited or damaged after it "
                "was written (ids, order or settings changed); rebuild it with "
                "rsimhash index build",
            )
        if self.file is not None and self.file.read(1):
            raise InputError(self.path, lineno + 1, "has lines after its end line: the file was edited or damaged")

    def close(self) -> None:
        if self.file is not None:
            self.file.close()


def ids_header(settings: Dict[str, Any]) -> bytes:
    return IDS_MAGIC + json.dumps(settings, sort_keys=True).encode() + b"\n"


def ids_end(count: int, crc: int) -> bytes:
    """The end line of an ids file of ``count`` id lines whose bytes before it have CRC-32 ``crc``."""
    return IDS_END + b"%d lines, crc32 %08x\n" % (count, crc & 0xFFFFFFFF)


class IdsWriter:
    """Writes an ids file through an ``Output``: the settings line, id
    lines, then (``finish``) the end line with their count and checksum."""

    def __init__(self, out: Output, settings: Dict[str, Any]):
        self.out = out
        self.count = 0
        self.crc = 0
        self.write(ids_header(settings), 0)

    def write(self, data: bytes, lines: int) -> None:
        self.crc = zlib.crc32(data, self.crc)
        self.count += lines
        self.out.write(data)

    def finish(self) -> None:
        self.out.write(ids_end(self.count, self.crc))


def check_items(index: Any, ids_file: str, index_path: str, positions: List[int], fps: List[int]) -> None:
    """Raises unless item ``positions[j]`` of the index has fingerprint ``fps[j]``."""
    if not positions:
        return
    pos = np.asarray(positions, dtype=np.uint64)
    qi, hit, _ = index.query_batch(np.asarray(fps, dtype=np.uint64), k=0)
    ok = np.zeros(len(pos), dtype=bool)
    ok[qi[hit == pos[qi]]] = True
    if not ok.all():
        bad = int(np.flatnonzero(~ok)[0])
        raise InputError(
            ids_file,
            positions[bad] + 2,
            f"does not belong to {index_path}: its item {positions[bad]} has another "
            "fingerprint (rebuild both with rsimhash index build)",
        )


def spot_positions(n: int) -> "set[int]":
    """Items checked on every use: evenly spread, the first and the last."""
    if n == 0:
        return set()
    return set(np.linspace(0, n - 1, min(n, SPOT_CHECKS)).astype(np.int64).tolist())
