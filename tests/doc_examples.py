"""Docstrings as the documentation site reads them
(griffe, statically, from the installed package's ``.py`` files and ``.pyi``
stubs), and a runner for their ``>>>`` examples: shared by
test_docstrings.py and test_spark.py, which runs the Spark examples on its
own session (one JVM for all Spark tests, not a second one started beside it).
"""

from __future__ import annotations

import doctest
import functools
import io
import os
from typing import Any

import griffe
import pytest

import rsimhash

# The griffe options of the site (mkdocs.yml, plugins: mkdocstrings: handlers: python: options).
SITE_OPTIONS = {"allow_inspection": False}


@functools.lru_cache(maxsize=None)
def package() -> Any:
    """The installed package as griffe loads it, aliases resolved."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(rsimhash.__file__)))
    return griffe.load("rsimhash", search_paths=[root], resolve_aliases=True, **SITE_OPTIONS)


def docstring(name: str) -> "tuple[str, str, int]":
    """``(text, file, line)`` of the docstring the site shows for ``rsimhash.<name>``."""
    obj = package()[name]
    target = obj.final_target if obj.is_alias else obj
    doc = target.docstring
    if doc is None:
        return "", str(target.filepath), 0
    return doc.value, str(target.filepath), (doc.lineno or 1) - 1  # doctest counts lines from 0


def run_examples(name: str, globs: "dict[str, Any]") -> None:
    """Run the ``>>>`` examples of ``rsimhash.<name>``'s docstring with
    ``globs``; a failure names each failed example."""
    text, path, line = docstring(name)
    if ">>>" not in text:
        pytest.skip("no example (test_every_public_object_has_an_example fails for it)")
    test = doctest.DocTestParser().get_doctest(text, dict(globs), f"rsimhash.{name}", path, line)
    report = io.StringIO()
    runner = doctest.DocTestRunner(verbose=False)  # not from sys.argv
    result = runner.run(test, out=report.write, clear_globs=True)
    assert result.attempted > 0
    if result.failed:
        pytest.fail(
            f"{result.failed} of {result.attempted} examples of rsimhash.{name} failed:\n{report.getvalue()}", pytrace=False
        )
