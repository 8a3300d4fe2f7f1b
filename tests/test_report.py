"""The report page (``rsimhash report``, ``--report``, ``rsimhash.report``):
valid HTML for html5lib's strict parser, numbers equal to the run's summary
line, every pair's diff giving back both texts, texts escaped and never run,
a size bound whatever the texts, and the pieces (diff, stratified sample,
groups) against brute force. The browser tests are in test_report_browser.py."""

from __future__ import annotations

import json
import os
import sys
import time

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

import report_helpers as rh  # noqa: E402
from budget import examples  # noqa: E402
from cli_helpers import ok, run_cli  # noqa: E402

rsimhash = pytest.importorskip("rsimhash")
pytest.importorskip("html5lib")

from rsimhash._report import diff as diffmod  # noqa: E402
from rsimhash._report import found as foundmod
from rsimhash._report import sample
from rsimhash._report.page import TEXT_CHARS  # noqa: E402

NEWS = os.path.join(HERE, "..", "examples", "news.jsonl")
MB5 = 5 * 1000 * 1000


@pytest.fixture
def cli(capsys):
    """``rsimhash ARGS`` in this process (no interpreter to start): ``(exit code, stderr lines)``."""
    from rsimhash.cli import main

    def call(*args):
        capsys.readouterr()
        code = main([os.fspath(a) if isinstance(a, os.PathLike) else str(a) for a in args])
        err = capsys.readouterr().err
        assert "Traceback" not in err
        return code, err.splitlines()

    return call


# -- the word-level diff ---------------------------------------------------------
texts = st.text(st.characters(), max_size=60) | st.lists(
    st.sampled_from(
        [
            "the",
            "The",
            "cat",
            "mat",
            " ",
            "\n",
            "!",
            "é",
            "e\u0301",
            "漢",
            "字",
            "مرحبا",
            "👍",
            "🏽",
            "\u200d",
            "🇫",
            "🇷",
            "\ud800",
            "\x00",
            "\r\n",
            "  ",
        ]
    ),
    max_size=40,
).map("".join)


@settings(max_examples=examples(300), deadline=None)
@given(texts, texts)
def test_diff_pieces_reconstruct_both_texts(a, b):
    ops = diffmod.diff(a, b)
    assert "".join("".join(op.a) for op in ops) == a
    assert "".join("".join(op.b) for op in ops) == b
    assert "".join(diffmod.tokens(a)) == a
    for op in ops:
        assert op.tag in ("equal", "replace", "delete", "insert")
        if op.tag == "equal":  # equal as the fingerprints see them: lowercased, whitespace apart
            assert [diffmod.key(t) for t in op.a] == [diffmod.key(t) for t in op.b]


def test_diff_marks_inserted_deleted_and_changed_words():
    ops = diffmod.diff("the cat sat on the mat", "the dog sat on the mat today")
    shown = [(op.tag, "".join(op.a).strip(), "".join(op.b).strip()) for op in ops if op.tag != "equal"]
    assert shown == [("replace", "cat", "dog"), ("insert", "", "today")]
    assert [t.strip() for t in diffmod.tokens("漢字かな")] == ["漢", "字", "か", "な"]
    assert diffmod.tokens("नमस्ते दुनिया 👨\u200d👩\u200d👧 🇫🇷") == ["नमस्ते ", "दुनिया ", "👨\u200d👩\u200d👧 ", "🇫🇷"]


def test_diff_of_repetitive_texts_is_quick():
    a, b = "a " * 1250, "a " * 1200 + "b " * 50
    cjk = "".join(np.random.default_rng(0).choice(list("漢字かな交じり文"), 2500))
    start = time.perf_counter()
    for x, y in ((a, b), (cjk, cjk[::-1]), (a, cjk)):
        ops = diffmod.diff(x, y)
        assert "".join("".join(op.a) for op in ops) == x
    assert time.perf_counter() - start < 2


