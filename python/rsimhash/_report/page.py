"""The HTML page: one self-contained document, readable without its script.

Sections: the run in numbers (each value a ``<td data-key=... data-value=...>``
for tools and tests), the charts, the largest groups (each member's id, its
distance and similarity to the group's first member, the kept record, and
where its text first differs from it), and the sample of pairs. Everything from the input or
the command line is escaped (``markup``). The page's size is bounded
whatever the corpus: at most ``GROUPS`` groups of ``MEMBERS`` members, and
pairs added in the sample's interleaved order until ``PAIR_BYTES``, each
text cut to ``TEXT_CHARS`` characters; so a page stays under about 4 MB.
"""

from __future__ import annotations

import datetime
from typing import Any, List, NamedTuple, Optional, Sequence, Tuple

from . import assets
from .markup import attr, count, cut, text
from .pairs import ID_CHARS, NUMBER, Pair, first_line, render, where_differs

GROUPS = 20
MEMBERS = 10
OPEN_GROUPS = 3
TEXT_CHARS = 2500
PAIR_BYTES = 3_000_000
LINE_CHARS = 4000


class Numbers:
    """Rows of the run-in-numbers table: ``(key, label, value shown, raw
    value)``; the raw value is an int or float for a number (None when not
    known), else the str shown."""

    def __init__(self) -> None:
        self.rows: List[Tuple[str, str, str, Any]] = []

    def add(self, key: str, label: str, value: object, raw: Optional[object] = None, known: bool = True) -> None:
        if isinstance(value, int) and not isinstance(value, bool):
            shown, raw = count(value), value if raw is None else raw
        else:
            shown = str(value)
            raw = shown if raw is None and known else raw
        self.rows.append((key, label, shown, raw))

    def html(self) -> str:
        body = "".join(
            f'<tr><th scope="row">{text(label)}</th><td data-key="{attr(key)}" '
            f'data-value="{attr("" if raw is None else raw)}">{text(cut(shown, LINE_CHARS))}</td></tr>'
            for key, label, shown, raw in self.rows
        )
        return f'<table class="numbers"><tbody>{body}</tbody></table>'


class Member(NamedTuple):
    id: str
    text: Optional[str]  # None: the input holds no text for it
    distance: Optional[int]  # to the group's first member (None for it, or not known)
    similarity: Optional[float]


def _bits(d: Optional[int]) -> str:
    return "" if d is None else f"{d} bit" + ("" if d == 1 else "s")


def _similarity(s: Optional[float]) -> str:
    return "" if s is None else f"{s:.6f}".rstrip("0").rstrip(".")


def groups_html(
    groups: Sequence[Tuple[int, List[Member]]],
    what: str,
    roles: Tuple[str, str],
    total: int,
    measure: str = "jaccard",
    texts: bool = True,
) -> str:
    """The largest groups: ``(size, members)`` each, its first member (the
    kept record) first; the first few open. Each other member shows its
    distance and similarity to the first, and where its text first differs
    from the first's. ``texts``: the input has texts to show."""
    if not groups:
        return f'<p class="note">No {text(what)}.</p>'
    with_distance = any(m.distance is not None for _, ms in groups for m in ms)
    with_similarity = any(m.similarity is not None for _, ms in groups for m in ms)
    items = []
    for number, (size, members) in enumerate(groups):
        kept = members[0].text
        rows = []
        for i, m in enumerate(members):
            data = ""
            if i:
                dist = "" if m.distance is None else str(m.distance)
                data = f' data-distance="{dist}" data-similarity="{attr(_similarity(m.similarity))}"'
            rows.append(
                f'<tr{data}><td><span class="role">{text(roles[0] if i == 0 else roles[1])}</span></td>'
                f'<td class="id"><code>{text(cut(m.id, ID_CHARS))}</code></td>'
                + (f'<td class="distance">{text(_bits(m.distance))}</td>' if with_distance else "")
                + (f'<td class="similarity">{text(_similarity(m.similarity))}</td>' if with_similarity else "")
                + (
                    f'<td class="first" dir="auto">{text(first_line(m.text)) if i == 0 else where_differs(kept, m.text)}</td>'
                    if texts
                    else ""
                )
                + "</tr>"
            )
        more = size - len(members)
        tail = f'<p class="note">and {count(more)} more</p>' if more > 0 else ""
        head = (
            (f"<th>distance to {text(roles[0])}</th>" if with_distance else "")
            + (f"<th>{text(measure)} with {text(roles[0])}</th>" if with_similarity else "")
            + (f"<th>first line; for the others, where they first differ from the {text(roles[0])} record</th>" if texts else "")
        )
        items.append(
            f"<li><details{' open' if number < OPEN_GROUPS else ''}><summary>{count(size)} records, "
            f"first <code>{text(cut(members[0].id, ID_CHARS))}</code></summary><table><thead><tr><th></th>"
            f"<th>id</th>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>{tail}</details></li>"
        )
    shown = len(groups)
    note = f"the {shown} largest of {count(total)}" if total > shown else f"all {count(total)}"
    return f'<p class="note">{text(note)} {text(what)}, largest first.</p><ol class="groups">{"".join(items)}</ol>'


