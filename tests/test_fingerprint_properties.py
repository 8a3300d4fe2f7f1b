"""Hypothesis property tests: the installed ``rsimhash`` against the pure-Python
reference of SPEC v1 (tests/reference_v1.py).

Text strategies use only code points assigned in the running Python's
``unicodedata`` (category != "Cn"): the reference is exact only there (Python
3.11 has Unicode 14.0, the spec 15.1).  Surrogates are kept out of the main
strategy and exercised by a separate test.
"""

from __future__ import annotations

import math
import os
import string
import sys
import unicodedata

import numpy as np
import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, assume, example, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from hypothesis.extra import numpy as hnp  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

import reference_v1 as ref  # noqa: E402
from budget import examples  # noqa: E402

rsimhash = pytest.importorskip("rsimhash")

U64_MAX = (1 << 64) - 1

# Modest example counts: the whole file must finish well under a minute on a
# slow 2-core machine.
FAST = settings(
    max_examples=examples(150), deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large]
)
SLOW = settings(
    max_examples=examples(60), deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large]
)


def _assigned(c: str) -> bool:
    return unicodedata.category(c) not in ("Cn", "Cs")


# ---------------------------------------------------------------------------
# Strategies
# ---------------------------------------------------------------------------
_INTERESTING_RAW = (
    string.ascii_letters
    + string.digits
    + string.punctuation
    # space kinds and invisible separators
    + " \t\n\r\x0b\x0c\x1c\x1d\x1e\x1f\x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005"
    + "\u2006\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000\u200b\u200c\u200d"
    + "\u180e\ufeff\u00ad\u2060\x00\x7f"
    # CJK ideographs, compatibility, extensions; kana; bopomofo; Yi
    + "漢字模型中文日本語東京北京\u3400\u4dbf\u4e00\u9fff\uf900\ufad9\U00020000\U0002a6df"
    + "\U0002b738\U0002f800\U0003134a"
    + "あいうかゕゖ\u3099\u309a゛ーカタナヴヺ・ヿ\u3105\ua000"
    # Hangul (not a no-space range), jamo
    + "한국어문장\u1100\u1161\u11a8\u3131\u314f"
    # Thai, Lao, Khmer, Myanmar with their marks/digits, and range neighbours
    + "กขคงิีุู่้๑๒฿ฯๆ"
    + "ກຂຄ\u0eb4\u0ec8໑ໜ"
    + "កខគា\u17d2\u17b6\u17e1\u17d4"
    + "ကခဂ\u103c\u103a\u1031၁၂\u109e\u109f"
    + "\u0f40\u0f00\u10a0\u10d0\u1820\u1800\u0dca"
    # combining marks (Mn, Mc, Me) and variation selectors
    + "\u0300\u0301\u0308\u0327\u0345\u0483\u0488\u20dd\u20e3\ufe0f\ufe0e\u093f\u0902"
    + "\u0915\u0941\U000e0100"
    # Greek capitals and sigmas
    + "ΑΒΓΔΕΣΩΟσςΐ\u1fbc\u1f88"
    # special lowercase mappings
    + "\u0130\u0131ßẞǄǅǆǇǈ\u212a\u212b\u2126\U00010400\u13a0\u1c90\ua7c0\u2c2f"
    # numbers of all kinds
    + "²½Ⅻⅻ①٣۴߀\U0001d7ce\u3007"
    # symbols, emoji and their parts
    + "©™€$\u24b6\u24d0😀👍\U0001f3fd❤\U0001f1eb\U0001f1f7\U000e0067\U000e007f_'’-.,@"
    # Arabic, Hebrew, Cyrillic, fullwidth
    + "عربي\u064eשָׁПривет\uff21\uff41\uff10"
)
INTERESTING = sorted({c for c in _INTERESTING_RAW if _assigned(c)})

assigned_chars = st.characters(exclude_categories=("Cn", "Cs"))
interesting_chars = st.sampled_from(INTERESTING)
mixed_chars = st.one_of(interesting_chars, interesting_chars, assigned_chars)

