"""Refuse, with a clear message, to load the extension on a CPU it cannot run on.

The extension is built for x86-64-v2 (POPCNT, SSE4.2, SSSE3; see
``.cargo/config.toml``). On an older x86-64 CPU it would die with an illegal
instruction, so this pure-Python check runs first where the CPU flags are
readable (Linux); elsewhere it trusts the platform.
"""

from __future__ import annotations

import platform

_REQUIRED = ("popcnt", "sse4_2", "ssse3")


def check() -> None:
    if platform.machine().lower() not in ("x86_64", "amd64"):
        return
    try:
        with open("/proc/cpuinfo", encoding="ascii", errors="replace") as f:
            flags = next((line.split(":", 1)[1].split() for line in f if line.startswith("flags")), None)
    except OSError:
        return
    if flags is None:
        return
    missing = [flag for flag in _REQUIRED if flag not in flags]
    if missing:
        raise ImportError(
            f"this rsimhash build needs an x86-64-v2 CPU; this one lacks {', '.join(missing)}. "
            "Build from source without .cargo/config.toml's target-cpu setting to run here."
        )
