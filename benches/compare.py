#!/usr/bin/env python3
"""rsimhash side by side with the libraries users pick today, on the same
seeded data in one run: all pairs within k bits, single-query latency, the
fingerprint throughput and the near-duplicate quality on real text, each
with its peak memory.

Peers are used when installed; this script installs nothing. Their install
lines (``compare_tools.TOOLS`` has them too)::

    pip install hammingbird gaoya datasketch rensa
    python -m venv .venv-1e0ng && .venv-1e0ng/bin/pip install simhash "numpy<2"
    python -m venv .venv-cpp && .venv-cpp/bin/pip install simhash-pybind numpy
    python benches/compare.py --python simhash=.venv-1e0ng/bin/python \
        --python simhash-pybind=.venv-cpp/bin/python

The two ``simhash`` packages, the pure Python one (1e0ng) and
``simhash-pybind`` (the original simhash-cpp), share their import name, so
each runs in an interpreter of its own (``--python TOOL=PYTHON``); the pure
Python one also fails under numpy 2 (a ``uint8`` overflow in its feature
weights), hence ``numpy<2`` there, while the others get today's numpy.

Every measurement is a process of its own (``compare_tools.py``): loading the
input is not timed, the tool's work is; peak memory is the process's peak
resident set (``VmHWM``), next to a process that only loads the input.
Rounds are interleaved (every tool once, then again), the tables show
medians; a tool slower than ``--slow`` seconds in the first round is not
repeated. "speed vs rsimhash" is rsimhash's time over the tool's (0.1 x: ten
times slower).

* **All pairs within k = 3**: distinct random 64-bit values with planted
  near-duplicates (10 % copies of an earlier value with 1 to 3 bits flipped,
  2 % with exactly 4), at ``--pairs-sizes``. Every exact tool's pairs are
  compared with the reference: numpy brute force where it ran, else rsimhash.
  The script exits with status 1 when rsimhash's pairs or query results
  differ from brute force's, or a run of rsimhash fails (a peer's difference
  or failure is reported, not an error).
* **Query latency**: an index of the same data at ``--query-sizes``, then
  ``--queries`` calls of one fingerprint each (half stored values with 0 to 3
  bits flipped, half random), each call timed; build time too. Results are
  compared query by query.
* **Texts**: the corpus of ``bench_quality.py`` (real documentation in many
  languages); each tool's signatures of all its texts are timed (MB/s), then
  its pairs, which are scored against the exact Jaccard truth of SPEC v1 word
  3-shingle sets at 0.9 and 0.8. Simhash peers use their own features (said
  in the table); the MinHash peers get the truth's own shingle sets. gaoya's
  pairs are also checked against an exact search over its own signatures.

Usage::

    python benches/compare.py                         # full run (about 30 min on 2 cores)
    python benches/compare.py --quick                 # under a minute, whatever is installed
    python benches/compare.py --results benches/RESULTS.md
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import compare_tools as ct  # noqa: E402
from bench_index import flip_bits  # noqa: E402

K = 3


# --------------------------------------------------------------------------
# data


def planted(n: int, seed: int) -> np.ndarray:
    """n distinct values: random, 10 % near-duplicates (1-3 bits) and 2 % at 4 bits of an earlier one."""
    rng = np.random.default_rng(seed)
    m = n + n // 50 + 16
    out = rng.integers(0, 2**64, size=m, dtype=np.uint64)
    kind = rng.random(m)
    near, far = np.flatnonzero(kind < 0.10), np.flatnonzero((kind >= 0.10) & (kind < 0.12))
    for rows, lo, hi in ((near, 1, 4), (far, 4, 5)):
        rows = rows[rows > 0]
        src = (rng.random(len(rows)) * rows).astype(np.int64)  # an earlier item
        out[rows] = flip_bits(rng, out[src], rng.integers(lo, hi, size=len(rows)))
    _, first = np.unique(out, return_index=True)
    return out[np.sort(first)][:n]


def queries(fps: np.ndarray, m: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed + 1)
    half = m // 2
    near = flip_bits(rng, fps[rng.integers(0, len(fps), size=half)], rng.integers(0, 4, size=half))
    q = np.concatenate([near, rng.integers(0, 2**64, size=m - half, dtype=np.uint64)])
    rng.shuffle(q)
    return q


def cached(workdir: str, name: str, make) -> str:
    path = os.path.join(workdir, name)
    if not os.path.exists(path):
        np.save(path + ".tmp.npy", make())
        os.replace(path + ".tmp.npy", path)
    return path


# --------------------------------------------------------------------------
# workers


class Runner:
    """Runs worker processes and keeps what each tool's runs gave."""

    def __init__(self, pythons: Dict[str, str], timeout: float, slow: float, workdir: str):
        self.pythons, self.timeout, self.slow, self.workdir = pythons, timeout, slow, workdir
        self.failures: List[str] = []  # rsimhash's own runs that failed

    def run(self, tool: str, task: Dict[str, Any]) -> Dict[str, Any]:
        """The worker's JSON, plus ``rss_mb`` and ``wall``; ``error`` when it failed."""
        task = dict(task, tool=tool)
        cmd = [self.pythons[tool], os.path.join(HERE, "compare_tools.py"), json.dumps(task)]
        with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
            t0 = time.perf_counter()
            proc = subprocess.Popen(cmd, stdout=out, stderr=err)
            timer = threading.Timer(self.timeout, proc.kill)
            timer.start()
            proc.wait()
            timer.cancel()
            wall = time.perf_counter() - t0
            out.seek(0)
            err.seek(0)
            text, errors = out.read().decode(), err.read().decode(errors="replace")
        if proc.returncode != 0:
            if wall >= self.timeout:
                why = f"timed out after {self.timeout:.0f} s"
            elif proc.returncode == -9:
                why = f"killed (SIGKILL) after {wall:.0f} s: the out-of-memory killer, unless killed from outside"
            else:
                why = (errors.strip().splitlines() or [f"exit status {proc.returncode}"])[-1][:160]
            if tool.startswith("rsimhash"):
                self.failures.append(f"{tool} {task['task']}: {why}")
            return {"error": why, "rss_mb": None, "wall": wall}
        result = json.loads(text.strip().splitlines()[-1])
        result.update(wall=wall)
        return result

    def rounds(self, tools: Sequence[str], task_of, repeat: int, key) -> Dict[str, List[Dict[str, Any]]]:
        """Interleaved rounds; a tool whose first run took over ``slow`` s (or failed) runs once."""
        runs: Dict[str, List[Dict[str, Any]]] = {t: [] for t in tools}
        for r in range(repeat):
            for t in tools:
                if r and (runs[t][0].get("error") or key(runs[t][0]) > self.slow):
                    continue
                res = self.run(t, task_of(t, r))
                runs[t].append(res)
                status = res.get("error") or f"{key(res):.3f} s, peak {res['rss_mb']:.0f} MB"
                print(f"  {t:<18} round {r + 1}: {status}", file=sys.stderr)
        return runs