def pairs_html(
    pairs: Sequence[Pair],
    total: int,
    how: str,
    measure: str,
    max_distance: Optional[int],
    similarity_range: Optional[Tuple[float, float]],
) -> str:
    """The sampled pairs, in the sample's interleaved order until the byte
    budget, then shown the farthest first (by distance, then similarity);
    with the filter form."""
    rendered: List[Tuple[Tuple[float, float, int], str]] = []  # (order key, article)
    size = 0
    for i, pair in enumerate(pairs):
        chars = TEXT_CHARS
        block = render(pair, chars, measure)
        if size + len(block.encode("utf-8")) > PAIR_BYTES:
            break
        size += len(block.encode("utf-8"))
        # the farthest first (the pairs most worth a look): by distance, or
        # in verified runs (a similarity range to filter) by similarity
        far = -(pair.distance if pair.distance is not None else -1)
        alike = pair.similarity if pair.similarity is not None else 2.0
        key = (alike, far, i) if similarity_range is not None else (far, alike, i)
        rendered.append((key, block))
    rendered.sort(key=lambda r: r[0])
    dropped = len(pairs) - len(rendered)
    intro = (
        f'<p class="note">{count(len(rendered))} of {count(total)} pairs, {text(how)}; the farthest first'
        + (f" ({count(dropped)} more sampled but left out to keep the page small)" if dropped else "")
        + ". Words only on the left are <del>struck through</del>, words only on the right <ins>underlined"
        '</ins>, changed words <ins class="chg">highlighted</ins>; long unchanged runs are folded (click '
        "to open).</p>"
    )
    controls = []
    if max_distance is not None:
        controls.append(
            f'<label>distance at most <input type="range" id="max-distance" min="0" '
            f'max="{max_distance}" step="1" value="{max_distance}"> <output id="max-distance-value">'
            f"{max_distance}</output> bits</label>"
        )
    if similarity_range is not None:
        lo, hi = similarity_range
        controls.append(
            f'<label>{text(measure)} at least <input type="range" id="min-similarity" '
            f'min="{lo:.2f}" max="{hi:.2f}" step="0.01" value="{lo:.2f}"> '
            f'<output id="min-similarity-value">{lo:.2f}</output></label>'
        )
    form = (
        (f'<form id="filter" hidden>{"".join(controls)}<span id="shown" class="muted" aria-live="polite"></span></form>')
        if rendered
        else ""
    )
    keys = (
        '<p id="keys" class="keys muted" hidden>Keys: <kbd>j</kbd>/<kbd>k</kbd> next and previous pair, '
        "<kbd>o</kbd> open or close its folds, <kbd>/</kbd> the filter, <kbd>Esc</kbd> back.</p>"
    )
    return intro + form + keys + "".join(block.replace(NUMBER, str(n)) for n, (_, block) in enumerate(rendered, 1))


def document(title: str, subtitle: str, sections: Sequence[Tuple[str, str, str]], version: str) -> str:
    """The whole page: ``sections`` are ``(id, heading, html)``."""
    nav = " ".join(f'<a href="#{attr(i)}">{text(h)}</a>' for i, h, _ in sections)
    body = "".join(f'<section id="{attr(i)}"><h2>{text(h)}</h2>{html}</section>' for i, h, html in sections)
    when = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{attr(assets.csp())}">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{text(title)}</title><style>{assets.CSS}</style></head><body>"
        f'<header class="top"><h1>{text(title)}</h1><p class="sub">{text(subtitle)}</p>'
        f"<nav>{nav}</nav></header><main>{body}</main>"
        f"<footer>Made by rsimhash {text(version)} on {text(when)}. One self-contained file: no network, "
        "the charts are drawn in the page.</footer>"
        f"<script>{assets.SCRIPT}</script></body></html>\n"
    )
