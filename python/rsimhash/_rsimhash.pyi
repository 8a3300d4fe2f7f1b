"""Type stubs of the compiled core, ``rsimhash._rsimhash``."""

import os
from collections.abc import Iterable, Sequence
from typing import Any, Union, final

import numpy as np
import numpy.typing as npt

__all__ = [
    "__version__",
    "Index",
    "JsonLines",
    "RecordChunk",
    "SPEC_VERSION",
    "ShuffleTables",
    "UNICODE_VERSION",
    "fnv1a64",
    "portable_paths",
    "compute",
    "fingerprint",
    "fingerprints",
    "fingerprints_arrow",
    "fingerprint_weighted",
    "hamming_arrays",
    "batch_find_all",
    "batch_dedup",
    "batch_clusters",
    "batch_design",
    "batch_candidates",
    "SimilarCorpus",
    "StreamVerifier",
    "OnlineDedup",
    "PairSweep",
    "auto_candidates",
    "shingle_sets",
    "pair_similarity",
]

__version__: str
SPEC_VERSION: int
UNICODE_VERSION: str

def fnv1a64(data: Union[str, bytes, bytearray]) -> int:
    """FNV-1a 64 of ``data`` (a str is hashed as UTF-8).

    Raises ``ValueError`` for a str holding a lone surrogate and ``TypeError``
    for anything else than str or bytes."""

def compute(hashes: Union[Sequence[int], npt.NDArray[np.uint64]]) -> int:
    """Unweighted simhash of feature hashes (SPEC v1 ``compute``): bit ``j`` is
    set iff more hashes have bit ``j`` set than clear. No hashes give 0.

    ``hashes`` is a sequence of ints in ``0..2**64-1`` or a 1-D ``uint64`` array."""

