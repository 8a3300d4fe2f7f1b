"""Running out of memory (issue 24, item 3): a large buffer that cannot be
had is a ``MemoryError`` in Python and one line with exit 1 on the command
line, never an abort (SIGABRT, "memory allocation of N bytes failed"); a
record longer than the stated limit (256 MiB by default) is a bad line, not
an allocation.

Each case runs in a child process under ``RLIMIT_AS`` (an address-space
limit, as ``ulimit -v`` sets), which must end by itself: exit 0 with the
outcome on stdout, never by a signal. The children run with
``MIMALLOC_ARENA_RESERVE=0``: by default mimalloc reserves its memory a GiB
of address space at a time, from which it serves later allocations without
asking the OS, so a limit set after that reservation would not be felt.
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import rsimhash
from cli_helpers import assert_one_error, make_records, ok, run_cli

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="RLIMIT_AS")
ENV = {**os.environ, "MIMALLOC_ARENA_RESERVE": "0"}

LIMITED = """
    import resource, sys
    import numpy as np
    import rsimhash

    rsimhash.fingerprints(["warm up the thread pool"] * 64)

    def limit(mib):
        # The limit is above what the process holds now (the interpreter, numpy, the data).
        size = int(open("/proc/self/status").read().split("VmSize:")[1].split()[0]) * 1024
        size += int(mib * (1 << 20))
        resource.setrlimit(resource.RLIMIT_AS, (size, size))
