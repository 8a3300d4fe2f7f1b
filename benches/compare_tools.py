#!/usr/bin/env python3
"""The tools ``compare.py`` sets side by side, each behind the same three
tasks, and the worker that runs one task in a process of its own.

A worker is ``python compare_tools.py '{"task": ..., "tool": ...}'``: it loads
its input (not timed), times the tool, writes what the tool found to the
``out`` file and prints one JSON line. It imports nothing of rsimhash unless
the tool is rsimhash's, so it runs under another interpreter too: the
``simhash-pybind`` package shares the import name ``simhash`` with the pure
Python ``simhash``, so it lives in a venv of its own.

Tasks:

* ``pairs``: every pair of fingerprints within ``k`` bits of a ``uint64``
  ``.npy`` array of distinct values; ``out`` gets the pairs as sorted
  ``(smaller value, larger value)`` rows.
* ``query``: builds an index of the array, then queries it with each value of
  a second array one call at a time, each call timed; ``out`` gets
  ``(query number, value found)`` rows.
* ``texts``: signatures of the texts of a JSON-lines corpus (timed: the
  fingerprint throughput), then the near-duplicate pairs among them (timed);
  ``out`` gets ``(i, j)`` document pairs, one file per threshold where the
  method takes one.
"""

from __future__ import annotations

import functools
import gc
import json
import os
import sys
import time
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
THRESHOLDS = (0.9, 0.8)
NUM_PERM = 128
LOW32 = 0xFFFFFFFF


class Tool:
    """A peer as ``compare.py`` runs it: what it is, how to install it, which
    tasks it can do and the largest size each is run at."""

    def __init__(
        self,
        name: str,
        label: str,
        module: str,
        dist: str,
        pip: str,
        tasks: Sequence[str],
        caps: Optional[Dict[str, int]] = None,
        check: Optional[str] = None,
        note: str = "",
        cores: str = "one core",
        setting: str = "",
    ):
        self.name, self.label, self.module, self.dist, self.pip = name, label, module, dist, pip
        self.tasks, self.caps, self.check, self.note = tuple(tasks), caps or {}, check, note
        # How many cores the tool uses, and the setting it runs with (each
        # peer its documented best), for the report's notes.
        self.cores, self.setting = cores, setting


# simhash-pybind's blocks for distance 3: the example of its installed README
# (`blocks = 4`, `distance = 3`); at 10^6 random fingerprints it ran in 6.5-9.5 s
# against 9.4-11.8 s with 5 (its README's benchmark) and 15-20 s with 6.
PYBIND_BLOCKS = 4

