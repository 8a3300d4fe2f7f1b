#!/usr/bin/env python3
"""The in-process Jaccard calls against the command line on the same records
(issue 38, item 8: Python must not be slower than the command line).

The corpus: ``--records`` records (default 55,000) made from ``--bases``
documents of ``corpus.py`` (default 3,600, each cut to its first
``--chars`` characters, default 2,000); the first record of each base is the
base itself, every other one a copy of a random base with 1 to 4 words
replaced, so that about 93 % of the records are near-duplicates of another
(as in the issue's corpus: 51,516 of 55k removed at 0.8). Records are
shuffled with the seed and written once as ``{"id", "text"}`` JSON lines to
``benches/data/`` (git-ignored) with a gzip copy.

Each round, interleaved so that a busy neighbour hits every row alike:

* ``dedup, in process``: ``rsimhash.dedup(texts, jaccard=T)`` on the texts
  already in memory, in a worker process that loaded them once;
* ``dedup, command line``: ``python -m rsimhash.cli dedup --input
  CORPUS.gz --jaccard T --output KEPT --removed REMOVED --quiet`` in a
  subprocess, timed from start to exit (start-up, gunzip, JSON, writing);
* with ``--pairs``, ``similar_pairs(texts, T)`` in the worker and
  ``rsimhash find-all --input CORPUS.gz --jaccard T`` the same way.

Before timing, the script checks that both dedups remove the same records.
Reported: the median (min..max) of each row and the in-process / command
line ratio of the medians (target: at most 1).

Usage::

    python benches/bench_jaccard.py                      # 55k records, 3 rounds
    python benches/bench_jaccard.py --rounds 5 --pairs
    python benches/bench_jaccard.py --records 10000 --bases 700 --rounds 3   # quick
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Dict, List, Optional

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import corpus as corpus_mod  # noqa: E402
from bench_dedup import gzip_copy, timed, warm  # noqa: E402
from bench_fingerprint import machine_info  # noqa: E402

DATA_DIR = os.path.join(HERE, "data")


def build_corpus(records: int, bases: int, chars: int, seed: int) -> str:
    """The benchmark's JSON lines file, written once and reused."""
    path = os.path.join(DATA_DIR, f"jaccard-seed{seed}-{records}r-{bases}b-{chars}c.jsonl")
    if os.path.exists(path):
        return path
    os.makedirs(DATA_DIR, exist_ok=True)
    docs = corpus_mod.load_docs(max(8, bases * 5000 / 1e6 * 1.3), seed=seed, verbose=True)
    if len(docs) < bases:
        raise SystemExit(f"corpus.py gave {len(docs):,} documents, fewer than --bases {bases:,}")
    base = [d[:chars] for d in docs[:bases]]
    rng = random.Random(seed + 38)
    texts = list(base)
    while len(texts) < records:
        words = base[rng.randrange(bases)].split(" ")
        for _ in range(rng.randint(1, 4)):
            words[rng.randrange(len(words))] = rng.choice(("the", "a", "new", "updated", "2024"))
        texts.append(" ".join(words))
    texts = texts[:records]
    rng.shuffle(texts)
    tmp = path + ".part"
    with open(tmp, "w", encoding="utf-8") as f:
        for i, t in enumerate(texts):
            f.write(json.dumps({"id": i, "text": t}, ensure_ascii=False) + "\n")
    os.replace(tmp, path)
    return path


