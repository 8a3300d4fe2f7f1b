"""Standard input, when a reader reads ``-``.

A process started with its standard input closed (``<&-``) has
``sys.stdin`` set to ``None`` by Python, and its descriptor 0 may already
belong to a file the process opened. Reading such a stream is a
``RecordRequestError`` naming the flag, instead of a traceback, and never
reads whatever file took the descriptor.
"""

from __future__ import annotations

import io
import os
import sys
from typing import Any, BinaryIO

from .errors import RecordRequestError


def is_open(stream: Any) -> bool:
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
    """Standard input's descriptor, checked to be open; else a ``RecordRequestError``."""
    if not is_open(sys.stdin):
        raise RecordRequestError(f"{flag} - reads standard input, which is closed; give a file instead")
    try:
        return sys.stdin.fileno()
    except io.UnsupportedOperation:  # replaced by an in-memory stream
        raise RecordRequestError(
            f"{flag} - reads standard input's descriptor, which sys.stdin lacks; give a file instead"
        ) from None


def stdin_binary(flag: str = "--input") -> BinaryIO:
    """Standard input's binary stream, checked to be open."""
    stdin_fd(flag)
    return sys.stdin.buffer