WORDS = [
    "the",
    "quick",
    "Fox",
    "DOG",
    "a",
    "i",
    "3.14",
    "e-mail",
    "don't",
    "naïve",
    "e\u0301te\u0301",
    "Straße",
    "STRASSE",
    "ΟΔΟΣ",
    "\u0130stanbul",
    "мир",
    "ПРИВЕТ",
    "漢字",
    "テスト",
    "AI模型ok",
    "ภาษาไทย",
    "ខ្មែរ",
    "မြန်မာ",
    "한국어",
    "हिन्दी",
    "عربي١٢٣",
    "שלום",
    "ＡＢＣ",
    "😀",
    "👨\u200d👩\u200d👧",
    "1\ufe0f\u20e3",
    "x²",
]
SEPARATORS = [" ", "  ", "\t", "\n", "\u00a0", "\u3000", ", ", ". ", "-", "", "\u200b"]

free_text = st.text(mixed_chars, max_size=40)
word_text = st.lists(
    st.tuples(st.one_of(st.sampled_from(WORDS), st.text(mixed_chars, min_size=1, max_size=6)), st.sampled_from(SEPARATORS)),
    max_size=14,
).map(lambda parts: "".join(w + s for w, s in parts))
texts = st.one_of(free_text, word_text)

modes = st.sampled_from(["words", "chars"])
widths = st.integers(min_value=1, max_value=6)

u64 = st.one_of(
    st.integers(min_value=0, max_value=U64_MAX),
    st.sampled_from([0, 1, U64_MAX, 1 << 63, (1 << 63) - 1, 0x5555555555555555, 0xAAAAAAAAAAAAAAAA, 0xCBF29CE484222325]),
)

finite_weights = st.one_of(
    st.floats(allow_nan=False, allow_infinity=False),
    st.floats(min_value=-1e6, max_value=1e6, allow_nan=False, allow_infinity=False),
    st.sampled_from([0.0, -0.0, 1.0, -1.0, 0.5, 1e16, -1e16, 1.7e308, -1.7e308, 5e-324, -5e-324, 2.0**53, 3.0]),
    st.integers(min_value=-1000, max_value=1000).map(float),
)
weighted_feature = st.one_of(
    st.text(mixed_chars, max_size=8),
    st.binary(max_size=8),
    u64,
)


def _check(text, mode, width):
    expected = ref.fingerprint(text, mode, width)
    got = rsimhash.fingerprint(text, mode=mode, width=width)
    assert got == expected, "mode=%s width=%d text=%r tokens=%r: expected 0x%016x got 0x%016x" % (
        mode,
        width,
        text,
        ref.tokens(text),
        expected,
        got,
    )


# ---------------------------------------------------------------------------
# fingerprint vs reference
# ---------------------------------------------------------------------------
@FAST
@given(text=texts, mode=modes, width=widths)
@example(text="", mode="words", width=1)
@example(text="\u0130\u0130", mode="chars", width=2)
@example(text="ΟΔΟΣ", mode="words", width=3)
@example(text="漢字テスト", mode="chars", width=3)
def test_fingerprint_matches_reference(text, mode, width):
    _check(text, mode, width)


@FAST
@given(text=st.text(interesting_chars, max_size=30), mode=modes, width=widths)
def test_fingerprint_interesting_chars(text, mode, width):
    _check(text, mode, width)


@SLOW
@given(text=st.text(assigned_chars, max_size=60), mode=modes, width=widths)
def test_fingerprint_any_assigned_text(text, mode, width):
    _check(text, mode, width)


@FAST
@given(text=texts)
def test_default_widths(text):
    assert rsimhash.fingerprint(text) == ref.fingerprint(text, "words", 3)
    assert rsimhash.fingerprint(text, mode="chars") == ref.fingerprint(text, "chars", 4)


def test_every_interesting_char_alone_and_in_context():
    """Each interesting char, alone and between letters, both modes."""
    for c in INTERESTING:
        for text in (c, "a" + c + "b", c + c + " x " + c, "漢" + c + "字"):
            for mode, width in (("words", 1), ("words", 3), ("chars", 1), ("chars", 4)):
                _check(text, mode, width)


