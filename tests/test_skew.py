"""Skewed corpora: copies of one fingerprint (or text) and dense balls of
near-identical ones, through every path, against brute force; and the
inputs that once took quadratic time or aborted the process, each run as a
user would (the heavy ones in a child under an address-space limit, so an
abort is a failed test, not a dead test run)."""

from __future__ import annotations

import itertools
import json
import resource
import subprocess
import sys
import textwrap

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import rsimhash
from brute import popcount64
from budget import examples
from cli_helpers import ok, run_cli

K = 3


def ball(center: int, radius: int, bits: "list[int]") -> np.ndarray:
    """Every value within ``radius`` of ``center`` over the bit positions ``bits``."""
    out = [center]
    for r in range(1, radius + 1):
        for flip in itertools.combinations(bits, r):
            out.append(center ^ sum(1 << b for b in flip))
    return np.array(out, dtype=np.uint64)


@st.composite
def skewed(draw: st.DrawFn) -> np.ndarray:
    """Copies (1 to 2,000 of a value, and of a close one), a dense ball, or
    both, mixed with random values, in any order."""
    rng = np.random.default_rng(draw(st.integers(0, 2**32)))
    parts = [rng.integers(0, 2**64 - 1, draw(st.integers(0, 50)), dtype=np.uint64, endpoint=True)]
    center = draw(st.sampled_from([0, 2**64 - 1, int(rng.integers(0, 2**63))]))
    if draw(st.booleans()):
        n = draw(st.integers(1, 2_000))
        parts += [np.full(n, center, np.uint64), np.full(n // 3, center ^ 0b111, np.uint64)]
    if draw(st.booleans()):
        bits = sorted(draw(st.sets(st.integers(0, 63), min_size=5, max_size=10)))
        values = ball(center, draw(st.integers(1, 3)), bits)
        parts.append(values[rng.integers(0, len(values), draw(st.integers(1, 1_500)))])
    fps = np.concatenate(parts)
    return rng.permutation(fps) if draw(st.booleans()) else fps


def brute_dedup(fps: np.ndarray, k: int) -> "tuple[np.ndarray, np.ndarray]":
    """Keep mask and each dropped item's earliest kept item within k (its own position when kept)."""
    keep = np.zeros(len(fps), bool)
    matched = np.arange(len(fps), dtype=np.uint64)
    kept = np.empty(0, np.int64)
    for j, fp in enumerate(fps):
        near = kept[popcount64(fps[kept] ^ fp) <= k] if len(kept) else kept
        if len(near):
            matched[j] = near.min()
        else:
            keep[j] = True
            kept = np.append(kept, j)
    return keep, matched


def brute_components(fps: np.ndarray, k: int) -> np.ndarray:
    """Each item's smallest connected item within the k graph."""
    root = np.arange(len(fps))
    values, first, inverse = np.unique(fps, return_index=True, return_inverse=True)
    # Distinct values compared pairwise; copies join their first.
    for a in range(len(values)):
        near = np.flatnonzero(popcount64(values[a + 1 :] ^ values[a]) <= k) + a + 1
        for b in near:
            ra, rb = root[first[a]], root[first[b]]
            while root[ra] != ra:
                ra = root[ra]
            while root[rb] != rb:
                rb = root[rb]
            root[max(ra, rb)] = min(ra, rb)
    for x in range(len(fps)):
        r = first[inverse[x]]
        while root[r] != r:
            r = root[r]
        root[x] = r
    return root


@settings(max_examples=examples(40), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(fps=skewed(), split=st.sampled_from([None, 1, 7, 500]))
def test_dedup_paths_on_skew(fps: np.ndarray, split: "int | None") -> None:
    """Index.add_unique (in one call or many), batch.dedup and clusters on
    copies and dense balls equal brute force."""
    keep, matched = brute_dedup(fps, K)
    index = rsimhash.Index(K)
    parts = [fps] if split is None else [fps[i : i + split] for i in range(0, len(fps), split)] or [fps]
    got_new, got_matched = [], []
    for part in parts:
        is_new, m = index.add_unique(part)
        got_new.append(is_new)
        got_matched.append(m)
    is_new, m = np.concatenate(got_new), np.concatenate(got_matched)
    assert is_new.tolist() == keep.tolist()
    assert m[~keep].tolist() == matched[~keep].tolist()
    bkeep, bmatched = rsimhash.batch.dedup(fps, K, return_matched=True, progress=False)
    assert bkeep.tolist() == keep.tolist() and bmatched.tolist() == matched.tolist()
    ids, labels = rsimhash.batch.clusters(fps, K, progress=False)
    roots = brute_components(fps, K)
    sizes = np.bincount(roots, minlength=len(fps))
    in_clusters = np.flatnonzero(sizes[roots] >= 2)
    assert ids.tolist() == in_clusters.tolist()
    # Labels number the clusters in order of their smallest member.
    order = {r: i for i, r in enumerate(sorted(set(roots[in_clusters].tolist())))}
    assert labels.tolist() == [order[r] for r in roots[in_clusters].tolist()]


@settings(max_examples=examples(20), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(fps=skewed())
def test_find_all_copies_on_skew(fps: np.ndarray) -> None:
    """find_all lists every pair, or with copies="first" each copy with the
    first copy of its value only, in the index and the batch job."""
    fps = fps[:600]
    d = popcount64(fps[:, None] ^ fps[None, :]) <= K
    a, b = np.nonzero(np.triu(d, 1))
    every = np.stack([a, b], axis=1).astype(np.uint64)
    _, first_of = np.unique(fps, return_index=True)
    first = first_of[np.unique(fps, return_inverse=True)[1]]
    star = ((first[a] == a) & (first[b] == b)) | ((fps[a] == fps[b]) & (first[b] == a))
    assert_rows(rsimhash.batch.find_all(fps, K, copies="all", progress=False), every)
    assert_rows(rsimhash.batch.find_all(fps, K, copies="first", progress=False), every[star])
    index = rsimhash.Index(K)
    index.add(fps)
    assert_rows(index.find_all(copies="all"), every)
    assert_rows(index.find_all(copies="first"), every[star])


def assert_rows(got: np.ndarray, want: np.ndarray) -> None:
    """The same pairs in the same order, compared as arrays: as Python lists
    (up to 180,000 pairs here) the comparison was most of the test's time."""
    assert got.dtype == np.uint64 and got.shape == want.shape, (got.dtype, got.shape, want.shape)
    if not np.array_equal(got, want):
        bad = int(np.flatnonzero((got != want).any(axis=1))[0])
        raise AssertionError("row %d: got %s, want %s" % (bad, got[bad].tolist(), want[bad].tolist()))


def test_identical_fingerprints_in_one_call_are_a_lookup_each() -> None:
    """40,000 copies in one add_unique (was 134 s and 8.4 GB) and many
    calls of a few: each copy after the first matches it."""
    fps = np.full(40_000, 0x1234_5678_9ABC_DEF0, np.uint64)
    index = rsimhash.Index(K)
    is_new, matched = index.add_unique(fps)
    assert is_new.sum() == 1 and is_new[0] and (matched[1:] == 0).all() and len(index) == 1
    for part in np.array_split(fps, 400):
        is_new, matched = index.add_unique(part)
        assert not is_new.any() and (matched == 0).all()


def test_copies_with_ids_in_any_order() -> None:
    """Explicit ids, not ascending: a duplicate matches the smallest id of
    the kept items within k before it."""
    fps = np.array([5, 5, 7, 5, 1 << 40, 7], dtype=np.uint64)
    ids = np.array([90, 10, 50, 3, 60, 2], dtype=np.uint64)
    is_new, matched = rsimhash.Index(2).add_unique(fps, ids=ids)
    assert is_new.tolist() == [True, False, False, False, True, False]
    assert matched[~is_new].tolist() == [90, 90, 90, 90]


def _child(code: str, limit_gb: float = 8.0) -> "subprocess.CompletedProcess[str]":
    """Runs ``code`` in a child Python under an address-space limit: an
    allocation failure there aborts the child, not the test run."""

    def limit() -> None:
        size = int(limit_gb * (1 << 30))
        resource.setrlimit(resource.RLIMIT_AS, (size, size))

    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, preexec_fn=limit, timeout=600
    )


def test_million_copies_and_dense_ball_under_8_gib() -> None:
    """10^6 copies through add_unique, and 10^6 draws from the 43,745 values
    within 3 bits of one centre through batch.dedup and batch.clusters:
    both aborted under an 8 GiB address-space limit before."""
    proc = _child("""
        import itertools, numpy as np, rsimhash
        fps = np.full(10**6, 77, np.uint64)
        is_new, matched = rsimhash.Index(3).add_unique(fps)
        assert is_new.sum() == 1 and (matched[1:] == 0).all()
        c = 0x0123456789ABCDEF
        values = [c ^ sum(1 << b for b in flip) for r in range(4) for flip in itertools.combinations(range(64), r)]
        values = np.array(values, dtype=np.uint64)
        assert len(values) == 43745
        draws = values[np.random.default_rng(1).integers(0, len(values), 10**6)]
        keep = rsimhash.batch.dedup(draws, 3, progress=False)
        ids, labels = rsimhash.batch.clusters(draws, 3, progress=False)
        assert len(ids) == 10**6 and labels.max() == 0, "one component"
        assert 0 < keep.sum() < 5000, keep.sum()
        print("ok", keep.sum())
    """)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.startswith("ok")


def test_find_all_too_large_for_memory_is_an_error_not_an_abort() -> None:
    """10^5 copies make 5 * 10^9 pairs: refused before any is made with a
    MemoryError naming out= and copies="first" (both paths); the star of
    copies="first" and out= work."""
    proc = _child(
        """
        import numpy as np, rsimhash, warnings
        fps = np.full(10**5, 5, np.uint64)
        index = rsimhash.Index(3)
        index.add(fps)
        for run in (lambda: rsimhash.batch.find_all(fps, 3, progress=False), lambda: index.find_all()):
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    run()
            except MemoryError as e:
                assert 'copies="first"' in str(e), e
            else:
                raise AssertionError("no MemoryError")
        assert len(rsimhash.batch.find_all(fps, 3, copies="first", progress=False)) == 10**5 - 1
        assert len(index.find_all(copies="first")) == 10**5 - 1
        print("ok")
    """,
        limit_gb=4.0,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.startswith("ok")


def test_identical_texts_dedup_and_verified() -> None:
    """3 * 10^4 identical texts (aborted under 8 GB before), and 2 * 10^4
    copies of one document among others with jaccard=0.9 (202 s before):
    the first copy stays, and the verified answer equals the one on fewer
    copies."""
    text = "the quick brown fox jumps over the lazy dog " * 20
    keep = rsimhash.dedup([text] * 30_000)
    assert keep.sum() == 1 and keep[0]
    rng = np.random.default_rng(3)
    words = [f"w{i}" for i in range(500)]
    others = [" ".join(rng.choice(words, 60)) for _ in range(300)]
    texts = others[:100] + [text] * 20_000 + others[100:]
    keep = rsimhash.dedup(texts, jaccard=0.9)
    assert keep[100] and not keep[101:20_100].any()
    small = others[:100] + [text] * 3 + others[100:]
    small_keep = rsimhash.dedup(small, jaccard=0.9)
    assert keep[:101].tolist() == small_keep[:101].tolist()
    assert keep[20_100:].tolist() == small_keep[103:].tolist()
    ten = texts[95:105] + texts[20_095:20_105]  # 5 others, 10 copies, 5 others
    pairs, sims = rsimhash.similar_pairs(ten, 0.9, copies="first")
    assert (sims == 1.0).all() and pairs.tolist() == [[5, j] for j in range(6, 15)]
    assert len(rsimhash.similar_pairs(ten, 0.9)[0]) == 45


def test_cli_dedup_of_a_hundred_thousand_identical_records(tmp_path) -> None:
    """10^5 identical JSON records through the in-memory path (aborted at
    4 GB before): one kept, each removed row names it."""
    line = json.dumps({"id": "x", "text": "a page copied many times over the web"}) + "\n"
    corpus = tmp_path / "c.jsonl"
    corpus.write_text("".join(line.replace('"x"', f'"{i}"') for i in range(100_000)))
    out, removed = tmp_path / "kept.jsonl", tmp_path / "removed.tsv"
    ok(run_cli("dedup", "--input", corpus, "--output", out, "--removed", removed, "--quiet"))
    assert out.read_text().count("\n") == 1
    rows = removed.read_text().splitlines()
    assert len(rows) == 100_000 and rows[1] == "1\t0\t0" and rows[-1] == "99999\t0\t0"


def test_two_pass_verified_with_copies() -> None:
    """The two-pass verified job (beyond memory) on copies: each copy is
    linked to its first, and the pairs, the dedup and clusters equal the
    in-memory answers."""
    rng = np.random.default_rng(5)
    words = [f"w{i}" for i in range(300)]
    base = [" ".join(rng.choice(words, 40)) for _ in range(60)]
    texts = base + [base[i % 7] for i in range(700)] + [base[3] + " extra", base[3].upper()]
    pairs, sims = rsimhash.similar_pairs(texts, 0.8)
    bpairs, bsims = rsimhash.batch.similar_pairs(texts, 0.8, progress=False, memory_limit="64MB")
    assert bpairs.tolist() == pairs.tolist() and bsims.tolist() == sims.tolist()
    first, _ = rsimhash.batch.similar_pairs(texts, 0.8, progress=False, copies="first")
    assert first.tolist() == rsimhash.similar_pairs(texts, 0.8, copies="first")[0].tolist()
    keep = rsimhash.batch.similar_dedup(texts, 0.8, progress=False)
    assert keep.tolist() == rsimhash.dedup(texts, jaccard=0.8).tolist()
    ids, labels = rsimhash.batch.similar_clusters(texts, 0.8, progress=False)
    mids, mlabels = rsimhash.batch.similar_clusters(texts, 0.8, progress=False, memory_limit="1GB")
    assert ids.tolist() == mids.tolist() and labels.tolist() == mlabels.tolist()