# -- the stratified sample -----------------------------------------------------------
@settings(max_examples=examples(200), deadline=None)
@given(st.lists(st.integers(0, 40), max_size=12), st.integers(0, 200))
def test_quotas_share_equally_and_fill(sizes, n):
    q = sample.quotas(np.array(sizes, dtype=np.int64), n).tolist()
    assert sum(q) == min(n, sum(sizes))
    assert all(0 <= a <= s for a, s in zip(q, sizes))
    # water filling: a stratum left short is full, or every stratum gets within one of it
    for a, s in zip(q, sizes):
        if a < s:
            assert all(b <= a + 1 for b in q)


@settings(max_examples=examples(100), deadline=None)
@given(st.lists(st.integers(0, 6), min_size=1, max_size=300), st.integers(1, 50), st.integers(0, 3))
def test_sample_covers_every_distance_and_is_interleaved(dist, n, seed):
    d = np.array(dist, dtype=np.int16)
    chosen = sample.choose(d, None, None, n, seed)
    assert len(set(chosen.tolist())) == len(chosen) == min(n, len(d))
    present = set(dist)
    if n >= len(present):  # every distance present, the borderline included
        assert set(d[chosen].tolist()) == present
    # interleaved: the first len(present-in-sample) picks are of distinct distances
    k = len(set(d[chosen].tolist()))
    assert len(set(d[chosen[:k]].tolist())) == k


def test_sample_by_similarity_keeps_the_borderline_and_the_copies():
    sims = np.concatenate([np.ones(1000), np.full(3, 0.801), np.linspace(0.85, 0.99, 50)]).astype(np.float32)
    chosen = sample.choose(None, sims, 0.8, 20, 0)
    picked = sims[chosen]
    assert (picked < 0.82).sum() >= 2 and (picked == 1).sum() >= 2 and len(chosen) == 20  # 1000 copies, 3 borderline


# -- groups -------------------------------------------------------------------------
@settings(max_examples=examples(100), deadline=None)
@given(st.lists(st.tuples(st.integers(0, 30), st.integers(0, 30)), max_size=60))
def test_groups_of_pairs_are_the_connected_components(edges):
    names = [str(i) for i in range(31)]
    a = np.array([e[0] for e in edges], dtype=np.int64)
    b = np.array([e[1] for e in edges], dtype=np.int64)
    members, starts = foundmod._groups_of_pairs(len(names), a, b)
    # brute force: repeated merging of sets
    comps = [{i} for i in range(31)]
    for x, y in edges:
        cx = next(c for c in comps if x in c)
        cy = next(c for c in comps if y in c)
        if cx is not cy:
            comps.remove(cy)
            cx |= cy
    expect = sorted(sorted(c) for c in comps if len(c) >= 2)
    got = sorted(sorted(members[starts[g] : starts[g + 1]].tolist()) for g in range(len(starts) - 1))
    assert got == expect


def test_removed_groups_each_kept_record_with_what_it_removed():
    f = foundmod.removed(["b", "c", "e", "d"], ["a", "a", "d", "a"], [1, 2, 0, 3], "distance")
    groups = [[f.names[c] for c in f.members[f.starts[g] : f.starts[g + 1]]] for g in range(len(f.starts) - 1)]
    assert groups == [["a", "b", "c", "d"], ["d", "e"]]
    assert f.distance.tolist() == [1, 2, 0, 3]


# -- pages from the command line --------------------------------------------------------
def _page_checks(page_path, kind, summary, input_path):
    page = page_path.read_bytes()
    assert len(page) < MB5
    doc = rh.parse(page)
    nums = rh.numbers(doc)
    expect = rh.summary_numbers(kind, summary)
    assert {k: nums.get(k) for k in expect} == expect
    assert nums.get("summary") == summary
    shown = rh.check_pairs(doc, rh.texts_by_id(input_path), TEXT_CHARS)
    scripts = list(doc.iter("script"))
    assert len(scripts) == 1 and "http" not in page.decode("utf-8").split("<style>")[0].lower().replace("http-equiv", "")
    return doc, nums, shown


