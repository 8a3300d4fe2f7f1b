"""Missing texts (None, NaN, a null of pandas, polars or pyarrow) under
``nulls=`` for ``fingerprints``, ``dedup`` and ``similar_pairs``:

* ``"error"`` (the default): a ``TypeError`` naming the first position;
* ``"keep"``: the row stays in the answer's positions and never pairs;
* ``"drop"``: the row leaves the answer (``dedup``: its mask is False;
  ``fingerprints``: it has no fingerprint).

Invariant: the non-null texts reach the core in their order, so positions
map back by one ``flatnonzero`` of the mask."""

from __future__ import annotations

import math
from typing import Any, Optional, Tuple

import numpy as np

from . import _arrow, _texts

__all__ = ["check", "split"]

NULLS = ("error", "keep", "drop")


def check(nulls: Any) -> str:
    if nulls not in NULLS:
        raise ValueError(f'nulls must be "error", "keep" or "drop", got {nulls!r}')
    return nulls


def _is_null(x: Any) -> bool:
    return x is None or (isinstance(x, float) and math.isnan(x))


def split(texts: Any, nulls: str) -> Tuple[Any, Optional[np.ndarray]]:
    """``(texts without their nulls, null mask)``; the mask is None when
    ``nulls="error"`` (the core names a null) or no text is null."""
    if check(nulls) == "error":
        return texts, None
    kind = _texts.kind(texts)
    if kind == "pandas":
        mask = np.asarray(texts.isna(), dtype=bool)
        return (texts[~mask] if mask.any() else texts), (mask if mask.any() else None)
    if kind == "polars":
        mask = texts.is_null().to_numpy()
        return (texts.filter(~texts.is_null()) if mask.any() else texts), (mask if mask.any() else None)
    if kind == "pyarrow":
        mask = np.asarray(texts.is_null().to_numpy(zero_copy_only=False), dtype=bool)
        return (texts.filter(_arrow.booleans(~mask)) if mask.any() else texts), (mask if mask.any() else None)
    if isinstance(texts, (str, bytes)):
        return texts, None
    items = list(texts)
    mask = np.fromiter((_is_null(x) for x in items), dtype=bool, count=len(items))
    if not mask.any():
        return items, None
    return [x for x, m in zip(items, mask.tolist()) if not m], mask
