#!/usr/bin/env python3
"""A new batch against a store, beside the job on the concatenation (issues 27, 42).

The store: ``--stored`` random fingerprints (default 10^7 and 10^8, one
store each: the 10x and the 100x case) in a directory of
``.npy`` shards outside the repository (``--dir``, default
``/work/tmp/rsimhash-incremental`` or the system's temporary directory),
written once with a seed and reused by later runs. The new batch:
``--new`` fingerprints (default 10^6): 5 % within 0 to 3 bits of a stored
one, 5 % copies of other new ones, 2 % within 1 to 3 bits of other new
ones, the rest random.

Each run is a fresh process (its inputs on disk before the clock starts)
that reports its wall time, its CPU seconds (``getrusage``, all threads)
and its own peak RSS (``VmHWM``): ``batch.dedup(new, against=store)``
beside ``batch.dedup`` of the store's shards followed by the new batch, and
``batch.find_all(new, against=store)`` beside ``batch.find_all`` of the
same concatenation; rounds interleaved (the order turned each round),
medians taken. The keep masks among the new items must be equal (the store
is random, so no two stored fingerprints are within k and the two agree
exactly), and the pairs between the store and the new batch too.
Targets (issue 42): at most 0.3x the concatenation's time at 10x, 0.1x at
100x.

    python benches/bench_incremental.py                          # 10^6 against 10^7 and 10^8, 3 rounds
    python benches/bench_incremental.py --stored 10000000 --rounds 5
    python benches/bench_incremental.py --jobs dedup             # dedup only
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Any, Dict, List

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_fingerprint import cpu_model  # noqa: E402

SHARD = 10_000_000


def default_dir() -> str:
    base = "/work/tmp" if os.path.isdir("/work/tmp") else tempfile.gettempdir()
    return os.path.join(base, "rsimhash-incremental")


def make_data(directory: str, stored: int, new: int, seed: int) -> Dict[str, Any]:
    """The store's shards and the new batch, made once for these sizes."""
    tag = f"{stored}-{new}-{seed}"
    store = os.path.join(directory, f"store-{stored}-{seed}")
    new_path = os.path.join(directory, f"new-{tag}.npy")
    if not os.path.isdir(store):
        free = shutil.disk_usage(os.path.dirname(store) or ".").free
        if free < stored * 8 * 2:
            sys.exit(f"{directory}: {free / 1e9:.1f} GB free, the store needs {stored * 8 / 1e9:.1f} GB; pass --dir")
        os.makedirs(store + ".tmp", exist_ok=True)
        rng = np.random.default_rng(seed)
        for i, start in enumerate(range(0, stored, SHARD)):
            part = rng.integers(0, 2**64 - 1, min(SHARD, stored - start), dtype=np.uint64, endpoint=True)
            np.save(os.path.join(store + ".tmp", f"part-{i:05d}.npy"), part)
        os.replace(store + ".tmp", store)
    shards = sorted(os.path.join(store, f) for f in os.listdir(store) if f.endswith(".npy"))
    if not os.path.exists(new_path):
        rng = np.random.default_rng(seed + 1)
        fps = rng.integers(0, 2**64 - 1, new, dtype=np.uint64, endpoint=True)

        def near(values: np.ndarray, lo: int) -> np.ndarray:
            out = values.copy()
            for _ in range(3):
                flip = rng.integers(lo, 2, len(out)).astype(np.uint64) << rng.integers(0, 64, len(out)).astype(np.uint64)
                out ^= flip
            return out

        n_old, n_copy, n_near = new // 20, new // 20, new // 50
        first = np.load(shards[0], mmap_mode="r")
        picks = rng.integers(0, len(first), n_old) if len(first) else np.empty(0, np.int64)
        at = rng.permutation(new)
        fps[at[:n_old]] = near(np.asarray(first[picks]), 0)
        sources = at[n_old + n_copy + n_near :]
        fps[at[n_old : n_old + n_copy]] = fps[rng.choice(sources, n_copy)]
        fps[at[n_old + n_copy : n_old + n_copy + n_near]] = near(fps[rng.choice(sources, n_near)], 1)
        np.save(new_path + ".tmp.npy", fps)
        os.replace(new_path + ".tmp.npy", new_path)
    return {"store": store, "shards": shards, "new": new_path}


def vm_hwm() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    return 0


