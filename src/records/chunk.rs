//! A block of lines parsed into records, fingerprinted in the same pass.

use std::borrow::Cow;

use rayon::prelude::*;

use super::input::{Block, Spare};
use super::json::{parse_line, parse_line_with, Fields, Id, Line};
use crate::fingerprint::{Fingerprinter, Shingling};

/// What became of a non-blank line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Status {
    /// A record with its text and, when asked for, its id.
    Record = 0,
    /// A record whose id field is missing (the ids may be line numbers).
    NoId = 1,
    /// For the reference reader (see [`super::json`], [`super::hashes`]).
    Defer = 2,
    /// A line longer than the reader's limit: not kept, a bad line.
    TooLong = 3,
    /// A fingerprint TSV's header line (see [`super::hashes`]).
    Header = 4,
}

/// A non-blank line: its 1-based number and where it lies in the block
/// (without its `\n`).
#[derive(Debug, Clone, Copy)]
pub struct Entry {
    pub line: u64,
    pub start: usize,
    pub end: usize,
    pub status: Status,
}

/// An entry's id as a chunk holds it. Most string ids are bytes of their
/// line (a TSV field, a JSON string without escapes): those are held as
/// where they lie in the block, so a block of 10^6 records makes no
/// allocation an id, and dropping it frees none.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HeldId {
    /// No id (not a record, or its id field is missing).
    None,
    Int(i64),
    UInt(u64),
    /// `data[start..end]`, valid UTF-8 (checked when it was parsed).
    Span {
        start: usize,
        end: usize,
    },
    /// A string the line does not hold as it is (a JSON escape decoded).
    Owned(Box<str>),
}

impl HeldId {
    /// `id`, parsed from a slice of `data`: a borrowed string becomes the
    /// span it lies at (anything else, or a string from another buffer, is
    /// owned).
    pub(crate) fn of(id: Option<Id<'_>>, data: &[u8]) -> HeldId {
        match id {
            None => HeldId::None,
            Some(Id::Int(v)) => HeldId::Int(v),
            Some(Id::UInt(v)) => HeldId::UInt(v),
            Some(Id::Str(Cow::Borrowed(s))) => {
                let base = data.as_ptr() as usize;
                let at = (s.as_ptr() as usize).wrapping_sub(base);
                if at <= data.len() && s.len() <= data.len() - at {
                    HeldId::Span { start: at, end: at + s.len() }
                } else {
                    HeldId::Owned(s.into())
                }
            }
            Some(Id::Str(Cow::Owned(s))) => HeldId::Owned(s.into_boxed_str()),
        }
    }
}

/// Ids as text, packed: id `i` is `text[offsets[i]..offsets[i + 1]]`
/// (UTF-8).
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct PackedIds {
    pub text: Vec<u8>,
    pub offsets: Vec<u64>,
}

/// The records of one block, in input order.
#[derive(Debug)]
pub struct RecordChunk {
    pub data: Vec<u8>,
    pub final_newline: bool,
    /// One per non-blank line.
    pub entries: Vec<Entry>,
    /// Each entry's fingerprint (0 unless a record), when a shingling was given.
    pub fingerprints: Option<Vec<u64>>,
    /// Each entry's id ([`HeldId::None`] unless a record with an id), when
    /// ids were asked for; read them with [`Self::id`].
    pub ids: Option<Vec<HeldId>>,
    /// Lines the block covers, blank ones included.
    pub lines: u64,
    /// The file's bytes read when the block was cut.
    pub consumed: u64,
    /// Where `data` goes when the chunk is dropped.
    spare: Option<Spare>,
}

impl Drop for RecordChunk {
    fn drop(&mut self) {
        if let Some(spare) = self.spare.take() {
            spare.put(std::mem::take(&mut self.data));
        }
    }
}

