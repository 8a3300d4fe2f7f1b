"""``find-all``, ``cluster`` and ``dedup`` with ``--jaccard``: verified
near-duplicates on the command line.

Every job runs three ways, which must write the same bytes: in memory (one
pass), in two passes (``--memory-limit`` far below the input), and from
stdin. Each is checked against the Python API (``similar_pairs``,
``dedup(jaccard=)``) and, for the pairs, against exact Jaccard of shingle
sets computed here in pure Python.
"""

from __future__ import annotations

import json
from typing import Any, Dict, List

import numpy as np
import pytest

import rsimhash
from cli_helpers import assert_one_error, leftovers, make_records, ok, read_tsv, run_cli, write_jsonl
from reference_v1 import features, fnv1a64

T = 0.8
# The three ways (in memory, two passes, stdin) write the same bytes for the
# same candidates; "auto" takes the exact join in memory and these
# candidates in two passes (tests/test_similar_exact.py), so they are named.
CAND = tuple(rsimhash._rsimhash.auto_candidates(T))
CAND_ARG = ",".join(map(str, CAND))


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: Any) -> Dict[str, Any]:
    records = make_records(600, seed=11, dup_share=0.45, words=(20, 90), string_ids=True)
    # Texts the sets treat specially: too short for a shingle, empty, repeated.
    records[5]["text"] = "two words"
    records[6]["text"] = ""
    records[7]["text"] = ""
    records[8]["text"] = records[9]["text"]
    path = tmp_path_factory.mktemp("similar") / "corpus.jsonl"
    data = write_jsonl(path, records)
    return {
        "records": records,
        "path": path,
        "data": data,
        "texts": [r["text"] for r in records],
        "ids": [r["id"] for r in records],
    }


def _runs(corpus: Dict[str, Any], tmp_path: Any, *args: Any, output: str = "out") -> List[bytes]:
    """The job's output in memory, in two passes and from stdin (with a
    work directory, which sends it through a copy of stdin)."""
    outs = []
    work = tmp_path / "work"
    work.mkdir()
    for how, extra, stdin in (
        ("memory", [], None),
        ("two-pass", ["--memory-limit", "16KiB"], None),
        ("stdin", ["--workdir", work], corpus["data"]),
    ):
        dest = tmp_path / f"{output}-{how}"
        source = "-" if stdin is not None else corpus["path"]
        cand = [] if "--candidates" in [str(a) for a in args] else ["--candidates", CAND_ARG]
        proc = ok(run_cli(*args, "--input", source, "--output", dest, *cand, *extra, input=stdin))
        if how == "two-pass" and "--sample" not in [str(a) for a in args]:
            assert "batch engine" in proc.stderr.decode(), proc.stderr
        outs.append(dest.read_bytes())
    assert outs[0] == outs[1] == outs[2]
    assert leftovers(work) == []
    return outs


def _fmt(x: float) -> str:
    """A similarity as the outputs write it: the float32 value, 6 decimals, zeros cut."""
    return "1" if x == 1 else f"{float(np.float32(x)):.6f}".rstrip("0").rstrip(".")


def _set(text: str) -> set:
    """The SPEC v1 word 3-shingles of ``text`` as FNV-1a 64 hashes, by the reference."""
    return {fnv1a64(f) for f in features(text, "words", 3)}


def _exact(a: str, b: str, measure: str = "jaccard") -> float:
    x, y = _set(a), _set(b)
    if not x or not y:  # documented: two empty sets are alike, an empty one and another not
        return float(not x and not y)
    inter = len(x & y)
    return inter / (len(x | y) if measure == "jaccard" else min(len(x), len(y)))


