"""The installed package's metadata is what the README says it is."""

from __future__ import annotations

import importlib.metadata
import os
import re

import pytest

rsimhash = pytest.importorskip("rsimhash")

README = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "README.md")


def readme() -> str:
    if not os.path.exists(README):
        pytest.skip("the README is not beside the tests")
    with open(README, encoding="utf-8") as f:
        return f.read()


def test_name_version_and_python():
    meta = importlib.metadata.metadata("rsimhash")
    assert meta["Name"] == "rsimhash"
    assert meta["Version"] == rsimhash.__version__ == rsimhash._rsimhash.__version__
    assert meta["Requires-Python"] == ">=3.9"
    assert "Python ≥ 3.9" in readme() and "CPython 3.9 and later" in readme()


def test_extras_are_the_documented_ones():
    meta = importlib.metadata.metadata("rsimhash")
    extras = set(meta.get_all("Provides-Extra") or [])
    documented = set(re.findall(r"`rsimhash\[(\w+)\]`", readme()))
    assert extras == documented == {"parquet", "zstd", "plot", "spark", "test"}
    requires = meta.get_all("Requires-Dist") or []
    assert any(r.startswith("numpy") for r in requires)
    assert any(r.startswith("pyarrow") and re.search(r"extra == ['\"]parquet['\"]", r) for r in requires)


def test_the_readme_summary_line_is_what_its_command_prints(tmp_path):
    # Issue 38 item 9: the README quoted "0.4 s" for a run that prints 0.0 s.
    # Its command, run on the shipped corpus, prints the quoted line: the
    # counts exactly, and seconds no more than a tenth above the run's (a
    # slower machine may print more; the README must not claim a slower run).
    import subprocess
    import sys

    text = readme()
    root = os.path.dirname(README)
    command = re.search(r"\.venv/bin/rsimhash (dedup --input examples/news\.jsonl [^\n`]*)", text)
    quoted = re.search(r"```text\n(rsimhash dedup: .*)\n```", text)
    assert command and quoted, "the set-up section's dedup command and its summary line"
    outputs = {"kept.jsonl": str(tmp_path / "kept.jsonl"), "removed.tsv": str(tmp_path / "removed.tsv")}
    args = [outputs.get(a, a) for a in command.group(1).split()]
    proc = subprocess.run([sys.executable, "-m", "rsimhash.cli", *args], cwd=root, capture_output=True, timeout=120)
    assert proc.returncode == 0, proc.stderr.decode()
    printed = proc.stderr.decode().strip().splitlines()[-1]
    seconds = r", ([0-9]+\.[0-9]) s$"
    assert re.sub(seconds, "", printed) == re.sub(seconds, "", quoted.group(1))
    run_s, quoted_s = float(re.search(seconds, printed).group(1)), float(re.search(seconds, quoted.group(1)).group(1))
    assert quoted_s <= run_s + 0.1, f"the README says {quoted_s} s, the run printed {run_s} s"
    docs = os.path.join(root, "docs", "command-line.md")
    if os.path.exists(docs):
        with open(docs, encoding="utf-8") as f:
            assert quoted.group(1) in f.read(), "docs/command-line.md quotes the README's line"