# ---------------------------------------------------------------------------
# Lone surrogates: separators in fingerprint(s), errors in fingerprint_weighted
# ---------------------------------------------------------------------------
surrogates = st.integers(min_value=0xD800, max_value=0xDFFF).map(chr)
texts_with_surrogates = st.lists(st.one_of(surrogates, surrogates, mixed_chars), min_size=1, max_size=30).map("".join)


@SLOW
@given(text=texts_with_surrogates, mode=modes, width=widths)
@example(text="a\ud800b", mode="words", width=1)
@example(text="\udfff", mode="chars", width=4)
@example(text="x\ud83d\ude00y", mode="words", width=3)  # a surrogate *pair* in a str
def test_surrogates_are_separators(text, mode, width):
    _check(text, mode, width)
    texts_ = [text, "plain text", text + " tail"]
    got = rsimhash.fingerprints(texts_, mode=mode, width=width)
    assert got.tolist() == [ref.fingerprint(t, mode, width) for t in texts_]


@SLOW
@given(text=texts_with_surrogates)
def test_surrogate_str_feature_is_an_error(text):
    assume(any(0xD800 <= ord(c) <= 0xDFFF for c in text))
    with pytest.raises((ValueError, UnicodeEncodeError)):
        rsimhash.fingerprint_weighted([(text, 1.0)])
    with pytest.raises((ValueError, UnicodeEncodeError)):
        rsimhash.fingerprint_weighted([("ok", 1.0), (text, 2.0)])


# ---------------------------------------------------------------------------
# fingerprints (batch) == fingerprint one by one
# ---------------------------------------------------------------------------
@SLOW
@given(batch=st.lists(texts, max_size=25), mode=modes, width=st.one_of(st.none(), widths))
def test_fingerprints_equals_fingerprint(batch, mode, width):
    expected = [rsimhash.fingerprint(t, mode=mode, width=width) for t in batch]
    w = width if width is not None else ref.DEFAULT_WIDTH[mode]
    assert expected == [ref.fingerprint(t, mode, w) for t in batch]

    got = rsimhash.fingerprints(batch, mode=mode, width=width)
    assert isinstance(got, np.ndarray)
    assert got.dtype == np.uint64 and got.shape == (len(batch),)
    assert got.tolist() == expected
    for threads in (1, 2):
        assert rsimhash.fingerprints(batch, mode=mode, width=width, threads=threads).tolist() == expected
    obj = np.empty(len(batch), dtype=object)
    obj[:] = batch
    assert rsimhash.fingerprints(obj, mode=mode, width=width).tolist() == expected
    assert rsimhash.fingerprints(tuple(batch), mode=mode, width=width).tolist() == expected
    assert rsimhash.fingerprints((t for t in batch), mode=mode, width=width).tolist() == expected


def test_fingerprints_large_batch_threads():
    rng = np.random.default_rng(12345)
    words = np.array(WORDS + ["alpha", "beta", "gamma", "delta"], dtype=object)
    batch = [" ".join(rng.choice(words, size=int(rng.integers(0, 30)))) for _ in range(3000)]
    expected = [rsimhash.fingerprint(t) for t in batch]
    for threads in (None, 1, 2, 3):
        assert rsimhash.fingerprints(batch, threads=threads).tolist() == expected
    sample = batch[:200]
    assert expected[:200] == [ref.fingerprint(t) for t in sample]


# ---------------------------------------------------------------------------
# compute
# ---------------------------------------------------------------------------
@FAST
@given(hashes=st.lists(u64, max_size=40))
def test_compute_matches_reference(hashes):
    expected = ref.compute(hashes)
    assert rsimhash.compute(hashes) == expected
    assert rsimhash.compute(tuple(hashes)) == expected
    assert rsimhash.compute(np.array(hashes, dtype=np.uint64)) == expected


def test_compute_empty():
    assert rsimhash.compute([]) == 0
    assert rsimhash.compute(np.array([], dtype=np.uint64)) == 0


