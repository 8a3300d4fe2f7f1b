#!/usr/bin/env python3
"""End-to-end throughput of ``rsimhash dedup`` on a JSON-lines corpus.

The corpus is ``corpus.py``'s English documents (median ~4 KB) with a share
of them (``--dup-share``, default 0.2) replaced by a copy of an earlier
document with 1 to 4 words changed, as a crawl holds; written once as
``{"id", "text"}`` JSON lines to ``benches/data/`` (git-ignored, reused by
later runs). Each round runs, in a subprocess as users do::

    python -m rsimhash.cli dedup --input CORPUS --output KEPT --removed REMOVED --quiet

and times it from start to exit (interpreter start-up, imports, reading,
parsing, fingerprinting, the index, writing, fsync and rename included). The
file is read once before the rounds, so it is in the page cache: this
measures the program, not the disk. Throughput is MB/s with MB = 10^6 bytes
of input. Reported: the median over ``--rounds`` (and min..max), records/s,
the CPU seconds of the run and of other processes on the machine meanwhile
(a busy neighbour shows up there), and the load average before the rounds.

Unless ``--no-breakdown``, one more pass in this process times each stage
on each chunk, one after the other: read + split + JSON parse (``Source``),
fingerprint (``rsimhash.fingerprints``), ``Index.add_unique``, and writing
the kept lines (with the final fsync). The command overlaps the first with
the others (the next chunk is parsed while this one is fingerprinted), so
its wall time can be below the sum.

Usage::

    python benches/bench_dedup.py                       # 1 GB corpus, 5 rounds, breakdown
    python benches/bench_dedup.py --size-mb 64 --rounds 3   # quick
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Dict, List

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import corpus as corpus_mod  # noqa: E402
from bench_fingerprint import machine_busy_seconds, machine_info  # noqa: E402

TARGET_MB_S = 100.0
DATA_DIR = os.path.join(HERE, "data")


def corpus_path(size_mb: float, seed: int, dup_share: float) -> str:
    return os.path.join(DATA_DIR, f"dedup-seed{seed}-{size_mb:g}mb-dup{dup_share:g}.jsonl")


def build_corpus(size_mb: float, seed: int, dup_share: float) -> str:
    """The benchmark's JSON lines file, written once and reused."""
    path = corpus_path(size_mb, seed, dup_share)
    if os.path.exists(path):
        return path
    os.makedirs(DATA_DIR, exist_ok=True)
    docs = corpus_mod.load_docs(size_mb, seed=seed, verbose=True)
    rng = random.Random(seed + 17)
    tmp = path + ".part"
    with open(tmp, "w", encoding="utf-8") as f:
        for i, doc in enumerate(docs):
            if i and rng.random() < dup_share:
                words = docs[rng.randrange(i)].split(" ")
                for _ in range(rng.randint(1, 4)):
                    words[rng.randrange(len(words))] = rng.choice(("the", "a", "new", "updated", "2024"))
                doc = " ".join(words)
            f.write(json.dumps({"id": i, "text": doc}, ensure_ascii=False) + "\n")
    os.replace(tmp, path)
    return path


def warm(path: str) -> None:
    with open(path, "rb") as f:
        while f.read(1 << 24):
            pass


