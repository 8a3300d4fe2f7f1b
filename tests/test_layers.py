"""The package's imports go one way: the command line uses the library,
never the reverse.

Every module of the installed ``rsimhash`` package is parsed (not imported)
and each ``import`` and ``from ... import``, at the top or inside a
function, is resolved to the module it names. The rules:

* the library (everything but ``rsimhash.cli`` and ``rsimhash.__main__``)
  imports nothing from ``rsimhash.cli``;
* no module reaches into another public package's private modules
  (``rsimhash.batch._sources`` from ``rsimhash.cli``, say): what two
  packages share lives in a library-level internal module (``rsimhash._x``);
* no two modules import each other, directly or round a circle (a
  module's import of its own package's public names aside).
"""

from __future__ import annotations

import ast
import os
from typing import Dict, Iterator, List, Tuple

import rsimhash

ROOT = os.path.dirname(os.path.abspath(rsimhash.__file__))
# Public packages: each one's private modules are its own.
PACKAGES = ("batch", "cli", "spark")


def modules() -> Dict[str, str]:
    """Dotted name -> path of every ``.py`` module of the package."""
    found = {}
    for folder, dirs, files in os.walk(ROOT):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for name in sorted(files):
            if not name.endswith(".py"):
                continue
            rel = os.path.relpath(os.path.join(folder, name), ROOT)[: -len(".py")].split(os.sep)
            if rel[-1] == "__init__":
                rel = rel[:-1]
            found[".".join(["rsimhash"] + rel)] = os.path.join(folder, name)
    return found


def imports(name: str, path: str, known: Dict[str, str]) -> Iterator[Tuple[int, str]]:
    """(line, module) of each ``rsimhash`` module that ``name`` imports."""
    package = name if path.endswith("__init__.py") else name.rpartition(".")[0]
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read(), path)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            yield node.lineno, target
            for alias in node.names:  # ``from . import x``: x may be a module
                if f"{target}.{alias.name}" in known:
                    yield node.lineno, f"{target}.{alias.name}"


def edges() -> List[Tuple[str, int, str]]:
    known = modules()
    return [
        (name, line, target)
        for name, path in known.items()
        for line, target in imports(name, path, known)
        if target == "rsimhash" or target.startswith("rsimhash.")
    ]


def _in(name: str, package: str) -> bool:
    return name == package or name.startswith(package + ".")


def test_the_walk_sees_the_package():
    # Both rules below would pass on an empty walk: make sure it is not one.
    found = edges()
    assert "rsimhash._records.source" in modules()
    assert ("rsimhash.cli.dedup", "rsimhash._records") in {(a, b) for a, _, b in found}
    assert len(found) > 200


def test_the_library_never_imports_the_command_line():
    bad = [
        f"{name}:{line} imports {target}"
        for name, line, target in edges()
        if _in(target, "rsimhash.cli") and not (_in(name, "rsimhash.cli") or name == "rsimhash.__main__")
    ]
    assert not bad, "\n".join(bad)


def test_no_package_reaches_into_another_packages_private_modules():
    bad = []
    for name, line, target in edges():
        parts = target.split(".")
        if len(parts) < 3 or parts[1] not in PACKAGES or _in(name, f"rsimhash.{parts[1]}"):
            continue
        if any(p.startswith("_") for p in parts[2:]):
            bad.append(f"{name}:{line} imports {target}")
    assert not bad, "\n".join(bad)


def cycles(graph: Dict[str, set]) -> List[List[str]]:
    """The strongly connected components of more than one module (Tarjan's)."""
    index: Dict[str, int] = {}
    low: Dict[str, int] = {}
    stack: List[str] = []
    on: set = set()
    found: List[List[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def import_graph() -> Dict[str, set]:
    """Module -> the package's modules it imports, at the top or in a function.
    A module's import of its own package (``from .. import name``: the
    package's public names, which its ``__init__`` gathers from its modules)
    is left out: that is how a package is built, not a circle of modules."""
    known = modules()
    packages = {m for m, p in known.items() if p.endswith("__init__.py")}
    graph: Dict[str, set] = {m: set() for m in known}
    for name, _, target in edges():
        if target in known and target != name and not (target in packages and name.startswith(target + ".")):
            graph[name].add(target)
    return graph


def test_the_modules_import_no_circle():
    found = cycles(import_graph())
    assert not found, "import circles:\n" + "\n".join(" <-> ".join(c) for c in found)


def test_the_circle_check_sees_a_circle():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []
