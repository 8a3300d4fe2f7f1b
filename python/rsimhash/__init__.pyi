from collections.abc import Iterable
from typing import Any, Union, overload

import numpy as np
import numpy.typing as npt

from . import batch as batch
from ._rsimhash import (
    Index as Index,
    SPEC_VERSION as SPEC_VERSION,
    UNICODE_VERSION as UNICODE_VERSION,
    __version__ as __version__,
    compute as compute,
    fingerprint as fingerprint,
    fingerprint_weighted as fingerprint_weighted,
    fnv1a64 as fnv1a64,
)

__all__ = [
    "Index",
    "SPEC_VERSION",
    "UNICODE_VERSION",
    "__version__",
    "batch",
    "compute",
    "dedup",
    "fingerprint",
    "fingerprint_weighted",
    "fingerprints",
    "fnv1a64",
    "hamming",
    "shingles",
    "similar_pairs",
]

def fingerprints(
    texts: Union[Iterable[str], npt.NDArray[Any], Any],
    *,
    mode: str = "words",
    width: Union[int, None] = None,
    threads: Union[int, None] = None,
) -> npt.NDArray[np.uint64]:
    """Fingerprints of many texts as a ``uint64`` array, computed on Rust threads.

    ``texts``: a list, tuple, numpy object array or iterable of str, or a
    pyarrow string array (read in place). Equal to ``fingerprint`` one by one."""

def dedup(
    texts: Any,
    k: int = 3,
    *,
    mode: str = "words",
    width: Union[int, None] = None,
    threads: Union[int, None] = None,
    jaccard: Union[float, None] = None,
    candidates: Union[str, tuple[str, int, int]] = "auto",
    measure: str = "jaccard",
) -> Any:
    """Keep mask of ``texts``: False exactly for each text within ``k`` bits of
    a text kept before it (``Index.add_unique`` in order).

    A pandas Series gives a boolean Series with the same index, a polars Series
    a Boolean Series, a pyarrow array a ``BooleanArray``, anything else (a list
    or iterable of str) a numpy ``bool`` array.

    With ``jaccard=T``: False for each text whose shingle set is at least ``T``
    alike that of a text kept before it (see ``similar_pairs``)."""

def similar_pairs(
    texts: Any,
    threshold: float = 0.9,
    *,
    shingles: str = "words",
    width: Union[int, None] = 3,
    candidates: Union[str, tuple[str, int, int]] = "auto",
    ids: Union[npt.NDArray[np.uint64], None] = None,
    measure: str = "jaccard",
    threads: Union[int, None] = None,
    progress: Any = None,
) -> tuple[npt.NDArray[np.uint64], npt.NDArray[np.float32]]:
    """Every pair of texts whose shingle sets are at least ``threshold`` alike,
    among the simhash candidates: ``(pairs, similarity)``."""

def shingles(text: str, *, mode: str = "words", width: Union[int, None] = None) -> npt.NDArray[np.uint64]:
    """The shingle set of one text: its distinct FNV-1a 64 shingle hashes, sorted."""

@overload
def hamming(a: int, b: int) -> int:
    """Number of differing bits of two fingerprints."""
@overload
def hamming(a: npt.NDArray[np.uint64], b: Union[int, npt.NDArray[np.uint64]]) -> npt.NDArray[np.uint8]:
    """Differing bits, broadcast over ``uint64`` arrays (a ``uint8`` array)."""
@overload
def hamming(a: int, b: npt.NDArray[np.uint64]) -> npt.NDArray[np.uint8]: ...
