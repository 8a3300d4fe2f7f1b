"""Type stubs of the compiled core, ``rsimhash._rsimhash``."""

import os
from collections.abc import Iterable, Sequence
from typing import Any, Tuple, Union, final

import numpy as np
import numpy.typing as npt

__all__ = [
    "IndexChangedError",
    "IndexChecksumError",
    "IndexFileError",
    "IndexFormatError",
    "IndexVersionError",
    "__version__",
    "Index",
    "JsonLines",
    "RecordChunk",
    "RecordValues",
    "SPEC_VERSION",
    "ShuffleTables",
    "ShuffleRoutes",
    "spanning_forest",
    "component_labels",
    "UNICODE_VERSION",
    "fnv1a64",
    "portable_paths",
    "compute",
    "fingerprint",
    "fingerprints",
    "fingerprints_arrow",
    "fingerprint_weighted",
    "hamming_arrays",
    "_fnv1a64_texts",
    "batch_find_all",
    "batch_dedup",
    "batch_find_all_against",
    "batch_dedup_against",
    "batch_clusters",
    "batch_design",
    "batch_check_ids",
    "batch_candidates",
    "distinct_values",
    "SimilarCorpus",
    "StreamVerifier",
    "OnlineDedup",
    "SimilarIndex",
    "PairSweep",
    "auto_candidates",
    "shingle_sets",
    "text_rows",
    "pair_similarity",
    "content_keys",
    "copy_links",
    "expand_copies",
]

__version__: str
SPEC_VERSION: int
"""The version of the fingerprint spec (SPEC.md) that ``fingerprint`` and
``fingerprints`` follow; index files record it, and ``Index.load`` refuses
fingerprints of another version.

>>> rsimhash.SPEC_VERSION
1
"""
UNICODE_VERSION: str
"""The Unicode version of the tokenizer's and the normalizer's tables: which
characters are letters, digits or spaces, and their lower case.

>>> rsimhash.UNICODE_VERSION
'15.1.0'
"""

def fnv1a64(data: Union[str, bytes, bytearray]) -> int:
    """FNV-1a 64 of ``data`` (a str is hashed as UTF-8).

    Raises ``ValueError`` for a str holding a lone surrogate and ``TypeError``
    for anything else than str or bytes.

    >>> rsimhash.fnv1a64("a")
    12638187200555641996
    >>> rsimhash.fnv1a64("a") == rsimhash.fnv1a64(b"a")
    True
    >>> hex(rsimhash.fnv1a64(b""))  # the FNV offset basis
    '0xcbf29ce484222325'
    """

def compute(hashes: Union[Sequence[int], npt.NDArray[np.uint64]]) -> int:
    """Unweighted simhash of feature hashes (SPEC v1 ``compute``): bit ``j`` is
    set iff more hashes have bit ``j`` set than clear. No hashes give 0.

    ``hashes`` is a sequence of ints in ``0..2**64-1`` or a 1-D ``uint64`` array.

    >>> bin(rsimhash.compute([0b1100, 0b1010, 0b1001]))  # bit 3 in all three, bits 0-2 in one each
    '0b1000'
    >>> rsimhash.compute([rsimhash.fnv1a64(w) for w in "a bag of words".split()])
    590288262392783240
    >>> rsimhash.compute([])
    0
    """

def fingerprint(text: str, *, mode: str = "words", width: Union[int, None] = None) -> int:
    """SPEC v1 fingerprint of one text.

    ``mode="words"`` shingles tokens (width default 3); ``mode="chars"`` takes
    windows of code points of the normalized text (width default 4). Case,
    punctuation and spacing do not count in either mode.

    >>> rsimhash.fingerprint("The quick brown fox")
    801640746765152521
    >>> rsimhash.fingerprint("the QUICK, brown  fox!")
    801640746765152521
    >>> rsimhash.fingerprint("The quick brown fox", mode="chars")
    7597028271780175128

    A copy with a few words more is a few bits away (more for short texts):

    >>> text = "The city council voted on Tuesday to approve a new budget for the schools and the roads."
    >>> rsimhash.hamming(rsimhash.fingerprint(text), rsimhash.fingerprint("Updated 09:41. " + text))
    6
    """

def fingerprints(
    texts: Union[Iterable[str], npt.NDArray[Any]],
    *,
    mode: str = "words",
    width: Union[int, None] = None,
    threads: Union[int, None] = None,
) -> npt.NDArray[np.uint64]:
    """Fingerprints of many texts on Rust threads with the GIL released."""

def fingerprints_arrow(
    offsets: npt.NDArray[np.int64],
    data: npt.NDArray[np.uint8],
    *,
    mode: str = "words",
    width: Union[int, None] = None,
    threads: Union[int, None] = None,
) -> npt.NDArray[np.uint64]:
    """Fingerprints of an Arrow large-string column given by its buffers."""

def fingerprint_weighted(features: Iterable[tuple[Union[str, bytes, int], float]]) -> int:
    """Weighted simhash: str/bytes features are hashed with FNV-1a 64, ints are
    taken as hashes; weights are finite floats (negative and zero allowed).
    Bit ``j`` is set iff the weights of the features with bit ``j`` set sum
    to more than those with it clear.

    >>> rsimhash.fingerprint_weighted([("rust", 2.0), ("python", 1.0)]) == rsimhash.fnv1a64("rust")
    True
    >>> rsimhash.fingerprint_weighted([("rust", 2.0), (b"\\x00\\x01", 0.5), (0xDEADBEEF, -1.0)])
    13834740431434729255
    """

