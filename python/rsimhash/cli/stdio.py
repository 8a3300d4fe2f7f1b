"""The standard streams, when a command reads ``-`` or writes ``-``.

A process started with its standard input or output closed (``<&-``,
``>&-``) has ``sys.stdin`` or ``sys.stdout`` set to ``None`` by Python, and
its descriptor 0 or 1 may already belong to a file the command opened. A
command that would read or write such a stream stops with one line and exit
code 2 (the command line asks for a stream that is not there), instead of a
traceback, and never reads or writes whatever file took the descriptor.
"""

from __future__ import annotations

import sys
from typing import BinaryIO

from .._records import stdin as _stdin
from .._records.errors import RecordRequestError
from .._records.stdin import is_open as _is_open
from .errors import UsageError


def stdin_fd(flag: str = "--input") -> int:
    """Standard input's descriptor, checked to be open; else a ``UsageError``."""
    try:
        return _stdin.stdin_fd(flag)
    except RecordRequestError as e:
        raise UsageError(str(e)) from None


def stdout_binary(flag: str = "--output", what: str = "") -> BinaryIO:
    """Standard output's binary stream, checked to be open."""
    if not _is_open(sys.stdout):
        raise UsageError((what or f"{flag} - writes standard output") + ", which is closed; give a file instead")
    return sys.stdout.buffer