def cpu_seconds() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def child(args: argparse.Namespace) -> None:
    """One run, in its own process: prints time, peak RSS and where its answer went."""
    import rsimhash

    data = json.loads(args.child)
    new = np.load(data["new"], mmap_mode="r")
    stored = sum(len(np.load(p, mmap_mode="r")) for p in data["shards"])
    job = dict(k=args.k, progress=False, memory_limit="4GiB")
    started, cpu = time.perf_counter(), cpu_seconds()
    if args.mode == "dedup-against":
        answer = rsimhash.batch.dedup(data["new"], against=data["store"], **job)
    elif args.mode == "dedup-concat":
        answer = rsimhash.batch.dedup(data["shards"] + [data["new"]], **job)[-len(new) :]
    elif args.mode == "find_all-against":
        answer = rsimhash.batch.find_all(data["new"], against=data["store"], **job)
    else:
        pairs = rsimhash.batch.find_all(data["shards"] + [data["new"]], **job)
        # The pairs between the store and the new batch, as [new, old].
        cross = pairs[(pairs[:, 0] < stored) & (pairs[:, 1] >= stored)]
        answer = np.stack([cross[:, 1] - stored, cross[:, 0]], axis=1) if len(cross) else np.zeros((0, 2), np.uint64)
        answer = answer[np.lexsort((answer[:, 1], answer[:, 0]))]
    seconds, cpu = time.perf_counter() - started, cpu_seconds() - cpu
    out = os.path.join(os.path.dirname(data["new"]), f"answer-{args.mode}-{os.getpid()}.npy")
    np.save(out, answer)
    count = int(answer.sum()) if answer.ndim == 1 else len(answer)
    print(json.dumps({"seconds": seconds, "cpu": cpu, "rss": vm_hwm(), "answer": out, "count": count}))


def run(mode: str, data: Dict[str, Any], k: int) -> Dict[str, Any]:
    cmd = [sys.executable, os.path.abspath(__file__), "--mode", mode, "--k", str(k), "--child", json.dumps(data)]
    done = subprocess.run(cmd, capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def load_average() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def bench_size(args: argparse.Namespace, stored: int) -> bool:
    """Every job of ``--jobs`` at one store size; True when the answers agree."""
    data = make_data(args.dir, stored, args.new, args.seed)
    print(f"{args.new:,} new against {stored:,} stored ({stored / args.new:g}x), k={args.k}; load average {load_average()}")
    ok = True
    for job in args.jobs.split(","):
        modes = (f"{job}-against", f"{job}-concat")
        results: Dict[str, List[Dict[str, Any]]] = {m: [] for m in modes}
        for r in range(args.rounds):
            for mode in modes if r % 2 == 0 else modes[::-1]:
                res = run(mode, data, args.k)
                results[mode].append(res)
                print(
                    f"  round {r + 1} {mode:17s} {res['seconds']:7.2f} s  {res['cpu']:7.2f} CPU s  "
                    f"peak RSS {res['rss'] / 2**30:.2f} GiB  {'kept' if job == 'dedup' else 'pairs'} {res['count']:,}  "
                    f"load {load_average()}"
                )
        paths = [x["answer"] for v in results.values() for x in v]
        first = np.load(paths[0])
        equal = all(np.array_equal(first, np.load(path)) for path in paths)
        for path in paths:
            os.remove(path)
        med = {m: statistics.median(x["seconds"] for x in v) for m, v in results.items()}
        cpu = {m: statistics.median(x["cpu"] for x in v) for m, v in results.items()}
        rss = {m: max(x["rss"] for x in v) for m, v in results.items()}
        a, c = modes
        print(
            f"  {job}: median against {med[a]:.2f} s, concatenation {med[c]:.2f} s, ratio {med[a] / med[c]:.3f}x; "
            f"CPU {cpu[a]:.2f} s / {cpu[c]:.2f} s, ratio {cpu[a] / cpu[c]:.3f}x; "
            f"peak RSS {rss[a] / 2**30:.2f} / {rss[c] / 2**30:.2f} GiB; answers equal in every run: {equal}"
        )
        ok = ok and equal
    return ok


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--stored", default="10000000,100000000", help="store sizes, comma-separated")
    p.add_argument("--new", type=int, default=1_000_000)
    p.add_argument("--k", type=int, default=3)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--jobs", default="dedup,find_all", help="dedup, find_all or both (comma-separated)")
    p.add_argument("--seed", type=int, default=27)
    p.add_argument("--dir", default=default_dir())
    p.add_argument("--mode", help=argparse.SUPPRESS)
    p.add_argument("--child", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.child:
        return child(args)
    os.makedirs(args.dir, exist_ok=True)
    print(f"{cpu_model()}, {os.cpu_count()} cpus")
    ok = True
    for stored in (int(float(x)) for x in args.stored.split(",")):
        ok = bench_size(args, stored) and ok
    if not ok:
        sys.exit(1)


if __name__ == "__main__":
    main()
