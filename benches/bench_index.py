#!/usr/bin/env python3
"""Speed and memory of ``rsimhash.Index`` on random 64-bit fingerprints.

Five measurements (``--only`` picks some), each against a target:

1. ``build1m``: ``Index(k=3)`` + ``add`` + ``find_all()`` on 1,000,000 random
   fingerprints, interleaved with ``np.sort`` of the same array (a copy), in
   ``--repeats`` rounds (default 5).  Target: Index time <= 3 x np.sort time.
2. ``build10m``: the same at 10,000,000 fingerprints, each round in a fresh
   subprocess that also reports peak memory (``VmHWM``).  Targets: wall
   <= 1.5 s on 2 cores; peak above the baseline (the process with its input
   array) <= 1.5 x (tables x 8 + 16) bytes per item.
3. ``query``: latency of ``idx.query(q)`` from Python on a 10,000,000-item
   index, each call timed alone, timer overhead subtracted.  Target: median
   < 2 us.
4. ``batch``: ``idx.query_batch`` of 1,000,000 queries against the same
   index.  Target: > 2,000,000 queries/s.
5. ``add_unique``: 10,000,000 fingerprints (90 % random, 10 % near-duplicates
   of earlier ones) streamed in batches of 100,000 into an empty
   ``Index(k=3)``.  Target: > 5,000,000 items/s.

Queries (3, 4) are half stored fingerprints with 0..3 random bits flipped,
half random.  All data come from ``numpy.random.default_rng([seed, step])``.
An operation the Index does not have yet (AttributeError,
NotImplementedError) makes its rows "n/a"; the other rows still run.

Usage::

    python benches/bench_index.py            # full sizes (needs ~3 GB RAM)
    python benches/bench_index.py --quick    # 1/10 sizes, fewer rounds
    python benches/bench_index.py --only 2,query --repeats 5
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import subprocess
import sys
import time
import traceback
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from bench_fingerprint import machine_busy_seconds, machine_info  # noqa: E402

K = 3
TARGET_BUILD_VS_SORT = 3.0  # Index build+find_all time <= 3 x np.sort time
TARGET_BUILD10M_S = 1.5  # seconds, on 2 cores
TARGET_MEM_FACTOR = 1.5  # peak extra bytes/item <= 1.5 x (tables*8 + 16)
TARGET_QUERY_US = 2.0  # median query() latency from Python, microseconds
TARGET_BATCH_QPS = 2_000_000.0
TARGET_ADD_UNIQUE_IPS = 5_000_000.0

STEP_NAMES = {"1": "build1m", "2": "build10m", "3": "query", "4": "batch", "5": "add_unique"}
UNAVAILABLE = (AttributeError, NotImplementedError)


class NotAvailable(Exception):
    """An Index operation this build does not have (yet)."""


def na_reason(e: BaseException) -> str:
    return f"{type(e).__name__}: {e}"[:100]


# --------------------------------------------------------------------------
# data


def random_fps(rng, n: int):
    import numpy as np

    return rng.integers(0, 2**64, size=n, dtype=np.uint64)


def flip_bits(rng, vals, nbits):
    """``vals`` with ``nbits[i]`` (0..3) distinct random bits flipped in item i."""
    import numpy as np

    mask = np.zeros(len(vals), dtype=np.uint64)
    for j in range(int(nbits.max(initial=0))):
        rows = np.flatnonzero(nbits > j)
        while len(rows):
            bit = np.left_shift(np.uint64(1), rng.integers(0, 64, size=len(rows)).astype(np.uint64))
            free = (mask[rows] & bit) == 0
            mask[rows[free]] |= bit[free]
            rows = rows[~free]
    return vals ^ mask


def query_mix(rng, stored, m: int, min_flips: int = 0):
    """m queries: half stored fingerprints with min_flips..3 bits flipped, half random, shuffled."""
    import numpy as np

    half = m // 2
    near = flip_bits(rng, stored[rng.integers(0, len(stored), size=half)], rng.integers(min_flips, 4, size=half))
    q = np.concatenate([near, random_fps(rng, m - half)])
    rng.shuffle(q)
    return q


def stream_mix(rng, n: int, dup_share: float = 0.1):
    """n fingerprints: random, except ~dup_share of them are copies of an
    earlier random one (uniformly chosen among those before it) with 0..3
    bits flipped.  Returns (array, number of near-duplicates)."""
    import numpy as np

    out = random_fps(rng, n)
    dup = rng.random(n) < dup_share
    dup[0] = False
    orig = np.flatnonzero(~dup)
    pos = np.flatnonzero(dup)
    before = np.searchsorted(orig, pos)  # originals before each duplicate (>= 1)
    src = orig[(rng.random(len(pos)) * before).astype(np.int64)]
    out[pos] = flip_bits(rng, out[src], rng.integers(0, 4, size=len(pos)))
    return out, len(pos)


# --------------------------------------------------------------------------
# a brute-force stand-in (hidden --fake flag): checks this script's plumbing
# while the real Index is missing; only for small sizes.


def _popcount(x):
    import numpy as np

    if hasattr(np, "bitwise_count"):
        return np.bitwise_count(x)
    b = x.view(np.uint8).reshape(x.shape + (8,))
    return np.unpackbits(b, axis=-1).sum(axis=-1)


class FakeIndex:
    design = "fake: brute force over one array (plumbing test only)"

    def __init__(self, k: int = 3, *, blocks=None, tables=None):
        import numpy as np

        self.k, self.tables = k, 1
        self._fp = np.zeros(0, dtype=np.uint64)
        self._id = np.zeros(0, dtype=np.uint64)

    def __len__(self):
        return len(self._fp)

    def __repr__(self):
        return f"FakeIndex(k={self.k}, items={len(self)})"

    def _next_ids(self, n):
        import numpy as np

        start = int(self._id.max()) + 1 if len(self._id) else 0
        return np.arange(start, start + n, dtype=np.uint64)

    def add(self, fps, ids=None):
        import numpy as np

        fps = np.atleast_1d(np.asarray(fps, dtype=np.uint64))
        ids = self._next_ids(len(fps)) if ids is None else np.asarray(ids, dtype=np.uint64)
        self._fp = np.concatenate([self._fp, fps])
        self._id = np.concatenate([self._id, ids])
        return ids

    def query(self, fp, k=None):
        import numpy as np

        k = self.k if k is None else k
        d = _popcount(self._fp ^ np.uint64(fp))
        hit = np.flatnonzero(d <= k)
        return sorted(((int(self._id[i]), int(d[i])) for i in hit), key=lambda t: (t[1], t[0]))

    def query_batch(self, fps, k=None):
        import numpy as np

        k = self.k if k is None else k
        qi, ids, dist = [], [], []
        for j, q in enumerate(np.asarray(fps, dtype=np.uint64)):
            d = _popcount(self._fp ^ q)
            hit = np.flatnonzero(d <= k)
            order = np.lexsort((self._id[hit], d[hit]))
            hit = hit[order]
            qi.append(np.full(len(hit), j, dtype=np.int64))
            ids.append(self._id[hit])
            dist.append(d[hit].astype(np.uint8))
        if not qi:
            return (np.zeros(0, np.int64), np.zeros(0, np.uint64), np.zeros(0, np.uint8))
        return np.concatenate(qi), np.concatenate(ids), np.concatenate(dist)

    def find_all(self, k=None):
        import numpy as np

        k = self.k if k is None else k
        pairs = []
        for i in range(len(self._fp) - 1):
            d = _popcount(self._fp[i + 1 :] ^ self._fp[i])
            j = np.flatnonzero(d <= k) + i + 1
            if len(j):
                a = np.full(len(j), self._id[i], dtype=np.uint64)
                b = self._id[j]
                pairs.append(np.stack([np.minimum(a, b), np.maximum(a, b)], axis=1))
        if not pairs:
            return np.zeros((0, 2), dtype=np.uint64)
        p = np.concatenate(pairs)
        return p[np.lexsort((p[:, 1], p[:, 0]))]

    def add_unique(self, fps, ids=None, k=None):
        import numpy as np

        k = self.k if k is None else k
        fps = np.asarray(fps, dtype=np.uint64)
        ids = self._next_ids(len(fps)) if ids is None else np.asarray(ids, dtype=np.uint64)
        is_new = np.zeros(len(fps), dtype=bool)
        matched = np.zeros(len(fps), dtype=np.uint64)
        new_fp = np.zeros(len(fps), dtype=np.uint64)
        new_id = np.zeros(len(fps), dtype=np.uint64)
        nn = 0
        for j, q in enumerate(fps):
            d = _popcount(self._fp ^ q)
            hit = np.flatnonzero(d <= k)
            if len(hit):
                matched[j] = self._id[hit[0]]
                continue
            d = _popcount(new_fp[:nn] ^ q)
            hit = np.flatnonzero(d <= k)
            if len(hit):
                matched[j] = new_id[hit[0]]
                continue
            is_new[j] = True
            new_fp[nn], new_id[nn] = q, ids[j]
            nn += 1
        self._fp = np.concatenate([self._fp, new_fp[:nn]])
        self._id = np.concatenate([self._id, new_id[:nn]])
        return is_new, matched


def index_class(fake: bool):
    if fake:
        return FakeIndex
    import rsimhash

    return rsimhash.Index  # AttributeError while the Index has not landed


def new_index(fake: bool, k: int = K):
    try:
        if os.environ.get("RSIMHASH_BENCH_RAW") and not fake:
            return index_class(fake)(k=k, compress=False)
        return index_class(fake)(k=k)
    except UNAVAILABLE as e:
        raise NotAvailable(na_reason(e)) from e


def call(obj, name: str, *a, **kw):
    """obj.name(*a, **kw); a missing or unimplemented operation -> NotAvailable."""
    try:
        fn = getattr(obj, name)
    except AttributeError as e:
        raise NotAvailable(na_reason(e)) from e
    try:
        return fn(*a, **kw)
    except NotImplementedError as e:
        raise NotAvailable(na_reason(e)) from e


def describe(idx) -> Dict[str, object]:
    out: Dict[str, object] = {}
    for attr in ("k", "tables", "blocks", "design", "nbytes"):
        try:
            v = getattr(idx, attr, None)
        except Exception:  # noqa: BLE001
            v = None
        if callable(v):
            try:
                v = v()
            except Exception:  # noqa: BLE001
                v = None
        if v is not None:
            out[attr] = v if isinstance(v, (int, float, str, bool)) else repr(v)
    try:
        out["repr"] = repr(idx)[:300]
    except Exception:  # noqa: BLE001
        pass
    return out


# --------------------------------------------------------------------------
# timing


class Span:
    """Times a block: wall seconds, this process's CPU seconds, other processes'
    CPU seconds (from /proc/stat); garbage collection off inside."""

    def __enter__(self):
        gc.disable()
        self.m0 = machine_busy_seconds()
        self.c0 = time.process_time()
        self.t0 = time.perf_counter()
        return self

    def __exit__(self, *exc):
        self.wall = time.perf_counter() - self.t0
        self.cpu = time.process_time() - self.c0
        self.other = max(0.0, machine_busy_seconds() - self.m0 - self.cpu)
        gc.enable()
        return False


@dataclass
class Row:
    key: str
    label: str
    kind: str  # "s", "us", "ns", "rate", "x", "B", "int"
    target: Optional[float] = None
    better: str = "lower"  # "lower": met if value <= target; "higher": met if value > target
    strict: bool = False  # "lower" with strict: value < target
    values: List[float] = field(default_factory=list)
    par: List[float] = field(default_factory=list)  # cpu/wall per round
    status: Optional[str] = None  # "n/a: why" or "error: why"
    median_override: Optional[float] = None  # e.g. a ratio of medians
    target_text: Optional[str] = None

    def median(self) -> Optional[float]:
        if self.median_override is not None:
            return self.median_override
        return statistics.median(self.values) if self.values else None

    def met(self) -> Optional[bool]:
        m = self.median()
        if m is None or self.target is None:
            return None
        if self.better == "higher":
            return m > self.target
        return m < self.target if self.strict else m <= self.target


def fmt(kind: str, v: Optional[float]) -> str:
    if v is None:
        return "-"
    if kind == "s":
        return f"{v:.3f} s" if v < 100 else f"{v:.0f} s"
    if kind == "us":
        return f"{v:.2f} us"
    if kind == "ns":
        return f"{v:.0f} ns"
    if kind == "rate":
        return f"{v / 1e6:.2f} M/s"
    if kind == "x":
        return f"{v:.3f} x"
    if kind == "B":
        return f"{v:.1f} B"
    if kind == "int":
        return f"{v:,.0f}"
    return f"{v:g}"


def target_text(r: Row) -> str:
    if r.target_text:
        return r.target_text
    if r.target is None:
        return ""
    op = ">" if r.better == "higher" else ("<" if r.strict else "<=")
    return f"{op} {fmt(r.kind, r.target)}"


class Report:
    def __init__(self):
        self.rows: Dict[str, Row] = {}
        self.other_cpu = 0.0
        self.wall = 0.0
        self.extra: Dict[str, object] = {}

    def row(self, key, label, kind, **kw) -> Row:
        r = self.rows.get(key)
        if r is None:
            r = self.rows[key] = Row(key, label, kind, **kw)
        return r

    def span(self, r: Row, s: Span, value: Optional[float] = None) -> None:
        r.values.append(s.wall if value is None else value)
        if s.wall > 0:
            r.par.append(s.cpu / s.wall)
        self.load(s.wall, s.other)

    def load(self, wall: float, other: float) -> None:
        self.wall += wall
        self.other_cpu += other

    def print_json(self, summary: Dict[str, object], foreign: float, machine: Dict[str, object], load_end: object) -> None:
        """Prints `summary` with every row's median (and target), the extras and the
        machine, as one `JSON {...}` line for scripts that compare runs."""
        for r in self.rows.values():
            if r.values:
                m = r.median()
                if r.kind == "int":
                    m = int(round(m))
                summary[r.key] = round(m, 4) if isinstance(m, float) else m
                if r.target is not None:
                    summary[r.key + "_target"] = round(r.target, 4)
                    summary[r.key + "_met"] = r.met()
            elif r.status:
                summary[r.key] = r.status
        summary.update(self.extra)
        summary["other_procs_cores"] = round(foreign, 2)
        summary.update({k: machine.get(k) for k in ("nproc", "cpu", "python", "rsimhash", "numpy", "loadavg")})
        summary["loadavg_end"] = load_end
        print("JSON " + json.dumps(summary, default=str))

    def na(self, keys, why: str) -> None:
        for k in keys:
            r = self.rows.get(k)
            if r is not None and r.status is None and not r.values:
                r.status = why


# --------------------------------------------------------------------------
# sanity (untimed; doubles as warm-up): the Index agrees with brute force on
# a small set with planted near-duplicates.


def sanity(fake: bool, seed: int) -> Dict[str, str]:
    import numpy as np

    rng = np.random.default_rng([seed, 0])
    base = random_fps(rng, 1500)
    fps = np.concatenate([base, flip_bits(rng, base[:500], rng.integers(0, 5, size=500))])
    rng.shuffle(fps)
    ref = FakeIndex(k=K)
    ref.add(fps)
    res: Dict[str, str] = {}

    def check(name, fn):
        try:
            fn()
            res[name] = "ok"
        except NotAvailable as e:
            res[name] = f"n/a ({e})"
        except Exception as e:  # noqa: BLE001
            res[name] = f"FAILED ({type(e).__name__}: {e})"[:200]

    holder = {}

    def build():
        idx = new_index(fake)
        ids = call(idx, "add", fps)
        assert np.array_equal(np.asarray(ids), np.arange(len(fps))), "add: default ids"
        assert len(idx) == len(fps), f"len {len(idx)} != {len(fps)}"
        holder["idx"] = idx

    check("add", build)
    idx = holder.get("idx")
    if idx is None:
        return res

    def fa():
        got = np.asarray(call(idx, "find_all"), dtype=np.uint64).reshape(-1, 2)
        want = ref.find_all()
        assert np.array_equal(got, want), f"find_all: {len(got)} pairs, brute force {len(want)}"

    def q():
        for x in list(fps[:50]) + list(random_fps(rng, 10)):
            got = [tuple(map(int, t)) for t in call(idx, "query", int(x))]
            want = ref.query(int(x))
            assert got == want, f"query({int(x)}): {got[:5]} != {want[:5]}"

    def qb():
        qs = query_mix(rng, fps, 200)
        got = call(idx, "query_batch", qs)
        want = ref.query_batch(qs)
        for g, w, name in zip(got, want, ("qi", "ids", "dist")):
            assert np.array_equal(np.asarray(g).astype(np.int64), w.astype(np.int64)), f"query_batch: {name} differ"

    def au():
        s, _ = stream_mix(rng, 1000, dup_share=0.3)
        u = new_index(fake)
        ids = np.arange(len(s), dtype=np.uint64)
        is_new, matched = call(u, "add_unique", s, ids)
        is_new = np.asarray(is_new, dtype=bool)
        r = FakeIndex(k=K)
        want_new, _ = r.add_unique(s, ids)
        assert np.array_equal(is_new, want_new), f"add_unique: {int(is_new.sum())} new, brute force {int(want_new.sum())}"
        for j in np.flatnonzero(~is_new):
            m = int(np.asarray(matched)[j])
            assert m < j and is_new[m] and int(_popcount(s[m] ^ s[j])) <= K, f"add_unique: item {j} matched {m}"

    check("find_all", fa)
    check("query", q)
    check("query_batch", qb)
    check("add_unique", au)
    return res


# --------------------------------------------------------------------------
# step 1: build + find_all at 1M vs np.sort


def step_build1m(rep: Report, args, n: int, repeats: int) -> None:
    import numpy as np

    r_sort = rep.row("sort", f"np.sort {n:,} uint64 (copy)", "s")
    r_build = rep.row("build1m_build", f"Index(k=3) + add, {n:,}", "s")
    r_fa = rep.row("build1m_find_all", f"find_all(), {n:,}", "s")
    r_tot = rep.row("build1m_total", f"build + find_all, {n:,}", "s")
    r_ratio = rep.row("build1m_ratio", "(build + find_all) / np.sort", "x", target=TARGET_BUILD_VS_SORT)
    fps = random_fps(np.random.default_rng([args.seed, 1]), n)
    np.sort(fps)  # warm-up
    have_fa = True
    ratios = []
    for rnd in range(repeats):
        with Span() as s:
            np.sort(fps)
        rep.span(r_sort, s)
        with Span() as b:
            idx = new_index(args.fake)
            call(idx, "add", fps)
        rep.span(r_build, b)
        msg = f"sort {s.wall:.3f} s, build {b.wall:.3f} s"
        if have_fa:
            try:
                with Span() as f:
                    pairs = call(idx, "find_all")
                rep.span(r_fa, f)
                r_tot.values.append(b.wall + f.wall)
                r_tot.par.append((b.cpu + f.cpu) / (b.wall + f.wall))
                ratios.append((b.wall + f.wall) / s.wall)
                msg += f", find_all {f.wall:.3f} s ({len(pairs)} pairs)"
                del pairs
            except NotAvailable as e:
                have_fa = False
                rep.na(["build1m_find_all", "build1m_total", "build1m_ratio"], f"n/a: {e}")
        del idx
        gc.collect()
        print(f"  [1] round {rnd + 1}/{repeats}: {msg}", flush=True)
    if ratios:
        r_ratio.values = ratios
        r_ratio.median_override = statistics.median(r_tot.values) / statistics.median(r_sort.values)
    del fps
    gc.collect()


# --------------------------------------------------------------------------
# step 2: build + find_all at 10M in a fresh subprocess, with peak memory


def proc_status() -> Dict[str, int]:
    out = {}
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith(("VmHWM:", "VmRSS:", "VmPeak:", "VmSize:")):
                    key, val = line.split(":", 1)
                    out[key] = int(val.split()[0]) * 1024
    except OSError:
        pass
    return out


def reset_hwm() -> bool:
    """Reset VmHWM to the current RSS (Linux >= 4.0; writing 5 to clear_refs)."""
    try:
        with open("/proc/self/clear_refs", "w", encoding="ascii") as f:
            f.write("5")
        return True
    except OSError:
        return False


def child_build10m(n: int, seed: int, fake: bool) -> Dict[str, object]:
    import numpy as np

    out: Dict[str, object] = {"n": n}
    try:
        import rsimhash  # noqa: F401  (its memory belongs in the baseline)
    except ImportError:
        pass
    try:
        w = new_index(fake)  # warm-up: load code, start any thread pool
        call(w, "add", random_fps(np.random.default_rng(1), 1000))
        try:
            call(w, "find_all")
        except NotAvailable:
            pass
        del w
    except NotAvailable as e:
        out["na"] = str(e)
        return out
    fps = random_fps(np.random.default_rng([seed, 2]), n)
    gc.collect()
    st0 = proc_status()
    out["hwm_reset"] = reset_hwm()
    st1 = proc_status()
    out["hwm_before_reset"] = st0.get("VmHWM")
    out["base_rss"] = st1.get("VmRSS")
    out["base_hwm"] = st1.get("VmHWM")
    m0 = machine_busy_seconds()
    with Span() as b:
        idx = new_index(fake)
        call(idx, "add", fps)
    out.update(build_s=b.wall, build_cpu=b.cpu, build_other=b.other)
    st_b = proc_status()
    out["hwm_after_build"] = st_b.get("VmHWM")
    out["rss_after_build"] = st_b.get("VmRSS")
    try:
        with Span() as f:
            pairs = call(idx, "find_all")
        out.update(find_all_s=f.wall, find_all_cpu=f.cpu, find_all_other=f.other, pairs=int(len(pairs)))
    except NotAvailable as e:
        out["find_all_na"] = str(e)
    st2 = proc_status()
    out["other_total"] = max(0.0, machine_busy_seconds() - m0 - b.cpu - out.get("find_all_cpu", 0.0))
    out["peak"] = st2.get("VmHWM")
    out["rss_end"] = st2.get("VmRSS")
    out["len"] = len(idx)
    out.update(describe(idx))
    return out


def step_build10m(rep: Report, args, n: int, repeats: int) -> None:
    r_build = rep.row("build10m_build", f"Index(k=3) + add, {n:,} (subprocess)", "s")
    r_fa = rep.row("build10m_find_all", f"find_all(), {n:,}", "s")
    r_tot = rep.row(
        "build10m_total",
        f"build + find_all, {n:,}",
        "s",
        target=TARGET_BUILD10M_S,
        target_text=f"<= {TARGET_BUILD10M_S:.3f} s on 2 cores",
    )
    r_peak = rep.row("build10m_peak_abs", "peak RSS (VmHWM), whole process", "int", target_text="(bytes)")
    r_extra = rep.row("build10m_peak_item", "peak - baseline, bytes per item", "B")
    r_steady = rep.row("build10m_steady_item", "RSS after find_all - baseline, B/item", "B")
    children = []
    for rnd in range(repeats):
        cmd = [sys.executable, os.path.abspath(__file__), "--_child", "build10m", "--_n", str(n), "--seed", str(args.seed)]
        if args.fake:
            cmd.append("--fake")
        t0 = time.perf_counter()
        p = subprocess.run(cmd, stdout=subprocess.PIPE, text=True)
        line = [ln for ln in p.stdout.splitlines() if ln.startswith("CHILD_JSON ")]
        if p.returncode != 0 or not line:
            raise RuntimeError(f"step 2 subprocess failed (exit {p.returncode}); stdout tail: {p.stdout[-500:]!r}")
        c = json.loads(line[-1][len("CHILD_JSON ") :])
        if "na" in c:
            rep.na([r.key for r in (r_build, r_fa, r_tot, r_peak, r_extra, r_steady)], f"n/a: {c['na']}")
            return
        children.append(c)
        rep.load(c["build_s"] + c.get("find_all_s", 0.0), c["other_total"])
        r_build.values.append(c["build_s"])
        r_build.par.append(c["build_cpu"] / c["build_s"])
        msg = f"build {c['build_s']:.3f} s"
        if "find_all_s" in c:
            r_fa.values.append(c["find_all_s"])
            r_fa.par.append(c["find_all_cpu"] / c["find_all_s"])
            tot = c["build_s"] + c["find_all_s"]
            r_tot.values.append(tot)
            r_tot.par.append((c["build_cpu"] + c["find_all_cpu"]) / tot)
            msg += f", find_all {c['find_all_s']:.3f} s ({c['pairs']} pairs)"
        else:
            rep.na([r_fa.key, r_tot.key], f"n/a: {c['find_all_na']}")
        if c.get("peak") and c.get("base_rss"):
            r_peak.values.append(c["peak"])
            r_extra.values.append((c["peak"] - c["base_rss"]) / n)
            r_steady.values.append((c["rss_end"] - c["base_rss"]) / n)
            msg += (
                f"; peak {c['peak'] / 2**20:.0f} MiB, baseline {c['base_rss'] / 2**20:.0f} MiB"
                f" -> {(c['peak'] - c['base_rss']) / n:.1f} B/item"
            )
        print(f"  [2] round {rnd + 1}/{repeats}: {msg} (subprocess {time.perf_counter() - t0:.1f} s)", flush=True)
    if not children:
        return
    c = children[-1]
    tables = c.get("tables")
    if isinstance(tables, int):
        r_extra.target = TARGET_MEM_FACTOR * (tables * 8 + 16)
        r_extra.target_text = f"<= {r_extra.target:.1f} B (1.5x({tables}x8+16))"
    else:
        r_extra.target_text = "n/a (no idx.tables)"
    if not c.get("hwm_reset"):
        print(
            "  [2] note: could not reset VmHWM (/proc/self/clear_refs); the baseline peak "
            f"before the build was {c.get('hwm_before_reset')} bytes",
            flush=True,
        )
    rep.extra["build10m_index"] = {k: c.get(k) for k in ("k", "tables", "blocks", "design", "repr") if c.get(k) is not None}
    if isinstance(c.get("nbytes"), (int, float)) and c.get("len"):
        # the index's own account of its size, for comparison with the RSS figures
        rep.extra["build10m_nbytes_per_item"] = round(c["nbytes"] / c["len"], 2)
    rep.extra["build10m_hwm_reset"] = c.get("hwm_reset")
    rep.extra["build10m_base_rss"] = c.get("base_rss")
    print(f"  [2] index: {rep.extra['build10m_index']}", flush=True)


# --------------------------------------------------------------------------
# steps 3 and 4: query latency and query_batch on one 10M index


def latency_loop(fn: Callable, qs: List[int]) -> List[int]:
    pc = time.perf_counter_ns
    out = [0] * len(qs)
    i = 0
    for x in qs:
        t0 = pc()
        fn(x)
        t1 = pc()
        out[i] = t1 - t0
        i += 1
    return out


def step_query(rep: Report, args, n: int, n_lat: int, n_batch: int, repeats: int, do_lat: bool, do_batch: bool) -> None:
    import numpy as np

    rng = np.random.default_rng([args.seed, 3])
    r_info = rep.row("query_index_build", f"(build of the {n:,}-item query index)", "s")
    keys = []
    if do_lat:
        r_med = rep.row(
            "query_median", f"query() median of {n_lat:,} calls, {n:,} items", "us", target=TARGET_QUERY_US, strict=True
        )
        r_p99 = rep.row("query_p99", "query() p99", "us")
        r_ovh = rep.row("query_overhead", "timer + call overhead (id(x)), subtracted", "ns")
        keys += [r_med.key, r_p99.key, r_ovh.key]
    if do_batch:
        r_qps = rep.row(
            "batch_qps", f"query_batch({n_batch:,} queries), {n:,} items", "rate", target=TARGET_BATCH_QPS, better="higher"
        )
        r_bt = rep.row("batch_s", "query_batch wall time", "s")
        keys += [r_qps.key, r_bt.key]
    stored = random_fps(rng, n)
    try:
        with Span() as b:
            idx = new_index(args.fake)
            call(idx, "add", stored)
        rep.span(r_info, b)
    except NotAvailable as e:
        rep.na(keys + [r_info.key], f"n/a: {e}")
        return
    print(f"  [3,4] built {len(idx):,}-item index in {b.wall:.3f} s; {describe(idx)}", flush=True)
    qs_lat = query_mix(rng, stored, n_lat).tolist() if do_lat else []
    qs_batch = query_mix(rng, stored, n_batch) if do_batch else None
    del stored
    gc.collect()
    try:
        q = idx.query
        q(qs_lat[0] if qs_lat else 0)
    except UNAVAILABLE as e:
        if do_lat:
            rep.na(keys[:3], f"n/a: {na_reason(e)}")
        do_lat = False
    hits = None
    for rnd in range(repeats):
        msg = []
        if do_lat:
            gc.collect()
            gc.disable()
            m0, t0 = machine_busy_seconds(), time.perf_counter()
            c0 = time.process_time()
            ovh = latency_loop(id, qs_lat)
            lat = latency_loop(q, qs_lat)
            wall, cpu = time.perf_counter() - t0, time.process_time() - c0
            gc.enable()
            rep.load(wall, max(0.0, machine_busy_seconds() - m0 - cpu))
            o = float(np.median(ovh))
            lat_ns = np.asarray(lat, dtype=np.float64) - o
            med, p99 = float(np.median(lat_ns)) / 1e3, float(np.percentile(lat_ns, 99)) / 1e3
            r_med.values.append(med)
            r_p99.values.append(p99)
            r_ovh.values.append(o)
            if hits is None:
                hits = sum(len(q(x)) for x in qs_lat)
            msg.append(f"query median {med:.2f} us, p99 {p99:.2f} us (overhead {o:.0f} ns)")
        if do_batch:
            try:
                with Span() as s:
                    res = call(idx, "query_batch", qs_batch)
                rep.span(r_qps, s, value=len(qs_batch) / s.wall)
                r_bt.values.append(s.wall)
                msg.append(f"query_batch {len(qs_batch) / s.wall / 1e6:.2f} M/s ({len(res[0]):,} matches)")
                rep.extra["batch_matches"] = int(len(res[0]))
                del res
            except NotAvailable as e:
                rep.na(keys[-2:], f"n/a: {e}")
                do_batch = False
        if msg:
            print(f"  [3,4] round {rnd + 1}/{repeats}: " + "; ".join(msg), flush=True)
    if hits is not None:
        rep.extra["query_mean_hits"] = round(hits / len(qs_lat), 3)
    del idx
    gc.collect()


# --------------------------------------------------------------------------
# step 5: add_unique streaming


def step_add_unique(rep: Report, args, n: int, batch: int, repeats: int) -> None:
    import numpy as np

    r_ips = rep.row(
        "add_unique_ips", f"add_unique {n:,} in batches of {batch:,}", "rate", target=TARGET_ADD_UNIQUE_IPS, better="higher"
    )
    r_t = rep.row("add_unique_s", "add_unique wall time", "s")
    r_new = rep.row("add_unique_new", "items reported new", "int")
    stream, ndup = stream_mix(np.random.default_rng([args.seed, 5]), n)
    print(f"  [5] stream: {n:,} fingerprints, {ndup:,} near-duplicates of earlier ones (0..3 bits flipped)", flush=True)
    for rnd in range(repeats):
        flags = []
        try:
            idx = new_index(args.fake)
            with Span() as s:
                for i in range(0, n, batch):
                    is_new, _ = call(idx, "add_unique", stream[i : i + batch])
                    flags.append(is_new)
        except NotAvailable as e:
            rep.na([r_ips.key, r_t.key, r_new.key], f"n/a: {e}")
            return
        rep.span(r_ips, s, value=n / s.wall)
        r_t.values.append(s.wall)
        new = int(sum(int(np.count_nonzero(f)) for f in flags))
        r_new.values.append(new)
        print(
            f"  [5] round {rnd + 1}/{repeats}: {n / s.wall / 1e6:.2f} M items/s, "
            f"{s.wall:.3f} s; {new:,} new, len(idx) {len(idx):,}",
            flush=True,
        )
        del idx, flags
        gc.collect()
    rep.extra["add_unique_near_dups"] = ndup
    del stream
    gc.collect()


# --------------------------------------------------------------------------


def parse_only(spec: Optional[str]) -> List[str]:
    if not spec:
        return list(STEP_NAMES.values())
    out = []
    for part in spec.split(","):
        part = part.strip()
        name = STEP_NAMES.get(part, part)
        if name not in STEP_NAMES.values():
            raise SystemExit(f"--only: unknown step {part!r}; use 1-5 or " + ", ".join(STEP_NAMES.values()))
        out.append(name)
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="1/10 sizes, fewer rounds (smoke test)")
    ap.add_argument("--repeats", type=int, default=None, help="rounds per step (default 5; --quick: 3 and 2)")
    ap.add_argument("--only", default=None, help="comma-separated steps: 1 build1m, 2 build10m, 3 query, 4 batch, 5 add_unique")
    ap.add_argument("--seed", type=int, default=0, help="data seed")
    ap.add_argument("--batch", type=int, default=100_000, help="add_unique batch size")
    ap.add_argument("--raw", action="store_true", help="Index(compress=False) instead of the default compressed tables")
    ap.add_argument("--scale", type=float, default=None, help=argparse.SUPPRESS)
    ap.add_argument("--fake", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--_child", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--_n", type=int, default=0, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.raw:
        os.environ["RSIMHASH_BENCH_RAW"] = "1"  # the step subprocesses inherit it

    if args._child == "build10m":
        print("CHILD_JSON " + json.dumps(child_build10m(args._n, args.seed, args.fake)), flush=True)
        return 0

    scale = args.scale if args.scale is not None else (0.001 if args.fake else (0.1 if args.quick else 1.0))
    rep1 = args.repeats or (3 if args.quick else 5)
    # Five rounds at 10M too: the first process to touch a few GB on a fresh
    # VM pays for the host backing its pages (2x slower here); the median of
    # five is not that outlier.
    rep10 = args.repeats or (2 if args.quick else 5)
    if rep1 < 1 or rep10 < 1:
        ap.error("--repeats must be >= 1")
    n1 = max(10, int(1_000_000 * scale))
    n10 = max(10, int(10_000_000 * scale))
    n_lat = max(100, int(20_000 * min(1.0, scale * 10)))
    n_batch = max(10, int(1_000_000 * scale))
    batch = max(1, min(args.batch, n10))
    steps = parse_only(args.only)

    import numpy as np

    try:
        import rsimhash
    except ImportError:
        rsimhash = None
    info = machine_info(rsimhash, np) if rsimhash is not None else {}
    print(
        f"machine: nproc={info.get('nproc')} (cpu_count {info.get('cpu_count')}), "
        f"cpu: {info.get('cpu')}, loadavg {info.get('loadavg')}"
    )
    print(f"python {info.get('python')}, rsimhash {info.get('rsimhash')}, numpy {info.get('numpy')}, {info.get('platform')}")
    if args.fake:
        print("*** --fake: a brute-force stand-in replaces rsimhash.Index (plumbing test; figures mean nothing) ***")
    print(
        f"sizes: step1 {n1:,}; steps 2-5 {n10:,}; query calls {n_lat:,}; query_batch "
        f"{n_batch:,}; add_unique batch {batch:,}; rounds {rep1} (step 1), {rep10} (others); "
        f"seed {args.seed}; k={K}"
    )

    san = sanity(args.fake, args.seed)
    print("sanity vs brute force (2,000 items): " + ", ".join(f"{k} {v}" for k, v in san.items()), flush=True)
    if any(v.startswith("FAILED") for v in san.values()):
        print("*** WARNING: the Index disagrees with brute force; timings below are of a wrong implementation ***", flush=True)

    rep = Report()
    t_start = time.perf_counter()

    def run(name, fn, *a, keys=()):
        t0 = time.perf_counter()
        try:
            fn(rep, args, *a)
        except NotAvailable as e:
            rep.na([k for k in rep.rows if k.startswith(keys)], f"n/a: {e}")
            print(f"  [{name}] n/a: {e}", flush=True)
        except Exception as e:  # noqa: BLE001
            traceback.print_exc()
            for r in rep.rows.values():
                if r.key.startswith(keys) and r.status is None and not r.values:
                    r.status = f"error: {type(e).__name__}"
            print(f"  [{name}] ERROR: {type(e).__name__}: {e}", flush=True)
        gc.collect()
        print(f"  [{name}] done in {time.perf_counter() - t0:.1f} s", flush=True)

    if "build1m" in steps:
        run("1", step_build1m, n1, rep1, keys=("build1m", "sort"))
    if "build10m" in steps:
        run("2", step_build10m, n10, rep10, keys=("build10m",))
    if "query" in steps or "batch" in steps:
        run("3,4", step_query, n10, n_lat, n_batch, rep10, "query" in steps, "batch" in steps, keys=("query", "batch"))
    if "add_unique" in steps:
        run("5", step_add_unique, n10, batch, rep10, keys=("add_unique",))

    print()
    print(f"{'measurement':52s} {'median':>13s} {'min..max':>23s} {'target':>24s} {'result':>7s} {'cpu/wall':>8s}")
    last_status = None
    for r in rep.rows.values():
        tt = target_text(r)
        if r.status is not None and not r.values:
            why = r.status if r.status != last_status else '"'
            last_status = r.status
            print(
                f"{r.label:52s} {'n/a' if r.status.startswith('n/a') else 'error':>13s} "
                f"{'':>23s} {tt:>24s} {'':>7s} {'':>8s}   {why}"
            )
            continue
        last_status = None
        if not r.values:
            continue
        med = r.median()
        rng_txt = f"{fmt(r.kind, min(r.values))}..{fmt(r.kind, max(r.values))}"
        met = r.met()
        res = "" if met is None else ("met" if met else "MISSED")
        par = f"{statistics.median(r.par):8.2f}" if r.par else ""
        print(f"{r.label:52s} {fmt(r.kind, med):>13s} {rng_txt:>23s} {tt:>24s} {res:>7s} {par:>8s}")
    foreign = rep.other_cpu / rep.wall if rep.wall else 0.0
    try:
        load_end = [round(x, 2) for x in os.getloadavg()]
    except OSError:
        load_end = None
    print(
        f"other processes used {foreign:.2f} of {info.get('nproc')} cores on average while "
        f"timing (loadavg at end {load_end}); cpu/wall = this process's CPU seconds per second; "
        f"total {time.perf_counter() - t_start:.0f} s"
    )
    for k, v in rep.extra.items():
        print(f"  {k}: {v}")

    summary: Dict[str, object] = {
        "bench": "index",
        "fake": args.fake,
        "seed": args.seed,
        "scale": scale,
        "n_build1m": n1,
        "n_10m": n10,
        "n_query_calls": n_lat,
        "n_query_batch": n_batch,
        "add_unique_batch": batch,
        "repeats": [rep1, rep10],
        "sanity": san,
    }
    rep.print_json(summary, foreign, info, load_end)
    return 0


if __name__ == "__main__":
    sys.exit(main())
