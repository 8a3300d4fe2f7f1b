"""Index files that cannot be used raise typed errors: ``IndexFormatError``,
``IndexVersionError`` and ``IndexChecksumError`` (and ``IndexChangedError``
for a mapped file changed in place), all ``IndexFileError`` and so
``ValueError``, carrying the path and, where one value differs, what was
expected and what was found."""

from __future__ import annotations

import os
import sys

import numpy as np
import pytest

import rsimhash

sys.path.insert(0, os.path.dirname(__file__))
import indexfile as fmt  # noqa: E402


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    index = rsimhash.Index(3, block_bytes=64)
    index.add(np.random.default_rng(5).integers(0, 2**64, size=3000, dtype=np.uint64))
    path = tmp_path_factory.mktemp("errors") / "ok.rsh"
    index.save(path)
    return path.read_bytes()


def load_error(tmp_path, data: bytes, kind: type) -> rsimhash.IndexFileError:
    path = tmp_path / "bad.rsh"
    path.write_bytes(data)
    for mmap in (True, False):
        with pytest.raises(kind) as info:
            rsimhash.Index.load(path, mmap=mmap)
        assert type(info.value) is kind, type(info.value)
        assert isinstance(info.value, rsimhash.IndexFileError) and isinstance(info.value, ValueError)
        assert info.value.path == str(path)
        assert str(info.value).startswith(f"{path} is not a usable rsimhash index file: ")
    return info.value


def test_the_classes_are_value_errors():
    for cls in (rsimhash.IndexFormatError, rsimhash.IndexVersionError, rsimhash.IndexChecksumError, rsimhash.IndexChangedError):
        assert issubclass(cls, rsimhash.IndexFileError) and issubclass(cls, ValueError)
        assert cls.__module__ == "rsimhash"


def test_not_an_index_file_is_a_format_error(tmp_path, saved):
    e = load_error(tmp_path, b"id\thash\n1\t2\n", rsimhash.IndexFormatError)
    assert "not an rsimhash index file" in str(e) and e.expected is None and e.found is None
    e = load_error(tmp_path, saved[: len(saved) // 2], rsimhash.IndexFormatError)
    assert "truncated" in str(e)


@pytest.mark.parametrize("version", [3, 2**32 - 1])
def test_a_newer_format_is_a_version_error(tmp_path, saved, version):
    e = load_error(tmp_path, fmt.patch_header(saved, format_version=version), rsimhash.IndexVersionError)
    assert (e.expected, e.found) == ("format version at most 2", f"format version {version}")
    assert "upgrade rsimhash" in str(e)


def test_another_spec_is_a_version_error(tmp_path, saved):
    e = load_error(tmp_path, fmt.patch_header(saved, spec_version=2), rsimhash.IndexVersionError)
    assert (e.expected, e.found) == ("SPEC v1", "SPEC v2")


def test_damage_is_a_checksum_error(tmp_path, saved):
    # a stale header checksum: damage, not another version
    e = load_error(tmp_path, fmt.patch_header(saved, fix_crc=False, spec_version=2), rsimhash.IndexChecksumError)
    assert e.expected != e.found and e.expected.startswith("crc 0x") and e.found.startswith("crc 0x")
    last = fmt.sections(saved)[-1]
    e = load_error(tmp_path, fmt.flip_bit(saved, last.offset + last.length // 2), rsimhash.IndexChecksumError)
    assert f'section "{last.tag}"' in str(e) or last.tag in str(e)
    assert e.expected.startswith("crc 0x") and e.expected != e.found


def test_a_mapped_file_changed_in_place_is_a_changed_error(tmp_path, saved):
    path = tmp_path / "live.rsh"
    path.write_bytes(saved)
    index = rsimhash.Index.load(path, mmap=True)
    last = fmt.sections(saved)[-1]
    with open(path, "r+b") as f:  # another program writes into the file
        f.seek(last.offset + last.length // 2)
        f.write(bytes([saved[last.offset + last.length // 2] ^ 0xFF]))
    with pytest.raises(rsimhash.IndexChangedError) as info:
        index.verify()
    assert info.value.path == str(path) and "changed or damaged while in use" in str(info.value)
