//! Fingerprint files read by the core: `lines` (one decimal u64 a line, as
//! simhash-find-all reads) and `hash` (a TSV whose header line names an id
//! column and a `hash` column, the original simhash tool's format).
//!
//! A block of whole lines becomes a [`RecordChunk`] like a JSON-lines block:
//! one entry per non-blank line, each record's fingerprint the parsed hash
//! and, for a TSV, its id as written. The core parses only what it reads
//! exactly as the reference reader (`python/rsimhash/_records/fingerprints.py`) does;
//! any other line (not a number, above 2^64 - 1, the wrong number of fields,
//! an id that is not UTF-8) is a [`Status::Defer`] entry, which the
//! reference reader reads again to word the error with the file and the
//! line. A TSV's first line is always a [`Status::Header`] entry, checked
//! there too.

use rayon::prelude::*;

use super::chunk::{Entry, HeldId, PackedIds, RecordChunk, Status};
use super::input::{Block, Spare};

/// Which fingerprint file, and what its header said.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HashFormat {
    /// One decimal u64 per line; blank lines are skipped.
    Lines,
    /// `id<TAB>hash` (any column order, more columns allowed) under a header
    /// naming the id column `id` and the hash column `hash`.
    Tsv { id: String, columns: Option<Columns> },
}

/// Where a TSV's fields are, from its header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Columns {
    pub count: usize,
    pub id: usize,
    pub hash: usize,
}

/// The value of an ASCII decimal u64 with ASCII whitespace around it (as
/// Python's `bytes.strip` and `bytes.isdigit` read it), or None.
pub fn parse_u64(field: &[u8]) -> Option<u64> {
    let digits = field.trim_ascii();
    if digits.is_empty() {
        return None;
    }
    // Nineteen digits never overflow (10^19 - 1 < 2^64): they are summed
    // unchecked, and only the digits past them (a 20-digit value, or
    // leading zeros) pay for overflow checks.
    let (head, tail) = digits.split_at(digits.len().min(19));
    let mut v = 0u64;
    let mut bad = false;
    for &b in head {
        let d = b.wrapping_sub(b'0');
        bad |= d > 9;
        // Wrapping: a bad byte's value (discarded below) may overflow.
        v = v.wrapping_mul(10).wrapping_add(u64::from(d));
    }
    if bad {
        return None;
    }
    tail.iter().try_fold(v, |v, &b| {
        let d = b.wrapping_sub(b'0');
        if d > 9 {
            return None;
        }
        v.checked_mul(10)?.checked_add(u64::from(d))
    })
}

/// Python's `bytes.strip` also takes `\x0b` and `\x0c`, which
/// `trim_ascii` leaves; a blank line is empty or only such bytes.
fn blank(line: &[u8]) -> bool {
    line.iter().all(|&b| matches!(b, b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c))
}

/// The header's columns, or None when it does not name both (the reference
/// reader then says so).
fn header(line: &[u8], id: &str) -> Option<Columns> {
    let text = String::from_utf8_lossy(line.strip_suffix(b"\r").unwrap_or(line)).into_owned();
    let names: Vec<&str> = text
        .split('\t')
        .enumerate()
        .map(|(i, n)| {
            let n = n.trim();
            if i == 0 {
                n.trim_start_matches('\u{feff}')
            } else {
                n
            }
        })
        .collect();
    let at = |name: &str| names.iter().position(|&n| n == name);
    Some(Columns { count: names.len(), id: at(id)?, hash: at("hash")? })
}

/// One line of a TSV: `(hash, id)`, the id where it lies in `line`, or
/// None for the reference reader.
fn tsv_line(line: &[u8], c: Columns) -> Option<(u64, std::ops::Range<usize>)> {
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    let (mut hash, mut id) = (0..0, 0..0);
    let mut n = 0;
    let mut start = 0;
    for end in memchr::memchr_iter(b'\t', line).chain(std::iter::once(line.len())) {
        if n == c.hash {
            hash = start..end;
        }
        if n == c.id {
            id = start..end;
        }
        n += 1;
        start = end + 1;
    }
    if n != c.count {
        return None;
    }
    let hash = parse_u64(&line[hash])?;
    std::str::from_utf8(&line[id.clone()]).ok()?;
    Some((hash, id))
}

