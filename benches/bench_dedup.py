#!/usr/bin/env python3
"""End-to-end throughput of ``rsimhash dedup`` against the core's fingerprinting.

The corpus is ``corpus.py``'s English documents (median ~4 KB) with a share
of them (``--dup-share``, default 0.2) replaced by a copy of an earlier
document with 1 to 4 words changed, as a crawl holds; written once as
``{"id", "text"}`` JSON lines to ``benches/data/`` (git-ignored, reused by
later runs), with a gzip copy (``gzip -6``) and a Parquet copy (columns id,
text) beside it. Each round, interleaved so a busy neighbour hits all alike:

* ``fingerprints``: ``rsimhash.fingerprints(texts)`` in this process on the
  texts already in memory (all cores): the core's speed, the reference;
* ``dedup``: ``python -m rsimhash.cli dedup --input CORPUS --output KEPT
  --removed REMOVED --quiet`` in a subprocess, timed from start to exit
  (start-up, reading, parsing, fingerprinting, the index, writing, fsync and
  rename), on the plain, the gzip and the Parquet file;
* ``zcat``: ``gzip -dc CORPUS.gz > /dev/null``, one thread: what the gzip
  input allows at best;
* four floors, what any dedup of these inputs to these outputs costs
  before it fingerprints a byte: ``disk floor``, the plain dedup's kept lines
  copied to a new file in the output directory with ``dd conv=fsync`` (the
  disk's write speed); ``parquet floor``, pyarrow decoding the Parquet
  input and encoding the share of its rows dedup keeps into a new file,
  fsynced, in a subprocess (its start-up included); ``read floor``, the
  input read once with ``cat`` (from the page cache, as dedup reads it);
  ``start-up floor``, Python starting and importing numpy (one OpenBLAS
  thread, as the command asks), which every run of the command pays first.

Files are read once before the rounds, so they are in the page cache, and
each command's outputs are removed before it starts (untimed): replacing
a file frees the old one's blocks, which would otherwise fall in the run.
Reported: medians (min..max) of records/s and MB/s (10^6 bytes of JSON
lines), CPU seconds (user + system: GNU time for the commands, the
worker's process time for ``fingerprints``), each dedup's peak RSS, and
the verdicts of issue 42's first item:

* JSON lines: the dedup's wall time at most 1.15 x the larger of the disk
  floor and its own CPU floor (its CPU seconds over the cores; beside it,
  the same floor with Python's start first, on one core), and its CPU
  seconds at most 1.5 x those of ``fingerprints`` (when missed: whether
  ``fingerprints``' CPU plus that of the reads and writes alone, the read
  floor's and the disk floor's less its own read, is already above it);
  and how busy the machine's cores were while it ran (``/proc/stat``): its
  own CPU, and the kernel's threads' (the writeback of its output) and any
  other process's, which its own CPU time leaves out;
* Parquet: at most 1.15 x the Parquet floor (beside it, its own CPU over
  the cores, and the floor's CPU plus ``fingerprints``' over the cores);
* outputs in memory (run with ``--tmpdir /dev/shm``): dedup at least 0.6 x
  ``fingerprints``, issue 28's plain target, whose line says whether the
  outputs were in memory;

and issue 28's others: Parquet dedup / fingerprints >= 0.4, each with the
best ratio its floor leaves, and gzip dedup time <= zcat time. ``--memory`` also runs dedup on the first quarter of the corpus:
peak memory must not grow with the input (beyond the index of kept records).

Usage::

    python benches/bench_dedup.py                          # 1 GB corpus, 5 rounds
    python benches/bench_dedup.py --size-mb 64 --rounds 3  # quick
    python benches/bench_dedup.py --memory                 # and peak RSS at a quarter of the input
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Any, Dict, List, Optional

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import corpus as corpus_mod  # noqa: E402
from bench_fingerprint import installed_env, machine_info  # noqa: E402

# dedup / fingerprints, start-up included, on JSON lines and on Parquet.
TARGETS = {"plain": 0.6, "parquet": 0.4}
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


def gzip_copy(path: str) -> str:
    """``path``.gz, made once with ``gzip -6`` (Python's gzip when there is no gzip)."""
    out = path + ".gz"
    if not os.path.exists(out):
        tmp = out + ".part"
        if shutil.which("gzip"):
            with open(tmp, "wb") as f:
                subprocess.run(["gzip", "-6", "-c", path], stdout=f, check=True)
        else:
            with open(path, "rb") as src, gzip.open(tmp, "wb", compresslevel=6) as dst:
                shutil.copyfileobj(src, dst, 1 << 24)
        os.replace(tmp, out)
    return out


def parquet_copy(path: str) -> str:
    """The corpus as Parquet (id int64, text string), made once."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    out = path[: -len(".jsonl")] + ".parquet"
    if not os.path.exists(out):
        tmp = out + ".part"
        writer = None
        with open(path, "rb") as f:
            while True:
                lines = f.readlines(64 << 20)
                if not lines:
                    break
                records = [json.loads(line) for line in lines]
                table = pa.table({"id": [r["id"] for r in records], "text": [r["text"] for r in records]})
                writer = writer or pq.ParquetWriter(tmp, table.schema)
                writer.write_table(table, row_group_size=16384)
        if writer is not None:
            writer.close()
        os.replace(tmp, out)
    return out


def head_copy(path: str, share: float) -> str:
    """The first ``share`` of the corpus's lines, made once."""
    out = path[: -len(".jsonl")] + f"-head{share:g}.jsonl"
    if not os.path.exists(out):
        limit = os.path.getsize(path) * share
        with open(path, "rb") as src, open(out + ".part", "wb") as dst:
            for line in src:
                if dst.tell() >= limit:
                    break
                dst.write(line)
        os.replace(out + ".part", out)
    return out


GNU_TIME = "/usr/bin/time" if os.path.exists("/usr/bin/time") else None


def machine_busy_seconds() -> Optional[float]:
    """CPU-seconds every core of the machine has been busy so far (user,
    nice, system, irq and softirq of ``/proc/stat``; not idle, I/O wait or
    the hypervisor's steal), or None where there is no ``/proc/stat``."""
    try:
        with open("/proc/stat") as f:
            fields = f.readline().split()
    except OSError:
        return None
    user, nice, system, _idle, _iowait, irq, softirq = map(int, fields[1:8])
    return (user + nice + system + irq + softirq) / os.sysconf("SC_CLK_TCK")


def outputs_of(cmd: List[str]) -> List[str]:
    """The files ``cmd`` (a dedup, ``dd`` or the Parquet floor) writes."""
    out = [cmd[i + 1] for i, arg in enumerate(cmd[:-1]) if arg in ("--output", "--removed")]
    out += [arg[3:] for arg in cmd if arg.startswith("of=")]
    if len(cmd) > 4 and cmd[1:3] == ["-c", PARQUET_FLOOR]:
        out.append(cmd[4])
    return out


def clear_outputs(cmd: List[str]) -> None:
    """Removes what ``cmd`` is about to write, and lets the disk settle,
    before the clock starts: a command that replaces a file frees the old
    one's blocks, 0.1 s of one core for 800 MB on this machine kind's disk,
    which ``dd`` pays as it opens its output and dedup as it renames its
    own over the old one; neither is the work being measured."""
    for path in outputs_of(cmd):
        try:
            os.unlink(path)
        except FileNotFoundError:
            pass
    os.sync()


def timed(cmd: List[str]) -> Dict[str, float]:
    """Wall seconds and, with GNU time, the peak RSS (MB) of one command,
    its outputs removed first (``clear_outputs``, untimed).

    The peak comes from ``/usr/bin/time -f %M``, a small process that starts
    the command: a child forked straight from this process would report this
    process's own memory as its peak."""
    clear_outputs(cmd)
    wrapped = [GNU_TIME, "-f", "RSIMHASH_BENCH_MAXRSS_KB=%M %U %S", *cmd] if GNU_TIME else cmd
    busy = machine_busy_seconds()
    t0 = time.perf_counter()
    proc = subprocess.run(wrapped, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=installed_env())
    wall = time.perf_counter() - t0
    busy_after = machine_busy_seconds()
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd[:6])} ... failed ({proc.returncode}): {proc.stderr.decode(errors='replace')}")
    out = {"wall": wall}
    if busy is not None and busy_after is not None:
        # Every core's busy time while the command ran: its own CPU, and the
        # kernel's threads' (the writeback of what it wrote) and any other
        # process's, which its own CPU time leaves out.
        out["machine_cpu"] = busy_after - busy
    for line in proc.stderr.decode(errors="replace").splitlines():
        if line.startswith("RSIMHASH_BENCH_MAXRSS_KB="):
            rss, user, system = line.split("=", 1)[1].split()
            out["maxrss_mb"] = int(rss) / 1024
            out["cpu"] = float(user) + float(system)
    return out