impl RecordChunk {
    /// A chunk of records parsed elsewhere (see [`super::hashes`]).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn from_parts(
        data: Vec<u8>,
        final_newline: bool,
        entries: Vec<Entry>,
        fingerprints: Option<Vec<u64>>,
        ids: Option<Vec<HeldId>>,
        lines: u64,
        consumed: u64,
        spare: Option<Spare>,
    ) -> RecordChunk {
        RecordChunk { data, final_newline, entries, fingerprints, ids, lines, consumed, spare }
    }

    /// The chunk of a line longer than the reader's limit (`block.too_long`):
    /// one [`Status::TooLong`] entry, its bytes never held.
    pub(crate) fn too_long(block: Block, first_line: u64, fingerprints: bool, ids: bool, spare: Option<Spare>) -> RecordChunk {
        RecordChunk {
            data: block.data,
            final_newline: true,
            entries: vec![Entry { line: first_line, start: 0, end: 0, status: Status::TooLong }],
            fingerprints: fingerprints.then(|| vec![0]),
            ids: ids.then(|| vec![HeldId::None]),
            lines: 1,
            consumed: block.consumed,
            spare,
        }
    }

    /// Parses `block`, whose first line is line `first_line`, on the current
    /// rayon pool; with `shingling`, each record's text is fingerprinted
    /// while it is in cache. With `spare`, the block's buffer goes back
    /// there when the chunk is dropped.
    pub fn parse(block: Block, first_line: u64, fields: &Fields, shingling: Option<Shingling>, spare: Option<Spare>) -> RecordChunk {
        if block.too_long {
            return RecordChunk::too_long(block, first_line, shingling.is_some(), fields.id.is_some(), spare);
        }
        let data = block.data;
        let want_ids = fields.id.is_some();
        // Each piece's lines are found and parsed by one task, while the
        // piece is in cache; `None` for a blank line, which is not an entry.
        let pieces: Vec<Vec<((usize, usize), Parsed)>> = line_pieces(&data)
            .into_par_iter()
            .map_init(
                || shingling.map(Fingerprinter::new),
                |fp, (a, b)| {
                    let mut parse = |start: usize, end: usize| {
                        // Fingerprinted in the parse, from the line or the
                        // buffer of an escaped text: texts are never copied.
                        let (hash, id) = match parse_line_with(&data[start..end], fields, fp) {
                            Line::Blank => return None,
                            Line::Defer => return Some((Status::Defer, 0, HeldId::None)),
                            Line::Record { text, id } => (text, id),
                        };
                        Some(match id {
                            Some(id) => (Status::Record, hash, HeldId::of(Some(id), &data)),
                            None if want_ids => (Status::NoId, hash, HeldId::None),
                            None => (Status::Record, hash, HeldId::None),
                        })
                    };
                    let mut out = Vec::new();
                    let mut start = a;
                    for end in memchr::memchr_iter(b'\n', &data[a..b]).map(|e| a + e) {
                        out.push(((start, end), parse(start, end)));
                        start = end + 1;
                    }
                    if start < b {
                        out.push(((start, b), parse(start, b))); // the block's last line, without its `\n`
                    }
                    out
                },
            )
            .collect();
        let lines = pieces.iter().map(Vec::len).sum::<usize>();
        let mut entries = Vec::with_capacity(lines);
        let mut fingerprints = shingling.map(|_| Vec::with_capacity(lines));
        let mut ids = want_ids.then(|| Vec::with_capacity(lines));
        for (i, ((start, end), parsed)) in pieces.into_iter().flatten().enumerate() {
            let Some((status, hash, id)) = parsed else { continue };
            entries.push(Entry { line: first_line + i as u64, start, end, status });
            if let Some(f) = fingerprints.as_mut() {
                f.push(hash);
            }
            if let Some(v) = ids.as_mut() {
                v.push(id);
            }
        }
        RecordChunk { data, final_newline: block.final_newline, entries, fingerprints, ids, lines: lines as u64, consumed: block.consumed, spare }
    }

    /// Entry `i`'s id, or None when it has none or ids were not asked for.
    ///
    /// # Panics
    /// If `i` is out of range.
    pub fn id(&self, i: usize) -> Option<Id<'_>> {
        match &self.ids.as_ref()?[i] {
            HeldId::None => None,
            HeldId::Int(v) => Some(Id::Int(*v)),
            HeldId::UInt(v) => Some(Id::UInt(*v)),
            HeldId::Span { start, end } => {
                // Checked as UTF-8 when the line was parsed.
                let text = std::str::from_utf8(&self.data[*start..*end]).expect("an id span is UTF-8");
                Some(Id::Str(Cow::Borrowed(text)))
            }
            HeldId::Owned(s) => Some(Id::Str(Cow::Borrowed(s))),
        }
    }

    /// Every entry's id as text (an int in decimal), packed; None when ids
    /// were not asked for or an entry has none.
    pub fn id_texts(&self) -> Option<PackedIds> {
        self.id_texts_of(0..self.ids.as_ref().map_or(0, Vec::len))
    }

    /// The ids of the entries `picked` (in range), in that order, as
    /// [`Self::id_texts`] packs them; None when ids were not asked for or
    /// one of them has none.
    pub fn id_texts_of(&self, picked: impl ExactSizeIterator<Item = usize>) -> Option<PackedIds> {
        use std::io::Write as _;

        let ids = self.ids.as_ref()?;
        let mut text = Vec::with_capacity(picked.len() * 12);
        let mut offsets = Vec::with_capacity(picked.len() + 1);
        offsets.push(0u64);
        for id in picked.map(|i| &ids[i]) {
            // Writes to a Vec cannot fail.
            let _ = match id {
                HeldId::None => return None,
                HeldId::Int(v) => write!(text, "{v}"),
                HeldId::UInt(v) => write!(text, "{v}"),
                HeldId::Span { start, end } => text.write_all(&self.data[*start..*end]),
                HeldId::Owned(s) => text.write_all(s.as_bytes()),
            };
            offsets.push(text.len() as u64);
        }
        Some(PackedIds { text, offsets })
    }

    /// Entry `i`'s line, without its `\n`.
    pub fn line(&self, i: usize) -> &[u8] {
        let e = self.entries[i];
        &self.data[e.start..e.end]
    }

    /// The lines of the entries `picked` (ascending indices), as read, each
    /// with its `\n` (except the input's last line if it had none).
    ///
    /// # Panics
    /// If an index is out of range.
    pub fn write_lines(&self, picked: impl IntoIterator<Item = usize>, out: &mut Vec<u8>) {
        // A Vec takes every slice: this cannot fail.
        let _ = self.write_to(picked, out);
    }

    /// Writes the lines of the entries `picked` (ascending indices) to `out`
    /// as [`Self::write_lines`] gives them, without copying: runs of
    /// adjacent lines go out as one slice of the block, each line with its
    /// `\n` (only a line that ends the block can lack one). Returns the
    /// bytes written.
    ///
    /// # Errors
    /// The writer's.
    ///
    /// # Panics
    /// If an index is out of range.
    pub fn write_to(&self, picked: impl IntoIterator<Item = usize>, out: &mut impl std::io::Write) -> std::io::Result<u64> {
        write_runs(&self.runs(picked), &self.data, out)
    }

    /// The byte ranges of the block the lines of `picked` (ascending) take,
    /// adjacent lines joined.
    fn runs(&self, picked: impl IntoIterator<Item = usize>) -> Vec<(usize, usize)> {
        let mut runs: Vec<(usize, usize)> = Vec::new();
        for i in picked {
            let e = self.entries[i];
            let end = (e.end + 1).min(self.data.len());
            match runs.last_mut() {
                Some(last) if last.1 == e.start => last.1 = end,
                _ => runs.push((e.start, end)),
            }
        }
        runs
    }

    /// [`Self::write_to`] a file. A regular file is written on `pool`'s
    /// threads when given, so that the kernel's copy into the page cache is
    /// no thread of its own: in pieces of [`WRITE_PIECE`] bytes one after
    /// another, each by whichever thread takes it. One at a time: the
    /// kernel copies a file's writes one at a time under its lock, and a
    /// second writer of the same file only spins there. Anything else (a
    /// pipe, which may block) is written by the caller.
    ///
    /// # Errors
    /// The file's. After an error the file's bytes and position are
    /// unspecified (the caller discards a partial output).
    ///
    /// # Panics
    /// If an index is out of range.
    pub fn write_to_file(&self, picked: impl IntoIterator<Item = usize>, file: &std::fs::File, pool: Option<&crate::parallel::Pool>) -> std::io::Result<u64> {
        let runs = self.runs(picked);
        match pool {
            Some(pool) if file.metadata()?.is_file() => {
                let mut written = 0;
                for piece in pieces(&runs, WRITE_PIECE) {
                    let write = || write_runs(&piece, &self.data, &mut &*file);
                    written += pool.run_on_worker(write).map_err(|e| std::io::Error::other(e.to_string()))??;
                }
                Ok(written)
            }
            _ => write_runs(&runs, &self.data, &mut &*file),
        }
    }

    /// Asks the OS to start writing `file`'s bytes `offset..offset + len`
    /// to disk and to drop them from its cache once written (Linux:
    /// `posix_fadvise(DONTNEED)`, which starts the writeback of dirty
    /// pages), on a thread of `pool` while the caller goes on writing
    /// (without a pool, on the caller's thread). The call costs the
    /// kernel's block allocation for the range: on the writing thread it
    /// was a dedup's busiest thread, and every later write waited for it.
    /// The hint holds a duplicate of the descriptor, so the caller may
    /// close its own meanwhile. At most [`WRITEBACK_HINTS`] wait at once (a
    /// busy pool never piles up descriptors): past that a hint is dropped,
    /// which costs nothing when, as the command's do, each hint's range
    /// reaches back over the ones before. A hint's failure is ignored.
    /// Elsewhere, nothing.
    ///
    /// # Errors
    /// When the descriptor cannot be duplicated or no thread takes the hint.
    pub fn start_writeback(file: &std::fs::File, offset: u64, len: u64, pool: Option<&crate::parallel::Pool>) -> std::io::Result<()> {
        #[cfg(target_os = "linux")]
        {
            use std::os::fd::AsRawFd;
            use std::sync::atomic::Ordering::Relaxed;
            let (Ok(offset), Ok(len)) = (libc::off_t::try_from(offset), libc::off_t::try_from(len)) else { return Ok(()) };
            // SAFETY (of the hint): a descriptor of our own, open until the hint returns; no memory is passed.
            let fadvise = move |file: std::fs::File| unsafe {
                libc::posix_fadvise(file.as_raw_fd(), offset, len, libc::POSIX_FADV_DONTNEED);
            };
            let Some(pool) = pool else {
                fadvise(file.try_clone()?);
                return Ok(());
            };
            if WAITING_HINTS.fetch_add(1, Relaxed) >= WRITEBACK_HINTS {
                WAITING_HINTS.fetch_sub(1, Relaxed);
                return Ok(());
            }
            let spawned = file.try_clone().and_then(|file| {
                pool.spawn(move || {
                    fadvise(file);
                    WAITING_HINTS.fetch_sub(1, Relaxed);
                })
                .map_err(|e| std::io::Error::other(e.to_string()))
            });
            if spawned.is_err() {
                WAITING_HINTS.fetch_sub(1, Relaxed);
            }
            spawned?;
        }
        #[cfg(not(target_os = "linux"))]
        let _ = (file, offset, len, pool);
        Ok(())
    }

    /// The decoded texts of the entries `picked`, which must be records, as
    /// an Arrow large-string column: offsets (`n + 1`) and bytes.
    ///
    /// # Panics
    /// If an index is out of range or names a deferred line.
    pub fn texts(&self, picked: &[usize], fields: &Fields) -> (Vec<i64>, Vec<u8>) {
        let texts: Vec<Cow<'_, str>> = picked
            .par_iter()
            .with_min_len(64)
            .map(|&i| match parse_line(self.line(i), fields) {
                Line::Record { text, .. } => text,
                _ => panic!("entry {i} is not a record"),
            })
            .collect();
        let mut offsets = Vec::with_capacity(texts.len() + 1);
        let mut bytes = Vec::with_capacity(texts.iter().map(|t| t.len()).sum());
        offsets.push(0);
        for t in &texts {
            bytes.extend_from_slice(t.as_bytes());
            offsets.push(bytes.len() as i64);
        }
        (offsets, bytes)
    }
}

