"""``rsimhash cluster``: the clustering job of the original simhash command line.

Reads JSON lines (fingerprinted here, SPEC v1) or a hash TSV (``id<TAB>hash``),
puts every fingerprint in an ``Index(k=K, blocks=B)`` and writes
``Index.cluster`` as a TSV with the header ``id<TAB>hash<TAB>cluster``: ids as
written in the input, hashes in decimal, clusters numbered from 0 in the
order of their first record in the input, and within a cluster the records
in input order. By default only clusters of two or more records are written,
as the original does; ``--all`` writes every record, each singleton in a
cluster of its own. ``--sample N`` clusters the first N records of the input
only (the first N good records; reading stops there).

``--method connected`` (default) gives connected components of the
within-K graph; ``leader`` gives, in input order, groups around the first
record of each that nothing before it matched.
"""

from __future__ import annotations

import argparse
from typing import Any, List

import numpy as np

from .pipeline import fingerprints_of, prefetch
from .options import (
    add_distance, add_input, add_run, add_text, bad_lines_part, make_index, open_source, positive_int,
)
from .outputs import Outputs
from .progress import Progress, count

HELP = "cluster near-duplicates: TSV id, hash, cluster (the original simhash job)"
DESCRIPTION = """\
Cluster near-duplicate records: a record joins a cluster when it is within K
bits of at least one member (connected components). Writes a TSV with the
header 'id<TAB>hash<TAB>cluster'; clusters are numbered from 0 in the order of
their first record, members listed in input order.

examples:
  rsimhash cluster --input records.jsonl --format json --blocks 5 --distance 3 \\
      --text_column text --id_column id --window 5 --output clusters.tsv
  rsimhash cluster --input hashes.tsv --format hash --distance 3 --output clusters.tsv
"""


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_input(p, formats=("json", "hash", "parquet"))
    p.add_argument("--output", "-o", metavar="FILE", default="-",
                   help="the TSV 'id<TAB>hash<TAB>cluster'; - writes stdout. Default: %(default)s")
    add_text(p)
    add_distance(p)
    p.add_argument("--sample", type=positive_int, metavar="N", default=None,
                   help="cluster only the first N records of the input. Default: all")
    p.add_argument("--all", action="store_true",
                   help="write every record, each singleton in a cluster of its own "
                        "(default: only clusters of two or more)")
    p.add_argument("--method", choices=("connected", "leader"), default="connected",
                   help="connected: components of the within-K graph; leader: in input order each "
                        "record joins the first leader within K or becomes one. Default: %(default)s")
    add_run(p)


def run(args: argparse.Namespace) -> int:
    index = make_index(args.distance, args.blocks)
    ids: List[Any] = []
    parts: List[np.ndarray] = []
    with open_source(args, limit=args.sample, formats=("json", "hash", "parquet")) as source, \
            Outputs() as outs:
        out = outs.open(args.output)
        progress = Progress("cluster", source.total, args.quiet)
        for chunk in prefetch(source.chunks()):
            fps = fingerprints_of(chunk, args.mode, args.width, args.threads)
            index.add(fps)  # ids 0, 1, 2, ...: input positions
            parts.append(fps)
            ids.extend(chunk.ids)
            progress.update(source.position(), source.records)
        fps = np.concatenate(parts) if parts else np.empty(0, dtype=np.uint64)
        clusters = index.cluster(min_size=1 if args.all else 2, method=args.method)
        out.write(b"id\thash\tcluster\n")
        values = fps.tolist()
        members = 0
        for number, cluster in enumerate(clusters):
            rows = [f"{ids[m]}\t{values[m]}\t{number}\n" for m in cluster.tolist()]
            members += len(rows)
            out.write("".join(rows).encode("utf-8"))
        what = "clusters" if args.all else "clusters of two or more"
        progress.summary("cluster", [
            count(source.records, "record") + " read",
            f"{len(clusters):,} {what} holding {count(members, 'record')}",
            bad_lines_part(source),
        ], source.nbytes)
    return 0