def dedup_cmd(path: str, out_dir: str, extra: List[str]) -> List[str]:
    suffix = ".parquet" if path.endswith(".parquet") else ".jsonl"
    return [
        sys.executable,
        "-m",
        "rsimhash.cli",
        "dedup",
        "--input",
        path,
        "--output",
        os.path.join(out_dir, "kept" + suffix),
        "--removed",
        os.path.join(out_dir, "removed.tsv"),
        "--quiet",
        *extra,
    ]


# pyarrow alone: decode every column of the input on one thread while the
# main one encodes the first ``share`` of each batch's rows (dedup keeps that
# share, spread through the file) into a new file, then fsync it. The two
# overlap as dedup's reader and writer do.
PARQUET_FLOOR = """
import math, os, queue, sys, threading
import pyarrow.parquet as pq
src, out, share = sys.argv[1], sys.argv[2], float(sys.argv[3])
f = pq.ParquetFile(src, pre_buffer=False)
batches = queue.Queue(4)
def read():
    for i in range(f.num_row_groups):
        batches.put(f.read_row_group(i))
    batches.put(None)
threading.Thread(target=read, daemon=True).start()
with pq.ParquetWriter(out, f.schema_arrow) as w:
    while (t := batches.get()) is not None:
        w.write_table(t.slice(0, math.ceil(t.num_rows * share)))
fd = os.open(out, os.O_RDONLY)
os.fsync(fd)
os.close(fd)
"""


