"""Fingerprint files (``lines``: one decimal u64 a line; ``hash``: a TSV with
an ``id`` and a ``hash`` column) read by the core against the reference reader.

Both are ``rsimhash._records.Source``: ``engine="core"`` (the default,
``_rsimhash.JsonLines(format=...)``) and ``engine="python"``. On generated
files mixing good lines with every kind of bad one (not a number, a sign,
above 2**64 - 1, a missing tab, an id that is not UTF-8, blank lines, CRLF),
both give the same records, write back the same bytes and word the same
errors, naming the file and the 1-based line. ``find-all`` on a decimal file
gives the pairs of ``batch.find_all`` on the parsed array.
"""

from __future__ import annotations

import gzip
import os
import random

import numpy as np
import pytest

rsimhash = pytest.importorskip("rsimhash")
hypothesis = pytest.importorskip("hypothesis")
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st

from budget import examples  # noqa: E402
from cli_helpers import assert_one_error, ok, run_cli, stderr_lines  # noqa: E402
from rsimhash._records import RecordError, Source  # noqa: E402
from rsimhash.cli.errors import BadLines  # noqa: E402

U64_MAX = (1 << 64) - 1


class Collect(BadLines):
    """Skips bad lines, keeping their messages."""

    def __init__(self) -> None:
        super().__init__(True, quiet=True)
        self.messages: list = []

    def __call__(self, error: RecordError) -> None:
        super().__call__(error)
        self.messages.append(str(error))


def read(path, fmt, engine, *, skip=True, chunk_bytes=1 << 20, need_ids=True):
    bad = Collect() if skip else BadLines(False)
    records, written = [], []
    with Source(str(path), fmt, engine=engine, bad=bad, chunk_bytes=chunk_bytes, need_ids=need_ids) as source:
        for chunk in source.chunks():
            records += list(zip(np.asarray(chunk.lines).tolist(), chunk.ids, np.asarray(chunk.hashes).tolist()))
            written.append(chunk.write_lines(np.ones(len(chunk), dtype=bool)))
        header = source.header
    return dict(records=records, bad=bad.messages if skip else [], written=b"".join(written), header=header)


def first_error(path, fmt, engine):
    try:
        read(path, fmt, engine, skip=False)
    except RecordError as e:
        return str(e)
    return None


def read_or_fatal(path, fmt, engine, chunk_bytes):
    """``read`` skipping bad lines, or the error that stops even that (a bad header)."""
    try:
        return read(path, fmt, engine, chunk_bytes=chunk_bytes)
    except RecordError as e:
        return str(e)


def assert_same(path, fmt, chunk_bytes=1 << 20):
    core = read_or_fatal(path, fmt, "core", chunk_bytes)
    ref = read_or_fatal(path, fmt, "python", chunk_bytes)
    assert core == ref
    assert first_error(path, fmt, "core") == first_error(path, fmt, "python")
    return core


values = st.one_of(st.just(0), st.just(U64_MAX), st.integers(0, U64_MAX))
bad_numbers = st.sampled_from(
    [b"abc", b"-5", b"+5", b"12x", b"1 2", b"0x1f", str(U64_MAX + 1).encode(), b"99999999999999999999999", b"\xd9\xa1", b"1.5"]
)
blank = st.sampled_from([b"", b" ", b"\t", b"\r"])


@st.composite
def decimal_lines(draw):
    out = []
    for _ in range(draw(st.integers(0, 60))):
        kind = draw(st.integers(0, 9))
        if kind < 7:
            v = str(draw(values)).encode()
            out.append(draw(st.sampled_from([v, b" " + v, v + b"\r", v + b" \t"])))
        elif kind == 7:
            out.append(draw(blank))
        else:
            out.append(draw(bad_numbers))
    return out


