"""Every command that reads records takes shards (a directory, a glob,
``--input`` repeated) as ``dedup`` does, and a report can be made of any
run, sharded runs included, with its chart of shares by shard (issue 38,
items 1 and 7)."""

from __future__ import annotations

import json
import os
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)
from cli_helpers import make_records, ok, read_tsv, run_cli  # noqa: E402

html5lib = pytest.importorskip("html5lib")
from report_helpers import as_shown, numbers, pairs, parse  # noqa: E402

SHARDS = ("p0.jsonl", "p1.jsonl", "x/p2.jsonl")


def crawl(tmp_path, ids: bool = False):
    """Three shards of 60 records (a third edited copies of earlier ones,
    across shards too); ids are line numbers unless ``ids``."""
    records = make_records(180, seed=4, dup_share=0.5, words=(30, 60))
    top = tmp_path / "crawl"
    texts = {}
    for i, rel in enumerate(SHARDS):
        path = top / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "w", encoding="utf-8") as f:
            for line, r in enumerate(records[i * 60 : (i + 1) * 60], 1):
                f.write(json.dumps({"id": f"u{r['id']}", "text": r["text"]} if ids else {"text": r["text"]}) + "\n")
                texts[f"{rel}:u{r['id']}" if ids else f"{rel}:{line}"] = r["text"]
    return top, texts


def check_page(path, texts, what: str, records: int = 180) -> list:
    doc = parse(path.read_bytes())
    assert doc.find(f".//*[@aria-label='share {what} by shard']") is not None
    assert numbers(doc)["records"] == str(records)
    shown = pairs(doc)
    assert shown
    for p in shown:
        for rid, text in zip(p["ids"], p["texts"]):
            assert text == as_shown(texts[rid], 2500), rid
    return shown


@pytest.mark.parametrize("ids", [False, True])
def test_a_sharded_dedup_has_a_report(tmp_path, ids):
    top, texts = crawl(tmp_path, ids)
    ok(
        run_cli(
            "dedup",
            "--input",
            top,
            "--output",
            tmp_path / "out",
            "--removed",
            tmp_path / "r.tsv",
            "--report",
            tmp_path / "a.html",
            "-q",
        )
    )
    check_page(tmp_path / "a.html", texts, "removed")
    # The same page from the files the run wrote, by rsimhash report.
    ok(run_cli("report", "--input", top, "--removed", tmp_path / "r.tsv", "--output", tmp_path / "b.html", "-q"))
    check_page(tmp_path / "b.html", texts, "removed")


def test_a_sharded_cluster_and_find_all_have_reports(tmp_path):
    top, texts = crawl(tmp_path)
    ok(run_cli("cluster", "--input", top, "--output", tmp_path / "c.tsv", "--report", tmp_path / "c.html", "-q"))
    check_page(tmp_path / "c.html", texts, "in a cluster")
    ok(run_cli("find-all", "--input", f"{top}/*.jsonl", "--input", top / "x", "--output", tmp_path / "p.tsv", "-q"))
    ok(
        run_cli(
            "report",
            "--input",
            f"{top}/*.jsonl",
            "--input",
            top / "x",
            "--pairs",
            tmp_path / "p.tsv",
            "--output",
            tmp_path / "p.html",
        )
    )
    doc = parse((tmp_path / "p.html").read_bytes())
    assert numbers(doc)["records"] == "180"
    shown = pairs(doc)
    assert shown and all(rid in texts for p in shown for rid in p["ids"])


@pytest.mark.parametrize("form", ["dir", "glob", "repeated"])
def test_fingerprint_takes_shards_as_dedup_does(tmp_path, form):
    top, texts = crawl(tmp_path)
    values = {
        "dir": ["--input", str(top)],
        "glob": ["--input", f"{top}/**/*.jsonl"],
        "repeated": ["--input", str(top / "p0.jsonl"), "--input", str(top / "p1.jsonl"), "--input", str(top / "x")],
    }[form]
    ok(run_cli("fingerprint", *values, "--output", tmp_path / "f.tsv", "-q"))
    rows = read_tsv((tmp_path / "f.tsv").read_bytes())[1:]
    assert len(rows) == 180
    import rsimhash

    # In shard order (p0, p1, x/p2), each line's fingerprint; line ids as SHARD:LINE.
    assert [h for _, h in rows] == [str(rsimhash.fingerprint(t)) for t in texts.values()]
    assert len({rid for rid, _ in rows}) == 180
    assert [rid.rsplit(":", 1)[1] for rid, _ in rows] == [str(n) for _ in range(3) for n in range(1, 61)]


def test_tune_index_and_report_take_directories(tmp_path):
    top, texts = crawl(tmp_path, ids=True)
    tune = ok(run_cli("tune", "--input", top, "--sample", "100"))
    assert "rsimhash tune: 100 documents measured" in tune.stderr.decode()
    ok(run_cli("index", "build", "--input", top, "--output", tmp_path / "i.rsh", "-q"))
    ok(run_cli("index", "query", tmp_path / "i.rsh", "--input", f"{top}/*.jsonl", "--output", tmp_path / "q.tsv", "-q"))
    rows = read_tsv((tmp_path / "q.tsv").read_bytes())[1:]
    assert {r[0] for r in rows} == {k.split(":", 1)[1] for k in texts if not k.startswith("x/")}