def test_news_dedup_report(tmp_path, cli):
    page = tmp_path / "news.html"
    code, (summary,) = cli("dedup", "--input", NEWS, "--output", tmp_path / "kept.jsonl", "--report", page)
    assert code == 0
    doc, nums, shown = _page_checks(page, "dedup", summary, NEWS)
    assert nums["removed"] == "2" and shown == 2
    assert nums["command"].startswith("rsimhash dedup --input")
    # rsimhash report from the outputs: the same numbers
    removed, log = tmp_path / "removed.tsv", tmp_path / "run.log"
    code, err = cli("dedup", "--input", NEWS, "--output", tmp_path / "kept.jsonl", "--removed", removed)
    log.write_text("\n".join(err) + "\n", encoding="utf-8")
    again = tmp_path / "again.html"
    assert cli("report", "--input", NEWS, "--removed", removed, "--log", log, "--output", again)[0] == 0
    doc2, nums2, _ = _page_checks(again, "dedup", err[0], NEWS)
    assert {k: nums2[k] for k in ("records", "removed", "kept")} == {k: nums[k] for k in ("records", "removed", "kept")}


def test_generated_corpus_of_100k_records(tmp_path, cli):
    path = tmp_path / "corpus.jsonl"
    path.write_bytes(rh.corpus_lines(100_000))
    page = tmp_path / "big.html"
    start = time.perf_counter()
    code, (summary,) = cli("dedup", "--input", path, "--output", tmp_path / "kept.jsonl", "--report", page)
    took = time.perf_counter() - start
    assert code == 0
    doc, nums, shown = _page_checks(page, "dedup", summary, path)
    assert int(nums["removed"]) > 1000 and shown >= 50
    # each distance up to k has pairs in the sample, the borderline ones included
    assert {p["distance"] for p in rh.pairs(doc)} == {"0", "1", "2", "3"}
    assert took < 60


@pytest.mark.parametrize(
    "command, extra, kind",
    [
        ("cluster", [], "cluster"),
        ("cluster", ["--jaccard", "0.7"], "cluster"),
        ("find-all", ["--format", "json"], "find-all"),
        ("find-all", ["--jaccard", "0.7"], "find-all"),
        ("dedup", ["--jaccard", "0.7"], "dedup"),
    ],
)
def test_cluster_find_all_and_verified_reports(tmp_path, cli, command, extra, kind):
    path = tmp_path / "corpus.jsonl"
    path.write_bytes(rh.corpus_lines(2000, seed=5))
    page, out = tmp_path / "page.html", tmp_path / "out.txt"
    code, (summary,) = cli(command, "--input", path, "--output", out, "--report", page, *extra)
    assert code == 0
    doc, nums, shown = _page_checks(page, kind, summary, path)
    assert shown >= 20
    figures = {f.get("id") for f in doc.iter("figure")}
    assert "chart-hamming" in figures and "chart-sizes" in figures
    assert ("chart-similarity" in figures) == ("--jaccard" in extra and command != "cluster")


