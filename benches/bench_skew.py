#!/usr/bin/env python3
"""Skewed corpora against uniform ones, path by path (issue: real corpora are skewed).

Each path runs on 10^6 random fingerprints, 10^6 copies of one fingerprint
and 10^6 draws from the 43,745 values within 3 bits of one centre, each run
in a fresh process (inputs made before the clock starts) that reports its
time and its own peak RSS (``VmHWM``). Rounds are interleaved and medians
taken. Targets: identical <= 3x random, ball <= 5x random, peak RSS <=
2x random + 300 MB. ``find_all`` is held to its answer instead: the ball
has some 1.3 * 10^7 pairs of first copies, random data none, so its rows
give the pairs and the time a pair.

Then the command line on real text: ~13k documents (``benches/corpus.py``)
plus one of them copied 10^5 times and 30 % of the documents copied again,
``rsimhash dedup`` against ``rsimhash fingerprint`` on the same file
(targets: <= 2x its time, <= 600 MB); and ``rsimhash.dedup(texts,
jaccard=0.9)`` on 2 * 10^4 copies of one document plus 2,000 others
against ``rsimhash.fingerprints`` of the same texts (target <= 6x).

    python benches/bench_skew.py               # everything, 3 rounds
    python benches/bench_skew.py --rounds 5 --n 1000000
    python benches/bench_skew.py --only paths  # or: cli, verified
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Any, Callable, Dict, List, Tuple

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
KINDS = ("random", "identical", "ball")


def fingerprints(kind: str, n: int) -> np.ndarray:
    rng = np.random.default_rng(7)
    if kind == "random":
        return rng.integers(0, 2**64 - 1, n, dtype=np.uint64, endpoint=True)
    if kind == "identical":
        return np.full(n, 0x0123_4567_89AB_CDEF, np.uint64)
    centre = 0x0123_4567_89AB_CDEF
    values = np.array(
        [centre ^ sum(1 << b for b in flip) for r in range(4) for flip in itertools.combinations(range(64), r)], dtype=np.uint64
    )
    assert len(values) == 43_745
    return values[rng.integers(0, len(values), n)]


def _index(fps: np.ndarray) -> Any:
    import rsimhash

    index = rsimhash.Index(3)
    index.add(fps)
    return index


# Each path: (what is built before the clock, what is timed).
PATHS: Dict[str, Tuple[Callable[[np.ndarray], Any], Callable[[Any], Any]]] = {
    "Index.add_unique": (lambda fps: fps, lambda fps: __import__("rsimhash").Index(3).add_unique(fps)),
    "Index.cluster": (_index, lambda index: index.cluster()),
    "Index.cluster(leader)": (_index, lambda index: index.cluster(method="leader")),
    "Index.find_all(copies=first)": (_index, lambda index: index.find_all(copies="first")),
    "batch.dedup": (lambda fps: fps, lambda fps: __import__("rsimhash").batch.dedup(fps, 3, progress=False)),
    "batch.dedup(64 MB)": (
        lambda fps: fps,
        lambda fps: __import__("rsimhash").batch.dedup(fps, 3, progress=False, memory_limit="64MB"),
    ),
    "batch.clusters": (lambda fps: fps, lambda fps: __import__("rsimhash").batch.clusters(fps, 3, progress=False)),
    "batch.clusters(leader)": (
        lambda fps: fps,
        lambda fps: __import__("rsimhash").batch.clusters(fps, 3, method="leader", progress=False),
    ),
    "batch.find_all(copies=first)": (
        lambda fps: fps,
        lambda fps: __import__("rsimhash").batch.find_all(fps, 3, copies="first", progress=False),
    ),
}


def peak_mb() -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def worker(path: str, kind: str, n: int) -> None:
    build, timed = PATHS[path]
    arg = build(fingerprints(kind, n))
    start = time.perf_counter()
    answer = timed(arg)
    seconds = time.perf_counter() - start
    pairs = len(answer) if path.startswith(("Index.find_all", "batch.find_all")) else 0
    print(json.dumps({"seconds": seconds, "peak_mb": peak_mb(), "pairs": pairs}))


def run_worker(*args: str) -> Dict[str, float]:
    out = subprocess.run([sys.executable, __file__, "--worker", *args], capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def cpu_name() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def bench_paths(n: int, rounds: int) -> bool:
    print(f"\n## Paths on {n:,} fingerprints, k = 3 (medians of {rounds}, each run a fresh process)\n")
    print("| path | random | identical | ball | identical / random | ball / random | peak MB r / i / b |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    ok = True
    for path in PATHS:
        got: Dict[str, List[Dict[str, float]]] = {k: [] for k in KINDS}
        for _ in range(rounds):
            for kind in KINDS:
                got[kind].append(run_worker(path, kind, str(n)))
        t = {k: statistics.median(r["seconds"] for r in got[k]) for k in KINDS}
        m = {k: statistics.median(r["peak_mb"] for r in got[k]) for k in KINDS}
        ri, rb = t["identical"] / t["random"], t["ball"] / t["random"]
        if "find_all" in path:
            # Held to the answer: the ball's pairs, not a ratio to random's none.
            pairs = got["ball"][0]["pairs"]
            note = f" ({pairs:,} pairs: {t['ball'] / max(pairs, 1) * 1e9:.0f} ns a pair)"
            flag = "" if ri <= 3 else "  MISSED"
        else:
            note = ""
            mem_ok = all(m[k] <= 2 * m["random"] + 300 for k in ("identical", "ball"))
            flag = "" if ri <= 3 and rb <= 5 and mem_ok else "  MISSED"
        ok &= not flag
        print(
            f"| {path} | {t['random']:.3f} s | {t['identical']:.3f} s | {t['ball']:.3f} s{note} | {ri:.2f} | "
            f"{rb:.2f} | {m['random']:.0f} / {m['identical']:.0f} / {m['ball']:.0f}{flag} |",
            flush=True,
        )
    return ok


def timed_command(cmd: List[str]) -> Dict[str, float]:
    """Wall seconds and peak RSS (MB) of a command, from GNU time if there, else wait4."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - start
    err = proc.stderr.read().decode() if proc.stderr else ""
    if status != 0:
        raise SystemExit(f"{cmd} failed: {err[-2000:]}")
    return {"seconds": seconds, "peak_mb": usage.ru_maxrss / 1024}


