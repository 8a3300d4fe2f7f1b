"""Imports of optional packages (pyarrow, pandas, polars, tqdm, zstandard).

Imported by name at the point of use, so that the package never needs them
and its type checking does not depend on which of them (and their stubs)
happen to be installed.
"""

from __future__ import annotations

import importlib
from typing import Any


def module(name: str) -> Any:
    """``import name``; raises ImportError when it is not installed."""
    return importlib.import_module(name)