# ``check`` names an attribute that tells the two ``simhash`` packages apart.
TOOLS = [
    Tool(
        "rsimhash",
        "rsimhash",
        "rsimhash",
        "rsimhash",
        "pip install rsimhash",
        ("pairs", "query", "texts"),
        cores="all cores (rayon)",
        setting="`batch.find_all(fps, 3)` and `Index(3)` with their default table designs",
    ),
    Tool(
        "rsimhash-index",
        "rsimhash `Index`",
        "rsimhash",
        "rsimhash",
        "pip install rsimhash",
        ("pairs",),
        cores="all cores (rayon)",
        setting="`Index(3)`, add then `find_all`",
    ),
    Tool(
        "rsimhash-verified",
        "rsimhash verified",
        "rsimhash",
        "rsimhash",
        "pip install rsimhash",
        ("texts",),
        cores="all cores (rayon)",
        setting="`similar_pairs(texts, t, candidates=auto_candidates(t))`: the simhash candidates, each "
        "checked by the exact Jaccard of its sets",
    ),
    Tool(
        "rsimhash-exact",
        "rsimhash exact join",
        "rsimhash",
        "rsimhash",
        "pip install rsimhash",
        ("texts",),
        cores="all cores (rayon)",
        setting='`similar_pairs(texts, t, candidates="exact")`: the prefix-filter join, every pair (the texts '
        "tokenised by it, timed)",
    ),
    Tool(
        "rsimhash-similar-index",
        "rsimhash `SimilarIndex`",
        "rsimhash",
        "rsimhash",
        "pip install rsimhash",
        ("online",),
        cores="all cores (rayon)",
        setting="`SimilarIndex(t)`: `add(texts)`, then `query_batch(texts)`; candidates `auto`, exact Jaccard",
    ),
    Tool(
        "rsimhash-similar-index-exact",
        "rsimhash `SimilarIndex` exact",
        "rsimhash",
        "rsimhash",
        "pip install rsimhash",
        ("online",),
        cores="all cores (rayon)",
        setting='`SimilarIndex(t, candidates="exact")`: `add(texts)`, then `query_batch(texts)`; the online '
        "prefix index, every match",
    ),
    Tool(
        "hammingbird",
        "hammingbird",
        "hammingbird",
        "hammingbird",
        "pip install hammingbird",
        ("pairs", "query"),
        cores="all cores (rayon, per its README)",
        setting="`find_pairs_self_bit` and `Index`, which take no tuning",
    ),
    Tool(
        "simhash-pybind",
        "simhash-pybind (simhash-cpp)",
        "simhash",
        "simhash-pybind",
        "python -m venv .venv-cpp && .venv-cpp/bin/pip install simhash-pybind numpy; "
        "--python simhash-pybind=.venv-cpp/bin/python",
        ("pairs", "texts"),
        check="find_all",
        cores="one core (C++, no threads)",
        setting=f"`find_all(hashes, {PYBIND_BLOCKS}, 3)`: its README's example for distance 3 "
        "(its benchmark uses 5; 4 was the faster of the two at 10^6 here, 6 slower still)",
    ),
    Tool(
        "simhash",
        "simhash (1e0ng)",
        "simhash",
        "simhash",
        'python -m venv .venv-1e0ng && .venv-1e0ng/bin/pip install simhash "numpy<2"; --python simhash=.venv-1e0ng/bin/python',
        ("pairs", "query", "texts"),
        caps={"pairs": 1_000_000, "query": 1_000_000},
        check="SimhashIndex",
        note="pure Python: run up to 10^6 fingerprints (at 10^7, from its 10^6 figures: ~10 GB of index and an hour for all pairs)",
        cores="one core (pure Python)",
        setting="`SimhashIndex(k=3)`, its only design (k + 1 blocks)",
    ),
    Tool(
        "gaoya",
        "gaoya",
        "gaoya",
        "gaoya",
        "pip install gaoya",
        ("texts",),
        note="its simhash index takes documents, not fingerprints",
        cores="all cores (its `par_bulk_*` calls)",
        setting="`SimHash64StringIntIndex(6, 3, ...)`, word 3-grams lower-cased, as its README builds it",
    ),
    Tool(
        "datasketch",
        "datasketch MinHash LSH",
        "datasketch",
        "datasketch",
        "pip install datasketch",
        ("texts", "online"),
        cores="one core (pure Python)",
        setting="128 permutations, `MinHashLSH(threshold=t)` with its own bands",
    ),
    Tool(
        "setsimilaritysearch",
        "SetSimilaritySearch",
        "SetSimilaritySearch",
        "SetSimilaritySearch",
        "pip install SetSimilaritySearch",
        ("texts",),
        cores="one core (pure Python)",
        setting="`all_pairs(sets, 'jaccard', t)` on lists of the SPEC v1 word 3-shingle hashes, built for it "
        "beforehand (not timed)",
    ),
    Tool(
        "rensa",
        "rensa MinHash LSH",
        "rensa",
        "rensa",
        "pip install rensa",
        ("texts",),
        cores="one core",
        setting="128 permutations, `RMinHashLSH` with the bands datasketch would choose at t",
    ),
    Tool(
        "numpy",
        "numpy brute force",
        "numpy",
        "numpy",
        "pip install numpy",
        ("pairs", "query"),
        caps={"pairs": 30_000},
        note="every pair compared: all pairs only up to 3 x 10^4 fingerprints",
        cores="one core",
    ),
]
BY_NAME = {t.name: t for t in TOOLS}


def available(tool: Tool) -> Optional[str]:
    """The tool's version when this interpreter can import it, else None."""
    try:
        mod = __import__(tool.module)
    except Exception:  # noqa: BLE001 - a broken install is as good as none
        return None
    if tool.check and not hasattr(mod, tool.check):
        return None
    try:
        from importlib.metadata import version

        return version(tool.dist)
    except Exception:  # noqa: BLE001
        return str(getattr(mod, "__version__", "unknown"))


# --------------------------------------------------------------------------
# helpers


