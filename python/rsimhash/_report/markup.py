"""Escaping for the page: every text from the input goes through ``text``
or ``attr`` and is shown, never rendered.

Besides ``&``, ``<`` and ``>`` (and quotes in attributes), ``clean`` makes
any str safe to write as UTF-8 HTML: a lone surrogate (JSON allows
``"\\ud800"``) cannot be encoded and becomes U+FFFD; control characters
other than tab and line ends, and Unicode noncharacters, are parse errors
in HTML and become their visible pictures (U+2400 + code, or U+FFFD).
"""

from __future__ import annotations

import html
import re

_BAD = re.compile(
    "[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ud800-\udfff\ufdd0-\ufdef\ufffe\uffff"
    "\U0001fffe\U0001ffff\U0002fffe\U0002ffff\U0003fffe\U0003ffff\U0004fffe\U0004ffff"
    "\U0005fffe\U0005ffff\U0006fffe\U0006ffff\U0007fffe\U0007ffff\U0008fffe\U0008ffff"
    "\U0009fffe\U0009ffff\U000afffe\U000affff\U000bfffe\U000bffff\U000cfffe\U000cffff"
    "\U000dfffe\U000dffff\U000efffe\U000effff\U000ffffe\U000fffff\U0010fffe\U0010ffff]"
)


def _picture(m: "re.Match[str]") -> str:
    o = ord(m.group())
    if o < 0x20:
        return chr(0x2400 + o)
    if o == 0x7F:
        return "\u2421"
    return "\ufffd"


def clean(s: str) -> str:
    """``s`` with the characters HTML cannot carry replaced (see the module doc)."""
    return _BAD.sub(_picture, s)


def text(s: object) -> str:
    """``s`` as the content of an element."""
    return html.escape(clean(str(s)), quote=False)


def attr(s: object) -> str:
    """``s`` as the value of a double-quoted attribute."""
    return html.escape(clean(str(s)), quote=True)


def cut(s: str, limit: int) -> str:
    """``s`` cut to ``limit`` characters, with an ellipsis when cut."""
    return s if len(s) <= limit else s[: max(0, limit - 1)] + "\u2026"


def count(n: int) -> str:
    return f"{n:,}"
