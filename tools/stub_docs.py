"""The docstrings of the compiled module's public objects, from the stub.

``python/rsimhash/_rsimhash.pyi`` is the one source of the docstrings of
the objects ``rsimhash`` takes from its compiled module (``Index`` and its
members, ``fnv1a64``, ``compute``, ``fingerprint``,
``fingerprint_weighted`` and the index file exceptions): the documentation
site reads them there (griffe, statically), and pyo3 takes an object's
``__doc__`` from its Rust doc comment, which this tool writes from the stub
(the ``///`` lines above each ``#[pyfunction]``, ``#[pyclass]`` and method,
the doc literal of each ``create_exception!``). ``help()`` and notebooks
then show the site's text; tests/test_docstrings.py holds every public
name's runtime ``__doc__`` to it.

    python tools/stub_docs.py --write   # after editing a docstring in the stub
    python tools/stub_docs.py --check   # exit 1, naming them, when a comment differs

Standard library only: run it with any Python 3.9 or later from the
repository's root (or give ``--root``).
"""

from __future__ import annotations

import argparse
import ast
import os
import re
import sys
from typing import Dict, List, Optional, Tuple

STUB = os.path.join("python", "rsimhash", "_rsimhash.pyi")
INIT = os.path.join("python", "rsimhash", "__init__.py")
RUST = os.path.join("src", "py")


def public_names(root: str) -> List[str]:
    """The names ``rsimhash/__init__.py`` imports from ``._rsimhash``."""
    with open(os.path.join(root, INIT), encoding="utf-8") as f:
        tree = ast.parse(f.read())
    names = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module == "_rsimhash" and node.level == 1:
            names.extend(a.name for a in node.names)
    return names


def stub_docs(root: str) -> Dict[str, str]:
    """``{dotted name: docstring}`` of the stub's public objects (cleaned as
    ``inspect.cleandoc`` cleans them, as griffe shows them), for the names
    ``rsimhash`` imports from the compiled module and their public members."""
    with open(os.path.join(root, STUB), encoding="utf-8") as f:
        tree = ast.parse(f.read())
    wanted = set(public_names(root))
    docs: Dict[str, str] = {}
    for node in tree.body:
        if not isinstance(node, (ast.FunctionDef, ast.ClassDef)) or node.name not in wanted:
            continue
        doc = ast.get_docstring(node, clean=True)
        if doc:
            docs[node.name] = doc
        if isinstance(node, ast.ClassDef):
            for member in node.body:
                if isinstance(member, ast.FunctionDef) and not member.name.startswith("_"):
                    doc = ast.get_docstring(member, clean=True)
                    if doc:
                        docs[f"{node.name}.{member.name}"] = doc
    return docs


def doc_lines(doc: str, indent: str) -> List[str]:
    """``///`` lines whose text pyo3 turns back into ``doc`` (it strips one
    space after the slashes)."""
    return [f"{indent}///{' ' + line if line else ''}\n" for line in doc.split("\n")]


def rust_files(root: str) -> Dict[str, List[str]]:
    out = {}
    for name in sorted(os.listdir(os.path.join(root, RUST))):
        if name.endswith(".rs"):
            with open(os.path.join(root, RUST, name), encoding="utf-8") as f:
                out[os.path.join(RUST, name)] = f.readlines()
    return out


def _head(lines: List[str], at: int) -> int:
    """The first line of the doc comments and attributes above ``lines[at]``."""
    j = at - 1
    while j >= 0:
        s = lines[j].strip()
        if s.startswith(("#[", "///")):
            j -= 1
        elif s and not s.startswith("//") and not s.endswith(("}", ";", "{", "*/", ",")):
            j -= 1  # the continuation of an attribute written over lines
        elif s.endswith(",") and j > 0 and lines[j - 1].strip().startswith("#["):
            j -= 1
        else:
            break
    return j + 1


def _set_doc(lines: List[str], at: int, doc: str) -> bool:
    """Replaces the ``///`` lines above the item at ``lines[at]`` with ``doc``'s; whether they changed."""
    head = _head(lines, at)
    indent = re.match(r"\s*", lines[at]).group(0)
    region = lines[head:at]
    old = [line for line in region if line.strip().startswith("///")]
    new = doc_lines(doc, indent)
    if old == new and region[: len(new)] == new:
        return False
    lines[head:at] = new + [line for line in region if not line.strip().startswith("///")]
    return True


