#!/usr/bin/env python3
"""The pair job on Spark in local mode against ``rsimhash.batch.find_all`` on
the same fingerprints, the Spark stages' task times and shuffle volumes,
and from them what a cluster needs for 8 x 10^9 fingerprints.

Data: seeded random fingerprints, 1 % of them a copy of an earlier one with
1 to 3 bits flipped (every planted pair must come back), written once as
Parquet ``(id, fp)`` under ``--data-dir``. Each size runs:

* ``batch.find_all(fps, k=3)`` in this process (median of ``--repeat``);
* ``near_duplicate_pairs`` on a ``local[2]`` session (and on a standalone
  cluster of two one-core workers on 127.0.0.1, ``--masters``) reading the Parquet
  file, its pairs counted (and, up to 10^6, compared with find_all's), timed
  whole (``--repeat`` runs, a fresh job each); the stages' executor run
  time, tasks, shuffle bytes and records from Spark's REST API.

Then ``near_duplicates_of``'s kernel: ``Index.query_batch`` throughput of
random queries against an index of 10^6 fingerprints on one core, the work
each streamed fingerprint costs a task.

The extrapolation divides the measured per-fingerprint costs (executor CPU
seconds and shuffled bytes per fingerprint and table) into the cluster the
paper describes (8 x 10^9 fingerprints, 200 mappers).

    python benches/bench_spark.py                    # 10^6 and 10^7, local[2] and standalone
    python benches/bench_spark.py --sizes 1e6 --repeat 1 --masters local    # a minute
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import sys
import time
import urllib.request
from typing import Any, Dict, List

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from bench_fingerprint import machine_info  # noqa: E402

DATA_DIR = os.environ.get("RSIMHASH_BENCH_DATA", "/tmp/rsimhash-bench")
K = 3
UI_PORT = 4077


def planted(n: int, seed: int = 7) -> np.ndarray:
    rng = np.random.default_rng(seed)
    fps = rng.integers(0, 2**64, n, dtype=np.uint64)
    m = n // 100
    src = rng.integers(0, n - m, m)
    flips = np.zeros(m, dtype=np.uint64)
    for _ in range(3):
        bit = rng.integers(0, 64, m).astype(np.uint64)
        flips ^= np.where(rng.random(m) < 0.7, np.uint64(1) << bit, np.uint64(0))
    flips[flips == 0] = np.uint64(1)
    fps[n - m :] = fps[src] ^ flips
    return fps


def data(n: int, data_dir: str) -> str:
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = os.path.join(data_dir, f"spark-fps-{n}.parquet")
    if not os.path.exists(path):
        fps = planted(n)
        table = pa.table({"id": np.arange(n, dtype=np.int64), "fp": fps.view(np.int64)})
        pq.write_table(table, path + ".tmp", row_group_size=1 << 20)
        os.replace(path + ".tmp", path)
    return path


def stages(spark: Any, after: int) -> List[Dict[str, Any]]:
    """Completed stages with an id above ``after``, from the REST API."""
    app = spark.sparkContext.applicationId
    url = f"http://localhost:{UI_PORT}/api/v1/applications/{app}/stages?status=complete"
    with urllib.request.urlopen(url, timeout=10) as r:
        found = json.load(r)
    return sorted((s for s in found if s["stageId"] > after), key=lambda s: s["stageId"])


def last_stage(spark: Any) -> int:
    ids = [s["stageId"] for s in stages(spark, -1)]
    return max(ids) if ids else -1


def run(sizes: List[int], repeat: int, data_dir: str, master: str = "local[2]", skewed: bool = False) -> Dict[str, Any]:
    from pyspark.sql import SparkSession

    import rsimhash
    import rsimhash.spark as rs

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)  # workers run this Python, with rsimhash
    builder = (
        SparkSession.builder.master(master)
        .appName("rsimhash bench_spark")
        .config("spark.ui.port", str(UI_PORT))
        .config("spark.driver.memory", "6g")
        .config("spark.sql.shuffle.partitions", "8")
        .config("spark.ui.showConsoleProgress", "false")
    )
    if master.startswith("spark://"):
        # Two executors of one core each, on the two workers of 2 GiB.
        builder = (
            builder.config("spark.executor.cores", "1")
            .config("spark.executor.memory", "1g")
            .config("spark.cores.max", "2")
            .config("spark.driver.host", "127.0.0.1")
            .config("spark.pyspark.python", sys.executable)
        )
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    out: Dict[str, Any] = {"master": master, "sizes": {}}
    for n in sizes:
        path = data(n, data_dir)
        fps = planted(n)
        times = []
        for _ in range(repeat):
            t0 = time.perf_counter()
            want = rsimhash.batch.find_all(fps, k=K, progress=False)
            times.append(time.perf_counter() - t0)
        batch_s = statistics.median(times)
        df = spark.read.parquet(path)
        spark_times, stage_sets, count = [], [], None
        for _ in range(repeat):
            before = last_stage(spark)
            t0 = time.perf_counter()
            pairs = rs.near_duplicate_pairs(df, "id", "fp", K)
            count = pairs.count()
            spark_times.append(time.perf_counter() - t0)
            stage_sets.append(stages(spark, before))
        equal = None
        if n <= 1_000_000:
            got = np.array(rs.near_duplicate_pairs(df, "id", "fp", K).toPandas()[["id_a", "id_b"]].to_numpy(), dtype=np.int64)
            got = got[np.lexsort((got[:, 1], got[:, 0]))]
            equal = bool(np.array_equal(got, want.astype(np.int64)))
        from rsimhash.spark._pairs import choose_blocks

        blocks = choose_blocks(n, K)
        st = stage_sets[len(stage_sets) // 2]
        out["sizes"][n] = {
            "batch_s": batch_s,
            "spark_s": statistics.median(spark_times),
            "spark_runs": spark_times,
            "pairs": int(count or 0),
            "batch_pairs": int(len(want)),
            "equal": equal,
            "blocks": blocks,
            "tables": math.comb(blocks, K),
            "stages": [
                {
                    "id": s["stageId"],
                    "name": s["name"].split(" at ")[0][:40],
                    "tasks": s["numTasks"],
                    "run_s": s["executorRunTime"] / 1000,
                    "cpu_s": s["executorCpuTime"] / 1e9,
                    "shuffle_write": s["shuffleWriteBytes"],
                    "shuffle_read": s["shuffleReadBytes"],
                    "records_in": s["inputRecords"] + s["shuffleReadRecords"],
                    "records_out": s["outputRecords"] + s["shuffleWriteRecords"],
                }
                for s in st
            ],
        }
    if skewed:
        out["skew"] = skew(spark)
    spark.stop()
    return out


def ball(centre: int, radius: int) -> np.ndarray:
    """Every value within ``radius`` bits of ``centre``."""
    import itertools

    out = [centre]
    for r in range(1, radius + 1):
        for bits in itertools.combinations(range(64), r):
            v = centre
            for b in bits:
                v ^= 1 << b
            out.append(v)
    return np.array(out, dtype=np.uint64)


def _workers() -> List[str]:
    """The /proc directories of this user's PySpark Python workers (the daemon and its forks)."""
    out = []
    for pid in os.listdir("/proc"):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                line = f.read()
                if b"pyspark.daemon" in line or b"pyspark.worker" in line:
                    out.append(f"/proc/{pid}")
        except OSError:
            continue
    return out


