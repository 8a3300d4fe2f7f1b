"""Errors of the command line, each printed as one line on stderr.

Exit codes: 0 success; 1 the data or a file is wrong (a bad input line, an
unreadable path, a damaged index file); 2 the command line is wrong (an
unknown flag or format, ``--distance`` not below ``--blocks``); 130 Ctrl-C;
141 stdout closed early by the reader (``| head``), as a shell reports a
process killed by SIGPIPE.
"""

from __future__ import annotations

import sys

from .._records.errors import RecordError

EXIT_OK = 0
EXIT_DATA = 1
EXIT_USAGE = 2
EXIT_INTERRUPT = 130
EXIT_BROKEN_PIPE = 141

PROG = "rsimhash"


class CliError(Exception):
    """An error that ends the run with one line on stderr and ``code``."""

    code = EXIT_DATA

    def line(self) -> str:
        return f"{PROG}: error: {self}"


class UsageError(CliError):
    """The command line itself is wrong: exit code 2."""

    code = EXIT_USAGE


class InputError(CliError, RecordError):
    """A problem in an input (or index) file, at a line when there is one:
    the record readers' ``RecordError`` (same fields, same text), raised by
    the command line's own readers (index, ids and store files, shards).

    ``line`` is 1-based and counts every physical line, a header included; a
    Parquet row is named as ``row N``.
    """


class BadLines:
    """Counts (and, with ``--skip-bad-lines``, reports and forgives) bad lines.

    Without ``skip`` the first bad line is raised (a ``RecordError``). With
    it, each is reported as one warning line, at most ``limit`` of them, then
    one line saying that further ones are counted but not shown.
    """

    def __init__(self, skip: bool, limit: int = 20, quiet: bool = False):
        self.skip = skip
        self.limit = limit
        self.quiet = quiet  # a second reading: the first has reported them
        self.count = 0

    def __call__(self, error: RecordError) -> None:
        if not self.skip:
            raise error
        self.count += 1
        if self.quiet:
            return
        if self.count <= self.limit:
            _warn(f"{error} (line skipped)")
        elif self.count == self.limit + 1:
            _warn("more bad lines are skipped without a message; the summary counts them")


def _warn(message: str) -> None:
    # On a terminal, first clear the progress bar's line; it is redrawn at the next update.
    clear = "\r\x1b[K" if _isatty(sys.stderr) else ""
    print(f"{clear}{PROG}: warning: {message}", file=sys.stderr, flush=True)


def _isatty(stream: object) -> bool:
    try:
        return bool(stream.isatty())  # type: ignore[attr-defined]
    except (AttributeError, ValueError):
        return False
