"""``candidates="exact"``: every pair at least the threshold alike, by the
exact set-similarity join (src/similar/exact.rs), against brute force over
all pairs computed here from the pure-Python SPEC v1 reference.

``candidates="auto"``, the default, takes the exact join in memory; the
command line says in its summary line which it took.
"""

from __future__ import annotations

import json
import os
import sys

import numpy as np
import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, example, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

import rsimhash  # noqa: E402
from cli_helpers import ok, read_tsv, run_cli  # noqa: E402
from test_similar import all_alike, brute_dedup, ref_set  # noqa: E402

_HC = [HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much]
THRESHOLDS = [round(0.05 * i, 2) for i in range(1, 21)]

# A tiny vocabulary: many pairs partly alike, similarities on the thresholds.
WORD = st.sampled_from(["a", "b", "c", "d", "e", "f", "g", "h", "Ä"])
TEXT = st.lists(WORD, min_size=0, max_size=9).map(" ".join)


def corpus_with_copies(draw_texts):
    """Texts, with copies of earlier ones mixed in."""
    return st.lists(st.tuples(draw_texts, st.integers(0, 3)), max_size=24).map(
        lambda drawn: [t if c or i == 0 else drawn[i - 1][0] for i, (t, c) in enumerate(drawn)]
    )


def as_found(pairs, sims):
    return {(int(a), int(b)): float(s) for (a, b), s in zip(pairs.tolist(), sims.tolist())}


@settings(max_examples=60, deadline=None, suppress_health_check=_HC)
@given(
    texts=corpus_with_copies(TEXT),
    width=st.sampled_from([1, 2, 3]),
    measure=st.sampled_from(["jaccard", "containment"]),
)
@example(texts=[], width=3, measure="jaccard")
@example(texts=["", "", "a", "a b c", "a b c", "a b c d"], width=3, measure="jaccard")
@example(texts=["a"] * 5 + ["a b"], width=1, measure="containment")
def test_exact_pairs_are_every_alike_pair(texts, width, measure):
    """At every threshold from 0.05 to 1: every pair at least that alike,
    with its similarity as ``float32`` of the double, and nothing else."""
    sets = [ref_set(t, "words", width) for t in texts]
    for t in THRESHOLDS:
        pairs, sims = rsimhash.similar_pairs(texts, t, width=width, candidates="exact", measure=measure, progress=False)
        want = all_alike(sets, t, measure)
        assert pairs.dtype == np.uint64 and sims.dtype == np.float32
        assert sorted(as_found(pairs, sims)) == sorted(want), (t, measure)
        assert sims.tolist() == [float(np.float32(want[p])) for p in map(tuple, pairs.tolist())]


@settings(max_examples=40, deadline=None, suppress_health_check=_HC)
@given(texts=corpus_with_copies(TEXT), threshold=st.sampled_from(THRESHOLDS), copies=st.sampled_from(["all", "first"]))
def test_auto_is_exact_in_memory_and_copies_first_is_a_subset(texts, threshold, copies):
    sets = [ref_set(t, "words", 2) for t in texts]
    pairs, _ = rsimhash.similar_pairs(texts, threshold, width=2, progress=False, copies=copies)
    found = {tuple(p) for p in pairs.tolist()}
    want = set(all_alike(sets, threshold))
    if copies == "first":  # each copy of a text (equal bytes) paired with its first copy only
        first = [texts.index(t) for t in texts]
        want = {(i, j) for i, j in want if first[i] == i and first[j] == j} | {(f, j) for j, f in enumerate(first) if f != j}
    assert found == want


@settings(max_examples=40, deadline=None, suppress_health_check=_HC)
@given(texts=corpus_with_copies(TEXT), threshold=st.sampled_from(THRESHOLDS), measure=st.sampled_from(["jaccard", "containment"]))
def test_exact_dedup_is_brute_force_dedup(texts, threshold, measure):
    sets = [ref_set(t, "words", 2) for t in texts]
    keep = rsimhash.dedup(texts, jaccard=threshold, width=2, candidates="exact", measure=measure)
    assert keep.tolist() == brute_dedup(len(texts), all_alike(sets, threshold, measure))[0]


def test_a_thousand_copies_are_joined_once():
    """1,000 copies of one text: 499,500 pairs, listed from one set; the
    time (which follows the pairs, not a square of checks) is in
    benches/bench_exact.py."""
    texts = ["the quick brown fox jumps over the lazy dog " * 3] * 1000 + ["another text about nothing at all here"]
    pairs, sims = rsimhash.similar_pairs(texts, 0.9, candidates="exact", progress=False)
    assert len(pairs) == 1000 * 999 // 2 and bool((sims == 1).all())
    pairs, _ = rsimhash.similar_pairs(texts, 0.9, candidates="exact", progress=False, copies="first")
    assert len(pairs) == 999


