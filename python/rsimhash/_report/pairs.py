"""One sampled pair on the page: both texts side by side with their
word-level diff marked.

Each side shows its own text, escaped: words only in the first text are
``<del>``, words only in the second ``<ins>``, changed words ``<del
class="chg">`` on the left and ``<ins class="chg">`` on the right (struck
through and underlined without CSS too). A run of more than ``FOLD``
unchanged tokens keeps ``KEEP`` at each end and folds the middle into a
``<details>`` element: closed, it says how many words it holds; open (a
click, no script needed), it shows them. Each text is cut to ``chars``
characters first (the page's size budget); the cut is said on the page.
Every text element has ``dir="auto"``, so a text in Arabic or Hebrew runs
right to left on its own side.
"""

from __future__ import annotations

from typing import List, NamedTuple, Optional

from .diff import Op, changed_words, diff
from .markup import attr, count, cut, text

FOLD = 40
KEEP = 12


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
    return f'<p class="cut">first {count(len(shown))} of {count(len(full))} characters</p>'


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
        f'<div class="who"><span class="role">{text(role)}</span> <code>{text(cut(rid, 200))}</code></div>'
        for role, rid in ((pair.left_role, pair.left_id), (pair.right_role, pair.right_id))
    )
    left_who, right_who = ids
    if pair.left is None or pair.right is None:
        parts.append(f'<div class="sides"><div class="side">{left_who}</div><div class="side">{right_who}</div></div>')
    else:
        a, b = pair.left[:chars], pair.right[:chars]
        ops = diff(a, b)
        changed = changed_words(ops)
        case = sum(x.rstrip() != y.rstrip() for op in ops if op.tag == "equal" for x, y in zip(op.a, op.b))
        case_note = f", {count(case)} in case only" if case else ""
        parts.append(
            f'<p class="changed">{count(changed)} word{" differs" if changed == 1 else "s differ"}'
            f"{case_note}</p>"
            f'<div class="sides"><div class="side">{left_who}<div class="text" dir="auto">'
            f"{_side(ops, 'a')}</div>{_note(pair.left, a)}</div>"
            f'<div class="side">{right_who}<div class="text" dir="auto">{_side(ops, "b")}</div>'
            f"{_note(pair.right, b)}</div></div>"
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