def _fnv1a64_texts(texts: Iterable[str], *, threads: Union[int, None] = None) -> npt.NDArray[np.uint64]:
    """FNV-1a 64 of each text's UTF-8 on all cores: the plain loop that ``benches/bench_fingerprint.py`` compares with."""

def hamming_arrays(a: npt.NDArray[np.uint64], b: npt.NDArray[np.uint64]) -> npt.NDArray[np.uint8]:
    """Popcount of ``a ^ b`` over two equal-length 1-D ``uint64`` arrays."""

_Values = Union[npt.NDArray[np.uint64], Sequence[Union[str, "os.PathLike[str]"]]]

# Every batch job takes, as keywords: k (int), memory_limit (bytes), and
# optionally workdir, temp_parent, threads, blocks or tables, spill and
# progress (a function of (done, total, step, step_done, step_total)).
# ``rsimhash.batch`` is the documented entry point.

def batch_find_all(
    source: _Values,
    *,
    ids: Union[npt.NDArray[np.uint64], None] = None,
    out: Union[str, "os.PathLike[str]", None] = None,
    **job: Any,
) -> Any:
    """Every pair within ``k`` of a batch source (an array or ``.npy`` paths): a
    ``(P, 2)`` ``uint64`` array, or the count written to ``out`` (a ``.npy`` path)."""

def batch_dedup(source: _Values, **job: Any) -> tuple[npt.NDArray[np.bool_], npt.NDArray[np.uint32], npt.NDArray[np.uint32]]:
    """``(keep, dropped, matched)``: the keep mask, the dropped positions and the
    earliest kept position within ``k`` of each (see ``rsimhash.batch.dedup``)."""

def batch_find_all_against(
    source: _Values,
    against: _Values,
    *,
    ids: Union[npt.NDArray[np.uint64], None] = None,
    against_ids: Union[npt.NDArray[np.uint64], None] = None,
    **job: Any,
) -> npt.NDArray[np.uint64]:
    """Every pair of a new item and a stored one within ``k``: a ``(P, 2)``
    ``uint64`` array of ``[new, old]`` rows, sorted (see ``rsimhash.batch.find_all``)."""

def batch_dedup_against(
    source: _Values, against: _Values, **job: Any
) -> tuple[npt.NDArray[np.bool_], npt.NDArray[np.uint32], npt.NDArray[np.uint32], npt.NDArray[np.bool_]]:
    """``(keep, dropped, matched, matched_old)``: a dedup of ``source`` against the
    store ``against``; ``matched_old[i]`` tells that ``matched[i]`` is a position in
    ``against`` (see ``rsimhash.batch.dedup``)."""

def batch_clusters(
    source: _Values, *, method: str = "connected", min_size: int = 2, **job: Any
) -> tuple[npt.NDArray[np.uint32], npt.NDArray[np.uint64]]:
    """``(members, starts)``: positions of each cluster's members, cluster ``c``
    being ``members[starts[c]:starts[c + 1]]`` (see ``rsimhash.batch.clusters``)."""

def batch_check_ids(
    ids: _U64,
    *,
    memory_limit: int,
    workdir: Union[str, "os.PathLike[str]", None] = None,
    temp_parent: Union[str, "os.PathLike[str]", None] = None,
) -> None:
    """Raises ``ValueError`` naming an id given twice (sorted beyond ``memory_limit`` on disk)."""

def batch_design(n: int, *, k: int, blocks: Union[int, None] = None, tables: Union[int, None] = None) -> tuple[int, str]:
    """``(tables, description)`` of the design a batch job uses for ``n`` items."""

def batch_candidates(
    source: _Values, *, pairs_out: Union[str, "os.PathLike[str]"], last_out: Union[str, "os.PathLike[str]"], **job: Any
) -> int:
    """Every pair within ``k`` as candidates of a pass in order: ``pairs_out`` gets
    ``higher << 32 | lower`` ascending (``uint64`` npy), ``last_out`` each item's last
    later partner (``uint32`` npy); returns the count."""

def distinct_values(
    parts: Sequence[npt.NDArray[np.uint64]], *, threads: Union[int, None] = None
) -> tuple[npt.NDArray[np.uint64], npt.NDArray[np.uint64]]:
    """``(values, repeated)``: the distinct values of ``parts`` (as one array), ascending, and
    those given more than once; sorted in the core without the GIL."""

# Texts: a sequence of str, or ``(offsets, data)`` of an Arrow string column.
_Texts = Any
# ``(mode, width, k)`` of the candidates, or None for the automatic choice.
_Candidates = Union[tuple[str, Union[int, None], int], None]
_F32 = npt.NDArray[np.float32]
_U32 = npt.NDArray[np.uint32]
_U64 = npt.NDArray[np.uint64]
# Ids of an Index: ints (an int, a sequence, a uint64 array) or strings.
_Ids = Union[int, str, Sequence[int], Sequence[str], npt.NDArray[Any]]

