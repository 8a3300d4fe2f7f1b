"""``rsimhash.SimilarIndex`` and ``rsimhash.jaccard`` against brute force.

The oracle is tests/test_similar.py's: shingle sets from the pure-Python
SPEC v1 reference as Python sets of FNV-1a 64 hashes, similarities by set
arithmetic, candidates as every stored text whose ``rsimhash.fingerprints``
(of the candidates' mode and width) are within ``k`` bits. A query's
answer must be exactly the stored texts that are candidates and at least
the threshold alike, with ``np.float32`` of the exact similarity, sorted by
similarity (highest first), then id; and the same pairs ``similar_pairs``
gives on the same texts.
"""

from __future__ import annotations

import os
import sys
import threading

import numpy as np
import pytest

pytest.importorskip("hypothesis")
from hypothesis import given  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

import rsimhash  # noqa: E402
from test_similar import FEW, QUICK, ref_set, ref_similarity  # noqa: E402

WORDS = ["a", "b", "c", "d", "e", "f", "g"]
texts_st = st.lists(st.lists(st.sampled_from(WORDS), max_size=8).map(" ".join), max_size=25)
threshold_st = st.one_of(st.just(1.0), st.floats(0.2, 1.0))


def brute_query(stored, text, threshold, candidates, measure="jaccard", shingles="words", width=3):
    """``[(id, similarity)]`` of ``stored`` (``{id: text}``) alike ``text``."""
    mode, cwidth, k = candidates
    ids = list(stored)
    fps = rsimhash.fingerprints([stored[i] for i in ids] + [text], mode=mode, width=cwidth)
    q, qset = int(fps[-1]), ref_set(text, shingles, width)
    found = []
    for i, fp in zip(ids, fps[:-1]):
        if bin(int(fp) ^ q).count("1") <= k:
            s = ref_similarity(ref_set(stored[i], shingles, width), qset, measure)
            if s >= threshold:
                found.append((i, float(np.float32(s))))
    return sorted(found, key=lambda m: (-m[1], m[0]))


@QUICK
@given(
    a=st.lists(st.sampled_from(WORDS), max_size=9).map(" ".join),
    b=st.lists(st.sampled_from(WORDS), max_size=9).map(" ".join),
    measure=st.sampled_from(["jaccard", "containment"]),
    width=st.integers(1, 3),
)
def test_jaccard_is_the_exact_similarity_similar_pairs_reports(a, b, measure, width):
    s = rsimhash.jaccard(a, b, width=width, measure=measure)
    assert s == ref_similarity(ref_set(a, "words", width), ref_set(b, "words", width), measure)
    # When the pair is a candidate, similar_pairs at exactly that threshold reports it, with this number.
    near = rsimhash.hamming(*(int(f) for f in rsimhash.fingerprints([a, b], width=1))) <= 16
    if s > 0 and near:
        pairs, sims = rsimhash.similar_pairs([a, b], s, width=width, measure=measure, candidates=("words", 1, 16), progress=False)
        assert pairs.tolist() == [[0, 1]] and sims.tolist() == [np.float32(s)]


def test_jaccard_examples_and_errors():
    assert rsimhash.jaccard("x y z", "x y z") == 1.0
    assert rsimhash.jaccard("", "") == 1.0 and rsimhash.jaccard("", "a b c") == 0.0
    assert rsimhash.jaccard("abcdef", "abcdeg", shingles="chars", width=4) == pytest.approx(2 / 4)
    with pytest.raises(ValueError, match="shingles must be"):
        rsimhash.jaccard("a", "b", shingles="word")
    with pytest.raises(TypeError, match="b must be a str"):
        rsimhash.jaccard("a", None)
    with pytest.raises(ValueError, match="measure"):
        rsimhash.jaccard("a", "b", measure="cosine")


