"""``rsimhash tune``: how well simhash finds a corpus's near-duplicates, and
which settings to use, measured on a sample of it.

On a sample of the input's texts (the first N records, or with ``--seed`` a
uniform random sample of all of them) it computes the truth: every pair
whose SPEC v1 shingle sets (``--shingles``/``--width``, as
``similar_pairs`` takes them) are at least ``--jaccard`` alike, exactly
(``tune_stats.truth_pairs``). Against it, it prints

* plain simhash: precision and recall of the pairs within ``k`` bits for
  ``k = 0..--max-k``, with word 3-shingles and character 4-grams (the
  fingerprints of ``dedup --mode``) and single words (the candidates of
  verified near-duplicates);
* verified near-duplicates (candidates within ``k`` confirmed by their
  sets, precision 1): for a recall of 0.95, 0.97 and 0.99 the least ``k``
  of each mode that reaches it, with its candidate pairs a document and the
  seconds and recall of the verified pairs run on the sample;
* the exact join (``candidates="exact"``: every pair, no candidates) run
  on the sample: its seconds and recall beside the candidates' for 0.97,
  the trade-off of time and memory against the pairs the candidates miss;
* a recommendation: for plain simhash the mode and ``k`` of the best F1;
  for verified near-duplicates the candidates reaching a recall of 0.97,
  and the exact join with the memory it holds; the table design and memory
  for ``--expected-size`` documents, and the command lines and Python call
  that use them.

``--json FILE`` writes the same figures (and the truth's pairs, as sample
positions) as JSON; ``--plot FILE.png`` draws them (``tune_plot``).
Both are written atomically, and checked writable before the work starts.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shlex
import sys
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Tuple

import numpy as np

from . import similar_pairs
from . import tune_stats as st
from .errors import UsageError
from .options import MAX_K, add_run, bad_lines_part, distance, open_source, positive_int, thread_count, width_count
from .outputs import Outputs
from .progress import Progress, count
from .shards import input_format
from .stdio import stdout_binary

DESCRIPTION = """\
Measure, on a sample of a corpus, how well simhash finds the pairs of texts
whose shingle sets are at least --jaccard alike (computed exactly on the
sample): precision and recall of plain simhash at k = 0..10 bits, the k that
verified near-duplicates need for a recall of 0.95 / 0.97 / 0.99 and what it
costs, and a recommendation with its table design for --expected-size.

The sample is the first N records (--sample), or with --seed a uniform random
sample of the whole input (read to its end). A random sample of n out of N
documents keeps a near-duplicate pair with probability (n/N)^2: prefer the
first records unless the input is sorted in a way that matters.

examples:
  rsimhash tune --input corpus.jsonl
  rsimhash tune --input corpus.jsonl --sample 3000 --jaccard 0.8 --plot curves.png
  rsimhash tune --input corpus.parquet --seed 1 --expected-size 100000000 --json tune.json
