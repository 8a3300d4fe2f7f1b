"""``SimilarIndex``: texts held by id, answering which stored texts are at
least a threshold alike a text, exactly (the online counterpart of
``similar_pairs``, and what users of datasketch's ``MinHashLSH`` look for).

Each text is held as its candidate fingerprint (in an ``Index``) and its
shingle set. A query's candidates are the stored texts whose fingerprints
are within the candidates' ``k`` bits of its own; each is confirmed by the
exact similarity of the two sets, so every match is at least the threshold
alike (precision 1) and the similarity is the one ``similar_pairs`` and
``rsimhash.jaccard`` report. With ``candidates="exact"`` the candidates are
those of an online prefix index instead, which holds every alike stored
text: every match is found (recall 1). The work runs in Rust with the GIL released;
queries from many threads run at once, changes one at a time.
"""

from __future__ import annotations

import os
from typing import Any, Dict, List, Optional, Tuple, Union

import numpy as np

from . import _ids, _rsimhash, _texts
from .similar import CandidatesArg, _threshold, candidates_arg, check_shingles, series_labels

__all__ = ["SimilarIndex"]


def _core_texts(texts: Any) -> Any:
    """The texts as one piece the core takes: a sequence of str, or the
    ``(offsets, data)`` of Arrow chunks joined into one. One ``str`` is one
    text, in every method (as ``query`` takes it)."""
    if isinstance(texts, str):
        return [texts]
    if isinstance(texts, (bytes, bytearray)):
        raise TypeError(f"texts must be a str or a sequence of str, got {type(texts).__name__}: decode it first")
    pieces = list(_texts.pieces(texts))
    if len(pieces) == 1:
        p = pieces[0]
        if isinstance(p, _texts.ArrowBuffers):
            return p.core()
        return p if hasattr(p, "__len__") else list(p)
    if not pieces:
        return []
    offsets, data, base = [np.zeros(1, dtype=np.int64)], [], 0
    for p in pieces:
        o = p.offsets
        offsets.append(o[1:] - o[0] + base)
        data.append(p.data[o[0] : o[-1]])
        base += int(o[-1] - o[0])
    return np.concatenate(offsets), np.concatenate(data) if data else np.empty(0, np.uint8)


def _count(core_texts: Any) -> int:
    return len(core_texts[0]) - 1 if isinstance(core_texts, tuple) else len(core_texts)


def _ids_for(texts: Any, ids: Any, n: int) -> Any:
    """``ids`` for ``n`` texts, checked: a pandas Series without ``ids=``
    gives its index labels (as in ``similar_pairs``; one on the default
    index ``0..n-1`` counts up as a list does); one text takes one id
    as it is (``add("text", ids="a")``)."""
    if ids is None:
        ids = series_labels(texts)
        if ids is None:
            return None
    elif isinstance(texts, str) and (isinstance(ids, str) or np.isscalar(ids)):
        ids = [ids]
    return _ids.user_ids(ids, n)


MISSING = ("error", "ignore")