class PeakRss:
    """The largest peak RSS (VmHWM) of any PySpark Python worker while the
    block runs: the peaks are reset at the start (``clear_refs`` 5) and
    sampled every 0.2 s (a worker that ends between samples is missed)."""

    def __enter__(self) -> "PeakRss":
        import threading

        for d in _workers():
            try:
                with open(f"{d}/clear_refs", "w") as f:
                    f.write("5")
            except OSError:
                pass
        self.peak, self._stop = 0, threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()
        return self

    def _sample(self) -> None:
        while not self._stop.wait(0.2):
            for d in _workers():
                try:
                    with open(f"{d}/status") as f:
                        for line in f:
                            if line.startswith("VmHWM:"):
                                self.peak = max(self.peak, int(line.split()[1]) * 1024)
                except OSError:
                    continue

    def __exit__(self, *exc: Any) -> None:
        self._stop.set()
        self._thread.join()


def skew(spark: Any, n: int = 1_000_000) -> Dict[str, Any]:
    """The skewed inputs: ``n`` random fingerprints plus 10^5 copies of one
    (``near_duplicate_pairs(copies="first")``, against find_all's), and plus
    a dense ball of every value within 3 bits of one (43,745 values, about
    10^8 pairs within 3: its clusters, through the dedup's forest of edges)."""
    import rsimhash
    import rsimhash.spark as rs
    from rsimhash.spark import _components

    out: Dict[str, Any] = {}
    base = planted(n, seed=9)
    fps = np.concatenate([base, np.full(100_000, base[0], dtype=np.uint64)])
    ids = np.random.default_rng(1).permutation(len(fps)).astype(np.int64)
    df = spark.createDataFrame(_frame(ids, fps)).cache()
    df.count()
    t0 = time.perf_counter()
    with PeakRss() as rss:
        got = rs.near_duplicate_pairs(df, "id", "fp", K, copies="first").count()
    seconds = time.perf_counter() - t0
    order = np.argsort(ids)
    want = len(rsimhash.batch.find_all(fps[order], K, ids=ids[order].astype(np.uint64), copies="first", progress=False))
    out["copies"] = {"seconds": seconds, "pairs": got, "find_all": want, "worker_peak_rss": rss.peak}
    df.unpersist()
    dense = ball(int(base[1]), 3)
    fps = np.concatenate([base, dense])
    ids = np.arange(len(fps), dtype=np.int64)
    df = spark.createDataFrame(_frame(ids, fps)).cache()
    df.count()
    t0 = time.perf_counter()
    from pyspark.sql import functions as F

    with PeakRss() as rss:
        edges = rs._edges(df.select(F.col("id"), F.col("fp")), K, None, len(fps))
        labels = _components.components(edges)
        sizes = labels.groupBy("cluster_id").count().agg(F.max("count").alias("m")).first()["m"]
    out["ball"] = {
        "seconds": time.perf_counter() - t0,
        "values": len(dense),
        "largest_cluster": int(sizes),
        "worker_peak_rss": rss.peak,
    }
    df.unpersist()
    return out


