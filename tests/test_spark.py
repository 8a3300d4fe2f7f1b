"""``rsimhash.spark`` against the single-machine answers, on one local Spark
session (``local[2]``) for the whole file.

Every job is compared exactly with what rsimhash computes in one process on
the same data: ``near_duplicate_pairs`` with ``rsimhash.batch.find_all``,
``clusters`` and ``dedup`` with ``Index.cluster``, ``near_duplicates_of``
with ``Index.query_batch``, ``fingerprint_column`` with
``rsimhash.fingerprints``. The data plants what a wrong table rule, cell
split, sign conversion or id join would get wrong: near copies at 0 to 7
bits, exact copies, a chain of fingerprints 3 bits apart, a tight prefix
group larger than ``max_group``, and the values 0, 2**63 - 1, 2**63 and
2**64 - 1 with their neighbours (0 and 2**63 are 1 bit apart but at the two
ends of the signed order).
"""

from __future__ import annotations

import os
import sys

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytest.importorskip("pyspark")
pytest.importorskip("pyarrow")
pd = pytest.importorskip("pandas")

import rsimhash  # noqa: E402
import rsimhash.batch  # noqa: E402
import rsimhash.spark as rspark  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

from budget import examples  # noqa: E402
from cli_helpers import make_records  # noqa: E402

TOP = (1 << 64) - 1
EDGES = [
    0,
    1,
    2,
    1 << 63,
    (1 << 63) + 1,
    (1 << 63) - 1,
    (1 << 63) - 2,
    TOP,
    TOP - 1,
    TOP - 7,
    (1 << 63) | 0b111,
    0b1000,
    (1 << 62) | (1 << 63),
]


# ---------------------------------------------------------------------------
# data


def flip(rng: np.random.Generator, fp: int, bits: int) -> int:
    """``fp`` with ``bits`` distinct random bits flipped."""
    for b in rng.choice(64, bits, replace=False):
        fp ^= 1 << int(b)
    return fp


def planted(seed: int = 5) -> "tuple[np.ndarray, np.ndarray]":
    """About 700 fingerprints with planted near-duplicates, in shuffled
    order, and distinct positive ids that are neither positions nor sorted."""
    rng = np.random.default_rng(seed)
    base = [int(x) for x in rng.integers(0, 1 << 64, 300, dtype=np.uint64)]
    fps = list(base)
    fps += [flip(rng, base[i], int(rng.integers(1, 8))) for i in range(200)]  # near copies, 1..7 bits
    fps += base[200:230]  # exact copies
    fps += [base[0]] * 3  # a value three times more
    fps += EDGES + [flip(rng, e, int(rng.integers(1, 4))) for e in EDGES]
    chain = [int(rng.integers(0, 1 << 64, dtype=np.uint64))]
    for step in range(12):  # consecutive values 3 bits apart, the ends far apart
        chain.append(chain[-1] ^ (0b111 << (5 * step)))
    fps += chain
    top = int(rng.integers(0, 1 << 44, dtype=np.uint64)) << 20  # a group sharing 44 leading bits
    fps += [top | int(x) for x in rng.choice(1 << 20, 70, replace=False)]
    fps = np.array(fps, dtype=np.uint64)
    fps = fps[rng.permutation(len(fps))]
    ids = rng.permutation(len(fps)).astype(np.int64) * 1_000_003 + 17
    return fps, ids


FPS, IDS = planted()
SIDS = np.array([f"d{i}" for i in IDS], dtype=object)  # string order differs from the numeric one
RECORDS = make_records(240, seed=3)


def expected_pairs(fps: np.ndarray, ids: np.ndarray, k: int, **options) -> np.ndarray:
    """``batch.find_all`` with ids, as a sorted ``(P, 2)`` int64 array."""
    got = rsimhash.batch.find_all(fps, k, ids=ids.astype(np.uint64), progress=False, **options)
    return sort_pairs(got.astype(np.int64))


def sort_pairs(pairs: np.ndarray) -> np.ndarray:
    pairs = np.asarray(pairs, dtype=np.int64).reshape(-1, 2)
    return pairs[np.lexsort((pairs[:, 1], pairs[:, 0]))]


def expected_labels(fps: np.ndarray, ids: np.ndarray, k: int) -> dict:
    """``{id: smallest id of its cluster}`` for ids in a cluster, by ``Index.cluster``."""
    index = rsimhash.Index(k)
    index.add(fps, ids=ids.astype(np.uint64))
    labels = {}
    for members in index.cluster():
        labels.update(dict.fromkeys(members.tolist(), int(members.min())))
    return labels


def arrow(df):
    if hasattr(df, "toArrow"):
        return df.toArrow()
    import pyarrow as pa  # PySpark before 4.0

    return pa.Table.from_pylist([r.asDict() for r in df.collect()], schema=None)


def got_pairs(df) -> np.ndarray:
    t = arrow(df)
    assert t.column_names == ["id_a", "id_b"]
    return sort_pairs(
        np.column_stack([t.column("id_a").to_numpy(), t.column("id_b").to_numpy()])
        if t.num_rows
        else np.empty((0, 2), dtype=np.int64)
    )


def got_labels(df) -> dict:
    t = arrow(df)
    assert t.column_names == ["id", "cluster_id"]
    ids, labels = t.column("id").to_pylist(), t.column("cluster_id").to_pylist()
    assert len(set(ids)) == len(ids), "an id listed twice"
    return dict(zip(ids, labels))