STARTUP_FLOOR = "import os; os.environ.setdefault('OPENBLAS_NUM_THREADS', '1'); import numpy"


def io_cpu(runs: Dict[str, List[Dict[str, float]]], kept_share: Optional[float]) -> Optional[float]:
    """The kernel's CPU seconds for reading the input and writing the kept
    lines: the read floor's, and the disk floor's less its own read of what
    it writes (dd reads the kept lines too). ``None`` without the floors."""
    if "disk floor" not in runs or "read floor" not in runs or kept_share is None:
        return None
    read, write = median_of(runs["read floor"], "cpu"), median_of(runs["disk floor"], "cpu")
    return read + max(0.0, write - read * kept_share)


def floor_cmds(out_dir: str, inputs: Dict[str, str], extra: List[str]) -> Dict[str, List[str]]:
    """The floors' commands, from the kept outputs of a first dedup of each
    input (with the timed runs' flags; run here once, not timed)."""
    cmds: Dict[str, List[str]] = {}
    if "plain" in inputs:
        subprocess.run(dedup_cmd(inputs["plain"], out_dir, extra), check=True, env=installed_env())
        src = os.path.join(out_dir, "floor-source.jsonl")
        os.replace(os.path.join(out_dir, "kept.jsonl"), src)
        warm(src)
        dst = os.path.join(out_dir, "floor.jsonl")
        cmds["disk floor"] = ["dd", f"if={src}", f"of={dst}", "bs=8M", "conv=fsync", "status=none"]
        # The input read once (from the page cache, as dedup reads it): with
        # the disk floor, the CPU any dedup spends on its reads and writes.
        cmds["read floor"] = ["cat", inputs["plain"]]
        # What any Python command spends before its first record: the
        # interpreter and numpy, with one OpenBLAS thread as the command has.
        cmds["start-up floor"] = [sys.executable, "-c", STARTUP_FLOOR]
    if "parquet" in inputs:
        import pyarrow.parquet as pq

        subprocess.run(dedup_cmd(inputs["parquet"], out_dir, extra), check=True, env=installed_env())
        kept = pq.ParquetFile(os.path.join(out_dir, "kept.parquet")).metadata.num_rows
        share = kept / pq.ParquetFile(inputs["parquet"]).metadata.num_rows
        out = os.path.join(out_dir, "floor.parquet")
        cmds["parquet floor"] = [sys.executable, "-c", PARQUET_FLOOR, inputs["parquet"], out, repr(share)]
    return cmds


