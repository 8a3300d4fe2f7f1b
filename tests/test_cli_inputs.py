"""Bad input on the command line: each case exits non-zero with exactly one
stderr line naming the problem (and the file and line where there is one),
no traceback, and leaves an existing output file untouched and no
temporary file behind. Also: broken pipes, and ``--skip-bad-lines`` counts."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

from cli_helpers import assert_one_error, leftovers, make_records, ok, run_cli, stderr_lines  # noqa: E402

rsimhash = pytest.importorskip("rsimhash")

GOOD = [json.dumps(r) + "\n" for r in make_records(30, seed=8)]
OLD = b"the output of an earlier run\n"


def jsonl(*bad_lines, at=20):
    """30 good records with the bad lines inserted after line ``at``."""
    return ("".join(GOOD[:at]) + "".join(bad_lines) + "".join(GOOD[at:])).encode()


# name, input file name, input bytes, extra args, exit code, needles ({f} is the input path)
CASES = [
    ("malformed json", "in.jsonl", jsonl('{"id": 99, "text": "unterminated\n'), [], 1, ["{f}:21:", "not valid JSON"]),
    ("not an object", "in.jsonl", jsonl("[1, 2, 3]\n"), [], 1, ["{f}:21:", "expected a JSON object"]),
    ("missing text", "in.jsonl", jsonl('{"id": 99, "body": "x"}\n'), [], 1, ["{f}:21:", 'no "text" field']),
    ("text not a string", "in.jsonl", jsonl('{"id": 99, "text": null}\n'), [], 1, ["{f}:21:", '"text" must be a string']),
    ("missing id", "in.jsonl", jsonl('{"text": "no id here"}\n'), [], 1, ["{f}:21:", 'no "id" field']),
    (
        "bad id type",
        "in.jsonl",
        jsonl('{"id": 1.5, "text": "a float id"}\n'),
        [],
        1,
        ["{f}:21:", '"id" must be an integer or a string'],
    ),
    ("id with a tab", "in.jsonl", jsonl('{"id": "a\\tb", "text": "x"}\n'), [], 1, ["{f}:21:", "tab"]),
    ("invalid utf-8", "in.jsonl", jsonl(), [], 1, ["{f}:31:", "not valid UTF-8"]),
    ("missing text column given", "in.jsonl", jsonl(), ["--text-column", "body"], 1, ["{f}:1:", 'no "body" field']),
    ("missing id column given", "in.jsonl", jsonl(), ["--id-column", "key"], 1, ["{f}:1:", 'no "key" field']),
    ("non-numeric hash", "in.tsv", b"id\thash\n1\t123\n2\t12x\n", [], 1, ["{f}:3:", 'hash "12x"']),
    ("negative hash", "in.tsv", b"id\thash\n1\t-5\n", [], 1, ["{f}:2:", "0..2**64-1"]),
    ("hash too large", "in.tsv", b"id\thash\n1\t18446744073709551616\n", [], 1, ["{f}:2:", "0..2**64-1"]),
    ("missing hash column", "in.tsv", b"id\tfp\n1\t5\n", [], 1, ["{f}:1:", "header", '"hash"']),
    ("wrong field count", "in.tsv", b"id\thash\n1\t5\n2\n", [], 1, ["{f}:3:", "expected 2 tab-separated fields"]),
    ("unreadable path", "missing.jsonl", None, [], 1, ["{f}", "cannot read", "No such file"]),
    # A directory is an input of shards (its files of the format): this one holds none.
    ("directory as input", "adir.jsonl", "dir", [], 1, ["{f}", "holds no file of a format"]),
    ("corrupt gzip", "in.jsonl.gz", gzip.compress(jsonl())[:-30] + b"x" * 30, [], 1, ["{f}", "cannot be read"]),
    (
        "distance >= blocks",
        "in.jsonl",
        jsonl(),
        ["--distance", "4", "--blocks", "4"],
        2,
        ["--distance 4 must be smaller than --blocks 4"],
    ),
    ("distance too large", "in.jsonl", jsonl(), ["--distance", "17"], 2, ["--distance", "0 and 16"]),
    ("unknown format", "in.jsonl", jsonl(), ["--format", "xml"], 2, ["--format", "invalid choice: 'xml'"]),
    ("unknown extension", "in.xml", jsonl(), [], 2, ["{f}", "give --format"]),
    ("unknown flag", "in.jsonl", jsonl(), ["--frobnicate"], 2, ["unrecognized arguments: --frobnicate"]),
    ("bad sample", "in.jsonl", jsonl(), ["--sample", "0"], 2, ["--sample", "at least 1"]),
]


def materialise(tmp_path, name, content):
    path = tmp_path / name
    if content == "dir":
        path.mkdir()
    elif content is not None:
        path.write_bytes(content)
    return path


@pytest.mark.parametrize("name, filename, content, extra, code, needles", CASES, ids=[c[0] for c in CASES])
def test_bad_input_cluster(tmp_path, name, filename, content, extra, code, needles):
    if name == "invalid utf-8":
        content = content + b'{"id": 7, "text": "caf\xe9"}\n'
    path = materialise(tmp_path, filename, content)
    out = tmp_path / "out.tsv"
    out.write_bytes(OLD)
    fmt = ["--format", "hash"] if filename.endswith(".tsv") else []
    proc = run_cli("cluster", "--input", path, "--output", out, *fmt, *extra)
    assert_one_error(proc, code, *[n.format(f=path) for n in needles])
    assert out.read_bytes() == OLD
    assert leftovers(tmp_path) == []


@pytest.mark.parametrize(
    "command",
    [
        ["dedup", "--removed", "{d}/removed.tsv"],
        ["fingerprint"],
        ["index", "build"],
        ["find-all", "-f", "json"],
    ],
)
def test_bad_line_stops_every_command(tmp_path, command):
    """Output written before the bad line is not left behind: every output of
    the run stays as it was."""
    path = materialise(tmp_path, "in.jsonl", jsonl('{"id": 99, "text": "unterminated\n', at=25))
    out = tmp_path / "out"
    out.write_bytes(OLD)
    argv = [a.format(d=tmp_path) for a in command]
    proc = run_cli(*argv, "--input", path, "--output", out, "--chunk-mb", "0.001")
    assert_one_error(proc, 1, f"{path}:26:", "not valid JSON")
    assert out.read_bytes() == OLD
    assert sorted(os.listdir(tmp_path)) == ["in.jsonl", "out"]


def test_bad_decimal_line_find_all(tmp_path):
    path = tmp_path / "h.txt"
    path.write_bytes(b"12\n\n34\nabc\n")
    assert_one_error(run_cli("find-all", "--input", path), 1, f"{path}:4:", '"abc" is not a decimal integer')
    proc = ok(run_cli("find-all", "--input", path, "--skip-bad-lines", "-k", "16"))
    lines = stderr_lines(proc)
    assert lines[0] == f'rsimhash: warning: {path}:4: "abc" is not a decimal integer in 0..2**64-1 (line skipped)'
    assert "2 fingerprints read" in lines[1] and "1 bad line skipped" in lines[1]
    assert proc.stdout == b"[12, 34]\n"


def test_parquet_errors(tmp_path):
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    path = tmp_path / "in.parquet"
    pq.write_table(pa.table({"id": [1, 2, 3], "body": ["a b c", None, "d e f"]}), path)
    assert_one_error(run_cli("fingerprint", "-i", path), 1, str(path), 'no column "text"', "body")
    assert_one_error(run_cli("fingerprint", "-i", path, "--text-column", "body"), 1, f"{path}:row 2:", '"body" is null')
    proc = ok(run_cli("fingerprint", "-i", path, "--text-column", "body", "--skip-bad-lines"))
    assert [line.split("\t")[0] for line in proc.stdout.decode().splitlines()] == ["id", "1", "3"]
    not_parquet = tmp_path / "fake.parquet"
    not_parquet.write_bytes(b"PAR1 but not really")
    assert_one_error(run_cli("dedup", "-i", not_parquet, "-o", tmp_path / "o"), 1, str(not_parquet), "Parquet")


def test_cut_short_gzip_is_a_bad_line(tmp_path):
    """A stream that stops early names the line where it stops; with
    --skip-bad-lines the records before it are kept and it is counted."""
    records = "".join(json.dumps({"id": i, "text": f"record {i} alpha{i} beta{i} gamma{i}"}) + "\n" for i in range(3000))
    packed = gzip.compress(records.encode())
    path = tmp_path / "in.jsonl.gz"
    path.write_bytes(packed[: len(packed) // 2])
    out = tmp_path / "kept.jsonl"
    line = assert_one_error(
        run_cli("dedup", "-i", path, "-o", out, "-k", "0"), 1, str(path), "the gzip stream cannot be read past this line"
    )
    at = int(line.split(f"{path}:")[1].split(":")[0])
    assert 1 < at < 3000
    assert not out.exists()
    proc = ok(run_cli("dedup", "-i", path, "-o", out, "-k", "0", "--skip-bad-lines"))
    warning, summary = stderr_lines(proc)
    assert warning.startswith(f"rsimhash: warning: {path}:{at}: the gzip stream cannot be read past this line")
    assert f"{at - 1:,} records read" in summary and "1 bad line skipped" in summary
    assert out.read_bytes() == "".join(records.splitlines(keepends=True)[: at - 1]).encode()


def test_skip_bad_lines_caps_messages(tmp_path):
    path = tmp_path / "in.jsonl"
    path.write_bytes(jsonl(*["not json\n"] * 30))
    proc = ok(run_cli("dedup", "-i", path, "-o", tmp_path / "o.jsonl", "--skip-bad-lines"))
    lines = stderr_lines(proc)
    assert len(lines) == 22  # 20 warnings, one line saying the rest are only counted, the summary
    assert "more bad lines" in lines[20]
    assert "30 records read" in lines[21] and "30 bad lines skipped" in lines[21]


def test_output_problems(tmp_path):
    path = tmp_path / "in.jsonl"
    path.write_bytes(jsonl())
    assert_one_error(
        run_cli("dedup", "-i", path, "-o", tmp_path / "no" / "such" / "dir.jsonl"), 1, "cannot write", "No such file"
    )
    assert_one_error(run_cli("dedup", "-i", path, "-o", tmp_path), 1, "cannot write", "directory")
    assert_one_error(run_cli("dedup", "-i", path, "-o", "-", "--removed", "-"), 2, "only one output")
    # --output defaults to stdout (as find-all's); --removed to stdout then clashes with it
    assert_one_error(run_cli("dedup", "-i", path, "--removed", "-"), 2, "only one output")
    assert_one_error(run_cli("index", "build", "-i", path, "-o", "-"), 2, "not stdout")
    tsv = tmp_path / "h.tsv"
    tsv.write_bytes(b"id\thash\n1\t2\n")
    assert_one_error(run_cli("fingerprint", "-i", tsv), 2, "--format hash cannot be used")
    proc = run_cli()
    assert proc.returncode == 2 and b"dedup" in proc.stderr and b"Traceback" not in proc.stderr


def test_broken_pipe_is_quiet(tmp_path):
    path = tmp_path / "in.jsonl"
    path.write_bytes(b"".join(jsonl() for _ in range(200)))  # 6,000 records
    proc = subprocess.Popen(
        [sys.executable, "-m", "rsimhash.cli", "fingerprint", "-i", path, "--chunk-mb", "0.01"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None and proc.stderr is not None
    assert proc.stdout.readline() == b"id\thash\n"
    proc.stdout.close()  # as `| head -1` does
    err = proc.stderr.read()
    proc.stderr.close()
    assert proc.wait(timeout=60) == 141
    assert err == b""


def test_ctrl_c_leaves_no_output(tmp_path):
    """Interrupted while reading stdin: exit 130, one line, the old output kept."""
    signal = pytest.importorskip("signal")
    out = tmp_path / "out.jsonl"
    out.write_bytes(OLD)
    # SIGINT back to its default: a test run started in the background by a
    # shell has it ignored, and the child would then never see Ctrl-C.
    proc = subprocess.Popen(
        [sys.executable, "-m", "rsimhash.cli", "dedup", "-i", "-", "-o", out, "--chunk-mb", "0.001"],
        stdin=subprocess.PIPE,
        stderr=subprocess.PIPE,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    assert proc.stdin is not None and proc.stderr is not None
    proc.stdin.write(jsonl())
    proc.stdin.flush()
    import time

    deadline = time.monotonic() + 60
    while not leftovers(tmp_path) and time.monotonic() < deadline:  # the run has opened its output
        time.sleep(0.05)
    time.sleep(0.2)
    proc.send_signal(signal.SIGINT)
    err = proc.stderr.read()
    proc.stderr.close()
    proc.stdin.close()
    assert proc.wait(timeout=60) == 130
    assert err == b"rsimhash: interrupted\n"
    assert out.read_bytes() == OLD and leftovers(tmp_path) == []


def test_only_a_process_of_its_own_freezes_the_heap(tmp_path):
    """The command line hands what it has made by the time it runs to
    ``gc.freeze`` (the collector then never walks it again, at exit above
    all) when it is the process: called in-process, as a script may call
    it, the caller's objects are left to the collector."""
    import gc

    from rsimhash.cli import main

    fps = tmp_path / "fps.txt"
    fps.write_text("1\n3\n")
    args = ["find-all", "--input", str(fps), "--output", str(tmp_path / "pairs.jsonl"), "-q"]
    before = gc.get_freeze_count()
    assert main(args) == 0
    assert gc.get_freeze_count() == before
    code = (
        "import gc, sys\n"
        "from rsimhash.cli import main\n"
        f"sys.argv = ['rsimhash'] + {args!r}\n"
        "code = main()\n"
        "print(code, gc.get_freeze_count() > 0)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, timeout=120)
    assert proc.stdout.decode().split() == ["0", "True"], proc.stderr.decode(errors="replace")
