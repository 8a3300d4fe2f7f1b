"""The core's JSON-lines reader against the reference reader (``json.loads``).

Both are ``rsimhash._records.Source``: ``engine="core"`` (the default,
``_rsimhash.JsonLines``) and ``engine="python"``. On generated corpora with
every JSON feature a text or id field can carry, both must give the same
records (line, id, text, fingerprint), write back the same bytes, report the
same bad lines with the same messages, and stop at the same first error
without ``--skip-bad-lines``. Also: gzip and zstd, cut-short streams,
block sizes down to a few bytes, and the numpy texts the core hands over.
"""

from __future__ import annotations

import gzip
import io
import json
import os
import random
import sys

import numpy as np
import pytest

rsimhash = pytest.importorskip("rsimhash")
hypothesis = pytest.importorskip("hypothesis")
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st

from rsimhash._records import RecordError, Source  # noqa: E402
from rsimhash.cli.errors import BadLines  # noqa: E402
from rsimhash.cli.pipeline import fingerprints_of  # noqa: E402

SHINGLING = ("words", None)


class Collect(BadLines):
    """Skips bad lines, keeping their messages."""

    def __init__(self) -> None:
        super().__init__(True, quiet=True)
        self.messages: list = []

    def __call__(self, error: RecordError) -> None:
        super().__call__(error)
        self.messages.append(str(error))


def texts_of(chunk):
    texts = chunk.texts
    return texts if isinstance(texts, list) else texts.to_pylist()


def read(path, engine, *, skip=True, chunk_bytes=1 << 20, **options):
    """Everything a reader gives: records, bad-line messages, bytes written back."""
    bad = Collect() if skip else BadLines(False)
    records, written = [], []
    with Source(path, "json", engine=engine, shingling=SHINGLING, bad=bad, chunk_bytes=chunk_bytes, **options) as source:
        for chunk in source.chunks():
            fps = fingerprints_of(chunk, *SHINGLING, None).tolist()
            lines = np.asarray(chunk.lines).tolist()
            records += list(zip(lines, chunk.ids, texts_of(chunk), fps))
            written.append(chunk.write_lines(np.ones(len(chunk), dtype=bool)))
        nbytes = source.nbytes
    return dict(records=records, bad=bad.messages if skip else [], written=b"".join(written), nbytes=nbytes)


def first_error(path, engine, **options):
    try:
        read(path, engine, skip=False, **options)
    except RecordError as e:
        return str(e)
    return None


def assert_same(path, **options):
    core = read(path, "core", **options)
    ref = read(path, "python", **options)
    assert core == ref
    assert first_error(path, "core", **options) == first_error(path, "python", **options)
    return core


# -- generated lines ---------------------------------------------------------------------


def escaped(text: str, rng: random.Random) -> str:
    """A JSON string literal of ``text``, escaped in one of several ways."""
    how = rng.random()
    if how < 0.3:
        return json.dumps(text, ensure_ascii=True)
    if how < 0.6:
        return json.dumps(text, ensure_ascii=False)
    # Every character as a \\u escape (astral ones as surrogate pairs).
    out = []
    for ch in text:
        code = ord(ch)
        if code > 0xFFFF:
            code -= 0x10000
            out.append("\\u%04x\\u%04x" % (0xD800 + (code >> 10), 0xDC00 + (code & 0x3FF)))
        else:
            out.append("\\u%04X" % code if rng.random() < 0.5 else "\\u%04x" % code)
    return '"' + "".join(out) + '"'


TEXTS = st.one_of(
    st.text(max_size=40),
    st.text(alphabet=st.characters(codec="utf-8"), max_size=40),
    st.sampled_from(
        [
            "",
            " ",
            "a b c d e",
            "Tab\there",
            "line\nbreak",
            "nul\x00byte",
            "caf\u00e9 \U0001f600",
            "\u2028\u2029",
            'quote"back\\slash',
            "\ud800",
            "a\udfffb",
        ]
    ),
)

IDS = st.one_of(
    st.integers(-(2**63), 2**64 - 1),
    st.integers(-(10**30), 10**30),
    st.text(max_size=12),
    st.sampled_from(
        ["-0", "1.0", "1e3", "true", "null", "[1]", '{"a": 1}', '"a\\tb"', '"\\u00e9"', "NaN", "-Infinity", "MISSING", "0", "007"]
    ),
)

