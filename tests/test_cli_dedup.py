"""``rsimhash dedup`` end to end (subprocess): output equal to a brute-force
reference loop, records written byte for byte, every input format, stdin and
stdout, the progress bar and the summary line, and the console script."""

from __future__ import annotations

import gzip
import os
import shutil
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

from cli_helpers import (  # noqa: E402
    brute_dedup,
    fingerprints_of,
    leftovers,
    lines_of,
    make_records,
    ok,
    read_tsv,
    run_cli,
    stderr_lines,
    write_jsonl,
)

rsimhash = pytest.importorskip("rsimhash")


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    """400 records, int ids, with planted near-duplicates; and their fingerprints."""
    records = make_records(400, seed=1)
    path = tmp_path_factory.mktemp("dedup") / "corpus.jsonl"
    data = write_jsonl(path, records)
    return path, records, data, fingerprints_of(records)


def expected(records, fps, k):
    keep, match = brute_dedup(fps, k)
    assert 0 < keep.count(False) < len(keep), "the corpus must have near-duplicates to remove at this k"
    removed = [
        [str(r["id"]), str(records[m]["id"]), str(rsimhash.hamming(int(fps[i]), int(fps[m])))]
        for i, (r, m) in enumerate(zip(records, match))
        if m is not None
    ]
    return keep, removed


@pytest.mark.parametrize("k, chunk_mb", [(3, "8"), (3, "0.01"), (6, "0.003"), (0, "8")])
def test_dedup_equals_brute_force(corpus, tmp_path, k, chunk_mb):
    path, records, data, fps = corpus
    keep, removed = expected(records, fps, k)
    out, rem = tmp_path / "kept.jsonl", tmp_path / "removed.tsv"
    proc = ok(run_cli("dedup", "--input", path, "--output", out, "--removed", rem, "--distance", k, "--chunk-mb", chunk_mb))
    kept_lines = [line for line, flag in zip(lines_of(data), keep) if flag]
    assert out.read_bytes() == b"".join(kept_lines)
    rows = read_tsv(rem.read_bytes())
    assert rows[0] == ["id", "duplicate_of", "distance"]
    assert rows[1:] == removed
    summary = stderr_lines(proc)
    assert len(summary) == 1 and summary[0].startswith("rsimhash dedup: 400 records read")
    assert f"{len(removed)} removed" in summary[0] and f"{keep.count(True)} kept" in summary[0]


@pytest.mark.parametrize(
    "k, limit, compressed", [(3, None, False), (3, "120KB", True), (4, None, True)], ids=["memory to spare", "tight", "K over 3"]
)
def test_the_runs_index_keeps_raw_tables_with_memory_to_spare(corpus, tmp_path, monkeypatch, k, limit, compressed):
    """The in-memory dedup's index lives for the run only: its tables stay
    raw where the records (400 of 224 bytes here) need at most half the
    memory limit, packed where they need more or K's designs may have many
    tables; the output is the brute force's either way."""
    import rsimhash.cli.dedup as dedup_command
    from rsimhash.cli import main

    made = []
    real = dedup_command.make_index

    def recorded(*args, **kwargs):
        made.append(real(*args, **kwargs))
        return made[-1]

    monkeypatch.setattr(dedup_command, "make_index", recorded)
    path, records, data, fps = corpus
    keep, removed = expected(records, fps, k)
    out, rem = tmp_path / "kept.jsonl", tmp_path / "removed.tsv"
    argv = ["dedup", "--input", str(path), "--output", str(out), "--removed", str(rem), "--quiet", "--distance", str(k)]
    assert main(argv + (["--memory-limit", limit] if limit else [])) == 0
    assert made[-1].compressed is compressed and len(made[-1]) == keep.count(True)
    assert out.read_bytes() == b"".join(line for line, flag in zip(lines_of(data), keep) if flag)
    assert read_tsv(rem.read_bytes())[1:] == removed


