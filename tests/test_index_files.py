"""Index files: ``Index.save`` / ``Index.load`` round trips checked against the
brute-force model (tests/brute.py), the layout of the file, corruption of every
kind (flipped bits, truncation, trailing bytes, forged checksums, foreign
files, future versions), atomic replacement under SIGKILL, concurrent saves
and loads, and failing saves.

The byte-level helpers (CRC-32C, section table parser, header patching) and
the writer child of the crash test live in tests/indexfile.py.
"""

from __future__ import annotations

import copy
import errno
import json
import os
import pathlib
import random
import signal
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, note, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

import indexfile as fmt  # noqa: E402
from brute import U64_MAX, BruteIndex  # noqa: E402

rsimhash = pytest.importorskip("rsimhash")
if not hasattr(rsimhash, "Index") or not hasattr(rsimhash.Index, "load"):
    pytest.skip("rsimhash.Index.save/load are not built yet", allow_module_level=True)

Index = rsimhash.Index

BAD_FILE = "is not a usable rsimhash index file: "


def bad_file_prefix(path) -> str:
    return "%s %s" % (os.fspath(path), BAD_FILE)


def assert_bad_file(path, mmap=True, match=None):
    """load(path) raises ValueError starting '{path} is not a usable ...';
    returns the problem part of the message."""
    with pytest.raises(ValueError) as info:
        Index.load(path, mmap=mmap)
    msg = str(info.value)
    assert msg.startswith(bad_file_prefix(path)), msg
    problem = msg[len(bad_file_prefix(path)) :]
    if match is not None:
        assert match in problem, "expected %r in %r" % (match, msg)
    return problem


def stray_tmp_files(directory, name):
    return sorted(f for f in os.listdir(directory) if f.startswith("." + name + ".") and f.endswith(".tmp"))


