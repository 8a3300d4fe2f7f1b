"""Memory sizes: what ``memory_limit=`` (and ``--memory-limit``) takes, and
the default limit of a job, from the memory available when it starts.
"""

from __future__ import annotations

import os
import re
from typing import Union

from ._optional import module

MAX_BYTES = (1 << 63) - 1

# Memory of the exact join per byte of the sets held (SimilarCorpus.nbytes):
# the sets themselves, and while the join runs its sketch of the counts,
# each set's labels in order, the indexed prefixes' numbering and the lists
# (docs/similar.md). Peak RSS grew by 1.6-1.7 times the sets' bytes at 0.9
# and 3.15 at 0.5 during the join of 40,000 texts of 150 random words (47
# MiB of sets), 1.5 and 2.9 on the 13,000 texts of the quality corpus; 3.5
# leaves some room. The batch jobs hold the exact join to memory_limit by
# it; tune reports it.
JOIN_BYTES_PER_SET_BYTE = 3.5

_UNITS = {
    "": 1,
    "b": 1,
    "k": 1 << 10,
    "kib": 1 << 10,
    "kb": 10**3,
    "m": 1 << 20,
    "mib": 1 << 20,
    "mb": 10**6,
    "g": 1 << 30,
    "gib": 1 << 30,
    "gb": 10**9,
    "t": 1 << 40,
    "tib": 1 << 40,
    "tb": 10**12,
}


def parse_memory(value: Union[int, float, str]) -> int:
    """Bytes from ``8589934592``, ``"8GiB"``, ``"8g"`` (binary), ``"8GB"`` (decimal) or ``"1.5G"``.

    What ``memory_limit=`` takes. Raises ``ValueError`` for another string or
    less than 1 KiB, ``TypeError`` for another type.

    >>> rsimhash.batch.parse_memory("8GiB"), rsimhash.batch.parse_memory("8g")
    (8589934592, 8589934592)
    >>> rsimhash.batch.parse_memory("8GB"), rsimhash.batch.parse_memory("1.5G")
    (8000000000, 1610612736)
    """
    if isinstance(value, bool):
        raise TypeError(f"memory_limit must be a number of bytes or a string like '8GiB', got {value!r}")
    if isinstance(value, (int, float)):
        number, unit = (value if isinstance(value, int) else float(value)), ""
    elif isinstance(value, str):
        m = re.fullmatch(r"\s*([0-9]*\.?[0-9]+(?:[eE][0-9]+)?)\s*([A-Za-z]*)\s*", value)
        if m is None or m.group(2).lower() not in _UNITS:
            raise ValueError(f"memory_limit must be a number of bytes or a string like '8GiB', '500MB' or '2g', got {value!r}")
        number, unit = float(m.group(1)), m.group(2).lower()
    else:
        raise TypeError(f"memory_limit must be a number of bytes or a string like '8GiB', got {type(value).__name__}")
    if isinstance(number, float) and (number != number or number in (float("inf"), float("-inf"))):
        raise ValueError(f"memory_limit must be a finite number of bytes, got {value!r}")
    size = int(number * _UNITS[unit])
    # Limits under a few MiB only make jobs slow (every table in many
    # parts); tests use them to force parts and spills on small inputs.
    if size < 1 << 10:
        raise ValueError(f"memory_limit must be at least 1 KiB, got {value!r} ({size} bytes)")
    if size > MAX_BYTES:
        raise ValueError(f"memory_limit must be at most 2**63-1 bytes (8 EiB), got {value!r}")
    return size


def available_memory() -> int:
    """Bytes of memory available to new work (Linux MemAvailable; else all of it)."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return int(module("psutil").virtual_memory().available)
    except ImportError:
        pass
    try:
        return int(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
    except (ValueError, OSError, AttributeError):
        return 8 << 30


def format_bytes(n: float) -> str:
    """A size as people read it: ``"1.5 GiB"``, ``"12.0 MiB"``, ``"300 bytes"``."""
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size:
            return f"{n / size:,.1f} {unit}"
    return f"{n:,.0f} bytes"


def memory_limit(value: Union[None, int, float, str]) -> int:
    """The job's limit in bytes: as given, or 60 % of the memory available now."""
    if value is None:
        return max(int(available_memory() * 0.6), 64 << 20)
    return parse_memory(value)
