"""Fingerprints in Spark: 64-bit unsigned values held as signed ``long``\\ s.

Spark has no unsigned 64-bit type. A fingerprint ``f`` is stored as the
``long`` with the same 64 bits (``f - 2**64`` when ``f >= 2**63``), which
round-trips exactly; equality, grouping and joins work on it unchanged,
only ordering and arithmetic differ from the unsigned values.
"""

from __future__ import annotations

from typing import Any

import numpy as np

_TWO64 = 1 << 64
_TWO63 = 1 << 63


def to_signed(values: Any) -> Any:
    """The signed ``long`` (int64) holding the same bits as each unsigned
    fingerprint: an int, or an array (or pandas Series) of uint64.

    >>> rsimhash.spark.to_signed(2**64 - 1), rsimhash.spark.to_signed(5)
    (-1, 5)
    >>> rsimhash.spark.to_signed(np.array([0, 2**63], dtype=np.uint64)).tolist()
    [0, -9223372036854775808]
    """
    if isinstance(values, (bool, np.bool_)):
        raise TypeError("to_signed takes fingerprints (ints or uint64 arrays), not a bool")
    if isinstance(values, (int, np.integer)):
        v = int(values)
        if not 0 <= v < _TWO64:
            raise ValueError(f"a fingerprint is from 0 to 2**64 - 1, got {v}")
        return v - _TWO64 if v >= _TWO63 else v
    arr = _array(values, "to_signed")
    if arr.dtype == np.int64:
        raise TypeError("to_signed takes uint64 values; these are int64 already (to_unsigned goes the other way)")
    if arr.dtype != np.uint64:
        raise TypeError(f"to_signed takes a uint64 array, got {arr.dtype}")
    out = arr.view(np.int64)
    return _like(values, out)


def to_unsigned(values: Any) -> Any:
    """The unsigned fingerprint (uint64) whose bits each signed ``long``
    holds: an int, or an array (or pandas Series) of int64.

    >>> rsimhash.spark.to_unsigned(-1), rsimhash.spark.to_unsigned(5)
    (18446744073709551615, 5)
    >>> rsimhash.spark.to_unsigned(np.array([0, -2**63], dtype=np.int64)).tolist()
    [0, 9223372036854775808]
    """
    if isinstance(values, (bool, np.bool_)):
        raise TypeError("to_unsigned takes signed longs (ints or int64 arrays), not a bool")
    if isinstance(values, (int, np.integer)):
        v = int(values)
        if not -_TWO63 <= v < _TWO63:
            raise ValueError(f"a signed long is from -2**63 to 2**63 - 1, got {v}")
        return v + _TWO64 if v < 0 else v
    arr = _array(values, "to_unsigned")
    if arr.dtype == np.uint64:
        raise TypeError("to_unsigned takes int64 values; these are uint64 already (to_signed goes the other way)")
    if arr.dtype != np.int64:
        raise TypeError(f"to_unsigned takes an int64 array, got {arr.dtype}")
    return _like(values, arr.view(np.uint64))


def _array(values: Any, name: str) -> np.ndarray:
    if hasattr(values, "to_numpy") and not isinstance(values, np.ndarray):
        values = values.to_numpy()
    if not isinstance(values, np.ndarray):
        raise TypeError(f"{name} takes an int or a numpy array (or pandas Series), got {type(values).__name__}")
    return values


def _like(original: Any, out: np.ndarray) -> Any:
    """``out`` as a pandas Series when ``original`` was one (same index)."""
    if type(original).__module__.startswith("pandas"):
        return type(original)(out, index=original.index, name=original.name)
    return out
