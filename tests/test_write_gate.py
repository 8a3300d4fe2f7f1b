"""The write gate (``rsimhash._gate``): no run touches what it did not
make, and a rerun of a finished run never destroys its result.

Each test reproduces a layout that once slipped through (issue 37), run as
a user would run it: the command line in a child process, from a working
directory of the test's own.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys

import numpy as np
import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)
from cli_helpers import assert_one_error, make_records, ok, read_tsv, run_cli, write_jsonl  # noqa: E402
from rsimhash import _gate  # noqa: E402


def snapshot(top) -> dict:
    """Every file under ``top`` (not following links): relative name -> sha256
    of its bytes, or the target of a link. A run's lock file, which names the
    process that last held it, is not the user's."""
    found = {}
    for folder, dirs, files in os.walk(top):
        for name in dirs + [f for f in files if f != _gate.LOCK]:
            path = os.path.join(folder, name)
            rel = os.path.relpath(path, top)
            if os.path.islink(path):
                found[rel] = "-> " + os.readlink(path)
            elif name in files:
                with open(path, "rb") as f:
                    found[rel] = hashlib.sha256(f.read()).hexdigest()
    return found


def ours(name: str) -> bool:
    """Files rsimhash keeps for itself beside outputs: lock and manifests."""
    return name in (_gate.LOCK, ".rsimhash-shards.json")


def days(tmp_path, n=3, size=60, seed=5):
    records = make_records(n * size, seed=seed, dup_share=0.5)
    paths = []
    for d in range(n):
        path = tmp_path / f"day{d}.jsonl"
        write_jsonl(path, records[d * size : (d + 1) * size])
        paths.append(path)
    return paths


# -- 1. a rerun of a finished incremental run ------------------------------------------


def test_rerun_of_an_incremental_run_changes_nothing(tmp_path):
    day1, day2, _ = days(tmp_path)
    store = tmp_path / "store"
    ok(run_cli("dedup", "--input", day1, "--output", tmp_path / "kept1.jsonl", "--save-fingerprints", store, "-q"))
    day2_run = [
        "dedup",
        "--input",
        day2,
        "--output",
        tmp_path / "kept2.jsonl",
        "--removed",
        tmp_path / "removed2.tsv",
        "--against",
        store,
        "--save-fingerprints",
        store,
    ]
    ok(run_cli(*day2_run, "-q"))
    first = snapshot(tmp_path)
    assert len(first["kept2.jsonl"]) and (tmp_path / "kept2.jsonl").stat().st_size > 0
    again = ok(run_cli(*day2_run))
    assert snapshot(tmp_path) == first  # outputs byte for byte, no third part
    assert "already done" in again.stderr.decode()
    rows = read_tsv((tmp_path / "removed2.tsv").read_bytes())[1:]
    assert all(r[0] != r[1] for r in rows)  # no record a duplicate of itself


def test_rerun_of_a_sharded_incremental_run_changes_nothing(tmp_path):
    day1, _, _ = days(tmp_path)
    store = tmp_path / "store"
    ok(run_cli("dedup", "--input", day1, "--output", tmp_path / "kept1.jsonl", "--save-fingerprints", store, "-q"))
    shards = tmp_path / "day2"
    shards.mkdir()
    records = make_records(120, seed=9, dup_share=0.5)
    for i in range(3):
        write_jsonl(shards / f"part-{i}.jsonl", records[i * 40 : (i + 1) * 40])
    run = ["dedup", "--input", shards, "--output", tmp_path / "out", "--against", store, "--save-fingerprints", store, "-q"]
    ok(run_cli(*run))
    first = snapshot(tmp_path)
    assert all(first[f"out/part-{i}.jsonl"] for i in range(3))
    assert any((tmp_path / "out" / f"part-{i}.jsonl").stat().st_size for i in range(3))
    ok(run_cli(*run))
    assert snapshot(tmp_path) == first