@QUICK
@given(
    texts=texts_st,
    threshold=threshold_st,
    measure=st.sampled_from(["jaccard", "containment"]),
    k=st.integers(0, 16),
    data=st.data(),
)
def test_queries_equal_brute_force_and_similar_pairs(texts, threshold, measure, k, data):
    candidates = ("words", 1, k)
    ids = data.draw(st.lists(st.integers(0, 2**64 - 1), min_size=len(texts), max_size=len(texts), unique=True))
    index = rsimhash.SimilarIndex(threshold, width=2, candidates=candidates, measure=measure)
    assert index.add(texts, ids=ids).tolist() == ids
    stored = dict(zip(ids, texts))
    for t in texts[:6] + ["a b c d"]:
        assert index.query(t) == brute_query(stored, t, threshold, candidates, measure, width=2)
    qi, got, sims = index.query_batch(texts)
    rows = [(int(q), int(i), float(s)) for q, i, s in zip(qi, got, sims)]
    want = [(q, i, s) for q, t in enumerate(texts) for i, s in brute_query(stored, t, threshold, candidates, measure, width=2)]
    assert rows == want
    # The same pairs, with the same similarities, as similar_pairs over the same texts and ids.
    pairs, psims = rsimhash.similar_pairs(
        texts, threshold, width=2, candidates=candidates, measure=measure, ids=np.array(ids, dtype=np.uint64), progress=False
    )
    from_index = sorted({(min(ids[q], i), max(ids[q], i)): s for q, i, s in rows if ids[q] != i}.items())
    assert from_index == [((int(a), int(b)), float(s)) for (a, b), s in zip(pairs, psims)]


@QUICK
@given(texts=texts_st, threshold=threshold_st, split=st.integers(0, 25))
def test_add_unique_in_order(texts, threshold, split):
    candidates = ("words", 1, 8)
    index = rsimhash.SimilarIndex(threshold, width=2, candidates=candidates)
    new1, m1 = index.add_unique(texts[:split])
    new2, m2 = index.add_unique(texts[split:])
    is_new, matched = np.concatenate([new1, new2]).tolist(), np.concatenate([m1, m2]).tolist()
    kept = {}
    for j, t in enumerate(texts):
        start = 0 if j < split else split
        alike = [i for i, _ in brute_query(kept, t, threshold, candidates, width=2)]
        before = [i for i in alike if i < start]
        now = [i for i in alike if i >= start]
        want = min(before) if before else (min(now) if now else None)
        assert is_new[j] == (want is None)
        assert matched[j] == (j if want is None else want)
        if want is None:
            kept[j] = t
    assert len(index) == len(kept)


@FEW
@given(texts=texts_st, threshold=st.floats(0.3, 1.0), gone=st.lists(st.integers(0, 30), max_size=6))
def test_save_load_with_and_without_mmap(tmp_path_factory, texts, threshold, gone):
    path = tmp_path_factory.mktemp("si") / "texts.rsh"
    index = rsimhash.SimilarIndex(threshold, width=2, candidates=("words", 1, 8))
    index.add(texts)
    index.remove(gone, missing="ignore")
    index.save(path)
    more = [t + " g" for t in texts]
    for mmap in (True, False):
        loaded = rsimhash.SimilarIndex.load(path, mmap=mmap)
        assert len(loaded) == len(index) and repr(loaded) == repr(index)
        assert [loaded.query(t) for t in texts] == [index.query(t) for t in texts]
        copy = rsimhash.SimilarIndex.load(path, mmap=mmap)
        want = rsimhash.SimilarIndex(threshold, width=2, candidates=("words", 1, 8))
        want.add(texts)
        want.remove(gone, missing="ignore")
        assert copy.add(more).tolist() == want.add(more).tolist()
        for t in texts + more:
            assert copy.query(t) == want.query(t)
    # The fingerprints alone load as an Index; an Index file is not a SimilarIndex.
    assert len(rsimhash.Index.load(path)) == len(index)
    plain = path.with_name("plain.rsh")
    rsimhash.Index(8).save(plain)
    with pytest.raises(ValueError, match="fingerprints only"):
        rsimhash.SimilarIndex.load(plain)


