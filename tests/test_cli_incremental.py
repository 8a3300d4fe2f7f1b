"""``rsimhash dedup --save-fingerprints S`` then ``--against S``: day by
day, each day against what the days before kept, keeps exactly what one
dedup of every day keeps; a store that does not match is refused before
any work."""

from __future__ import annotations

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)
from cli_helpers import assert_one_error, lines_of, make_records, ok, read_tsv, run_cli, write_jsonl  # noqa: E402


def test_three_days_equal_the_dedup_of_all(tmp_path):
    records = make_records(240, seed=27, dup_share=0.5)
    days = [records[:90], records[90:170], records[170:]]
    whole = tmp_path / "all.jsonl"
    write_jsonl(whole, records)
    ok(run_cli("dedup", "--input", whole, "--output", tmp_path / "all.out.jsonl", "-q"))
    want = lines_of((tmp_path / "all.out.jsonl").read_bytes())
    store = tmp_path / "store"
    got = []
    removed_rows = []
    for d, day in enumerate(days):
        path = tmp_path / f"day{d}.jsonl"
        write_jsonl(path, day)
        out = tmp_path / f"day{d}.out.jsonl"
        removed = tmp_path / f"day{d}.removed.tsv"
        args = ["dedup", "--input", path, "--output", out, "--removed", removed, "--save-fingerprints", store, "-q"]
        if d > 0:
            args += ["--against", store]
        ok(run_cli(*args))
        got += lines_of(out.read_bytes())
        removed_rows += read_tsv(removed.read_bytes())[1:]
    assert got == want
    assert sorted(n for n in os.listdir(store) if not n.startswith(".")) == [
        f"part-0000{d}.{ext}" for d in range(3) for ext in ("ids", "json", "npy")
    ] + ["store.json"]
    # Every removed record names a kept one (of its day or an earlier one).
    kept_ids = {str(r["id"]) for r in records if any(f'"id": {r["id"]},' in line.decode() for line in want)}
    assert removed_rows and all(row[1] in kept_ids for row in removed_rows)
    earlier = {str(r["id"]) for r in days[0]}
    assert any(row[1] in earlier for row in read_tsv((tmp_path / "day2.removed.tsv").read_bytes())[1:])


def test_bad_stores_are_refused_before_any_work(tmp_path):
    records = make_records(30, seed=3)
    path = tmp_path / "in.jsonl"
    write_jsonl(path, records)
    out = tmp_path / "out.jsonl"
    (tmp_path / "empty").mkdir()
    assert_one_error(
        run_cli("dedup", "--input", path, "--output", out, "--against", tmp_path / "empty"), 1, "not a fingerprint store"
    )
    assert_one_error(
        run_cli("dedup", "--input", path, "--output", out, "--against", tmp_path / "missing"), 1, "no such directory"
    )
    ok(run_cli("dedup", "--input", path, "--output", out, "--save-fingerprints", tmp_path / "s", "-q"))
    os.remove(out)
    line = assert_one_error(
        run_cli("dedup", "--input", path, "--output", out, "--against", tmp_path / "s", "--distance", "5"), 2, "distance"
    )
    assert "3" in line and "5" in line
    assert_one_error(
        run_cli("dedup", "--input", path, "--output", out, "--against", tmp_path / "s", "--mode", "chars"), 2, "mode"
    )
    (tmp_path / "s" / "store.json").write_text('{"format": "rsimhash-fingerprints", "version": 9}')
    assert_one_error(run_cli("dedup", "--input", path, "--output", out, "--against", tmp_path / "s"), 1, "version 9")
    assert not out.exists()