/// Parses `block`, whose first line is line `first_line`, on the current
/// rayon pool; a TSV's header (line 1) sets `format`'s columns.
pub fn parse_block(block: Block, first_line: u64, format: &mut HashFormat, spare: Option<Spare>) -> RecordChunk {
    if block.too_long {
        return RecordChunk::too_long(block, first_line, true, matches!(format, HashFormat::Tsv { .. }), spare);
    }
    let data = block.data;
    let mut spans = Vec::with_capacity(data.len() / 16 + 16);
    let mut start = 0;
    for end in memchr::memchr_iter(b'\n', &data) {
        spans.push((start, end));
        start = end + 1;
    }
    if start < data.len() {
        spans.push((start, data.len()));
    }
    let lines = spans.len() as u64;
    let header_at = (first_line == 1 && !spans.is_empty()).then_some(0);
    if let (HashFormat::Tsv { id, columns }, Some(i)) = (&mut *format, header_at) {
        let (a, b) = spans[i];
        *columns = header(&data[a..b], id);
    }
    let tsv = match format {
        HashFormat::Lines => return lines_block(data, block.final_newline, &spans, first_line, block.consumed, spare),
        HashFormat::Tsv { columns, .. } => Some(*columns),
    };
    // `None` for a blank line, which is not an entry.
    let parsed: Vec<Option<(Status, u64, HeldId)>> = spans
        .par_iter()
        .enumerate()
        .with_min_len(1024)
        .map(|(i, &(a, b))| {
            let line = &data[a..b];
            if Some(i) == header_at && tsv.is_some() {
                return Some((Status::Header, 0, HeldId::None));
            }
            if blank(line) {
                return None;
            }
            let found = match tsv {
                None => parse_u64(line).map(|h| (h, HeldId::None)),
                Some(None) => None, // a bad header: the reference reader stops at it
                Some(Some(c)) => tsv_line(line, c).map(|(h, id)| (h, HeldId::Span { start: a + id.start, end: a + id.end })),
            };
            Some(match found {
                Some((hash, id)) => (Status::Record, hash, id),
                None => (Status::Defer, 0, HeldId::None),
            })
        })
        .collect();
    let mut entries = Vec::with_capacity(parsed.len());
    let mut fingerprints = Vec::with_capacity(parsed.len());
    let mut ids = tsv.is_some().then(|| Vec::with_capacity(parsed.len()));
    for (i, (parsed, &(start, end))) in parsed.into_iter().zip(&spans).enumerate() {
        let Some((status, hash, id)) = parsed else { continue };
        entries.push(Entry { line: first_line + i as u64, start, end, status });
        fingerprints.push(hash);
        if let Some(v) = ids.as_mut() {
            v.push(id);
        }
    }
    RecordChunk::from_parts(data, block.final_newline, entries, Some(fingerprints), ids, lines, block.consumed, spare)
}

/// [`parse_block`] of a `lines` file: no ids, so each line is parsed to a
/// small `(status, hash)` (a blank line has status `u8::MAX`).
fn lines_block(data: Vec<u8>, final_newline: bool, spans: &[(usize, usize)], first_line: u64, consumed: u64, spare: Option<Spare>) -> RecordChunk {
    const BLANK: u8 = u8::MAX;
    let parsed: Vec<(u8, u64)> = spans
        .par_iter()
        .with_min_len(4096)
        .map(|&(a, b)| {
            let line = &data[a..b];
            match parse_u64(line) {
                Some(hash) => (Status::Record as u8, hash),
                None if blank(line) => (BLANK, 0),
                None => (Status::Defer as u8, 0),
            }
        })
        .collect();
    let mut entries = Vec::with_capacity(parsed.len());
    let mut fingerprints = Vec::with_capacity(parsed.len());
    for (i, (&(status, hash), &(start, end))) in parsed.iter().zip(spans).enumerate() {
        if status == BLANK {
            continue;
        }
        let status = if status == Status::Record as u8 { Status::Record } else { Status::Defer };
        entries.push(Entry { line: first_line + i as u64, start, end, status });
        fingerprints.push(hash);
    }
    RecordChunk::from_parts(data, final_newline, entries, Some(fingerprints), None, spans.len() as u64, consumed, spare)
}

