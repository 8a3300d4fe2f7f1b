//! The on-disk container of index files: tagged sections of bytes, each with a
//! checksum, saved atomically and loaded by mmap or into memory.
//!
//! # Layout (format version 1)
//!
//! Little-endian throughout. Offsets are in bytes from the start of the file.
//!
//! ```text
//! header, 64 bytes
//!    0   8  magic 89 52 53 49 4d 48 58 0a (b"\x89RSIMHX\n")
//!    8   4  u32 format version: 1, or 2 for a file with sections version 1 lacks
//!   12   4  u32 SPEC version of the fingerprints (crate::SPEC_VERSION)
//!   16   4  u32 section count n
//!   20   4  u32 flags: 0 (a reader refuses any other value)
//!   24   8  u64 file length in bytes
//!   32  24  reserved: zero
//!   56   4  u32 crc32c of the section table (bytes 64 .. 64 + 32 n)
//!   60   4  u32 crc32c of header bytes 0..60
//! section table, n entries of 32 bytes from byte 64
//!   +0   8  tag: 1 to 8 printable ASCII bytes, zero padded ("TABLE\0\0\0")
//!   +8   8  u64 offset of the section's first byte
//!  +16   8  u64 length of the section in bytes
//!  +24   4  u32 crc32c of the section's bytes
//!  +28   4  reserved: zero
//! section data
//!   in table order: each section starts at a multiple of 64 at or after the
//!   end of the one before (of the table, for the first); the gaps between
//!   are zero bytes; the file ends where the last section ends (where the
//!   table ends when n = 0). Tags may repeat.
//! ```
//!
//! The magic starts with a non-ASCII byte and ends with `\n`, as PNG's does,
//! so text files never match it and a newline-mangling transfer breaks it.
//! Sections start on 64-byte boundaries so that a loaded section can be viewed
//! in place as an array of `u64` ([`Bytes::as_u64s`]), starting on a cache
//! line. Bytes 0..12 (magic and format version) keep their place in every
//! future format version: an old reader can tell a newer file from a corrupt
//! one before it parses anything else.
//!
//! [`Container::open`] checks all of the above, and every section's checksum,
//! before it hands out a single byte, so decoders of sections only meet bytes
//! that some writer produced. Padding is outside every checksum, hence the
//! check that it is zero.
//!
//! Only little-endian targets compile: the views reinterpret the file's
//! little-endian bytes in place, and every wheel we ship is little-endian.

#[cfg(target_endian = "big")]
compile_error!("rsimhash reads its index files in place as little-endian integers: big-endian targets are not supported");

mod bytes;
mod guard;
mod open;
mod write;

#[cfg(test)]
mod tests;

use std::fmt;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};

use rayon::prelude::*;

use bytes::Buffer;
pub use bytes::Bytes;
pub use write::write_atomic;
pub(crate) use write::{sync_dir, write_atomic_then, TempFile};

use crate::{Error, FileProblem, Result};

/// The newest format version this crate reads. A file records the oldest
/// version whose readers know all of its sections, so that an older reader
/// refuses a file it would misread (as "written by a newer rsimhash")
/// instead of passing over a section it does not know:
/// - 1: every index keyed by ints, with or without a `SimilarIndex`'s
///   sections (files of version 1 are written byte for byte as before);
/// - 2: version 1 and the `NAMEIDS`/`NAMEOFFS`/`NAMES` sections of an index
///   keyed by strings (`crate::index::names`).
pub const FORMAT_VERSION: u32 = 2;
/// The version of files with sections of version 1 only.
pub const FIRST_FORMAT_VERSION: u32 = 1;

/// The name of a section: printable ASCII, zero padded to 8 bytes.
pub type Tag = [u8; 8];

const MAGIC: [u8; 8] = *b"\x89RSIMHX\n";
const HEADER_LEN: usize = 64;
const ENTRY_LEN: usize = 32;
/// Sections start at multiples of this.
const ALIGN: u64 = 64;