def bench_cli(rounds: int) -> bool:
    sys.path.insert(0, HERE)
    from corpus import load_docs  # type: ignore[import-not-found]

    docs = load_docs(64, seed=0)
    rng = np.random.default_rng(0)
    copied = docs[len(docs) // 2]
    records = [(i, d) for i, d in enumerate(docs)]
    records += [(len(records) + j, copied) for j in range(100_000)]
    again = rng.choice(len(docs), int(0.3 * len(docs)), replace=False)
    records += [(len(records) + j, docs[i]) for j, i in enumerate(again.tolist())]
    order = rng.permutation(len(records))
    with tempfile.TemporaryDirectory(prefix="rsimhash-skew-") as tmp:
        corpus = os.path.join(tmp, "corpus.jsonl")
        with open(corpus, "w") as f:
            for i in order.tolist():
                f.write(json.dumps({"id": records[i][0], "text": records[i][1]}) + "\n")
        size = os.path.getsize(corpus) / 1e6
        cli = [sys.executable, "-m", "rsimhash"]
        fp_cmd = cli + ["fingerprint", "--input", corpus, "--output", os.path.join(tmp, "fp.tsv"), "--quiet"]
        dd_cmd = cli + [
            "dedup",
            "--input",
            corpus,
            "--output",
            os.path.join(tmp, "kept.jsonl"),
            "--removed",
            os.path.join(tmp, "removed.tsv"),
            "--quiet",
        ]
        fp, dd = [], []
        for _ in range(rounds):
            fp.append(timed_command(fp_cmd))
            dd.append(timed_command(dd_cmd))
        tf, td = statistics.median(r["seconds"] for r in fp), statistics.median(r["seconds"] for r in dd)
        md = statistics.median(r["peak_mb"] for r in dd)
        ok = td <= 2 * tf and md <= 600
        print(
            f"\n## Command line on real text: {len(docs):,} documents + one copied 10^5 times + 30 % copied "
            f"again = {len(records):,} records, {size:.0f} MB (medians of {rounds})\n"
        )
        print("| command | seconds | peak MB | ratio |")
        print("| --- | --- | --- | --- |")
        print(f"| rsimhash fingerprint | {tf:.2f} | {statistics.median(r['peak_mb'] for r in fp):.0f} | 1 |")
        print(f"| rsimhash dedup --removed | {td:.2f} | {md:.0f} | {td / tf:.2f}{'' if ok else '  MISSED'} |")
        return ok


def verified_worker(what: str) -> None:
    import rsimhash

    sys.path.insert(0, HERE)
    from corpus import load_docs  # type: ignore[import-not-found]

    docs = load_docs(16, seed=1)
    others = docs[:2_000]
    texts = others[:1_000] + [docs[2_500]] * 20_000 + others[1_000:]
    start = time.perf_counter()
    if what == "dedup":
        keep = rsimhash.dedup(texts, jaccard=0.9)
        assert keep[1_000] and not keep[1_001:21_000].any()
    else:
        rsimhash.fingerprints(texts)
    print(json.dumps({"seconds": time.perf_counter() - start, "peak_mb": peak_mb()}))


def bench_verified(rounds: int) -> bool:
    got: Dict[str, List[Dict[str, float]]] = {"fingerprints": [], "dedup": []}
    for _ in range(rounds):
        for what in got:
            got[what].append(run_worker("verified", what, "0"))
    tf = statistics.median(r["seconds"] for r in got["fingerprints"])
    td = statistics.median(r["seconds"] for r in got["dedup"])
    ok = td <= 6 * tf
    print(f"\n## rsimhash.dedup(texts, jaccard=0.9): 2 * 10^4 copies of one document + 2,000 others (medians of {rounds})\n")
    print("| call | seconds | peak MB | ratio |")
    print("| --- | --- | --- | --- |")
    print(f"| rsimhash.fingerprints | {tf:.3f} | {statistics.median(r['peak_mb'] for r in got['fingerprints']):.0f} | 1 |")
    print(
        f"| rsimhash.dedup(jaccard=0.9) | {td:.3f} | {statistics.median(r['peak_mb'] for r in got['dedup']):.0f} | "
        f"{td / tf:.2f}{'' if ok else '  MISSED'} |"
    )
    return ok


def main() -> int:
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        if sys.argv[2] == "verified":
            verified_worker(sys.argv[3])
        else:
            worker(sys.argv[2], sys.argv[3], int(sys.argv[4]))
        return 0
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--n", type=float, default=1e6, help="fingerprints per path (default 10^6)")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--only", default="paths,cli,verified")
    args = p.parse_args()
    only = set(args.only.split(","))
    import rsimhash

    print(
        f"# rsimhash {rsimhash.__version__} on {cpu_name()}, {os.cpu_count()} cores, "
        f"Python {platform.python_version()}, numpy {np.__version__}, {time.strftime('%Y-%m-%d')}"
    )
    ok = True
    if "paths" in only:
        ok &= bench_paths(int(args.n), args.rounds)
    if "cli" in only:
        ok &= bench_cli(args.rounds)
    if "verified" in only:
        ok &= bench_verified(args.rounds)
    print("\nall targets held" if ok else "\nsome targets MISSED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
