"""String ids of ``rsimhash.Index`` and ``rsimhash.SimilarIndex``.

The oracle: an index keyed by strings gives its items internal ids counted
up as default ids are (every input of ``add`` and ``add_unique`` takes one),
so it must answer exactly as an int-keyed index given those ids, with each
id mapped to its string. The property tests run random sequences of add,
add_unique, remove (of stored, removed and unknown names), adding removed
names again and save/load (mapped or read) on both and compare every
answer after each step; the others pin the errors, the kinds of input and
output, and that the string ids persist.
"""

from __future__ import annotations

import os

import numpy as np
import pytest

pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

import rsimhash  # noqa: E402

_HC = [HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.function_scoped_fixture]
PROPS = settings(max_examples=40, deadline=None, suppress_health_check=_HC)
K = 3

# Fingerprints near a few centres: many matches, copies and clusters.
fp_st = st.tuples(st.integers(0, 5), st.lists(st.integers(0, 63), max_size=4)).map(lambda t: (t[0], t[1]))
PREFIXES = ["doc-", "", "é", "🙂 ", "a\tb", "x" * 40]

op_st = st.one_of(
    st.tuples(st.just("add"), st.lists(fp_st, max_size=30), st.booleans()),
    st.tuples(st.just("add_unique"), st.lists(fp_st, max_size=30), st.booleans()),
    st.tuples(st.just("remove"), st.lists(st.integers(0, 10**6), max_size=8), st.booleans()),
    st.tuples(st.just("save"), st.booleans(), st.booleans()),
)


def _fps(centres, drawn):
    return np.array([centres[c] ^ sum(1 << b for b in set(bits)) for c, bits in drawn], dtype=np.uint64)


def _names(ints, name_of):
    return [name_of[int(i)] for i in ints]


class Mirror:
    """A string-keyed index and its int-keyed twin, stepped together."""

    def __init__(self, tmp_path, centres):
        self.named = rsimhash.Index(k=K)
        self.ints = rsimhash.Index(k=K)
        self.name_of: dict = {}
        self.next = 0  # the internal id of the next input
        self.stored: list = []
        self.removed: list = []
        self.made = 0
        self.tmp = tmp_path
        self.centres = centres

    def fresh(self, n, reuse):
        out = []
        while reuse and self.removed and len(out) < n:
            out.append(self.removed.pop())
        while len(out) < n:
            out.append(PREFIXES[self.made % len(PREFIXES)] + str(self.made))
            self.made += 1
        return out

    def step(self, op):
        kind = op[0]
        if kind in ("add", "add_unique"):
            fps = _fps(self.centres, op[1])
            names = self.fresh(len(fps), op[2])
            ids = np.arange(self.next, self.next + len(fps), dtype=np.uint64)
            if kind == "add":
                got = self.named.add(fps, ids=names)
                assert got.tolist() == names and (got.dtype == object or not names)
                self.ints.add(fps, ids=ids)
                new = [True] * len(fps)
            else:
                is_new, matched = self.named.add_unique(fps, ids=names)
                want_new, want_matched = self.ints.add_unique(fps, ids=ids)
                assert is_new.tolist() == want_new.tolist()
                assert matched.dtype == object or not names
                new = is_new.tolist()
            for p, name in enumerate(names):
                if new[p]:
                    self.name_of[self.next + p] = name
                    self.stored.append(name)
                else:
                    self.removed.append(name)  # never stored: may be given again
            if kind == "add_unique":
                for p in range(len(fps)):
                    want = names[p] if is_new[p] else self.name_of[int(want_matched[p])]
                    assert matched[p] == want, p
            self.next += len(fps)
        elif kind == "remove":
            picks = [self.stored[i % len(self.stored)] for i in op[1]] if self.stored else []
            picks += ["never-given", ""] if op[2] else []
            ids = [i for i, n in self.name_of.items() if n in set(picks) and n in self.stored]
            assert self.named.remove(picks) == self.ints.remove(np.array(ids, dtype=np.uint64))
            gone = set(picks) & set(self.stored)
            self.stored = [n for n in self.stored if n not in gone]
            self.removed += sorted(gone)
            self.name_of = {i: n for i, n in self.name_of.items() if n not in gone}
        else:
            mmap, compress = op[1], op[2]
            path = os.path.join(self.tmp, "named.rsh")
            self.named.save(path)
            self.named = rsimhash.Index.load(path, mmap=mmap)
            assert self.named.info()["keys"] in ("str", None)
            if not compress:
                self.ints.save(os.path.join(self.tmp, "ints.rsh"))
                self.ints = rsimhash.Index.load(os.path.join(self.tmp, "ints.rsh"), mmap=mmap)

    def check(self, probes):
        named, ints, name_of = self.named, self.ints, self.name_of
        assert len(named) == len(ints) == len(self.stored)
        # Until an add stores something the index is undecided, and answers as an int one.
        kind = object if named.info()["keys"] == "str" else np.uint64
        for q in probes[:8]:
            assert named.query(int(q)) == [(name_of[i], d) for i, d in ints.query(int(q))]
        qi, ids, dist = named.query_batch(probes)
        wqi, wids, wdist = ints.query_batch(probes)
        assert ids.dtype == kind
        assert (qi.tolist(), ids.tolist(), dist.tolist()) == (wqi.tolist(), _names(wids, name_of), wdist.tolist())
        for copies in ("all", "first"):
            pairs, want = named.find_all(copies=copies), ints.find_all(copies=copies)
            assert pairs.shape == want.shape and pairs.dtype == kind
            assert pairs.tolist() == [_names(p, name_of) for p in want]
        for method in ("connected", "leader"):
            got = [c.tolist() for c in named.cluster(min_size=1, method=method)]
            assert got == [_names(c, name_of) for c in ints.cluster(min_size=1, method=method)]


