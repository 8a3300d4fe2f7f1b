"""The public surface's docstrings as the documentation site reads them
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