def test_the_kept_lines_are_the_same_when_writeback_is_asked_for_each_chunk(corpus, tmp_path, monkeypatch):
    """The disk is asked to write back behind the run (by the core, on its
    pool) after every chunk's lines here, over a window reaching back into
    earlier chunks: the kept lines and removed rows are the brute force's."""
    import rsimhash.cli.outputs as outputs
    from rsimhash.cli import main

    monkeypatch.setattr(outputs, "_WRITEBACK_BYTES", 1)
    monkeypatch.setattr(outputs, "_WRITEBACK_WINDOW", 3000)
    path, records, data, fps = corpus
    keep, removed = expected(records, fps, 3)
    out, rem = tmp_path / "kept.jsonl", tmp_path / "removed.tsv"
    argv = ["dedup", "--input", str(path), "--output", str(out), "--removed", str(rem), "--quiet", "--chunk-mb", "0.01"]
    assert main(argv) == 0
    assert out.read_bytes() == b"".join(line for line, flag in zip(lines_of(data), keep) if flag)
    assert read_tsv(rem.read_bytes())[1:] == removed


def test_dedup_string_ids_and_other_columns(tmp_path):
    records = make_records(150, seed=2, string_ids=True)
    records = [{"doc": r["id"], "body": r["text"], "extra": [1, {"x": None}]} for r in records]
    path = tmp_path / "in.jsonl"
    data = write_jsonl(path, records)
    fps = fingerprints_of([{"text": r["body"]} for r in records], mode="chars", width=5)
    keep, match = brute_dedup(fps, 4)
    assert keep.count(False) > 0
    out, rem = tmp_path / "out.jsonl", tmp_path / "rem.tsv"
    ok(
        run_cli(
            "dedup",
            "-i",
            path,
            "-o",
            out,
            "--removed",
            rem,
            "--text_column",
            "body",
            "--id-column",
            "doc",
            "--mode",
            "chars",
            "--width",
            "5",
            "-k",
            "4",
            "-q",
        )
    )
    assert out.read_bytes() == b"".join(line for line, f in zip(lines_of(data), keep) if f)
    assert [row[:2] for row in read_tsv(rem.read_bytes())[1:]] == [
        [records[i]["doc"], records[m]["doc"]] for i, m in enumerate(match) if m is not None
    ]


def test_dedup_keeps_bytes_exactly(tmp_path):
    """CRLF endings, odd spacing, escapes and non-ASCII survive; blank lines are
    dropped; a last line without a newline stays without one."""
    base = "the quick brown fox jumps over the lazy dog again and again today"
    lines = [
        b'{"id": 1,   "text": "%s"}\r\n' % base.encode(),
        b"\n",
        b'{"text":"%s","id":2}\n' % base.encode(),  # exact duplicate: removed
        b"   \t\n",
        '{"id": "\u00e9t\u00e9", "text": "caf\u00e9 \\u00e9t\u00e9 \\n \\"quoted\\" words here"}\n'.encode(),
        b'{"id": 4, "text": "something else entirely, nothing like the others"}',
    ]
    path = tmp_path / "in.jsonl"
    path.write_bytes(b"".join(lines))
    out = tmp_path / "out.jsonl"
    proc = ok(run_cli("dedup", "--input", path, "--output", out))
    assert out.read_bytes() == lines[0] + lines[4] + lines[5]
    assert "4 records read, 1 removed" in proc.stderr.decode()


def test_dedup_stdin_stdout(corpus):
    path, records, data, fps = corpus
    keep, _ = expected(records, fps, 3)
    proc = ok(run_cli("dedup", "--input", "-", "--output", "-", input=data))
    assert proc.stdout == b"".join(line for line, f in zip(lines_of(data), keep) if f)
    # piped stderr: no progress bar, just the summary line
    assert len(stderr_lines(proc)) == 1 and b"\r" not in proc.stderr