/// A line as parsed: `None` for a blank line, else its status, fingerprint
/// and id.
type Parsed = Option<(Status, u64, HeldId)>;

/// `data` cut into pieces of about [`SPLIT_PIECE`] bytes of whole lines:
/// each piece ends after a `\n`, but the last, which ends with `data`.
/// A block is megabytes: its lines are found and parsed a piece a task,
/// side by side, each piece's while it is in cache.
fn line_pieces(data: &[u8]) -> Vec<(usize, usize)> {
    let mut pieces = Vec::with_capacity(data.len() / SPLIT_PIECE + 1);
    let mut start = 0;
    while start < data.len() {
        let at = start + SPLIT_PIECE;
        let end = match data.get(at..) {
            Some(rest) => memchr::memchr(b'\n', rest).map_or(data.len(), |i| at + i + 1),
            None => data.len(),
        };
        pieces.push((start, end));
        start = end;
    }
    pieces
}

#[cfg(not(test))]
const SPLIT_PIECE: usize = 64 << 10;
#[cfg(test)]
const SPLIT_PIECE: usize = 37;

/// A chunk's kept lines go to a file in pieces of this many bytes, each
/// by a thread of the pool: a whole chunk's on one thread made that thread
/// the busiest of the run; tiny in tests, so that chunks are cut.
#[cfg(not(test))]
pub(crate) const WRITE_PIECE: usize = 1 << 20;
#[cfg(test)]
pub(crate) const WRITE_PIECE: usize = 701;

