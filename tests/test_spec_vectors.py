"""The installed ``rsimhash`` package against the SPEC v1 golden vectors.

Vectors live in tests/data/vectors_v1.json (made by tests/data/make_vectors.py
from the pure-Python reference in tests/reference_v1.py).
"""

from __future__ import annotations

import json
import os
import sys
from collections import defaultdict

import numpy as np
import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

import reference_v1 as ref  # noqa: E402

try:
    import rsimhash
except ImportError:  # reference-only tests still run
    rsimhash = None

needs_pkg = pytest.mark.skipif(rsimhash is None, reason="rsimhash is not installed")

with open(os.path.join(HERE, "data", "vectors_v1.json"), encoding="utf-8") as _f:
    VECTORS = json.load(_f)

FP = VECTORS["fingerprints"]
FNV = VECTORS["fnv1a64"]
WEIGHTED = VECTORS["weighted"]

SPEC_FNV = [(b"", 0xCBF29CE484222325), (b"a", 0xAF63DC4C8601EC8C), (b"foobar", 0x85944171F73967E8)]


def _u64(s: str) -> int:
    return int(s, 16)


def _fp_id(e) -> str:
    t = e["text"]
    short = t[:24].encode("unicode_escape").decode("ascii")
    return "%s%d-%s" % (e["mode"], e["width"], short or "<empty>")


def _groups():
    g = defaultdict(list)
    for e in FP:
        g[(e["mode"], e["width"])].append(e)
    return sorted(g.items())


GROUPS = _groups()


def _decode_feature(kind, value):
    if kind == "str":
        return value
    if kind == "bytes_hex":
        return bytes.fromhex(value)
    if kind == "int":
        return int(value, 16)
    raise AssertionError("unknown feature kind %r" % kind)


# ---------------------------------------------------------------------------
# The file itself and the reference
# ---------------------------------------------------------------------------
def test_vector_file_shape():
    assert VECTORS["spec_version"] == 1
    assert len(FP) >= 100
    modes_widths = {(e["mode"], e["width"]) for e in FP}
    for w in (1, 2, 3, 4, 5):
        assert ("words", w) in modes_widths
    for n in (1, 2, 3, 4, 6):
        assert ("chars", n) in modes_widths
    for e in FP:
        assert e["fingerprint"].startswith("0x") and len(e["fingerprint"]) == 18
    hexes = {e["bytes_hex"] for e in FNV}
    for b, _ in SPEC_FNV:
        assert b.hex() in hexes


@pytest.mark.parametrize("data,expected", SPEC_FNV)
def test_reference_spec_fnv_vectors(data, expected):
    assert ref.fnv1a64(data) == expected
    assert ref.fnv1a64(data.decode("ascii")) == expected


def test_reference_reproduces_vectors():
    """The reference still yields the stored vectors (guards against edits)."""
    for e in FP:
        assert ref.fingerprint(e["text"], e["mode"], e["width"]) == _u64(e["fingerprint"]), e
    for e in FNV:
        assert ref.fnv1a64(bytes.fromhex(e["bytes_hex"])) == _u64(e["fnv1a64"])
    for e in WEIGHTED:
        feats = [(_decode_feature(k, v), w) for k, v, w in e["features"]]
        assert ref.fingerprint_weighted(feats) == _u64(e["fingerprint"])


def test_reference_hand_checked():
    assert ref.fingerprint("") == 0
    assert ref.fingerprint("Hello") == ref.fnv1a64(b"hello")
    assert ref.fingerprint("a b c") == ref.fnv1a64(b"a b c")
    assert ref.fingerprint("ab", mode="chars") == ref.fnv1a64(b"ab")
    assert ref.tokens("\u0130") == ["i\u0307"]
    assert ref.tokens("ΟΔΟΣ") == ["οδοσ"]
    assert ref.tokens("漢字テスト") == ["漢", "字", "テ", "ス", "ト"]
    assert ref.tokens("AI模型ok") == ["ai", "模", "型", "ok"]
    assert ref.tokens("한국어 문장") == ["한국어", "문장"]
    assert ref.normalized_text("漢字") == "漢 字"


