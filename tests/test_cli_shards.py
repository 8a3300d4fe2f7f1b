"""Inputs of many shards (``--input`` repeated, a directory, a glob) and
``dedup --output DIR``: one output per shard.

What is proved: sharded dedup writes, shard by shard, exactly the bytes the
dedup of the shards' concatenation writes (JSON lines plain, gzip and zstd,
Parquet; with and without ids; empty shards; a bad line skipped), in memory
and through the batch engine; a run killed (SIGKILL) while it writes shards
and run again gives the same bytes, without rewriting the shards it had
finished; three days of shards, each against the store of the days before,
keep what one dedup keeps; an output directory of other files is refused;
cluster and find-all of shards list what they list of the concatenation;
bad shard inputs are one clear error line.
"""

from __future__ import annotations

import gzip
import json
import os
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)
from cli_helpers import assert_one_error, lines_of, make_records, ok, read_tsv, run_cli, write_jsonl  # noqa: E402
from rsimhash.cli import main  # noqa: E402

# Shard sizes, in records: an empty shard among them, and one in a Hive-style folder.
SIZES = [40, 0, 25, 55, 1, 39]
# In reading order: sorted by relative path, folder by folder.
NAMES = ["a/part-00000", "a/part-00001", "day=2/part-00002", "day=2/part-00003", "part-00004", "z/part-00005"]
TINY = ["--memory-limit", "1KiB"]  # the batch engine's two passes


def _compress(data: bytes, kind: str) -> bytes:
    if kind == "gz":
        return gzip.compress(data, mtime=0)
    if kind == "zst":
        zstandard = pytest.importorskip("zstandard")
        return zstandard.ZstdCompressor().compress(data)
    return data


def _decompress(data: bytes, kind: str) -> bytes:
    if kind == "gz":
        return gzip.decompress(data)
    if kind == "zst":
        zstandard = pytest.importorskip("zstandard")
        return zstandard.ZstdDecompressor().decompressobj().decompress(data) if data else b""
    return data


def _split(records, sizes=SIZES):
    out, at = [], 0
    for n in sizes:
        out.append(records[at : at + n])
        at += n
    assert at == len(records)
    return out


def _records(ids: bool, seed: int = 11):
    records = make_records(sum(SIZES), seed=seed, dup_share=0.5, words=(20, 60))
    return records if ids else [{"text": r["text"]} for r in records]


def _write_shards(directory, parts, kind, names=NAMES):
    """Each part as a JSON-lines shard (``kind``: plain, gz, zst); the bytes of each, uncompressed."""
    suffix = ".jsonl" + ("" if kind == "plain" else "." + kind)
    raws = []
    for name, part in zip(names, parts):
        path = directory / (name + suffix)
        path.parent.mkdir(parents=True, exist_ok=True)
        raw = write_jsonl(path, part) if part else b""
        path.write_bytes(_compress(raw, kind))
        raws.append(raw)
    return suffix, raws


def _run(*args) -> int:
    return main([os.fspath(a) if isinstance(a, os.PathLike) else str(a) for a in args])


@pytest.mark.parametrize("kind", ["plain", "gz", "zst"])
@pytest.mark.parametrize("ids", [True, False])
@pytest.mark.parametrize("memory", [[], ["--memory-limit", "64MiB"], TINY])
def test_sharded_dedup_equals_the_dedup_of_the_concatenation(tmp_path, kind, ids, memory):
    records = _records(ids)
    parts = _split(records)
    suffix, raws = _write_shards(tmp_path / "in", parts, kind)
    (tmp_path / "in" / "_SUCCESS").write_bytes(b"")  # not a shard: skipped, never read
    (tmp_path / "in" / "README.md").write_bytes(b"not json")
    whole = tmp_path / "all.jsonl"
    whole.write_bytes(b"".join(raws))
    assert (
        _run("dedup", "--input", whole, "--output", tmp_path / "all.out", "--removed", tmp_path / "all.tsv", "-q", *memory) == 0
    )
    out = tmp_path / "out"
    assert _run("dedup", "--input", tmp_path / "in", "--output", out, "--removed", tmp_path / "r.tsv", "-q", *memory) == 0
    got = [_decompress((out / (n + suffix)).read_bytes(), kind) for n in NAMES]
    assert b"".join(got) == (tmp_path / "all.out").read_bytes()
    assert got[1] == b"" and (out / (NAMES[1] + suffix)).exists()  # an empty shard stays an empty file
    assert sorted(p for p in os.listdir(out) if not p.startswith(".")) == ["a", "day=2", "part-00004" + suffix, "z"]
    # --removed: the same rows, and the shards named; without ids, a line of a shard is the line of the concatenation
    single = read_tsv((tmp_path / "all.tsv").read_bytes())
    sharded = read_tsv((tmp_path / "r.tsv").read_bytes())
    assert sharded[0] == ["id", "duplicate_of", "distance", "shard", "duplicate_of_shard"]
    offsets = {}
    at = 0
    for name, raw in zip(NAMES, raws):
        offsets[name + suffix] = at
        at += raw.count(b"\n")
    if ids:
        assert [row[:3] for row in sharded[1:]] == single[1:]
        where = {str(r["id"]): n for n, part in zip(NAMES, parts) for r in part}
        assert all(row[3] == where[row[0]] + suffix and row[4] == where[row[1]] + suffix for row in sharded[1:])
    else:
        as_single = [[str(int(r[0]) + offsets[r[3]]), str(int(r[1]) + offsets[r[4]]), r[2]] for r in sharded[1:]]
        assert as_single == single[1:]
    assert len(sharded) > 8