/// Writeback hints ([`RecordChunk::start_writeback`]) that may wait for a
/// thread at once, and how many do.
pub const WRITEBACK_HINTS: usize = 4;
#[cfg(target_os = "linux")]
pub(super) static WAITING_HINTS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// The byte ranges `runs`, in order, cut into pieces of `size` bytes (the
/// last one shorter).
fn pieces(runs: &[(usize, usize)], size: usize) -> Vec<Vec<(usize, usize)>> {
    let size = size.max(1);
    let (mut out, mut piece, mut filled) = (Vec::new(), Vec::new(), 0);
    for &(mut a, b) in runs {
        while a < b {
            let take = (size - filled).min(b - a);
            piece.push((a, a + take));
            (a, filled) = (a + take, filled + take);
            if filled == size {
                out.push(std::mem::take(&mut piece));
                filled = 0;
            }
        }
    }
    if !piece.is_empty() {
        out.push(piece);
    }
    out
}

/// Writes the byte ranges `runs` of `data` to `out` in order.
fn write_runs(runs: &[(usize, usize)], data: &[u8], out: &mut impl std::io::Write) -> std::io::Result<u64> {
    write_slices(runs.iter().map(|&(a, b)| &data[a..b]), out)
}

/// Writes `slices` to `out` in order, as few calls as it takes; returns the
/// bytes written.
fn write_slices<'a>(slices: impl IntoIterator<Item = &'a [u8]>, out: &mut impl std::io::Write) -> std::io::Result<u64> {
    let mut written = 0u64;
    let mut slices: Vec<std::io::IoSlice<'_>> = slices.into_iter().map(std::io::IoSlice::new).collect();
    let mut rest = &mut slices[..];
    while !rest.is_empty() {
        // At most IOV_MAX slices a call.
        let take = rest.len().min(1024);
        match out.write_vectored(&rest[..take]) {
            Ok(0) => return Err(std::io::ErrorKind::WriteZero.into()),
            Ok(n) => {
                written += n as u64;
                std::io::IoSlice::advance_slices(&mut rest, n);
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Pieces (37 bytes in tests) are whole lines, in order, ending
        /// after a `\n` but the last; a line longer than a piece is one
        /// piece; empty lines, a last line without its `\n`.
        #[test]
        fn pieces_are_whole_lines(data in prop::collection::vec(prop::sample::select(vec![b'a', b'\n', b'{', 0xc3, 0xa9]), 0..400)) {
            let pieces = line_pieces(&data);
            let mut at = 0;
            for (i, &(a, b)) in pieces.iter().enumerate() {
                prop_assert_eq!(a, at);
                prop_assert!(b > a);
                if i + 1 < pieces.len() {
                    prop_assert_eq!(data[b - 1], b'\n');
                    // The first line end at or after SPLIT_PIECE bytes in.
                    prop_assert_eq!(memchr::memchr(b'\n', &data[a + SPLIT_PIECE..]).map(|i| a + SPLIT_PIECE + i + 1), Some(b));
                }
                at = b;
            }
            prop_assert_eq!(at, data.len());
        }

        /// Pieces hold the runs' bytes in order, each `size` bytes but the last.
        #[test]
        fn pieces_are_the_runs_cut(lens in prop::collection::vec((0usize..5, 0usize..120), 0..30), size in 1usize..100) {
            let mut runs = Vec::new();
            let mut at = 0;
            for (gap, len) in lens {
                runs.push((at + gap, at + gap + len));
                at += gap + len;
            }
            let bytes = |rs: &[(usize, usize)]| rs.iter().flat_map(|&(a, b)| a..b).collect::<Vec<_>>();
            let cut = pieces(&runs, size);
            prop_assert_eq!(bytes(&cut.concat()), bytes(&runs));
            for (i, p) in cut.iter().enumerate() {
                let n = bytes(p).len();
                prop_assert!(n == size || (i + 1 == cut.len() && n > 0 && n < size), "piece {} of {} bytes", i, n);
            }
        }
    }
}