OTHERS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=False),
    st.text(max_size=10),
    st.lists(st.integers(), max_size=3),
    st.dictionaries(st.text(max_size=3), st.integers(), max_size=3),
)


@st.composite
def lines(draw):
    """One line of a JSON-lines file, with its line end."""
    rng = random.Random(draw(st.integers(0, 2**32)))
    kind = draw(
        st.sampled_from(
            ["record"] * 8 + ["blank", "broken", "array", "bad utf-8", "bom", "nan", "long int", "control", "nested text"]
        )
    )
    end = draw(st.sampled_from(["\n", "\r\n", " \n"]))
    if kind == "blank":
        return draw(st.sampled_from(["", " ", "\t", "\r", "\x0b", "\x0c "])) + "\n"
    if kind == "broken":
        return (
            draw(
                st.sampled_from(
                    [
                        '{"text": "a"',
                        '{"text": "a",}',
                        "{'text': 'a'}",
                        '{"text": "a"} x',
                        "nul",
                        '{"text": "a\\x"}',
                        '{"text": "\\u12"}',
                        "{",
                    ]
                )
            )
            + end
        )
    if kind == "array":
        return '["text", "a"]' + end
    fields = []
    text = draw(TEXTS)
    text_repr = "MISSING" if draw(st.integers(0, 20)) == 0 else escaped(text, rng)
    if draw(st.integers(0, 15)) == 0:
        text_repr = draw(st.sampled_from(["null", "5", '["a"]', '{"text": "x"}']))
    if kind == "nested text":
        fields.append('"meta": {"text": %s}' % escaped(text, rng))
    if text_repr != "MISSING":
        fields.append('"text": ' + text_repr)
    rid = draw(IDS)
    if isinstance(rid, int):
        rid_repr = str(rid)
    elif rid in (
        "-0",
        "1.0",
        "1e3",
        "true",
        "null",
        "[1]",
        '{"a": 1}',
        '"a\\tb"',
        '"\\u00e9"',
        "NaN",
        "-Infinity",
        "MISSING",
        "0",
        "007",
    ):
        rid_repr = rid
    else:
        rid_repr = escaped(rid, rng)
    if rid_repr != "MISSING":
        fields.append('"id": ' + rid_repr)
    for _ in range(draw(st.integers(0, 3))):
        fields.append(json.dumps(draw(st.text(max_size=4))) + ": " + json.dumps(draw(OTHERS)))
    if draw(st.integers(0, 6)) == 0 and fields:  # a duplicate key: the last one wins
        fields.append(rng.choice(fields))
    rng.shuffle(fields)
    if kind == "nan":
        fields.append('"score": NaN')
    if kind == "long int":
        fields.append('"n": ' + "7" * draw(st.sampled_from([4300, 4301])))
    space = draw(st.sampled_from(["", " ", "  \t"]))
    line = "{" + space + ("," + space).join(fields) + space + "}"
    if kind == "control":
        line = line.replace("a", "\x01", 1)
    if kind == "bom":
        line = "\ufeff" + line
    data = line + end
    if kind == "bad utf-8":
        raw = data.encode("utf-8", "surrogatepass")
        cut = draw(st.integers(0, max(0, len(raw) - 2)))
        return raw[:cut] + draw(st.sampled_from([b"\xff", b"\xc3", b"\xed\xa0\x80", b"\xe2\x82"])) + raw[cut:]
    return data


def as_bytes(line):
    return line if isinstance(line, bytes) else line.encode("utf-8", "surrogatepass")


@settings(max_examples=150, deadline=None)
@given(
    body=st.lists(lines(), max_size=40),
    final_newline=st.booleans(),
    chunk_bytes=st.sampled_from([16, 200, 4096, 1 << 20]),
    need_ids=st.booleans(),
    id_given=st.booleans(),
)
def test_core_reads_like_the_reference(tmp_path_factory, body, final_newline, chunk_bytes, need_ids, id_given):
    data = b"".join(as_bytes(line) for line in body)
    if not final_newline and data.endswith(b"\n"):
        data = data[:-1]
    path = tmp_path_factory.mktemp("records") / "in.jsonl"
    path.write_bytes(data)
    assert_same(str(path), chunk_bytes=chunk_bytes, need_ids=need_ids, id_column="id" if id_given else None)


