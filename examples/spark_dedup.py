"""Near-duplicate removal on Apache Spark with rsimhash.

Runs as it is on a local session, and unchanged on a cluster:

    python examples/spark_dedup.py                                  # local[2], the news example
    python examples/spark_dedup.py --input corpus.parquet --output kept.parquet --k 3
    spark-submit --master yarn examples/spark_dedup.py --input hdfs:///crawl/*.parquet \\
        --output hdfs:///crawl-dedup --checkpoint hdfs:///tmp/rsimhash-ckpt

Every executor needs rsimhash installed (``pip install "rsimhash[spark]"``
in the cluster's Python environment, or shipped with ``--archives`` as a
packed venv). Input: JSON lines or Parquet with a text column and a unique
id column. Output: the kept rows (Parquet), the pairs and the clusters
beside them with ``--pairs``.
"""

from __future__ import annotations

import argparse
import os
import sys

from pyspark import SparkConf
from pyspark.sql import SparkSession

import rsimhash.spark as rs

HERE = os.path.dirname(os.path.abspath(__file__))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--input", default=os.path.join(HERE, "news.jsonl"), help="JSON lines or Parquet")
    p.add_argument("--output", default=None, help="where the kept rows go (Parquet); default: print them")
    p.add_argument("--text-column", default="text")
    p.add_argument("--id-column", default="id")
    p.add_argument("--k", type=int, default=3, help="bits: near-duplicates within k (default 3)")
    p.add_argument("--pairs", default=None, help="also write the pairs within k (Parquet)")
    p.add_argument("--checkpoint", default=None, help="a checkpoint directory for the clusters' rounds")
    args = p.parse_args()

    builder = SparkSession.builder.appName("rsimhash dedup")
    if not SparkConf().contains("spark.master"):  # not under spark-submit: a local session
        builder = builder.master("local[2]")
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)  # workers run this Python, with rsimhash
    spark = builder.getOrCreate()
    if args.checkpoint:
        spark.sparkContext.setCheckpointDir(args.checkpoint)

    reader = spark.read.parquet if args.input.endswith(".parquet") else spark.read.json
    docs = reader(args.input)

    # The whole job: fingerprints, pairs within k, clusters, one row kept per cluster.
    kept = rs.dedup(docs, args.text_column, args.id_column, k=args.k)

    if args.pairs:
        # The steps one by one, for the pairs themselves.
        with_fp = rs.fingerprint_column(docs, args.text_column, "simhash")
        pairs = rs.near_duplicate_pairs(with_fp, args.id_column, "simhash", k=args.k)
        pairs.write.mode("overwrite").parquet(args.pairs)

    if args.output:
        kept.write.mode("overwrite").parquet(args.output)
        print(f"kept {spark.read.parquet(args.output).count():,} of {docs.count():,} rows -> {args.output}")
    else:
        kept.orderBy(args.id_column).show(truncate=60)
        print(f"kept {kept.count():,} of {docs.count():,} rows")
    spark.stop()


if __name__ == "__main__":
    main()
