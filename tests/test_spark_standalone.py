"""``rsimhash.spark`` on a real Spark standalone cluster, not local mode: a
master and two workers (one core, 2 GiB each) on 127.0.0.1, started with
PySpark's ``bin/spark-class`` and stopped after the module (their executor
JVMs and Python workers with them, on a failure too). A driver in a process
of its own runs every job; its answers are compared with the single-machine
ones here, and it reports that two executors on two workers did the work.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

pytest.importorskip("pyspark")
pytest.importorskip("pyarrow")
pytest.importorskip("pandas")

import rsimhash  # noqa: E402
import rsimhash.batch  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

from spark_standalone import Standalone  # noqa: E402

if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
    pytest.skip("no Java for Spark", allow_module_level=True)

N = 40_000
COPIES = 3_000

DRIVER = r"""
import json, sys
import numpy as np
from pyspark.sql import SparkSession
import rsimhash.spark as rs

url, data, out = sys.argv[1:4]
spark = (SparkSession.builder.master(url).appName("rsimhash standalone test")
         .config("spark.executor.cores", "1").config("spark.executor.memory", "1g").config("spark.cores.max", "2")
         .config("spark.sql.shuffle.partitions", "4").config("spark.ui.enabled", "false")
         .config("spark.ui.showConsoleProgress", "false").config("spark.driver.host", "127.0.0.1")
         .config("spark.pyspark.python", sys.executable).getOrCreate())
spark.sparkContext.setLogLevel("ERROR")
df = spark.read.parquet(data).repartition(5).cache()
texts = spark.createDataFrame([(i, t) for i, t in enumerate(json.load(open(data + ".texts.json")))], "id long, text string")

def pairs(frame):
    t = frame.toArrow()
    return np.column_stack([t.column(0).to_numpy(), t.column(1).to_numpy()]).astype(np.int64).reshape(-1, 2)

