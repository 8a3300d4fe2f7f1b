"""Line blocks of a plain, gzip or zstd stream: the reference reader's input.

Compression is recognised by the first bytes, whatever the file is called.
Blocks hold whole lines of at most about ``chunk_bytes``; a line longer than
the record limit is read past, never held whole (a file of zeros or a dump
without line ends would otherwise be read into memory). A stream that stops
early (cut short or damaged) yields the lines read whole, then one bad line
saying so, as the core reader does.
"""

from __future__ import annotations

import gzip
from typing import Any, Iterator, List, Optional, Tuple

from .._optional import module
from .base import Reading
from .chunk import Chunk


class LineBlocks(Reading):
    """The reference reader's half of ``Source``: the stream and its blocks of lines."""

    # Set by ``Source``.
    _raw: Any
    _stream: Any
    _compression: str
    _failure: Optional[str]

    def _open_stream(self, raw: Any) -> None:
        """Recognises the compression of ``raw`` (an open binary file) and
        sets ``self._stream`` to the decompressed stream."""
        self._raw = raw
        if hasattr(raw, "peek"):
            head = raw.peek(4)[:4]
        else:
            head, error = _read_block(raw, 4)  # a pipe may give fewer at a time
            if error is not None:
                raise error
            raw = _Prefixed(head, raw)
        self._compression = "plain"
        if head[:2] == b"\x1f\x8b":
            self._compression = "gzip"
            self._stream = gzip.GzipFile(fileobj=raw, mode="rb")
        elif head == b"\x28\xb5\x2f\xfd":
            self._compression = "zstd"
            try:
                zstandard = module("zstandard")
            except ImportError:
                raise self._error(
                    None, "is zstd-compressed; reading it needs the zstandard package (pip install zstandard)"
                ) from None
            self._stream = _ZstdFrames(zstandard, raw)
        else:
            self._stream = raw

    def _blocks(self) -> Iterator[Tuple[Optional[bytes], bool]]:
        """Blocks of whole lines (each ending in b"\\n"), then the last line if
        it has no b"\\n" (flag False). ``None`` stands for one line longer
        than the record limit, which is read past, never held whole."""
        # The bytes after the last whole line, kept in pieces so that a line
        # longer than the block costs what its bytes cost: joining them and
        # searching the whole for b"\n" on every block was quadratic in the
        # line's length over the block size (a 600 KB line read a byte at a
        # time took a minute).
        carry: List[bytes] = []
        carry_len = 0
        carry_cut = -1  # the last b"\n" in the carry (-1: none)
        while True:
            data, error = _read_block(self._stream, self.chunk_bytes)
            if error is not None:
                # As the core reader does: the lines read whole, then the failure at the next line.
                data = b"".join(carry) + data
                cut = data.rfind(b"\n")
                if cut >= 0:
                    yield data[: cut + 1], True
                self._failure = _stopped(self._compression, error)
                return
            if not data:
                break
            cut = data.rfind(b"\n")
            cut = carry_len + cut if cut >= 0 else carry_cut  # in carry + data
            if carry_len + len(data) - (cut + 1) > self.max_record_bytes:
                if cut >= 0:
                    yield (b"".join(carry) + data)[: cut + 1], True
                yield None, True
                rest = self._skip_line()
                if rest is None:
                    return
                carry, carry_len, carry_cut = ([rest] if rest else []), len(rest), rest.rfind(b"\n")
                continue
            if cut < 0:
                carry.append(data)
                carry_len += len(data)
                continue
            if carry:
                data = b"".join(carry) + data
            if cut + 1 < len(data):
                rest = data[cut + 1 :]
                carry, carry_len, carry_cut = [rest], len(rest), -1
                data = data[: cut + 1]
            else:
                carry, carry_len, carry_cut = [], 0, -1
            yield data, True
        if carry_len:
            yield b"".join(carry), False

    def _skip_line(self) -> Optional[bytes]:
        """Reads past the rest of a line too long to hold; the bytes after
        its b"\\n", or None when the input ends (or fails) first."""
        while True:
            data, error = _read_block(self._stream, min(self.chunk_bytes, 8 << 20))
            if error is not None:
                self._failure = _stopped(self._compression, error)
                return None
            if not data:
                return None
            end = data.find(b"\n")
            if end >= 0:
                return data[end + 1 :]

    def _line_chunks(self) -> Iterator[Chunk]:
        parse = {"json": self._parse_json, "hash": self._parse_hash, "lines": self._parse_lines}[self.format]
        lineno = 0
        for block, complete in self._blocks():
            if block is None:
                lineno += 1
                self.bad(self._too_long(lineno))
                continue
            parts = block.split(b"\n")
            if complete:
                parts.pop()  # the empty piece after the final b"\n"
            self.nbytes += len(block)
            if any(len(part) > self.max_record_bytes for part in parts):
                for j, part in enumerate(parts):
                    if len(part) > self.max_record_bytes:
                        self.bad(self._too_long(lineno + j + 1))
                        parts[j] = b""  # a blank line: read as nothing
            chunk = parse(parts, lineno)
            chunk.nbytes = len(block)
            chunk.final_newline = complete
            lineno += len(parts)
            yield chunk
        if self._failure is not None:
            self.bad(self._error(lineno + 1, self._failure))


def _stopped(compression: str, error: object) -> str:
    """The bad line's message when an input stops early (both readers)."""
    what = "the file" if compression == "plain" else f"the {compression} stream"
    return f"{what} cannot be read past this line: it is cut short or damaged ({error})"


def _read_block(stream: Any, n: int) -> Tuple[bytes, Optional[BaseException]]:
    """``n`` bytes, fewer at the end of the input (a pipe gives a little at a
    time) or when an error stops the reading: then the error too."""
    parts: List[bytes] = []
    got = 0
    while got < n:
        try:
            more = stream.read(min(n - got, 1 << 16))
        except Exception as e:  # OSError, EOFError, zlib.error, zstandard.ZstdError, ...
            return b"".join(parts), e
        if not more:
            break
        parts.append(more)
        got += len(more)
    return b"".join(parts), None


class _ZstdFrames:
    """zstd frames one after another, read as one stream; a last frame cut
    short is an error (``zstandard``'s stream reader ends quietly there)."""

    def __init__(self, zstandard: Any, raw: Any):
        self.zstandard, self.raw = zstandard, raw
        self.frame: Any = None  # the frame being decompressed, if one is begun
        self.pending = b""

    def read(self, n: int) -> bytes:
        while len(self.pending) < n:
            data = self.raw.read(1 << 20)
            if not data:
                if self.frame is not None:
                    raise EOFError("incomplete frame")
                break
            while data:
                if self.frame is None:
                    self.frame = self.zstandard.ZstdDecompressor().decompressobj()
                self.pending += self.frame.decompress(data)
                data = b""
                if self.frame.eof:
                    data = self.frame.unused_data
                    self.frame = None
        out, self.pending = self.pending[:n], self.pending[n:]
        return out

    def close(self) -> None:
        self.raw.close()


class _Prefixed:
    """A stream whose first bytes were already read (to recognise compression)."""

    def __init__(self, head: bytes, raw: Any):
        self.head = head
        self.raw = raw

    def read(self, n: int = -1) -> bytes:
        if not self.head:
            return self.raw.read(n)
        if n is None or n < 0:
            head, self.head = self.head, b""
            return head + self.raw.read()
        head, self.head = self.head[:n], self.head[n:]
        return head

    def close(self) -> None:
        self.raw.close()