@st.composite
def tsv_lines(draw):
    out = [draw(st.sampled_from([b"id\thash", b"hash\tid\r", b"\xef\xbb\xbfid\thash\textra", b"id\tfp", b"id,hash"]))]
    for i in range(draw(st.integers(0, 40))):
        kind = draw(st.integers(0, 9))
        v = str(draw(values)).encode()
        if kind < 6:
            fields = [f"d{i}".encode(), v]
            if out[0].startswith(b"hash"):
                fields.reverse()
            if out[0].endswith(b"extra"):
                fields.append(b"x")
            out.append(b"\t".join(fields) + draw(st.sampled_from([b"", b"\r"])))
        elif kind == 6:
            out.append(draw(blank))
        elif kind == 7:
            out.append(b"d" + v)  # a missing tab
        elif kind == 8:
            out.append(b"\xff\xfe\t" + v)  # an id that is not UTF-8
        else:
            out.append(b"d\t" + draw(bad_numbers))
    return out


@settings(max_examples=examples(60), deadline=None)
@given(lines=decimal_lines(), final_newline=st.booleans(), chunk_bytes=st.sampled_from([1, 7, 64, 1 << 20]))
def test_decimal_lines_read_like_the_reference(tmp_path_factory, lines, final_newline, chunk_bytes):
    path = tmp_path_factory.mktemp("h") / "h.txt"
    path.write_bytes(b"\n".join(lines) + (b"\n" if final_newline and lines else b""))
    assert_same(path, "lines", chunk_bytes)


@settings(max_examples=examples(60), deadline=None)
@given(lines=decimal_lines(), final_newline=st.booleans(), chunk_bytes=st.sampled_from([1, 7, 64, 1 << 20]))
def test_decimal_values_alone_read_like_chunks(tmp_path_factory, lines, final_newline, chunk_bytes):
    """``Source(values_only=True).values()`` (plain blocks as arrays, any
    other block as chunks) gives the records' hashes, the bad lines' errors
    and the counts that ``chunks()`` gives."""
    path = tmp_path_factory.mktemp("h") / "h.txt"
    path.write_bytes(b"\n".join(lines) + (b"\n" if final_newline and lines else b""))
    want = read(path, "lines", "core", chunk_bytes=chunk_bytes)
    bad = Collect()
    with Source(str(path), "lines", bad=bad, chunk_bytes=chunk_bytes, need_ids=False, values_only=True) as source:
        got = [v for fps in source.values() for v in np.asarray(fps, dtype=np.uint64).tolist()]
        assert source.records == len(want["records"]) and source.nbytes == path.stat().st_size
    assert got == [r[2] for r in want["records"]]
    assert bad.messages == want["bad"]


@settings(max_examples=examples(60), deadline=None)
@given(lines=tsv_lines(), final_newline=st.booleans(), chunk_bytes=st.sampled_from([1, 9, 64, 1 << 20]))
def test_hash_tsv_read_like_the_reference(tmp_path_factory, lines, final_newline, chunk_bytes):
    path = tmp_path_factory.mktemp("h") / "h.tsv"
    path.write_bytes(b"\n".join(lines) + (b"\n" if final_newline else b""))
    assert_same(path, "hash", chunk_bytes)


def test_compressed_hash_files(tmp_path):
    rng = random.Random(5)
    values = [rng.getrandbits(64) for _ in range(5000)]
    text = "".join(f"{v}\n" for v in values).encode()
    path = tmp_path / "h.txt.gz"
    path.write_bytes(gzip.compress(text))
    got = read(path, "lines", "core", chunk_bytes=4096)
    assert [r[2] for r in got["records"]] == values
    assert got["written"] == text


