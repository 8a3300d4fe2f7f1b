"""Verified near-duplicates against brute force computed here.

``rsimhash.similar_pairs``, ``rsimhash.shingles``, ``rsimhash.dedup(...,
jaccard=)`` and ``rsimhash.batch.similar_pairs`` / ``similar_dedup`` /
``similar_clusters`` are checked against an oracle that shares nothing with
the library but its fingerprints: shingle sets from the pure-Python SPEC v1
reference (tests/reference_v1.py) as Python sets of FNV-1a 64 hashes, the
similarity of every candidate pair by Python set arithmetic, candidates as
every pair of ``rsimhash.fingerprints`` within ``k`` bits by brute force
(the fingerprints themselves are checked against the reference in
tests/test_fingerprint_properties.py, and again here on the planted corpus),
the dedup, connected components (union-find) and leader clusters derived
from those pairs.

Similarity values: the core keeps a pair when ``common / whole`` in double
precision is at least the threshold and reports that double rounded to
``float32`` (src/similar/overlap.rs); Python's ``int / int`` is the same
correctly rounded double, so the values must equal ``np.float32(c / w)``
bit for bit.

Corpora: seeded ones with planted near-duplicates (random-word base
documents, copies with a few words substituted, inserted or deleted, exact
copies, copies differing only in case, punctuation and Unicode whitespace,
empty texts, texts shorter than the shingle width, non-Latin scripts), and
hypothesis corpora over a tiny vocabulary, where many pairs are partly alike
and similarities fall on the thresholds.
"""

from __future__ import annotations

import json
import os
import random
import sys
import tempfile

import numpy as np
import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, example, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

import reference_v1 as ref  # noqa: E402
import rsimhash  # noqa: E402
from rsimhash import batch  # noqa: E402

U64_MAX = (1 << 64) - 1
_HC = [HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much]
QUICK = settings(max_examples=120, deadline=None, suppress_health_check=_HC)
FEW = settings(max_examples=15, deadline=None, suppress_health_check=_HC)


# ---------------------------------------------------------------------------
# The oracle
# ---------------------------------------------------------------------------
def ref_set(text, mode="words", width=3):
    """The shingle set of SPEC v1: distinct FNV-1a 64 hashes of the features."""
    return frozenset(ref.fnv1a64(f) for f in ref.features(text, mode, width))


def ref_similarity(a, b, measure):
    if not a or not b:
        return 1.0 if not a and not b else 0.0
    common = len(a & b)
    whole = len(a | b) if measure == "jaccard" else min(len(a), len(b))
    return common / whole


def within_k(fps, k):
    """Every pair ``(i, j)``, ``i < j``, of fingerprints within ``k`` bits."""
    v = [int(x) for x in fps]
    return [(i, j) for i in range(len(v)) for j in range(i + 1, len(v)) if bin(v[i] ^ v[j]).count("1") <= k]


def brute_pairs(texts, threshold, *, shingles="words", width=3, candidates, measure="jaccard", sets=None):
    """``{(i, j): similarity}`` of the candidate pairs at least ``threshold`` alike."""
    mode, cwidth, k = candidates
    fps = rsimhash.fingerprints(texts, mode=mode, width=cwidth)
    if sets is None:
        sets = [ref_set(t, shingles, width) for t in texts]
    found = {}
    for i, j in within_k(fps, k):
        s = ref_similarity(sets[i], sets[j], measure)
        if s >= threshold:
            found[(i, j)] = s
    return found


def all_alike(sets, threshold, measure="jaccard"):
    """Every pair at least ``threshold`` alike, candidates or not."""
    n = len(sets)
    return {(i, j): s for i in range(n) for j in range(i + 1, n) if (s := ref_similarity(sets[i], sets[j], measure)) >= threshold}


def brute_dedup(n, found):
    """``(keep, matched, similarity)``: in order, a text goes when it is alike
    a text kept before it; it names the earliest such."""
    partners = {}
    for (i, j), s in found.items():
        partners.setdefault(j, []).append((i, s))
    keep, matched, sims = [True] * n, list(range(n)), [1.0] * n
    for j in range(n):
        for i, s in sorted(partners.get(j, [])):
            if keep[i]:
                keep[j], matched[j], sims[j] = False, i, s
                break
    return keep, matched, sims


def brute_clusters(n, found, method, min_size, ids=None):
    """``(ids, labels)`` as ``similar_clusters`` lays them out: clusters of at
    least ``min_size`` in the order of their smallest id, members by id."""
    if method == "connected":
        parent = list(range(n))

        def root(x):
            while parent[x] != x:
                parent[x] = parent[parent[x]]
                x = parent[x]
            return x

        for i, j in found:
            a, b = root(i), root(j)
            if a != b:
                parent[max(a, b)] = min(a, b)
        owner = [root(x) for x in range(n)]
    else:
        _, owner, _ = brute_dedup(n, found)
    key = (lambda p: p) if ids is None else (lambda p: int(ids[p]))
    groups = {}
    for p in range(n):
        groups.setdefault(owner[p], []).append(key(p))
    clusters = sorted((sorted(g) for g in groups.values() if len(g) >= min_size), key=lambda g: g[0])
    flat = [x for g in clusters for x in g]
    labels = [c for c, g in enumerate(clusters) for _ in g]
    return flat, labels


