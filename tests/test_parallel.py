"""Threads, the GIL and fork: heavy calls run in Rust without the GIL, and a
forked child can still fingerprint after its parent has used the pool."""

import multiprocessing
import os
import sys
import threading
import time

import numpy as np
import pytest

import rsimhash


def _corpus(n: int = 4000, words: int = 400) -> list[str]:
    rng = np.random.default_rng(7)
    vocab = np.array([f"w{i}" for i in range(5000)])
    return [" ".join(vocab[rng.integers(0, len(vocab), words)]) for _ in range(n)]


def test_gil_is_released_during_fingerprints():
    texts = _corpus()
    ticks = 0
    done = threading.Event()

    def count():
        nonlocal ticks
        while not done.is_set():
            ticks += 1
            time.sleep(0)

    counter = threading.Thread(target=count)
    counter.start()
    try:
        start = time.perf_counter()
        for _ in range(3):
            rsimhash.fingerprints(texts, threads=1)
        elapsed = time.perf_counter() - start
    finally:
        done.set()
        counter.join()
    # A thread holding the GIL for the whole call would leave the counter at a
    # handful of ticks (one per switch interval at most, 5 ms by default).
    assert ticks > 10 * elapsed / sys.getswitchinterval(), (ticks, elapsed)


def _child(queue, threads) -> None:
    queue.put(int(rsimhash.fingerprints(["a b c d e"] * 100, threads=threads)[0]))


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
@pytest.mark.parametrize("threads", [None, 3], ids=["default pool", "a pool of 3, kept for the next call"])
def test_fork_after_parallel_use(threads):
    expected = rsimhash.fingerprint("a b c d e")
    rsimhash.fingerprints(_corpus(200), threads=threads)  # the parent's pool is running now
    ctx = multiprocessing.get_context("fork")
    queue = ctx.Queue()
    proc = ctx.Process(target=_child, args=(queue, threads))
    proc.start()
    proc.join(timeout=60)
    if proc.is_alive():
        proc.kill()
        pytest.fail("a forked child hung using the parent's thread pool")
    assert proc.exitcode == 0
    assert queue.get(timeout=5) == expected


@pytest.mark.parametrize("threads", [1, 2, 3, 8])
def test_thread_counts_agree(threads):
    texts = _corpus(300, 50)
    assert np.array_equal(rsimhash.fingerprints(texts, threads=threads), rsimhash.fingerprints(texts))


@pytest.mark.parametrize("threads", [0, -1])
def test_bad_thread_count(threads):
    with pytest.raises(ValueError, match="threads"):
        rsimhash.fingerprints(["a"], threads=threads)


def test_list_mutated_by_another_thread_is_safe():
    # The call keeps its own references: texts stay alive while Rust reads them.
    texts = _corpus(2000, 200)
    expected = rsimhash.fingerprints(list(texts))
    shared = list(texts)
    stop = threading.Event()

    def mutate():
        while not stop.is_set():
            shared[:] = [t.upper() for t in texts[:50]]
            shared[:] = list(texts)

    thread = threading.Thread(target=mutate)
    thread.start()
    try:
        for _ in range(5):
            got = rsimhash.fingerprints(shared)
            assert got.dtype == np.uint64
    finally:
        stop.set()
        thread.join()
    assert np.array_equal(rsimhash.fingerprints(list(texts)), expected)