# ---------------------------------------------------------------------------
# The package
# ---------------------------------------------------------------------------
@needs_pkg
@pytest.mark.parametrize("data,expected", SPEC_FNV)
def test_package_spec_fnv_vectors(data, expected):
    assert rsimhash.fnv1a64(data) == expected
    assert rsimhash.fnv1a64(data.decode("ascii")) == expected


@needs_pkg
@pytest.mark.parametrize("e", FNV, ids=[e["bytes_hex"][:16] or "<empty>" for e in FNV])
def test_fnv1a64(e):
    data = bytes.fromhex(e["bytes_hex"])
    expected = _u64(e["fnv1a64"])
    got = rsimhash.fnv1a64(data)
    assert type(got) is int
    assert got == expected
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return
    assert rsimhash.fnv1a64(text) == expected


@needs_pkg
@pytest.mark.parametrize("e", FP, ids=[_fp_id(e) for e in FP])
def test_fingerprint(e):
    expected = _u64(e["fingerprint"])
    got = rsimhash.fingerprint(e["text"], mode=e["mode"], width=e["width"])
    assert type(got) is int
    assert got == expected, "%s width %d text %r: expected 0x%016x got 0x%016x" % (
        e["mode"],
        e["width"],
        e["text"],
        expected,
        got,
    )
    # defaults: words w=3, chars n=4
    if e["mode"] == "words" and e["width"] == 3:
        assert rsimhash.fingerprint(e["text"]) == expected
        assert rsimhash.fingerprint(e["text"], mode="words") == expected
        assert rsimhash.fingerprint(e["text"], width=3) == expected
    if e["mode"] == "chars" and e["width"] == 4:
        assert rsimhash.fingerprint(e["text"], mode="chars") == expected


@needs_pkg
@pytest.mark.parametrize("key,entries", GROUPS, ids=["%s%d" % k for k, _ in GROUPS])
def test_fingerprints_batch(key, entries):
    mode, width = key
    texts = [e["text"] for e in entries]
    expected = [_u64(e["fingerprint"]) for e in entries]
    got = rsimhash.fingerprints(texts, mode=mode, width=width)
    assert isinstance(got, np.ndarray)
    assert got.dtype == np.uint64
    assert got.shape == (len(texts),)
    assert got.tolist() == expected
    for threads in (1, 2):
        got = rsimhash.fingerprints(texts, mode=mode, width=width, threads=threads)
        assert got.tolist() == expected


@needs_pkg
def test_fingerprints_empty_list():
    got = rsimhash.fingerprints([])
    assert isinstance(got, np.ndarray)
    assert got.dtype == np.uint64
    assert got.shape == (0,)


@needs_pkg
@pytest.mark.parametrize("key,entries", GROUPS, ids=["%s%d" % k for k, _ in GROUPS])
def test_fingerprints_pyarrow(key, entries):
    pa = pytest.importorskip("pyarrow")
    mode, width = key
    texts = [e["text"] for e in entries]
    expected = [_u64(e["fingerprint"]) for e in entries]
    got = rsimhash.fingerprints(pa.array(texts, type=pa.string()), mode=mode, width=width)
    assert got.dtype == np.uint64
    assert got.tolist() == expected


@needs_pkg
@pytest.mark.parametrize("e", WEIGHTED, ids=["w%d" % i for i in range(len(WEIGHTED))])
def test_fingerprint_weighted(e):
    feats = [(_decode_feature(k, v), w) for k, v, w in e["features"]]
    expected = _u64(e["fingerprint"])
    got = rsimhash.fingerprint_weighted(feats)
    assert type(got) is int
    assert got == expected
    # any iterable of pairs
    assert rsimhash.fingerprint_weighted(iter(feats)) == expected
    assert rsimhash.fingerprint_weighted(tuple(feats)) == expected


@needs_pkg
def test_compute_matches_fingerprint_features():
    """fingerprint == compute(fnv1a64 of each SPEC feature), via the package."""
    for e in FP[:40]:
        feats = ref.features(e["text"], e["mode"], e["width"])
        hashes = [rsimhash.fnv1a64(f) for f in feats]
        assert rsimhash.compute(hashes) == _u64(e["fingerprint"])