def test_a_rerun_redoes_lost_outputs_against_the_store_as_it_was(tmp_path):
    day1, day2, _ = days(tmp_path)
    store = tmp_path / "store"
    ok(run_cli("dedup", "--input", day1, "--output", tmp_path / "kept1.jsonl", "--save-fingerprints", store, "-q"))
    run = ["dedup", "--input", day2, "--output", tmp_path / "kept2.jsonl", "--against", store, "--save-fingerprints", store]
    ok(run_cli(*run, "-q"))
    kept = (tmp_path / "kept2.jsonl").read_bytes()
    (tmp_path / "kept2.jsonl").unlink()
    ok(run_cli(*run, "-q"))
    assert (tmp_path / "kept2.jsonl").read_bytes() == kept
    assert len([n for n in os.listdir(store) if n.endswith(".npy")]) == 2


# -- 2, 3, 4. outputs outside --output DIR, inside an input, through links ------------------


def test_inputs_named_with_dot_dot_write_inside_the_output_directory(tmp_path):
    data, other, outroot = tmp_path / "data", tmp_path / "other", tmp_path / "outroot"
    (data / "sub").mkdir(parents=True)
    other.mkdir()
    outroot.mkdir()
    write_jsonl(data / "a.jsonl", make_records(20, seed=1))
    write_jsonl(other / "b.jsonl", make_records(20, seed=2))
    write_jsonl(outroot / "a.jsonl", make_records(5, seed=3))  # the user's, beside the output
    before = snapshot(outroot)
    ok(run_cli("dedup", "--input", "..", "--input", "../../other", "--output", outroot / "kept", "-q", cwd=data / "sub"))
    after = snapshot(outroot)
    assert {k: v for k, v in after.items() if not k.startswith("kept")} == before
    assert "kept/data/a.jsonl" in after and "kept/other/b.jsonl" in after


def test_a_glob_through_dot_dot_is_refused(tmp_path):
    (tmp_path / "in" / "x").mkdir(parents=True)
    (tmp_path / "src").mkdir()
    write_jsonl(tmp_path / "src" / "a.jsonl", make_records(10, seed=1))
    write_jsonl(tmp_path / "src" / "b.jsonl", make_records(10, seed=2))
    before = snapshot(tmp_path)
    proc = run_cli("dedup", "--input", "in/*/../../src/*.jsonl", "--output", "out/kept", "-q", cwd=tmp_path)
    assert_one_error(proc, 2, "outside the directory", "out/kept")
    assert snapshot(tmp_path) == before


def test_a_glob_that_matches_the_output_directory_is_refused(tmp_path):
    # The second run of the glob would read the first run's outputs as input:
    # the folder a glob reads from is an input folder, refused from the first run.
    data = tmp_path / "data"
    data.mkdir()
    for i in range(2):
        write_jsonl(data / f"{i}.jsonl", make_records(20, seed=i))
    before = snapshot(tmp_path)
    proc = run_cli("dedup", "--input", "data/*", "--output", "data/kept", "-q", cwd=tmp_path)
    assert_one_error(proc, 2, "--output data/kept", "lies inside the input directory")
    assert snapshot(tmp_path) == before
    ok(run_cli("dedup", "--input", "data/*", "--output", "kept", "-q", cwd=tmp_path))
    again = snapshot(tmp_path)
    ok(run_cli("dedup", "--input", "data/*", "--output", "kept", "-q", cwd=tmp_path))
    assert snapshot(tmp_path) == again


def test_an_input_linking_into_the_output_directory_is_refused(tmp_path):
    (tmp_path / "in").mkdir()
    (tmp_path / "out").mkdir()
    write_jsonl(tmp_path / "in" / "a.jsonl", make_records(20, seed=1))
    write_jsonl(tmp_path / "out" / "x.jsonl", make_records(20, seed=2))
    os.symlink("../out", tmp_path / "in" / "link")
    before = snapshot(tmp_path)
    proc = run_cli("dedup", "--input", "in", "--output", "out", "-q", cwd=tmp_path)
    assert_one_error(proc, 2, "out")
    assert snapshot(tmp_path) == before