def median(runs: List[Dict[str, Any]], key) -> Optional[float]:
    ok = [key(r) for r in runs if not r.get("error")]
    return statistics.median(ok) if ok else None


def peak(runs: List[Dict[str, Any]]) -> float:
    return max(r["rss_mb"] for r in runs if r.get("rss_mb") is not None)


def compare_rows(found: np.ndarray, ref: np.ndarray) -> Tuple[np.ndarray, int]:
    """(the rows of ref missing from found, how many rows of found are not in ref)."""

    def view(a):
        a = np.ascontiguousarray(a, dtype=np.uint64).reshape(-1, 2)
        return a.view([("a", np.uint64), ("b", np.uint64)]).ravel()

    f, r = view(found), view(ref)
    return np.asarray(ref).reshape(-1, 2)[~np.isin(r, f)], int((~np.isin(f, r)).sum())


def agreement(found_path: str, ref_path: Optional[str], ref_name: str, limit_q: Optional[int] = None) -> str:
    if ref_path is None:
        return "—"
    found, ref = np.load(found_path), np.load(ref_path)
    if limit_q is not None:
        found, ref = found[found[:, 0] < limit_q], ref[ref[:, 0] < limit_q]
    miss, extra = compare_rows(found, ref)
    missing = len(miss)
    if not missing and not extra:
        return f"same as {ref_name}"
    out = []
    if missing:
        if limit_q is None:  # value pairs: say at which distances the missing ones are
            d = ct.popcount(miss[:, 0] ^ miss[:, 1])
            dist = ", ".join(f"{c} at {v}" for v, c in zip(*np.unique(d, return_counts=True)))
            out.append(f"**{missing} fewer** than {ref_name} ({dist} bits)")
        else:
            out.append(f"**{missing} fewer** than {ref_name}")
    if extra:
        out.append(f"**{extra} more** than {ref_name}")
    return "; ".join(out)


