from collections.abc import Iterable
from typing import Any, Union, overload

import numpy as np
import numpy.typing as npt

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
    "compute",
    "fingerprint",
    "fingerprint_weighted",
    "fingerprints",
    "fnv1a64",
    "hamming",
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

@overload
def hamming(a: int, b: int) -> int:
    """Number of differing bits of two fingerprints."""
@overload
def hamming(a: npt.NDArray[np.uint64], b: Union[int, npt.NDArray[np.uint64]]) -> npt.NDArray[np.uint8]:
    """Differing bits, broadcast over ``uint64`` arrays (a ``uint8`` array)."""
@overload
def hamming(a: int, b: npt.NDArray[np.uint64]) -> npt.NDArray[np.uint8]: ...