def test_a_symlinked_folder_inside_the_output_directory_is_refused(tmp_path):
    for d in ("in/a", "in/b", "out"):
        (tmp_path / d).mkdir(parents=True)
    write_jsonl(tmp_path / "in" / "a" / "x.jsonl", make_records(20, seed=1))
    write_jsonl(tmp_path / "in" / "b" / "x.jsonl", make_records(20, seed=2))
    os.symlink("../in/a", tmp_path / "out" / "b")
    before = snapshot(tmp_path)
    proc = run_cli("dedup", "--input", "in", "--output", "out", "-q", cwd=tmp_path)
    assert_one_error(proc, 2, "symlink", "out/b")
    assert snapshot(tmp_path) == before


# -- 5. ageing out a store part ----------------------------------------------------------


def test_ageing_out_the_oldest_part_never_overwrites_the_newest(tmp_path):
    store = tmp_path / "store"
    for i, day in enumerate(days(tmp_path)):
        ok(run_cli("dedup", "--input", day, "--output", tmp_path / f"k{i}.jsonl", "--save-fingerprints", store, "-q"))
        if i == 1:
            newest = {n: (store / n).read_bytes() for n in os.listdir(store) if n.startswith("part-00001.")}
            for n in os.listdir(store):
                if n.startswith("part-00000."):
                    (store / n).unlink()  # aged out
    assert {n: (store / n).read_bytes() for n in newest} == newest
    assert (store / "part-00002.npy").exists()


# -- 6. an output that names the input ----------------------------------------------------


@pytest.mark.parametrize(
    "command",
    [
        ["dedup", "--output", "k.jsonl", "--report", "c.jsonl"],
        ["dedup", "--output", "k.jsonl", "--removed", "c.jsonl"],
        ["dedup", "--output", "c.jsonl"],
        ["dedup", "--output", "./sub/../c.jsonl"],
        ["dedup", "--output", "hard.jsonl"],
        ["cluster", "--output", "c.jsonl"],
        ["fingerprint", "--output", "c.jsonl"],
        ["find-all", "--output", "c.jsonl"],
        ["index", "build", "--output", "c.jsonl"],
    ],
)
def test_an_output_that_is_the_input_is_refused(tmp_path, command):
    (tmp_path / "sub").mkdir()
    write_jsonl(tmp_path / "c.jsonl", make_records(20, seed=1))
    os.link(tmp_path / "c.jsonl", tmp_path / "hard.jsonl")
    before = snapshot(tmp_path)
    at = 2 if command[0] == "index" else 1
    proc = run_cli(*command[:at], "--input", "c.jsonl", *command[at:], "-q", cwd=tmp_path)
    assert_one_error(proc, 2, "is the input")
    assert snapshot(tmp_path) == before


# -- 7. two runs at once ---------------------------------------------------------------------


def test_a_second_run_into_a_locked_output_directory_is_refused(tmp_path):
    shards = tmp_path / "in"
    shards.mkdir()
    for i in range(2):
        write_jsonl(shards / f"{i}.jsonl", make_records(20, seed=i))
    out = tmp_path / "out"
    with _gate.lock(str(out)):  # as a run in progress holds it
        proc = run_cli("dedup", "--input", shards, "--output", out, "-q")
    assert_one_error(proc, 2, "another rsimhash run", f"process {os.getpid()}")
    assert [n for n in os.listdir(out) if not ours(n)] == []
    ok(run_cli("dedup", "--input", shards, "--output", out, "-q"))  # the lock went with its holder


def test_a_second_run_into_a_locked_store_is_refused(tmp_path):
    day1 = days(tmp_path, n=1)[0]
    store = tmp_path / "store"
    with _gate.lock(str(store)):
        proc = run_cli("dedup", "--input", day1, "--output", tmp_path / "k.jsonl", "--save-fingerprints", store, "-q")
    assert_one_error(proc, 2, "another rsimhash run")
    assert not (tmp_path / "k.jsonl").exists()


# -- 8. errors that were tracebacks ------------------------------------------------------------


