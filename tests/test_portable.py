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
# Long texts too: the vector kernels cut texts of 512 bytes and 2 KiB or more into more parts.
texts += [" ".join(rng.choice(words) for _ in range(rng.randint(300, 1500))) for _ in range(60)]
out = {"portable": _rsimhash.portable_paths()}
out["fps"] = {f"{m}{w}": rsimhash.fingerprints(texts, mode=m, width=w).tolist()
              for m, w in (("words", None), ("words", 1), ("chars", None))}
out["sets"] = {m: [a.tolist() for a in _rsimhash.shingle_sets(texts, mode=m)] for m in ("words", "chars")}
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
    assert portable["sets"] == native["sets"]
    assert portable["index_pairs"] == native["index_pairs"] and native["index_pairs"]
    assert portable["batch_pairs"] == native["batch_pairs"] and native["batch_pairs"]


KERNEL_CHILD = r"""
import json, random, sys
import numpy as np
import rsimhash

rng = random.Random(28)
ascii_chars = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789" + " " * 12 + ".,;:!?-'\"()[]\t\n\r_/"
scripts = [
    "\u00e9\u00e8\u00fc\u00df\u0130\u03a3\u03c3\u0394\u0436\u0416",   # Latin-1, Turkish I, Greek, Cyrillic
    "\u0e01\u0e32\u0e29\u0e32\u0e44\u0e17\u0e22\u1000\u1780",          # Thai, Myanmar, Khmer (one token each)
    "\u6f22\u5b57\u3042\u30ab\u30fc\uac00\u4e00\u9fff",               # CJK, kana, Hangul
    "\u0301\u0308\u20dd\u0903",                                         # combining marks
    "\U0001F600\U0001F680\u00a0\u3000\u200d\u2028\u00ad",                # emoji, odd spaces, format chars
    "\U00020000\U0002a6d6\U00010570\U0001d7ce",                           # astral letters and digits
]

def pool(kind, n_chars):
    out = []
    for _ in range(n_chars):
        if kind == 0 or (kind == 2 and rng.random() < 0.8):
            out.append(rng.choice(ascii_chars))
        elif kind == 1:
            out.append(chr(rng.choice([rng.randrange(0x20, 0xd800), rng.randrange(0xe000, 0x110000)])))
        else:
            out.append(rng.choice(rng.choice(scripts)))
    return "".join(out).encode("utf-8")

# ASCII, random code points, mixed scripts: every text is a slice of one of
# them, cut to whole code points, of every length from 0 to 4 KiB of UTF-8.
pools = [pool(kind, 12000) for kind in range(3)]

def text(n_bytes):
    p = pools[rng.randrange(3)]
    at = rng.randrange(len(p) - n_bytes)
    return p[at:at + n_bytes].decode("utf-8", "ignore")  # the code points cut at either end dropped

texts = [text(n) for n in range(4097)]
texts += [" ".join("w%d" % rng.randrange(50) for _ in range(rng.randrange(2000))) for _ in range(50)]
out = {"fps": {}}
for mode, widths in (("words", (1, 3, 8, 9)), ("chars", (1, 4, 8))):
    for w in widths:
        out["fps"][f"{mode}{w}"] = rsimhash.fingerprints(texts, mode=mode, width=w).tolist()
out["one"] = [rsimhash.fingerprint(t) for t in texts[::97]]
# The bytes path (an Arrow string column): valid texts give the same
# fingerprints; an invalid UTF-8 sequence anywhere is the same error.
blobs = [t.encode("utf-8") for t in texts[:600]]
bad = [b"\xff", b"\xc3", b"\xe2\x82", b"\xed\xa0\x80", b"\xf4\x90\x80\x80", b"\xc0\xaf"]
errors = []
for i, b in enumerate(bad):
    rows = list(blobs)
    at = rng.randrange(len(rows))
    cut = rng.randrange(len(rows[at]) + 1)
    rows[at] = rows[at][:cut] + b + rows[at][cut:]
    offsets = np.cumsum([0] + [len(r) for r in rows]).astype(np.int64)
    data = np.frombuffer(b"".join(rows), dtype=np.uint8)
    try:
        rsimhash._rsimhash.fingerprints_arrow(offsets, data)
        errors.append(None)
    except ValueError as e:
        errors.append(str(e))
offsets = np.cumsum([0] + [len(r) for r in blobs]).astype(np.int64)
data = np.frombuffer(b"".join(blobs), dtype=np.uint8)
out["arrow"] = rsimhash._rsimhash.fingerprints_arrow(offsets, data).tolist()
out["errors"] = errors
json.dump(out, sys.stdout)
"""


def run_kernel_child(portable: bool) -> dict:
    env = dict(os.environ)
    env.pop("RSIMHASH_PORTABLE", None)
    if portable:
        env["RSIMHASH_PORTABLE"] = "1"
    proc = subprocess.run([sys.executable, "-c", KERNEL_CHILD], env=env, capture_output=True, timeout=600)
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")
    return json.loads(proc.stdout)


def test_fingerprint_fast_paths_are_the_portable_ones():
    """The tokenizer's and the shingle kernel's SIMD paths (SSSE3, AVX2, the
    four-part vector kernel for long texts) against the portable loops, on
    every text length from 0 to 4 KiB of ASCII, random code points and mixed
    scripts, every mode and several widths; and on the bytes path, invalid
    UTF-8 is the same error."""
    native, portable = run_kernel_child(False), run_kernel_child(True)
    for key in native["fps"]:
        assert portable["fps"][key] == native["fps"][key], key
    assert portable["one"] == native["one"] and native["one"] == native["fps"]["words3"][::97]
    assert portable["arrow"] == native["arrow"] == native["fps"]["words3"][:600]
    assert portable["errors"] == native["errors"] and all(e and "UTF-8" in e for e in native["errors"])
