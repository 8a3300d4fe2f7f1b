use std::fs;
use std::path::{Path, PathBuf};

use proptest::prelude::*;

use super::*;

fn tag(name: &str) -> Tag {
    let mut t = [0; 8];
    t[..name.len()].copy_from_slice(name.as_bytes());
    t
}

/// Bytes that differ from position to position and from part to part.
fn data(len: usize, seed: u8) -> Vec<u8> {
    (0..len).map(|i| (i as u8).wrapping_mul(31) ^ seed.wrapping_mul(101) ^ (i >> 8) as u8).collect()
}

fn save(dir: &Path, sections: &[(Tag, Vec<u8>)]) -> PathBuf {
    let path = dir.join("index.rsh");
    let views: Vec<(Tag, &[u8])> = sections.iter().map(|(t, d)| (*t, d.as_slice())).collect();
    write_atomic(&path, crate::SPEC_VERSION, &views).unwrap();
    path
}

/// The problem of a `BadFile`; panics on anything else.
fn problem(result: Result<Container>) -> String {
    match result {
        Err(Error::BadFile { problem, .. }) => problem,
        other => panic!("expected BadFile, got {other:?}"),
    }
}

fn open_bytes(dir: &Path, bytes: &[u8], mmap: bool) -> Result<Container> {
    let path = dir.join("patched.rsh");
    fs::write(&path, bytes).unwrap();
    Container::open(&path, mmap, crate::SPEC_VERSION)
}

fn put_u32(b: &mut [u8], at: usize, v: u32) {
    b[at..at + 4].copy_from_slice(&v.to_le_bytes());
}

fn put_u64(b: &mut [u8], at: usize, v: u64) {
    b[at..at + 8].copy_from_slice(&v.to_le_bytes());
}

/// Recomputes both header checksums, so that only the patched field is wrong.
fn fix_crcs(b: &mut [u8]) {
    let table_end = (HEADER_LEN + u32_at(b, AT_COUNT) as usize * ENTRY_LEN).min(b.len());
    put_u32(b, AT_TABLE_CRC, crc32c::crc32c(&b[HEADER_LEN..table_end]));
    put_u32(b, AT_HEADER_CRC, crc32c::crc32c(&b[..AT_HEADER_CRC]));
}

/// A file of a few hundred bytes with padding, an empty section and a repeated tag.
fn small_file(dir: &Path) -> Vec<u8> {
    let sections = [(tag("A"), data(10, 1)), (tag("BB"), data(100, 2)), (tag("C"), vec![]), (tag("A"), data(70, 3))];
    fs::read(save(dir, &sections)).unwrap()
}

#[test]
fn round_trip() {
    let dir = tempfile::tempdir().unwrap();
    let sizes = [0, 1, 63, 64, 65, 100_000];
    let mut cases: Vec<Vec<(Tag, Vec<u8>)>> = vec![vec![]];
    cases.extend(sizes.iter().map(|&n| vec![(tag("ONE"), data(n, 7))]));
    cases.push(sizes.iter().enumerate().map(|(i, &n)| (tag(&format!("S{i}")), data(n, i as u8))).collect());
    cases.push(vec![(tag("DUP"), data(8, 1)), (tag("12345678"), data(3, 2)), (tag("DUP"), data(16, 3))]);
    for sections in &cases {
        let path = save(dir.path(), sections);
        let file_len = fs::metadata(&path).unwrap().len();
        for mmap in [false, true] {
            let c = Container::open(&path, mmap, crate::SPEC_VERSION).unwrap();
            assert_eq!(c.is_mapped(), mmap);
            assert_eq!(c.path(), path);
            assert_eq!(c.tags().collect::<Vec<_>>(), sections.iter().map(|s| s.0).collect::<Vec<_>>());
            for (t, d) in sections {
                let all = c.sections(*t);
                let want: Vec<&Vec<u8>> = sections.iter().filter(|s| s.0 == *t).map(|s| &s.1).collect();
                assert_eq!(all.iter().map(|b| b.as_slice()).collect::<Vec<_>>(), want);
                assert_eq!(c.section(*t).unwrap().as_slice(), want[0].as_slice());
                let b = &all[want.iter().position(|w| *w == d).unwrap()];
                assert_eq!(b.len(), d.len());
                assert_eq!(b.as_ptr() as usize % 8, 0, "sections are 8-byte aligned in memory");
                if d.len() % 8 == 0 {
                    let words: Vec<u64> = d.chunks(8).map(|w| u64::from_le_bytes(w.try_into().unwrap())).collect();
                    assert_eq!(b.as_u64s().unwrap(), words);
                    let halves: Vec<u32> = d.chunks(4).map(|w| u32::from_le_bytes(w.try_into().unwrap())).collect();
                    assert_eq!(b.as_u32s().unwrap(), halves);
                }
            }
            let missing = c.section(tag("NOPE")).unwrap_err().to_string();
            assert!(missing.ends_with("it has no \"NOPE\" section"), "{missing}");
            assert!(c.sections(tag("NOPE")).is_empty());
        }
        let table_end = 64 + 32 * sections.len() as u64;
        let end = sections.iter().fold(table_end, |end, (_, d)| end.next_multiple_of(64) + d.len() as u64);
        assert_eq!(file_len, end, "the file ends where the last section ends");
    }
}