@final
class SimilarCorpus:
    """Texts in memory, then their verified pairs, dedup or clusters."""

    def __new__(
        cls,
        threshold: float,
        *,
        measure: str = "jaccard",
        shingles: str = "words",
        width: Union[int, None] = None,
        candidates: _Candidates = None,
        exact: bool = False,
    ) -> "SimilarCorpus": ...
    def add(self, texts: _Texts, *, threads: Union[int, None] = None) -> None: ...
    def pairs(self, *, threads: Union[int, None] = None, progress: Any = None, copies: str = "all") -> tuple[_U64, _F32]: ...
    def dedup(
        self, *, threads: Union[int, None] = None, progress: Any = None
    ) -> tuple[npt.NDArray[np.bool_], _U32, _U32, _F32]: ...
    def clusters(
        self, *, method: str = "connected", min_size: int = 2, threads: Union[int, None] = None, progress: Any = None
    ) -> tuple[_U32, _U64]: ...
    @property
    def candidates(self) -> tuple[str, int, int]: ...
    @property
    def exact(self) -> bool:
        """Whether pairs come from the exact join (else from the candidates)."""
    @property
    def nbytes(self) -> int: ...
    def __len__(self) -> int: ...

@final
class StreamVerifier:
    """The second pass of verified near-duplicates over a corpus in order."""

    def __new__(
        cls, threshold: float, *, measure: str = "jaccard", shingles: str = "words", width: Union[int, None] = None
    ) -> "StreamVerifier": ...
    def feed(
        self,
        first: int,
        texts: _Texts,
        pairs: _U64,
        last: _U32,
        *,
        links: Union[_U64, None] = None,
        threads: Union[int, None] = None,
    ) -> tuple[_U64, _U64, _F32]: ...
    @property
    def held(self) -> tuple[int, int]: ...

@final
class OnlineDedup:
    """The verified dedup of a stream of texts, a chunk at a time."""

    def __new__(
        cls,
        threshold: float,
        *,
        measure: str = "jaccard",
        shingles: str = "words",
        width: Union[int, None] = None,
        candidates: _Candidates = None,
    ) -> "OnlineDedup": ...
    def add(self, texts: _Texts, *, threads: Union[int, None] = None) -> tuple[npt.NDArray[np.bool_], _U64, _F32]: ...
    @property
    def seen(self) -> int: ...
    @property
    def nbytes(self) -> int: ...

@final
class SimilarIndex:
    """Texts held by id, answering which stored ones are at least a threshold
    alike a text (``rsimhash.SimilarIndex`` wraps it)."""

    def __new__(
        cls,
        threshold: float,
        *,
        measure: str = "jaccard",
        shingles: str = "words",
        width: Union[int, None] = None,
        candidates: _Candidates = None,
        exact: bool = False,
    ) -> "SimilarIndex": ...
    def add(self, texts: _Texts, ids: Any = None, *, threads: Union[int, None] = None) -> npt.NDArray[Any]: ...
    def query(
        self, texts: _Texts, *, threshold: Union[float, None] = None, threads: Union[int, None] = None
    ) -> tuple[npt.NDArray[np.int64], npt.NDArray[Any], _F32]: ...
    def add_unique(
        self, texts: _Texts, ids: Any = None, *, threads: Union[int, None] = None
    ) -> tuple[npt.NDArray[np.bool_], npt.NDArray[Any]]: ...
    def remove(self, ids: Any) -> int: ...
    def save(self, path: Union[str, os.PathLike[str]]) -> None: ...
    @classmethod
    def load(cls, path: Union[str, os.PathLike[str]], *, mmap: bool = True) -> "SimilarIndex": ...
    def contains(self, id: Union[int, str]) -> bool: ...
    @property
    def settings(self) -> tuple[float, str, str, int, tuple[str, int, int]]: ...
    @property
    def design(self) -> tuple[str, int, int, Union[str, None]]: ...
    @property
    def nbytes(self) -> int: ...
    @property
    def exact(self) -> bool: ...
    def __len__(self) -> int: ...

@final
class PairSweep:
    """Verified pairs of ``n`` documents, fed in order, folded into the dedup and the clusters."""

    def __new__(cls, n: int) -> "PairSweep": ...
    def feed(self, higher: _U64, lower: _U64, similarity: _F32, links: Union[_U64, None] = None) -> tuple[_U32, _U32, _F32]: ...
    def dedup(self) -> tuple[npt.NDArray[np.bool_], _U32, _U32, _F32]: ...
    def clusters(self, *, method: str = "connected", min_size: int = 2) -> tuple[_U32, _U64]: ...

def content_keys(texts: _Texts, *, threads: Union[int, None] = None) -> npt.NDArray[np.uint64]:
    """The 128-bit keys (XXH3) of texts' bytes, an ``(n, 2)`` array: which texts are copies."""

def copy_links(
    keys: Union[str, "os.PathLike[str]"],
    fps: Union[str, "os.PathLike[str]"],
    n: int,
    *,
    workdir: Union[str, "os.PathLike[str]"],
    memory_limit: int,
    out: Union[str, "os.PathLike[str]"],
) -> int:
    """Links ``copy << 32 | first`` of texts with the same key and fingerprint (raw files of the first
    pass), written to ``out`` (``.npy``), sorted on disk under ``workdir``; returns their number."""

def expand_copies(lower: _U64, higher: _U64, similarity: _F32, links: _U64, *, copies: str = "all") -> tuple[_U64, _F32]:
    """Every alike pair, from those a stream found with copies paired to their first only and the links."""

def auto_candidates(threshold: float) -> tuple[str, int, int]:
    """``(mode, width, k)`` that ``candidates="auto"`` picks for a threshold."""

