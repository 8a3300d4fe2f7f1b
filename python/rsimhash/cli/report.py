"""``rsimhash report`` and ``--report FILE`` of ``dedup``, ``cluster`` and ``find-all``.

A thin layer over ``rsimhash._report``: it reads the run's output (``dedup
--removed``, ``cluster`` or ``find-all``, told apart by their header), gives
the page builder the input records as blocks of this package's readers
(``Source``, with the same ``--input``/``--format``/``--text-column``/
``--id-column`` flags as the run), and writes the page atomically.

``--report FILE`` on a run: the run writes the output the page needs as it
always does (``dedup`` without ``--removed``, or an output to stdout, write
it to a temporary file instead, copied to stdout after the run); at the
end the page is built from it and from a second reading of the input, for
the texts of the few records shown. The run's summary line, time and
command line go on the page. An input read from stdin cannot be read again:
its page shows ids and distances without texts.

Inputs are a list of shards (``_inputs``: the input file, or each shard of
a sharded input, drawn as one bar each in the chart of shares by shard),
each opened afresh for each pass over it.
"""

from __future__ import annotations

import argparse
import functools
import os
import re
import shlex
import shutil
import sys
import tempfile
import time
from typing import Any, Iterator, List, Optional

import numpy as np

from .._records import Chunk
from . import similar_pairs
from .errors import CliError, InputError, UsageError
from .options import add_distance, add_input, add_run, add_text, open_source, positive_int
from .outputs import Outputs
from .pipeline import fingerprints_of, prefetch
from .shards import input_format, is_sharded

DESCRIPTION = """\
Write one self-contained HTML page (no network; open it from disk) from a
run's output and its input records: the run in numbers, charts of the
distances and cluster sizes, the largest clusters, and a sample of pairs
across the distance range side by side with a word-level diff. Give the
run's own flags (--distance, --jaccard, --mode, ...) so the page says what
it did; --log takes its summary line and time from the run's stderr.

examples:
  rsimhash dedup --input corpus.jsonl --output kept.jsonl --removed removed.tsv 2> run.log
  rsimhash report --input corpus.jsonl --removed removed.tsv --log run.log --output report.html
  rsimhash cluster --input corpus.jsonl --output clusters.tsv --report report.html
"""

# The commands that take --report, and the output of each that the page reads.
REPORTED = {"dedup": "removed", "cluster": "output", "find-all": "output"}
KINDS = {"removed": "dedup", "clusters": "cluster", "pairs": "find-all"}


class ReportError(CliError):
    """An output file that is not what the run writes."""


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_input(p, what="the run's input records", shards=True)
    g = p.add_argument_group("the run's output (one of)")
    x = g.add_mutually_exclusive_group(required=True)
    x.add_argument("--removed", metavar="FILE", help="dedup's --removed TSV 'id<TAB>duplicate_of<TAB>distance'")
    x.add_argument("--clusters", metavar="FILE", help="cluster's output TSV 'id<TAB>hash<TAB>cluster'")
    x.add_argument("--pairs", metavar="FILE", help="find-all's output: JSON [a, b] lines or a TSV 'id_a<TAB>id_b<TAB>...'")
    p.add_argument("--output", "-o", metavar="FILE", required=True, help="the HTML page; - writes stdout")
    add_text(p)
    add_distance(p, what="near-duplicates (the run's)")
    similar_pairs.add_arguments(p, "the run was verified")
    p.add_argument(
        "--sample",
        type=positive_int,
        metavar="N",
        default=None,
        help="the run read the first N records only (cluster --sample N)",
    )
    p.add_argument(
        "--show",
        type=positive_int,
        metavar="N",
        default=200,
        help="pairs to show, drawn across the distance range. Default: %(default)s",
    )
    p.add_argument("--seed", type=int, default=0, help="picks the pairs shown. Default: %(default)s")
    p.add_argument(
        "--log", metavar="FILE", default=None, help="the run's stderr: the page shows its summary line and takes the time from it"
    )
    p.add_argument("--title", default=None, help="the page's title")
    add_run(p)


def add_report_option(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--report",
        metavar="FILE",
        default=None,
        help="also write an HTML page of what the run found (see rsimhash report); with it, "
        "an output to stdout comes at the end of the run",
    )