def _frame(ids: np.ndarray, fps: np.ndarray) -> Any:
    import pandas as pd

    return pd.DataFrame({"id": ids, "fp": fps.view(np.int64)})


QUERY_RATE = """
import json, statistics, sys, time
import numpy as np, rsimhash
sys.path.insert(0, {here!r})
from bench_spark import planted
index = rsimhash.Index({k})
index.add(planted(1_000_000, seed=3))
queries = np.random.default_rng(5).integers(0, 2**64, 2_000_000, dtype=np.uint64)
times = []
for _ in range(3):
    t0 = time.perf_counter()
    index.query_batch(queries)
    times.append(time.perf_counter() - t0)
print(json.dumps(dict(queries=len(queries), seconds=statistics.median(times))))
"""


def query_rate() -> Dict[str, float]:
    """``query_batch`` of random queries against an index of 10^6 on one
    thread (a process with ``RAYON_NUM_THREADS=1``)."""
    import subprocess

    env = dict(os.environ, RAYON_NUM_THREADS="1")
    out = subprocess.run(
        [sys.executable, "-c", QUERY_RATE.format(here=HERE, k=K)], env=env, check=True, capture_output=True, text=True
    ).stdout
    got = json.loads(out.strip().splitlines()[-1])
    return {**got, "per_s": got["queries"] / got["seconds"]}


def report(res: Dict[str, Any]) -> None:
    print(f"\n{res['master']}:")
    print("| fingerprints | batch.find_all | Spark (runs) | ratio | design | pairs | equal |")
    print("| ---: | ---: | ---: | ---: | --- | ---: | --- |")
    for n, r in res["sizes"].items():
        print(
            f"| {n:,} | {r['batch_s']:.2f} s | {r['spark_s']:.1f} s ({', '.join(f'{t:.1f}' for t in r['spark_runs'])}) | "
            f"{r['spark_s'] / r['batch_s']:.1f} x | "
            f"{r['tables']} tables ({r['blocks']} blocks) | {r['pairs']:,} (find_all {r['batch_pairs']:,}) | "
            f"{'-' if r['equal'] is None else r['equal']} |"
        )
    for n, r in res["sizes"].items():
        print(f"\nstages at {n:,} (median run):")
        print("| stage | tasks | executor run s | CPU s | shuffle write MB | shuffle read MB | records in | out |")
        print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
        for s in r["stages"]:
            print(
                f"| {s['id']} {s['name']} | {s['tasks']} | {s['run_s']:.1f} | {s['cpu_s']:.1f} | "
                f"{s['shuffle_write'] / 1e6:.1f} | {s['shuffle_read'] / 1e6:.1f} | {s['records_in']:,} | "
                f"{s['records_out']:,} |"
            )


def report_skew(sk: Dict[str, Any]) -> None:
    c, b = sk["copies"], sk["ball"]
    print(
        f"\n10^6 + 10^5 copies of one fingerprint, copies=first: {c['seconds']:.1f} s, {c['pairs']:,} pairs "
        f"(find_all {c['find_all']:,}); Python workers' peak RSS {c['worker_peak_rss'] / 2**20:.0f} MiB"
    )
    print(
        f"10^6 + a dense radius-3 ball ({b['values']:,} values): clusters through the forest of edges in "
        f"{b['seconds']:.1f} s, largest cluster {b['largest_cluster']:,}; Python workers' peak RSS "
        f"{b['worker_peak_rss'] / 2**20:.0f} MiB"
    )


