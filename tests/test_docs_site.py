"""The documentation site (mkdocs.yml, docs/): every page is in the nav and
every nav entry is a page; the API reference names only public objects and
covers the Index's public surface; docs/spec.md is the fingerprint spec word
for word. The site's build itself (`mkdocs build --strict`) runs in
scripts/test.sh."""

from __future__ import annotations

import importlib
import inspect
import re
from pathlib import Path

import pytest

import rsimhash

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
SPEC = ROOT.parent / "shared" / "SPEC.md"
# The public subpackages (rsimhash.spark stays out of rsimhash.__all__: it needs
# PySpark); rsimhash.cli and the rsimhash._* modules are private.
SUBPACKAGES = ("batch", "spark")


def _nav_pages() -> list[str]:
    """The .md paths named in mkdocs.yml's nav (read as text: no YAML library needed)."""
    text = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    nav = text.split("\nnav:\n", 1)[1]
    nav = re.split(r"\n(?=\S)", nav, maxsplit=1)[0]  # up to the next top-level key
    return re.findall(r":\s*(\S+\.md)\s*$", nav, flags=re.M)


def test_every_page_is_in_the_nav_and_every_nav_entry_is_a_page():
    pages = sorted(p.relative_to(DOCS).as_posix() for p in DOCS.rglob("*.md"))
    nav = _nav_pages()
    assert len(nav) == len(set(nav)), f"a page is twice in the nav: {nav}"
    assert sorted(nav) == pages


def test_spec_page_is_the_spec_verbatim():
    if not SPEC.exists():
        pytest.skip(f"{SPEC} is not beside the repository")
    note, blank, body = (DOCS / "spec.md").read_text(encoding="utf-8").partition("\n\n")
    assert "\n" not in note and "must not change" in note, "docs/spec.md starts with one line of note, then the spec"
    assert body == SPEC.read_text(encoding="utf-8")


def _reference() -> list[tuple[Path, str, list[str]]]:
    """(page, `::: name`, its members option) for every directive in docs/reference."""
    found = []
    for page in sorted((DOCS / "reference").glob("*.md")):
        text = page.read_text(encoding="utf-8")
        for m in re.finditer(r"^::: (\S+)\n((?:[ \t]+\S.*\n)*)", text, flags=re.M):
            members = re.findall(r"^\s+- (\S+)\s*$", m.group(2), flags=re.M)
            found.append((page, m.group(1), members))
    return found


def _public(name: str) -> object:
    """The object a dotted name gives, each step public: a public subpackage,
    a name in the module's __all__, or a public attribute of a class."""
    parts = name.split(".")
    assert parts[0] == "rsimhash", name
    obj: object = rsimhash
    for part in parts[1:]:
        if obj is rsimhash and part in SUBPACKAGES:
            obj = importlib.import_module(f"rsimhash.{part}")
            continue
        if inspect.ismodule(obj):
            assert part in getattr(obj, "__all__", ()), f"{name}: {part} is not in {obj.__name__}.__all__"
        else:
            assert not part.startswith("_"), f"{name}: {part} is private"
        obj = getattr(obj, part)
    return obj


def test_reference_names_only_public_objects():
    directives = _reference()
    pages = {"rsimhash", "rsimhash.Index", "rsimhash.SimilarIndex", "rsimhash.batch", "rsimhash.spark"}
    assert {d[1] for d in directives} == pages
    for page, name, members in directives:
        obj = _public(name)
        for member in members:
            _public(f"{name}.{member}")
        if inspect.ismodule(obj):
            # Each module page lists its whole public surface but the names
            # with pages of their own.
            expected = set(obj.__all__) - {"Index", "SimilarIndex", "batch"}
            assert set(members) == expected, f"{page.name}: members {sorted(members)} against __all__ {sorted(expected)}"


def test_index_page_covers_the_public_methods_and_properties():
    (members,) = [m for _, name, m in _reference() if name == "rsimhash.Index"]
    public = {n for n in dir(rsimhash.Index) if not n.startswith("_")}
    assert set(members) == public
    (members,) = [m for _, name, m in _reference() if name == "rsimhash.SimilarIndex"]
    assert set(members) == {n for n in dir(rsimhash.SimilarIndex) if not n.startswith("_")}


def test_files_of_docs_that_are_not_pages_stay_out_of_the_site():
    """mkdocs copies every file of docs/ into the site: requirements.txt
    (and the griffe extension) would be served as pages."""
    text = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    excluded = text.split("\nexclude_docs: |\n", 1)[1].split("\n\n", 1)[0].split()
    others = sorted(p.relative_to(DOCS).as_posix() for p in DOCS.rglob("*") if p.is_file() and p.suffix != ".md")
    assert others and sorted(excluded) == others
