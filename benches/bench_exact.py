#!/usr/bin/env python3
"""The exact set-similarity join (``similar_pairs(candidates="exact")``)
against brute-force truth, plain simhash, the simhash candidates,
SetSimilaritySearch and datasketch's MinHashLSH (issue 39).

Corpus: seeded and synthetic. ``corpus.load_docs`` (English paragraphs
installed on the machine, seeded; see README.md) gives the base documents,
cut to at most ``--max-words`` words; a seeded share of them gets an edited
copy (each word replaced by a fresh one with a probability drawn from 0 to
0.15, so that word 3-shingle Jaccard similarities spread over 0.4 to 1),
some of those a copy of the copy, and a few exact copies; then the whole is
shuffled with the same seed.

Truth: brute force, every pair of the first ``--truth-docs`` documents
(``_rsimhash.pair_similarity`` over all n (n - 1) / 2 pairs of their word
3-shingle sets, a merge each). Recall and precision at 0.5 to 0.9 are
measured there, for the exact join and for the simhash candidates
(``candidates=auto_candidates(t)``, what ``"auto"`` took before issue 39).

Time (whole corpus): ``--repeat`` interleaved rounds (default 3; medians
shown), each timing plain simhash (``fingerprints`` + ``Index(k=3)`` +
``find_all``), then ``similar_pairs`` exact and with simhash candidates at
0.9, 0.8 and 0.5, garbage collection off, and the sets alone (the exact
join's input, every text's distinct shingle hashes: ``SimilarCorpus.add``),
which any join on them must make first. Ratios are to plain, from the
medians of the same run. Targets: exact at most 2x plain at 0.9, 2.5x at
0.8, 8x at 0.5; where the sets alone already take more, the line says so.

SetSimilaritySearch (``pip install SetSimilaritySearch``): ``all_pairs`` at
0.9 and 0.5 on the truth documents, with the sets prebuilt for it (lists of
the same shingle hashes, not timed), timed once (``--sss-repeat``), its
pairs compared with the exact join's; the exact join is timed on the same
documents (median of the rounds). Target: at least 50x faster, the same
pairs. datasketch ``MinHashLSH`` (128 permutations, its own bands at each
threshold): signatures from the prebuilt hash sets plus insert and query,
timed once, its candidate pairs scored against the truth.

Copies: 100, 1,000 and 10,000 copies of one text beside 199 others, at
0.9: with ``copies="first"`` the time must follow the texts, with
``copies="all"`` the pairs listed (c (c - 1) / 2), never a square of checks.

``--real JSONL`` takes bench_quality.py's corpus of real text instead
(manual pages in every installed language, ``/usr/share/doc``; built at
that path when missing), its first ``--docs`` documents.

Usage::

    python benches/bench_exact.py                   # 8,000 base docs, 3 rounds
    python benches/bench_exact.py --real /tmp/rsimhash-bench/quality.jsonl --docs 13000
    python benches/bench_exact.py --docs 2000 --truth-docs 1000 --repeat 1   # quick
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import random
import statistics
import sys
import time
from typing import Any, Callable, Dict, List, Tuple

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from bench_fingerprint import machine_info  # noqa: E402

THRESHOLDS = (0.5, 0.6, 0.7, 0.8, 0.9)
TIMED = (0.9, 0.8, 0.5)
TARGET_RATIO = {0.9: 2.0, 0.8: 2.5, 0.5: 8.0}
SSS_AT = (0.9, 0.5)


def make_corpus(n_base: int, max_words: int, seed: int, size_mb: float) -> List[str]:
    import corpus

    rng = random.Random(seed)
    base = []
    for doc in corpus.load_docs(size_mb=size_mb, seed=seed):
        words = doc.split()
        if len(words) >= 20:
            base.append(" ".join(words[:max_words]))
        if len(base) >= n_base:
            break
    texts = list(base)
    for doc in base:
        r = rng.random()
        if r < 0.35:
            words = doc.split()
            p = rng.uniform(0.0, 0.15)
            copy = " ".join(w if rng.random() >= p else f"edit{rng.randrange(10**9)}" for w in words)
            texts.append(copy)
            if rng.random() < 0.3:
                q = rng.uniform(0.0, 0.1)
                texts.append(" ".join(w if rng.random() >= q else f"edit{rng.randrange(10**9)}" for w in copy.split()))
        elif r < 0.40:
            texts.append(doc)
    rng.shuffle(texts)
    return texts


def clock(fn: Callable[[], Any], times: List[float]) -> Any:
    gc.collect()
    gc.disable()
    try:
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
        return out
    finally:
        gc.enable()


def pair_set(pairs) -> set:
    return {(int(a), int(b)) for a, b in pairs.tolist()}


def brute_truth(texts: List[str]) -> Dict[Tuple[int, int], float]:
    """Every pair's Jaccard at least the lowest threshold, by brute force."""
    import numpy as np

    from rsimhash import _rsimhash

    offsets, hashes = _rsimhash.shingle_sets(texts, mode="words", width=3)
    n = len(texts)
    truth: Dict[Tuple[int, int], float] = {}
    step = 512
    for lo in range(0, n, step):
        a_parts, b_parts = [], []
        for a in range(lo, min(n, lo + step)):
            b = np.arange(a + 1, n, dtype=np.uint64)
            a_parts.append(np.full(len(b), a, dtype=np.uint64))
            b_parts.append(b)
        a_all, b_all = np.concatenate(a_parts), np.concatenate(b_parts)
        if not len(a_all):
            continue
        flat = np.empty(2 * len(a_all), dtype=np.uint64)
        flat[0::2], flat[1::2] = a_all, b_all
        sims = _rsimhash.pair_similarity(offsets, hashes, flat)
        keep = sims >= min(THRESHOLDS)
        for a, b, s in zip(a_all[keep].tolist(), b_all[keep].tolist(), sims[keep].tolist()):
            truth[(a, b)] = s
    return truth


