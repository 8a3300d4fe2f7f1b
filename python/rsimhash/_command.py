"""Whether this process is the ``rsimhash`` command, settled before numpy
is imported.

numpy loads OpenBLAS, which starts a thread per core at import that spins
for a while: 0.1 to 0.2 CPU-seconds in every process, and 0.1 s of each
command's start (measured on two cores). rsimhash does no linear algebra.
A library must not change its host's settings, so only a process that is
the command (the ``rsimhash`` script, ``python -m rsimhash`` or ``python -m
rsimhash.cli``) asks OpenBLAS for one thread, and only where the user has
not set ``OPENBLAS_NUM_THREADS`` themselves.
"""

from __future__ import annotations

import os
import sys
from typing import List

COMMAND_MODULES = ("rsimhash", "rsimhash.cli")


def is_command(argv: List[str], orig_argv: List[str]) -> bool:
    """The process runs the command: its script is ``rsimhash``, or the
    interpreter was started with ``-m`` one of ``COMMAND_MODULES``
    (``orig_argv``: Python 3.10+; ``argv[0]`` is only ``-m`` while the
    module's package is imported)."""
    skip = False
    for i, arg in enumerate(orig_argv[1:], 1):
        if skip:  # the value of an option before it
            skip = False
        elif arg == "-m":
            return orig_argv[i + 1 : i + 2] in ([m] for m in COMMAND_MODULES)
        elif arg.startswith("-m"):
            return arg[2:] in COMMAND_MODULES
        elif arg in ("-X", "-W", "--check-hash-based-pycs"):
            skip = True
        elif arg in ("-c", "-", "--") or not arg.startswith("-"):
            break  # a program, a script or stdin: not the module
    name = os.path.basename(argv[0]) if argv else ""
    return name in ("rsimhash", "rsimhash.exe")


def quiet_blas() -> None:
    """One OpenBLAS thread for the command's process, unless set already."""
    if "numpy" not in sys.modules and is_command(sys.argv, list(getattr(sys, "orig_argv", []))):
        os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
