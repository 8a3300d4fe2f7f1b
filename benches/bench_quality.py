#!/usr/bin/env python3
"""Precision and recall of near-duplicate detection on real text, against
exact Jaccard similarity, and the speed of verified mode against plain
``find-all``.

Corpus: ``quality_corpus.py`` (manual pages in every language installed,
``/usr/share/doc``, the common licences), one ``{"id", "text"}`` JSON line a
document, built at ``--corpus`` when missing.

Truth: every pair of documents whose SPEC v1 word 3-shingle sets
(``rsimhash._rsimhash.shingle_sets(texts, mode="words", width=3)``: sorted
distinct FNV-1a 64 hashes) have a Jaccard similarity of at least 0.8 (and the
subset at 0.9), found without simhash by a prefix-filter similarity join:
shingles are ranked by how many documents hold them, rarest first; a set of
size s indexes its first s - ceil(0.8 s) + 1 shingles (two sets with J >= 0.8
share one of them); pairs sharing an indexed shingle and whose sizes are
within a factor 0.8 are the candidates, and each one's Jaccard is computed
exactly (``_rsimhash.pair_similarity``, a merge of two sorted arrays). The
truth is checked twice: a few hundred pairs against Python ``set``
arithmetic, and every pair among ~2,000 sampled documents by brute force. It
is cached in ``--data-dir`` keyed by the corpus file's size and mtime (and a
digest of the sets, checked on load); ``--no-cache`` recomputes it.

Rows (one table; a pair predicted by a method counts as positive at every
threshold, precision@t = |pred & truth_t| / |pred|, recall@t = |pred &
truth_t| / |truth_t|):

* plain simhash, ``fingerprints(mode="words", width=3)`` and
  ``mode="chars", width=4``, pairs within k bits (``batch.find_all``), k = 0..10;
* verified mode, ``similar_pairs(texts, t, candidates=auto_candidates(t))``
  (the simhash candidates ``"auto"`` took before issue 39; the exact join
  is ``bench_exact.py``'s) at t =
  0.9 and 0.8, scored at its own t; every similarity it reports is checked
  against the truth (a pair at or above t missing from the truth is a bug);
* MinHash LSH, 128 permutations over the same shingle hashes, with
  datasketch and rensa where importable: the raw LSH pairs, and those whose
  MinHash estimate is >= t.

Speed: ``--repeat`` rounds (default 5), each timing, one after the other and
with garbage collection off, plain find-all (``fingerprints(texts)`` +
``batch.find_all(fps, k=3)``), ``similar_pairs`` at 0.9 and at 0.8, the
chars fingerprints and ``find_all`` at every k. Each row shows the median
over rounds (simhash rows: fingerprints + find_all at that k); docs/s is
documents / seconds, and the last column is that over plain find-all's
docs/s. MinHash rows are timed once, from the texts (shingle sets included).
``--cli`` also times ``rsimhash find-all --format json`` on the corpus file
without ``--jaccard`` (k = 3) and with ``--jaccard 0.9`` and ``0.8``.

Targets for verified mode: precision 1.0; recall >= 0.97 at J >= 0.9 and
>= 0.95 at J >= 0.8; at least half the documents per second of plain
find-all.

Usage::

    python benches/bench_quality.py                    # full corpus, 5 rounds
    python benches/bench_quality.py --max-docs 3000 --repeat 2   # quick
    python benches/bench_quality.py --cli --json quality.json
"""

from __future__ import annotations

import argparse
import gc
import hashlib
import json
import os
import statistics
import subprocess
import sys
import time
from typing import Any, Callable, Dict, List, Optional, Tuple

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from bench_fingerprint import machine_busy_seconds, machine_info  # noqa: E402

