#!/usr/bin/env python3
"""Deterministic English benchmark corpus built from text found on this machine.

No network is used.  Sources (all optional; whatever exists is used):

* ``license``  /usr/share/common-licenses/*
* ``doc``      /usr/share/doc/**: ``copyright`` files, gzip'd changelogs, NEWS,
               README files, ``*.md``/``*.txt``/``*.rst``
* ``man``      English man pages /usr/share/man/man*/**.gz (roff markup stripped)
* ``pystd``    docstrings (via ``ast``) and comments of the running Python's
               standard library (``sysconfig.get_paths()['stdlib']``)
* ``txt``      any other ``*.txt`` (> 10 KB) or ``*.pod`` file outside
               /proc, /sys, /work and other machine/runtime mounts

Every source is split into paragraphs; paragraphs are whitespace-normalized,
kept only if they look like English prose (enough words, mostly letters,
enough common English function words, little non-ASCII), exact duplicates are
dropped (first occurrence wins, sources in sorted order), and no single source
file may contribute more than ``MAX_BYTES_PER_SOURCE`` bytes.

Documents are then made with ``random.Random(seed)``: each document draws a
target size from a log-normal distribution (median ~4 KB, clipped to
1-16 KB of UTF-8) and a random starting paragraph, and takes consecutive
paragraphs from there (jumping to another random start when the source file
runs out), joined by blank lines, until the target is reached.  Documents are
added until the corpus holds ``size_mb * 10**6`` UTF-8 bytes.  If the unique
paragraph volume is smaller than the target, paragraphs repeat across
documents (as near-duplicate corpora do anyway).

Two caches live in ``benches/data/`` (git-ignored): the extracted paragraphs,
keyed by a hash of the source list (path, size, mtime of every file plus the
extractor version), and the built corpus, keyed by that hash, the seed and the
size.  A change in the set of source files invalidates both.

CLI::

    python benches/corpus.py --size-mb 64 --seed 0 --stats
"""

from __future__ import annotations

import argparse
import ast
import bisect
import collections
import gzip
import hashlib
import itertools
import math
import os
import pickle
import random
import re
import sys
import sysconfig
import time
from dataclasses import dataclass, field
from typing import Iterator, List, Optional, Sequence, Tuple

EXTRACTOR_VERSION = 3  # bump when paragraph extraction/filtering changes
BUILDER_VERSION = 2  # bump when document assembly changes
HERE = os.path.dirname(os.path.abspath(__file__))
DATA_DIR = os.path.join(HERE, "data")

MAX_BYTES_PER_SOURCE = 256 * 1024  # cap one file's share of the unique text
MAX_PARAGRAPH_BYTES = 3000  # longer paragraphs are split at sentence ends
DOC_MEDIAN_BYTES = 4000
DOC_SIGMA = 0.6
DOC_MIN_BYTES = 1000
DOC_MAX_BYTES = 16000

# Paths never walked for *.txt / *.pod (virtual file systems, this project,
# runtime scratch and mounts that do not belong to the machine's own text).
EXCLUDED_ROOTS = (
    "/proc",
    "/sys",
    "/dev",
    "/run",
    "/tmp",
    "/work",
    "/farm",
    "/old_root",
    "/var/lib/docker",
    "/var/cache",
    "/lost+found",
    "/snap",
    "/mnt",
    "/media",
)

# ~100 most frequent English words; used for the "is this English" test and
# for reporting their coverage of the corpus.
STOPWORDS = frozenset(
    """the of and to a in is it you that he was for on are with as i his they
    be at one have this from or had by not but what some we can out other were
    all there when up use your how said an each she which do their if will way
    about many then them would like so these her see him has more could go come
    did my no most who over know than call first may down been now find any new
    only its also after should must into such used where does these those
    very just between same both through because while before under again""".split()
)

WORD_RE = re.compile(r"[A-Za-z]+(?:'[A-Za-z]+)?")
CODEISH = frozenset("{}();=<>_[]\\$@#|&%")
SENTENCE_END_RE = re.compile(r"(?<=[.!?])\s+(?=[A-Z(\"'])")
WS_RE = re.compile(r"\s+")


# --------------------------------------------------------------------------
# English filter and paragraph helpers
# --------------------------------------------------------------------------


def normalize(p: str) -> str:
    return WS_RE.sub(" ", p).strip()