/// Header field offsets.
const AT_VERSION: usize = 8;
const AT_SPEC: usize = 12;
const AT_COUNT: usize = 16;
const AT_FLAGS: usize = 20;
const AT_FILE_LEN: usize = 24;
const RESERVED: Range<usize> = 32..56;
const AT_TABLE_CRC: usize = 56;
const AT_HEADER_CRC: usize = 60;

/// Sections are checksummed in chunks of this size on separate threads, and
/// the chunks' checksums joined with `crc32c_combine`: one 500 MB section
/// then still keeps every core busy.
const CRC_CHUNK: usize = 4 << 20;

/// A loaded and fully verified index file.
pub struct Container {
    buf: Arc<Buffer>,
    sections: Vec<(Tag, Range<usize>)>,
    /// Each section's checksum, as verified.
    crcs: Vec<u32>,
    expect_spec: u32,
}

impl Container {
    /// The tags of the sections, in file order.
    pub fn tags(&self) -> impl Iterator<Item = Tag> + '_ {
        self.sections.iter().map(|(tag, _)| *tag)
    }

    /// The first section with this tag.
    ///
    /// # Errors
    /// [`Error::BadFile`] naming the tag when the file has no such section.
    pub fn section(&self, tag: Tag) -> Result<Bytes> {
        match self.sections.iter().find(|(t, _)| *t == tag) {
            Some((_, range)) => Ok(Bytes::new(&self.buf, range.clone())),
            None => Err(bad_file(self.path(), format!("it has no {} section", tag_name(&tag)))),
        }
    }

    /// All sections with this tag, in file order.
    pub fn sections(&self, tag: Tag) -> Vec<Bytes> {
        let matching = self.sections.iter().filter(|(t, _)| *t == tag);
        matching.map(|(_, range)| Bytes::new(&self.buf, range.clone())).collect()
    }

    /// The path the container was opened from.
    pub fn path(&self) -> &Path {
        &self.buf.path
    }

    /// Whether the sections are views of a memory mapping (else of a heap copy).
    pub fn is_mapped(&self) -> bool {
        self.buf.is_mapped()
    }

    /// What an index loaded from this file keeps of it: see [`Origin`].
    pub fn origin(&self) -> Origin {
        Origin {
            damaged: Arc::clone(&self.buf.damaged),
            buf: Arc::downgrade(&self.buf),
            path: self.buf.path.clone(),
            sections: self.sections.clone(),
            crcs: self.crcs.clone(),
            expect_spec: self.expect_spec,
        }
    }
}

/// The file an index was loaded from, as the index keeps it: whether its
/// bytes were found changed while in use (a decoder met bytes that no longer
/// decode, or the mapped file was cut short), and, while views of it are
/// still in use, the bytes themselves, to verify again on demand. It does
/// not keep the file's memory alive.
#[derive(Clone)]
pub struct Origin {
    damaged: Arc<AtomicBool>,
    buf: Weak<Buffer>,
    path: PathBuf,
    sections: Vec<(Tag, Range<usize>)>,
    crcs: Vec<u32>,
    expect_spec: u32,
}

impl Origin {
    /// Whether the file is still as it was loaded, as far as the reads so far
    /// tell: one atomic load while no file anywhere was found changed.
    ///
    /// # Errors
    /// [`Error::Changed`] once a read of the file met bytes that changed.
    #[inline]
    pub fn intact(&self) -> Result<()> {
        if !guard::ANY_DAMAGE.load(Ordering::Acquire) {
            return Ok(());
        }
        let hit = self.damaged.load(Ordering::Acquire) || self.buf.upgrade().is_some_and(|b| b.is_damaged());
        if hit {
            return Err(self.changed("it was rewritten or cut short in place after it was loaded (load it again)".into()));
        }
        Ok(())
    }