class Worker:
    """The texts held in memory by a process of its own, timing the
    in-process calls on request (``dedup`` or ``pairs``)."""

    def __init__(self, path: str, threshold: float):
        self.proc = subprocess.Popen(
            [sys.executable, __file__, "--worker", path, repr(threshold)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.proc.stdout is not None
        self.records = int(self.proc.stdout.readline())

    def run(self, what: str) -> Dict[str, float]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(what + "\n")
        self.proc.stdin.flush()
        wall, count = self.proc.stdout.readline().split()
        return {"wall": float(wall), "count": int(count)}

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait()


def worker(path: str, threshold: float) -> int:
    import gc

    import numpy as np

    import rsimhash

    with open(path, "rb") as f:
        texts = [json.loads(line)["text"] for line in f if line.strip()]
    print(len(texts), flush=True)
    for line in sys.stdin:
        gc.disable()
        t0 = time.perf_counter()
        if line.strip() == "dedup":
            count = int(np.count_nonzero(~rsimhash.dedup(texts, jaccard=threshold)))
        else:
            count = len(rsimhash.similar_pairs(texts, threshold, progress=False)[0])
        wall = time.perf_counter() - t0
        gc.enable()
        print(wall, count, flush=True)
    return 0


def cli(sub: str, path: str, out_dir: str, threshold: float) -> List[str]:
    cmd = [sys.executable, "-m", "rsimhash.cli", sub, "--input", path, "--jaccard", str(threshold), "--quiet"]
    if sub == "dedup":
        return cmd + ["--output", os.path.join(out_dir, "kept.jsonl"), "--removed", os.path.join(out_dir, "removed.tsv")]
    return cmd + ["--output", os.path.join(out_dir, "pairs.tsv")]


def lines(path: str) -> int:
    with open(path, "rb") as f:
        return sum(1 for _ in f) - 1  # the header


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--records", type=int, default=55_000)
    ap.add_argument("--bases", type=int, default=3_600)
    ap.add_argument("--chars", type=int, default=2_000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--threshold", type=float, default=0.8)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--pairs", action="store_true", help="also similar_pairs against find-all --jaccard")
    args = ap.parse_args(argv)

    import numpy as np

    import rsimhash

    path = build_corpus(args.records, args.bases, args.chars, args.seed)
    gz = gzip_copy(path)
    warm(gz)
    work = Worker(path, args.threshold)
    info = machine_info(rsimhash, np)
    with gzip.open(gz, "rb") as f:
        size = sum(len(line) for line in f)
    print(
        f"rsimhash Jaccard in process vs command line: {path}, {work.records:,} records, {size / 1e6:.1f} MB of "
        f"JSON lines, threshold {args.threshold}; nproc {info['nproc']}, {info['cpu']}, Python {info['python']}, "
        f"load average {info['loadavg']}",
        flush=True,
    )
    rows = ["dedup, in process", "dedup, command line"]
    if args.pairs:
        rows += ["similar_pairs, in process", "find-all --jaccard, command line"]
    runs: Dict[str, List[Dict[str, float]]] = {name: [] for name in rows}
    with tempfile.TemporaryDirectory() as out_dir:
        for r in range(args.rounds):
            runs["dedup, in process"].append(work.run("dedup"))
            runs["dedup, command line"].append(timed(cli("dedup", gz, out_dir, args.threshold)))
            removed = lines(os.path.join(out_dir, "removed.tsv"))
            if removed != runs["dedup, in process"][-1]["count"]:
                raise SystemExit(f"the command line removed {removed:,}, the call {runs['dedup, in process'][-1]['count']:,}")
            if args.pairs:
                runs["similar_pairs, in process"].append(work.run("pairs"))
                runs["find-all --jaccard, command line"].append(timed(cli("find-all", gz, out_dir, args.threshold)))
            print(f"  round {r + 1}: " + ", ".join(f"{name} {res[-1]['wall']:.2f} s" for name, res in runs.items()), flush=True)
    work.close()

    print(f"\n{removed:,} of {work.records:,} records removed by both dedups\n")
    print("| run | median s (min..max) |")
    print("| --- | ---: |")
    summary: Dict[str, object] = {"bench": "jaccard_in_process", "records": work.records, "removed": removed, "runs": {}}
    for name, res in runs.items():
        walls = [x["wall"] for x in res]
        print(f"| {name} | {statistics.median(walls):.2f} ({min(walls):.2f}..{max(walls):.2f}) |")
        summary["runs"][name] = round(statistics.median(walls), 3)  # type: ignore[index]
    verdicts = []
    for a, b in (("dedup, in process", "dedup, command line"), ("similar_pairs, in process", "find-all --jaccard, command line")):
        if a in runs:
            ratio = statistics.median(x["wall"] for x in runs[a]) / statistics.median(x["wall"] for x in runs[b])
            verdicts.append(f"{a} / {b}: {ratio:.2f} (target <= 1): {'met' if ratio <= 1 else 'MISSED'}")
    for v in verdicts:
        print(v)
    summary["verdicts"], summary["machine"] = verdicts, info
    print("JSON " + json.dumps(summary))
    return 0


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "--worker":
        sys.exit(worker(sys.argv[2], float(sys.argv[3])))
    sys.exit(main())
