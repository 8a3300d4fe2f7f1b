"""``--jaccard T`` of ``dedup``, ``cluster`` and ``find-all``: near-duplicates
confirmed by the exact similarity of shingle sets (see ``rsimhash.similar``).

The sets are of SPEC v1 shingles of ``--mode``/``--width`` (words of 3 by
default); ``--measure`` is ``jaccard`` or ``containment``; ``--candidates``
is ``exact`` (the exact set-similarity join of every record's set, in
memory: every pair), ``MODE,WIDTH,K`` (simhash candidates, as ``rsimhash
tune`` recommends) or ``auto``: exact when the sets fit ``--memory-limit``,
else the fingerprints and k that found 97 % of the pairs at the threshold
on a real-text corpus.

In memory, one pass: ``find-all`` and ``cluster`` gather every record's
fingerprint and set (about 8 bytes a distinct shingle, 1.5 times the text
or so), ``dedup`` only the kept records' sets. When that would not fit
``--memory-limit``, two passes (``rsimhash._similar_passes``): candidate
fingerprints to a spill file and candidate pairs by the batch engine, then
the records again, each candidate checked when its later record comes.
Both give the same output.
"""

from __future__ import annotations

import argparse
import math
from contextlib import contextmanager
from itertools import chain
from typing import Any, Iterator, List, Optional, Tuple

import numpy as np

from .._records import Chunk, Source
from .errors import UsageError
from .options import open_source
from .pipeline import prefetch
from .progress import Progress
from .spill import Ids, Workspace, copy_stdin

# Bytes of memory per byte of (uncompressed) text that the in-memory path
# of find-all and cluster holds: sets of 8-byte hashes, about one a word.
SET_BYTES_PER_TEXT_BYTE = 2


def threshold(text: str) -> float:
    """``--jaccard T``: a number in (0, 1]."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number in (0, 1], got {text!r}") from None
    if not (math.isfinite(value) and 0 < value <= 1):
        raise argparse.ArgumentTypeError(f"must be in (0, 1] (more than 0, at most 1), got {text}")
    return value


def candidates(text: str) -> Any:
    if text in ("auto", "exact"):
        return text
    parts = text.split(",")
    if len(parts) != 3 or parts[0] not in ("words", "chars"):
        raise argparse.ArgumentTypeError(f"expected auto, exact or MODE,WIDTH,K such as words,1,7, got {text!r}")
    try:
        width, k = int(parts[1]), int(parts[2])
    except ValueError:
        raise argparse.ArgumentTypeError(f"WIDTH and K must be whole numbers, got {text!r}") from None
    from .options import MAX_K, MAX_WIDTH

    if not (1 <= width <= MAX_WIDTH and 0 <= k <= MAX_K):
        raise argparse.ArgumentTypeError(
            f"WIDTH must be from 1 to {MAX_WIDTH:,} and K (the candidates' k) from 0 to {MAX_K}, got {text!r}"
        )
    return parts[0], width, k


def add_arguments(p: argparse.ArgumentParser, what: str) -> None:
    g = p.add_argument_group("verified near-duplicates (records with text only)")
    g.add_argument(
        "--jaccard",
        type=threshold,
        metavar="T",
        default=None,
        help=f"{what} by the exact similarity of shingle sets (of --mode/--width, words of 3 by "
        "default) at least T, checked for each candidate pair of fingerprints; --distance "
        "does not apply",
    )
    g.add_argument(
        "--measure",
        choices=("jaccard", "containment"),
        default="jaccard",
        help="with --jaccard: jaccard (shingles in both over shingles in either: |A and B| / |A or B|), "
        "or containment (|A and B| / min(|A|, |B|)). Default: %(default)s",
    )
    g.add_argument(
        "--candidates",
        type=candidates,
        metavar="auto|exact|MODE,WIDTH,K",
        default="auto",
        help="with --jaccard: exact (every pair at least T alike, by the exact set-similarity join of "
        "every record's set, held in memory), or the candidate pairs, fingerprints of MODE and WIDTH "
        "within K bits (as 'rsimhash tune' recommends); auto takes exact when the sets fit "
        "--memory-limit, else the candidates it picks for T, and the summary line says which. "
        "Default: %(default)s",
    )


def settings(args: argparse.Namespace) -> Any:
    """The checked settings of ``--jaccard``, or a ``UsageError``."""
    from .._similar_passes import Settings

    if args.distance != 3 or getattr(args, "blocks", None) is not None:
        raise UsageError(
            "--distance and --blocks are for fingerprints within K bits; with --jaccard, give --candidates MODE,WIDTH,K"
        )
    try:
        return Settings(args.jaccard, measure=args.measure, shingles=args.mode, width=args.width, candidates=args.candidates)
    except (ValueError, TypeError) as e:
        given = args.candidates if isinstance(args.candidates, str) else ",".join(map(str, args.candidates))
        raise UsageError(f"--candidates {given}: {e}") from None


def check_format(source: Source) -> None:
    if source.format not in ("json", "parquet"):
        raise UsageError(f"--jaccard compares texts: the input must be records with text (json or parquet), not {source.format}")


def text_bytes(source: Source) -> int:
    """The input's text bytes, estimated from what the first chunk held."""
    read = source.position()
    if not source.total or not read:
        return source.nbytes
    return int(source.total * max(1.0, source.nbytes / read))


def pieces(chunk: Chunk) -> Any:
    """A chunk's texts as the core takes them."""
    from .. import _texts
    from .._similar_passes import core_piece

    return [core_piece(p) for p in _texts.pieces(chunk.texts)]


