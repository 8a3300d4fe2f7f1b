#!/usr/bin/env python3
"""Throughput of ``rsimhash.fingerprints`` against single-thread ``hashlib.md5`` and a plain FNV-1a loop.

On one deterministic English corpus (``benches/corpus.py``) this measures, in
interleaved rounds (every measurement once per round, ``--repeats`` rounds):

* ``fingerprints(docs, mode="words", width=3)`` with the default thread count
  (all cores) and with ``threads=1``; the call is timed on the list of ``str``
  exactly as users make it (UTF-8 conversion included);
* ``hashlib.md5(b).digest()`` for every document in a plain single-thread
  Python loop over the UTF-8 bytes, encoded beforehand (not timed);
* FNV-1a 64 over every byte of every document (``_rsimhash._fnv1a64_texts``:
  the same list of ``str``, collected the same way, on the same cores), all
  threads and one: the plain loop a fingerprint, which folds every byte
  into three shingles, is measured against;
* ``fingerprints(docs, mode="chars", width=4)``, default threads and
  ``threads=1``.

Throughput is MB/s with MB = 10**6 bytes of UTF-8 text; the medians over the
rounds are reported, and the ratios are computed from the medians, side by
side with their targets: words (all cores) >= 2 x md5 (one core) and
>= 0.75 x the FNV loop (all cores); chars (all cores) >= 1.5 x md5.

Usage::

    python benches/bench_fingerprint.py            # 64 MB, 5 rounds
    python benches/bench_fingerprint.py --quick    # 8 MB, 3 rounds (smoke test)
"""

from __future__ import annotations

import argparse
import gc
import hashlib
import json
import os
import platform
import statistics
import sys
import time
from typing import Callable, Dict, List, Tuple

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import corpus as corpus_mod  # noqa: E402

# (numerator, denominator, target): the targets, reported side by side.
TARGETS = [
    ("fp_words_all", "md5", 2.0),
    ("fp_words_all", "fnv_all", 0.75),
    ("fp_chars_all", "md5", 1.5),
]


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                if line.lower().startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def pkg_version(mod, name: str) -> str:
    v = getattr(mod, "__version__", None)
    if v:
        return str(v)
    try:
        from importlib.metadata import version

        return version(name)
    except Exception:  # noqa: BLE001
        return "unknown"


def installed_env() -> dict:
    """The environment for timing a command as users run it: with
    ``PYTHONDONTWRITEBYTECODE`` set (as some shells and containers set it),
    an editable build would compile every module of the package at each
    start, which an installed wheel (its bytecode written by pip) never does."""
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def machine_info(rsimhash, np) -> Dict[str, object]:
    try:
        usable = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        usable = os.cpu_count() or 1
    try:
        load = [round(x, 2) for x in os.getloadavg()]
    except OSError:
        load = None
    return {
        "nproc": usable,
        "cpu_count": os.cpu_count(),
        "cpu": cpu_model(),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "rsimhash": pkg_version(rsimhash, "rsimhash"),
        "numpy": np.__version__,
        "loadavg": load,
    }


def machine_busy_seconds() -> float:
    """CPU seconds all processes on the machine have used (from /proc/stat)."""
    try:
        with open("/proc/stat", encoding="ascii") as f:
            fields = f.readline().split()
    except OSError:
        return float("nan")
    # user nice system idle iowait irq softirq steal ...: busy = all but idle, iowait
    vals = [int(x) for x in fields[1:9]]
    busy = sum(vals) - vals[3] - vals[4]
    return busy / os.sysconf("SC_CLK_TCK")


