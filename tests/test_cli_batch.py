"""The command line on inputs that do not fit its memory limit: ``dedup``,
``cluster`` and ``find-all`` through the batch engine (forced here with a
tiny ``--memory-limit``) write byte for byte what the in-memory path writes,
in every input format, from stdin too, and leave no work files behind; bad
``--memory-limit`` and ``--workdir`` values are one error line."""

from __future__ import annotations

import gzip
import json
import os
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

from cli_helpers import assert_one_error, make_records, ok, run_cli, stderr_lines, write_jsonl  # noqa: E402

rsimhash = pytest.importorskip("rsimhash")

TINY = ("--memory-limit", "1KiB")


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    """600 records with planted near-duplicates, string ids, one bad line."""
    d = tmp_path_factory.mktemp("batchcli")
    records = make_records(600, seed=4, string_ids=True)
    write_jsonl(d / "c.jsonl", records)
    lines = (d / "c.jsonl").read_bytes().splitlines(keepends=True)
    (d / "bad.jsonl").write_bytes(b"".join(lines[:300] + [b'{"id": "x", "text": \n'] + lines[300:]))
    (d / "c.jsonl.gz").write_bytes(gzip.compress((d / "c.jsonl").read_bytes()))
    return d, records


def both(*args, input=None, cwd=None):
    """The outputs of a command on the in-memory path and on the batch path."""
    a = ok(run_cli(*args, input=input, cwd=cwd))
    b = ok(run_cli(*args, *TINY, input=input, cwd=cwd))
    assert "batch engine" not in a.stderr.decode() and "batch engine" in b.stderr.decode()
    return a, b


def same_files(tmp, names):
    for name in names:
        a, b = (tmp / "a" / name).read_bytes(), (tmp / "b" / name).read_bytes()
        assert a == b, name
        assert a, f"{name} is empty: the test compares nothing"


@pytest.mark.parametrize("source", ["c.jsonl", "c.jsonl.gz"])
def test_dedup_writes_the_same_records(corpus, tmp_path, source):
    d, _ = corpus
    for side, extra in (("a", ()), ("b", TINY)):
        (tmp_path / side).mkdir()
        p = ok(
            run_cli(
                "dedup",
                "-i",
                d / source,
                "-o",
                tmp_path / side / "kept.jsonl",
                "--removed",
                tmp_path / side / "removed.tsv",
                *extra,
            )
        )
        assert ("batch engine" in p.stderr.decode()) == bool(extra)
    same_files(tmp_path, ["kept.jsonl", "removed.tsv"])
    assert len((tmp_path / "a" / "removed.tsv").read_text().splitlines()) > 20


def test_dedup_from_stdin_and_other_formats(corpus, tmp_path):
    d, records = corpus
    data = (d / "c.jsonl").read_bytes()
    a, b = both("dedup", "-i", "-", "-o", "-", input=data)
    assert a.stdout == b.stdout and len(a.stdout) < len(data)
    fps = rsimhash.fingerprints([r["text"] for r in records])
    tsv = "id\thash\n" + "".join(f"{r['id']}\t{f}\n" for r, f in zip(records, fps.tolist()))
    (tmp_path / "h.tsv").write_text(tsv)
    a, b = both("dedup", "-i", tmp_path / "h.tsv", "-o", "-")
    assert a.stdout == b.stdout and a.stdout.startswith(b"id\thash\n")
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    pq.write_table(
        pa.table({"id": [r["id"] for r in records], "text": [r["text"] for r in records]}),
        tmp_path / "c.parquet",
        row_group_size=128,
    )
    for side, extra in (("a", ()), ("b", TINY)):
        ok(run_cli("dedup", "-i", tmp_path / "c.parquet", "-o", tmp_path / f"{side}.parquet", *extra))
    assert pq.read_table(tmp_path / "a.parquet").equals(pq.read_table(tmp_path / "b.parquet"))


def test_bad_lines_are_skipped_and_reported_once(corpus, tmp_path):
    d, _ = corpus
    a, b = both("dedup", "-i", d / "bad.jsonl", "-o", "-", "--skip-bad-lines")
    assert a.stdout == b.stdout
    for p in (a, b):
        warnings = [line for line in stderr_lines(p) if "warning" in line]
        assert len(warnings) == 1 and "bad.jsonl:301" in warnings[0], warnings
        assert "1 bad line skipped" in stderr_lines(p)[-1]
    assert_one_error(run_cli("dedup", "-i", d / "bad.jsonl", "-o", tmp_path / "k.jsonl", *TINY), 1, "bad.jsonl:301")
    assert not os.path.exists(tmp_path / "k.jsonl")


@pytest.mark.parametrize("flags", [(), ("--all",), ("--method", "leader"), ("--method", "leader", "--all"), ("--sample", "400")])
def test_cluster_writes_the_same_clusters(corpus, flags):
    d, _ = corpus
    a, b = both("cluster", "-i", d / "c.jsonl", "-o", "-", *flags)
    assert a.stdout == b.stdout and a.stdout.count(b"\n") > 10


def test_find_all_writes_the_same_pairs(corpus, tmp_path):
    d, records = corpus
    fps = rsimhash.fingerprints([r["text"] for r in records]).tolist()
    (tmp_path / "h.txt").write_text("\n".join(str(f) for f in fps + fps[:50] + fps[:5]) + "\n")
    a, b = both("find-all", "-i", tmp_path / "h.txt", "-o", "-")
    assert a.stdout == b.stdout
    pairs = [json.loads(line) for line in a.stdout.decode().splitlines()]
    assert any(x == y for x, y in pairs) and any(x != y for x, y in pairs)
    assert f"({len(set(fps)):,} distinct)" in stderr_lines(b)[-1]


def test_work_directories(corpus, tmp_path):
    d, _ = corpus
    work = tmp_path / "work"
    work.mkdir()
    # Files of the user's with the names the commands and the engine use.
    mine = ["notes.tmp", "experiment.run", "t000.done", "t001-000.pairs", "job.txt", "fingerprints.npy"]
    for name in mine:
        (work / name).write_text("x")
    p = ok(run_cli("dedup", "-i", d / "c.jsonl", "-o", tmp_path / "k.jsonl", "--workdir", work, *TINY))
    assert str(work) in p.stderr.decode()
    assert sorted(os.listdir(work)) == sorted(mine), "only the command's own files are removed, the user's stay"
    assert all((work / name).read_text() == "x" for name in mine)
    made = tmp_path / "made"
    ok(run_cli("dedup", "-i", d / "c.jsonl", "-o", tmp_path / "k.jsonl", "--workdir", made, *TINY))
    assert not made.exists(), "a --workdir the command made is removed again when empty"
    ok(run_cli("cluster", "-i", d / "c.jsonl", "-o", tmp_path / "c.tsv", *TINY))
    assert sorted(os.listdir(tmp_path)) == ["c.tsv", "k.jsonl", "work"], "a temporary work directory is removed"
    assert_one_error(
        run_cli("dedup", "-i", d / "c.jsonl", "-o", tmp_path / "x.jsonl", "--workdir", d / "c.jsonl" / "sub"),
        1,
        "--workdir",
        "cannot be written",
    )
    for bad in ("lots", "0", "-5G"):
        assert_one_error(run_cli("find-all", "-i", d / "c.jsonl", "--memory-limit", bad), 2, "--memory-limit")
    assert not os.path.exists(tmp_path / "x.jsonl")
