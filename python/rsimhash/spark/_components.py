"""Connected components of a pair graph with DataFrame operations: the
alternating large-star and small-star steps of Kiveris et al., "Connected
Components in MapReduce and Beyond" (SoCC 2014), O(log^2 n) rounds.

Edges are kept as ``(u, v)`` rows. A large-star step links every neighbour
of a node that is larger than the node to the smallest id in the node's
neighbourhood; a small-star step links a node and its smaller neighbours
to the smallest of them. When a round changes no edge, every edge is
``(member, root)`` with the root the smallest id of its component. Each
round's edges are checkpointed (reliably when the session has a
checkpoint directory, else locally) so the lineage stays short; the job
that computes them also counts them and XORs their hashes, and only a round
whose count and XOR equal the last one's is compared edge by edge.

Integer ids take a shorter route first: each task keeps only the edges
that join two of its components (a spanning forest of its edges, at most
its ids less one; components are unchanged), and when the forests hold at
most ``ONE_TASK_EDGES`` edges, one task finds the components of them all
(union-find in the core) and no round runs; else the rounds run on the
forests' edges.
"""

from __future__ import annotations

from typing import Any

MAX_ROUNDS = 200
# Edges one task takes whole to finish the components (16 bytes each: 64
# MiB); read on the driver when a job is planned.
ONE_TASK_EDGES = 1 << 22
# Rows in one Arrow batch of a task's output at most.
OUT_ROWS = 1 << 20


def components(edges: Any, *, max_rounds: int = MAX_ROUNDS) -> Any:
    """``(id, cluster_id)`` of every id in ``edges`` (columns ``u``, ``v``):
    ``cluster_id`` the smallest id of its component."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import LongType

    from ._pairs import integral

    edges = edges.where(F.col("u") != F.col("v"))
    types = [edges.schema[c].dataType for c in ("u", "v")]
    if integral(types[0]) and integral(types[1]):
        longs = edges.select(F.col("u").cast("long"), F.col("v").cast("long"))
        forest, (n, _) = _cut(longs.mapInArrow(_forest, longs.schema))
        if n <= ONE_TASK_EDGES:
            labels = forest.coalesce(1).mapInArrow(_labels, "id long, cluster_id long")
            wide = types[0] if types[0] == types[1] else LongType()
            return labels.select(F.col("id").cast(wide), F.col("cluster_id").cast(wide))
        edges = forest
    e, seal = _cut(_canonical(edges))
    for _ in range(max_rounds):
        nxt, nxt_seal = _cut(_small_star(_large_star(e)))
        # Equal sets have equal seals; equal seals are confirmed exactly.
        if nxt_seal == seal and _same(e, nxt):
            e = nxt
            break
        e, seal = nxt, nxt_seal
    else:
        raise RuntimeError(f"connected components did not settle in {max_rounds} rounds")
    members = e.select(F.col("u").alias("id"), F.col("v").alias("cluster_id"))
    roots = e.select(F.col("v").alias("id"), F.col("v").alias("cluster_id")).distinct()
    return members.unionByName(roots)


def _ends(batches: Any) -> "tuple[Any, Any]":
    """A task's edges as two int64 arrays (``u``, ``v``)."""
    import numpy as np

    held = [b for b in batches if b.num_rows]
    if not held:
        return np.empty(0, np.int64), np.empty(0, np.int64)
    u = np.concatenate([b.column(0).to_numpy(zero_copy_only=False) for b in held]).astype(np.int64, copy=False)
    v = np.concatenate([b.column(1).to_numpy(zero_copy_only=False) for b in held]).astype(np.int64, copy=False)
    return u, v


def _forest(batches: Any) -> Any:
    """The edges of a task that join two of its components."""
    import pyarrow as pa  # type: ignore[import-untyped]

    from rsimhash._rsimhash import spanning_forest

    u, v = _ends(batches)
    keep = spanning_forest(u, v)
    u, v = u[keep], v[keep]
    for at in range(0, len(u), OUT_ROWS):
        yield pa.RecordBatch.from_arrays([pa.array(u[at : at + OUT_ROWS]), pa.array(v[at : at + OUT_ROWS])], names=["u", "v"])


def _labels(batches: Any) -> Any:
    """Every id of the edges and the smallest id of its component (all the
    edges in this one task)."""
    import pyarrow as pa  # type: ignore[import-untyped]

    from rsimhash._rsimhash import component_labels

    ids, roots = component_labels(*_ends(batches))
    for at in range(0, len(ids), OUT_ROWS):
        yield pa.RecordBatch.from_arrays(
            [pa.array(ids[at : at + OUT_ROWS]), pa.array(roots[at : at + OUT_ROWS])], names=["id", "cluster_id"]
        )


def _canonical(e: Any) -> Any:
    """Each undirected edge once, as (larger, smaller)."""
    from pyspark.sql import functions as F

    return e.select(F.greatest("u", "v").alias("u"), F.least("u", "v").alias("v")).distinct()


def _large_star(e: Any) -> Any:
    """Every neighbour larger than a node linked to the smallest id of the
    node's neighbourhood (the node included)."""
    from pyspark.sql import functions as F

    both = e.unionByName(e.select(F.col("v").alias("u"), F.col("u").alias("v")))
    low = both.groupBy("u").agg(F.min("v").alias("m")).select("u", F.least("u", "m").alias("m"))
    linked = both.join(low, "u").where(F.col("v") > F.col("u")).select(F.col("v").alias("u"), F.col("m").alias("v"))
    return _canonical(linked.where(F.col("u") != F.col("v")))


def _small_star(e: Any) -> Any:
    """A node and its smaller neighbours linked to the smallest of them
    (edges are (larger, smaller))."""
    from pyspark.sql import functions as F

    low = e.groupBy("u").agg(F.min("v").alias("m"))
    j = e.join(low, "u")
    others = j.where(F.col("v") != F.col("m")).select(F.col("v").alias("u"), F.col("m").alias("v"))
    own = low.select("u", F.col("m").alias("v"))
    return _canonical(others.unionByName(own))


def _cut(e: Any) -> "tuple[Any, tuple]":
    """The edges computed and stored, their lineage cut, and their seal:
    their count and the XOR of their hashes, from the job that computes
    them (no job of its own to tell most rounds apart)."""
    from pyspark.sql import functions as F

    if e.sparkSession.sparkContext.getCheckpointDir():
        e = e.checkpoint(eager=False)
    else:
        e = e.localCheckpoint(eager=False)
    row = e.agg(F.count(F.lit(1)).alias("n"), F.bit_xor(F.xxhash64("u", "v")).alias("x")).first()
    return e, (row["n"], row["x"])


def _same(a: Any, b: Any) -> bool:
    """Whether two edge sets (each edge once, as ``_canonical`` makes them)
    are equal: their differences both ways are empty, asked in one Spark job
    (two counts and a difference took three, each round)."""
    return a.exceptAll(b).unionByName(b.exceptAll(a)).isEmpty()
