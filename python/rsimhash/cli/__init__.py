"""The ``rsimhash`` command line: ``main(argv=None) -> int``.

One sub-command per job, each in its own module with ``add_arguments`` and
``run``: ``dedup``, ``cluster``, ``find-all``, ``fingerprint``,
``index build|add|query|info|verify``, ``tune`` and ``report`` (``--report
FILE`` on ``dedup``, ``cluster`` and ``find-all`` too). Every error ends the run
with one line on stderr (``rsimhash: error: FILE:LINE: message``) and a
non-zero exit code, never a traceback; see ``errors.py`` for the codes.
"""

from __future__ import annotations

import argparse
import gc
import importlib
import os
import sys
import time
from typing import List, NoReturn, Optional, Sequence

from .._gate import GateError
from .._records import RecordError, RecordRequestError
from . import paths, progress, report
from .errors import EXIT_BROKEN_PIPE, EXIT_DATA, EXIT_INTERRUPT, EXIT_USAGE, PROG, CliError, UsageError

__all__ = ["main"]

# Each command: its name, its module (``add_arguments``, ``run``,
# ``DESCRIPTION``) and its line in ``rsimhash --help``. A run imports its own
# command's module only (``build_parser``), not the others' with theirs.
COMMANDS = (
    ("dedup", "dedup", "write the input minus its near-duplicates (the main job)"),
    ("cluster", "cluster", "cluster near-duplicates: TSV id, hash, cluster (the original simhash job)"),
    ("find-all", "find_all", "all pairs of fingerprints within K bits: JSON [a, b] lines, or a TSV of record ids"),
    ("fingerprint", "fingerprint", "fingerprint records: TSV id, hash"),
    ("index", "index", "persistent index files: build, add, query, info, verify"),
    ("tune", "tune", "measure simhash against exact Jaccard on a sample: precision, recall, recommended k"),
    ("report", "report", "an HTML page of what a run found: numbers, charts, clusters, pairs side by side"),
)

DESCRIPTION = """\
Near-duplicate detection with simhash fingerprints (SPEC v1) and permuted-table
Hamming search. '-' stands for stdin or stdout; JSON lines may be gzip or zstd
compressed. 'rsimhash COMMAND --help' documents each command.

examples:
  rsimhash dedup --input corpus.jsonl --output kept.jsonl --removed removed.tsv
  rsimhash cluster --input corpus.jsonl --distance 3 --output clusters.tsv
  rsimhash find-all --input hashes.txt --distance 3
  rsimhash fingerprint --input corpus.jsonl --output hashes.tsv
  rsimhash index build --input corpus.jsonl --output corpus.rsh
  rsimhash tune --input corpus.jsonl --jaccard 0.9 --plot curves.png
  rsimhash report --input corpus.jsonl --removed removed.tsv --output report.html
"""


def _command_of(args: Sequence[str]) -> str:
    """The command ``args`` name: the first that is no option (the top level
    has only ``--help`` and ``--version``), or ``""`` for none."""
    return next((a for a in args if not a.startswith("-")), "")


class _Parser(argparse.ArgumentParser):
    """An ArgumentParser whose errors are one ``UsageError`` line, not usage text."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{message} (see {self.prog} --help)")


def build_parser(only: Optional[str] = None) -> argparse.ArgumentParser:
    """The command line's parser: every command's arguments, or with
    ``only`` those of that command alone (the others are still listed, with
    their help, but their modules are not imported; ``""``: none's)."""
    from .. import __version__

    parser = _Parser(
        prog=PROG,
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="exit codes: 0 done, 1 bad data or files, 2 bad command line, 130 interrupted,\n141 stdout closed early (| head)",
    )
    parser.add_argument("--version", action="version", version=f"{PROG} {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", title="commands")
    for name, module_name, help_line in COMMANDS:
        if only is not None and name != only:
            sub.add_parser(name, help=help_line)
            continue
        module = importlib.import_module(f".{module_name}", __name__)
        p = sub.add_parser(
            name, help=help_line, description=module.DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter
        )
        module.add_arguments(p)
        if name in report.REPORTED:
            report.add_report_option(p)
        if name != "index":
            p.set_defaults(run=module.run)
    return parser


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Runs the command line ``argv`` (default ``sys.argv[1:]``); returns the exit code."""
    progress.run_start = progress.process_start() if argv is None else time.perf_counter()
    args_list: List[str] = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser(only=_command_of(args_list))
    try:
        if not args_list:
            parser.print_help(sys.stderr)
            return EXIT_USAGE
        args = parser.parse_args(args_list)
        args.argv = args_list
        if argv is None:
            # A process of its own: what is made by now (the modules, the
            # parser) lives until exit, so the collector need not walk it
            # again, at the end above all (15 ms of a dedup run's exit).
            gc.freeze()
        # Every path the run reads and writes, checked by the write gate before
        # anything is written; output directories and stores locked for the run.
        with paths.plan(args).hold():
            if getattr(args, "report", None) is not None:
                return report.with_report(args)
            return int(args.run(args))
    except CliError as e:
        print(e.line(), file=sys.stderr, flush=True)
        return e.code
    except GateError as e:  # an output that would touch what the run did not make
        print(f"{PROG}: error: {e}", file=sys.stderr, flush=True)
        return EXIT_USAGE
    except (RecordError, RecordRequestError) as e:  # the record readers': the data is wrong, or the request
        print(f"{PROG}: error: {e}", file=sys.stderr, flush=True)
        return EXIT_USAGE if isinstance(e, RecordRequestError) else EXIT_DATA
    except SystemExit as e:  # --help and --version
        return e.code if isinstance(e.code, int) else 0
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted", file=sys.stderr, flush=True)
        return EXIT_INTERRUPT
    except BrokenPipeError:
        # The reader of stdout went away (| head): stop quietly, and keep Python from
        # complaining again when it flushes stdout at exit.
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
        except (OSError, ValueError, AttributeError):
            pass
        return EXIT_BROKEN_PIPE
    except OSError as e:  # a full disk, a vanished directory: not a bug, not a traceback
        print(f"{PROG}: error: {e}", file=sys.stderr, flush=True)
        return 1
    except MemoryError as e:  # the core's names the memory needed and what to do
        print(f"{PROG}: error: {e or 'out of memory'}", file=sys.stderr, flush=True)
        return 1