def test_dedup_quiet(corpus, tmp_path):
    path = corpus[0]
    proc = ok(run_cli("dedup", "--input", path, "--output", tmp_path / "o.jsonl", "--quiet"))
    assert proc.stderr == b""


def test_dedup_gzip_in_and_out(corpus, tmp_path):
    path, records, data, fps = corpus
    keep, _ = expected(records, fps, 3)
    gz = tmp_path / "corpus.jsonl.gz"
    gz.write_bytes(gzip.compress(data))
    ok(run_cli("dedup", "--input", gz, "--output", tmp_path / "kept.jsonl.gz", "--chunk-mb", "0.02"))
    assert gzip.decompress((tmp_path / "kept.jsonl.gz").read_bytes()) == b"".join(
        line for line, f in zip(lines_of(data), keep) if f
    )
    # compressed stdin is recognised by its first bytes
    proc = ok(run_cli("dedup", "-i", "-", "-o", "-", "-q", input=gzip.compress(data)))
    assert proc.stdout == b"".join(line for line, f in zip(lines_of(data), keep) if f)


def test_dedup_zstd(corpus, tmp_path):
    zstandard = pytest.importorskip("zstandard")
    path, records, data, fps = corpus
    keep, _ = expected(records, fps, 3)
    zst = tmp_path / "corpus.jsonl.zst"
    zst.write_bytes(zstandard.ZstdCompressor().compress(data))
    ok(run_cli("dedup", "--input", zst, "--output", tmp_path / "kept.jsonl", "-q"))
    assert (tmp_path / "kept.jsonl").read_bytes() == b"".join(line for line, f in zip(lines_of(data), keep) if f)


def test_dedup_hash_tsv_and_lines(corpus, tmp_path):
    path, records, data, fps = corpus
    keep, _ = expected(records, fps, 3)
    rows = ["id\thash\n"] + [f"{r['id']}\t{int(fp)}\n" for r, fp in zip(records, fps)]
    tsv = tmp_path / "hashes.tsv"
    tsv.write_text("".join(rows))
    ok(run_cli("dedup", "--input", tsv, "--output", tmp_path / "kept.tsv", "-q"))
    assert (tmp_path / "kept.tsv").read_text() == rows[0] + "".join(r for r, f in zip(rows[1:], keep) if f)
    txt = tmp_path / "hashes.txt"
    txt.write_text("".join(f"{int(fp)}\n" for fp in fps))
    proc = ok(run_cli("dedup", "--input", txt, "--output", "-", "--removed", tmp_path / "r.tsv", "-q"))
    assert proc.stdout.decode() == "".join(f"{int(fp)}\n" for fp, f in zip(fps, keep) if f)
    # with the lines format, ids are line numbers
    assert read_tsv((tmp_path / "r.tsv").read_bytes())[1][0] == str(keep.index(False) + 1)


def test_dedup_parquet(corpus, tmp_path):
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    path, records, data, fps = corpus
    keep, removed = expected(records, fps, 3)
    table = pa.table({"id": [r["id"] for r in records], "text": [r["text"] for r in records], "n": list(range(len(records)))})
    src = tmp_path / "corpus.parquet"
    pq.write_table(table, src, row_group_size=64)
    out = tmp_path / "kept.parquet"
    ok(run_cli("dedup", "--input", src, "--output", out, "--removed", tmp_path / "r.tsv", "--chunk-mb", "0.1"))
    got = pq.read_table(out)
    assert got.schema == table.schema
    assert got.to_pylist() == [row for row, f in zip(table.to_pylist(), keep) if f]
    assert read_tsv((tmp_path / "r.tsv").read_bytes())[1:] == removed


