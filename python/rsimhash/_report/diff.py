"""Word-level diff of two texts, for the report's side-by-side pairs.

Invariant: the pieces reconstruct both texts exactly. ``diff(a, b)`` is a
list of ``Op(tag, a, b)``; joining every ``op.a`` in order gives ``a`` and
every ``op.b`` gives ``b``, whatever the texts hold (any script, emoji,
lone surrogates, control characters). ``tag`` is ``equal``, ``replace``
(changed words), ``delete`` (words only in ``a``) or ``insert`` (only in
``b``).

Tokens follow SPEC v1's words: a run of letters, marks and numbers, or a
single character of a script written without spaces (CJK, kana, Thai, Lao,
Myanmar, Khmer), or any other single character (punctuation, an emoji),
each with the marks, joiners, variation selectors and skin tones that
belong to it, then its trailing whitespace. Leading whitespace is a token
of its own. Tokens are compared as the fingerprints see them: lowercased,
without their trailing whitespace (so a word moved to the next line or
capitalised is not a change; the page marks case apart); each side keeps
its own characters.
"""

from __future__ import annotations

import difflib
import re
import unicodedata
from collections import Counter
from typing import List, NamedTuple, Optional, Tuple

# Scripts written without spaces (SPEC v1's list): each character a token.
_NOSPACE = "\u0e00-\u0eff\u1000-\u109f\u1780-\u17ff\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0003134f"
_ZWJ = "\u200d"
EXACT_WORK = 100_000  # tokens x tokens that difflib compares exactly (0.04 s at most)
EXACT_COUNT = 20_000  # tokens between the common head and tail that ``count`` aligns (0.1 s at most)
_REGIONAL = "".join(chr(c) for c in range(0x1F1E6, 0x1F200))  # flag letters


def _ranges(codes: List[int]) -> str:
    out, start = [], None
    for a, b in zip(codes, codes[1:] + [-1]):
        start = a if start is None else start
        if b != a + 1:
            out.append(re.escape(chr(start)) + ("" if a == start else "-" + re.escape(chr(a))))
            start = None
    return "".join(out)


_TOKEN_RE: "Optional[re.Pattern[str]]" = None


def _token_re() -> "re.Pattern[str]":
    """Whitespace runs; a character of a no-space script; a run of letters,
    marks and numbers (SPEC v1's token characters); any other character.
    Made on first use."""
    global _TOKEN_RE
    if _TOKEN_RE is not None:
        return _TOKEN_RE
    # Marks are below U+20000 but for the variation selectors supplement (0.04 s to list, once).
    marks = [c for c in range(0x20000) if unicodedata.category(chr(c))[0] == "M"] + list(range(0xE0100, 0xE01F0))
    word = f"(?:[^\\W_{_NOSPACE}]+|[{_ranges(marks)}]+)+"
    # Each token takes its trailing whitespace; only leading whitespace is a token alone.
    _TOKEN_RE = re.compile(rf"\s+|(?:[{_NOSPACE}]|{word}|.)\s*", re.S)
    return _TOKEN_RE


class Op(NamedTuple):
    tag: str  # "equal", "replace", "delete" or "insert"
    a: List[str]  # tokens of the first text (empty for "insert")
    b: List[str]  # tokens of the second text (empty for "delete")


def _attached(ch: str, prev: str) -> bool:
    """Whether ``ch`` belongs to the token before it: a combining mark, a
    variation selector or emoji modifier, a character after a zero-width
    joiner, or the second of two regional indicators (a flag)."""
    o = ord(ch)
    if prev.endswith(_ZWJ) or ch == _ZWJ or 0xFE00 <= o <= 0xFE0F or 0x1F3FB <= o <= 0x1F3FF or 0xE0020 <= o <= 0xE007F:
        return True
    if 0x1F1E6 <= o <= 0x1F1FF:
        # Pairs of regional indicators make flags: attach the second of each pair.
        run = len(prev) - len(prev.rstrip(_REGIONAL))
        return run % 2 == 1
    return unicodedata.category(ch)[0] == "M"


def tokens(text: str) -> List[str]:
    """``text`` cut into tokens (see the module doc); they join to ``text``."""
    found = _token_re().findall(text)
    if text.isascii():
        return found
    out: List[str] = []
    for t in found:
        # Nothing below U+0300 attaches (marks, joiners and modifiers are above it) but after a joiner.
        if out and not out[-1][-1].isspace() and (ord(t[0]) >= 0x300 or out[-1][-1] == _ZWJ) and _attached(t[0], out[-1]):
            out[-1] += t
        else:
            out.append(t)
    return out


def key(token: str) -> str:
    """What two tokens are compared by: lowercased as the fingerprints see
    them, without their trailing whitespace."""
    return token.rstrip().lower() or token