def test_hash_input_and_stdin_have_no_texts_but_a_page(tmp_path, cli):
    path = tmp_path / "corpus.jsonl"
    path.write_bytes(rh.corpus_lines(500, seed=7))
    hashes = tmp_path / "h.tsv"
    assert cli("fingerprint", "--input", path, "--output", hashes)[0] == 0
    page = tmp_path / "page.html"
    assert cli("cluster", "--input", hashes, "--output", tmp_path / "c.tsv", "--report", page)[0] == 0
    text = page.read_text(encoding="utf-8")
    rh.parse(page.read_bytes())
    assert "holds fingerprints, not texts" in text
    proc = ok(run_cli("dedup", "--input", "-", "--output", "-", "--report", page, input=path.read_bytes()))
    assert proc.stdout  # the kept records still go to stdout
    assert "came from stdin" in page.read_text(encoding="utf-8")
    summary = proc.stderr.decode().strip()
    nums = rh.numbers(rh.parse(page.read_bytes()))
    assert {k: nums[k] for k in ("records", "removed", "kept", "bad_lines")} == rh.summary_numbers("dedup", summary)
    # rsimhash report reads stdin itself (twice if need be: a copy)
    removed = tmp_path / "removed.tsv"
    ok(run_cli("dedup", "--input", path, "--output", tmp_path / "kept.jsonl", "--removed", removed))
    ok(run_cli("report", "--input", "-", "--removed", removed, "--output", page, input=path.read_bytes()))
    doc = rh.parse(page.read_bytes())
    assert rh.check_pairs(doc, rh.texts_by_id(path), TEXT_CHARS) > 0 and rh.numbers(doc)["records"] == "500"


def test_script_in_a_record_is_shown_not_run(tmp_path, cli):
    path = tmp_path / "x.jsonl"
    evil = '<script>alert(1)</script> and <img src=x onerror=alert(2)> &amp; "quoted"'
    path.write_text(
        '{"id": "<b>id</b>", "text": %s}\n{"id": 2, "text": %s}\n' % (json.dumps(evil), json.dumps(evil + " again")),
        encoding="utf-8",
    )
    page = tmp_path / "page.html"
    assert cli("dedup", "--input", path, "--output", tmp_path / "k.jsonl", "--report", page, "--distance", 16)[0] == 0
    raw = page.read_text(encoding="utf-8")
    assert "<script>alert" not in raw and "<img" not in raw and "<b>id" not in raw
    doc = rh.parse(page.read_bytes())
    assert len(list(doc.iter("script"))) == 1 and not list(doc.iter("img"))
    (pair,) = rh.pairs(doc)
    assert pair["texts"] == [evil, evil + " again"] and pair["ids"] == ["<b>id</b>", "2"]


def test_report_errors_are_one_line(tmp_path, cli):
    bad = tmp_path / "bad.tsv"
    bad.write_text("something\telse\n", encoding="utf-8")
    for args in (["--removed", bad], ["--removed", tmp_path / "missing.tsv"], ["--clusters", NEWS]):
        code, err = cli("report", "--input", NEWS, *args, "--output", tmp_path / "p.html")
        assert code == 1 and len(err) == 1 and err[0].startswith("rsimhash: error: "), err
    for page in ("-", tmp_path / "nowhere" / "p.html"):
        code, err = cli("dedup", "--input", NEWS, "--output", tmp_path / "k.jsonl", "--report", page)
        assert code == 2 and len(err) == 1 and not (tmp_path / "k.jsonl").exists(), err
    assert not (tmp_path / "p.html").exists()


def test_ids_not_in_the_input_are_said(tmp_path, cli):
    removed = tmp_path / "r.tsv"
    removed.write_text("id\tduplicate_of\tdistance\n9\t1\t1\nnope\t1\t2\n", encoding="utf-8")
    page = tmp_path / "p.html"
    assert cli("report", "--input", NEWS, "--removed", removed, "--output", page)[0] == 0
    assert "1 of the 3 ids the outputs name are not in the input" in page.read_text(encoding="utf-8")


