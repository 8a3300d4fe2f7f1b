"""One-line near-duplicate removal for ETL scripts: ``rsimhash.dedup``.

``dedup(texts, k=3)`` returns a keep mask: ``True`` for every text that is not
within ``k`` bits of a text kept before it (``Index.add_unique`` in order, the
same rule as ``rsimhash dedup`` on the command line), so the first of each
group of near-duplicates is kept. The mask has the kind of its input:

* a pandas ``Series``: a boolean ``Series`` with the same index
  (``df[rsimhash.dedup(df["text"])]``);
* a polars ``Series``: a polars ``Boolean`` Series
  (``df.filter(rsimhash.dedup(df["text"]))``);
* a pyarrow ``Array`` or ``ChunkedArray``: a pyarrow ``BooleanArray``
  (``table.filter(rsimhash.dedup(table["text"]))``), read in place;
* anything else (a list, tuple, numpy array or iterable of str): a numpy
  ``bool`` array.

pandas, polars and pyarrow are never imported unless the input is theirs. A
missing value (None, NaN, null) is a ``TypeError`` naming its position.
"""

from __future__ import annotations

from typing import Any, Dict, Optional

import numpy as np

from ._optional import module

__all__ = ["dedup"]


def dedup(
    texts: Any,
    k: int = 3,
    *,
    mode: str = "words",
    width: Optional[int] = None,
    threads: Optional[int] = None,
) -> Any:
    """Keep mask of ``texts``: False exactly for each text within ``k`` bits of
    a text kept before it. See the module documentation for the mask's type."""
    from . import Index, fingerprints

    kind = type(texts).__module__.split(".", 1)[0]
    index = Index(k)  # checks k before any work
    options: Dict[str, Any] = dict(mode=mode, width=width, threads=threads)
    if kind == "pandas" and type(texts).__name__ == "Series":
        values = texts.to_numpy(dtype=object, na_value=None)
        keep = _keep(index, fingerprints(values, **options))
        return module("pandas").Series(keep, index=texts.index, name=texts.name, dtype=bool)
    if kind == "polars" and type(texts).__name__ == "Series":
        pl = module("polars")
        if texts.null_count():
            first = texts.is_null().arg_true()[0]
            raise TypeError(f"texts[{first}] must be str, got None (a null in the polars Series)")
        keep = _keep(index, fingerprints(texts.to_arrow(), **options))
        return pl.Series(texts.name, keep, dtype=pl.Boolean)
    if kind == "pyarrow":
        pa = module("pyarrow")
        keep = _keep(index, fingerprints(texts, **options))
        return pa.array(keep, type=pa.bool_())
    return _keep(index, fingerprints(texts, **options))


def _keep(index: Any, fps: np.ndarray) -> np.ndarray:
    is_new, _ = index.add_unique(fps)
    return np.asarray(is_new, dtype=bool)