class SimilarIndex:
    """Texts held by id; ``query(text)`` gives every stored text whose
    shingle set is at least ``threshold`` alike the text's, among the
    candidates, as ``[(id, similarity), ...]`` by similarity (highest
    first), then id.

    ``shingles``/``width``/``measure``/``candidates`` as in
    ``similar_pairs``: the same texts give the same pairs and similarities
    (a stored text's query finds itself and exactly its pairs).
    ``candidates="exact"`` finds every stored text at least the threshold
    alike, by an online prefix index (each set's first ``|x| - ceil(T|x|)
    + 1`` shingles, rarest first by a count made again each time the
    index doubles; see ``docs/similar.md``); ``"auto"`` (the default) and
    ``(mode, width, k)`` take simhash candidates, whose recall
    ``rsimhash tune`` measures. Ids are
    non-negative ints (a list, an array of any integer dtype, a pandas
    Index), each stored once; without ``ids=`` they count up from one past
    the largest id given so far. Or strings, as ``Index`` takes them: the
    first add that stores anything decides, for good and in the saved
    file; ids then come back as strings (a numpy object array where ints
    come as ``uint64``), ties ordered by when the texts were added, and
    every add must give ids. A pandas Series gives its index labels as
    ids (unless ``ids=`` is given, or it is on the default index
    ``0..n-1``), as ``similar_pairs`` names pairs by them. One ``str`` is
    one text in every method that takes texts. Thread-safe: queries run at
    once, changes one at a time, all with the GIL released.

    For datasketch's ``MinHashLSH`` users: ``add`` is ``insert`` for many
    texts at once, ``query`` is ``query`` (with exact similarities, and a
    ``threshold=`` stricter than the index's), ``remove`` raises
    ``KeyError`` for an id not stored as ``remove`` does there (unless
    ``missing="ignore"``), and ``id in index`` is ``key in lsh``.

    >>> index = rsimhash.SimilarIndex(0.5)
    >>> index.add(["the cat sat on the mat", "a dog barked at the moon"], ids=[10, 20]).tolist()
    [10, 20]
    >>> index.query("the cat sat on the mat!")
    [(10, 1.0)]
    >>> index.query_batch(["the cat sat on the mat", "nothing like it"])
    (array([0]), array([10], dtype=uint64), array([1.], dtype=float32))
    >>> index.add_unique(["a dog barked at the moon again", "something new"], ids=[30, 40])
    (array([False,  True]), array([20, 40], dtype=uint64))
    >>> index.remove([10]), len(index)
    (1, 2)
    >>> index.add("one text alone").tolist()   # one str, one text
    [41]
    >>> index.info()["items"], index.info()["threshold"]
    (3, 0.5)
    >>> by_name = rsimhash.SimilarIndex(0.5)
    >>> by_name.add(["the cat sat on the mat", "a dog barked at the moon"], ids=["cat", "dog"]).tolist()
    ['cat', 'dog']
    >>> by_name.query("the cat sat on the mat!"), "dog" in by_name
    ([('cat', 1.0)], True)
    >>> import pandas as pd
    >>> urls = rsimhash.SimilarIndex(0.5)
    >>> urls.add(pd.Series(["the cat sat on the mat"], index=["https://a.example/cat"])).tolist()
    ['https://a.example/cat']
    """

    def __init__(
        self,
        threshold: float = 0.9,
        *,
        shingles: str = "words",
        width: Optional[int] = 3,
        candidates: CandidatesArg = "auto",
        measure: str = "jaccard",
    ):
        check_shingles(shingles)
        exact = isinstance(candidates, str) and candidates == "exact"
        self._core = _rsimhash.SimilarIndex(
            _threshold(threshold),
            measure=measure,
            shingles=shingles,
            width=width,
            candidates=None if exact else candidates_arg(candidates),
            exact=exact,
        )

    @classmethod
    def _of(cls, core: Any) -> "SimilarIndex":
        index = cls.__new__(cls)
        index._core = core
        return index

    def add(self, texts: Any, ids: Any = None, *, threads: Optional[int] = None) -> np.ndarray:
        """Stores ``texts`` (one str, a list or iterable of str, a pandas,
        polars or pyarrow column) under ``ids``; returns their ids
        (``uint64``, or a numpy object array of the string ids given). A
        pandas Series without ``ids=`` is stored under its index labels
        (see the class); one str takes one id, given alone or in a list. An
        id given twice or already stored is a ``ValueError``, and nothing is
        stored then.

        >>> index = rsimhash.SimilarIndex(0.5)
        >>> index.add(["the cat sat on the mat", "a dog barked at the moon"]).tolist()
        [0, 1]
        >>> index.add("one more text", ids=7).tolist()
        [7]
        """
        core = _core_texts(texts)
        return self._core.add(core, _ids_for(texts, ids, _count(core)), threads=threads)

    def _threshold_of(self, threshold: Any) -> Optional[float]:
        """A query's threshold: None for the index's, else at least it."""
        if threshold is None:
            return None
        t = _threshold(threshold)
        if not t <= 1.0:
            raise ValueError(f"threshold must be in (0, 1], got {threshold!r}")
        if t < self.threshold:
            held = "its prefixes are indexed" if self._core.exact else "its candidates are chosen"
            raise ValueError(
                f"threshold={threshold!r} is looser than the index's {self.threshold}: {held} "
                f"for {self.threshold} and could miss pairs below it; a query takes the index's threshold or a "
                f"stricter one (build a SimilarIndex({threshold!r}) for looser matches)"
            )
        return t

    def query(
        self, text: str, *, threshold: Optional[float] = None, threads: Optional[int] = None
    ) -> List[Tuple[Union[int, str], float]]:
        """``[(id, similarity), ...]`` of the stored texts at least the
        threshold alike ``text``, by similarity (highest first), then id.

        ``threshold``: the index's (``None``) or a stricter one, up to 1:
        exactly the index's matches at least that alike. A looser one is a
        ``ValueError`` (the candidates are chosen, or an exact index's
        prefixes indexed, for the index's).

        >>> index = rsimhash.SimilarIndex(0.5)
        >>> index.add(["the cat sat on the mat", "the cat sat on the mat today"], ids=["a", "b"]).tolist()
        ['a', 'b']
        >>> index.query("the cat sat on the mat")
        [('a', 1.0), ('b', 0.800000011920929)]
        >>> index.query("the cat sat on the mat", threshold=0.9)
        [('a', 1.0)]
        """
        if not isinstance(text, str):
            raise TypeError(f"text must be a str, got {type(text).__name__} (query_batch takes many)")
        _, ids, sims = self._core.query([text], threshold=self._threshold_of(threshold), threads=threads)
        return list(zip(ids.tolist(), sims.tolist()))

    def query_batch(
        self, texts: Any, *, threshold: Optional[float] = None, threads: Optional[int] = None
    ) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The matches of many texts: ``(positions, ids, similarity)``
        arrays (``int64``, ``uint64`` or object for string ids, ``float32``),
        one row a match, by position, then as ``query`` orders them;
        ``threshold`` as in ``query``. One str is one text.

        >>> index = rsimhash.SimilarIndex(0.5)
        >>> index.add(["the cat sat on the mat", "a dog barked at the moon"]).tolist()
        [0, 1]
        >>> index.query_batch(["a dog barked at the moon!", "the cat sat on the mat"])
        (array([0, 1]), array([1, 0], dtype=uint64), array([1., 1.], dtype=float32))
        """
        return self._core.query(_core_texts(texts), threshold=self._threshold_of(threshold), threads=threads)

    def add_unique(self, texts: Any, ids: Any = None, *, threads: Optional[int] = None) -> Tuple[np.ndarray, np.ndarray]:
        """For each text in order: new when no stored text and no earlier new
        text is at least the threshold alike it; new ones are stored.
        Returns ``(is_new, matched)``: ``matched`` is, for a text that is not
        new, the smallest id of the stored texts alike it or, when none is,
        the id of the earliest new text of this call alike it; for a new
        one, its own id (as ``Index.add_unique`` gives it: so
        ``matched[i] == ids[i]`` exactly where ``is_new[i]``). Without
        ``ids=``, every text takes an id, stored or not (as
        ``Index.add_unique``); a pandas Series gives its index labels, as in
        ``add``. With string ids, ``matched`` is an object array of them,
        and "smallest" means first added.

        >>> index = rsimhash.SimilarIndex(0.5)
        >>> index.add_unique(["the cat sat on the mat", "a dog", "the cat sat on the mat!"], ids=[10, 20, 30])
        (array([ True,  True, False]), array([10, 20, 10], dtype=uint64))
        """
        core = _core_texts(texts)
        return self._core.add_unique(core, _ids_for(texts, ids, _count(core)), threads=threads)

    def remove(self, ids: Any, *, missing: str = "error") -> int:
        """Removes texts by id (one id, or many); returns how many were stored.

        An id not stored is a ``KeyError`` naming it, and nothing is removed
        then (``missing="error"``, as datasketch's ``remove``); with
        ``missing="ignore"`` it is passed over.

        >>> index = rsimhash.SimilarIndex(0.5)
        >>> index.add(["the cat sat on the mat", "a dog barked"], ids=[1, 2]).tolist()
        [1, 2]
        >>> index.remove([1, 3], missing="ignore"), len(index)
        (1, 1)
        >>> index.remove(3)
        Traceback (most recent call last):
        ...
        KeyError: 'id 3 is not stored (remove(..., missing="ignore") passes over ids not stored)'
        """
        if missing not in MISSING:
            raise ValueError(f'missing must be "error" or "ignore", got {missing!r}')
        if isinstance(ids, str) or np.isscalar(ids):
            ids = [ids]
        elif not hasattr(ids, "__len__"):
            ids = list(ids)
        keys = _ids.user_ids(ids, len(ids), unique=False)
        keyed_by = self._core.design[3]
        mismatch = keyed_by is not None and keyed_by != ("str" if keys.dtype == object else "int")
        if missing == "error" and not mismatch:  # (the core names a mismatch of kinds)
            absent = [k for k in keys.tolist() if not self._core.contains(k)]
            if absent:
                more = f" (and {len(absent) - 1} more)" if len(absent) > 1 else ""
                raise KeyError(f'id {absent[0]!r} is not stored{more} (remove(..., missing="ignore") passes over ids not stored)')
        return self._core.remove(keys)

    def save(self, path: Union[str, "os.PathLike[str]"]) -> None:
        """Writes the index to ``path`` atomically: an index file (see
        ``docs/FORMAT.md``) with the shingle sets in sections of their own,
        every section checksummed. ``Index.load`` reads its fingerprints (an
        exact index's: each text's fingerprint of its shingles, ``k = 0``).
        An exact index's prefix index is made again from the sets by
        ``load``."""
        self._core.save(os.fspath(path))

    @classmethod
    def load(cls, path: Union[str, "os.PathLike[str]"], *, mmap: bool = True) -> "SimilarIndex":
        """Reads a file written by ``save``, every checksum checked: with
        ``mmap``, the fingerprint tables are used in place from a read-only
        mapping; the shingle sets are read into memory."""
        return cls._of(_rsimhash.SimilarIndex.load(os.fspath(path), mmap=mmap))

    def info(self) -> Dict[str, Any]:
        """Counts, settings and sizes, as ``Index.info`` gives an index's:
        ``items``, ``threshold``, ``measure``, ``shingles``, ``width``,
        ``candidates`` (``(mode, width, k)``), the candidates' fingerprint
        index's ``design``, ``k`` and ``tables``, ``nbytes`` (the memory
        held: shingle sets and fingerprint index, and an exact index's
        prefix lists), ``keys`` (``"int"``, ``"str"``, or ``None`` until an
        add stores something), ``spec_version`` and ``exact`` (``True`` for
        ``candidates="exact"``: every match found by the prefix index;
        ``candidates`` is ``"exact"`` then, ``design`` names the prefix
        index, and ``k`` and ``tables``, of the index of fingerprints that
        keeps the ids, are 0 and its tables).

        >>> index = rsimhash.SimilarIndex(0.8)
        >>> index.add(["the cat sat on the mat", "a dog barked at the moon"]).tolist()
        [0, 1]
        >>> info = index.info()
        >>> info["items"], info["threshold"], info["shingles"], info["width"], info["keys"]
        (2, 0.8, 'words', 3, 'int')
        >>> info["candidates"], info["design"], info["nbytes"] == index.nbytes, info["exact"]
        (('words', 1, 10), '11 tables, blocks 11, 5-6 leading bits, k=10', True, False)
        >>> rsimhash.SimilarIndex(0.8, candidates="exact").info()["design"]
        "prefix index: each set's first |x| - ceil(0.8|x|) + 1 shingles, rarest first"
        """
        threshold, measure, shingles, width, _ = self._core.settings
        design, k, tables, keys = self._core.design
        exact = self._core.exact
        candidates = self.candidates
        if exact:
            held = f"each set's first |x| - ceil({threshold}|x|) + 1 shingles"
            if measure == "containment":
                held = "every shingle"
            design = f"prefix index: {held}, rarest first"
        return {
            "items": len(self),
            "threshold": threshold,
            "measure": measure,
            "shingles": shingles,
            "width": width,
            "candidates": candidates,
            "design": design,
            "k": k,
            "tables": tables,
            "nbytes": self._core.nbytes,
            "keys": keys,
            "spec_version": _rsimhash.SPEC_VERSION,
            "exact": exact,
        }

    def __contains__(self, id: Any) -> bool:
        if isinstance(id, str):
            return self._core.contains(id)
        if isinstance(id, (bool, np.bool_)) or not isinstance(id, (int, np.integer)) or not 0 <= int(id) < 1 << 64:
            return False
        return self._core.contains(int(id))

    def __len__(self) -> int:
        return len(self._core)

    @property
    def threshold(self) -> float:
        """The least similarity a match has (``query``'s default threshold).

        >>> rsimhash.SimilarIndex(0.8).threshold
        0.8
        """
        return self._core.settings[0]

    @property
    def measure(self) -> str:
        """How two shingle sets' similarity is measured: ``"jaccard"`` or ``"containment"``.

        >>> rsimhash.SimilarIndex(0.8).measure
        'jaccard'
        """
        return self._core.settings[1]

    @property
    def candidates(self) -> Union[str, Tuple[str, int, int]]:
        """The candidates' ``(mode, width, k)``, or ``"exact"``: every match
        found by the prefix index.

        >>> rsimhash.SimilarIndex(0.9).candidates, rsimhash.SimilarIndex(0.9, candidates="exact").candidates
        (('words', 1, 7), 'exact')
        """
        return "exact" if self._core.exact else self._core.settings[4]

    @property
    def nbytes(self) -> int:
        """Bytes held by the shingle sets and the fingerprint index."""
        return self._core.nbytes

    def __repr__(self) -> str:
        t, measure, shingles, width, _ = self._core.settings
        return (
            f"SimilarIndex(threshold={t}, shingles={shingles!r}, width={width}, measure={measure!r}, "
            f"candidates={self.candidates!r}, items={len(self)})"
        )
