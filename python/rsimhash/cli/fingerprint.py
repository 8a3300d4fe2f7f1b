"""``rsimhash fingerprint``: the SPEC v1 fingerprint of every record, as a hash TSV.

Output: the header ``id<TAB>hash`` and one row per record in input order, the
id as written in the input and the fingerprint in decimal: the ``hash``
format that ``cluster``, ``dedup`` and ``index`` read back.
"""

from __future__ import annotations

import argparse

from .errors import utf8
from .options import add_input, add_run, add_text, bad_lines_part, open_source
from .outputs import Outputs
from .pipeline import fingerprints_of, prefetch
from .progress import Progress, count

DESCRIPTION = """\
Fingerprint every record (SPEC v1) and write a TSV with the header
'id<TAB>hash', the hash in decimal, in input order.

example:
  rsimhash fingerprint --input corpus.jsonl --output hashes.tsv
"""


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_input(p, formats=("json", "parquet"), what="texts", shards=True)
    p.add_argument(
        "--output", "-o", metavar="FILE", default="-", help="the TSV 'id<TAB>hash'; - writes stdout. Default: %(default)s"
    )
    add_text(p)
    add_run(p)


def run(args: argparse.Namespace) -> int:
    with open_source(args, formats=("json", "parquet")) as source, Outputs() as outs:
        out = outs.open(args.output)
        out.write(b"id\thash\n")
        progress = Progress("fingerprint", source.total, args.quiet)
        for chunk in prefetch(source.chunks()):
            fps = fingerprints_of(chunk, args.mode, args.width, args.threads).tolist()
            out.write(utf8("".join(f"{i}\t{h}\n" for i, h in zip(chunk.ids, fps))))
            progress.update(source.position(), source.records)
        progress.summary(
            "fingerprint",
            [
                count(source.records, "record") + " fingerprinted",
                bad_lines_part(source),
            ],
            source.nbytes,
        )
    return 0