def test_exact_finds_what_candidates_miss():
    """Two texts half alike whose single-word fingerprints are far apart."""
    a = " ".join(f"w{i}" for i in range(40))
    b = " ".join(f"w{i}" for i in range(20)) + " " + " ".join(f"x{i}" for i in range(20))
    exact = as_found(*rsimhash.similar_pairs([a, b], 0.3, candidates="exact", progress=False))
    assert list(exact) == [(0, 1)]
    assert exact[(0, 1)] == pytest.approx(rsimhash.jaccard(a, b))
    corpus = rsimhash.similar.SimilarCorpus(0.3)
    assert corpus.exact
    assert not rsimhash.similar.SimilarCorpus(0.3, candidates=("words", 1, 3)).exact


def test_bad_candidates_are_refused():
    with pytest.raises(ValueError, match='"auto", "exact"'):
        rsimhash.similar_pairs(["a"], 0.5, candidates="fast")


def test_cli_exact_and_auto_say_which(tmp_path):
    texts = [
        " ".join(f"w{i}" for i in range(40)),
        " ".join(f"w{i}" for i in range(20)) + " " + " ".join(f"x{i}" for i in range(20)),
        "something else entirely, with words of its own",
        " ".join(f"w{i}" for i in range(40)),
    ]
    path = tmp_path / "in.jsonl"
    path.write_text("".join(json.dumps({"id": f"d{i}", "text": t}) + "\n" for i, t in enumerate(texts)))
    want = rsimhash.similar_pairs(texts, 0.3, progress=False)[0].tolist()
    for how in ("exact", "auto"):
        out = tmp_path / f"pairs-{how}.tsv"
        proc = ok(run_cli("find-all", "--input", path, "--jaccard", "0.3", "--candidates", how, "--output", out))
        assert "exact join" in proc.stderr.decode(), proc.stderr
        rows = read_tsv(out.read_bytes())
        assert [[int(r[0][1:]), int(r[1][1:])] for r in rows[1:]] == want
        proc = ok(run_cli("cluster", "--input", path, "--jaccard", "0.3", "--candidates", how, "--output", tmp_path / "c.tsv"))
        assert "exact join" in proc.stderr.decode(), proc.stderr
    # Beyond the memory limit, auto takes the candidates' two passes and says so; exact holds the sets anyway.
    proc = ok(run_cli("find-all", "--input", path, "--jaccard", "0.3", "--memory-limit", "1KiB", "--output", tmp_path / "p.tsv"))
    assert "simhash candidates (words width 1 within 16 bits)" in proc.stderr.decode(), proc.stderr
    proc = ok(
        run_cli(
            "find-all",
            "--input",
            path,
            "--jaccard",
            "0.3",
            "--candidates",
            "exact",
            "--memory-limit",
            "1KiB",
            "--output",
            tmp_path / "q.tsv",
        )
    )
    assert "exact join" in proc.stderr.decode(), proc.stderr
    assert (tmp_path / "q.tsv").read_bytes() == (tmp_path / "pairs-exact.tsv").read_bytes()


def test_cli_dedup_exact(tmp_path):
    texts = [
        " ".join(f"w{i}" for i in range(40)),
        " ".join(f"w{i}" for i in range(20)) + " " + " ".join(f"x{i}" for i in range(20)),
        "something else entirely, with words of its own",
        " ".join(f"w{i}" for i in range(40)),
        "",
        "",
    ]
    path = tmp_path / "in.jsonl"
    lines = [json.dumps({"id": f"d{i}", "text": t}) + "\n" for i, t in enumerate(texts)]
    path.write_text("".join(lines))
    keep = rsimhash.dedup(texts, jaccard=0.3)
    assert keep.tolist() == [True, False, True, False, True, False]
    for how in ("exact", "auto"):
        out, removed = tmp_path / f"kept-{how}.jsonl", tmp_path / f"removed-{how}.tsv"
        proc = ok(
            run_cli("dedup", "--input", path, "--jaccard", "0.3", "--candidates", how, "--output", out, "--removed", removed)
        )
        assert "exact join" in proc.stderr.decode(), proc.stderr
        assert out.read_text() == "".join(line for line, k in zip(lines, keep.tolist()) if k)
        rows = read_tsv(removed.read_bytes())
        assert rows[1:] == [["d1", "d0", rows[1][2]], ["d3", "d0", "1"], ["d5", "d4", "1"]]
        assert float(rows[1][2]) == pytest.approx(rsimhash.jaccard(texts[0], texts[1]), abs=1e-6)
    proc = ok(
        run_cli("dedup", "--input", path, "--jaccard", "0.3", "--candidates", "words,1,3", "--output", tmp_path / "k.jsonl")
    )
    assert "simhash candidates (words width 1 within 3 bits)" in proc.stderr.decode(), proc.stderr