"""

DEFAULT_SAMPLE = 5000
DEFAULT_WIDTH = {"words": 3, "chars": 4}


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--input",
        "-i",
        metavar="PATH",
        action="append",
        required=True,
        help="JSON lines or Parquet of texts; - reads stdin. gzip and zstd compression are recognised. "
        "Repeatable; a directory reads its files of the format (sorted by path, recursively) and a quoted "
        "glob its matches, in that order: the shards of one input",
    )
    p.add_argument(
        "--format",
        "-f",
        choices=("auto", "json", "parquet"),
        default="auto",
        help="json: JSON lines; parquet: a Parquet file (needs pyarrow). Default: %(default)s, which "
        "goes by the file name (.jsonl/.json/.ndjson json, .parquet parquet; stdin is json)",
    )
    p.add_argument(
        "--text-column",
        "--text_column",
        dest="text_column",
        metavar="NAME",
        default="text",
        help="field (json) or column (parquet) holding the text. Default: %(default)s",
    )
    p.add_argument(
        "--sample",
        type=positive_int,
        metavar="N",
        default=DEFAULT_SAMPLE,
        help="documents measured: the first N records, or with --seed a random N. Default: %(default)s",
    )
    p.add_argument(
        "--seed",
        type=int,
        metavar="S",
        default=None,
        help="take a uniform random sample (reservoir, seeded with S) of the whole input instead of its first records",
    )
    p.add_argument(
        "--jaccard",
        type=similar_pairs.threshold,
        metavar="T",
        default=0.9,
        help="least Jaccard similarity of the shingle sets of a true pair, in (0, 1]. Default: %(default)s",
    )
    p.add_argument(
        "--shingles",
        choices=("words", "chars"),
        default="words",
        help="shingles of the truth's sets: words (W tokens) or chars (W characters), as "
        "similar_pairs(shingles=). Default: %(default)s",
    )
    p.add_argument(
        "--width",
        type=width_count,
        metavar="W",
        default=None,
        help="width of the truth's shingles. Default: 3 for words, 4 for chars",
    )
    p.add_argument(
        "--max-k", type=distance, metavar="K", default=10, help=f"measure k = 0..K bits (at most {MAX_K}). Default: %(default)s"
    )
    p.add_argument(
        "--expected-size",
        type=positive_int,
        metavar="N",
        default=None,
        help="documents of the corpus to design for. Default: the input's (counted, or estimated "
        "from its size), else the sample's",
    )
    p.add_argument(
        "--json",
        metavar="FILE",
        default=None,
        help="also write the figures as JSON; - writes the JSON to stdout instead of the tables",
    )
    p.add_argument(
        "--plot",
        metavar="FILE.png",
        default=None,
        help="draw precision-recall per k and the leading bits of sorted neighbours in one PNG "
        '(needs matplotlib: pip install "rsimhash[plot]")',
    )
    p.add_argument(
        "--threads", type=thread_count, metavar="N", default=None, help="threads. Default: all cores (or RAYON_NUM_THREADS)"
    )
    add_run(p)


# -- the sample ------------------------------------------------------------------------


@dataclass
class Sample:
    texts: List[str]
    lines: List[int]  # input line (parquet: row) of each text
    read: int  # records read
    size: Optional[int]  # records of the whole input, when known or estimated
    exact: bool  # ``size`` is counted, not estimated
    how: str  # "the first 3,000 of 12,345 records", ...


def read_sample(args: argparse.Namespace) -> Tuple[Sample, str, Progress]:
    """The sample, the bad-lines part of the summary, and the clock."""
    fmt = input_format(args)
    if fmt not in ("json", "parquet"):
        raise UsageError(f"tune needs texts, and --format {fmt} holds fingerprints; give JSON lines or Parquet")
    limit = None if args.seed is not None else args.sample + 1  # one more tells whether the input goes on
    with open_source(args, need_ids=False, limit=limit, formats=("json", "parquet"), shingling=None) as source:
        progress = Progress("tune", source.total, args.quiet)
        if args.seed is None:
            sample = _first(source, args.sample, progress)
        else:
            sample = _reservoir(source, args.sample, args.seed, progress)
        progress.close()
        return sample, bad_lines_part(source), progress


def _texts(chunk: Any) -> List[str]:
    texts = chunk.texts
    return texts if isinstance(texts, list) else texts.to_pylist()


def _first(source: Any, n: int, progress: Progress) -> Sample:
    texts: List[str] = []
    lines: List[int] = []
    raw_bytes = 0
    for chunk in source.chunks():
        texts += _texts(chunk)
        lines += list(chunk.lines) if not isinstance(chunk.lines, np.ndarray) else chunk.lines.tolist()
        raw_bytes += chunk.record_bytes()
        progress.update(source.position(), source.records)
    if len(texts) <= n:
        return Sample(texts, lines, len(texts), len(texts), True, f"all {count(len(texts), 'record')}")
    size, exact = _estimate(source, raw_bytes / len(texts))
    texts, lines = texts[:n], lines[:n]
    of = f" of {'' if exact else 'about '}{size:,}" if size else ""
    return Sample(texts, lines, n, size, exact, f"the first {n:,}{of} records")


def _estimate(source: Any, bytes_per_record: float) -> Tuple[Optional[int], bool]:
    """Records of the whole input: a Parquet file's rows, else its size over
    the sample's bytes a record (compressed inputs scaled by the ratio read
    so far); unknown for stdin."""
    if source.format == "parquet":
        return source.rows(), True
    position = source.position()
    if not source.total or not position or not bytes_per_record:
        return None, False
    uncompressed = source.total * source.nbytes / position
    return max(source.records, int(round(uncompressed / bytes_per_record))), False


def _reservoir(source: Any, n: int, seed: int, progress: Progress) -> Sample:
    rng = random.Random(seed)
    kept: List[Tuple[int, str]] = []
    seen = 0
    for chunk in source.chunks():
        for line, text in zip(np.asarray(chunk.lines).tolist(), _texts(chunk)):
            if seen < n:
                kept.append((line, text))
            else:
                j = rng.randrange(seen + 1)
                if j < n:
                    kept[j] = (line, text)
            seen += 1
        progress.update(source.position(), source.records)
    kept.sort()
    how = f"a random {len(kept):,} (seed {seed}) of {count(seen, 'record')}" if seen > n else f"all {count(seen, 'record')}"
    return Sample([t for _, t in kept], [ln for ln, _ in kept], seen, seen, True, how)


# -- the measures ----------------------------------------------------------------------


@dataclass
class Results:
    sample: Sample
    truth: st.Truth
    curves: List[st.Curve]
    verified: List[st.Verified]
    exact: Optional[st.Exact]
    plain: Optional[Tuple[st.Curve, int]]
    expected: int
    xor: Dict[str, np.ndarray]
    random_xor: np.ndarray


def measure(args: argparse.Namespace, sample: Sample) -> Results:
    from .. import _rsimhash, fingerprints

    texts, t = sample.texts, args.jaccard
    offsets, hashes = _rsimhash.shingle_sets(texts, mode=args.shingles, width=args.width, threads=args.threads)
    truth = st.truth_pairs(offsets, hashes, t)
    curves, xor = [], {}
    for mode, width in st.MODES:
        fps = fingerprints(texts, mode=mode, width=width, threads=args.threads)
        curves.append(st.curve(fps, truth, mode, width, args.max_k, args.threads))
        xor[f"{mode}, width {width}"] = st.leading_bits(fps)
    verified = [st.verified_options(curves, target) for target in st.TARGETS]
    for v in verified:
        st.verify_cost(v, texts, truth, t, args.shingles, args.width, args.threads)
    exact = st.exact_cost(texts, truth, t, args.shingles, args.width, args.threads)
    expected = args.expected_size or sample.size or len(texts)
    return Results(
        sample,
        truth,
        curves,
        verified,
        exact,
        st.best_plain(curves),
        expected,
        xor,
        st.random_leading_bits(len(texts), seed=0 if args.seed is None else args.seed),
    )


# -- the report --------------------------------------------------------------------------


def _f(x: Optional[float], digits: int = 3) -> str:
    return "-" if x is None else f"{x:.{digits}f}"


def _bytes(n: float) -> str:
    from .._memory import format_bytes

    return format_bytes(n)


def report(args: argparse.Namespace, r: Results) -> str:
    width = args.width or DEFAULT_WIDTH[args.shingles]
    head = [
        f"sample: {r.sample.how} of {str(args.input)}",
        f"truth: {count(len(r.truth.pairs), 'pair')} with Jaccard >= {args.jaccard:g} of {args.shingles} "
        f"{width}-shingle sets (exact: {r.truth.checked:,} pairs compared after a prefix filter)",
        "",
    ]
    return (
        "\n".join(
            head
            + _plain_table(args, r)
            + [""]
            + _verified_table(r)
            + [""]
            + _exact_lines(r)
            + [""]
            + _leading(r)
            + [""]
            + recommendation(args, r)
        )
        + "\n"
    )


def _plain_table(args: argparse.Namespace, r: Results) -> List[str]:
    names = "".join(f" | {c.name:^23}" for c in r.curves)
    sub = "".join(" | precision recall  pairs" for _ in r.curves)
    out = [
        f"plain simhash: the pairs within k bits, against the truth at Jaccard >= {args.jaccard:g}",
        f"  k{names}",
        f"   {sub}",
    ]
    for k in range(args.max_k + 1):
        out.append(f"{k:>3}" + "".join(f" | {_f(c.precision(k)):>9} {_f(c.recall(k)):>6} {c.found[k]:>6,}" for c in r.curves))
    return out


def _verified_table(r: Results) -> List[str]:
    out = [
        "verified: candidates within k bits, each checked against the sets (precision 1)",
        "  recall  candidates   k  pairs/doc  recall   seconds  measured recall",
    ]
    for v in r.verified:
        if not v.options:
            out.append(f"  {v.target:.2f}    not reached at k <= {len(r.curves[0].found) - 1} (try --max-k {MAX_K})")
        for c, k in sorted(v.options, key=lambda o: (o[1], o[0].found[o[1]])):
            chosen = v.chosen is not None and v.chosen[0] is c
            tail = f"  {_f(v.seconds, 2):>7}  {_f(v.recall_measured)}" if chosen else ""
            out.append(
                f"{'*' if chosen else ' '} {v.target:.2f}    {c.name:<10} {k:>3}  {c.found[k] / c.n:>9.2f}"
                f"  {_f(c.recall(k))}{tail}"
            )
    out.append("  (*: the least k, then the fewest candidates; seconds: similar_pairs on the sample)")
    return out


def _exact_lines(r: Results) -> List[str]:
    """The exact join on the sample, beside the candidates for a recall of 0.97."""
    e = r.exact
    if e is None:
        return ["exact join: no documents to join"]
    out = [
        "exact join: every pair, no candidates (recall 1 by construction; the sets held in memory)",
        f"  {_f(e.seconds, 2)} seconds on the sample, measured recall {_f(e.recall_measured)}, "
        f"{count(e.pairs, 'pair')}; sets held about {_bytes(e.bytes_per_doc)} a document",
    ]
    v = next(v for v in r.verified if v.target == 0.97)
    if v.chosen is not None:
        c, k = v.chosen
        out.append(
            f"  the candidates for a recall of 0.97 ({c.mode},{c.width},{k}): {_f(v.seconds, 2)} seconds, "
            f"measured recall {_f(v.recall_measured)}"
        )
    return out


def _median(hist: np.ndarray) -> str:
    position = st.median_position(hist)
    return "-" if position is None else str(position)  # no neighbours: fewer than two documents


def _leading(r: Results) -> List[str]:
    rand = _median(r.random_xor)
    out = [f"leading 1-bit of the XOR of sorted neighbours (0 = top bit): median {rand} for random fingerprints"]
    for name, hist in r.xor.items():
        total = max(1, int(hist.sum()))
        out.append(
            f"  {name:<16} median {_median(hist)}, equal neighbours "
            f"{100 * hist[64] / total:.1f} %, within 20 bits of the bottom {100 * hist[44:64].sum() / total:.1f} %"
        )
    return out


def recommendation(args: argparse.Namespace, r: Results) -> List[str]:
    n = r.expected
    out = [f"recommendation for {n:,} documents" + ("" if args.expected_size else " (--expected-size to change)") + ":"]
    if not len(r.truth.pairs):
        return out + [
            f"  no pair of the sample is at Jaccard >= {args.jaccard:g}: nothing to tune on; take a "
            'larger --sample, a lower --jaccard, or the defaults (candidates="auto")'
        ]
    source = _source_flags(args)
    output = shlex.quote(_output_name(args.input) if isinstance(args.input, str) else "kept/")
    if r.plain is not None:
        c, k = r.plain
        tables, desc = st.design(n, k)
        out += [
            f"  plain simhash: {c.mode} width {c.width}, k = {k}, the best F1 ({_f(c.f1(k))}: precision "
            f"{_f(c.precision(k))}, recall {_f(c.recall(k))})",
            f"    rsimhash dedup {source} --output {output} --mode {c.mode} --window {c.width} --distance {k}",
            f"    tables: {desc}; rsimhash.Index({k}, tables={tables}) of {n:,}: about {_bytes(st.index_bytes(n, k, tables))}",
        ]
    v = next(v for v in r.verified if v.target == 0.97)
    default_sets = (args.shingles, args.width or 3) == ("words", 3)
    set_width = args.width or DEFAULT_WIDTH[args.shingles]
    shingles = "" if default_sets else f", shingles={args.shingles!r}, width={set_width}"
    # The command's sets are its --mode/--width: the shingles the truth was measured on.
    set_flags = "" if default_sets else f" --mode {args.shingles} --width {set_width}"
    if v.chosen is None:
        out.append(f"  verified: no k <= {args.max_k} reaches a recall of 0.97; try --max-k {MAX_K}")
        return out + _exact_recommendation(args, r, source, output, set_flags, shingles)
    c, k = v.chosen
    tables, desc = st.design(n, k)
    out += [
        f"  verified (recall >= 0.97 on the sample, precision 1): candidates {c.mode},{c.width},{k}",
        f"    rsimhash dedup {source} --output {output} --jaccard {args.jaccard:g}{set_flags} "
        f"--candidates {c.mode},{c.width},{k}",
        f"    rsimhash.similar_pairs(texts, {args.jaccard:g}{shingles}, candidates=({c.mode!r}, {c.width}, {k}))",
        f"    tables: {desc}; sets held: about {_bytes(v.bytes_per_doc or 0)} a document, "
        f"{_bytes((v.bytes_per_doc or 0) * n)} for {n:,}",
    ]
    return out + _exact_recommendation(args, r, source, output, set_flags, shingles)


def _exact_recommendation(
    args: argparse.Namespace, r: Results, source: str, output: str, set_flags: str, shingles: str
) -> List[str]:
    """The exact join's lines of the recommendation: its commands and the memory it holds."""
    from .._memory import JOIN_BYTES_PER_SET_BYTE

    e, n = r.exact, r.expected
    if e is None:
        return []
    held = e.bytes_per_doc * JOIN_BYTES_PER_SET_BYTE
    return [
        f"  exact (every pair, recall 1; {_f(e.seconds, 2)} s on the sample): candidates exact",
        f"    rsimhash dedup {source} --output {output} --jaccard {args.jaccard:g}{set_flags} --candidates exact",
        f'    rsimhash.similar_pairs(texts, {args.jaccard:g}{shingles}, candidates="exact")',
        f"    memory: the sets and the join's work, about {_bytes(held)} a document, {_bytes(held * n)} for {n:,}; "
        "beyond memory, the candidates (auto takes them)",
    ]