# ---------------------------------------------------------------------------
# Data: planted near-duplicate clusters and edge values
# ---------------------------------------------------------------------------
def planted(rng, n, k, n_centers=None):
    """n fingerprints around centers (0 and 2**64-1 among them) with 0..k+1
    flipped bits, and some exact copies."""
    n_centers = n_centers or max(2, n // 12)
    centers = rng.integers(0, U64_MAX, size=n_centers, dtype=np.uint64, endpoint=True)
    centers[:2] = [0, U64_MAX]
    out = centers[rng.integers(0, n_centers, size=n)]
    nflips = rng.integers(0, k + 2, size=n)
    for j in range(k + 1):
        bit = rng.integers(0, 64, size=n).astype(np.uint64)
        sel = nflips > j
        out[sel] ^= np.uint64(1) << bit[sel]
    copies = rng.random(n) < 0.05
    out[copies] = out[rng.integers(0, n, size=n)[copies]]
    return out


def build_scenario(idx, model, k, seed=0):
    """The same operations on an Index (None: the model alone) and its model:
    a big run, a second run with explicit sparse ids (one near 2**64), exact
    duplicates under many ids, removals from both runs, then items left in
    the online buffer (and a removal among them)."""
    rng = np.random.default_rng(seed)
    ops = Twin(idx, model)
    ops.add(planted(rng, 3000, k))
    fps = planted(rng, 1300, k)
    fps[:40] = 0
    fps[40:80] = np.uint64(U64_MAX)
    fps[80:100] = fps[100]
    ids = rng.choice(10**12, size=len(fps), replace=False).astype(np.uint64) + np.uint64(10**6)
    ids[0] = U64_MAX - 5000  # room left for default ids after it
    ids[1] = 1 << 63
    ops.add(fps, ids)
    stored = np.array(sorted(model.items), dtype=np.uint64)
    assert ops.remove(stored[rng.random(len(stored)) < 0.1]) > 0
    new = ops.add(planted(rng, 500, k))
    assert ops.remove(new[::7]) > 0


def more_ops(idx, model, k, seed=1):
    """What is done to a loaded index: adds (near copies of stored items and
    new clusters, some past the buffer size so that runs merge), add_unique,
    a removal."""
    rng = np.random.default_rng(seed)
    ops = Twin(idx, model)
    stored = np.array(list(model.items.values()), dtype=np.uint64)
    near = stored[rng.integers(0, len(stored), size=400)] if len(stored) else planted(rng, 400, k)
    near = near ^ (np.uint64(1) << rng.integers(0, 64, size=len(near)).astype(np.uint64))
    for part in (near, planted(rng, 1200, k), planted(rng, 30, k)):
        ops.add(part)
    ops.add_unique(planted(rng, 200, k))
    ops.remove(np.array(sorted(model.items)[::11], dtype=np.uint64))


class Twin:
    """Applies each call to an Index (unless None) and to its model, checks
    that both return the same, and returns the model's result."""

    def __init__(self, idx, model):
        self.idx, self.model = idx, model

    def add(self, fps, ids=None):
        exp = self.model.add(fps.tolist(), None if ids is None else ids.tolist())
        if self.idx is not None:
            got = self.idx.add(fps, ids)
            assert got.tolist() == exp.tolist(), "add: the index and the model give different ids"
        return exp

    def remove(self, ids):
        exp = self.model.remove(ids.tolist())
        if self.idx is not None:
            assert self.idx.remove(ids) == exp
        return exp

    def add_unique(self, fps):
        e_new, e_matched = self.model.add_unique(fps.tolist())
        if self.idx is not None:
            is_new, matched = self.idx.add_unique(fps)
            assert is_new.tolist() == e_new.tolist()
            assert matched[~is_new].tolist() == e_matched[~e_new].tolist()


def probe_set(model, k, seed=2, n=200):
    rng = np.random.default_rng(seed)
    stored = np.array(list(model.items.values()), dtype=np.uint64)
    out = [0, 1, U64_MAX, U64_MAX - 1, 1 << 63]
    if len(stored):
        picks = stored[rng.integers(0, len(stored), size=n)]
        flips = rng.integers(0, k + 2, size=n)
        for v, f in zip(picks.tolist(), flips.tolist()):
            for b in rng.choice(64, size=f, replace=False).tolist():
                v ^= 1 << b
            out.append(v)
    out += rng.integers(0, U64_MAX, size=20, dtype=np.uint64, endpoint=True).tolist()
    return out


def answers(obj, k, probes):
    """Everything the index answers, as plain lists (so that == compares)."""
    ks = [None] + list(range(k + 1))
    out = {"len": len(obj)}
    out["query"] = [[obj.query(p, kk) for kk in ks] for p in probes]
    qs = np.array(probes, dtype=np.uint64)
    for kk in (None, max(0, k - 1)):
        qi, ids, dist = obj.query_batch(qs, kk)
        out["query_batch k=%s" % kk] = (qi.tolist(), ids.tolist(), dist.tolist())
    for kk in (None, 0, max(0, k - 1)):
        out["find_all k=%s" % kk] = obj.find_all(kk).tolist()
    for method in ("connected", "leader"):
        for min_size in (1, 2):
            out["cluster %s min_size=%d" % (method, min_size)] = [c.tolist() for c in obj.cluster(None, min_size, method)]
    out["cluster leader k=0"] = [c.tolist() for c in obj.cluster(0, 1, "leader")]
    return out


def assert_same_answers(got, exp, what):
    assert got.keys() == exp.keys()
    for key in exp:
        if got[key] != exp[key]:
            if key == "query":
                bad = next(i for i, (g, e) in enumerate(zip(got[key], exp[key])) if g != e)
                raise AssertionError(
                    "%s: query of probe #%d differs:\n got %s\n expected %s" % (what, bad, got[key][bad], exp[key][bad])
                )
            raise AssertionError("%s: %s differs:\n got %.600s\n expected %.600s" % (what, key, got[key], exp[key]))


# ---------------------------------------------------------------------------
# 1. Round trips
# ---------------------------------------------------------------------------
# (k, design keywords) -> [(model, probes, brute answers) after the scenario,
# the same after more_ops]; the brute force runs once per configuration.
_BRUTE = {}


def brute_stages(k, design):
    key = (k, tuple(sorted(design.items())))
    if key not in _BRUTE:
        model = BruteIndex(k)
        build_scenario(None, model, k)
        probes = probe_set(model, k)
        stage1 = (copy.deepcopy(model), probes, answers(model, k, probes))
        more_ops(None, model, k)
        probes2 = probe_set(model, k, seed=3)
        stage2 = (model, probes2, answers(model, k, probes2))
        _BRUTE[key] = (stage1, stage2)
    return _BRUTE[key]


ROUND_TRIP_LAYOUTS = [
    pytest.param({"compress": True, "block_bytes": 16}, id="packed16"),
    pytest.param({"compress": True, "block_bytes": 1024}, id="packed1024"),
    pytest.param({"compress": False}, id="raw"),
]


def built_index(k, design, layout):
    idx = Index(k=k, **design, **layout)
    model = BruteIndex(k)
    build_scenario(idx, model, k)
    info = idx.info()
    # The scenario is meant to leave several runs and a non-empty buffer.
    assert info["runs"] >= 2 and info["buffered"] > 0, info
    return idx, model


def check_loaded(original, loaded, k, layout):
    assert len(loaded) == len(original)
    assert loaded.k == original.k == k
    assert loaded.tables == original.tables
    assert loaded.design == original.design
    assert loaded.compressed == original.compressed == layout.get("compress", True)
    a, b = original.info(), loaded.info()
    for key in ("items", "k", "tables", "design", "compressed", "block_bytes", "spec_version", "format_version"):
        assert a[key] == b[key], (key, a[key], b[key])


@pytest.mark.parametrize("mmap", [True, False], ids=["mmap", "read"])
@pytest.mark.parametrize("layout", ROUND_TRIP_LAYOUTS)
def test_round_trip_matches_original_and_brute_force(tmp_path, layout, mmap):
    k, design = 3, {}
    (model1, probes1, exp1), (model2, probes2, exp2) = brute_stages(k, design)
    idx, _ = built_index(k, design, layout)
    path = tmp_path / "index.rsh"
    idx.save(path)
    assert stray_tmp_files(tmp_path, "index.rsh") == []
    loaded = Index.load(path, mmap=mmap)
    check_loaded(idx, loaded, k, layout)
    assert_same_answers(answers(idx, k, probes1), exp1, "original")
    assert_same_answers(answers(loaded, k, probes1), exp1, "loaded")

    # More work on the loaded index, saved over the file it may be mapped from.
    model = copy.deepcopy(model1)
    more_ops(loaded, model, k)
    assert_same_answers(answers(loaded, k, probes2), exp2, "loaded, then added to")
    loaded.save(str(path))
    again = Index.load(str(path), mmap=not mmap)
    check_loaded(loaded, again, k, layout)
    assert_same_answers(answers(again, k, probes2), exp2, "saved and loaded again")
    assert stray_tmp_files(tmp_path, "index.rsh") == []


@pytest.mark.parametrize(
    "k,design,layout",
    [
        (0, {}, {"compress": True, "block_bytes": 16}),
        (1, {}, {"compress": False}),
        (5, {"blocks": 7}, {"compress": True, "block_bytes": 1024}),
        (3, {"tables": 10}, {"compress": True, "block_bytes": 64}),
        (2, {"tables": 6}, {"compress": False}),
    ],
)
def test_round_trip_other_designs(tmp_path, k, design, layout):
    (model1, probes1, exp1), (model2, probes2, exp2) = brute_stages(k, design)
    idx, _ = built_index(k, design, layout)
    path = tmp_path / "index.rsh"
    idx.save(path)
    loaded = Index.load(path)
    check_loaded(idx, loaded, k, layout)
    assert_same_answers(answers(loaded, k, probes1), exp1, "loaded")
    more_ops(loaded, copy.deepcopy(model1), k)
    loaded.save(path)
    again = Index.load(path, mmap=False)
    check_loaded(loaded, again, k, layout)
    assert_same_answers(answers(again, k, probes2), exp2, "saved and loaded again")


@pytest.mark.parametrize("layout", ROUND_TRIP_LAYOUTS)
@pytest.mark.parametrize("mmap", [True, False], ids=["mmap", "read"])
def test_empty_index_round_trip(tmp_path, layout, mmap):
    for k, design in ((3, {}), (0, {}), (4, {"blocks": 6})):
        idx = Index(k=k, **design, **layout)
        path = tmp_path / ("empty%d.rsh" % k)
        idx.save(path)
        loaded = Index.load(path, mmap=mmap)
        check_loaded(idx, loaded, k, layout)
        assert len(loaded) == 0
        assert loaded.query(0) == [] and loaded.query(U64_MAX, 0) == []
        qi, ids, dist = loaded.query_batch(np.array([0, 1, U64_MAX], dtype=np.uint64))
        assert len(qi) == len(ids) == len(dist) == 0
        assert loaded.find_all().shape == (0, 2)
        assert loaded.cluster(min_size=1) == [] and loaded.cluster(min_size=1, method="leader") == []
        # the first default id of an empty index is 0, after a load too
        assert loaded.add(np.array([5, 5, 4], dtype=np.uint64)).tolist() == [0, 1, 2]
        assert loaded.query(5, 0) == [(0, 0), (1, 0)]
        assert loaded.find_all().tolist() == [[0, 1]] + ([[0, 2], [1, 2]] if k else [])
        loaded.save(path)
        assert len(Index.load(path, mmap=not mmap)) == 3


@pytest.mark.parametrize("mmap", [True, False], ids=["mmap", "read"])
def test_id_counter_survives_round_trip(tmp_path, mmap):
    """Default ids continue after the largest id ever given, even when every
    item was removed before saving; and they stay exhausted after U64_MAX."""
    idx = Index(k=2)
    idx.add(np.arange(100, dtype=np.uint64), ids=np.arange(1000, 1100, dtype=np.uint64))
    idx.add(np.arange(5, dtype=np.uint64))  # ids 1100..1104, buffered
    assert idx.remove(np.arange(1000, 1105, dtype=np.uint64)) == 105
    path = tmp_path / "x.rsh"
    idx.save(path)
    loaded = Index.load(path, mmap=mmap)
    assert len(loaded) == 0
    assert loaded.add(7).tolist() == [1105]

    top = Index(k=2)
    top.add([1, 2, 3], ids=[U64_MAX, 0, 1 << 63])
    top.save(path)
    loaded = Index.load(path, mmap=mmap)
    assert loaded.query(1) == [(U64_MAX, 0), (1 << 63, 1), (0, 2)]
    with pytest.raises(ValueError, match=r"(?i)\bid"):
        loaded.add(9)
    assert loaded.add([9], ids=[5]).tolist() == [5]


def test_save_and_load_accept_str_and_pathlike(tmp_path):
    idx = Index(k=1)
    idx.add([1, 3, 7])
    idx.save(str(tmp_path / "a.rsh"))
    idx.save(pathlib.PurePath(tmp_path / "b.rsh"))
    for name in ("a.rsh", "b.rsh"):
        for path in (str(tmp_path / name), tmp_path / name):
            assert Index.load(path).find_all().tolist() == [[0, 1], [1, 2]]


def test_loaded_index_is_independent_of_the_original(tmp_path):
    idx = Index(k=1)
    idx.add([10, 11])
    idx.save(tmp_path / "a.rsh")
    loaded = Index.load(tmp_path / "a.rsh")
    idx.add([9])
    loaded.remove(0)
    assert len(idx) == 3 and len(loaded) == 1
    assert idx.query(11) == [(1, 0), (0, 1), (2, 1)]
    assert loaded.query(11) == [(1, 0)]


# Hypothesis: random small datasets and operations, with save/load anywhere.
_HC = [HealthCheck.too_slow, HealthCheck.data_too_large]
SPECIAL = [0, 1, U64_MAX, U64_MAX - 1, 1 << 63, 0x5555555555555555]


@st.composite
def fp_lists(draw, k, max_size=40):
    centers = draw(st.lists(st.one_of(st.integers(0, U64_MAX), st.sampled_from(SPECIAL)), min_size=1, max_size=4))
    out = []
    for _ in range(draw(st.integers(0, max_size))):
        v = draw(st.sampled_from(centers))
        for b in draw(st.lists(st.integers(0, 63), max_size=k + 1, unique=True)):
            v ^= 1 << b
        out.append(v)
    return out


@st.composite
def scenarios(draw):
    k = draw(st.integers(0, 4), label="k")
    layout = draw(
        st.sampled_from(
            [
                {"compress": True, "block_bytes": 16},
                {"compress": True, "block_bytes": 1024},
                {"compress": True, "block_bytes": 100},
                {"compress": False},
            ]
        ),
        label="layout",
    )
    ops = draw(
        st.lists(
            st.one_of(
                st.tuples(st.just("add"), fp_lists(k)),
                st.tuples(st.just("bulk"), st.integers(0, 2**32), st.integers(1000, 1500)),
                st.tuples(st.just("add_unique"), fp_lists(k, 15)),
                st.tuples(st.just("remove"), st.floats(0, 1)),
                st.tuples(st.just("save_load"), st.booleans()),
            ),
            max_size=7,
        ),
        label="ops",
    )
    return k, layout, ops


@settings(max_examples=30, deadline=None, suppress_health_check=_HC)
@given(scenario=scenarios(), mmap=st.booleans())
def test_round_trip_random_operations(tmp_path_factory, scenario, mmap):
    k, layout, ops = scenario
    directory = tmp_path_factory.mktemp("hyp")
    path = directory / "i.rsh"
    idx = Index(k=k, **layout)
    model = BruteIndex(k)
    for op in ops:
        if op[0] == "add":
            assert idx.add(op[1]).tolist() == model.add(op[1]).tolist()
        elif op[0] == "bulk":
            fps = planted(np.random.default_rng(op[1]), op[2], k)
            assert idx.add(fps).tolist() == model.add(fps.tolist()).tolist()
        elif op[0] == "add_unique":
            is_new, _ = idx.add_unique(op[1])
            assert is_new.tolist() == model.add_unique(op[1])[0].tolist()
        elif op[0] == "remove":
            ids = sorted(model.items)[: int(op[1] * len(model.items))]
            assert idx.remove(ids) == model.remove(ids)
        else:
            idx.save(path)
            idx = Index.load(path, mmap=op[1])
    note("info before the last save: %r" % idx.info())
    idx.save(path)
    loaded = Index.load(path, mmap=mmap)
    probes = probe_set(model, k, n=30)
    assert_same_answers(answers(loaded, k, probes), answers(model, k, probes), "loaded")
    fps = [v ^ 1 for v in probes[:20]]
    assert loaded.add(fps).tolist() == model.add(fps).tolist()
    assert loaded.find_all().tolist() == model.find_all().tolist()
    assert stray_tmp_files(directory, "i.rsh") == []


# ---------------------------------------------------------------------------
# The file layout, checked against the format document
# ---------------------------------------------------------------------------
@pytest.fixture(scope="module")
def small_file(tmp_path_factory):
    """A small index with two runs, a buffer, removed items and fingerprints
    with several ids, saved; with its bytes and the answers it gives."""
    rng = np.random.default_rng(42)
    idx = Index(k=3, block_bytes=64)
    idx.add(planted(rng, 2500, 3))
    fps = planted(rng, 1300, 3)
    fps[:30] = fps[30]
    idx.add(fps)
    idx.remove(np.arange(0, 3800, 9, dtype=np.uint64))
    idx.add(planted(rng, 300, 3))
    info = idx.info()
    assert info["runs"] == 2 and info["buffered"] > 0, info
    path = tmp_path_factory.mktemp("small") / "small.rsh"
    idx.save(path)
    data = path.read_bytes()
    qs = np.array(planted(rng, 100, 3).tolist() + [0, U64_MAX], dtype=np.uint64)
    return {"path": path, "data": data, "index": idx, "info": info, "qs": qs, "signature": fmt.signature(idx, qs)}


def test_layout_follows_the_format_document(small_file):
    data, info, idx = small_file["data"], small_file["info"], small_file["index"]
    assert data[:8] == fmt.MAGIC
    assert fmt.header_field(data, "format_version") == 1
    assert fmt.header_field(data, "spec_version") == 1 == rsimhash.SPEC_VERSION
    assert fmt.header_field(data, "flags") == 0
    assert fmt.header_field(data, "file_len") == len(data)
    assert data[32:56] == bytes(24)
    assert fmt.header_field(data, "header_crc") == fmt.crc32c(data[:60])
    assert fmt.header_field(data, "table_crc") == fmt.crc32c(data[64 : fmt.table_end(data)])
    secs = fmt.sections(data)
    end = fmt.table_end(data)
    for s in secs:
        entry = data[s.entry_at : s.entry_at + 32]
        assert entry[28:32] == bytes(4), s
        assert s.offset % 64 == 0 and s.offset >= end, (s, end)
        assert s.offset - end < 64, "more padding than alignment needs: %s" % (s,)
        assert data[end : s.offset] == bytes(s.offset - end), "padding before %s is not zero" % (s,)
        assert fmt.crc32c(data[s.offset : s.end]) == s.crc, s
        end = s.end
    assert end == len(data)
    tags = [s.tag for s in secs]
    per_table = ["TABLE", "BLOCKS", "FIRST", "RANKS"]
    per_run = ["RUN", "IDS", "STARTS", "DEAD"] + per_table * idx.tables
    assert tags == ["INDEX", "BUFFER"] + per_run * info["runs"], tags


def test_file_is_identical_when_saved_twice(small_file, tmp_path):
    """Saving is deterministic: no timestamps, no uninitialised bytes."""
    small_file["index"].save(tmp_path / "again.rsh")
    assert (tmp_path / "again.rsh").read_bytes() == small_file["data"]
    Index.load(small_file["path"]).save(tmp_path / "third.rsh")
    assert (tmp_path / "third.rsh").read_bytes() == small_file["data"]


def test_small_file_loads_whole(small_file):
    for mmap in (True, False):
        loaded = Index.load(small_file["path"], mmap=mmap)
        assert fmt.signature(loaded, small_file["qs"]) == small_file["signature"]


# ---------------------------------------------------------------------------
# 2. Corruption: flipped bits, truncation, trailing bytes
# ---------------------------------------------------------------------------
def corruption_positions(data, rng, n_random=100):
    """Every header byte, every field of every table entry (first and last
    byte), every section's first and last byte, the first and last byte of
    every padding gap, and random positions."""
    pos = set(range(64))
    end = fmt.table_end(data)
    for s in fmt.sections(data):
        for a, b in ((0, 8), (8, 16), (16, 24), (24, 28), (28, 32)):
            pos.update((s.entry_at + a, s.entry_at + b - 1))
        if s.length:
            pos.update((s.offset, s.end - 1))
        if s.offset > end:
            pos.update((end, s.offset - 1))
        end = s.end
    pos.update(rng.integers(0, len(data), size=n_random).tolist())
    return sorted(pos)


def test_every_flipped_bit_is_refused(small_file, tmp_path):
    data = small_file["data"]
    rng = np.random.default_rng(7)
    positions = corruption_positions(data, rng)
    assert len(positions) > 200
    path = tmp_path / "flipped.rsh"
    for pos in positions:
        bit = int(rng.integers(0, 8))
        path.write_bytes(fmt.flip_bit(data, pos, bit))
        for mmap in (True, False):
            try:
                assert_bad_file(path, mmap=mmap)
            except (AssertionError, pytest.fail.Exception) as e:
                raise AssertionError("bit %d of byte %d flipped (mmap=%s): %s" % (bit, pos, mmap, e)) from None
    # a checksum problem names the section it found damaged
    for s in fmt.sections(data):
        if s.length:
            path.write_bytes(fmt.flip_bit(data, s.offset + s.length // 2, 3))
            assert_bad_file(
                path, match='section "%s" (bytes %d..%d) fails its checksum: the file is corrupt' % (s.tag, s.offset, s.end)
            )


def test_flipped_header_bits_name_the_header(small_file, tmp_path):
    data = small_file["data"]
    path = tmp_path / "h.rsh"
    for pos in list(range(16, 60)) + [60, 63]:
        path.write_bytes(fmt.flip_bit(data, pos, 5))
        problem = assert_bad_file(path)
        assert "header" in problem and "corrupt" in problem, (pos, problem)
    for pos in range(8):  # the magic
        path.write_bytes(fmt.flip_bit(data, pos, 1))
        assert_bad_file(path, match="not an rsimhash index file (it starts with ")
    path.write_bytes(fmt.flip_bit(data, fmt.HEADER_LEN + 9, 0))  # the table
    assert_bad_file(path, match="section table fails its checksum")


def test_truncation_at_every_boundary(small_file, tmp_path):
    data = small_file["data"]
    cuts = {0, 1, 7, 8, 63, 64, 65, fmt.table_end(data), len(data) - 1}
    for s in fmt.sections(data):
        cuts.update((s.offset, s.end, s.offset + 1, s.entry_at, s.entry_at + 32))
    cuts.discard(len(data))
    path = tmp_path / "cut.rsh"
    for cut in sorted(cuts):
        path.write_bytes(data[:cut])
        for mmap in (True, False):
            problem = assert_bad_file(path, mmap=mmap)
            expected = "empty file" if cut == 0 else "truncated"
            assert problem.startswith(expected), (cut, problem)
            if cut >= 64:
                assert str(cut) in problem and str(len(data)) in problem, (cut, problem)


@pytest.mark.parametrize(
    "extra", [b"\0", bytes(64), b"\n", b"more data", None], ids=["one-zero", "64-zeros", "newline", "text", "second-copy"]
)
def test_trailing_bytes_are_refused(small_file, tmp_path, extra):
    data = small_file["data"]
    extra = data if extra is None else extra
    path = tmp_path / "long.rsh"
    path.write_bytes(data + extra)
    for mmap in (True, False):
        problem = assert_bad_file(path, mmap=mmap)
        assert "trailing" in problem and str(len(extra)) in problem, problem


# Forged damage: bytes changed and every checksum made valid again, so that the
# structural checks and the section decoders meet the damage.  The load may
# refuse the file (ValueError) or accept it; an accepted index may then answer
# wrongly, and even refuse some calls with a ValueError (the damage can look
# like data no writer produces, e.g. one id stored twice), but nothing may
# crash: no panic, no RuntimeError, no other exception.
def exercise(idx, qs, tmp_path):
    calls = [
        ("len", lambda: len(idx)),
        ("info", idx.info),
        ("query", lambda: [(idx.query(q), idx.query(q, 1)) for q in qs[:20].tolist()]),
        ("query_batch", lambda: idx.query_batch(qs)),
        ("find_all", idx.find_all),
        ("find_all k=0", lambda: idx.find_all(0)),
        ("cluster", lambda: idx.cluster(min_size=1)),
        ("cluster leader", lambda: idx.cluster(method="leader")),
        ("add", lambda: idx.add(qs[:5] ^ np.uint64(3))),
        ("add_unique", lambda: idx.add_unique(qs[5:10] ^ np.uint64(1 << 40))),
        ("remove", lambda: idx.remove(np.arange(0, 50, dtype=np.uint64))),
        ("save", lambda: idx.save(tmp_path / "resaved.rsh")),
        ("load saved", lambda: Index.load(tmp_path / "resaved.rsh")),
    ]
    refused = []
    for name, call in calls:
        try:
            call()
        except ValueError as e:
            assert str(e), name
            refused.append("%s: %s" % (name, e))
        except BaseException as e:  # a PanicException is a BaseException
            raise AssertionError("%s raised %s: %s" % (name, type(e).__name__, e)) from None
    return refused


def load_forged(path, forged, qs, tmp_path, what):
    """("refused", problem) or ("loaded", signature of the loaded index)."""
    path.write_bytes(forged)
    outcomes = []
    for mmap in (True, False):
        try:
            idx = Index.load(path, mmap=mmap)
        except ValueError as e:
            assert str(e).startswith(bad_file_prefix(path)), "%s: %s" % (what, e)
            outcomes.append(("refused", str(e)))
            continue
        except BaseException as e:
            raise AssertionError("%s: load raised %s: %s" % (what, type(e).__name__, e)) from None
        sig = fmt.signature(idx, qs)
        try:
            exercise(idx, qs, tmp_path)
        except AssertionError as e:
            raise AssertionError("%s, the loaded index: %s" % (what, e)) from None
        outcomes.append(("loaded", sig))
    assert outcomes[0] == outcomes[1], "%s: mmap and read disagree: %s" % (what, outcomes)
    return outcomes[0]


def section_mutations(s, rng):
    """(name, position -> new byte) edits of one section's bytes."""
    n = s.length
    edits = [
        ("first bit", {0: None}),
        ("last bit", {n - 1: None}),
        ("middle bit", {n // 2: None}),
        ("random byte 0xff", {int(rng.integers(0, n)): 0xFF}),
    ]
    if n >= 8:
        edits.append(("first word all ones", {i: 0xFF for i in range(8)}))
        edits.append(("last word zero", {i: 0 for i in range(n - 8, n)}))
        edits.append(("second word huge", {i: 0x7F for i in range(8, min(n, 16))}))
    if n <= 4096:
        edits.append(("all ones", {i: 0xFF for i in range(n)}))
    return edits


def test_forged_section_damage_never_crashes(small_file, tmp_path):
    data, qs = small_file["data"], small_file["qs"]
    rng = np.random.default_rng(11)
    path = tmp_path / "forged.rsh"
    seen = {"refused": 0, "loaded": 0}
    for s in fmt.sections(data):
        if not s.length:
            continue
        for name, edit in section_mutations(s, rng):
            b = bytearray(data)
            for i, v in edit.items():
                b[s.offset + i] = b[s.offset + i] ^ 0x10 if v is None else v
            forged = fmt.with_valid_checksums(bytes(b), only=s.index)
            seen[load_forged(path, forged, qs, tmp_path, "section %s #%d, %s" % (s.tag, s.index, name))[0]] += 1
    assert seen["refused"] > seen["loaded"] > 0, seen


def test_forged_header_and_table_damage_is_refused(small_file, tmp_path):
    """Header and section-table fields that contradict the file, with valid
    checksums: each is refused with a message, never a crash."""
    data, qs = small_file["data"], small_file["qs"]
    secs = fmt.sections(data)
    n, size = len(secs), len(data)
    path = tmp_path / "forged.rsh"
    cases = [
        ("count + 1", fmt.patch_header(data, count=n + 1)),
        ("count - 1", fmt.patch_header(data, count=n - 1)),
        ("count 0", fmt.patch_header(data, count=0)),
        ("count max", fmt.patch_header(data, count=2**32 - 1)),
        ("file_len - 1", fmt.patch_header(data, file_len=size - 1)),
        ("file_len + 1", fmt.patch_header(data, file_len=size + 1)),
        ("file_len max", fmt.patch_header(data, file_len=2**64 - 1)),
        ("flags 1", fmt.patch_header(data, flags=1)),
        ("reserved byte", fmt.with_header_crc(fmt.flip_bit(data, 40))),
    ]

    def entry(s, offset=None, length=None, tag=None, reserved=None):
        b = bytearray(data)
        if tag is not None:
            b[s.entry_at : s.entry_at + 8] = tag.ljust(8, b"\0")
        if offset is not None:
            b[s.entry_at + 8 : s.entry_at + 16] = offset.to_bytes(8, "little")
        if length is not None:
            b[s.entry_at + 16 : s.entry_at + 24] = length.to_bytes(8, "little")
        if reserved is not None:
            b[s.entry_at + 28 : s.entry_at + 32] = reserved.to_bytes(4, "little")
        return fmt.with_valid_checksums(bytes(b), only=s.index)

    for s in (secs[0], secs[1], secs[2], secs[7], secs[-2], secs[-1]):
        cases += [
            ("%s length + 64" % s.tag, entry(s, length=s.length + 64)),
            ("%s length + 1" % s.tag, entry(s, length=s.length + 1)),
            ("%s length max" % s.tag, entry(s, length=2**64 - 1)),
            ("%s offset + 64" % s.tag, entry(s, offset=s.offset + 64)),
            ("%s offset - 64" % s.tag, entry(s, offset=s.offset - 64)),
            ("%s offset + 8" % s.tag, entry(s, offset=s.offset + 8)),
            ("%s offset max" % s.tag, entry(s, offset=2**64 - 64)),
            ("%s tag with a space" % s.tag, entry(s, tag=b"RUN X")),
            ("%s tag empty" % s.tag, entry(s, tag=b"")),
            ("%s tag unknown" % s.tag, entry(s, tag=b"ZZZZ")),
            ("%s reserved" % s.tag, entry(s, reserved=1)),
        ]
    # sections swapped around: FIRST <-> RANKS of one table, two IDS
    first = next(s for s in secs if s.tag == "FIRST")
    ranks = secs[first.index + 1]
    cases.append(
        (
            "FIRST and RANKS tags swapped",
            fmt.with_valid_checksums(fmt.patch_entry_tag(fmt.patch_entry_tag(data, first, "RANKS"), ranks, "FIRST")),
        )
    )
    sig = small_file["signature"]
    for what, forged in cases:
        outcome, detail = load_forged(path, forged, qs, tmp_path, what)
        if what == "BLOCKS length + 1":
            # takes in one zero byte of padding: accepted, and answers alike
            assert outcome == "refused" or detail == sig, (what, outcome)
        else:
            assert outcome == "refused", (what, outcome, detail)


def test_forged_repeated_id_is_refused_or_harmless(small_file, tmp_path):
    data = small_file["data"]
    ids_sections = [s for s in fmt.sections(data) if s.tag == "IDS"]
    second = ids_sections[1]  # the run of ids 2500..3799
    ids = np.frombuffer(data[second.offset : second.end], dtype=np.uint64).copy()
    j = next(i for i, v in enumerate(ids.tolist()) if v % 9)  # a live item
    ids[j] = 1  # a live id of the first run
    b = bytearray(data)
    b[second.offset : second.end] = ids.tobytes()
    path = tmp_path / "repeated.rsh"
    path.write_bytes(fmt.with_valid_checksums(bytes(b), only=second.index))
    try:
        idx = Index.load(path)
    except ValueError as e:
        assert str(e).startswith(bad_file_prefix(path))
        return
    assert exercise(idx, small_file["qs"], tmp_path) == []


@pytest.mark.parametrize("tables", [(0, 1), (1, 2), (2, 3)])
def test_tables_swapped_within_a_run_are_refused(small_file, tmp_path, tables):
    """Two tables of a run exchanged whole, each valid on its own and every
    checksum good: each now holds another permutation's order, so queries
    would miss matches without a sound. Load must refuse the file."""
    data = small_file["data"]
    contents = [[s.tag, data[s.offset : s.end]] for s in fmt.sections(data)]
    assert fmt.assemble(data, contents) == data  # the writer of the test lays files out as rsimhash does
    for tag in ("TABLE", "BLOCKS", "FIRST", "RANKS"):
        of_tag = [c for c in contents if c[0] == tag]  # run 0's tables first
        a, b = of_tag[tables[0]], of_tag[tables[1]]
        a[1], b[1] = b[1], a[1]
    forged = fmt.assemble(data, [tuple(c) for c in contents])
    outcome, detail = load_forged(
        tmp_path / "swapped.rsh", forged, small_file["qs"], tmp_path, "tables %d and %d swapped" % tables
    )
    assert outcome == "refused", detail
    assert "does not hold the fingerprints of table 0" in detail, detail


# ---------------------------------------------------------------------------
# 3. Files that are not index files
# ---------------------------------------------------------------------------
NOT_INDEX = {
    "text": b"hello world\nthis is not an index\n",
    "zip": b"PK\x03\x04\x14\x00\x00\x00\x08\x00" + bytes(200),
    "png": b"\x89PNG\r\n\x1a\n" + bytes(100),
    "random": bytes([0x42]) + np.random.default_rng(3).integers(0, 256, size=5000, dtype=np.uint8).tobytes(),
    "one byte": b"x",
    "magic with CRLF": b"\x89RSIMHX\r\n" + bytes(100),
}


@pytest.mark.parametrize("name", list(NOT_INDEX))
@pytest.mark.parametrize("mmap", [True, False], ids=["mmap", "read"])
def test_foreign_files(tmp_path, name, mmap):
    content = NOT_INDEX[name]
    path = tmp_path / ("%s.bin" % name.replace(" ", "_"))
    path.write_bytes(content)
    problem = assert_bad_file(path, mmap=mmap)
    shown = " ".join("%02x" % b for b in content[:8]) + (" ..." if len(content) > 8 else "")
    assert problem == "not an rsimhash index file (it starts with %s)" % shown, problem


@pytest.mark.parametrize(
    "content,expected",
    [
        (b"", "empty file"),
        (b"\x89", "truncated"),
        (b"\x89RSIM", "truncated"),
        (fmt.MAGIC, "truncated"),
        (fmt.MAGIC + bytes(55), "truncated"),
        (fmt.MAGIC + b"\x01" + bytes(55), "the header fails its checksum: the file is corrupt"),
        (fmt.MAGIC + bytes(56), "format version 0"),
    ],
)
def test_short_and_empty_files(tmp_path, content, expected):
    path = tmp_path / "short.rsh"
    path.write_bytes(content)
    for mmap in (True, False):
        problem = assert_bad_file(path, mmap=mmap)
        assert problem.startswith(expected), problem


def test_missing_file(tmp_path):
    for path in (tmp_path / "missing.rsh", str(tmp_path / "no" / "dir" / "x.rsh")):
        for mmap in (True, False):
            with pytest.raises(FileNotFoundError) as info:
                Index.load(path, mmap=mmap)
            assert os.fspath(path) in str(info.value)


def test_directory_is_an_oserror(tmp_path):
    with pytest.raises(OSError) as info:
        Index.load(tmp_path)
    assert os.fspath(tmp_path) in str(info.value)


def test_directory_is_refused_with_its_path(tmp_path):
    """Whatever the exception type, a directory is refused with a message
    naming it (and does not crash or hang)."""
    for mmap in (True, False):
        with pytest.raises((OSError, ValueError)) as info:
            Index.load(tmp_path, mmap=mmap)
        assert os.fspath(tmp_path) in str(info.value) and "director" in str(info.value)


def test_special_files_are_refused_without_blocking(tmp_path):
    paths = ["/dev/null"] if os.path.exists("/dev/null") else []
    if hasattr(os, "mkfifo"):
        fifo = tmp_path / "fifo"
        os.mkfifo(fifo)
        paths.append(fifo)
    for path in paths:
        outcome = []

        def load(path=path, outcome=outcome):
            try:
                Index.load(path)
                outcome.append("loaded")
            except (OSError, ValueError) as e:
                outcome.append(e)

        t = threading.Thread(target=load, daemon=True)
        t.start()
        t.join(10)
        if t.is_alive():  # unblock a reader stuck in open() of the fifo
            with open(path, "wb"):
                pass
            t.join(10)
            pytest.fail("Index.load(%s) blocked" % path)
        assert len(outcome) == 1 and outcome[0] != "loaded", (path, outcome)
        assert os.fspath(path) in str(outcome[0]), outcome[0]


# ---------------------------------------------------------------------------
# 4. Other versions
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("version", [3, 7, 2**32 - 1])
@pytest.mark.parametrize("fix_crc", [True, False], ids=["crc-fixed", "crc-stale"])
def test_future_format_version(small_file, tmp_path, version, fix_crc):
    """Named as newer whether or not the rest of its header checks out: a
    future version may lay out its header differently."""
    path = tmp_path / "future.rsh"
    path.write_bytes(fmt.patch_header(small_file["data"], fix_crc=fix_crc, format_version=version))
    for mmap in (True, False):
        problem = assert_bad_file(path, mmap=mmap)
        assert problem == ("written by a newer rsimhash (format version %d; this version reads 2): upgrade rsimhash" % version), (
            problem
        )


def test_format_version_0(small_file, tmp_path):
    path = tmp_path / "v0.rsh"
    path.write_bytes(fmt.patch_header(small_file["data"], format_version=0))
    problem = assert_bad_file(path)
    assert "format version 0" in problem and "corrupt" in problem, problem


@pytest.mark.parametrize("spec", [0, 2, 99])
def test_other_spec_version(small_file, tmp_path, spec):
    path = tmp_path / "spec.rsh"
    path.write_bytes(fmt.patch_header(small_file["data"], spec_version=spec))
    for mmap in (True, False):
        problem = assert_bad_file(path, mmap=mmap)
        assert problem == "its fingerprints follow SPEC v%d; this rsimhash computes v1" % spec, problem
    # with a stale header checksum the change is damage, not another version
    path.write_bytes(fmt.patch_header(small_file["data"], fix_crc=False, spec_version=spec))
    problem = assert_bad_file(path)
    assert "checksum" in problem and "corrupt" in problem, problem


def test_unknown_flags_and_reserved_bytes(small_file, tmp_path):
    path = tmp_path / "flags.rsh"
    path.write_bytes(fmt.patch_header(small_file["data"], flags=4))
    assert "flags" in assert_bad_file(path)
    path.write_bytes(fmt.with_header_crc(fmt.flip_bit(small_file["data"], 33, 2)))
    assert "reserved" in assert_bad_file(path)


# ---------------------------------------------------------------------------
# 5. Durability: SIGKILL in the middle of saves
# ---------------------------------------------------------------------------
CRASH_VERSIONS = ((101, 300_000), (202, 260_000))
WRITER = "import sys; sys.path.insert(0, %r); import indexfile; indexfile.writer_main(sys.argv[1:])" % HERE


def start_writer(path, versions):
    args = [sys.executable, "-c", WRITER, os.fspath(path)] + ["%d:%d" % v for v in versions]
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    line = proc.stdout.readline()
    if not line:
        proc.wait(30)
        raise AssertionError("writer died before saving: %s" % proc.stderr.read().decode(errors="replace"))
    return proc, json.loads(line)["ready"]


def kill_during_saves(tmp_path, kills, seed):
    path = tmp_path / "crash.rsh"
    rng = random.Random(seed)
    qs = fmt.probes(CRASH_VERSIONS)
    stray_seen = 0
    for i in range(kills):
        proc, sigs = start_writer(path, CRASH_VERSIONS)
        assert sigs[0] != sigs[1]
        # A save of this size takes a few to a few tens of milliseconds: the
        # kill lands in a write, an fsync, the rename or the directory flush.
        time.sleep(rng.uniform(0, 0.15))
        proc.send_signal(signal.SIGKILL)
        proc.wait(30)
        assert proc.returncode == -signal.SIGKILL, proc.stderr.read()
        proc.stdout.close()
        proc.stderr.close()
        for mmap in (True, False):
            got = fmt.signature(Index.load(path, mmap=mmap), qs)
            assert got in sigs, "kill #%d: the file holds neither version: %s" % (i, got)
        # Temporary files a killed save leaves behind are hidden, named after
        # the target, and never read by load; each is some prefix of a save.
        strays = stray_tmp_files(tmp_path, "crash.rsh")
        assert sorted(os.listdir(tmp_path)) == sorted(strays + ["crash.rsh"])
        stray_seen += len(strays)
        for name in strays:
            try:
                got = fmt.signature(Index.load(tmp_path / name), qs)
            except ValueError:
                continue
            assert got in sigs, (name, got)
    return stray_seen


needs_sigkill = pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs SIGKILL")


@needs_sigkill
def test_sigkill_during_save_leaves_a_whole_version(tmp_path):
    kill_during_saves(tmp_path, kills=5, seed=1)


@pytest.mark.slow
@needs_sigkill
def test_sigkill_during_save_many_times(tmp_path):
    strays = kill_during_saves(tmp_path, kills=20, seed=2)
    # Not a correctness condition, but the test would prove little if no
    # kill ever landed inside a save.
    assert strays > 0, "no kill hit a save in progress"


def test_stray_tmp_files_are_left_alone(tmp_path):
    """Temporary files of crashed saves (even ones with this process's pid, as
    after pid reuse) neither disturb load nor get clobbered by save."""
    path = tmp_path / "x.rsh"
    idx = Index(k=1)
    idx.add([1, 2, 3, 1000])
    idx.save(path)
    good = path.read_bytes()
    strays = {}
    for n in range(64):
        name = ".x.rsh.%d.%d.tmp" % (os.getpid(), n)
        strays[name] = good[: (n * 37) % len(good)] + b"junk%d" % n
        (tmp_path / name).write_bytes(strays[name])
    (tmp_path / ".x.rsh.1.0.tmp").write_bytes(b"other pid")
    strays[".x.rsh.1.0.tmp"] = b"other pid"
    assert Index.load(path).find_all().tolist() == [[0, 2], [1, 2]]
    idx.add([1001])
    idx.save(path)
    assert Index.load(path).find_all().tolist() == [[0, 2], [1, 2], [3, 4]]
    for name, content in strays.items():
        assert (tmp_path / name).read_bytes() == content, name
    assert len(stray_tmp_files(tmp_path, "x.rsh")) == len(strays)


def test_save_replaces_a_symlink_and_leaves_its_target(tmp_path):
    target = tmp_path / "target.rsh"
    old = Index(k=1)
    old.add([5])
    old.save(target)
    before = target.read_bytes()
    link = tmp_path / "link.rsh"
    link.symlink_to(target)
    new = Index(k=1)
    new.add([7, 8])
    new.save(link)
    assert not link.is_symlink()
    assert target.read_bytes() == before
    assert len(Index.load(link)) == 2 and len(Index.load(target)) == 1


# ---------------------------------------------------------------------------
# 6. Concurrency: loads while saves replace the file
# ---------------------------------------------------------------------------
CONC_VERSIONS = ((303, 60_000), (404, 45_000))


def load_continuously(path, sigs, qs, stop, results, mmap):
    try:
        while not stop.is_set():
            got = fmt.signature(Index.load(path, mmap=mmap), qs)
            if got not in sigs:
                results.append(AssertionError("a load saw neither version: %s" % (got,)))
                return
            results.append(sigs.index(got))
    except BaseException as e:  # noqa: BLE001 - reported by the test
        results.append(e)


def run_readers(path, sigs, qs, seconds, mmaps=(True, True, False)):
    stop = threading.Event()
    results = [[] for _ in mmaps]
    threads = [threading.Thread(target=load_continuously, args=(path, sigs, qs, stop, r, m)) for r, m in zip(results, mmaps)]
    for t in threads:
        t.start()
    time.sleep(seconds)
    stop.set()
    for t in threads:
        t.join(60)
    for r in results:
        errors = [e for e in r if isinstance(e, BaseException)]
        if errors:
            raise errors[0]
        assert len(r) >= 3, "a reader managed only %d loads" % len(r)
    return [v for r in results for v in r]


def test_loads_during_saves_by_another_process(tmp_path):
    path = tmp_path / "shared.rsh"
    proc, sigs = start_writer(path, CONC_VERSIONS)
    try:
        seen = run_readers(path, sigs, fmt.probes(CONC_VERSIONS), seconds=1.5)
    finally:
        proc.kill()
        proc.wait(30)
        proc.stdout.close()
        proc.stderr.close()
    assert set(seen) == {0, 1}, "the readers never saw one of the versions"


def test_loads_during_saves_by_another_thread(tmp_path):
    path = tmp_path / "shared.rsh"
    qs = fmt.probes(CONC_VERSIONS)
    indexes = [fmt.build(seed, n) for seed, n in CONC_VERSIONS]
    sigs = [fmt.signature(i, qs) for i in indexes]
    indexes[0].save(path)
    stop = threading.Event()
    saves = []

    def writer():
        try:
            while not stop.is_set():
                for i in indexes:
                    i.save(path)
                    saves.append(1)
        except BaseException as e:  # noqa: BLE001
            saves.append(e)

    t = threading.Thread(target=writer)
    t.start()
    try:
        seen = run_readers(path, sigs, qs, seconds=1.5, mmaps=(True, False))
    finally:
        stop.set()
        t.join(60)
    assert all(s == 1 for s in saves) and len(saves) >= 4, saves[-3:]
    assert set(seen) == {0, 1}
    assert stray_tmp_files(tmp_path, "shared.rsh") == []


def test_mapped_index_survives_replacement_and_deletion(tmp_path):
    k = 3
    rng = np.random.default_rng(5)
    fps = planted(rng, 5000, k)
    idx = Index(k=k)
    idx.add(fps)
    model = BruteIndex(k)
    model.add(fps.tolist())
    path = tmp_path / "mapped.rsh"
    idx.save(path)
    mapped = Index.load(path, mmap=True)
    probes = probe_set(model, k, n=60)
    expected = answers(model, k, probes)
    assert_same_answers(answers(mapped, k, probes), expected, "mapped")

    other = Index(k=k)
    other.add(planted(rng, 7000, k))
    other.save(path)  # replaces the file under the mapping
    assert len(Index.load(path)) == 7000
    assert_same_answers(answers(mapped, k, probes), expected, "mapped, file replaced")
    os.remove(path)  # and deletes it
    assert_same_answers(answers(mapped, k, probes), expected, "mapped, file deleted")
    # still usable for writes, and can be saved again
    more = planted(rng, 1500, k)
    assert mapped.add(more).tolist() == model.add(more.tolist()).tolist()
    mapped.save(path)
    probes = probe_set(model, k, seed=9, n=60)
    assert_same_answers(answers(Index.load(path), k, probes), answers(model, k, probes), "re-saved")


# ---------------------------------------------------------------------------
# 7. Saves that fail
# ---------------------------------------------------------------------------
def small_index():
    idx = Index(k=2)
    idx.add([1, 2, 3, 0xFFFF000000000000])
    return idx


def test_save_into_missing_directory(tmp_path):
    path = tmp_path / "no" / "such" / "dir" / "x.rsh"
    with pytest.raises(FileNotFoundError) as info:
        small_index().save(path)
    assert os.fspath(tmp_path / "no") in str(info.value)
    assert os.listdir(tmp_path) == []


def test_save_onto_a_directory(tmp_path):
    target = tmp_path / "dir.rsh"
    target.mkdir()
    (target / "inside").write_bytes(b"keep me")
    for spelling in (target, str(target) + os.sep):
        with pytest.raises(OSError) as info:
            small_index().save(spelling)
        assert os.fspath(target) in str(info.value)
        assert target.is_dir() and (target / "inside").read_bytes() == b"keep me"
        assert sorted(os.listdir(tmp_path)) == ["dir.rsh"], "a temporary file was left behind"


def test_save_onto_the_current_directory_is_an_oserror(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(OSError):
        small_index().save(".")


def test_save_onto_the_current_directory_changes_nothing(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "f").write_bytes(b"x")
    for spelling in (".", "..", os.sep, "sub/.."):
        with pytest.raises((OSError, ValueError)):
            small_index().save(spelling)
    assert os.listdir(tmp_path) == ["f"]


FSIZE_CHILD = r"""
import json, resource, signal, sys
sys.path.insert(0, sys.argv[1])
import indexfile
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)   # a failed write, not a signal
idx = indexfile.build(7, 100_000)
resource.setrlimit(resource.RLIMIT_FSIZE, (200_000, resource.RLIM_INFINITY))
try:
    idx.save(sys.argv[2])
except BaseException as e:
    print(json.dumps([type(e).__name__, isinstance(e, OSError), str(e)]))
else:
    print(json.dumps(None))
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="RLIMIT_FSIZE semantics")
def test_failed_save_leaves_the_existing_file_untouched(tmp_path):
    """A save that fails midway (the file size limit stops its writes) raises
    an OSError, leaves the file it was to replace as it was, and removes its
    temporary file."""
    path = tmp_path / "keep.rsh"
    small_index().save(path)
    before = path.read_bytes()
    out = subprocess.run([sys.executable, "-c", FSIZE_CHILD, HERE, os.fspath(path)], capture_output=True, timeout=120)
    assert out.returncode == 0, out.stderr.decode(errors="replace")
    result = json.loads(out.stdout)
    assert result is not None, "the save succeeded despite the file size limit"
    name, is_oserror, message = result
    assert is_oserror, result
    assert "keep.rsh" in message and os.strerror(errno.EFBIG) in message, message
    assert path.read_bytes() == before
    assert os.listdir(tmp_path) == ["keep.rsh"], "a temporary file was left behind"
    assert Index.load(path).find_all().tolist() == [[0, 1], [0, 2], [1, 2]]


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() == 0, reason="root writes into read-only directories")
def test_save_into_read_only_directory(tmp_path):
    d = tmp_path / "ro"
    d.mkdir()
    small_index().save(d / "x.rsh")
    before = (d / "x.rsh").read_bytes()
    d.chmod(0o555)
    try:
        with pytest.raises(PermissionError):
            Index(k=1).save(d / "x.rsh")
        assert (d / "x.rsh").read_bytes() == before
        assert os.listdir(d) == ["x.rsh"]
    finally:
        d.chmod(0o755)


# ---------------------------------------------------------------------------
# 8. info()
# ---------------------------------------------------------------------------
INFO_KEYS = {
    "items",
    "k",
    "tables",
    "design",
    "compressed",
    "block_bytes",
    "runs",
    "buffered",
    "nbytes",
    "table_bytes",
    "table_bytes_per_item_per_table",
    "spec_version",
    "format_version",
}


@pytest.mark.parametrize("layout", ROUND_TRIP_LAYOUTS)
def test_info_keys_and_versions(tmp_path, layout):
    idx = Index(k=2, **layout)
    idx.add(planted(np.random.default_rng(1), 3000, 2))
    idx.add([1, 2, 3])
    idx.save(tmp_path / "info.rsh")
    for i in (idx, Index.load(tmp_path / "info.rsh")):
        info = i.info()
        assert INFO_KEYS <= set(info), INFO_KEYS - set(info)
        assert info["format_version"] == 1 and info["spec_version"] == 1
        assert info["compressed"] is layout["compress"] is i.compressed
        assert info["block_bytes"] == (layout["block_bytes"] if layout["compress"] else None)
        assert info["items"] == len(i) == 3003
        assert info["k"] == i.k == 2 and info["tables"] == i.tables and info["design"] == i.design
        assert info["buffered"] == 3 and info["runs"] == 1
        assert 0 < info["table_bytes"] <= info["nbytes"]


@pytest.mark.parametrize("compress", [True, False])
def test_bytes_per_item_per_table(compress):
    fps = np.random.default_rng(8).integers(0, U64_MAX, size=200_000, dtype=np.uint64, endpoint=True)
    idx = Index(k=3, compress=compress)
    idx.add(fps)
    info = idx.info()
    assert info["compressed"] is compress and info["items"] == 200_000
    per = info["table_bytes_per_item_per_table"]
    assert per == pytest.approx(info["table_bytes"] / (info["tables"] * (200_000 - info["buffered"])))
    if compress:
        assert per < 8, info
    else:
        assert per >= 8, info


@pytest.mark.parametrize("mmap", [True, False], ids=["mmap", "read"])
def test_raw_index_is_raw_after_load(tmp_path, mmap):
    fps = np.random.default_rng(8).integers(0, U64_MAX, size=200_000, dtype=np.uint64, endpoint=True)
    idx = Index(k=3, compress=False)
    idx.add(fps)
    idx.save(tmp_path / "raw.rsh")
    loaded = Index.load(tmp_path / "raw.rsh", mmap=mmap)
    info = loaded.info()
    assert info["compressed"] is False  # round trips (checked above too)
    assert info["table_bytes_per_item_per_table"] >= 8, info
