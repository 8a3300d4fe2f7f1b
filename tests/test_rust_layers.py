"""The Rust core's modules import downward only (``src/lib.rs`` names the layers).

Every ``crate::NAME`` path in the sources under ``src/`` is read, outside
comments and test code, and resolved to the top-level module it names (a
re-export at the crate root, such as ``crate::fnv``, to the module it comes
from). A module may use its own layer and those below it, never one above:
the index calls the batch kernel, the batch kernel never the index.
"""

from __future__ import annotations

import os
import re
from typing import Dict, Iterator, List, Tuple

import pytest

SRC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src")

# Bottom first. `py` (the bindings) sits on top of everything.
LAYERS: List[Tuple[str, ...]] = [
    ("error", "mem", "cpu", "files", "parallel"),
    ("job", "container"),
    ("cluster",),
    ("tables",),
    ("fingerprint",),
    ("batch", "distributed", "records"),
    ("index",),
    ("similar",),
    ("py",),
]
LEVEL: Dict[str, int] = {m: i for i, layer in enumerate(LAYERS) for m in layer}
# Re-exports at the crate root, by the module they come from.
ROOT_NAMES = {
    "fnv": "fingerprint",
    "unicode": "fingerprint",
    "fnv1a64": "fingerprint",
    "compute": "fingerprint",
    "compute_weighted": "fingerprint",
    "plan": "tables",
    "fingerprints": "fingerprint",
    "Fingerprinter": "fingerprint",
    "Mode": "fingerprint",
    "Shingling": "fingerprint",
    "Layout": "tables",
    "Index": "index",
    "Keys": "index",
    "BatchMatches": "index",
    "Copies": "job",
    "ClusterMethod": "cluster",
}
PATH = re.compile(r"\bcrate::([A-Za-z_][A-Za-z0-9_]*)")
BRACED = re.compile(r"\bcrate::\{([^{}]*)\}")
TEST_CODE = re.compile(r"^\s*#\[cfg\(test\)\]\s*$")


def sources() -> Iterator[Tuple[str, str]]:
    """``(top-level module, path)`` of every Rust file but the tests'."""
    for folder, dirs, files in os.walk(SRC):
        dirs.sort()
        for name in sorted(files):
            if not name.endswith(".rs") or name == "tests.rs" or name == "testing.rs":
                continue
            rel = os.path.relpath(os.path.join(folder, name), SRC).split(os.sep)
            yield rel[0][: -len(".rs")] if len(rel) == 1 else rel[0], os.path.join(folder, name)


def uses(path: str) -> Iterator[Tuple[int, str]]:
    """``(line number, name)`` of each ``crate::name`` in code, up to the
    file's test module."""
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    for i, line in enumerate(lines, 1):
        if TEST_CODE.match(line) and i < len(lines) and re.match(r"\s*mod \w+", lines[i]):
            return
        code = line.split("//", 1)[0]
        for m in PATH.finditer(code):
            yield i, m.group(1)
        for m in BRACED.finditer(code):
            for item in m.group(1).split(","):
                name = item.strip().split("::")[0].split(" ")[0]
                if name:
                    yield i, name


def test_every_module_has_a_layer() -> None:
    if not os.path.isdir(SRC):
        pytest.skip("the Rust sources are not beside the tests")
    modules = {module for module, _ in sources()} - {"lib"}
    assert modules <= set(LEVEL), f"give these a layer in LAYERS: {sorted(modules - set(LEVEL))}"


def test_imports_go_downward() -> None:
    if not os.path.isdir(SRC):
        pytest.skip("the Rust sources are not beside the tests")
    upward = []
    seen = 0
    for module, path in sources():
        if module not in LEVEL:
            continue
        for line, name in uses(path):
            target = ROOT_NAMES.get(name, name)
            if target not in LEVEL:
                continue  # an item of the crate root (Error, Result, hamming, MAX_ITEMS, ...)
            seen += 1
            if LEVEL[target] > LEVEL[module]:
                upward.append(f"{os.path.relpath(path, SRC)}:{line}: {module} uses crate::{name} ({target} is above it)")
    assert seen > 100, f"only {seen} crate paths found: the scan is broken"
    assert not upward, "\n".join(upward)


def test_the_scan_sees_an_upward_use() -> None:
    """The rule catches what it is for: ``batch`` naming ``crate::index``."""
    import tempfile

    with tempfile.NamedTemporaryFile("w", suffix=".rs", delete=False) as f:
        f.write("//! doc naming crate::index is fine\nuse crate::index::Index; // and this is not\nuse crate::{Error, Index};\n")
    try:
        found = list(uses(f.name))
    finally:
        os.unlink(f.name)
    assert found == [(2, "index"), (3, "Error"), (3, "Index")]
    assert ROOT_NAMES["Index"] == "index"
    assert LEVEL["index"] > LEVEL["batch"]
