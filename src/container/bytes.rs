//! [`Bytes`]: cheap shared views of a loaded file (or of bytes built in memory).

use std::fmt;
use std::ops::{Deref, Range};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use memmap2::Mmap;

use super::bad_file;
use super::guard::{Watch, ANY_DAMAGE};
use crate::Result;

/// What a loaded file lives in.
pub(super) enum Storage {
    Mapped(Mmap),
    /// `Vec<u64>` so that the bytes are 8-byte aligned; the second field is
    /// the length in bytes.
    Words(Vec<u64>, usize),
    /// Bytes built in memory whose start happened to be 8-byte aligned.
    Vec(Vec<u8>),
}

/// The storage and the path that error messages name.
pub(super) struct Buffer {
    pub storage: Storage,
    pub path: PathBuf,
    /// The mapping's registration with the SIGBUS handler (see `guard`).
    pub watch: Option<Watch>,
    /// Set when a decoder found bytes that changed since they were checked,
    /// or (when the buffer is dropped) the mapping was hit: shared with the
    /// index that was loaded from it, which outlives its views.
    pub damaged: Arc<AtomicBool>,
}

impl Drop for Buffer {
    fn drop(&mut self) {
        // Unregistered before the fields drop and the mapping is unmapped.
        if let Some(watch) = self.watch.take() {
            if watch.hit() {
                self.damaged.store(true, Ordering::Release);
            }
        }
    }
}

impl Buffer {
    pub fn new(storage: Storage, path: PathBuf) -> Buffer {
        Buffer { storage, path, watch: None, damaged: Arc::new(AtomicBool::new(false)) }
    }

    /// Whether the bytes were found changed while in use.
    pub fn is_damaged(&self) -> bool {
        self.damaged.load(Ordering::Acquire) || self.watch.as_ref().is_some_and(Watch::hit)
    }

    pub fn bytes(&self) -> &[u8] {
        match &self.storage {
            Storage::Mapped(map) => map,
            Storage::Words(words, len) => &bytemuck::cast_slice(words)[..*len],
            Storage::Vec(v) => v,
        }
    }

    pub fn is_mapped(&self) -> bool {
        matches!(self.storage, Storage::Mapped(_))
    }
}

/// A cheap-to-clone, immutable view of part of a loaded file: an `Arc` to the
/// mapping or heap buffer, and a range of it. The file's memory lives as long
/// as any view of it.
#[derive(Clone)]
pub struct Bytes {
    buf: Arc<Buffer>,
    range: Range<usize>,
}

impl Bytes {
    pub(super) fn new(buf: &Arc<Buffer>, range: Range<usize>) -> Bytes {
        Bytes { buf: Arc::clone(buf), range }
    }

    /// Bytes built in memory rather than read from a file. Copies only if
    /// the vector's start is not 8-byte aligned (allocators nearly always
    /// align it), so that [`Bytes::as_u64s`] works on the result.
    pub fn from_vec(v: Vec<u8>) -> Bytes {
        let len = v.len();
        let storage = if (v.as_ptr() as usize).is_multiple_of(8) {
            Storage::Vec(v)
        } else {
            let mut words = vec![0u64; len.div_ceil(8)];
            bytemuck::cast_slice_mut(&mut words)[..len].copy_from_slice(&v);
            Storage::Words(words, len)
        };
        let buf = Arc::new(Buffer::new(storage, PathBuf::from("(bytes in memory)")));
        Bytes { buf, range: 0..len }
    }

    /// Records that these bytes no longer decode as they did when checked:
    /// the file changed under its mapping. The index reading them then
    /// refuses to answer (see [`super::Origin::intact`]).
    #[cold]
    pub(crate) fn mark_damaged(&self) {
        self.buf.damaged.store(true, Ordering::Release);
        ANY_DAMAGE.store(true, Ordering::Release);
    }

    pub fn as_slice(&self) -> &[u8] {
        &self.buf.bytes()[self.range.clone()]
    }

    pub fn len(&self) -> usize {
        self.range.len()
    }

    pub fn is_empty(&self) -> bool {
        self.range.is_empty()
    }

    /// The bytes as little-endian `u64`s, without copying.
    ///
    /// # Errors
    /// [`Error::BadFile`](crate::Error::BadFile) if the length is not a
    /// multiple of 8 or the start is not 8-byte aligned (never the case for a
    /// whole section, which starts at a multiple of 64).
    pub fn as_u64s(&self) -> Result<&[u64]> {
        self.cast("u64")
    }

    /// The bytes as little-endian `u32`s, without copying.
    ///
    /// # Errors
    /// As [`Bytes::as_u64s`], for 4 bytes.
    pub fn as_u32s(&self) -> Result<&[u32]> {
        self.cast("u32")
    }

    /// A view of `range` (relative to this view), sharing the same memory.
    ///
    /// # Errors
    /// [`Error::BadFile`](crate::Error::BadFile) if the range is reversed or
    /// runs past the end: offsets read from a file are data, not invariants.
    pub fn slice(&self, range: Range<usize>) -> Result<Bytes> {
        if range.start > range.end || range.end > self.len() {
            let problem = format!(
                "bytes {}..{} of a {}-byte part (bytes {}..{} of the file) are out of range",
                range.start,
                range.end,
                self.len(),
                self.range.start,
                self.range.end
            );
            return Err(self.bad_file(problem));
        }
        let start = self.range.start + range.start;
        Ok(Bytes { buf: Arc::clone(&self.buf), range: start..start + range.len() })
    }

    /// [`Error::BadFile`](crate::Error::BadFile) naming the file this view
    /// belongs to: for decoders of sections that find something wrong.
    pub(crate) fn bad_file(&self, problem: impl Into<String>) -> crate::Error {
        bad_file(&self.buf.path, problem)
    }

    fn cast<T: bytemuck::Pod>(&self, name: &str) -> Result<&[T]> {
        let bytes = self.as_slice();
        let size = std::mem::size_of::<T>();
        // An empty view may sit at any address (an empty Vec's is dangling).
        if bytes.is_empty() {
            return Ok(&[]);
        }
        bytemuck::try_cast_slice(bytes).map_err(|_| {
            let why = if !bytes.len().is_multiple_of(size) {
                format!("{} bytes are not a whole number of {size}-byte values", bytes.len())
            } else {
                format!("they do not start on a {size}-byte boundary")
            };
            let (start, end) = (self.range.start, self.range.end);
            self.bad_file(format!("bytes {start}..{end} cannot be read as {name} values: {why}"))
        })
    }
}

impl Deref for Bytes {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        self.as_slice()
    }
}

impl AsRef<[u8]> for Bytes {
    fn as_ref(&self) -> &[u8] {
        self.as_slice()
    }
}

impl fmt::Debug for Bytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Bytes({}, bytes {}..{})", self.buf.path.display(), self.range.start, self.range.end)
    }
}