def is_english(p: str) -> bool:
    """Heuristic: does this (normalized) paragraph read as English prose?"""
    n = len(p)
    if n < 60:
        return False
    words = WORD_RE.findall(p)
    nw = len(words)
    if nw < 10:
        return False
    letters = sum(map(len, words))
    if letters < 0.62 * n:  # tables, code, hex dumps, lists of file names
        return False
    avg = letters / nw
    if not (2.8 <= avg <= 8.5):
        return False
    if not p.isascii():
        nonascii = sum(1 for c in p if ord(c) > 127)
        if nonascii > 0.02 * n:
            return False
    code = sum(1 for c in p if c in CODEISH)
    if code > 0.025 * n:
        return False
    stop = sum(1 for w in words if w.lower() in STOPWORDS)
    if stop < 0.2 * nw:
        return False
    upper = sum(1 for w in words if w.isupper() and len(w) > 1)
    if upper > 0.3 * nw:
        return False
    return True


def split_long(p: str) -> List[str]:
    """Split a paragraph longer than MAX_PARAGRAPH_BYTES at sentence ends."""
    if len(p.encode("utf-8")) <= MAX_PARAGRAPH_BYTES:
        return [p]
    out: List[str] = []
    cur: List[str] = []
    size = 0
    for s in SENTENCE_END_RE.split(p):
        b = len(s.encode("utf-8")) + 1
        if cur and size + b > MAX_PARAGRAPH_BYTES:
            out.append(" ".join(cur))
            cur, size = [], 0
        cur.append(s)
        size += b
    if cur:
        out.append(" ".join(cur))
    # A single "sentence" longer than the limit (no punctuation): cut at spaces.
    res: List[str] = []
    for q in out:
        while len(q) > MAX_PARAGRAPH_BYTES:
            cut = q.rfind(" ", 0, MAX_PARAGRAPH_BYTES)
            if cut <= 0:
                cut = MAX_PARAGRAPH_BYTES
            res.append(q[:cut])
            q = q[cut:].lstrip()
        if q:
            res.append(q)
    return res


def blocks_by_blank_lines(text: str, dot_is_blank: bool = False) -> List[str]:
    out: List[str] = []
    cur: List[str] = []
    for line in text.splitlines():
        s = line.strip()
        if not s or (dot_is_blank and s == "."):
            if cur:
                out.append("\n".join(cur))
                cur = []
        else:
            cur.append(line)
    if cur:
        out.append("\n".join(cur))
    return out


def read_text(path: str) -> str:
    with open(path, "rb") as f:
        raw = f.read()
    if path.endswith(".gz"):
        try:
            raw = gzip.decompress(raw)
        except (OSError, EOFError, gzip.BadGzipFile):
            return ""
    if b"\x00" in raw[:8192]:
        return ""  # binary
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return raw.decode("latin-1")


# --------------------------------------------------------------------------
# Extractors: each returns a list of raw paragraphs (not yet filtered)
# --------------------------------------------------------------------------

MD_FENCE_RE = re.compile(r"^\s*(```|~~~)")
POD_CODE_RE = re.compile(r"[A-Z]<+\s*(.*?)\s*>+")
VIM_TAG_RE = re.compile(r"\*[^*\s]+\*|\|([^|\s]+)\|")


def extract_plain(text: str, path: str) -> List[str]:
    base = os.path.basename(path).lower()
    if base.endswith(".md") or base.endswith(".md.gz"):
        lines, fenced = [], False
        for line in text.splitlines():
            if MD_FENCE_RE.match(line):
                fenced = not fenced
                lines.append("")
                continue
            if fenced or line.startswith("    ") or line.lstrip().startswith("|"):
                lines.append("")
                continue
            lines.append(line.lstrip("#> "))
        text = "\n".join(lines)
    elif base.endswith(".pod"):
        lines = []
        for line in text.splitlines():
            if line.startswith("="):
                lines.append("")
                continue
            if line.startswith((" ", "\t")):  # verbatim (code) paragraph
                lines.append("")
                continue
            lines.append(POD_CODE_RE.sub(lambda m: m.group(1).split("|")[0], line))
        text = "\n".join(lines)
    elif "/vim" in path and "/doc/" in path:
        text = VIM_TAG_RE.sub(lambda m: m.group(1) or "", text)
    paras = blocks_by_blank_lines(text, dot_is_blank=(base == "copyright"))
    return paras


def extract_python(text: str, path: str) -> List[str]:
    out: List[str] = []
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        tree = None
    if tree is not None:
        for node in ast.walk(tree):
            if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
                doc = ast.get_docstring(node, clean=True)
                if doc:
                    lines = [ln for ln in doc.splitlines() if not ln.lstrip().startswith((">>>", "... "))]
                    out.extend(blocks_by_blank_lines("\n".join(lines)))
    # Comments: runs of consecutive whole-line comments form one paragraph.
    cur: List[str] = []
    for line in text.splitlines():
        s = line.strip()
        if s.startswith("#") and not s.startswith("#!"):
            body = s.lstrip("#").strip()
            if body:
                cur.append(body)
                continue
        if cur:
            out.append(" ".join(cur))
            cur = []
    if cur:
        out.append(" ".join(cur))
    return out


