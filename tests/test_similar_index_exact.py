"""``SimilarIndex(..., candidates="exact")``: the online prefix index finds
every stored text at least the threshold alike (recall 1), against brute
force over all stored texts computed here from the pure-Python SPEC v1
reference: random small corpora with copies, empty and one-shingle texts,
every threshold from 0.05 to 1, both measures, removals, stricter query
thresholds, add_unique and save/load.
"""

from __future__ import annotations

import os
import sys
import threading

import numpy as np
import pytest

pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, example, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

import rsimhash  # noqa: E402
from test_similar import ref_set, ref_similarity  # noqa: E402
from test_similar_exact import TEXT, THRESHOLDS, corpus_with_copies  # noqa: E402

_HC = [HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much]
EXAMPLES = settings(max_examples=60, deadline=None, suppress_health_check=_HC)
threshold_st = st.one_of(st.sampled_from(THRESHOLDS), st.floats(0.05, 1.0))


def brute(stored, text, threshold, measure, width):
    """``[(id, similarity)]`` of every stored text (``{id: text}``) at least
    ``threshold`` alike ``text``, in the index's order."""
    q = ref_set(text, "words", width)
    found = []
    for i, t in stored.items():
        s = ref_similarity(ref_set(t, "words", width), q, measure)
        if s >= threshold:
            found.append((i, float(np.float32(s))))
    return sorted(found, key=lambda m: (-m[1], m[0]))


@EXAMPLES
@given(
    texts=corpus_with_copies(TEXT),
    queries=st.lists(TEXT, max_size=6),
    threshold=threshold_st,
    stricter=st.floats(0.0, 1.0),
    measure=st.sampled_from(["jaccard", "containment"]),
    width=st.sampled_from([1, 2, 3]),
    gone=st.lists(st.integers(0, 30), max_size=10),
)
@example(texts=[], queries=[""], threshold=0.05, stricter=0.0, measure="jaccard", width=3, gone=[])
@example(texts=["", "", "a", "a", "a b"], queries=["", "a"], threshold=1.0, stricter=0.0, measure="jaccard", width=1, gone=[2])
@example(
    texts=["a"] * 4 + ["a b c d e f g h"], queries=["a"], threshold=0.05, stricter=0.0, measure="containment", width=1, gone=[0]
)
def test_exact_queries_find_every_alike_stored_text(texts, queries, threshold, stricter, measure, width, gone):
    index = rsimhash.SimilarIndex(threshold, width=width, measure=measure, candidates="exact")
    ids = [3 * i + 1 for i in range(len(texts))]
    assert index.add(texts, ids=ids).tolist() == ids
    stored = dict(zip(ids, texts))
    asked = texts + queries
    for q in asked:
        assert index.query(q) == brute(stored, q, threshold, measure, width), q
    # A stricter threshold: exactly the matches at least that alike.
    t2 = min(1.0, threshold + (1.0 - threshold) * stricter)
    pos, got, sims = index.query_batch(asked, threshold=t2)
    want = [(p, i, s) for p, q in enumerate(asked) for i, s in brute(stored, q, t2, measure, width)]
    assert list(zip(pos.tolist(), got.tolist(), sims.tolist())) == want
    # Removed texts are never found again; the rest still are, every one.
    gone_ids = sorted({3 * g + 1 for g in gone} & set(ids))
    assert index.remove(gone_ids) == len(gone_ids)
    for g in gone_ids:
        del stored[g]
    assert len(index) == len(stored)
    for q in asked:
        assert index.query(q) == brute(stored, q, threshold, measure, width), q


@EXAMPLES
@given(
    texts=corpus_with_copies(TEXT),
    threshold=threshold_st,
    split=st.integers(0, 24),
    measure=st.sampled_from(["jaccard", "containment"]),
)
def test_exact_add_unique_is_brute_force_in_order(texts, threshold, split, measure):
    index = rsimhash.SimilarIndex(threshold, width=2, measure=measure, candidates="exact")
    at = min(split, len(texts))
    a_new, a_matched = index.add_unique(texts[:at])
    b_new, b_matched = index.add_unique(texts[at:])
    is_new, matched = a_new.tolist() + b_new.tolist(), a_matched.tolist() + b_matched.tolist()
    sets = [ref_set(t, "words", 2) for t in texts]
    kept = []
    for j in range(len(texts)):
        start = 0 if j < at else at
        alike = [i for i in kept if ref_similarity(sets[i], sets[j], measure) >= threshold]
        before = [i for i in alike if i < start] or [i for i in alike if i >= start]
        if before:
            assert not is_new[j] and matched[j] == min(before), j
        else:
            assert is_new[j] and matched[j] == j, j
            kept.append(j)
    assert len(index) == len(kept)


