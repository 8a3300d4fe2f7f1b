"""Pure-Python reference implementation of the rsimhash fingerprint, SPEC v1.

Written from the text of SPEC.md only (not from the Rust sources), so that the
test-suite has an independent oracle.  It favours clarity over speed.

Unicode data caveat
-------------------
SPEC v1 fixes the Unicode Character Database at version 15.1.0 for general
categories and lowercase mappings.  This module uses the running Python's
``unicodedata`` instead (Python 3.11 ships Unicode 14.0.0).  The reference is
therefore exact only for text whose code points are all assigned in Unicode
14.0 (``unicodedata.category(c) != "Cn"`` under Python 3.11); code points
assigned later (or still unassigned) may be classified differently from a
15.1-based implementation.  ``UNICODE_VERSION`` records what was used.

Lone surrogates (category ``Cs``, possible in a Python ``str``) are separators,
as the spec requires.

Public functions
----------------
``fnv1a64(data)``                 FNV-1a 64 of bytes (a ``str`` is UTF-8 encoded)
``compute(hashes, weights=None)`` combine feature hashes (SPEC "compute")
``tokens(text)``                  steps 1-3 (lowercase, token chars, no-space scripts)
``word_shingles(toks, width)``    step 4, as strings joined by one space
``char_ngrams(toks, n)``          mode ``chars`` windows
``features(text, mode, width)``   the feature strings of a text
``fingerprint(text, mode="words", width=None)``
``fingerprint_weighted(features)``
``hamming(a, b)``
"""

from __future__ import annotations

import math
import unicodedata
from typing import Iterable, List, Optional, Sequence, Tuple, Union

UNICODE_VERSION = unicodedata.unidata_version

FNV_OFFSET = 0xCBF29CE484222325
FNV_PRIME = 0x100000001B3
MASK64 = (1 << 64) - 1

DEFAULT_WIDTH = {"words": 3, "chars": 4}

# SPEC step 3: a token character in one of these ranges is a token of its own.
NO_SPACE_RANGES: Tuple[Tuple[int, int], ...] = (
    (0x0E00, 0x0EFF),  # Thai, Lao
    (0x1000, 0x109F),  # Myanmar
    (0x1780, 0x17FF),  # Khmer
    (0x3040, 0x30FF),  # Hiragana, Katakana
    (0x3400, 0x4DBF),  # CJK Extension A
    (0x4E00, 0x9FFF),  # CJK Unified Ideographs
    (0xF900, 0xFAFF),  # CJK Compatibility Ideographs
    (0x20000, 0x3134F),  # CJK Extensions B..G
)


# --------------------------------------------------------------------------
# Notation
# --------------------------------------------------------------------------
def fnv1a64(data: Union[bytes, bytearray, memoryview, str]) -> int:
    """FNV-1a, 64 bit.  A ``str`` is hashed as its UTF-8 bytes (strict)."""
    if isinstance(data, str):
        data = data.encode("utf-8")  # raises UnicodeEncodeError on lone surrogates
    h = FNV_OFFSET
    for b in bytes(data):
        h ^= b
        h = (h * FNV_PRIME) & MASK64
    return h


def hamming(a: int, b: int) -> int:
    """popcount(a XOR b) of two u64 values."""
    return bin((a ^ b) & MASK64).count("1")


# --------------------------------------------------------------------------
# Combining feature hashes
# --------------------------------------------------------------------------
def compute(hashes: Sequence[int], weights: Optional[Sequence[float]] = None) -> int:
    """SPEC "compute".

    ``V[j] = sum_i (w_i if bit j of h_i is 1 else -w_i)``; bit j of the result
    is 1 iff ``V[j] > 0``.  Without weights every weight is 1 (integer sums,
    exact).  With weights, each ``V[j]`` is accumulated as a Python float
    (IEEE-754 double) starting from 0.0, adding the features in the order
    given.  No features give 0.
    """
    hashes = list(hashes)
    for h in hashes:
        if not (0 <= h <= MASK64):
            raise ValueError(f"hash {h} is not a u64")
    if weights is None:
        v: List[Union[int, float]] = [0] * 64
        for h in hashes:
            for j in range(64):
                v[j] += 1 if (h >> j) & 1 else -1
    else:
        weights = [float(w) for w in weights]
        if len(weights) != len(hashes):
            raise ValueError("hashes and weights differ in length")
        v = [0.0] * 64
        for h, w in zip(hashes, weights):
            for j in range(64):
                if (h >> j) & 1:
                    v[j] = v[j] + w
                else:
                    v[j] = v[j] + (-w)
    fp = 0
    for j in range(64):
        if v[j] > 0:
            fp |= 1 << j
    return fp