def test_dedup_skip_bad_lines(corpus, tmp_path):
    path, records, data, fps = corpus
    keep, _ = expected(records, fps, 3)
    good = lines_of(data)
    bad = [b'{"id": 1, "text": \n', b'{"id": 2}\n', b"[1, 2]\n", b'{"id": 3, "text": 5}\n']
    mixed = good[:10] + bad[:2] + good[10:200] + bad[2:] + good[200:]
    src = tmp_path / "mixed.jsonl"
    src.write_bytes(b"".join(mixed))
    out = tmp_path / "out.jsonl"
    proc = ok(run_cli("dedup", "--input", src, "--output", out, "--skip-bad-lines"))
    assert out.read_bytes() == b"".join(line for line, f in zip(good, keep) if f)
    lines = stderr_lines(proc)
    assert [ln.split(": ")[2] for ln in lines[:4]] == [f"{src}:11", f"{src}:12", f"{src}:203", f"{src}:204"]
    assert all(ln.startswith("rsimhash: warning: ") for ln in lines[:4])
    assert "400 records read" in lines[4] and "4 bad lines skipped" in lines[4]


def test_dedup_progress_bar_on_a_terminal(corpus, tmp_path):
    """On a terminal stderr the tqdm bar shows bytes, MB/s and records."""
    pytest.importorskip("tqdm")
    pty = pytest.importorskip("pty")
    path = corpus[0]
    main_fd, sub_fd = pty.openpty()
    if hasattr(termios := pytest.importorskip("termios"), "TIOCSWINSZ"):  # a 24 x 100 terminal
        import fcntl
        import struct

        fcntl.ioctl(sub_fd, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 100, 0, 0))
    proc = subprocess.Popen(
        [sys.executable, "-m", "rsimhash.cli", "dedup", "-i", path, "-o", tmp_path / "o", "--chunk-mb", "0.005"],
        stderr=sub_fd,
        stdout=subprocess.DEVNULL,
    )
    os.close(sub_fd)
    seen = b""
    while True:
        try:
            data = os.read(main_fd, 4096)
        except OSError:  # the child closed the terminal
            break
        if not data:
            break
        seen += data
    os.close(main_fd)
    assert proc.wait(timeout=60) == 0
    text = seen.decode("utf-8", "replace")
    assert "B/s" in text and "records" in text, text
    assert "rsimhash dedup: 400 records read" in text


def test_console_script(corpus, tmp_path):
    script = shutil.which("rsimhash", path=os.path.dirname(sys.executable)) or shutil.which("rsimhash")
    if script is None:
        pytest.skip("the rsimhash console script is not installed next to this Python")
    help_text = subprocess.run([script, "--help"], capture_output=True, timeout=60)
    assert help_text.returncode == 0 and b"dedup" in help_text.stdout
    proc = subprocess.run(
        [script, "dedup", "--input", corpus[0], "--output", tmp_path / "o.jsonl"], capture_output=True, timeout=60
    )
    assert proc.returncode == 0 and proc.stderr.startswith(b"rsimhash dedup: 400 records read")
    assert leftovers(tmp_path) == []


def test_every_subcommand_has_help():
    for argv in (
        ["--help"],
        ["dedup", "--help"],
        ["cluster", "--help"],
        ["find-all", "--help"],
        ["fingerprint", "--help"],
        ["index", "--help"],
        ["index", "build", "--help"],
        ["index", "add", "--help"],
        ["index", "query", "--help"],
        ["index", "info", "--help"],
        ["index", "verify", "--help"],
    ):
        from rsimhash.cli import build_parser

        parser = build_parser()
        with pytest.raises(SystemExit) as e:
            parser.parse_args(argv)
        assert e.value.code == 0
    version = subprocess.run([sys.executable, "-m", "rsimhash", "--version"], capture_output=True, timeout=60)
    assert version.returncode == 0 and version.stdout.decode().strip() == f"rsimhash {rsimhash.__version__}"
    # every flag of every command says what it does
    proc = ok(run_cli("cluster", "--help"))
    for flag in (
        "--input",
        "--format",
        "--blocks",
        "--distance",
        "--output",
        "--sample",
        "--text-column",
        "--text_column",
        "--id-column",
        "--id_column",
        "--window",
        "--mode",
        "--all",
    ):
        assert flag.encode() in proc.stdout
