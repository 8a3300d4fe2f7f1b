"""Batch jobs that stop before their end: killed (SIGKILL) and started again,
interrupted (Ctrl-C), or out of disk. A restarted job gives byte-identical
output; a stopped one never leaves a partial output file.

Each job runs in a subprocess (``python -c``) so that it can be killed.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from rsimhash import batch

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals and rlimits")

N = 1_500_000
# Ten tables, each in several parts spilled to the work directory: slow
# enough (a few seconds) to be killed between tables.
JOB = dict(k=3, blocks=5, memory_limit="4MiB")


def planted(n: int, seed: int = 11) -> np.ndarray:
    rng = np.random.default_rng(seed)
    fps = rng.integers(0, 2**64, size=n, dtype=np.uint64)
    dup = np.flatnonzero(rng.random(n) < 0.01)[1:]
    fps[dup] = fps[dup - 1] ^ np.uint64(0b1011)
    return fps


@pytest.fixture(scope="module")
def source(tmp_path_factory):
    path = tmp_path_factory.mktemp("src") / "fps.npy"
    np.save(path, planted(N))
    return str(path)


@pytest.fixture(scope="module")
def reference(source, tmp_path_factory):
    out = tmp_path_factory.mktemp("ref") / "pairs.npy"
    batch.find_all(source, out=out, progress=False, **JOB)
    return out.read_bytes()


def start(code: str, **env) -> subprocess.Popen:
    # SIGINT back to its default: a test run started in the background by a
    # shell has it ignored, and a child would then never see Ctrl-C.
    return subprocess.Popen(
        [sys.executable, "-c", code],
        env={**os.environ, **env},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )


def job_code(source: str, out: str, **extra) -> str:
    args = dict(JOB, out=out, progress=False, **extra)
    return f"import rsimhash\nrsimhash.batch.find_all({source!r}, **{args!r})\n"


def wait_for(predicate, seconds: float = 120.0) -> None:
    end = time.monotonic() + seconds
    while not predicate():
        if time.monotonic() > end:
            raise AssertionError("timed out")
        time.sleep(0.02)


def test_killed_then_resumed_gives_the_same_bytes(source, reference, tmp_path):
    out = tmp_path / "pairs.npy"
    work = tmp_path / "pairs.npy.work"  # the default work directory beside out
    proc = start(job_code(source, str(out)))
    try:
        # The job's state is in a directory of its own inside the work directory.
        wait_for(lambda: any(work.glob("rsimhash-job-*/t001.done")) or proc.poll() is not None)
        assert proc.poll() is None, "the job ended before it could be killed"
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.communicate()
    assert not out.exists(), "a killed job leaves no output"
    assert [p for p in os.listdir(tmp_path) if p != "pairs.npy.work"] == []
    [own] = work.iterdir()
    finished = sorted(p for p in os.listdir(own) if p.endswith(".done"))
    assert finished[:2] == ["t000.done", "t001.done"]

    steps = []
    count = batch.find_all(source, out=out, progress=lambda *a: steps.append(a[2]), **JOB)
    assert out.read_bytes() == reference
    assert count == (len(reference) - 128) // 16
    assert not any(s.startswith(("table 1 of", "table 2 of")) for s in steps), "finished tables are not redone"
    assert os.listdir(tmp_path) == ["pairs.npy"], "the work directory is removed at the end"


def test_killed_at_any_moment_leaves_no_partial_output(source, reference, tmp_path):
    out = tmp_path / "pairs.npy"
    t = time.monotonic()
    subprocess.run([sys.executable, "-c", job_code(source, str(tmp_path / "timing.npy"))], check=True)
    duration = time.monotonic() - t
    os.remove(tmp_path / "timing.npy")
    # Kills spread over the whole job, its last moments (writing) included.
    for share in (0.3, 0.6, 0.8, 0.9, 0.95, 0.98):
        proc = start(job_code(source, str(out)))
        time.sleep(duration * share)
        try:
            os.kill(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.communicate()
        if out.exists():
            assert out.read_bytes() == reference, f"killed at {share:.0%}: a partial output"
            os.remove(out)
    batch.find_all(source, out=out, progress=False, **JOB)
    assert out.read_bytes() == reference
    left = sorted(os.path.relpath(os.path.join(d, f), tmp_path) for d, ds, fs in os.walk(tmp_path) for f in fs + ds)
    assert os.listdir(tmp_path) == ["pairs.npy"], f"stale temporary files of the killed jobs are removed; left: {left}"


def test_ctrl_c_stops_the_job_and_cleans_up(source, tmp_path):
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    code = (
        "import rsimhash, sys\n"
        "print('started', flush=True)\n"
        "try:\n"
        "    while True:  # jobs of a second or more, one after another\n"
        f"        rsimhash.batch.find_all({source!r}, k=3, blocks=5, memory_limit='64KiB', progress=False)\n"
        "except KeyboardInterrupt:\n"
        "    print('interrupted', flush=True)\n"
    )
    proc = start(code, TMPDIR=str(tmp))
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == "started"
    time.sleep(1.0)
    proc.send_signal(signal.SIGINT)
    t = time.monotonic()
    try:
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:  # never left running, whatever the test's outcome
            proc.kill()
            proc.communicate()
    assert time.monotonic() - t < 5, "Ctrl-C is answered within a poll or a chunk"
    assert "interrupted" in out, err
    assert os.listdir(tmp) == [], "the temporary work directory is removed"


def test_a_full_disk_is_a_clear_error(source, tmp_path):
    out = tmp_path / "pairs.npy"
    code = (
        "import resource, signal\n"
        "signal.signal(signal.SIGXFSZ, signal.SIG_IGN)\n"
        "resource.setrlimit(resource.RLIMIT_FSIZE, (1 << 20, 1 << 20))\n"  # files of 1 MiB at most
        "import rsimhash\n"
        "try:\n"
        f"    {job_code(source, str(out)).splitlines()[1]}\n"
        "except OSError as e:\n"
        "    print(type(e).__name__, e)\n"
    )
    proc = start(code)
    stdout, stderr = proc.communicate(timeout=300)
    assert "File too large" in stdout and ".spill" in stdout, (stdout, stderr)
    assert not out.exists()
