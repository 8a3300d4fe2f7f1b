"""What a newcomer met (issue 26), each held here: commands that do what
they say, errors that name the argument at fault, arguments never silently
ignored. Each test failed before the change it holds."""

from __future__ import annotations

import os
import re
import sys
import time

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

import rsimhash  # noqa: E402
from cli_helpers import assert_one_error, make_records, ok, read_tsv, run_cli, write_jsonl  # noqa: E402


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    d = tmp_path_factory.mktemp("newcomer")
    records = make_records(120, seed=3, string_ids=True)
    write_jsonl(d / "corpus.jsonl", records)
    ok(run_cli("fingerprint", "--input", d / "corpus.jsonl", "--output", d / "fp.tsv", "-q"))
    return d, records


def brute_record_pairs(records, k):
    fps = [int(x) for x in rsimhash.fingerprints([r["text"] for r in records])]
    return [
        [records[i]["id"], records[j]["id"], str(bin(fps[i] ^ fps[j]).count("1"))]
        for i in range(len(fps))
        for j in range(i + 1, len(fps))
        if bin(fps[i] ^ fps[j]).count("1") <= k
    ]


# -- 2, 3: find-all goes by the file name; records give pairs of ids ---------------------


@pytest.mark.parametrize("name", ["corpus.jsonl", "fp.tsv"])
def test_find_all_reads_records_by_name_and_prints_their_ids(corpus, name):
    d, records = corpus
    proc = ok(run_cli("find-all", "--input", d / name, "--distance", "3", "-q"))
    rows = read_tsv(proc.stdout)
    assert rows[0] == ["id_a", "id_b", "distance"]
    want = brute_record_pairs(records, 3)
    assert want and rows[1:] == want


def test_find_all_of_lines_keeps_pairs_of_values_and_names_format_in_errors(corpus, tmp_path):
    d, _ = corpus
    hashes = [line.split(b"\t")[1] for line in (d / "fp.tsv").read_bytes().splitlines()[1:]]
    (tmp_path / "h.txt").write_bytes(b"\n".join(hashes) + b"\n")
    out = ok(run_cli("find-all", "--input", tmp_path / "h.txt", "-q")).stdout
    assert out and all(re.fullmatch(rb"\[\d+, \d+\]", line) for line in out.splitlines())
    # stdin stays fingerprint lines, as simhash-find-all reads it
    assert ok(run_cli("find-all", "--input", "-", "-q", input=b"\n".join(hashes))).stdout == out
    # a name that says nothing is read as lines; the error names --format
    (tmp_path / "fp.dat").write_bytes((d / "fp.tsv").read_bytes())
    assert_one_error(run_cli("find-all", "--input", tmp_path / "fp.dat"), 1, "--format")
    (tmp_path / "bad.dat").write_bytes(b"12\nnot a number\n")
    assert_one_error(run_cli("find-all", "--input", tmp_path / "bad.dat"), 1, "--format names another format")


# -- 4: an id is stored once -------------------------------------------------------------


def test_index_add_refuses_ids_it_holds_or_skips_them(corpus, tmp_path):
    d, records = corpus
    idx = tmp_path / "c.rsh"
    write_jsonl(tmp_path / "part1.jsonl", records[:60])
    write_jsonl(tmp_path / "part2.jsonl", records[60:])
    ok(run_cli("index", "build", "--input", tmp_path / "part1.jsonl", "--output", idx, "-q"))
    ok(run_cli("index", "add", idx, "--input", tmp_path / "part2.jsonl", "-q"))
    before = idx.read_bytes()
    assert_one_error(run_cli("index", "add", idx, "--input", tmp_path / "part2.jsonl"), 1, records[60]["id"], "--skip-existing")
    assert idx.read_bytes() == before  # nothing changed
    proc = ok(run_cli("index", "add", idx, "--input", d / "corpus.jsonl", "--skip-existing"))
    assert "0 records added, 120 skipped" in proc.stderr.decode()
    assert len(rsimhash.Index.load(idx)) == 120
    # each match once
    query = ok(run_cli("index", "query", idx, "--input", tmp_path / "part1.jsonl", "--distance", "0", "-q")).stdout
    pairs = [tuple(r[:2]) for r in read_tsv(query)[1:]]
    assert len(pairs) == len(set(pairs))
    write_jsonl(tmp_path / "twice.jsonl", records[:3] + records[:1])
    assert_one_error(
        run_cli("index", "build", "--input", tmp_path / "twice.jsonl", "--output", tmp_path / "t.rsh"), 1, "given twice"
    )