# -- rsimhash.report in Python -----------------------------------------------------------
def test_python_report_of_arrays_and_dataframes():
    pd = pytest.importorskip("pandas")
    texts = [json.loads(line)["text"] for line in rh.corpus_lines(600, seed=9).splitlines()]
    page = rsimhash.report(texts, k=3)
    keep = rsimhash.dedup(texts, k=3)
    assert page.numbers["removed"] == int((~keep).sum()) and page.numbers["records"] == 600
    doc = rh.parse(page.encode("utf-8"))
    by_id = {str(i): t for i, t in enumerate(texts)}
    assert rh.check_pairs(doc, by_id, TEXT_CHARS) > 0
    frame = page._repr_html_()
    assert frame.startswith("<iframe srcdoc=") and "<script>" not in frame and "sandbox=" in frame
    # the same run given as its outputs
    fps = rsimhash.fingerprints(texts)
    index = rsimhash.Index(3)
    index.add(fps)
    for kw in (
        {"clusters": index.cluster()},
        {"pairs": index.find_all()},
        {"removed": pd.DataFrame({"id": [5, 7], "duplicate_of": [1, 1], "distance": [2, 0]})},
    ):
        p = rsimhash.report(texts, **kw)
        rh.check_pairs(rh.parse(p.encode("utf-8")), by_id, TEXT_CHARS)
    pairs, sims = rsimhash.similar_pairs(texts, 0.7)
    p = rsimhash.report(
        pd.Series(texts), pairs=pairs, similarity=sims, jaccard=0.7, shards=["a" if i < 300 else "b" for i in range(600)]
    )
    doc = rh.parse(p.encode("utf-8"))
    assert {"chart-similarity", "chart-shards"} <= {f.get("id") for f in doc.iter("figure")}
    assert p.numbers["pairs"] == len(pairs)


def test_page_size_is_bounded_whatever_the_texts():
    # Texts that escape to 4 or 5 bytes a character, long ids, as many pairs as asked:
    # the pairs stop at the page's byte budget, the texts at their character cut.
    rng = np.random.default_rng(1)
    base = ["".join(rng.choice(list("<&>\"'"), 3000)) + str(i) for i in range(700)]
    texts = [t for b in base for t in (b, b + "&")]
    page = rsimhash.report(texts, ids=["<id>" * 100 + str(i) for i in range(len(texts))], k=16, show=1000)
    size = len(page.encode("utf-8"))
    assert 3_000_000 < size < MB5 and "left out to keep the page small" in page


any_text = st.text(st.characters(), max_size=40)


@settings(max_examples=examples(25), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(any_text, min_size=1, max_size=6))
def test_any_texts_give_a_valid_page_that_shows_them(items):
    texts = items + items  # every text twice: each second copy is removed at distance 0
    page = rsimhash.report(texts, k=0)
    doc = rh.parse(page.encode("utf-8"))
    by_id = {str(i): t for i, t in enumerate(texts)}
    assert rh.check_pairs(doc, by_id, TEXT_CHARS) == page.numbers["removed"]


@pytest.mark.parametrize("command", ["dedup", "cluster", "find-all"])
def test_a_run_that_finds_nothing_has_a_page(tmp_path, cli, command):
    empty = tmp_path / "empty.jsonl"
    empty.write_bytes(b"")
    page = tmp_path / "p.html"
    extra = ["--format", "json"] if command == "find-all" else []
    code, (summary, warning) = cli(command, "--input", empty, "--output", tmp_path / "out", "--report", page, *extra)
    assert code == 0 and "0 records read" in warning
    nums = rh.numbers(rh.parse(page.read_bytes()))
    expect = rh.summary_numbers(command, summary)
    assert {k: nums.get(k) for k in expect} == expect and nums["records"] == "0"


def test_bad_lines_are_counted_as_the_run_counts_them(tmp_path, cli):
    path = tmp_path / "bad.jsonl"
    with open(NEWS, "rb") as f:
        lines = f.read().splitlines(keepends=True)
    path.write_bytes(b"".join(lines[:5]) + b"not json\n" + b'{"id": 99}\n' + b"".join(lines[5:]))
    page = tmp_path / "p.html"
    code, err = cli("dedup", "--input", path, "--output", tmp_path / "k.jsonl", "--report", page, "--skip-bad-lines")
    assert code == 0 and len(err) == 3  # two warnings (the run's only: the page's reading is quiet), the summary
    nums = rh.numbers(rh.parse(page.read_bytes()))
    assert nums["bad_lines"] == "2" and {k: nums[k] for k in rh.KEYS["dedup"]} == rh.summary_numbers("dedup", err[-1])