def shingle_sets(
    texts: _Texts, *, mode: str = "words", width: Union[int, None] = None, threads: Union[int, None] = None
) -> tuple[npt.NDArray[np.int64], _U64]:
    """``(offsets, hashes)``: set ``i`` is ``hashes[offsets[i]:offsets[i + 1]]``, ascending, distinct."""

def text_rows(
    pieces: Sequence[Union[tuple[npt.NDArray[np.uint8], _U64], _U64]],
    starts: Sequence[int],
    columns: Sequence[tuple[str, _U64]],
    *,
    begin: str = "",
    sep: str = "\t",
    end: str = "\n",
) -> Union[bytes, int]:
    """Rows of text: each column's field in turn, ``sep`` between them, ``begin`` and ``end`` around
    them (a TSV's by default). ``pieces``: packed texts ``(uint8 bytes, offsets)`` or numbers, the
    first entry of each in ``starts``; ``columns``: ``("text", entries)`` or ``("number", values)``.
    The rows' bytes, or the first row (an int) whose text is not UTF-8."""

def pair_similarity(
    offsets: npt.NDArray[np.int64], hashes: _U64, pairs: _U64, *, measure: str = "jaccard"
) -> npt.NDArray[np.float64]:
    """The similarity of each pair (a flat array of set numbers, two a pair)."""

class IndexFileError(ValueError):
    """A file that is not a usable rsimhash index file: the base of the four
    below, and a ``ValueError``. ``path`` names the file; ``expected`` and
    ``found`` say what differs where one value does (a version, a checksum),
    else ``None``.

    >>> import os, tempfile
    >>> folder = tempfile.TemporaryDirectory()
    >>> path = os.path.join(folder.name, "notes.rsh")
    >>> with open(path, "w") as f:
    ...     _ = f.write("not an index")
    >>> try:
    ...     rsimhash.Index.load(path)
    ... except rsimhash.IndexFileError as e:
    ...     print(type(e).__name__, e.path == path, e.expected)
    IndexFormatError True None
    >>> folder.cleanup()
    """

    path: str
    expected: Union[str, None]
    found: Union[str, None]

class IndexFormatError(IndexFileError):
    """Not an index file, cut short, or with fields no writer makes.

    >>> issubclass(rsimhash.IndexFormatError, ValueError)
    True
    """

class IndexVersionError(IndexFileError):
    """Written by a newer format version, or for another SPEC version: upgrade
    rsimhash. ``expected`` and ``found`` name both, e.g. ``"SPEC v1"`` and
    ``"SPEC v2"``, or ``"format version at most 2"`` and ``"format version 3"``.
    A file of an index keyed by strings is format version 2, which
    rsimhash before string ids refuses so.

    >>> issubclass(rsimhash.IndexVersionError, rsimhash.IndexFileError)
    True
    """

class IndexChecksumError(IndexFileError):
    """Bytes that fail their checksum: the file was damaged after it was
    written. ``expected`` is the CRC-32C recorded, ``found`` the one computed
    (``"crc 0x..."``).

    >>> issubclass(rsimhash.IndexChecksumError, rsimhash.IndexFileError)
    True
    """

class IndexChangedError(IndexFileError):
    """The file an index was loaded from (mapped) was changed in place by
    another program while in use (``Index.verify()``, or any operation that
    meets the changed bytes): its answers can no longer be trusted; load it
    again. rsimhash's own saves replace files whole and never cause this.

    >>> issubclass(rsimhash.IndexChangedError, rsimhash.IndexFileError)
    True
    """