@pytest.fixture(scope="module")
def fps_df(spark):
    """``(id, simhash, sid)``: the planted fingerprints as signed longs."""
    df = spark.createDataFrame(pd.DataFrame({"id": IDS, "simhash": rspark.to_signed(FPS), "sid": SIDS}))
    df = df.repartition(3).cache()
    assert df.count() == len(FPS)
    yield df
    df.unpersist()


@pytest.fixture
def checkpoint_dir(spark, tmp_path):
    """A checkpoint directory for one test, unset again after it."""
    sc = spark.sparkContext
    path = tmp_path / "checkpoints"
    sc.setCheckpointDir(str(path))
    yield path
    getattr(sc._jsc.sc(), "checkpointDir_$eq")(sc._jvm.scala.Option.apply(None))
    assert not sc.getCheckpointDir()


@pytest.fixture
def small_batches(spark):
    """Arrow batches of 700 rows into Python: a cell of a group is cut
    across batches and must be held back until it is whole."""
    key = "spark.sql.execution.arrow.maxRecordsPerBatch"
    old = spark.conf.get(key)
    spark.conf.set(key, "700")
    yield
    spark.conf.set(key, old)


def frame(spark, **columns):
    return spark.createDataFrame(pd.DataFrame(columns))


# ---------------------------------------------------------------------------
# signed <-> unsigned (no Spark)


def test_signed_round_trip():
    values = [0, 1, (1 << 63) - 1, 1 << 63, (1 << 63) + 1, TOP]
    signed = [0, 1, (1 << 63) - 1, -(1 << 63), -(1 << 63) + 1, -1]
    assert [rspark.to_signed(v) for v in values] == signed
    assert [rspark.to_unsigned(s) for s in signed] == values
    assert rspark.to_signed(np.uint64(TOP)) == -1 and rspark.to_unsigned(np.int64(-1)) == TOP
    arr = np.array(values, dtype=np.uint64)
    s = rspark.to_signed(arr)
    assert s.dtype == np.int64 and s.tolist() == signed
    back = rspark.to_unsigned(s)
    assert back.dtype == np.uint64 and np.array_equal(back, arr)
    assert rspark.to_signed(np.array([], dtype=np.uint64)).dtype == np.int64
    series = pd.Series(arr, index=pd.RangeIndex(10, 16), name="fp")
    ss = rspark.to_signed(series)
    assert isinstance(ss, pd.Series) and ss.dtype == np.int64 and ss.tolist() == signed
    assert ss.index.equals(series.index) and ss.name == "fp"
    su = rspark.to_unsigned(ss)
    assert isinstance(su, pd.Series) and su.dtype == np.uint64 and su.tolist() == values
    assert su.index.equals(series.index) and su.name == "fp"
    # the same bits as numpy's view, on many random values
    many = np.random.default_rng(0).integers(0, 1 << 64, 1000, dtype=np.uint64)
    assert np.array_equal(rspark.to_signed(many), many.view(np.int64))
    assert [rspark.to_signed(int(v)) for v in many[:50]] == many[:50].view(np.int64).tolist()


@pytest.mark.parametrize(
    "bad, error",
    [
        (-1, ValueError),
        (1 << 64, ValueError),
        (-(1 << 70), ValueError),
        (True, TypeError),
        (np.bool_(False), TypeError),
        (1.0, TypeError),
        ("5", TypeError),
        ([1, 2], TypeError),
        (np.array([1, 2], dtype=np.int64), TypeError),
        (np.array([1.0]), TypeError),
        (np.array([True]), TypeError),
        (np.array([1], dtype=np.uint32), TypeError),
        (pd.Series([1, 2], dtype=np.int64), TypeError),
    ],
)
def test_to_signed_refuses(bad, error):
    with pytest.raises(error):
        rspark.to_signed(bad)


@pytest.mark.parametrize(
    "bad, error",
    [
        (1 << 63, ValueError),
        (-(1 << 63) - 1, ValueError),
        (TOP, ValueError),
        (True, TypeError),
        (np.bool_(True), TypeError),
        (1.0, TypeError),
        (None, TypeError),
        (np.array([1], dtype=np.uint64), TypeError),
        (np.array([1.0]), TypeError),
        (np.array([False]), TypeError),
        (np.array([1], dtype=np.int32), TypeError),
        (pd.Series([1], dtype=np.uint64), TypeError),
    ],
)
def test_to_unsigned_refuses(bad, error):
    with pytest.raises(error):
        rspark.to_unsigned(bad)


# ---------------------------------------------------------------------------
# fingerprint_column


TEXTS = [r["text"] for r in RECORDS[:60]] + ["", "x", "Ünïcode wörds — and 漢字 too", "a b c", "a b c"]


@pytest.mark.parametrize("mode, width", [("words", None), ("chars", 4), ("words", 1)])
def test_fingerprint_column(spark, mode, width):
    df = frame(spark, n=np.arange(len(TEXTS)), body=TEXTS).repartition(2)
    out = rspark.fingerprint_column(df, "body", "fp", mode=mode, width=width)
    assert out.columns == ["n", "body", "fp"]
    assert dict(out.dtypes)["fp"] == "bigint"
    t = arrow(out).sort_by("n")
    assert t.column("body").to_pylist() == TEXTS
    got = rspark.to_unsigned(t.column("fp").to_numpy())
    want = rsimhash.fingerprints(TEXTS, mode=mode, width=width)
    assert np.array_equal(got, want)
    assert int(got[-1]) == rsimhash.fingerprint("a b c", mode=mode, width=width)


