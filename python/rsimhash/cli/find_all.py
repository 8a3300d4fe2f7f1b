"""``rsimhash find-all``: every pair of fingerprints within K bits, as simhash-find-all prints it.

Input: one decimal u64 fingerprint per line (blank lines are skipped; a hash
TSV, JSON lines or Parquet work too with ``--format``). Output: one JSON array
``[a, b]`` per line for each distinct unordered pair of fingerprint *values*
within K bits, smaller value first, lines sorted by ``a`` then ``b``. A value
given more than once also pairs with itself, once: ``[x, x]``. (The
original treats its input as a set of values; so does this, apart from that
self-pair.)
"""

from __future__ import annotations

import argparse
from typing import List

import numpy as np

from .inputs import FORMATS
from .pipeline import fingerprints_of, prefetch
from .options import add_distance, add_input, add_run, add_text, bad_lines_part, make_index, open_source
from .outputs import Outputs
from .progress import Progress, count

HELP = "all pairs of fingerprints within K bits, one JSON [a, b] per line"
DESCRIPTION = """\
Read fingerprints (one decimal u64 per line) and write every pair of values
within K bits as a JSON array [a, b] per line, as simhash-find-all does;
a value given twice also pairs with itself: [x, x].

example:
  rsimhash find-all --input hashes.txt --distance 3 --blocks 6 --output pairs.jsonl
"""


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_input(p, default="lines", what="fingerprints")
    p.add_argument("--output", "-o", metavar="FILE", default="-",
                   help="the pairs, one JSON array per line; - writes stdout. Default: %(default)s")
    add_distance(p, what="fingerprints of a pair")
    add_text(p, ids=False)
    add_run(p)


def run(args: argparse.Namespace) -> int:
    index = make_index(args.distance, args.blocks)
    parts: List[np.ndarray] = []
    with open_source(args, need_ids=False, formats=FORMATS) as source, Outputs() as outs:
        out = outs.open(args.output)
        progress = Progress("find-all", source.total, args.quiet)
        for chunk in prefetch(source.chunks()):
            parts.append(fingerprints_of(chunk, args.mode, args.width, args.threads))
            progress.update(source.position(), source.records)
        fps = np.concatenate(parts) if parts else np.empty(0, dtype=np.uint64)
        values, counts = np.unique(fps, return_counts=True)
        index.add(values)  # ids are positions in the sorted distinct values
        pairs = values[index.find_all()]  # so each row is (smaller, larger) and rows are sorted
        twice = values[counts > 1]
        if len(twice):
            pairs = np.concatenate([pairs, np.stack([twice, twice], axis=1)])
            pairs = pairs[np.lexsort((pairs[:, 1], pairs[:, 0]))]
        step = 1 << 16
        for lo in range(0, len(pairs), step):
            block = pairs[lo:lo + step].tolist()
            out.write("".join(f"[{a}, {b}]\n" for a, b in block).encode("ascii"))
        progress.summary("find-all", [
            count(source.records, "fingerprint") + f" read ({len(values):,} distinct)",
            count(len(pairs), "pair") + f" within {args.distance} bits",
            bad_lines_part(source),
        ], source.nbytes)
    return 0