def run(args: argparse.Namespace) -> int:
    from .spill import Workspace, copy_stdin

    kind_flag = next(f for f in KINDS if getattr(args, f) is not None)
    summary = _log_summary(args.log) if args.log is not None else None
    note = "Built by: rsimhash " + " ".join(shlex.quote(a) for a in getattr(args, "argv", []) or ["report"])
    with Workspace(None, args.output) as workspace:
        if args.input == "-":  # read once here, so that the page may read it twice
            args.format = _format(args)
            args.input = copy_stdin(workspace)
        return write(
            args,
            KINDS[kind_flag],
            getattr(args, kind_flag),
            args.output,
            summary=summary,
            seconds=_seconds(summary),
            command=None,
            notes=[note],
        )


def write(
    args: argparse.Namespace,
    kind: str,
    found_path: str,
    page_path: str,
    *,
    summary: Optional[str],
    seconds: Optional[float],
    command: Optional[str],
    notes: List[str],
    reported: bool = False,
) -> int:
    """Builds the page of ``found_path`` (the ``kind`` run's output) over ``args.input``;
    ``reported``: the run has reported the input's bad lines already."""
    from .._report import OutputFormatError, Run, build
    from .._report import found as outputs

    if args.jaccard is not None:
        similar_pairs.settings(args)
    try:
        found = outputs.read(found_path, kind)
    except OutputFormatError as e:
        raise ReportError(str(e)) from None
    run_info = Run(
        k=args.distance if args.jaccard is None else None,
        jaccard=args.jaccard,
        measure=args.measure,
        mode=args.mode,
        width=args.width,
        candidates=args.candidates,
        design=_design(args),
        seconds=seconds,
        command=command,
        summary=summary,
        title=getattr(args, "title", None),
        notes=notes,
    )
    run_info.given_fingerprints = _format(args) in ("hash", "lines")
    # Fingerprints are made as the texts are parsed only when the page needs them
    # all: for distances the outputs do not give, or to find fingerprint values.
    shards = _inputs(args, run_info, found.distance is None or found.values, reported, found.by_shard)
    with Outputs() as outs:
        out = outs.open(page_path)
        page, _ = build(run_info, found, shards, show=getattr(args, "show", 200), seed=getattr(args, "seed", 0))
        out.write(page.encode("utf-8"))
    return 0


def _format(args: argparse.Namespace) -> str:
    return input_format(args)


def _design(args: argparse.Namespace) -> Optional[str]:
    if args.jaccard is not None:
        return None
    from .options import make_index

    return str(make_index(args.distance, getattr(args, "blocks", None)).design)


def _inputs(args: argparse.Namespace, run_info: Any, fingerprints: bool, reported: bool, by_shard: bool = False) -> List[Any]:
    """The input shards: ``--input``, or each shard of a sharded input (one
    bar each in the page's chart of shares by shard). Ids are read as the
    run wrote them: ``SHARD:ID`` for a sharded dedup's ``--removed``
    (``by_shard``), ``SHARD:LINE`` for line numbers of a sharded input."""
    from .._report import Shard

    if args.input == "-":
        # The run read stdin, which cannot be read again: its counts come from its summary line.
        run_info.notes.append(
            "The input came from stdin, which cannot be read again: the page shows ids and "
            "distances without texts. Run rsimhash report on the input file for them."
        )
        counts = _SUMMARY_COUNTS.match(run_info.summary or "")
        if counts:
            run_info.records = int(counts.group(1).replace(",", ""))
            run_info.distinct = int(counts.group(2).replace(",", "")) if counts.group(2) else None
        bad = _BAD_LINES.search(run_info.summary or "")
        run_info.bad_lines = int(bad.group(1).replace(",", "")) if bad else None
        return [Shard("<stdin>", lambda: iter(()))]
    mode, width, _ = run_info.fingerprinting()
    passes = [1 if reported else 0]
    bad_counts = [0] * (len(args.input) if is_sharded(args.input) else 1)
    left = [getattr(args, "sample", None)]  # records still to read: cluster --sample N counts across shards

    def blocks(i: int, path: str, rel: Optional[str]) -> Iterator[Any]:
        if i == 0:
            passes[0] += 1  # bad lines are reported once: by the run, or by the first pass
            left[0] = getattr(args, "sample", None)
        if left[0] is not None and left[0] <= 0:
            return
        with open_source(
            args,
            path=path,
            limit=left[0],
            shingling=(mode, width) if fingerprints else None,
            quiet_bad_lines=passes[0] > 1,
        ) as source:
            for chunk in prefetch(source.chunks()):
                if rel is not None and (by_shard or source.line_ids):
                    chunk._ids = [f"{rel}:{i}" for i in chunk.ids]
                yield _block(chunk, mode, width, args.threads)
                if left[0] is not None:
                    left[0] -= len(chunk)
            bad_counts[i] = source.bad.count
            run_info.bad_lines = sum(bad_counts)

    if is_sharded(args.input):
        return [Shard(s.rel, functools.partial(blocks, i, s.path, s.rel)) for i, s in enumerate(args.input)]
    return [Shard(args.input, functools.partial(blocks, 0, args.input, None))]


