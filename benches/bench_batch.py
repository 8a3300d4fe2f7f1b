#!/usr/bin/env python3
"""Speed, memory and disk of ``rsimhash.batch.find_all`` from 10^6 to 10^9
fingerprints, against ``np.sort`` of the same array in the same run.

Data: seeded random 64-bit fingerprints of which 1 % are a copy of an earlier
one (in the same block of 10^7) with 1 to 3 distinct bits flipped: the
planted pairs, which every run must find (checked). Files go to
``--data-dir`` (default ``$RSIMHASH_BENCH_DATA`` or ``/tmp/rsimhash-bench``),
outside the repository, and are reused by later runs.

Three kinds of measurement, each job in a fresh subprocess so that its peak
memory (``VmHWM``) is its own:

* ``--sizes 1e6,1e7`` (in memory): the array loaded whole; ``--repeats``
  rounds (default 5) alternating ``np.sort`` of a copy and ``find_all`` of
  the array; medians, their ratio, and the peak RSS above the loaded input
  per item. Targets at 10^7: at most 6 x np.sort, at most 24 bytes per item.
* ``--big 1e8 --big-limit 4GiB`` (out of core): ``find_all`` of the ``.npy``
  file with that memory limit, its pairs written to a ``.npy``: wall time,
  peak RSS, peak disk of the work directory, the time of each table.
* ``--index`` (the Index where it does the same work): ``Index(k=3)``
  (compressed, the default) add + find_all against ``batch.find_all`` at
  10^6, alternating in one process; and compressed against
  ``Index(k=3, compress=False)`` at 10^7, each round a fresh process (as a
  script runs it, first touch of its memory included). Targets: at most
  2 x batch.find_all at 10^6, at most 1.5 x the raw index at 10^7.
* ``--huge 1e9``: the same with the default memory limit, after checking the
  free disk (8 GB input, spills, pairs); where the disk is short it runs the
  largest size that fits and says so. Target: under 20 minutes, peak RSS
  under 16 GiB, every planted pair found.

Usage::

    python benches/bench_batch.py                   # 1e6 and 1e7 in memory, 1e8 at 4GiB
    python benches/bench_batch.py --huge 1e9 --sizes '' --big ''
    python benches/bench_batch.py --index --sizes '' --big ''   # the Index targets
    python benches/bench_batch.py --quick           # small sizes, a minute
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import threading
import time
from typing import Any, Dict, List, Optional

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from bench_fingerprint import machine_busy_seconds, machine_info  # noqa: E402
from bench_index import flip_bits  # noqa: E402

BLOCK = 10_000_000  # planted pairs stay within a block of this many items
TARGET_SORT_RATIO = 6.0
TARGET_BYTES_PER_ITEM = 24.0
TARGET_HUGE_S = 20 * 60
TARGET_HUGE_RSS = 16 << 30


# --------------------------------------------------------------------------
# data


def data_path(data_dir: str, n: int, seed: int) -> str:
    return os.path.join(data_dir, f"planted-{n}-{seed}.npy")


def make_data(data_dir: str, n: int, seed: int) -> str:
    """The planted ``.npy`` of ``n`` items (and ``.planted.npy``, the pairs), made once."""
    import numpy as np

    path = data_path(data_dir, n, seed)
    if os.path.exists(path) and os.path.exists(path + ".planted.npy"):
        return path
    os.makedirs(data_dir, exist_ok=True)
    tmp = path + ".part.npy"
    arr = np.lib.format.open_memmap(tmp, mode="w+", dtype=np.uint64, shape=(n,))
    planted: List[Any] = []
    for b, lo in enumerate(range(0, n, BLOCK)):
        rng = np.random.default_rng([seed, b])
        m = min(BLOCK, n - lo)
        block = rng.integers(0, 2**64, size=m, dtype=np.uint64)
        is_dst = rng.random(m) < 0.01
        is_dst[0] = False
        dst = np.flatnonzero(is_dst)
        # Each copy's source is an original before it (not a copy, whose
        # value changes in this same step).
        originals = np.flatnonzero(~is_dst)
        before = np.searchsorted(originals, dst)
        src = originals[(rng.random(len(dst)) * before).astype(np.int64)]
        block[dst] = flip_bits(rng, block[src], rng.integers(1, 4, size=len(dst)))
        arr[lo : lo + m] = block
        planted.append(np.stack([src + lo, dst + lo], axis=1).astype(np.uint64))
    arr.flush()
    del arr
    np.save(path + ".planted.npy", np.concatenate(planted))
    os.replace(tmp, path)
    return path


def check_planted(pairs_path: str, data: str) -> Dict[str, int]:
    """How many planted pairs the pairs file holds (copies of copies pair too)."""
    import numpy as np

    planted = np.load(data + ".planted.npy")
    pairs = np.load(pairs_path, mmap_mode="r")
    key = lambda p: (np.asarray(p[:, 0], dtype=np.uint64) << np.uint64(32)) | np.asarray(p[:, 1], dtype=np.uint64)
    found = np.sort(key(np.sort(planted, axis=1)))
    got = np.empty(0, dtype=np.uint64)
    for lo in range(0, len(pairs), 50_000_000):
        got = np.union1d(got, key(pairs[lo : lo + 50_000_000]))
    hit = np.isin(found, got, assume_unique=False)
    return {"planted": int(len(found)), "found": int(hit.sum()), "pairs": int(len(pairs))}


# --------------------------------------------------------------------------
# subprocess jobs


def status() -> Dict[str, int]:
    out = {}
    with open("/proc/self/status", encoding="ascii") as f:
        for line in f:
            if line.startswith(("VmHWM:", "VmRSS:")):
                key, val = line.split(":", 1)
                out[key] = int(val.split()[0]) * 1024
    return out


def reset_hwm() -> None:
    with open("/proc/self/clear_refs", "w", encoding="ascii") as f:
        f.write("5")


def child_memory(data: str, repeats: int) -> Dict[str, Any]:
    """In memory: np.sort and find_all alternating; then the peak RSS of find_all alone."""
    import gc

    import numpy as np

    import rsimhash

    fps = np.load(data)
    rsimhash.batch.find_all(fps[:100_000], progress=False)  # warm-up: code and threads
    sorts, jobs = [], []
    for _ in range(repeats):
        copy = fps.copy()
        t = time.perf_counter()
        np.sort(copy)
        sorts.append(time.perf_counter() - t)
        del copy
        gc.collect()
        t = time.perf_counter()
        pairs = rsimhash.batch.find_all(fps, progress=False)
        jobs.append(time.perf_counter() - t)
        gc.collect()
    out = os.path.join(os.path.dirname(data), f"pairs-{os.getpid()}.npy")
    np.save(out, pairs)
    return {"sort": sorts, "find_all": jobs, "pairs_file": out}


def child_peak(data: str) -> Dict[str, Any]:
    """In memory, in a fresh process: the peak RSS of one find_all above the loaded input."""
    import numpy as np

    import rsimhash

    fps = np.load(data)
    rsimhash.batch.find_all(fps[:1000], progress=False)  # code and threads, not memory
    base = status()["VmRSS"]
    reset_hwm()
    rsimhash.batch.find_all(fps, progress=False)
    return {"base_rss": base, "peak": status()["VmHWM"]}


def child_file(data: str, out: str, limit: Optional[str], workdir: str) -> Dict[str, Any]:
    """From the file: find_all to a .npy, with per-table times and peak disk."""
    import rsimhash

    steps: List[Any] = []
    disk = {"peak": 0}
    stop = threading.Event()

    def watch() -> None:
        while not stop.wait(0.5):
            used = 0
            for root, _, files in os.walk(workdir):
                for f in files:
                    try:
                        used += os.path.getsize(os.path.join(root, f))
                    except OSError:
                        pass
            disk["peak"] = max(disk["peak"], used)

    t0 = time.perf_counter()

    def progress(done: int, total: int, step: str, step_done: int, step_total: int) -> None:
        if not steps or steps[-1][1] != step:
            steps.append((round(time.perf_counter() - t0, 2), step))

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    m0 = machine_busy_seconds()
    c0 = time.process_time()
    count = rsimhash.batch.find_all(data, out=out, memory_limit=limit, workdir=workdir, progress=progress)
    wall = time.perf_counter() - t0
    cpu = time.process_time() - c0
    stop.set()
    watcher.join()
    return {
        "wall": wall,
        "cpu": cpu,
        "other": max(0.0, machine_busy_seconds() - m0 - cpu),
        "pairs": count,
        "peak": status()["VmHWM"],
        "disk_peak": disk["peak"],
        "steps": steps,
        "design": rsimhash._rsimhash.batch_design(int(os.path.getsize(data) // 8), k=3)[1],
    }


def child_index_1m(n: int, seed: int, repeats: int) -> Dict[str, Any]:
    """Index(k=3) add + find_all, compressed and raw, and batch.find_all, alternating."""
    import numpy as np

    import rsimhash

    fps = np.random.default_rng(seed).integers(0, 2**64, size=n, dtype=np.uint64)
    rsimhash.batch.find_all(fps[:1000], progress=False)
    times: Dict[str, List[float]] = {"compressed": [], "raw": [], "batch": []}
    for _ in range(repeats):
        for name, compress in (("compressed", True), ("raw", False)):
            t = time.perf_counter()
            idx = rsimhash.Index(3, compress=compress)
            idx.add(fps)
            idx.find_all()
            times[name].append(time.perf_counter() - t)
            del idx
        t = time.perf_counter()
        rsimhash.batch.find_all(fps, progress=False)
        times["batch"].append(time.perf_counter() - t)
    return times


def child_index_cold(n: int, seed: int, compress: bool) -> Dict[str, Any]:
    """One Index(k=3) add + find_all in a fresh process."""
    import numpy as np

    import rsimhash

    fps = np.random.default_rng(seed).integers(0, 2**64, size=n, dtype=np.uint64)
    w = rsimhash.Index(3, compress=compress)
    w.add(fps[:2000])
    w.find_all()
    t = time.perf_counter()
    idx = rsimhash.Index(3, compress=compress)
    idx.add(fps)
    idx.find_all()
    return {"seconds": time.perf_counter() - t, "design": idx.design}


def index_step(args: argparse.Namespace, rows: List[str], record: Dict[str, Any]) -> None:
    n1, n10 = (10**5, 10**6) if args.quick else (10**6, 10**7)
    t = run_child("index_1m", n1, args.seed, max(args.repeats, 7))
    med = {k: statistics.median(v) for k, v in t.items()}
    ratio = med["compressed"] / med["batch"]
    rows.append(
        f"| {n1:,} Index(k=3) add + find_all | compressed {med['compressed']:.3f} s, raw {med['raw']:.3f} s | "
        f"batch.find_all {med['batch']:.3f} s | {ratio:.2f} x batch ({'met' if ratio <= 2 else 'MISSED'}: <= 2) | | | |"
    )
    cold: Dict[str, List[float]] = {"compressed": [], "raw": []}
    design = ""
    for _ in range(args.repeats):
        for name in ("compressed", "raw"):
            r = run_child("index_cold", n10, args.seed, name == "compressed")
            cold[name].append(r["seconds"])
            design = r["design"]
    c, r_ = statistics.median(cold["compressed"]), statistics.median(cold["raw"])
    pairs = sorted(a / b for a, b in zip(cold["compressed"], cold["raw"]))
    rows.append(
        f"| {n10:,} Index(k=3) add + find_all, fresh processes | compressed {c:.3f} s "
        f"(runs {min(cold['compressed']):.2f}-{max(cold['compressed']):.2f}) | raw {r_:.3f} s "
        f"(runs {min(cold['raw']):.2f}-{max(cold['raw']):.2f}) | {c / r_:.2f} x raw, pairwise median "
        f"{statistics.median(pairs):.2f} ({'met' if c / r_ <= 1.5 else 'MISSED'}: <= 1.5) | {design} | | |"
    )
    record["index"] = {"in_process": t, "cold": cold}


def run_child(kind: str, *args: Any) -> Dict[str, Any]:
    code = (
        f"import sys, json; sys.path.insert(0, {HERE!r}); import bench_batch as b; print(json.dumps(b.child_{kind}(*{args!r})))"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"{kind} job failed:\n{proc.stderr}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


# --------------------------------------------------------------------------
# steps


def in_memory(n: int, args: argparse.Namespace, rows: List[str], record: Dict[str, Any]) -> None:
    data = make_data(args.data_dir, n, args.seed)
    r = run_child("memory", data, args.repeats)
    r.update(run_child("peak", data))
    check = check_planted(r["pairs_file"], data)
    os.remove(r["pairs_file"])
    sort, job = statistics.median(r["sort"]), statistics.median(r["find_all"])
    per_item = (r["peak"] - r["base_rss"]) / n
    ratio = job / sort
    verdict = lambda ok: "met" if ok else "MISSED"
    rows.append(
        f"| {n:,} in memory | find_all {job:.3f} s (runs {min(r['find_all']):.3f}-{max(r['find_all']):.3f}) | "
        f"np.sort {sort:.3f} s | {ratio:.2f} x np.sort"
        + (f" ({verdict(ratio <= TARGET_SORT_RATIO)}: <= {TARGET_SORT_RATIO:g})" if n >= 10**7 else "")
        + f" | {per_item:.1f} B/item above the input"
        + (f" ({verdict(per_item <= TARGET_BYTES_PER_ITEM)}: <= {TARGET_BYTES_PER_ITEM:g})" if n >= 10**7 else "")
        + f" | {check['found']:,} of {check['planted']:,} planted pairs, {check['pairs']:,} pairs |"
    )
    record[f"memory_{n}"] = {**r, **check, "ratio": ratio, "bytes_per_item": per_item}


def from_file(
    n: int, limit: Optional[str], args: argparse.Namespace, rows: List[str], record: Dict[str, Any], label: str
) -> None:
    data = make_data(args.data_dir, n, args.seed)
    out = os.path.join(args.data_dir, f"pairs-{n}.npy")
    work = os.path.join(args.data_dir, f"work-{n}")
    shutil.rmtree(work, ignore_errors=True)
    r = run_child("file", data, out, limit, work)
    check = check_planted(out, data)
    os.remove(out)
    tables = [s for s in r["steps"] if s[1].startswith("table ")]
    starts = {}
    for t, step in tables:
        starts.setdefault(step.split(",")[0].split(":")[0], t)
    marks = sorted(starts.values()) + [r["wall"]]
    per_table = [b - a for a, b in zip(marks, marks[1:])]
    ok = check["found"] == check["planted"]
    rows.append(
        f"| {n:,} {label} | {r['wall']:.1f} s ({r['cpu']:.0f} s CPU, other processes {r['other']:.0f} s) | "
        f"peak RSS {r['peak'] / 2**30:.2f} GiB ({r['peak'] / n:.1f} B/item) | "
        f"peak disk {r['disk_peak'] / 1e9:.2f} GB | {r['design']} | "
        f"tables {', '.join(f'{x:.1f}' for x in per_table)} s | "
        f"{check['found']:,} of {check['planted']:,} planted pairs{'' if ok else ' (MISSED)'}, "
        f"{check['pairs']:,} pairs |"
    )
    record[f"file_{n}_{limit}"] = {**r, **check, "per_table": per_table}


def parse_sizes(text: str) -> List[int]:
    return [int(float(s)) for s in text.split(",") if s.strip()]


def main(argv: Optional[List[str]] = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--sizes", default="1e6,1e7", help="in-memory sizes (default %(default)s)")
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--big", default="1e8", help="out-of-core sizes (default %(default)s)")
    p.add_argument("--big-limit", default="4GiB,512MiB", help="memory limits of the out-of-core runs (default %(default)s)")
    p.add_argument("--huge", default="", help="sizes run with the default memory limit (e.g. 1e9)")
    p.add_argument("--index", action="store_true", help="also the Index against batch.find_all and its raw tables")
    p.add_argument("--data-dir", default=os.environ.get("RSIMHASH_BENCH_DATA", "/tmp/rsimhash-bench"))
    p.add_argument("--seed", type=int, default=2026)
    p.add_argument("--quick", action="store_true", help="1e5 and 1e6 in memory, 3e6 out of core")
    p.add_argument("--json", action="store_true", help="also print the raw figures as one JSON line")
    args = p.parse_args(argv)
    if args.quick:
        args.sizes, args.big, args.repeats, args.huge = "1e5,1e6", "3e6", 3, ""
    import numpy as np

    import rsimhash

    rows: List[str] = []
    record: Dict[str, Any] = {"machine": machine_info(rsimhash, np), "date": time.strftime("%Y-%m-%d %H:%M")}
    for n in parse_sizes(args.sizes):
        in_memory(n, args, rows, record)
    if args.index:
        index_step(args, rows, record)
    for n in parse_sizes(args.big):
        for limit in args.big_limit.split(","):
            from_file(n, limit, args, rows, record, f"memory_limit={limit}")
    for n in parse_sizes(args.huge):
        need = n * 8 * 2 + n * 12 + (10 << 30)  # input and its part file, a spilled table, margin
        free = shutil.disk_usage(args.data_dir if os.path.exists(args.data_dir) else "/").free
        size = n
        while need > free and size > 10**7:
            size //= 2
            need = size * 8 * 2 + size * 12 + (10 << 30)
        if size != n:
            rows.append(
                f"| {n:,} | not run: {free / 1e9:.0f} GB free, {n * 8 * 2.5 / 1e9:.0f} GB needed; running {size:,} instead |"
            )
        from_file(size, None, args, rows, record, "default memory limit")
    m = record["machine"]
    print(f"rsimhash {m['rsimhash']}, numpy {m['numpy']}, {m['cpu']}, {m['nproc']} cores, load {m['loadavg']}")
    print("| run | time | | | | | |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for row in rows:
        print(row)
    if args.json:
        print(json.dumps(record))
    return 0


if __name__ == "__main__":
    sys.exit(main())