"""


def run_limited(body: str, *args: str) -> str:
    code = textwrap.dedent(LIMITED) + textwrap.dedent(body)
    proc = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=300, env=ENV)
    assert proc.returncode == 0, (proc.returncode, proc.stderr[-2000:])
    assert "memory allocation of" not in proc.stderr
    return proc.stdout


def test_index_add_under_an_address_space_limit():
    """At every limit: the fingerprints are added, or ``MemoryError``; then the
    index answers (nothing was changed) or, if a rebuild ran out midway,
    refuses with ``ValueError`` saying it is incomplete. Never an abort."""
    outcomes = []
    for mib in (16, 250, 2000):
        code = textwrap.dedent(LIMITED) + textwrap.dedent("""
            n = 3_000_000
            fps = np.random.default_rng(1).integers(0, 2**64, size=2 * n, dtype=np.uint64)
            index = rsimhash.Index(3)
            index.add(fps[:n // 4])
            limit(float(sys.argv[1]))
            try:
                index.add(fps[n:])
                print("added", len(index))
            except MemoryError as e:
                print("MemoryError", "out of memory" in str(e))
            try:
                qi, ids, _ = index.query_batch(fps[:1000])
                print("answers", len(index), int((ids[qi == 0] == 0).any()))
            except ValueError as e:
                print("refused", "incomplete" in str(e))
        """)
        proc = subprocess.run([sys.executable, "-c", code, str(mib)], capture_output=True, text=True, timeout=300, env=ENV)
        assert proc.returncode == 0, (mib, proc.returncode, proc.stderr[-2000:])
        lines = proc.stdout.split("\n")
        outcomes.append(lines[0].split()[0])
        if lines[0].startswith("MemoryError"):
            assert lines[0] == "MemoryError True"
            assert lines[1] in ("answers 750000 1", "refused True"), lines
        else:
            assert lines == ["added 3750000", "answers 3750000 1", ""], lines
    assert outcomes[0] == "MemoryError" and outcomes[-1] == "added", outcomes


def test_index_load_into_memory_under_a_limit(tmp_path):
    index = rsimhash.Index(3)
    index.add(np.random.default_rng(2).integers(0, 2**64, size=1_000_000, dtype=np.uint64))
    index.save(tmp_path / "i.rsh")
    out = run_limited(f"""
        limit(8)
        try:
            rsimhash.Index.load({str(tmp_path / "i.rsh")!r}, mmap=False)
            print("loaded")
        except MemoryError:
            print("MemoryError")
    """)
    assert out.split() == ["MemoryError"]


def test_a_batch_job_beyond_its_address_space():
    """A job whose memory_limit is more than the process may have: its
    arrays are refused, a MemoryError, not an abort."""
    out = run_limited("""
        fps = np.random.default_rng(3).integers(0, 2**64, size=3_000_000, dtype=np.uint64)
        limit(20)
        try:
            rsimhash.batch.find_all(fps, k=3, memory_limit="8GiB", progress=False)
            print("done")
        except MemoryError:
            print("MemoryError")
    """)
    assert out.split() == ["MemoryError"]


# -- records longer than the limit -------------------------------------------------------


def _limited(mib: int):
    def set_limit():
        resource.setrlimit(resource.RLIMIT_AS, (mib << 20, mib << 20))

    return set_limit


def test_an_endless_line_is_a_bad_line_not_an_allocation(tmp_path):
    """``--input /dev/zero``: one line with no end. Under a 3 GiB limit (with
    mimalloc's default reservation of 1 GiB) the run stops at 256 MiB with
    one line naming the limit, exit 1; it does not grow its buffer to the
    process's limit (then "out of memory")."""
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "rsimhash.cli",
            "dedup",
            "--input",
            "/dev/zero",
            "--format",
            "json",
            "--output",
            str(tmp_path / "o.jsonl"),
        ],
        capture_output=True,
        timeout=120,
        preexec_fn=_limited(3072),
    )
    assert_one_error(proc, 1, "/dev/zero:1", "longer than 256 MiB", "--max-record-mb")
    assert not (tmp_path / "o.jsonl").exists()


@pytest.mark.parametrize("fmt", ["json", "hash"])
def test_a_long_line_is_skipped_with_skip_bad_lines(tmp_path, fmt):
    records = make_records(20, seed=6)
    if fmt == "json":
        lines = [__import__("json").dumps(r) for r in records]
        lines.insert(7, '{"id": 99, "text": "' + "x " * (1 << 20) + '"}')  # 2 MiB
        path = tmp_path / "c.jsonl"
    else:
        lines = ["id\thash"] + [f"{r['id']}\t{i}" for i, r in enumerate(records)]
        lines.insert(7, "99\t" + "1" * (2 << 20))
        path = tmp_path / "c.tsv"
    path.write_text("\n".join(lines) + "\n")
    out = tmp_path / "o.txt"
    assert_one_error(run_cli("dedup", "-i", path, "-o", out, "--max-record-mb", "1"), 1, f"{path.name}:8", "longer than 1 MiB")
    p = ok(run_cli("dedup", "-i", path, "-o", out, "--max-record-mb", "1", "--skip-bad-lines", "--chunk-mb", "0.25"))
    assert "longer than 1 MiB" in p.stderr.decode() and "1 bad line skipped" in p.stderr.decode()
    kept = out.read_text().splitlines()
    assert len(kept) >= 2 and not any(len(line) > 1 << 20 for line in kept)
    # With the default limit the line is read: a record (json), a bad hash
    # (hash: 2 million digits are no u64; once a ValueError traceback).
    if fmt == "json":
        ok(run_cli("dedup", "-i", path, "-o", out))
    else:
        assert_one_error(run_cli("dedup", "-i", path, "-o", out), 1, f"{path.name}:8", "not a decimal integer")


def test_python_readers_take_the_same_limit(tmp_path):
    path = tmp_path / "t.jsonl"
    texts = [f"text number {i} of a small corpus" for i in range(30)]
    rows = [__import__("json").dumps({"text": t}) for t in texts]
    rows.insert(3, '{"text": "' + "y" * (3 << 20) + '"}')
    path.write_text("\n".join(rows) + "\n")
    with pytest.raises(ValueError, match=r"t\.jsonl:4: is longer than 1 MiB"):
        rsimhash.batch.similar_pairs(path, 0.9, max_record_mb=1, progress=False)
    pairs, _ = rsimhash.batch.similar_pairs(path, 0.9, progress=False)  # the default, 256 MiB, reads it
    assert pairs.shape[1] == 2
    with pytest.raises(ValueError, match="max_record_mb"):
        rsimhash.batch.similar_pairs(path, 0.9, max_record_mb=0, progress=False)
