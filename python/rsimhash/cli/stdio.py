"""The standard streams, when a command reads ``-`` or writes ``-``.

A process started with its standard input or output closed (``<&-``,
``>&-``) has ``sys.stdin`` or ``sys.stdout`` set to ``None`` by Python, and
its descriptor 0 or 1 may already belong to a file the command opened. A
command that would read or write such a stream stops with one line and exit
code 2 (the command line asks for a stream that is not there), instead of a
traceback, and never reads or writes whatever file took the descriptor.
"""

from __future__ import annotations

import io
import os
import sys
from typing import Any, BinaryIO

from .errors import UsageError


def _is_open(stream: Any) -> bool:
    """Whether ``stream`` is there to use: Python sets a stream closed at
    start to ``None``; a stream the caller put in its place (a test's
    ``io.StringIO``, which has no descriptor) is used as it is."""
    if stream is None or getattr(stream, "closed", False):
        return False
    try:
        os.fstat(stream.fileno())
    except io.UnsupportedOperation:
        return True  # an in-memory stream
    except (AttributeError, ValueError, OSError):
        return False
    return True


def stdin_fd(flag: str = "--input") -> int:
    """Standard input's descriptor, checked to be open; else a ``UsageError``."""
    if not _is_open(sys.stdin):
        raise UsageError(f"{flag} - reads standard input, which is closed; give a file instead")
    try:
        return sys.stdin.fileno()
    except io.UnsupportedOperation:  # replaced by an in-memory stream
        raise UsageError(f"{flag} - reads standard input's descriptor, which sys.stdin lacks; give a file instead") from None


def stdin_binary(flag: str = "--input") -> BinaryIO:
    """Standard input's binary stream, checked to be open."""
    stdin_fd(flag)
    return sys.stdin.buffer


def stdout_binary(flag: str = "--output", what: str = "") -> BinaryIO:
    """Standard output's binary stream, checked to be open."""
    if not _is_open(sys.stdout):
        raise UsageError((what or f"{flag} - writes standard output") + ", which is closed; give a file instead")
    return sys.stdout.buffer