@final
class Index:
    """Every stored fingerprint within ``k`` bits of a query, exactly.

    Permuted sorted tables after Manku, Jain and Das Sarma (WWW 2007): the
    table design is chosen for the index's size by a cost model unless
    ``blocks`` (one level of that many blocks, ``C(blocks, k)`` tables) or
    ``tables`` (a design with that many tables) fixes it. Queries share a
    read lock and adds take a write lock; heavy work runs without the GIL.
    ``len(index)`` is the number of stored ``(id, fingerprint)`` items.

    Ids are non-negative ints (``uint64``), or strings: an index is keyed
    by the kind its first add that stores anything gives (ints when no
    ``ids=``), for good and in its saved file. Keyed by strings, every
    ``add`` and ``add_unique`` must give string ids, and every method that
    returns ids returns the strings: a numpy object array of ``str`` where
    an int-keyed index returns a ``uint64`` array, ``str`` in ``query``'s
    tuples. Items then have internal ids counted up as default ids are, in
    the order they were added: "sorted by id" and "smallest id" mean first
    added. Ids of the other kind are a ``TypeError`` naming what the index
    is keyed by. Int ids come back exactly as before, as fast.

    >>> index = rsimhash.Index(k=3)
    >>> index.add(np.array([0, 0b111, 0xFF00, 0xFF01], dtype=np.uint64)).tolist()
    [0, 1, 2, 3]
    >>> index.query(0b1)  # (id, distance)
    [(0, 1), (1, 2)]
    >>> index.find_all().tolist()
    [[0, 1], [2, 3]]
    >>> len(index)
    4
    >>> docs = rsimhash.Index(k=3)
    >>> docs.add([0, 0b111, 0xFF00], ids=["intro", "intro-v2", "faq"]).tolist()
    ['intro', 'intro-v2', 'faq']
    >>> docs.query(0b1), docs.find_all().tolist()
    ([('intro', 1), ('intro-v2', 2)], [['intro', 'intro-v2']])
    >>> docs.add([5])
    Traceback (most recent call last):
    ...
    TypeError: ids must be given, as strings: this index is keyed by strings (its first add gave strings), got none
    """

    def __new__(
        cls,
        k: int = 3,
        *,
        blocks: Union[int, None] = None,
        tables: Union[int, None] = None,
        compress: bool = True,
        block_bytes: int = 1024,
    ) -> "Index": ...
    @classmethod
    def load(cls, path: Union[str, "os.PathLike[str]"], *, mmap: bool = True) -> "Index":
        """Reads an index file written by ``save``; every checksum is verified first.

        With ``mmap`` the compressed tables are used in place from a read-only
        mapping of the file. Raises ``ValueError`` naming the problem for a
        damaged, truncated or foreign file, and ``OSError`` when it cannot be read.
        A loaded index answers as the saved one did and can take more ``add`` calls.

        A mapped file must not change while the index uses it. ``save`` (here
        or in another process) replaces a file atomically, which is safe: the
        index goes on reading the file it mapped. Another program writing
        into the file in place, or truncating it, is not: the index then
        raises ``ValueError("index file changed or damaged while in use: ...")``
        from the first operation that reads the changed bytes (never a crash,
        never an answer read from them once they are found), and
        ``Index.verify()`` re-checks every checksum on demand. Load with
        ``mmap=False`` to read the file into memory instead.

        >>> import os, tempfile
        >>> index = rsimhash.Index(k=3)
        >>> index.add([0, 0b111, 0xFF00]).tolist()
        [0, 1, 2]
        >>> with tempfile.TemporaryDirectory() as tmp:
        ...     index.save(os.path.join(tmp, "corpus.rsh"))
        ...     loaded = rsimhash.Index.load(os.path.join(tmp, "corpus.rsh"), mmap=False)
        >>> len(loaded), loaded.k, loaded.query(0b1)
        (3, 3, [(0, 1), (1, 2)])
        """
    def verify(self) -> None:
        """Checks again every checksum of the file the index was loaded from.

        Reads the whole file (as long as the index still uses its tables;
        an index built in memory has nothing to check) and compares it with
        what ``load`` verified. Raises ``ValueError("index file changed or
        damaged while in use: ...")`` naming what changed; every later
        operation of the index then raises it too. Returns ``None``.

        >>> import os, tempfile
        >>> index = rsimhash.Index(k=3)
        >>> index.add(np.arange(5000, dtype=np.uint64)).tolist()[:3]
        [0, 1, 2]
        >>> with tempfile.TemporaryDirectory() as tmp:
        ...     path = os.path.join(tmp, "corpus.rsh")
        ...     index.save(path)
        ...     loaded = rsimhash.Index.load(path)
        ...     loaded.verify()                      # as loaded: None
        ...     with open(path, "r+b") as f:         # another program writes into it
        ...         _ = f.seek(os.path.getsize(path) - 100)
        ...         _ = f.write(b"something else")
        ...     try:
        ...         loaded.verify()
        ...     except ValueError as e:
        ...         print(str(e).split(":")[0])
        ...     del loaded
        index file changed or damaged while in use
        """
    def save(self, path: Union[str, "os.PathLike[str]"]) -> None:
        """Writes the index atomically: a crash mid-save leaves the old file intact.

        The file is written under a temporary name beside ``path``, synced and
        renamed over ``path``; ``Index.load`` reads it back.

        >>> import os, tempfile
        >>> index = rsimhash.Index(k=3)
        >>> index.add([0, 0b111]).tolist()
        [0, 1]
        >>> with tempfile.TemporaryDirectory() as tmp:
        ...     index.save(os.path.join(tmp, "corpus.rsh"))
        ...     os.listdir(tmp)
        ['corpus.rsh']
        """
    @property
    def compressed(self) -> bool:
        """Whether the tables are stored compressed (Huffman-coded XOR deltas).

        >>> rsimhash.Index().compressed, rsimhash.Index(compress=False).compressed
        (True, False)
        """
    def info(self) -> dict[str, Any]:
        """Counts, sizes and versions: items, k, tables, design, compressed, bytes per item per table, ...

        >>> index = rsimhash.Index(k=3)
        >>> index.add([0, 0b111, 0xFF00]).tolist()
        [0, 1, 2]
        >>> info = index.info()
        >>> info["items"], info["k"], info["tables"], info["compressed"]
        (3, 3, 4, True)
        >>> info["spec_version"], info["format_version"], info["keys"]
        (1, 1, 'int')

        ``keys``: ``"int"`` or ``"str"``, what the index is keyed by
        (``None`` until an add stores something); ``format_version``: that
        of the file ``save`` writes (2 for an index keyed by strings).
        """
    @property
    def k(self) -> int:
        """The largest distance answered completely.

        >>> rsimhash.Index(k=5).k
        5
        """
    @property
    def tables(self) -> int:
        """Permuted tables held per item.

        >>> rsimhash.Index(k=3, blocks=6).tables  # C(6, 3)
        20
        """
    @property
    def design(self) -> str:
        """The table design in words, e.g. ``"10 tables, blocks 5, 25-26 leading bits, k=3"``.

        >>> rsimhash.Index(k=3, blocks=5).design
        '10 tables, blocks 5, 25-26 leading bits, k=3'
        """
    @property
    def nbytes(self) -> int:
        """Bytes of memory held by the tables and ids.

        >>> index = rsimhash.Index()
        >>> index.nbytes
        0
        >>> index.add([0, 0b111, 0xFF00, 0xFF01]).tolist()
        [0, 1, 2, 3]
        >>> index.nbytes
        64
        """
    @property
    def metadata(self) -> dict[str, str]:
        """The index's metadata: your own ``str`` keys and values, saved in its file.

        Empty until set; ``save`` writes it into the file (two sections that
        change no answer, so the format version stays what the ids make it)
        and ``load`` reads it back. Reading gives a new ``dict``: assign a
        whole ``dict`` to change it. ``rsimhash index build`` records how it
        made the fingerprints here (``{"mode": "words", "width": "3"}``, or
        ``{"mode": "hashes"}`` from a hash TSV), so that texts are
        fingerprinted the same way later. Raises ``TypeError`` for anything
        but a ``dict`` of ``str`` to ``str``.

        >>> index = rsimhash.Index(k=3)
        >>> index.metadata
        {}
        >>> index.metadata = {"mode": "words", "width": "3"}
        >>> index.metadata["width"]
        '3'
        """
    @metadata.setter
    def metadata(self, value: dict[str, str]) -> None: ...
    def items(self) -> tuple[npt.NDArray[np.uint64], npt.NDArray[Any]]:
        """``(fps, ids)``: every stored item's fingerprint and id, in the order of their ids.

        Two arrays of ``len(index)``: the fingerprints (``uint64``) and the
        ids (``uint64``, or object of ``str`` for an index keyed by strings,
        in the order they were added).

        >>> index = rsimhash.Index(k=3)
        >>> index.add([0xFF00, 0b111], ids=["b", "a"]).tolist()
        ['b', 'a']
        >>> fps, ids = index.items()
        >>> fps.tolist(), ids.tolist()
        ([65280, 7], ['b', 'a'])
        """
    def __len__(self) -> int: ...
    def add(
        self,
        fps: Union[int, Sequence[int], npt.NDArray[np.uint64]],
        ids: Union[_Ids, None] = None,
    ) -> npt.NDArray[Any]:
        """Stores fingerprints and returns their ids (default: consecutive after the largest id so far).

        ``fps``: an int or a 1-D ``uint64`` array (or a sequence of ints);
        ``ids``: one id per fingerprint, a ``uint64`` id or a string (see
        the class). One fingerprint may carry many ids; an id given twice,
        or already stored, raises ``ValueError``. Returns a ``uint64``
        array, or an object array of the string ids given.

        >>> index = rsimhash.Index(k=3)
        >>> index.add(np.array([0, 0b111], dtype=np.uint64)).tolist()
        [0, 1]
        >>> index.add(0xFF00).tolist()
        [2]
        >>> index.add([0xFF01, 0xFF01], ids=[100, 101]).tolist()
        [100, 101]
        >>> index.add(5).tolist()
        [102]
        >>> by_name = rsimhash.Index(k=3)
        >>> by_name.add([0xFF01, 0xFF01], ids=["a", "é"]).tolist()
        ['a', 'é']
        """
    def query(self, fp: int, k: Union[int, None] = None) -> list[tuple[Any, int]]:
        """``(id, distance)`` of every stored item within ``k``, sorted by distance, then id.

        ``k`` defaults to the index's ``k``; a larger one raises ``ValueError``.

        >>> index = rsimhash.Index(k=3)
        >>> index.add([0, 0b111, 0xFF00, 0xFF01]).tolist()
        [0, 1, 2, 3]
        >>> index.query(0)
        [(0, 0), (1, 3)]
        >>> index.query(0, k=1)
        [(0, 0)]
        >>> index.query(0xFF03)
        [(3, 1), (2, 2)]
        >>> by_name = rsimhash.Index(k=3)
        >>> by_name.add([0xFF01, 0xFF01, 0xFF00], ids=["b", "a", "c"]).tolist()
        ['b', 'a', 'c']
        >>> by_name.query(0xFF03)  # ties by when added, not by the strings
        [('b', 1), ('a', 1), ('c', 2)]
        """
    def query_batch(
        self, fps: Union[Sequence[int], npt.NDArray[np.uint64]], k: Union[int, None] = None
    ) -> tuple[npt.NDArray[np.int64], npt.NDArray[Any], npt.NDArray[np.uint8]]:
        """``(qi, ids, dist)``: query position, matching id and distance, sorted by qi, distance, id.

        Three equal-length arrays (``int64``, ``uint64`` or object for
        string ids, ``uint8``), one row per match; ``k`` as in ``query``.

        >>> index = rsimhash.Index(k=3)
        >>> index.add([0, 0b111, 0xFF00, 0xFF01]).tolist()
        [0, 1, 2, 3]
        >>> qi, ids, dist = index.query_batch(np.array([0b1, 0xFF00, 1 << 40 | 0xF0F0], dtype=np.uint64))
        >>> qi.tolist(), ids.tolist(), dist.tolist()
        ([0, 0, 1, 1], [0, 1, 2, 3], [1, 2, 0, 1])
        >>> by_name = rsimhash.Index(k=3)
        >>> by_name.add([0, 0xFF00], ids=["zero", "ff"]).tolist()
        ['zero', 'ff']
        >>> by_name.query_batch([0b1, 0xFF00])[1]
        array(['zero', 'ff'], dtype=object)
        """
    def find_all(self, k: Union[int, None] = None, *, copies: Union[str, None] = None) -> npt.NDArray[Any]:
        """Every unordered pair of distinct stored ids within ``k``: shape ``(P, 2)``, smaller id first, sorted.

        A ``uint64`` array (object, of ``str``, for string ids; "smaller"
        then means added first); ids sharing one fingerprint (copies) pair at
        distance 0. ``copies="all"`` (the default) lists every pair of them:
        ``c`` copies make ``c (c - 1) / 2``; ``copies="first"`` pairs each
        only with the smallest id of its fingerprint, one pair per copy.
        Left unset, a ``UserWarning`` says so when copies alone make over
        2^26 pairs; pairs of copies that would not fit in memory are a
        ``MemoryError`` raised before any is made.

        >>> index = rsimhash.Index(k=3)
        >>> index.add([0, 0b111, 0xFF00, 0xFF01]).tolist()
        [0, 1, 2, 3]
        >>> index.find_all().tolist()
        [[0, 1], [2, 3]]
        >>> index.find_all(k=1).tolist()
        [[2, 3]]
        >>> index.add([0xFF00, 0xFF00]).tolist()  # two more copies of 0xFF00
        [4, 5]
        >>> index.find_all(k=0).tolist(), index.find_all(k=0, copies="first").tolist()
        ([[2, 4], [2, 5], [4, 5]], [[2, 4], [2, 5]])
        """
    def cluster(self, k: Union[int, None] = None, min_size: int = 2, method: str = "connected") -> list[npt.NDArray[Any]]:
        """Clusters of ids: ``"connected"`` components of the within-k graph, or ``"leader"`` groups.

        ``"connected"``: each member is within ``k`` of at least one other
        member. ``"leader"``: in id order, each item joins the first
        representative within ``k`` or becomes one. Only clusters of at least
        ``min_size`` ids; each a sorted ``uint64`` array, clusters sorted by
        their smallest id (for string ids, object arrays of them, in the
        order the items were added).

        >>> index = rsimhash.Index(k=3)
        >>> index.add([0, 0b111, 0b111111, 0xFF00]).tolist()  # 0-1 and 1-2 are 3 bits apart, 0-2 six
        [0, 1, 2, 3]
        >>> [c.tolist() for c in index.cluster()]
        [[0, 1, 2]]
        >>> [c.tolist() for c in index.cluster(method="leader", min_size=1)]
        [[0, 1], [2], [3]]
        >>> by_name = rsimhash.Index(k=3)
        >>> by_name.add([0, 0b111, 0xFF00], ids=["x", "y", "z"]).tolist()
        ['x', 'y', 'z']
        >>> [c.tolist() for c in by_name.cluster()]
        [['x', 'y']]
        """
    def remove(self, ids: _Ids) -> int:
        """Removes items by id; returns how many were stored.

        Ids not stored are passed over. A removed string id may be added
        again.

        >>> index = rsimhash.Index(k=3)
        >>> index.add([0, 0b111, 0xFF00]).tolist()
        [0, 1, 2]
        >>> index.remove([1, 7])
        1
        >>> len(index), index.query(0)
        (2, [(0, 0)])
        >>> by_name = rsimhash.Index(k=3)
        >>> by_name.add([0, 0xFF00], ids=["a", "b"]).tolist()
        ['a', 'b']
        >>> by_name.remove(["a", "gone"]), by_name.add([1], ids=["a"]).tolist()
        (1, ['a'])
        """
    def add_unique(
        self,
        fps: Union[int, Sequence[int], npt.NDArray[np.uint64]],
        ids: Union[_Ids, None] = None,
        k: Union[int, None] = None,
    ) -> tuple[npt.NDArray[np.bool_], npt.NDArray[Any]]:
        """``(is_new, matched)``: each input, in order, is new unless a stored or earlier new item is within ``k``.

        Only the new items are stored (with their ids; the default ids are
        given to every input, as ``add`` gives them). ``is_new`` is a ``bool``
        array; ``matched`` a ``uint64`` array of the smallest id within ``k``
        of each item that is not new (stored, or new earlier in the call),
        and of the item's own id where new: ``matched[is_new]`` are the new
        items' ids, as ``SimilarIndex.add_unique`` gives them. A streaming
        dedup, in order. With string ids, ``matched`` is an object array of
        them ("smallest" means added first); every id given is checked as
        ``add`` checks it, and only the new ones are stored.

        >>> index = rsimhash.Index(k=2)
        >>> is_new, matched = index.add_unique(np.array([0, 0b1, 0xFF << 40, 0b11], dtype=np.uint64))
        >>> is_new.tolist(), matched.tolist()
        ([True, False, True, False], [0, 0, 2, 0])
        >>> len(index)
        2
        >>> by_name = rsimhash.Index(k=2)
        >>> is_new, matched = by_name.add_unique([0, 0b1, 0xFF << 40], ids=["a", "a-copy", "b"])
        >>> is_new.tolist(), matched.tolist()
        ([True, False, True], ['a', 'a', 'b'])
        """

