"""``SimilarIndex``: texts held by id, answering which stored texts are at
least a threshold alike a text, exactly (the online counterpart of
``similar_pairs``, and what users of datasketch's ``MinHashLSH`` look for).

Each text is held as its candidate fingerprint (in an ``Index``) and its
shingle set. A query's candidates are the stored texts whose fingerprints
are within the candidates' ``k`` bits of its own; each is confirmed by the
exact similarity of the two sets, so every match is at least the threshold
alike (precision 1) and the similarity is the one ``similar_pairs`` and
``rsimhash.jaccard`` report. The work runs in Rust with the GIL released;
queries from many threads run at once, changes one at a time.
"""

from __future__ import annotations

import os
from typing import Any, List, Optional, Tuple, Union

import numpy as np

from . import _ids, _rsimhash, _texts
from .similar import CandidatesArg, _threshold, candidates_arg, check_shingles

__all__ = ["SimilarIndex"]


def _core_texts(texts: Any) -> Any:
    """The texts as one piece the core takes: a sequence of str, or the
    ``(offsets, data)`` of Arrow chunks joined into one."""
    if isinstance(texts, (str, bytes)):
        raise TypeError(f"texts must be a sequence of str, got {type(texts).__name__}: pass [text] for one text")
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


class SimilarIndex:
    """Texts held by id; ``query(text)`` gives every stored text whose
    shingle set is at least ``threshold`` alike the text's, among the
    candidates, as ``[(id, similarity), ...]`` by similarity (highest
    first), then id.

    ``shingles``/``width``/``measure``/``candidates`` as in
    ``similar_pairs``: the same texts give the same pairs and similarities
    (a stored text's query finds itself and exactly its pairs). Ids are
    non-negative ints (a list, an array of any integer dtype, a pandas
    Index), each stored once; without ``ids=`` they count up from one past
    the largest id given so far. Or strings, as ``Index`` takes them: the
    first add that stores anything decides, for good and in the saved
    file; ids then come back as strings (a numpy object array where ints
    come as ``uint64``), ties ordered by when the texts were added, and
    every add must give ids. Thread-safe: queries run at once, changes one
    at a time, all with the GIL released.

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
    >>> by_name = rsimhash.SimilarIndex(0.5)
    >>> by_name.add(["the cat sat on the mat", "a dog barked at the moon"], ids=["cat", "dog"]).tolist()
    ['cat', 'dog']
    >>> by_name.query("the cat sat on the mat!"), "dog" in by_name
    ([('cat', 1.0)], True)
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
        self._core = _rsimhash.SimilarIndex(
            _threshold(threshold), measure=measure, shingles=shingles, width=width, candidates=candidates_arg(candidates)
        )

    @classmethod
    def _of(cls, core: Any) -> "SimilarIndex":
        index = cls.__new__(cls)
        index._core = core
        return index

    def add(self, texts: Any, ids: Any = None, *, threads: Optional[int] = None) -> np.ndarray:
        """Stores ``texts`` (a list or iterable of str, a pandas, polars or
        pyarrow column) under ``ids``; returns their ids (``uint64``, or a
        numpy object array of the string ids given). An id given twice or
        already stored is a ``ValueError``, and nothing is stored then."""
        core = _core_texts(texts)
        if ids is not None:
            ids = _ids.user_ids(ids, _count(core))
        return self._core.add(core, ids, threads=threads)

    def query(self, text: str, *, threads: Optional[int] = None) -> List[Tuple[Union[int, str], float]]:
        """``[(id, similarity), ...]`` of the stored texts at least the
        threshold alike ``text``, by similarity (highest first), then id."""
        if not isinstance(text, str):
            raise TypeError(f"text must be a str, got {type(text).__name__} (query_batch takes many)")
        _, ids, sims = self._core.query([text], threads=threads)
        return list(zip(ids.tolist(), sims.tolist()))

    def query_batch(self, texts: Any, *, threads: Optional[int] = None) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The matches of many texts: ``(positions, ids, similarity)``
        arrays (``int64``, ``uint64`` or object for string ids, ``float32``),
        one row a match, by position, then as ``query`` orders them."""
        return self._core.query(_core_texts(texts), threads=threads)

    def add_unique(self, texts: Any, ids: Any = None, *, threads: Optional[int] = None) -> Tuple[np.ndarray, np.ndarray]:
        """For each text in order: new when no stored text and no earlier new
        text is at least the threshold alike it; new ones are stored.
        Returns ``(is_new, matched)``: ``matched`` is, for a text that is not
        new, the smallest id of the stored texts alike it or, when none is,
        the id of the earliest new text of this call alike it; for a new
        one, its own id. Without ``ids=``, every text takes an id, stored or
        not (as ``Index.add_unique``). With string ids, ``matched`` is an
        object array of them, and "smallest" means first added."""
        core = _core_texts(texts)
        if ids is not None:
            ids = _ids.user_ids(ids, _count(core))
        return self._core.add_unique(core, ids, threads=threads)

    def remove(self, ids: Any) -> int:
        """Removes texts by id (ids not stored are passed over); returns how many were stored."""
        if np.isscalar(ids):
            ids = [ids]
        elif not hasattr(ids, "__len__"):
            ids = list(ids)
        return self._core.remove(_ids.user_ids(ids, len(ids), unique=False))

    def save(self, path: Union[str, "os.PathLike[str]"]) -> None:
        """Writes the index to ``path`` atomically: an index file (see
        ``docs/FORMAT.md``) with the shingle sets in sections of their own,
        every section checksummed. ``Index.load`` reads its fingerprints."""
        self._core.save(os.fspath(path))

    @classmethod
    def load(cls, path: Union[str, "os.PathLike[str]"], *, mmap: bool = True) -> "SimilarIndex":
        """Reads a file written by ``save``, every checksum checked: with
        ``mmap``, the fingerprint tables are used in place from a read-only
        mapping; the shingle sets are read into memory."""
        return cls._of(_rsimhash.SimilarIndex.load(os.fspath(path), mmap=mmap))

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
        return self._core.settings[0]

    @property
    def measure(self) -> str:
        return self._core.settings[1]

    @property
    def candidates(self) -> Tuple[str, int, int]:
        """The candidates' ``(mode, width, k)``."""
        return self._core.settings[4]

    @property
    def nbytes(self) -> int:
        """Bytes held by the shingle sets and the fingerprint index."""
        return self._core.nbytes

    def __repr__(self) -> str:
        t, measure, shingles, width, (mode, cwidth, k) = self._core.settings
        return (
            f"SimilarIndex(threshold={t}, shingles={shingles!r}, width={width}, measure={measure!r}, "
            f"candidates=({mode!r}, {cwidth}, {k}), items={len(self)})"
        )
