"""Fixtures shared by several test modules."""

from __future__ import annotations

import os
import sys

import pytest

# The files that take longest, longest first (measured in CI's pytest stage).
# CI's two workers take a file at a time in collection order (`-n 2 --dist
# loadfile --no-loadscope-reorder`: by default xdist orders files by their
# number of tests, which left a 75 s file of two tests for the end), and a
# long file taken last keeps one worker busy while the other idles: started
# first, the short files fill in around them.
LONG_FILES = (
    "test_spark.py",
    "test_spark_standalone.py",
    "test_index_properties.py",
    "test_index_machines_long.py",
    "test_index_files.py",
    "test_cli_inputs.py",
    "test_cli_similar.py",
    "test_records.py",
    "test_cli_tune.py",
    "test_report.py",
    "test_cli_batch.py",
)


def pytest_collection_modifyitems(session, config, items):
    rank = {name: i for i, name in enumerate(LONG_FILES)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))  # stable: the rest keep their order


@pytest.fixture(scope="module")
def spark():
    """A local Spark session for the module's tests (the Spark tests and the
    Spark docstring examples), stopped after them: an idle one keeps a JVM
    busy (~15 % of a core here) through every later module."""
    pytest.importorskip("pyspark")
    pytest.importorskip("pyarrow")
    pytest.importorskip("pandas")
    from pyspark.sql import SparkSession

    # The workers' Python is this one (with numpy and rsimhash): PySpark takes
    # it from PYSPARK_PYTHON, else "python3" on PATH, which need not be it.
    os.environ["PYSPARK_PYTHON"] = sys.executable
    session = (
        SparkSession.builder.master("local[2]")
        .appName("rsimhash-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "4")
        .config("spark.default.parallelism", "4")
        .config("spark.sql.execution.arrow.pyspark.enabled", "true")
        .config("spark.pyspark.python", sys.executable)
        .config("spark.pyspark.driver.python", sys.executable)
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()
