#!/usr/bin/env python3
"""Per-thread CPU time of the main jobs: is any one thread a serial cap?

Issue 42, item 5: the main job must use the cores it is given. On two cores
that is measured by where the CPU time goes: no single thread of a run may
spend more than 1/12 of the run's CPU time, so that nothing serial caps it
below about twelve cores.

Each job runs as a subprocess (``python -m rsimhash.cli ...``) with
``RAYON_NUM_THREADS=N`` (``--threads``, default 12), as the command runs
by default on a machine of N cores: all its parallel work (the reader's,
the fingerprints', the index's) on one pool of N workers. On two cores the
parallel work is then spread over twelve worker threads, each about 1/12
of it, and a serial stage stands out as the one thread above that. (The
command's ``--threads N`` sizes the fingerprinting pool only: the index
worked on the global pool of two, which is not a machine of twelve cores.)
This
process reads ``/proc/PID/task/*/stat`` and ``schedstat`` every
``--interval`` seconds and keeps each thread's latest time on a CPU (the
nanoseconds of ``schedstat`` where the kernel keeps them, else user +
system time in 10 ms ticks; a thread that ends between two reads loses at
most one interval). Reported per job: wall time, CPU time, the busiest
threads by name (``comm``: the rayon workers, the reader, the writer,
Python's main thread) with their share of the run's CPU, the main
thread's share, and whether the largest share is within the target.

Jobs (the corpus of ``bench_dedup.py``, written once under
``benches/data/``; the fingerprint file of ``bench_find_all_file.py``):

* ``dedup-jsonl``: ``rsimhash dedup`` of the JSON lines corpus;
* ``dedup-parquet``: the same as Parquet; after each run, ``bench_dedup.py``'s
  Parquet floor encodes the rows it kept with pyarrow alone, and that
  encoding thread's time over the dedup's CPU is the least share the
  dedup's writer thread (the same pyarrow encoder, which writes a file on
  one thread) can have;
* ``find-all``: ``rsimhash find-all`` of a file of 10^7 decimal
  fingerprints (``--n``; ``bench_find_all_file.py``'s, 1 % of them near
  copies);
* ``cluster``: ``rsimhash cluster`` of the JSON lines corpus;
* ``control``: no job of ours to judge, but the measure's own floor on this
  machine: ``rsimhash.fingerprints`` of the corpus's first texts, already
  in memory, a few times over, on a pool of ``--threads`` workers
  (``RAYON_NUM_THREADS``), which is parallel work and nothing else.

Besides the busiest thread, each job's busiest *pool* is shown (the worker
threads of the pool that spent the most, ``rsimhash-N`` or ``rsimhash-gN``): their
share of the run's CPU and the busiest worker's time over their mean. With more workers than
cores, the scheduler runs some of them more than others, so even a perfectly
parallel stage has a busiest worker above its fair share: the control
measures by how much. A job whose busiest thread is a worker is then also
given its floor, the pool's share of its CPU times the control's busiest
worker's share of its pool: what the same pool, as evenly run as the
control's, would show. Above 1/12, no job with that much parallel work can
meet the target on this machine, whatever its serial stages.

Usage::

    python benches/bench_threads.py                       # 1 GB corpus, 3 rounds
    python benches/bench_threads.py --size-mb 128 --rounds 1 --jobs dedup-jsonl
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Dict, List, Tuple

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from bench_dedup import DATA_DIR, PARQUET_FLOOR, build_corpus, parquet_copy, warm  # noqa: E402
from bench_fingerprint import installed_env, machine_info  # noqa: E402

TARGET_SHARE = 1 / 12
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def thread_times(pid: int) -> Dict[int, Tuple[str, float]]:
    """Each live thread of ``pid``: its name and CPU seconds so far."""
    out = {}
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except FileNotFoundError:
        return out
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/stat") as f:
                stat = f.read()
        except (FileNotFoundError, ProcessLookupError):
            continue
        # The name is in parentheses and may hold spaces; fields follow it.
        name = stat[stat.index("(") + 1 : stat.rindex(")")]
        fields = stat[stat.rindex(")") + 2 :].split()
        utime, stime = int(fields[11]), int(fields[12])
        seconds = (utime + stime) / CLOCK_TICKS
        try:  # nanoseconds on a CPU, where the kernel keeps them: stat counts 10 ms ticks
            with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                seconds = int(f.read().split()[0]) / 1e9
        except (OSError, ValueError, IndexError):
            pass
        out[int(tid)] = (name, seconds)
    return out


# The control: the corpus's first texts (``sys.argv[2]`` bytes of lines)
# fingerprinted ``sys.argv[3]`` times on the global pool, in memory.
CONTROL = """
import json, sys
import rsimhash
with open(sys.argv[1], "rb") as f:
    texts = [json.loads(line)["text"] for line in f.readlines(int(sys.argv[2]))]