def expected_rows(found, ids=None):
    """Pairs (of ids when given: smaller first) with their similarity, rows sorted."""
    rows = []
    for (i, j), s in found.items():
        a, b = (i, j) if ids is None else (int(ids[i]), int(ids[j]))
        rows.append((min(a, b), max(a, b), s))
    rows.sort()
    return rows


def assert_pairs(got, found, ids=None):
    pairs, sims = got
    rows = expected_rows(found, ids)
    assert isinstance(pairs, np.ndarray) and pairs.dtype == np.uint64 and pairs.shape == (len(rows), 2)
    assert isinstance(sims, np.ndarray) and sims.dtype == np.float32 and sims.shape == (len(rows),)
    assert pairs.tolist() == [[a, b] for a, b, _ in rows]
    # Exactly the double c / w rounded to float32 (see the module docstring).
    want = np.array([s for _, _, s in rows], dtype=np.float64).astype(np.float32)
    assert np.array_equal(sims, want), (sims, want)


def assert_clusters(got, want):
    ids, labels = got
    assert ids.dtype == np.uint64 and labels.dtype == np.uint64
    assert (ids.tolist(), labels.tolist()) == want


# ---------------------------------------------------------------------------
# Corpora
# ---------------------------------------------------------------------------
_LETTERS = "abcdefghijklmnopqrstuvwxyz"
_UNICODE_WORDS = [
    "été",
    "Straße",
    "ΣΟΦΙΑ",
    "σοφία",
    "Привет",
    "мир",
    "İstanbul",
    "ﬁle",
    "naïve",
    "٣٤٥",
    "東",
    "京",
    "漢字",
    "かな",
    "ภาษา",
    "한국어",
    "שלום",
    "عربي",
    "x²",
    "Ⅻ",
]
# Separators that leave the tokens as they are: Unicode spaces and punctuation.
_SEPS = [" ", "  ", "\t", "\n", ", ", ". ", "\u00a0", "\u3000", " - ", "\u2003", " / "]


def _edit(rng, words, vocab, n):
    w = list(words)
    for _ in range(n):
        op, i = rng.choice("sid"), rng.randrange(len(w))
        if op == "s":
            w[i] = rng.choice(vocab)
        elif op == "i":
            w.insert(i, rng.choice(vocab))
        elif len(w) > 1:
            del w[i]
    return w


def _same_tokens(rng, words):
    """The same tokens in other clothes: case, punctuation, Unicode spaces."""
    out = []
    for w in words:
        w = w.upper() if rng.random() < 0.2 and "ß" not in w and "ﬁ" not in w and "İ" not in w else w
        out.append(w)
        out.append(rng.choice(_SEPS))
    return "".join(out).strip() + rng.choice(["", "!", " ...", "\n"])


def planted_corpus(seed, families=36):
    """``(texts, family)``: base documents of random words, each with a few
    copies edited by 1 to 3 words, exact copies and same-token variants,
    some in non-Latin scripts, plus degenerate texts; shuffled."""
    rng = random.Random(seed)
    vocab = sorted({"".join(rng.choice(_LETTERS) for _ in range(rng.randint(3, 9))) for _ in range(4000)})
    docs = []
    for f in range(families):
        pool = vocab if f % 6 else _UNICODE_WORDS + vocab[:200]
        base = [rng.choice(pool) for _ in range(rng.randint(30, 110))]
        docs.append((" ".join(base), f))
        for _ in range(rng.randint(0, 3)):
            docs.append((" ".join(_edit(rng, base, pool, rng.randint(1, 3))), f))
        if rng.random() < 0.4:
            docs.append((" ".join(base), f))
        if rng.random() < 0.4:
            docs.append((_same_tokens(rng, base), f))
    degenerate = ["", "", "   \t\n", "?!", "a", "A.", "a b", "a  B", "été", "東京", "x y", "\u3000"]
    docs += [(t, -1) for t in degenerate]
    rng.shuffle(docs)
    return [t for t, _ in docs], [f for _, f in docs]


@pytest.fixture(scope="module")
def planted():
    texts, family = planted_corpus(20240607)
    sets = {(m, w): [ref_set(t, m, w) for t in texts] for m, w in (("words", 3), ("words", 1), ("chars", 4))}
    return texts, family, sets


_VOCAB = ["a", "b", "cat", "dog", "été", "ÉTÉ", "东", "京", "straße", "ΣΟΦΙΑ", "x1", "42", "ภา"]
_word = st.sampled_from(_VOCAB)