# --------------------------------------------------------------------------
# sections


def fmt_n(n: int) -> str:
    e = len(str(n)) - 1
    return f"10^{e}" if n == 10**e else (f"{n // 10**e} x 10^{e}" if n % 10**e == 0 else f"{n:,}")


def fmt(x: Optional[float], digits: int = 2) -> str:
    if x is None or x != x:
        return "—"
    return f"{x:.{digits}f}" if abs(x) < 100 else f"{x:,.0f}"


def ratio(ref: Optional[float], x: Optional[float]) -> str:
    """Speed of x against ref, both times."""
    if not ref or not x:
        return "—"
    r = ref / x
    return f"{r:.0f} x" if r >= 10 else f"{r:.2f} x" if r >= 0.1 else f"{r:.2g} x"


def tools_at(tools: List[str], task: str, n: int) -> List[str]:
    """The tools that do ``task`` and are run at size ``n`` (not above their cap)."""
    return [t for t in tools if task in ct.BY_NAME[t].tasks and n <= ct.BY_NAME[t].caps.get(task, n)]


def section_pairs(args, runner: Runner, tools: List[str], note: List[str]) -> List[str]:
    lines = [
        "## All pairs within k = 3 bits",
        "",
        "| fingerprints | tool | seconds | speed vs rsimhash | pairs | pairs check | peak RSS MB |",
        "| ---: | --- | ---: | ---: | ---: | --- | ---: |",
    ]
    for n in args.pairs_sizes:
        fps = cached(args.workdir, f"fps-{n}-seed{args.seed}.npy", lambda: planted(n, args.seed))
        here = tools_at(tools, "pairs", n)
        print(f"pairs, n = {n:,}: {', '.join(here)}", file=sys.stderr)
        runs = runner.rounds(
            here,
            lambda t, r: {"task": "pairs", "fps": fps, "k": K, "out": os.path.join(args.workdir, f"pairs-{t}-{n}-r{r}.npy")},
            args.repeat,
            key=lambda res: res["seconds"],
        )
        floor = runner.run("rsimhash", {"task": "load", "fps": fps})
        ref_tool = "numpy" if runs.get("numpy") and not runs["numpy"][0].get("error") else "rsimhash"
        ref = runs[ref_tool][0] if not runs[ref_tool][0].get("error") else None
        ref_path = os.path.join(args.workdir, f"pairs-{ref_tool}-{n}-r0.npy") if ref else None
        base = median(runs["rsimhash"], lambda r: r["seconds"])
        for t in here:
            label = ct.BY_NAME[t].label
            if runs[t][0].get("error"):
                lines.append(f"| {fmt_n(n)} | {label} | failed: {runs[t][0]['error']} | | | | |")
                continue
            s = median(runs[t], lambda r: r["seconds"])
            check = (
                "reference"
                if t == ref_tool
                else agreement(os.path.join(args.workdir, f"pairs-{t}-{n}-r0.npy"), ref_path, ct.BY_NAME[ref_tool].label)
            )
            if t.startswith("rsimhash") and ref_tool == "numpy" and check.startswith("**"):
                args.failures.append(f"all pairs at {n:,}: {ct.BY_NAME[t].label} has {check.replace('**', '')}")
            lines.append(
                f"| {fmt_n(n)} | {label} | {fmt(s, 3)} | {ratio(base, s)} | {runs[t][0]['pairs']:,} | "
                f"{check} | {peak(runs[t]):.0f} |"
            )
        lines.append(f"| {fmt_n(n)} | *input loaded, no work* | | | | | {floor['rss_mb']:.0f} |")
    skipped = [
        f"{ct.BY_NAME[t].label}: {ct.BY_NAME[t].note}"
        for t in tools
        if "pairs" in ct.BY_NAME[t].tasks and ct.BY_NAME[t].caps.get("pairs")
    ]
    note.extend(skipped)
    return lines