/// The bytes of a one-section file, field by field. The checksums come from
/// an independent bitwise CRC-32C (reflected polynomial 0x82f63b78), so this
/// pins both the layout and the checksum that docs/FORMAT.md promises.
#[test]
fn layout_is_pinned() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("pinned.rsh");
    write_atomic(&path, 1, &[(tag("T"), b"hi")]).unwrap();
    let mut want = b"\x89RSIMHX\n".to_vec();
    for field in [1u32, 1, 1, 0] {
        want.extend(field.to_le_bytes()); // format version, spec version, section count, flags
    }
    want.extend(130u64.to_le_bytes()); // file length
    want.extend([0; 24]);
    want.extend(0x5123_4ef3u32.to_le_bytes()); // crc32c of the table
    want.extend(0x028d_a303u32.to_le_bytes()); // crc32c of bytes 0..60
    want.extend(b"T\0\0\0\0\0\0\0");
    want.extend(128u64.to_le_bytes()); // offset: the table ends at 96, rounded up to 64
    want.extend(2u64.to_le_bytes());
    want.extend(0xf59d_d9c2u32.to_le_bytes()); // crc32c of "hi"
    want.extend([0; 4 + 32]); // reserved, padding
    want.extend(b"hi");
    assert_eq!(fs::read(&path).unwrap(), want);
}

#[test]
fn large_sections_are_checksummed_in_chunks() {
    let big = data(2 * CRC_CHUNK + 12_345, 9);
    let parts: Vec<&[u8]> = vec![&big, &big[..CRC_CHUNK], &[], &big[5..]];
    let want: Vec<u32> = parts.iter().map(|p| crc32c::crc32c(p)).collect();
    assert_eq!(checksums(&parts), want);

    let dir = tempfile::tempdir().unwrap();
    let mut bytes = fs::read(save(dir.path(), &[(tag("BIG"), big)])).unwrap();
    assert!(open_bytes(dir.path(), &bytes, true).is_ok());
    let at = 64 + 32 + CRC_CHUNK + 1_000;
    bytes[at] ^= 0x10;
    let p = problem(open_bytes(dir.path(), &bytes, true));
    assert!(p.starts_with("section \"BIG\" (bytes 128..") && p.ends_with("fails its checksum: the file is corrupt"), "{p}");
}

#[test]
fn every_flipped_bit_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let good = small_file(dir.path());
    assert!((300..600).contains(&good.len()), "{}", good.len());
    for at in 0..good.len() {
        for bit in 0..8 {
            let mut bytes = good.clone();
            bytes[at] ^= 1 << bit;
            let mmap = bit == 0;
            let p = problem(open_bytes(dir.path(), &bytes, mmap));
            assert!(!p.is_empty(), "byte {at} bit {bit}");
        }
    }
}