# -- honest and readable (issue 38, item 2) ----------------------------------------------
def _articles(doc):
    return [a for a in doc.iter("article") if "pair" in rh.classes(a)]


def _text_of(elem):
    return "".join(elem.itertext())


def _by_class(elem, tag, name):
    return [e for e in elem.iter(tag) if name in rh.classes(e)]


def test_a_difference_past_the_cut_is_counted_and_the_cut_is_said():
    common = " ".join(f"word{i}" for i in range(TEXT_CHARS // 6))  # longer than the part shown
    left, right = common + " and so it ends here", common + " but this one ends otherwise, later on"
    page = rsimhash.report([left, right], removed={"id": [1], "duplicate_of": [0], "distance": [3]})
    (art,) = _articles(rh.parse(page.encode("utf-8")))
    whole = diffmod.changed_words(diffmod.diff(left, right))
    assert whole >= 5
    (changed,) = _by_class(art, "p", "changed")
    said = " ".join(_text_of(changed).split())
    assert said.startswith(f"{whole} words differ") and "0 in the part shown" in said, said
    cuts = [" ".join(_text_of(p).split()) for p in _by_class(art, "p", "cut")]
    assert cuts == [f"cut: the first {TEXT_CHARS:,} of {len(t):,} characters shown" for t in (left, right)]
    # a pair shown whole says nothing of a cut and counts as before
    page = rsimhash.report(["a b c d e f", "a b x d e f"], removed={"id": [1], "duplicate_of": [0], "distance": [3]})
    (art,) = _articles(rh.parse(page.encode("utf-8")))
    assert " ".join(_text_of(_by_class(art, "p", "changed")[0]).split()) == "1 word differs"
    assert not _by_class(art, "p", "cut")


def test_long_texts_are_counted_quickly():
    rng = np.random.default_rng(2)
    words = rng.integers(0, 5000, 60_000).astype(str)
    other = words.copy()
    other[rng.integers(0, len(words), 40)] = "changed"
    a, b = " ".join(words), " ".join(rng.permutation(words))
    start = time.perf_counter()
    n, _, exact = diffmod.count(a, " ".join(other))
    assert time.perf_counter() - start < 1.5 and 1 <= n <= 40
    n, _, exact = diffmod.count(a, b)  # beyond the diff's work: the bag of words, a lower bound (said as such)
    assert not exact and n == 0
    assert diffmod.count(a, a + " one more") == (2, 0, True)  # a common head and tail: aligned whatever the length
    assert time.perf_counter() - start < 3


URL = "https://example.org/" + "/".join(f"section-{i}" for i in range(40)) + "?utm_source=newsletter&page=2"


def test_long_ids_are_shown_whole():
    assert len(URL) > 300
    base = "the council met on tuesday to approve the new budget for the coming year"
    page = rsimhash.report([base, base + " today"], ids=["short", URL], k=16)
    doc = rh.parse(page.encode("utf-8"))
    cells = [_text_of(td) for td in doc.iter("td") if "id" in rh.classes(td)]
    assert URL in cells
    (pair,) = rh.pairs(doc)
    assert URL in pair["ids"]


def _group_rows(doc):
    """Each group's rows: (role, id, first-line cell, data-distance, data-similarity)."""
    out = []
    for ol in doc.iter("ol"):
        if "groups" not in rh.classes(ol):
            continue
        for li in ol.iter("li"):
            rows = []
            for tr in next(li.iter("tbody")).iter("tr"):
                tds = list(tr.iter("td"))
                first = next((td for td in tds if "first" in rh.classes(td)), None)
                rows.append(
                    (
                        _text_of(tds[0]),
                        _text_of(next(td for td in tds if "id" in rh.classes(td))),
                        None if first is None else _text_of(first),
                        tr.get("data-distance"),
                        tr.get("data-similarity"),
                    )
                )
            out.append(rows)
    return out


def test_each_member_shows_its_distance_and_similarity_to_the_kept_record():
    base = "the city council voted on tuesday to approve a new budget for schools roads and parks in the north"
    texts = [base, base.replace("tuesday", "monday"), base + " at last", "a text of quite another kind here"]
    page = rsimhash.report(texts, k=16)
    doc = rh.parse(page.encode("utf-8"))
    fps = rsimhash.fingerprints(texts)
    (group,) = [g for g in _group_rows(doc) if g[0][1] == "0"]
    assert [r[0] for r in group] == ["kept", "removed", "removed"]
    assert group[0][3] is None  # the kept record itself
    for _, rid, _, dist, sim in group[1:]:
        i = int(rid)
        assert int(dist) == rsimhash.hamming(int(fps[0]), int(fps[i]))
        assert float(sim) == pytest.approx(rsimhash.jaccard(texts[0], texts[i]), abs=1e-6)
    cells = [" ".join(_text_of(td).split()) for td in doc.iter("td") if "distance" in rh.classes(td)]
    assert [c for c in cells if c] == [f"{r[3]} bit" + ("" if r[3] == "1" else "s") for r in group[1:]]
    # a verified run's own similarity, when the output gives it
    page = rsimhash.report(texts, removed={"id": [2], "duplicate_of": [0], "jaccard": [0.8125]})
    (group,) = _group_rows(rh.parse(page.encode("utf-8")))
    assert group[1][4] == "0.8125" and int(group[1][3]) == rsimhash.hamming(int(fps[0]), int(fps[2]))


def test_first_line_column_shows_where_each_member_differs():
    header = "Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/\nUpstream-Name: tool\n\nFiles: *\n"
    kept = header + "Copyright: 2001 Alice Example\nLicense: GPL-2+\n"
    edited = header + "Copyright: 2003 Bob Example\nLicense: GPL-2+\n"
    one_line = "x " * 300 + "the middle word moved " + "y " * 300
    texts = [kept, edited, header + "Copyright: 2001 Alice Example\n", one_line, one_line.replace("middle", "centre")]
    removed = {"id": [1, 2, 4], "duplicate_of": [0, 0, 3], "distance": [4, 2, 1]}
    doc = rh.parse(rsimhash.report(texts, removed=removed).encode("utf-8"))
    first, second = _group_rows(doc)
    assert first[0][2] == header.splitlines()[0]  # the kept record: its first line
    assert "Copyright: 2003 Bob Example" in first[1][2] and "Format:" not in first[1][2]
    assert "License: GPL-2+" in first[2][2]  # a deletion is shown where it is (struck through)
    assert "centre" in second[1][2] and len(second[1][2]) < 200 and "x x" in second[1][2]


def test_numbers_are_numbers():
    base = "the cat sat on the mat by the door of the old house"
    page = rsimhash.report([base, "<b>" + base + "</b>", "a dog barked"], k=8)
    nums = page.numbers
    assert (nums["records"], nums["removed"], nums["kept"], nums["k"]) == (3, 1, 2, 8)
    assert all(type(nums[key]) is int for key in ("records", "removed", "kept", "k"))
    assert isinstance(nums["seconds"], float) and isinstance(nums["command"], str)
    texts = [json.loads(line)["text"] for line in rh.corpus_lines(200, seed=4).splitlines()]
    pairs, sims = rsimhash.similar_pairs(texts, 0.7)
    nums = rsimhash.report(texts, pairs=pairs, similarity=sims, jaccard=0.7).numbers
    assert nums["pairs"] == len(pairs) and type(nums["pairs"]) is int and nums["threshold"] == 0.7
    assert nums["candidates"] == int(nums["candidates"]) and nums["seconds"] is None