def test_sharded_parquet_equals_the_concatenation(tmp_path):
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    records = _records(True, seed=5)
    parts = _split(records)
    schema = pa.schema([("id", pa.int64()), ("text", pa.string())])
    for name, part in zip(NAMES, parts):
        path = tmp_path / "in" / (name + ".parquet")
        path.parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(pa.Table.from_pylist(part, schema=schema), path)
    pq.write_table(pa.Table.from_pylist(records, schema=schema), tmp_path / "all.parquet")
    for memory in ([], TINY):
        out = tmp_path / f"out{len(memory)}"
        assert _run("dedup", "--input", tmp_path / "all.parquet", "--output", tmp_path / "all.out.parquet", "-q", *memory) == 0
        assert _run("dedup", "--input", tmp_path / "in", "--output", out, "-q", *memory) == 0
        tables = [pq.read_table(out / (n + ".parquet")) for n in NAMES]
        assert tables[1].num_rows == 0 and tables[1].schema == schema
        assert pa.concat_tables(tables).to_pylist() == pq.read_table(tmp_path / "all.out.parquet").to_pylist()


def test_a_bad_line_in_a_shard_is_skipped_as_in_the_concatenation(tmp_path, capsys):
    records = _records(True, seed=3)
    parts = _split(records)
    _, raws = _write_shards(tmp_path / "in", parts, "plain")
    bad = tmp_path / "in" / "day=2" / "part-00003.jsonl"
    lines = raws[3].split(b"\n")
    lines.insert(4, b'{"id": 5, "text": oops}')
    bad.write_bytes(b"\n".join(lines))
    raws[3] = bad.read_bytes()
    whole = tmp_path / "all.jsonl"
    whole.write_bytes(b"".join(raws))
    for memory in ([], TINY):
        out = tmp_path / f"out{len(memory)}"
        assert _run("dedup", "--input", whole, "--output", tmp_path / "all.out", "--skip-bad-lines", "-q", *memory) == 0
        assert _run("dedup", "--input", tmp_path / "in", "--output", out, "--skip-bad-lines", *memory) == 0
        got = b"".join((out / (n + ".jsonl")).read_bytes() for n in NAMES)
        assert got == (tmp_path / "all.out").read_bytes()
        err = capsys.readouterr().err
        assert "part-00003.jsonl:5: is not valid JSON" in err and "1 bad line skipped" in err
        # Without --skip-bad-lines the run stops there, naming the shard and line,
        # and leaves no partial shard behind (the shards before it may be finished).
        assert _run("dedup", "--input", tmp_path / "in", "--output", tmp_path / "stopped", *memory) == 1
        assert "part-00003.jsonl:5" in capsys.readouterr().err
        assert not (tmp_path / "stopped" / "day=2" / "part-00003.jsonl").exists()
        assert not [f for _, _, files in os.walk(tmp_path / "stopped") for f in files if f.endswith(".tmp")]


