"""rsimhash's batch jobs on Apache Spark (``pip install "rsimhash[spark]"``).

Spark partitions, shuffles and retries; the Rust core does the work inside
each task, as in the paper's MapReduce batch mode (§3.3):

* ``fingerprint_column(df, text_col)``: SPEC v1 fingerprints in Arrow
  batches (``mapInArrow``), as signed longs holding the same 64 bits.
* ``near_duplicate_pairs(df, id_col, fp_col, k)``: every pair within ``k``.
  A count pass sizes the permuted tables' key buckets and plans reduce
  tasks of at most 2^22 distinct values (a skewed bucket cut by further key
  bits, a dense prefix group into cells whose pairs are tasks). Each map
  task packs its rows into one block a task, each block one shuffled row
  of ``(fingerprint, id)`` items. Each reduce task runs the batch kernel's
  scan on its items (copies collapsed onto their smallest id, each pair
  emitted by its first agreeing table only, no global distinct), ids and
  all; ids of a type other than integers come back by one join at the end.
* ``near_duplicates_of(df_new, old, k)``: new fingerprints against a corpus
  (a DataFrame or an rsimhash index file): the smaller side becomes an
  index file shipped to the executors, the larger side streams past it.
* ``clusters(pairs)``: connected components: each task's spanning forest
  of the edges, finished in one task when the forests fit it, else by
  large-star / small-star rounds (checkpointed); ``dedup(df, text_col, id_col)``:
  the whole job, one row kept per cluster (the smallest id).

Spark has no unsigned 64-bit type: fingerprints are ``long`` columns holding
the same bits (``to_signed`` / ``to_unsigned`` convert exactly).

    >>> rsimhash.spark.to_signed(2**64 - 1)
    -1
"""

from __future__ import annotations

import importlib.util
import os
import warnings
from typing import Any, Optional, Union

import numpy as np

from ._signed import to_signed, to_unsigned

__all__ = [
    "to_signed",
    "to_unsigned",
    "fingerprint_column",
    "near_duplicate_pairs",
    "near_duplicates_of",
    "clusters",
    "dedup",
]

_INSTALL = 'pip install "rsimhash[spark]"'


def _require(df: Any = None) -> None:
    """PySpark is installed, and (given a DataFrame) its session's Python
    workers can import rsimhash: checked once per session, before its first
    job, with one clear ``ImportError`` when they cannot."""
    if importlib.util.find_spec("pyspark") is None:
        raise ImportError(f"rsimhash.spark needs PySpark, which is not installed; install it with: {_INSTALL}")
    session = getattr(df, "sparkSession", None)
    if session is not None:
        from ._workers import check

        check(session)


def _check_k(k: Any) -> int:
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or not 0 <= k <= 16:
        raise ValueError(f"k must be an int from 0 to 16, got {k!r}")
    return int(k)


def fingerprint_column(
    df: Any, text_col: str, out_col: str = "simhash", *, mode: str = "words", width: Optional[int] = None, nulls: str = "error"
) -> Any:
    """``df`` with a column ``out_col`` of SPEC v1 fingerprints of
    ``text_col``, as signed longs holding the fingerprints' 64 bits
    (``to_unsigned`` gives them back). Computed in Arrow batches by
    ``rsimhash.fingerprints``, texts read in place.

    A null text stops the job with an error naming the column
    (``nulls="error"``), or gets a null fingerprint (``nulls="keep"``).

    >>> out = rsimhash.spark.fingerprint_column(spark.createDataFrame([("a b c",)], ["text"]), "text")
    >>> rsimhash.spark.to_unsigned(out.first()["simhash"]) == rsimhash.fingerprint("a b c")
    True
    """
    _require(df)
    from pyspark.sql.types import LongType, StringType, StructField, StructType

    from .. import fingerprints

    if text_col not in df.columns:
        raise ValueError(f"no column {text_col!r} in the DataFrame (its columns: {', '.join(df.columns)})")
    if not isinstance(df.schema[text_col].dataType, StringType):
        raise TypeError(f"column {text_col!r} must hold strings, got {df.schema[text_col].dataType.simpleString()}")
    if out_col in df.columns:
        raise ValueError(f"the DataFrame has a column {out_col!r} already: pick another out_col")
    if nulls not in ("error", "keep"):
        raise ValueError(f'nulls must be "error" or "keep", got {nulls!r}')
    fingerprints(["probe"], mode=mode, width=width)  # a bad mode or width fails here, not in a task
    schema = StructType(df.schema.fields + [StructField(out_col, LongType(), nulls == "keep")])
    position = df.columns.index(text_col)

    def run(batches: Any) -> Any:
        import pyarrow as pa  # type: ignore[import-untyped]

        import rsimhash

        for batch in batches:
            texts = batch.column(position)
            if texts.null_count:
                if nulls == "error":
                    raise ValueError(
                        f"column {text_col!r} holds a null text; drop or fill those rows, or pass "
                        f'nulls="keep" for a null fingerprint'
                    )
                fps = rsimhash.fingerprints(texts.fill_null(""), mode=mode, width=width).view(np.int64)
                column = pa.array(fps, mask=texts.is_null().to_numpy(zero_copy_only=False))
            else:
                column = pa.array(rsimhash.fingerprints(texts, mode=mode, width=width).view(np.int64))
            yield pa.RecordBatch.from_arrays(batch.columns + [column], names=batch.schema.names + [out_col])

    return df.mapInArrow(run, schema)


