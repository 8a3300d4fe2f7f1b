#!/usr/bin/env python3
"""The command line on sharded input beside one file of the same records (issue 27).

Data (made once with a seed, outside the repository, ``--dir``; reused by
later runs of the same size): ``--size`` MB of JSON lines (default 1000,
uncompressed), records of 40 to 400 words of a fixed vocabulary, 30 % of
them an earlier record with 0 to 4 words replaced; written as ``--shards``
gzip shards (default 64, ``part-00000.jsonl.gz`` ...) and as one gzip file
of the same records in the same order (both at gzip level 1, to make them
quickly; both sides read the same compression).

Each run is a fresh process, timed from start to exit:
``rsimhash dedup --input DIR --output OUT_DIR`` (one gzip output per
shard) and ``rsimhash dedup --input ONE.jsonl.gz --output ONE_OUT.jsonl.gz``,
rounds interleaved, medians taken. The concatenation of the shard outputs
must equal the single output (checked once, decompressed). Target: sharded
throughput at least 0.9x the single file's.

    python benches/bench_shards.py                      # ~1 GB, 64 shards, 3 rounds
    python benches/bench_shards.py --size 100 --rounds 3  # a quick run
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import os
import platform
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Any, Dict, List


def default_dir() -> str:
    base = "/work/tmp" if os.path.isdir("/work/tmp") else tempfile.gettempdir()
    return os.path.join(base, "rsimhash-shards")


def make_data(directory: str, size_mb: int, shards: int, seed: int) -> Dict[str, Any]:
    """The shards and the single file, made once for these settings."""
    tag = f"{size_mb}mb-{shards}-{seed}"
    where = os.path.join(directory, tag)
    done = os.path.join(where, "done.json")
    if os.path.exists(done):
        with open(done) as f:
            return dict(json.load(f))
    shutil.rmtree(where, ignore_errors=True)
    os.makedirs(os.path.join(where, "shards"))
    rng = random.Random(seed)
    vocab = sorted({"".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(2, 9))) for _ in range(20000)})
    target = size_mb * 1_000_000
    per_shard = target // shards
    single = gzip.open(os.path.join(where, "one.jsonl.gz"), "wb", compresslevel=1)
    texts: List[str] = []
    written = records = 0
    for s in range(shards):
        lines = []
        shard_bytes = 0
        while shard_bytes < per_shard:
            if texts and rng.random() < 0.3:
                words = rng.choice(texts).split()
                for _ in range(rng.choice([0, 1, 2, 3, 4])):
                    words[rng.randrange(len(words))] = rng.choice(vocab)
                text = " ".join(words)
            else:
                text = " ".join(rng.choices(vocab, k=rng.randint(40, 400)))
            if len(texts) < 50_000:
                texts.append(text)
            else:
                texts[rng.randrange(len(texts))] = text
            line = json.dumps({"id": records, "text": text}) + "\n"
            lines.append(line)
            shard_bytes += len(line)
            records += 1
        data = "".join(lines).encode("utf-8")
        with gzip.open(os.path.join(where, "shards", f"part-{s:05d}.jsonl.gz"), "wb", compresslevel=1) as f:
            f.write(data)
        single.write(data)
        written += len(data)
    single.close()
    info = {"where": where, "bytes": written, "records": records, "shards": shards}
    with open(done, "w") as f:
        json.dump(info, f)
    return info


def digest(paths: List[str]) -> "tuple[str, int]":
    """SHA-256 of the decompressed concatenation of ``paths``, and its lines."""
    h = hashlib.sha256()
    lines = 0
    for path in paths:
        with gzip.open(path, "rb") as f:
            while True:
                block = f.read(1 << 22)
                if not block:
                    break
                h.update(block)
                lines += block.count(b"\n")
    return h.hexdigest(), lines


def run(args: List[str]) -> float:
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "rsimhash.cli", *args], capture_output=True)
    seconds = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"failed: {' '.join(args)}\n{proc.stderr.decode(errors='replace')}")
    return seconds


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size", type=int, default=1000, help="MB of JSON lines (uncompressed). Default: %(default)s")
    ap.add_argument("--shards", type=int, default=64)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seed", type=int, default=27)
    ap.add_argument("--dir", default=default_dir())
    opts = ap.parse_args()
    t0 = time.perf_counter()
    data = make_data(opts.dir, opts.size, opts.shards, opts.seed)
    made = time.perf_counter() - t0
    where = data["where"]
    outs = os.path.join(where, "out")
    shutil.rmtree(outs, ignore_errors=True)
    os.makedirs(outs)
    times: Dict[str, List[float]] = {"sharded": [], "single": []}
    for r in range(opts.rounds):
        for kind in ("sharded", "single") if r % 2 == 0 else ("single", "sharded"):
            target = os.path.join(outs, f"{kind}-{r}" + ("" if kind == "sharded" else ".jsonl.gz"))
            source = os.path.join(where, "shards") if kind == "sharded" else os.path.join(where, "one.jsonl.gz")
            times[kind].append(run(["dedup", "--input", source, "--output", target, "-q"]))
            if r > 0:  # keep the disk from filling: the first round's outputs are compared below
                if kind == "sharded":
                    shutil.rmtree(target)
                else:
                    os.remove(target)
    names = sorted(n for n in os.listdir(os.path.join(outs, "sharded-0")) if n.endswith(".gz"))
    sharded_digest, _ = digest([os.path.join(outs, "sharded-0", n) for n in names])
    single_digest, kept = digest([os.path.join(outs, "single-0.jsonl.gz")])
    equal = sharded_digest == single_digest
    shutil.rmtree(outs, ignore_errors=True)
    med = {k: statistics.median(v) for k, v in times.items()}
    mbps = {k: data["bytes"] / 1e6 / med[k] for k in med}
    result = {
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, shared",
        "bytes": data["bytes"],
        "records": data["records"],
        "kept": kept,
        "shards": data["shards"],
        "data_made_s": round(made, 1),
        "times_s": {k: [round(t, 2) for t in v] for k, v in times.items()},
        "median_s": {k: round(v, 2) for k, v in med.items()},
        "mb_per_s": {k: round(v, 1) for k, v in mbps.items()},
        "sharded_over_single_throughput": round(med["single"] / med["sharded"], 3),
        "outputs_equal": equal,
    }
    print(json.dumps(result, indent=1))
    if not equal:
        raise SystemExit("the sharded outputs differ from the single file's")


if __name__ == "__main__":
    main()