def test_a_damaged_file_is_refused(tmp_path):
    path = tmp_path / "x.rsh"
    index = rsimhash.SimilarIndex(0.5)
    index.add(["one two three four", "five six seven eight"])
    index.save(path)
    data = bytearray(path.read_bytes())
    data[-3] ^= 0xFF  # inside the last section: the shingle sets
    path.write_bytes(bytes(data))
    with pytest.raises(ValueError, match="checksum|damaged"):
        rsimhash.SimilarIndex.load(path, mmap=False)


def test_ids_of_any_integer_kind_and_their_errors():
    pd = pytest.importorskip("pandas")
    index = rsimhash.SimilarIndex(0.5)
    texts = ["one two three four", "one two three four five", "six seven eight nine"]
    index.add(texts[:1], ids=np.array([7], dtype=np.int16))
    index.add(pd.Series(texts[1:], index=[100, 200]), ids=pd.Index([100, 200]))
    assert 7 in index and 100 in index and 8 not in index and "7" not in index
    assert [i for i, _ in index.query(texts[0])] == [7, 100]
    with pytest.raises(ValueError, match="distinct: 5 is given at positions 0 and 2"):
        index.add(["x", "y", "z"], ids=[5, 6, 5])
    with pytest.raises(ValueError, match="already stored"):
        index.add(["x"], ids=[200])
    with pytest.raises(ValueError, match="non-negative"):
        index.add(["x"], ids=[-1])
    with pytest.raises(ValueError, match="one id per text"):
        index.add(["x", "y"], ids=[1])
    with pytest.raises(TypeError, match="decode it first"):  # one str is one text; bytes are not texts
        index.add(b"a text")
    # An index keyed by ints refuses strings (tests/test_index_string_ids.py).
    with pytest.raises(TypeError, match="keyed by ints"):
        index.add(["x"], ids=["k"])
    assert len(index) == 3
    assert index.remove(7) == 1 and index.remove([7, 9], missing="ignore") == 0
    # Default ids count up past the largest given.
    assert index.add(["ten eleven twelve"]).tolist() == [201]


def test_queries_from_many_threads_while_adding():
    rng = np.random.default_rng(5)
    vocab = [f"w{i}" for i in range(300)]
    texts = [" ".join(rng.choice(vocab, 30)) for _ in range(400)]
    index = rsimhash.SimilarIndex(0.8)
    index.add(texts[:200])
    want = [index.query(t) for t in texts[:200]]
    errors = []

    def ask():
        try:
            for _ in range(3):
                assert [index.query(t) for t in texts[:200]] == want
        except AssertionError as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=ask) for _ in range(3)]
    for t in threads:
        t.start()
    index.add(texts[200:])  # new texts are unlike the old: the answers above stay
    for t in threads:
        t.join()
    assert not errors and len(index) == 400


# -- issue 38 item 5: SimilarIndex as a datasketch user expects -----------------------------

CAT = "the cat sat on the mat and looked at the dog"
CAT2 = "the cat sat on the mat and looked at the dog today"
DOG = "a dog barked at the moon all night long"


def test_add_takes_a_series_index_as_ids():
    pd = pytest.importorskip("pandas")
    index = rsimhash.SimilarIndex(0.5)
    assert index.add(pd.Series([CAT, DOG], index=["cat", "dog"])).tolist() == ["cat", "dog"]
    assert index.query(CAT) == [("cat", 1.0)]
    by_int = rsimhash.SimilarIndex(0.5)
    assert by_int.add(pd.Series([CAT, DOG], index=[10, 20])).tolist() == [10, 20]
    is_new, matched = by_int.add_unique(pd.Series([CAT2, "something else entirely"], index=[30, 40]))
    assert is_new.tolist() == [False, True] and matched.tolist() == [10, 40]
    # A Series on the default index 0..n-1 counts up as a list does (as in similar_pairs).
    assert by_int.add(pd.Series(["one more text here"])).tolist() == [41]
    assert by_int.add(pd.Series(["and another one"]), ids=[99]).tolist() == [99]  # ids= wins