@pytest.mark.parametrize("memory", [[], TINY])
def test_killed_while_writing_shards_then_rerun_gives_the_same_bytes(tmp_path, memory):
    records = _records(True, seed=8)
    _, raws = _write_shards(tmp_path / "in", _split(records), "gz")
    ok(run_cli("dedup", "--input", tmp_path / "in", "--output", tmp_path / "clean", "-q", *memory))
    out = tmp_path / "out"
    env = dict(os.environ, RSIMHASH_TEST_KILL_AFTER_SHARDS="3")
    killed = run_cli("dedup", "--input", tmp_path / "in", "--output", out, "-q", *memory, env=env)
    assert killed.returncode == -9
    names = [n + ".jsonl.gz" for n in NAMES]
    present = [n for n in names if (out / n).exists()]
    assert present == names[:3]
    before = {n: os.stat(out / n).st_mtime_ns for n in present}
    ok(run_cli("dedup", "--input", tmp_path / "in", "--output", out, "-q", *memory))
    for n in names:
        assert (out / n).read_bytes() == (tmp_path / "clean" / n).read_bytes()
    assert {n: os.stat(out / n).st_mtime_ns for n in present} == before  # resumed after them, not rewritten
    assert not [p for dirpath, _, files in os.walk(out) for p in files if p.endswith(".tmp")]
    # A finished shard changed since is written again.
    (out / names[0]).write_bytes(b"changed")
    ok(run_cli("dedup", "--input", tmp_path / "in", "--output", out, "-q", *memory))
    assert (out / names[0]).read_bytes() == (tmp_path / "clean" / names[0]).read_bytes()


def test_three_days_of_shards_against_the_days_before(tmp_path):
    records = _records(True, seed=21)
    whole = tmp_path / "all.jsonl"
    write_jsonl(whole, records)
    assert _run("dedup", "--input", whole, "--output", tmp_path / "all.out", "-q") == 0
    want = lines_of((tmp_path / "all.out").read_bytes())
    days = [records[:60], records[60:120], records[120:]]
    store = tmp_path / "store"
    got, removed = [], []
    for d, day in enumerate(days):
        third = len(day) // 3
        parts = [day[:third], day[third : 2 * third], [], day[2 * third :]]
        _write_shards(tmp_path / f"day{d}", parts, "gz", names=[f"p{i}" for i in range(4)])
        args = ["dedup", "--input", tmp_path / f"day{d}", "--output", tmp_path / f"out{d}", "--save-fingerprints", store]
        args += ["--removed", tmp_path / f"r{d}.tsv", "-q"] + (["--against", store] if d else [])
        assert _run(*args) == 0
        for i in range(4):
            got += lines_of(gzip.decompress((tmp_path / f"out{d}" / f"p{i}.jsonl.gz").read_bytes()))
        removed += read_tsv((tmp_path / f"r{d}.tsv").read_bytes())[1:]
    assert got == want
    assert (store / "part-00000.shards").exists()
    # A record removed for one of an earlier day names that record's shard, as saved.
    earlier = {str(r["id"]) for r in days[0] + days[1]}
    cross = [row for row in removed if row[1] in earlier and row[0] not in earlier]
    assert cross and all(row[4].startswith("p") for row in cross)


def test_an_output_directory_of_other_files_is_refused(tmp_path, capsys):
    records = _records(True, seed=2)
    _write_shards(tmp_path / "a", _split(records), "plain")
    _write_shards(tmp_path / "b", _split(records), "plain", names=[f"other-{i}" for i in range(len(SIZES))])
    out = tmp_path / "out"
    assert _run("dedup", "--input", tmp_path / "a", "--output", out, "-q") == 0
    assert _run("dedup", "--input", tmp_path / "a", "--output", out, "-q", "--distance", "5") == 0  # same shards: rewritten
    before = {p: (out / p).read_bytes() for p in ("a/part-00000.jsonl", "z/part-00005.jsonl")}
    assert _run("dedup", "--input", tmp_path / "b", "--output", out, "-q") == 2
    assert "holds files this run would not write" in capsys.readouterr().err
    assert not (out / "other-0.jsonl").exists()
    assert _run("dedup", "--input", tmp_path / "b", "--output", out, "-q", "--overwrite") == 0
    assert (out / "other-0.jsonl").exists()
    assert {p: (out / p).read_bytes() for p in before} == before  # left as they were
    # A file of the user's where a shard would go is not written over either.
    fresh = tmp_path / "fresh"
    (fresh / "z").mkdir(parents=True)
    (fresh / "z" / "part-00005.jsonl").write_bytes(b"mine")
    assert _run("dedup", "--input", tmp_path / "a", "--output", fresh, "-q") == 2
    assert (fresh / "z" / "part-00005.jsonl").read_bytes() == b"mine"
    # The outputs never go into an input directory.
    assert _run("dedup", "--input", tmp_path / "a", "--output", tmp_path / "a" / "out", "-q") == 2
    assert "inside the input directory" in capsys.readouterr().err


