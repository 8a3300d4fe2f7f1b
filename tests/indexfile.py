"""Index files byte by byte, for tests/test_index_files.py and the child
processes it starts: a pure-Python CRC-32C, a parser of the container layout
(header, section table, sections), patching of single fields with the
checksums made valid again, and the writer loop of the crash and concurrency
tests with a signature that tells two saved versions apart.

The layout parsed here is the one documented in src/container.rs, written out
independently so that the tests check the file against the document, not the
reader against itself:

    header, 64 bytes (little-endian)
       0  8  magic b"\\x89RSIMHX\\n"
       8  4  u32 format version (1)
      12  4  u32 SPEC version (1)
      16  4  u32 section count n
      20  4  u32 flags (0)
      24  8  u64 file length
      32 24  zero
      56  4  u32 crc32c of the section table
      60  4  u32 crc32c of bytes 0..60
    section table: n entries of 32 bytes from byte 64
      tag 8 bytes (ASCII, zero padded), u64 offset, u64 length, u32 crc32c, u32 zero
    sections at multiples of 64, zero padding between, the file ends where the
    last one ends.
"""

from __future__ import annotations

import hashlib
import json
import struct
import sys
from dataclasses import dataclass

import numpy as np

MAGIC = b"\x89RSIMHX\n"
HEADER_LEN = 64
ENTRY_LEN = 32
ALIGN = 64
U64_MAX = (1 << 64) - 1

# Header fields: name -> (offset, struct format).
FIELDS = {
    "format_version": (8, "<I"),
    "spec_version": (12, "<I"),
    "count": (16, "<I"),
    "flags": (20, "<I"),
    "file_len": (24, "<Q"),
    "table_crc": (56, "<I"),
    "header_crc": (60, "<I"),
}


# ---------------------------------------------------------------------------
# CRC-32C (Castagnoli): reflected polynomial 0x82F63B78, init and xor-out ~0
# ---------------------------------------------------------------------------
def _crc_table() -> list:
    table = []
    for byte in range(256):
        c = byte
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        table.append(c)
    return table


_CRC_TABLE = _crc_table()


