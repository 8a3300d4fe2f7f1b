"""One sampled pair on the page: both texts side by side with their
word-level diff marked.

Each side shows its own text, escaped: words only in the first text are
``<del>``, words only in the second ``<ins>``, changed words ``<del
class="chg">`` on the left and ``<ins class="chg">`` on the right (struck
through and underlined without CSS too). A run of more than ``FOLD``
unchanged tokens keeps ``KEEP`` at each end and folds the middle into a
``<details>`` element: closed, it says how many words it holds; open (a
click, no script needed), it shows them. Each text is cut to ``chars``
characters first (the page's size budget); the cut is said above the text
(how much is shown of how much), and the words that differ are counted on
the whole texts (``diff.count``), with how many of them the part shown holds.
Every text element has ``dir="auto"``, so a text in Arabic or Hebrew runs
right to left on its own side.
"""

from __future__ import annotations

from typing import List, NamedTuple, Optional

from .diff import Op, case_only, changed_words, diff, first_change
from .diff import count as count_words
from .markup import attr, count, cut, text

FOLD = 40
KEEP = 12
ID_CHARS = 1000  # an id longer than this (no URL in practice) is cut, with an ellipsis


class Pair(NamedTuple):
    left_id: str
    right_id: str
    left_role: str  # "kept", "first member", "a", ...
    right_role: str
    distance: Optional[int]
    similarity: Optional[float]
    left: Optional[str]  # the texts (None: the input holds no texts)
    right: Optional[str]


def _run(tokens: List[str], mark: Optional[str]) -> str:
    body = text("".join(tokens))
    if mark is None or not body:
        return body
    return mark.format(body)


def _plain(tokens: List[str], other: List[str]) -> str:
    """Unchanged tokens; those that differ from the other side's in case
    only are marked ``span.case``."""
    parts: List[str] = []
    run: List[str] = []
    case = False
    for mine, theirs in zip(tokens, other):
        differs = mine.rstrip() != theirs.rstrip()
        if differs != case and run:
            parts.append(_run(run, '<span class="case" title="differs in case">{}</span>' if case else None))
            run = []
        case = differs
        run.append(mine)
    if run:
        parts.append(_run(run, '<span class="case" title="differs in case">{}</span>' if case else None))
    return "".join(parts)


def _equal(tokens: List[str], other: List[str], first: bool, last: bool) -> str:
    """An unchanged run, folded when long but for the words next to a change
    (a text that is all unchanged keeps its beginning)."""
    if len(tokens) <= FOLD:
        return _plain(tokens, other)
    if first and last:  # the texts are alike word for word: show how they begin
        head, tail = 2 * KEEP, 0
    else:
        head, tail = (0 if first else KEEP), (0 if last else KEEP)
    cut_at = len(tokens) - tail
    return (
        _plain(tokens[:head], other[:head]) + f'<details class="fold"><summary>\u2026 {count(cut_at - head)} '
        f"unchanged words \u2026</summary>{_plain(tokens[head:cut_at], other[head:cut_at])}</details>"
        + _plain(tokens[cut_at:], other[cut_at:])
    )


def _side(ops: List[Op], side: str) -> str:
    parts = []
    for i, op in enumerate(ops):
        tokens, other = (op.a, op.b) if side == "a" else (op.b, op.a)
        if op.tag == "equal":
            parts.append(_equal(tokens, other, i == 0, i == len(ops) - 1))
        elif op.tag == "replace":
            parts.append(_run(tokens, '<del class="chg">{}</del>' if side == "a" else '<ins class="chg">{}</ins>'))
        elif op.tag == "delete" and side == "a":
            parts.append(_run(tokens, "<del>{}</del>"))
        elif op.tag == "insert" and side == "b":
            parts.append(_run(tokens, "<ins>{}</ins>"))
    return "".join(parts)


def _note(full: str, shown: str) -> str:
    if len(shown) == len(full):
        return ""
    return f'<p class="cut">cut: the first {count(len(shown))} of {count(len(full))} characters shown</p>'