def load_texts(path: str) -> List[str]:
    with open(path, "rb") as f:
        return [json.loads(line)["text"] for line in f if line.strip()]


class FingerprintWorker:
    """``rsimhash.fingerprints`` on the corpus's texts, held in memory by a
    process of its own: this one stays small, so the peak RSS of each
    command it starts is the command's own (a child forked from a process
    holding a gigabyte of texts reports that gigabyte as its peak)."""

    def __init__(self, path: str):
        self.proc = subprocess.Popen(
            [sys.executable, __file__, "--fingerprint-worker", path], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )
        assert self.proc.stdout is not None
        self.records, self.text_bytes = (int(x) for x in self.proc.stdout.readline().split())

    def time(self) -> Dict[str, float]:
        """Wall and CPU seconds of one call."""
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write("go\n")
        self.proc.stdin.flush()
        wall, cpu = (float(x) for x in self.proc.stdout.readline().split())
        return {"wall": wall, "cpu": cpu}

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait()


def fingerprint_worker(path: str) -> int:
    import rsimhash

    texts = load_texts(path)
    print(len(texts), sum(len(t.encode("utf-8")) for t in texts), flush=True)
    for _ in sys.stdin:
        t0, c0 = time.perf_counter(), time.process_time()
        rsimhash.fingerprints(texts)
        print(time.perf_counter() - t0, time.process_time() - c0, flush=True)
    return 0


def median_of(rounds: List[Dict[str, float]], key: str) -> float:
    return statistics.median(r[key] for r in rounds)


