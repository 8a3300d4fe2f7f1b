"""``rsimhash find-all``: every pair of fingerprints within K bits, as simhash-find-all prints it.

The input's format goes by its name, as in every other command (``.txt`` and
names it does not know, and stdin, are ``lines``; ``--format`` says
otherwise).

Lines (one decimal u64 fingerprint per line, blank lines skipped): one JSON
array ``[a, b]`` per line for each distinct unordered pair of fingerprint
*values* within K bits, smaller value first, lines sorted by ``a`` then
``b``. A value given more than once also pairs with itself, once: ``[x,
x]``. (The original treats its input as a set of values; so does this,
apart from that self-pair.)

Records (JSON lines, Parquet, a hash TSV), whose ids lead back to them: a
TSV ``id_a<TAB>id_b<TAB>distance`` of every pair of records within K bits,
by input position of ``id_a`` then ``id_b`` (``id_a`` the earlier record).

With ``--jaccard T`` the input is records with text (JSON lines or
Parquet) and the output a TSV ``id_a<TAB>id_b<TAB>jaccard`` (or
``containment``): every pair of records whose shingle sets are at least T
alike among the candidates, by input position of ``id_a`` then ``id_b``
(``id_a`` the earlier record), the similarity to 6 decimals (see
``similar_pairs.py``).

Several input shards (``--input`` repeated, a directory, a glob; see
``shards.py``) are one input, read in their order; ids that are line
numbers are written ``SHARD:LINE``.

Inputs whose in-memory index would not fit ``--memory-limit`` go through
the batch engine instead: the fingerprints are spilled to a ``.npy`` file
in ``--workdir``, their distinct values kept (a batch dedup at distance 0),
and the pairs found one table at a time, within the limit.
"""

from __future__ import annotations

import argparse
from typing import Any, Dict

import numpy as np

from .._records import FORMATS, RecordError, RecordRequestError, guess_format
from . import similar_pairs
from .errors import utf8
from .options import (
    add_distance,
    add_input,
    add_memory,
    add_run,
    add_text,
    bad_lines_part,
    make_index,
    memory_limit,
    open_source,
)
from .outputs import Outputs
from .pipeline import blocks_of, expected_records
from .progress import Progress, count
from .shards import is_sharded, resolve_args
from .spill import Fingerprints, Ids, Workspace, engine_part

# Bytes a fingerprint costs on the in-memory path: the array, np.unique's
# copies and an Index of the distinct values (about 100 bytes an item).
IN_MEMORY_BYTES = 128

DESCRIPTION = """\
Read fingerprints (one decimal u64 per line) and write every pair of values
within K bits as a JSON array [a, b] per line, as simhash-find-all does;
a value given twice also pairs with itself: [x, x]. Records (JSON lines,
Parquet, a hash TSV: the format goes by the file name) give a TSV
'id_a<TAB>id_b<TAB>distance' of the pairs of records instead.

example:
  rsimhash find-all --input hashes.txt --distance 3 --blocks 6 --output pairs.jsonl
  rsimhash find-all --input corpus.jsonl --distance 3 --output pairs.tsv
  rsimhash find-all --input corpus.jsonl --jaccard 0.9 --output pairs.tsv
"""


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_input(p, what="fingerprints (one per line) or records", stdin="lines", shards=True)
    p.add_argument(
        "--output",
        "-o",
        metavar="FILE",
        default="-",
        help="the pairs: one JSON array per line for a lines input, else a TSV of record ids; "
        "- writes stdout. Default: %(default)s",
    )
    add_distance(p, what="fingerprints of a pair")
    add_text(p)
    similar_pairs.add_arguments(p, "pairs of records")
    p.add_argument(
        "--copies",
        choices=("all", "first"),
        default=None,
        help="pairs of records given more than once (copies: the same fingerprint, or with --jaccard "
        "the same text): 'all' lists every pair of them (c copies make c(c-1)/2), 'first' pairs each "
        "copy with the first copy only. Default: all, with a warning when copies make most of a large "
        "output",
    )
    add_memory(p)
    add_run(p)


