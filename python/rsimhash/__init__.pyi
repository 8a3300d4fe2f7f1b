# The functions written in Python keep their docstrings in their .py files
# only: griffe (the documentation site) merges this stub into __init__.py and
# shows the source's docstring, and editors look there when a stub has none.
# The compiled module's objects are documented in _rsimhash.pyi.

from collections.abc import Iterable
from typing import Any, Literal, Union, overload

import numpy as np
import numpy.typing as npt

from . import batch as batch
from ._report import Report
from ._rsimhash import (
    SPEC_VERSION as SPEC_VERSION,
)
from ._rsimhash import (
    UNICODE_VERSION as UNICODE_VERSION,
)
from ._rsimhash import (
    Index as Index,
)
from ._rsimhash import (
    IndexChangedError as IndexChangedError,
)
from ._rsimhash import (
    IndexChecksumError as IndexChecksumError,
)
from ._rsimhash import (
    IndexFileError as IndexFileError,
)
from ._rsimhash import (
    IndexFormatError as IndexFormatError,
)
from ._rsimhash import (
    IndexVersionError as IndexVersionError,
)
from ._rsimhash import (
    __version__ as __version__,
)
from ._rsimhash import (
    compute as compute,
)
from ._rsimhash import (
    fingerprint as fingerprint,
)
from ._rsimhash import (
    fingerprint_weighted as fingerprint_weighted,
)
from ._rsimhash import (
    fnv1a64 as fnv1a64,
)
from .similar_index import SimilarIndex as SimilarIndex

__all__ = [
    "Index",
    "IndexChangedError",
    "IndexChecksumError",
    "IndexFileError",
    "IndexFormatError",
    "IndexVersionError",
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
    "jaccard",
    "report",
    "shingles",
    "similar_pairs",
    "SimilarIndex",
]

@overload
def fingerprints(
    texts: Union[Iterable[str], npt.NDArray[Any], Any],
    *,
    mode: str = "words",
    width: Union[int, None] = None,
    threads: Union[int, None] = None,
    nulls: Literal["error", "drop"] = "error",
) -> npt.NDArray[np.uint64]: ...
@overload
def fingerprints(
    texts: Union[Iterable[str], npt.NDArray[Any], Any],
    *,
    mode: str = "words",
    width: Union[int, None] = None,
    threads: Union[int, None] = None,
    nulls: Literal["keep"],
) -> Any: ...
@overload
def fingerprints(
    texts: Union[Iterable[str], npt.NDArray[Any], Any],
    *,
    mode: str = "words",
    width: Union[int, None] = None,
    threads: Union[int, None] = None,
    nulls: str = "error",
) -> Any: ...
def dedup(
    texts: Any,
    k: Union[int, None] = None,
    *,
    mode: str = "words",
    width: Union[int, None] = None,
    threads: Union[int, None] = None,
    jaccard: Union[float, None] = None,
    candidates: Union[str, tuple[str, int, int]] = "auto",
    measure: str = "jaccard",
    nulls: str = "error",
) -> Any: ...
def similar_pairs(
    texts: Any,
    threshold: float = 0.9,
    *,
    shingles: str = "words",
    width: Union[int, None] = 3,
    candidates: Union[str, tuple[str, int, int]] = "auto",
    ids: Any = None,
    measure: str = "jaccard",
    threads: Union[int, None] = None,
    progress: Any = None,
    copies: str = "all",
    nulls: str = "error",
) -> tuple[npt.NDArray[Any], npt.NDArray[np.float32]]: ...
def report(
    texts: Any,
    *,
    ids: Any = None,
    k: int = 3,
    jaccard: Union[float, None] = None,
    measure: str = "jaccard",
    mode: str = "words",
    width: Union[int, None] = None,
    candidates: Union[str, tuple[str, int, int]] = "auto",
    removed: Any = None,
    clusters: Any = None,
    pairs: Any = None,
    similarity: Any = None,
    shards: Any = None,
    show: int = 200,
    seed: int = 0,
    title: Union[str, None] = None,
    threads: Union[int, None] = None,
) -> Report: ...
def jaccard(a: str, b: str, *, shingles: str = "words", width: Union[int, None] = 3, measure: str = "jaccard") -> float: ...
def shingles(text: str, *, mode: str = "words", width: Union[int, None] = None) -> npt.NDArray[np.uint64]: ...
@overload
def hamming(a: int, b: int) -> int: ...
@overload
def hamming(a: npt.NDArray[np.uint64], b: Union[int, npt.NDArray[np.uint64]]) -> npt.NDArray[np.uint8]: ...
@overload
def hamming(a: int, b: npt.NDArray[np.uint64]) -> npt.NDArray[np.uint8]: ...