def test_one_string_is_one_text_for_add_query_and_add_unique():
    index = rsimhash.SimilarIndex(0.5)
    assert index.add(CAT).tolist() == [0]
    assert index.add(DOG, ids=7).tolist() == [7]
    assert index.query(CAT) == [(0, 1.0)]
    positions, ids, _ = index.query_batch(CAT)
    assert positions.tolist() == [0] and ids.tolist() == [0]
    is_new, matched = index.add_unique(CAT2)
    assert is_new.tolist() == [False] and matched.tolist() == [0]
    by_name = rsimhash.SimilarIndex(0.5)
    assert by_name.add(CAT, ids="cat").tolist() == ["cat"]
    with pytest.raises(TypeError, match="str"):
        index.add(b"bytes are not a text")


def test_query_at_a_stricter_threshold():
    index = rsimhash.SimilarIndex(0.3)
    index.add([CAT, CAT2, DOG], ids=["cat", "cat2", "dog"])
    everything = index.query(CAT)
    assert [i for i, _ in everything] == ["cat", "cat2"] and everything[1][1] < 0.95
    assert index.query(CAT, threshold=0.95) == [("cat", 1.0)]
    assert index.query(CAT, threshold=0.3) == everything
    positions, ids, sims = index.query_batch([CAT, DOG], threshold=0.95)
    assert positions.tolist() == [0, 1] and ids.tolist() == ["cat", "dog"]
    with pytest.raises(ValueError, match=r"threshold=0\.2.*0\.3"):
        index.query(CAT, threshold=0.2)
    with pytest.raises(ValueError, match="threshold"):
        index.query_batch([CAT], threshold=1.5)


def test_info_says_what_index_info_says():
    index = rsimhash.SimilarIndex(0.8)
    index.add([CAT, DOG], ids=[1, 2])
    info = index.info()
    assert info["items"] == 2 and info["threshold"] == 0.8 and info["measure"] == "jaccard"
    assert info["shingles"] == "words" and info["width"] == 3 and info["nbytes"] == index.nbytes > 0
    mode, width, k = index.candidates
    assert info["candidates"] == (mode, width, k) and info["k"] == k and info["keys"] == "int"
    assert "tables" in info["design"] and info["tables"] >= 1
    assert set(rsimhash.Index().info()) >= {"items", "design", "k", "tables", "nbytes", "keys"}


def test_remove_of_an_unknown_id_is_a_key_error_unless_ignored():
    index = rsimhash.SimilarIndex(0.5)
    index.add([CAT, DOG], ids=[10, 20])
    with pytest.raises(KeyError, match="99"):
        index.remove([10, 99])
    assert len(index) == 2  # nothing removed
    assert index.remove([10, 99], missing="ignore") == 1 and len(index) == 1
    assert index.remove(20) == 1
    with pytest.raises(ValueError, match="missing"):
        index.remove([20], missing="skip")
    by_name = rsimhash.SimilarIndex(0.5)
    by_name.add([CAT], ids=["cat"])
    with pytest.raises(KeyError, match="gone"):
        by_name.remove(["gone"])
    assert by_name.remove("cat") == 1


def test_add_unique_gives_a_new_items_own_id_in_both_indexes():
    fps = np.array([0, 0b1, 0xFF << 40, 0b11], dtype=np.uint64)
    is_new, matched = rsimhash.Index(k=2).add_unique(fps)
    assert is_new.tolist() == [True, False, True, False] and matched.tolist() == [0, 0, 2, 0]
    is_new, matched = rsimhash.Index(k=2).add_unique(fps, ids=[10, 11, 12, 13])
    assert matched.tolist() == [10, 10, 12, 10]
    is_new, matched = rsimhash.SimilarIndex(0.5).add_unique([CAT, CAT, DOG, CAT2], ids=[10, 11, 12, 13])
    assert is_new.tolist() == [True, False, True, False] and matched.tolist() == [10, 10, 12, 10]