def _ends(ka: List[str], kb: List[str]) -> Tuple[int, int]:
    """The lengths of the common head and tail of two lists of keys (linear)."""
    head = 0
    while head < len(ka) and head < len(kb) and ka[head] == kb[head]:
        head += 1
    tail = 0
    while tail < len(ka) - head and tail < len(kb) - head and ka[-1 - tail] == kb[-1 - tail]:
        tail += 1
    return head, tail


def _ops(ta: List[str], tb: List[str], ka: List[str], kb: List[str], head: int, tail: int) -> List[Op]:
    # difflib only on what lies between the common head and tail, exactly when
    # that is small, else with its heuristic that ignores popular tokens
    # (difflib is quadratic on texts that repeat a few tokens).
    mid_a, mid_b = ka[head : len(ka) - tail], kb[head : len(kb) - tail]
    matcher = difflib.SequenceMatcher(None, mid_a, mid_b, autojunk=len(mid_a) * len(mid_b) > EXACT_WORK)
    ops = [Op("equal", ta[:head], tb[:head])]
    ops += [Op(tag, ta[head + i1 : head + i2], tb[head + j1 : head + j2]) for tag, i1, i2, j1, j2 in matcher.get_opcodes()]
    ops.append(Op("equal", ta[len(ta) - tail :], tb[len(tb) - tail :]))
    merged: List[Op] = []
    for op in ops:
        if not op.a and not op.b:
            continue
        if merged and op.tag == "equal" and merged[-1].tag == "equal":
            merged[-1] = Op("equal", merged[-1].a + op.a, merged[-1].b + op.b)
        else:
            merged.append(op)
    return merged


def diff(a: str, b: str) -> List[Op]:
    """The word-level diff of ``a`` and ``b``; its pieces join to both exactly."""
    ta, tb = tokens(a), tokens(b)
    ka, kb = [key(t) for t in ta], [key(t) for t in tb]
    return _ops(ta, tb, ka, kb, *_ends(ka, kb))


def changed_words(ops: List[Op]) -> int:
    """Words (tokens) that differ, counted on the longer side of each change."""
    return sum(max(len(op.a), len(op.b)) for op in ops if op.tag != "equal")


def case_only(ops: List[Op]) -> int:
    """Unchanged words that differ in case only."""
    return sum(x.rstrip() != y.rstrip() for op in ops if op.tag == "equal" for x, y in zip(op.a, op.b))


class Count(NamedTuple):
    changed: int  # words that differ, as ``changed_words`` counts them
    case: int  # unchanged words that differ in case only
    exact: bool  # False: a lower bound (see ``count``)


def count(a: str, b: str) -> Count:
    """The words that differ between two whole texts, however long, in time
    linear in them but for at most ``EXACT_COUNT`` tokens aligned by the diff.

    The common head and tail are matched first; when what lies between holds
    more than ``EXACT_COUNT`` tokens, it is not aligned but counted as a bag
    of words: the words one side has more of than the other. That is a lower
    bound of any alignment's count (``exact`` False), and its case-only
    count covers the head and tail only."""
    ta, tb = tokens(a), tokens(b)
    ka, kb = [key(t) for t in ta], [key(t) for t in tb]
    head, tail = _ends(ka, kb)
    if len(ka) + len(kb) - 2 * (head + tail) <= EXACT_COUNT:
        ops = _ops(ta, tb, ka, kb, head, tail)
        return Count(changed_words(ops), case_only(ops), True)
    bag_a, bag_b = Counter(ka[head : len(ka) - tail]), Counter(kb[head : len(kb) - tail])
    more = max(sum((bag_a - bag_b).values()), sum((bag_b - bag_a).values()))
    ends = [Op("equal", ta[:head], tb[:head]), Op("equal", ta[len(ta) - tail :], tb[len(tb) - tail :])]
    return Count(more, case_only(ends), False)


def first_change(a: str, b: str, window: int = 40) -> Optional[Tuple[int, Op]]:
    """Where ``b`` first differs from ``a`` word for word (as ``diff`` compares
    words): the offset in ``b`` of the first differing token and the change
    that starts there (``replace``, ``insert`` or ``delete``: the tokens of a
    diff of the next ``window`` tokens of each); None when they are alike.
    Linear in the common head."""
    ta, tb = tokens(a), tokens(b)
    ka, kb = [key(t) for t in ta], [key(t) for t in tb]
    head, _ = _ends(ka, kb)
    if head == len(ka) and head == len(kb):
        return None
    ends = slice(head, head + window)
    local = _ops(ta[ends], tb[ends], ka[ends], kb[ends], 0, 0)
    change = next(op for op in local if op.tag != "equal")
    before = local[: local.index(change)]
    at = sum(len(t) for t in tb[:head]) + sum(len(t) for op in before for t in op.b)
    return at, change
