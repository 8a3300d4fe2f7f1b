"""Verified near-duplicates of a corpus larger than memory, in two passes.

1. Each text's candidate fingerprint is made and appended to a spill file
   (8 bytes a text), and a 128-bit key of its bytes to another (16 bytes).
   Texts given again (the same key and fingerprint) are *copies*: each is
   linked to the first of them (``rsimhash._rsimhash.copy_links``, sorted
   on disk) and has no candidates of its own. The batch engine finds every
   pair of first copies' fingerprints within the candidates' ``k``, one
   table at a time, and writes them as ``higher << 32 | lower``, ascending,
   with each text's last later partner. A page copied 10^5 times makes
   10^5 links, not 5 * 10^9 candidates.
2. The texts come again in order; each chunk's candidate pairs are checked
   by the exact similarity of the two shingle sets as the later text
   comes. A set is made only for a text some candidate names and kept only
   until its last partner has come, so memory follows the candidates that
   span the corpus, not the corpus. Each link is confirmed by comparing
   the two sets (similarity 1). The alike pairs fold into the dedup and
   the clusters as they come (``PairSweep``, 5 bytes a text), copies
   following their first copy.

``TwoPass`` holds both passes' state; the jobs of ``rsimhash.batch`` and
the command line drive it with their own readers of the texts.
"""

from __future__ import annotations

import os
from typing import Any, Dict, Optional, Tuple

import numpy as np

from . import _files
from . import _rsimhash as _core
from ._texts import ArrowBuffers

Candidates = Tuple[str, Optional[int], int]


def core_piece(piece: Any) -> Any:
    """A piece of texts as the core reads it (Arrow buffers as ``(offsets, data)``)."""
    return piece.core() if isinstance(piece, ArrowBuffers) else piece