def _format(args: argparse.Namespace) -> str:
    """The input's format: by its name, as the other commands go; a name
    that says nothing (``.txt``, none) and stdin are fingerprint lines."""
    if args.format != "auto" or is_sharded(args.input):
        return args.format
    if args.input == "-":
        return "lines"
    try:
        return guess_format(args.input, "auto")
    except RecordRequestError:
        return "lines"


def run(args: argparse.Namespace) -> int:
    resolve_args(args, lenient_default="lines")
    if args.jaccard is not None:
        return _run_verified(args)
    make_index(args.distance, args.blocks)  # checks --distance and --blocks before any file is touched
    args.format = _format(args)
    if args.format != "lines":
        return _run_records(args)
    try:
        return _run_lines(args)
    except RecordError as e:
        if "--format" not in e.message:
            e.message += " (read as fingerprint lines; --format names another format: json, hash, parquet)"
        raise


def _run_records(args: argparse.Namespace) -> int:
    """Records: the pairs within K bits as a TSV of their ids and distance."""
    from .. import hamming

    limit = memory_limit(args)
    with (
        open_source(args, formats=FORMATS, values_only=True) as source,
        Outputs() as outs,
        Workspace(args.workdir, args.output) as workspace,
    ):
        out = outs.open(args.output)
        progress = Progress("find-all", source.total, args.quiet)
        cap = limit // IN_MEMORY_BYTES
        store, ids = Fingerprints(cap, workspace), Ids(cap, workspace)
        try:
            for fps, held in blocks_of(source, args.mode, args.width, args.threads):
                store.add(fps, expect=expected_records(source))
                ids.extend_chunk(held)
                progress.update(source.position(), source.records)
            fps = store.finish()
            ids.finish()
            progress.close()
            jobs: Dict[str, Any] = dict(memory_limit=limit, threads=args.threads, progress=False if args.quiet else None)
            if isinstance(fps, str):
                jobs["workdir"] = workspace.path
            found = _pairs_of_records(fps, args, jobs, workspace)
            values: Any = np.load(fps, mmap_mode="r") if isinstance(fps, str) else fps
            out.write(b"id_a\tid_b\tdistance\n")
            step = 1 << 16
            for lo in range(0, len(found), step):
                block = np.asarray(found[lo : lo + step])
                a, b = block[:, 0], block[:, 1]
                dist = hamming(np.asarray(values[a]), np.asarray(values[b]))
                out.write(ids.rows([("id", a), ("id", b), ("number", dist)]))
            pairs = len(found)
            del values
        finally:
            store.close()
            ids.close()
        progress.summary(
            "find-all",
            [
                count(source.records, "record") + " read",
                count(pairs, "pair") + f" within {args.distance} bits",
                bad_lines_part(source),
            ]
            + ([engine_part(workspace)] if store.spilled else []),
            source.nbytes,
        )
    return 0


def _pairs_of_records(fps: Any, args: argparse.Namespace, jobs: Dict[str, Any], workspace: Workspace) -> Any:
    """The pairs of records within K bits (``--copies`` as asked): in memory
    when they fit, else written to the work directory by the batch engine
    and read back a block at a time. Copies left unset and making most of
    a large answer get a warning worded for the command."""
    import warnings

    from .. import batch

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", UserWarning)
        try:
            found: Any = batch.find_all(fps, args.distance, blocks=args.blocks, copies=args.copies, **jobs)
        except MemoryError:
            # Counted before any pair was made: too many to hold, so on disk
            # (where a lack of room is an error naming the room needed).
            path = workspace.file("pairs", ".npy")
            work = jobs.get("workdir") or workspace.file("pairs-job")
            try:
                batch.find_all(fps, args.distance, blocks=args.blocks, copies=args.copies, out=path, **{**jobs, "workdir": work})
            except OSError as e:  # no room for them either: the advice in the command's words
                words = str(e).replace("pass another out=", "pass another --workdir")
                raise OSError(words.replace('copies="first"', "--copies first")) from None
            found = np.load(path, mmap_mode="r")
    if any("copies" in str(w.message) for w in caught):
        _copies_warning(len(found), "fingerprint")
    for w in caught:
        if "copies" not in str(w.message):
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    return found