def _changed(left: str, right: str, a: str, b: str, ops: List[Op]) -> str:
    """The line that says how many words differ: on the whole texts, and when
    either is cut, how many of them the part shown holds."""
    shown = changed_words(ops)
    if len(a) == len(left) and len(b) == len(right):
        changed, case, exact = shown, case_only(ops), True
    else:
        changed, case, exact = count_words(left, right)
    said = f"{'at least ' if not exact else ''}{count(changed)} word{' differs' if changed == 1 else 's differ'}"
    if case:
        said += f", {count(case)} in case only"
    if len(a) < len(left) or len(b) < len(right):
        said += f" in the whole texts; {count(shown)} in the part shown"
        if not exact:
            said += " (texts too long to align word by word: counted as the words one has more of than the other)"
    return f'<p class="changed">{said}</p>'


NUMBER = "<#>"  # stands for the pair's number until the pairs are in order (no escaped text holds "<")


def render(pair: Pair, chars: int, measure: str, number: object = NUMBER) -> str:
    """The ``<article>`` of one pair, its texts cut to ``chars`` characters;
    ``NUMBER`` stands for its number unless given."""
    sim = "" if pair.similarity is None else f"{pair.similarity:.6f}".rstrip("0").rstrip(".")
    dist = "" if pair.distance is None else str(pair.distance)
    head = [f'<span class="d">distance {text(dist) if dist else "?"}{" bit" if dist == "1" else " bits"}</span>']
    if sim:
        head.append(f'<span class="s">{text(measure)} {text(sim)}</span>')
    parts = [
        f'<article class="pair" id="pair-{number}" tabindex="-1" data-distance="{attr(dist)}" '
        f'data-similarity="{attr(sim)}"><h3><a class="anchor" href="#pair-{number}">#{number}</a> '
        + " \u00b7 ".join(head)
        + "</h3>"
    ]
    ids = (
        f'<div class="who"><span class="role">{text(role)}</span> <code>{text(cut(rid, ID_CHARS))}</code></div>'
        for role, rid in ((pair.left_role, pair.left_id), (pair.right_role, pair.right_id))
    )
    left_who, right_who = ids
    if pair.left is None or pair.right is None:
        parts.append(f'<div class="sides"><div class="side">{left_who}</div><div class="side">{right_who}</div></div>')
    else:
        a, b = pair.left[:chars], pair.right[:chars]
        ops = diff(a, b)
        parts.append(
            _changed(pair.left, pair.right, a, b, ops) + f'<div class="sides"><div class="side">{left_who}'
            f'{_note(pair.left, a)}<div class="text" dir="auto">{_side(ops, "a")}</div></div>'
            f'<div class="side">{right_who}{_note(pair.right, b)}<div class="text" dir="auto">{_side(ops, "b")}</div>'
            "</div></div>"
        )
    parts.append("</article>")
    return "".join(parts)


def first_line(s: Optional[str], limit: int = 160) -> str:
    """The first line of a text that holds anything, cut to ``limit``."""
    if s is None:
        return ""
    for line in s.splitlines():
        if line.strip():
            return cut(line.strip(), limit)
    return ""


def where_differs(kept: Optional[str], other: Optional[str], limit: int = 160) -> str:
    """HTML of where ``other`` first differs from ``kept`` word for word: the
    line of ``other`` that holds the first difference (or, in a long line,
    the text around it), the words changed or added there ``<ins>``, those
    missing ``<del>`` (as in the pairs). Its first line when the two have
    the same words, or when there is no kept text to compare with."""
    if other is None:
        return ""
    if kept is None:
        return text(first_line(other, limit))
    found = first_change(kept, other)
    if found is None:
        return text(first_line(other, limit)) + ' <span class="muted">(the same words)</span>'
    at, op = found
    start = other.rfind("\n", 0, at) + 1
    end = other.find("\n", at)
    end = len(other) if end < 0 else end
    start = max(start, at - limit // 3)
    while start < at and other[start].isspace():
        start += 1
    changed = "".join(op.b)
    room = max(0, limit - (at - start) - len(changed))
    head = ("\u2026" if start > 0 and other[start - 1] != "\n" else "") + other[start:at]
    if op.tag == "delete":  # words of the kept record missing here
        mark = f"<del>{text(cut(''.join(op.a).rstrip(), limit // 2))}</del> "
    else:
        tag = '<ins class="chg">' if op.tag == "replace" else "<ins>"
        mark = f"{tag}{text(cut(changed.rstrip(), limit))}</ins>" + (" " if changed[-1:].isspace() else "")
    rest = other[at + len(changed) : end]
    return text(head) + mark + (text(cut(rest, room)) if rest else "")