def test_an_id_utf8_cannot_hold_is_one_line(tmp_path):
    path = tmp_path / "c.jsonl"
    path.write_bytes(b'{"id": "ok", "text": "one two three four"}\n{"id": "bad\\ud800", "text": "one two three four"}\n')
    for command in (
        ["dedup", "--output", tmp_path / "k.jsonl", "--removed", tmp_path / "r.tsv"],
        ["fingerprint", "--output", tmp_path / "f.tsv"],
        ["cluster", "--output", tmp_path / "c.tsv"],
        ["find-all", "--output", tmp_path / "p.tsv"],
        ["index", "build", "--output", tmp_path / "i.rsh"],
    ):
        at = 2 if command[0] == "index" else 1
        proc = run_cli(*command[:at], "--input", path, *command[at:], "-q")
        assert_one_error(proc, 1, "UTF-8", "bad")
    assert sorted(os.listdir(tmp_path)) == ["c.jsonl"]


@pytest.mark.parametrize("char", ["\t", "\n"])
def test_a_shard_name_the_tsv_cannot_hold_is_one_line(tmp_path, char):
    shards = tmp_path / "in"
    shards.mkdir()
    write_jsonl(shards / f"a{char}b.jsonl", make_records(10, seed=1))
    write_jsonl(shards / "c.jsonl", make_records(10, seed=2))
    proc = run_cli("dedup", "--input", shards, "--output", tmp_path / "out", "--removed", tmp_path / "r.tsv", "-q")
    assert_one_error(proc, 1, "its name holds")


def _store(tmp_path):
    day1 = days(tmp_path, n=1)[0]
    store = tmp_path / "store"
    ok(run_cli("dedup", "--input", day1, "--output", tmp_path / "k.jsonl", "--save-fingerprints", store, "-q"))
    return store


@pytest.mark.parametrize(
    "damage, needle",
    [
        (lambda s: (s / "part-00000.ids").unlink(), "has no part-00000.ids"),
        (lambda s: (s / "part-00000.ids").write_bytes(b""), "do not belong together"),
        (lambda s: np.save(s / "part-00000.npy", np.zeros(3, dtype=np.float64)), "uint64"),
        (lambda s: np.save(s / "part-00000.npy", np.zeros(3, dtype=">u8")), "little-endian"),
        (lambda s: np.save(s / "part-00000.npy", np.zeros((2, 2), dtype=np.uint64)), "one-dimensional"),
        (lambda s: (s / "part-00000.npy").write_bytes((s / "part-00000.npy").read_bytes()[:-5]), "part-00000.npy"),
    ],
)
def test_a_damaged_store_part_is_one_line_naming_it(tmp_path, damage, needle):
    store = _store(tmp_path)
    damage(store)
    day2 = tmp_path / "day2.jsonl"
    write_jsonl(day2, make_records(20, seed=11))
    proc = run_cli("dedup", "--input", day2, "--output", tmp_path / "k2.jsonl", "--against", store, "-q")
    assert_one_error(proc, 1, needle, "part-00000")
    assert not (tmp_path / "k2.jsonl").exists()


@pytest.mark.parametrize("manifest", ['{"format": "rsimhash-shards", "version": 1, "finished": [1, 2]}', "[" * 100_000])
def test_a_damaged_shard_manifest_is_one_line(tmp_path, manifest):
    shards = tmp_path / "in"
    shards.mkdir()
    for i in range(2):
        write_jsonl(shards / f"{i}.jsonl", make_records(10, seed=i))
    out = tmp_path / "out"
    out.mkdir()
    (out / ".rsimhash-shards.json").write_text(manifest)
    proc = run_cli("dedup", "--input", shards, "--output", out, "-q")
    assert_one_error(proc, 1, ".rsimhash-shards.json", "remove it")


def test_a_huge_distance_in_a_removed_file_is_one_line(tmp_path):
    path = tmp_path / "c.jsonl"
    write_jsonl(path, make_records(10, seed=1))
    removed = tmp_path / "r.tsv"
    removed.write_text("id\tduplicate_of\tdistance\n1\t0\t99999999999999999999999\n")
    proc = run_cli("report", "--input", path, "--removed", removed, "--output", tmp_path / "r.html", "-q")
    assert_one_error(proc, 1, "99999999999999999999999")