def _output_name(path: str) -> str:
    """Where a recommended dedup writes its kept records: ``kept-`` and the input's name."""
    name = os.path.basename(path)
    return "kept.jsonl" if path == "-" or not name else f"kept-{name}"


def _source_flags(args: argparse.Namespace) -> str:
    values = [args.input] if isinstance(args.input, str) else args.input.values  # shards: the --input values given
    flags = [f for v in values for f in ("--input", v)]
    flags += ["--text-column", args.text_column] if args.text_column != "text" else []
    return " ".join(shlex.quote(f) for f in flags)


def figures(args: argparse.Namespace, r: Results) -> Dict[str, Any]:
    """Everything measured, for ``--json``."""
    rec: Dict[str, Any] = {}
    if r.plain is not None and len(r.truth.pairs):
        c, k = r.plain
        rec["plain"] = dict(mode=c.mode, width=c.width, k=k, design=st.design(r.expected, k)[1])
    v97 = next(v for v in r.verified if v.target == 0.97)
    if v97.chosen is not None:
        c, k = v97.chosen
        rec["verified"] = dict(candidates=[c.mode, c.width, k], design=st.design(r.expected, k)[1])
    if r.exact is not None and len(r.truth.pairs):
        from .._memory import JOIN_BYTES_PER_SET_BYTE

        rec["exact"] = dict(candidates="exact", bytes=r.exact.bytes_per_doc * JOIN_BYTES_PER_SET_BYTE * r.expected)
    return dict(
        input=str(args.input),
        threshold=args.jaccard,
        shingles=args.shingles,
        width=args.width or DEFAULT_WIDTH[args.shingles],
        sample=dict(
            documents=len(r.sample.texts),
            how=r.sample.how,
            lines=r.sample.lines,
            input_records=r.sample.size,
            input_records_exact=r.sample.exact,
        ),
        expected_size=r.expected,
        truth=dict(pairs=r.truth.pairs.tolist(), similarity=r.truth.similarity.tolist(), compared=r.truth.checked),
        plain=[row for c in r.curves for row in c.rows()],
        verified=[
            dict(
                target=v.target,
                options=[
                    dict(mode=c.mode, width=c.width, k=k, candidate_pairs=c.found[k], recall=c.recall(k)) for c, k in v.options
                ],
                chosen=None if v.chosen is None else [v.chosen[0].mode, v.chosen[0].width, v.chosen[1]],
                seconds=v.seconds,
                recall_measured=v.recall_measured,
                bytes_per_document=v.bytes_per_doc,
            )
            for v in r.verified
        ],
        exact=None
        if r.exact is None
        else dict(
            seconds=r.exact.seconds,
            pairs=r.exact.pairs,
            recall_measured=r.exact.recall_measured,
            bytes_per_document=r.exact.bytes_per_doc,
        ),
        recommendation=rec,
        leading_bits=dict({name: h.tolist() for name, h in r.xor.items()}, random=r.random_xor.tolist()),
    )


