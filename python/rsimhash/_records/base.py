"""``Reading``: what every format's half of ``Source`` shares.

``Source`` is one class mixed from a class a format (``json_lines``,
``fingerprints``, ``parquet``) and the reference reader's blocks
(``blocks``); each of them derives from this one, which declares the
settings and counters ``Source`` sets and words a line's error.
"""

from __future__ import annotations

from typing import Any, List, Optional, Union

from .chunk import Chunk
from .errors import RecordError


class Reading:
    """The state of one input's reading (set by ``Source.__init__``)."""

    path: str
    format: str
    text_column: str
    id_column: str
    id_given: bool
    need_ids: bool
    full_rows: bool
    chunk_bytes: int
    max_record_bytes: int
    shingling: Any  # (mode, width) the core fingerprints JSON lines' texts with, or None
    # Called with each bad line's RecordError: raises it, or reports and counts it
    # (the command line's BadLines, whose count its summary shows).
    bad: Any
    records: int
    nbytes: int
    line_ids: bool
    total: Optional[int]
    header: Optional[bytes]

    def _error(self, line: Union[int, str, None], message: str) -> RecordError:
        return RecordError(self.path, line, message)

    def _too_long(self, lineno: int) -> RecordError:
        limit = self.max_record_bytes
        size = f"{limit / (1 << 20):g} MiB" if limit >= 1 << 20 else f"{limit:,} bytes"
        return self._error(
            lineno, f"is longer than {size}, the most a record may take (raise it with --max-record-mb, or max_record_mb=)"
        )

    # The reference reader's parsers of a block's lines, one a format.
    def _parse_json(self, parts: List[bytes], lineno: int) -> Chunk:
        raise NotImplementedError

    def _parse_hash(self, parts: List[bytes], lineno: int) -> Chunk:
        raise NotImplementedError

    def _parse_lines(self, parts: List[bytes], lineno: int) -> Chunk:
        raise NotImplementedError