# roff (man(7) and the common part of mdoc(7))
ROFF_SPECIAL = {
    "em": "\u2014",
    "en": "\u2013",
    "hy": "-",
    "aq": "'",
    "dq": '"',
    "lq": "\u201c",
    "rq": "\u201d",
    "oq": "\u2018",
    "cq": "\u2019",
    "bu": "\u2022",
    "co": "\u00a9",
    "rg": "\u00ae",
    "tm": "\u2122",
    "mu": "\u00d7",
    "de": "\u00b0",
    "ti": "~",
    "ha": "^",
    "ga": "`",
    "rs": "\\",
    "ba": "|",
    "at": "@",
    "sh": "#",
    "sl": "/",
    "lt": "<",
    "gt": ">",
    "<=": "<=",
    ">=": ">=",
    "->": "->",
    "<-": "<-",
    "pl": "+",
    "mi": "-",
    "eq": "=",
    "dg": "\u2020",
    "ua": "^",
    "da": "v",
    "R": "\u00ae",
    "Tm": "\u2122",
    "Lq": "\u201c",
    "Rq": "\u201d",
    "Aq": "'",
    "lB": "[",
    "rB": "]",
    "lC": "{",
    "rC": "}",
    "Am": "&",
    "Ba": "|",
    "Le": "<=",
    "Ge": ">=",
    "Pi": "pi",
}
ROFF_ESC_RE = re.compile(
    r"""\\(?:
        \"[^\n]*                              # comment
      | [fF](?:\[[^\]]*\]|\(..|.)             # font change
      | s[+-]?(?:\(\d\d|\[\d+\]|\d\d?|'\d+')  # point size
      | \*(?:\[([^\]]*)\]|\((..)|(.))         # string interpolation
      | \((..)                                # special character \(xx
      | \[([^\]]*)\]                          # special character \[name]
      | [nmgMkYV](?:\[[^\]]*\]|\(..|.)        # register / colour / etc.
      | [hvwolLDXNbRZSxCAB]'[^']*'            # escapes with a quoted argument
      | (.)                                   # everything else
    )""",
    re.VERBOSE,
)
ROFF_SIMPLE = {
    "-": "-",
    "e": "\\",
    "\\": "\\",
    " ": " ",
    "~": " ",
    "0": " ",
    "t": " ",
    "'": "'",
    "`": "`",
    ".": ".",
    "_": "_",
    "!": "",
    "&": "",
    "|": "",
    "^": "",
    "c": "",
    "%": "",
    ":": "",
    "/": "",
    ",": "",
    "{": "",
    "}": "",
    "p": "",
    "a": "",
    "d": "",
    "u": "",
    "r": "",
    "z": "",
    "E": "",
}


def _roff_esc(m: "re.Match[str]") -> str:
    s1, s2, s3, sp2, spn, other = m.groups()
    if s1 is not None or s2 is not None or s3 is not None:
        return ROFF_SPECIAL.get(s1 or s2 or s3, "")
    if sp2 is not None:
        return ROFF_SPECIAL.get(sp2, "")
    if spn is not None:
        if spn.startswith("u") and len(spn) >= 5:
            try:
                return chr(int(spn[1:5], 16))
            except ValueError:
                return ""
        return ROFF_SPECIAL.get(spn, "")
    if other is not None:
        return ROFF_SIMPLE.get(other, "")
    return ""


def roff_inline(s: str) -> str:
    return ROFF_ESC_RE.sub(_roff_esc, s)


def roff_args(s: str) -> List[str]:
    args: List[str] = []
    i, n = 0, len(s)
    while i < n:
        while i < n and s[i] in " \t":
            i += 1
        if i >= n:
            break
        if s[i] == '"':
            j = i + 1
            buf = []
            while j < n:
                if s[j] == '"':
                    if j + 1 < n and s[j + 1] == '"':
                        buf.append('"')
                        j += 2
                        continue
                    break
                buf.append(s[j])
                j += 1
            args.append("".join(buf))
            i = j + 1
        else:
            j = i
            while j < n and s[j] not in " \t":
                j += 1
            args.append(s[i:j])
            i = j
    return args