@settings(max_examples=30, deadline=None)
@given(body=st.lists(lines(), min_size=1, max_size=40))
def test_other_field_names(tmp_path_factory, body):
    data = b"".join(as_bytes(line) for line in body).replace(b'"text"', b'"body"').replace(b'"id"', b'"k\\u00e9y"')
    path = tmp_path_factory.mktemp("records") / "in.jsonl"
    path.write_bytes(data)
    assert_same(str(path), text_column="body", id_column="k\u00e9y")


def corpus(n, seed=3):
    rng = random.Random(seed)
    words = "the of and a to in is it that was for on are with as be at one have this".split()
    out = []
    for i in range(n):
        text = " ".join(rng.choice(words) for _ in range(rng.randint(0, 120)))
        out.append(json.dumps({"id": f"d{i}", "text": text, "n": i}) + ("\r\n" if i % 5 == 0 else "\n"))
        if i % 17 == 0:
            out.append("\n")
    return "".join(out).encode()


def test_long_lines_and_small_blocks(tmp_path):
    data = corpus(50) + (json.dumps({"id": 1, "text": "x " * 300_000}) + "\n").encode() + corpus(20, seed=4)
    path = tmp_path / "in.jsonl"
    path.write_bytes(data)
    for chunk_bytes in (1, 7, 1000, 1 << 20):
        got = assert_same(str(path), chunk_bytes=chunk_bytes)
        assert got["written"] == b"".join(line for line in data.splitlines(keepends=True) if line.strip())


def test_a_long_line_costs_what_its_bytes_cost(tmp_path):
    """The reference reader holds a line longer than the block in pieces:
    joining and searching everything held on every block made a line's cost
    quadratic in its length over the block size (a 600 KB line read a byte at
    a time took a minute). Eight times the line, about eight times the time;
    a quadratic reader takes sixty-four. A complexity guard, not a speed
    target: the bound (24 x) leaves a shared machine's noise three times the
    room, and each size is timed at its best of three runs."""
    import time

    def cost(n):
        path = tmp_path / ("%d.jsonl" % n)
        path.write_bytes((json.dumps({"id": 1, "text": "x " * n}) + "\n").encode() * 2)
        best = float("inf")
        for _ in range(3):
            start = time.perf_counter()
            got = read(str(path), "python", chunk_bytes=16)
            best = min(best, time.perf_counter() - start)
            assert len(got["records"]) == 2
        return best

    small, large = cost(25_000), cost(200_000)
    assert large < 24 * small, "a line 8 x longer took %.1f x the time (%.3f s, %.3f s)" % (large / small, small, large)


def compressors():
    out = [("gzip", gzip.compress)]
    try:
        import zstandard

        out.append(("zstd", lambda data: zstandard.ZstdCompressor().compress(data)))
    except ImportError:
        pass
    return out


@pytest.mark.parametrize("name,compress", compressors())
def test_compressed_inputs(tmp_path, name, compress):
    data = corpus(3000)
    plain = tmp_path / "in.jsonl"
    plain.write_bytes(data)
    packed = tmp_path / "in.jsonl.x"  # recognised by its first bytes, not its name
    half = len(data) // 2
    packed.write_bytes(compress(data[:half]) + compress(data[half:]))  # members/frames one after another
    expected = read(str(plain), "python")
    for engine in ("core", "python"):
        got = read(str(packed), engine, chunk_bytes=4096)
        assert got == expected


