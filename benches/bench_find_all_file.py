#!/usr/bin/env python3
"""``rsimhash find-all`` on a fingerprint file against ``batch.find_all`` on the array.

A file of ``--n`` (default 10**7) u64 fingerprints (seeded random values,
1 % of them a copy of an earlier one with 1 to 3 bits flipped) is written
once to ``--tmpdir``: one decimal value a line (``--format lines``, the
default), or a hash TSV (``--format tsv``: ``id<TAB>hash`` under a header,
the ids ``doc-0``, ``doc-1``, ...; the command then writes the pairs of
ids). Each round, interleaved:

* ``cli``: ``python -m rsimhash.cli find-all --input FILE --output OUT -k 3``
  in a subprocess, from start to exit (start-up, reading and parsing the
  file in the core, the distinct values, the index, the pairs written);
* ``batch``: ``rsimhash.batch.find_all(values, 3)`` on the parsed array,
  already in memory, in this process;
* ``read``: reading the file once (``cat FILE > /dev/null``, page cache).

Reported: medians (min..max) and the ratio the issue names:
cli / (batch + read), target <= 1.5. The pairs of both are checked equal.

Usage::

    python benches/bench_find_all_file.py               # 10^7 lines, 5 rounds
    python benches/bench_find_all_file.py --n 1000000 --rounds 3
    python benches/bench_find_all_file.py --format tsv   # the hash TSV
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from bench_fingerprint import installed_env, machine_info  # noqa: E402

TARGET = 1.5


def make_file(path: str, n: int, seed: int, tsv: bool = False) -> np.ndarray:
    rng = np.random.default_rng(seed)
    fps = rng.integers(0, np.iinfo(np.uint64).max, size=n, dtype=np.uint64, endpoint=True)
    planted = rng.choice(n, size=n // 100, replace=False)
    sources = rng.integers(0, n, size=len(planted))
    for bits in range(1, 4):
        flip = np.uint64(1) << rng.integers(0, 64, size=len(planted)).astype(np.uint64)
        fps[planted] = np.where(rng.random(len(planted)) < 1 / bits, fps[sources] ^ flip, fps[planted])
    if not os.path.exists(path):
        with open(path + ".part", "w") as f:
            if tsv:
                f.write("id\thash\n")
            for lo in range(0, n, 1 << 20):
                values = fps[lo : lo + (1 << 20)].tolist()
                if tsv:
                    f.write("".join(f"doc-{lo + i}\t{v}\n" for i, v in enumerate(values)))
                else:
                    f.write("\n".join(map(str, values)) + "\n")
        os.replace(path + ".part", path)
    return fps


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=10**7)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--tmpdir", default=tempfile.gettempdir())
    ap.add_argument("--format", choices=("lines", "tsv"), default="lines")
    args = ap.parse_args()

    import rsimhash

    tsv = args.format == "tsv"
    name = f"rsimhash-fps-{args.n}-seed{args.seed}" + (".tsv" if tsv else ".txt")
    path = os.path.join(args.tmpdir, name)
    fps = make_file(path, args.n, args.seed, tsv)
    info = machine_info(rsimhash, np)
    print(
        f"find-all: {path}, {args.n:,} lines, {os.path.getsize(path) / 1e6:.0f} MB; nproc {info['nproc']}, "
        f"{info['cpu']}, load average {info['loadavg']}",
        flush=True,
    )
    out = path + ".pairs"
    runs = {"cli": [], "batch": [], "read": []}
    found = None
    for r in range(args.rounds):
        t0 = time.perf_counter()
        subprocess.run(
            [sys.executable, "-m", "rsimhash.cli", "find-all", "--input", path, "--output", out, "-k", "3", "--quiet"],
            check=True,
            env=installed_env(),
        )
        runs["cli"].append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        found = rsimhash.batch.find_all(fps, 3)
        runs["batch"].append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        subprocess.run(["cat", path], stdout=subprocess.DEVNULL, check=True)
        runs["read"].append(time.perf_counter() - t0)
        print(f"  round {r + 1}: " + ", ".join(f"{k} {v[-1]:.2f} s" for k, v in runs.items()), flush=True)
    got = same_pairs(out, fps, np.asarray(found), tsv)
    os.remove(out)
    med = {k: statistics.median(v) for k, v in runs.items()}
    for k, v in runs.items():
        print(f"{k:6s} median {med[k]:.2f} s ({min(v):.2f}..{max(v):.2f})")
    ratio = med["cli"] / (med["batch"] + med["read"])
    print(
        f"cli / (batch.find_all + read) = {ratio:.2f} (target <= {TARGET}: {'met' if ratio <= TARGET else 'MISSED'}); "
        f"{len(got):,} pairs, the same from both"
    )
    return 0


def same_pairs(out: str, fps: np.ndarray, found: np.ndarray, tsv: bool) -> list:
    """The command's pairs, checked equal to ``batch.find_all``'s."""
    found = found.reshape(-1, 2)
    if tsv:
        # Pairs of records: ``doc-I<TAB>doc-J<TAB>distance`` under a header.
        with open(out) as f:
            next(f)
            got = [tuple(sorted(int(x[4:]) for x in line.split("\t")[:2])) for line in f]
        want = sorted(map(tuple, np.sort(found, axis=1).tolist()))
        assert sorted(got) == want, "find-all and batch.find_all disagree"
        return got
    # The CLI prints values (smaller first, a repeated value with itself).
    values, counts = np.unique(fps, return_counts=True)
    pairs = np.sort(fps[found], axis=1) if len(found) else np.empty((0, 2), np.uint64)
    want = {tuple(p) for p in pairs.tolist() if p[0] != p[1]} | {(int(v), int(v)) for v in values[counts > 1]}
    with open(out) as f:
        got = [tuple(map(int, line.strip("[]\n").split(", "))) for line in f]
    assert got == sorted(want), "find-all and batch.find_all disagree"
    return got


if __name__ == "__main__":
    sys.exit(main())