# ---------------------------------------------------------------------------
# fingerprint_weighted
# ---------------------------------------------------------------------------
@FAST
@given(feats=st.lists(st.tuples(weighted_feature, finite_weights), max_size=20))
@example(feats=[("p", 1e16), ("q", 1.0), ("p", -1e16)])
@example(feats=[("x", 1.7e308), ("x", 1.7e308), ("y", 1.7e308), ("y", 1.7e308), ("y", 1.7e308)])
@example(feats=[(b"", -0.0), (0, 0.0)])
def test_fingerprint_weighted_matches_reference(feats):
    assert all(math.isfinite(w) for _, w in feats)
    expected = ref.fingerprint_weighted(feats)
    assert rsimhash.fingerprint_weighted(feats) == expected
    assert rsimhash.fingerprint_weighted(iter(feats)) == expected


@FAST
@given(feats=st.lists(st.tuples(weighted_feature, st.just(1.0)), max_size=20))
def test_unit_weights_equal_compute(feats):
    hashes = [ref.feature_hash(f) for f, _ in feats]
    assert rsimhash.fingerprint_weighted(feats) == rsimhash.compute(hashes) == ref.compute(hashes)


@FAST
@given(text=texts, mode=modes, width=widths)
def test_fingerprint_equals_weighted_over_features(text, mode, width):
    feats = [(f, 1.0) for f in ref.features(text, mode, width)]
    assert rsimhash.fingerprint_weighted(feats) == rsimhash.fingerprint(text, mode=mode, width=width)


# ---------------------------------------------------------------------------
# fnv1a64
# ---------------------------------------------------------------------------
@FAST
@given(data=st.one_of(st.binary(max_size=64), st.text(mixed_chars, max_size=32)))
def test_fnv1a64_matches_reference(data):
    assert rsimhash.fnv1a64(data) == ref.fnv1a64(data)
    if isinstance(data, str):
        assert rsimhash.fnv1a64(data) == rsimhash.fnv1a64(data.encode("utf-8"))


# ---------------------------------------------------------------------------
# hamming
# ---------------------------------------------------------------------------
def _popcount_xor(a, b):
    return bin(int(a) ^ int(b)).count("1")


@FAST
@given(a=u64, b=u64)
def test_hamming_ints(a, b):
    got = rsimhash.hamming(a, b)
    assert isinstance(got, int)
    assert got == _popcount_xor(a, b) == ref.hamming(a, b)
    assert rsimhash.hamming(b, a) == got


u64_arrays = st.integers(min_value=0, max_value=12).flatmap(
    lambda n: st.tuples(
        hnp.arrays(np.uint64, (n,), elements=u64),
        hnp.arrays(np.uint64, (n,), elements=u64),
    )
)


def _expected_broadcast(a, b):
    a_b, b_b = np.broadcast_arrays(np.asarray(a, dtype=np.uint64), np.asarray(b, dtype=np.uint64))
    out = np.empty(a_b.shape, dtype=np.uint8)
    for idx in np.ndindex(a_b.shape):
        out[idx] = _popcount_xor(a_b[idx], b_b[idx])
    return out


def _check_hamming_array(a, b):
    expected = _expected_broadcast(a, b)
    got = rsimhash.hamming(a, b)
    assert isinstance(got, np.ndarray)
    assert got.dtype == np.uint8
    assert got.shape == expected.shape
    assert np.array_equal(got, expected)


@FAST
@given(pair=u64_arrays)
def test_hamming_same_shape(pair):
    a, b = pair
    _check_hamming_array(a, b)


@FAST
@given(data=st.data())
def test_hamming_array_vs_scalar(data):
    n = data.draw(st.integers(min_value=0, max_value=12))
    a = data.draw(hnp.arrays(np.uint64, (n,), elements=u64))
    s = data.draw(u64)
    _check_hamming_array(a, np.uint64(s))
    _check_hamming_array(np.uint64(s), a)
    _check_hamming_array(a, np.array(s, dtype=np.uint64))  # 0-d array
    _check_hamming_array(a, s)  # plain Python int


@FAST
@given(data=st.data())
def test_hamming_outer_broadcast(data):
    n = data.draw(st.integers(min_value=0, max_value=8))
    m = data.draw(st.integers(min_value=0, max_value=8))
    a = data.draw(hnp.arrays(np.uint64, (n, 1), elements=u64))
    b = data.draw(hnp.arrays(np.uint64, (m,), elements=u64))
    _check_hamming_array(a, b)
    _check_hamming_array(b, a)