@PROPS
@given(ops=st.lists(op_st, max_size=12), centres=st.lists(st.integers(0, 2**64 - 1), min_size=6, max_size=6))
def test_a_string_keyed_index_answers_as_the_int_one_mapped(tmp_path, ops, centres):
    m = Mirror(str(tmp_path), centres)
    probes = _fps(centres, [(c, [b]) for c in range(6) for b in (0, 9, 63)])
    for op in ops + [("save", True, True), ("add", [(0, [1]), (1, [])], True), ("save", False, False)]:
        m.step(op)
        m.check(probes)


def test_the_kind_is_decided_by_the_first_add_and_mixing_is_refused():
    index = rsimhash.Index(k=3)
    assert index.info()["keys"] is None
    index.add([], ids=[])  # stores nothing: decides nothing
    index.add([1, 2], ids=["a", "b"])
    assert index.info()["keys"] == "str"
    with pytest.raises(TypeError, match="keyed by strings.*got ints"):
        index.add([3], ids=[7])
    with pytest.raises(TypeError, match="ids must be given, as strings"):
        index.add([3])
    with pytest.raises(TypeError, match="ids must be given, as strings"):
        index.add_unique([3])
    with pytest.raises(TypeError, match="keyed by strings.*got ints"):
        index.add_unique([3], ids=np.array([9], dtype=np.uint64))
    with pytest.raises(TypeError, match="keyed by strings.*got ints"):
        index.remove([0])
    with pytest.raises(TypeError, match="all ints or all strings, got a string first, then int at position 1"):
        index.add([3, 4], ids=["c", 5])
    assert index.remove([]) == 0 and len(index) == 2
    for ints in (rsimhash.Index(), rsimhash.Index()):
        ints.add([1])  # default ids are ints
        with pytest.raises(TypeError, match="keyed by ints.*got strings"):
            ints.add([2], ids=["x"])
        with pytest.raises(TypeError, match="keyed by ints.*got strings"):
            ints.add_unique([2], ids=["x"])
        with pytest.raises(TypeError, match="keyed by ints.*got strings"):
            ints.remove(["x"])
        assert ints.info()["keys"] == "int"
    with pytest.raises(TypeError, match="all ints or all strings, got an int first, then str at position 2"):
        rsimhash.Index().add([1, 2, 3], ids=[1, 2, "c"])