def _block(chunk: Chunk, mode: str, width: Optional[int], threads: Optional[int]) -> Any:
    from .._report import Block

    return Block(
        chunk.ids,
        lambda: fingerprints_of(chunk, mode, width, threads),
        (lambda rows: _texts_at(chunk, rows)) if chunk.has_texts else None,
    )


def _texts_at(chunk: Chunk, rows: List[int]) -> List[str]:
    """The texts of some records of a chunk, decoding only those."""
    if chunk.core is not None and not chunk.extra_texts:
        from .._texts import ArrowBuffers

        assert chunk.entries is not None
        return ArrowBuffers(*chunk.core.texts(chunk.entries[np.asarray(rows, dtype=np.int64)])).to_pylist()
    texts = chunk.texts
    if hasattr(texts, "take") and not isinstance(texts, list):  # a pyarrow array
        from .._optional import module

        return list(texts.take(module("pyarrow").array(rows, type=module("pyarrow").int64())).to_pylist())
    return [texts[i] for i in rows]


_SUMMARY_COUNTS = re.compile(r"^rsimhash [a-z-]+: ([0-9,]+) (?:records?|fingerprints?) read(?: \(([0-9,]+) distinct\))?")
_BAD_LINES = re.compile(r", ([0-9,]+) bad lines?")
_SECONDS = re.compile(r", ([0-9]+(?:\.[0-9]+)?) s(?: \([0-9,.]+ MB/s\))?$")


def _log_summary(path: str) -> Optional[str]:
    """The last summary line (``rsimhash COMMAND: ..., T s``) of a run's stderr."""
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            lines = [line.rstrip("\n") for line in f if line.startswith("rsimhash ") and _SECONDS.search(line.rstrip())]
    except OSError as e:
        raise InputError(path, None, f"cannot read: {e.strerror or e}") from None
    return lines[-1] if lines else None


def _seconds(summary: Optional[str]) -> Optional[float]:
    m = _SECONDS.search(summary or "")
    return float(m.group(1)) if m else None


# -- --report FILE on a run ------------------------------------------------------
def with_report(args: argparse.Namespace) -> int:
    """Runs the command, then writes its page to ``args.report``."""
    from . import progress

    command = args.command
    target = REPORTED[command]
    if args.report == "-":
        raise UsageError("--report needs a file name (the page cannot share stdout with the run's output)")
    where = os.path.dirname(os.path.abspath(args.report))
    if not os.path.isdir(where):  # found now, not after the run
        raise UsageError(f"--report {args.report}: the directory {where} does not exist")
    given = getattr(args, target)
    try:
        tmp = tempfile.mkdtemp(prefix=".rsimhash-report-", dir=where)
    except OSError:
        tmp = tempfile.mkdtemp(prefix="rsimhash-report-")
    # An output that cannot be read back (stdout, /dev/null, a pipe) is written
    # to a temporary file and copied to where it was asked for after the run.
    special = given is not None and given != "-" and os.path.exists(given) and not os.path.isfile(given)
    try:
        found_path = given
        if given in (None, "-") or special:
            found_path = os.path.join(tmp, "found.tsv")
            setattr(args, target, found_path)
        progress.last_summary = None
        started = time.perf_counter()
        code = int(args.run(args))
        seconds = time.perf_counter() - started
        setattr(args, target, given)
        if code != 0:
            return code
        if given == "-":
            with open(found_path, "rb") as f:
                shutil.copyfileobj(f, sys.stdout.buffer)
            sys.stdout.buffer.flush()
        elif special:
            with open(found_path, "rb") as f, open(given, "wb") as out:
                shutil.copyfileobj(f, out)
        summary = progress.last_summary
        argv = getattr(args, "argv", None)
        line = "rsimhash " + " ".join(shlex.quote(a) for a in argv) if argv is not None else None
        write(
            args,
            command,
            found_path,
            args.report,
            summary=summary,
            seconds=_seconds(summary) if summary else seconds,
            command=line,
            notes=[],
            reported=True,
        )
        return 0
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