@settings(max_examples=15, deadline=None, suppress_health_check=_HC)
@given(texts=corpus_with_copies(TEXT), threshold=threshold_st, gone=st.lists(st.integers(0, 24), max_size=6), mmap=st.booleans())
def test_exact_save_and_load(tmp_path_factory, texts, threshold, gone, mmap):
    path = tmp_path_factory.mktemp("exact") / "texts.rsh"
    index = rsimhash.SimilarIndex(threshold, candidates="exact")
    index.add(texts)
    index.remove(sorted(set(gone) & set(range(len(texts)))))
    index.save(path)
    loaded = rsimhash.SimilarIndex.load(path, mmap=mmap)
    assert loaded.info()["exact"] and loaded.candidates == "exact"
    assert {k: v for k, v in loaded.info().items() if k != "nbytes"} == {k: v for k, v in index.info().items() if k != "nbytes"}
    for q in texts + ["a b c", ""]:
        assert loaded.query(q) == index.query(q)
    more = [t + " more" for t in texts]
    assert loaded.add(more).tolist() == index.add(more).tolist()
    for q in more:
        assert loaded.query(q) == index.query(q)
    # The file's fingerprints load as a plain Index, k = 0.
    plain = rsimhash.Index.load(path)
    assert plain.k == 0 and len(plain) == len(texts) - len(set(gone) & set(range(len(texts))))


def test_exact_finds_what_the_candidates_miss():
    """Two texts half alike whose single-word fingerprints are far apart:
    the exact index finds the pair, the simhash candidates do not."""
    a = " ".join(f"w{i}" for i in range(40))
    b = " ".join(f"w{i}" for i in range(20)) + " " + " ".join(f"x{i}" for i in range(20))
    exact = rsimhash.SimilarIndex(0.3, candidates="exact")
    exact.add([a])
    assert exact.query(b) == [(0, pytest.approx(rsimhash.jaccard(a, b)))]
    auto = rsimhash.SimilarIndex(0.3)
    auto.add([a])
    assert auto.query(b) == []


def test_exact_info_settings_and_errors():
    index = rsimhash.SimilarIndex(0.8, candidates="exact", measure="containment")
    info = index.info()
    assert info["exact"] is True and info["candidates"] == "exact" and info["k"] == 0
    assert info["design"] == "prefix index: every shingle, rarest first"
    assert "candidates='exact'" in repr(index)
    assert rsimhash.SimilarIndex(0.8).info()["exact"] is False
    index.add(["the cat sat on the mat"], ids=["cat"])
    assert index.info()["nbytes"] == index.nbytes > 0
    with pytest.raises(ValueError, match="prefixes are indexed for 0.8"):
        index.query("the cat", threshold=0.7)
    assert index.query("the cat sat on the mat and more", threshold=0.9) == [("cat", 1.0)]
    with pytest.raises(KeyError, match="dog"):
        index.remove(["dog"])
    with pytest.raises(ValueError):
        rsimhash.SimilarIndex(0.0, candidates="exact")
    with pytest.raises(ValueError, match='"auto", "exact"'):
        rsimhash.SimilarIndex(0.8, candidates="Exact")


def test_exact_queries_from_many_threads_while_adding():
    """Queries share the read lock, adds take the write lock; every query
    answers as brute force over the texts stored before it or after."""
    base = [" ".join(f"w{(i * 7 + j) % 50}" for j in range(12)) for i in range(200)]
    index = rsimhash.SimilarIndex(0.5, candidates="exact")
    index.add(base[:100])
    errors = []

    def ask():
        try:
            for _ in range(5):
                pos, _, _ = index.query_batch(base[:100], threads=1)
                assert set(pos.tolist()) == set(range(100))
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=ask) for _ in range(3)]
    for t in threads:
        t.start()
    for i in range(100, 200, 10):
        index.add(base[i : i + 10])
    for t in threads:
        t.join()
    assert not errors
    stored = dict(enumerate(base))
    for q in base[::17]:
        assert index.query(q) == brute(stored, q, 0.5, "jaccard", 3)


@pytest.mark.parametrize("measure", ["jaccard", "containment"])
def test_exact_after_the_order_is_made_by_frequency(measure):
    """Past 1,024 held sets the order is made again by how many sets hold
    each shingle: answers stay brute force's, before and after removals
    and further adds."""
    import random

    rng = random.Random(39)
    vocab = [f"w{i}" for i in range(60)]
    texts = [" ".join(rng.choices(vocab, k=rng.randint(0, 14))) for _ in range(2600)]
    texts += texts[:100]  # copies
    index = rsimhash.SimilarIndex(0.6, width=1, measure=measure, candidates="exact")
    stored = {}
    for start in range(0, 2000, 500):  # the order made by frequency in the third call (1,500 held sets)
        ids = list(range(start, start + 500))
        index.add(texts[start : start + 500], ids=ids)
        stored.update(zip(ids, texts[start : start + 500]))
    queries = texts[::37] + texts[2000:2040]
    sets = {i: ref_set(t, "words", 1) for i, t in stored.items()}

    def want(q):
        qs = ref_set(q, "words", 1)
        exact = {i: ref_similarity(s, qs, measure) for i, s in sets.items()}
        return sorted([(i, float(np.float32(x))) for i, x in exact.items() if x >= 0.6], key=lambda m: (-m[1], m[0]))

    for q in queries:
        assert index.query(q) == want(q), q
    index.remove(list(range(0, 2000, 3)))
    for i in range(0, 2000, 3):
        del sets[i]
    index.add(texts[2000:], ids=list(range(2000, len(texts))))
    sets.update({i: ref_set(texts[i], "words", 1) for i in range(2000, len(texts))})
    for q in queries:
        assert index.query(q) == want(q), q