MAN_BREAK = {
    "PP",
    "LP",
    "P",
    "TP",
    "HP",
    "sp",
    "SH",
    "SS",
    "TQ",
    "Pp",
    "Sh",
    "Ss",
    "Bl",
    "El",
    "Bd",
    "Ed",
    "RS",
    "RE",
    "EX",
    "EE",
    "nf",
    "fi",
    "ne",
    "bp",
    "TH",
    "Dd",
    "Dt",
    "Os",
}
MAN_SPACE_JOIN = {"B", "I", "SM", "SB", "R"}
MAN_ALT_JOIN = {"BR", "BI", "IB", "IR", "RB", "RI"}
MDOC_MACRO_RE = re.compile(r"^[A-Z][a-z]{1,2}$")
MDOC_PUNCT = {".", ",", ";", ":", ")", "(", "[", "]", "?", "!", "|"}


def extract_roff(text: str, path: str) -> List[str]:
    if text.lstrip().startswith(".so ") and text.count("\n") <= 3:
        return []  # redirect to another page
    out: List[str] = []
    cur: List[str] = []
    skip_until: Optional[str] = None

    def brk() -> None:
        if cur:
            out.append(" ".join(cur))
            cur.clear()

    for line in text.splitlines():
        if skip_until is not None:
            if line.startswith(skip_until):
                skip_until = None
            continue
        if line.startswith("\\#") or line.startswith('.\\"') or line.startswith("'\\\""):
            continue
        if line.startswith((".", "'")):
            body = line[1:].lstrip()
            m = re.match(r"(\S+)\s*(.*)", body)
            if not m:
                continue  # a lone dot
            name, rest = m.group(1), m.group(2)
            if name in ("de", "de1", "am", "ig"):
                skip_until = ".." if name != "ig" else ".."
                continue
            if name == "TS":
                skip_until = ".TE"
                continue
            if name == "EQ":
                skip_until = ".EN"
                continue
            if name in MAN_BREAK:
                brk()
                continue
            if name == "IP" or name == "It":
                brk()
                args = roff_args(roff_inline(rest)) if name == "IP" else []
                if args and len(args[0]) > 1 and args[0] not in ("\u2022", "*", "-"):
                    cur.append(args[0])
                if name == "It":
                    words = [a for a in roff_args(rest) if not MDOC_MACRO_RE.match(a)]
                    if words:
                        cur.append(roff_inline(" ".join(words)))
                continue
            if name == "br":
                continue
            if name in MAN_SPACE_JOIN:
                t = roff_inline(" ".join(roff_args(rest)))
                if t:
                    cur.append(t)
                continue
            if name in MAN_ALT_JOIN:
                t = roff_inline("".join(roff_args(rest)))
                if t:
                    cur.append(t)
                continue
            if MDOC_MACRO_RE.match(name):  # mdoc text macros: keep the words
                args = roff_args(rest)
                words = [a for a in args if not MDOC_MACRO_RE.match(a) or a in ("An", "At")]
                if name == "Fl":
                    words = ["-" + w for w in words]
                t = roff_inline(" ".join(words))
                if t:
                    if cur and t in MDOC_PUNCT or (t and t[0] in ".,;:)" and cur):
                        cur[-1] = cur[-1] + t
                    else:
                        cur.append(t)
                continue
            continue  # any other request: formatting only
        if not line.strip():
            brk()
            continue
        t = roff_inline(line)
        if t.strip():
            cur.append(t)
    brk()
    return out


EXTRACTORS = {
    "license": extract_plain,
    "doc": extract_plain,
    "txt": extract_plain,
    "man": extract_roff,
    "pystd": extract_python,
}


# --------------------------------------------------------------------------
# Source discovery
# --------------------------------------------------------------------------

KIND_ORDER = ("license", "doc", "man", "pystd", "txt")
DOC_NAMES = re.compile(
    r"^(copyright|changelog(\.debian)?(\.gz)?|news(\.debian)?(\.gz)?|readme[\w.-]*|todo(\.gz)?|"
    r"authors(\.gz)?|thanks(\.gz)?|faq(\.gz)?|.*\.(md|txt|rst)(\.gz)?|.*\.(gz))$",
    re.IGNORECASE,
)
DOC_SKIP_EXT = re.compile(
    r"\.(html?|xml|css|js|json|png|gif|jpe?g|svg|pdf|c|h|py|pl|sh|tar|"
    r"diff|patch|yaml|yml|cfg|conf|el|cocci|awk)(\.gz)?$",
    re.IGNORECASE,
)


@dataclass
class Source:
    kind: str
    path: str
    size: int
    mtime_ns: int