/// The value of the line at `at` when it is 1 to 20 ASCII digits (a u64;
/// up to 23 with leading zeros, as [`parse_u64`] reads them too) then `\n`
/// or the end of `data`, and where it ends; else None.
#[inline]
fn plain_line(data: &[u8], at: usize) -> Option<(u64, usize)> {
    // The usual 16 to 20 digits a word at a time, else byte by byte.
    if let Some(found) = super::wordwise::hash_at(data, at) {
        return Some(found);
    }
    let mut v = 0u64;
    let mut i = at;
    // Nineteen digits never overflow; a twentieth is checked.
    while i < data.len() && i - at < 19 {
        let d = data[i].wrapping_sub(b'0');
        if d > 9 {
            break;
        }
        v = v * 10 + u64::from(d);
        i += 1;
    }
    if i - at == 19 && i < data.len() {
        let d = data[i].wrapping_sub(b'0');
        if d <= 9 {
            v = v.checked_mul(10)?.checked_add(u64::from(d))?;
            i += 1;
        }
    }
    (i > at && (i == data.len() || data[i] == b'\n')).then_some((v, i))
}

/// A `lines` block's values alone, for a consumer that never names a line
/// (`find-all` on a fingerprint file): `(values, lines)`, the lines counted
/// as [`parse_block`] counts them. None when any line is neither a number
/// nor blank: [`parse_block`] then reads the block, so that the reference
/// reader words the error. Pieces of the block, cut at line ends, are read
/// side by side, with no per-line bookkeeping.
pub fn lines_values(data: &[u8]) -> Option<(Vec<u64>, u64)> {
    let parts: Vec<Option<(Vec<u64>, u64)>> = pieces(data)
        .par_iter()
        .map(|piece| {
            let mut values = Vec::with_capacity(piece.len() / 16 + 1);
            let mut lines = 0;
            let mut at = 0;
            while at < piece.len() {
                lines += 1;
                // The usual line, digits then its end, in one pass over its
                // bytes; any other (spaces, a `\r`, 20 digits that overflow,
                // leading zeros past 20 digits) is read whole as `parse_block` reads it.
                if let Some((v, end)) = plain_line(piece, at) {
                    values.push(v);
                    at = end + 1;
                    continue;
                }
                let end = memchr::memchr(b'\n', &piece[at..]).map_or(piece.len(), |i| at + i);
                let line = &piece[at..end];
                match parse_u64(line) {
                    Some(v) => values.push(v),
                    None if blank(line) => {}
                    None => return None,
                }
                at = end + 1;
            }
            Some((values, lines))
        })
        .collect();
    let parts = parts.into_iter().collect::<Option<Vec<_>>>()?;
    let values = crate::parallel::concat(&parts.iter().map(|(v, _)| v.as_slice()).collect::<Vec<_>>());
    Some((values, parts.iter().map(|(_, n)| n).sum()))
}

/// The line at `at` of an `id<TAB>hash` TSV when it is the usual one: an
/// ASCII id without a tab or `\r`, a tab, then a u64's ASCII digits (as
/// [`plain_line`] reads them) and `\n` or the end of `data`: `(hash, where the tab is, where the line
/// ends)`; else None (the line is read whole by [`tsv_line`]).
#[inline]
fn plain_id_hash(data: &[u8], at: usize) -> Option<(u64, usize, usize)> {
    if let Some(tab) = super::wordwise::tab_after_id(data, at) {
        let (v, end) = plain_line(data, tab + 1)?;
        return Some((v, tab, end));
    }
    let mut i = at;
    // An ASCII id (any non-ASCII byte, even valid UTF-8, takes the long way).
    while i < data.len() && data[i] != b'\t' {
        if data[i] >= 0x80 || data[i] == b'\n' || data[i] == b'\r' {
            return None;
        }
        i += 1;
    }
    if i == data.len() {
        return None; // no tab
    }
    let (v, end) = plain_line(data, i + 1)?;
    Some((v, i, end))
}

/// Pieces of about 256 KiB of `data`, cut after a line's `\n`, to be read
/// side by side.
fn pieces(data: &[u8]) -> Vec<&[u8]> {
    const PIECE: usize = 256 << 10;
    let mut pieces = Vec::with_capacity(data.len() / PIECE + 1);
    let mut start = 0;
    while start < data.len() {
        let cut = (start + PIECE).min(data.len());
        let end = match memchr::memchr(b'\n', &data[cut..]) {
            Some(i) if cut < data.len() => cut + i + 1,
            _ => data.len(),
        };
        pieces.push(&data[start..end]);
        start = end;
    }
    pieces
}

