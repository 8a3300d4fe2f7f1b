"""Hypothesis property tests: ``rsimhash.Index`` against the brute-force model
in tests/brute.py (every answer computed by comparing all pairs).

Data is weighted toward the cases a permuted-table index gets wrong: planted
clusters (copies of a center with 0..k bits flipped, and exactly k and k+1),
identical fingerprints under many ids, 0 / 2**64-1 and their neighbours,
fingerprints differing only inside one run of bits (one "block"), flips spread
evenly over the 64 bits (one per block), ids near 2**64, empty and one-item
indexes, k = 0, query k below the index k, and every kind of table design
(default, ``blocks=``, ``tables=``).  A state machine interleaves add / add_unique
/ remove, and bulk tests push tens of thousands of items through in small
batches so that any online buffer is merged into sorted runs several times.

``add_unique`` gives ids to *every* input exactly as ``add`` would (default:
first id + position, so ``matched`` maps back to input positions; explicit ids
are checked like add's), and stores only the new items (see tests/brute.py).
"""

from __future__ import annotations

import functools
import math
import os
import sys

import numpy as np
import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, example, given, note, reject, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from hypothesis.stateful import (  # noqa: E402
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
)

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

from brute import U64_MAX, BruteIndex  # noqa: E402
from budget import examples  # noqa: E402

rsimhash = pytest.importorskip("rsimhash")
if not hasattr(rsimhash, "Index"):
    pytest.skip("rsimhash.Index is not built yet", allow_module_level=True)

Index = rsimhash.Index

_HC = [HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much]
FAST = settings(max_examples=examples(120), deadline=None, suppress_health_check=_HC)
MEDIUM = settings(max_examples=examples(60), deadline=None, suppress_health_check=_HC)
SLOW = settings(max_examples=examples(400), deadline=None, suppress_health_check=_HC)

# Ids near the top of the uint64 range, with room for a few thousand default ids
# after them (what happens on id overflow is not specified).
HUGE_ID_LO = U64_MAX - (1 << 20)
HUGE_ID_HI = U64_MAX - (1 << 19)


# ---------------------------------------------------------------------------
# Designs
# ---------------------------------------------------------------------------
@functools.lru_cache(maxsize=None)
def achievable_tables(k: int) -> tuple:
    """Table counts accepted by ``Index(k, tables=T)`` for T in 1..60."""
    out = []
    for t in range(1, 61):
        try:
            Index(k=k, tables=t)
        except ValueError:
            continue
        out.append(t)
    return tuple(out)


