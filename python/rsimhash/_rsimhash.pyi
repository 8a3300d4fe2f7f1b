"""Type stubs of the compiled core, ``rsimhash._rsimhash``."""

from collections.abc import Iterable, Sequence
from typing import Any, Union

import numpy as np
import numpy.typing as npt

__all__ = [
    "__version__",
    "SPEC_VERSION",
    "UNICODE_VERSION",
    "fnv1a64",
    "compute",
    "fingerprint",
    "fingerprints",
    "fingerprints_arrow",
    "fingerprint_weighted",
    "hamming_arrays",
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