@pytest.mark.parametrize("measure", ["jaccard", "containment"])
def test_find_all_jaccard(corpus: Dict[str, Any], tmp_path: Any, measure: str) -> None:
    out = _runs(corpus, tmp_path, "find-all", "--jaccard", T, "--measure", measure)[0]
    rows = read_tsv(out)
    assert rows[0] == ["id_a", "id_b", measure]
    pairs, sims = rsimhash.similar_pairs(corpus["texts"], T, measure=measure, candidates=CAND)
    assert len(pairs) > 50
    ids = corpus["ids"]
    expected = [[ids[a], ids[b], _fmt(s)] for (a, b), s in zip(pairs.tolist(), sims.tolist())]
    assert rows[1:] == expected
    texts = corpus["texts"]
    index = {i: n for n, i in enumerate(ids)}
    for a, b, s in rows[1:]:
        exact = _exact(texts[index[a]], texts[index[b]], measure)
        assert exact >= T and s == _fmt(exact)


def test_cluster_jaccard(corpus: Dict[str, Any], tmp_path: Any) -> None:
    out = _runs(corpus, tmp_path, "cluster", "--jaccard", T)[0]
    rows = read_tsv(out)
    assert rows[0] == ["id", "cluster"]
    members, labels = rsimhash.batch.similar_clusters(corpus["texts"], T, candidates=CAND)
    ids = corpus["ids"]
    assert rows[1:] == [[ids[m], str(c)] for m, c in zip(members.tolist(), labels.tolist())]
    # Connected components of the verified pairs, by a union-find here.
    pairs, _ = rsimhash.similar_pairs(corpus["texts"], T, candidates=CAND)
    parent = list(range(len(ids)))

    def root(x: int) -> int:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for a, b in pairs.tolist():
        parent[root(a)] = root(b)
    groups: Dict[int, List[str]] = {}
    for i in range(len(ids)):
        groups.setdefault(root(i), []).append(ids[i])
    clusters: Dict[str, List[str]] = {}
    for i, c in rows[1:]:
        clusters.setdefault(c, []).append(i)
    assert sorted(clusters.values()) == sorted(g for g in groups.values() if len(g) > 1)


def test_cluster_jaccard_leader_all_sample(corpus: Dict[str, Any], tmp_path: Any) -> None:
    out = _runs(corpus, tmp_path, "cluster", "--jaccard", T, "--method", "leader", "--all", "--sample", 400)[0]
    rows = read_tsv(out)[1:]
    assert len(rows) == 400
    keep = rsimhash.dedup(corpus["texts"][:400], jaccard=T, candidates=CAND)
    leaders = [rows[[r[0] for r in rows].index(corpus["ids"][i])][1] for i in np.flatnonzero(keep).tolist()]
    assert len(set(leaders)) == len(leaders) == len({c for _, c in rows})


def test_dedup_jaccard(corpus: Dict[str, Any], tmp_path: Any) -> None:
    _runs(corpus, tmp_path, "dedup", "--jaccard", T, "--removed", tmp_path / "removed.tsv")
    kept = (tmp_path / "out-memory").read_bytes()
    keep = rsimhash.dedup(corpus["texts"], jaccard=T, candidates=CAND)
    lines = corpus["data"].splitlines(keepends=True)
    assert kept == b"".join(line for line, k in zip(lines, keep.tolist()) if k)
    assert 50 < int(np.count_nonzero(~keep)) < 400


def test_dedup_jaccard_removed(corpus: Dict[str, Any], tmp_path: Any) -> None:
    outs = []
    for extra in ([], ["--memory-limit", "16KiB"]):
        removed = tmp_path / f"removed{len(extra)}.tsv"
        ok(
            run_cli(
                "dedup",
                "--input",
                corpus["path"],
                "--output",
                tmp_path / "kept.jsonl",
                "--jaccard",
                T,
                "--removed",
                removed,
                "--candidates",
                CAND_ARG,
                *extra,
            )
        )
        outs.append(removed.read_bytes())
    assert outs[0] == outs[1]
    rows = read_tsv(outs[0])
    assert rows[0] == ["id", "duplicate_of", "jaccard"]
    keep, matched, sims = rsimhash.batch.similar_dedup(corpus["texts"], T, return_matched=True, candidates=CAND)
    ids, texts = corpus["ids"], corpus["texts"]
    gone = np.flatnonzero(~keep).tolist()
    assert [r[0] for r in rows[1:]] == [ids[i] for i in gone]
    index = {i: n for n, i in enumerate(ids)}
    for a, b, s in rows[1:]:
        i, j = index[a], index[b]
        assert j < i and keep[j]
        assert s == _fmt(_exact(texts[i], texts[j])) and float(s) >= T


