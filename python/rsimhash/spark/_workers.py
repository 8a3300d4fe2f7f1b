"""The check, once per Spark session and before its first job, that Spark's
Python workers can import rsimhash.

Spark starts its workers with the Python that ``PYSPARK_PYTHON`` (or
``spark.pyspark.python``) names, else ``python3`` on the PATH, which need not
be the one running the driver. A session started from a virtual
environment's Python without them set runs its workers on the system's
Python, and the first job fails deep inside a Java stack trace with
``ModuleNotFoundError: No module named 'numpy'`` from a worker. Here one
tiny job finds that first, and the error says what to set.
"""

from __future__ import annotations

import os
import re
import sys
import weakref
from typing import Any

_CHECKED: "weakref.WeakSet[Any]" = weakref.WeakSet()


def _probe(batches: Any) -> Any:
    # Runs on a worker: everything it needs is imported here.
    import numpy  # noqa: F401
    import pyarrow as pa  # type: ignore[import-untyped]

    import rsimhash  # noqa: F401

    for _ in batches:
        pass
    yield pa.RecordBatch.from_arrays([pa.array([rsimhash.__version__])], names=["version"])


def check(session: Any) -> None:
    """Raises ``ImportError`` saying what to set when the session's Python
    workers cannot import rsimhash (numpy, pyarrow); once per session."""
    try:
        if session in _CHECKED:
            return
    except TypeError:  # a session that takes no weak references: checked every time
        pass
    from pyspark.sql.types import StringType, StructField, StructType

    schema = StructType([StructField("version", StringType(), False)])
    try:
        session.range(1, numPartitions=1).mapInArrow(_probe, schema).collect()
    except Exception as e:  # Py4JJavaError, PythonException, ...: the worker's traceback is in the text
        text = str(e)
        missing = re.findall(r"ModuleNotFoundError: No module named '([\w.]+)'", text)
        if not missing and "ImportError" not in text:
            raise
        what = f"No module named {missing[-1]!r}" if missing else "an ImportError"
        worker = os.environ.get("PYSPARK_PYTHON") or _conf(session, "spark.pyspark.python") or "python3 on the PATH"
        raise ImportError(
            f"Spark's Python workers cannot import rsimhash ({what}): they run {worker}, not {sys.executable}. "
            f"Set PYSPARK_PYTHON={sys.executable} (or the Spark setting spark.pyspark.python) to a Python that has "
            "rsimhash installed, before the SparkSession starts; on a cluster, install rsimhash[spark] on every "
            "worker"
        ) from None
    try:
        _CHECKED.add(session)
    except TypeError:
        pass


def _conf(session: Any, key: str) -> str:
    try:
        return str(session.conf.get(key, "") or "")
    except Exception:
        return ""