def section_query(args, runner: Runner, tools: List[str]) -> List[str]:
    lines = [
        "## Single-query latency",
        "",
        f"One call per query, {args.queries:,} queries (numpy: the first {args.brute_queries}), "
        "microseconds from call to result list.",
        "",
        "| index size | tool | build s | median µs | p99 µs | median speed vs rsimhash | results check | peak RSS MB |",
        "| ---: | --- | ---: | ---: | ---: | ---: | --- | ---: |",
    ]
    for n in args.query_sizes:
        fps = cached(args.workdir, f"fps-{n}-seed{args.seed}.npy", lambda: planted(n, args.seed))
        qs = cached(
            args.workdir,
            f"queries-{n}-{args.queries}-seed{args.seed}.npy",
            lambda: queries(np.load(fps), args.queries, args.seed),
        )
        small = cached(
            args.workdir, f"queries-{n}-{args.brute_queries}-seed{args.seed}.npy", lambda: np.load(qs)[: args.brute_queries]
        )
        here = tools_at(tools, "query", n)
        print(f"query, n = {n:,}: {', '.join(here)}", file=sys.stderr)
        runs = runner.rounds(
            here,
            lambda t, r: {
                "task": "query",
                "fps": fps,
                "k": K,
                "queries": small if t == "numpy" else qs,
                "out": os.path.join(args.workdir, f"query-{t}-{n}-r{r}.npy"),
            },
            args.repeat,
            key=lambda res: res["build_s"] + res["median_us"] * args.queries / 1e6,
        )
        ref = None if runs["rsimhash"][0].get("error") else os.path.join(args.workdir, f"query-rsimhash-{n}-r0.npy")
        base = median(runs["rsimhash"], lambda r: r["median_us"])
        for t in here:
            label = ct.BY_NAME[t].label
            if runs[t][0].get("error"):
                lines.append(f"| {fmt_n(n)} | {label} | failed: {runs[t][0]['error']} | | | | | |")
                continue
            med = median(runs[t], lambda r: r["median_us"])
            check = (
                "reference"
                if t == "rsimhash"
                else agreement(
                    os.path.join(args.workdir, f"query-{t}-{n}-r0.npy"),
                    ref,
                    "rsimhash",
                    limit_q=args.brute_queries if t == "numpy" else args.queries,
                )
            )
            if t == "numpy" and check.startswith("**"):  # brute force is the truth
                args.failures.append(f"queries at {n:,}: numpy brute force found {check.replace('**', '')}")
            lines.append(
                f"| {fmt_n(n)} | {label} | {fmt(median(runs[t], lambda r: r['build_s']), 3)} | "
                f"{fmt(med, 1)} | {fmt(median(runs[t], lambda r: r['p99_us']), 1)} | {ratio(base, med)} | "
                f"{check} | {peak(runs[t]):.0f} |"
            )
    return lines


FEATURES = {
    "rsimhash": "SPEC v1 word 3-shingles, simhash, k = 3",
    "rsimhash-verified": "simhash candidates, exact Jaccard of the shingle sets >= t",
    "rsimhash-exact": "exact set-similarity join (prefix filter) of the SPEC v1 shingle sets, Jaccard >= t",
    "setsimilaritysearch": "`all_pairs` (prefix filter, pure Python) of the SPEC v1 shingle sets, prebuilt",
    "simhash": "its default: char 4-grams, md5, k = 3 (`SimhashIndex`)",
    "simhash-pybind": f"its recipe: whitespace 3-shingles, md5, k = 3 (`find_all`, {ct.PYBIND_BLOCKS} blocks)",
    "gaoya": "lower-cased word 3-grams, its hash, k = 3, 6 blocks",
    "datasketch": "MinHash (128) of the SPEC v1 shingle sets, LSH at t, estimate >= t",
    "rensa": "MinHash (128) of the SPEC v1 shingle sets, LSH at t, estimate >= t",
}


