#!/usr/bin/env python3
"""A new batch against a store, beside the dedup of the concatenation (issue 27).

The store: ``--stored`` random fingerprints (default 10^8) in a directory of
``.npy`` shards outside the repository (``--dir``, default
``/work/tmp/rsimhash-incremental`` or the system's temporary directory),
written once with a seed and reused by later runs. The new batch:
``--new`` fingerprints (default 10^6): 5 % within 0 to 3 bits of a stored
one, 5 % copies of other new ones, 2 % within 1 to 3 bits of other new
ones, the rest random.

Each run is a fresh process (its inputs on disk before the clock starts)
that reports its time and its own peak RSS (``VmHWM``):
``batch.dedup(new, against=store)`` and ``batch.dedup`` of the store's
shards followed by the new batch, rounds interleaved, medians taken. Their
keep masks among the new items must be equal (the store is random, so no
two stored fingerprints are within k and the two agree exactly).
Targets: at most 0.5x the time of the concatenation, peak RSS under 2 GiB.

    python benches/bench_incremental.py                          # 10^6 against 10^8, 3 rounds
    python benches/bench_incremental.py --stored 10000000 --rounds 5
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Any, Dict, List

import numpy as np

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


def child(args: argparse.Namespace) -> None:
    """One run, in its own process: prints time, peak RSS and where its mask went."""
    import rsimhash

    data = json.loads(args.child)
    new = np.load(data["new"], mmap_mode="r")
    started = time.perf_counter()
    if args.mode == "against":
        keep = rsimhash.batch.dedup(data["new"], k=args.k, against=data["store"], progress=False, memory_limit="4GiB")
    else:
        keep = rsimhash.batch.dedup(data["shards"] + [data["new"]], k=args.k, progress=False, memory_limit="4GiB")
        keep = keep[-len(new) :]
    seconds = time.perf_counter() - started
    out = os.path.join(os.path.dirname(data["new"]), f"keep-{args.mode}-{os.getpid()}.npy")
    np.save(out, keep)
    print(json.dumps({"seconds": seconds, "rss": vm_hwm(), "keep": out, "kept": int(keep.sum())}))


def run(mode: str, data: Dict[str, Any], k: int) -> Dict[str, Any]:
    cmd = [sys.executable, os.path.abspath(__file__), "--mode", mode, "--k", str(k), "--child", json.dumps(data)]
    done = subprocess.run(cmd, capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--stored", type=int, default=100_000_000)
    p.add_argument("--new", type=int, default=1_000_000)
    p.add_argument("--k", type=int, default=3)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--seed", type=int, default=27)
    p.add_argument("--dir", default=default_dir())
    p.add_argument("--mode", choices=("against", "concat"), help=argparse.SUPPRESS)
    p.add_argument("--child", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.child:
        return child(args)
    os.makedirs(args.dir, exist_ok=True)
    data = make_data(args.dir, args.stored, args.new, args.seed)
    cpu = platform.processor() or platform.machine()
    print(f"{args.new:,} new against {args.stored:,} stored, k={args.k}; {cpu}, {os.cpu_count()} cpus")
    results: Dict[str, List[Dict[str, Any]]] = {"against": [], "concat": []}
    masks = []
    for r in range(args.rounds):
        for mode in ("against", "concat") if r % 2 == 0 else ("concat", "against"):
            res = run(mode, data, args.k)
            results[mode].append(res)
            masks.append((mode, res["keep"]))
            print(
                f"  round {r + 1} {mode:8s} {res['seconds']:7.2f} s  peak RSS {res['rss'] / 2**30:.2f} GiB  kept {res['kept']:,}"
            )
    first = np.load(masks[0][1])
    equal = all(np.array_equal(first, np.load(path)) for _, path in masks)
    for _, path in masks:
        os.remove(path)
    med = {m: statistics.median(x["seconds"] for x in v) for m, v in results.items()}
    rss = {m: max(x["rss"] for x in v) for m, v in results.items()}
    ratio = med["against"] / med["concat"]
    print(f"median: against {med['against']:.2f} s, concatenation {med['concat']:.2f} s, ratio {ratio:.3f}x")
    print(f"peak RSS: against {rss['against'] / 2**30:.2f} GiB, concatenation {rss['concat'] / 2**30:.2f} GiB")
    print(f"keep masks of the new items equal in every run: {equal}")
    if not equal:
        sys.exit(1)


if __name__ == "__main__":
    main()