def near_duplicate_pairs(
    df: Any,
    id_col: str,
    fp_col: str,
    k: int = 3,
    *,
    tables: Optional[int] = None,
    nulls: str = "error",
    max_group: Optional[int] = None,
    copies: str = "all",
) -> Any:
    """A DataFrame ``(id_a, id_b)``: every pair of rows whose fingerprints
    (``fp_col``, longs) are within ``k`` bits, identical ones included,
    ``id_a < id_b``; ids should be distinct. The same pairs as
    ``rsimhash.batch.find_all(fps, k, ids=ids)``.

    Only distinct fingerprints are shuffled, whatever their copies.
    ``copies="all"`` lists every pair of rows sharing a fingerprint (``c``
    copies make ``c (c - 1) / 2``); ``copies="first"`` pairs each only with
    the smallest id of its fingerprint, and those smallest ids across close
    fingerprints, as ``Index.find_all(copies="first")``.

    ``tables``: the number of tables of the design (else chosen for the
    number of distinct fingerprints: fewer tables shuffle fewer rows, more
    make smaller groups). ``nulls``: ``"error"`` refuses null ids or
    fingerprints, ``"skip"`` leaves those rows out and warns with their
    count. ``max_group`` no longer has an effect (it cut groups into cells
    of the row-per-value shuffle; the packed shuffle cuts a group into
    cells only past 2^22 distinct values a task) and warns when given.

    >>> df = spark.createDataFrame([(1, 0), (2, 0b111), (3, 0xFF00), (4, 0)], ["id", "simhash"])
    >>> pairs = rsimhash.spark.near_duplicate_pairs(df, "id", "simhash", k=3)
    >>> [tuple(r) for r in pairs.orderBy("id_a", "id_b").collect()]
    [(1, 2), (1, 4), (2, 4)]
    """
    _require(df)
    from pyspark.sql import functions as F

    from . import _pairs

    k = _check_k(k)
    _check_design(k, tables, max_group)
    if copies not in ("all", "first"):
        raise ValueError(f'copies must be "all" or "first", got {copies!r}')
    base, n = _pairs.checked(df, id_col, fp_col, nulls)
    id_type = base.schema["id"].dataType
    if _pairs.integral(id_type):
        # Ids travel in the blocks: the reducers emit the pairs of ids.
        blocks = _pairs.choose_blocks(max(n, 1), k, tables)
        pairs = _pairs.packed_pairs(base, k, blocks, n, copies)
        return pairs.select(F.col("a").cast(id_type).alias("id_a"), F.col("b").cast(id_type).alias("id_b"))
    if copies == "first":
        edges = _edges(base, k, tables, forest=False)
        return edges.select(F.least("u", "v").alias("id_a"), F.greatest("u", "v").alias("id_b"))
    fp_pairs = _distinct_pairs(base, k, tables)
    a = base.select(F.col("id").alias("a"), F.col("fp").alias("fp_a"))
    b = base.select(F.col("id").alias("b"), F.col("fp").alias("fp_b"))
    across = fp_pairs.join(a, "fp_a").join(b, "fp_b").select("a", "b")
    copies = a.join(b, F.col("fp_a") == F.col("fp_b")).where(F.col("a") < F.col("b")).select("a", "b")
    both = across.unionByName(copies)
    return both.select(F.least("a", "b").alias("id_a"), F.greatest("a", "b").alias("id_b"))