def section_texts(args, runner: Runner, tools: List[str], note: List[str]) -> List[str]:
    import bench_quality as bq
    from rsimhash import _rsimhash

    texts = ct.load_texts(args.texts, args.max_docs)
    if len(texts) < 2:
        print(f"texts: {args.texts} has {len(texts)} document(s); section left out", file=sys.stderr)
        return []
    mb = sum(len(t.encode("utf-8")) for t in texts) / 1e6
    offsets, hashes = _rsimhash.shingle_sets(texts, mode="words", width=3)
    truth = bq.truth(args.texts, len(texts), offsets, hashes, args.workdir, True)
    del texts
    n_docs = len(offsets) - 1
    here = [t for t in tools if "texts" in ct.BY_NAME[t].tasks]
    print(f"texts, {n_docs:,} documents, {mb:.1f} MB: {', '.join(here)}", file=sys.stderr)
    runs = runner.rounds(
        here,
        lambda t, r: {
            "task": "texts",
            "texts": args.texts,
            "max_docs": args.max_docs,
            "k": K,
            "out": os.path.join(args.workdir, f"texts-{t}-r{r}"),
        },
        args.repeat,
        key=lambda res: job_s(res, None),
    )
    floor = runner.run("rsimhash", {"task": "load", "texts": args.texts, "max_docs": args.max_docs})
    n_true = {t: int((truth["sim"] >= t).sum()) for t in bq.THRESHOLDS}
    lines = [
        "## Near-duplicate quality and fingerprint throughput on real text",
        "",
        f"{n_docs:,} documents, {mb:.0f} MB of UTF-8 text; truth: {n_true[0.9]:,} pairs at Jaccard >= 0.9, "
        f"{n_true[0.8]:,} at >= 0.8 (exact, SPEC v1 word 3-shingle sets). P = precision, R = recall; a "
        "method run at one threshold t is scored at that t only. Signatures MB/s: the tool's signatures of "
        "all texts (MinHash: the shingle sets included); docs/s: the whole job, signatures and "
        "pairs (gaoya's index hashes the texts itself).",
        "",
        "| tool | method | signatures MB/s | speed vs rsimhash | docs/s | speed vs rsimhash | P 0.9 | R 0.9 | "
        "P 0.8 | R 0.8 | peak RSS MB |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    base_sig = median(runs["rsimhash"], lambda r: r["sig_s"]) if "rsimhash" in runs else None
    base_all = median(runs["rsimhash"], lambda r: job_s(r, 0)) if "rsimhash" in runs else None
    for t in here:
        label = ct.BY_NAME[t].label
        if runs[t][0].get("error"):
            lines.append(f"| {label} | {FEATURES[t]} | failed: {runs[t][0]['error']} | | | | | | | | |")
            continue
        sig = median(runs[t], lambda r: r["sig_s"]) if runs[t][0]["sig_s"] is not None else None
        for i, run in enumerate(runs[t][0]["runs"]):
            total = median(runs[t], lambda r: job_s(r, i))
            p = np.load(run["file"])
            sc = bq.score(bq.keys_of(p[:, 0], p[:, 1]), truth)
            cells = []
            for th in bq.THRESHOLDS:
                show = run["t"] is None or run["t"] == th
                cells += [fmt(sc[th]["precision"], 3) if show else "", fmt(sc[th]["recall"], 3) if show else ""]
            method = FEATURES[t] + (f", t = {run['t']}" if run["t"] is not None else "")
            lines.append(
                f"| {label} | {method} | {fmt(mb / sig, 1) if sig else '—'} | "
                f"{ratio(base_sig, sig) if sig else '—'} | {fmt(n_docs / total, 0)} | "
                f"{ratio(base_all, total)} | {' | '.join(cells)} | {peak(runs[t]):.0f} |"
            )
        if t == "gaoya":
            note.append(gaoya_check(runs[t][0]))
        if t == "rsimhash-exact":
            for run in runs[t][0]["runs"]:
                sc = bq.score(bq.keys_of(*np.load(run["file"]).T), truth)[run["t"]]
                if any(sc[m] is not None and sc[m] < 1.0 for m in ("precision", "recall")):
                    args.failures.append(f"texts at {run['t']}: the exact join's pairs are not the truth's ({sc})")
    note += exact_agreement(runs)
    lines.append(f"| *texts loaded, no work* | | | | | | | | | | {floor['rss_mb']:.0f} |")
    return lines + [""]


def exact_agreement(runs: Dict[str, List[Dict[str, Any]]]) -> List[str]:
    """Whether SetSimilaritySearch's ``all_pairs`` found the exact join's pairs, threshold by threshold."""
    if any(t not in runs or runs[t][0].get("error") for t in ("rsimhash-exact", "setsimilaritysearch")):
        return []
    theirs = {run["t"]: run["file"] for run in runs["setsimilaritysearch"][0]["runs"]}
    said = []
    for run in runs["rsimhash-exact"][0]["runs"]:
        if run["t"] in theirs:
            a, b = np.load(run["file"]), np.load(theirs[run["t"]])
            same = a.shape == b.shape and bool((a == b).all())
            theirs_n = "" if same else f" (theirs: {len(b):,})"
            said.append(f"t = {run['t']}: {'the same' if same else 'NOT the same'} {len(a):,} pairs{theirs_n}")
    return ["SetSimilaritySearch `all_pairs` against rsimhash's exact join: " + "; ".join(said) + "."] if said else []


def section_online(args, runner: Runner, tools: List[str]) -> List[str]:
    """An online index of texts by Jaccard threshold: every text inserted, then every text queried."""
    import bench_quality as bq
    from rsimhash import _rsimhash

    texts = ct.load_texts(args.texts, args.max_docs)
    if len(texts) < 2:
        return []
    offsets, hashes = _rsimhash.shingle_sets(texts, mode="words", width=3)
    truth = bq.truth(args.texts, len(texts), offsets, hashes, args.workdir, True)
    n_docs = len(texts)
    del texts
    here = [t for t in tools if "online" in ct.BY_NAME[t].tasks]
    print(f"online, {n_docs:,} documents: {', '.join(here)}", file=sys.stderr)

    def total(res):
        return sum(r["insert_s"] + r["query_s"] for r in res["runs"])

    runs = runner.rounds(
        here,
        lambda t, r: {
            "task": "online",
            "texts": args.texts,
            "max_docs": args.max_docs,
            "out": os.path.join(args.workdir, f"online-{t}-r{r}"),
        },
        args.repeat,
        key=total,
    )
    lines = [
        "## Online index of texts by Jaccard threshold",
        "",
        f"The {n_docs:,} documents above: each tool builds an index at threshold t with every document "
        "inserted, then queries it with every document (a query's own document left out). Insert and query "
        "times include making each text's signature (MinHash: the shingle sets, made by rsimhash, then "
        "MinHash); datasketch keeps a candidate when its MinHash estimate is >= t. docs/s over insert + "
        "query; P and R against the exact truth at t.",
        "",
        "| tool | t | insert docs/s | query docs/s | insert + query docs/s | speed vs datasketch | P | R | peak RSS MB |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    base = {}
    if "datasketch" in runs and not runs["datasketch"][0].get("error"):
        for i, run in enumerate(runs["datasketch"][0]["runs"]):
            base[run["t"]] = median(runs["datasketch"], lambda r, i=i: r["runs"][i]["insert_s"] + r["runs"][i]["query_s"])
    for t in here:
        label = ct.BY_NAME[t].label
        if runs[t][0].get("error"):
            lines.append(f"| {label} | | failed: {runs[t][0]['error']} | | | | | | |")
            continue
        for i, run in enumerate(runs[t][0]["runs"]):
            ins = median(runs[t], lambda r, i=i: r["runs"][i]["insert_s"])
            qry = median(runs[t], lambda r, i=i: r["runs"][i]["query_s"])
            both = median(runs[t], lambda r, i=i: r["runs"][i]["insert_s"] + r["runs"][i]["query_s"])
            p = np.load(run["file"])
            sc = bq.score(bq.keys_of(p[:, 0], p[:, 1]), truth)[run["t"]]
            if t.startswith("rsimhash") and sc["precision"] is not None and sc["precision"] < 1.0:
                args.failures.append(f"online at {run['t']}: SimilarIndex reported a pair below the threshold")
            if t == "rsimhash-similar-index-exact" and sc["recall"] is not None and sc["recall"] < 1.0:
                args.failures.append(f"online at {run['t']}: the exact SimilarIndex missed a pair ({sc})")
            lines.append(
                f"| {label} | {run['t']} | {fmt(n_docs / ins, 0)} | {fmt(n_docs / qry, 0)} | {fmt(n_docs / both, 0)} | "
                f"{ratio(base.get(run['t']), both) if run['t'] in base and t != 'datasketch' else '—'} | "
                f"{fmt(sc['precision'], 3)} | {fmt(sc['recall'], 3)} | {peak(runs[t]):.0f} |"
            )
    return lines + [""]


def job_s(res: Dict[str, Any], run: Optional[int]) -> float:
    """Seconds of a texts job: signatures and the pairs of one run (None: of every run)."""
    sig = 0.0 if res.get("sig_in_pairs") else (res["sig_s"] or 0.0)
    runs = res["runs"] if run is None else [res["runs"][run]]
    return sig + sum(r["pairs_s"] for r in runs)


def gaoya_check(res: Dict[str, Any]) -> str:
    """gaoya's pairs against every pair of its own signatures within k bits."""
    import rsimhash

    sigs = np.load(res["sigs"])
    exact = rsimhash.batch.find_all(sigs, K).astype(np.int64)
    found = np.load(res["runs"][0]["file"])
    ekeys = exact[:, 0] * len(sigs) + exact[:, 1]
    fkeys = found[:, 0] * len(sigs) + found[:, 1]
    missing = exact[~np.isin(ekeys, fkeys)]
    d = ct.popcount(sigs[missing[:, 0]] ^ sigs[missing[:, 1]])
    dist = ", ".join(f"{c:,} at {v} bits" for v, c in zip(*np.unique(d, return_counts=True))) or "none"
    extra = int((~np.isin(fkeys, ekeys)).sum())
    return (
        f"gaoya returned {len(found):,} of the {len(exact):,} document pairs whose gaoya signatures are "
        f"within {K} bits (an exact search over them); missing: {dist}; pairs beyond {K} bits: {extra}."
    )


# --------------------------------------------------------------------------
# main


def machine(versions: Dict[str, Optional[str]], elsewhere: List[str]) -> List[str]:
    from bench_fingerprint import cpu_model

    try:
        mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    except (ValueError, OSError):
        mem = float("nan")
    lines = [
        f"- Date: {datetime.date.today().isoformat()}",
        f"- Machine: {len(os.sched_getaffinity(0))} cores ({cpu_model()}), {mem:.0f} GiB RAM, {platform.platform()}",
        f"- Python {platform.python_version()}, numpy {np.__version__}",
    ]
    lines += [f"- {x}" for x in elsewhere]
    found = dict.fromkeys(f"{ct.BY_NAME[t].dist} {v}" for t, v in versions.items() if v)
    lines.append(f"- Versions: {', '.join(found)}")
    missing = [f"{t.dist} (`{t.pip}`)" for t in ct.TOOLS if not versions.get(t.name)]
    if missing:
        lines.append(f"- Not installed, left out: {', '.join(missing)}")
    return lines


def versions_in(python: str) -> Dict[str, Optional[str]]:
    """Which tools ``python`` can import, and their versions."""
    done = subprocess.run(
        [python, os.path.join(HERE, "compare_tools.py"), '{"task": "versions"}'], capture_output=True, text=True
    )
    if done.returncode != 0:
        why = (done.stderr.strip().splitlines() or [f"exit status {done.returncode}"])[-1]
        sys.exit(f"compare.py: {python} cannot run the workers ({why}); it needs numpy")
    found = json.loads(done.stdout)
    found.pop("rss_mb", None)
    return found


def detect(args) -> Tuple[Dict[str, str], Dict[str, Optional[str]]]:
    here = versions_in(sys.executable)
    pythons = {t: sys.executable for t, v in here.items() if v}
    versions = dict(here)
    for spec in args.python:
        name, _, python = spec.partition("=")
        if name not in ct.BY_NAME or not python:
            sys.exit(f"compare.py: --python {spec!r}: give TOOL=INTERPRETER, TOOL one of {', '.join(ct.BY_NAME)}")
        there = versions_in(python)
        if not there.get(name):
            sys.exit(f"compare.py: {python} cannot import {ct.BY_NAME[name].dist}")
        pythons[name], versions[name] = python, there[name]
        args.elsewhere.append(f"{ct.BY_NAME[name].label} ran under `{python}` (numpy {there.get('numpy')})")
    return pythons, versions


def sizes(text: str) -> List[int]:
    return [int(float(x)) for x in text.split(",") if x]


def main(argv: Optional[Sequence[str]] = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--quick", action="store_true", help="small sizes, one round: a smoke test of under a minute")
    p.add_argument("--pairs-sizes", type=sizes, default=None, help="default 3e4,1e6,1e7 (quick: 5e3,2e4)")
    p.add_argument("--query-sizes", type=sizes, default=None, help="default 1e6,1e7 (quick: 2e4)")
    p.add_argument("--queries", type=int, default=None, help="queries per index (default 2000, quick 200)")
    p.add_argument("--brute-queries", type=int, default=None, help="numpy's queries (default 200, quick 50)")
    p.add_argument(
        "--texts",
        default=None,
        help="JSON-lines corpus (default benches/data/quality.jsonl, built when missing; "
        "quick: 300 documents in the work directory)",
    )
    p.add_argument("--max-docs", type=int, default=None, help="only the first N documents of the corpus")
    p.add_argument("--repeat", type=int, default=None, help="rounds (default 3, quick 1)")
    p.add_argument("--slow", type=float, default=30.0, help="a tool slower than this (s) in round 1 runs once")
    p.add_argument("--timeout", type=float, default=900.0, help="seconds before a run is stopped")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument(
        "--python",
        action="append",
        default=[],
        metavar="TOOL=PYTHON",
        help="run TOOL's measurements with another interpreter (repeatable), e.g.\nsimhash-pybind=.venv-cpp/bin/python",
    )
    p.add_argument("--only", default="pairs,query,texts,online", help="sections to run (default %(default)s)")
    p.add_argument("--workdir", default=None, help="data and outputs (default benches/data/compare; quick: a temp dir)")
    p.add_argument("--results", default=None, help="also write the report to this Markdown file")
    args = p.parse_args(argv)
    q = args.quick
    args.pairs_sizes = args.pairs_sizes or ([5_000, 20_000] if q else [30_000, 10**6, 10**7])
    args.query_sizes = args.query_sizes or ([20_000] if q else [10**6, 10**7])
    args.queries = args.queries or (200 if q else 2000)
    args.brute_queries = min(args.brute_queries or (50 if q else 200), args.queries)
    args.repeat = args.repeat or (1 if q else 3)
    tmp = tempfile.TemporaryDirectory(prefix="rsimhash-compare-") if q and not args.workdir else None
    args.workdir = args.workdir or (tmp.name if tmp else os.path.join(HERE, "data", "compare"))
    os.makedirs(args.workdir, exist_ok=True)
    if args.texts is None:
        args.texts = os.path.join(args.workdir, "quality-300.jsonl") if q else os.path.join(HERE, "data", "quality.jsonl")
    only = args.only.split(",")
    if ("texts" in only or "online" in only) and not os.path.exists(args.texts):
        # Built only for the section that reads it: --only pairs,query on a
        # fresh clone needs no text corpus (nor the files it is built from).
        import quality_corpus

        print(f"writing the corpus {args.texts} ...", file=sys.stderr)
        quality_corpus.write(args.texts, 300 if q else None)

    args.elsewhere = []
    args.failures = []  # rsimhash disagreeing with brute force: the run fails
    pythons, versions = detect(args)
    if "rsimhash" not in pythons:
        p.error("rsimhash is not importable by this interpreter: install it first")
    tools = [t.name for t in ct.TOOLS if t.name in pythons]
    runner = Runner(pythons, args.timeout, args.slow, args.workdir)
    t0 = time.perf_counter()
    notes: List[str] = []
    body: List[str] = []
    if "pairs" in only:
        body += section_pairs(args, runner, tools, notes) + [""]
    if "query" in only:
        body += section_query(args, runner, tools) + [""]
    if "texts" in only:
        body += section_texts(args, runner, tools, notes)
    if "online" in only:
        body += section_online(args, runner, tools)
    for t in tools:
        if ct.BY_NAME[t].note and not ct.BY_NAME[t].caps:
            notes.append(f"{ct.BY_NAME[t].label}: {ct.BY_NAME[t].note}.")
    # What each tool runs on and with: the machine has len(affinity) cores;
    # each peer runs with its documented best setting.
    for t in tools:
        tool = ct.BY_NAME[t]
        notes.append(f"{tool.label}: {tool.cores}" + (f"; {tool.setting}." if tool.setting else "."))
    notes.append(
        f"Every row is the median of {args.repeat} interleaved rounds, except a run that took over "
        f"{args.slow:g} s (--slow) or failed in its first round: that row is a single run."
    )
    cmd = " ".join(["python benches/compare.py"] + list(argv if argv is not None else sys.argv[1:]))
    report = (
        [
            "# rsimhash side by side",
            "",
            f"`{cmd}`: {args.repeat} interleaved round(s), medians; {time.perf_counter() - t0:.0f} s in all.",
            "",
        ]
        + machine(versions, args.elsewhere)
        + [""]
        + body
        + (["## Notes", ""] + [f"- {n}" for n in notes] + [""] if notes else [])
    )
    text = "\n".join(report)
    print(text)
    if args.results:
        with open(args.results + ".tmp", "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(args.results + ".tmp", args.results)
    if tmp:
        tmp.cleanup()
    for f in args.failures:
        print(f"compare.py: WRONG ANSWER: {f}", file=sys.stderr)
    for f in runner.failures:
        print(f"compare.py: FAILED: {f}", file=sys.stderr)
    return 1 if args.failures or runner.failures else 0


if __name__ == "__main__":
    sys.exit(main())