np.save(out + "/all.npy", pairs(rs.near_duplicate_pairs(df, "id", "fp", 3)))
np.save(out + "/first.npy", pairs(rs.near_duplicate_pairs(df, "id", "fp", 3, copies="first")))
labels = rs.clusters(rs.near_duplicate_pairs(df, "id", "fp", 3, copies="first")).toArrow()
np.save(out + "/labels.npy", np.column_stack([labels.column("id").to_numpy(), labels.column("cluster_id").to_numpy()]))
kept = rs.dedup(texts, "text", "id", 3).select("id").toArrow().column("id").to_numpy()
np.save(out + "/kept.npy", kept)
old = df.where("id % 2 = 0")
new = df.where("id % 20 = 1")
q = rs.near_duplicates_of(new, old, 3, fp_col="fp").toArrow()
np.save(out + "/query.npy", np.column_stack([q.column(c).to_numpy() for c in ("new_id", "old_id", "distance")]).astype(np.int64))
status = spark.sparkContext._jsc.sc().statusTracker().getExecutorInfos()
hosts = [e.host() + ":" + str(e.port()) for e in status]
json.dump({"executors": len(hosts) - 1, "hosts": hosts}, open(out + "/executors.json", "w"))
spark.stop()
"""


def planted(n: int, seed: int = 11) -> np.ndarray:
    """Random fingerprints with near copies at 1 to 4 bits, one value copied
    ``COPIES`` times, and the extremes 0, 2**63 and 2**64 - 1 with neighbours."""
    rng = np.random.default_rng(seed)
    fps = rng.integers(0, 2**64, n, dtype=np.uint64)
    m = n // 10
    src = rng.integers(0, n - m, m)
    flips = np.zeros(m, dtype=np.uint64)
    for _ in range(4):
        flips ^= np.uint64(1) << rng.integers(0, 64, m).astype(np.uint64)
    fps[n - m :] = fps[src] ^ flips
    fps[:COPIES] = fps[COPIES]
    edges = np.array([0, 1, 1 << 63, (1 << 63) | 1, 2**64 - 1, 2**64 - 2, (1 << 63) - 1], dtype=np.uint64)
    fps[COPIES + 1 : COPIES + 1 + len(edges)] = edges
    return fps[rng.permutation(n)]


@pytest.fixture(scope="module")
def cluster():
    with Standalone(workers=2, cores=1, memory="2g") as c:
        yield c


@pytest.fixture(scope="module")
def answers(cluster, tmp_path_factory):
    import pyarrow as pa
    import pyarrow.parquet as pq

    from cli_helpers import make_records

    work = tmp_path_factory.mktemp("standalone")
    fps = planted(N)
    ids = (np.arange(N, dtype=np.int64) * 7919) % 1_000_003 + 1  # distinct, not in order
    data = str(work / "fps.parquet")
    pq.write_table(pa.table({"id": ids, "fp": fps.view(np.int64)}), data)
    texts = [r["text"] for r in make_records(300, seed=9)]
    with open(data + ".texts.json", "w") as f:
        json.dump(texts, f)
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable)
    proc = subprocess.run(
        [sys.executable, "-c", DRIVER, cluster.url, data, str(work)], capture_output=True, text=True, timeout=600, env=env
    )
    assert proc.returncode == 0, proc.stderr[-4000:] + cluster.logs()
    got = {name: np.load(work / f"{name}.npy") for name in ("all", "first", "labels", "kept", "query")}
    got["executors"] = json.loads((work / "executors.json").read_text())
    return fps, ids, texts, got


def sort_pairs(p: np.ndarray) -> np.ndarray:
    p = np.asarray(p, dtype=np.int64).reshape(-1, 2)
    return p[np.lexsort((p[:, 1], p[:, 0]))]


def test_two_executors_did_the_work(answers):
    *_, got = answers
    assert got["executors"]["executors"] == 2, got["executors"]


def test_pairs_equal_find_all(answers):
    fps, ids, _, got = answers
    want = sort_pairs(rsimhash.batch.find_all(fps, 3, ids=ids.astype(np.uint64), progress=False).astype(np.int64))
    assert len(want) > COPIES * (COPIES - 1) // 2
    assert np.array_equal(sort_pairs(got["all"]), want)
    # copies="first": each copy with the smallest id of its fingerprint, which
    # is the first copy of find_all when the items come in id order.
    order = np.argsort(ids)
    first = rsimhash.batch.find_all(fps[order], 3, ids=ids[order].astype(np.uint64), copies="first", progress=False)
    first = sort_pairs(first.astype(np.int64))
    assert np.array_equal(sort_pairs(got["first"]), first)


def test_clusters_equal_index(answers):
    fps, ids, _, got = answers
    index = rsimhash.Index(3)
    index.add(fps, ids=ids.astype(np.uint64))
    want = {}
    for members in index.cluster():
        want.update(dict.fromkeys(members.tolist(), int(members.min())))
    assert dict(map(tuple, got["labels"].tolist())) == want


def test_dedup_keeps_what_the_single_machine_keeps(answers):
    *_, texts, got = answers
    index = rsimhash.Index(3)
    index.add(rsimhash.fingerprints(texts))
    roots = {int(m): int(c.min()) for c in index.cluster() for m in c}
    want = sorted(i for i in range(len(texts)) if roots.get(i, i) == i)
    assert len(want) < len(texts)
    assert sorted(got["kept"].tolist()) == want


def test_near_duplicates_of_equal_query_batch(answers):
    fps, ids, _, got = answers
    old, new = ids % 2 == 0, ids % 20 == 1
    index = rsimhash.Index(3)
    index.add(fps[old], ids=ids[old].astype(np.uint64))
    qi, hit, dist = index.query_batch(fps[new])
    want = sorted(zip(ids[new][qi].tolist(), hit.astype(np.int64).tolist(), dist.astype(np.int64).tolist()))
    assert len(want) > 100
    assert sorted(map(tuple, got["query"].tolist())) == want