def compare(local: Dict[str, Any], standalone: Dict[str, Any]) -> None:
    print("\n| fingerprints | local[2] | standalone, two workers of one core | ratio |")
    print("| ---: | ---: | ---: | ---: |")
    for n, r in standalone["sizes"].items():
        if n in local["sizes"]:
            a, b = local["sizes"][n]["spark_s"], r["spark_s"]
            print(f"| {n:,} | {a:.1f} s | {b:.1f} s | {b / a:.2f} x |")


def extrapolate(res: Dict[str, Any], query: Dict[str, float]) -> None:
    from rsimhash.spark._pairs import choose_blocks

    n, r = max(res["sizes"].items())
    run_s = sum(s["run_s"] for s in r["stages"])
    shuffle = sum(s["shuffle_write"] for s in r["stages"])
    per_fp_s = run_s / n
    per_row_bytes = shuffle / (n * r["tables"])
    big = 8_000_000_000
    blocks = choose_blocks(big, K)
    tables = math.comb(blocks, K)
    # Work that grows with the rows shuffled (a fingerprint per table) scales by the tables.
    cpu = per_fp_s * big * tables / r["tables"]
    volume = per_row_bytes * big * tables
    print(
        f"\nextrapolation from {n:,} ({r['tables']} tables): {per_fp_s * 1e6:.1f} executor-us a fingerprint, "
        f"{per_row_bytes:.0f} shuffle bytes a fingerprint and table"
    )
    print(
        f"8 x 10^9 fingerprints, k = {K}: {tables} tables ({blocks} blocks); {cpu / 3600:,.0f} executor-hours; "
        f"on 200 cores {cpu / 200 / 3600:.1f} h, on 2,000 cores {cpu / 2000 / 60:.0f} min; shuffle "
        f"{volume / 1e12:.1f} TB ({tables} items of ~{per_row_bytes:.0f} bytes a fingerprint, compressed)"
    )
    q = query["per_s"]
    print(
        f"10^6 queries against 8 x 10^9 (near_duplicates_of: the queries' index shipped to the executors, "
        f"the corpus streamed past it): {big / q / 3600:,.1f} core-hours of query_batch at {q:,.0f}/s a core, "
        f"{big / q / 200:,.0f} s on 200 cores, plus reading 64 GB of fingerprints (the paper: 100 s on 200 "
        f"mappers)"
    )


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sizes", default="1e6,1e7", help="comma-separated sizes (default %(default)s)")
    p.add_argument("--repeat", type=int, default=3, help="runs of each job (median; default %(default)s)")
    p.add_argument("--data-dir", default=DATA_DIR)
    p.add_argument("--json", default=None, help="also write the figures as JSON")
    p.add_argument(
        "--masters",
        default="local,standalone",
        help="local (local[2]) and/or standalone (a master and two workers of one core and 2 GiB on 127.0.0.1, "
        "started and stopped here); default %(default)s",
    )
    p.add_argument(
        "--task-items",
        type=lambda x: int(float(x)),
        default=None,
        help="distinct values a reduce task holds at most (rsimhash.spark._pairs.TASK_ITEMS; default 2^22)",
    )
    p.add_argument("--skew", action="store_true", help="also 10^5 copies of one fingerprint and a dense radius-3 ball (local)")
    args = p.parse_args()
    os.makedirs(args.data_dir, exist_ok=True)
    sizes = [int(float(s)) for s in args.sizes.split(",") if s]
    import rsimhash
    from rsimhash.spark import _pairs

    if args.task_items:
        _pairs.TASK_ITEMS = args.task_items

    print(json.dumps(machine_info(rsimhash, np)))
    res: Dict[str, Any] = {}
    for master in [m for m in args.masters.split(",") if m]:
        if master == "local":
            res[master] = run(sizes, args.repeat, args.data_dir, skewed=args.skew)
        elif master == "standalone":
            sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tests"))
            from spark_standalone import Standalone

            with Standalone(workers=2, cores=1, memory="2g") as cluster:
                res[master] = run(sizes, args.repeat, args.data_dir, cluster.url)
        else:
            p.error(f"--masters takes local and standalone, got {master!r}")
        report(res[master])
        if "skew" in res[master]:
            report_skew(res[master]["skew"])
    if "local" in res and "standalone" in res:
        compare(res["local"], res["standalone"])
    res["query"] = query_rate()
    print(f"\nIndex.query_batch against 10^6 on one thread: {res['query']['per_s']:,.0f} queries/s")
    for master, r in res.items():
        if master != "query":
            print(f"\nfrom the {master} run:")
            extrapolate(r, res["query"])
    if args.json:
        with open(args.json, "w") as f:
            json.dump(res, f, indent=1, default=str)
    return 0


if __name__ == "__main__":
    sys.exit(main())