@final
class ShuffleTables:
    """The tables of a single-level design of ``blocks`` blocks for ``k``, as a distributed job's shuffle keys."""

    def __new__(cls, k: int, blocks: int) -> "ShuffleTables": ...
    @property
    def k(self) -> int: ...
    @property
    def tables(self) -> int: ...
    def prefix(self, table: int) -> int: ...
    def histogram(self, fps: Any, fine: Any) -> npt.NDArray[np.uint32]: ...
    def plan(
        self, fine: Any, hist: Any, target: int, cap: int
    ) -> Tuple[npt.NDArray[np.uint64], npt.NDArray[np.uint64], npt.NDArray[np.uint64]]: ...
    def routes(self, fine: Any, unit_of: Any, cells: Any) -> "ShuffleRoutes": ...
    def pack(
        self, fps: Any, ids: Any, routes: "ShuffleRoutes"
    ) -> Tuple[npt.NDArray[np.uint32], npt.NDArray[np.uint64], npt.NDArray[np.uint64]]: ...
    def reduce(
        self, routes: "ShuffleRoutes", task: int, items: Any, output: str
    ) -> Tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]: ...
    @staticmethod
    def choose_blocks(n: int, k: int, tables: Union[int, None] = None) -> Union[int, None]:
        """Blocks of the single-level design for a shuffle of ``n`` distinct values (the core's cost
        model), or with ``tables`` the fewest blocks whose design has that many; None when none has."""