def score(found: set, truth: Dict[Tuple[int, int], float], t: float) -> Tuple[float, float, int, int]:
    want = {p for p, s in truth.items() if s >= t}
    hit = len(found & want)
    return (hit / len(want) if want else 1.0), (hit / len(found) if found else 1.0), len(want), len(found)


def main(argv: Any = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--docs", type=int, default=8000, help="base documents (copies come on top)")
    ap.add_argument("--max-words", type=int, default=600)
    ap.add_argument("--truth-docs", type=int, default=3000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--sss-repeat", type=int, default=1)
    ap.add_argument("--seed", type=int, default=39)
    ap.add_argument("--size-mb", type=float, default=48)
    ap.add_argument("--no-sss", action="store_true")
    ap.add_argument("--no-datasketch", action="store_true")
    ap.add_argument("--json", default=None)
    ap.add_argument(
        "--real",
        metavar="JSONL",
        default=None,
        help="real text instead of the synthetic corpus: bench_quality's corpus (built there when missing), "
        "its first --docs documents in file order",
    )
    args = ap.parse_args(argv)

    import numpy as np

    import rsimhash
    from rsimhash import _rsimhash
    from rsimhash.similar import SimilarCorpus

    info = machine_info(rsimhash, np)
    print(f"# {info['cpu']}, {info['nproc']} usable cores, Python {info['python']}, load {info['loadavg']}")
    if args.real:
        from bench_quality import load_texts

        texts = load_texts(args.real, args.docs)
        mb = sum(len(t.encode()) for t in texts) / 1e6
        print(f"# corpus: {len(texts):,} documents of real text ({args.real}), {mb:.1f} MB")
    else:
        texts = make_corpus(args.docs, args.max_words, args.seed, args.size_mb)
        mb = sum(len(t.encode()) for t in texts) / 1e6
        print(f"# corpus: {len(texts):,} documents ({args.docs:,} base, seed {args.seed}), {mb:.1f} MB")
    out: Dict[str, Any] = {"machine": info, "docs": len(texts), "mb": mb}

    # -- recall and precision against brute force
    sub = texts[: args.truth_docs]
    t0 = time.perf_counter()
    truth = brute_truth(sub)
    n_pairs = len(sub) * (len(sub) - 1) // 2
    print(f"# truth: all {n_pairs:,} pairs of the first {len(sub):,} documents, {time.perf_counter() - t0:.1f} s")
    quality: Dict[str, Dict[float, Any]] = {"exact": {}, "simhash": {}}
    for t in THRESHOLDS:
        pairs, sims = rsimhash.similar_pairs(sub, t, candidates="exact", progress=False)
        found = pair_set(pairs)
        quality["exact"][t] = score(found, truth, t)
        # Every similarity reported is the truth's, rounded to float32.
        wrong = [(a, b) for (a, b), s in zip(pairs.tolist(), sims.tolist()) if float(np.float32(truth[(a, b)])) != s]
        assert not wrong, wrong[:5]
        cand = tuple(_rsimhash.auto_candidates(t))
        pairs, _ = rsimhash.similar_pairs(sub, t, candidates=cand, progress=False)
        quality["simhash"][t] = score(pair_set(pairs), truth, t) + (cand,)
    out["quality"] = {k: {str(t): v for t, v in d.items()} for k, d in quality.items()}

    # -- time, interleaved rounds on the whole corpus
    rsimhash.similar_pairs(texts[:300], 0.9, candidates="exact", progress=False)  # warm-up
    times: Dict[str, List[float]] = {}
    counts: Dict[str, int] = {}

    def plain() -> Any:
        fps = rsimhash.fingerprints(texts)
        index = rsimhash.Index(3)
        index.add(fps)
        return index.find_all()

    for _ in range(args.repeat):
        clock(plain, times.setdefault("plain", []))
        clock(lambda: SimilarCorpus(0.9, candidates="exact").add(texts), times.setdefault("sets", []))
        for t in TIMED:
            p, _ = clock(
                lambda: rsimhash.similar_pairs(texts, t, candidates="exact", progress=False), times.setdefault(f"exact {t}", [])
            )
            counts[f"exact {t}"] = len(p)
            cand = tuple(_rsimhash.auto_candidates(t))
            p, _ = clock(
                lambda: rsimhash.similar_pairs(texts, t, candidates=cand, progress=False), times.setdefault(f"simhash {t}", [])
            )
            counts[f"simhash {t}"] = len(p)
    med = {k: statistics.median(v) for k, v in times.items()}
    out["times"], out["counts"] = times, counts

    # -- SetSimilaritySearch and datasketch on the truth documents
    offsets, hashes = _rsimhash.shingle_sets(sub, mode="words", width=3)
    sets = [hashes[offsets[i] : offsets[i + 1]].tolist() for i in range(len(sub))]
    sss: Dict[float, Any] = {}
    if not args.no_sss:
        try:
            from SetSimilaritySearch import all_pairs
        except ImportError:
            print("# SetSimilaritySearch not installed: pip install SetSimilaritySearch")
        else:
            for t in SSS_AT:
                ours: List[float] = []
                for _ in range(args.repeat):
                    mine, _ = clock(lambda: rsimhash.similar_pairs(sub, t, candidates="exact", progress=False), ours)
                theirs: List[float] = []
                for _ in range(args.sss_repeat):
                    got = clock(lambda: list(all_pairs(sets, similarity_func_name="jaccard", similarity_threshold=t)), theirs)
                their_pairs = {(min(a, b), max(a, b)) for a, b, _ in got}
                sss[t] = (statistics.median(theirs), statistics.median(ours), their_pairs == pair_set(mine), len(their_pairs))
    out["sss"] = {str(t): v for t, v in sss.items()}
    lsh: Dict[float, Any] = {}
    if not args.no_datasketch:
        try:
            from datasketch import MinHash, MinHashLSH
        except ImportError:
            print("# datasketch not installed")
        else:
            byte_sets = [[h.to_bytes(8, "little") for h in s] for s in sets]
            for t in SSS_AT:
                took: List[float] = []

                def run_lsh() -> set:
                    sigs = MinHash.bulk(byte_sets, num_perm=128)
                    index = MinHashLSH(threshold=t, num_perm=128)
                    for i, m in enumerate(sigs):
                        index.insert(i, m)
                    return {(min(i, j), max(i, j)) for i, m in enumerate(sigs) for j in index.query(m) if j != i}

                found = clock(run_lsh, took)
                lsh[t] = (took[0],) + score(found, truth, t)
    out["datasketch"] = {str(t): v for t, v in lsh.items()}

    # -- copies: time follows the texts (copies="first") and the pairs (copies="all"), never a square of checks
    scaling = []
    one = texts[0]
    near = texts[1:200]
    for c in (100, 1000, 10000):
        group = [one] * c + near
        first: List[float] = []
        for _ in range(args.repeat):
            clock(lambda: rsimhash.similar_pairs(group, 0.9, candidates="exact", progress=False, copies="first"), first)
        every: List[float] = []
        for _ in range(args.repeat):
            n_all = len(clock(lambda: rsimhash.similar_pairs(group, 0.9, candidates="exact", progress=False), every)[0])
        scaling.append((c, statistics.median(first), statistics.median(every), n_all))
    out["copies"] = scaling

    # -- the tables
    print()
    print(f"recall / precision against brute force ({len(sub):,} documents; pairs in the truth)")
    print("threshold | truth pairs | exact recall | exact precision | simhash candidates | simhash recall | simhash precision")
    for t in THRESHOLDS:
        r, p, n_true, _ = quality["exact"][t]
        rs, ps, _, _, cand = quality["simhash"][t]
        print(f"{t:9} | {n_true:11,} | {r:12.4f} | {p:15.4f} | {cand[0]},{cand[1]},{cand[2]:<12} | {rs:14.4f} | {ps:17.4f}")
    print()
    print(f"time on {len(texts):,} documents, median of {args.repeat} interleaved rounds")
    print("plain = fingerprints + Index(k=3) + find_all")
    print(f"plain: {med['plain']:.3f} s")
    sets_ratio = med["sets"] / med["plain"]
    print(f"the sets alone (the exact join's input): {med['sets']:.3f} s = {sets_ratio:.2f}x plain")
    print("threshold | exact s | exact / plain (target) | pairs | simhash s | simhash / plain | pairs")
    for t in TIMED:
        e, s = med[f"exact {t}"], med[f"simhash {t}"]
        ok = "ok" if e / med["plain"] <= TARGET_RATIO[t] else "MISSED"
        if ok == "MISSED" and sets_ratio > TARGET_RATIO[t]:
            ok += ", below the sets alone"
        print(
            f"{t:9} | {e:7.3f} | {e / med['plain']:6.2f}x (<= {TARGET_RATIO[t]}x {ok}) | {counts[f'exact {t}']:,} | "
            f"{s:9.3f} | {s / med['plain']:6.2f}x | {counts[f'simhash {t}']:,}"
        )
    if sss:
        print()
        print(f"SetSimilaritySearch.all_pairs on {len(sub):,} documents (sets prebuilt), against the exact join")
        print("threshold | SSS s | exact s | speed-up (target 50x) | same pairs | pairs")
        for t, (theirs, ours, same, n) in sss.items():
            verdict = "ok" if theirs / ours >= 50 else "MISSED"
            print(f"{t:9} | {theirs:5.2f} | {ours:7.3f} | {theirs / ours:8.1f}x {verdict} | {same} | {n:,}")
    if lsh:
        print()
        print(f"datasketch MinHashLSH (128 permutations) on {len(sub):,} documents: candidates scored against the truth")
        print("threshold | s | recall | precision")
        for t, (took_s, r, p, _, _) in lsh.items():
            print(f"{t:9} | {took_s:5.2f} | {r:.4f} | {p:.4f}")
    print()
    print("copies of one text (and 199 others) at 0.9, exact: seconds with copies='first' and copies='all'")
    print("copies | first s | all s | pairs (all)")
    for c, f, e, n in scaling:
        print(f"{c:6,} | {f:7.4f} | {e:5.3f} | {n:,}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1, default=str)
    print("JSON " + json.dumps({k: out[k] for k in ("docs", "mb")} | {"median": med}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
