"""Every public object's docstring has an example, and every example runs.

The docstrings are read as the documentation site reads them: by griffe,
statically, from the installed package's ``.py`` files and ``.pyi`` stubs
(the stubs of the compiled module are where its objects are documented).
The compiled module itself is not inspected (``allow_inspection=False``,
as mkdocs.yml sets it): inspected, its runtime docstrings (the Rust doc
comments of ``Index``'s methods, without examples) would win over the stubs'.

Each object's ``>>>`` examples run as doctests with ``rsimhash`` and ``np``
in their globals, and ``spark`` (a local Spark session, skipped without
PySpark) for those that use one.
"""

from __future__ import annotations

import doctest
import functools
import io
import os
import re
from typing import Any

import numpy as np
import pytest

griffe = pytest.importorskip("griffe")

import rsimhash  # noqa: E402
import rsimhash.batch  # noqa: E402
import rsimhash.spark  # noqa: E402

# The public surface, as dotted names under ``rsimhash``; test_the_list_is_the_public_surface
# holds it to ``__all__`` and to Index's public members.
TOP = [
    "fnv1a64",
    "compute",
    "fingerprint",
    "fingerprints",
    "fingerprint_weighted",
    "hamming",
    "shingles",
    "similar_pairs",
    "jaccard",
    "SimilarIndex",
    "dedup",
    "report",
    "Index",
    "IndexFileError",
    "IndexFormatError",
    "IndexVersionError",
    "IndexChecksumError",
    "IndexChangedError",
    "SPEC_VERSION",
    "UNICODE_VERSION",
    "batch",
]
INDEX = [
    "add",
    "add_unique",
    "cluster",
    "compressed",
    "design",
    "find_all",
    "info",
    "k",
    "load",
    "nbytes",
    "query",
    "query_batch",
    "remove",
    "save",
    "tables",
    "verify",
]
BATCH = ["clusters", "dedup", "find_all", "parse_memory", "similar_clusters", "similar_dedup", "similar_pairs"]
SPARK = ["to_signed", "to_unsigned", "fingerprint_column", "near_duplicate_pairs", "near_duplicates_of", "clusters", "dedup"]
PUBLIC = TOP + [f"Index.{m}" for m in INDEX] + [f"batch.{n}" for n in BATCH] + [f"spark.{n}" for n in SPARK]

# Runtime names of the public surface that need no example of their own.
NOT_LISTED = {"__version__"}

# The griffe options of the site (mkdocs.yml, plugins: mkdocstrings: handlers: python: options).
SITE_OPTIONS = {"allow_inspection": False}

MKDOCS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "mkdocs.yml")


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


def runtime(name: str) -> object:
    return functools.reduce(getattr, name.split("."), rsimhash)


def test_the_list_is_the_public_surface():
    assert set(TOP) == set(rsimhash.__all__) - NOT_LISTED
    assert set(INDEX) == {m for m in dir(rsimhash.Index) if not m.startswith("_")}
    assert set(BATCH) == set(rsimhash.batch.__all__)
    assert set(SPARK) == set(rsimhash.spark.__all__)
    missing = []
    for name in PUBLIC:
        try:
            runtime(name)
        except AttributeError:
            missing.append(name)
    assert not missing, f"listed but not in the package: {missing}"


def test_every_public_object_has_an_example():
    without = [f"rsimhash.{name}" for name in PUBLIC if ">>>" not in docstring(name)[0]]
    assert not without, "no >>> example in the docstring the site shows for: " + ", ".join(without)


def test_the_site_reads_the_stubs_not_the_compiled_module():
    # The documented Index is the stubs' one; an inspected module would give
    # the compiled class (an empty docstring) and its methods' Rust comments.
    text, path, _ = docstring("Index.add")
    assert path.endswith("_rsimhash.pyi") and ">>>" in text
    if os.path.exists(MKDOCS):
        with open(MKDOCS, encoding="utf-8") as f:
            config = f.read()
        assert re.search(r"^\s*allow_inspection:\s*false\b", config, re.M), (
            "mkdocs.yml must set the mkdocstrings python option allow_inspection: false, as this test loads "
            "the package; with inspection the site shows the compiled Index's docstrings, not the stubs'"
        )


@pytest.mark.parametrize("name", PUBLIC)
def test_examples_run(name, request):
    text, path, line = docstring(name)
    if ">>>" not in text:
        pytest.skip("no example (test_every_public_object_has_an_example fails for it)")
    globs = {"rsimhash": rsimhash, "np": np}
    if re.search(r"(?<![\w.])spark\.", text):  # a session's methods, not rsimhash.spark's functions
        globs["spark"] = request.getfixturevalue("spark")
    test = doctest.DocTestParser().get_doctest(text, globs, f"rsimhash.{name}", path, line)
    report = io.StringIO()
    runner = doctest.DocTestRunner(verbose=False)  # not from sys.argv
    result = runner.run(test, out=report.write, clear_globs=True)
    assert result.attempted > 0
    if result.failed:
        pytest.fail(
            f"{result.failed} of {result.attempted} examples of rsimhash.{name} failed:\n{report.getvalue()}", pytrace=False
        )