def test_fingerprint_column_nulls(spark):
    texts = ["one two three four", None, "five six seven", None]
    df = frame(spark, n=np.arange(4), body_text=texts)
    with pytest.raises(Exception) as info:
        rspark.fingerprint_column(df, "body_text").collect()
    assert "'body_text'" in str(info.value) and "null" in str(info.value)
    kept = arrow(rspark.fingerprint_column(df, "body_text", nulls="keep")).sort_by("n")
    fp = kept.column("simhash").to_pylist()
    assert fp[1] is None and fp[3] is None
    assert [rspark.to_unsigned(fp[i]) for i in (0, 2)] == [rsimhash.fingerprint(texts[i]) for i in (0, 2)]


def test_fingerprint_column_arguments(spark):
    df = frame(spark, n=np.arange(2), body=["a b", "c d"])
    with pytest.raises(ValueError, match="'text'"):
        rspark.fingerprint_column(df, "text")
    with pytest.raises(TypeError, match="'n'"):
        rspark.fingerprint_column(df, "n")
    with pytest.raises(ValueError, match="'n'"):
        rspark.fingerprint_column(df, "body", "n")
    with pytest.raises(ValueError, match="mode"):
        rspark.fingerprint_column(df, "body", mode="letters")
    with pytest.raises(ValueError, match="nulls"):
        rspark.fingerprint_column(df, "body", nulls="skip")
    with pytest.raises((ValueError, TypeError)):
        rspark.fingerprint_column(df, "body", width=0)


# ---------------------------------------------------------------------------
# near_duplicate_pairs


@pytest.mark.parametrize(
    "k, tables, max_group",
    [
        (0, None, None),
        (3, None, None),
        (6, None, None),
        (3, 4, None),
        (3, 20, 16),
        (6, 7, None),
        (6, 28, 4),
        (3, None, 4),
        (0, 1, 2),
    ],
)
def test_pairs_equal_batch(fps_df, k, tables, max_group):
    check_pairs(fps_df, k, tables, max_group)


def test_pairs_in_small_batches(fps_df, small_batches):
    check_pairs(fps_df, 6, 7, 200)


def check_pairs(fps_df, k, tables, max_group):
    want = expected_pairs(FPS, IDS, k)
    assert len(want) > 30
    if max_group is None:
        out = rspark.near_duplicate_pairs(fps_df, "id", "simhash", k, tables=tables)
    else:
        with pytest.warns(DeprecationWarning, match="max_group"):
            out = rspark.near_duplicate_pairs(fps_df, "id", "simhash", k, tables=tables, max_group=max_group)
    got = got_pairs(out)
    assert len(got) == len(want)
    assert np.array_equal(got, want)


@st.composite
def adversarial(draw):
    """Fingerprints weighted to what a packed shuffle could get wrong: copies
    (in several map partitions), a dense ball around one value, 0 and
    2**64 - 1 and their neighbours; ids distinct, some negative."""
    centre = draw(st.sampled_from([0, TOP, 1 << 63, draw(st.integers(0, TOP))]))
    ball = [
        centre ^ (1 << a) ^ (1 << b) for a, b in draw(st.lists(st.tuples(st.integers(0, 63), st.integers(0, 63)), max_size=40))
    ]
    loose = draw(st.lists(st.integers(0, TOP), max_size=30))
    picks = draw(st.lists(st.sampled_from(EDGES + [centre]), max_size=20))
    fps = np.array(ball + loose + picks + [centre] * draw(st.integers(1, 30)), dtype=np.uint64)
    order = draw(st.permutations(range(len(fps))))
    fps = fps[list(order)]
    ids = np.array(
        draw(st.lists(st.integers(-(2**40), 2**40), min_size=len(fps), max_size=len(fps), unique=True)), dtype=np.int64
    )
    return fps, ids


class task_items:
    """Reduce tasks of at most ``cap`` distinct values (``_pairs.TASK_ITEMS``)
    for the jobs planned inside: tiny caps force the cut of buckets by
    further key bits and of prefix groups into cells."""

    def __init__(self, cap):
        self.cap = cap

    def __enter__(self):
        from rsimhash.spark import _pairs

        self.old, _pairs.TASK_ITEMS = _pairs.TASK_ITEMS, self.cap or _pairs.TASK_ITEMS

    def __exit__(self, *exc):
        from rsimhash.spark import _pairs

        _pairs.TASK_ITEMS = self.old