@final
class ShuffleRoutes:
    """Where a distributed job's items go: each table's fine buckets' units and each unit's cells."""

    @property
    def tasks(self) -> int: ...
    def task(self, task: int) -> Tuple[int, int, int, int]: ...

def spanning_forest(a: npt.NDArray[np.int64], b: npt.NDArray[np.int64]) -> npt.NDArray[np.bool_]:
    """The mask of the edges ``(a[i], b[i])`` that, taken in order, join two components of the edges before them."""

def component_labels(a: npt.NDArray[np.int64], b: npt.NDArray[np.int64]) -> Tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """``(ids, roots)``: each id of the edges ``(a[i], b[i])``, ascending, and the smallest id of its component."""

def portable_paths() -> bool:
    """Whether only the portable code paths run (``RSIMHASH_PORTABLE=1``), not the CPU's SIMD extensions."""

@final
class JsonLines:
    """The chunks of a JSON-lines input (plain, gzip or zstd), read, parsed and fingerprinted on threads of the core.

    ``format="lines"`` (one decimal u64 per line) or ``"hash"`` (a TSV with a header naming ``id_field``, default
    ``id``, and ``hash``) reads a fingerprint file instead: each chunk's ``fingerprints`` are the hashes read.

    Iterating gives ``RecordChunk`` objects and, when the input stops early, one last ``(line, compression, error)`` tuple.
    With ``values_only`` (``format="lines"`` or ``"hash"``), a block whose every line is a number or blank (a TSV
    block past the header: a record or blank) comes as a ``RecordValues`` instead, without per-line entries.
    """

    def __new__(
        cls,
        source: Union[str, os.PathLike[str], int],
        *,
        text_field: str,
        id_field: Union[str, None] = None,
        mode: Union[str, None] = None,
        width: Union[int, None] = None,
        threads: Union[int, None] = None,
        chunk_bytes: Union[int, None] = None,
        format: str = "json",
        max_record_bytes: Union[int, None] = None,
        values_only: bool = False,
    ) -> "JsonLines": ...
    @property
    def compression(self) -> str: ...
    def close(self) -> None: ...
    def __iter__(self) -> "JsonLines": ...
    def __next__(self) -> Union["RecordChunk", "RecordValues", tuple[int, str, str]]: ...