def test_repeated_and_stored_ids():
    index = rsimhash.Index(k=3)
    with pytest.raises(ValueError, match='"a" given twice'):
        index.add([1, 2], ids=["a", "a"])
    assert len(index) == 0 and index.info()["keys"] is None
    index.add([1, 2], ids=["a", ""])
    with pytest.raises(ValueError, match='not already stored.*"a"'):
        index.add([5], ids=["a"])
    with pytest.raises(ValueError, match='not already stored.*""'):
        index.add_unique([1 << 40], ids=[""])
    with pytest.raises(ValueError, match='"z" given twice'):
        index.add_unique([1 << 40, 1 << 41], ids=["z", "z"])
    with pytest.raises(ValueError, match="one id per item"):
        index.add([5, 6], ids=["q"])
    assert len(index) == 2
    # A removed name may be given again; the removed item is gone.
    assert index.remove(["a", "a", "unknown"]) == 1
    index.add([0xFF00], ids=["a"])
    assert index.query(0xFF00, k=0) == [("a", 0)]
    assert index.query(1, k=0) == []
    # add_unique: a duplicate's name is not stored, so it may be given again.
    is_new, matched = index.add_unique([0xFF01, 0xABCDEF << 30], ids=["dup", "new"])
    assert is_new.tolist() == [False, True] and matched.tolist() == ["a", "new"]
    index.add([7 << 30], ids=["dup"])
    assert len(index) == 4


def test_inputs_of_every_kind_and_outputs_of_one():
    index = rsimhash.Index(k=3)
    import pandas as pd

    index.add([1], ids=np.array(["np-unicode"]))
    index.add([2], ids=np.array(["np-object"], dtype=object))
    index.add([3], ids=pd.Index(["pandas"]))
    index.add([4], ids=("tuple",))
    index.add([5], ids=(s for s in ["generator"]))
    index.add(6, ids="single")
    assert sorted(index.find_all(k=3).ravel().tolist())[:2] == ["generator", "generator"]
    assert index.remove("single") == 1 and index.remove(np.array(["tuple", "pandas"])) == 2
    qi, ids, dist = index.query_batch(np.array([], dtype=np.uint64))
    assert ids.dtype == object and len(ids) == 0
    assert index.find_all(k=0).shape == (0, 2)
    with pytest.raises(ValueError, match="lone surrogate"):
        index.add([9], ids=["ok", "\ud800"][1:])
    with pytest.raises(TypeError, match="bytes"):
        index.add([9], ids=b"x")
    # Int ids come back as before: uint64 arrays and Python ints.
    ints = rsimhash.Index(k=3)
    assert ints.add([1, 2], ids=[5, 6]).dtype == np.uint64
    assert [type(x) for x in ints.query(1)[0]] == [int, int]
    assert ints.query_batch([1])[1].dtype == np.uint64 and ints.find_all().dtype == np.uint64
    assert ints.cluster()[0].dtype == np.uint64 and ints.add_unique([3], ids=[7])[1].dtype == np.uint64


def test_string_ids_persist_and_the_file_says_so(tmp_path):
    index = rsimhash.Index(k=3)
    names = [f"doc-{i}-é" for i in range(5000)] + ["", "🙂"]
    fps = np.random.default_rng(3).integers(0, 2**64, len(names), dtype=np.uint64)
    index.add(fps, ids=names)
    index.remove(names[:10])
    path = tmp_path / "named.rsh"
    index.save(path)
    assert path.read_bytes()[8:12] == (2).to_bytes(4, "little"), "format version 2: a version-1 reader refuses it"
    for mmap in (True, False):
        loaded = rsimhash.Index.load(path, mmap=mmap)
        assert loaded.info()["format_version"] == 2 and loaded.info()["keys"] == "str"
        assert loaded.query(int(fps[20]), k=0) == [(names[20], 0)]
        assert loaded.query(int(fps[0]), k=0) == []
        loaded.add(fps[:10], ids=names[:10])
        with pytest.raises(TypeError, match="keyed by strings"):
            loaded.add(fps[:1])
        assert len(loaded) == len(names)
    # Emptied, it stays keyed by strings, through a save too.
    index.remove(names)
    index.save(path)
    assert rsimhash.Index.load(path).info()["keys"] == "str"
    # An int-keyed index still writes version 1.
    ints = rsimhash.Index(k=3)
    ints.add(fps)
    ints.save(tmp_path / "ints.rsh")
    assert (tmp_path / "ints.rsh").read_bytes()[8:12] == (1).to_bytes(4, "little")