@pytest.mark.parametrize("name,compress", compressors())
def test_cut_short_streams(tmp_path, name, compress):
    data = corpus(20_000)
    packed = compress(data)
    path = tmp_path / "in.jsonl.x"
    path.write_bytes(packed[: len(packed) * 2 // 3])
    nonblank = b"".join(line for line in data.splitlines(keepends=True) if line.strip())
    core = read(str(path), "core", chunk_bytes=1 << 16)
    ref = read(str(path), "python", chunk_bytes=1 << 16)
    # One bad line, naming where the stream stops; every line before it read whole.
    for got in (core, ref):
        assert len(got["bad"]) == 1
        assert f"the {name} stream cannot be read past this line: it is cut short or damaged" in got["bad"][0]
        line = int(got["bad"][0].split(":")[1])
        assert got["records"] and got["records"][-1][0] < line
        assert nonblank.startswith(got["written"])
    # The two readers may stop a few lines apart (their decompressors give
    # out at different points of the last block), never with different records.
    n = min(len(core["records"]), len(ref["records"]))
    assert core["records"][:n] == ref["records"][:n]
    for engine in ("core", "python"):
        error = first_error(str(path), engine)
        assert error is not None and "cut short or damaged" in error


def test_texts_cross_as_arrow_buffers(tmp_path):
    path = tmp_path / "in.jsonl"
    path.write_bytes(b'{"text": "a\\u00e9b"}\n\n{"text": "plain"}\n{"text": "\\ud800x"}\n')
    with Source(str(path), "json", need_ids=False) as source:
        (chunk,) = list(source.chunks())
    # The lone surrogate came through json.loads, so the texts are a list here.
    assert chunk.texts == ["a\u00e9b", "plain", "\ud800x"]
    path.write_bytes(b'{"text": "a\\u00e9b"}\n\n{"text": "plain"}\n')
    with Source(str(path), "json", need_ids=False) as source:
        (chunk,) = list(source.chunks())
    texts = chunk.texts
    assert type(texts).__name__ == "ArrowBuffers"
    assert texts.offsets.dtype == np.int64 and texts.data.dtype == np.uint8
    assert texts.to_pylist() == ["a\u00e9b", "plain"]
    assert chunk.lines.tolist() == [1, 3]


def test_fingerprints_made_while_parsing_are_the_api_s(tmp_path):
    data = corpus(500)
    path = tmp_path / "in.jsonl"
    path.write_bytes(data)
    texts = [json.loads(line)["text"] for line in data.splitlines() if line.strip()]
    for mode, width in (("words", None), ("words", 1), ("chars", None), ("chars", 3)):
        with Source(str(path), "json", shingling=(mode, width)) as source:
            fps = np.concatenate([c.hashes for c in source.chunks()])
        assert np.array_equal(fps, rsimhash.fingerprints(texts, mode=mode, width=width))


def test_a_closed_reader_stops(tmp_path):
    path = tmp_path / "in.jsonl"
    path.write_bytes(corpus(2000))
    source = Source(str(path), "json", chunk_bytes=1000)
    chunks = source.chunks()
    next(chunks)
    source.close()
    assert len(list(chunks)) <= 3  # what was read ahead, then nothing
    with pytest.raises(ValueError, match="engine"):
        Source(str(path), "json", engine="rust")


@pytest.mark.skipif(os.name != "posix", reason="the core writes to file descriptors on POSIX only")
def test_a_chunk_writes_to_a_descriptor_and_asks_for_its_writeback(tmp_path):
    """``write_to`` and ``start_writeback`` take an open descriptor; a
    negative number is refused, a closed one is the OS's error."""
    data = corpus(50)
    path = tmp_path / "in.jsonl"
    path.write_bytes(data)
    with Source(str(path), "json") as source:
        chunk = next(source.chunks())
    core, every = chunk.core, np.asarray(chunk.entries, dtype=np.int64)
    with open(tmp_path / "out.jsonl", "wb") as out:
        written = core.write_to(out.fileno(), every)
        core.start_writeback(out.fileno(), 0, written)
        for bad in (-1, -7):
            with pytest.raises(ValueError, match="file descriptor"):
                core.write_to(bad, every)
            with pytest.raises(ValueError, match="file descriptor"):
                core.start_writeback(bad, 0, written)
    got = (tmp_path / "out.jsonl").read_bytes()
    assert got == core.write(every) and len(got) == written > 0
    assert set(got.splitlines()) <= set(data.splitlines())
    closed = os.open(tmp_path / "closed", os.O_CREAT | os.O_WRONLY)
    os.close(closed)
    with pytest.raises(OSError):
        core.start_writeback(closed, 0, 10)


@pytest.mark.skipif(os.name != "posix", reason="stdin is read by the core on POSIX only")
def test_stdin_through_the_core(tmp_path):
    import subprocess

    data = corpus(300)
    out = tmp_path / "kept.jsonl"
    proc = subprocess.run(
        [sys.executable, "-m", "rsimhash.cli", "dedup", "-i", "-", "-o", str(out), "--quiet"], input=data, capture_output=True
    )
    assert proc.returncode == 0, proc.stderr
    kept = out.read_bytes()
    assert kept and all(line in data for line in io.BytesIO(kept))