# -- 6, 7: errors name the argument; nothing silently ignored ----------------------------


def test_errors_name_the_python_argument(tmp_path):
    (tmp_path / "notext.jsonl").write_text('{"id": 1, "body": "x"}\n')
    with pytest.raises(ValueError, match="column=") as e:
        rsimhash.batch.similar_dedup(str(tmp_path / "notext.jsonl"), 0.9, progress=False)
    assert "--text-column" not in str(e.value)
    with pytest.raises(ValueError, match="shingles must be"):
        rsimhash.similar_pairs(["a b c"], 0.9, shingles="word")
    with pytest.raises(TypeError, match="k must be an int"):
        rsimhash.dedup(["a b c"], k="3")
    for make, name in (
        (lambda: rsimhash.Index(k="3"), "k"),
        (lambda: rsimhash.Index("3"), "k"),
        (lambda: rsimhash.Index(3, blocks="4"), "blocks"),
        (lambda: rsimhash.Index(3, tables=2.5), "tables"),
        (lambda: rsimhash.Index(3, block_bytes="1k"), "block_bytes"),
        (lambda: rsimhash.Index(3).query(1, k="2"), "k"),
        (lambda: rsimhash.Index(3).cluster(min_size="2"), "min_size"),
    ):
        with pytest.raises(TypeError, match=f"^{name} must be an int, got (str|float)"):
            make()
    assert rsimhash.Index(3).query(1, k=None) == [] and rsimhash.Index(k=4).k == 4


def test_dedup_refuses_k_with_jaccard():
    with pytest.raises(ValueError, match="k=3 .* no effect with jaccard="):
        rsimhash.dedup(["a b c d", "a b c d"], 3, jaccard=0.9)
    assert rsimhash.dedup(["a b c d", "a b c d"], jaccard=0.9).tolist() == [True, False]
    assert rsimhash.dedup(["a b c d", "a b c d"]).tolist() == [True, False]


def test_json_errors_read_as_a_sentence(tmp_path):
    (tmp_path / "c.jsonl").write_text('{"id": 1, "text": "unterminated}\n')
    line = assert_one_error(run_cli("dedup", "--input", tmp_path / "c.jsonl"), 1, "is not valid JSON")
    assert "starting at column" in line and "at, column" not in line


# -- 8: polish -----------------------------------------------------------------------------


def test_help_says_things_once_and_plainly():
    top = ok(run_cli("--help")).stdout.decode()
    assert top.count("exit codes") == 1
    dedup_help = ok(run_cli("dedup", "--help")).stdout.decode()
    assert "|A|B|" not in dedup_help and "|A and B| / |A or B|" in " ".join(dedup_help.split())
    public = set(dir(rsimhash))
    assert not public & {"np", "Any", "annotations"}
    assert {"SimilarIndex", "jaccard", "Index", "similar_pairs"} <= public


def test_the_summary_times_the_whole_run_and_an_empty_input_is_said(corpus, tmp_path):
    d, _ = corpus
    t0 = time.perf_counter()
    proc = ok(run_cli("dedup", "--input", d / "corpus.jsonl"))  # --output defaults to stdout, as find-all's
    wall = time.perf_counter() - t0
    assert proc.stdout.count(b"\n") > 0
    seconds = float(re.search(r", ([0-9.]+) s", proc.stderr.decode()).group(1))
    assert seconds >= 0.5 * wall - 0.05, (seconds, wall)
    (tmp_path / "empty.jsonl").write_bytes(b"")
    for quiet in ([], ["-q"]):
        proc = ok(run_cli("dedup", "--input", tmp_path / "empty.jsonl", *quiet))
        assert "warning: 0 records read: the input is empty" in proc.stderr.decode()


# -- 9: how to install before a release ----------------------------------------------------


def test_install_page_says_how_to_install_before_a_release():
    with open(os.path.join(HERE, "..", "docs", "install.md"), encoding="utf-8") as f:
        text = f.read()
    assert "maturin" in text and "git clone" in text and ".whl" in text
    assert re.search(r"Rust 1\.\d+", text) and "minutes" in text
