"""``rsimhash cluster``, ``find-all`` and ``fingerprint`` end to end
(subprocess): clusters equal to ``Index.cluster``, pairs equal to
``Index.find_all``, fingerprints equal to ``rsimhash.fingerprint``."""

from __future__ import annotations

import json
import os
import sys

import numpy as np
import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

from cli_helpers import fingerprints_of, make_records, ok, read_tsv, run_cli, stderr_lines, write_jsonl  # noqa: E402

rsimhash = pytest.importorskip("rsimhash")


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    records = make_records(300, seed=3, string_ids=True)
    directory = tmp_path_factory.mktemp("cluster")
    path = directory / "records.jsonl"
    write_jsonl(path, records)
    return path, records, fingerprints_of(records)


def expected_rows(records, fps, k, blocks=None, min_size=2, method="connected"):
    index = rsimhash.Index(k, blocks=blocks)
    index.add(fps)
    clusters = index.cluster(min_size=min_size, method=method)
    rows = [[str(records[m]["id"]), str(int(fps[m])), str(c)] for c, members in enumerate(clusters) for m in members.tolist()]
    return clusters, rows


def test_cluster_equals_index_cluster(corpus, tmp_path):
    path, records, fps = corpus
    clusters, rows = expected_rows(records, fps, 3, blocks=5)
    assert len(clusters) >= 10, "the corpus must have clusters"
    out = tmp_path / "clusters.tsv"
    # the original tool's flags, underscores included
    proc = ok(
        run_cli(
            "cluster",
            "--input",
            path,
            "--format",
            "json",
            "--blocks",
            "5",
            "--distance",
            "3",
            "--output",
            out,
            "--text_column",
            "text",
            "--id_column",
            "id",
            "--window",
            "3",
        )
    )
    table = read_tsv(out.read_bytes())
    assert table[0] == ["id", "hash", "cluster"]
    assert table[1:] == rows
    assert f"{len(clusters)} clusters of two or more holding {len(rows)} records" in stderr_lines(proc)[0]


def test_cluster_all_sample_leader_window(corpus, tmp_path):
    path, records, fps = corpus
    # --all: every record, singletons in clusters of their own
    _, rows = expected_rows(records, fps, 4, min_size=1)
    proc = ok(run_cli("cluster", "-i", path, "-k", "4", "--all", "-q"))
    assert read_tsv(proc.stdout)[1:] == rows
    assert sorted(r[0] for r in rows) == sorted(str(r["id"]) for r in records)
    # --sample N: the first N records only
    _, rows = expected_rows(records[:120], fps[:120], 3)
    proc = ok(run_cli("cluster", "-i", path, "--sample", "120", "--chunk-mb", "0.005", "-q"))
    assert read_tsv(proc.stdout)[1:] == rows
    # leader clusters
    _, rows = expected_rows(records, fps, 6, method="leader")
    proc = ok(run_cli("cluster", "-i", path, "-k", "6", "--method", "leader", "-q"))
    assert read_tsv(proc.stdout)[1:] == rows
    # another shingle width and mode
    wide = fingerprints_of(records, mode="chars", width=6)
    _, rows = expected_rows(records, wide, 3)
    proc = ok(run_cli("cluster", "-i", path, "--mode", "chars", "--window", "6", "-q"))
    assert read_tsv(proc.stdout)[1:] == rows


def test_cluster_hash_tsv_from_fingerprint(corpus, tmp_path):
    """fingerprint writes the hash TSV that cluster reads back: same clusters."""
    path, records, fps = corpus
    tsv = tmp_path / "hashes.tsv"
    proc = ok(run_cli("fingerprint", "--input", path, "--output", tsv))
    assert read_tsv(tsv.read_bytes()) == [["id", "hash"]] + [[r["id"], str(int(f))] for r, f in zip(records, fps)]
    assert stderr_lines(proc)[0].startswith("rsimhash fingerprint: 300 records fingerprinted")
    _, rows = expected_rows(records, fps, 3, blocks=6)
    proc = ok(run_cli("cluster", "--input", tsv, "--format", "hash", "--blocks", "6", "--distance", "3", "-q"))
    assert read_tsv(proc.stdout)[1:] == rows
    # stdin, with the format given
    proc = ok(run_cli("cluster", "--input", "-", "--format", "hash", "-q", input=tsv.read_bytes()))
    assert read_tsv(proc.stdout)[1:] == expected_rows(records, fps, 3)[1]


