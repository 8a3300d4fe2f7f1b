"""``rsimhash index build|add|query|info|verify`` end to end (subprocess):
query output equal to ``Index.query_batch`` with the records' own ids,
kept in the index file (and, for files made before it kept them, in the
ids file, kept in step by add), damaged or mismatched files refused."""

from __future__ import annotations

import json
import os
import sys
import zlib

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

from cli_helpers import (  # noqa: E402
    assert_one_error,
    build_ids_era,
    fingerprints_of,
    leftovers,
    make_records,
    ok,
    read_tsv,
    run_cli,
    stderr_lines,
    write_jsonl,
)

rsimhash = pytest.importorskip("rsimhash")


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    records = make_records(360, seed=6, string_ids=True)
    directory = tmp_path_factory.mktemp("index")
    base, more, probe = records[:200], records[200:300], records[300:]
    for name, part in (("base", base), ("more", more), ("probe", probe)):
        write_jsonl(directory / f"{name}.jsonl", part)
    return directory, base, more, probe


def expected_matches(stored, queries, k, **options):
    index = rsimhash.Index(8)
    index.add(fingerprints_of(stored, **options))
    qi, ids, dist = index.query_batch(fingerprints_of(queries, **options), k=k)
    return [[str(queries[q]["id"]), str(stored[i]["id"]), str(d)] for q, i, d in zip(qi.tolist(), ids.tolist(), dist.tolist())]


def test_build_query_add_info_verify(data, tmp_path):
    directory, base, more, probe = data
    idx = tmp_path / "corpus.rsh"
    proc = ok(
        run_cli(
            "index",
            "build",
            "--input",
            directory / "base.jsonl",
            "--output",
            idx,
            "--distance",
            "8",
            "--mode",
            "chars",
            "--width",
            "5",
        )
    )
    assert "200 records read" in stderr_lines(proc)[0]
    assert idx.exists() and not (tmp_path / "corpus.rsh.ids").exists() and leftovers(tmp_path) == []

    # query: the fingerprint settings recorded at build time are used
    out = tmp_path / "matches.tsv"
    ok(run_cli("index", "query", idx, "--input", directory / "probe.jsonl", "--output", out, "-k", "6", "-q"))
    rows = read_tsv(out.read_bytes())
    assert rows[0] == ["id", "matched_id", "distance"]
    expected = expected_matches(base, probe, 6, mode="chars", width=5)
    assert len(expected) > 5
    assert rows[1:] == expected
    # flags may repeat the recorded settings, not contradict them
    ok(run_cli("index", "query", idx, "--input", directory / "probe.jsonl", "--mode", "chars", "-q"))
    proc = run_cli("index", "query", idx, "--input", directory / "probe.jsonl", "--mode", "words")
    assert_one_error(proc, 2, "--mode words", "chars")

    # add, then query sees both parts
    proc = ok(run_cli("index", "add", idx, "--input", directory / "more.jsonl"))
    assert "100 records added" in stderr_lines(proc)[0] and "300 items" in stderr_lines(proc)[0]
    proc = ok(run_cli("index", "query", idx, "--input", directory / "probe.jsonl", "-q"))
    assert read_tsv(proc.stdout)[1:] == expected_matches(base + more, probe, 8, mode="chars", width=5)

    # info
    proc = ok(run_cli("index", "info", idx, "--json"))
    facts = json.loads(proc.stdout)
    assert facts["items"] == 300 and facts["k"] == 8 and facts["spec_version"] == rsimhash.SPEC_VERSION
    assert facts["fingerprint_mode"] == "chars" and facts["fingerprint_width"] == 5
    assert facts["file_bytes"] == idx.stat().st_size and facts["tables"] >= 1
    text = ok(run_cli("index", "info", idx)).stdout.decode()
    for label in ("items", "k", "design", "file bytes per item", "fingerprint spec version", "file format version"):
        assert label in text

    # verify
    proc = ok(run_cli("index", "verify", idx))
    assert proc.stdout.decode().startswith(f"{idx}: ok: 300 items")


def test_build_from_hashes_and_int_ids(data, tmp_path):
    directory, base, more, probe = data
    records = make_records(80, seed=9)  # int ids
    fps = fingerprints_of(records)
    tsv = tmp_path / "h.tsv"
    tsv.write_text("id\thash\n" + "".join(f"{r['id']}\t{int(f)}\n" for r, f in zip(records, fps)))
    idx = tmp_path / "h.rsh"
    ok(run_cli("index", "build", "-i", tsv, "-o", idx, "-q"))
    # probing with texts uses the default settings (the index was built from hashes)
    src = tmp_path / "q.jsonl"
    write_jsonl(src, records[:30])
    proc = ok(run_cli("index", "query", idx, "-i", src, "-q"))
    rows = read_tsv(proc.stdout)[1:]
    assert rows == expected_matches(records, records[:30], 3)
    assert all([str(r["id"]), str(r["id"]), "0"] in rows for r in records[:30])  # each finds itself