def _walk(root: str) -> Iterator[Tuple[str, os.stat_result]]:
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        for fn in sorted(filenames):
            p = os.path.join(dirpath, fn)
            try:
                st = os.stat(p, follow_symlinks=False)
            except OSError:
                continue
            if not os.path.isfile(p) or os.path.islink(p):
                continue
            yield p, st


def discover_sources() -> List[Source]:
    seen: set = set()
    found: List[Source] = []

    def add(kind: str, p: str, st: os.stat_result) -> None:
        rp = os.path.realpath(p)
        if rp in seen or st.st_size == 0:
            return
        seen.add(rp)
        found.append(Source(kind, p, st.st_size, st.st_mtime_ns))

    if os.path.isdir("/usr/share/common-licenses"):
        for p, st in _walk("/usr/share/common-licenses"):
            add("license", p, st)
    if os.path.isdir("/usr/share/doc"):
        for p, st in _walk("/usr/share/doc"):
            fn = os.path.basename(p)
            if DOC_NAMES.match(fn) and not DOC_SKIP_EXT.search(fn) and st.st_size < 8 << 20:
                add("doc", p, st)
    if os.path.isdir("/usr/share/man"):
        for d in sorted(os.listdir("/usr/share/man")):
            if re.fullmatch(r"man[0-9a-z]+", d):
                for p, st in _walk(os.path.join("/usr/share/man", d)):
                    if p.endswith(".gz") or re.search(r"\.[0-9][a-z]*$", p):
                        add("man", p, st)
    stdlib = sysconfig.get_paths()["stdlib"]
    if os.path.isdir(stdlib):
        for dirpath, dirnames, filenames in os.walk(stdlib):
            dirnames[:] = sorted(d for d in dirnames if d not in ("site-packages", "dist-packages", "__pycache__"))
            for fn in sorted(filenames):
                if fn.endswith(".py"):
                    p = os.path.join(dirpath, fn)
                    try:
                        st = os.stat(p)
                    except OSError:
                        continue
                    add("pystd", p, st)
    # Anything else English-looking: *.txt > 10 KB, *.pod, anywhere else.
    excl = set(EXCLUDED_ROOTS)
    for dirpath, dirnames, filenames in os.walk("/"):
        keep = []
        for d in sorted(dirnames):
            full = os.path.join(dirpath, d)
            if full in excl or os.path.islink(full):
                continue
            keep.append(d)
        dirnames[:] = keep
        for fn in sorted(filenames):
            if fn.endswith(".txt") or fn.endswith(".pod"):
                p = os.path.join(dirpath, fn)
                try:
                    st = os.stat(p, follow_symlinks=False)
                except OSError:
                    continue
                if not os.path.isfile(p) or os.path.islink(p):
                    continue
                if st.st_size > 10 * 1024 and st.st_size < 16 << 20:
                    add("txt", p, st)
    order = {k: i for i, k in enumerate(KIND_ORDER)}
    found.sort(key=lambda s: (order[s.kind], s.path))
    return found


def sources_hash(sources: Sequence[Source]) -> str:
    h = hashlib.sha256()
    h.update(f"extractor={EXTRACTOR_VERSION} cap={MAX_BYTES_PER_SOURCE} maxpara={MAX_PARAGRAPH_BYTES}\n".encode())
    for s in sources:
        h.update(f"{s.kind}\t{s.path}\t{s.size}\t{s.mtime_ns}\n".encode("utf-8", "surrogateescape"))
    return h.hexdigest()[:16]


# --------------------------------------------------------------------------
# Paragraph collection (cached)
# --------------------------------------------------------------------------


@dataclass
class Paragraphs:
    src_hash: str
    sources: List[Source]
    texts: List[str]  # unique English paragraphs, in source order
    nbytes: List[int]  # UTF-8 size of each
    src_of: List[int]  # index into `sources` of each paragraph
    raw_paragraphs: int = 0  # before filtering / dedupe
    rejected_not_english: int = 0
    rejected_duplicate: int = 0
    rejected_cap: int = 0
    extract_seconds: float = 0.0


def _extract_one(src: Source) -> List[str]:
    try:
        text = read_text(src.path)
    except OSError:
        return []
    if not text:
        return []
    try:
        raw = EXTRACTORS[src.kind](text, src.path)
    except RecursionError:
        return []
    return raw