#[test]
fn every_truncation_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let good = small_file(dir.path());
    for len in 0..good.len() {
        let p = problem(open_bytes(dir.path(), &good[..len], len % 2 == 0));
        assert!(p.starts_with("truncated") || p == "empty file", "length {len}: {p}");
    }
    let p = problem(open_bytes(dir.path(), &good[..good.len() - 7], false));
    assert_eq!(p, format!("truncated: the header says {} bytes, the file has {}", good.len(), good.len() - 7));
    for extra in [1, 64] {
        let mut long = good.clone();
        long.extend(std::iter::repeat_n(0, extra));
        let p = problem(open_bytes(dir.path(), &long, false));
        assert_eq!(p, format!("{extra} trailing bytes after the {} bytes the header records", good.len()));
    }
}

#[test]
fn what_is_not_an_index_file() {
    let dir = tempfile::tempdir().unwrap();
    let zip = b"PK\x03\x04\x14\x00\x00\x00\x08\x00 and more";
    let p = problem(open_bytes(dir.path(), zip, false));
    assert_eq!(p, "not an rsimhash index file (it starts with 50 4b 03 04 14 00 00 00 ...)");
    assert_eq!(problem(open_bytes(dir.path(), b"", true)), "empty file");
    // A directory is an I/O error (IsADirectoryError in Python), not a bad file.
    match Container::open(dir.path(), false, 1) {
        Err(Error::Io { source, .. }) => assert_eq!(source.kind(), std::io::ErrorKind::IsADirectory),
        other => panic!("expected Io, got {other:?}"),
    }
    match Container::open(&dir.path().join("missing.rsh"), true, 1) {
        Err(Error::Io { source, action: "open", .. }) => assert_eq!(source.kind(), std::io::ErrorKind::NotFound),
        other => panic!("{other:?}"),
    }
    let message = Container::open(&dir.path().join("missing.rsh"), true, 1).unwrap_err().to_string();
    assert!(message.starts_with("could not open ") && message.contains("missing.rsh: "), "{message}");
}

#[test]
fn versions_are_checked_with_specific_messages() {
    let dir = tempfile::tempdir().unwrap();
    let good = small_file(dir.path());
    let patched = |at: usize, v: u32| {
        let mut b = good.clone();
        put_u32(&mut b, at, v);
        fix_crcs(&mut b);
        problem(open_bytes(dir.path(), &b, false))
    };
    assert_eq!(patched(AT_VERSION, 3), "written by a newer rsimhash (format version 3; this version reads 2): upgrade rsimhash");
    // Version 2 (an index keyed by strings) is read; its sections are the index's to check.
    assert!(open_bytes(
        dir.path(),
        &{
            let mut b = good.clone();
            put_u32(&mut b, AT_VERSION, 2);
            fix_crcs(&mut b);
            b
        },
        false
    )
    .is_ok());
    assert_eq!(patched(AT_VERSION, 0), "format version 0 does not exist: the file is corrupt");
    assert_eq!(patched(AT_SPEC, 2), "its fingerprints follow SPEC v2; this rsimhash computes v1");
    assert_eq!(patched(AT_FLAGS, 4), "unknown flags 0x4 (written by a newer rsimhash? upgrade rsimhash)");
    assert!(patched(40, 1).starts_with("reserved header bytes 32..56 are not zero"));

    // A file written for another SPEC, opened by a reader of that SPEC.
    let path = dir.path().join("spec2.rsh");
    write_atomic(&path, 2, &[(tag("X"), b"abc")]).unwrap();
    assert_eq!(problem(Container::open(&path, false, 1)), "its fingerprints follow SPEC v2; this rsimhash computes v1");
    assert_eq!(Container::open(&path, true, 2).unwrap().section(tag("X")).unwrap().as_slice(), b"abc");
}