def test_query_distance_beyond_index_k(data, tmp_path):
    directory = data[0]
    idx = tmp_path / "x.rsh"
    ok(run_cli("index", "build", "-i", directory / "base.jsonl", "-o", idx, "-k", "2", "-q"))
    proc = run_cli("index", "query", idx, "-i", directory / "probe.jsonl", "-k", "3", "-o", tmp_path / "m.tsv")
    assert_one_error(proc, 2, "--distance 3", "k=2")
    assert not (tmp_path / "m.tsv").exists()


def test_damaged_index_and_foreign_ids_file(data, tmp_path):
    """Files made before index files kept ids: the index and its ids file."""
    directory = data[0]
    idx = tmp_path / "a.rsh"
    build_ids_era(directory / "base.jsonl", idx)
    # an ids file of another index: refused, not wrong ids
    other = tmp_path / "b.rsh"
    build_ids_era(directory / "more.jsonl", other)
    ids_a = (tmp_path / "a.rsh.ids").read_bytes()
    (tmp_path / "b.rsh.ids").write_bytes(ids_a)  # 200 lines for an index of 100 items
    proc = run_cli("index", "query", other, "-i", directory / "probe.jsonl")
    assert_one_error(proc, 1, "b.rsh.ids:2", "does not belong to")
    assert_one_error(run_cli("index", "verify", other), 1, "does not belong to")
    assert_one_error(run_cli("index", "add", other, "-i", directory / "probe.jsonl"), 1, "does not belong to")
    # an ids file with extra lines (left by an add that crashed before saving the index) is fine
    from rsimhash.cli.index_ids import ids_end

    body = ids_a[: ids_a.rindex(b"# rsimhash index ids end")] + b"123\textra\n"
    (tmp_path / "a.rsh.ids").write_bytes(body + ids_end(body.count(b"\n") - 1, zlib.crc32(body)))
    ok(run_cli("index", "verify", idx))
    # a short ids file is refused
    (tmp_path / "a.rsh.ids").write_bytes(b"".join(ids_a.splitlines(keepends=True)[:50]))
    assert_one_error(run_cli("index", "verify", idx), 1, "a.rsh.ids", "cut short")
    (tmp_path / "a.rsh.ids").write_bytes(ids_a)
    # a flipped byte in the index file: every command refuses it, verify says so with exit 1
    raw = bytearray(idx.read_bytes())
    raw[len(raw) // 2] ^= 0x40
    idx.write_bytes(bytes(raw))
    line = assert_one_error(run_cli("index", "verify", idx), 1)
    assert str(idx) in line
    assert_one_error(run_cli("index", "info", idx), 1, str(idx))
    assert_one_error(run_cli("index", "query", idx, "-i", directory / "probe.jsonl"), 1, str(idx))
    # a missing index file, a missing ids file
    assert_one_error(run_cli("index", "info", tmp_path / "none.rsh"), 1, "none.rsh")
    build_ids_era(directory / "base.jsonl", idx)
    os.unlink(tmp_path / "a.rsh.ids")
    assert_one_error(run_cli("index", "add", idx, "-i", directory / "more.jsonl"), 1, "a.rsh.ids", "missing")


def test_index_add_failure_changes_nothing(data, tmp_path):
    """A bad line in the input of add leaves the index file (and the ids file
    of a file made before index files kept ids) as it was."""
    directory = data[0]
    idx, old = tmp_path / "c.rsh", tmp_path / "old.rsh"
    ok(run_cli("index", "build", "-i", directory / "base.jsonl", "-o", idx, "-q"))
    build_ids_era(directory / "base.jsonl", old)
    before = (idx.read_bytes(), old.read_bytes(), (tmp_path / "old.rsh.ids").read_bytes())
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes((directory / "more.jsonl").read_bytes() + b'{"id": "x", "text": 3}\n')
    assert_one_error(run_cli("index", "add", idx, "-i", bad), 1, f"{bad}:101", '"text" must be a string')
    assert_one_error(run_cli("index", "add", old, "-i", bad), 1, f"{bad}:101", '"text" must be a string')
    assert (idx.read_bytes(), old.read_bytes(), (tmp_path / "old.rsh.ids").read_bytes()) == before
    assert leftovers(tmp_path) == []


def test_index_saved_from_python(data, tmp_path):
    """An index file written by Index.save has no ids file: query names its
    own uint64 ids, info and verify work, add refuses."""
    directory, base, more, probe = data
    index = rsimhash.Index(3)
    fps = fingerprints_of(base)
    index.add(fps, ids=[10_000 + i for i in range(len(base))])
    idx = tmp_path / "py.rsh"
    index.save(idx)
    proc = ok(run_cli("index", "query", idx, "-i", directory / "base.jsonl", "-q"))
    rows = read_tsv(proc.stdout)[1:]
    assert [base[0]["id"], "10000", "0"] in rows and len(rows) >= len(base)
    assert json.loads(ok(run_cli("index", "info", idx, "--json")).stdout)["ids_file"] is None
    assert ok(run_cli("index", "verify", idx)).stdout.decode().strip().endswith("no ids file")
    assert_one_error(run_cli("index", "add", idx, "-i", directory / "more.jsonl"), 1, "py.rsh.ids", "missing")