def _distinct_pairs(base: Any, k: int, tables: Optional[int], *, forest: bool = False) -> Any:
    """``(fp_a, fp_b)``: the pairs of distinct fingerprints of ``base`` within
    k (with ``forest``, only enough for their components)."""
    from . import _pairs

    values = base.select("fp").distinct()
    n = values.count()
    blocks = _pairs.choose_blocks(max(n, 1), k, tables)
    return _pairs.fingerprint_pairs(values, k, blocks, n, forest=forest)


def _check_design(k: int, tables: Optional[int], max_group: Optional[int]) -> None:
    """Refuses a ``tables`` no design for ``k`` has, or a ``max_group``
    below 2, before any Spark job; warns that ``max_group`` has no effect."""
    from . import _pairs

    if tables is not None:
        if isinstance(tables, bool) or not isinstance(tables, (int, np.integer)):
            raise TypeError(f"tables must be an int, got {type(tables).__name__}")
        _pairs.choose_blocks(1, k, int(tables))
    if max_group is None:
        return
    if isinstance(max_group, bool) or not isinstance(max_group, (int, np.integer)) or max_group < 2:
        raise ValueError(f"max_group must be an int of at least 2, got {max_group!r}")
    warnings.warn(
        "max_group no longer has an effect: the packed shuffle cuts groups into cells by its own task size",
        DeprecationWarning,
        stacklevel=3,
    )


def _edges(base: Any, k: int, tables: Optional[int], n: int = -1, *, forest: bool = True) -> Any:
    """Edges ``(u, v)`` whose components are those of the pairs within k,
    without expanding copies: each copy of a fingerprint linked to its
    smallest id, and the smallest ids of two fingerprints within k linked
    (with ``forest``, only as many of those as the components need: a
    dense cluster of distinct fingerprints adds about one edge each).
    ``n``: the rows of ``base``, when known."""
    from pyspark.sql import functions as F

    from . import _pairs

    if _pairs.integral(base.schema["id"].dataType):
        n = base.count() if n < 0 else n
        blocks = _pairs.choose_blocks(max(n, 1), k, tables)
        pairs = _pairs.packed_pairs(base, k, blocks, n, "forest" if forest else "first")
        return pairs.select(F.col("a").alias("u"), F.col("b").alias("v"))
    fp_pairs = _distinct_pairs(base, k, tables, forest=forest)
    reps = base.groupBy("fp").agg(F.min("id").alias("rep"))
    star = base.join(reps, "fp").where(F.col("id") != F.col("rep")).select(F.col("id").alias("u"), F.col("rep").alias("v"))
    ra = reps.select(F.col("fp").alias("fp_a"), F.col("rep").alias("u"))
    rb = reps.select(F.col("fp").alias("fp_b"), F.col("rep").alias("v"))
    linked = fp_pairs.join(ra, "fp_a").join(rb, "fp_b").select("u", "v")
    return star.unionByName(linked)


def clusters(pairs_df: Any, id_a: str = "id_a", id_b: str = "id_b") -> Any:
    """``(id, cluster_id)``: the connected components of the pair graph,
    each id with the smallest id of its component; ids in no pair are not
    listed. Integer ids: each task keeps only the edges that join two of
    its components, and when those fit one task (2^22 edges) it finds the
    components; else, and for other ids, large-star / small-star rounds
    with DataFrame operations, the lineage cut every round (reliably with
    ``SparkContext.setCheckpointDir``, else with local checkpoints).

    >>> pairs = spark.createDataFrame([(1, 2), (2, 3), (7, 8)], ["id_a", "id_b"])
    >>> [tuple(r) for r in rsimhash.spark.clusters(pairs).orderBy("id").collect()]
    [(1, 1), (2, 1), (3, 1), (7, 7), (8, 7)]
    """
    _require(pairs_df)
    from pyspark.sql import functions as F

    from ._components import components

    for name in (id_a, id_b):
        if name not in pairs_df.columns:
            raise ValueError(f"no column {name!r} in the pairs (its columns: {', '.join(pairs_df.columns)})")
    edges = pairs_df.select(F.col(id_a).alias("u"), F.col(id_b).alias("v")).dropna()
    return components(edges)


