"""The Windows build's linking, checked from the sources on any machine.

On Windows pyo3 imports the C API from ``python3.dll`` by raw-dylib; a plain
``extern "C"`` block of our own has no library to import from there, and the
link fails. Every block that declares a CPython function must carry the
attribute below. And ``python3.dll`` exports ``PyUnicode_AsUTF8AndSize``
only from CPython 3.10 on, so a Windows module that imports it would not
load on 3.9, which the cp39-abi3 wheel promises: the Windows build reads
strs through ``PyUnicode_AsUTF8String`` instead. Only a Windows build would
notice either mistake: this holds the sources to them where the tests run
(Linux). Whether the Windows wheel imports is still for a Windows machine to
say (the release workflow's test job); scripts/check-wheels.py checks its
import table.
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


def test_windows_reads_text_without_pyunicode_asutf8andsize():
    text = (ROOT / "src" / "py" / "text.rs").read_text(encoding="utf-8")
    # Each definition of the reader with its cfg: one for Windows, one for the rest.
    readers = re.findall(r"#\[cfg\((not\(windows\)|windows)\)\]\s*\nfn utf8<[^\n]*\{(.*?)\n\}", text, re.S)
    by_cfg = {cfg: body for cfg, body in readers}
    assert set(by_cfg) == {"windows", "not(windows)"}, "src/py/text.rs: one utf8() for Windows, one for the rest"
    assert "PyUnicode_AsUTF8AndSize" not in by_cfg["windows"] and "PyUnicode_AsUTF8String" in by_cfg["windows"]
    assert "PyUnicode_AsUTF8AndSize" in by_cfg["not(windows)"]
    # Declared for the others only: unused on Windows, it would be dead code there.
    assert re.search(r"#\[cfg\(not\(windows\)\)\]\s*\n\s*fn PyUnicode_AsUTF8AndSize\(", text)
    # Called nowhere else: a call outside the non-Windows reader would be imported on Windows too.
    rest = text
    for body in by_cfg.values():
        rest = rest.replace(body, "")
    assert not re.search(r"PyUnicode_AsUTF8AndSize\s*\(\s*s\.", rest)


def test_one_abi3_floor_for_every_platform():
    # maturin takes the abi3 floor from pyo3's features on every platform at
    # once (and pyo3's abi3-py39 turns on abi3-py310): one declaration.
    cargo = (ROOT / "Cargo.toml").read_text(encoding="utf-8")
    assert re.findall(r"^pyo3\s*=.*$", cargo, re.M) == ['pyo3 = { version = "0.30", features = ["abi3-py39"], optional = true }']
