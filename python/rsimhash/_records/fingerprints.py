"""Fingerprint files: a hash TSV (``id`` and ``hash`` columns, a header line)
and decimal lines (one u64 per line, the id its line number).

The core (``_rsimhash.JsonLines(format=...)``) reads and parses both,
compressed or not; the header and any line it cannot read come here, where
the reference reader reads the header and words each bad line's error.
"""

from __future__ import annotations

import json
from typing import Any, Dict, List, Optional

import numpy as np

from .base import Reading
from .chunk import Chunk, Id

U64_MAX = (1 << 64) - 1


class FingerprintRecords(Reading):
    """The hash TSV and decimal lines half of ``Source``."""

    def _from_core_hashes(self, rc: Any) -> Chunk:
        """A chunk of a fingerprint file read by the core: the header line
        and the lines it could not read go through the reference reader,
        which reads the header and words each bad line's error."""
        status = rc.status()
        lines = rc.lines()
        fps: np.ndarray = rc.fingerprints()  # always given for a fingerprint file
        special = np.flatnonzero(status)
        ids: Optional[List[Id]] = None  # lines: the line numbers
        if not len(special):  # the usual chunk: every line a record, nothing to pick
            # The ids stay in the core until asked for (packed, or as a list).
            source = rc if self.format == "hash" and self.need_ids else None
            entries = np.arange(len(lines), dtype=np.int64)
            return Chunk(lines, None, hashes=fps, nbytes=rc.nbytes, core=rc, entries=entries, id_source=source)
        keep = status == 0
        extra_ids: Dict[int, Id] = {}
        for i in special.tolist():
            if status[i] == 4:
                self._read_header(rc.line(i))
                continue
            if status[i] == 3:  # longer than the record limit: not read
                self.bad(self._too_long(int(lines[i])))
                continue
            parse = self._parse_hash if self.format == "hash" else self._parse_lines
            found = parse([rc.line(i)], int(lines[i]) - 1)
            if len(found) and found.hashes is not None:  # read after all (the core leaves any doubtful line here)
                keep[i] = True
                fps[i] = found.hashes[0]
                extra_ids[i] = found.ids[0]
        entries = np.flatnonzero(keep)
        if self.format == "hash" and self.need_ids and not extra_ids:
            # Every record's id is the core's (a header or bad lines aside): kept there until asked for.
            return Chunk(lines[entries], None, hashes=fps[entries], nbytes=rc.nbytes, core=rc, entries=entries, id_source=rc)
        if self.format == "hash" and self.need_ids:
            all_ids = rc.ids()
            for i, rid in extra_ids.items():
                all_ids[i] = rid
            ids = [all_ids[i] for i in entries.tolist()] if len(entries) < len(all_ids) else all_ids
        return Chunk(lines[entries], ids, hashes=fps[entries], nbytes=rc.nbytes, core=rc, entries=entries)

    def _parse_hash(self, parts: List[bytes], lineno: int) -> Chunk:
        lines: List[int] = []
        ids: List[Id] = []
        hashes: List[int] = []
        raw: List[bytes] = []
        for part in parts:
            lineno += 1
            if lineno == 1:
                self._read_header(part)
                continue
            if not part or part.isspace():
                continue
            fields = part.rstrip(b"\r").split(b"\t")
            if len(fields) != self._ncols:
                self.bad(self._error(lineno, f"expected {self._ncols} tab-separated fields, got {len(fields)}"))
                continue
            value = _parse_u64(fields[self._hash_col])
            if value is None:
                self.bad(self._error(lineno, f"hash {_show(fields[self._hash_col])} is not a decimal integer in 0..2**64-1"))
                continue
            try:
                rid = fields[self._id_col].decode("utf-8")
            except UnicodeDecodeError:
                self.bad(self._error(lineno, "the id is not valid UTF-8"))
                continue
            lines.append(lineno)
            ids.append(rid)
            hashes.append(value)
            raw.append(part)
        return Chunk(lines, ids, hashes=np.array(hashes, dtype=np.uint64), raw=raw)

    def _read_header(self, part: bytes) -> None:
        names = [n.strip() for n in part.rstrip(b"\r").decode("utf-8", "replace").split("\t")]
        if names and names[0].startswith("\ufeff"):
            names[0] = names[0][1:]
        if self.id_column not in names or "hash" not in names:
            raise self._error(
                1,
                f'expected a header line naming the columns "{self.id_column}" and "hash", separated by a tab, got {_show(part)}',
            )
        self.header = part + b"\n"
        self._ncols = len(names)
        self._id_col = names.index(self.id_column)
        self._hash_col = names.index("hash")

    def _parse_lines(self, parts: List[bytes], lineno: int) -> Chunk:
        lines: List[int] = []
        hashes: List[int] = []
        raw: List[bytes] = []
        for part in parts:
            lineno += 1
            value = _parse_u64(part)
            if value is None:
                if not part or part.isspace():
                    continue
                message = f"{_show(part)} is not a decimal integer in 0..2**64-1"
                if lineno == 1 and any(c.isalpha() for c in part.decode("utf-8", "replace")):
                    message += (
                        "; it looks like a header, which a lines input does not have (one "
                        "fingerprint per line; a TSV with an id and a hash column is --format hash)"
                    )
                self.bad(self._error(lineno, message))
                continue
            lines.append(lineno)
            hashes.append(value)
            raw.append(part)
        return Chunk(lines, list(lines), hashes=np.array(hashes, dtype=np.uint64), raw=raw)


def _parse_u64(field: bytes) -> Optional[int]:
    """The value of an ASCII decimal u64 (surrounding spaces allowed), or None."""
    field = field.strip()
    # 2**64-1 has 20 digits: a longer field is no u64 (and int() of a
    # million digits is refused by Python, or slow).
    if not field.isdigit() or len(field.lstrip(b"0")) > 20:
        return None
    value = int(field)
    return value if value <= U64_MAX else None


def _show(part: bytes, limit: int = 40) -> str:
    """A bad field or line, quoted and cut short, for a message."""
    text = part.decode("utf-8", "replace")
    if len(text) > limit:
        text = text[:limit] + "..."
    return json.dumps(text, ensure_ascii=False)