#[test]
fn section_placement_is_checked() {
    let dir = tempfile::tempdir().unwrap();
    let good = small_file(dir.path());
    // Entry 1 ("BB") sits at 256..356 after "A" at 192..202.
    let entry = HEADER_LEN + ENTRY_LEN;
    let with = |field: usize, v: u64| {
        let mut b = good.clone();
        put_u64(&mut b, entry + field, v);
        fix_crcs(&mut b);
        problem(open_bytes(dir.path(), &b, false))
    };
    assert_eq!(with(8, 260), "section \"BB\" starts at byte 260, not a multiple of 64");
    assert_eq!(with(8, 192), "section \"BB\" starts at byte 192, before the end of what precedes it (202)");
    assert!(with(16, 200).starts_with("section \"BB\" (bytes 256..456) runs past the end of the file"));
    assert!(with(16, u64::MAX).contains("runs past the end"));
    // "BB" one byte shorter: its last byte becomes padding, and it is not zero.
    assert_eq!(with(16, 99), "the padding before section \"C\" (bytes 355..384) is not zero: the file is corrupt");
    let mut b = good.clone();
    put_u32(&mut b, AT_COUNT, u32::MAX);
    fix_crcs(&mut b);
    let p = problem(open_bytes(dir.path(), &b, false));
    assert!(p.starts_with("its section table (4294967295 entries, bytes 64..137438953504) runs past the end"), "{p}");
    let mut b = good.clone();
    b[entry..entry + 8].copy_from_slice(b"B\0B\0\0\0\0\0");
    fix_crcs(&mut b);
    assert_eq!(problem(open_bytes(dir.path(), &b, false)), "section 1 has the tag \"B\\x00B\", not 1 to 8 printable ASCII bytes");
}

#[test]
fn write_atomic_replaces_and_cleans_up() {
    let dir = tempfile::tempdir().unwrap();
    let path = save(dir.path(), &[(tag("OLD"), data(100, 1))]);
    let mapped = Container::open(&path, true, 1).unwrap();
    let old = mapped.section(tag("OLD")).unwrap();
    save(dir.path(), &[(tag("NEW"), data(5000, 2))]);
    // A reader that mapped the old file keeps seeing it.
    assert_eq!(old.as_slice(), data(100, 1));
    assert_eq!(mapped.sections(tag("OLD"))[0].as_slice(), data(100, 1));
    let reopened = Container::open(&path, true, 1).unwrap();
    assert_eq!(reopened.section(tag("NEW")).unwrap().as_slice(), data(5000, 2));
    assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 1, "no temporary file is left");

    // The target is a directory: refused before anything is written.
    let target = dir.path().join("sub");
    fs::create_dir(&target).unwrap();
    fs::write(target.join("keep"), b"x").unwrap();
    let err = write_atomic(&target, 1, &[(tag("A"), &data(1000, 3))]).unwrap_err();
    assert!(matches!(&err, Error::Io { source, .. } if source.kind() == std::io::ErrorKind::IsADirectory), "{err:?}");
    assert_eq!(fs::read(target.join("keep")).unwrap(), b"x");
    assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 2, "no temporary file is left");

    match write_atomic(&dir.path().join("no/such/dir/f"), 1, &[]) {
        Err(Error::Io { source, .. }) => assert_eq!(source.kind(), std::io::ErrorKind::NotFound),
        other => panic!("{other:?}"),
    }
    let bad_tag = write_atomic(&path, 1, &[(tag("a b"), b"")]).unwrap_err();
    assert!(matches!(bad_tag, Error::InvalidParameter { name: "section tag", .. }), "{bad_tag:?}");
    assert!(matches!(write_atomic(&path, 1, &[([0; 8], b"")]), Err(Error::InvalidParameter { .. })));
    assert_eq!(Container::open(&path, false, 1).unwrap().section(tag("NEW")).unwrap().as_slice(), data(5000, 2));
}