for _ in range(int(sys.argv[3])):
    rsimhash.fingerprints(texts)
"""


def pools_of(threads: Dict[int, Tuple[str, float]]) -> List[List[float]]:
    """The CPU seconds of each pool's workers: threads named ``rsimhash-N``
    (a pool of a given size) or ``rsimhash-gN`` (the global one). A job may
    start several pools of one name; rayon starts a pool's workers in order
    of ``N``, so by thread id a new pool begins where ``N`` stops rising."""
    pools: List[List[float]] = []
    last: Dict[str, int] = {}
    current: Dict[str, List[float]] = {}
    for _, (name, t) in sorted(threads.items()):
        rest = name[len("rsimhash-") :] if name.startswith("rsimhash-") else ""
        kind, number = ("N", rest) if rest.isdigit() else ("gN", rest[1:]) if rest[:1] == "g" else ("", "")
        if not number.isdigit():
            continue
        if kind not in current or int(number) <= last[kind]:
            current[kind] = []
            pools.append(current[kind])
        current[kind].append(t)
        last[kind] = int(number)
    return pools


def run(cmd: List[str], interval: float, env: Dict[str, str] | None = None) -> Dict[str, object]:
    """Runs ``cmd``, sampling its threads; returns wall, CPU and per-thread times."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, env=env)
    seen: Dict[int, Tuple[str, float]] = {}
    while proc.poll() is None:
        seen.update(thread_times(proc.pid))
        time.sleep(interval)
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed with exit code {proc.returncode}")
    total = sum(t for _, t in seen.values())
    main = seen.get(proc.pid, ("python", 0.0))[1]
    # The pool with the most CPU: where a busiest worker would be.
    workers = max(pools_of(seen), key=sum, default=[])
    return {
        "wall": wall,
        "cpu": total,
        "main": main,
        "threads": sorted(seen.values(), key=lambda x: -x[1]),
        "pool": sum(workers),
        "busiest_worker": max(workers, default=0.0),
        "workers": len(workers),
    }


def parquet_encode_seconds(dedup: List[str], out: str, interval: float, env: Dict[str, str]) -> float:
    """The CPU seconds of pyarrow encoding the rows the Parquet ``dedup``
    just kept, alone on one thread: ``bench_dedup.py``'s Parquet floor (its
    reader thread decodes the input, its main thread encodes the kept share
    of the rows), whose main thread's time is returned."""
    import pyarrow.parquet as pq

    src = dedup[dedup.index("--input") + 1]
    kept = pq.ParquetFile(dedup[dedup.index("--output") + 1]).metadata.num_rows
    share = kept / pq.ParquetFile(src).metadata.num_rows
    floor = run([sys.executable, "-c", PARQUET_FLOOR, src, os.path.join(out, "floor.parquet"), repr(share)], interval, env)
    return float(floor["main"])  # type: ignore[arg-type]


