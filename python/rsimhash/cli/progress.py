"""Progress bar and end-of-run summary, both on stderr.

The bar (tqdm) shows bytes read, MB/s, records and elapsed time; it is drawn
only when stderr is a terminal, tqdm is installed and ``--quiet`` is not
given, so piped or logged runs stay clean. The summary is one line at the
end, unless ``--quiet``.
"""

from __future__ import annotations

import os
import sys
import time
from typing import Any, Optional

from .._optional import module

# The summary line of the last run in this process, printed or not.
last_summary: Optional[str] = None

# When the command started (``cli.main`` sets it, from the process's start
# where the system tells it): the summary's time is the whole run's, imports
# included, not that of the pass whose bar printed it.
run_start: Optional[float] = None


# When this module was first imported: the command line imports it early,
# so a run's time includes most of its imports.
_IMPORTED = time.perf_counter()


def _process_age() -> Optional[float]:
    """Seconds since this process started, from its start time in
    /proc/self/stat against the same clock (CLOCK_BOOTTIME; /proc/uptime
    is another clock in some containers, and was minutes off in one: a
    15-record run said 496.5 s). None where the system does not tell, or
    tells something implausible."""
    try:
        with open("/proc/self/stat", "rb") as f:
            fields = f.read().rsplit(b")", 1)[1].split()
        age = time.clock_gettime(time.CLOCK_BOOTTIME) - int(fields[19]) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError, AttributeError):
        return None
    # Imports take seconds at most: anything else is a clock we misread.
    return age if 0 <= age <= 30 else None


_AGE = _process_age()
_STARTED = _IMPORTED - _AGE if _AGE is not None else _IMPORTED


def process_start() -> float:
    """``time.perf_counter()`` of this run's start: the process's start
    where the system tells it plausibly, else when the command line's
    modules were first imported."""
    return _STARTED


class Progress:
    """A byte-based progress bar that may be absent; always keeps the clock."""

    def __init__(self, desc: str, total: Optional[int], quiet: bool):
        self.start = run_start if run_start is not None else time.perf_counter()
        self.quiet = quiet
        self._bar: Any = None
        if quiet or not _isatty(sys.stderr):
            return
        try:
            tqdm = module("tqdm").tqdm
        except ImportError:
            return
        try:
            sized = os.get_terminal_size(sys.stderr.fileno()).columns > 0
        except (OSError, ValueError, AttributeError):
            sized = False
        # a terminal that reports no width (a bare pty) gets 80 columns, not an empty bar
        self._bar = tqdm(
            total=total or None,
            desc=desc,
            unit="B",
            unit_scale=True,
            unit_divisor=1000,
            file=sys.stderr,
            mininterval=0.25,
            leave=False,
            dynamic_ncols=sized,
            ncols=None if sized else 80,
            nrows=None if sized else 24,
        )

    def update(self, position: int, records: int, shards: Optional["tuple[int, int]"] = None) -> None:
        """The input has been read up to byte ``position``; ``records`` so
        far; ``shards`` done of all, of a sharded input (the bar's total is
        all shards' bytes, so its time left covers them all)."""
        if self._bar is None:
            return
        if position > self._bar.n:
            where = f", shard {shards[0]:,}/{shards[1]:,}" if shards is not None else ""
            self._bar.set_postfix_str(f"{records:,} records{where}", refresh=False)
            self._bar.update(position - self._bar.n)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None

    def elapsed(self) -> float:
        return time.perf_counter() - self.start

    def summary(self, command: str, parts: "list[str]", nbytes: Optional[int] = None) -> None:
        """Prints ``rsimhash COMMAND: part, part, ..., T s (R MB/s)`` unless
        quiet, and keeps it in ``last_summary`` (for ``--report``) either way."""
        global last_summary
        self.close()
        seconds = self.elapsed()
        tail = f"{seconds:.1f} s"
        if nbytes and nbytes >= 1_000_000 and seconds >= 0.1:
            tail += f" ({nbytes / 1e6 / max(seconds, 1e-9):,.0f} MB/s)"
        last_summary = f"rsimhash {command}: {', '.join(parts + [tail])}"
        if not self.quiet:
            print(last_summary, file=sys.stderr, flush=True)
        # Every command's first part counts what it read; nothing read is
        # most likely a wrong file, worth a word even under --quiet.
        if parts and parts[0].startswith("0 ") and " read" in parts[0]:
            print(f"rsimhash {command}: warning: {parts[0]}: the input is empty", file=sys.stderr, flush=True)


def _isatty(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


def count(n: int, singular: str, plural: Optional[str] = None) -> str:
    """``1 record``, ``12,345 records``."""
    word = singular if n == 1 else (plural or singular + "s")
    return f"{n:,} {word}"