def floor_verdicts(runs: Dict[str, List[Dict[str, float]]], cores: int, kept_share: Optional[float] = None) -> List[str]:
    """Issue 42, item 1: each dedup against what the hardware allows in the
    same run. ``kept_share``: the kept lines' bytes over the input's."""
    out = []
    has_cpu = all("cpu" in x for name in ("plain", "fingerprints") if name in runs for x in runs[name])
    if "plain" in runs and has_cpu:
        wall, cpu = median_of(runs["plain"], "wall"), median_of(runs["plain"], "cpu")
        fp_cpu = median_of(runs["fingerprints"], "cpu")
        cpu_floor = cpu / cores
        if "disk floor" in runs:
            disk = median_of(runs["disk floor"], "wall")
            floor = max(disk, cpu_floor)
            out.append(
                f"plain dedup {wall:.2f} s = {wall / floor:.2f} x its floor {floor:.2f} s (the larger of the disk floor "
                f"{disk:.2f} s and its CPU floor {cpu:.2f} CPU-s / {cores} cores = {cpu_floor:.2f} s; target <= 1.15): "
                f"{'met' if wall <= 1.15 * floor else 'MISSED'}"
            )
        if "start-up floor" in runs and all("cpu" in x for x in runs["start-up floor"]):
            # Python's start runs on one thread before any work can be shared.
            start_wall, start_cpu = median_of(runs["start-up floor"], "wall"), median_of(runs["start-up floor"], "cpu")
            serial_cpu = start_wall + max(0.0, cpu - start_cpu) / cores
            serial = max(disk if "disk floor" in runs else 0.0, serial_cpu)
            out.append(
                f"plain dedup: with Python's and numpy's start on one core first (the start-up floor, {start_wall:.2f} s), "
                f"its CPU floor is {start_wall:.2f} + ({cpu:.2f} - {start_cpu:.2f}) / {cores} = {serial_cpu:.2f} s; "
                f"the run {wall / serial:.2f} x the larger of it and the disk floor"
            )
        if all("machine_cpu" in x for x in runs["plain"]):
            machine = median_of(runs["plain"], "machine_cpu")
            out.append(
                f"plain dedup: the {cores} cores were {machine / (wall * cores):.0%} busy while it ran, {machine:.2f} "
                f"CPU-s: {cpu:.2f} its own, {max(0.0, machine - cpu):.2f} the kernel's threads' (its writeback) and "
                f"other processes'; that work over the cores takes {machine / cores:.2f} s, and the run "
                f"{wall / (machine / cores):.2f} x that"
            )
        verdict = "met" if cpu <= 1.5 * fp_cpu else "MISSED"
        io = io_cpu(runs, kept_share)
        if verdict == "MISSED" and io is not None:
            # The kernel's work of reading the input and writing the kept
            # lines, and the interpreter's start, beside the fingerprints' own CPU.
            start = median_of(runs["start-up floor"], "cpu") if "start-up floor" in runs else 0.0
            least = fp_cpu + io + start
            reach = "the target is below this machine's floor" if least > 1.5 * fp_cpu else "the target is within reach"
            verdict += (
                f"; the reads and writes alone (the read floor's {median_of(runs['read floor'], 'cpu'):.2f} CPU-s and "
                f"the disk floor's {median_of(runs['disk floor'], 'cpu'):.2f}, less its read) cost {io:.2f} CPU-s and "
                f"Python's and numpy's start {start:.2f}, so fingerprints plus them is {least:.2f} CPU-s = "
                f"{least / fp_cpu:.2f} x fingerprints: {reach}"
            )
        out.append(f"plain dedup CPU {cpu:.2f} s = {cpu / fp_cpu:.2f} x fingerprints' {fp_cpu:.2f} s (target <= 1.5): {verdict}")
    if "parquet" in runs and "parquet floor" in runs:
        wall, floor = median_of(runs["parquet"], "wall"), median_of(runs["parquet floor"], "wall")
        out.append(
            f"parquet dedup {wall:.2f} s = {wall / floor:.2f} x the Parquet floor {floor:.2f} s (target <= 1.15): "
            f"{'met' if wall <= 1.15 * floor else 'MISSED'}"
        )
        if all(name in runs and all("cpu" in x for x in runs[name]) for name in ("parquet", "parquet floor", "fingerprints")):
            # The dedup's own CPU over the cores, and the floor's plus the
            # fingerprints', say how much of the gap is work and how much
            # is idle cores.
            cpu, floor_cpu = median_of(runs["parquet"], "cpu"), median_of(runs["parquet floor"], "cpu")
            least = floor_cpu + median_of(runs["fingerprints"], "cpu")
            out.append(
                f"parquet dedup: its {cpu:.2f} CPU-s over {cores} cores take {cpu / cores:.2f} s = "
                f"{cpu / cores / floor:.2f} x the Parquet floor; the floor's {floor_cpu:.2f} CPU-s and the "
                f"fingerprints' together {least:.2f} CPU-s, {least / cores:.2f} s = {least / cores / floor:.2f} x"
            )
    return out


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--size-mb", type=float, default=1000, help="corpus size in 10^6 bytes of text (default 1000)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--dup-share", type=float, default=0.2, help="share of planted near-duplicates (default 0.2)")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--memory", action="store_true", help="also peak RSS on the first quarter of the corpus")
    ap.add_argument("--no-gzip", action="store_true")
    ap.add_argument("--no-parquet", action="store_true")
    ap.add_argument("--no-floors", action="store_true", help="without the disk and pyarrow floors")
    ap.add_argument("--tmpdir", default=None, help="where the outputs go (default: the system's temp dir)")
    ap.add_argument("--cli-args", default="", help="extra flags for rsimhash dedup, e.g. '--threads 1'")
    args = ap.parse_args(argv)

    import numpy as np

    import rsimhash

    path = build_corpus(args.size_mb, args.seed, args.dup_share)
    inputs = {"plain": path}
    if not args.no_gzip:
        inputs["gzip"] = gzip_copy(path)
    if not args.no_parquet:
        inputs["parquet"] = parquet_copy(path)
    size = os.path.getsize(path)
    worker = FingerprintWorker(path)
    records, text_mb = worker.records, worker.text_bytes / 1e6
    for p in inputs.values():
        warm(p)
    info = machine_info(rsimhash, np)
    print(
        f"rsimhash dedup: {path}, {size / 1e6:.1f} MB of JSON lines ({text_mb:.1f} MB of text), "
        f"{records:,} records; nproc {info['nproc']}, {info['cpu']}, Python {info['python']}, "
        f"load average {info['loadavg']}",
        flush=True,
    )

    extra = args.cli_args.split()
    runs: Dict[str, List[Dict[str, float]]] = {name: [] for name in ["fingerprints", *inputs, "zcat"]}
    if "gzip" not in inputs:
        del runs["zcat"]
    with tempfile.TemporaryDirectory(dir=args.tmpdir) as out_dir:
        floors = {} if args.no_floors else floor_cmds(out_dir, inputs, extra)
        runs.update({name: [] for name in floors})
        source = os.path.join(out_dir, "floor-source.jsonl")
        kept_share = os.path.getsize(source) / os.path.getsize(path) if os.path.exists(source) else None
        for r in range(args.rounds):
            runs["fingerprints"].append(worker.time())
            for name, p in inputs.items():
                runs[name].append(timed(dedup_cmd(p, out_dir, extra)))
            if "gzip" in inputs:
                runs["zcat"].append(timed(["gzip", "-dc", inputs["gzip"]]))
            for name, cmd in floors.items():
                runs[name].append(timed(cmd))
            print(f"  round {r + 1}: " + ", ".join(f"{name} {res[-1]['wall']:.2f} s" for name, res in runs.items()), flush=True)
        quarter = None
        if args.memory:
            small = head_copy(path, 0.25)
            warm(small)
            quarter = [timed(dedup_cmd(small, out_dir, extra)) for _ in range(2)]
            quarter_size = os.path.getsize(small)
    worker.close()

    fp_wall = median_of(runs["fingerprints"], "wall")
    print("\n| run | median s (min..max) | records/s | MB/s of JSON lines | vs fingerprints | CPU s | peak RSS |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    summary: Dict[str, Any] = {
        "bench": "dedup_cli",
        "size_mb": round(size / 1e6, 1),
        "records": records,
        "text_mb": round(text_mb, 1),
        "rounds": args.rounds,
        "runs": {},
    }
    for name, res in runs.items():
        walls = [x["wall"] for x in res]
        med = statistics.median(walls)
        rss = max((x.get("maxrss_mb", 0.0) for x in res), default=0.0)
        label = {
            "fingerprints": "`fingerprints` (texts in memory)",
            "zcat": "`gzip -dc` (1 thread)",
            "disk floor": "floor: the kept lines to disk (`dd conv=fsync`)",
            "parquet floor": "floor: pyarrow decodes the input, encodes the kept share",
            "read floor": "floor: the input read (`cat`, from the page cache)",
            "start-up floor": "floor: Python and numpy start (`import numpy`)",
        }.get(name, f"`rsimhash dedup`, {name}")
        ratio = fp_wall / med
        cpu = statistics.median(x["cpu"] for x in res) if all("cpu" in x for x in res) else None
        print(
            f"| {label} | {med:.2f} ({min(walls):.2f}..{max(walls):.2f}) | {records / med:,.0f} | "
            f"{size / 1e6 / med:.0f} | {ratio:.2f} x | {'' if cpu is None else f'{cpu:.2f}'} | "
            f"{f'{rss:.0f} MB' if rss else ''} |"
        )
        summary["runs"][name] = {
            "median_s": round(med, 3),
            "min_s": round(min(walls), 3),
            "max_s": round(max(walls), 3),
            "ratio_to_fingerprints": round(ratio, 3),
            "cpu_s": None if cpu is None else round(cpu, 3),
            "peak_rss_mb": round(rss),
        }
    verdicts = floor_verdicts(runs, info["nproc"], kept_share)
    in_memory = args.tmpdir is not None and args.tmpdir.startswith("/dev/shm")
    for name in ("plain", "parquet"):
        if name in runs:
            ratio = fp_wall / median_of(runs[name], "wall")
            target = TARGETS[name]
            floor = {"plain": "disk floor", "parquet": "parquet floor"}[name]
            best = f"; its floor allows at most {fp_wall / median_of(runs[floor], 'wall'):.2f} x" if floor in runs else ""
            io = io_cpu(runs, kept_share)
            if name == "plain" and best and io is not None and "start-up floor" in runs and "cpu" in runs["fingerprints"][0]:
                # Its floor is also the fingerprints' CPU and the reads and
                # writes spread over the cores, after the serial start.
                start = median_of(runs["start-up floor"], "wall")
                least = max(median_of(runs[floor], "wall"), (median_of(runs["fingerprints"], "cpu") + io) / info["nproc"] + start)
                best = (
                    f"; its floor allows at most {fp_wall / least:.2f} x (the larger of the disk floor and the "
                    f"fingerprints' CPU with the reads and writes over {info['nproc']} cores after Python's start, {least:.2f} s)"
                )
            # Issue 42 asks the plain ratio with the outputs in memory.
            where = ""
            if name == "plain":
                where = ", outputs in memory" if in_memory else ", outputs on disk (--tmpdir /dev/shm for memory)"
            verdicts.append(
                f"{name} dedup {ratio:.2f} x fingerprints (target >= {target}{where}): "
                f"{'met' if ratio >= target else 'MISSED'}{best}"
            )
    if "gzip" in runs:
        g, z = median_of(runs["gzip"], "wall"), median_of(runs["zcat"], "wall")
        verdicts.append(
            f"gzip dedup {g:.2f} s vs gzip -dc {z:.2f} s ({g / z:.2f} x; target <= 1 plus the "
            f"start-up and the fsync): {'met' if g <= z * 1.05 + 0.3 else 'MISSED'}"
        )
    if quarter is not None:
        full = max(x["maxrss_mb"] for x in runs["plain"])
        small_rss = max(x["maxrss_mb"] for x in quarter)
        verdicts.append(
            f"peak RSS {small_rss:.0f} MB on {quarter_size / 1e6:.0f} MB of input, {full:.0f} MB on {size / 1e6:.0f} MB"
        )
        summary["memory"] = {
            "quarter_mb": round(quarter_size / 1e6),
            "quarter_rss_mb": round(small_rss),
            "full_rss_mb": round(full),
        }
    for v in verdicts:
        print(v)
    summary["verdicts"] = verdicts
    summary["machine"] = info
    print("JSON " + json.dumps(summary))
    return 0


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--fingerprint-worker":
        sys.exit(fingerprint_worker(sys.argv[2]))
    sys.exit(main())