def test_values_of_a_cut_short_stream(tmp_path):
    """A gzip stream cut short, read for its values alone: the values of
    the lines read whole and the same bad line as ``chunks()`` reports."""
    rng = random.Random(9)
    text = "".join(f"{rng.getrandbits(64)}\n" for _ in range(20_000)).encode()
    packed = gzip.compress(text)
    path = tmp_path / "h.txt.gz"
    path.write_bytes(packed[: len(packed) * 2 // 3])
    want = read(path, "lines", "core", chunk_bytes=4096)
    bad = Collect()
    with Source(str(path), "lines", bad=bad, chunk_bytes=4096, need_ids=False, values_only=True) as source:
        got = [v for fps in source.values() for v in np.asarray(fps).tolist()]
    assert got == [r[2] for r in want["records"]] and 0 < len(got) < 20_000
    assert bad.messages == want["bad"] and len(bad.messages) == 1


def test_bad_lines_name_the_line(tmp_path):
    cases = [
        ("lines", b"1\n2\nabc\n", 3, '"abc" is not a decimal integer in 0..2**64-1'),
        ("lines", b"1\n18446744073709551616\n", 2, '"18446744073709551616" is not a decimal integer in 0..2**64-1'),
        ("lines", b"id\thash\n1\t5\n", 1, "looks like a header, which a lines input does not have"),
        ("hash", b"id\thash\na\t1\nb 2\n", 3, "expected 2 tab-separated fields, got 1"),
        ("hash", b"id\thash\na\t18446744073709551616\n", 2, 'hash "18446744073709551616" is not a decimal integer'),
        ("hash", b"5\t6\n", 1, 'expected a header line naming the columns "id" and "hash"'),
    ]
    for fmt, content, line, message in cases:
        path = tmp_path / ("h.tsv" if fmt == "hash" else "h.txt")
        path.write_bytes(content)
        for engine in ("core", "python"):
            error = first_error(path, fmt, engine)
            assert error is not None and error.startswith(f"{path}:{line}: ") and message in error, (engine, error)


def test_find_all_pairs_are_batch_find_all_s(tmp_path):
    """The CLI on a decimal file: the pairs of ``batch.find_all`` on the
    parsed array (as values, smaller first, sorted; each value repeated
    pairs with itself)."""
    rng = np.random.default_rng(11)
    base = rng.integers(0, 1 << 63, size=1500, dtype=np.uint64) * np.uint64(2)
    flips = np.uint64(1) << rng.integers(0, 64, size=(1500, 3)).astype(np.uint64)
    near = base ^ flips[:, 0] ^ (flips[:, 1] * rng.integers(0, 2, 1500).astype(np.uint64))
    fps = np.concatenate([base, near, base[:50], np.array([0, U64_MAX], dtype=np.uint64)])
    rng.shuffle(fps)
    path = tmp_path / "h.txt"
    path.write_text("".join(f"{v}\n" if i % 97 else f" {v}\r\n\n" for i, v in enumerate(fps.tolist())))
    out = tmp_path / "pairs.jsonl"
    ok(run_cli("find-all", "--input", path, "-k", "3", "--output", out, "--chunk-mb", "0.01"))
    got = [tuple(map(int, line.strip("[]\n").split(", "))) for line in out.read_text().splitlines()]
    values, counts = np.unique(fps, return_counts=True)
    found = rsimhash.batch.find_all(values, 3)
    want = {(int(min(values[a], values[b])), int(max(values[a], values[b]))) for a, b in np.asarray(found).tolist()}
    want |= {(int(v), int(v)) for v in values[counts > 1]}
    assert got == sorted(want)


def test_find_all_bad_line_between_plain_blocks(tmp_path):
    """A bad line deep in a large decimal file (blocks before and after it
    read for their values alone): an error naming its line, or with
    --skip-bad-lines the pairs of the file without it."""
    rng = np.random.default_rng(3)
    fps = rng.integers(0, U64_MAX, size=30_000, dtype=np.uint64, endpoint=True)
    fps[1::2] = fps[::2] ^ np.uint64(5)  # a pair at distance 2 each
    lines = [str(v) for v in fps.tolist()]
    good = tmp_path / "good.txt"
    good.write_text("\n".join(lines) + "\n")
    bad = tmp_path / "bad.txt"
    bad.write_text("\n".join(lines[:20_000] + ["12x"] + lines[20_000:]) + "\n")
    args = ("-k", "3", "--chunk-mb", "0.05")
    assert_one_error(run_cli("find-all", "--input", bad, *args), 1, f"{bad}:20001:", "is not a decimal integer")
    ok(run_cli("find-all", "--input", good, "--output", tmp_path / "a", *args))
    proc = ok(run_cli("find-all", "--input", bad, "--output", tmp_path / "b", "--skip-bad-lines", *args))
    assert (tmp_path / "a").read_bytes() == (tmp_path / "b").read_bytes()
    assert len((tmp_path / "a").read_text().splitlines()) == 15_000
    assert "30,000 fingerprints read" in stderr_lines(proc)[-1] and "1 bad line skipped" in stderr_lines(proc)[-1]


def test_header_in_a_lines_file_on_the_command_line(tmp_path):
    path = tmp_path / "h.txt"
    path.write_bytes(b"hash\n12\n")
    assert_one_error(run_cli("find-all", "--input", path), 1, f"{path}:1:", "looks like a header")
    proc = ok(run_cli("find-all", "--input", path, "--skip-bad-lines"))
    assert "1 bad line skipped" in stderr_lines(proc)[-1]


@settings(deadline=None)
@given(
    st.lists(st.one_of(st.integers(0, 40), st.sampled_from([0, 2**63, 2**64 - 2, 2**64 - 1])), max_size=200),
    st.integers(0, 200),
)
def test_find_all_distinct_values_and_copies_are_numpys(xs, cut):
    """The core's distinct values of the parts find-all read, as np.unique says."""
    from rsimhash import _rsimhash

    fps = np.array(xs, dtype=np.uint64)
    values, counts = np.unique(fps, return_counts=True)
    got, twice = _rsimhash.distinct_values([fps[:cut], fps[cut:]])
    assert got.dtype == twice.dtype == np.uint64
    assert got.tolist() == values.tolist() and twice.tolist() == values[counts > 1].tolist()


def test_distinct_values_on_copies_and_bad_parts():
    """10^5 copies of one value among 2 x 10^6 (the core's parallel sort),
    and parts that are not uint64 arrays as clear errors."""
    from rsimhash import _rsimhash

    rng = np.random.default_rng(5)
    fps = rng.integers(0, 2**64 - 1, size=2_000_000, dtype=np.uint64, endpoint=True)
    fps[rng.choice(len(fps), size=100_000, replace=False)] = 12345
    values, counts = np.unique(fps, return_counts=True)
    got, twice = _rsimhash.distinct_values([fps[:7], fps[7:]])
    assert np.array_equal(got, values) and np.array_equal(twice, values[counts > 1])
    with pytest.raises((TypeError, ValueError)):
        _rsimhash.distinct_values([np.arange(4, dtype=np.uint64)[::2]])
    with pytest.raises((TypeError, ValueError)):
        _rsimhash.distinct_values(["not an array"])


def test_find_all_and_cluster_name_tsv_ids_whatever_the_chunk(tmp_path):
    """A hash TSV's ids reach the output whether the core hands a chunk's
    ids over packed (every line a record) or as a list (a chunk with a bad
    line), in memory or spilled: the pairs named as brute force names them."""
    rng = np.random.default_rng(42)
    fps = rng.integers(0, U64_MAX, size=4000, dtype=np.uint64, endpoint=True)
    fps[1::2] = fps[::2] ^ np.uint64(6)  # pairs at distance 2
    names = [f"doc-{i}-é" if i % 3 else str(10**12 + i) for i in range(len(fps))]
    lines = ["id\thash"] + [f"{n}\t{v}" for n, v in zip(names, fps.tolist())]
    lines.insert(2501, "broken line")
    path = tmp_path / "h.tsv"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    want = sorted((names[a], names[b]) for a, b in np.asarray(rsimhash.batch.find_all(fps, 3)).tolist())
    args = ("--input", path, "-k", "3", "--chunk-mb", "0.02", "--skip-bad-lines")
    for extra in ((), ("--memory-limit", "1KiB")):
        out = tmp_path / f"pairs{len(extra)}.tsv"
        ok(run_cli("find-all", *args, "--output", out, *extra))
        rows = [line.split("\t") for line in out.read_text(encoding="utf-8").splitlines()[1:]]
        assert sorted((a, b) for a, b, _ in rows) == want
        clusters = tmp_path / f"clusters{len(extra)}.tsv"
        ok(run_cli("cluster", *args, "--output", clusters, *extra))
        members = [line.split("\t") for line in clusters.read_text(encoding="utf-8").splitlines()[1:]]
        assert sorted(m[0] for m in members) == sorted(name for pair in want for name in pair)


def _copies_tsv(path, n_copies: int = 300) -> np.ndarray:
    """A hash TSV: ``n_copies`` copies of one hash among near and far others."""
    rng = np.random.default_rng(5)
    fps = rng.integers(0, U64_MAX, size=n_copies + 200, dtype=np.uint64, endpoint=True)
    fps[:n_copies] = fps[-1]
    fps[n_copies : n_copies + 50] = fps[-1] ^ np.uint64(0b101)  # within 3 bits of the copies
    rng.shuffle(fps)
    path.write_text("id\thash\n" + "".join(f"r{i}\t{v}\n" for i, v in enumerate(fps.tolist())), encoding="utf-8")
    return fps


def _pairs_named(out) -> list:
    return sorted(tuple(line.split("\t")[:2]) for line in out.read_text(encoding="utf-8").splitlines()[1:])


def test_find_all_on_records_honours_copies(tmp_path):
    """``--copies first`` on records (not only with --jaccard): each copy
    paired with the first copy of its fingerprint, as ``batch.find_all``
    with ``copies="first"`` pairs them; ``all`` (the default) every pair."""
    path = tmp_path / "c.tsv"
    fps = _copies_tsv(path)
    for copies in ("first", "all"):
        out = tmp_path / f"{copies}.tsv"
        ok(run_cli("find-all", "--input", path, "--output", out, "--copies", copies))
        found = np.asarray(rsimhash.batch.find_all(fps, 3, copies=copies)).tolist()
        assert _pairs_named(out) == sorted((f"r{a}", f"r{b}") for a, b in found)
    assert len(_pairs_named(tmp_path / "first.tsv")) < len(_pairs_named(tmp_path / "all.tsv")) // 20


def test_find_all_on_records_writes_pairs_past_memory_through_the_work_directory(tmp_path, monkeypatch, capsys):
    """Pairs of records that memory cannot hold go to a file in the work
    directory and are read back a block at a time: the same output."""
    from rsimhash import batch
    from rsimhash.cli import main

    path = tmp_path / "c.tsv"
    _copies_tsv(path)
    want = tmp_path / "want.tsv"
    ok(run_cli("find-all", "--input", path, "--output", want))
    real, calls = batch.find_all, []

    def no_room_in_memory(*args, **kwargs):
        calls.append(kwargs.get("out"))
        if kwargs.get("out") is None:
            raise MemoryError("the pairs of find_all need more memory than is available")
        return real(*args, **kwargs)

    monkeypatch.setattr(batch, "find_all", no_room_in_memory)
    got = tmp_path / "got.tsv"
    assert main(["find-all", "--input", str(path), "--output", str(got), "--quiet", "--workdir", str(tmp_path / "w")]) == 0
    assert calls[0] is None and str(calls[1]).startswith(str(tmp_path / "w"))
    assert got.read_bytes() == want.read_bytes()
    assert not os.path.exists(tmp_path / "w") or not os.listdir(tmp_path / "w"), "the work files are removed"