# -- the command -----------------------------------------------------------------------


def run(args: argparse.Namespace) -> int:
    if args.plot is not None:
        from . import tune_plot

        tune_plot.require()
    if args.plot == "-":
        raise UsageError("--plot needs a file name (the PNG is not written to stdout)")
    if args.json != "-":
        stdout_binary(what="tune writes its report to standard output")  # open, before the work
    with Outputs() as outs:  # opened first: an unwritable path fails before the work
        plot = outs.open(args.plot) if args.plot is not None else None
        js = outs.open(args.json) if args.json is not None else None
        sample, bad, progress = read_sample(args)
        results = measure(args, sample)
        if args.json != "-":
            sys.stdout.write(report(args, results))
            sys.stdout.flush()
        if js is not None:
            js.write((json.dumps(figures(args, results)) + "\n").encode("utf-8"))
        if plot is not None:
            plot.write(_png(args, results))
        progress.summary(
            "tune", [count(len(sample.texts), "document") + " measured", count(len(results.truth.pairs), "true pair"), bad]
        )
    return 0


def _png(args: argparse.Namespace, r: Results) -> bytes:
    from . import tune_plot

    width = args.width or DEFAULT_WIDTH[args.shingles]
    title = (
        f"rsimhash tune: {len(r.sample.texts):,} documents of {str(args.input)}, "
        f"{len(r.truth.pairs):,} pairs with Jaccard >= {args.jaccard:g} ({args.shingles} {width}-shingles)"
    )
    return tune_plot.png(r.curves, r.xor, r.random_xor, args.jaccard, title)