def crc32c(data: bytes) -> int:
    crc = 0xFFFFFFFF
    table = _CRC_TABLE
    for b in data:
        crc = table[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


assert crc32c(b"123456789") == 0xE3069283  # the standard check value


# ---------------------------------------------------------------------------
# Parsing and patching
# ---------------------------------------------------------------------------
@dataclass(frozen=True)
class Section:
    index: int
    tag: str
    offset: int
    length: int
    crc: int
    entry_at: int  # byte position of its section-table entry

    @property
    def end(self) -> int:
        return self.offset + self.length


def header_field(data: bytes, name: str) -> int:
    at, fmt = FIELDS[name]
    return struct.unpack_from(fmt, data, at)[0]


def sections(data: bytes) -> list:
    """The section table of a well-formed file, as ``Section``s in file order."""
    n = header_field(data, "count")
    out = []
    for i in range(n):
        at = HEADER_LEN + i * ENTRY_LEN
        tag, offset, length, crc, zero = struct.unpack_from("<8sQQII", data, at)
        out.append(Section(i, tag.rstrip(b"\0").decode("ascii"), offset, length, crc, at))
    return out


def table_end(data: bytes) -> int:
    return HEADER_LEN + header_field(data, "count") * ENTRY_LEN


def with_header_crc(data: bytes) -> bytes:
    """``data`` with the header checksum recomputed."""
    b = bytearray(data)
    struct.pack_into("<I", b, 60, crc32c(bytes(b[:60])))
    return bytes(b)


def patch_header(data: bytes, fix_crc: bool = True, **fields) -> bytes:
    """``data`` with header fields set (see ``FIELDS``), checksum recomputed."""
    b = bytearray(data)
    for name, value in fields.items():
        at, fmt = FIELDS[name]
        struct.pack_into(fmt, b, at, value)
    return with_header_crc(bytes(b)) if fix_crc else bytes(b)


def with_valid_checksums(data: bytes, only=None) -> bytes:
    """``data`` with the section checksums (every one, or that of section
    ``only``), the table checksum and the header checksum recomputed: what a
    writer would have produced for these bytes."""
    b = bytearray(data)
    for s in sections(data):
        if only is None or s.index == only:
            struct.pack_into("<I", b, s.entry_at + 24, crc32c(bytes(b[s.offset : s.end])))
    struct.pack_into("<I", b, 56, crc32c(bytes(b[HEADER_LEN : table_end(data)])))
    return with_header_crc(bytes(b))


def assemble(data: bytes, contents: list) -> bytes:
    """A whole file with ``data``'s header fields and the sections
    ``contents``, a list of ``(tag, bytes)``: laid out as a writer would,
    every offset, length and checksum made good."""
    n = len(contents)
    at = -(-(HEADER_LEN + n * ENTRY_LEN) // ALIGN) * ALIGN
    entries, body = bytearray(), bytearray()
    for tag, content in contents:
        body += bytes(-len(body) % ALIGN)
        entries += struct.pack("<8sQQII", tag.encode("ascii").ljust(8, b"\0"), at + len(body), len(content), 0, 0)
        body += content
    out = bytearray(data[:HEADER_LEN]) + entries + bytes(at - HEADER_LEN - len(entries)) + body
    struct.pack_into("<I", out, 16, n)
    struct.pack_into("<Q", out, 24, len(out))
    return with_valid_checksums(bytes(out))


def patch_entry_tag(data: bytes, section: Section, tag: str) -> bytes:
    """``data`` with the tag of one section-table entry replaced (checksums stale)."""
    b = bytearray(data)
    b[section.entry_at : section.entry_at + 8] = tag.encode("ascii").ljust(8, b"\0")
    return bytes(b)


def flip_bit(data: bytes, pos: int, bit: int = 0) -> bytes:
    b = bytearray(data)
    b[pos] ^= 1 << bit
    return bytes(b)


# ---------------------------------------------------------------------------
# Two versions of one file, and a signature telling them apart
# ---------------------------------------------------------------------------
def make_fps(seed: int, n: int) -> np.ndarray:
    """n fingerprints: random ones plus one-bit neighbours of a fifth of them,
    so that find_all and query have plenty of hits."""
    rng = np.random.default_rng(seed)
    m = n // 5
    base = rng.integers(0, U64_MAX, size=n - m, dtype=np.uint64, endpoint=True)
    near = base[:m] ^ (np.uint64(1) << rng.integers(0, 64, size=m).astype(np.uint64))
    return np.concatenate([base, near])


def probes(versions) -> np.ndarray:
    """Query points near items of every version, plus a few random ones."""
    parts = [make_fps(seed, n)[:300] ^ np.uint64(0b101) for seed, n in versions]
    parts.append(np.random.default_rng(12345).integers(0, U64_MAX, size=50, dtype=np.uint64, endpoint=True))
    return np.concatenate(parts)


def signature(idx, qs: np.ndarray, pairs: bool = True) -> list:
    """len, and digests of query_batch(qs) and (optionally) find_all()."""
    qi, ids, dist = idx.query_batch(qs)
    h = hashlib.sha1()
    for a in (qi, ids, dist):
        h.update(np.ascontiguousarray(a).tobytes())
    out = [len(idx), h.hexdigest(), int(len(qi))]
    if pairs:
        out.append(hashlib.sha1(np.ascontiguousarray(idx.find_all()).tobytes()).hexdigest())
    return out


def build(seed: int, n: int):
    import rsimhash

    idx = rsimhash.Index(3)
    idx.add(make_fps(seed, n))
    return idx


def writer_main(argv) -> None:
    """Child process: ``path seed:n seed:n``. Builds one index per version,
    saves each once, prints ``{"ready": [signatures]}`` and then saves them
    alternately over ``path`` until killed."""
    path = argv[0]
    versions = [tuple(int(x) for x in v.split(":")) for v in argv[1:]]
    qs = probes(versions)
    indexes = [build(seed, n) for seed, n in versions]
    for idx in indexes:
        idx.save(path)
    print(json.dumps({"ready": [signature(idx, qs) for idx in indexes]}), flush=True)
    while True:
        for idx in indexes:
            idx.save(path)


if __name__ == "__main__":  # pragma: no cover - run by the crash test
    writer_main(sys.argv[1:])