def dedup(
    df: Any,
    text_col: str,
    id_col: str,
    k: int = 3,
    *,
    mode: str = "words",
    width: Optional[int] = None,
    tables: Optional[int] = None,
) -> Any:
    """``df`` minus its near-duplicates: of each cluster of rows whose
    fingerprints link within ``k`` bits (connected components, as
    ``Index.cluster``), the row with the smallest id stays; every column is
    unchanged. Ids must be distinct and not null.

    >>> df = spark.createDataFrame(
    ...     [(1, "The cat sat on the mat."), (2, "the cat sat on the MAT!"), (3, "Dogs bark.")], ["id", "text"])
    >>> [tuple(r) for r in rsimhash.spark.dedup(df, "text", "id", k=3).orderBy("id").collect()]
    [(1, 'The cat sat on the mat.'), (3, 'Dogs bark.')]
    """
    _require(df)
    from pyspark.sql import functions as F

    from . import _pairs
    from ._components import components

    k = _check_k(k)
    _check_design(k, tables, None)
    fp_col = "__rsimhash_fp"
    with_fp = fingerprint_column(df, text_col, fp_col, mode=mode, width=width)
    base, n = _pairs.checked(with_fp, id_col, fp_col, "error")
    labels = components(_edges(base, k, tables, n))
    gone = labels.where(F.col("id") != F.col("cluster_id")).select(F.col("id").alias("__rsimhash_gone"))
    # A join on a condition keeps df's columns in their order (one on a column name puts that column first).
    return df.join(gone, df[id_col] == gone["__rsimhash_gone"], "left_anti")


def near_duplicates_of(
    df_new: Any,
    old: Union[Any, str, "os.PathLike[str]"],
    k: int = 3,
    *,
    id_col: str = "id",
    fp_col: str = "simhash",
    old_id_col: Optional[str] = None,
    old_fp_col: Optional[str] = None,
) -> Any:
    """``(new_id, old_id, distance)``: each row of ``df_new`` with every
    fingerprint of ``old`` within ``k`` bits, as ``Index.query_batch`` over
    an index of ``old`` answers.

    ``old``: a DataFrame (``old_id_col``/``old_fp_col``, by default the same
    names as the new side's), or the path of an rsimhash index file (its
    stored ids are the old ids, as signed longs holding the same bits; ``k``
    at most the file's). Of two DataFrames the smaller is built into an
    index file on the driver and shipped to the executors; the larger
    streams past it.

    >>> old = spark.createDataFrame([(1, 0), (2, 0xFF00)], ["id", "simhash"])
    >>> new = spark.createDataFrame([(10, 0b11), (11, 0xF0F0F0)], ["id", "simhash"])
    >>> [tuple(r) for r in rsimhash.spark.near_duplicates_of(new, old, k=3).collect()]
    [(10, 1, 2)]
    """
    _require(df_new)
    from pyspark.sql.types import LongType

    from . import _pairs, _query

    k = _check_k(k)
    new, n_new = _pairs.checked(df_new, id_col, fp_col, "error")
    new = new.select("id", "fp")
    spark = df_new.sparkSession
    if isinstance(old, (str, os.PathLike)):
        path = os.fspath(old)
        if not os.path.isfile(path):
            raise FileNotFoundError(f"no index file at {path!r}")
        from .. import Index

        stored_k = Index.load(path).k
        if k > stored_k:
            raise ValueError(f"k={k} is more than the index file's k={stored_k}: build it with a larger k")
        return _query.stream(new, "id", "fp", _query.ship(spark, path), k, None, LongType(), swap=False)
    old_id_col = old_id_col or id_col
    old_fp_col = old_fp_col or fp_col
    other, n_old = _pairs.checked(old, old_id_col, old_fp_col, "error")
    other = other.select("id", "fp")
    small, large, swap = (other, new, False) if n_old <= n_new else (new, other, True)
    table = small.toArrow() if hasattr(small, "toArrow") else None
    if table is not None:
        fps = table.column("fp").to_numpy().astype(np.int64)
        ids = spark.sparkContext.broadcast(table.column("id").to_numpy(zero_copy_only=False))
    else:  # PySpark before 4.0: through pandas
        rows = small.toPandas()
        fps = rows["fp"].to_numpy(dtype=np.int64)
        ids = spark.sparkContext.broadcast(rows["id"].to_numpy())
    path = _query.build(spark, fps, k)
    return _query.stream(large, "id", "fp", path, k, ids, small.schema["id"].dataType, swap=swap)