@st.composite
def corpora(draw):
    """Small corpora over a tiny vocabulary: bases, copies with a few edits
    (so many pairs are partly alike), raw strings, all in drawn order."""
    bases = draw(st.lists(st.lists(_word, max_size=14), max_size=6))
    docs = [list(b) for b in bases]
    if bases:
        for _ in range(draw(st.integers(0, 10))):
            w = list(draw(st.sampled_from(bases)))
            for op, i, x in draw(st.lists(st.tuples(st.sampled_from("sid"), st.integers(0, 20), _word), max_size=3)):
                if op == "i" or not w:
                    w.insert(i % (len(w) + 1), x)
                elif op == "s":
                    w[i % len(w)] = x
                else:
                    del w[i % len(w)]
            docs.append(w)
    texts = [draw(st.sampled_from(_SEPS)).join(d) for d in docs]
    texts += draw(st.lists(st.text(alphabet="ab Éé東.\u00a0", max_size=8), max_size=3))
    return draw(st.permutations(texts))


thresholds = st.one_of(
    st.sampled_from([1.0, 0.9, 0.8, 0.75, 2 / 3, 0.6, 0.5, 0.4, 1 / 3, 0.25, 0.1, 0.01]), st.floats(min_value=0.01, max_value=1.0)
)
shinglings = st.sampled_from([("words", 3), ("words", 1), ("words", 2), ("chars", 4), ("chars", 2)])
candidate_choices = st.tuples(
    st.sampled_from(["words", "chars"]), st.integers(1, 4), st.one_of(st.sampled_from([0, 3, 16]), st.integers(0, 16))
)


def distinct_ids(rng, n):
    """Distinct uint64 ids in no particular order, the extremes first in the pool."""
    pool = [0, U64_MAX, 1, U64_MAX - 1][:n]
    seen = set(pool)
    while len(pool) < n:
        x = rng.randrange(1 << 64)
        if x not in seen:
            seen.add(x)
            pool.append(x)
    rng.shuffle(pool)
    return np.array(pool, dtype=np.uint64)


# ---------------------------------------------------------------------------
# 1. Exact answers against brute force
# ---------------------------------------------------------------------------
@QUICK
@given(
    texts=corpora(),
    threshold=thresholds,
    shingling=shinglings,
    candidates=candidate_choices,
    measure=st.sampled_from(["jaccard", "containment"]),
    with_ids=st.booleans(),
    threads=st.sampled_from([None, 1, 2]),
    seed=st.integers(0, 1 << 32),
)
@example(
    texts=["a b c", "a b c", "", "", "a", "a b", "b a"],
    threshold=1.0,
    shingling=("words", 3),
    candidates=("words", 1, 0),
    measure="jaccard",
    with_ids=False,
    threads=None,
    seed=0,
)
@example(
    texts=["a b c d", "a b c d e f", "a b"],
    threshold=0.5,
    shingling=("words", 1),
    candidates=("words", 3, 16),
    measure="jaccard",
    with_ids=True,
    threads=1,
    seed=0,
)
@example(
    texts=["a b c d", "a b c d e f", "a b"],
    threshold=0.5,
    shingling=("words", 1),
    candidates=("words", 3, 16),
    measure="containment",
    with_ids=False,
    threads=1,
    seed=0,
)
def test_similar_pairs_and_dedup_equal_brute_force(texts, threshold, shingling, candidates, measure, with_ids, threads, seed):
    shingles, width = shingling
    sets = [ref_set(t, shingles, width) for t in texts]
    found = brute_pairs(texts, threshold, shingles=shingles, width=width, candidates=candidates, measure=measure, sets=sets)
    ids = distinct_ids(random.Random(seed), len(texts)) if with_ids else None
    got = rsimhash.similar_pairs(
        texts,
        threshold,
        shingles=shingles,
        width=width,
        candidates=candidates,
        ids=ids,
        measure=measure,
        threads=threads,
        progress=False,
    )
    assert_pairs(got, found, ids)
    # Precision 1 by construction: every pair reported is alike.
    for i, j in found:
        assert ref_similarity(sets[i], sets[j], measure) >= threshold

    keep = rsimhash.dedup(
        texts, jaccard=threshold, mode=shingles, width=width, candidates=candidates, measure=measure, threads=threads
    )
    assert keep.dtype == np.bool_ and keep.tolist() == brute_dedup(len(texts), found)[0]


def test_planted_corpus_fingerprints_match_the_reference(planted):
    texts, _, _ = planted
    for mode, width in (("words", 1), ("chars", 4)):
        assert rsimhash.fingerprints(texts, mode=mode, width=width).tolist() == [ref.fingerprint(t, mode, width) for t in texts]


