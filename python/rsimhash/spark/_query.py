"""A batch of new fingerprints against an existing corpus (the paper's
batch query, §3.3): the smaller side is built into an index file on the
driver and shipped to the executors (``SparkContext.addFile``), the larger
side streams past it in Arrow batches, each answered by
``Index.query_batch`` in the Rust core. An executor loads the file once
(memory-mapped) and keeps it for the tasks that follow.
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from typing import Any, Dict, Iterator, Optional

import numpy as np

# Index files loaded in this worker process, by path.
_LOADED: Dict[str, Any] = {}


def _index(path: str) -> Any:
    from pyspark import SparkFiles

    from rsimhash import Index

    local = path if os.path.isabs(path) and os.path.exists(path) else SparkFiles.get(os.path.basename(path))
    index = _LOADED.get(local)
    if index is None:
        index = _LOADED[local] = Index.load(local, mmap=True)
    return index


def stream(df: Any, id_col: str, fp_col: str, index_path: str, k: int, old_ids: Optional[Any], old_type: Any, swap: bool) -> Any:
    """``(new_id, old_id, distance)`` rows: each row of ``df`` against the
    index at ``index_path`` (shipped with ``addFile``), whose stored ids are
    positions into the broadcast ``old_ids`` (or the ids themselves when
    ``old_ids`` is None). With ``swap`` the streamed side is the old one."""
    from pyspark.sql.types import IntegerType, StructField, StructType

    id_type = df.schema[id_col].dataType
    names = ("old_id", "new_id") if swap else ("new_id", "old_id")
    schema = StructType(
        [
            StructField(names[0], id_type, True),
            StructField(names[1], old_type, True),
            StructField("distance", IntegerType(), False),
        ]
    )
    name = os.path.basename(index_path)
    rows = df.select(id_col, fp_col)

    def query(batches: Iterator[Any]) -> Iterator[Any]:
        import pyarrow as pa  # type: ignore[import-untyped]

        index = _index(name)
        table = old_ids.value if old_ids is not None else None
        for batch in batches:
            fps = batch.column(1).to_numpy(zero_copy_only=False)
            if not len(fps):
                continue
            qi, hit, dist = index.query_batch(fps.astype(np.int64, copy=False).view(np.uint64), k)
            ids = batch.column(0).take(pa.array(qi))
            other = pa.array(table[hit]) if table is not None else pa.array(hit.view(np.int64))
            yield pa.RecordBatch.from_arrays(
                [ids, other, pa.array(dist.astype(np.int32))], names=[names[0], names[1], "distance"]
            )

    out = rows.mapInArrow(query, schema)
    return out.select("new_id", "old_id", "distance")


def _new_path() -> str:
    """An index file name used once, in a temporary directory removed when
    the driver exits (the DataFrame may run any time until then)."""
    directory = tempfile.mkdtemp(prefix="rsimhash-spark-")
    atexit.register(shutil.rmtree, directory, True)
    return os.path.join(directory, f"near-duplicates-of-{os.path.basename(directory)}.rsh")


def ship(spark: Any, path: str) -> str:
    """The index file at ``path`` added to the session's files under a name
    of its own (a hard link, else a copy): Spark refuses a second file of a
    name already added, and keeps the first copy of a path saved again."""
    local = _new_path()
    try:
        os.link(path, local)
    except OSError:
        shutil.copyfile(path, local)
    spark.sparkContext.addFile(local)
    return local


def build(spark: Any, fps_signed: np.ndarray, k: int) -> str:
    """An index of ``fps_signed`` (ids: positions) saved to a temporary
    file and added to the session's files; returns its path."""
    from rsimhash import Index

    index = Index(k)
    index.add(fps_signed.view(np.uint64))
    path = _new_path()
    index.save(path)
    spark.sparkContext.addFile(path)
    return path