#[cfg(unix)]
#[test]
fn read_only_directory_leaves_the_old_file() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let path = save(dir.path(), &[(tag("OLD"), data(100, 1))]);
    fs::set_permissions(dir.path(), fs::Permissions::from_mode(0o555)).unwrap();
    // Root writes into read-only directories: nothing to test then.
    let privileged = fs::write(dir.path().join("probe"), b"").is_ok();
    let result = write_atomic(&path, 1, &[(tag("NEW"), b"new")]);
    fs::set_permissions(dir.path(), fs::Permissions::from_mode(0o755)).unwrap();
    if privileged {
        return;
    }
    match result {
        Err(Error::Io { source, action: "create the temporary file", .. }) => {
            assert_eq!(source.kind(), std::io::ErrorKind::PermissionDenied)
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(Container::open(&path, false, 1).unwrap().section(tag("OLD")).unwrap().as_slice(), data(100, 1));
    assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 1);
}

#[test]
fn bytes_views() {
    let b = Bytes::from_vec(data(100, 4));
    assert_eq!(b.as_slice(), data(100, 4));
    assert_eq!(b.as_u32s().unwrap().len(), 25);
    assert!(b.as_u64s().unwrap_err().to_string().contains("100 bytes are not a whole number of 8-byte values"));
    let s = b.slice(8..24).unwrap();
    assert_eq!(s.as_slice(), &data(100, 4)[8..24]);
    assert_eq!(s.as_u64s().unwrap().len(), 2);
    assert_eq!(s.slice(8..16).unwrap().as_slice(), &data(100, 4)[16..24]);
    let odd = b.slice(1..9).unwrap();
    let err = odd.as_u64s().unwrap_err().to_string();
    assert!(err.ends_with("bytes 1..9 cannot be read as u64 values: they do not start on a 8-byte boundary"), "{err}");
    let err = s.slice(10..17).unwrap_err().to_string();
    assert!(err.contains("bytes 10..17 of a 16-byte part (bytes 8..24 of the file) are out of range"), "{err}");
    #[allow(clippy::reversed_empty_ranges)]
    let reversed = s.slice(5..4);
    assert!(reversed.is_err());
    assert!(s.slice(16..16).unwrap().is_empty());
    let empty = Bytes::from_vec(Vec::new());
    assert_eq!(empty.as_u64s().unwrap(), &[] as &[u64]);
    assert_eq!(empty.len(), 0);
}

#[test]
fn containers_and_views_cross_threads() {
    fn shared<T: Send + Sync>() {}
    shared::<Container>();
    shared::<Bytes>();
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    /// Arbitrary bytes, with or without the magic in front, never load.
    #[test]
    fn random_bytes_are_refused(magic in any::<bool>(), tail in proptest::collection::vec(any::<u8>(), 0..300)) {
        let dir = tempfile::tempdir().unwrap();
        let mut bytes = if magic { MAGIC.to_vec() } else { vec![] };
        bytes.extend(tail);
        prop_assume!(!bytes.is_empty());
        let result = open_bytes(dir.path(), &bytes, false);
        prop_assert!(matches!(result, Err(Error::BadFile { .. })), "{:?}", result);
    }

    /// Any value in any table field, checksums fixed up, never panics and
    /// never yields a section outside the file.
    #[test]
    fn patched_tables_never_panic(
        entry in 0..4usize,
        field in prop_oneof![Just(8usize), Just(16)],
        value in prop_oneof![
            Just(0u64), Just(1), Just(63), Just(64), Just(256), Just(454), Just(u64::MAX),
            Just(u64::MAX - 63), Just(1 << 63), any::<u64>(), 0..1000u64
        ],
    ) {
        let dir = tempfile::tempdir().unwrap();
        let mut bytes = small_file(dir.path());
        put_u64(&mut bytes, HEADER_LEN + entry * ENTRY_LEN + field, value);
        fix_crcs(&mut bytes);
        match open_bytes(dir.path(), &bytes, true) {
            Ok(c) => {
                for t in c.tags().collect::<Vec<_>>() {
                    prop_assert!(c.sections(t).iter().all(|s| s.len() <= bytes.len()));
                }
            }
            Err(Error::BadFile { .. }) => {}
            Err(other) => prop_assert!(false, "{other:?}"),
        }
    }
}
