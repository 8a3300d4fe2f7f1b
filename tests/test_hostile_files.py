"""A careless or hostile user's files (issue 24, items 1, 2, 6, 9 and 10):
work directories holding the user's own files, symlinks planted in a killed
job's state, processes killed with SIGKILL mid-save and mid-run, disks that
fill up. Nothing of the user's is ever removed or written through, and what
a dead process left is cleaned up by the next run of the same target.

SIGKILL tests kill a real child process; full disks are small tmpfs mounts
(skipped where this process may not mount one), or ``RLIMIT_FSIZE``.
"""

from __future__ import annotations

import glob
import os
import signal
import stat
import subprocess
import sys
import textwrap
import threading
import time

import numpy as np
import pytest

import rsimhash
from cli_helpers import make_records, ok, run_cli, write_jsonl

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals, symlinks and mounts")

USER_FILES = [
    "notes.tmp",
    "experiment.run",
    "thesis.done",
    "t000.done",
    "t001-000.pairs",
    "t002-0000.spill",
    "job.txt",
    "job.lock",
    "ids-0000.run",
    "keep.txt",
]


def fill(directory, names=USER_FILES):
    for name in names:
        (directory / name).write_text("the user's " + name)


def untouched(directory, names=USER_FILES):
    return sorted(os.listdir(directory)) == sorted(names) and all(
        (directory / name).read_text() == "the user's " + name for name in names
    )


def child(code: str, **kwargs) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(code)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kwargs
    )


@pytest.fixture
def tmpfs(tmp_path):
    """A function mounting a tmpfs of ``size`` bytes at a new directory; unmounted after."""
    mounts = []

    def mount(size: int):
        path = tmp_path / f"tmpfs{len(mounts)}"
        path.mkdir()
        r = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)], capture_output=True)
        if r.returncode != 0:
            pytest.skip(f"cannot mount a tmpfs here: {r.stderr.decode(errors='replace').strip()}")
        mounts.append(path)
        return path

    yield mount
    for path in mounts:
        subprocess.run(["umount", "-l", str(path)], capture_output=True)


# -- item 1: a work directory keeps the user's files ---------------------------------


def test_a_work_directory_keeps_the_users_files(tmp_path):
    """The issue's reproduction, for each job, with an array and with Parquet
    (whose column is copied into a spill directory of the job's own)."""
    fps = np.arange(1000, dtype=np.uint64)
    work = tmp_path / "w"
    work.mkdir()
    fill(work)
    pairs = rsimhash.batch.find_all(fps, k=3, workdir=str(work), progress=False)
    assert len(pairs) > 0 and untouched(work)
    rsimhash.batch.dedup(fps, k=3, workdir=work, progress=False)
    rsimhash.batch.clusters(fps, k=3, workdir=work, progress=False, memory_limit="64KiB")
    rsimhash.batch.find_all(fps, k=3, workdir=work, ids=fps[::-1].copy(), progress=False, memory_limit="64KiB")
    assert untouched(work)
    empty = tmp_path / "empty"
    empty.mkdir()
    rsimhash.batch.find_all(fps, k=3, workdir=empty, progress=False)
    assert empty.is_dir() and os.listdir(empty) == [], "a directory the user made stays"
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    pq.write_table(pa.table({"fp": fps}), tmp_path / "fps.parquet")
    got = rsimhash.batch.find_all(tmp_path / "fps.parquet", k=3, column="fp", workdir=work, progress=False)
    assert np.array_equal(got, pairs) and untouched(work)


# -- item 2: a symlink planted in a killed job's state is not followed ---------------

KILLED_JOB = """
    import os, signal, rsimhash
    def stop(done, total, step, *_):
        # Tables 1 and 2 are done once a later one is under way.
        if step.startswith("table ") and int(step.split()[1]) >= 3:
            os.kill(os.getpid(), signal.SIGKILL)
    rsimhash.batch.find_all({source!r}, k=3, blocks=5, memory_limit="1MiB", workdir={work!r}, progress=stop)
"""


