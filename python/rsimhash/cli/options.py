"""Flags shared by several commands, their checks, and the index they ask for."""

from __future__ import annotations

import argparse
import os
from typing import Any, Callable, Optional

from .._records import FORMATS, Source, guess_format
from .errors import BadLines, UsageError

MAX_K = 16


INT64_MAX = (1 << 63) - 1
MAX_BLOCKS = 64  # blocks of a 64-bit fingerprint
MAX_WIDTH = (1 << 31) - 1  # a shingle wider than any text is no feature
MAX_MB = 1 << 20  # 1 TiB: --chunk-mb, --max-record-mb


def max_threads() -> int:
    """The most threads a run may ask for: 4 per core, and at least 1024 (the core's bound)."""
    return max(4 * (os.cpu_count() or 1), 1024)


def whole_number(low: int, high: int, what: str = "") -> Callable[[str], int]:
    """An argparse type: a whole number in ``low..high`` (a message naming the range otherwise)."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
        if value < low:
            raise argparse.ArgumentTypeError(f"must be at least {low}, got {text}")
        if value > high:
            raise argparse.ArgumentTypeError(f"must be at most {high:,}{what}, got {text}")
        return value

    return parse


positive_int = whole_number(1, INT64_MAX)
blocks_count = whole_number(1, MAX_BLOCKS)
width_count = whole_number(1, MAX_WIDTH)


def thread_count(text: str) -> int:
    return whole_number(1, max_threads(), " (4 per core, at least 1024)")(text)


def megabytes(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of MB, got {text!r}") from None
    if not 0 < value <= MAX_MB:
        raise argparse.ArgumentTypeError(f"must be more than 0 and at most {MAX_MB:,} (1 TiB), got {text}")
    return value


def distance(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if not 0 <= value <= MAX_K:
        raise argparse.ArgumentTypeError(f"must be between 0 and {MAX_K}, got {value}")
    return value


def add_input(
    p: argparse.ArgumentParser,
    formats: "tuple[str, ...]" = FORMATS,
    default: str = "auto",
    required: bool = True,
    what: str = "records",
    stdin: str = "json",
    shards: bool = False,
) -> None:
    if shards:
        p.add_argument(
            "--input",
            "-i",
            metavar="PATH",
            action="append",
            required=required,
            help=f"file of {what}; - reads stdin. gzip and zstd compression are recognised. Repeatable; a "
            "directory reads its files of the format (sorted by path, recursively) and a quoted glob its "
            "matches, in that order: the shards of one input",
        )
    else:
        p.add_argument(
            "--input",
            "-i",
            metavar="FILE",
            required=required,
            help=f"file of {what}; - reads stdin. gzip and zstd compression are recognised",
        )
    choices = formats if default != "auto" else ("auto",) + formats
    guess = (
        (
            ", which goes by the file name (.jsonl/.json/.ndjson json, .tsv hash, .txt lines, "
            f".parquet parquet, each maybe .gz/.zst; stdin is {stdin})"
        )
        if default == "auto"
        else ""
    )
    p.add_argument(
        "--format",
        "-f",
        choices=choices,
        default=default,
        help="json: JSON lines; hash: TSV with a header line 'id<TAB>hash'; lines: one "
        "decimal fingerprint per line; parquet: a Parquet file (needs pyarrow). "
        f"Default: %(default)s{guess}",
    )


def add_text(p: argparse.ArgumentParser, ids: bool = True, mode_default: Optional[str] = "words") -> None:
    p.add_argument(
        "--text-column",
        "--text_column",
        dest="text_column",
        metavar="NAME",
        default="text",
        help="field (json) or column (parquet) holding the text. Default: %(default)s",
    )
    if ids:
        p.add_argument(
            "--id-column",
            "--id_column",
            dest="id_column",
            metavar="NAME",
            default=None,
            help="field or column holding the record's id, an int or a string written out as "
            "it is. Default: id; when not given and the first record has no id field, "
            "each record's id is its line (parquet: row) number",
        )
    recorded = "as recorded in the index's ids file, else "
    p.add_argument(
        "--mode",
        choices=("words", "chars"),
        default=mode_default,
        help="words: shingles of W tokens; chars: windows of W characters (SPEC v1). "
        f"Default: {'' if mode_default else recorded}words",
    )
    p.add_argument(
        "--window",
        "--width",
        "-w",
        dest="width",
        type=width_count,
        metavar="W",
        default=None,
        help=f"shingle width. Default: {'' if mode_default else recorded}3 for words, 4 for chars",
    )
    p.add_argument(
        "--threads",
        type=thread_count,
        metavar="N",
        default=None,
        help="threads that fingerprint. Default: all cores (or RAYON_NUM_THREADS)",
    )


def add_distance(p: argparse.ArgumentParser, blocks: bool = True, what: str = "near-duplicates") -> None:
    p.add_argument(
        "--distance",
        "-k",
        type=distance,
        metavar="K",
        default=3,
        help=f"largest Hamming distance, in bits, of two {what} (0..{MAX_K}). Default: %(default)s",
    )
    if blocks:
        p.add_argument(
            "--blocks",
            "-b",
            type=blocks_count,
            metavar="B",
            default=None,
            help="cut fingerprints into B blocks, one table per choice of B - K of them; must "
            "be more than K. Default: chosen for the input size",
        )


def add_run(p: argparse.ArgumentParser, skip: bool = True) -> None:
    if skip:
        p.add_argument(
            "--skip-bad-lines",
            action="store_true",
            help="report a bad input line on stderr and go on, instead of stopping (the summary counts them)",
        )
    p.add_argument(
        "--quiet", "-q", action="store_true", help="no progress bar and no summary line (the bar is only drawn on a terminal)"
    )
    p.add_argument(
        "--chunk-mb",
        type=megabytes,
        metavar="MB",
        default=8,
        help="read the input in chunks of about this many MB. Default: %(default)s",
    )
    p.add_argument(
        "--max-record-mb",
        type=megabytes,
        metavar="MB",
        default=256,
        help="a line (record) longer than this is a bad line, reported (or skipped with "
        "--skip-bad-lines) without being read into memory. Default: %(default)s",
    )


def memory_size(text: str) -> int:
    from .._memory import parse_memory

    try:
        return parse_memory(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected a size in bytes or such as 8GiB, 500MB or 2g (at least 1KiB), got {text!r}"
        ) from None


def add_memory(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--memory-limit",
        type=memory_size,
        metavar="SIZE",
        default=None,
        help="memory the command may use, in bytes or as 8GiB, 500MB, 2g. An input whose "
        "in-memory index would not fit goes through the batch engine instead, which works one "
        "table at a time and spills to --workdir beyond the limit. Default: 60%% of the "
        "memory available",
    )
    p.add_argument(
        "--workdir",
        metavar="DIR",
        default=None,
        help="directory for spill files of inputs that do not fit in memory (about 8 bytes a "
        "record, and 12 a record more while a table spills). Default: a temporary directory "
        "beside the output, else the system's; removed at the end",
    )


def memory_limit(args: argparse.Namespace) -> int:
    """``--memory-limit`` in bytes, or 60 % of the memory available now."""
    from .._memory import memory_limit as default

    return default(args.memory_limit)


def make_index(k: int, blocks: Optional[int], compress: bool = True) -> Any:
    """``Index(k, blocks=blocks, compress=compress)``, or a ``UsageError`` naming the flags."""
    from .. import Index

    if blocks is not None and blocks <= k:
        raise UsageError(
            f"--distance {k} must be smaller than --blocks {blocks} (two fingerprints within "
            f"K bits agree on at least B - K of B blocks)"
        )
    try:
        return Index(k, blocks=blocks, compress=compress)
    except ValueError as e:
        raise UsageError(f"--distance {k} --blocks {blocks}: {e}") from None


def open_source(
    args: argparse.Namespace,
    *,
    need_ids: bool = True,
    limit: Optional[int] = None,
    full_rows: bool = False,
    formats: "tuple[str, ...]" = FORMATS,
    path: Optional[str] = None,
    quiet_bad_lines: bool = False,
    shingling: Any = "args",
    qualify_line_ids: bool = True,
    values_only: bool = False,
) -> Source:
    """The command's ``--input`` as a ``Source`` configured from its flags;
    ``path`` reads another file the same way (a copy of stdin), and
    ``quiet_bad_lines`` skips bad lines without reporting them again.
    JSON lines are fingerprinted as they are parsed with ``shingling``
    (mode, width): by default the command's ``--mode`` and ``--width``;
    None parses only. Sharded inputs (``shards.py``) give a ``ShardedSource``
    (line-number ids as ``REL:LINE`` unless ``qualify_line_ids`` is false).
    ``values_only``: the command reads ``values()`` alone (see ``Source``)."""
    from .shards import ShardedSource, is_sharded

    if shingling == "args":
        shingling = (args.mode, args.width) if hasattr(args, "mode") else None
    target = args.input if path is None else path
    fmt = guess_format(args.input if isinstance(args.input, str) else "-", getattr(args, "format", "auto"))
    if fmt not in formats:
        raise UsageError(f"--format {fmt} cannot be used here; use one of {', '.join(formats)}")
    bad = BadLines(getattr(args, "skip_bad_lines", False), limit=0 if quiet_bad_lines else 20, quiet=quiet_bad_lines)

    def make(file: str, bad: BadLines, sample: Optional[int] = None) -> Source:
        return Source(
            file,
            fmt,
            text_column=getattr(args, "text_column", "text"),
            id_column=getattr(args, "id_column", None),
            need_ids=need_ids,
            bad=bad,
            limit=sample,
            full_rows=full_rows,
            chunk_bytes=max(1, int(args.chunk_mb * (1 << 20))),
            max_record_bytes=max(1, int(getattr(args, "max_record_mb", 256) * (1 << 20))),
            shingling=shingling,
            threads=getattr(args, "threads", None),
            values_only=values_only and not is_sharded(target),  # shards are read a chunk at a time
        )

    if is_sharded(target):
        return ShardedSource(target, fmt, make, bad, limit=limit, qualify_line_ids=qualify_line_ids)  # type: ignore[return-value]
    return make(target, bad, limit)


def bad_lines_part(source: Source) -> str:
    n = source.bad.count
    return f"{n:,} bad line{'' if n == 1 else 's'}" + (" skipped" if n else "")
