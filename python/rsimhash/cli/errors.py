"""Errors of the command line, each printed as one line on stderr.

Exit codes: 0 success; 1 the data or a file is wrong (a bad input line, an
unreadable path, a damaged index file); 2 the command line is wrong (an
unknown flag or format, ``--distance`` not below ``--blocks``); 130 Ctrl-C;
141 stdout closed early by the reader (``| head``), as a shell reports a
process killed by SIGPIPE.
"""

from __future__ import annotations

import sys

from .._ids import not_utf8
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


class UnencodableError(CliError):
    """An id (or a name) that the output's encoding, UTF-8, cannot hold."""


def utf8(text: str) -> bytes:
    """Rows of a text output as UTF-8. An id that UTF-8 cannot hold (a lone
    surrogate, which a JSON escape such as ``"\\ud800"`` makes) is an
    ``UnencodableError`` naming the field that holds it: a TSV has no escape
    for it, and writing something else would be a silent wrong answer."""
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError as e:
        start = max(text.rfind("\t", 0, e.start), text.rfind("\n", 0, e.start)) + 1
        ends = [i for i in (text.find("\t", e.end), text.find("\n", e.end)) if i >= 0]
        field = text[start : min(ends) if ends else len(text)]
        raise UnencodableError(f"{not_utf8(field, e.start - start)}; fix it in the input") from None