class Settings:
    """Checked settings of verified near-duplicates."""

    def __init__(self, threshold: Any, *, measure: str, shingles: str, width: Optional[int], candidates: Any):
        from .similar import _threshold, candidates_arg, check_shingles, join_is_exact

        check_shingles(shingles)
        self.threshold = _threshold(threshold)
        self.measure, self.shingles, self.width = measure, shingles, width
        chosen = candidates_arg(candidates)
        # "exact" and "auto": the exact join where every set is held in
        # memory, else (and in the two passes) the automatic candidates.
        self.exact = join_is_exact(candidates)
        self.forced = isinstance(candidates, str) and candidates == "exact"
        # Refuses a bad threshold, measure or shingling before any work.
        self.verifier()
        self.candidates: Candidates = chosen if chosen is not None else _core.auto_candidates(self.threshold)
        _core.SimilarCorpus(
            self.threshold, measure=measure, shingles=shingles, width=width, candidates=self.candidates
        )  # and bad candidates

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
        self.files = [
            os.path.join(workdir, f"{name}-{os.getpid()}{ext}")
            for name, ext in (
                ("candidates", ".u64"),
                ("candidate-pairs", ".npy"),
                ("candidate-last", ".npy"),
                ("text-keys", ".u128"),
                ("copy-links", ".npy"),
                ("first-copies", ".npy"),
                ("first-pairs", ".npy"),
                ("first-last", ".npy"),
            )
        ]
        self.fps_path, self.keys_path = self.files[0], self.files[3]
        self._fps = _files.create_fresh(self.fps_path)
        self._keys = _files.create_fresh(self.keys_path)
        self.count = 0
        self.pairs: Any = None
        self.last: Any = None
        self.links: Any = np.empty(0, np.uint64)
        self.first = 0

    def add(self, piece: Any) -> np.ndarray:
        """First pass: the piece's candidate fingerprints, spilled (and
        returned), and its texts' keys."""
        fps = self.settings.fingerprints(piece, self.threads)
        self._fps.write(np.ascontiguousarray(fps, dtype=np.uint64).tobytes())
        self._keys.write(_core.content_keys(core_piece(piece), threads=self.threads).tobytes())
        self.count += len(fps)
        return fps

    def candidates(self, job: Dict[str, Any]) -> int:
        """Every candidate pair, found by the batch engine under ``job``'s
        memory limit and written to the work directory; returns the count."""
        self._fps.close()
        self._keys.close()
        if self.count >= (1 << 32) - 1:
            raise ValueError(f"verified jobs take at most 2^32 - 2 texts, got {self.count:,}")
        kwargs = dict(job, k=self.settings.candidates[2])
        links_path = self.files[4]
        n_links = (
            int(
                _core.copy_links(
                    self.keys_path,
                    self.fps_path,
                    self.count,
                    workdir=self.workdir,
                    memory_limit=int(job["memory_limit"]),
                    out=links_path,
                )
            )
            if self.count
            else 0
        )
        if n_links:
            self.links = np.load(links_path, mmap_mode="r")
            n = self._first_copies_candidates(kwargs)
        else:
            fps = np.memmap(self.fps_path, dtype=np.uint64, mode="r") if self.count else np.empty(0, np.uint64)
            pairs_path, last_path = self.files[1:3]
            n = int(_core.batch_candidates(fps, pairs_out=pairs_path, last_out=last_path, **kwargs))
            del fps
            self.pairs = np.load(pairs_path, mmap_mode="r") if n else np.empty(0, np.uint64)
            self.last = np.load(last_path, mmap_mode="r") if self.count else np.empty(0, np.uint32)
        self.verifier = self.settings.verifier()
        self.sweep = _core.PairSweep(self.count)
        return n

    def _first_copies_candidates(self, kwargs: Dict[str, Any]) -> int:
        """The candidates of first copies only, as positions of all texts:
        the first copies' fingerprints go to the batch engine, and its
        pairs and last partners are mapped back to positions (in order, as
        first copies are); a first copy is held until its last copy."""
        step = 1 << 22
        copies = np.asarray(self.links >> np.uint64(32), dtype=np.uint32)
        is_copy = np.zeros(self.count, dtype=bool)
        is_copy[copies] = True
        positions = np.flatnonzero(~is_copy).astype(np.uint32)
        del is_copy
        fps = np.memmap(self.fps_path, dtype=np.uint64, mode="r")
        first_path = self.files[5]
        first_fps = np.lib.format.open_memmap(first_path, mode="w+", dtype=np.uint64, shape=(len(positions),))
        for lo in range(0, len(positions), step):
            first_fps[lo : lo + step] = fps[positions[lo : lo + step]]
        first_fps.flush()
        del first_fps, fps
        pairs_path, last_path = self.files[6:8]
        n = int(_core.batch_candidates([first_path], pairs_out=pairs_path, last_out=last_path, **kwargs))
        pairs = np.load(pairs_path, mmap_mode="r") if n else np.empty(0, np.uint64)
        out = np.lib.format.open_memmap(self.files[1], mode="w+", dtype=np.uint64, shape=(n,)) if n else pairs
        for lo in range(0, n, step):
            p = np.asarray(pairs[lo : lo + step])
            hi = positions[(p >> np.uint64(32)).astype(np.int64)].astype(np.uint64)
            low = positions[(p & np.uint64(0xFFFFFFFF)).astype(np.int64)].astype(np.uint64)
            out[lo : lo + step] = hi << np.uint64(32) | low
        last_first = np.load(last_path, mmap_mode="r")
        last = np.zeros(self.count, dtype=np.uint32)
        for lo in range(0, len(positions), step):
            ls = np.asarray(last_first[lo : lo + step]).astype(np.int64)
            own = np.arange(lo, lo + len(ls))
            last[positions[lo : lo + step]] = np.where(ls > own, positions[np.minimum(ls, len(positions) - 1)], 0)
        firsts = np.asarray(self.links & np.uint64(0xFFFFFFFF), dtype=np.int64)
        np.maximum.at(last, firsts, copies)
        self.pairs, self.last = (out if n else np.empty(0, np.uint64)), last
        return n

    def verify(self, piece: Any) -> Tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Second pass: the next piece's alike pairs ``(higher, lower,
        similarity)`` and the texts they drop ``(dropped, matched,
        similarity)``, positions over the whole corpus."""
        texts = core_piece(piece)
        n = len(texts[0]) - 1 if isinstance(texts, tuple) else len(texts)
        first, end = self.first, self.first + n
        if end > self.count:
            raise ValueError(f"the texts changed between the passes: the second gave more than the first's {self.count:,}")
        bounds = np.array([first << 32, end << 32], dtype=np.uint64)
        lo, hi = np.searchsorted(self.pairs, bounds)
        pairs = np.ascontiguousarray(self.pairs[lo:hi])
        last = np.ascontiguousarray(self.last[first:end])
        llo, lhi = np.searchsorted(self.links, bounds)
        links = np.ascontiguousarray(self.links[llo:lhi])
        higher, lower, sims = self.verifier.feed(first, texts, pairs, last, links=links, threads=self.threads)
        if len(links):
            # The links are among the alike pairs (similarity 1); the sweep takes them apart.
            own = ~np.isin(higher << np.uint64(32) | lower, links)
            dropped, matched, dsims = self.sweep.feed(higher[own], lower[own], sims[own], links)
        else:
            dropped, matched, dsims = self.sweep.feed(higher, lower, sims)
        self.first = end
        return higher, lower, sims, dropped, matched, dsims

    def check_done(self) -> None:
        """The second pass read as many texts as the first."""
        if self.first != self.count:
            raise ValueError(f"the texts changed between the passes: the first read {self.count:,}, the second {self.first:,}")

    def close(self) -> None:
        for f in (self._fps, self._keys):
            if not f.closed:
                f.close()
        self.pairs = self.last = None
        self.links = np.empty(0, np.uint64)
        for name in self.files:
            try:
                os.remove(name)
            except OSError:
                pass