/// A TSV block past the header, for a consumer that never names a line
/// (`find-all` and `cluster` on a hash TSV): its hashes, its ids packed and
/// its line count, as [`parse_block`] would give them. None when any line
/// is neither a record nor blank: [`parse_block`] then reads the block, so
/// that the reference reader words the error. No entry, status or id
/// object a line: at 10^7 lines those cost more than the parsing.
pub fn tsv_values(data: &[u8], columns: Columns) -> Option<(Vec<u64>, PackedIds, u64)> {
    type Part = (Vec<u64>, PackedIds, u64);
    let id_then_hash = columns == Columns { count: 2, id: 0, hash: 1 };
    let parts: Vec<Option<Part>> = pieces(data)
        .par_iter()
        .map(|piece| {
            let mut values = Vec::with_capacity(piece.len() / 24 + 1);
            let mut ids = PackedIds { text: Vec::with_capacity(piece.len() / 2), offsets: Vec::with_capacity(piece.len() / 24 + 1) };
            let mut lines = 0;
            let mut at = 0;
            while at < piece.len() {
                lines += 1;
                // The usual line, `id<TAB>digits` then its end, in one pass
                // over its bytes; any other is read whole as `parse_block` reads it.
                if id_then_hash {
                    if let Some((hash, tab, end)) = plain_id_hash(piece, at) {
                        values.push(hash);
                        ids.offsets.push(ids.text.len() as u64);
                        ids.text.extend_from_slice(&piece[at..tab]);
                        at = end + 1;
                        continue;
                    }
                }
                let end = memchr::memchr(b'\n', &piece[at..]).map_or(piece.len(), |i| at + i);
                let line = &piece[at..end];
                at = end + 1;
                if blank(line) {
                    continue;
                }
                let (hash, id) = tsv_line(line, columns)?;
                values.push(hash);
                ids.offsets.push(ids.text.len() as u64);
                ids.text.extend_from_slice(&line[id]);
            }
            Some((values, ids, lines))
        })
        .collect();
    let parts = parts.into_iter().collect::<Option<Vec<_>>>()?;
    // Joined side by side, as `lines_values` joins its values: on the
    // thread that hands blocks on, these copies held up the next block.
    let values = crate::parallel::concat(&parts.iter().map(|(v, _, _)| v.as_slice()).collect::<Vec<_>>());
    let text = crate::parallel::concat(&parts.iter().map(|(_, i, _)| i.text.as_slice()).collect::<Vec<_>>());
    // Each piece's offsets count from its own text: moved by the text
    // before it as they are joined. A last part of one 0 becomes the end of
    // the last id (a slot made here: a push would copy the whole vector).
    let mut bases = Vec::with_capacity(parts.len() + 1);
    bases.push(0);
    for (_, piece, _) in &parts {
        bases.push(bases[bases.len() - 1] + piece.text.len() as u64);
    }
    let ends: &[u64] = &[0];
    let offsets = crate::parallel::concat_with(&parts.iter().map(|(_, i, _)| i.offsets.as_slice()).chain([ends]).collect::<Vec<_>>(), |p, o| o + bases[p]);
    let lines = parts.iter().map(|(_, _, n)| n).sum();
    Some((values, PackedIds { text, offsets }, lines))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn u64_as_python_reads_it() {
        assert_eq!(parse_u64(b"0"), Some(0));
        assert_eq!(parse_u64(b" 18446744073709551615\r"), Some(u64::MAX));
        assert_eq!(parse_u64(b"18446744073709551616"), None);
        assert_eq!(parse_u64(b"99999999999999999999999"), None);
        assert_eq!(parse_u64(b"007"), Some(7));
        for bad in [&b""[..], b" ", b"+1", b"-1", b"1 2", b"0x10", b"1.0", b"\xd9\xa1", b"abc"] {
            assert_eq!(parse_u64(bad), None, "{bad:?}");
        }
    }

    /// The fast head and the checked tail meet at 19 digits.
    #[test]
    fn u64_at_every_length() {
        let mut v = 0u64;
        for n in 1..=20 {
            v = v.wrapping_mul(10) + (n % 10);
            let text = format!("{v}");
            assert_eq!(parse_u64(text.as_bytes()), Some(v), "{text}");
            assert_eq!(parse_u64(format!("000{text}").as_bytes()), Some(v));
            assert_eq!(parse_u64(format!("{text}x").as_bytes()), None);
            assert_eq!(parse_u64(format!("x{text}").as_bytes()), None);
        }
        assert_eq!(parse_u64(b"000000000000000000000000018446744073709551615"), Some(u64::MAX));
        assert_eq!(parse_u64(b"00000000000000000000000018446744073709551616"), None);
        assert_eq!(parse_u64(b"1844674407370955161:"), None); // ':' is '9' + 1
    }

    /// The lean reader gives what `parse_block` gives, or steps aside.
    #[test]
    fn lines_values_as_parse_block() {
        let cases: [&[u8]; 11] = [
            b"",
            b"\n",
            b"1\n2\n\n 3 \r\n",
            b"5",
            b"1\n2",
            b"1\nx\n3\n",
            b"\x0b\n7\n",
            b"18446744073709551615",
            b"18446744073709551616\n",
            b"0000000000000000000000000001\n2\n",
            b"1844674407370955161\n99999999999999999999\n",
        ];
        for data in cases {
            let block = Block { data: data.to_vec(), final_newline: data.ends_with(b"\n"), consumed: 0, too_long: false };
            let chunk = parse_block(block, 1, &mut HashFormat::Lines, None);
            let all_records = chunk.entries.iter().all(|e| e.status == Status::Record);
            match lines_values(data) {
                Some((values, lines)) => {
                    assert!(all_records, "{data:?}");
                    assert_eq!(Some(values), chunk.fingerprints, "{data:?}");
                    assert_eq!(lines, chunk.lines, "{data:?}");
                }
                None => assert!(!all_records, "{data:?}"),
            }
        }
        // Many pieces: values in order, lines counted across the cuts.
        let text: String = (0..200_000u64).map(|i| if i % 7 == 0 { "\n".to_string() } else { format!("{}\n", crate::job::mix(i)) }).collect();
        let (values, lines) = lines_values(text.as_bytes()).unwrap();
        let want: Vec<u64> = (0..200_000u64).filter(|i| i % 7 != 0).map(crate::job::mix).collect();
        assert_eq!((values, lines), (want, 200_000));
    }

    /// A TSV block past the header: the lean reader gives `parse_block`'s
    /// hashes, ids and line count, or steps aside when a line is bad.
    #[test]
    fn tsv_values_as_parse_block() {
        let cases: [&[u8]; 10] = [
            b"",
            b"\n",
            b"a\t1\nb\t2\n\n c \t 3 \r\n",
            b"a\t5",
            b"\t7\n\t\n",
            b"a\t1\nb\tx\n",
            b"a\t1\t2\n",
            b"d\xc3\xa9\t18446744073709551615\n",
            b"\xff\t1\n",
            b"a\t18446744073709551616\n",
        ];
        let columns = Columns { count: 2, id: 0, hash: 1 };
        let more: [&[u8]; 12] = [
            b"a\t1234567890123456789\n",
            b"a\t12345678901234567890\n",
            b"a\t007\n",
            b"a\t7 \n",
            b"a\t7\r\n",
            b"a\t\n",
            b"\t\t\n",
            b"a b\t7\n",
            b"\xc3\xa9\t7\n",
            b"a\r\t7\n",
            b"a",
            b"a\t9\nb",
        ];
        let cases: Vec<&[u8]> = cases.into_iter().chain(more).collect();
        for data in cases {
            let block = Block { data: data.to_vec(), final_newline: data.ends_with(b"\n"), consumed: 0, too_long: false };
            let mut format = HashFormat::Tsv { id: "id".into(), columns: Some(columns) };
            let chunk = parse_block(block, 2, &mut format, None);
            let all_records = chunk.entries.iter().all(|e| e.status == Status::Record);
            match tsv_values(data, columns) {
                Some((values, ids, lines)) => {
                    assert!(all_records, "{data:?}");
                    assert_eq!(Some(values), chunk.fingerprints, "{data:?}");
                    assert_eq!(Some(ids), chunk.id_texts(), "{data:?}");
                    assert_eq!(lines, chunk.lines, "{data:?}");
                }
                None => assert!(!all_records, "{data:?}"),
            }
        }
        // Many pieces, the id last: ids and values in order, offsets across the cuts.
        let columns = Columns { count: 3, id: 2, hash: 0 };
        let text: String = (0..100_000u64).map(|i| if i % 7 == 0 { "\n".to_string() } else { format!("{}\tx\tdoc-{i}\n", crate::job::mix(i)) }).collect();
        let (values, ids, lines) = tsv_values(text.as_bytes(), columns).unwrap();
        let kept: Vec<u64> = (0..100_000u64).filter(|i| i % 7 != 0).collect();
        assert_eq!(values, kept.iter().map(|&i| crate::job::mix(i)).collect::<Vec<u64>>());
        assert_eq!(lines, 100_000);
        assert_eq!(ids.offsets.len(), kept.len() + 1);
        for (n, i) in kept.iter().enumerate() {
            let (a, b) = (ids.offsets[n] as usize, ids.offsets[n + 1] as usize);
            assert_eq!(&ids.text[a..b], format!("doc-{i}").as_bytes());
        }
    }

    /// The usual `id<TAB>hash` file over many pieces, read a word at a time
    /// where it can be: hashes of every length, ids of every length up to
    /// 40, lines the word readers leave to the bytewise one (`\r`, spaces,
    /// leading zeros past 20 digits, a UTF-8 id) among them: the values and
    /// ids `parse_block` gives.
    #[test]
    fn id_then_hash_over_many_pieces() {
        let mut next = crate::testing::xorshift(11);
        let mut text = Vec::new();
        for i in 0..120_000u64 {
            let v = next() >> (next() % 64);
            let id = "d".repeat((i % 41) as usize);
            let line = match i % 13 {
                0 => format!("{id}\t{v}\r\n"),
                1 => format!("{id}\t {v}\n"),
                2 => format!("{id}\t0000{v:020}\n"),
                3 => format!("é{id}\t{v}\n"),
                4 => "\n".to_string(),
                _ => format!("{id}\t{v}\n"),
            };
            text.extend_from_slice(line.as_bytes());
        }
        let columns = Columns { count: 2, id: 0, hash: 1 };
        let block = Block { data: text.clone(), final_newline: true, consumed: 0, too_long: false };
        let mut format = HashFormat::Tsv { id: "id".into(), columns: Some(columns) };
        let chunk = parse_block(block, 2, &mut format, None);
        assert!(chunk.entries.iter().all(|e| e.status == Status::Record));
        let (values, ids, lines) = tsv_values(&text, columns).unwrap();
        assert_eq!(Some(values), chunk.fingerprints);
        assert_eq!(Some(ids), chunk.id_texts());
        assert_eq!(lines, chunk.lines);
    }

    #[test]
    fn headers() {
        assert_eq!(header(b"id\thash", "id"), Some(Columns { count: 2, id: 0, hash: 1 }));
        assert_eq!(header(b"\xef\xbb\xbfhash\tx\t id \r", "id"), Some(Columns { count: 3, id: 2, hash: 0 }));
        assert_eq!(header(b"doc\thash", "doc"), Some(Columns { count: 2, id: 0, hash: 1 }));
        assert_eq!(header(b"1\t2", "id"), None);
        assert_eq!(header(b"id,hash", "id"), None);
    }

    #[test]
    fn tsv_lines() {
        let c = Columns { count: 2, id: 0, hash: 1 };
        assert_eq!(tsv_line(b"a\t5\r", c), Some((5, 0..1)));
        assert_eq!(tsv_line(b"a\t5\t6", c), None);
        assert_eq!(tsv_line(b"a 5", c), None);
        assert_eq!(tsv_line(b"a\tx", c), None);
        assert_eq!(tsv_line(b"\xff\t5", c), None);
        assert_eq!(tsv_line(b"\t5", c), Some((5, 0..0)));
        let c = Columns { count: 3, id: 2, hash: 0 };
        assert_eq!(tsv_line(b"7\tx\tdoc-\xc3\xa9", c), Some((7, 4..10)));
        assert_eq!(tsv_line(b"7\tx\t", c), Some((7, 4..4)));
        assert_eq!(tsv_line(b"7\tx", c), None);
    }
}
