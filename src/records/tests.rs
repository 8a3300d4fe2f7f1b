use std::io::Write;

use proptest::prelude::*;

use super::*;
use crate::fingerprint::{fingerprint, Mode};

fn options(block_bytes: usize) -> ReaderOptions {
    ReaderOptions {
        fields: Fields { text: "text".into(), id: Some("id".into()) },
        shingling: Some(Shingling::new(Mode::Words, None).unwrap()),
        threads: Some(2),
        block_bytes,
        hashes: None,
        max_line_bytes: input::MAX_LINE_BYTES,
        values_only: false,
    }
}

fn file_of(bytes: &[u8]) -> File {
    let mut f = tempfile::tempfile().unwrap();
    f.write_all(bytes).unwrap();
    std::io::Seek::rewind(&mut f).unwrap();
    f
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    e.write_all(bytes).unwrap();
    e.finish().unwrap()
}

fn zstd(bytes: &[u8]) -> Vec<u8> {
    zstd::encode_all(bytes, 1).unwrap()
}

/// Everything a reader gives: (line, status, fingerprint, id, the line as
/// written back), and the failure's line if it ended with one.
type Seen = (Vec<(u64, Status, u64, Option<Id<'static>>, Vec<u8>)>, Option<u64>);

fn read_all(bytes: &[u8], block_bytes: usize) -> Seen {
    let reader = JsonLinesReader::new(file_of(bytes), "test", options(block_bytes)).unwrap();
    let mut seen = Vec::new();
    let mut failed = None;
    for item in reader {
        match item.unwrap() {
            Item::Chunk(c) => {
                for (i, e) in c.entries.iter().enumerate() {
                    let mut out = Vec::new();
                    c.write_lines([i], &mut out);
                    let mut again = Vec::new();
                    c.write_to([i], &mut again).unwrap();
                    assert_eq!(out, again);
                    let id = c.id(i).map(Id::into_owned);
                    seen.push((e.line, e.status, c.fingerprints.as_ref().unwrap()[i], id, out));
                }
            }
            Item::Values { .. } => panic!("values without values_only"),
            Item::Failed { line, .. } => failed = Some(line),
        }
    }
    (seen, failed)
}

fn corpus(n: usize) -> Vec<u8> {
    let mut out = Vec::new();
    for i in 0..n {
        match i % 7 {
            0 => out.extend_from_slice(b"\n"),
            1 => out.extend_from_slice(format!("{{\"id\": \"d{i}\", \"text\": \"caf\\u00e9 number {i}\"}}\r\n").as_bytes()),
            2 => out.extend_from_slice(b"{\"text\": 5}\n"),
            _ => out.extend_from_slice(format!("{{\"text\": \"the doc {i} {}\", \"id\": {i}}}\n", "w ".repeat(i % 50)).as_bytes()),
        }
    }
    out
}

#[test]
fn records_lines_and_fingerprints() {
    let (seen, failed) = read_all(b"{\"id\":1,\"text\":\"a b c\"}\n\n  \n{\"text\":\"x\"}\n[1]", 1 << 20);
    assert_eq!(failed, None);
    let words = Shingling::new(Mode::Words, None).unwrap();
    assert_eq!(seen.len(), 3);
    assert_eq!(seen[0], (1, Status::Record, fingerprint("a b c", words), Some(Id::Int(1)), b"{\"id\":1,\"text\":\"a b c\"}\n".to_vec()));
    assert_eq!((seen[1].0, seen[1].1, seen[1].2), (4, Status::NoId, fingerprint("x", words)));
    // The last line has no newline, and is written back without one.
    assert_eq!((seen[2].0, seen[2].1, seen[2].4.as_slice()), (5, Status::Defer, &b"[1]"[..]));
}

#[test]
fn compressed_inputs_read_the_same() {
    let plain = corpus(3000);
    let expected = read_all(&plain, 1 << 20);
    assert_eq!(read_all(&gzip(&plain), 1 << 20), expected);
    assert_eq!(read_all(&zstd(&plain), 1 << 20), expected);
    // gzip members one after another, and zstd frames, as one stream.
    let (a, b) = plain.split_at(plain.len() / 2);
    assert_eq!(read_all(&[gzip(a), gzip(b)].concat(), 4096), expected);
    assert_eq!(read_all(&[zstd(a), zstd(b)].concat(), 4096), expected);
}

#[test]
fn truncated_streams_fail_at_the_line_they_stop() {
    // Big enough for zstd to have finished blocks before the cut.
    let plain = corpus(30_000);
    let total_lines = plain.iter().filter(|&&b| b == b'\n').count() as u64;
    for packed in [gzip(&plain), zstd(&plain)] {
        let cut = &packed[..packed.len() * 2 / 3];
        let (seen, failed) = read_all(cut, 8192);
        let line = failed.expect("a cut stream must fail, not end quietly");
        assert!(line > 1 && line < total_lines, "{line}");
        // Every line before it was read whole.
        assert!(seen.iter().all(|s| s.0 < line));
        assert_eq!(seen, read_all(&plain, 8192).0.into_iter().filter(|s| s.0 < line).collect::<Vec<_>>());
    }
}

#[test]
fn texts_are_decoded() {
    let bytes = b"{\"text\":\"a\\tb\"}\n{\"text\":\"plain\"}\n";
    let reader = JsonLinesReader::new(file_of(bytes), "t", options(1 << 20)).unwrap();
    let Some(Ok(Item::Chunk(c))) = reader.into_iter().next() else { panic!() };
    let (offsets, data) = c.texts(&[0, 1], &options(0).fields);
    assert_eq!(offsets, vec![0, 3, 8]);
    assert_eq!(data, b"a\tbplain");
}

#[test]
fn ids_are_held_where_the_line_has_them() {
    // A plain string id is a span of the block; an escaped one is decoded
    // and owned; numbers stay numbers; a record without one has none.
    let bytes =
        "{\"text\":\"a\",\"id\":\"doc-é\"}\n{\"text\":\"b\",\"id\":\"x\\u0041\"}\n{\"text\":\"c\",\"id\":-7}\n{\"text\":\"d\",\"id\":18446744073709551615}\n";
    let reader = JsonLinesReader::new(file_of(bytes.as_bytes()), "t", options(1 << 20)).unwrap();
    let Some(Ok(Item::Chunk(c))) = reader.into_iter().next() else { panic!() };
    let held = c.ids.as_ref().unwrap();
    assert!(matches!(held[0], chunk::HeldId::Span { .. }));
    assert!(matches!(held[1], chunk::HeldId::Owned(_)));
    assert_eq!(c.id(0), Some(Id::Str("doc-é".into())));
    assert_eq!(c.id(1), Some(Id::Str("xA".into())));
    assert_eq!(c.id(2), Some(Id::Int(-7)));
    assert_eq!(c.id(3), Some(Id::UInt(u64::MAX)));
    let chunk::PackedIds { text, offsets } = c.id_texts().unwrap();
    assert_eq!(text, "doc-éxA-718446744073709551615".as_bytes());
    assert_eq!(offsets, vec![0, 6, 8, 10, 30]);
    // Some entries, in the order asked.
    let chunk::PackedIds { text, offsets } = c.id_texts_of([2, 0].into_iter()).unwrap();
    assert_eq!(text, "-7doc-é".as_bytes());
    assert_eq!(offsets, vec![0, 2, 8]);
    assert_eq!(c.id_texts_of(std::iter::empty()).unwrap().offsets, vec![0]);
    // A record without an id: no packed texts (the caller takes the list).
    let reader = JsonLinesReader::new(file_of(b"{\"text\":\"a\"}\n"), "t", options(1 << 20)).unwrap();
    let Some(Ok(Item::Chunk(c))) = reader.into_iter().next() else { panic!() };
    assert_eq!(c.id(0), None);
    assert!(c.id_texts().is_none());
}

#[test]
fn a_string_from_another_buffer_is_owned() {
    let data = b"abc".to_vec();
    let inside = std::str::from_utf8(&data[1..3]).unwrap();
    assert_eq!(chunk::HeldId::of(Some(Id::Str(inside.into())), &data), chunk::HeldId::Span { start: 1, end: 3 });
    let other = String::from("bc");
    assert_eq!(chunk::HeldId::of(Some(Id::Str(other.as_str().into())), &data), chunk::HeldId::Owned("bc".into()));
    assert_eq!(chunk::HeldId::of(None, &data), chunk::HeldId::None);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Any block size gives the same records, and writing every entry back
    /// gives the input minus its blank lines.
    #[test]
    fn block_size_does_not_matter(n in 0usize..400, block in 1usize..3000, final_newline: bool) {
        let mut bytes = corpus(n);
        if !final_newline && bytes.last() == Some(&b'\n') {
            bytes.pop();
        }
        let whole = read_all(&bytes, 1 << 20);
        prop_assert_eq!(&read_all(&bytes, block), &whole);
        let written: Vec<u8> = whole.0.iter().flat_map(|s| s.4.clone()).collect();
        // All entries at once, in runs of adjacent lines, write the same bytes.
        let reader = JsonLinesReader::new(file_of(&bytes), "test", options(block)).unwrap();
        let mut runs = Vec::new();
        for item in reader {
            if let Item::Chunk(c) = item.unwrap() {
                let picked: Vec<usize> = (0..c.entries.len()).filter(|i| i % 3 != 1).collect();
                let mut a = Vec::new();
                c.write_lines(picked.iter().copied(), &mut a);
                let n = c.write_to(picked, &mut runs).unwrap();
                prop_assert_eq!(n as usize, a.len());
                prop_assert!(runs.ends_with(&a));
            }
        }
        let expected: Vec<u8> = bytes
            .split_inclusive(|&b| b == b'\n')
            .filter(|l| !l.iter().all(u8::is_ascii_whitespace))
            .flatten()
            .copied()
            .collect();
        prop_assert_eq!(written, expected);
    }
}

/// A fingerprint file through the reader: (line, status, hash, id) per entry.
fn read_hashes(bytes: &[u8], format: HashFormat, block_bytes: usize) -> Vec<(u64, Status, u64, Option<Id<'static>>)> {
    let options = ReaderOptions { hashes: Some(format), ..options(block_bytes) };
    let reader = JsonLinesReader::new(file_of(bytes), "test", options).unwrap();
    let mut seen = Vec::new();
    for item in reader {
        let Item::Chunk(c) = item.unwrap() else { panic!("failed") };
        for (i, e) in c.entries.iter().enumerate() {
            let id = c.id(i).map(Id::into_owned);
            seen.push((e.line, e.status, c.fingerprints.as_ref().unwrap()[i], id));
        }
    }
    seen
}

#[test]
fn decimal_lines() {
    let input = b"1\n\n 18446744073709551615 \r\n18446744073709551616\nx\n  \n007";
    for block in [1, 7, 1 << 20] {
        let seen = read_hashes(input, HashFormat::Lines, block);
        let got: Vec<(u64, Status, u64)> = seen.iter().map(|s| (s.0, s.1, s.2)).collect();
        assert_eq!(
            got,
            [(1, Status::Record, 1), (3, Status::Record, u64::MAX), (4, Status::Defer, 0), (5, Status::Defer, 0), (7, Status::Record, 7)],
            "{block}"
        );
    }
    // A header where none is expected is a line for the reference reader.
    assert_eq!(read_hashes(b"hash\n5\n", HashFormat::Lines, 1 << 20)[0].1, Status::Defer);
}

#[test]
fn hash_tsv() {
    let input = b"hash\tid\r\n5\ta\r\n\n6\tb\tc\nx\td\n7\t\xff\n8\t\n";
    for block in [1, 9, 1 << 20] {
        let format = HashFormat::Tsv { id: "id".into(), columns: None };
        let seen = read_hashes(input, format, block);
        assert_eq!(
            seen,
            [
                (1, Status::Header, 0, None),
                (2, Status::Record, 5, Some(Id::Str("a".into()))),
                (4, Status::Defer, 0, None),
                (5, Status::Defer, 0, None),
                (6, Status::Defer, 0, None),
                (7, Status::Record, 8, Some(Id::Str("".into()))),
            ],
            "{block}"
        );
    }
    // Without both columns in the header every line is left to the reference reader.
    let seen = read_hashes(b"a\tb\n1\t2\n", HashFormat::Tsv { id: "id".into(), columns: None }, 1 << 20);
    assert_eq!(seen.iter().map(|s| s.1).collect::<Vec<_>>(), [Status::Header, Status::Defer]);
}

proptest! {
    #[test]
    fn decimal_lines_as_python_reads_them(values in prop::collection::vec(prop_oneof![Just(0u64), Just(u64::MAX), any::<u64>()], 0..300), block in 1usize..200) {
        let text: String = values.iter().map(|v| format!("{v}\n")).collect();
        let seen = read_hashes(text.as_bytes(), HashFormat::Lines, block);
        let got: Vec<u64> = seen.iter().map(|s| s.2).collect();
        prop_assert_eq!(got, values.clone());
        prop_assert!(seen.iter().enumerate().all(|(i, s)| s.0 == i as u64 + 1 && s.1 == Status::Record));
    }

    /// Read with `values_only`, a lines file gives the values `read_hashes`
    /// gives its records, in order: plain blocks as values, a block with a
    /// bad line as a chunk holding it (at its line), the lines counted across both.
    #[test]
    fn values_only_as_chunks(lines in prop::collection::vec(prop_oneof![
            8 => any::<u64>().prop_map(|v| v.to_string()),
            1 => Just(String::new()),
            1 => Just(" 7 \r".to_string()),
            1 => Just("00000000000000000000000000042".to_string()),
            1 => Just("18446744073709551616".to_string()),
            1 => Just("184467440737095516150".to_string()),
            1 => Just("x".to_string())], 0..300), block in 1usize..400) {
        let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
        let want: Vec<(u64, Status, u64)> = read_hashes(text.as_bytes(), HashFormat::Lines, block).iter().map(|s| (s.0, s.1, s.2)).collect();
        let options = ReaderOptions { hashes: Some(HashFormat::Lines), values_only: true, ..options(block) };
        let reader = JsonLinesReader::new(file_of(text.as_bytes()), "test", options).unwrap();
        let (mut values, mut deferred, mut line) = (Vec::new(), Vec::new(), 1u64);
        for item in reader {
            match item.unwrap() {
                Item::Values { fingerprints, lines, .. } => {
                    values.extend(fingerprints);
                    line += lines;
                }
                Item::Chunk(c) => {
                    for (e, &f) in c.entries.iter().zip(c.fingerprints.as_ref().unwrap()) {
                        match e.status {
                            Status::Record => values.push(f),
                            _ => deferred.push(e.line),
                        }
                    }
                    line += c.lines;
                }
                Item::Failed { .. } => panic!("failed"),
            }
        }
        prop_assert_eq!(values, want.iter().filter(|w| w.1 == Status::Record).map(|w| w.2).collect::<Vec<_>>());
        prop_assert_eq!(deferred, want.iter().filter(|w| w.1 != Status::Record).map(|w| w.0).collect::<Vec<_>>());
        prop_assert_eq!(line, lines.len() as u64 + 1);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(32))]

    /// Kept lines written to a file on the pool land where one `writev`
    /// would put them, after what the file held, and leave its position at
    /// their end; a file opened to append takes them the same.
    #[test]
    fn writes_on_the_pool_are_the_lines_in_order(n in 0usize..300, block in 200usize..5000, keep_every in 1usize..5, append: bool) {
        let bytes = corpus(n);
        let mut want = b"a header\n".to_vec();
        let path = tempfile::NamedTempFile::new().unwrap();
        let mut out = std::fs::OpenOptions::new().write(true).append(append).open(path.path()).unwrap();
        out.write_all(&want).unwrap();
        let reader = JsonLinesReader::new(file_of(&bytes), "test", options(block)).unwrap();
        let pool = reader.pool();
        for item in reader {
            if let Item::Chunk(c) = item.unwrap() {
                let picked: Vec<usize> = (0..c.entries.len()).filter(|i| i % keep_every == 0).collect();
                let before = want.len();
                c.write_lines(picked.iter().copied(), &mut want);
                let n = c.write_to_file(picked, &out, Some(&pool)).unwrap();
                prop_assert_eq!(n as usize, want.len() - before);
            }
        }
        out.write_all(b"the end\n").unwrap();
        want.extend_from_slice(b"the end\n");
        drop(out);
        prop_assert_eq!(std::fs::read(path.path()).unwrap(), want);
    }
}

/// A block holding this panics while parsed ([`maybe_panic`]), or this
/// one while read ([`maybe_panic_reading`]): the planted bug of the test
/// below.
const PANIC_PARSING: &[u8] = b"planted-panic-parsing";
const PANIC_READING: &[u8] = b"planted-panic-reading";

pub(super) fn maybe_panic(data: &[u8]) {
    if memchr::memmem::find(data, PANIC_PARSING).is_some() {
        panic!("planted while parsing");
    }
}

pub(super) fn maybe_panic_reading(data: &[u8]) {
    if memchr::memmem::find(data, PANIC_READING).is_some() {
        panic!("planted while reading");
    }
}

/// A panic on either of the reader's threads ends the input with an error
/// naming it, never as if the input ended there (the chunks before it
/// came, the rest never would).
#[test]
fn a_panic_on_a_readers_thread_is_an_error_not_the_end() {
    for (marker, words) in [(PANIC_PARSING, "planted while parsing"), (PANIC_READING, "planted while reading")] {
        for values_only in [false, true] {
            let mut bytes = Vec::new();
            for i in 0..2000 {
                if i == 1500 {
                    bytes.extend_from_slice(marker);
                    bytes.push(b'\n');
                }
                bytes.extend_from_slice(format!("{}\n", i * 7919).as_bytes());
            }
            let opts = ReaderOptions { hashes: Some(HashFormat::Lines), values_only, ..options(4096) };
            let mut chunks = 0;
            let mut error = None;
            for item in JsonLinesReader::new(file_of(&bytes), "test", opts).unwrap() {
                match item {
                    Ok(_) => chunks += 1,
                    Err(e) => error = Some(e),
                }
            }
            assert!(chunks > 1, "the blocks before the panic came");
            match error {
                Some(crate::Error::Internal { what }) => assert_eq!(what, words),
                other => panic!("{words}: expected an internal error, got {other:?}"),
            }
        }
    }
}

#[test]
fn an_unwound_refusal_of_memory_is_out_of_memory() {
    let payload = std::panic::catch_unwind(|| crate::mem::out_of_memory(1 << 40, "a test")).unwrap_err();
    assert!(matches!(crate::Error::from_panic(payload), crate::Error::OutOfMemory { bytes, what: "a test" } if bytes == 1 << 40));
    let payload = std::panic::catch_unwind(|| panic!("{}", 7)).unwrap_err();
    assert!(matches!(crate::Error::from_panic(payload), crate::Error::Internal { what } if what == "7"));
}

/// The writeback tests read the count of waiting hints: one at a time.
#[cfg(target_os = "linux")]
static HINT_TESTS: Mutex<()> = Mutex::new(());

/// The writeback hint runs on the pool after the call returns, with a
/// descriptor of its own: the caller's file is closed at once here, and
/// the written (clean) pages still leave the page cache.
#[cfg(target_os = "linux")]
#[test]
fn a_writeback_hint_runs_after_the_caller_closed_its_file() {
    let _one = HINT_TESTS.lock().unwrap_or_else(|e| e.into_inner());
    let resident = |map: &memmap2::Mmap| {
        let pages = map.len().div_ceil(4096);
        let mut vec = vec![0u8; pages];
        // SAFETY: `map` is a live mapping of `map.len()` bytes; `vec` has a byte a page.
        assert_eq!(unsafe { libc::mincore(map.as_ptr() as *mut libc::c_void, map.len(), vec.as_mut_ptr()) }, 0);
        vec.iter().filter(|&&b| b & 1 == 1).count()
    };
    let pool = crate::parallel::Pool::new(Some(2)).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("out");
    let mut file = File::create(&path).unwrap();
    file.write_all(&vec![7u8; 4 << 20]).unwrap();
    file.sync_all().unwrap(); // clean pages, still cached
    let map = unsafe { memmap2::Mmap::map(&File::open(&path).unwrap()).unwrap() };
    assert!(resident(&map) > 0, "the written pages are in the cache");
    RecordChunk::start_writeback(&file, 0, 4 << 20, Some(&pool)).unwrap();
    drop(file);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while resident(&map) > 0 {
        assert!(std::time::Instant::now() < deadline, "the hint never ran");
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
}

/// A pool too busy to take hints holds at most `WRITEBACK_HINTS` of them
/// (and their descriptors); the rest are dropped, and those held run once
/// a thread is free.
#[cfg(target_os = "linux")]
#[test]
fn writeback_hints_waiting_for_a_busy_pool_are_capped() {
    use std::sync::atomic::Ordering::Relaxed;

    use chunk::{WAITING_HINTS, WRITEBACK_HINTS};
    let _one = HINT_TESTS.lock().unwrap_or_else(|e| e.into_inner());
    let pool = crate::parallel::Pool::new(Some(1)).unwrap();
    let (release, busy) = std::sync::mpsc::channel::<()>();
    pool.spawn(move || {
        let _ = busy.recv();
    })
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mut file = File::create(dir.path().join("out")).unwrap();
    file.write_all(b"lines\n").unwrap();
    for _ in 0..3 * WRITEBACK_HINTS {
        RecordChunk::start_writeback(&file, 0, 6, Some(&pool)).unwrap();
    }
    assert_eq!(WAITING_HINTS.load(Relaxed), WRITEBACK_HINTS);
    drop(release);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while WAITING_HINTS.load(Relaxed) > 0 {
        assert!(std::time::Instant::now() < deadline, "the held hints never ran");
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
}
