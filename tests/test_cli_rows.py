"""The command line's rows made in the core (``Ids.rows``, ``text_rows``):
the same bytes as formatting each id's text in Python, for every kind of
piece the ids are held in (lists, packed by the core, line numbers), in
memory and spilled to the work directory."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rsimhash import _rsimhash
from rsimhash.cli.errors import UnencodableError, utf8
from rsimhash.cli.spill import Ids, Workspace

id_text = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\t\n\r"), max_size=5)
list_piece = st.lists(st.one_of(st.integers(-(2**63), 2**64 - 1), id_text), min_size=1, max_size=6)
packed_piece = st.lists(id_text, min_size=1, max_size=6).map(lambda ids: ("packed", ids))
line_piece = st.lists(st.integers(1, 2**63 - 1), min_size=1, max_size=6).map(lambda lines: ("lines", lines))


class _LineChunk:
    """A chunk whose ids are its line numbers."""

    def __init__(self, lines):
        self.lines = np.array(lines, dtype=np.int64)

    def line_ids(self):
        return self.lines.astype(np.uint64)


def _add(ids: Ids, piece) -> list:
    """Adds ``piece`` the way its kind comes in; returns its ids as text."""
    if isinstance(piece, tuple) and piece[0] == "packed":
        data = [t.encode() for t in piece[1]]
        offsets = np.cumsum([0] + [len(d) for d in data]).astype(np.uint64)
        ids.extend_chunk((b"".join(data), offsets))
        return list(piece[1])
    if isinstance(piece, tuple):
        ids.extend_chunk(_LineChunk(piece[1]))
        return [str(v) for v in piece[1]]
    ids.extend(piece)
    return [str(v) for v in piece]


@settings(max_examples=150, deadline=None)
@given(
    pieces=st.lists(st.one_of(list_piece, packed_piece, line_piece), min_size=1, max_size=5),
    spill=st.booleans(),
    picks=st.lists(st.tuples(st.integers(0, 10**6), st.integers(0, 10**6), st.integers(0, 2**64 - 1)), max_size=20),
)
def test_rows_are_the_texts_formatted(tmp_path_factory, pieces, spill, picks):
    with Workspace(str(tmp_path_factory.mktemp("work")), None) as workspace:
        ids = Ids(0 if spill else 10**6, workspace)
        texts = [t for piece in pieces for t in _add(ids, piece)]
        ids.finish()
        a = np.array([p[0] % len(texts) for p in picks], dtype=np.int64)
        b = np.array([p[1] % len(texts) for p in picks], dtype=np.int64)
        n = np.array([p[2] for p in picks], dtype=np.uint64)
        got = ids.rows([("id", a), ("number", n), ("id", b)])
        want = "".join(f"{x}\t{v}\t{y}\n" for x, v, y in zip(ids.text(a), n.tolist(), ids.text(b)))
        assert got == utf8(want)
        assert ids.text(a) == [texts[i] for i in a.tolist()]
        # Again, the lists now packed by the first call: the same rows and texts.
        assert ids.rows([("id", a), ("number", n), ("id", b)]) == got
        assert ids.text(a) == [texts[i] for i in a.tolist()]
        ids.close()


def test_a_list_of_ids_is_packed_once_for_every_later_block_of_rows():
    """Each chunk's removed records name kept ones of any earlier chunk: a
    piece held as a list is packed the first time its ids are written, not
    again for each block of rows (that cost its length each time)."""
    ids = Ids(10**6, None)
    for c in range(3):
        ids.extend([c * 1000 + i for i in range(1000)])
    first = ids.rows([("id", np.array([5, 2500], dtype=np.int64))])
    assert first == b"5\n2500\n"
    packed = ids.memory[0]
    assert isinstance(packed, tuple) and isinstance(ids.memory[1], list)  # only the pieces named
    assert ids.rows([("id", np.array([7, 999], dtype=np.int64))]) == b"7\n999\n"
    assert ids.memory[0] is packed
    assert ids.text(np.array([2999, 0, 1001])) == ["2999", "0", "1001"]


@pytest.mark.parametrize("spill", [False, True])
def test_an_id_utf8_cannot_hold_is_named_as_the_text_path_names_it(tmp_path, spill):
    with Workspace(str(tmp_path), None) as workspace:
        ids = Ids(0 if spill else 100, workspace)
        ids.extend(["ok", "bad\ud800"])
        ids.extend_chunk(_LineChunk([7]))
        ids.finish()
        at = np.array([2, 0, 1], dtype=np.int64)
        with pytest.raises(UnencodableError) as rows_error:
            ids.rows([("id", at)])
        with pytest.raises(UnencodableError) as text_error:
            utf8("".join(f"{t}\n" for t in ids.text(at)))
        assert str(rows_error.value) == str(text_error.value)
        assert "bad" in str(rows_error.value)
        assert ids.rows([("id", at[:2])]) == b"7\nok\n"
        ids.close()


def test_text_rows_lays_out_numbers_and_refuses_bad_columns():
    one, two = np.array([1, 2**64 - 1], dtype=np.uint64), np.array([3, 0], dtype=np.uint64)
    lines = _rsimhash.text_rows([], [], [("number", one), ("number", two)], begin="[", sep=", ", end="]\n")
    assert lines == b"[1, 3]\n[18446744073709551615, 0]\n"
    assert _rsimhash.text_rows([], [], []) == b""
    with pytest.raises(ValueError, match="differ in length"):
        _rsimhash.text_rows([], [], [("number", one), ("number", two[:1])])
    with pytest.raises(IndexError, match="past the last"):
        _rsimhash.text_rows([np.array([5], dtype=np.uint64)], [0], [("text", np.array([1], dtype=np.uint64))])
    with pytest.raises(ValueError, match="ascending"):
        _rsimhash.text_rows([np.array([5], dtype=np.uint64)], [], [("number", one)])
    with pytest.raises(ValueError, match='"text" or "number"'):
        _rsimhash.text_rows([], [], [("word", one)])


@pytest.mark.parametrize(
    "fmt, text",
    [
        ("hash", "id\thash\ndoc-1\t5\nbad line\ndoc-2\t7\n\ndoc-é\t9\n"),
        ("json", '{"id": "doc-1", "text": "a"}\nnot json\n{"id": 2, "text": "b"}\n\n{"id": "doc-é", "text": "c"}\n'),
    ],
)
def test_ids_of_a_chunk_with_lines_left_out_stay_packed(tmp_path, fmt, text):
    """A header, a bad line and a blank one are entries of the core's chunk
    but not records: the records' ids are still packed by the core (no list),
    and they are the records' own."""
    from rsimhash._records import Source

    path = tmp_path / f"in.{'tsv' if fmt == 'hash' else 'jsonl'}"
    path.write_text(text, encoding="utf-8")
    with Source(str(path), fmt, bad=lambda e: None, shingling=("words", 3)) as source:
        (chunk,) = list(source.chunks())
        packed = chunk.packed_ids()
        assert packed is not None
        blob, offsets = packed
        texts = [bytes(blob[a:b]).decode() for a, b in zip(offsets[:-1].tolist(), offsets[1:].tolist())]
        assert texts == [str(i) for i in chunk.ids] == ["doc-1", "2" if fmt == "json" else "doc-2", "doc-é"]
