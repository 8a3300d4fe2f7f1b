"""Fixtures shared by several test modules."""

from __future__ import annotations

import os
import sys

import pytest


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
