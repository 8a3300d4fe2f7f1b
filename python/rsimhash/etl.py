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

``dedup(texts, jaccard=0.9)`` applies the same rule to the exact Jaccard
similarity of the texts' shingle sets instead (see ``rsimhash.similar_pairs``):
a text goes when it is at least 0.9 alike a text kept before it.

pandas, polars and pyarrow are never imported unless the input is theirs. A
missing value (None, NaN, null) is a ``TypeError`` naming its position.
"""

from __future__ import annotations

from typing import Any, Optional

import numpy as np

from . import _texts
from ._optional import module

__all__ = ["dedup"]


def dedup(
    texts: Any,
    k: Optional[int] = None,
    *,
    mode: str = "words",
    width: Optional[int] = None,
    threads: Optional[int] = None,
    jaccard: Optional[float] = None,
    candidates: Any = "auto",
    measure: str = "jaccard",
    nulls: str = "error",
) -> Any:
    """Keep mask of ``texts``: False exactly for each text within ``k`` bits of
    a text kept before it (``Index.add_unique`` in order), so the first of each
    group of near-duplicates is kept.

    The mask has the kind of its input: a pandas Series gives a boolean Series
    with the same index, a polars Series a Boolean Series, a pyarrow array a
    ``BooleanArray``, anything else (a list or iterable of str) a numpy
    ``bool`` array. A missing value (None, NaN, null) is a ``TypeError``
    naming its position (``nulls="error"``), or is kept and never matches
    (``"keep"``: True in the mask), or dropped (``"drop"``: False).

    With ``jaccard=T``: False exactly for each text whose shingle set (SPEC
    v1 shingles of ``mode``/``width``, words of 3 by default) is at least
    ``T`` alike the set of a text kept before it: every such text with
    ``candidates="exact"`` or ``"auto"`` (the exact join of all the sets,
    held in memory), else among the candidates ``(mode, width, k)`` (only
    the kept texts' sets held; see ``rsimhash.similar_pairs``); ``k`` is then the candidates' business,
    and giving it is a ``ValueError`` (as ``--distance`` with ``--jaccard``
    is on the command line). ``k`` defaults to 3 without ``jaccard=``.

    >>> rsimhash.dedup(["a b c d e f", "a b c d e f!", "x y z"]).tolist()
    [True, False, True]
    >>> texts = ["a b c d e f g", "a b c d e f g h", "x y z"]
    >>> rsimhash.dedup(texts).tolist(), rsimhash.dedup(texts, jaccard=0.5).tolist()
    ([True, True, True], [True, False, True])
    """
    from . import Index

    if k is not None and (isinstance(k, bool) or not isinstance(k, (int, np.integer))):
        raise TypeError(f"k must be an int (bits of Hamming distance), got {type(k).__name__}")
    if jaccard is not None and k is not None:
        raise ValueError(
            f"k={k} is for fingerprints within k bits and has no effect with jaccard=; "
            "leave it out, or give the candidates' k as candidates=(mode, width, k)"
        )
    from . import _nulls

    present, missing = _nulls.split(texts, nulls)
    pieces = list(_texts.pieces(present))
    if jaccard is not None and _exact(candidates):
        from .similar import SimilarCorpus

        if mode not in ("words", "chars"):
            raise ValueError(f'mode must be "words" or "chars", got {mode!r}')
        # Every set held, then every pair by the exact join, then the dedup.
        corpus = SimilarCorpus(jaccard, shingles=mode, width=width, candidates="exact", measure=measure)
        for p in pieces:
            corpus._core.add(p.core() if isinstance(p, _texts.ArrowBuffers) else p, threads=threads)
        keep = corpus.dedup(threads=threads, progress=False)[0]
    elif jaccard is not None:
        from ._rsimhash import OnlineDedup
        from .similar import _threshold, candidates_arg

        # In order, a piece at a time: only the kept texts' sets are held.
        online = OnlineDedup(
            _threshold(jaccard), measure=measure, shingles=mode, width=width, candidates=candidates_arg(candidates)
        )
        parts = [online.add(p.core() if isinstance(p, _texts.ArrowBuffers) else p, threads=threads)[0] for p in pieces]
        keep = np.concatenate(parts) if parts else np.empty(0, dtype=bool)
    else:
        index = Index(3 if k is None else int(k))  # checks k's range before any work
        is_new, _ = index.add_unique(_texts.fingerprint_pieces(pieces, mode=mode, width=width, threads=threads))
        keep = np.asarray(is_new, dtype=bool)
    if missing is not None:
        full = np.full(len(missing), nulls == "keep", dtype=bool)
        full[~missing] = keep
        keep = full
    return _mask_like(texts, keep)


def _exact(candidates: Any) -> bool:
    from .similar import join_is_exact

    return join_is_exact(candidates)


def _mask_like(texts: Any, keep: np.ndarray) -> Any:
    """The keep mask as the kind of column ``texts`` is."""
    kind = _texts.kind(texts)
    if kind == "pandas":
        return module("pandas").Series(keep, index=texts.index, name=texts.name, dtype=bool)
    if kind == "polars":
        pl = module("polars")
        return pl.Series(texts.name, keep, dtype=pl.Boolean)
    if kind == "pyarrow":
        pa = module("pyarrow")
        return pa.array(keep, type=pa.bool_())
    return keep