@functools.lru_cache(maxsize=None)
def designs(k: int) -> tuple:
    """Constructor keyword sets for index k: default, a few blocks=, a few tables=."""
    out = [()]
    for b in range(k + 1, k + 5):
        if b <= 64 and math.comb(b, k) <= 130:
            out.append((("blocks", b),))
    tabs = achievable_tables(k)
    if tabs:
        picks = sorted({tabs[0], tabs[len(tabs) // 2], tabs[-1]})
        out.extend((("tables", t),) for t in picks)
    return tuple(out)


def make_index(k: int, design) -> Index:
    return Index(k=k, **dict(design))


@st.composite
def configs(draw, min_k=0, max_k=5):
    k = draw(
        st.one_of(st.integers(min_k, max_k), st.sampled_from([v for v in (0, 1, 3) if min_k <= v <= max_k] or [min_k])), label="k"
    )
    design = draw(st.sampled_from(designs(k)), label="design")
    return k, design


# ---------------------------------------------------------------------------
# Fingerprint strategies
# ---------------------------------------------------------------------------
SPECIAL = [
    0,
    1,
    2,
    3,
    U64_MAX,
    U64_MAX - 1,
    U64_MAX - 2,
    U64_MAX - 3,
    1 << 63,
    (1 << 63) - 1,
    (1 << 63) + 1,
    1 << 32,
    (1 << 32) - 1,
    0x5555555555555555,
    0xAAAAAAAAAAAAAAAA,
    0x0F0F0F0F0F0F0F0F,
    0xFFFFFFFF00000000,
    0x00000000FFFFFFFF,
    0xFFFF00000000FFFF,
    0x0000FFFFFFFF0000,
    0x8000000000000001,
    0x7FFFFFFFFFFFFFFE,
    0xCBF29CE484222325,
]
BLOCK_WIDTHS = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 16, 21, 22, 32]

u64 = st.integers(0, U64_MAX)
bases = st.one_of(u64, st.sampled_from(SPECIAL))


def flip(v: int, bits) -> int:
    for b in bits:
        v ^= 1 << b
    return v


# Drawing is most of these tests' time unless the strategies are built once:
# Hypothesis sets up every strategy object it meets (validation, recursive
# properties), so a strategy built inside a loop (``st.sampled_from(stored)``,
# a composite per value) costs that setup on every draw. The helpers below
# draw from strategies cached per argument (``st.integers`` caches itself)
# and pick from lists by a drawn index: the same values, the same choice
# sequence shape, at a fraction of the cost.
@functools.lru_cache(maxsize=None)
def flips(n):
    """n distinct bit positions."""
    return st.lists(st.integers(0, 63), min_size=n, max_size=n, unique=True)


def pick(draw, seq):
    """One element of a non-empty sequence (what ``st.sampled_from`` draws)."""
    return seq[draw(st.integers(0, len(seq) - 1))]


def draw_flipped(draw, base: int, n: int) -> int:
    """base with n distinct bits flipped."""
    return flip(base, draw(flips(n)))


BLOCK_WIDTH = st.sampled_from(BLOCK_WIDTHS)


@functools.lru_cache(maxsize=None)
def block_starts(width: int):
    """Where a run of ``width`` bits starts: anywhere, or on a block boundary."""
    return st.one_of(st.integers(0, 64 - width), st.integers(0, 64 // width - 1).map(lambda i: i * width))


def draw_block_variant(draw, base: int) -> int:
    """base with some bits changed inside one run of bits only."""
    width = draw(BLOCK_WIDTH)
    start = draw(block_starts(width))
    mask = draw(st.integers(1, (1 << width) - 1))
    return base ^ (mask << start)


def draw_spread_variant(draw, base: int, n: int) -> int:
    """n flips spread evenly over the 64 bits (one in each of n blocks)."""
    if n <= 0:
        return base
    offset = draw(st.integers(0, 63))
    step = 64 // n
    jitter = draw(st.integers(0, max(0, step - 1)))
    bits = sorted({(offset + jitter + i * step) % 64 for i in range(n)})
    return flip(base, bits)


FP_KINDS = st.sampled_from(
    ["planted", "planted", "planted", "exact_k", "k_plus_1", "block", "spread", "spread_k1", "random", "dup", "dup", "special"]
)
CENTER_LISTS = st.lists(bases, min_size=1, max_size=4)


@st.composite
def fp_lists(draw, k: int, min_size=0, max_size=40):
    """Fingerprints planted around a few centers, plus edge values."""
    centers = draw(CENTER_LISTS, label="centers")
    n = draw(st.integers(min_size, max_size), label="n")
    out = []
    for _ in range(n):
        kind = draw(FP_KINDS)
        c = pick(draw, centers)
        if kind == "planted":
            v = draw_flipped(draw, c, draw(st.integers(0, k)))
        elif kind == "exact_k":
            v = draw_flipped(draw, c, k)
        elif kind == "k_plus_1":
            v = draw_flipped(draw, c, min(64, k + 1))
        elif kind == "block":
            v = draw_block_variant(draw, c)
        elif kind == "spread":
            v = draw_spread_variant(draw, c, k)
        elif kind == "spread_k1":
            v = draw_spread_variant(draw, c, k + 1)
        elif kind == "random":
            v = draw(u64)
        elif kind == "dup":
            v = pick(draw, out) if out else c
        else:
            v = draw_flipped(draw, pick(draw, SPECIAL), draw(st.integers(0, k + 1)))
        out.append(v)
    return out


PROBE_KINDS = st.sampled_from(["stored", "near", "near", "exact", "block", "random", "special"])
PROBE_KINDS_EMPTY = st.sampled_from(["random", "special"])


def draw_probe(draw, stored, k: int, kinds=None) -> int:
    """One query point: a stored value, a flipped neighbour, random, special."""
    kind = draw(kinds or (PROBE_KINDS if len(stored) else PROBE_KINDS_EMPTY))
    if kind == "stored":
        return pick(draw, stored)
    if kind == "near":
        return draw_flipped(draw, pick(draw, stored), draw(st.integers(0, k + 1)))
    if kind == "exact":
        return draw_spread_variant(draw, pick(draw, stored), k + draw(st.integers(0, 1)))
    if kind == "block":
        return draw_block_variant(draw, pick(draw, stored))
    if kind == "random":
        return draw(u64)
    return pick(draw, SPECIAL)


@st.composite
def probes(draw, stored, k: int, max_size=12):
    """Query points: stored values, their flipped neighbours, random, special."""
    n = draw(st.integers(1, max_size))
    return [draw_probe(draw, stored, k) for _ in range(n)]


@functools.lru_cache(maxsize=None)
def sub_k(k: int):
    """A query k: None (the index k) or 0..k, biased to k and below."""
    return st.one_of(st.none(), st.integers(0, k), st.just(k))


@st.composite
def id_lists(draw, n: int):
    """n distinct explicit ids: small, sparse, or near 2**64."""
    kind = draw(st.sampled_from(["small", "sparse", "huge", "mixed"]))
    if kind == "small":
        elems = st.integers(0, max(3 * n, 10))
    elif kind == "sparse":
        elems = st.integers(0, HUGE_ID_LO)
    elif kind == "huge":
        elems = st.integers(HUGE_ID_LO, HUGE_ID_HI)
    else:  # both sides of 2**63 (signed/unsigned mix-ups) and the top
        elems = st.one_of(
            st.integers(0, 20), st.integers((1 << 63) - 10, (1 << 63) + 10), st.integers(HUGE_ID_LO, HUGE_ID_LO + 20)
        )
    return draw(st.lists(elems, min_size=n, max_size=n, unique=True))


def as_form(values, form: str):
    """Pass fingerprints / ids as list, contiguous array or strided array view."""
    arr = np.array(values, dtype=np.uint64)
    if form == "list":
        return list(values)
    if form == "strided":
        big = np.zeros(2 * len(values), dtype=np.uint64)
        big[::2] = arr
        return big[::2]
    return arr


forms = st.sampled_from(["array", "array", "list", "strided"])


# ---------------------------------------------------------------------------
# Comparisons
# ---------------------------------------------------------------------------
def describe(model: BruteIndex, limit=40) -> str:
    items = sorted(model.items.items())
    text = ", ".join("%d:0x%016x" % (i, fp) for i, fp in items[:limit])
    return "k=%d n=%d {%s%s}" % (model.k, len(items), text, " ..." if len(items) > limit else "")


def check_len(idx, model):
    assert len(idx) == len(model), "len: expected %d got %d" % (len(model), len(idx))


def check_query(idx, model, fp, k=None):
    got = idx.query(fp) if k is None else idx.query(fp, k=k)
    exp = model.query(fp, k)
    assert isinstance(got, list), type(got)
    for t in got:
        assert type(t) is tuple and len(t) == 2, t
        assert type(t[0]) is int and type(t[1]) is int, (type(t[0]), type(t[1]))
    if got != exp:
        missing = sorted(set(exp) - set(got))
        extra = sorted(set(got) - set(exp))
        raise AssertionError(
            "query(0x%016x, k=%s): missing %s extra %s\n expected %s\n got      %s\n index %s"
            % (fp, k, missing, extra, exp[:30], got[:30], describe(model))
        )


def check_query_batch(idx, model, fps, k=None, form="array"):
    q = as_form(fps, form)
    got = idx.query_batch(q) if k is None else idx.query_batch(q, k=k)
    assert isinstance(got, tuple) and len(got) == 3
    qi, ids, dist = got
    assert qi.dtype == np.int64 and ids.dtype == np.uint64 and dist.dtype == np.uint8, (qi.dtype, ids.dtype, dist.dtype)
    assert qi.ndim == ids.ndim == dist.ndim == 1
    assert len(qi) == len(ids) == len(dist)
    eqi, eids, edist = model.query_batch(fps, k)
    got_rows = list(zip(qi.tolist(), ids.tolist(), dist.tolist()))
    exp_rows = list(zip(eqi.tolist(), eids.tolist(), edist.tolist()))
    if got_rows != exp_rows:
        raise AssertionError(
            "query_batch(k=%s) differs: missing %s extra %s\n probes %s\n index %s"
            % (
                k,
                sorted(set(exp_rows) - set(got_rows))[:20],
                sorted(set(got_rows) - set(exp_rows))[:20],
                ["0x%016x" % v for v in fps[:20]],
                describe(model),
            )
        )


def check_find_all(idx, model, k=None):
    got = idx.find_all() if k is None else idx.find_all(k=k)
    exp = model.find_all(k)
    assert isinstance(got, np.ndarray) and got.dtype == np.uint64, (type(got), got.dtype)
    assert got.ndim == 2 and got.shape[1] == 2, got.shape
    if not np.array_equal(got, exp):
        g = set(map(tuple, got.tolist()))
        e = set(map(tuple, exp.tolist()))
        detail = (
            "missing %s extra %s" % (sorted(e - g)[:20], sorted(g - e)[:20])
            if g != e
            else "same pairs, wrong order or repeated rows (%d vs %d rows)" % (len(got), len(exp))
        )
        raise AssertionError("find_all(k=%s): %s\n index %s" % (k, detail, describe(model)))


def check_cluster(idx, model, k=None, min_size=2, method="connected"):
    kw = {"min_size": min_size, "method": method}
    if k is not None:
        kw["k"] = k
    got = idx.cluster(**kw)
    exp = model.cluster(k, min_size, method)
    assert isinstance(got, list), type(got)
    for c in got:
        assert isinstance(c, np.ndarray) and c.dtype == np.uint64 and c.ndim == 1, (type(c), c)
    g = [c.tolist() for c in got]
    e = [c.tolist() for c in exp]
    assert g == e, "cluster(%r): expected %s\n got %s\n index %s" % (kw, e[:20], g[:20], describe(model))


def check_all(idx, model, fps_probe, k):
    check_len(idx, model)
    for fp in fps_probe:
        check_query(idx, model, fp)
        check_query(idx, model, fp, k)
    check_query_batch(idx, model, fps_probe, k)
    check_find_all(idx, model)
    check_find_all(idx, model, k)


# ---------------------------------------------------------------------------
# Building an index the same way in both
# ---------------------------------------------------------------------------
@st.composite
def built(draw, min_k=0, max_k=5, max_size=40, allow_huge_ids=True):
    """(index, model, fps, k): fingerprints added in 1..4 calls, in varied forms."""
    k, design = draw(configs(min_k, max_k))
    fps = draw(fp_lists(k, max_size=max_size), label="fps")
    idx = make_index(k, design)
    model = BruteIndex(k)
    explicit = draw(st.booleans(), label="explicit ids")
    ids_all = None
    if explicit:
        ids_all = draw(id_lists(len(fps)), label="ids")
        if not allow_huge_ids and ids_all and max(ids_all) >= HUGE_ID_LO:
            ids_all = list(range(len(fps)))
    cuts = sorted(draw(st.lists(st.integers(0, len(fps)), max_size=3), label="cuts"))
    bounds = [0] + cuts + [len(fps)]
    for lo, hi in zip(bounds, bounds[1:]):
        part = fps[lo:hi]
        form = draw(forms, label="form")
        ids = None if ids_all is None else ids_all[lo:hi]
        if len(part) == 1 and draw(st.booleans()):
            arg = part[0]  # a plain int
        else:
            arg = as_form(part, form)
        if ids is None:
            got = idx.add(arg)
        else:
            got = idx.add(arg, ids=as_form(ids, draw(forms)))
        exp = model.add(part, ids)
        assert isinstance(got, np.ndarray) and got.dtype == np.uint64 and got.ndim == 1, (type(got), getattr(got, "dtype", None))
        assert got.tolist() == exp.tolist(), "add ids: expected %s got %s" % (exp.tolist(), got.tolist())
    note("index: design=%r %s" % (design, describe(model)))
    return idx, model, fps, k


# ---------------------------------------------------------------------------
# Properties of the object
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("k", range(0, 9))
def test_k_and_tables_attributes(k):
    for design in designs(k):
        idx = make_index(k, design)
        assert type(idx.k) is int and idx.k == k
        assert type(idx.tables) is int and idx.tables >= 1
        assert len(idx) == 0
        d = dict(design)
        if "tables" in d:
            assert idx.tables == d["tables"], (design, idx.tables)
        if "blocks" in d:
            # a single-level design with B blocks needs one table per choice of
            # the k blocks allowed to differ
            assert idx.tables == math.comb(d["blocks"], k), (design, idx.tables)


@pytest.mark.parametrize("k", range(0, 9))
def test_blocks_just_above_k_are_valid(k):
    for b in range(k + 1, k + 3):
        idx = Index(k=k, blocks=b)
        assert idx.k == k


@pytest.mark.parametrize("k", range(0, 6))
def test_some_table_count_is_achievable(k):
    tabs = achievable_tables(k)
    assert tabs, "no tables=T in 1..60 accepted for k=%d" % k
    assert Index(k=k).tables >= 1


def test_default_k_is_3():
    assert Index().k == 3


@pytest.mark.parametrize("k", [0, 1, 3, 5, 8])
def test_empty_index(k):
    for design in designs(k):
        idx = make_index(k, design)
        model = BruteIndex(k)
        for fp in [0, U64_MAX, 12345]:
            assert idx.query(fp) == []
        check_query_batch(idx, model, [0, 1, U64_MAX])
        check_query_batch(idx, model, [])
        fa = idx.find_all()
        assert fa.shape == (0, 2) and fa.dtype == np.uint64
        for method in ("connected", "leader"):
            assert idx.cluster(method=method) == []
            assert idx.cluster(method=method, min_size=1) == []
        assert idx.remove([0, 1, 2]) == 0
        assert idx.remove(7) == 0
        assert len(idx) == 0
        got = idx.add(np.zeros(0, dtype=np.uint64))
        assert got.dtype == np.uint64 and got.shape == (0,)
        assert len(idx) == 0
        is_new, matched = idx.add_unique(np.zeros(0, dtype=np.uint64))
        assert is_new.dtype == np.bool_ and is_new.shape == (0,)
        assert matched.dtype == np.uint64 and matched.shape == (0,)
        # the first default id on an empty index is 0, even after empty calls
        assert idx.add(5).tolist() == [0]


def test_k9_constructs_or_raises_valueerror():
    try:
        idx = Index(k=9)
    except ValueError:
        return
    assert idx.k == 9
    model = BruteIndex(9)
    fps = [0, (1 << 9) - 1, (1 << 10) - 1, U64_MAX, U64_MAX >> 9, 0x5555555555555555]
    idx.add(np.array(fps, dtype=np.uint64))
    model.add(fps)
    for fp in fps + [1, 1 << 63]:
        check_query(idx, model, fp)
    check_find_all(idx, model)


# ---------------------------------------------------------------------------
# One item / hand-made adversarial cases
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("k", range(0, 9))
def test_one_item_every_distance(k):
    """A single stored item against probes at every distance 0..64."""
    for design in designs(k):
        for base in (0, U64_MAX, 0x5555555555555555, 0x0123456789ABCDEF):
            idx = make_index(k, design)
            model = BruteIndex(k)
            idx.add(base)
            model.add(base)
            for d in range(65):
                for start in (0, 1, 64 - d):
                    bits = [(start + i) % 64 for i in range(d)]
                    check_query(idx, model, flip(base, bits))
                if d:
                    check_query(idx, model, flip(base, [(i * 64) // d for i in range(d)]))
            check_find_all(idx, model)
            check_cluster(idx, model, min_size=1)


@pytest.mark.parametrize("k", range(0, 9))
def test_exact_k_spread_over_every_block_layout(k):
    """Pairs at distance exactly k (and k+1), flips placed one per block for
    every plausible block width, stored in one index."""
    for design in designs(k):
        idx = make_index(k, design)
        model = BruteIndex(k)
        fps = []
        for base in (0, U64_MAX, 0xF0F0F0F0F0F0F0F0):
            fps.append(base)
            for n in (k, k + 1):
                if n == 0:
                    continue
                for width in (64 // max(n, 1), 64 // (k + 1), 64 // (k + 2), 8, 16):
                    width = max(1, width)
                    for off in (0, width - 1):
                        bits = sorted({(off + i * width) % 64 for i in range(n)})
                        if len(bits) == n:
                            fps.append(flip(base, bits))
        idx.add(np.array(fps, dtype=np.uint64))
        model.add(fps)
        check_find_all(idx, model)
        for kk in range(k + 1):
            check_find_all(idx, model, kk)
        for fp in fps[:50]:
            check_query(idx, model, fp)


@pytest.mark.parametrize("k", [0, 1, 3, 5])
def test_many_identical_fingerprints(k):
    for design in designs(k):
        idx = make_index(k, design)
        model = BruteIndex(k)
        for fp in (0, U64_MAX, 42):
            got = idx.add(np.full(150, fp, dtype=np.uint64))
            exp = model.add([fp] * 150)
            assert got.tolist() == exp.tolist()
        check_find_all(idx, model)
        assert len(idx.find_all(0)) == 3 * 150 * 149 // 2
        for fp in (0, U64_MAX, 42, 43):
            check_query(idx, model, fp)
        for method in ("connected", "leader"):
            check_cluster(idx, model, method=method)


# ---------------------------------------------------------------------------
# Hypothesis: every operation against the model
# ---------------------------------------------------------------------------
@FAST
@given(data=st.data())
def test_add_and_query(data):
    idx, model, fps, k = data.draw(built(), label="built")
    check_len(idx, model)
    for fp in data.draw(probes(fps, k), label="probes"):
        check_query(idx, model, fp, data.draw(sub_k(k), label="query k"))


@FAST
@given(data=st.data())
def test_query_batch(data):
    idx, model, fps, k = data.draw(built(), label="built")
    qs = data.draw(probes(fps, k, max_size=20), label="probes")
    check_query_batch(idx, model, qs, data.draw(sub_k(k), label="k"), data.draw(forms))
    # the same as one query at a time
    kq = data.draw(sub_k(k), label="k2")
    qi, ids, dist = idx.query_batch(np.array(qs, dtype=np.uint64), k=kq)
    for i, fp in enumerate(qs):
        sel = qi == i
        assert list(zip(ids[sel].tolist(), dist[sel].tolist())) == idx.query(fp, k=kq)


@FAST
@given(data=st.data())
def test_find_all(data):
    idx, model, fps, k = data.draw(built(max_size=60), label="built")
    check_find_all(idx, model)
    for kk in range(k + 1):
        check_find_all(idx, model, kk)


@FAST
@given(data=st.data(), method=st.sampled_from(["connected", "leader"]), min_size=st.sampled_from([1, 2, 3]))
def test_cluster(data, method, min_size):
    idx, model, fps, k = data.draw(built(max_size=60), label="built")
    check_cluster(idx, model, data.draw(sub_k(k), label="k"), min_size, method)
    check_cluster(idx, model, None, min_size, method)


@MEDIUM
@given(data=st.data())
def test_cluster_default_arguments(data):
    idx, model, fps, k = data.draw(built(), label="built")
    got = [c.tolist() for c in idx.cluster()]
    assert got == [c.tolist() for c in model.cluster(None, 2, "connected")]


@FAST
@given(data=st.data())
def test_remove(data):
    idx, model, fps, k = data.draw(built(allow_huge_ids=False), label="built")
    stored = sorted(model.items)
    for _ in range(data.draw(st.integers(1, 3), label="rounds")):
        chosen = data.draw(st.lists(st.sampled_from(stored), unique=True) if stored else st.just([]), label="remove ids")
        unknown = data.draw(
            st.lists(st.integers(0, 1 << 63).filter(lambda i: i not in model.items), max_size=3, unique=True), label="unknown ids"
        )
        ids = chosen + unknown
        ids = data.draw(st.permutations(ids)) if ids else ids
        if len(ids) == 1 and data.draw(st.booleans()):
            arg = ids[0]
        else:
            arg = as_form(ids, data.draw(forms))
        got = idx.remove(arg)
        exp = model.remove(ids)
        assert type(got) is int and got == exp, "remove(%s): expected %d got %r" % (ids, exp, got)
        check_all(idx, model, data.draw(probes(fps, k), label="probes"), data.draw(sub_k(k)))
        check_cluster(idx, model, None, 1, "connected")
        check_cluster(idx, model, None, 1, "leader")
        stored = sorted(model.items)
    # removing everything, then again (0); default ids never go backwards
    everything = np.array(sorted(model.items), dtype=np.uint64)
    assert idx.remove(everything) == model.remove(everything.tolist())
    assert idx.remove(everything) == 0
    check_len(idx, model)
    extra = data.draw(fp_lists(k, max_size=5), label="re-add")
    got = idx.add(np.array(extra, dtype=np.uint64))
    exp = model.add(extra)
    assert got.tolist() == exp.tolist(), "ids after remove: expected %s got %s" % (exp, got)
    check_all(idx, model, data.draw(probes(fps + extra, k), label="probes2"), k)


@FAST
@given(data=st.data())
def test_readd_removed_id(data):
    idx, model, fps, k = data.draw(built(min_k=0, max_k=4, allow_huge_ids=False), label="built")
    if not model.items:
        return
    victims = data.draw(st.lists(st.sampled_from(sorted(model.items)), min_size=1, unique=True))
    assert idx.remove(victims) == model.remove(victims)
    new_fps = data.draw(st.lists(bases, min_size=len(victims), max_size=len(victims)))
    assert idx.add(new_fps, ids=victims).tolist() == model.add(new_fps, victims).tolist()
    check_all(idx, model, data.draw(probes(fps + new_fps, k)), k)


@FAST
@given(data=st.data())
def test_add_unique_explicit_ids(data):
    idx, model, fps, k = data.draw(built(max_size=25, allow_huge_ids=False), label="built")
    cand = data.draw(fp_lists(k, max_size=25), label="candidates")
    cand += data.draw(probes(fps, k, max_size=6), label="near stored") if fps else []
    used = set(model.items)
    new_ids = data.draw(
        st.lists(st.integers(0, 1 << 40).filter(lambda i: i not in used), min_size=len(cand), max_size=len(cand), unique=True),
        label="ids",
    )
    kq = data.draw(sub_k(k), label="k")
    kw = {} if kq is None else {"k": kq}
    is_new, matched = idx.add_unique(as_form(cand, data.draw(forms)), ids=as_form(new_ids, data.draw(forms)), **kw)
    e_new, e_matched = model.add_unique(cand, new_ids, kq)
    check_add_unique_result(is_new, matched, e_new, e_matched, cand)
    check_all(idx, model, data.draw(probes(fps + cand, k)), k)


def check_add_unique_result(is_new, matched, e_new, e_matched, cand):
    assert isinstance(is_new, np.ndarray) and is_new.dtype == np.bool_, getattr(is_new, "dtype", None)
    assert isinstance(matched, np.ndarray) and matched.dtype == np.uint64, getattr(matched, "dtype", None)
    assert is_new.shape == matched.shape == (len(cand),)
    assert is_new.tolist() == e_new.tolist(), "is_new: expected %s got %s for %s" % (
        e_new.tolist(),
        is_new.tolist(),
        ["0x%016x" % v for v in cand],
    )
    dup = ~e_new
    assert matched[dup].tolist() == e_matched[dup].tolist(), "matched (at duplicates): expected %s got %s" % (
        e_matched[dup].tolist(),
        matched[dup].tolist(),
    )


@FAST
@given(data=st.data())
def test_add_unique_default_ids(data):
    """Default ids: every input gets the id add would give it (first id +
    position), new or not; only the new ones are stored."""
    idx, model, fps, k = data.draw(built(max_size=25, allow_huge_ids=False), label="built")
    cand = data.draw(fp_lists(k, max_size=30), label="candidates")
    kq = data.draw(sub_k(k), label="k")
    is_new, matched = idx.add_unique(np.array(cand, dtype=np.uint64), k=kq)
    e_new, e_matched = model.add_unique(cand, None, kq)
    check_add_unique_result(is_new, matched, e_new, e_matched, cand)
    check_all(idx, model, data.draw(probes(fps + cand, k)), k)
    # the counter continues after the new items
    assert idx.add(7).tolist() == model.add(7).tolist()


@FAST
@given(data=st.data())
def test_add_unique_one_call_equals_stream(data):
    """One add_unique call == the same items offered one call at a time."""
    k, design = data.draw(configs(), label="config")
    cand = data.draw(fp_lists(k, max_size=30), label="candidates")
    kq = data.draw(sub_k(k), label="k")
    kw = {} if kq is None else {"k": kq}
    a, b = make_index(k, design), make_index(k, design)
    n1, m1 = a.add_unique(np.array(cand, dtype=np.uint64), ids=np.arange(len(cand), dtype=np.uint64), **kw)
    n2, m2 = [], []
    for i, fp in enumerate(cand):
        x, y = b.add_unique([fp], ids=[i], **kw)
        n2.append(bool(x[0]))
        m2.append(int(y[0]))
    assert n1.tolist() == n2
    assert [m for m, n in zip(m1.tolist(), n2) if not n] == [m for m, n in zip(m2, n2) if not n]
    assert a.find_all().tolist() == b.find_all().tolist()
    assert len(a) == len(b)


@MEDIUM
@given(data=st.data())
def test_high_k_small_data(data):
    """k = 6..8 with every design, small data."""
    idx, model, fps, k = data.draw(built(min_k=6, max_k=8, max_size=15), label="built")
    check_all(idx, model, data.draw(probes(fps, k, max_size=6)), data.draw(sub_k(k)))
    check_cluster(idx, model, None, 1, "connected")
    check_cluster(idx, model, None, 2, "leader")


@FAST
@given(data=st.data())
@example(data=None)
def test_design_does_not_change_answers(data):
    """Every design of one k gives identical answers on the same data."""
    if data is None:  # explicit: all-equal and near-max fingerprints, k = 3
        k, fps = 3, [0, 0, 1, U64_MAX, U64_MAX - 1, 7, 0xF, 0xF0, 1 << 63]
    else:
        k = data.draw(st.integers(0, 5), label="k")
        fps = data.draw(fp_lists(k, max_size=40), label="fps")
    answers = []
    for design in designs(k):
        idx = make_index(k, design)
        idx.add(np.array(fps, dtype=np.uint64))
        answers.append(
            (
                design,
                idx.find_all().tolist(),
                [c.tolist() for c in idx.cluster(min_size=1, method="leader")],
                [idx.query(fp) for fp in fps[:10]],
            )
        )
    for design, *rest in answers[1:]:
        assert rest == list(answers[0][1:]), "design %r differs from %r" % (design, answers[0][0])


# ---------------------------------------------------------------------------
# State machine: interleaved add / add_unique / remove
# ---------------------------------------------------------------------------
MACHINE_KINDS = st.sampled_from(["center", "random", "stored", "near", "near", "exact"])
MACHINE_KINDS_EMPTY = st.sampled_from(["center", "random"])


ID_POOLS = st.integers(0, 2)
ID_POOLS_NO_REMOVED = st.integers(0, 1)


@st.composite
def machine_ids(draw, machine, n):
    """n fresh ids drawn by ``machine.fresh_ids_from``."""
    return machine.fresh_ids_from(draw, n)


@st.composite
def machine_fps(draw, machine, min_size, max_size):
    """min_size..max_size fingerprints drawn by ``machine.fp_from``."""
    n = draw(st.integers(min_size, max_size))
    return [machine.fp_from(draw) for _ in range(n)]


class IndexMachine(RuleBasedStateMachine):
    """Random interleavings checked against the model after every step."""

    def __init__(self):
        super().__init__()
        self.idx = None
        self.model = None
        self.removed: list[int] = []
        self.centers: list[int] = []
        self._stored_of = None
        self._stored: list[int] = []

    @initialize(cfg=configs(0, 5), centers=st.lists(bases, min_size=1, max_size=5))
    def setup(self, cfg, centers):
        self.k, design = cfg
        self.idx = make_index(self.k, design)
        self.model = BruteIndex(self.k)
        self.centers = centers
        note("design %r k=%d" % (design, self.k))

    # -- drawing helpers ------------------------------------------------
    # A rule draws its fingerprints in one draw of a composite (``machine_fps``):
    # each ``data.draw`` has a fixed cost of its own (Hypothesis checks the
    # global random state around it), which drawing value by value paid for
    # every fingerprint.
    def stored_fps(self) -> list:
        """The stored fingerprints (id order), rebuilt only after a change."""
        arrays = self.model._arrays()
        if arrays is not self._stored_of:
            self._stored_of, self._stored = arrays, arrays[1].tolist()
        return self._stored

    def fp_from(self, draw) -> int:
        """One fingerprint: near a center, random, stored, or near a stored one."""
        k = self.k
        stored = self.stored_fps()
        kind = draw(MACHINE_KINDS if stored else MACHINE_KINDS_EMPTY)
        if kind == "center":
            return draw_flipped(draw, pick(draw, self.centers), draw(st.integers(0, k + 1)))
        if kind == "random":
            return draw(bases)
        if kind == "stored":
            return pick(draw, stored)
        if kind == "near":
            return draw_flipped(draw, pick(draw, stored), draw(st.integers(0, k + 1)))
        return draw_spread_variant(draw, pick(draw, stored), k + draw(st.integers(0, 1)))

    def draw_fp(self, data):
        return data.draw(machine_fps(self, 1, 1))[0]

    def draw_fps(self, data, max_size=30, min_size=0):
        return data.draw(machine_fps(self, min_size, max_size))

    def draw_fresh_ids(self, data, n):
        return data.draw(machine_ids(self, n))

    def fresh_ids_from(self, draw, n):
        """n distinct ids not stored now: small ones, previously removed ones,
        or above the counter (a value already taken is drawn again, as a
        filter does; the ids above the counter are always free, so giving up
        the example after 20 tries is rare)."""
        taken, out = self.model.items, []
        lo = self.model.next_id
        for _ in range(n):
            for _ in range(20):
                pool = draw(ID_POOLS if self.removed else ID_POOLS_NO_REMOVED)
                if pool == 0:
                    i = draw(st.integers(0, 400))
                elif pool == 1:
                    i = draw(st.integers(lo, lo + 50))
                else:
                    i = pick(draw, self.removed)
                if i not in taken and i not in out:
                    break
            else:
                reject()
            out.append(i)
        return out

    # -- rules ----------------------------------------------------------
    @rule(data=st.data())
    def add_one(self, data):
        fp = self.draw_fp(data)
        if data.draw(st.booleans()):
            got = self.idx.add(fp)
            exp = self.model.add(fp)
        else:
            ids = self.draw_fresh_ids(data, 1)
            got = self.idx.add(fp, ids=ids)
            exp = self.model.add(fp, ids)
        assert got.tolist() == exp.tolist(), "add(0x%016x): ids expected %s got %s" % (fp, exp, got)

    @rule(data=st.data())
    def add_many(self, data):
        fps = self.draw_fps(data, max_size=60)
        arg = as_form(fps, data.draw(forms))
        if data.draw(st.booleans()):
            got = self.idx.add(arg)
            exp = self.model.add(fps)
        else:
            ids = self.draw_fresh_ids(data, len(fps))
            got = self.idx.add(arg, ids=as_form(ids, data.draw(forms)))
            exp = self.model.add(fps, ids)
        assert got.dtype == np.uint64 and got.tolist() == exp.tolist(), "add: ids expected %s got %s" % (
            exp.tolist(),
            got.tolist(),
        )

    @rule(data=st.data())
    def add_unique(self, data):
        fps = self.draw_fps(data)
        ids = self.draw_fresh_ids(data, len(fps))
        kq = data.draw(sub_k(self.k))
        kw = {} if kq is None else {"k": kq}
        is_new, matched = self.idx.add_unique(as_form(fps, data.draw(forms)), ids=ids, **kw)
        e_new, e_matched = self.model.add_unique(fps, ids, kq)
        check_add_unique_result(is_new, matched, e_new, e_matched, fps)

    @rule(data=st.data())
    def add_unique_default_ids(self, data):
        fps = self.draw_fps(data)
        kq = data.draw(sub_k(self.k))
        kw = {} if kq is None else {"k": kq}
        is_new, matched = self.idx.add_unique(np.array(fps, dtype=np.uint64), **kw)
        e_new, e_matched = self.model.add_unique(fps, None, kq)
        check_add_unique_result(is_new, matched, e_new, e_matched, fps)

    @rule(data=st.data())
    def remove(self, data):
        stored = sorted(self.model.items)
        chosen = data.draw(st.lists(st.sampled_from(stored), unique=True, max_size=20)) if stored else []
        unknown = data.draw(st.lists(st.integers(0, 10_000).filter(lambda i: i not in self.model.items), unique=True, max_size=2))
        ids = chosen + unknown
        if len(ids) == 1 and data.draw(st.booleans()):
            arg = ids[0]
        else:
            arg = as_form(ids, data.draw(forms))
        got = self.idx.remove(arg)
        exp = self.model.remove(ids)
        self.removed.extend(chosen)
        assert got == exp, "remove(%s): expected %d got %r" % (ids, exp, got)

    @precondition(lambda self: len(self.model.items) > 0)
    @rule(data=st.data())
    def add_stored_id_is_rejected(self, data):
        i = data.draw(st.sampled_from(sorted(self.model.items)))
        with pytest.raises(ValueError):
            self.idx.add(self.draw_fp(data), ids=[i])

    @rule(data=st.data())
    def query(self, data):
        for fp in self.draw_fps(data, 5, min_size=1):
            check_query(self.idx, self.model, fp, data.draw(sub_k(self.k)))

    @rule(data=st.data())
    def query_batch(self, data):
        check_query_batch(self.idx, self.model, self.draw_fps(data, 10), data.draw(sub_k(self.k)))

    @rule(data=st.data(), method=st.sampled_from(["connected", "leader"]), min_size=st.sampled_from([1, 2, 3]))
    def cluster(self, data, method, min_size):
        check_cluster(self.idx, self.model, data.draw(sub_k(self.k)), min_size, method)

    @invariant()
    def same_len(self):
        if self.idx is not None:
            check_len(self.idx, self.model)

    @invariant()
    def same_pairs(self):
        if self.idx is not None:
            check_find_all(self.idx, self.model)


IndexMachine.TestCase.settings = settings(
    max_examples=examples(60), stateful_step_count=30, deadline=None, suppress_health_check=_HC
)
test_index_state_machine = IndexMachine.TestCase


class IndexRunsMachine(IndexMachine):
    """Starts from 900..2600 items, adds in bulk and removes in bulk, so the
    index holds several runs (sorted tables) besides its online buffer, with
    merges and rebuilds of mostly-dead runs in between."""

    @initialize(
        cfg=configs(0, 4),
        centers=st.lists(bases, min_size=1, max_size=5),
        seed=st.integers(0, 2**32 - 1),
        n=st.integers(900, 2600),
    )
    def setup(self, cfg, centers, seed, n):
        super().setup(cfg, centers)
        self.rng = np.random.default_rng(seed)
        self.steps = 0
        fps = clustered(self.rng, n, max(4, n // 10), self.k)
        assert self.idx.add(fps).tolist() == self.model.add(fps).tolist()

    @rule(n=st.integers(200, 1500), default_ids=st.booleans())
    def add_bulk(self, n, default_ids):
        fps = clustered(self.rng, n, max(4, n // 10), self.k)
        stored = np.array(list(self.model.items.values()), dtype=np.uint64)
        if len(stored):  # near copies of stored items
            near = stored[self.rng.integers(0, len(stored), size=n // 3)]
            near ^= np.uint64(1) << self.rng.integers(0, 64, size=len(near)).astype(np.uint64)
            fps[: len(near)] = near
        if default_ids:
            got, exp = self.idx.add(fps), self.model.add(fps)
        else:
            ids = np.arange(self.model.next_id + 5, self.model.next_id + 5 + 2 * n, 2, dtype=np.uint64)
            self.rng.shuffle(ids)
            got, exp = self.idx.add(fps, ids=ids), self.model.add(fps, ids)
        assert got.tolist() == exp.tolist()

    @rule(frac=st.sampled_from([0.05, 0.3, 0.6, 0.95, 1.0]))
    def remove_bulk(self, frac):
        stored = np.array(sorted(self.model.items), dtype=np.uint64)
        victims = stored[self.rng.random(len(stored)) < frac]
        self.removed.extend(victims.tolist()[:50])
        assert self.idx.remove(victims) == self.model.remove(victims.tolist())

    @rule(n=st.integers(1, 1500))
    def add_unique_bulk(self, n):
        fps = clustered(self.rng, n, max(2, n // 5), self.k)
        is_new, matched = self.idx.add_unique(fps)
        e_new, e_matched = self.model.add_unique(fps.tolist(), None, None)
        check_add_unique_result(is_new, matched, e_new, e_matched, fps.tolist())

    @rule(data=st.data())
    def query_stored(self, data):
        stored = self.stored_fps()
        qs = self.draw_fps(data, 5, min_size=5)
        if stored:
            qs = qs + [stored[j] for j in self.rng.integers(0, len(stored), size=20)]
        check_query_batch(self.idx, self.model, qs, data.draw(sub_k(self.k)))
        for q in qs[:8]:
            check_query(self.idx, self.model, q)

    @invariant()
    def same_pairs(self):
        # find_all on thousands of items every step is slow: every third step
        if self.idx is not None:
            self.steps += 1
            if self.steps % 3 == 0:
                check_find_all(self.idx, self.model)


IndexRunsMachine.TestCase.settings = settings(
    max_examples=examples(10), stateful_step_count=20, deadline=None, suppress_health_check=_HC
)
test_index_runs_state_machine = IndexRunsMachine.TestCase


# ---------------------------------------------------------------------------
# Bulk: many small batches (crosses any online-buffer / merge threshold)
# ---------------------------------------------------------------------------
def clustered(rng, n, n_centers, k, dup_frac=0.1):
    """n fingerprints around n_centers centers, 0..k+1 flips, some exact copies."""
    centers = rng.integers(0, U64_MAX, size=n_centers, dtype=np.uint64, endpoint=True)
    special = np.array([0, U64_MAX, 1 << 63, 0x5555555555555555], dtype=np.uint64)
    centers[:4] = special[: len(centers[:4])]
    out = centers[rng.integers(0, n_centers, size=n)].copy()
    nflips = rng.integers(0, k + 2, size=n)
    for j in range(int(nflips.max()) if n else 0):
        bit = rng.integers(0, 64, size=n).astype(np.uint64)
        sel = nflips > j
        out[sel] ^= np.uint64(1) << bit[sel]
    dup = rng.random(n) < dup_frac
    if n > 1:
        src = rng.integers(0, n, size=n)
        out[dup] = out[src[dup]]
    return out


def bulk_run(k, design, batches, batch_size, seed, check_every, remove_every=0, unique_every=0, sizes=None):
    rng = np.random.default_rng(seed)
    idx = make_index(k, design)
    model = BruteIndex(k)
    n_total = batches * batch_size
    all_fps = clustered(rng, n_total, max(4, n_total // 12), k)
    pos = 0
    for b in range(batches):
        size = batch_size if sizes is None else int(sizes[b % len(sizes)])
        part = all_fps[pos : pos + size]
        pos += size
        if unique_every and b % unique_every == unique_every - 1:
            is_new, matched = idx.add_unique(part)
            e_new, e_matched = model.add_unique(part.tolist(), None, None)
            check_add_unique_result(is_new, matched, e_new, e_matched, part.tolist())
        elif b % 3 == 2:
            for fp in part.tolist():  # one plain int at a time
                got = idx.add(fp)
                exp = model.add(fp)
                assert got.tolist() == exp.tolist()
        else:
            got = idx.add(part)
            exp = model.add(part)
            assert got.tolist() == exp.tolist(), "batch %d: ids differ" % b
        if remove_every and b % remove_every == remove_every - 1 and model.items:
            stored = np.array(sorted(model.items), dtype=np.uint64)
            victims = rng.choice(stored, size=max(1, len(stored) // 20), replace=False)
            victims = np.concatenate([victims, np.array([U64_MAX - 5], dtype=np.uint64)])
            assert idx.remove(victims) == model.remove(victims.tolist())
        if b % check_every == check_every - 1 or b == batches - 1:
            check_len(idx, model)
            ids, fps = model._arrays()
            qs = np.concatenate(
                [
                    fps[rng.integers(0, len(fps), size=min(100, len(fps)))] if len(fps) else fps,
                    clustered(rng, 100, 50, k),
                ]
            )
            flips = rng.integers(0, 64, size=len(qs)).astype(np.uint64)
            qs[::2] ^= np.uint64(1) << flips[::2]
            check_query_batch(idx, model, qs.tolist())
            for fp in qs[:30].tolist():
                check_query(idx, model, fp)
    check_find_all(idx, model)
    if k:
        check_find_all(idx, model, k - 1)
    check_cluster(idx, model, None, 2, "connected")
    return idx, model


@pytest.mark.parametrize("k,design", [(3, ()), (0, ()), (2, (("blocks", 4),))])
def test_bulk_small_batches(k, design):
    """20,000 items in 200 batches of 100 (every third batch one int at a time)."""
    bulk_run(k, design, batches=200, batch_size=100, seed=k, check_every=40)


def test_bulk_with_removes_and_add_unique():
    idx, model = bulk_run(3, (), batches=120, batch_size=100, seed=11, check_every=30, remove_every=7, unique_every=5)
    check_cluster(idx, model, None, 2, "leader")


def test_bulk_single_int_adds():
    """10,000 add(int) calls, checked at several sizes."""
    rng = np.random.default_rng(5)
    idx = Index(k=3)
    model = BruteIndex(3)
    fps = clustered(rng, 10_000, 900, 3).tolist()
    checkpoints = {1, 2, 100, 1023, 1024, 1025, 2048, 4096, 4097, 8192, 8193, 10_000}
    for n, fp in enumerate(fps, 1):
        assert idx.add(fp).tolist() == [n - 1]
        model.add(fp)
        if n in checkpoints:
            check_len(idx, model)
            for q in fps[max(0, n - 20) : n] + fps[:5]:
                check_query(idx, model, q)
                check_query(idx, model, q ^ 1, 2)
    check_find_all(idx, model)


@pytest.mark.parametrize("design", [(), (("blocks", 5),)])
def test_remove_most_of_every_run(design):
    """Runs that become mostly (or entirely) dead, then more adds."""
    rng = np.random.default_rng(21)
    idx = make_index(3, design)
    model = BruteIndex(3)
    for size in (3000, 1500, 1100, 700, 1, 50):  # several runs plus a buffer
        fps = clustered(rng, size, max(2, size // 8), 3)
        assert idx.add(fps).tolist() == model.add(fps).tolist()
    check_find_all(idx, model)
    for frac in (0.3, 0.8, 1.0):
        stored = np.array(sorted(model.items), dtype=np.uint64)
        first_run = stored[stored < 3000]
        victims = np.concatenate([first_run[rng.random(len(first_run)) < frac], stored[rng.random(len(stored)) < frac / 3]])
        victims = np.unique(victims)
        assert idx.remove(victims) == model.remove(victims.tolist())
        check_len(idx, model)
        check_find_all(idx, model)
        qs = clustered(rng, 200, 40, 3).tolist() + list(model.items.values())[:100]
        check_query_batch(idx, model, qs)
        fps = clustered(rng, 1200, 100, 3)
        assert idx.add(fps).tolist() == model.add(fps).tolist()
        check_find_all(idx, model, 1)
    everything = np.array(sorted(model.items), dtype=np.uint64)
    assert idx.remove(everything) == model.remove(everything.tolist()) == len(everything)
    assert len(idx) == 0 and idx.find_all().shape == (0, 2) and idx.query(0) == []
    fps = clustered(rng, 2000, 100, 3)
    assert idx.add(fps).tolist() == model.add(fps).tolist()
    check_find_all(idx, model)
    check_cluster(idx, model, None, 2, "leader")


@pytest.mark.slow
@pytest.mark.parametrize("k,design", [(3, ()), (5, ()), (1, (("blocks", 3),)), (4, (("blocks", 6),))])
def test_bulk_slow(k, design):
    """60,000 items in batches of 1, 7, 100, 1000, with removes and add_unique."""
    bulk_run(
        k,
        design,
        batches=240,
        batch_size=250,
        seed=100 + k,
        check_every=60,
        remove_every=11,
        unique_every=13,
        sizes=[1, 7, 100, 1000, 142],
    )


@pytest.mark.slow
@SLOW
@given(data=st.data())
def test_add_and_query_many_examples(data):
    idx, model, fps, k = data.draw(built(max_size=120), label="built")
    check_all(idx, model, data.draw(probes(fps, k, max_size=30)), data.draw(sub_k(k)))
    for method in ("connected", "leader"):
        for min_size in (1, 2, 3):
            check_cluster(idx, model, None, min_size, method)