def collect_paragraphs(sources: Sequence[Source], src_hash: str, verbose: bool = False) -> Paragraphs:
    t0 = time.perf_counter()
    seen: set = set()
    texts: List[str] = []
    nbytes: List[int] = []
    src_of: List[int] = []
    raw_n = not_en = dup = cap = 0
    for si, src in enumerate(sources):
        if verbose and si % 2000 == 0:
            print(f"  [corpus] extracting {si}/{len(sources)} sources, {sum(nbytes) / 1e6:.1f} MB unique so far", file=sys.stderr)
        used = 0
        for raw in _extract_one(src):
            p = normalize(raw)
            if not p:
                continue
            for q in split_long(p):
                raw_n += 1
                if not is_english(q):
                    not_en += 1
                    continue
                key = hashlib.blake2b(q.encode("utf-8"), digest_size=12).digest()
                if key in seen:
                    dup += 1
                    continue
                b = len(q.encode("utf-8"))
                if used + b > MAX_BYTES_PER_SOURCE:
                    cap += 1
                    continue
                seen.add(key)
                used += b
                texts.append(q)
                nbytes.append(b)
                src_of.append(si)
    return Paragraphs(src_hash, list(sources), texts, nbytes, src_of, raw_n, not_en, dup, cap, time.perf_counter() - t0)


def _atomic_pickle(obj, path: str) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = f"{path}.tmp{os.getpid()}"
    with open(tmp, "wb") as f:
        pickle.dump(obj, f, protocol=pickle.HIGHEST_PROTOCOL)
    os.replace(tmp, path)


def _prune_stale(keep_hash: str) -> None:
    """Drop cache files built from another source set (they are 50+ MB each)."""
    try:
        names = os.listdir(DATA_DIR)
    except OSError:
        return
    for fn in names:
        if fn.startswith(("paragraphs-", "corpus-")) and fn.endswith(".pkl") and keep_hash not in fn:
            try:
                os.remove(os.path.join(DATA_DIR, fn))
            except OSError:
                pass


def _load_pickle(path: str):
    try:
        with open(path, "rb") as f:
            return pickle.load(f)
    except (OSError, pickle.UnpicklingError, EOFError, AttributeError, ImportError):
        return None


def load_paragraphs(verbose: bool = False, sources: Optional[List[Source]] = None) -> Paragraphs:
    if sources is None:
        sources = discover_sources()
    h = sources_hash(sources)
    path = os.path.join(DATA_DIR, f"paragraphs-{h}.pkl")
    obj = _load_pickle(path)
    if isinstance(obj, dict) and obj.get("kind") == "paragraphs" and obj.get("src_hash") == h:
        d = dict(obj)
        del d["kind"]
        d["sources"] = [Source(*s) for s in d["sources"]]
        return Paragraphs(**d)
    if verbose:
        print(
            f"  [corpus] source set {h} not cached: extracting {len(sources)} files (one-off, a minute or two)", file=sys.stderr
        )
    paras = collect_paragraphs(sources, h, verbose)
    d = dict(vars(paras), kind="paragraphs")
    d["sources"] = [(s.kind, s.path, s.size, s.mtime_ns) for s in paras.sources]
    _atomic_pickle(d, path)  # plain types: loadable whether run as a script or imported
    _prune_stale(h)
    return paras


# --------------------------------------------------------------------------
# Documents
# --------------------------------------------------------------------------


@dataclass
class Corpus:
    seed: int
    size_mb: float
    src_hash: str
    docs: List[str]
    doc_bytes: List[int]
    doc_sources: List[List[int]] = field(default_factory=list)  # source indices used per doc
    para_uses: int = 0

    @property
    def total_bytes(self) -> int:
        return sum(self.doc_bytes)


def build_docs(paras: Paragraphs, seed: int, size_mb: float) -> Corpus:
    if not paras.texts:
        raise RuntimeError("no English paragraphs found on this machine")
    rng = random.Random(seed)
    target_total = int(size_mb * 1_000_000)
    texts, nbytes, src_of = paras.texts, paras.nbytes, paras.src_of
    n = len(texts)
    # Starting points are drawn in proportion to paragraph bytes, so each
    # file's share of the corpus follows its share of the unique text.
    cum = list(itertools.accumulate(nbytes))
    grand = cum[-1]

    def random_start() -> int:
        return bisect.bisect_right(cum, rng.randrange(grand))

    mu = math.log(DOC_MEDIAN_BYTES)
    docs: List[str] = []
    doc_bytes: List[int] = []
    doc_sources: List[List[int]] = []
    total = 0
    uses = 0
    while total < target_total:
        target = int(min(DOC_MAX_BYTES, max(DOC_MIN_BYTES, rng.lognormvariate(mu, DOC_SIGMA))))
        parts: List[str] = []
        size = 0
        used_src: List[int] = []
        i = random_start()
        while size < target:
            room = DOC_MAX_BYTES - size - (2 if parts else 0)
            p, b = texts[i], nbytes[i]
            if b > room:
                if room < 200:
                    break
                cut = p.rfind(" ", 0, room)  # ASCII-safe bound; refine below
                p = p[: cut if cut > 0 else room]
                while len(p.encode("utf-8")) > room:
                    p = p[: len(p) - 16]
                b = len(p.encode("utf-8"))
            parts.append(p)
            size += b + (2 if len(parts) > 1 else 0)
            uses += 1
            if not used_src or used_src[-1] != src_of[i]:
                used_src.append(src_of[i])
            j = i + 1
            if j >= n or src_of[j] != src_of[i]:
                j = random_start()  # this file ran out: continue somewhere else
            i = j
        doc = "\n\n".join(parts)
        b = len(doc.encode("utf-8"))
        docs.append(doc)
        doc_bytes.append(b)
        doc_sources.append(used_src)
        total += b
    return Corpus(seed, size_mb, paras.src_hash, docs, doc_bytes, doc_sources, uses)