DATA_DIR = os.environ.get("RSIMHASH_BENCH_DATA", "/tmp/rsimhash-bench")
THRESHOLDS = (0.9, 0.8)  # the lowest one is the truth's
KS = range(11)
NUM_PERM = 128
TARGET_RECALL = {0.9: 0.97, 0.8: 0.95}
TARGET_SPEED = 0.5
TRUTH_VERSION = 1  # bump when the truth's method changes: old caches are ignored
LOW32 = 0xFFFFFFFF


# --------------------------------------------------------------------------
# corpus


def load_texts(path: str, max_docs: Optional[int]) -> List[str]:
    """The texts of the corpus (built first when missing), in file order."""
    if not os.path.exists(path):
        import quality_corpus

        print(f"building the corpus at {path} (about 40 s) ...", file=sys.stderr)
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        quality_corpus.write(path)
    texts = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            texts.append(json.loads(line)["text"])
            if max_docs is not None and len(texts) >= max_docs:
                break
    return texts


# --------------------------------------------------------------------------
# truth: an exact all-pairs similarity join that knows nothing of simhash


def keys_of(a, b):
    """Pairs of document numbers as sorted-order uint64 keys ``lo << 32 | hi``."""
    import numpy as np

    a, b = np.asarray(a, dtype=np.uint64), np.asarray(b, dtype=np.uint64)
    return (np.minimum(a, b) << np.uint64(32)) | np.maximum(a, b)


def unkey(keys):
    import numpy as np

    return (keys >> np.uint64(32)).astype(np.int64), (keys & np.uint64(LOW32)).astype(np.int64)


def jaccard(offsets, hashes, keys):
    """Exact Jaccard of each pair (a merge of the two sorted sets, in Rust)."""
    import numpy as np

    from rsimhash import _rsimhash

    a, b = unkey(keys)
    flat = np.stack([a, b], axis=1).astype(np.uint64).ravel()
    return _rsimhash.pair_similarity(offsets, hashes, flat, measure="jaccard")


def prefix_candidates(offsets, hashes, t: float):
    """Keys of every pair that shares a shingle in both prefixes and passes the size filter."""
    import numpy as np

    n, sizes = len(offsets) - 1, np.diff(offsets)
    _, inv, counts = np.unique(hashes, return_inverse=True, return_counts=True)
    rank = np.empty(len(counts), dtype=np.uint64)  # rarest first, ties by hash value
    rank[np.argsort(counts, kind="stable")] = np.arange(len(counts), dtype=np.uint64)
    doc = np.repeat(np.arange(n, dtype=np.uint64), sizes)
    by_doc = np.sort((doc << np.uint64(32)) | rank[inv.ravel()])  # each set in rank order
    place = np.arange(len(by_doc)) - np.repeat(offsets[:-1], sizes)
    # A longer prefix is always safe, so round ceil(t s) down when in doubt.
    prefix = sizes - np.ceil(t * sizes - 1e-9).astype(np.int64) + 1
    kept = by_doc[place < np.repeat(prefix, sizes)]
    by_tok = np.sort((kept << np.uint64(32)) | (kept >> np.uint64(32)))
    tok, docs = by_tok >> np.uint64(32), by_tok & np.uint64(LOW32)
    # Within a group of one shingle, each document pairs with every later one.
    start = np.flatnonzero(np.r_[True, tok[1:] != tok[:-1]])
    end = np.repeat(np.r_[start[1:], len(tok)], np.diff(np.r_[start, len(tok)]))
    later = end - np.arange(len(tok)) - 1
    left = np.repeat(np.arange(len(tok)), later)
    right = left + 1 + np.arange(len(left)) - np.repeat(np.cumsum(later) - later, later)
    a, b = docs[left].astype(np.int64), docs[right].astype(np.int64)
    sa, sb = sizes[a], sizes[b]
    ok = np.minimum(sa, sb) >= t * np.maximum(sa, sb) - 1e-9
    return np.unique(keys_of(a[ok], b[ok])), int(len(left))