def popcount(x: np.ndarray) -> np.ndarray:
    if hasattr(np, "bitwise_count"):
        return np.bitwise_count(x)
    x = x - ((x >> np.uint64(1)) & np.uint64(0x5555555555555555))
    x = (x & np.uint64(0x3333333333333333)) + ((x >> np.uint64(2)) & np.uint64(0x3333333333333333))
    x = (x + (x >> np.uint64(4))) & np.uint64(0x0F0F0F0F0F0F0F0F)
    return (x * np.uint64(0x0101010101010101)) >> np.uint64(56)


def value_pairs(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Sorted unique rows (min, max) of two equal-length uint64 arrays."""
    a, b = np.asarray(a, dtype=np.uint64), np.asarray(b, dtype=np.uint64)
    rows = np.stack([np.minimum(a, b), np.maximum(a, b)], axis=1) if len(a) else np.zeros((0, 2), np.uint64)
    return np.unique(rows, axis=0) if len(rows) else rows


def index_pairs(pairs: np.ndarray) -> np.ndarray:
    p = np.asarray(pairs, dtype=np.int64).reshape(-1, 2)
    p = np.stack([p.min(axis=1), p.max(axis=1)], axis=1)
    p = p[p[:, 0] != p[:, 1]]
    return np.unique(p, axis=0) if len(p) else p


def clock(fn: Callable[[], Any]) -> Tuple[Any, float]:
    gc.collect()
    gc.disable()
    try:
        t0 = time.perf_counter()
        out = fn()
        return out, time.perf_counter() - t0
    finally:
        gc.enable()


def quiet_simhash_logger() -> None:
    import logging

    logging.getLogger("simhash").setLevel(logging.ERROR)  # "big bucket" warnings on every query


# --------------------------------------------------------------------------
# pairs: all pairs within k bits


def pairs_rsimhash(fps: np.ndarray, k: int) -> Callable[[], np.ndarray]:
    import rsimhash

    return lambda: rsimhash.batch.find_all(fps, k)


def pairs_rsimhash_index(fps: np.ndarray, k: int) -> Callable[[], np.ndarray]:
    import rsimhash

    def run():
        ix = rsimhash.Index(k)
        ix.add(fps)
        return ix.find_all()

    return run


def pairs_hammingbird(fps: np.ndarray, k: int) -> Callable[[], Any]:
    import hammingbird

    rows = fps.view(np.uint8).reshape(-1, 8)  # Hamming distance does not depend on byte order
    return lambda: hammingbird.find_pairs_self_bit(rows, k)


def pairs_simhash_pybind(fps: np.ndarray, k: int) -> Callable[[], Any]:
    import simhash

    values = fps.tolist()
    return lambda: simhash.find_all(values, PYBIND_BLOCKS, k)


def pairs_simhash(fps: np.ndarray, k: int) -> Callable[[], Any]:
    from simhash import Simhash, SimhashIndex

    quiet_simhash_logger()
    values = [int(v) for v in fps]

    def run():
        index = SimhashIndex([(str(i), Simhash(v)) for i, v in enumerate(values)], k=k)
        out = []
        for i, v in enumerate(values):
            out.extend((i, int(j)) for j in index.get_near_dups(Simhash(v)) if int(j) > i)
        return out

    return run


def pairs_numpy(fps: np.ndarray, k: int) -> Callable[[], np.ndarray]:
    def run():
        found = []
        step = max(1, 2**22 // max(len(fps), 1))
        for i0 in range(0, len(fps), step):
            block = fps[i0 : i0 + step]
            near = popcount(block[:, None] ^ fps[None, i0:]) <= k  # rows against themselves and after
            i, j = np.nonzero(near)
            i += i0
            j += i0
            keep = j > i
            found.append(np.stack([i[keep], j[keep]], axis=1))
        return np.concatenate(found) if found else np.zeros((0, 2), np.int64)

    return run


def pairs_task(task: Dict[str, Any]) -> Dict[str, Any]:
    fps = np.load(task["fps"])
    make = {
        "rsimhash": pairs_rsimhash,
        "rsimhash-index": pairs_rsimhash_index,
        "hammingbird": pairs_hammingbird,
        "simhash-pybind": pairs_simhash_pybind,
        "simhash": pairs_simhash,
        "numpy": pairs_numpy,
    }[task["tool"]]
    found, seconds = clock(make(fps, task["k"]))
    if task["tool"] == "simhash-pybind":  # pairs of values
        arr = np.array(sorted(found), dtype=np.uint64).reshape(-1, 2)
        rows = value_pairs(arr[:, 0], arr[:, 1])
    else:  # pairs of positions (rsimhash's ids are positions here)
        arr = np.array([p[:2] for p in found] if isinstance(found, list) else found, dtype=np.int64).reshape(-1, 2)
        rows = value_pairs(fps[arr[:, 0]], fps[arr[:, 1]])
    np.save(task["out"], rows)
    return {"seconds": seconds, "pairs": int(len(rows))}


# --------------------------------------------------------------------------
# query: an index of fps, one query a call


def query_rsimhash(fps: np.ndarray, qs: np.ndarray, k: int):
    import rsimhash

    ix = rsimhash.Index(k)

    def build():
        ix.add(fps)

    queries = [int(q) for q in qs]
    return build, queries, lambda q: [i for i, _ in ix.query(q)]


def query_hammingbird(fps: np.ndarray, qs: np.ndarray, k: int):
    import hammingbird

    ix = hammingbird.Index(8, k)
    rows = fps.view(np.uint8).reshape(-1, 8)

    def build():
        ix.add_batch(rows)

    queries = list(qs.view(np.uint8).reshape(-1, 8).copy())
    return build, queries, lambda q: [i for i, _ in ix.query(q)]


def query_simhash(fps: np.ndarray, qs: np.ndarray, k: int):
    from simhash import Simhash, SimhashIndex

    quiet_simhash_logger()
    holder: List[Any] = []

    def build():
        holder.append(SimhashIndex([(str(i), Simhash(int(v))) for i, v in enumerate(fps)], k=k))

    queries = [int(q) for q in qs]
    return build, queries, lambda q: [int(i) for i in holder[0].get_near_dups(Simhash(q))]


def query_numpy(fps: np.ndarray, qs: np.ndarray, k: int):
    return (lambda: None), list(qs), lambda q: np.flatnonzero(popcount(fps ^ q) <= k)


def query_task(task: Dict[str, Any]) -> Dict[str, Any]:
    fps, qs = np.load(task["fps"]), np.load(task["queries"])
    make = {"rsimhash": query_rsimhash, "hammingbird": query_hammingbird, "simhash": query_simhash, "numpy": query_numpy}[
        task["tool"]
    ]
    build, queries, one = make(fps, qs, task["k"])
    _, build_s = clock(build)
    lat = np.empty(len(queries))
    found: List[np.ndarray] = []
    gc.disable()
    for n, q in enumerate(queries):
        t0 = time.perf_counter_ns()
        ids = one(q)
        lat[n] = time.perf_counter_ns() - t0
        found.append(np.asarray(ids, dtype=np.int64))
    gc.enable()
    qi = np.repeat(np.arange(len(found)), [len(f) for f in found]).astype(np.uint64)
    vals = fps[np.concatenate(found)] if found else np.zeros(0, np.uint64)
    rows = np.unique(np.stack([qi, vals], axis=1), axis=0) if len(vals) else np.zeros((0, 2), np.uint64)
    np.save(task["out"], rows)
    return {
        "build_s": build_s,
        "median_us": float(np.median(lat)) / 1e3,
        "p99_us": float(np.percentile(lat, 99)) / 1e3,
        "found": int(len(rows)),
    }


# --------------------------------------------------------------------------
# texts: signatures, then near-duplicate pairs


def load_texts(path: str, max_docs: Optional[int]) -> List[str]:
    from bench_quality import load_texts as load  # stdlib only at import: fine under any interpreter

    return load(path, max_docs)


def texts_rsimhash(texts: List[str], k: int):
    import rsimhash

    return (lambda: rsimhash.fingerprints(texts)), {None: lambda fps: rsimhash.batch.find_all(fps, k)}


def texts_rsimhash_verified(texts: List[str], k: int):
    import rsimhash
    from rsimhash import _rsimhash

    # The simhash candidates by name: "auto" is the exact join in memory.
    return (lambda: None), {
        t: (lambda _, t=t: rsimhash.similar_pairs(texts, t, candidates=tuple(_rsimhash.auto_candidates(t)))[0])
        for t in THRESHOLDS
    }


def texts_rsimhash_exact(texts: List[str], k: int):
    import rsimhash

    return (lambda: None), {t: (lambda _, t=t: rsimhash.similar_pairs(texts, t, candidates="exact")[0]) for t in THRESHOLDS}


def texts_setsimilaritysearch(texts: List[str], k: int):
    from SetSimilaritySearch import all_pairs

    from rsimhash import _rsimhash

    # The sets prebuilt for it, not timed: the truth's own SPEC v1 word 3-shingle sets.
    offsets, hashes = _rsimhash.shingle_sets(texts, mode="words", width=3)
    sets = [hashes[offsets[i] : offsets[i + 1]].tolist() for i in range(len(texts))]

    def pairs_at(t):
        return [(a, b) for a, b, _ in all_pairs(sets, similarity_func_name="jaccard", similarity_threshold=t)]

    return (lambda: None), {t: (lambda _, t=t: pairs_at(t)) for t in THRESHOLDS}


def texts_simhash(texts: List[str], k: int):
    from simhash import Simhash, SimhashIndex

    quiet_simhash_logger()

    def pairs(sigs):
        index = SimhashIndex([(str(i), s) for i, s in enumerate(sigs)], k=k)
        return [(i, int(j)) for i, s in enumerate(sigs) for j in index.get_near_dups(s) if int(j) > i]

    return (lambda: [Simhash(t) for t in texts]), {None: pairs}  # its default features: char 4-grams


def texts_simhash_pybind(texts: List[str], k: int):
    import simhash

    def sigs():  # the package's own recipe: md5 of shingles of whitespace tokens
        return [
            simhash.compute([simhash.unsigned_hash(" ".join(s).encode()) for s in simhash.shingle(t.split(), 3)]) for t in texts
        ]

    def pairs(values):
        docs: Dict[int, List[int]] = {}
        for i, v in enumerate(values):
            docs.setdefault(v, []).append(i)
        out = [(a, b) for same in docs.values() for x, a in enumerate(same) for b in same[x + 1 :]]
        for u, v in simhash.find_all(values, PYBIND_BLOCKS, k):  # distinct values only
            out.extend((a, b) for a in docs[u] for b in docs[v])
        return out

    return sigs, {None: pairs}


GAOYA_ARGS = (6, 3, "word", True, (3, 3))  # blocks, k, word 3-grams, lower-cased


def texts_gaoya(texts: List[str], k: int):
    from gaoya.gaoya import simhash as gs

    def pairs(_):
        ix = gs.SimHash64StringIntIndex(*GAOYA_ARGS)
        ix.par_bulk_insert_docs(list(range(len(texts))), texts)
        return [(i, j) for i, found in enumerate(ix.par_bulk_query(texts)) for j in found if j > i]

    sig_ix = gs.SimHash64StringIntIndex(*GAOYA_ARGS)
    return (lambda: sig_ix.par_bulk_doc2signatures(texts)), {None: pairs}


def texts_minhash(texts: List[str], name: str):
    sys.path.insert(0, HERE)
    import bench_quality
    from rsimhash import _rsimhash

    sigs_fn = getattr(bench_quality, f"{name}_sigs")
    pairs_fn = getattr(bench_quality, f"{name}_pairs")
    held: Dict[str, Any] = {}

    def sigs():  # MinHash of the very shingle sets the truth is defined on
        offsets, hashes = _rsimhash.shingle_sets(texts, mode="words", width=3)
        held["objs"], held["sigs"] = sigs_fn(offsets, hashes)
        return None

    def pairs_at(_, t):  # LSH candidates kept when their MinHash estimate is >= t
        raw, _params = pairs_fn(held["objs"], t)
        p = index_pairs(np.array(raw, dtype=np.int64).reshape(-1, 2))
        s = held["sigs"]
        est = (s[p[:, 0]] == s[p[:, 1]]).mean(axis=1) if len(p) else np.zeros(0)
        return p[est >= t]

    return sigs, {t: (lambda sig, t=t: pairs_at(sig, t)) for t in THRESHOLDS}


def texts_task(task: Dict[str, Any]) -> Dict[str, Any]:
    texts = load_texts(task["texts"], task.get("max_docs"))
    tool, k = task["tool"], task["k"]
    if tool in ("datasketch", "rensa"):
        sigs, runs = texts_minhash(texts, tool)
    else:
        sigs, runs = {
            "rsimhash": texts_rsimhash,
            "rsimhash-verified": texts_rsimhash_verified,
            "rsimhash-exact": texts_rsimhash_exact,
            "setsimilaritysearch": texts_setsimilaritysearch,
            "simhash": texts_simhash,
            "simhash-pybind": texts_simhash_pybind,
            "gaoya": texts_gaoya,
        }[tool](texts, k)
    sig, sig_s = clock(sigs)
    no_signatures = tool in ("rsimhash-verified", "rsimhash-exact", "setsimilaritysearch")
    out: Dict[str, Any] = {"sig_s": None if no_signatures else sig_s, "runs": []}
    for t, run in runs.items():
        found, pairs_s = clock(lambda: run(sig))
        path = f"{task['out']}-{t}.npy"
        np.save(path, index_pairs(np.array(found, dtype=np.int64).reshape(-1, 2) if len(found) else np.zeros((0, 2), np.int64)))
        out["runs"].append({"t": t, "pairs_s": pairs_s, "file": path})
    # gaoya's index hashes the texts itself on insert and query: its pairs time is
    # its whole job, the signatures pass only measures its throughput.
    out["sig_in_pairs"] = tool == "gaoya"
    if tool == "gaoya":  # its signatures, to check its pairs against an exact search over them
        np.save(f"{task['out']}-sigs.npy", np.array(sig, dtype=np.uint64))
        out["sigs"] = f"{task['out']}-sigs.npy"
    return out


# --------------------------------------------------------------------------
# online: an index of texts by Jaccard threshold, every text inserted, then queried


def online_rsimhash(texts: List[str], t: float, candidates: str = "auto"):
    import rsimhash

    def insert():
        index = rsimhash.SimilarIndex(t, candidates=candidates)
        index.add(texts)
        return index

    def query(index):
        qi, ids, _ = index.query_batch(texts)
        return np.stack([qi.astype(np.int64), ids.astype(np.int64)], axis=1)

    return insert, query


def online_datasketch(texts: List[str], t: float):
    import datasketch

    import bench_quality
    from rsimhash import _rsimhash

    def minhashes():  # the SPEC v1 word 3-shingle sets the truth is defined on, then MinHash
        offsets, hashes = _rsimhash.shingle_sets(texts, mode="words", width=3)
        return bench_quality.datasketch_sigs(offsets, hashes)

    def insert():
        objs, sigs = minhashes()
        lsh = datasketch.MinHashLSH(threshold=t, num_perm=bench_quality.NUM_PERM)
        for i, m in enumerate(objs):
            lsh.insert(i, m)
        return lsh, sigs

    def query(held):
        lsh, stored = held
        objs, sigs = minhashes()  # a query is a text: its MinHash is part of the query
        found = [(i, j) for i, m in enumerate(objs) for j in lsh.query(m)]
        p = np.array(found, dtype=np.int64).reshape(-1, 2)
        est = (sigs[p[:, 0]] == stored[p[:, 1]]).mean(axis=1) if len(p) else np.zeros(0)
        return p[est >= t]  # kept when its MinHash estimate is >= t, as the texts section keeps them

    return insert, query


def online_task(task: Dict[str, Any]) -> Dict[str, Any]:
    sys.path.insert(0, HERE)
    texts = load_texts(task["texts"], task.get("max_docs"))
    make = {
        "rsimhash-similar-index": online_rsimhash,
        "rsimhash-similar-index-exact": functools.partial(online_rsimhash, candidates="exact"),
        "datasketch": online_datasketch,
    }[task["tool"]]
    out: Dict[str, Any] = {"runs": []}
    for t in THRESHOLDS:
        insert, query = make(texts, t)
        held, insert_s = clock(insert)
        found, query_s = clock(functools.partial(query, held))
        path = f"{task['out']}-{t}.npy"
        np.save(path, index_pairs(found))
        out["runs"].append({"t": t, "insert_s": insert_s, "query_s": query_s, "file": path})
        held = None  # the next threshold's index is built without this one in memory
    return out


def main(argv: Sequence[str]) -> int:
    task = json.loads(argv[0])
    if task["task"] == "versions":
        result: Dict[str, Any] = {t.name: available(t) for t in TOOLS}
    elif task["task"] == "load":  # the floor under every peak: the interpreter, numpy and the input
        data = np.load(task["fps"]) if "fps" in task else load_texts(task["texts"], task.get("max_docs"))
        result = {"items": len(data)}
    else:
        result = {"pairs": pairs_task, "query": query_task, "texts": texts_task, "online": online_task}[task["task"]](task)
    result["rss_mb"] = peak_rss_mb()
    print(json.dumps(result))
    return 0


def peak_rss_mb() -> Optional[float]:
    """This process's peak resident set. Not the rusage a parent gets from wait4:
    on Linux that starts from the parent's own size at the fork."""
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    import resource

    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return rss / 2**20 if sys.platform == "darwin" else rss / 1024


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