@settings(max_examples=examples(12), deadline=None, suppress_health_check=list(HealthCheck))
@given(
    data=adversarial(),
    k=st.integers(0, 5),
    parts=st.integers(1, 6),
    copies=st.sampled_from(["all", "first"]),
    cap=st.sampled_from([None, 4, 16]),
)
def test_pairs_any_partitioning_equal_brute_force(spark, data, k, parts, copies, cap):
    fps, ids = data
    df = frame(spark, id=ids, fp=rspark.to_signed(fps)).repartition(parts)
    with task_items(cap):
        got = got_pairs(rspark.near_duplicate_pairs(df, "id", "fp", k, copies=copies))
    rows = list(zip(fps.tolist(), ids.tolist()))
    if copies == "first":
        # The smallest id of each fingerprint stands for it; its other copies link to it.
        first: dict = {}
        for f, i in rows:
            first[f] = min(first.get(f, i), i)
        want = {(first[f], i) for f, i in rows if i != first[f]}
        rows = list(first.items())
    else:
        want = set()
    for x, (f, i) in enumerate(rows):
        for g, j in rows[x + 1 :]:
            if bin(f ^ g).count("1") <= k:
                want.add((min(i, j), max(i, j)))
    assert sorted(map(tuple, got.tolist())) == sorted(want)


def test_pairs_string_ids(spark, fps_df):
    want = expected_pairs(FPS, IDS, 3)
    name = dict(zip(IDS.tolist(), SIDS.tolist()))
    mapped = {tuple(sorted((name[a], name[b]))) for a, b in want.tolist()}
    out = rspark.near_duplicate_pairs(fps_df, "sid", "simhash", 3)
    assert out.dtypes == [("id_a", "string"), ("id_b", "string")]
    rows = [tuple(r) for r in out.collect()]
    assert all(a < b for a, b in rows)
    assert len(rows) == len(mapped) and set(rows) == mapped
    # components of string ids: the smallest string of each
    groups: dict = {}
    for i, root in expected_labels(FPS, IDS, 3).items():
        groups.setdefault(root, []).append(name[i])
    want = {s: min(members) for members in groups.values() for s in members}
    pairs = spark.createDataFrame(rows, "x string, y string")
    assert got_labels(rspark.clusters(pairs, "y", "x")) == want


def test_pairs_signed_boundary(spark):
    """0 and 2**63 are 1 bit apart; so are 2**63 - 1 and 2**64 - 1."""
    fps = np.array([0, 1 << 63, (1 << 63) - 1, TOP, 3, (1 << 63) | 3, TOP - 3], dtype=np.uint64)
    ids = np.arange(len(fps), dtype=np.int64) + 10
    df = frame(spark, id=ids, fp=rspark.to_signed(fps))
    for k in (1, 2):
        got = got_pairs(rspark.near_duplicate_pairs(df, "id", "fp", k))
        assert np.array_equal(got, expected_pairs(fps, ids, k))
    assert {(10, 11), (12, 13)} <= set(map(tuple, got.tolist()))


# ---------------------------------------------------------------------------
# clusters


def test_clusters_equal_index(fps_df):
    pairs = rspark.near_duplicate_pairs(fps_df, "id", "simhash", 3)
    labels = got_labels(rspark.clusters(pairs))
    want = expected_labels(FPS, IDS, 3)
    assert len(want) > 100 and len(set(want.values())) > 20
    assert labels == want


def chain_pairs(rng: np.random.Generator, n: int) -> "tuple[list, dict]":
    """The edges of a path over ``n`` shuffled labels plus a small triangle,
    in both orientations, some twice and with self-loops; and the labels."""
    labels = (rng.permutation(n) * 11 + 5).tolist()
    edges = [(labels[i], labels[i + 1]) if i % 2 else (labels[i + 1], labels[i]) for i in range(n - 1)]
    edges += edges[:20] + [(labels[3], labels[3])]
    tri = [7_000_001, 7_000_002, 7_000_003]
    edges += [(tri[0], tri[1]), (tri[2], tri[1]), (tri[2], tri[0])]
    order = rng.permutation(len(edges))
    want = {x: min(labels) for x in labels}
    want.update({x: tri[0] for x in tri})
    return [edges[i] for i in order], want


@pytest.mark.parametrize("checkpointed", [False, True])
@pytest.mark.parametrize("one_task", [True, False])
def test_clusters_long_chain(spark, request, monkeypatch, checkpointed, one_task):
    """The forests' edges finished in one task, or by the star rounds."""
    from rsimhash.spark import _components

    if not one_task:
        monkeypatch.setattr(_components, "ONE_TASK_EDGES", 0)
    path = request.getfixturevalue("checkpoint_dir") if checkpointed else None
    edges, want = chain_pairs(np.random.default_rng(8 + checkpointed), 300)
    df = spark.createDataFrame(edges, "left long, right long").repartition(4)
    assert got_labels(rspark.clusters(df, "left", "right")) == want
    if checkpointed:
        assert any(files for _, _, files in os.walk(path)), "no reliable checkpoint written"


