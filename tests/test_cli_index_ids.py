"""Index files made by the command line keep the records' string ids in the
file itself (issue 38, item 6): ``rsimhash index build`` on URL-keyed
records writes one file that ``rsimhash.Index.load`` reads with ``query``
answering the URLs, ``index add`` keeps it so, and files of the ids-file
era (``IDX`` and ``IDX.ids``, ``tests/data/golden_cli_v1.rsh``) still work
for every action and for ``dedup --against``. In-process runs: fast."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil

import numpy as np
import pytest

rsimhash = pytest.importorskip("rsimhash")
from rsimhash.cli import main  # noqa: E402

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data")
_spec = importlib.util.spec_from_file_location("make_golden_cli", os.path.join(DATA, "make_golden_cli.py"))
assert _spec is not None and _spec.loader is not None
golden = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(golden)

RECORDS = golden.records()
FPS = rsimhash.fingerprints([r["text"] for r in RECORDS])


def cli(capsys, *args) -> "tuple[int, str, str]":
    code = main([os.fspath(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


def write(path, records) -> None:
    path.write_bytes(golden.jsonl(records))


def test_build_keeps_string_ids_in_the_file(tmp_path, capsys):
    write(tmp_path / "a.jsonl", RECORDS[:40])
    idx = tmp_path / "corpus.rsh"
    assert cli(capsys, "index", "build", "-i", tmp_path / "a.jsonl", "-o", idx)[0] == 0
    assert sorted(os.listdir(tmp_path)) == ["a.jsonl", "corpus.rsh"], "one file: no ids file beside it"
    index = rsimhash.Index.load(idx)
    assert index.info()["format_version"] == 2 and index.info()["keys"] == "str"
    assert index.metadata == {"mode": "words", "width": "3"}
    assert index.query(int(FPS[7]), k=0) == [(RECORDS[7]["id"], 0)]
    fps, ids = index.items()
    assert ids.tolist() == [r["id"] for r in RECORDS[:40]] and fps.tolist() == FPS[:40].tolist()
    # The command line writes the bytes of the golden version-2 file for the same records.
    write(tmp_path / "all.jsonl", RECORDS)
    assert cli(capsys, "index", "build", "-i", tmp_path / "all.jsonl", "-o", tmp_path / "all.rsh")[0] == 0
    with open(golden.path(2), "rb") as f:
        assert (tmp_path / "all.rsh").read_bytes() == f.read()


def test_add_query_info_verify_keep_string_ids(tmp_path, capsys):
    write(tmp_path / "a.jsonl", RECORDS[:40])
    write(tmp_path / "b.jsonl", RECORDS[40:])
    idx = tmp_path / "corpus.rsh"
    assert cli(capsys, "index", "build", "-i", tmp_path / "a.jsonl", "-o", idx, "--mode", "chars", "--width", "5")[0] == 0
    assert cli(capsys, "index", "add", idx, "-i", tmp_path / "b.jsonl")[0] == 0
    assert sorted(os.listdir(tmp_path)) == ["a.jsonl", "b.jsonl", "corpus.rsh"]
    index = rsimhash.Index.load(idx, mmap=False)
    assert len(index) == 60 and index.metadata == {"mode": "chars", "width": "5"}
    fp = rsimhash.fingerprint(RECORDS[55]["text"], mode="chars", width=5)
    assert (RECORDS[55]["id"], 0) in index.query(fp)
    # An id stored already: refused (naming it), or skipped.
    code, _, err = cli(capsys, "index", "add", idx, "-i", tmp_path / "b.jsonl")
    assert code == 1 and RECORDS[40]["id"] in err and "--skip-existing" in err
    code, _, err = cli(capsys, "index", "add", idx, "-i", tmp_path / "b.jsonl", "--skip-existing")
    assert code == 0 and "20 skipped" in err and len(rsimhash.Index.load(idx)) == 60
    # Settings recorded at build time: a contradicting flag is refused.
    code, _, err = cli(capsys, "index", "query", idx, "-i", tmp_path / "b.jsonl", "--mode", "words")
    assert code == 2 and "recorded at build time" in err
    code, out, _ = cli(capsys, "index", "query", idx, "-i", tmp_path / "b.jsonl", "-k", "0")
    rows = [line.split("\t") for line in out.splitlines()]
    assert rows[0] == ["id", "matched_id", "distance"]
    assert all([r["id"], r["id"], "0"] in rows[1:] for r in RECORDS[40:])
    code, out, _ = cli(capsys, "index", "info", idx, "--json")
    facts = json.loads(out)
    assert (facts["fingerprint_mode"], facts["fingerprint_width"], facts["ids_file"], facts["keys"]) == ("chars", 5, None, "str")
    code, out, _ = cli(capsys, "index", "verify", idx)
    assert code == 0 and "60 string ids" in out


def test_verify_refuses_an_index_file_whose_ids_were_changed(tmp_path, capsys):
    idx = tmp_path / "c.rsh"
    shutil.copy(golden.path(2), idx)
    data = bytearray(idx.read_bytes())
    at = data.index(b"doc/007")
    data[at : at + 7] = b"doc/999"
    idx.write_bytes(bytes(data))
    code, out, err = cli(capsys, "index", "verify", idx)
    assert code == 1 and "checksum" in err and out == ""


def test_ids_file_era_files_still_work(tmp_path, capsys):
    """``golden_cli_v1.rsh`` and its ``.ids``: the bytes ``index build`` made before."""
    idx = tmp_path / "old.rsh"
    shutil.copy(golden.path(1), idx)
    shutil.copy(golden.path(1) + ".ids", tmp_path / "old.rsh.ids")
    write(tmp_path / "q.jsonl", RECORDS[5:7])
    code, out, _ = cli(capsys, "index", "query", idx, "-i", tmp_path / "q.jsonl", "-k", "0")
    assert code == 0 and out.splitlines()[1:] == [f"{r['id']}\t{r['id']}\t0" for r in RECORDS[5:7]]
    code, out, _ = cli(capsys, "index", "verify", idx)
    assert code == 0 and "all 60 ids of" in out
    code, out, _ = cli(capsys, "index", "info", idx, "--json")
    assert json.loads(out)["ids_file"].endswith("old.rsh.ids") and json.loads(out)["fingerprint_width"] == 3
    # dedup --against an old pair: its ids and settings read from the ids file.
    write(tmp_path / "new.jsonl", RECORDS[:3] + [{"id": "fresh", "text": "a text unlike any other at all here"}])
    code, _, err = cli(
        capsys,
        "dedup",
        "-i",
        tmp_path / "new.jsonl",
        "-o",
        tmp_path / "kept.jsonl",
        "--removed",
        tmp_path / "r.tsv",
        "--against",
        idx,
    )
    assert code == 0, err
    assert [json.loads(line)["id"] for line in (tmp_path / "kept.jsonl").read_text().splitlines()] == ["fresh"]
    code, _, err = cli(
        capsys, "dedup", "-i", tmp_path / "new.jsonl", "-o", tmp_path / "k2.jsonl", "--against", idx, "--mode", "chars"
    )
    assert code == 2 and "--mode words --window 3" in err
    # add keeps an old pair a pair, the ids in the ids file.
    write(tmp_path / "more.jsonl", [{"id": "https://example.org/new", "text": "one more text to add to the index"}])
    assert cli(capsys, "index", "add", idx, "-i", tmp_path / "more.jsonl")[0] == 0
    code, out, _ = cli(capsys, "index", "verify", idx)
    assert code == 0 and "all 61 ids of" in out
    assert b"https://example.org/new" in (tmp_path / "old.rsh.ids").read_bytes()


def test_dedup_against_a_new_index_file(tmp_path, capsys):
    idx = tmp_path / "c.rsh"
    shutil.copy(golden.path(2), idx)
    write(tmp_path / "new.jsonl", RECORDS[:3] + [{"id": "fresh", "text": "a text unlike any other at all here"}])
    code, _, err = cli(
        capsys,
        "dedup",
        "-i",
        tmp_path / "new.jsonl",
        "-o",
        tmp_path / "kept.jsonl",
        "--removed",
        tmp_path / "r.tsv",
        "--against",
        idx,
    )
    assert code == 0, err
    assert [json.loads(line)["id"] for line in (tmp_path / "kept.jsonl").read_text().splitlines()] == ["fresh"]
    assert RECORDS[0]["id"] in (tmp_path / "r.tsv").read_text()
    code, _, err = cli(
        capsys, "dedup", "-i", tmp_path / "new.jsonl", "-o", tmp_path / "k2.jsonl", "--against", idx, "--width", "4"
    )
    assert code == 2 and "--mode words --window 3" in err


def test_build_over_an_old_pair_removes_its_ids_file(tmp_path, capsys):
    idx = tmp_path / "old.rsh"
    shutil.copy(golden.path(1), idx)
    shutil.copy(golden.path(1) + ".ids", tmp_path / "old.rsh.ids")
    write(tmp_path / "a.jsonl", RECORDS[:10])
    assert cli(capsys, "index", "build", "-i", tmp_path / "a.jsonl", "-o", idx)[0] == 0
    assert not (tmp_path / "old.rsh.ids").exists()
    assert rsimhash.Index.load(idx).items()[1].tolist() == [r["id"] for r in RECORDS[:10]]


def test_hash_built_index_keeps_its_ids_and_refuses_texts(tmp_path, capsys):
    (tmp_path / "h.tsv").write_text("id\thash\n" + "".join(f"{r['id']}\t{int(f)}\n" for r, f in zip(RECORDS[:5], FPS)))
    idx = tmp_path / "h.rsh"
    assert cli(capsys, "index", "build", "-i", tmp_path / "h.tsv", "--format", "hash", "-o", idx)[0] == 0
    index = rsimhash.Index.load(idx)
    assert index.metadata == {"mode": "hashes"} and index.query(int(FPS[2]), k=0) == [(RECORDS[2]["id"], 0)]
    write(tmp_path / "t.jsonl", RECORDS[:2])
    code, _, err = cli(capsys, "dedup", "-i", tmp_path / "t.jsonl", "-o", tmp_path / "k.jsonl", "--against", idx)
    assert code == 2 and "built from fingerprints" in err
    assert np.array_equal(index.items()[0], FPS[:5])
