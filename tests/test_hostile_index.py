"""Index files changed under a mapped index, and the CLI's ids sidecar
(issue 24, items 4 and 5).

Another program truncating, zero-filling or overwriting a mapped index
file in place must never crash the process (SIGBUS, a panic, an abort on
an allocation sized by changed bytes): every operation either answers or
raises ``ValueError("index file changed or damaged while in use: ...")``.
The fuzz runs in a child process, which must end by itself (exit 0), never
by a signal.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

import numpy as np

import rsimhash
from budget import examples
from cli_helpers import assert_one_error, build_ids_era, make_records, ok, run_cli, write_jsonl

CHANGED = "index file changed or damaged while in use"

FUZZ = """
    import os, sys, numpy as np, rsimhash
    CHANGED = "index file changed or damaged while in use"
    rounds, seed, directory = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
    rng = np.random.default_rng(seed)
    fps = rng.integers(0, 2**64, size=40_000, dtype=np.uint64)
    fps[1::7] = fps[::7][:len(fps[1::7])] ^ np.uint64(0b1011)
    fps[2::50] = fps[0]
    base = rsimhash.Index(3)
    for part in np.array_split(fps, 3):  # several runs
        base.add(part)
    base.remove(np.arange(0, 40_000, 97, dtype=np.uint64))
    source = os.path.join(directory, "base.rsh")
    base.save(source)
    data = open(source, "rb").read()
    outcomes = {"answered": 0, "refused": 0}
    for r in range(rounds):
        path = os.path.join(directory, f"r{r}.rsh")
        with open(path, "wb") as f:
            f.write(data)
        index = rsimhash.Index.load(path, mmap=True)
        kind = r % 4
        size = len(data)
        with open(path, "r+b") as f:
            if kind == 0:    # cut short anywhere
                f.truncate(int(rng.integers(0, size)))
            elif kind == 1:  # a run of zeros
                at = int(rng.integers(0, size)); f.seek(at); f.write(bytes(int(rng.integers(1, size - at + 1))))
            elif kind == 2:  # random bytes over a random range
                at = int(rng.integers(0, size)); f.seek(at); f.write(rng.bytes(int(rng.integers(1, min(4096, size - at) + 1))))
            else:            # a few flipped bytes
                for at in rng.integers(0, size, size=8).tolist():
                    f.seek(at); b = f.read(1); f.seek(at); f.write(bytes([b[0] ^ 0x5A]))
        queries = np.concatenate([fps[:2000], rng.integers(0, 2**64, size=500, dtype=np.uint64)])
        ops = [
            lambda: index.query(int(queries[0])),
            lambda: index.query_batch(queries),
            lambda: index.find_all(),
            lambda: index.cluster(),
            lambda: index.cluster(method="leader"),
            lambda: index.add_unique(queries[:300]),
            lambda: index.add(queries[300:700]),
            lambda: index.remove(np.arange(10, dtype=np.uint64)),
            lambda: index.save(os.path.join(directory, f"s{r}.rsh")),
            lambda: index.verify(),
        ]
        refused = False
        for op in ops:
            try:
                op()
                outcomes["answered"] += 1
            except ValueError as e:
                assert CHANGED in str(e), str(e)
                outcomes["refused"] += 1
                refused = True
        # verify re-reads every checksum: a change is always found (a run of
        # zeros over bytes that were zero changes nothing).
        assert refused or open(path, "rb").read() == data, f"round {r} (kind {kind}): a changed file passed verify"
        saved = os.path.join(directory, f"s{r}.rsh")
        if os.path.exists(saved):  # a save that succeeded copied no changed bytes
            rsimhash.Index.load(saved).verify()
            os.remove(saved)
        del index
        os.remove(path)
    print(outcomes["answered"], outcomes["refused"])