# --------------------------------------------------------------------------
# Text features, steps 1-3
# --------------------------------------------------------------------------
def is_token_char(c: str) -> bool:
    """SPEC step 2: general category L*, M* or N*.  Surrogates (Cs) are not."""
    return unicodedata.category(c)[0] in "LMN"


def is_no_space(c: str) -> bool:
    cp = ord(c)
    for lo, hi in NO_SPACE_RANGES:
        if lo <= cp <= hi:
            return True
    return False


def lowercase(text: str) -> str:
    """SPEC step 1: full lowercase mapping code point by code point.

    ``c.lower()`` on a single character has no context, so no final-sigma
    rule applies, and U+0130 becomes "i" + U+0307.
    """
    return "".join(c.lower() for c in text)


def tokens(text: str) -> List[str]:
    """SPEC steps 1-3: the list of tokens of ``text``."""
    out: List[str] = []
    run: List[str] = []
    for c in lowercase(text):
        if not is_token_char(c):
            if run:
                out.append("".join(run))
                run = []
        elif is_no_space(c):
            if run:
                out.append("".join(run))
                run = []
            out.append(c)
        else:
            run.append(c)
    if run:
        out.append("".join(run))
    return out


# --------------------------------------------------------------------------
# Shingles / n-grams
# --------------------------------------------------------------------------
def _check_width(width: int) -> int:
    if isinstance(width, bool) or not isinstance(width, int):
        raise TypeError("width must be an int")
    if width < 1:
        raise ValueError("width must be at least 1")
    return width


def word_shingles(toks: Sequence[str], width: int = 3) -> List[str]:
    """SPEC step 4-5: shingles as their tokens joined by a single space."""
    _check_width(width)
    t = len(toks)
    if t == 0:
        return []
    if t < width:
        return [" ".join(toks)]
    return [" ".join(toks[i : i + width]) for i in range(t - width + 1)]


def normalized_text(text: str) -> str:
    """Mode ``chars``: the tokens joined by single spaces."""
    return " ".join(tokens(text))


def char_ngrams(toks: Sequence[str], n: int = 4) -> List[str]:
    """Mode ``chars``: windows of ``n`` code points of the normalized text."""
    _check_width(n)
    s = " ".join(toks)
    if not s:
        return []
    if len(s) < n:
        return [s]
    return [s[i : i + n] for i in range(len(s) - n + 1)]


def features(text: str, mode: str = "words", width: Optional[int] = None) -> List[str]:
    """The feature strings of ``text`` (each hashed as fnv1a64 of its UTF-8)."""
    if mode not in DEFAULT_WIDTH:
        raise ValueError(f"unknown mode {mode!r}")
    if width is None:
        width = DEFAULT_WIDTH[mode]
    toks = tokens(text)
    if mode == "words":
        return word_shingles(toks, width)
    return char_ngrams(toks, width)


def _feature_bytes(f: str) -> bytes:
    # Features are built from token characters and spaces only, so they never
    # contain surrogates and always encode.
    return f.encode("utf-8")


def fingerprint(text: str, mode: str = "words", width: Optional[int] = None) -> int:
    """SPEC v1 text fingerprint."""
    if not isinstance(text, str):
        raise TypeError("text must be a str")
    return compute([fnv1a64(_feature_bytes(f)) for f in features(text, mode, width)])


# --------------------------------------------------------------------------
# Weighted features
# --------------------------------------------------------------------------
Feature = Union[str, bytes, int]


def feature_hash(feature: Feature) -> int:
    """str -> fnv1a64(UTF-8), bytes -> fnv1a64(bytes), int -> itself (u64)."""
    if isinstance(feature, str):
        return fnv1a64(feature.encode("utf-8"))
    if isinstance(feature, (bytes, bytearray, memoryview)):
        return fnv1a64(bytes(feature))
    if isinstance(feature, int) and not isinstance(feature, bool):
        if not (0 <= feature <= MASK64):
            raise ValueError(f"integer feature {feature} is not a u64")
        return feature
    raise TypeError(f"unsupported feature type {type(feature).__name__}")


def fingerprint_weighted(feats: Iterable[Tuple[Feature, float]]) -> int:
    """SPEC "Weighted features"."""
    hashes: List[int] = []
    weights: List[float] = []
    for feature, weight in feats:
        w = float(weight)
        if not math.isfinite(w):
            raise ValueError(f"weight {weight!r} is not finite")
        hashes.append(feature_hash(feature))
        weights.append(w)
    return compute(hashes, weights)


if __name__ == "__main__":  # tiny self-check
    assert fnv1a64(b"") == 0xCBF29CE484222325
    assert fnv1a64(b"a") == 0xAF63DC4C8601EC8C
    assert fnv1a64(b"foobar") == 0x85944171F73967E8
    print("reference_v1 ok, unicodedata", UNICODE_VERSION)
