#!/usr/bin/env python3
"""Compressed tables and index files: size, speed against raw tables, load time.

For each N in ``--sizes`` (default 1,000,000 and 10,000,000), on N random
64-bit fingerprints from ``numpy.random.default_rng([seed, 1, N])``, one
``Index(k=3)`` with compressed tables (the default) and one with raw ``u64``
tables (``compress=False``) are built once, untimed, and kept side by side:

1. size: ``info()["table_bytes_per_item_per_table"]`` of both (deterministic,
   measured once); targets 6.1 B at 1M and 5.7 B at 10M (compressed).  Both
   indexes are saved (``save`` always packs tables, so the two files should
   be the same size); file bytes per item, target at 1M
   ``tables x 6.3 + 17`` with ``tables`` from ``info()``.
2. ``query``: ``--queries`` (100,000) single calls from Python, each timed
   alone, the timer overhead subtracted; queries are half stored fingerprints
   with 1..3 bits flipped, half random.  Target: compressed median <= 1.5 x
   raw.
3. ``find_all()`` on the built index.  Target: compressed <= 1.5 x raw.
4. ``query_batch`` of ``--batch`` (1,000,000) random queries: queries/s.
5. ``Index.load(path, mmap=True)`` and ``mmap=False`` of both saved files,
   each load in a fresh subprocess (nothing cached in the process; the files
   were just written, so the page cache is probably warm).  Target:
   compressed file, ``mmap=True``, under 1 s at 10M.  The child's RSS growth
   during the load is shown too (in MiB: at small N fixed costs dominate).

Steps 2-4 run in ``--rounds`` rounds (default 5); in each round every
measurement is taken for both indexes back to back, the order alternating
between rounds.  Tables show the median over rounds; ratios are
compressed / raw of the medians, min..max the per-round ratios.  Index files
go to a temporary directory (``--tmpdir``), about 75 bytes per item at 10M.

Usage::

    python benches/bench_files.py                          # 1M and 10M, 5 rounds
    python benches/bench_files.py --sizes 100000 --rounds 1  # smoke test
    python benches/bench_files.py --sizes 1M --rounds 7 --seed 1
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Dict, List

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from bench_fingerprint import machine_busy_seconds, machine_info  # noqa: E402
from bench_index import (  # noqa: E402
    K,
    Report,
    Span,
    fmt,
    latency_loop,
    proc_status,
    query_mix,
    random_fps,
    target_text,
)

TARGET_TABLE_BYTES = {1_000_000: 6.1, 10_000_000: 5.7}  # compressed, B per item per table
TARGET_FILE_N = 1_000_000  # the file-size target is set at this N
TARGET_FILE_PER_TABLE = 6.3  # file bytes per item <= tables x 6.3 + 17
TARGET_FILE_FIXED = 17.0
TARGET_SLOWDOWN = 1.5  # compressed time <= 1.5 x raw time (query, find_all)
TARGET_LOAD_N = 10_000_000  # the load target is set at this N
TARGET_LOAD_S = 1.0  # load(mmap=True) of the compressed file, under 1 s

VARIANTS = (("compressed", True), ("raw", False))
LOADS = [(v, m) for v, _ in VARIANTS for m in (True, False)]


# --------------------------------------------------------------------------
# data and checks


def agree(idx: Dict[str, object], qs) -> str:
    """Compressed and raw give the same answers (untimed; doubles as warm-up)."""
    import numpy as np

    c, r = idx["compressed"], idx["raw"]
    try:
        fc, fr = c.find_all(), r.find_all()
        assert np.array_equal(fc, fr), f"find_all: {len(fc)} pairs vs {len(fr)}"
        for a, b, name in zip(c.query_batch(qs), r.query_batch(qs), ("qi", "ids", "dist")):
            assert np.array_equal(a, b), f"query_batch: {name} differ"
        for x in qs[:200].tolist():
            assert c.query(x) == r.query(x), f"query({x}) differs"
        return "ok"
    except Exception as e:  # noqa: BLE001
        return f"FAILED ({type(e).__name__}: {e})"[:200]


def parse_sizes(spec: str) -> List[int]:
    out = []
    for part in spec.split(","):
        s = part.strip().replace("_", "").lower()
        mult = {"k": 1_000, "m": 1_000_000}.get(s[-1:], 1)
        try:
            n = int(s[:-1] if mult > 1 else s) * mult
        except ValueError:
            raise SystemExit(f"--sizes: not a size: {part!r} (e.g. 100000, 1M, 10_000_000)") from None
        if n < 1000:
            raise SystemExit(f"--sizes: {n} is below 1000")
        out.append(n)
    return out


# --------------------------------------------------------------------------
# step 5 in a fresh interpreter: this script with a hidden flag


def child_load(path: str, mmap: bool) -> Dict[str, object]:
    import rsimhash

    gc.collect()
    rss0 = proc_status().get("VmRSS")
    with Span() as s:
        idx = rsimhash.Index.load(path, mmap=mmap)
    rss1 = proc_status().get("VmRSS")
    return {
        "load_s": s.wall,
        "cpu": s.cpu,
        "other": s.other,
        "rss_before": rss0,
        "rss_after": rss1,
        "items": len(idx),
        "compressed": idx.compressed,
    }


def run_child(path: str, mmap: bool) -> Dict[str, object]:
    cmd = [sys.executable, os.path.abspath(__file__), "--_child", "load", "--_path", path, "--_mmap", "1" if mmap else "0"]
    p = subprocess.run(cmd, stdout=subprocess.PIPE, text=True)
    line = [ln for ln in p.stdout.splitlines() if ln.startswith("CHILD_JSON ")]
    if p.returncode != 0 or not line:
        raise RuntimeError(f"load subprocess failed (exit {p.returncode}); stdout tail: {p.stdout[-500:]!r}")
    return json.loads(line[-1][len("CHILD_JSON ") :])


# --------------------------------------------------------------------------
# one size: build, sizes, interleaved rounds, loads


def bench_size(rep: Report, args, n: int, tmp: str) -> Dict[str, object]:
    import numpy as np

    import rsimhash

    tag = f"[N={n:,}]"
    key = f"{n}:"
    info: Dict[str, object] = {"n": n}
    fps = random_fps(np.random.default_rng([args.seed, 1, n]), n)

    idx: Dict[str, object] = {}
    for name, compress in VARIANTS:
        with Span() as b:
            idx[name] = rsimhash.Index(k=K, compress=compress)
            idx[name].add(fps)
        rep.span(rep.row(key + f"build_{name}", f"(build, {name}; one run)", "s"), b)
    inf = {name: idx[name].info() for name, _ in VARIANTS}
    tables = inf["compressed"]["tables"]
    info["design"] = inf["compressed"]["design"]
    if inf["raw"]["design"] != info["design"]:
        info["design_raw"] = inf["raw"]["design"]
    print(
        f"  {tag} built; design: {info['design']}; build compressed "
        f"{rep.rows[key + 'build_compressed'].values[0]:.3f} s, raw "
        f"{rep.rows[key + 'build_raw'].values[0]:.3f} s",
        flush=True,
    )

    # 1. sizes
    rep.row(
        key + "table_memory_compressed",
        "table bytes / item / table in memory, compressed",
        "B",
        values=[inf["compressed"]["table_bytes_per_item_per_table"]],
    )
    rep.row(
        key + "table_memory_raw",
        "table bytes / item / table in memory, raw",
        "B",
        values=[inf["raw"]["table_bytes_per_item_per_table"]],
    )
    paths = {}
    for name, _ in VARIANTS:
        paths[name] = os.path.join(tmp, f"{n}-{name}.rsi")
        with Span() as s:
            idx[name].save(paths[name])
        rep.span(rep.row(key + f"save_{name}", f"(save, {name} index; one run)", "s"), s)
    ft = tables * TARGET_FILE_PER_TABLE + TARGET_FILE_FIXED
    for name, _ in VARIANTS:
        size = os.path.getsize(paths[name])
        info[f"file_bytes_{name}"] = size
        on = name == "compressed" and n == TARGET_FILE_N
        label = (
            "file bytes / item, compressed index saved"
            if name == "compressed"
            else "file bytes / item, raw index (packed when saved)"
        )
        rep.row(
            key + f"file_{name}",
            label,
            "B",
            target=ft if on else None,
            target_text=(f"<= {ft:.1f} B ({tables}x6.3+17)" if on else ("" if name == "raw" else "(target at 1M)")),
            values=[size / n],
        )
    # The tables' part of the file: all of it but the ids (8 bytes an item)
    # and a few hundred bytes of header and section table.
    t = TARGET_TABLE_BYTES.get(n)
    rep.row(
        key + "table_compressed",
        "table bytes / item / table in the file (size - ids)",
        "B",
        target=t,
        target_text=None if t else "(targets at 1M, 10M)",
        values=[(info["file_bytes_compressed"] - 8 * n) / (tables * n)],
    )
    print(
        f"  {tag} table bytes/item/table: compressed "
        f"{inf['compressed']['table_bytes_per_item_per_table']:.3f}, raw "
        f"{inf['raw']['table_bytes_per_item_per_table']:.3f}; files: "
        + ", ".join(f"{name} {info[f'file_bytes_{name}'] / 2**20:.1f} MiB" for name, _ in VARIANTS),
        flush=True,
    )

    # sanity + warm-up, then the queries of steps 2 and 4
    qrng = np.random.default_rng([args.seed, 2, n])
    info["agree"] = agree(idx, query_mix(qrng, fps, 2000, min_flips=1))
    print(f"  {tag} compressed vs raw answers (find_all, query_batch, query): {info['agree']}", flush=True)
    if info["agree"] != "ok":
        print(
            f"*** WARNING {tag}: compressed and raw tables disagree; the timings below compare different answers ***", flush=True
        )
    qs_lat = query_mix(qrng, fps, args.queries, min_flips=1).tolist()
    qs_batch = random_fps(np.random.default_rng([args.seed, 3, n]), args.batch)
    del fps
    gc.collect()

    # 2-4. interleaved rounds
    r_q = {v: rep.row(key + f"query_{v}", f"query() median, {v} ({args.queries:,} calls)", "us") for v, _ in VARIANTS}
    r_p99 = {v: rep.row(key + f"query_p99_{v}", f"query() p99, {v}", "us") for v, _ in VARIANTS}
    r_qx = rep.row(key + "query_ratio", "query() compressed / raw", "x", target=TARGET_SLOWDOWN)
    r_ovh = rep.row(key + "query_overhead", "timer + call overhead (id(x)), subtracted", "ns")
    r_fa = {v: rep.row(key + f"find_all_{v}", f"find_all(), {v}", "s") for v, _ in VARIANTS}
    r_fx = rep.row(key + "find_all_ratio", "find_all() compressed / raw", "x", target=TARGET_SLOWDOWN)
    r_b = {
        v: rep.row(key + f"batch_{v}", f"query_batch({args.batch:,} random), {v}", "rate", better="higher") for v, _ in VARIANTS
    }
    r_bx = rep.row(key + "batch_ratio", "query_batch time compressed / raw", "x")
    for rnd in range(args.rounds):
        order = [v for v, _ in VARIANTS]
        if rnd % 2:
            order.reverse()
        msg = []
        lat = {}
        for v in order:
            q = idx[v].query
            gc.collect()
            gc.disable()
            m0, t0, c0 = machine_busy_seconds(), time.perf_counter(), time.process_time()
            ovh = latency_loop(id, qs_lat)
            ns = latency_loop(q, qs_lat)
            wall, cpu = time.perf_counter() - t0, time.process_time() - c0
            gc.enable()
            rep.load(wall, max(0.0, machine_busy_seconds() - m0 - cpu))
            o = float(np.median(ovh))
            ns = np.asarray(ns, dtype=np.float64) - o
            lat[v] = float(np.median(ns)) / 1e3
            r_q[v].values.append(lat[v])
            r_p99[v].values.append(float(np.percentile(ns, 99)) / 1e3)
            r_ovh.values.append(o)
        r_qx.values.append(lat["compressed"] / lat["raw"])
        msg.append("query " + " / ".join(f"{lat[v]:.2f}" for v, _ in VARIANTS) + " us")
        fa = {}
        for v in order:
            gc.collect()
            with Span() as s:
                pairs = idx[v].find_all()
            rep.span(r_fa[v], s)
            fa[v] = s.wall
            info["pairs"] = int(len(pairs))
            del pairs
        r_fx.values.append(fa["compressed"] / fa["raw"])
        msg.append("find_all " + " / ".join(f"{fa[v]:.4f}" for v, _ in VARIANTS) + " s")
        bt = {}
        for v in order:
            gc.collect()
            with Span() as s:
                res = idx[v].query_batch(qs_batch)
            rep.span(r_b[v], s, value=len(qs_batch) / s.wall)
            bt[v] = s.wall
            info["batch_matches"] = int(len(res[0]))
            del res
        r_bx.values.append(bt["compressed"] / bt["raw"])
        msg.append("query_batch " + " / ".join(f"{len(qs_batch) / bt[v] / 1e6:.2f}" for v, _ in VARIANTS) + " M/s")
        print(f"  {tag} round {rnd + 1}/{args.rounds} (compressed / raw, {order[0]} first): " + "; ".join(msg), flush=True)
    for r, rows in ((r_qx, r_q), (r_fx, r_fa)):
        r.median_override = statistics.median(rows["compressed"].values) / statistics.median(rows["raw"].values)
    r_bx.median_override = statistics.median(r_b["raw"].values) / statistics.median(r_b["compressed"].values)
    del idx, qs_lat, qs_batch
    gc.collect()

    # 5. loads, each in a fresh interpreter
    r_ld, r_rss = {}, {}
    for v, m in LOADS:
        on = v == "compressed" and m and n == TARGET_LOAD_N
        r_ld[v, m] = rep.row(
            key + f"load_{v}_{'mmap' if m else 'read'}",
            f"load(mmap={m}), {v} index file (subprocess)",
            "s",
            target=TARGET_LOAD_S if on else None,
            strict=True,
            target_text=None if on else ("(target at 10M)" if v == "compressed" and m else ""),
        )
        r_rss[v, m] = rep.row(
            key + f"load_rss_{v}_{'mmap' if m else 'read'}", "  RSS growth during load, MiB (fixed costs too)", "MiB"
        )
    for rnd in range(args.rounds):
        order = LOADS if rnd % 2 == 0 else LOADS[::-1]
        msg = []
        for v, m in order:
            c = run_child(paths[v], m)
            if c["items"] != n or c["compressed"] != (v == "compressed"):
                raise RuntimeError(f"load of {paths[v]}: {c['items']} items, compressed {c['compressed']}; expected {n}, {v}")
            r_ld[v, m].values.append(c["load_s"])
            if c["load_s"] > 0:
                r_ld[v, m].par.append(c["cpu"] / c["load_s"])
            rep.load(c["load_s"], c["other"])
            if c.get("rss_before") and c.get("rss_after"):
                r_rss[v, m].values.append(round((c["rss_after"] - c["rss_before"]) / 2**20, 1))
            msg.append(f"{v} mmap={m} {c['load_s']:.4f} s")
        print(f"  {tag} load round {rnd + 1}/{args.rounds}: " + ", ".join(msg), flush=True)
    return info


# --------------------------------------------------------------------------


def print_table(rep: Report, sizes: List[int], infos: Dict[int, Dict[str, object]]) -> None:
    print()
    print(f"{'measurement':52s} {'median':>13s} {'min..max':>23s} {'target':>26s} {'result':>7s} {'cpu/wall':>8s}")
    for n in sizes:
        rows = [r for r in rep.rows.values() if r.key.startswith(f"{n}:")]
        if not rows:
            continue
        inf = infos.get(n, {})
        print(
            f"--- N = {n:,}; design: {inf.get('design', '?')}" + (f" (raw: {inf['design_raw']})" if inf.get("design_raw") else "")
        )
        for r in rows:
            if not r.values:
                print(f"{r.label:52s} {r.status or 'error':>13s}")
                continue
            rng_txt = "" if len(r.values) < 2 else f"{fmt(r.kind, min(r.values))}..{fmt(r.kind, max(r.values))}"
            met = r.met()
            res = "" if met is None else ("met" if met else "MISSED")
            par = f"{statistics.median(r.par):8.2f}" if r.par else ""
            print(f"{r.label:52s} {fmt(r.kind, r.median()):>13s} {rng_txt:>23s} {target_text(r):>26s} {res:>7s} {par:>8s}")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--sizes", default="1000000,10000000", help="comma-separated item counts (default 1000000,10000000; 1M, 100k work)"
    )
    ap.add_argument("--rounds", type=int, default=5, help="rounds of steps 2-5 (default 5)")
    ap.add_argument("--queries", type=int, default=100_000, help="single query() calls per round and variant (default 100000)")
    ap.add_argument("--batch", type=int, default=1_000_000, help="random queries per query_batch call (default 1000000)")
    ap.add_argument("--seed", type=int, default=0, help="data seed")
    ap.add_argument("--tmpdir", default=None, help="where the temporary directory for index files goes (default: $TMPDIR)")
    ap.add_argument("--_child", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--_path", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--_mmap", type=int, default=1, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)

    if args._child == "load":
        print("CHILD_JSON " + json.dumps(child_load(args._path, bool(args._mmap))), flush=True)
        return 0
    if args.rounds < 1 or args.queries < 2 or args.batch < 1:
        ap.error("--rounds and --batch must be >= 1, --queries >= 2")
    sizes = parse_sizes(args.sizes)

    import numpy as np

    import rsimhash

    mi = machine_info(rsimhash, np)
    print(
        f"machine: nproc={mi.get('nproc')} (cpu_count {mi.get('cpu_count')}), cpu: {mi.get('cpu')}, loadavg {mi.get('loadavg')}"
    )
    print(f"python {mi.get('python')}, rsimhash {mi.get('rsimhash')}, numpy {mi.get('numpy')}, {mi.get('platform')}")
    print(
        f"sizes {', '.join(f'{n:,}' for n in sizes)}; rounds {args.rounds}; query calls "
        f"{args.queries:,}; query_batch {args.batch:,}; seed {args.seed}; k={K}",
        flush=True,
    )

    rep = Report()
    infos: Dict[int, Dict[str, object]] = {}
    t_start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="bench_files-", dir=args.tmpdir) as tmp:
        print(f"index files under {tmp}", flush=True)
        for n in sizes:
            t0 = time.perf_counter()
            infos[n] = bench_size(rep, args, n, tmp)
            gc.collect()
            print(f"  [N={n:,}] done in {time.perf_counter() - t0:.1f} s", flush=True)

    print_table(rep, sizes, infos)
    foreign = rep.other_cpu / rep.wall if rep.wall else 0.0
    try:
        load_end = [round(x, 2) for x in os.getloadavg()]
    except OSError:
        load_end = None
    print(
        "ratios: compressed / raw of the medians (query_batch: raw rate / compressed rate); "
        "min..max are the per-round ratios. query() times have the timer overhead "
        "subtracted."
    )
    print(
        "loads: each in a fresh Python process (rsimhash imported, then Index.load timed); "
        "the files were written just before by this process, so the page cache was "
        "probably WARM: the load times do not include reading the file from disk."
    )
    print(
        f"other processes used {foreign:.2f} of {mi.get('nproc')} cores on average while "
        f"timing (loadavg at end {load_end}); cpu/wall = CPU seconds per wall second of the "
        f"timed process; total {time.perf_counter() - t_start:.0f} s"
    )
    for n in sizes:
        extra = {k: v for k, v in infos.get(n, {}).items() if k not in ("n", "design")}
        print(f"  N={n:,}: {extra}")

    summary: Dict[str, object] = {
        "bench": "files",
        "seed": args.seed,
        "sizes": sizes,
        "rounds": args.rounds,
        "n_query_calls": args.queries,
        "n_query_batch": args.batch,
        "page_cache": "warm",
    }
    for n in sizes:
        for k, v in infos.get(n, {}).items():
            if k != "n":
                summary[f"{n}:{k}"] = v
    rep.print_json(summary, foreign, mi, load_end)
    return 0


if __name__ == "__main__":
    sys.exit(main())