def one_round(path: str, out_dir: str, extra: List[str]) -> Dict[str, float]:
    cmd = [sys.executable, "-m", "rsimhash.cli", "dedup", "--input", path,
           "--output", os.path.join(out_dir, "kept.jsonl"), "--removed", os.path.join(out_dir, "removed.tsv"),
           "--quiet", *extra]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    m0 = machine_busy_seconds()
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True)
    wall = time.perf_counter() - t0
    m1 = machine_busy_seconds()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise SystemExit(f"rsimhash dedup failed ({proc.returncode}): {proc.stderr.decode(errors='replace')}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"wall": wall, "cpu": cpu, "other_cpu": max(0.0, m1 - m0 - cpu), "maxrss_mb": after.ru_maxrss / 1024}


def breakdown(path: str, out_dir: str) -> Dict[str, float]:
    """Seconds of each stage, one after the other on each chunk as the command
    does them but without its overlap, in this process, over the whole input."""
    import numpy as np

    import rsimhash
    from rsimhash.cli.inputs import Source

    spent = {"read_parse": 0.0, "fingerprint": 0.0, "add_unique": 0.0, "write_fsync": 0.0, "removed": 0.0}
    index = rsimhash.Index(3)
    position = 0
    with Source(path, "json", need_ids=False) as source, \
            open(os.path.join(out_dir, "breakdown.jsonl"), "wb", buffering=1 << 20) as out:
        chunks = source.chunks()
        while True:
            t0 = time.perf_counter()
            chunk = next(chunks, None)
            t1 = time.perf_counter()
            spent["read_parse"] += t1 - t0
            if chunk is None:
                break
            fps = rsimhash.fingerprints(chunk.texts)
            t2 = time.perf_counter()
            is_new, _ = index.add_unique(fps, ids=np.arange(position, position + len(fps), dtype=np.uint64))
            t3 = time.perf_counter()
            assert chunk.raw is not None
            out.write(b"\n".join([chunk.raw[j] for j in np.flatnonzero(is_new).tolist()]) + b"\n")
            t4 = time.perf_counter()
            spent["fingerprint"] += t2 - t1
            spent["add_unique"] += t3 - t2
            spent["write_fsync"] += t4 - t3
            spent["removed"] += len(fps) - int(np.count_nonzero(is_new))
            position += len(fps)
        t0 = time.perf_counter()
        out.flush()
        os.fsync(out.fileno())
        spent["write_fsync"] += time.perf_counter() - t0
    return spent


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--size-mb", type=float, default=1000, help="corpus size in 10^6 bytes of text (default 1000)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--dup-share", type=float, default=0.2, help="share of planted near-duplicates (default 0.2)")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--no-breakdown", action="store_true", help="skip the per-stage timing")
    ap.add_argument("--tmpdir", default=None, help="where the outputs go (default: the system's temp dir)")
    ap.add_argument("--cli-args", default="", help="extra flags for rsimhash dedup, e.g. '--threads 1'")
    args = ap.parse_args(argv)

    import numpy as np

    import rsimhash

    path = build_corpus(args.size_mb, args.seed, args.dup_share)
    size = os.path.getsize(path)
    with open(path, "rb") as f:
        records = sum(block.count(b"\n") for block in iter(lambda: f.read(1 << 24), b""))
    warm(path)
    info = machine_info(rsimhash, np)
    print(f"rsimhash dedup: {path}, {size / 1e6:.1f} MB, {records:,} records; "
          f"nproc {info['nproc']}, {info['cpu']}, Python {info['python']}, load average {info['loadavg']}")

    rounds = []
    with tempfile.TemporaryDirectory(dir=args.tmpdir) as out_dir:
        for r in range(args.rounds):
            res = one_round(path, out_dir, args.cli_args.split())
            rounds.append(res)
            print(f"  round {r + 1}: {res['wall']:.2f} s, {size / 1e6 / res['wall']:.0f} MB/s, "
                  f"cpu {res['cpu']:.1f} s, other processes {res['other_cpu']:.1f} cpu-s, "
                  f"peak RSS {res['maxrss_mb']:.0f} MB", flush=True)
        stages = None if args.no_breakdown else breakdown(path, out_dir)
    walls = [r["wall"] for r in rounds]
    median = statistics.median(walls)
    mb_s = size / 1e6 / median
    print(f"median {median:.2f} s: {mb_s:.0f} MB/s ({size / 1e6 / max(walls):.0f}..{size / 1e6 / min(walls):.0f}), "
          f"{records / median:,.0f} records/s; target > {TARGET_MB_S:.0f} MB/s: "
          f"{'met' if mb_s > TARGET_MB_S else 'MISSED'}")
    if stages is not None:
        total = sum(v for k, v in stages.items() if k != "removed")
        print(f"stages one after the other (this process, whole input; sum {total:.2f} s):")
        for name in ("read_parse", "fingerprint", "add_unique", "write_fsync"):
            print(f"  {name:<12} {stages[name]:6.2f} s  {size / 1e6 / stages[name]:8.0f} MB/s  "
                  f"{stages[name] / total:5.1%}")
        print(f"  removed {int(stages['removed']):,} of {records:,} records as near-duplicates (k = 3)")
    summary = {
        "bench": "dedup_cli", "size_mb": round(size / 1e6, 1), "records": records,
        "rounds": len(walls), "median_s": round(median, 3), "mb_s": round(mb_s, 1),
        "mb_s_min": round(size / 1e6 / max(walls), 1), "mb_s_max": round(size / 1e6 / min(walls), 1),
        "records_s": round(records / median), "target_mb_s": TARGET_MB_S, "met": mb_s > TARGET_MB_S,
        "cpu_s": round(statistics.median(r["cpu"] for r in rounds), 2),
        "other_cpu_s": round(statistics.median(r["other_cpu"] for r in rounds), 2),
        "peak_rss_mb": round(max(r["maxrss_mb"] for r in rounds)),
        "stages_s": None if stages is None else {k: round(v, 3) for k, v in stages.items() if k != "removed"},
        "machine": info,
    }
    print("JSON " + json.dumps(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