"""


def test_changed_files_never_crash_the_process(tmp_path):
    """Truncations, zero runs, random overwrites and flipped bytes of a
    mapped index file, then every operation: each answers or raises
    ``ValueError``; the child exits 0, never by a signal."""
    rounds = examples(24)
    proc = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(FUZZ), str(rounds), "24", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, (proc.returncode, proc.stderr[-3000:])
    answered, refused = map(int, proc.stdout.split())
    assert refused >= rounds and answered > 0


def test_truncated_mapped_index_raises_value_error(tmp_path):
    """The issue's case: truncation gave SIGBUS. Now every operation raises,
    including after the file is made whole again (its answers cannot be
    trusted any more), and a fresh load works."""
    code = f"""
        import os, numpy as np, rsimhash
        fps = np.random.default_rng(2).integers(0, 2**64, size=300_000, dtype=np.uint64)
        index = rsimhash.Index(3)
        index.add(fps)
        path = {str(tmp_path / "i.rsh")!r}
        index.save(path)
        data = open(path, "rb").read()
        loaded = rsimhash.Index.load(path)
        os.truncate(path, 4096)
        for op in (lambda: loaded.query_batch(fps), loaded.find_all, loaded.cluster, loaded.verify,
                   lambda: loaded.query(int(fps[0])), lambda: loaded.save(path + ".copy")):
            try:
                op()
                print("answered")
            except ValueError as e:
                print(str(e).split(":")[0])
        with open(path, "wb") as f:
            f.write(data)
        try:
            loaded.query(int(fps[0]))
        except ValueError as e:
            print(str(e).split(":")[0])
        print(len(rsimhash.Index.load(path).query_batch(fps)[0]) >= len(fps))
        print(os.path.exists(path + ".copy"))
    """
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, (proc.returncode, proc.stderr[-2000:])
    lines = proc.stdout.splitlines()
    assert lines[:3] == [CHANGED] * 3, lines
    assert lines[3] == CHANGED, "verify finds the cut"
    assert lines[5:] == [CHANGED, CHANGED, "True", "False"], lines


def test_verify_of_intact_and_in_memory_indexes(tmp_path):
    fps = np.random.default_rng(4).integers(0, 2**64, size=3000, dtype=np.uint64)
    index = rsimhash.Index(3)
    index.add(fps)
    assert index.verify() is None, "built in memory: nothing to check"
    index.save(tmp_path / "a.rsh")
    for mmap in (True, False):
        loaded = rsimhash.Index.load(tmp_path / "a.rsh", mmap=mmap)
        assert loaded.verify() is None
    # A save by rsimhash (atomic) over a mapped file is safe: the index keeps its file.
    loaded = rsimhash.Index.load(tmp_path / "a.rsh")
    other = rsimhash.Index(3)
    other.add(np.arange(10, dtype=np.uint64) << np.uint64(40))
    other.save(tmp_path / "a.rsh")
    assert loaded.verify() is None and len(loaded.query_batch(fps)[0]) >= 3000


# -- item 5: the CLI's ids sidecar is checksummed ---------------------------------------


def build(tmp_path, n=60):
    """An index file and its ids file, as index build wrote them before index
    files kept the records' ids (issue 38, item 6)."""
    records = make_records(n, seed=11, string_ids=True)
    write_jsonl(tmp_path / "c.jsonl", records)
    idx = tmp_path / "c.rsh"
    build_ids_era(tmp_path / "c.jsonl", idx)
    return records, idx


def test_an_edited_id_is_caught_at_load_and_by_verify(tmp_path):
    records, idx = build(tmp_path)
    ids = (tmp_path / "c.rsh.ids").read_bytes()
    assert b"doc-0007" in ids
    (tmp_path / "c.rsh.ids").write_bytes(ids.replace(b"doc-0007", b"doc-9999"))
    assert_one_error(run_cli("index", "verify", idx), 1, "c.rsh.ids", "checksum")
    write_jsonl(tmp_path / "q.jsonl", records[5:9])
    p = run_cli("index", "query", idx, "--input", tmp_path / "q.jsonl")
    assert_one_error(p, 1, "c.rsh.ids", "checksum")
    assert b"doc-9999" not in p.stdout
    (tmp_path / "c.rsh.ids").write_bytes(ids)
    ok(run_cli("index", "verify", idx))
    p = ok(run_cli("index", "query", idx, "--input", tmp_path / "q.jsonl"))
    assert b"doc-0007" in p.stdout


def test_ids_checksum_survives_add_and_refuses_a_swapped_pair(tmp_path):
    records, idx = build(tmp_path)
    more = [dict(r, id=f"more-{i}") for i, r in enumerate(make_records(30, seed=12))]  # ids not stored yet
    write_jsonl(tmp_path / "more.jsonl", more)
    ok(run_cli("index", "add", idx, "--input", tmp_path / "more.jsonl", "-q"))
    ok(run_cli("index", "verify", idx))
    # Two lines swapped: every line is still a valid line of the file.
    lines = (tmp_path / "c.rsh.ids").read_bytes().splitlines(keepends=True)
    lines[3], lines[4] = lines[4], lines[3]
    (tmp_path / "c.rsh.ids").write_bytes(b"".join(lines))
    assert_one_error(run_cli("index", "verify", idx), 1, "checksum")
    write_jsonl(tmp_path / "q.jsonl", records[:3])
    assert_one_error(run_cli("index", "add", idx, "--input", tmp_path / "q.jsonl"), 1, "checksum")


def test_ids_files_of_the_first_format_still_read(tmp_path):
    """An ids file written before the checksum (format 1) reads as before,
    and is checked by the spot checks; the next ``index add`` writes the
    checksummed format."""
    records, idx = build(tmp_path)
    data = (tmp_path / "c.rsh.ids").read_bytes()
    header, rest = data.split(b"\n", 1)
    assert header.startswith(b"# rsimhash index ids, format 2: ")
    body, end = rest.rstrip(b"\n").rsplit(b"\n", 1)
    assert end.startswith(b"# rsimhash index ids end: 60 lines, crc32 ")
    (tmp_path / "c.rsh.ids").write_bytes(header.replace(b"format 2", b"format 1") + b"\n" + body + b"\n")
    p = ok(run_cli("index", "verify", idx))
    assert b"no checksum" in p.stdout
    write_jsonl(tmp_path / "q.jsonl", records[:3])
    ok(run_cli("index", "query", idx, "--input", tmp_path / "q.jsonl"))
    write_jsonl(tmp_path / "more.jsonl", [dict(r, id=f"more-{i}") for i, r in enumerate(make_records(5, seed=13))])
    ok(run_cli("index", "add", idx, "--input", tmp_path / "more.jsonl", "-q"))
    assert (tmp_path / "c.rsh.ids").read_bytes().startswith(b"# rsimhash index ids, format 2: ")
    ok(run_cli("index", "verify", idx))