def compute_truth(offsets, hashes, t: float) -> Dict[str, Any]:
    """Every pair with Jaccard >= t: sorted keys and their similarities."""
    import numpy as np

    t0 = time.perf_counter()
    cand, raw = prefix_candidates(offsets, hashes, t)
    sim = jaccard(offsets, hashes, cand)
    empty = np.flatnonzero(np.diff(offsets) == 0)  # two empty sets are alike (J = 1)
    ea, eb = np.triu_indices(len(empty), 1)
    keys = np.concatenate([cand[sim >= t], keys_of(empty[ea], empty[eb])])
    sims = np.concatenate([sim[sim >= t], np.ones(len(ea))])
    order = np.argsort(keys)
    return {
        "keys": keys[order],
        "sim": sims[order],
        "threshold": t,
        "raw_candidates": raw,
        "candidates": int(len(cand)),
        "seconds": time.perf_counter() - t0,
    }


def sets_digest(offsets, hashes) -> str:
    h = hashlib.blake2b(digest_size=16)
    h.update(offsets.tobytes())
    h.update(hashes.tobytes())
    return h.hexdigest()


def truth(corpus: str, n: int, offsets, hashes, data_dir: str, use_cache: bool) -> Dict[str, Any]:
    """The truth at the lowest threshold, from the cache when it matches."""
    import numpy as np

    st = os.stat(corpus)
    t = min(THRESHOLDS)
    path = os.path.join(data_dir, f"quality-truth-{st.st_size}-{st.st_mtime_ns}-n{n}-t{t}-v{TRUTH_VERSION}.npz")
    digest = sets_digest(offsets, hashes)
    if use_cache and os.path.exists(path):
        z = np.load(path)
        if str(z["digest"]) == digest:
            out = {k: z[k] for k in ("keys", "sim")}
            out.update(json.loads(str(z["meta"])), cached=path)
            return out
    out = compute_truth(offsets, hashes, t)
    os.makedirs(data_dir, exist_ok=True)
    meta = {k: out[k] for k in ("threshold", "raw_candidates", "candidates", "seconds")}
    np.savez(path + ".tmp.npz", keys=out["keys"], sim=out["sim"], digest=digest, meta=json.dumps(meta))
    os.replace(path + ".tmp.npz", path)
    out["cached"] = None
    return out