def test_a_planted_symlink_is_not_followed_on_resume(tmp_path):
    rng = np.random.default_rng(5)
    fps = rng.integers(0, 2**64, size=1_000_000, dtype=np.uint64)
    fps[1::97] = fps[::97][: len(fps[1::97])] ^ np.uint64(0b101)
    source = tmp_path / "fps.npy"
    np.save(source, fps)
    expected = rsimhash.batch.find_all(fps, k=3, blocks=5, progress=False)
    work = tmp_path / "w"
    proc = child(KILLED_JOB.format(source=str(source), work=str(work)))
    proc.communicate(timeout=120)
    assert proc.returncode == -signal.SIGKILL, "killed by itself between tables"
    [own] = glob.glob(str(work / "rsimhash-job-*"))
    done = sorted(n for n in os.listdir(own) if n.endswith(".done"))
    assert done[:2] == ["t000.done", "t001.done"]
    nxt = len(done)
    outside = tmp_path / "outside.txt"
    outside.write_text("precious")
    for name in (f"t{nxt:03d}.done.tmp", f"t{nxt:03d}-000.pairs", f"t{nxt:03d}-0000.spill", "job.txt.tmp"):
        if os.path.lexists(os.path.join(own, name)):  # the killed table's own leftovers, replaced
            os.remove(os.path.join(own, name))
        os.symlink(outside, os.path.join(own, name))
    steps = []
    got = rsimhash.batch.find_all(
        source, k=3, blocks=5, memory_limit="1MiB", workdir=work, progress=lambda *a: steps.append(a[2])
    )
    assert np.array_equal(got, expected)
    assert outside.read_text() == "precious", "the symlinks' target is never written"
    assert not any(s.startswith("table 1 of") for s in steps), "the finished tables are not done again"
    assert not work.exists(), "the job made the work directory: removed when done"


# -- item 6: temporaries of killed processes are removed by the next run -------------

SAVING = """
    import sys, numpy as np, rsimhash
    fps = np.random.default_rng(3).integers(0, 2**64, size=1_500_000, dtype=np.uint64)
    index = rsimhash.Index(3)
    index.add(fps)
    print("built", flush=True)
    sys.stdin.readline()
    while True:
        index.save({path!r})
"""


def test_killed_saves_leave_temporaries_that_the_next_save_removes(tmp_path):
    path = tmp_path / "idx.rsh"
    killed = []
    for _ in range(3):
        proc = child(SAVING.format(path=str(path)), stdin=subprocess.PIPE)
        assert proc.stdout.readline().strip() == "built"
        proc.stdin.write("go\n")
        proc.stdin.flush()
        pattern = str(tmp_path / f".idx.rsh.{proc.pid}.*.tmp")
        end = time.monotonic() + 60
        while not glob.glob(pattern) and time.monotonic() < end and proc.poll() is None:
            time.sleep(0.001)
        proc.kill()
        proc.communicate()
        killed += glob.glob(pattern)
    assert killed, "a kill caught a save midway"
    index = rsimhash.Index(3)
    index.add(np.arange(10, dtype=np.uint64))
    (tmp_path / ".idx.rsh.notes.tmp").write_text("the user's")
    index.save(path)
    assert sorted(os.listdir(tmp_path)) == [".idx.rsh.notes.tmp", "idx.rsh"], "only the dead saves' temporaries go"
    assert len(rsimhash.Index.load(path)) == 10