def fingerprint_file(n: int) -> str:
    """``bench_find_all_file.py``'s file of ``n`` decimal fingerprints, made once."""
    from bench_find_all_file import make_file

    path = os.path.join(DATA_DIR, f"threads-fps-{n}.txt")
    os.makedirs(DATA_DIR, exist_ok=True)
    make_file(path, n, seed=42)
    return path


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size-mb", type=float, default=1000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--dup-share", type=float, default=0.2)
    ap.add_argument("--n", type=int, default=10**7, help="fingerprints in the find-all file")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--interval", type=float, default=0.02)
    ap.add_argument("--threads", type=int, default=12, help="the jobs' worker threads, as RAYON_NUM_THREADS (see above)")
    ap.add_argument("--jobs", default="dedup-jsonl,dedup-parquet,find-all,cluster,control")
    ap.add_argument("--control-mb", type=float, default=250, help="MB of the corpus's lines the control fingerprints")
    ap.add_argument("--control-times", type=int, default=4, help="how many times the control fingerprints them")
    args = ap.parse_args()

    corpus = build_corpus(args.size_mb, args.seed, args.dup_share)
    jobs = args.jobs.split(",")
    cli = [sys.executable, "-m", "rsimhash.cli"]
    with tempfile.TemporaryDirectory(dir=DATA_DIR) as out:
        cmds = {
            "dedup-jsonl": [*cli, "dedup", "--input", corpus, "--output", f"{out}/kept.jsonl", "--quiet"],
            "dedup-parquet": [
                *cli,
                "dedup",
                "--input",
                parquet_copy(corpus) if "dedup-parquet" in jobs else "",
                "--output",
                f"{out}/kept.parquet",
                "--quiet",
            ],
            "find-all": [
                *cli,
                "find-all",
                "--input",
                fingerprint_file(args.n) if "find-all" in jobs else "",
                "--output",
                f"{out}/pairs.tsv",
                "--quiet",
            ],
            "cluster": [*cli, "cluster", "--input", corpus, "--output", f"{out}/clusters.tsv", "--quiet"],
            "control": [sys.executable, "-c", CONTROL, corpus, str(int(args.control_mb * 1e6)), str(args.control_times)],
        }
        # Every job's pool, and the control's, is the global one, of --threads
        # workers; the package's bytecode is written, as a wheel installs it
        # (else each start compiles the package, on the main thread).
        env = {**installed_env(), "RAYON_NUM_THREADS": str(args.threads)}
        for job in jobs:
            if job not in cmds:
                raise SystemExit(f"unknown job {job!r}; choose from {', '.join(cmds)}")
            warm(corpus if job == "control" else cmds[job][cmds[job].index("--input") + 1])
        import numpy as np

        import rsimhash

        info = machine_info(rsimhash, np)
        print(f"# {info['cpu']}, {info['nproc']} usable cores, load {info['loadavg']}")
        print(
            f"# {args.rounds} rounds, RAYON_NUM_THREADS={args.threads}, threads sampled every {args.interval * 1000:g} ms;"
            " target: no thread over 1/12 of the CPU"
        )
        results: Dict[str, List[Dict[str, object]]] = {j: [] for j in jobs}
        encode: List[float] = []  # the Parquet floor's encoding thread, each round
        for _ in range(args.rounds):
            for job in jobs:  # interleaved, so a busy neighbour hits all alike
                for name in os.listdir(out):
                    os.unlink(os.path.join(out, name))
                results[job].append(run(cmds[job], args.interval, env))
                if job == "dedup-parquet":
                    encode.append(parquet_encode_seconds(cmds[job], out, args.interval, env))
        # The control's busiest worker's share of its pool: how evenly this
        # machine runs a pool of --threads workers on its cores.
        control = [r["busiest_worker"] / r["pool"] for r in results.get("control", []) if r["pool"]]
        uneven = statistics.median(control) if control else None
        print()
        print("| job | wall s | CPU s | busiest thread (share of CPU) | next | main thread | target 1/12 |")
        print("| --- | ---: | ---: | --- | --- | ---: | --- |")
        for job in jobs:
            rs = results[job]
            if job == "control":
                continue
            mid = sorted(rs, key=lambda r: r["cpu"])[len(rs) // 2]
            share = lambda t: f"{t[0]} {t[1] / mid['cpu']:.1%}"  # noqa: E731
            top = mid["threads"]
            biggest = statistics.median(r["threads"][0][1] / r["cpu"] for r in rs)
            print(
                f"| {job} | {statistics.median(r['wall'] for r in rs):.2f} | {statistics.median(r['cpu'] for r in rs):.2f} "
                f"| {share(top[0])} | {share(top[1]) if len(top) > 1 else '-'} "
                f"| {statistics.median(r['main'] / r['cpu'] for r in rs):.1%} "
                f"| {'met' if biggest <= TARGET_SHARE else 'missed'} ({biggest:.1%}) |"
            )
        if encode:
            least = statistics.median(encode) / statistics.median(r["cpu"] for r in results["dedup-parquet"])
            print(
                f"\ndedup-parquet's writer thread encodes the kept rows with pyarrow's ParquetWriter, which encodes a file on "
                f"one thread: the same encoding alone, the Parquet floor's main thread (bench_dedup.py), took "
                f"{statistics.median(encode):.2f} CPU-s = {least:.1%} of the dedup's CPU, the least share that thread can have: "
                + ("the target is below this floor" if least > TARGET_SHARE else "the target is within reach")
            )
        print()
        print("| job | workers | busiest pool's CPU share | busiest worker / mean | floor (pool share x control's busiest) |")
        print("| --- | ---: | ---: | ---: | --- |")
        for job in jobs:
            rs = [r for r in results[job] if r["pool"]]
            if not rs:
                continue
            pool_share = statistics.median(r["pool"] / r["cpu"] for r in rs)
            spread = statistics.median(r["busiest_worker"] * r["workers"] / r["pool"] for r in rs)
            if job == "control" or uneven is None:
                floor = "-" if job != "control" else f"busiest worker {uneven:.1%} of the pool (fair: {1 / args.threads:.1%})"
            else:
                f = pool_share * uneven
                reach = "the target is below this machine's floor" if f > TARGET_SHARE else "the target is within reach"
                floor = f"{f:.1%}: {reach}"
            print(f"| {job} | {rs[0]['workers']} | {pool_share:.1%} | {spread:.2f} | {floor} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
