#!/usr/bin/env python3
"""A real-text corpus from the documentation installed on this machine, for
``bench_quality.py``: manual pages in every language present
(``/usr/share/man``, troff turned into plain text), package documentation
(``/usr/share/doc``: copyright files, changelogs, READMEs, NEWS) and the
licence texts of ``/usr/share/common-licenses``.

Such a corpus holds near-duplicates of every kind a crawl meets: the same
licence pasted into hundreds of copyright files with other names and years,
changelogs that share their older entries, one manual page translated into
twenty languages (not duplicates), versions of a page for two sections.

Documents are read in sorted path order; symbolic links, ``.so`` redirections,
files that are not UTF-8 text and documents of fewer than ``MIN_WORDS`` words
are left out, and each is cut at ``MAX_BYTES``. The same machine gives the same
corpus; another machine gives another one (the benchmark prints its size).

Usage::

    python benches/quality_corpus.py OUT.jsonl [--max-docs N]
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import re
import sys
from typing import Iterator, Optional, Tuple

ROOTS = ("/usr/share/man", "/usr/share/doc", "/usr/share/common-licenses")
MAX_BYTES = 200_000
MIN_WORDS = 20
SKIP_SUFFIXES = (".png", ".jpg", ".gif", ".svg", ".ico", ".css", ".js", ".pdf", ".woff", ".ttf", ".bz2", ".xz", ".zip")

_ESCAPES = [
    (re.compile(r"\\f(\[[^\]]*\]|\(..|.)"), ""),  # font changes
    (re.compile(r"\\s[+-]?\d"), ""),  # size changes
    (re.compile(r"\\\((..)"), " "),  # special characters
    (re.compile(r"\\\*(\(..|\[[^\]]*\]|.)"), ""),  # strings
    (re.compile(r"\\[&|^:%]"), ""),
    (re.compile(r"\\-"), "-"),
    (re.compile(r"\\e"), "\\\\"),
    (re.compile(r"\\(.)"), r"\1"),
]


def troff_text(source: str) -> Optional[str]:
    """Plain text of a manual page: request lines keep their arguments,
    comments and escapes go. ``None`` for a ``.so`` redirection."""
    lines = []
    for line in source.splitlines():
        if line.startswith(".so ") and not lines:
            return None
        if line.startswith(('.\\"', "'\\\"", '.\\" ')) or line.startswith('\\"'):
            continue
        if line.startswith((".", "'")):
            parts = line[1:].split(None, 1)
            line = parts[1].replace('"', "") if len(parts) > 1 else ""
        for pattern, repl in _ESCAPES:
            line = pattern.sub(repl, line)
        lines.append(line)
    return "\n".join(lines)


def read_text(path: str) -> Optional[str]:
    """The UTF-8 text of a file (gzip opened), or ``None`` when it is not text."""
    try:
        opener = gzip.open if path.endswith(".gz") else open
        with opener(path, "rb") as f:
            data = f.read(MAX_BYTES + 4)
    except (OSError, EOFError):
        return None
    if b"\0" in data:
        return None
    data = data[:MAX_BYTES]
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        if e.start >= MAX_BYTES - 4:  # a character cut at the limit
            return data[: e.start].decode("utf-8")
        return None


def documents(max_docs: Optional[int] = None) -> Iterator[Tuple[str, str]]:
    """``(path, text)`` of every document, in sorted path order."""
    n = 0
    for root in ROOTS:
        for dirpath, dirnames, filenames in os.walk(root):
            dirnames.sort()
            for name in sorted(filenames):
                path = os.path.join(dirpath, name)
                if os.path.islink(path) or name.endswith(SKIP_SUFFIXES):
                    continue
                text = read_text(path)
                if text is None:
                    continue
                if root == "/usr/share/man":
                    text = troff_text(text)
                    if text is None:
                        continue
                if len(text.split()) < MIN_WORDS:
                    continue
                yield path, text
                n += 1
                if max_docs is not None and n >= max_docs:
                    return


def write(out: str, max_docs: Optional[int] = None) -> int:
    """Writes the corpus as JSON lines ``{"id": path, "text": ...}``; returns its size."""
    tmp = out + ".tmp"
    count = 0
    with open(tmp, "w", encoding="utf-8") as f:
        for path, text in documents(max_docs):
            f.write(json.dumps({"id": path, "text": text}, ensure_ascii=False) + "\n")
            count += 1
    os.replace(tmp, out)
    return count


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out")
    ap.add_argument("--max-docs", type=int, default=None)
    args = ap.parse_args()
    n = write(args.out, args.max_docs)
    print(f"{n} documents written to {args.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
