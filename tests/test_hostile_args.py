"""Absurd arguments and closed standard streams (issue 24, items 7 and 8).

Every int parameter of the Python API takes any Python int: one outside its
range is a ``ValueError`` naming the parameter and the range (never an
``OverflowError``, never a run with 100,000 threads). On the command line
the same is one line on stderr and exit 2; so is a ``-`` input or output
when that standard stream is closed.
"""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

import rsimhash
from cli_helpers import assert_one_error, make_records, ok, run_cli, write_jsonl

HUGE = [2**70, -(2**70), 2**64, 2**63, 2**32 + 3]
FPS = np.arange(64, dtype=np.uint64)
TEXTS = ["a b c d e", "a b c d f"]


def _index():
    index = rsimhash.Index(3)
    index.add(FPS)
    return index


# name, a call taking the value, and the word the message must name.
CALLS = [
    ("Index(k)", lambda v: rsimhash.Index(k=v), "k"),
    ("Index(blocks)", lambda v: rsimhash.Index(3, blocks=v), "blocks"),
    ("Index(tables)", lambda v: rsimhash.Index(3, tables=v), "tables"),
    ("Index(block_bytes)", lambda v: rsimhash.Index(3, block_bytes=v), "block_bytes"),
    ("query(k)", lambda v: _index().query(1, k=v), "k"),
    ("query_batch(k)", lambda v: _index().query_batch(FPS, k=v), "k"),
    ("find_all(k)", lambda v: _index().find_all(k=v), "k"),
    ("cluster(k)", lambda v: _index().cluster(k=v), "k"),
    ("cluster(min_size)", lambda v: _index().cluster(min_size=v), "min_size"),
    ("add_unique(k)", lambda v: _index().add_unique(FPS, k=v), "k"),
    ("fingerprint(width)", lambda v: rsimhash.fingerprint("a b c", width=v), "width"),
    ("fingerprints(width)", lambda v: rsimhash.fingerprints(TEXTS, width=v), "width"),
    ("fingerprints(threads)", lambda v: rsimhash.fingerprints(TEXTS, threads=v), "threads"),
    ("shingles(width)", lambda v: rsimhash.shingles("a b c", width=v), "width"),
    ("similar_pairs(width)", lambda v: rsimhash.similar_pairs(TEXTS, width=v), "width"),
    ("similar_pairs(threads)", lambda v: rsimhash.similar_pairs(TEXTS, threads=v), "threads"),
    ("similar_pairs(candidates)", lambda v: rsimhash.similar_pairs(TEXTS, candidates=("words", 1, v)), "k"),
    ("dedup(k)", lambda v: rsimhash.dedup(TEXTS, k=v), "k"),
    ("dedup(threads)", lambda v: rsimhash.dedup(TEXTS, threads=v), "threads"),
    ("batch.find_all(k)", lambda v: rsimhash.batch.find_all(FPS, k=v, progress=False), "k"),
    ("batch.find_all(memory_limit)", lambda v: rsimhash.batch.find_all(FPS, memory_limit=v, progress=False), "memory_limit"),
    ("batch.find_all(threads)", lambda v: rsimhash.batch.find_all(FPS, threads=v, progress=False), "threads"),
    ("batch.find_all(blocks)", lambda v: rsimhash.batch.find_all(FPS, blocks=v, progress=False), "blocks"),
    ("batch.find_all(tables)", lambda v: rsimhash.batch.find_all(FPS, tables=v, progress=False), "tables"),
    ("batch.dedup(k)", lambda v: rsimhash.batch.dedup(FPS, k=v, progress=False), "k"),
    ("batch.clusters(k)", lambda v: rsimhash.batch.clusters(FPS, k=v, progress=False), "k"),
    ("batch.clusters(min_size)", lambda v: rsimhash.batch.clusters(FPS, min_size=v, progress=False), "min_size"),
    ("batch.similar_pairs(threads)", lambda v: rsimhash.batch.similar_pairs(TEXTS, threads=v, progress=False), "threads"),
    (
        "batch.similar_clusters(min_size)",
        lambda v: rsimhash.batch.similar_clusters(TEXTS, min_size=v, progress=False),
        "min_size",
    ),
]


@pytest.mark.parametrize("name,call,word", CALLS, ids=[c[0] for c in CALLS])
def test_huge_ints_are_a_value_error_naming_the_parameter(name, call, word):
    for value in HUGE:
        if value == 2**32 + 3 and word in ("memory_limit", "min_size"):
            continue  # 4 GiB is a fine limit; clusters of 4 billion items, none
        with pytest.raises(ValueError) as e:
            call(value)
        assert word in str(e.value), (value, str(e.value))


@pytest.mark.parametrize(
    "call",
    [
        lambda: rsimhash.fingerprints(TEXTS, threads=100_000),
        lambda: rsimhash.batch.find_all(FPS, threads=100_000, progress=False),
        lambda: rsimhash.similar_pairs(TEXTS, threads=100_000),
    ],
)
def test_absurd_thread_counts_are_refused(call):
    with pytest.raises(ValueError, match=r"threads must be from 1 to \d+"):
        call()