@final
class RecordValues:
    """A block of a fingerprint file read for its values (and a hash TSV's ids) alone (``JsonLines(values_only=True)``)."""

    def __len__(self) -> int: ...
    @property
    def fingerprints(self) -> npt.NDArray[np.uint64]:
        """The block's values, in input order."""
    @property
    def ids(self) -> Union[tuple[npt.NDArray[np.uint8], npt.NDArray[np.uint64]], None]:
        """A hash TSV's ids, packed as ``RecordChunk.id_texts`` packs them (``(text, offsets)``); None for a ``lines`` file."""
    @property
    def nbytes(self) -> int:
        """Bytes of (decompressed) input the block covers."""
    @property
    def consumed(self) -> int:
        """The file's bytes read when the block was cut (compressed, when it is)."""
    @property
    def line_count(self) -> int:
        """Lines the block covers, blank ones included."""

@final
class RecordChunk:
    """One block of whole lines: its non-blank lines ("entries") with their line numbers, status, fingerprints and ids."""

    def __len__(self) -> int: ...
    @property
    def nbytes(self) -> int: ...
    @property
    def consumed(self) -> int: ...
    @property
    def line_count(self) -> int: ...
    def lines(self) -> npt.NDArray[np.int64]: ...
    def status(self) -> npt.NDArray[np.uint8]: ...
    def fingerprints(self) -> Union[npt.NDArray[np.uint64], None]: ...
    def ids(self) -> Union[list[Union[int, str, None]], None]: ...
    def id_texts(
        self, entries: Union[npt.NDArray[np.int64], None] = None
    ) -> Union[tuple[npt.NDArray[np.uint8], npt.NDArray[np.uint64]], None]: ...
    def line(self, i: int) -> bytes: ...
    def write(self, indices: npt.NDArray[np.int64]) -> bytes: ...
    def write_to(self, fd: int, indices: npt.NDArray[np.int64]) -> int: ...
    def start_writeback(self, fd: int, offset: int, length: int) -> None: ...
    def texts(self, indices: npt.NDArray[np.int64]) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.uint8]]: ...
