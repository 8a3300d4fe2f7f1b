"""rsimhash: near-duplicate detection with simhash fingerprints.

Fingerprints follow the rsimhash fingerprint spec, version 1 (``SPEC_VERSION``):
FNV-1a 64 feature hashes of word shingles or character n-grams combined by a
bitwise vote. Two texts are near-duplicates at threshold ``k`` when their
fingerprints differ in at most ``k`` bits (``hamming(a, b) <= k``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

# isort: split
from ._command import quiet_blas

quiet_blas()  # before numpy is imported (see _command)

# isort: split
import numpy as np  # noqa: E402

from . import _cpu, _texts  # noqa: E402

_cpu.check()

from . import _rsimhash  # noqa: E402
from ._rsimhash import (  # noqa: E402
    SPEC_VERSION,
    UNICODE_VERSION,
    Index,
    IndexChangedError,
    IndexChecksumError,
    IndexFileError,
    IndexFormatError,
    IndexVersionError,
    __version__,
    compute,
    fingerprint,
    fingerprint_weighted,
    fnv1a64,
)

__all__ = [
    "Index",
    "IndexChangedError",
    "IndexChecksumError",
    "IndexFileError",
    "IndexFormatError",
    "IndexVersionError",
    "SPEC_VERSION",
    "batch",
    "UNICODE_VERSION",
    "__version__",
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

_U64_MAX = (1 << 64) - 1

# Loaded on first use (PEP 562): the batch engine, the report and the Jaccard
# tools are most of the package's import time, which every command-line run
# and every ``import rsimhash`` would otherwise spend whether it uses them or not.
_LAZY = {
    "batch": ("batch", None),
    "report": ("_report", "report"),
    "dedup": ("etl", "dedup"),
    "jaccard": ("similar", "jaccard"),
    "shingles": ("similar", "shingles"),
    "similar_pairs": ("similar", "similar_pairs"),
    "SimilarIndex": ("similar_index", "SimilarIndex"),
}


if TYPE_CHECKING:  # the same names for whoever reads the package statically: the docs site (griffe)
    from . import batch
    from ._report import report
    from .etl import dedup
    from .similar import jaccard, shingles, similar_pairs
    from .similar_index import SimilarIndex


def __getattr__(name: str) -> Any:
    """The lazily loaded names of ``_LAZY``, imported on first use."""
    try:
        module, attr = _LAZY[name]
    except KeyError:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
    import importlib

    loaded = importlib.import_module(f".{module}", __name__)
    value = loaded if attr is None else getattr(loaded, attr)
    globals()[name] = value  # later uses find it without this hook
    return value


def __dir__() -> list:
    """The public names (and the submodules), not the helpers this module imports."""
    return sorted(set(__all__) | {"etl", "similar", "similar_index", "spark", "__doc__", "__file__", "__name__", "__path__"})


def fingerprints(
    texts: Any,
    *,
    mode: str = "words",
    width: int | None = None,
    threads: int | None = None,
    nulls: str = "error",
) -> np.ndarray:
    """Fingerprints of many texts as a ``uint64`` array, computed on Rust threads.

    ``texts`` is a list, tuple, numpy object array or any iterable of ``str``,
    or a pyarrow string array (read in place, without Python objects).
    The values equal ``fingerprint(t, mode=mode, width=width)`` one by one.
    ``threads`` defaults to all cores (or ``RAYON_NUM_THREADS``).
    ``nulls``: a missing text (None, NaN, null) is a ``TypeError`` naming
    its position (``"error"``), has no fingerprint (``"drop"``: the array
    holds the others'), or a missing one (``"keep"``: one entry a text, in
    the column's own kind, every value exact: a pandas ``Series`` of the
    nullable ``UInt64`` dtype on the input's index and name, as ``dedup``
    gives its mask; a pyarrow ``uint64`` array with nulls for a pyarrow
    array or chunked array; a polars ``UInt64`` Series with nulls; a
    ``numpy.ma`` masked ``uint64`` array for anything else). A pandas
    column thus keeps its fingerprints as ``UInt64``, never as float64.

    >>> fps = rsimhash.fingerprints(["a cat sat on the mat", "a cat sat on a mat"])
    >>> fps.dtype, len(fps)
    (dtype('uint64'), 2)
    >>> rsimhash.fingerprints(["a cat", None], nulls="keep").mask.tolist()
    [False, True]
    >>> import pandas as pd
    >>> rsimhash.fingerprints(pd.Series(["a cat sat", None], index=[7, 9]), nulls="keep")
    7    5991735610468139212
    9                   <NA>
    dtype: UInt64
    """
    from . import _nulls

    present, missing = _nulls.split(texts, nulls)
    if _texts.kind(present) == "pyarrow":
        fps = _texts.fingerprint_pieces(_texts.arrow_pieces(present), mode=mode, width=width, threads=threads)
    elif _texts.kind(present) == "polars":
        fps = _texts.fingerprint_pieces(_texts.pieces(present), mode=mode, width=width, threads=threads)
    else:
        fps = _rsimhash.fingerprints(present, mode=mode, width=width, threads=threads)
    if nulls != "keep":
        return fps
    if missing is None:
        missing = np.zeros(len(fps), dtype=bool)
    out = np.zeros(len(missing), dtype=np.uint64)
    out[~missing] = fps
    return _kept_like(texts, out, missing)


def _kept_like(texts: Any, fps: np.ndarray, missing: np.ndarray) -> Any:
    """``fingerprints(..., nulls="keep")`` as the kind of column ``texts``
    is: each kind's own nullable ``uint64``, so no value passes through a
    float (``numpy.ma`` in a DataFrame became float64, losing the low bits)."""
    from ._optional import module

    kind = _texts.kind(texts)
    if kind == "pandas":
        pd = module("pandas")
        values = pd.arrays.IntegerArray(fps, missing.copy())
        return pd.Series(values, index=texts.index, name=texts.name, dtype="UInt64", copy=False)
    if kind == "polars":
        pl = module("polars")
        out = pl.Series(texts.name, fps, dtype=pl.UInt64)
        return out.scatter(np.flatnonzero(missing), None) if missing.any() else out
    if kind == "pyarrow":
        pa = module("pyarrow")
        return pa.array(fps, type=pa.uint64(), mask=missing)
    return np.ma.masked_array(fps, mask=missing)


def _u64_operand(x: Any, name: str) -> np.ndarray:
    if isinstance(x, (bool, np.bool_)):
        raise TypeError(f"{name} must be an int or a uint64 array, got {type(x).__name__}")
    if isinstance(x, (int, np.integer)) and not isinstance(x, np.uint64):
        value = int(x)
        if not 0 <= value <= _U64_MAX:
            raise ValueError(f"{name} must be in 0..2**64-1 (an unsigned 64-bit value), got {value}")
        return np.asarray(value, dtype=np.uint64)
    if isinstance(x, (np.ndarray, np.uint64)) and np.asarray(x).dtype == np.uint64:
        return np.asarray(x)
    dtype = getattr(x, "dtype", None)
    found = f"dtype {dtype}" if dtype is not None else type(x).__name__
    raise TypeError(
        f"{name} must be an int or a uint64 array, got {found}; "
        f"convert with np.ascontiguousarray({name}, dtype=np.uint64) after checking the values are in 0..2**64-1"
    )


def hamming(a: Any, b: Any) -> Any:
    """Number of differing bits: an ``int`` for two ints, else a ``uint8``
    array broadcast from ``uint64`` arrays (and ints).

    Two fingerprints are near-duplicates at ``k`` when this is at most ``k``.
    Ints must be in ``0..2**64-1`` (else ``ValueError``); arrays must be
    ``uint64`` (else ``TypeError``, naming the conversion).

    >>> rsimhash.hamming(0b1011, 0b0001)
    2
    >>> fps = np.array([0, 1, 3], dtype=np.uint64)
    >>> rsimhash.hamming(fps, 0)
    array([0, 1, 2], dtype=uint8)
    >>> rsimhash.hamming(fps[:, None], fps[None, :])  # every pair
    array([[0, 1, 2],
           [1, 0, 1],
           [2, 1, 0]], dtype=uint8)
    """
    if isinstance(a, int) and isinstance(b, int) and not isinstance(a, bool) and not isinstance(b, bool):
        for name, value in (("a", a), ("b", b)):
            if not 0 <= value <= _U64_MAX:
                raise ValueError(f"{name} must be in 0..2**64-1 (an unsigned 64-bit value), got {value}")
        return (a ^ b).bit_count() if hasattr(int, "bit_count") else bin(a ^ b).count("1")
    x, y = np.broadcast_arrays(_u64_operand(a, "a"), _u64_operand(b, "b"))
    shape = x.shape
    flat = _rsimhash.hamming_arrays(np.ascontiguousarray(x).reshape(-1), np.ascontiguousarray(y).reshape(-1))
    out = flat.reshape(shape)
    return out[()] if shape == () else out