def test_many_string_ids(tmp_path):
    n = 200_000
    rng = np.random.default_rng(7)
    fps = rng.integers(0, 2**64, n, dtype=np.uint64)
    fps[1::2] = fps[::2] ^ np.uint64(1)  # each even item has a neighbour
    names = np.array([f"u{i:07d}" for i in range(n)], dtype=object)
    index = rsimhash.Index(k=2)
    index.add(fps, ids=names)
    qi, ids, dist = index.query_batch(fps[:1000], k=1)
    assert len(qi) == 2000 and set(ids[qi == 10]) == {names[10], names[11]}
    pairs = index.find_all(k=1)
    assert pairs.shape == (n // 2, 2) and pairs[0].tolist() == ["u0000000", "u0000001"]
    index.save(tmp_path / "many.rsh")
    loaded = rsimhash.Index.load(tmp_path / "many.rsh")
    assert loaded.remove(names[: n // 2]) == n // 2 and len(loaded) == n // 2


# --- SimilarIndex ----------------------------------------------------------

WORDS = ["a", "b", "c", "d", "e"]
texts_st = st.lists(st.lists(st.sampled_from(WORDS), max_size=6).map(" ".join), max_size=20)


@settings(max_examples=25, deadline=None, suppress_health_check=_HC)
@given(first=texts_st, second=texts_st, drop=st.lists(st.integers(0, 100), max_size=5), mmap=st.booleans())
def test_a_string_keyed_similar_index_answers_as_the_int_one(tmp_path, first, second, drop, mmap):
    named = rsimhash.SimilarIndex(0.5, width=2)
    ints = rsimhash.SimilarIndex(0.5, width=2)
    names = [f"t{i}" for i in range(len(first) + len(second))]
    assert named.add(first, ids=names[: len(first)]).tolist() == names[: len(first)]
    ints.add(first, ids=list(range(len(first))))
    is_new, matched = named.add_unique(second, ids=names[len(first) :])
    want_new, want_matched = ints.add_unique(second)
    assert is_new.tolist() == want_new.tolist()
    assert matched.tolist() == [names[int(i)] for i in want_matched]
    live = [i for i in range(len(names)) if i < len(first) or is_new[i - len(first)]]
    gone = sorted({live[d % len(live)] for d in drop}) if live else []
    assert named.remove([names[i] for i in gone]) == ints.remove(gone) == len(gone)
    path = os.path.join(str(tmp_path), "s.rsh")
    named.save(path)
    loaded = rsimhash.SimilarIndex.load(path, mmap=mmap)
    probes = first + second + ["a b c d e"]
    for index in (named, loaded):
        qi, ids, sims = index.query_batch(probes)
        wqi, wids, wsims = ints.query_batch(probes)
        assert (qi.tolist(), ids.tolist(), sims.tolist()) == (wqi.tolist(), [names[i] for i in wids], wsims.tolist())
        for t in probes[:5]:
            assert index.query(t) == [(names[i], s) for i, s in ints.query(t)]
        assert len(index) == len(ints)
        assert all((names[i] in index) == (i in ints) for i in range(len(names)))
    # Removed names come back.
    if gone:
        loaded.add(["c d e"] * len(gone), ids=[names[i] for i in gone])
        assert names[gone[0]] in loaded


def test_similar_index_mixing_and_repeats():
    index = rsimhash.SimilarIndex(0.5)
    index.add(["the cat sat on the mat"], ids=["cat"])
    with pytest.raises(TypeError, match="keyed by strings"):
        index.add(["a dog"])
    with pytest.raises(TypeError, match="keyed by strings"):
        index.add(["a dog"], ids=[1])
    with pytest.raises(TypeError, match="keyed by strings"):
        index.remove([1])
    with pytest.raises(ValueError, match="distinct"):
        index.add(["a", "b"], ids=["x", "x"])
    with pytest.raises(ValueError, match='already stored.*"cat"'):
        index.add_unique(["something else entirely"], ids=["cat"])
    assert 1 not in index and "cat" in index and "dog" not in index
    ints = rsimhash.SimilarIndex(0.5)
    ints.add(["x y z"])
    with pytest.raises(TypeError, match="keyed by ints"):
        ints.add(["a dog"], ids=["dog"])
    assert "0" not in ints and 0 in ints


def test_a_damaged_name_table_is_refused(tmp_path):
    """Sections rewritten with their checksums made good, as a forger or a
    buggy writer would leave them: each is an ``IndexFormatError`` naming
    the problem, never an index answering other names."""
    import struct
    import sys

    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import indexfile as fmt

    index = rsimhash.Index(k=3)
    index.add([1, 2, 3], ids=["aa", "bb", "cc"])
    path = tmp_path / "n.rsh"
    index.save(path)
    data = path.read_bytes()
    parts = [(s.tag, data[s.offset : s.end]) for s in fmt.sections(data)]
    tags = [t for t, _ in parts]

    def replaced(tag, content):
        return [(t, content if t == tag else c) for t, c in parts]

    words = lambda *w: struct.pack(f"<{len(w)}Q", *w)  # noqa: E731
    cases = {
        "incomplete name table": [p for p in parts if p[0] != "NAMES"],
        "item 2 has no string id": replaced("NAMEIDS", words(0, 1, 7)),
        "not ascending": replaced("NAMEIDS", words(1, 0, 2)),
        "is stored twice": replaced("NAMES", b"aabbaa"),
        "not UTF-8": replaced("NAMES", b"aabb\xff\xfe"),
        "does not cut 6 bytes of names into 3 names": replaced("NAMEOFFS", words(0, 2, 4, 5)),
        "2 string ids for 3 items": [
            (t, {"NAMEIDS": words(0, 1), "NAMEOFFS": words(0, 2, 4), "NAMES": b"aabb"}.get(t, c)) for t, c in parts
        ],
    }
    assert {"NAMEIDS", "NAMEOFFS", "NAMES"} <= set(tags)
    for problem, contents in cases.items():
        bad = tmp_path / "bad.rsh"
        bad.write_bytes(fmt.assemble(data, contents))
        for mmap in (True, False):
            with pytest.raises(rsimhash.IndexFormatError, match=problem):
                rsimhash.Index.load(bad, mmap=mmap)
    # Untouched, it loads.
    bad.write_bytes(fmt.assemble(data, parts))
    assert rsimhash.Index.load(bad).query(1, k=0) == [("aa", 0)]


def test_queries_from_many_threads_while_adding_by_name():
    """The same locks as for ints: readers see each add whole (every name
    they get back is one that was stored, with its own fingerprint)."""
    import threading

    rng = np.random.default_rng(11)
    fps = rng.integers(0, 2**64, 4000, dtype=np.uint64)
    names = [f"n{i}" for i in range(len(fps))]
    fp_of = dict(zip(names, fps.tolist()))
    index = rsimhash.Index(k=2)
    index.add(fps[:100], ids=names[:100])
    errors: list = []

    def reader():
        try:
            for j in range(200):
                q = int(fps[j % 100])
                got = index.query(q, k=0)
                assert got and all(fp_of[n] == q and d == 0 for n, d in got), got
                _, ids, _ = index.query_batch(fps[:50], k=0)
                assert ids.tolist() == names[:50]
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=reader) for _ in range(4)]
    for t in threads:
        t.start()
    for start in range(100, len(fps), 300):
        index.add(fps[start : start + 300], ids=names[start : start + 300])
    for t in threads:
        t.join()
    assert not errors, errors[0]
    assert len(index) == len(fps) and index.find_all(k=0).shape == (0, 2)