def test_killed_cli_runs_leave_nothing_after_the_next_run(tmp_path):
    records = make_records(200, seed=3)
    data = write_jsonl(tmp_path / "in.jsonl", records)
    work = tmp_path / "w"
    work.mkdir()
    fill(work)
    out, removed = tmp_path / "kept.jsonl", tmp_path / "removed.tsv"
    args = [sys.executable, "-m", "rsimhash.cli", "dedup", "--input", "-", "--output", str(out), "--removed", str(removed), "-q"]
    # stdin held open, so the run waits for input: first streaming (its
    # outputs' temporaries made), then copying stdin to its work directory.
    seen = []
    for extra, made in (
        ([], ".*.{pid}.*.tmp"),
        ([], ".*.{pid}.*.tmp"),
        (["--workdir", str(work)], "w/.rsimhash-work-{pid}-*/stdin-*"),
    ):
        proc = subprocess.Popen(args + extra, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        proc.stdin.write(data[:100])
        proc.stdin.flush()
        end = time.monotonic() + 30
        while len(glob.glob(str(tmp_path / made.format(pid=proc.pid)))) < 2 - bool(extra) and time.monotonic() < end:
            time.sleep(0.01)
        proc.kill()
        proc.communicate()
        left = glob.glob(str(work / ".rsimhash-work-*")) if extra else glob.glob(str(tmp_path / ".*.tmp"))
        assert left and all(str(proc.pid) in p for p in left), "a run removes what killed runs before it left"
        seen.append(left)
    # .kept.jsonl.PID.*.tmp and .removed.tsv.PID.*.tmp, twice; a work directory
    assert [len(s) for s in seen] == [2, 2, 1]
    assert len(glob.glob(str(tmp_path / ".*.tmp"))) == 2
    p = run_cli(
        "dedup",
        "--input",
        tmp_path / "in.jsonl",
        "--output",
        out,
        "--removed",
        removed,
        "--workdir",
        work,
        "--memory-limit",
        "1GiB",
        "-q",
    )
    assert p.returncode == 0, p.stderr
    assert sorted(os.listdir(tmp_path)) == ["in.jsonl", "kept.jsonl", "removed.tsv", "w"]
    assert untouched(work), "the killed runs' work directories go; the user's files stay"


def test_a_full_disk_leaves_no_spill_files(tmp_path, tmpfs):
    """The disk fills up (another program's file) while a table is spilled:
    a clear error, and the spill files are gone from the full disk."""
    disk = tmpfs(96 << 20)  # room for the job's check (12 bytes an item and 64 MiB), not for more
    rng = np.random.default_rng(8)
    source = tmp_path / "fps.npy"
    np.save(source, rng.integers(0, 2**64, size=1_000_000, dtype=np.uint64))
    code = f"""
        import os, rsimhash
        filled = []
        def filler(done, total, step, *_):
            if step.startswith("table ") and not filled:  # someone else takes the room left
                filled.append(1)
                with open({str(disk / "other.bin")!r}, "wb") as f:
                    try:
                        while True:
                            f.write(b"x" * (1 << 20))
                    except OSError:
                        pass
        try:
            rsimhash.batch.find_all({str(source)!r}, k=3, blocks=5, memory_limit="2MiB", _spill=True,
                                    workdir={str(disk / "w")!r}, progress=filler)
        except OSError as e:
            print("OSError", e)
    """
    proc = child(code)
    stdout, stderr = proc.communicate(timeout=300)
    assert proc.returncode == 0, stderr
    assert "OSError" in stdout and "No space left" in stdout, (stdout, stderr)
    left = [os.path.relpath(os.path.join(d, f), disk) for d, _, files in os.walk(disk) for f in files]
    assert not [f for f in left if f.endswith(".spill")], left


# -- items 9 and 10 ------------------------------------------------------------------------


def test_repeated_ids_are_refused_by_every_job():
    fps = np.array([1, 2, 3, 4], dtype=np.uint64)
    ids = np.array([10, 20, 10, 30], dtype=np.uint64)
    for job in (rsimhash.batch.find_all, rsimhash.batch.dedup, rsimhash.batch.clusters):
        with pytest.raises(ValueError, match="id 10 given twice"):
            job(fps, k=1, ids=ids, progress=False)


def test_clusters_out_resumes(tmp_path):
    """``clusters(out=...)`` keeps its state in ``out + ".work"`` as the docs
    say ``out=`` jobs do: killed midway, it resumes after the finished tables."""
    rng = np.random.default_rng(9)
    fps = rng.integers(0, 2**64, size=1_000_000, dtype=np.uint64)
    fps[1::50] = fps[::50][: len(fps[1::50])] ^ np.uint64(0b11)
    source = tmp_path / "fps.npy"
    np.save(source, fps)
    out = tmp_path / "c.tsv"
    code = f"""
        import os, signal, rsimhash
        def stop(done, total, step, *_):
            if step.startswith("table ") and int(step.split()[1]) >= 3:  # tables 1 and 2 done
                os.kill(os.getpid(), signal.SIGKILL)
        rsimhash.batch.clusters({str(source)!r}, k=3, blocks=5, memory_limit="1MiB", out={str(out)!r}, progress=stop)
    """
    proc = child(code)
    proc.communicate(timeout=120)
    assert proc.returncode == -signal.SIGKILL
    assert glob.glob(str(tmp_path / "c.tsv.work" / "rsimhash-job-*" / "t001.done"))
    steps = []
    n = rsimhash.batch.clusters(source, k=3, blocks=5, memory_limit="1MiB", out=out, progress=lambda *a: steps.append(a[2]))
    assert not any(s.startswith("table 1 of") for s in steps)
    ids, labels = rsimhash.batch.clusters(fps, k=3, blocks=5, progress=False)
    rows = out.read_text().splitlines()
    assert n == len(ids) == len(rows) - 1
    assert rows[1:] == [f"{a}\t{b}" for a, b in zip(ids.tolist(), labels.tolist())]
    assert sorted(os.listdir(tmp_path)) == ["c.tsv", "fps.npy"]


def test_a_full_disk_names_the_clusters_output(tmp_path, tmpfs):
    disk = tmpfs(64 << 10)
    fps = np.repeat(np.arange(20_000, dtype=np.uint64) << np.uint64(20), 2)
    with pytest.raises(OSError) as e:
        rsimhash.batch.clusters(fps, k=1, out=disk / "c.tsv", workdir=tmp_path / "w", progress=False)
    assert f"{disk / 'c.tsv'}: cannot write" in str(e.value) and "No space left" in str(e.value)
    assert os.listdir(disk) == [], "no partial output, no temporary file"


@pytest.mark.parametrize("suffix", [".jsonl", ".jsonl.gz", ".parquet"])
def test_a_full_disk_names_the_dedup_output(tmp_path, tmpfs, suffix):
    """The kept records (lines written by the core's pool or through a
    compressor, Parquet rows encoded by pyarrow on the writer's thread)
    fill the disk: the error names the output, and nothing is left on it."""
    disk = tmpfs(256 << 10)
    rng = np.random.default_rng(5)
    records = [{"id": i, "text": " ".join(f"w{x}" for x in rng.integers(0, 10**9, 60))} for i in range(3000)]
    if suffix == ".parquet":
        pa = pytest.importorskip("pyarrow")
        import pyarrow.parquet as pq

        src = tmp_path / "in.parquet"
        pq.write_table(pa.Table.from_pylist(records), src, row_group_size=500)
    else:
        src = tmp_path / "in.jsonl"
        write_jsonl(src, records)
    out = disk / f"kept{suffix}"
    r = run_cli("dedup", "-i", src, "-o", out, "--removed", disk / "removed.tsv", "--chunk-mb", "0.1")
    err = r.stderr.decode()
    assert r.returncode == 1, err
    assert f"{out}: cannot write" in err and "No space left" in err, err
    assert "Traceback" not in err
    assert os.listdir(disk) == [], "no partial output, no temporary file"


# -- outputs that are devices or pipes are never replaced by a file ------------------------


def _null_device(path) -> None:
    try:
        os.mknod(path, stat.S_IFCHR | 0o666, os.makedev(1, 3))  # a private /dev/null
    except (PermissionError, AttributeError):
        pytest.skip("making a device node needs root")


def test_a_device_or_a_pipe_as_output_is_written_not_replaced(tmp_path):
    """``--output /dev/null`` (here a private null device) and a FIFO are
    written as the run goes; renaming the finished file over them would
    replace the device with a plain file."""
    src = tmp_path / "in.jsonl"
    src.write_text("".join(f'{{"id": {i}, "text": "page {i % 5} of the same site"}}\n' for i in range(50)))
    null = tmp_path / "null"
    _null_device(null)
    ok(run_cli("dedup", "--input", src, "--output", null, "--removed", null, "-q"))
    assert stat.S_ISCHR(os.stat(null).st_mode), "still the device"
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    got = []

    def read() -> None:
        with open(fifo, "rb") as f:
            got.append(f.read())

    reader = threading.Thread(target=read)
    reader.start()
    ok(run_cli("dedup", "--input", src, "--output", fifo, "-q"))
    reader.join(timeout=60)
    assert stat.S_ISFIFO(os.stat(fifo).st_mode) and got and len(got[0].splitlines()) == 5
    assert sorted(os.listdir(tmp_path)) == ["fifo", "in.jsonl", "null"], "no temporary file left"


def test_saving_over_a_device_or_a_pipe_is_refused(tmp_path):
    null = tmp_path / "null"
    _null_device(null)
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    index = rsimhash.Index(3)
    index.add(np.arange(100, dtype=np.uint64))
    fps = np.arange(100, dtype=np.uint64)
    for target in (null, fifo):
        with pytest.raises(OSError, match="device, a pipe or a socket"):
            index.save(target)
        os.symlink(target, tmp_path / "pairs.npy")
        with pytest.raises(OSError, match="device, a pipe or a socket"):
            rsimhash.batch.find_all(fps, k=3, out=tmp_path / "pairs.npy", progress=False)
        os.remove(tmp_path / "pairs.npy")
        os.symlink(target, tmp_path / "c.tsv")
        with pytest.raises(OSError, match="device, a pipe or a socket"):
            rsimhash.batch.clusters(fps, k=3, out=tmp_path / "c.tsv", progress=False)
        os.remove(tmp_path / "c.tsv")
    assert stat.S_ISCHR(os.stat(null).st_mode) and stat.S_ISFIFO(os.stat(fifo).st_mode)
