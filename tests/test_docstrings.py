"""Every public object's docstring has an example, and every example runs.

The docstrings are read as the documentation site reads them: by griffe,
statically, from the installed package's ``.py`` files and ``.pyi`` stubs
(the stubs of the compiled module are where its objects are documented).
The compiled module itself is not inspected (``allow_inspection=False``,
as mkdocs.yml sets it): the stubs are the source, and the compiled objects'
runtime docstrings (their Rust doc comments, written from the stubs by
tools/stub_docs.py) are held to them below.

Each object's ``>>>`` examples run as doctests with ``rsimhash`` and ``np``
in their globals; the examples of ``rsimhash.spark`` run in test_spark.py,
on its Spark session.
"""

from __future__ import annotations

import functools
import inspect
import os
import pydoc
import re
import sys

import numpy as np
import pytest

pytest.importorskip("griffe")

import rsimhash  # noqa: E402
import rsimhash.batch  # noqa: E402
import rsimhash.spark  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

from doc_examples import docstring, run_examples  # noqa: E402

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
    "items",
    "k",
    "load",
    "metadata",
    "nbytes",
    "query",
    "query_batch",
    "remove",
    "save",
    "tables",
    "verify",
]
SIMILAR_INDEX = [
    "add",
    "add_unique",
    "candidates",
    "info",
    "load",
    "measure",
    "nbytes",
    "query",
    "query_batch",
    "remove",
    "save",
    "threshold",
]
BATCH = ["clusters", "dedup", "find_all", "parse_memory", "similar_clusters", "similar_dedup", "similar_pairs"]
SPARK = ["to_signed", "to_unsigned", "fingerprint_column", "near_duplicate_pairs", "near_duplicates_of", "clusters", "dedup"]
PUBLIC = TOP + [f"Index.{m}" for m in INDEX] + [f"batch.{n}" for n in BATCH] + [f"spark.{n}" for n in SPARK]
# Every public class, method and function: the objects above, SimilarIndex's members and the exceptions' bases.
EVERY = PUBLIC + [f"SimilarIndex.{m}" for m in SIMILAR_INDEX]
# An int and a str carry no docstring of their own at run time: theirs are the stub's, for the site.
NO_RUNTIME_DOCSTRING = {"SPEC_VERSION", "UNICODE_VERSION"}

# Runtime names of the public surface that need no example of their own.
NOT_LISTED = {"__version__"}

MKDOCS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "mkdocs.yml")


def runtime(name: str) -> object:
    return functools.reduce(getattr, name.split("."), rsimhash)


def test_the_list_is_the_public_surface():
    assert set(TOP) == set(rsimhash.__all__) - NOT_LISTED
    assert set(INDEX) == {m for m in dir(rsimhash.Index) if not m.startswith("_")}
    assert set(SIMILAR_INDEX) == {m for m in dir(rsimhash.SimilarIndex) if not m.startswith("_")}
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
    # The documented Index is the stubs' one: the stub is the source, the
    # compiled class's Rust comments a copy written from it.
    text, path, _ = docstring("Index.add")
    assert path.endswith("_rsimhash.pyi") and ">>>" in text
    if os.path.exists(MKDOCS):
        with open(MKDOCS, encoding="utf-8") as f:
            config = f.read()
        assert re.search(r"^\s*allow_inspection:\s*false\b", config, re.M), (
            "mkdocs.yml must set the mkdocstrings python option allow_inspection: false, as this test loads "
            "the package; with inspection the site shows the compiled Index's docstrings, not the stubs'"
        )


@pytest.mark.parametrize("name", [name for name in PUBLIC if not name.startswith("spark.")])
def test_examples_run(name):
    run_examples(name, {"rsimhash": rsimhash, "np": np})


def test_no_example_outside_spark_needs_a_session():
    # The Spark examples run in test_spark.py with its session; any other
    # example that used one would fail above for want of it.
    users = [n for n in PUBLIC if not n.startswith("spark.") and re.search(r"(?<![\w.])spark\.", docstring(n)[0])]
    assert not users, f"examples that use a Spark session outside rsimhash.spark: {users}"


def test_every_public_object_carries_the_sites_docstring_at_run_time():
    # Issue 38 item 4: help(rsimhash.Index) showed nothing and
    # Index.add_unique.__doc__ one line, the full texts living in the stubs
    # only. The stub is the one source: the compiled objects' Rust doc
    # comments are generated from it (python tools/stub_docs.py --write),
    # and this holds every public name's runtime __doc__ to the text the
    # site shows (griffe, from the stubs and the .py files).
    differ = []
    for name in EVERY:
        if name in NO_RUNTIME_DOCSTRING:
            continue
        site = docstring(name)[0]
        at_run_time = inspect.cleandoc(getattr(runtime(name), "__doc__", None) or "")
        if at_run_time != site:
            first = next((i for i, (a, b) in enumerate(zip(at_run_time, site)) if a != b), min(len(at_run_time), len(site)))
            here, there = at_run_time[first : first + 60], site[first : first + 60]
            differ.append(f"rsimhash.{name}: from character {first}: {here!r} against {there!r}")
    assert not differ, "runtime docstrings that are not the site's (run python tools/stub_docs.py --write):\n" + "\n".join(differ)


def test_help_shows_the_full_text():
    text = pydoc.render_doc(rsimhash.Index, renderer=pydoc.plaintext)
    assert "Manku, Jain and Das Sarma" in text and "is_new, matched = index.add_unique" in text
