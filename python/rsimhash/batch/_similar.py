"""Verified near-duplicates of a corpus larger than memory, in two passes.

1. Each text's candidate fingerprint is made and appended to a spill file
   (8 bytes a text); the batch engine finds every pair of fingerprints
   within the candidates' ``k``, one table at a time, and writes them as
   ``higher << 32 | lower``, ascending, with each text's last later partner.
2. The texts come again in order; each chunk's candidate pairs are checked
   by the exact similarity of the two shingle sets as the later text
   comes. A set is made only for a text some candidate names and kept only
   until its last partner has come, so memory follows the candidates that
   span the corpus, not the corpus. The alike pairs fold into the dedup
   and the clusters as they come (``PairSweep``, 5 bytes a text).

``TwoPass`` holds both passes' state; the jobs of ``rsimhash.batch`` and
the command line drive it with their own readers of the texts.
"""

from __future__ import annotations

import os
from typing import Any, Dict, Optional, Tuple

import numpy as np

from .. import _files, _rsimhash as _core
from .._texts import ArrowBuffers

Candidates = Tuple[str, Optional[int], int]


def core_piece(piece: Any) -> Any:
    """A piece of texts as the core reads it (Arrow buffers as ``(offsets, data)``)."""
    return piece.core() if isinstance(piece, ArrowBuffers) else piece


class Settings:
    """Checked settings of verified near-duplicates."""

    def __init__(self, threshold: Any, *, measure: str, shingles: str, width: Optional[int], candidates: Any):
        from ..similar import _threshold, candidates_arg

        self.threshold = _threshold(threshold)
        self.measure, self.shingles, self.width = measure, shingles, width
        chosen = candidates_arg(candidates)
        # Refuses a bad threshold, measure or shingling before any work.
        self.verifier()
        self.candidates: Candidates = chosen if chosen is not None else _core.auto_candidates(self.threshold)
        _core.SimilarCorpus(self.threshold, measure=measure, shingles=shingles, width=width,
                            candidates=self.candidates)  # and bad candidates

    def verifier(self) -> Any:
        return _core.StreamVerifier(self.threshold, measure=self.measure, shingles=self.shingles, width=self.width)

    def fingerprints(self, piece: Any, threads: Optional[int]) -> np.ndarray:
        """The candidate fingerprints of a piece of texts."""
        mode, width, _ = self.candidates
        texts = core_piece(piece)
        if isinstance(texts, tuple):  # Arrow buffers (offsets, data)
            return _core.fingerprints_arrow(*texts, mode=mode, width=width, threads=threads)
        return _core.fingerprints(texts, mode=mode, width=width, threads=threads)


class TwoPass:
    """The state of a verified job over texts read twice, in the same order.

    ``add`` takes the first pass's pieces, ``candidates`` runs the batch
    engine, ``verify`` takes the second pass's pieces and returns each
    one's alike pairs and the texts they drop.
    """

    def __init__(self, settings: Settings, workdir: str, *, threads: Optional[int] = None):
        self.settings = settings
        self.workdir = workdir
        self.threads = threads
        self.files = [os.path.join(workdir, f"{name}-{os.getpid()}{ext}") for name, ext in
                      (("candidates", ".u64"), ("candidate-pairs", ".npy"), ("candidate-last", ".npy"))]
        self.fps_path = self.files[0]
        self._fps = _files.create_fresh(self.fps_path)
        self.count = 0
        self.pairs: Any = None
        self.last: Any = None
        self.first = 0

    def add(self, piece: Any) -> np.ndarray:
        """First pass: the piece's candidate fingerprints, spilled (and returned)."""
        fps = self.settings.fingerprints(piece, self.threads)
        self._fps.write(np.ascontiguousarray(fps, dtype=np.uint64).tobytes())
        self.count += len(fps)
        return fps

    def candidates(self, job: Dict[str, Any]) -> int:
        """Every candidate pair, found by the batch engine under ``job``'s
        memory limit and written to the work directory; returns the count."""
        self._fps.close()
        if self.count >= (1 << 32) - 1:
            raise ValueError(f"verified jobs take at most 2^32 - 2 texts, got {self.count:,}")
        fps = np.memmap(self.fps_path, dtype=np.uint64, mode="r") if self.count else np.empty(0, np.uint64)
        pairs_path, last_path = self.files[1:]
        kwargs = dict(job, k=self.settings.candidates[2])
        n = int(_core.batch_candidates(fps, pairs_out=pairs_path, last_out=last_path, **kwargs))
        del fps
        self.pairs = np.load(pairs_path, mmap_mode="r") if n else np.empty(0, np.uint64)
        self.last = np.load(last_path, mmap_mode="r") if self.count else np.empty(0, np.uint32)
        self.verifier = self.settings.verifier()
        self.sweep = _core.PairSweep(self.count)
        return n

    def verify(self, piece: Any) -> Tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Second pass: the next piece's alike pairs ``(higher, lower,
        similarity)`` and the texts they drop ``(dropped, matched,
        similarity)``, positions over the whole corpus."""
        texts = core_piece(piece)
        n = len(texts[0]) - 1 if isinstance(texts, tuple) else len(texts)
        first, end = self.first, self.first + n
        if end > self.count:
            raise ValueError(f"the texts changed between the passes: the second gave more than the first's "
                             f"{self.count:,}")
        lo, hi = np.searchsorted(self.pairs, np.array([first << 32, end << 32], dtype=np.uint64))
        pairs = np.ascontiguousarray(self.pairs[lo:hi])
        last = np.ascontiguousarray(self.last[first:end])
        higher, lower, sims = self.verifier.feed(first, texts, pairs, last, threads=self.threads)
        dropped, matched, dsims = self.sweep.feed(higher, lower, sims)
        self.first = end
        return higher, lower, sims, dropped, matched, dsims

    def check_done(self) -> None:
        """The second pass read as many texts as the first."""
        if self.first != self.count:
            raise ValueError(f"the texts changed between the passes: the first read {self.count:,}, "
                             f"the second {self.first:,}")

    def close(self) -> None:
        if not self._fps.closed:
            self._fps.close()
        self.pairs = self.last = None
        for name in self.files:
            try:
                os.remove(name)
            except OSError:
                pass
