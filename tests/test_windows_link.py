"""The Windows build's linking, checked from the sources on any machine.

On Windows pyo3 imports the C API from ``python3.dll`` by raw-dylib; a plain
``extern "C"`` block of our own has no library to import from there, and the
link fails. Every block that declares a CPython function must carry the
attribute below. And ``python3.dll`` exports ``PyUnicode_AsUTF8AndSize``
only from CPython 3.10 on, so the Windows build's abi3 floor is 3.10 (a cp39
wheel would not load on 3.9). Only a Windows build would notice either
mistake: this holds the sources to them where the tests run (Linux). Whether
the Windows wheel imports is still for a Windows machine to say (the release
workflow's test job); scripts/check-wheels.py checks its import table.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LINK = '#[cfg_attr(windows, link(name = "python3", kind = "raw-dylib"))]'
BLOCK = re.compile(r'^\s*(?:unsafe\s+)?extern\s+"C"\s*\{(?P<body>.*?)^\s*\}', re.M | re.S)


def extern_blocks():
    """(file, line, attributes above the block, its body) for every extern block in src/."""
    for path in sorted((ROOT / "src").rglob("*.rs")):
        text = path.read_text(encoding="utf-8")
        for m in BLOCK.finditer(text):
            lines = text[: m.start()].splitlines()
            attrs = []
            for line in reversed(lines):
                stripped = line.strip()
                if stripped.startswith("#["):
                    attrs.append(stripped)
                elif stripped.startswith("//") or not stripped:
                    continue
                else:
                    break
            yield path.relative_to(ROOT), len(lines) + 1, attrs, m.group("body")


def test_every_extern_block_of_python_functions_links_python3_dll_on_windows():
    blocks = [(path, line, attrs) for path, line, attrs, body in extern_blocks() if re.search(r"\bfn\s+_?Py", body)]
    assert blocks, "no extern block declares a CPython function: update this test"
    missing = [f"{path}:{line}" for path, line, attrs in blocks if LINK not in attrs]
    assert not missing, f"extern blocks without {LINK}: {missing}"


def test_the_text_reader_is_one_of_them():
    found = [
        path.as_posix() for path, _line, attrs, body in extern_blocks() if "PyUnicode_AsUTF8AndSize" in body and LINK in attrs
    ]
    assert found == ["src/py/text.rs"]


def test_windows_builds_need_cpython_3_10():
    cargo = (ROOT / "Cargo.toml").read_text(encoding="utf-8")

    def pyo3_features(table: str) -> list[str]:
        m = re.search(re.escape(table) + r"\s*\n(?:[^\[]*\n)*?pyo3\s*=\s*\{[^}]*features\s*=\s*\[([^\]]*)\]", cargo)
        assert m, f"no pyo3 in {table}"
        return re.findall(r'"([^"]+)"', m.group(1))

    assert pyo3_features('[target."cfg(windows)".dependencies]') == ["abi3-py310"]
    assert pyo3_features('[target."cfg(not(windows))".dependencies]') == ["abi3-py39"]
    # Only those two declare pyo3: one in [dependencies] would turn abi3-py39 on for Windows too.
    assert len(re.findall(r"^pyo3\s*=", cargo, re.M)) == 2