    /// Checks every byte still in use against the checksums verified when
    /// it was loaded (the whole file while any of its tables is in use).
    ///
    /// # Errors
    /// [`Error::Changed`] naming the first part that changed.
    pub fn verify(&self) -> Result<()> {
        if let Some(buf) = self.buf.upgrade() {
            let now = open::check(buf.bytes(), self.expect_spec);
            let problem = match now {
                Err(problem) => Some(problem.text),
                Ok((sections, crcs)) if sections != self.sections || crcs != self.crcs => Some("another index file was written over it in place".to_string()),
                Ok(_) => None,
            };
            if let Some(problem) = problem {
                self.damaged.store(true, Ordering::Release);
                guard::ANY_DAMAGE.store(true, Ordering::Release);
                return Err(self.changed(problem));
            }
        }
        self.intact()
    }

    /// Whether the file is mapped and views of it are still in use: only
    /// then can it change under the index.
    pub fn mapped_in_use(&self) -> bool {
        self.buf.upgrade().is_some_and(|b| b.is_mapped())
    }

    fn changed(&self, problem: String) -> Error {
        Error::Changed { path: self.path.display().to_string(), problem }
    }
}

impl fmt::Debug for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Origin").field("path", &self.path).field("in_use", &(self.buf.strong_count() > 0)).finish()
    }
}

impl fmt::Debug for Container {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let sections: Vec<_> = self.sections.iter().map(|(t, r)| (tag_name(t), r.clone())).collect();
        f.debug_struct("Container").field("path", &self.path()).field("mapped", &self.is_mapped()).field("sections", &sections).finish()
    }
}

/// crc32c of each part, on rayon threads.
fn checksums(parts: &[&[u8]]) -> Vec<u32> {
    let chunks: Vec<(usize, &[u8])> = parts.iter().enumerate().flat_map(|(i, p)| p.chunks(CRC_CHUNK).map(move |c| (i, c))).collect();
    let crcs: Vec<u32> = chunks.par_iter().map(|(_, c)| crc32c::crc32c(c)).collect();
    // An empty part has no chunks and keeps 0, the crc32c of no bytes.
    let mut out = vec![0; parts.len()];
    for ((i, chunk), crc) in chunks.iter().zip(crcs) {
        out[*i] = crc32c::crc32c_combine(out[*i], crc, chunk.len());
    }
    out
}

/// Whether `tag` is 1 to 8 printable ASCII bytes followed by zeros.
fn valid_tag(tag: &Tag) -> bool {
    let len = tag.iter().position(|&b| b == 0).unwrap_or(tag.len());
    len > 0 && tag[..len].iter().all(|b| b.is_ascii_graphic()) && tag[len..].iter().all(|&b| b == 0)
}

/// The tag quoted for messages, e.g. `"TABLE"`, with odd bytes escaped.
fn tag_name(tag: &Tag) -> String {
    let len = tag.iter().rposition(|&b| b != 0).map_or(0, |i| i + 1);
    format!("\"{}\"", tag[..len].escape_ascii())
}

fn bad_file(path: &Path, problem: impl Into<String>) -> Error {
    Problem::from(problem.into()).at(path)
}

/// What [`open::check`] finds wrong with a file, before it names the file.
#[derive(Debug)]
pub(crate) struct Problem {
    pub kind: FileProblem,
    pub text: String,
    pub expected: Option<String>,
    pub found: Option<String>,
}

impl Problem {
    fn new(kind: FileProblem, text: String, expected: impl ToString, found: impl ToString) -> Problem {
        Problem { kind, text, expected: Some(expected.to_string()), found: Some(found.to_string()) }
    }

    pub(crate) fn at(self, path: &Path) -> Error {
        Error::BadFile { path: path.display().to_string(), problem: self.text, kind: self.kind, expected: self.expected, found: self.found }
    }
}

/// A problem of the file's structure.
impl From<String> for Problem {
    fn from(text: String) -> Problem {
        Problem { kind: FileProblem::Format, text, expected: None, found: None }
    }
}

/// A mapper from `io::Error` to [`Error::Io`], for `map_err`.
fn io_error<'a>(action: &'static str, path: &'a Path) -> impl FnOnce(std::io::Error) -> Error + 'a {
    move |source| Error::Io { path: path.display().to_string(), action, source }
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().unwrap())
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().unwrap())
}
