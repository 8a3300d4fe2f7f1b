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
"""

from __future__ import annotations

from typing import Any

MAX_ROUNDS = 200


def components(edges: Any, *, max_rounds: int = MAX_ROUNDS) -> Any:
    """``(id, cluster_id)`` of every id in ``edges`` (columns ``u``, ``v``):
    ``cluster_id`` the smallest id of its component."""
    from pyspark.sql import functions as F

    e, seal = _cut(_canonical(edges.where(F.col("u") != F.col("v"))))
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
