"""Ids of the user's own kind, checked once for every function that takes
``ids=``: any sequence of non-negative ints (a list, a numpy array of any
integer dtype, a pandas Index) as ``uint64``, or of strings (kept as a
numpy object array, for the functions that carry them back).

Invariant: what these return holds one id per item, each once; a repeated
id is a ``ValueError`` naming it and its two positions, so no answer ever
pairs an id with itself."""

from __future__ import annotations

from typing import Any, Optional, Tuple

import numpy as np

__all__ = ["any_ids", "int_ids", "ranked", "user_ids"]

_U64_MAX = (1 << 64) - 1


def _array(ids: Any, name: str) -> np.ndarray:
    if isinstance(ids, (str, bytes)) or np.isscalar(ids):
        raise TypeError(f"{name} must be a sequence of ids (one per text), got {type(ids).__name__}")
    if hasattr(ids, "to_numpy"):  # pandas Index or Series, polars Series
        ids = ids.to_numpy()
    arr = np.asarray(ids) if isinstance(ids, np.ndarray) else np.asarray(list(ids), dtype=object)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be one-dimensional, got shape {arr.shape}")
    return arr


def _as_uint64(arr: np.ndarray, name: str) -> Optional[np.ndarray]:
    """``arr`` as uint64 when it holds ints only (None when it holds strings)."""
    if arr.dtype == np.uint64:
        return arr
    if arr.dtype.kind == "b":
        raise TypeError(f"{name} must be ints or strings, got booleans")
    if arr.dtype.kind in "iu":
        negative = np.flatnonzero(arr < 0)
        if len(negative):
            raise ValueError(f"{name} must be non-negative, got {arr[negative[0]]} at position {negative[0]}")
        return arr.astype(np.uint64)
    if arr.dtype.kind in "UST":
        return None
    if arr.dtype.kind != "O":
        raise TypeError(f"{name} must be ints or strings, got dtype {arr.dtype}")
    if len(arr) == 0:
        return np.empty(0, dtype=np.uint64)
    if all(isinstance(x, str) for x in arr):
        return None
    out = np.empty(len(arr), dtype=np.uint64)
    for i, x in enumerate(arr):
        if isinstance(x, (bool, np.bool_)) or not isinstance(x, (int, np.integer)):
            raise TypeError(f"{name} must be all ints or all strings, got {type(x).__name__} at position {i}")
        if not 0 <= int(x) <= _U64_MAX:
            raise ValueError(f"{name} must be non-negative and below 2**64, got {int(x)} at position {i}")
        out[i] = int(x)
    return out


def _distinct(arr: np.ndarray, name: str) -> None:
    if len(arr) < 2:
        return
    if arr.dtype == object:
        seen: dict = {}
        for i, x in enumerate(arr):
            j = seen.setdefault(x, i)
            if j != i:
                raise ValueError(f"{name} must be distinct: {x!r} is given at positions {j} and {i}")
        return
    order = np.argsort(arr, kind="stable")
    s = arr[order]
    same = np.flatnonzero(s[1:] == s[:-1])
    if len(same):
        a, b = order[same[0]], order[same[0] + 1]
        raise ValueError(f"{name} must be distinct: {arr[a].item()!r} is given at positions {min(a, b)} and {max(a, b)}")


def any_ids(ids: Any, name: str = "ids") -> np.ndarray:
    """``ids`` as ``uint64`` (ints) or an object array of ``str``, of any
    length, not checked distinct (the caller checks, beyond memory)."""
    arr = _array(ids, name)
    as_ints = _as_uint64(arr, name)
    return as_ints if as_ints is not None else np.array([str(x) for x in arr], dtype=object)


def user_ids(ids: Any, n: int, name: str = "ids", *, unique: bool = True) -> np.ndarray:
    """``ids`` for ``n`` items: a ``uint64`` array for ints, a numpy object
    array of ``str`` for strings; checked one per item and distinct."""
    arr = _array(ids, name)
    as_ints = _as_uint64(arr, name)
    out = as_ints if as_ints is not None else np.array([str(x) for x in arr], dtype=object)
    if len(out) != n:
        raise ValueError(f"{name} must hold one id per text: {len(out)} ids for {n} texts")
    if unique:
        _distinct(out, name)
    return out


def int_ids(ids: Any, n: int, name: str = "ids", *, unique: bool = True) -> np.ndarray:
    """``ids`` as a contiguous ``uint64`` array (ints only), checked."""
    out = user_ids(ids, n, name, unique=unique)
    if out.dtype != np.uint64:
        raise TypeError(f"{name} must be non-negative ints here, got strings")
    return np.ascontiguousarray(out)


def ranked(names: np.ndarray, name: str) -> Tuple[np.ndarray, np.ndarray]:
    """``(ranks, by_rank)`` of distinct strings: ``by_rank[ranks] == names``.
    A repeated string is a ``ValueError`` naming it and its positions."""
    order = np.argsort(names, kind="stable")
    by_rank = names[order]
    if len(by_rank) > 1:
        same = np.flatnonzero(by_rank[1:] == by_rank[:-1])
        if len(same):
            i, j = sorted((int(order[same[0]]), int(order[same[0] + 1])))
            raise ValueError(f"{name} must be distinct: {names[i]!r} is given at positions {i} and {j}")
    ranks = np.empty(len(names), dtype=np.uint64)
    ranks[order] = np.arange(len(names), dtype=np.uint64)
    return ranks, by_rank


def not_utf8(value: str, at: int) -> str:
    """The words naming an id that UTF-8 cannot hold, ``value[at]`` being the
    lone surrogate in it (as a JSON escape such as ``"\\ud800"`` makes): the
    id shown with escapes, so that the message itself can be printed."""
    shown = value.encode("utf-8", "backslashreplace").decode("ascii", "backslashreplace")
    return f"the id {shown!r} cannot be written as UTF-8 (it holds the lone surrogate U+{ord(value[at]):04X})"
