"""``Chunk``: consecutive records of one input, as every format's reader yields them.

A chunk holds the records' 1-based line (or row) numbers and, as its format
gives them, ids, texts, fingerprints and the lines as read, so that a
command can write records back byte for byte. A chunk of the core's reader
keeps the core's block of lines and decodes texts only when asked for.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple, Union

import numpy as np

Id = Union[int, str]


class Chunk:
    """Consecutive records of one input, in input order.

    A chunk of the core's JSON-lines reader (``core``) keeps its block of
    lines there: ``entries`` are the records' indices into it, the texts
    are decoded only when asked for (``texts``), and kept lines are written
    from the block (``write_lines``)."""

    def __init__(
        self,
        lines: Any,
        ids: Optional[List[Id]] = None,
        *,
        texts: Any = None,
        hashes: Optional[np.ndarray] = None,
        raw: Optional[List[bytes]] = None,
        final_newline: bool = True,
        nbytes: int = 0,
        batch: Any = None,
        rows: Optional[np.ndarray] = None,
        core: Any = None,
        entries: Optional[np.ndarray] = None,
        shingling: Any = None,
        extra_texts: Optional[Dict[int, str]] = None,
        id_source: Any = None,
    ):
        self.lines = lines  # 1-based line (or row) number of each record
        self._ids = ids  # each record's id as written; None: the line numbers (or id_source's)
        self._id_source = id_source  # a core chunk whose entries' ids these are, read when asked
        self._texts = texts  # list of str, pyarrow string array or ArrowBuffers
        self.hashes = hashes  # uint64 fingerprints: of hash/lines inputs, or the core's
        self.shingling = shingling  # (mode, width) the core's hashes were made with
        self.raw = raw  # each record's line without its b"\n"
        self.final_newline = final_newline  # False when raw[-1] ends the input with no b"\n"
        self.nbytes = nbytes  # (uncompressed) input bytes this chunk covers
        self.batch = batch  # parquet: the RecordBatch the records come from
        self.rows = rows  # parquet: each record's row in ``batch``
        self.core = core  # the core's RecordChunk
        self.entries = entries  # the records' entries in ``core``
        self.extra_texts = extra_texts or {}  # entry -> text, of lines the reference reader read
        self.shard = 0  # the input shard the records come from (see cli/shards.py)

    def __len__(self) -> int:
        return len(self.lines)

    @property
    def ids(self) -> List[Id]:
        if self._ids is None and self._id_source is not None:
            ids = self._id_source.ids()
            # The core chunk's entries may be more than the records (a header, a bad line).
            self._ids = ids if self._every_entry() else [ids[i] for i in np.asarray(self.entries).tolist()]
        if self._ids is None:
            self._ids = self.lines.tolist() if isinstance(self.lines, np.ndarray) else list(self.lines)
        return self._ids

    def line_ids(self) -> Optional[np.ndarray]:
        """The ids as a uint64 array when they are the line (or row)
        numbers: no Python object a record. None otherwise."""
        if self._ids is None and self._id_source is None and isinstance(self.lines, np.ndarray):
            return self.lines.astype(np.uint64)
        return None

    def packed_ids(self) -> Optional[Tuple[np.ndarray, np.ndarray]]:
        """The ids as text, packed (a uint8 array and ``n + 1`` offsets), when the
        core holds them all: no Python object a record. None otherwise (take
        ``ids``)."""
        if self._ids is None and self._id_source is not None:
            entries = None if self._every_entry() else self.entries
            packed: Optional[Tuple[np.ndarray, np.ndarray]] = self._id_source.id_texts(entries)
            return packed
        return None

    def _every_entry(self) -> bool:
        """Whether the records are all the entries of the core chunk ``_id_source``, in order."""
        return self.entries is None or len(self.entries) == len(self._id_source)

    @property
    def has_texts(self) -> bool:
        """Whether the records hold texts: a fingerprint file's (its hashes
        read, not made from texts) do not."""
        from_texts = self.hashes is None or self.shingling is not None
        return self._texts is not None or (self.core is not None and from_texts)

    @property
    def texts(self) -> Any:
        if self._texts is None and self.core is not None:
            self._texts = self._core_texts()
        return self._texts

    def _core_texts(self) -> Any:
        from .._texts import ArrowBuffers

        assert self.entries is not None
        if not self.extra_texts:
            return ArrowBuffers(*self.core.texts(self.entries))
        # Some texts came from json.loads (and may hold lone surrogates): a list.
        entries = self.entries.tolist()
        parsed = [e for e in entries if e not in self.extra_texts]
        decoded = iter(ArrowBuffers(*self.core.texts(np.array(parsed, dtype=np.int64))).to_pylist())
        return [self.extra_texts[e] if e in self.extra_texts else next(decoded) for e in entries]

    def write_lines(self, keep: np.ndarray) -> bytes:
        """The lines of the records where ``keep`` (a bool mask) is set, as
        read, each with its line end (but the input's last line if it had none)."""
        if self.core is not None:
            assert self.entries is not None
            return bytes(self.core.write(self.entries[keep]))
        raw = self.raw
        assert raw is not None
        lines = raw if keep.all() else [raw[j] for j in np.flatnonzero(keep).tolist()]
        if not lines:
            return b""
        end = b"\n" if self.final_newline or not keep[-1] else b""
        return b"\n".join(lines) + end

    def record_bytes(self) -> int:
        """Bytes of the records' lines, line ends included."""
        if self.core is not None:
            return len(self.write_lines(np.ones(len(self), dtype=bool)))
        return sum(len(r) + 1 for r in self.raw or ())

    def head(self, n: int) -> "Chunk":
        """The first ``n`` records."""
        if n >= len(self):
            return self
        cut = Chunk(
            self.lines[:n],
            None if self._ids is None and self._id_source is None else self.ids[:n],
            texts=None if self._texts is None else self._texts[:n],
            hashes=None if self.hashes is None else self.hashes[:n],
            raw=None if self.raw is None else self.raw[:n],
            final_newline=True,
            nbytes=self.nbytes,
            batch=self.batch,
            rows=None if self.rows is None else self.rows[:n],
            core=self.core,
            entries=None if self.entries is None else self.entries[:n],
            shingling=self.shingling,
            extra_texts=self.extra_texts,
        )
        cut.shard = self.shard
        return cut