def test_messages_say_the_range():
    with pytest.raises(ValueError, match=r"block_bytes must be an integer from 16 to 1048576, got 1099511627776"):
        rsimhash.Index(3, block_bytes=2**40)
    with pytest.raises(ValueError, match=r"k must be an integer from 0 to 16, got 4294967299"):
        rsimhash.Index(3).query(1, k=2**32 + 3)
    with pytest.raises(ValueError, match="at most the index's k"):
        rsimhash.Index(3).query(1, k=4)
    with pytest.raises(ValueError, match=r"memory_limit must be at most 2\*\*63-1 bytes"):
        rsimhash.batch.parse_memory(2**70)
    with pytest.raises(ValueError, match="finite"):
        rsimhash.batch.parse_memory("1e400GB")
    assert rsimhash.batch.parse_memory(2**40) == 2**40


# -- the command line ----------------------------------------------------------------------


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    d = tmp_path_factory.mktemp("args")
    write_jsonl(d / "c.jsonl", make_records(30, seed=4))
    return d


@pytest.mark.parametrize(
    "args,needles",
    [
        (["--threads", "99999999999999999999999"], ["--threads", "at most"]),
        (["--threads", "100000"], ["--threads", "at most", "4 per core"]),
        (["--blocks", "99999999999999999999999"], ["--blocks", "at most 64"]),
        (["--window", "99999999999999999999999"], ["--window", "at most 2,147,483,647"]),
        (["--chunk-mb", "99999999999"], ["--chunk-mb", "at most 1,048,576"]),
        (["--memory-limit", "1e400GB"], ["--memory-limit"]),
        (["--max-record-mb", "99999999999"], ["--max-record-mb", "at most 1,048,576"]),
        (["--jaccard", "0.9", "--candidates", "words,99999999999999999999,3"], ["--candidates", "WIDTH must be"]),
    ],
)
def test_cli_refuses_absurd_numbers_in_one_line(corpus, tmp_path, args, needles):
    p = run_cli("dedup", "--input", corpus / "c.jsonl", "--output", tmp_path / "o.jsonl", *args)
    assert_one_error(p, 2, *needles)
    assert not (tmp_path / "o.jsonl").exists()


# -- item 8: closed standard streams -------------------------------------------------------


def _run_closed(args, close_fd):
    """``python -m rsimhash.cli ARGS`` with descriptor ``close_fd`` closed."""

    def closing():
        os.close(close_fd)

    return subprocess.run(
        [sys.executable, "-m", "rsimhash.cli", *[str(a) for a in args]],
        stdin=subprocess.DEVNULL if close_fd != 0 else None,
        stdout=subprocess.PIPE if close_fd != 1 else None,
        stderr=subprocess.PIPE,
        preexec_fn=closing,
        timeout=120,
    )


@pytest.mark.parametrize(
    "command",
    [
        ["dedup", "--input", "-", "--output", "{tmp}/o.jsonl"],
        ["fingerprint", "--input", "-", "--output", "{tmp}/o.tsv"],
        ["find-all", "--input", "-", "--format", "lines", "--output", "{tmp}/o.txt"],
        ["dedup", "--input", "-", "--output", "{tmp}/o.jsonl", "--memory-limit", "1GiB"],
        ["dedup", "--input", "-", "--output", "{tmp}/o.jsonl", "--format", "parquet"],
    ],
)
def test_closed_stdin_is_one_line_exit_2(tmp_path, command):
    p = _run_closed([a.format(tmp=tmp_path) for a in command], 0)
    line = assert_one_error(p, 2, "standard input", "closed")
    assert "--input -" in line
    assert os.listdir(tmp_path) == [], "nothing written, no temporary files"


@pytest.mark.parametrize(
    "command",
    [
        ["dedup", "--input", "{corpus}/c.jsonl", "--output", "-"],
        ["fingerprint", "--input", "{corpus}/c.jsonl"],
        ["dedup", "--input", "{corpus}/c.jsonl", "--output", "{tmp}/o.jsonl", "--removed", "-"],
        ["tune", "--input", "{corpus}/c.jsonl", "--sample", "20"],
    ],
)
def test_closed_stdout_is_one_line_exit_2(tmp_path, corpus, command):
    p = _run_closed([a.format(tmp=tmp_path, corpus=corpus) for a in command], 1)
    assert_one_error(p, 2, "standard output", "closed")
    assert os.listdir(tmp_path) == []


def test_open_streams_still_work(corpus, tmp_path):
    data = (corpus / "c.jsonl").read_bytes()
    p = ok(run_cli("dedup", "--input", "-", "--output", "-", input=data))
    assert p.stdout and b"error" not in p.stderr


@pytest.mark.parametrize(
    "call, name",
    [
        (lambda: rsimhash.fingerprints(["a b"], width="3"), "width"),
        (lambda: rsimhash.fingerprint("a b", width=2.5), "width"),
        (lambda: rsimhash.fingerprints(["a b"], threads="2"), "threads"),
        (lambda: rsimhash.similar_pairs(["a b c"], 0.9, width="3"), "width"),
        (lambda: rsimhash.jaccard("a b", "a c", width="3"), "width"),
        (lambda: rsimhash.shingles("a b", width="3"), "width"),
        (lambda: rsimhash.SimilarIndex(0.9, width="3"), "width"),
        (lambda: rsimhash.SimilarIndex(0.9).add(["a b c"], threads="2"), "threads"),
    ],
)
def test_an_int_argument_of_another_type_is_named(call, name):
    with pytest.raises(TypeError, match=f"^{name} must be an int, got"):
        call()