def load_corpus(size_mb: float = 64, seed: int = 0, verbose: bool = False, return_paragraphs: bool = False):
    """Return the cached (or freshly built) corpus: a ``Corpus`` whose ``docs``
    is the list of documents (str).  With ``return_paragraphs`` also return
    the ``Paragraphs`` it was built from."""
    sources = discover_sources()
    h = sources_hash(sources)
    path = os.path.join(DATA_DIR, f"corpus-{h}-b{BUILDER_VERSION}-seed{seed}-{size_mb:g}mb.pkl")
    paras = None
    d = _load_pickle(path)
    if (
        isinstance(d, dict)
        and d.get("kind") == "corpus"
        and d.get("src_hash") == h
        and d.get("seed") == seed
        and d.get("size_mb") == size_mb
    ):
        del d["kind"]
        obj = Corpus(**d)
    else:
        paras = load_paragraphs(verbose, sources)
        obj = build_docs(paras, seed, size_mb)
        _atomic_pickle(dict(vars(obj), kind="corpus"), path)
    if return_paragraphs:
        if paras is None:
            paras = load_paragraphs(verbose, sources)
        return obj, paras
    return obj


def load_docs(size_mb: float = 64, seed: int = 0, verbose: bool = False) -> List[str]:
    """The corpus as a plain list of str."""
    return load_corpus(size_mb, seed, verbose).docs


# --------------------------------------------------------------------------
# Statistics
# --------------------------------------------------------------------------


def corpus_stats(corpus: Corpus, paras: Paragraphs, top: int = 25) -> dict:
    sources = paras.sources
    words = collections.Counter()
    lens = collections.Counter()
    ntok = 0
    for d in corpus.docs:
        for w in WORD_RE.findall(d):
            wl = w.lower()
            words[wl] += 1
            lens[min(len(w), 20)] += 1
            ntok += 1
    stop_cov = sum(c for w, c in words.items() if w in STOPWORDS) / max(ntok, 1)
    # Share of corpus bytes per source file and per kind (approximate: a
    # document's bytes are split evenly over the files it drew from).
    by_src = collections.Counter()
    for b, ss in zip(corpus.doc_bytes, corpus.doc_sources):
        for s in ss:
            by_src[s] += b / len(ss)
    total = corpus.total_bytes
    by_kind = collections.Counter()
    for s, b in by_src.items():
        by_kind[sources[s].kind] += b
    uniq_by_kind = collections.Counter()
    for s, b in zip(paras.src_of, paras.nbytes):
        uniq_by_kind[sources[s].kind] += b
    files_used = len({s for s in paras.src_of})
    db = sorted(corpus.doc_bytes)

    def q(f):
        return db[min(len(db) - 1, int(f * len(db)))]

    nonascii = sum(sum(1 for c in d if ord(c) > 127) for d in corpus.docs if not d.isascii())
    return {
        "src_hash": paras.src_hash,
        "seed": corpus.seed,
        "size_mb_target": corpus.size_mb,
        "total_bytes": total,
        "docs": len(corpus.docs),
        "doc_bytes_min_p10_median_p90_max": [db[0], q(0.1), q(0.5), q(0.9), db[-1]],
        "doc_bytes_mean": round(total / len(db)),
        "source_files_found": len(sources),
        "source_files_contributing": files_used,
        "unique_paragraphs": len(paras.texts),
        "unique_paragraph_bytes": sum(paras.nbytes),
        "paragraph_uses_in_corpus": corpus.para_uses,
        "raw_paragraphs": paras.raw_paragraphs,
        "rejected_not_english": paras.rejected_not_english,
        "rejected_duplicate": paras.rejected_duplicate,
        "rejected_per_file_cap": paras.rejected_cap,
        "unique_bytes_by_kind": dict(uniq_by_kind.most_common()),
        "corpus_share_by_kind": {k: round(v / total, 4) for k, v in by_kind.most_common()},
        "top_files_share": [(sources[s].path, round(b / total, 5)) for s, b in by_src.most_common(8)],
        "word_tokens": ntok,
        "distinct_words": len(words),
        "stopword_coverage": round(stop_cov, 4),
        "nonascii_char_fraction": round(nonascii / max(1, sum(len(d) for d in corpus.docs)), 5),
        "mean_word_len": round(sum(k * v for k, v in lens.items()) / max(ntok, 1), 3),
        "word_len_hist": {k: round(lens[k] / ntok, 4) for k in sorted(lens)},
        "top_words": words.most_common(top),
    }