def test_a_long_output_name_gets_a_temporary_name_that_fits(tmp_path):
    path = tmp_path / "c.jsonl"
    write_jsonl(path, make_records(20, seed=1))
    name = "k" * 244 + ".jsonl"  # 250 bytes: the longest a name may be is 255
    ok(run_cli("dedup", "--input", path, "--output", tmp_path / name, "--removed", tmp_path / ("r" * 246 + ".tsv"), "-q"))
    assert (tmp_path / name).stat().st_size > 0
    assert not [n for n in os.listdir(tmp_path) if n.endswith(".tmp")]


def test_a_manifest_that_cannot_be_written_names_its_path_and_leaves_nothing(tmp_path, monkeypatch):
    import errno

    from rsimhash import _files
    from rsimhash.cli import shard_out

    class Full:
        def __init__(self, path):
            self.path = path
            self.f = open(path, "xb")

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.f.close()

        def write(self, data):
            raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(_files, "create_new", Full)
    outputs = object.__new__(shard_out.ShardOutputs)
    outputs.directory, outputs.run, outputs.written, outputs.finished = str(tmp_path), "x", [], {}
    with pytest.raises(shard_out.InputError, match="rsimhash-shards.json: cannot write: No space left"):
        outputs._save()
    assert os.listdir(tmp_path) == []


# -- 9. reruns of the run's own files ---------------------------------------------------------


def test_removed_inside_the_output_directory_reruns(tmp_path):
    shards = tmp_path / "in"
    shards.mkdir()
    for i in range(2):
        write_jsonl(shards / f"{i}.jsonl", make_records(30, seed=i, dup_share=0.5))
    run = ["dedup", "--input", "in", "--output", "out", "--removed", "out/removed.tsv"]
    ok(run_cli(*run, "-q", cwd=tmp_path))
    first = snapshot(tmp_path)
    again = ok(run_cli(*run, cwd=tmp_path))
    assert snapshot(tmp_path) == first
    assert "resumed: 2 of 2 shards were already done" in again.stderr.decode()


def test_dot_among_several_inputs_reruns(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    write_jsonl(tmp_path / "a" / "x.jsonl", make_records(20, seed=1))
    write_jsonl(tmp_path / "b" / "y.jsonl", make_records(20, seed=2))
    run = ["dedup", "--input", ".", "--input", "../b", "--output", tmp_path / "out", "-q"]
    ok(run_cli(*run, cwd=tmp_path / "a"))
    first = snapshot(tmp_path)
    assert "out/a/x.jsonl" in first and "out/b/y.jsonl" in first
    ok(run_cli(*run, cwd=tmp_path / "a"))
    assert snapshot(tmp_path) == first


# -- the Python functions with out= ----------------------------------------------------------


def test_batch_out_that_is_the_source_is_refused(tmp_path):
    from rsimhash import batch

    src = tmp_path / "fps.npy"
    np.save(src, np.arange(10, dtype=np.uint64))
    before = snapshot(tmp_path)
    with pytest.raises(ValueError, match="is the input"):
        batch.find_all(str(src), 3, out=str(src))
    with pytest.raises(ValueError, match="is the input"):
        batch.clusters(str(src), 3, out=str(tmp_path / "fps.npy"))
    assert snapshot(tmp_path) == before


def test_manifest_written_records_json(tmp_path):
    shards = tmp_path / "in"
    shards.mkdir()
    for i in range(2):
        write_jsonl(shards / f"{i}.jsonl", make_records(10, seed=i))
    ok(run_cli("dedup", "--input", shards, "--output", tmp_path / "out", "-q"))
    data = json.loads((tmp_path / "out" / ".rsimhash-shards.json").read_text())
    assert sorted(data["finished"]) == ["0.jsonl", "1.jsonl"]


@pytest.mark.parametrize("name", ["c.parquet", "c.tsv"])
def test_batch_clusters_with_an_id_utf8_cannot_hold_is_one_error(tmp_path, name):
    pytest.importorskip("pyarrow")
    from rsimhash import batch

    fps = np.array([1, 3, 1 << 40], dtype=np.uint64)
    with pytest.raises(ValueError, match="lone surrogate U\\+D800"):
        batch.clusters(fps, 1, ids=["a", "b\ud800", "c"], out=str(tmp_path / name))
    assert os.listdir(tmp_path) == []