class SecondPass:
    """Both passes of the two-pass path: ``first`` takes the records as
    they are read, ``again`` reads the input again, verifies each chunk's
    candidates and yields ``(chunk, higher, lower, similarity, dropped,
    matched, dropped_similarity)``."""

    def __init__(self, args: argparse.Namespace, opts: Any, workspace: Workspace, path: str, limit: int, full_rows: bool):
        from .._similar_passes import TwoPass

        self.args, self.workspace, self.path, self.limit, self.full_rows = args, workspace, path, limit, full_rows
        self.two = TwoPass(opts, workspace.path, threads=args.threads)
        self.source: Optional[Source] = None  # the second reading, while ``again`` runs

    def first(self, chunk: Chunk) -> None:
        for piece in pieces(chunk):
            self.two.add(piece)

    def again(self) -> Iterator[Tuple[Chunk, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]]:
        with_bars(
            self.args,
            "candidates",
            lambda bars: self.two.candidates(
                dict(memory_limit=self.limit, workdir=self.workspace.path, threads=self.args.threads, progress=bars)
            ),
        )
        with open_source(
            self.args,
            need_ids=False,
            full_rows=self.full_rows,
            path=self.path,
            shingling=None,
            limit=getattr(self.args, "sample", None),
            quiet_bad_lines=True,
        ) as again:
            self.source = again
            for chunk in prefetch(again.chunks()):
                answers = [self.two.verify(p) for p in pieces(chunk)]
                yield (chunk,) + tuple(_concat([a[i] for a in answers]) for i in range(6))  # type: ignore[misc]
        self.two.check_done()

    def close(self) -> None:
        self.two.close()


def _concat(parts: List[np.ndarray]) -> np.ndarray:
    return parts[0] if len(parts) == 1 else np.concatenate(parts)


def input_path(args: argparse.Namespace, workspace: Workspace) -> str:
    """The input as a job reads it: stdin is copied into the workspace when
    a memory limit or work directory is given (it may be read twice)."""
    if args.input == "-" and (args.memory_limit is not None or args.workdir is not None):
        return copy_stdin(workspace)
    return args.input  # a path, or Shards (see shards.py)


def similarity_column(args: argparse.Namespace) -> str:
    return "jaccard" if args.measure == "jaccard" else "containment"


def fmt(values: np.ndarray) -> List[str]:
    """Similarities as the outputs write them: 6 decimals, trailing zeros cut."""
    return [f"{v:.6f}".rstrip("0").rstrip(".") if v != 1 else "1" for v in values.tolist()]


def with_bars(args: argparse.Namespace, desc: str, job: Any) -> Any:
    """``job(bars)`` with a progress bar of the core's (none with --quiet)."""
    from .._progress import Bars

    bars = Bars(False if args.quiet else None, desc)
    try:
        return job(bars)
    finally:
        bars.close()


def join_part(exact: bool, opts: Any) -> str:
    """The summary line's word on where the pairs came from."""
    if exact:
        return "exact join"
    mode, width, k = opts.candidates
    return f"simhash candidates ({mode} width {width} within {k} bits)"


def core_settings(opts: Any) -> dict:
    """Keyword arguments of the core's verified classes."""
    return dict(measure=opts.measure, shingles=opts.shingles, width=opts.width, candidates=opts.candidates)


class Gathered:
    """The records of ``find-all`` or ``cluster`` gathered for their
    verified pairs: in a ``SimilarCorpus`` when their sets fit the memory
    limit, else in the first pass of a ``SecondPass``."""

    def __init__(
        self,
        args: argparse.Namespace,
        opts: Any,
        source: Source,
        first: Optional[Chunk],
        path: str,
        limit: int,
        workspace: Workspace,
    ):
        from .. import _rsimhash

        self.opts = opts
        fits = path == "-" or first is None or text_bytes(source) * SET_BYTES_PER_TEXT_BYTE <= limit
        # --candidates exact holds every set whatever the limit; auto takes
        # the exact join when they fit, the candidates' two passes when not.
        fits = fits or opts.forced
        self.exact = fits and opts.exact
        self.corpus = _rsimhash.SimilarCorpus(opts.threshold, **core_settings(opts), exact=self.exact) if fits else None
        self.two = None if fits else SecondPass(args, opts, workspace, path, limit, full_rows=False)

    def add(self, chunk: Chunk, threads: Optional[int]) -> None:
        if self.corpus is not None:
            for piece in pieces(chunk):
                self.corpus.add(piece, threads=threads)
        else:
            assert self.two is not None
            self.two.first(chunk)

    def join_part(self) -> str:
        return join_part(self.exact, self.opts)

    def close(self) -> None:
        if self.two is not None:
            self.two.close()


@contextmanager
def gathered(
    args: argparse.Namespace, opts: Any, source: Source, path: str, limit: int, workspace: Workspace, desc: str, id_cap: int
) -> Iterator[Tuple[Gathered, Ids, Progress]]:
    """Every record of ``source`` gathered for ``find-all`` or ``cluster``
    (``Gathered``) with its id, read with a progress bar; the files they
    hold are removed on the way out."""
    progress = Progress(desc, source.total, args.quiet)
    chunks = prefetch(source.chunks())
    first = next(chunks, None)
    records = Gathered(args, opts, source, first, path, limit, workspace)
    ids = Ids(id_cap, workspace)
    try:
        for chunk in chain([first], chunks) if first is not None else chunks:
            records.add(chunk, args.threads)
            ids.extend_chunk(chunk)
            progress.update(source.position(), source.records)
        progress.close()
        ids.finish()
        yield records, ids, progress
    finally:
        records.close()
        ids.close()
