"""The portable code paths (``RSIMHASH_PORTABLE=1``), which aarch64 and
Apple silicon builds run, give what the x86-64 SIMD paths give.

The switch is read once per process, so each check runs a child process
with it set. The property suites run under it too (``scripts/test.sh``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

rsimhash = pytest.importorskip("rsimhash")

CHILD = r"""
import json, random, sys
import numpy as np
import rsimhash
from rsimhash import _rsimhash

rng = random.Random(5)
words = ["the", "caf\u00e9", "na\u00efve", "\u6f22\u5b57", "x" * 40, "Stra\u00dfe", "a", "of", "1999", "\U0001F600"]
texts = [" ".join(rng.choice(words) for _ in range(rng.randint(0, 300))) for _ in range(400)]
out = {"portable": _rsimhash.portable_paths()}
out["fps"] = {f"{m}{w}": rsimhash.fingerprints(texts, mode=m, width=w).tolist()
              for m, w in (("words", None), ("words", 1), ("chars", None))}
r = np.random.default_rng(3)
base = r.integers(0, 2**64 - 1, size=20_000, dtype=np.uint64, endpoint=True)
flips = np.left_shift(np.uint64(1), r.integers(0, 64, size=20_000, dtype=np.uint64))
fps = np.concatenate([base, base ^ flips, np.array([0, 2**64 - 1], dtype=np.uint64)])
index = rsimhash.Index(3)
index.add(fps)
out["index_pairs"] = index.find_all().tolist()
out["batch_pairs"] = rsimhash.batch.find_all(fps, 10).tolist()
json.dump(out, sys.stdout)
"""


def run_child(portable: bool) -> dict:
    env = dict(os.environ)
    env.pop("RSIMHASH_PORTABLE", None)
    if portable:
        env["RSIMHASH_PORTABLE"] = "1"
    proc = subprocess.run([sys.executable, "-c", CHILD], env=env, capture_output=True, timeout=600)
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")
    return json.loads(proc.stdout)


def test_portable_paths_give_the_same_answers():
    native, portable = run_child(False), run_child(True)
    assert native["portable"] is False and portable["portable"] is True
    assert portable["fps"] == native["fps"]
    assert portable["index_pairs"] == native["index_pairs"] and native["index_pairs"]
    assert portable["batch_pairs"] == native["batch_pairs"] and native["batch_pairs"]