def test_cluster_and_find_all_of_shards_equal_the_concatenation(tmp_path):
    records = _records(True, seed=13)
    _, raws = _write_shards(tmp_path / "in", _split(records), "zst")
    whole = tmp_path / "all.jsonl"
    whole.write_bytes(b"".join(raws))
    glob = os.fspath(tmp_path / "in" / "**" / "*.jsonl.zst")
    for command, extra in (
        ("cluster", []),
        ("cluster", ["--all", "--method", "leader"]),
        ("cluster", ["--sample", "100"]),  # the first 100 records of all shards, across a shard boundary
        ("cluster", TINY),
        ("find-all", []),
        ("find-all", TINY),
        ("find-all", ["--jaccard", "0.6"]),
        ("cluster", ["--jaccard", "0.6", "--memory-limit", "16KiB"]),
    ):
        assert _run(command, "--input", whole, "--output", tmp_path / "single.tsv", "-q", *extra) == 0
        single = (tmp_path / "single.tsv").read_bytes()
        for inputs in (["--input", tmp_path / "in"], ["--input", glob]):
            assert _run(command, *inputs, "--output", tmp_path / "got.tsv", "-q", *extra) == 0
            assert (tmp_path / "got.tsv").read_bytes() == single, (command, extra, inputs)
        assert len(single.splitlines()) > 5


def test_find_all_of_fingerprint_line_shards_and_several_inputs(tmp_path):
    import numpy as np

    rng = np.random.default_rng(4)
    base = rng.integers(0, 2**63, 50, dtype=np.uint64)
    fps = np.concatenate([base, base ^ np.uint64(3), base[:7]])
    (tmp_path / "d1").mkdir()
    (tmp_path / "d2").mkdir()
    (tmp_path / "d1" / "a.txt").write_text("".join(f"{v}\n" for v in fps[:60]))
    (tmp_path / "d2" / "a.txt").write_text("".join(f"{v}\n" for v in fps[60:]))
    (tmp_path / "all.txt").write_text("".join(f"{v}\n" for v in fps))
    assert _run("find-all", "--input", tmp_path / "all.txt", "--output", tmp_path / "single", "-q") == 0
    # Two folders with a shard of the same name: kept apart by the folders' names.
    assert _run("find-all", "--input", tmp_path / "d1", "--input", tmp_path / "d2", "--output", tmp_path / "got", "-q") == 0
    single = (tmp_path / "single").read_bytes()
    assert (tmp_path / "got").read_bytes() == single and len(single.splitlines()) >= 57


def test_bad_shard_inputs_are_one_clear_error(tmp_path):
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / "notes.md").write_text("x")
    out = tmp_path / "out"
    assert_one_error(run_cli("dedup", "--input", tmp_path / "empty", "--output", out), 1, "holds no file of a format")
    assert_one_error(run_cli("dedup", "--input", os.fspath(tmp_path / "nothing-*.jsonl"), "--output", out), 1, "matches no file")
    mixed = tmp_path / "mixed"
    mixed.mkdir()
    write_jsonl(mixed / "a.jsonl", make_records(3))
    (mixed / "b.tsv").write_text("id\thash\n1\t2\n")
    assert_one_error(run_cli("dedup", "--input", mixed, "--output", out), 2, "mixed formats")
    assert_one_error(
        run_cli("dedup", "--input", mixed / "a.jsonl", "--input", mixed / "b.tsv", "--output", out), 2, "mixed formats"
    )
    loop = tmp_path / "loop"
    (loop / "sub").mkdir(parents=True)
    write_jsonl(loop / "a.jsonl", make_records(3))
    os.symlink(loop, loop / "sub" / "back")
    assert_one_error(run_cli("dedup", "--input", loop, "--output", out), 1, "symlink loop")
    assert_one_error(run_cli("dedup", "--input", mixed / "a.jsonl", "--input", "-", "--output", out), 2, "stdin")
    assert_one_error(run_cli("dedup", "--input", mixed / "a.jsonl", "--input", mixed / "a.jsonl", "--output", out), 2, "twice")
    assert not out.exists()