def test_fingerprint_int_ids_stdin_and_line_ids(tmp_path):
    records = make_records(40, seed=4)
    data = b"".join(json.dumps(r).encode() + b"\n" for r in records)
    proc = ok(run_cli("fingerprint", "--input", "-", "-q", input=data))
    fps = fingerprints_of(records)
    assert read_tsv(proc.stdout)[1:] == [[str(r["id"]), str(int(f))] for r, f in zip(records, fps)]
    # no id field in the records: ids are line numbers (a blank line counts)
    texts = b"".join(json.dumps({"text": r["text"]}).encode() + b"\n" for r in records[:3])
    proc = ok(run_cli("fingerprint", "--input", "-", "-q", input=b"\n" + texts))
    assert [row[0] for row in read_tsv(proc.stdout)[1:]] == ["2", "3", "4"]


def test_fingerprint_parquet(tmp_path):
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    records = make_records(50, seed=5, string_ids=True)
    path = tmp_path / "r.parquet"
    pq.write_table(pa.table({"key": [r["id"] for r in records], "body": [r["text"] for r in records]}), path)
    proc = ok(run_cli("fingerprint", "-i", path, "--text-column", "body", "--id-column", "key", "-q"))
    fps = fingerprints_of(records)
    assert read_tsv(proc.stdout)[1:] == [[r["id"], str(int(f))] for r, f in zip(records, fps)]
    proc = ok(run_cli("cluster", "-i", path, "--text-column", "body", "--id-column", "key", "-q"))
    assert read_tsv(proc.stdout)[1:] == expected_rows(records, fps, 3)[1]


def expected_pairs(values, k, blocks=None):
    """Distinct value pairs within k from Index.find_all on the values as given,
    plus [x, x] for a value given more than once; sorted."""
    values = np.asarray(values, dtype=np.uint64)
    index = rsimhash.Index(k, blocks=blocks)
    index.add(values)
    pairs = {tuple(sorted((int(values[a]), int(values[b])))) for a, b in index.find_all().tolist()}
    return [list(p) for p in sorted(pairs)]


def test_find_all_equals_index_find_all(corpus, tmp_path):
    _, _, fps = corpus
    values = list(fps[:250].tolist()) + [0, (1 << 64) - 1, (1 << 64) - 2, 7, 7] + list(fps[:5].tolist())
    path = tmp_path / "hashes.txt"
    path.write_text("\n".join(str(v) for v in values) + "\n\n")
    pairs = expected_pairs(values, 3, blocks=6)
    assert [7, 7] in pairs and [(1 << 64) - 2, (1 << 64) - 1] in pairs
    assert len(pairs) > 20
    out = tmp_path / "pairs.jsonl"
    proc = ok(run_cli("find-all", "--input", path, "--blocks", "6", "--distance", "3", "--output", out))
    text = out.read_text()
    assert [json.loads(line) for line in text.splitlines()] == pairs
    assert text.startswith(f"[{pairs[0][0]}, {pairs[0][1]}]\n")  # simhash-find-all's spelling
    assert (
        f"{len(values)} fingerprints read ({len(set(values))} distinct), {len(pairs)} pairs within 3 bits"
        in stderr_lines(proc)[0]
    )
    # stdin to stdout, no trailing newline, another distance
    proc = ok(run_cli("find-all", "--input", "-", "-k", "8", "-q", input="\n".join(str(v) for v in values).encode()))
    assert [json.loads(line) for line in proc.stdout.decode().splitlines()] == expected_pairs(values, 8)
