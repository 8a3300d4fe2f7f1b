"""A griffe extension for the API reference: the docstrings are reST-ish
prose (``double backticks``, ``>>>`` examples, ``Example::`` literal blocks)
and mkdocstrings renders them as Markdown, where a ``>>>`` line is a nested
block quote and a literal block is unhighlighted. This turns each doctest
block and each ``::`` literal block into a fenced code block before rendering;
the docstrings themselves stay as they are (the doctests run them as written).

Loaded by mkdocs.yml (``extensions: [docs/griffe_rst.py:RstBlocks]``); not a
page of the site (``exclude_docs``).
"""

from __future__ import annotations

import re
import textwrap
from typing import Any

import griffe

_LITERAL_INTRO = re.compile(r"^(\s*)(.*?)(\s*)::\s*$")


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def convert(text: str) -> str:
    """The docstring ``text`` with doctest and literal blocks fenced."""
    lines = text.split("\n")
    out: list[str] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.lstrip().startswith(">>>"):
            # A doctest block runs to the next blank line (reST's rule).
            # reST reads an indented block as a quote; Markdown would read 4
            # spaces as code, so such a block goes to the margin.
            pad = " " * _indent(line) if _indent(line) < 4 else ""
            block = []
            while i < len(lines) and lines[i].strip():
                block.append(lines[i])
                i += 1
            body = textwrap.dedent("\n".join(block)).split("\n")
            out += [pad + "```pycon", *(pad + b for b in body), pad + "```"]
            continue
        m = _LITERAL_INTRO.match(line)
        if m and i + 1 < len(lines) and not lines[i + 1].strip():
            # "Text::" ends a paragraph with ":" and starts an indented literal
            # block after a blank line; a bare "::" line disappears.
            j = i + 1
            while j < len(lines) and not lines[j].strip():
                j += 1
            base = _indent(line)
            k = j
            while k < len(lines) and (not lines[k].strip() or _indent(lines[k]) > base):
                k += 1
            while k > j and not lines[k - 1].strip():
                k -= 1
            if k > j:
                pad = m.group(1)
                if m.group(2):
                    # "Text::" reads "Text:"; "Text ::" reads "Text".
                    out.append(pad + m.group(2) + ("" if m.group(3) else ":"))
                    out.append("")
                body = textwrap.dedent("\n".join(lines[j:k])).split("\n")
                out += [pad + "```python", *(pad + b if b else b for b in body), pad + "```"]
                i = k
                continue
        out.append(line)
        i += 1
    return "\n".join(out)


class RstBlocks(griffe.Extension):
    """Fences the doctest and literal blocks of every docstring in the package.

    Also shapes two things of the public surface for the reference: a
    compiled class's constructor, declared as ``__new__`` in the stub, is
    shown as the class's signature (mkdocstrings merges only ``__init__``),
    and keyword parameters named ``_...`` (internal switches for tests) are
    left out of signatures.
    """

    def on_package(self, *, pkg: griffe.Module, **kwargs: Any) -> None:
        seen: set[int] = set()
        stack: list[griffe.Object] = [pkg]
        while stack:
            obj = stack.pop()
            if id(obj) in seen:
                continue
            seen.add(id(obj))
            if obj.docstring is not None:
                obj.docstring.value = convert(obj.docstring.value)
            if obj.is_function:
                for name in [p.name for p in obj.parameters if p.name.startswith("_")]:
                    del obj.parameters[name]
            if obj.is_class and "__new__" in obj.members and "__init__" not in obj.members:
                new = obj.members["__new__"]
                if not new.is_alias:
                    obj.del_member("__new__")
                    new.name = "__init__"
                    new.returns = None
                    obj.set_member("__init__", new)
            stack += [m for m in obj.members.values() if not m.is_alias]