def test_against_an_index_file(tmp_path, capsys):
    records = _records(True, seed=31)
    old, new = records[:90], records[90:]
    write_jsonl(tmp_path / "all.jsonl", records)
    write_jsonl(tmp_path / "old.jsonl", old)
    _write_shards(tmp_path / "new", [new[:40], new[40:]], "plain", names=["p0", "p1"])
    assert _run("dedup", "--input", tmp_path / "all.jsonl", "--output", tmp_path / "all.out", "-q") == 0
    want = lines_of((tmp_path / "all.out").read_bytes())
    # The index holds every old record (kept or not): the new records within K of any are removed.
    assert _run("index", "build", "--input", tmp_path / "old.jsonl", "--output", tmp_path / "old.rsh", "-q") == 0
    assert _run("dedup", "--input", tmp_path / "old.jsonl", "--output", tmp_path / "old.out", "-q") == 0
    kept_old = len(lines_of((tmp_path / "old.out").read_bytes()))
    args = ["dedup", "--input", tmp_path / "new", "--output", tmp_path / "out", "--against", tmp_path / "old.rsh"]
    assert _run(*args, "--removed", tmp_path / "r.tsv", "-q") == 0
    got = b"".join((tmp_path / "out" / f"p{i}.jsonl").read_bytes() for i in range(2))
    assert lines_of(got) == want[kept_old:]
    rows = read_tsv((tmp_path / "r.tsv").read_bytes())[1:]
    old_ids = {str(r["id"]) for r in old}
    assert any(row[1] in old_ids and row[4] == "" for row in rows)  # a stored record: no shard of this run
    assert _run(*args, "--mode", "chars", "--overwrite") == 2
    assert "--mode words --window 3" in capsys.readouterr().err


def test_verified_dedup_of_shards_equals_the_concatenation(tmp_path):
    records = _records(True, seed=17)
    _, raws = _write_shards(tmp_path / "in", _split(records), "gz")
    whole = tmp_path / "all.jsonl"
    whole.write_bytes(b"".join(raws))
    for memory in ([], ["--memory-limit", "16KiB"]):
        out = tmp_path / f"out{len(memory)}"
        common = ["--jaccard", "0.6", "-q", *memory]
        assert _run("dedup", "--input", whole, "--output", tmp_path / "all.out", "--removed", tmp_path / "a.tsv", *common) == 0
        assert _run("dedup", "--input", tmp_path / "in", "--output", out, "--removed", tmp_path / "r.tsv", *common) == 0
        got = b"".join(gzip.decompress((out / (n + ".jsonl.gz")).read_bytes()) for n in NAMES)
        assert got == (tmp_path / "all.out").read_bytes()
        single = read_tsv((tmp_path / "a.tsv").read_bytes())
        sharded = read_tsv((tmp_path / "r.tsv").read_bytes())
        assert sharded[0][3:] == ["shard", "duplicate_of_shard"] and [r[:3] for r in sharded[1:]] == single[1:]
        assert len(single) > 5


def test_hash_tsv_shards_keep_their_headers_and_stdout_takes_them_all(tmp_path):
    import numpy as np

    rng = np.random.default_rng(9)
    base = rng.integers(0, 2**63, 40, dtype=np.uint64)
    fps = np.concatenate([base, base[:15] ^ np.uint64(5)])
    rows = [f"r{i}\t{v}\n" for i, v in enumerate(fps.tolist())]
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "a.tsv").write_text("id\thash\n" + "".join(rows[:30]))
    (tmp_path / "in" / "b.tsv").write_text("id\thash\n" + "".join(rows[30:]))
    (tmp_path / "all.tsv").write_text("id\thash\n" + "".join(rows))
    assert _run("dedup", "--input", tmp_path / "all.tsv", "--output", tmp_path / "all.out.tsv", "-q") == 0
    assert _run("dedup", "--input", tmp_path / "in", "--output", tmp_path / "out", "-q") == 0
    a, b = ((tmp_path / "out" / n).read_text() for n in ("a.tsv", "b.tsv"))
    assert a.startswith("id\thash\n") and b.startswith("id\thash\n")
    assert a + b[len("id\thash\n") :] == (tmp_path / "all.out.tsv").read_text()
    assert b.count("\n") < 1 + 25  # the copies of a's records are gone from b
    # --output -: every shard's kept records, one header.
    proc = ok(run_cli("dedup", "--input", tmp_path / "in", "-q"))
    assert proc.stdout == (tmp_path / "all.out.tsv").read_bytes()


def test_line_number_ids_of_shards_name_their_shard(tmp_path):
    records = _records(False, seed=13)
    _write_shards(tmp_path / "in", _split(records), "plain")
    assert _run("cluster", "--input", tmp_path / "in", "--output", tmp_path / "c.tsv", "-q") == 0
    rows = read_tsv((tmp_path / "c.tsv").read_bytes())[1:]
    assert rows and all(":" in row[0] and row[0].rsplit(":", 1)[0] in {n + ".jsonl" for n in NAMES} for row in rows)
    # The id of each row is the line of its record in its shard.
    lines = {n + ".jsonl": (tmp_path / "in" / (n + ".jsonl")).read_bytes().split(b"\n") for n in NAMES}
    from rsimhash import fingerprints

    for row in rows:
        shard, line = row[0].rsplit(":", 1)
        text = json.loads(lines[shard][int(line) - 1])["text"]
        assert str(int(fingerprints([text])[0])) == row[1]