@pytest.mark.parametrize(
    "threshold, shingling, candidates, measure",
    [
        (0.9, ("words", 3), ("words", 1, 7), "jaccard"),
        (0.5, ("words", 3), ("words", 1, 16), "jaccard"),
        (0.7, ("words", 3), ("chars", 4, 12), "containment"),
        (0.3, ("words", 1), ("words", 3, 16), "containment"),
        (0.85, ("chars", 4), ("chars", 4, 10), "jaccard"),
        (1.0, ("words", 3), ("words", 1, 3), "jaccard"),
    ],
)
def test_planted_corpus_equals_brute_force(planted, threshold, shingling, candidates, measure):
    texts, _, sets = planted
    found = brute_pairs(
        texts, threshold, shingles=shingling[0], width=shingling[1], candidates=candidates, measure=measure, sets=sets[shingling]
    )
    assert len(found) >= 20  # the planted copies are there to be found
    kw = dict(shingles=shingling[0], width=shingling[1], candidates=candidates, measure=measure, progress=False)
    assert_pairs(rsimhash.similar_pairs(texts, threshold, **kw), found)
    ids = distinct_ids(random.Random(7), len(texts))
    assert_pairs(rsimhash.similar_pairs(texts, threshold, ids=ids, threads=1, **kw), found, ids)
    keep = rsimhash.dedup(texts, jaccard=threshold, mode=shingling[0], width=shingling[1], candidates=candidates, measure=measure)
    assert keep.tolist() == brute_dedup(len(texts), found)[0]


def test_containment_is_relative_to_the_smaller_set():
    small = "one two three four five six"
    large = small + " seven eight nine ten eleven twelve thirteen fourteen"
    a, b = ref_set(small), ref_set(large)
    assert a < b
    kw = dict(candidates=("words", 1, 16), progress=False)
    pairs, sims = rsimhash.similar_pairs([large, small], 0.99, measure="containment", **kw)
    assert pairs.tolist() == [[0, 1]] and sims.tolist() == [1.0]
    pairs, sims = rsimhash.similar_pairs([large, small], 0.2, measure="jaccard", **kw)
    assert sims.tolist() == [float(np.float32(len(a) / len(b)))]
    # The larger text after the smaller is still contained both ways round.
    assert rsimhash.dedup([small, large], jaccard=1.0, measure="containment", candidates=("words", 1, 16)).tolist() == [
        True,
        False,
    ]


@QUICK
@given(
    text=st.text(alphabet=st.sampled_from(sorted(set("".join(_VOCAB + _UNICODE_WORDS + _SEPS) + "ab?!.\ud800"))), max_size=40),
    shingling=st.sampled_from([("words", None), ("chars", None), ("words", 1), ("words", 5), ("chars", 1), ("chars", 7)]),
)
def test_shingles_equal_the_reference(text, shingling):
    mode, width = shingling
    got = rsimhash.shingles(text, mode=mode, width=width)
    want = sorted(ref_set(text, mode, width if width is not None else ref.DEFAULT_WIDTH[mode]))
    assert got.dtype == np.uint64 and got.tolist() == want


def test_shingles_refuse_a_zero_width():
    with pytest.raises(ValueError, match="width"):
        rsimhash.shingles("a b c", width=0)
    with pytest.raises(ValueError, match="mode"):
        rsimhash.shingles("a b c", mode="bytes")


# ---------------------------------------------------------------------------
# 2. candidates="auto" finds the planted pairs
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("threshold", [0.9, 0.8])
def test_auto_candidates_find_every_planted_pair(planted, threshold):
    texts, family, sets = planted
    truth = all_alike(sets[("words", 3)], threshold)
    planted_pairs = {p for p in truth if family[p[0]] == family[p[1]] != -1}
    assert len(planted_pairs) >= 30
    got = rsimhash.similar_pairs(texts, threshold, progress=False)
    assert_pairs(got, truth)  # nothing missed, nothing extra
    auto = rsimhash._rsimhash.auto_candidates(threshold)
    assert auto == ("words", 1, {0.9: 7, 0.8: 10}[threshold])
    assert_pairs(got, brute_pairs(texts, threshold, candidates=auto, sets=sets[("words", 3)]))
    assert rsimhash.dedup(texts, jaccard=threshold).tolist() == brute_dedup(len(texts), truth)[0]