def check_truth(offsets, hashes, tr: Dict[str, Any], seed: int = 0, sample: int = 2000) -> Dict[str, Any]:
    """Brute force over every pair of ``sample`` documents (half of them from
    truth pairs, half at random), and 300 similarities against Python sets."""
    import numpy as np

    rng = np.random.default_rng(seed)
    n, t = len(offsets) - 1, tr["threshold"]
    a, b = unkey(tr["keys"])
    in_pairs = np.unique(np.r_[a, b])
    docs = np.unique(
        np.r_[
            rng.choice(in_pairs, min(sample // 2, len(in_pairs)), replace=False),
            rng.choice(n, min(sample // 2, n), replace=False),
        ]
    )
    ia, ib = np.triu_indices(len(docs), 1)
    keys = keys_of(docs[ia], docs[ib])
    sizes = np.diff(offsets)
    sa, sb = sizes[docs[ia]], sizes[docs[ib]]
    keys = keys[np.minimum(sa, sb) >= t * np.maximum(sa, sb) - 1e-9]  # exact: J <= min / max
    sim = jaccard(offsets, hashes, keys)
    brute = np.sort(keys[sim >= t])
    member = np.zeros(n, dtype=bool)
    member[docs] = True
    expected = tr["keys"][member[a] & member[b]]
    # Python sets: truth pairs, and the closest pairs below t in the sample.
    below = np.argsort(np.where(sim < t, -sim, np.inf))[:100]
    pick = rng.choice(len(tr["keys"]), min(200, len(tr["keys"])), replace=False)
    spot_keys = np.r_[tr["keys"][pick], keys[below]]
    spot_sims = np.r_[tr["sim"][pick], sim[below]]
    worst = 0.0
    for key, s in zip(spot_keys, spot_sims):
        x, y = unkey(np.array([key], dtype=np.uint64))
        sx = set(hashes[offsets[x[0]] : offsets[x[0] + 1]].tolist())
        sy = set(hashes[offsets[y[0]] : offsets[y[0] + 1]].tolist())
        exact = len(sx & sy) / len(sx | sy) if sx or sy else 1.0
        worst = max(worst, abs(exact - s))
    return {
        "sample_docs": int(len(docs)),
        "sample_pairs": int(len(ia)),
        "brute_pairs": int(len(brute)),
        "truth_pairs_in_sample": int(len(expected)),
        "brute_agrees": bool(np.array_equal(brute, expected)),
        "spot_checked": int(len(spot_keys)),
        "spot_max_error": worst,
    }


# --------------------------------------------------------------------------
# scoring


def score(pred, tr: Dict[str, Any]) -> Dict[float, Dict[str, Any]]:
    """Precision and recall at each threshold of a set of predicted pair keys."""
    import numpy as np

    pred = np.unique(pred)
    out = {}
    for t in THRESHOLDS:
        true_keys = tr["keys"][tr["sim"] >= t]
        hit = int(np.isin(pred, true_keys, assume_unique=True).sum())
        out[t] = {
            "tp": hit,
            "precision": hit / len(pred) if len(pred) else float("nan"),
            "recall": hit / len(true_keys) if len(true_keys) else float("nan"),
        }
    return out


def check_verified(pairs, sims, t: float, tr: Dict[str, Any], offsets, hashes) -> Dict[str, Any]:
    """Every pair verified mode reports must be in the truth with the same similarity."""
    import numpy as np

    keys = keys_of(pairs[:, 0], pairs[:, 1])
    at = np.minimum(np.searchsorted(tr["keys"], keys), max(len(tr["keys"]) - 1, 0))
    found = (tr["keys"][at] == keys) if len(tr["keys"]) else np.zeros(len(keys), dtype=bool)
    found &= tr["sim"][at] >= t
    err = np.abs(tr["sim"][at][found] - sims[found].astype(np.float64))
    wrong = keys[~found]
    wrong_exact = jaccard(offsets, hashes, wrong) if len(wrong) else np.zeros(0)
    return {
        "not_in_truth": int(len(wrong)),
        "sim_mismatch": int((err > 1e-6).sum()),
        "max_sim_error": float(err.max(initial=0.0)),
        "examples": [
            (int(k >> 32), int(k & LOW32), float(s), float(e)) for k, s, e in zip(wrong[:5], sims[~found][:5], wrong_exact[:5])
        ],
    }


# --------------------------------------------------------------------------
# timing


def clock(fn: Callable[[], Any], times: List[float]) -> Any:
    """Calls ``fn`` with garbage collection off, appends its wall time, returns its result."""
    gc.collect()
    gc.disable()
    try:
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
        return out
    finally:
        gc.enable()


def simhash_candidates(t: float) -> Tuple[str, int, int]:
    """The simhash candidates for ``t`` (``"auto"`` is the exact join in memory since issue 39)."""
    from rsimhash import _rsimhash

    return tuple(_rsimhash.auto_candidates(t))  # type: ignore[return-value]


def rounds(texts: List[str], repeat: int) -> Dict[str, Any]:
    """Interleaved rounds: plain find-all, verified at each t, chars, find_all at every k."""
    import rsimhash

    rsimhash.similar_pairs(texts[:500], 0.9, progress=False)  # warm-up: code and threads
    rsimhash.batch.find_all(rsimhash.fingerprints(texts[:500]), k=3, progress=False)
    times: Dict[str, List[float]] = {}
    out: Dict[str, Any] = {}
    for _ in range(repeat):
        for mode, width in (("words", 3), ("chars", 4)):
            fps = clock(lambda: rsimhash.fingerprints(texts, mode=mode, width=width), times.setdefault(f"fp {mode}", []))
            for k in KS:
                out[mode, k] = clock(
                    lambda: rsimhash.batch.find_all(fps, k=k, progress=False), times.setdefault(f"find_all {mode} {k}", [])
                )
            if mode == "words":
                for t in THRESHOLDS:
                    out["verified", t] = clock(
                        lambda: rsimhash.similar_pairs(texts, t, candidates=simhash_candidates(t), progress=False),
                        times.setdefault(f"verified {t}", []),
                    )
        times.setdefault("plain", []).append(times["fp words"][-1] + times["find_all words 3"][-1])
    out["times"] = times
    return out


def cli_rounds(corpus: str, repeat: int, data_dir: str) -> Dict[str, Any]:
    """``rsimhash find-all`` on the JSON-lines file, without and with ``--jaccard 0.9``."""
    base = [sys.executable, "-m", "rsimhash.cli", "find-all", "--input", corpus, "--format", "json", "--quiet"]
    helptext = subprocess.run(base[:4] + ["--help"], capture_output=True, text=True).stdout
    if "--jaccard" not in helptext:
        return {"skipped": "`rsimhash find-all --help` does not mention --jaccard (not built yet)"}
    out = os.path.join(data_dir, f"quality-cli-{os.getpid()}.jsonl")
    runs = {"plain": base + ["--distance", "3"]}
    runs.update({f"jaccard {t}": base + ["--jaccard", str(t)] for t in THRESHOLDS})
    times: Dict[str, List[float]] = {k: [] for k in runs}
    lines: Dict[str, int] = {}
    with open(corpus, "rb") as f:  # into the page cache
        while f.read(1 << 24):
            pass
    for _ in range(repeat):
        for name, cmd in runs.items():
            t0 = time.perf_counter()
            proc = subprocess.run(cmd + ["--output", out], capture_output=True, text=True)
            times[name].append(time.perf_counter() - t0)
            if proc.returncode != 0:
                return {"skipped": f"{name} failed ({proc.returncode}): {proc.stderr.strip()[-300:]}"}
            with open(out, "rb") as f:
                lines[name] = sum(1 for _ in f) - (name != "plain")  # the TSV's header
    os.remove(out)
    return {"times": times, "pairs": lines}


# --------------------------------------------------------------------------
# MinHash LSH peers


def lsh_bands(t: float, num_perm: int) -> Tuple[int, int]:
    """(bands, rows) with bands * rows == num_perm that minimise false positives +
    false negatives (weights 1/2 each), as datasketch chooses its own."""
    import numpy as np

    below, above = np.linspace(0, t, 1001), np.linspace(t, 1, 1001)
    best = None
    for b in (d for d in range(1, num_perm + 1) if num_perm % d == 0):
        r = num_perm // b
        fp = np.mean(1 - (1 - below**r) ** b) * t
        fn = np.mean((1 - above**r) ** b) * (1 - t)
        if best is None or fp + fn < best[0]:
            best = (fp + fn, b, r)
    return best[1], best[2]


def datasketch_sigs(offsets, hashes):
    import datasketch
    import numpy as np

    sigs = []
    for i in range(len(offsets) - 1):
        m = datasketch.MinHash(num_perm=NUM_PERM, seed=1, hashfunc=int)
        m.update_batch(hashes[offsets[i] : offsets[i + 1]] & np.uint64(LOW32))  # 32-bit values, as sha1_hash32's
        sigs.append(m)
    return sigs, np.array([m.hashvalues for m in sigs])


def datasketch_pairs(sigs, t: float) -> Tuple[List[Tuple[int, int]], str]:
    import datasketch

    lsh = datasketch.MinHashLSH(threshold=t, num_perm=NUM_PERM)
    for i, m in enumerate(sigs):
        lsh.insert(i, m)
    return [(i, j) for i, m in enumerate(sigs) for j in lsh.query(m) if j > i], f"b={lsh.b}, r={lsh.r}"


def rensa_sigs(offsets, hashes):
    import numpy as np
    import rensa

    sigs = []
    for i in range(len(offsets) - 1):
        m = rensa.RMinHash(num_perm=NUM_PERM, seed=42)
        m.update([str(h) for h in hashes[offsets[i] : offsets[i + 1]].tolist()])
        sigs.append(m)
    return sigs, np.array([m.digest() for m in sigs], dtype=np.uint64)


def rensa_pairs(sigs, t: float) -> Tuple[List[Tuple[int, int]], str]:
    import rensa

    b, r = lsh_bands(t, NUM_PERM)
    lsh = rensa.RMinHashLSH(threshold=t, num_perm=NUM_PERM, num_bands=b)
    for i, m in enumerate(sigs):
        lsh.insert(i, m)
    return [(i, j) for i, m in enumerate(sigs) for j in lsh.query(m) if j > i], f"b={b}, r={r}"


def minhash_rows(name: str, sigs_fn, pairs_fn, texts, tr) -> List[Dict[str, Any]]:
    """Raw LSH pairs and those with estimate >= t, per threshold; one timed run each."""
    import numpy as np

    from rsimhash import _rsimhash

    try:
        __import__(name)
    except ImportError:
        return [{"method": f"MinHash LSH, {name}", "note": "not installed"}]
    t0 = time.perf_counter()
    offsets, hashes = _rsimhash.shingle_sets(texts, mode="words", width=3)
    objs, sigs = sigs_fn(offsets, hashes)
    sig_s = time.perf_counter() - t0
    rows = []
    for t in THRESHOLDS:
        t1 = time.perf_counter()
        pairs, params = pairs_fn(objs, t)
        p = np.array(pairs, dtype=np.int64).reshape(-1, 2)
        raw = np.unique(keys_of(p[:, 0], p[:, 1]))
        lsh_s = time.perf_counter() - t1
        t2 = time.perf_counter()
        a, b = unkey(raw)
        est = (sigs[a] == sigs[b]).mean(axis=1) if len(raw) else np.zeros(0)
        kept = raw[est >= t]
        est_s = time.perf_counter() - t2
        for label, pred, secs in (("raw", raw, sig_s + lsh_s), (f"estimate >= {t}", kept, sig_s + lsh_s + est_s)):
            rows.append(
                {
                    "method": f"MinHash LSH, {name}, t={t} ({params}), {label}",
                    "threshold": t,
                    "candidates": int(len(raw)),
                    "reported": int(len(pred)),
                    "score": score(pred, tr),
                    "seconds": secs,
                }
            )
    return rows


# --------------------------------------------------------------------------
# output


def fmt(x: Optional[float], digits: int = 3) -> str:
    return "—" if x is None or x != x else f"{x:.{digits}f}"


def table_row(row: Dict[str, Any], n: int, plain_s: float) -> str:
    if "note" in row:
        return f"| {row['method']} | {row['note']} | | | | | | | |"
    cells = []
    for t in THRESHOLDS:
        s = row["score"][t] if row.get("threshold") in (None, t) else None
        cells += [fmt(s and s["precision"]), fmt(s and s["recall"])]
    cand = f"{row['candidates']:,}"
    if row.get("reported") is not None and row["reported"] != row["candidates"]:
        cand += f" ({row['reported']:,} kept)"
    secs = row["seconds"]
    return f"| {row['method']} | {cand} | {' | '.join(cells)} | {secs:.3f} | {n / secs:,.0f} | {plain_s / secs:.2f} |"


def main(argv: Optional[List[str]] = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument(
        "--corpus",
        default=os.path.join(DATA_DIR, "quality.jsonl"),
        help="JSON-lines corpus, built by quality_corpus.py when missing (default %(default)s)",
    )
    p.add_argument("--max-docs", type=int, default=None, help="only the first N documents (a quicker run)")
    p.add_argument("--repeat", type=int, default=5, help="timed rounds (default %(default)s)")
    p.add_argument("--data-dir", default=DATA_DIR, help="where the truth is cached (default %(default)s)")
    p.add_argument("--no-cache", action="store_true", help="compute the truth again (and cache the new one)")
    p.add_argument("--cli", action="store_true", help="also time `rsimhash find-all` with and without --jaccard")
    p.add_argument("--json", metavar="OUT", help="also write the figures to this JSON file")
    args = p.parse_args(argv)
    if args.repeat < 1:
        p.error("--repeat must be >= 1")
    start = time.perf_counter()
    import numpy as np

    import rsimhash
    from rsimhash import _rsimhash

    info = machine_info(rsimhash, np)
    texts = load_texts(args.corpus, args.max_docs)
    n, mb = len(texts), sum(len(s.encode("utf-8")) for s in texts) / 1e6
    offsets, hashes = _rsimhash.shingle_sets(texts, mode="words", width=3)
    tr = truth(args.corpus, n, offsets, hashes, args.data_dir, not args.no_cache)
    check = check_truth(offsets, hashes, tr)
    counts = {t: int((tr["sim"] >= t).sum()) for t in THRESHOLDS}

    busy0, wall0 = machine_busy_seconds(), time.perf_counter()
    cpu0 = time.process_time()
    r = rounds(texts, args.repeat)
    other = max(0.0, machine_busy_seconds() - busy0 - (time.process_time() - cpu0)) / (time.perf_counter() - wall0)
    med = {k: statistics.median(v) for k, v in r["times"].items()}
    rows: List[Dict[str, Any]] = []
    for mode, label in (("words", "words w=3"), ("chars", "chars n=4")):
        for k in KS:
            pairs = r[mode, k]
            rows.append(
                {
                    "method": f"simhash {label}, k={k}",
                    "candidates": int(len(pairs)),
                    "score": score(keys_of(pairs[:, 0], pairs[:, 1]), tr),
                    "seconds": med[f"fp {mode}"] + med[f"find_all {mode} {k}"],
                }
            )
    verified: Dict[float, Dict[str, Any]] = {}
    for t in THRESHOLDS:
        pairs, sims = r["verified", t]
        mode, width, k = _rsimhash.auto_candidates(t)
        cand = rsimhash.batch.find_all(rsimhash.fingerprints(texts, mode=mode, width=width), k=k, progress=False)
        verified[t] = {"auto": (mode, width, k), **check_verified(pairs, sims, t, tr, offsets, hashes)}
        rows.append(
            {
                "method": f"verified, t={t} (auto: {mode} w={width}, k={k})",
                "threshold": t,
                "candidates": int(len(cand)),
                "reported": int(len(pairs)),
                "score": score(keys_of(pairs[:, 0], pairs[:, 1]), tr),
                "seconds": med[f"verified {t}"],
            }
        )
    rows += minhash_rows("datasketch", datasketch_sigs, datasketch_pairs, texts, tr)
    rows += minhash_rows("rensa", rensa_sigs, rensa_pairs, texts, tr)
    cli = cli_rounds(args.corpus, args.repeat, args.data_dir) if args.cli else None

    m = info
    print(
        f"machine: {m['cpu']}, {m['nproc']} cores, load {m['loadavg']}, other processes "
        f"{other:.2f} cores while timing; python {m['python']}, rsimhash {m['rsimhash']}, numpy {m['numpy']}"
    )
    print(
        f"corpus: {args.corpus}, {n:,} documents, {mb:.1f} MB UTF-8, {len(hashes):,} distinct word 3-shingles "
        f"summed over documents"
    )
    print(
        f"truth: {counts[0.9]:,} pairs with J >= 0.9, {counts[0.8]:,} with J >= 0.8 "
        + (
            f"(cached: {tr['cached']})"
            if tr["cached"]
            else f"(prefix join {tr['seconds']:.1f} s: {tr['raw_candidates']:,} prefix pairs, "
            f"{tr['candidates']:,} after the size filter)"
        )
    )
    print(
        f"truth check: brute force over {check['sample_docs']:,} sampled documents ({check['sample_pairs']:,} pairs) "
        f"found {check['brute_pairs']:,} pairs >= {tr['threshold']}, truth has {check['truth_pairs_in_sample']:,}: "
        f"{'agree' if check['brute_agrees'] else 'DISAGREE: THE TRUTH IS WRONG'}; {check['spot_checked']} "
        f"similarities against Python sets, largest difference {check['spot_max_error']:.1e}"
    )
    print(
        f"timing: median of {args.repeat} interleaved rounds; plain find-all = fingerprints(texts) + "
        f"find_all(k=3): {med['plain']:.3f} s; MinHash rows: one run from the texts"
    )
    print()
    print(
        "| method | candidates | precision@0.9 | recall@0.9 | precision@0.8 | recall@0.8 | seconds | docs/s | "
        "ratio to plain find-all |"
    )
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for row in rows:
        print(table_row(row, n, med["plain"]))
    print()
    verdicts = {}
    for t in THRESHOLDS:
        v, s = verified[t], next(x for x in rows if x["method"].startswith(f"verified, t={t} "))
        prec, rec, speed = s["score"][t]["precision"], s["score"][t]["recall"], med["plain"] / s["seconds"]
        ok = {
            "precision": prec == 1.0 and v["not_in_truth"] == 0 and v["sim_mismatch"] == 0,
            "recall": rec >= TARGET_RECALL[t],
            "speed": speed >= TARGET_SPEED,
        }
        verdicts[t] = ok
        word = lambda b: "met" if b else "MISSED"
        print(
            f"verified t={t}: precision {prec:.4f} ({word(ok['precision'])}: 1.0), recall {rec:.4f} "
            f"({word(ok['recall'])}: >= {TARGET_RECALL[t]}), speed {speed:.2f} x plain find-all "
            f"({word(ok['speed'])}: >= {TARGET_SPEED}); similarities off the truth by at most "
            f"{v['max_sim_error']:.1e}"
        )
        if v["not_in_truth"] or v["sim_mismatch"]:
            print(
                f"  BUG: {v['not_in_truth']} reported pairs are not in the truth at J >= {t}, "
                f"{v['sim_mismatch']} similarities differ by more than 1e-6; (i, j, reported, exact): {v['examples']}"
            )
    if cli is not None:
        if "skipped" in cli:
            print(f"command line: skipped, {cli['skipped']}")
        else:
            cm = {k: statistics.median(v) for k, v in cli["times"].items()}
            print(
                f"command line (median of {args.repeat}): find-all --distance 3 {cm['plain']:.2f} s "
                f"({n / cm['plain']:,.0f} docs/s, {cli['pairs']['plain']:,} pairs)"
            )
            for t in THRESHOLDS:
                name = f"jaccard {t}"
                verdict = "met" if cm["plain"] / cm[name] >= TARGET_SPEED else "MISSED"
                print(
                    f"  with --jaccard {t}: {cm[name]:.2f} s ({n / cm[name]:,.0f} docs/s, "
                    f"{cli['pairs'][name]:,} pairs): {cm['plain'] / cm[name]:.2f} x plain find-all "
                    f"({verdict}: >= {TARGET_SPEED})"
                )
    print(f"run took {time.perf_counter() - start:.0f} s")
    if args.json:
        record = {
            "machine": info,
            "date": time.strftime("%Y-%m-%d %H:%M"),
            "corpus": args.corpus,
            "docs": n,
            "mb": mb,
            "truth": {str(t): c for t, c in counts.items()},
            "truth_check": check,
            "other_cores": other,
            "times": r["times"],
            "plain_median": med["plain"],
            "rows": [{**x, "score": {str(t): s for t, s in x.get("score", {}).items()}} for x in rows],
            "verified": {str(t): {**verified[t], "targets": verdicts[t]} for t in THRESHOLDS},
            "cli": cli,
        }
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(record, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