def timed(fn: Callable[[], object]) -> Tuple[float, float, float]:
    """Return (wall seconds, this process's CPU seconds, other processes' CPU seconds)."""
    gc.collect()
    gc.disable()
    try:
        m0 = machine_busy_seconds()
        c0 = time.process_time()
        t0 = time.perf_counter()
        fn()
        wall = time.perf_counter() - t0
        cpu = time.process_time() - c0
        other = max(0.0, machine_busy_seconds() - m0 - cpu)
        return wall, cpu, other
    finally:
        gc.enable()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--size-mb", type=float, default=64, help="corpus size, 10^6 UTF-8 bytes")
    ap.add_argument("--seed", type=int, default=0, help="corpus seed")
    ap.add_argument("--repeats", type=int, default=5, help="interleaved rounds")
    ap.add_argument("--quick", action="store_true", help="8 MB, 3 rounds (smoke test)")
    ap.add_argument("--no-chars", action="store_true", help="skip the mode='chars' rows")
    args = ap.parse_args(argv)
    if args.quick:
        args.size_mb, args.repeats = 8, 3
    if args.repeats < 1:
        ap.error("--repeats must be >= 1")

    import numpy as np

    import rsimhash

    info = machine_info(rsimhash, np)
    print(f"machine: nproc={info['nproc']} (cpu_count {info['cpu_count']}), cpu: {info['cpu']}, loadavg {info['loadavg']}")
    print(f"python {info['python']}, rsimhash {info['rsimhash']}, numpy {info['numpy']}, {info['platform']}")

    t0 = time.perf_counter()
    corpus = corpus_mod.load_corpus(args.size_mb, args.seed, verbose=True)
    docs: List[str] = corpus.docs
    blobs: List[bytes] = [d.encode("utf-8") for d in docs]
    nbytes = sum(map(len, blobs))
    print(
        f"corpus: {len(docs)} docs, {nbytes / 1e6:.2f} MB UTF-8, seed {args.seed}, "
        f"source set {corpus.src_hash} (loaded in {time.perf_counter() - t0:.1f} s)"
    )

    fps = rsimhash.fingerprints
    fnv = rsimhash._rsimhash._fnv1a64_texts

    def md5_loop() -> None:
        md5 = hashlib.md5
        for b in blobs:
            md5(b).digest()

    cases = [
        ("fingerprints words w=3, default threads", "fp_words_all", lambda: fps(docs, mode="words", width=3)),
        ("fingerprints words w=3, threads=1", "fp_words_1t", lambda: fps(docs, mode="words", width=3, threads=1)),
        ("hashlib.md5 per doc, 1 thread", "md5", md5_loop),
        ("FNV-1a over every byte, default threads", "fnv_all", lambda: fnv(docs)),
        ("FNV-1a over every byte, threads=1", "fnv_1t", lambda: fnv(docs, threads=1)),
    ]
    if not args.no_chars:
        cases += [
            ("fingerprints chars n=4, default threads", "fp_chars_all", lambda: fps(docs, mode="chars", width=4)),
            ("fingerprints chars n=4, threads=1", "fp_chars_1t", lambda: fps(docs, mode="chars", width=4, threads=1)),
        ]

    # Sanity (untimed, doubles as warm-up): results are well formed and the
    # thread count does not change them.
    small = docs[:256]
    a = fps(small, mode="words", width=3)
    b = fps(small, mode="words", width=3, threads=1)
    assert isinstance(a, np.ndarray) and a.dtype == np.uint64 and a.shape == (len(small),), (
        type(a),
        getattr(a, "dtype", None),
        getattr(a, "shape", None),
    )
    assert np.array_equal(a, b), "threads=1 and default threads disagree"
    assert int(a[0]) == rsimhash.fingerprint(small[0]), "fingerprints != fingerprint"
    full_all = fps(docs, mode="words", width=3)
    assert full_all.shape == (len(docs),)
    del full_all
    hashlib.md5(blobs[0]).digest()
    assert int(fnv(small)[0]) == rsimhash.fnv1a64(small[0]), "_fnv1a64_texts != fnv1a64"

    times: Dict[str, List[float]] = {key: [] for _, key, _ in cases}
    par: Dict[str, List[float]] = {key: [] for _, key, _ in cases}
    cpu_s: Dict[str, List[float]] = {key: [] for _, key, _ in cases}
    other_cpu = 0.0
    wall_total = 0.0
    for r in range(args.repeats):
        row = []
        r_other = r_wall = 0.0
        for _label, key, fn in cases:
            dt, cpu, other = timed(fn)
            times[key].append(dt)
            par[key].append(cpu / dt)
            cpu_s[key].append(cpu)
            r_other += other
            r_wall += dt
            row.append(f"{key} {nbytes / dt / 1e6:.0f}")
        other_cpu += r_other
        wall_total += r_wall
        print(
            f"  round {r + 1}/{args.repeats}: " + ", ".join(row) + f" MB/s; other processes used {r_other / r_wall:.2f} cores",
            flush=True,
        )

    med = {key: statistics.median(v) for key, v in times.items()}
    mbps = {key: nbytes / med[key] / 1e6 for key in med}
    print()
    # MB per CPU-second of this process: what one core does, steadier than
    # the wall on a shared machine (a call that gets 0.9 of 2 cores still
    # says how fast each core it got went).
    per_cpu = {key: nbytes / statistics.median(v) / 1e6 for key, v in cpu_s.items()}
    print(f"{'measurement':44s} {'median MB/s':>11s} {'min..max MB/s':>15s} {'x md5':>7s} {'cpu/wall':>8s} {'MB/cpu-s':>9s}")
    for label, key, _ in cases:
        lo = nbytes / max(times[key]) / 1e6
        hi = nbytes / min(times[key]) / 1e6
        print(
            f"{label:44s} {mbps[key]:11.1f} {lo:7.0f}..{hi:<7.0f} {mbps[key] / mbps['md5']:7.3f} "
            f"{statistics.median(par[key]):8.2f} {per_cpu[key]:9.1f}"
        )
    foreign = other_cpu / wall_total if wall_total else 0.0
    try:
        load_end = [round(x, 2) for x in os.getloadavg()]
    except OSError:
        load_end = None
    print(
        f"other processes used {foreign:.2f} of {info['nproc']} cores on average while timing "
        f"(loadavg at end {load_end}); cpu/wall = this process's CPU seconds per second"
    )
    print()
    ratios = {}
    for num, den, target in TARGETS:
        if num not in mbps:
            continue
        ratio = mbps[num] / mbps[den]
        ratios[f"{num}/{den}"] = ratio
        print(f"{num} / {den} = {ratio:.3f} (target >= {target}: {'met' if ratio >= target else 'MISSED'})")
    print(
        f"words, 1 thread / md5 = {mbps['fp_words_1t'] / mbps['md5']:.3f}; "
        f"words, 1 thread / FNV loop, 1 thread = {mbps['fp_words_1t'] / mbps['fnv_1t']:.3f}"
    )
    # The same ratios from CPU time: what the all-core calls would give on
    # idle cores (each core as fast as the CPU time says, every core busy),
    # against md5 on one.
    cores = info["nproc"]
    cpu_ratios = {}
    for num, den, target in TARGETS:
        if num not in per_cpu:
            continue
        scale = cores if den == "md5" else 1
        ratio = per_cpu[num] * scale / per_cpu[den]
        cpu_ratios[f"{num}/{den}"] = ratio
        print(
            f"from CPU time, on {cores} idle cores: {num} / {den} = {ratio:.3f} "
            f"(target >= {target}: {'met' if ratio >= target else 'MISSED'})"
        )

    summary = {
        "bench": "fingerprint",
        "corpus_mb": round(nbytes / 1e6, 2),
        "docs": len(docs),
        "seed": args.seed,
        "src_hash": corpus.src_hash,
        "repeats": args.repeats,
        **{f"{k}_mbps": round(v, 1) for k, v in mbps.items()},
        "ratios": {k: round(v, 3) for k, v in ratios.items()},
        "mb_per_cpu_s": {k: round(v, 1) for k, v in per_cpu.items()},
        "ratios_from_cpu_time": {k: round(v, 3) for k, v in cpu_ratios.items()},
        "targets": {f"{n}/{d}": t for n, d, t in TARGETS},
        "cpu_per_wall_words_all": round(statistics.median(par["fp_words_all"]), 2),
        "other_procs_cores": round(foreign, 2),
        **{k: info[k] for k in ("nproc", "cpu", "python", "rsimhash", "numpy", "loadavg")},
        "loadavg_end": load_end,
    }
    print("JSON " + json.dumps(summary, sort_keys=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
