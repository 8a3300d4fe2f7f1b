"""Writes the golden index files of the command line that
``tests/test_golden_index.py`` and ``tests/test_cli_index_ids.py`` read:
60 seeded records with URL ids (``records()``: 50 texts and 10 edited
copies), indexed at k = 3 with words of 3.

- ``golden_cli_v2.rsh``: what ``rsimhash index build`` writes since issue
  38 item 6: format version 2, the URL ids in its name table, the shingle
  settings in its metadata (``{"mode": "words", "width": "3"}``); no ids
  file beside it.
- ``golden_cli_v1.rsh`` and ``golden_cli_v1.rsh.ids``: what it wrote
  before: a version-1 index of ids 0..59 and the ids file beside it (its
  format 2: a settings line, ``hash<TAB>id`` lines, an end line with the
  count and CRC-32), which every ``rsimhash index`` action still reads.

The bytes are those the command line makes from ``records()``
(``tests/test_cli_index_ids.py`` checks it for version 2). Run it only to
make a new format version: the tests fail when a writer change makes
different bytes.

    python tests/data/make_golden_cli.py
"""

from __future__ import annotations

import json
import os
import zlib

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
WORDS = "alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike november oscar papa quebec".split()


def records() -> list:
    """``[{"id": url, "text": text}, ...]``: 50 random texts of 40 words and 10
    copies of the first ten with one word changed."""
    rng = np.random.default_rng(38)
    texts = [" ".join(rng.choice(WORDS, size=40).tolist()) for _ in range(50)]
    for i in range(10):
        words = texts[i].split()
        words[20] = "zulu"
        texts.append(" ".join(words))
    return [{"id": f"https://example.org/doc/{i:03d}?lang=en", "text": t} for i, t in enumerate(texts)]


def jsonl(recs: list) -> bytes:
    return "".join(json.dumps(r) + "\n" for r in recs).encode()


def path(version: int) -> str:
    return os.path.join(HERE, f"golden_cli_v{version}.rsh")


def golden_v2():
    """The index ``rsimhash index build`` makes of ``records()`` today."""
    import rsimhash

    recs = records()
    index = rsimhash.Index(3)
    index.metadata = {"mode": "words", "width": "3"}
    index.add(rsimhash.fingerprints([r["text"] for r in recs]), ids=[r["id"] for r in recs])
    return index


def golden_v1() -> "tuple":
    """The index and ids file ``rsimhash index build`` made of ``records()`` before."""
    import rsimhash

    recs = records()
    fps = rsimhash.fingerprints([r["text"] for r in recs])
    index = rsimhash.Index(3)
    index.add(fps)
    body = b'# rsimhash index ids, format 2: {"mode": "words", "width": 3}\n'
    body += "".join(f"{int(h)}\t{r['id']}\n" for h, r in zip(fps, recs)).encode()
    ids = body + b"# rsimhash index ids end: %d lines, crc32 %08x\n" % (len(recs), zlib.crc32(body))
    return index, ids


if __name__ == "__main__":
    golden_v2().save(path(2))
    index, ids = golden_v1()
    index.save(path(1))
    with open(path(1) + ".ids", "wb") as f:
        f.write(ids)
    for p in (path(2), path(1), path(1) + ".ids"):
        print(p, os.path.getsize(p), "bytes")
