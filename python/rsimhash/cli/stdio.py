"""The standard streams, when a command reads ``-`` or writes ``-``.

A process started with its standard input or output closed (``<&-``,
``>&-``) has ``sys.stdin`` or ``sys.stdout`` set to ``None`` by Python, and
its descriptor 0 or 1 may already belong to a file the command opened. A
command that would read or write such a stream stops with one line and exit
code 2 (the command line asks for a stream that is not there), instead of a
traceback, and never reads or writes whatever file took the descriptor.
"""

from __future__ import annotations

import os
import sys
from typing import Any, BinaryIO

from .errors import UsageError


def _fd(stream: Any, expected: int) -> "int | None":
    """The stream's descriptor if it is open and still the standard one."""
    if stream is None:
        return None
    try:
        fd = stream.fileno()
        os.fstat(fd)
    except (AttributeError, ValueError, OSError):
        return None
    return fd if fd == expected else None


def stdin_fd(flag: str = "--input") -> int:
    """Descriptor 0, checked to be standard input; else a ``UsageError``."""
    fd = _fd(sys.stdin, 0)
    if fd is None:
        raise UsageError(f"{flag} - reads standard input, which is closed; give a file instead")
    return fd


def stdin_binary(flag: str = "--input") -> BinaryIO:
    """Standard input's binary stream, checked to be open."""
    stdin_fd(flag)
    return sys.stdin.buffer


def stdout_binary(flag: str = "--output", what: str = "") -> BinaryIO:
    """Standard output's binary stream, checked to be open."""
    if _fd(sys.stdout, 1) is None:
        raise UsageError((what or f"{flag} - writes standard output") + ", which is closed; give a file instead")
    return sys.stdout.buffer
