"""JSON lines: one JSON object per line with a text field and an id field.

The core (``_rsimhash.JsonLines``) reads, parses and fingerprints the lines
on threads of its own; the few lines it flags (no id field, a line over the
record limit, an invalid line, a rare form such as a lone surrogate) come
here: ``json.loads`` reads them again and words each bad line's error. The
reference reader (``engine="python"``, and standard input where the core
cannot take a descriptor) reads every line through ``json.loads``.
"""

from __future__ import annotations

import json
from typing import Any, Dict, List, Optional, Tuple

import numpy as np

from .base import Reading
from .chunk import Chunk, Id

_MISSING = object()


def json_type(value: Any) -> str:
    """The JSON name of a parsed value's type, for messages."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return f"a number ({value!r})"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    return "an object"


def _check_id(value: Any, column: str) -> Optional[str]:
    """None if ``value`` is a usable id, else what is wrong with it."""
    kind = type(value)
    if kind is int:
        return None
    if kind is str:
        if "\t" in value or "\n" in value or "\r" in value:
            return f'"{column}" holds a tab or a line break, which a TSV output cannot hold'
        return None
    return f'"{column}" must be an integer or a string, got {json_type(value)}'


class JsonRecords(Reading):
    """The JSON-lines half of ``Source``."""

    def _from_core_json(self, rc: Any) -> Chunk:
        """A chunk of the core's records, its rare lines read by the reference reader."""
        status = rc.status()
        lines = rc.lines()
        fps = rc.fingerprints()
        keep = status == 0
        extra: Dict[int, str] = {}
        extra_ids: Dict[int, Id] = {}
        special = np.flatnonzero(status != 0).tolist()
        if special:
            first_record = int(np.argmax(keep)) if keep.any() else len(status)
            seen_record = self.records > 0
            for i in special:
                first = not seen_record and i < first_record
                lineno = int(lines[i])
                if status[i] == 3:  # longer than the record limit: not read
                    self.bad(self._too_long(lineno))
                    continue
                if status[i] == 1 and (self.line_ids or (first and not self.id_given)):
                    self.line_ids = True  # no id field in the first record: ids are line numbers
                    keep[i] = True
                else:
                    found = self._json_record(rc.line(i), lineno, first)
                    if found is None:
                        continue
                    keep[i] = True
                    if status[i] == 2:  # a line the core left to json.loads: its text comes from there
                        extra[i] = found[0]
                        if fps is not None and self.shingling is not None:
                            from .. import fingerprints

                            mode, width = self.shingling
                            fps[i] = fingerprints([found[0]], mode=mode, width=width)[0]
                    extra_ids[i] = found[1]
                seen_record = True
        entries = np.flatnonzero(keep)
        ids: Optional[List[Id]] = None
        id_source = None
        if self.need_ids and not self.line_ids and not extra_ids:
            # Every record's id is the core's (the reference reader read none of them): kept
            # there until asked for, packed or as a list.
            id_source = rc
        elif self.need_ids and not self.line_ids:
            all_ids = rc.ids()
            for i, rid in extra_ids.items():
                all_ids[i] = rid
            ids = [all_ids[i] for i in entries.tolist()] if len(entries) < len(all_ids) else all_ids
        return Chunk(
            lines[entries],
            ids,
            hashes=None if fps is None else fps[entries],
            shingling=self.shingling if fps is not None else None,
            nbytes=rc.nbytes,
            core=rc,
            entries=entries,
            extra_texts=extra,
            id_source=id_source,
        )

    def _parse_json(self, parts: List[bytes], lineno: int) -> Chunk:
        """The reference reader: each line through ``json.loads``."""
        lines: List[int] = []
        ids: List[Id] = []
        texts: List[str] = []
        raw: List[bytes] = []
        for part in parts:
            lineno += 1
            if not part or part.isspace():
                continue
            found = self._json_record(part, lineno, self.records == 0 and not lines)
            if found is None:
                continue
            lines.append(lineno)
            texts.append(found[0])
            ids.append(found[1])
            raw.append(part)
        return Chunk(lines, ids, texts=texts, raw=raw)

    def _json_record(self, part: bytes, lineno: int, first: bool) -> Optional[Tuple[str, Id]]:
        """The text and id of one non-blank line (``first``: no record came
        before it), or None when it is bad (reported to ``self.bad``)."""
        try:
            record = json.loads(part)
        except UnicodeDecodeError as e:
            self.bad(self._error(lineno, f"is not valid UTF-8 (byte {e.start + 1} of the line)"))
            return None
        except ValueError as e:
            # json's messages end where it would name the place ("... starting at").
            detail = (
                f"{e.msg}{'' if e.msg.endswith(' at') else ' at'} column {e.colno}"
                if isinstance(e, json.JSONDecodeError)
                else str(e)
            )
            self.bad(self._error(lineno, f"is not valid JSON ({detail})"))
            return None
        if type(record) is not dict:
            self.bad(self._error(lineno, f"expected a JSON object, got {json_type(record)}"))
            return None
        text_column, id_column = self.text_column, self.id_column
        text = record.get(text_column, _MISSING)
        if type(text) is not str:
            if text is _MISSING:
                self.bad(self._error(lineno, f'has no "{text_column}" field (the text field is set with --text-column)'))
            else:
                self.bad(self._error(lineno, f'"{text_column}" must be a string, got {json_type(text)}'))
            return None
        if not self.need_ids or self.line_ids:
            return text, lineno
        rid = record.get(id_column, _MISSING)
        if rid is _MISSING and not self.id_given and first:
            self.line_ids = True  # no id field in the first record: ids are line numbers
            return text, lineno
        if rid is _MISSING:
            self.bad(self._error(lineno, f'has no "{id_column}" field (the id field is set with --id-column)'))
            return None
        problem = _check_id(rid, id_column)
        if problem is not None:
            self.bad(self._error(lineno, problem))
            return None
        return text, rid