@settings(max_examples=30, deadline=None, suppress_health_check=_HC)
@given(texts=corpus_with_copies(TEXT), threshold=st.sampled_from(THRESHOLDS))
def test_exact_clusters_are_the_components_of_every_alike_pair(texts, threshold):
    sets = [ref_set(t, "words", 2) for t in texts]
    parent = list(range(len(texts)))

    def root(x):
        while parent[x] != x:
            x = parent[x]
        return x

    for i, j in all_alike(sets, threshold):
        parent[root(i)] = root(j)
    groups = {}
    for i in range(len(texts)):
        groups.setdefault(root(i), []).append(i)
    corpus = rsimhash.similar.SimilarCorpus(threshold, width=2, candidates="exact")
    corpus.add(texts)
    members, starts = corpus.clusters(progress=False)
    got = [members[a:b].tolist() for a, b in zip(starts[:-1].tolist(), starts[1:].tolist())]
    assert sorted(got) == sorted(g for g in groups.values() if len(g) > 1)


@settings(max_examples=25, deadline=None, suppress_health_check=_HC)
@given(texts=corpus_with_copies(TEXT), threshold=st.sampled_from(THRESHOLDS), measure=st.sampled_from(["jaccard", "containment"]))
def test_batch_jobs_exact_are_brute_force(texts, threshold, measure):
    """The batch jobs with candidates="exact": every alike pair, the dedup
    and the clusters of brute force, as the in-memory calls give them."""
    sets = [ref_set(t, "words", 2) for t in texts]
    want = all_alike(sets, threshold, measure)
    kw = dict(width=2, measure=measure, candidates="exact", progress=False)
    pairs, sims = rsimhash.batch.similar_pairs(texts, threshold, **kw)
    assert as_found(pairs, sims) == {p: float(np.float32(s)) for p, s in want.items()}
    ids = [f"t{i}" for i in range(len(texts))]
    named, named_sims = rsimhash.batch.similar_pairs(texts, threshold, ids=ids, **kw)
    assert sorted(map(tuple, named.tolist())) == sorted(tuple(sorted((f"t{a}", f"t{b}"))) for a, b in want)
    keep, matched, sim = rsimhash.batch.similar_dedup(texts, threshold, return_matched=True, **kw)
    brute_keep = brute_dedup(len(texts), want)[0]
    assert keep.tolist() == brute_keep
    assert keep.tolist() == rsimhash.dedup(texts, jaccard=threshold, width=2, measure=measure, candidates="exact").tolist()
    for j in np.flatnonzero(~keep):
        i = int(matched[j])
        assert keep[i] and i < j and float(sim[j]) == float(np.float32(want[(i, int(j))]))
    got_ids, labels = rsimhash.batch.similar_clusters(texts, threshold, **kw)
    got = sorted(sorted(got_ids[labels == label].tolist()) for label in set(labels.tolist()))
    corpus = rsimhash.similar.SimilarCorpus(threshold, width=2, measure=measure, candidates="exact")
    corpus.add(texts)
    members, starts = corpus.clusters()
    want_clusters = sorted(sorted(members[a:b].tolist()) for a, b in zip(starts[:-1], starts[1:]))
    assert got == want_clusters
    # Every pair's two texts share a cluster.
    label_of = dict(zip(got_ids.tolist(), labels.tolist()))
    assert all(label_of.get(a) is not None and label_of.get(a) == label_of.get(b) for a, b in want)


def test_batch_exact_beyond_the_memory_limit_names_what_it_needs(caplog, tmp_path):
    """candidates="exact" past memory_limit is a MemoryError naming the
    memory needed and the limit; "auto" there takes the candidates' two
    passes (the same answer as naming them), and says which it took."""
    import logging

    texts = [" ".join(f"w{(i * 13 + j) % 997}" for j in range(60)) for i in range(400)]
    texts += texts[:50]
    with pytest.raises(
        MemoryError, match=r'candidates="exact" holds .* about [0-9.,]+ (KiB|MiB) for these 450 texts .* memory_limit=64.0 KiB'
    ):
        rsimhash.batch.similar_pairs(texts, 0.8, candidates="exact", memory_limit="64KiB", progress=False)
    chosen = tuple(rsimhash._rsimhash.auto_candidates(0.8))
    with caplog.at_level(logging.INFO, logger="rsimhash.batch"):
        caplog.clear()
        small = rsimhash.batch.similar_pairs(texts, 0.8, memory_limit="64KiB", workdir=tmp_path, progress=False)
        assert "simhash candidates (words width 1 within 10 bits)" in caplog.text, caplog.text
        named = rsimhash.batch.similar_pairs(
            texts, 0.8, candidates=chosen, memory_limit="64KiB", workdir=tmp_path, progress=False
        )
        assert small[0].tolist() == named[0].tolist() and small[1].tolist() == named[1].tolist()
        caplog.clear()
        roomy = rsimhash.batch.similar_pairs(texts, 0.8, progress=False)
        assert "exact join" in caplog.text, caplog.text
    exact = rsimhash.similar_pairs(texts, 0.8, candidates="exact", progress=False)
    assert roomy[0].tolist() == exact[0].tolist() and roomy[1].tolist() == exact[1].tolist()
    # The candidates find a subset of every alike pair, with the same values.
    assert {tuple(p) for p in small[0].tolist()} <= {tuple(p) for p in exact[0].tolist()}