def test_dedup_jaccard_parquet(corpus: Dict[str, Any], tmp_path: Any) -> None:
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    path = tmp_path / "corpus.parquet"
    pq.write_table(pa.table({"id": corpus["ids"], "text": corpus["texts"]}), path, row_group_size=128)
    tables = []
    for extra in ([], ["--memory-limit", "16KiB"]):
        out = tmp_path / f"kept{len(extra)}.parquet"
        ok(run_cli("dedup", "--input", path, "--output", out, "--jaccard", T, "--candidates", CAND_ARG, *extra))
        tables.append(pq.read_table(out))
    assert tables[0].equals(tables[1])
    keep = rsimhash.dedup(corpus["texts"], jaccard=T, candidates=CAND)
    assert tables[0].column("id").to_pylist() == [i for i, k in zip(corpus["ids"], keep.tolist()) if k]


def test_candidates_and_width(corpus: Dict[str, Any], tmp_path: Any) -> None:
    out = ok(
        run_cli(
            "find-all", "--input", corpus["path"], "--jaccard", 0.6, "--candidates", "chars,4,12", "--mode", "words", "--width", 2
        )
    ).stdout
    pairs, sims = rsimhash.similar_pairs(corpus["texts"], 0.6, width=2, candidates=("chars", 4, 12))
    assert len(read_tsv(out)) == len(pairs) + 1


@pytest.mark.parametrize(
    "args, needles",
    [
        (["find-all", "--jaccard", "0"], ["--jaccard", "more than 0"]),
        (["find-all", "--jaccard", "1.01"], ["--jaccard", "at most 1"]),
        (["dedup", "--jaccard", "x", "--output", "-"], ["--jaccard", "'x'"]),
        (["cluster", "--jaccard", "0.9", "--distance", "5"], ["--candidates"]),
        (["dedup", "--jaccard", "0.9", "--blocks", "6", "--output", "-"], ["--candidates"]),
        (["find-all", "--jaccard", "0.9", "--candidates", "words,3"], ["MODE,WIDTH,K"]),
        (["find-all", "--jaccard", "0.9", "--candidates", "lines,3,4"], ["MODE,WIDTH,K"]),
        (["find-all", "--jaccard", "0.9", "--candidates", "words,3,65"], ["k"]),
        (["find-all", "--jaccard", "0.9", "--measure", "cosine"], ["--measure"]),
    ],
)
def test_usage_errors(corpus: Dict[str, Any], args: List[str], needles: List[str]) -> None:
    assert_one_error(run_cli(*args, "--input", corpus["path"]), 2, *needles)


def test_hash_input_refused(tmp_path: Any) -> None:
    path = tmp_path / "hashes.tsv"
    path.write_text("id\thash\na\t1\nb\t3\n")
    proc = run_cli("find-all", "--input", path, "--format", "hash", "--jaccard", 0.9)
    assert_one_error(proc, 2, "--jaccard", "text")


def test_bad_text_field_names_line(tmp_path: Any) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text(json.dumps({"id": 1, "text": "a b c"}) + "\n" + json.dumps({"id": 2, "text": 5}) + "\n")
    assert_one_error(run_cli("dedup", "--input", path, "--output", "-", "--jaccard", 0.9), 1, "bad.jsonl:2")
    ok(run_cli("dedup", "--input", path, "--output", tmp_path / "o.jsonl", "--jaccard", 0.9, "--skip-bad-lines"))
    assert (tmp_path / "o.jsonl").read_text().count("\n") == 1