def print_stats(st: dict) -> None:
    print(f"corpus: {st['total_bytes'] / 1e6:.1f} MB, {st['docs']} docs, seed {st['seed']}, source set {st['src_hash']}")
    print(
        "doc bytes min/p10/median/p90/max: "
        + "/".join(str(x) for x in st["doc_bytes_min_p10_median_p90_max"])
        + f" (mean {st['doc_bytes_mean']})"
    )
    print(
        f"sources: {st['source_files_found']} files found, {st['source_files_contributing']} "
        f"contribute; unique paragraphs {st['unique_paragraphs']} = "
        f"{st['unique_paragraph_bytes'] / 1e6:.1f} MB (raw {st['raw_paragraphs']}, "
        f"not English {st['rejected_not_english']}, duplicate {st['rejected_duplicate']}, "
        f"over per-file cap {st['rejected_per_file_cap']})"
    )
    print("unique MB by kind: " + ", ".join(f"{k} {v / 1e6:.1f}" for k, v in st["unique_bytes_by_kind"].items()))
    print("corpus share by kind: " + ", ".join(f"{k} {v:.1%}" for k, v in st["corpus_share_by_kind"].items()))
    print("largest single files (share of corpus):")
    for p, s in st["top_files_share"]:
        print(f"  {s:.3%}  {p}")
    print(
        f"word tokens {st['word_tokens']}, distinct {st['distinct_words']}, mean length "
        f"{st['mean_word_len']}, top-100-English-words coverage {st['stopword_coverage']:.1%}, "
        f"non-ASCII chars {st['nonascii_char_fraction']:.3%}"
    )
    hist = st["word_len_hist"]
    print("word length histogram: " + " ".join(f"{k}{'+' if k == 20 else ''}:{v:.1%}" for k, v in hist.items()))
    print("top words: " + " ".join(f"{w}({c})" for w, c in st["top_words"]))


def main(argv: Optional[Sequence[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--size-mb", type=float, default=64, help="corpus size in 10^6 UTF-8 bytes")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--stats", action="store_true", help="print corpus statistics")
    ap.add_argument("--json", action="store_true", help="print the statistics as JSON")
    ap.add_argument("--sample", type=int, default=0, help="print N sample documents")
    ap.add_argument("--dump", metavar="FILE", help="write the corpus as JSON lines {id, text}")
    ap.add_argument("--sources", action="store_true", help="list the source files and exit")
    args = ap.parse_args(argv)
    if args.sources:
        for s in discover_sources():
            print(f"{s.kind}\t{s.size}\t{s.path}")
        return 0
    t0 = time.perf_counter()
    corpus, paras = load_corpus(args.size_mb, args.seed, verbose=True, return_paragraphs=True)
    print(
        f"loaded {len(corpus.docs)} docs, {corpus.total_bytes / 1e6:.1f} MB in {time.perf_counter() - t0:.1f} s", file=sys.stderr
    )
    if args.stats or args.json:
        st = corpus_stats(corpus, paras)
        if args.json:
            import json

            print(json.dumps(st))
        else:
            print_stats(st)
    if args.sample:
        rng = random.Random(args.seed + 1)
        for i in rng.sample(range(len(corpus.docs)), min(args.sample, len(corpus.docs))):
            print(f"----- doc {i} ({corpus.doc_bytes[i]} bytes)")
            print(corpus.docs[i])
    if args.dump:
        import json

        with open(args.dump, "w", encoding="utf-8") as f:
            for i, d in enumerate(corpus.docs):
                f.write(json.dumps({"id": i, "text": d}, ensure_ascii=False) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