# ---------------------------------------------------------------------------
# 3. Bad input
# ---------------------------------------------------------------------------
BAD = [
    (dict(threshold=0), ValueError, "threshold"),
    (dict(threshold=1.5), ValueError, "threshold"),
    (dict(threshold=-0.1), ValueError, "threshold"),
    (dict(threshold=float("nan")), ValueError, "threshold"),
    (dict(threshold=float("inf")), ValueError, "threshold"),
    (dict(threshold=True), TypeError, "threshold"),
    (dict(threshold="x"), TypeError, "threshold"),
    (dict(measure="cosine"), ValueError, "measure"),
    (dict(candidates="manual"), ValueError, "candidates"),
    (dict(candidates=("bytes", 1, 3)), ValueError, "mode"),
    (dict(candidates=("words", 1, 17)), ValueError, "k"),
    (dict(candidates=("words", 1, 65)), ValueError, "k"),
    (dict(candidates=("words", 1, -1)), ValueError, "k"),
    (dict(candidates=("words", 0, 3)), ValueError, "width"),
    (dict(candidates=("words", 1)), TypeError, "candidates"),
    (dict(candidates=("words", 1, 3, 4)), TypeError, "candidates"),
    (dict(candidates=3), TypeError, "candidates"),
    (dict(candidates=("words", 1, 3.0)), TypeError, "k"),
    (dict(width=0), ValueError, "width"),
    (dict(width=-2), ValueError, "width"),
    (dict(shingles="bytes"), ValueError, "shingles"),
    (dict(ids=np.arange(2, dtype=np.uint64)), ValueError, "ids"),
    (dict(ids=np.arange(4, dtype=np.uint64)), ValueError, "ids"),
    (dict(ids=np.zeros((3, 1), dtype=np.uint64)), ValueError, "ids"),
    (dict(ids=np.arange(3, dtype=np.int64) - 1), ValueError, "ids must be non-negative"),
    (dict(ids=[1.5, 2, 3]), TypeError, "ids"),
    (dict(ids=[7, 8, 7]), ValueError, "ids must be distinct"),
]


@pytest.mark.parametrize("kwargs, error, word", BAD, ids=[f"{b[0]}" for b in BAD])
def test_bad_arguments_are_refused(kwargs, error, word, tmp_path):
    texts = ["a b c d", "a b c d e", "x y"]
    kw = dict(kwargs)
    threshold = kw.pop("threshold", 0.5)
    with pytest.raises(error, match=word):
        rsimhash.similar_pairs(texts, threshold, progress=False, **kw)
    with pytest.raises(error, match=word):
        batch.similar_pairs(texts, threshold, progress=False, workdir=tmp_path / "w", **kw)
    if "ids" in kw:
        with pytest.raises(error, match=word):
            batch.similar_clusters(texts, threshold, progress=False, workdir=tmp_path / "w", **kw)
        # The job made the work directory: it leaves nothing, not even that.
        assert not (tmp_path / "w").exists()
        return
    with pytest.raises(error, match=word):
        batch.similar_dedup(texts, threshold, progress=False, workdir=tmp_path / "w", **kw)
    if "shingles" in kw:  # dedup's argument is its mode
        kw["mode"] = kw.pop("shingles")
        word = "mode"
    with pytest.raises(error, match=word):
        rsimhash.dedup(texts, jaccard=threshold, **kw)
    assert not (tmp_path / "w").exists()


def test_bad_batch_arguments_are_refused(tmp_path):
    texts = ["a b c d", "a b c d e"]
    with pytest.raises(TypeError, match="read twice"):
        batch.similar_pairs(iter(texts), 0.5, progress=False)
    with pytest.raises(TypeError, match="single str"):  # a function must give chunks, not texts
        batch.similar_pairs(lambda: texts, 0.5, progress=False)
    with pytest.raises(TypeError, match="single str"):
        rsimhash.similar_pairs("a b c d", 0.5, progress=False)
    with pytest.raises(TypeError, match=r"texts\[1\]"):
        batch.similar_pairs(["a b", None], 0.5, progress=False)
    with pytest.raises(ValueError, match="method"):
        batch.similar_clusters(texts, 0.5, method="single", progress=False)
    with pytest.raises(ValueError, match="min_size"):
        batch.similar_clusters(texts, 0.5, min_size=0, progress=False)
    with pytest.raises(ValueError, match="memory_limit"):
        batch.similar_pairs(texts, 0.5, memory_limit=100, progress=False)
    with pytest.raises(FileNotFoundError):
        batch.similar_pairs(tmp_path / "missing.jsonl", 0.5, progress=False)
    with pytest.raises(ValueError, match="k=5 is for fingerprints within k bits and has no effect with jaccard="):
        rsimhash.dedup(texts, 5, jaccard=0.5)


def test_texts_that_change_between_the_passes_are_refused(tmp_path):
    calls = []

    def chunks():
        calls.append(1)
        return [["a b c d"] * (2 + len(calls))]

    work = tmp_path / "w"
    chosen = tuple(rsimhash._rsimhash.auto_candidates(0.5))  # the two passes (the exact join reads once)
    with pytest.raises(ValueError, match="changed between the passes"):
        batch.similar_pairs(chunks, 0.5, candidates=chosen, workdir=work, progress=False)
    assert len(calls) == 2 and not os.path.exists(work), "the work directory the job made is removed"


# ---------------------------------------------------------------------------
# 4. rsimhash.batch equals the in-memory answers and brute force
# ---------------------------------------------------------------------------
def _write_jsonl(path, texts):
    with open(path, "w", encoding="utf-8") as f:
        for i, t in enumerate(texts):
            f.write(json.dumps({"id": i, "text": t}) + "\n")