def fingerprint(text: str, *, mode: str = "words", width: Union[int, None] = None) -> int:
    """SPEC v1 fingerprint of one text.

    ``mode="words"`` shingles tokens (width default 3); ``mode="chars"`` takes
    windows of code points of the normalized text (width default 4)."""

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
    taken as hashes; weights are finite floats (negative and zero allowed)."""

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

def batch_dedup(
    source: _Values, **job: Any
) -> tuple[npt.NDArray[np.bool_], npt.NDArray[np.uint32], npt.NDArray[np.uint32]]:
    """``(keep, dropped, matched)``: the keep mask, the dropped positions and the
    earliest kept position within ``k`` of each (see ``rsimhash.batch.dedup``)."""

def batch_clusters(
    source: _Values, *, method: str = "connected", min_size: int = 2, **job: Any
) -> tuple[npt.NDArray[np.uint32], npt.NDArray[np.uint64]]:
    """``(members, starts)``: positions of each cluster's members, cluster ``c``
    being ``members[starts[c]:starts[c + 1]]`` (see ``rsimhash.batch.clusters``)."""

def batch_design(n: int, *, k: int, blocks: Union[int, None] = None, tables: Union[int, None] = None) -> tuple[int, str]:
    """``(tables, description)`` of the design a batch job uses for ``n`` items."""

def batch_candidates(
    source: _Values, *, pairs_out: Union[str, "os.PathLike[str]"], last_out: Union[str, "os.PathLike[str]"], **job: Any
) -> int:
    """Every pair within ``k`` as candidates of a pass in order: ``pairs_out`` gets
    ``higher << 32 | lower`` ascending (``uint64`` npy), ``last_out`` each item's last
    later partner (``uint32`` npy); returns the count."""

# Texts: a sequence of str, or ``(offsets, data)`` of an Arrow string column.
_Texts = Any
# ``(mode, width, k)`` of the candidates, or None for the automatic choice.
_Candidates = Union[tuple[str, Union[int, None], int], None]
_F32 = npt.NDArray[np.float32]
_U32 = npt.NDArray[np.uint32]
_U64 = npt.NDArray[np.uint64]

@final
class SimilarCorpus:
    """Texts in memory, then their verified pairs, dedup or clusters."""

    def __new__(
        cls, threshold: float, *, measure: str = "jaccard", shingles: str = "words", width: Union[int, None] = None,
        candidates: _Candidates = None,
    ) -> "SimilarCorpus": ...
    def add(self, texts: _Texts, *, threads: Union[int, None] = None) -> None: ...
    def pairs(self, *, threads: Union[int, None] = None, progress: Any = None) -> tuple[_U64, _F32]: ...
    def dedup(
        self, *, threads: Union[int, None] = None, progress: Any = None
    ) -> tuple[npt.NDArray[np.bool_], _U32, _U32, _F32]: ...
    def clusters(
        self, *, method: str = "connected", min_size: int = 2, threads: Union[int, None] = None, progress: Any = None
    ) -> tuple[_U32, _U64]: ...
    @property
    def candidates(self) -> tuple[str, int, int]: ...
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
        self, first: int, texts: _Texts, pairs: _U64, last: _U32, *, threads: Union[int, None] = None
    ) -> tuple[_U64, _U64, _F32]: ...
    @property
    def held(self) -> tuple[int, int]: ...

@final
class OnlineDedup:
    """The verified dedup of a stream of texts, a chunk at a time."""

    def __new__(
        cls, threshold: float, *, measure: str = "jaccard", shingles: str = "words", width: Union[int, None] = None,
        candidates: _Candidates = None,
    ) -> "OnlineDedup": ...
    def add(self, texts: _Texts, *, threads: Union[int, None] = None) -> tuple[npt.NDArray[np.bool_], _U64, _F32]: ...
    @property
    def seen(self) -> int: ...
    @property
    def nbytes(self) -> int: ...

@final
class PairSweep:
    """Verified pairs of ``n`` documents, fed in order, folded into the dedup and the clusters."""

    def __new__(cls, n: int) -> "PairSweep": ...
    def feed(self, higher: _U64, lower: _U64, similarity: _F32) -> tuple[_U32, _U32, _F32]: ...
    def dedup(self) -> tuple[npt.NDArray[np.bool_], _U32, _U32, _F32]: ...
    def clusters(self, *, method: str = "connected", min_size: int = 2) -> tuple[_U32, _U64]: ...

def auto_candidates(threshold: float) -> tuple[str, int, int]:
    """``(mode, width, k)`` that ``candidates="auto"`` picks for a threshold."""

def shingle_sets(
    texts: _Texts, *, mode: str = "words", width: Union[int, None] = None, threads: Union[int, None] = None
) -> tuple[npt.NDArray[np.int64], _U64]:
    """``(offsets, hashes)``: set ``i`` is ``hashes[offsets[i]:offsets[i + 1]]``, ascending, distinct."""

def pair_similarity(
    offsets: npt.NDArray[np.int64], hashes: _U64, pairs: _U64, *, measure: str = "jaccard"
) -> npt.NDArray[np.float64]:
    """The similarity of each pair (a flat array of set numbers, two a pair)."""

@final
class Index:
    """Every stored fingerprint within ``k`` bits of a query, exactly.

    Permuted sorted tables after Manku, Jain and Das Sarma (WWW 2007): the
    table design is chosen for the index's size by a cost model unless
    ``blocks`` (one level of that many blocks, ``C(blocks, k)`` tables) or
    ``tables`` (a design with that many tables) fixes it. Queries share a
    read lock and adds take a write lock; heavy work runs without the GIL.
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
        """
    def save(self, path: Union[str, "os.PathLike[str]"]) -> None:
        """Writes the index atomically: a crash mid-save leaves the old file intact."""
    @property
    def compressed(self) -> bool:
        """Whether the tables are stored compressed (Huffman-coded XOR deltas)."""
    def info(self) -> dict[str, Any]:
        """Counts, sizes and versions: items, k, tables, design, compressed, bytes per item per table, ..."""
    @property
    def k(self) -> int:
        """The largest distance answered completely."""
    @property
    def tables(self) -> int:
        """Permuted tables held per item."""
    @property
    def design(self) -> str:
        """The table design in words, e.g. ``"10 tables, blocks 5, 25-26 leading bits, k=3"``."""
    @property
    def nbytes(self) -> int:
        """Bytes of memory held by the tables and ids."""
    def __len__(self) -> int: ...
    def add(
        self, fps: Union[int, Sequence[int], npt.NDArray[np.uint64]], ids: Union[int, Sequence[int], npt.NDArray[np.uint64], None] = None
    ) -> npt.NDArray[np.uint64]:
        """Stores fingerprints and returns their ids (default: consecutive after the largest id so far)."""
    def query(self, fp: int, k: Union[int, None] = None) -> list[tuple[int, int]]:
        """``(id, distance)`` of every stored item within ``k``, sorted by distance, then id."""
    def query_batch(
        self, fps: Union[Sequence[int], npt.NDArray[np.uint64]], k: Union[int, None] = None
    ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.uint64], npt.NDArray[np.uint8]]:
        """``(qi, ids, dist)``: query position, matching id and distance, sorted by qi, distance, id."""
    def find_all(self, k: Union[int, None] = None) -> npt.NDArray[np.uint64]:
        """Every unordered pair of distinct stored ids within ``k``: shape ``(P, 2)``, smaller id first, sorted."""
    def cluster(
        self, k: Union[int, None] = None, min_size: int = 2, method: str = "connected"
    ) -> list[npt.NDArray[np.uint64]]:
        """Clusters of ids: ``"connected"`` components of the within-k graph, or ``"leader"`` groups."""
    def remove(self, ids: Union[int, Sequence[int], npt.NDArray[np.uint64]]) -> int:
        """Removes items by id; returns how many were stored."""
    def add_unique(
        self,
        fps: Union[int, Sequence[int], npt.NDArray[np.uint64]],
        ids: Union[int, Sequence[int], npt.NDArray[np.uint64], None] = None,
        k: Union[int, None] = None,
    ) -> tuple[npt.NDArray[np.bool_], npt.NDArray[np.uint64]]:
        """``(is_new, matched)``: each input, in order, is new unless a stored or earlier new item is within ``k``."""

@final
class ShuffleTables:
    """The tables of a single-level design of ``blocks`` blocks for ``k``, as a distributed job's shuffle keys."""

    def __new__(cls, k: int, blocks: int) -> "ShuffleTables": ...
    @property
    def k(self) -> int: ...
    @property
    def tables(self) -> int: ...
    def prefix(self, table: int) -> int: ...
    def keys(self, fps: Any) -> npt.NDArray[np.uint64]: ...
    def group_pairs(self, table: int, fps: Any) -> npt.NDArray[np.uint32]: ...
    def cross_pairs(self, table: int, a: Any, b: Any) -> npt.NDArray[np.uint32]: ...
    def sorted_pairs(
        self,
        tables: npt.NDArray[np.uint32],
        keys: npt.NDArray[np.uint64],
        cells: npt.NDArray[np.uint64],
        sides: npt.NDArray[np.uint8],
        fps: npt.NDArray[np.uint64],
    ) -> npt.NDArray[np.uint32]: ...

def portable_paths() -> bool:
    """Whether only the portable code paths run (``RSIMHASH_PORTABLE=1``), not the CPU's SIMD extensions."""

@final
class JsonLines:
    """The chunks of a JSON-lines input (plain, gzip or zstd), read, parsed and fingerprinted on threads of the core.

    Iterating gives ``RecordChunk`` objects and, when the input stops early, one last ``(line, compression, error)`` tuple.
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
        chunk_bytes: int = ...,
    ) -> "JsonLines": ...
    @property
    def compression(self) -> str: ...
    def close(self) -> None: ...
    def __iter__(self) -> "JsonLines": ...
    def __next__(self) -> Union["RecordChunk", tuple[int, str, str]]: ...

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
    def line(self, i: int) -> bytes: ...
    def write(self, indices: npt.NDArray[np.int64]) -> bytes: ...
    def write_to(self, fd: int, indices: npt.NDArray[np.int64]) -> int: ...
    def texts(self, indices: npt.NDArray[np.int64]) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.uint8]]: ...
