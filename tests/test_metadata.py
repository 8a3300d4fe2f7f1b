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