def _find_function(files: Dict[str, List[str]], name: str) -> Optional[Tuple[str, int]]:
    for path, lines in files.items():
        for i, line in enumerate(lines):
            if re.match(rf"(pub(\(crate\))? )?fn {name}\b", line) and any(
                "#[pyfunction" in lines[k] for k in range(_head(lines, i), i)
            ):
                return path, i
    return None


def _find_class(files: Dict[str, List[str]], name: str) -> Optional[Tuple[str, int, str]]:
    """``(path, line of the struct, struct name)`` of ``#[pyclass(name = "NAME")]``."""
    for path, lines in files.items():
        for i, line in enumerate(lines):
            if line.startswith("#[pyclass") and re.search(rf'name\s*=\s*"{name}"', line):
                k = i
                while not re.match(r"(pub(\(crate\))? )?struct ", lines[k]):
                    k += 1
                return path, k, re.match(r"(?:pub(?:\(crate\))? )?struct (\w+)", lines[k]).group(1)
    return None


def _find_method(lines: List[str], struct: str, name: str) -> Optional[int]:
    inside = False
    for i, line in enumerate(lines):
        if re.match(rf"impl {struct}\b", line):
            inside = any("#[pymethods]" in lines[k] for k in range(max(0, i - 3), i))
        elif line.startswith("}"):
            inside = False
        elif inside and re.match(rf"    fn {name}\b", line):
            return i
    return None


def _exception(lines: List[str], name: str, doc: str) -> Optional[bool]:
    """Sets the doc literal of ``create_exception!(..., NAME, BASE, doc)``;
    None when ``lines`` define no such exception."""
    text = "".join(lines)
    m = re.search(rf"pyo3::create_exception!\(\s*(\w+),\s*{name},\s*(\w+),\s*(r#*\"|\")", text)
    if not m:
        return None
    start = m.start()
    end = text.index(");", start) + 2
    new = f'pyo3::create_exception!(\n    {m.group(1)},\n    {name},\n    {m.group(2)},\n    r#"{doc}"#\n);'
    if text[start:end] == new:
        return False
    lines[:] = (text[:start] + new + text[end:]).splitlines(keepends=True)
    return True


def sync(root: str, write: bool) -> Tuple[List[str], List[str]]:
    """``(changed, not found)``: the names whose comment differs from the stub, and those with no Rust item."""
    files = rust_files(root)
    changed, missing = [], []
    for name, doc in stub_docs(root).items():
        if "." in name:
            cls, member = name.split(".")
            found = _find_class(files, cls)
            at = _find_method(files[found[0]], found[2], member) if found else None
            if at is None:
                missing.append(name)
                continue
            if _set_doc(files[found[0]], at, doc):
                changed.append(name)
            continue
        found_fn = _find_function(files, name)
        if found_fn:
            if _set_doc(files[found_fn[0]], found_fn[1], doc):
                changed.append(name)
            continue
        found_cls = _find_class(files, name)
        if found_cls:
            lines = files[found_cls[0]]
            at = found_cls[1]
            while not lines[at - 1].startswith("#[pyclass") and at > 0:
                at -= 1
            if _set_doc(lines, at - 1, doc):
                changed.append(name)
            continue
        for lines in files.values():
            result = _exception(lines, name, doc)
            if result is not None:
                if result:
                    changed.append(name)
                break
        else:
            missing.append(name)
    if write:
        for path, lines in files.items():
            with open(os.path.join(root, path), "w", encoding="utf-8") as f:
                f.write("".join(lines))
    return changed, missing


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--write", action="store_true", help="rewrite the Rust doc comments from the stub")
    mode.add_argument("--check", action="store_true", help="exit 1 when a Rust doc comment differs from the stub")
    parser.add_argument("--root", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    args = parser.parse_args(argv)
    changed, missing = sync(args.root, write=args.write)
    if missing:
        print(f"stub_docs: no Rust item for {', '.join(missing)}", file=sys.stderr)
        return 2
    if changed:
        verb = "rewrote" if args.write else "differ from the stub"
        print(f"stub_docs: {verb}: {', '.join(changed)}", file=sys.stderr)
        return 0 if args.write else 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