def test_components_seal(spark):
    """A round's seal (its edges' count and the XOR of their hashes) is the
    same for the same edges in any order and partitioning, and differs when
    one edge differs; equal seals are then confirmed edge by edge."""
    from rsimhash.spark._components import _cut, _same

    edges = [(i + 1, i // 3) for i in range(60)]
    a, seal_a = _cut(spark.createDataFrame(edges, "u long, v long").repartition(3))
    b, seal_b = _cut(spark.createDataFrame(edges[::-1], "u long, v long").coalesce(1))
    c, seal_c = _cut(spark.createDataFrame(edges[:-1] + [(61, 19)], "u long, v long"))
    assert seal_a == seal_b and seal_a[0] == 60 and _same(a, b)
    assert seal_c[0] == 60 and seal_c != seal_a and not _same(a, c)
    empty, seal = _cut(spark.createDataFrame([], "u long, v long"))
    assert seal[0] == 0 and _same(empty, empty)


def test_clusters_arguments_and_nulls(spark):
    df = spark.createDataFrame([(1, 2), (2, None), (None, 9), (5, 5), (6, 5)], "id_a long, id_b long")
    assert got_labels(rspark.clusters(df)) == {1: 1, 2: 1, 5: 5, 6: 5}
    with pytest.raises(ValueError, match="'b'"):
        rspark.clusters(df, "id_a", "b")
    with pytest.raises(ValueError, match="'id_a'"):
        rspark.clusters(df.withColumnRenamed("id_a", "x"))


# ---------------------------------------------------------------------------
# dedup


@pytest.fixture(scope="module")
def records_df(spark):
    rng = np.random.default_rng(4)
    order = rng.permutation(len(RECORDS))
    rows = pd.DataFrame(
        {
            "title": [f"title {RECORDS[i]['id']}" for i in order],
            "text": [RECORDS[i]["text"] for i in order],
            "id": [RECORDS[i]["id"] for i in order],  # not the first column
            "score": [float(i) if i % 7 else None for i in order],
        }
    )
    df = spark.createDataFrame(rows).repartition(3).cache()
    df.count()
    yield df
    df.unpersist()


@pytest.mark.parametrize("k, mode, width", [(3, "words", None), (8, "chars", 4)])
def test_dedup_keeps_what_the_single_machine_keeps(records_df, k, mode, width):
    texts = [r["text"] for r in RECORDS]
    ids = np.array([r["id"] for r in RECORDS], dtype=np.int64)
    labels = expected_labels(rsimhash.fingerprints(texts, mode=mode, width=width), ids, k)
    want = {i for i in ids.tolist() if labels.get(i, i) == i}
    assert len(RECORDS) - len(want) > 20
    kept = rspark.dedup(records_df, "text", "id", k, mode=mode, width=width)
    assert kept.schema == records_df.schema
    rows = kept.collect()
    assert len(rows) == len(want) and {r["id"] for r in rows} == want
    original = {r["id"]: r.asDict() for r in records_df.collect()}
    for r in rows:
        assert r.asDict() == original[r["id"]]


# ---------------------------------------------------------------------------
# near_duplicates_of


def expected_matches(new_fps, new_ids, old_fps, old_ids, k) -> set:
    index = rsimhash.Index(k)
    index.add(old_fps, ids=np.asarray(old_ids).astype(np.uint64))
    qi, hit, dist = index.query_batch(new_fps)
    return {(int(new_ids[q]), int(h), int(d)) for q, h, d in zip(qi, hit, dist)}


def got_matches(df) -> set:
    assert df.columns == ["new_id", "old_id", "distance"]
    return {tuple(r) for r in df.collect()}


@pytest.mark.parametrize("n_new", [120, 520])
def test_near_duplicates_of_dataframes(fps_df, n_new):
    """New smaller than old (the new side is indexed) and larger (old is)."""
    cut = IDS[np.argsort(IDS)[n_new]]
    new_df = fps_df.where(f"id < {cut}")
    old_df = fps_df.where(f"id >= {cut}").select("simhash", "id").withColumnRenamed("id", "old")
    new, old = IDS < cut, IDS >= cut
    for k in (0, 3, 7):
        want = expected_matches(FPS[new], IDS[new], FPS[old], IDS[old], k)
        assert len(want) > 2
        got = got_matches(rspark.near_duplicates_of(new_df, old_df, k, fp_col="simhash", old_id_col="old"))
        assert got == want


def test_near_duplicates_of_string_ids(fps_df):
    cut = int(np.sort(IDS)[300])
    new_df = fps_df.where(f"id < {cut}").select(fps_df.sid.alias("id"), "simhash")
    old_df = fps_df.where(f"id >= {cut}")
    name = dict(zip(IDS.tolist(), SIDS.tolist()))
    new, old = IDS < cut, IDS >= cut
    want = {(name[a], b, d) for a, b, d in expected_matches(FPS[new], IDS[new], FPS[old], IDS[old], 4)}
    out = rspark.near_duplicates_of(new_df, old_df, 4, fp_col="simhash")
    assert out.dtypes == [("new_id", "string"), ("old_id", "bigint"), ("distance", "int")]
    assert got_matches(out) == want
    swapped = {(b, a, d) for a, b, d in want}
    assert got_matches(rspark.near_duplicates_of(old_df, new_df, 4, fp_col="simhash")) == swapped


def save_index(path, fps, ids, k=3):
    index = rsimhash.Index(k)
    index.add(fps, ids=np.asarray(ids).astype(np.uint64))
    index.save(str(path))
    return path


def test_near_duplicates_of_index_file(fps_df, tmp_path):
    cut = int(np.sort(IDS)[500])
    new, old = IDS >= cut, IDS < cut
    path = save_index(tmp_path / "old.rsh", FPS[old], IDS[old], k=3)
    new_df = fps_df.where(f"id >= {cut}")
    for k in (3, 1):
        want = expected_matches(FPS[new], IDS[new], FPS[old], IDS[old], k)
        assert len(want) > 5
        got = got_matches(rspark.near_duplicates_of(new_df, str(path), k, fp_col="simhash"))
        assert got == want
    assert got_matches(rspark.near_duplicates_of(new_df, path, 2, fp_col="simhash")) == expected_matches(
        FPS[new], IDS[new], FPS[old], IDS[old], 2
    )
    with pytest.raises(ValueError, match="k=4"):
        rspark.near_duplicates_of(new_df, str(path), 4, fp_col="simhash")
    # stored ids of 2**63 and more come back as the signed longs of the same bits
    wide = save_index(tmp_path / "wide.rsh", FPS[:3], np.array([TOP, 1 << 63, 5], dtype=np.uint64))
    got = got_matches(
        rspark.near_duplicates_of(fps_df.where(f"id in ({', '.join(map(str, IDS[:3]))})"), wide, 0, fp_col="simhash")
    )
    assert {(int(i), o) for i, o, _ in got} >= {(int(IDS[0]), -1), (int(IDS[1]), -(1 << 63)), (int(IDS[2]), 5)}
    with pytest.raises(FileNotFoundError):
        rspark.near_duplicates_of(new_df, str(tmp_path / "missing.rsh"), 3, fp_col="simhash")


def test_near_duplicates_of_index_files_of_one_name(fps_df, tmp_path):
    """Two index files of the same name, and one file saved again: each
    query answers from the file as it is when asked."""
    cut = int(np.sort(IDS)[500])
    new_df = fps_df.where(f"id >= {cut}")
    new = IDS >= cut
    halves = [IDS < np.sort(IDS)[250], (IDS >= np.sort(IDS)[250]) & (IDS < cut)]
    for i, part in enumerate(halves):
        os.makedirs(tmp_path / str(i))
        path = save_index(tmp_path / str(i) / "corpus.rsh", FPS[part], IDS[part])
        want = expected_matches(FPS[new], IDS[new], FPS[part], IDS[part], 3)
        assert got_matches(rspark.near_duplicates_of(new_df, path, 3, fp_col="simhash")) == want
    path = tmp_path / "0" / "corpus.rsh"
    save_index(path, FPS[halves[1]], IDS[halves[1]])  # the same path, new contents
    want = expected_matches(FPS[new], IDS[new], FPS[halves[1]], IDS[halves[1]], 3)
    assert got_matches(rspark.near_duplicates_of(new_df, path, 3, fp_col="simhash")) == want


# ---------------------------------------------------------------------------
# skew: one value copied many times, one huge prefix group


def test_skewed_copies_dedup_and_clusters(spark):
    rng = np.random.default_rng(21)
    copies = 20_000  # a copy a pair would be 2 * 10^8 pairs: linear cost is what passes
    texts = ["the very same page copied over and over again"] * copies + [r["text"] for r in RECORDS]
    ids = rng.permutation(len(texts)).astype(np.int64) * 3 + 1
    df = spark.createDataFrame(pd.DataFrame({"id": ids, "text": texts}))
    fps = rsimhash.fingerprints(texts)
    labels = expected_labels(fps, ids, 3)
    big = int(ids[:copies].min())
    assert sum(1 for v in labels.values() if v == big) == copies
    want = {i for i in ids.tolist() if labels.get(i, i) == i}
    kept = arrow(rspark.dedup(df, "text", "id", 3)).column("id").to_pylist()
    assert len(kept) == len(want) and set(kept) == want
    # an explicit star whose centre is not the smallest id
    centre = int(ids[copies // 2])
    star = pd.DataFrame({"id_a": np.full(copies, centre), "id_b": ids[:copies]})
    got = got_labels(rspark.clusters(spark.createDataFrame(star)))
    assert len(got) == copies and set(got.values()) == {big}


def test_skewed_copies_pairs(fps_df, spark):
    copies = 1_500
    fps = np.concatenate([np.full(copies, FPS[0], dtype=np.uint64), FPS])
    ids = np.concatenate([np.arange(copies, dtype=np.int64) * 2 + 1_000_000_000_000, IDS])
    df = frame(spark, id=ids, fp=rspark.to_signed(fps))
    want = expected_pairs(fps, ids, 3)
    assert len(want) > copies * (copies - 1) // 2
    got = got_pairs(rspark.near_duplicate_pairs(df, "id", "fp", 3))
    assert len(got) == len(want) and np.array_equal(got, want)


def test_partition_keys_land_in_their_partitions(spark):
    """Each bin of tasks is shuffled by a key Spark's hash partitioning
    sends to that bin's partition (the driver computes Spark's hash)."""
    from pyspark.sql import functions as F

    from rsimhash.spark import _pairs

    for partitions in (1, 2, 7, 64):
        keys = _pairs.partition_keys(partitions)
        df = spark.createDataFrame(pd.DataFrame({"key": keys.astype(np.int32), "want": np.arange(partitions)}))
        got = df.repartition(partitions, "key").select("want", F.spark_partition_id().alias("got")).collect()
        assert sorted((r["want"], r["got"]) for r in got) == [(p, p) for p in range(partitions)]


@pytest.mark.parametrize("cap", [None, 400])
def test_skew_split_into_units_and_cells(spark, cap):
    """10^4 copies of one value and a dense radius-2 ball: with a cap the
    ball's prefix groups are cut into cells and the rest into units, and
    pairs, clusters and dedup stay the single-machine ones."""
    rng = np.random.default_rng(41)
    centre = int(rng.integers(0, 1 << 63)) * 2 + 1
    ball = [centre ^ (1 << a) ^ (1 << b) for a in range(64) for b in range(a, 64)]
    fps = np.concatenate(
        [np.full(10_000, FPS[1], np.uint64), np.array(ball, np.uint64), FPS[:300], np.array([0, TOP], np.uint64)]
    )
    ids = rng.permutation(len(fps)).astype(np.int64) * 7 + 5
    df = frame(spark, id=ids, fp=rspark.to_signed(fps)).repartition(5)
    labels = expected_labels(fps, ids, 2)
    from rsimhash.spark import _pairs
    from rsimhash.spark._components import components

    with task_items(cap):
        got = got_pairs(rspark.near_duplicate_pairs(df, "id", "fp", 2, copies="first"))
        clustered = got_labels(rspark.clusters(spark.createDataFrame(pd.DataFrame({"id_a": got[:, 0], "id_b": got[:, 1]}))))
        base, n = _pairs.checked(df, "id", "fp", "error")
        forest = got_labels(components(rspark._edges(base, 2, None, n)))  # dedup's route
    assert clustered == labels and forest == labels
    first: dict = {}
    for f, i in zip(fps.tolist(), ids.tolist()):
        first[f] = min(first.get(f, i), i)
    want = {(first[f], i) for f, i in zip(fps.tolist(), ids.tolist()) if i != first[f]}
    values = np.array(sorted(first), dtype=np.uint64)
    reps = np.array([first[f] for f in values.tolist()], dtype=np.int64)
    want |= set(map(tuple, expected_pairs(values, reps, 2).tolist()))
    assert sorted(map(tuple, got.tolist())) == sorted(want)


def test_huge_prefix_group(spark, small_batches):
    """50,000 values sharing 40 leading bits: the group is cut into cells."""
    rng = np.random.default_rng(33)
    top = int(rng.integers(0, 1 << 40, dtype=np.uint64)) << 24
    low = rng.choice(1 << 24, 50_000, replace=False).astype(np.uint64)
    fps = np.concatenate([np.uint64(top) | low, FPS[:200]])
    ids = rng.permutation(len(fps)).astype(np.int64) + 5
    df = frame(spark, id=ids, fp=rspark.to_signed(fps))
    want = expected_pairs(fps, ids, 3)
    assert len(want) > 100_000
    got = got_pairs(rspark.near_duplicate_pairs(df, "id", "fp", 3))
    assert len(got) == len(want) and np.array_equal(got, want)


# ---------------------------------------------------------------------------
# empty input, nulls, bad arguments


def test_empty_dataframes(spark, fps_df, tmp_path):
    empty = spark.createDataFrame([], "id long, simhash long, text string")
    assert rspark.fingerprint_column(empty.select("id", "text"), "text", "fp").count() == 0
    assert rspark.near_duplicate_pairs(empty, "id", "simhash", 3).count() == 0
    assert rspark.clusters(spark.createDataFrame([], "id_a long, id_b long")).count() == 0
    kept = rspark.dedup(empty, "text", "id", 3)
    assert kept.schema == empty.schema and kept.count() == 0
    assert rspark.near_duplicates_of(empty, empty, 3).count() == 0
    assert rspark.near_duplicates_of(empty, fps_df, 3).count() == 0
    assert rspark.near_duplicates_of(fps_df, empty, 3).count() == 0
    assert rspark.near_duplicates_of(empty, save_index(tmp_path / "some.rsh", FPS, IDS), 3).count() == 0


def null_frame(spark):
    """Rows with a null fingerprint, a null id, and both null."""
    rows = [(int(i), int(s)) for i, s in zip(IDS[:200], rspark.to_signed(FPS[:200]))]
    rows += [(1, None), (2, None), (None, 5), (None, None)]
    return spark.createDataFrame(rows, "doc long, hash long")


def test_nulls(spark):
    df = null_frame(spark)
    with pytest.raises(ValueError, match="'hash'") as info:
        rspark.near_duplicate_pairs(df, "doc", "hash", 3)
    assert "'doc'" in str(info.value)
    with pytest.raises(ValueError, match="'doc'"):
        rspark.near_duplicate_pairs(df.where("hash is not null"), "doc", "hash", 3)
    with pytest.raises(ValueError, match="'hash'"):
        rspark.near_duplicates_of(df, df.dropna(), 3, id_col="doc", fp_col="hash")
    with pytest.raises(ValueError, match="'hash'"):
        rspark.near_duplicates_of(df.dropna(), df, 3, id_col="doc", fp_col="hash")
    with pytest.warns(UserWarning, match="skipped 4 rows"):
        out = rspark.near_duplicate_pairs(df, "doc", "hash", 3, nulls="skip")
    assert np.array_equal(got_pairs(out), expected_pairs(FPS[:200], IDS[:200], 3))
    with pytest.raises(ValueError, match="nulls"):
        rspark.near_duplicate_pairs(df, "doc", "hash", 3, nulls="keep")


def test_dedup_null_ids(spark):
    df = spark.createDataFrame([(1, "a b c"), (None, "a b c"), (3, "d e f")], "id long, text string")
    with pytest.raises(ValueError, match="'id'"):
        rspark.dedup(df, "text", "id", 3)


def test_bad_arguments(spark, fps_df):
    with pytest.raises(ValueError, match="'doc'"):
        rspark.near_duplicate_pairs(fps_df, "doc", "simhash", 3)
    with pytest.raises(ValueError, match="'fp'"):
        rspark.near_duplicate_pairs(fps_df, "id", "fp", 3)
    with pytest.raises(TypeError, match="'sid'"):
        rspark.near_duplicate_pairs(fps_df, "id", "sid", 3)
    ints = fps_df.select("id", fps_df.simhash.cast("int").alias("small"))
    with pytest.raises(TypeError, match="'small'"):
        rspark.near_duplicate_pairs(ints, "id", "small", 3)
    for k in (-1, 17, 3.0, True, "3", None):
        with pytest.raises(ValueError, match="k must"):
            rspark.near_duplicate_pairs(fps_df, "id", "simhash", k)
        with pytest.raises(ValueError, match="k must"):
            rspark.near_duplicates_of(fps_df, fps_df, k, fp_col="simhash")
        with pytest.raises(ValueError, match="k must"):
            rspark.dedup(fps_df, "sid", "id", k)
    with pytest.raises(ValueError, match=r"5 tables.*4, 10, 20, 35"):
        rspark.near_duplicate_pairs(fps_df, "id", "simhash", 3, tables=5)
    with pytest.raises(ValueError, match="tables"):
        rspark.near_duplicate_pairs(fps_df, "id", "simhash", 0, tables=2)
    with pytest.raises(ValueError, match="tables"):
        rspark.dedup(fps_df, "sid", "id", 3, tables=3)
    for group in (1, 0, -5):
        with pytest.raises(ValueError, match="max_group"):
            rspark.near_duplicate_pairs(fps_df, "id", "simhash", 3, max_group=group)
    with pytest.raises(ValueError, match="'text'"):
        rspark.dedup(fps_df, "text", "id", 3)
    with pytest.raises(ValueError, match="'doc'"):
        rspark.dedup(fps_df, "sid", "doc", 3)
    with pytest.raises(ValueError, match="'fp'"):
        rspark.near_duplicates_of(fps_df, fps_df, 3, fp_col="fp")
    with pytest.raises(TypeError, match="'sid'"):
        rspark.near_duplicates_of(fps_df, fps_df, 3, fp_col="simhash", old_fp_col="sid")
    with pytest.raises(ValueError, match="'old'"):
        rspark.near_duplicates_of(fps_df, fps_df, 3, fp_col="simhash", old_id_col="old")


def test_design_arguments_refused_before_any_job(spark):
    """A bad tables= or max_group= is refused before Spark computes anything:
    a DataFrame whose evaluation fails shows it."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import LongType

    @F.udf(LongType())
    def explode_if_run(x):
        raise RuntimeError("a Spark job ran")

    poisoned = spark.range(10).select(F.col("id"), explode_if_run("id").alias("simhash"))
    with pytest.raises(ValueError, match="tables"):
        rspark.near_duplicate_pairs(poisoned, "id", "simhash", 3, tables=5)
    with pytest.raises(ValueError, match="max_group"):
        rspark.near_duplicate_pairs(poisoned, "id", "simhash", 3, max_group=1)
    with pytest.raises(TypeError, match="tables"):
        rspark.near_duplicate_pairs(poisoned, "id", "simhash", 3, tables="10")


WORKERS_WITHOUT_RSIMHASH = """
import sys
from pyspark.sql import SparkSession
import rsimhash.spark as rspark

spark = (SparkSession.builder.master("local[1]").appName("rsimhash-workers")
         .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false").getOrCreate())
spark.sparkContext.setLogLevel("OFF")
df = spark.createDataFrame([("a b c",)], ["text"])
try:
    rspark.fingerprint_column(df, "text").collect()
    print("ran")
except ImportError as e:
    print("ImportError:", e)
spark.stop()
"""


def test_workers_that_cannot_import_rsimhash_are_one_clear_error(tmp_path):
    """A session whose workers run a Python without rsimhash (here a fresh
    virtual environment, as when PYSPARK_PYTHON is not set and python3 is
    the system's): one ImportError before the first job, saying what to set,
    not a Java stack trace from inside it."""
    import subprocess
    import venv

    bare = tmp_path / "bare"
    venv.create(bare, with_pip=False)
    worker = bare / "bin" / "python"
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYSPARK")}
    env["PYSPARK_PYTHON"] = str(worker)
    proc = subprocess.run([sys.executable, "-c", WORKERS_WITHOUT_RSIMHASH], capture_output=True, text=True, timeout=300, env=env)
    out = proc.stdout.strip().splitlines()
    assert proc.returncode == 0 and out, proc.stderr[-2000:]
    line = out[-1]
    assert line.startswith("ImportError: Spark's Python workers cannot import rsimhash"), line
    assert f"PYSPARK_PYTHON={sys.executable}" in line and str(worker) in line
    assert "No module named" in line


# ---------------------------------------------------------------------------
# the docstrings' examples, on this module's session (test_docstrings.py
# runs every other public object's)


@pytest.mark.parametrize("name", rspark.__all__)
def test_examples_run(spark, name):
    pytest.importorskip("griffe")
    from doc_examples import run_examples

    run_examples(f"spark.{name}", {"rsimhash": rsimhash, "np": np, "spark": spark})