def _run_lines(args: argparse.Namespace) -> int:
    """Fingerprint lines: the pairs of values, as simhash-find-all prints them."""
    limit = memory_limit(args)
    with (
        open_source(args, need_ids=False, formats=FORMATS, values_only=True) as source,
        Outputs() as outs,
        Workspace(args.workdir, args.output) as workspace,
    ):
        out = outs.open(args.output)
        progress = Progress("find-all", source.total, args.quiet)
        store = Fingerprints(limit // IN_MEMORY_BYTES, workspace, as_parts=True)
        try:
            # The core reads and parses ahead on threads of its own.
            for fps in source.values():
                store.add(fps)
                progress.update(source.position(), source.records)
            fps = store.finish(parts=True)
        finally:
            store.close()
        if isinstance(fps, str):
            progress.close()
            pairs, distinct = _pairs_batch(fps, args, limit, workspace)
        else:
            from .. import _rsimhash, batch

            # Each value once (a value given 10^5 times is one item, not
            # 10^10 pairs), and those given more than once: a radix sort of
            # the parts in the core, without the GIL.
            values, twice = _rsimhash.distinct_values(fps, threads=args.threads)
            del fps
            distinct = len(values)
            # The batch kernel on the array in memory (an Index's tables,
            # built for queries and additions, cost twice as much here).
            # Pairs are positions in the sorted distinct values, so each row
            # is (smaller, larger) and rows are sorted.
            found = batch.find_all(
                values, args.distance, blocks=args.blocks, threads=args.threads, memory_limit=limit, progress=False
            )
            assert isinstance(found, np.ndarray)  # no out=: the pairs themselves
            pairs = values[found] if len(found) else np.empty((0, 2), dtype=np.uint64)
            pairs = _with_self_pairs(pairs, twice)
        from .. import _rsimhash

        step = 1 << 16
        for lo in range(0, len(pairs), step):
            block = pairs[lo : lo + step]
            columns = [("number", np.ascontiguousarray(block[:, c])) for c in (0, 1)]
            lines = _rsimhash.text_rows([], [], columns, begin="[", sep=", ", end="]\n")
            assert isinstance(lines, bytes)  # numbers alone: always UTF-8
            out.write(lines)
        progress.summary(
            "find-all",
            [
                count(source.records, "fingerprint") + f" read ({distinct:,} distinct)",
                count(len(pairs), "pair") + f" within {args.distance} bits",
                bad_lines_part(source),
            ]
            + ([engine_part(workspace)] if store.spilled else []),
            source.nbytes,
        )
    return 0


def _with_self_pairs(pairs: np.ndarray, twice: np.ndarray) -> np.ndarray:
    """``pairs`` (sorted) and ``[x, x]`` for each value given more than once, sorted."""
    if not len(twice):
        return pairs
    pairs = np.concatenate([pairs, np.stack([twice, twice], axis=1)])
    return pairs[np.lexsort((pairs[:, 1], pairs[:, 0]))]


def _pairs_batch(path: str, args: argparse.Namespace, limit: int, workspace: Workspace) -> "tuple[np.ndarray, int]":
    """The pairs of values of the spilled fingerprints at ``path``, by the
    batch engine: the distinct values are the items a dedup at distance 0
    keeps, and the values it drops are those given more than once."""
    from .. import batch

    jobs: Dict[str, Any] = dict(
        memory_limit=limit, workdir=workspace.path, threads=args.threads, progress=False if args.quiet else None
    )
    keep = batch.dedup(path, 0, **jobs)
    fps = np.load(path, mmap_mode="r")
    distinct_path = workspace.file("distinct", ".npy")
    distinct = np.lib.format.open_memmap(distinct_path, mode="w+", dtype=np.uint64, shape=(int(keep.sum()),))
    at, dropped = 0, []
    for lo in range(0, len(fps), 1 << 22):
        block, kept = np.asarray(fps[lo : lo + (1 << 22)]), keep[lo : lo + (1 << 22)]
        distinct[at : at + int(kept.sum())] = block[kept]
        at += int(kept.sum())
        dropped.append(np.unique(block[~kept]))
    distinct.flush()
    twice = np.unique(np.concatenate(dropped)) if dropped else np.empty(0, np.uint64)
    del fps
    found: Any = batch.find_all(distinct_path, args.distance, blocks=args.blocks, **jobs)
    values = np.sort(np.asarray(distinct)[found], axis=1) if len(found) else np.empty((0, 2), np.uint64)
    n = len(distinct)
    del distinct
    values = values[np.lexsort((values[:, 1], values[:, 0]))]
    return _with_self_pairs(values, twice), n


def _run_verified(args: argparse.Namespace) -> int:
    """``--jaccard``: the verified pairs of records, as a TSV."""
    opts = similar_pairs.settings(args)
    limit = memory_limit(args)
    with Workspace(args.workdir, args.output) as workspace, Outputs() as outs:
        path = similar_pairs.input_path(args, workspace)
        with open_source(args, path=path, shingling=None) as source:
            similar_pairs.check_format(source)
            out = outs.open(args.output)
            with similar_pairs.gathered(args, opts, source, path, limit, workspace, "find-all", limit // 256) as (
                records,
                ids,
                progress,
            ):
                lower, higher, sims = _verified_pairs(records, args)
                out.write(f"id_a\tid_b\t{similar_pairs.similarity_column(args)}\n".encode("ascii"))
                step = 1 << 16
                for lo in range(0, len(lower), step):
                    a, b = ids.text(lower[lo : lo + step].tolist()), ids.text(higher[lo : lo + step].tolist())
                    s = similar_pairs.fmt(sims[lo : lo + step])
                    out.write(utf8("".join(f"{x}\t{y}\t{z}\n" for x, y, z in zip(a, b, s))))
            progress.summary(
                "find-all",
                [
                    count(source.records, "record") + " read",
                    count(len(lower), "pair") + f" at least {args.jaccard:g} alike ({args.measure})",
                    records.join_part(),
                    bad_lines_part(source),
                ]
                + ([engine_part(workspace)] if records.two is not None else []),
                source.nbytes,
            )
    return 0


def _verified_pairs(gathered: "similar_pairs.Gathered", args: argparse.Namespace) -> "tuple[np.ndarray, np.ndarray, np.ndarray]":
    """``(lower, higher, similarity)`` positions of the verified pairs, sorted."""
    copies = args.copies or "all"
    if gathered.corpus is not None:
        corpus = gathered.corpus
        pairs, sims = similar_pairs.with_bars(
            args, "find-all", lambda bars: corpus.pairs(threads=args.threads, progress=bars, copies=copies)
        )
        _warn_copies(args, pairs, copies)
        return pairs[:, 0], pairs[:, 1], sims
    assert gathered.two is not None
    found = [(h, lo, s) for _, h, lo, s, *_ in gathered.two.again() if len(h)]
    hi = np.concatenate([f[0] for f in found]) if found else np.empty(0, np.uint64)
    lo = np.concatenate([f[1] for f in found]) if found else np.empty(0, np.uint64)
    sims = np.concatenate([f[2] for f in found]) if found else np.empty(0, np.float32)
    from .. import _rsimhash

    pairs, sims = _rsimhash.expand_copies(lo, hi, sims, np.ascontiguousarray(gathered.two.two.links), copies=copies)
    _warn_copies(args, pairs, copies)
    return pairs[:, 0], pairs[:, 1], sims


# Pairs of copies past which --copies left unset gets a warning: as Python's.
COPIES_WARNING = 1 << 26


def _warn_copies(args: argparse.Namespace, pairs: np.ndarray, copies: str) -> None:
    """A warning when pairs of copies, not asked for, make most of a large output."""
    if args.copies is not None or copies != "all" or len(pairs) < COPIES_WARNING:
        return
    _copies_warning(len(pairs), "record")


def _copies_warning(pairs: int, of: str) -> None:
    """The warning that pairs of copies of the same ``of`` make most of the output."""
    import sys

    print(
        f"rsimhash find-all: warning: {pairs:,} pairs to write, most of them between copies of the same "
        f"{of}; --copies first pairs each copy with its first copy only (--copies all silences this)",
        file=sys.stderr,
    )