def _write_parquet(path, texts, row_group_size=37):
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    table = pa.table({"n": pa.array(range(len(texts)), pa.int64()), "body": pa.array(texts, pa.string())})
    pq.write_table(table, path, row_group_size=row_group_size)


def source_of(kind, texts, tmp_path, calls):
    """``(texts argument, extra keyword arguments)`` of each input kind."""
    if kind == "list":
        return list(texts), {}
    if kind == "tuple":
        return tuple(texts), {}
    if kind == "callable":
        pa = pytest.importorskip("pyarrow")
        # Chunks of every kind a column in memory may be, one after another.
        kinds = [list, tuple, lambda c: np.array(c, dtype=object), lambda c: pa.array(c, type=pa.string())]

        def chunks():
            calls.append(1)
            return (kinds[(i // 17) % 4](texts[i : i + 17]) for i in range(0, len(texts), 17))

        return chunks, {}
    if kind == "arrow":
        pa = pytest.importorskip("pyarrow")
        half = len(texts) // 2
        return pa.chunked_array([texts[:half], texts[half:]], type=pa.string()), {}
    if kind == "jsonl":
        _write_jsonl(tmp_path / "texts.jsonl", texts)
        return str(tmp_path / "texts.jsonl"), {}
    if kind == "jsonl-parts":
        third = len(texts) // 3
        paths = [tmp_path / "p0.jsonl", tmp_path / "p1.jsonl", tmp_path / "p2.jsonl"]
        for p, part in zip(paths, (texts[:third], texts[third : 2 * third], texts[2 * third :])):
            _write_jsonl(p, part)
        return paths, {}
    assert kind == "parquet"
    _write_parquet(tmp_path / "texts.parquet", texts)
    return tmp_path / "texts.parquet", {"column": "body"}


@pytest.fixture(scope="module")
def batch_case(planted):
    """The planted corpus (lone-surrogate free, so that files hold it) and
    the brute-force answers at 0.6 with wide candidates."""
    texts, _, sets = planted
    threshold, candidates = 0.6, ("words", 1, 12)
    found = brute_pairs(texts, threshold, candidates=candidates, sets=sets[("words", 3)])
    return texts, threshold, candidates, found


KINDS = ["list", "tuple", "callable", "arrow", "jsonl", "jsonl-parts", "parquet"]


@pytest.mark.parametrize("memory", [None, 1024], ids=["default-memory", "1KiB"])
@pytest.mark.parametrize("kind", KINDS)
def test_batch_jobs_equal_brute_force_and_memory(batch_case, kind, memory, tmp_path, monkeypatch):
    texts, threshold, candidates, found = batch_case
    n = len(texts)
    systemp = tmp_path / "systemp"
    systemp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(systemp))
    monkeypatch.setenv("TMPDIR", str(systemp))
    work = tmp_path / "work" if memory is not None else None
    calls = []
    source, extra = source_of(kind, texts, tmp_path, calls)
    job = dict(candidates=candidates, memory_limit=memory, workdir=work, progress=False, **extra)

    got = batch.similar_pairs(source, threshold, **job)
    assert_pairs(got, found)
    mem = rsimhash.similar_pairs(texts, threshold, candidates=candidates, progress=False)
    assert np.array_equal(got[0], mem[0]) and np.array_equal(got[1], mem[1])

    ids = distinct_ids(random.Random(3), n)
    assert_pairs(batch.similar_pairs(source, threshold, ids=ids, **job), found, ids)

    keep, matched, sims = batch.similar_dedup(source, threshold, return_matched=True, **job)
    want_keep, want_matched, want_sims = brute_dedup(n, found)
    assert keep.dtype == np.bool_ and keep.tolist() == want_keep
    assert matched.dtype == np.uint64 and matched.tolist() == want_matched
    assert sims.dtype == np.float32 and np.array_equal(sims, np.array(want_sims, dtype=np.float64).astype(np.float32))
    assert batch.similar_dedup(source, threshold, **job).tolist() == want_keep
    assert keep.tolist() == rsimhash.dedup(texts, jaccard=threshold, candidates=candidates).tolist()

    for method in ("connected", "leader"):
        assert_clusters(batch.similar_clusters(source, threshold, method=method, **job), brute_clusters(n, found, method, 2))
    assert_clusters(
        batch.similar_clusters(source, threshold, method="connected", min_size=3, ids=ids, **job),
        brute_clusters(n, found, "connected", 3, ids),
    )
    assert_clusters(
        batch.similar_clusters(source, threshold, method="leader", min_size=1, ids=ids, **job),
        brute_clusters(n, found, "leader", 1, ids),
    )

    if kind in ("list", "tuple", "arrow"):  # the in-memory functions take the same columns
        assert_pairs(rsimhash.similar_pairs(source, threshold, candidates=candidates, progress=False), found)
        mask = rsimhash.dedup(source, jaccard=threshold, candidates=candidates)
        assert (mask.to_pylist() if kind == "arrow" else mask.tolist()) == want_keep
    if kind == "callable":
        assert len(calls) == 2 * 8  # each of the 8 jobs reads the texts twice
    # Nothing left behind: the work directory (when given) and the system's.
    if work is not None:
        assert not os.path.exists(work), "the work directory the job made is removed"
    assert os.listdir(systemp) == []


@pytest.mark.parametrize("measure", ["jaccard", "containment"])
def test_batch_auto_and_other_shingles_equal_memory(planted, measure, tmp_path):
    texts, _, _ = planted
    for threshold, kw in ((0.8, dict()), (0.7, dict(shingles="chars", width=5, candidates=("chars", 4, 9)))):
        # "auto" is the exact join where the sets fit the memory limit (in
        # memory always), else the candidates auto_candidates names.
        for memory in (None, "1KiB"):
            exact = not kw and memory is None
            mine = kw or dict(candidates="exact" if exact else tuple(rsimhash._rsimhash.auto_candidates(threshold)))
            want = rsimhash.similar_pairs(texts, threshold, measure=measure, progress=False, **mine)
            assert len(want[0]) >= 20
            got = batch.similar_pairs(
                texts, threshold, measure=measure, memory_limit=memory, workdir=tmp_path / "w", progress=False, **kw
            )
            assert np.array_equal(got[0], want[0]) and np.array_equal(got[1], want[1])
            keep = batch.similar_dedup(
                texts, threshold, measure=measure, memory_limit=memory, workdir=tmp_path / "w", progress=False, **kw
            )
            dkw = dict(mine)
            if "shingles" in dkw:
                dkw["mode"] = dkw.pop("shingles")
            assert keep.tolist() == rsimhash.dedup(texts, jaccard=threshold, measure=measure, **dkw).tolist()
    assert not (tmp_path / "w").exists(), "the job made the work directory and removes it, empty, at the end"


def test_chars_width_defaults():
    """similar_pairs and batch.similar_* default to width 3 in either mode
    (API.md's signature); dedup(jaccard=, mode="chars") to the mode's 4, as
    fingerprints do. With the width given, all agree."""
    texts = ["abcdefgh", "abcdefgx"]  # Jaccard 5/7 of 3-grams, 4/6 of 4-grams
    kw = dict(candidates=("words", 1, 16))
    _, sims = rsimhash.similar_pairs(texts, 0.1, shingles="chars", progress=False, **kw)
    a, b = (set(rsimhash.shingles(t, mode="chars", width=3).tolist()) for t in texts)
    assert sims.tolist() == [float(np.float32(len(a & b) / len(a | b)))] == [float(np.float32(5 / 7))]
    assert batch.similar_dedup(texts, 0.7, shingles="chars", progress=False, **kw).tolist() == [True, False]
    assert rsimhash.dedup(texts, jaccard=0.7, mode="chars", **kw).tolist() == [True, True]
    for width in (3, 4):
        assert (
            batch.similar_dedup(texts, 0.7, shingles="chars", width=width, progress=False, **kw).tolist()
            == rsimhash.dedup(texts, jaccard=0.7, mode="chars", width=width, **kw).tolist()
        )


@FEW
@given(
    texts=corpora(),
    threshold=thresholds,
    candidates=candidate_choices,
    measure=st.sampled_from(["jaccard", "containment"]),
    method=st.sampled_from(["connected", "leader"]),
    min_size=st.integers(1, 3),
)
def test_batch_in_parts_equals_brute_force(texts, threshold, candidates, measure, method, min_size):
    found = brute_pairs(texts, threshold, candidates=candidates, measure=measure)
    with tempfile.TemporaryDirectory() as work:
        job = dict(candidates=candidates, measure=measure, memory_limit=1024, workdir=work, threads=1, progress=False)
        chunked = lambda: (texts[i : i + 3] for i in range(0, len(texts), 3))  # noqa: E731
        assert_pairs(batch.similar_pairs(chunked, threshold, **job), found)
        keep, matched, _ = batch.similar_dedup(texts, threshold, return_matched=True, **job)
        want = brute_dedup(len(texts), found)
        assert (keep.tolist(), matched.tolist()) == (want[0], want[1])
        assert_clusters(
            batch.similar_clusters(chunked, threshold, method=method, min_size=min_size, **job),
            brute_clusters(len(texts), found, method, min_size),
        )
        assert os.listdir(work) == [], "a directory the user made stays, empty"


# ---------------------------------------------------------------------------
# 5. Empty input, one text, all texts identical
# ---------------------------------------------------------------------------
def _empty_sources(tmp_path):
    pa = pytest.importorskip("pyarrow")
    (tmp_path / "empty.jsonl").write_text("")
    _write_parquet(tmp_path / "empty.parquet", [])
    return [
        ([], {}),
        (lambda: iter([]), {}),
        (pa.array([], type=pa.string()), {}),
        (str(tmp_path / "empty.jsonl"), {}),
        (str(tmp_path / "empty.parquet"), {"column": "body"}),
    ]


def test_empty_input(tmp_path):
    pairs, sims = rsimhash.similar_pairs([], 0.9, progress=False)
    assert pairs.shape == (0, 2) and pairs.dtype == np.uint64 and sims.shape == (0,) and sims.dtype == np.float32
    pairs, _ = rsimhash.similar_pairs([], 0.9, ids=np.empty(0, np.uint64), progress=False)
    assert pairs.shape == (0, 2)
    keep = rsimhash.dedup([], jaccard=0.9)
    assert keep.dtype == np.bool_ and keep.shape == (0,)
    for memory in (None, 1024):
        for source, extra in _empty_sources(tmp_path):
            job = dict(memory_limit=memory, workdir=tmp_path / "w", progress=False, **extra)
            pairs, sims = batch.similar_pairs(source, 0.9, **job)
            assert pairs.shape == (0, 2) and pairs.dtype == np.uint64 and sims.dtype == np.float32
            keep, matched, sims = batch.similar_dedup(source, 0.9, return_matched=True, **job)
            assert keep.shape == matched.shape == sims.shape == (0,)
            ids, labels = batch.similar_clusters(source, 0.9, min_size=1, **job)
            assert ids.shape == labels.shape == (0,)
    assert not (tmp_path / "w").exists(), "the job made the work directory and removes it, empty, at the end"


@pytest.mark.parametrize("text", ["the cat sat on the mat", "", "a", "東京"])
def test_single_text(text, tmp_path):
    assert rsimhash.similar_pairs([text], 0.5, progress=False)[0].shape == (0, 2)
    assert rsimhash.dedup([text], jaccard=0.5).tolist() == [True]
    job = dict(memory_limit=1024, workdir=tmp_path / "w", progress=False)
    assert batch.similar_pairs([text], 0.5, **job)[0].shape == (0, 2)
    keep, matched, sims = batch.similar_dedup([text], 0.5, return_matched=True, **job)
    assert (keep.tolist(), matched.tolist(), sims.tolist()) == ([True], [0], [1.0])
    assert_clusters(batch.similar_clusters([text], 0.5, min_size=1, ids=np.array([U64_MAX], np.uint64), **job), ([U64_MAX], [0]))
    assert_clusters(batch.similar_clusters([text], 0.5, **job), ([], []))


@pytest.mark.parametrize("text", ["the cat sat on the mat today", "", "a b", "ΣΟΦΙΑ σοφία"])
@pytest.mark.parametrize("measure", ["jaccard", "containment"])
def test_all_texts_identical(text, measure, tmp_path):
    n = 6
    texts = [text] * n
    found = {(i, j): 1.0 for i in range(n) for j in range(i + 1, n)}
    for candidates in ("auto", ("words", 1, 0), ("chars", 4, 0)):
        kw = dict(candidates=candidates, measure=measure, progress=False)
        assert_pairs(rsimhash.similar_pairs(texts, 1.0, **kw), found)
        ids = np.array([9, 3, U64_MAX, 0, 7, 5], dtype=np.uint64)
        assert_pairs(rsimhash.similar_pairs(texts, 1.0, ids=ids, **kw), found, ids)
        assert rsimhash.dedup(texts, jaccard=1.0, candidates=candidates, measure=measure).tolist() == [True] + [False] * (n - 1)
        if candidates != "auto":
            continue  # each batch job fsyncs its work files: once is enough here
        job = dict(kw, memory_limit=1024, workdir=tmp_path / "w")
        assert_pairs(batch.similar_pairs(texts, 1.0, **job), found)
        keep, matched, sims = batch.similar_dedup(texts, 1.0, return_matched=True, **job)
        assert (keep.tolist(), matched.tolist(), sims.tolist()) == ([True] + [False] * 5, [0] * n, [1.0] * n)
        for method in ("connected", "leader"):
            assert_clusters(batch.similar_clusters(texts, 1.0, method=method, ids=ids, **job), (sorted(ids.tolist()), [0] * n))
    assert not (tmp_path / "w").exists(), "the job made the work directory and removes it, empty, at the end"


def test_progress_of_a_verified_job_keeps_one_total():
    """The search for candidates and their check: one job to the caller,
    one total (its texts' first copies through the passes), done only
    growing to it."""
    texts = [f"doc {i % 50} shared words of a page about topic {i % 7}" for i in range(3000)]
    seen = []
    rsimhash.similar_pairs(texts, 0.8, progress=lambda *a: seen.append(a))
    assert len({a[1] for a in seen}) == 1
    assert seen[-1][0] == seen[-1][1] > 0
    assert all(a[0] <= b[0] for a, b in zip(seen, seen[1:]))
