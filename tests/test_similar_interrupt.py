"""Ctrl-C during the in-process Jaccard calls (issue 38, item 8).

A child process builds a corpus whose verified near-duplicates take many
seconds: texts of Zipf-distributed words, as English is, so that their
single-word fingerprints crowd together and nearly every pair is a
candidate to check (`similar_pairs` on 8,000 of them takes seconds even on
a fast machine). It calls the job again and again; SIGINT is sent while a
call is under way, and the child must end with ``KeyboardInterrupt``
within 2 s, with no thread of the job left running and no temporary file
left behind, and the library must still answer afterwards.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

CORPUS = """
import random
rng = random.Random(5)
vocab = [f"w{i}" for i in range(2000)]
weights, total = [], 0.0
for rank in range(len(vocab)):
    total += 1.0 / (rank + 1)
    weights.append(total)
base = [" ".join(rng.choices(vocab, cum_weights=weights, k=200)) for _ in range(800)]
texts = [b + f" copy{i}" for i in range(10) for b in base]
"""

CALLS = {
    "similar_pairs": "rsimhash.similar_pairs(texts, 0.8, progress=False)",
    "dedup": "rsimhash.dedup(texts, jaccard=0.8)",
}


def child(call: str) -> str:
    return (
        "import sys, threading, rsimhash\n"
        + CORPUS
        + "print('started', flush=True)\n"
        + "try:\n"
        + "    while True:\n"
        + f"        {call}\n"
        + "except KeyboardInterrupt:\n"
        + "    print('interrupted', threading.active_count(), flush=True)\n"
        + "    print('after', rsimhash.dedup(['a b c d', 'a b c d'], jaccard=0.9).tolist(), flush=True)\n"
    )


@pytest.mark.parametrize("name", sorted(CALLS))
def test_ctrl_c_ends_the_call_within_two_seconds(name, tmp_path):
    proc = subprocess.Popen(
        [sys.executable, "-c", child(CALLS[name])],
        env={**os.environ, "TMPDIR": str(tmp_path)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        # SIGINT back to its default: a test run started in the background
        # by a shell has it ignored, and the child would never see Ctrl-C.
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "started"
        time.sleep(0.7)  # inside the first call, which lasts seconds
        assert proc.poll() is None
        proc.send_signal(signal.SIGINT)
        sent = time.monotonic()
        out, err = proc.communicate(timeout=30)
        took = time.monotonic() - sent
    finally:
        if proc.poll() is None:  # never left running, whatever the outcome
            proc.kill()
            proc.communicate()
    assert "interrupted 1" in out, f"{out!r} {err[-2000:]!r}"  # KeyboardInterrupt, no job thread left
    assert "after [True, False]" in out, err[-2000:]
    assert took < 2.0, f"{name}: KeyboardInterrupt {took:.2f} s after SIGINT"
    assert os.listdir(tmp_path) == [], "nothing left behind"
