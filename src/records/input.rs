//! Opening an input (a file or a file descriptor), recognising gzip and
//! zstd by their first bytes, and reading it in blocks of whole lines.

use std::fs::File;
use std::io::{self, BufReader, Cursor, Read, Seek, SeekFrom};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// How an input is compressed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compression {
    None,
    Gzip,
    Zstd,
}

impl Compression {
    /// The compression the first bytes of a stream announce.
    pub fn sniff(head: &[u8]) -> Self {
        if head.starts_with(&[0x1f, 0x8b]) {
            Compression::Gzip
        } else if head.starts_with(&[0x28, 0xb5, 0x2f, 0xfd]) {
            Compression::Zstd
        } else {
            Compression::None
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Compression::None => "plain",
            Compression::Gzip => "gzip",
            Compression::Zstd => "zstd",
        }
    }
}

/// Counts the bytes read through it (the file's, before decompression), for
/// a progress bar read from another thread.
struct Counted<R> {
    inner: R,
    count: Arc<AtomicU64>,
}

impl<R: Read> Read for Counted<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.count.fetch_add(n as u64, Ordering::Relaxed);
        Ok(n)
    }
}

/// An input's decompressed bytes.
pub struct Input {
    reader: Box<dyn Read + Send>,
    pub compression: Compression,
    /// Bytes read from the file so far (compressed, when it is).
    pub consumed: Arc<AtomicU64>,
}

impl Input {
    /// Opens `file` (a path's, or a duplicate of stdin's descriptor).
    ///
    /// # Errors
    /// The error of reading its first bytes.
    pub fn new(mut file: File) -> io::Result<Input> {
        let consumed = Arc::new(AtomicU64::new(0));
        // A pipe may give fewer than four bytes at a time.
        let mut head = [0u8; 4];
        let mut got = 0;
        while got < head.len() {
            match file.read(&mut head[got..]) {
                Ok(0) => break,
                Ok(n) => got += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            }
        }
        consumed.store(got as u64, Ordering::Relaxed);
        let compression = Compression::sniff(&head[..got]);
        // A plain regular file is read as it is, from its start again: reading
        // into a block's spare capacity then needs no clearing first.
        if compression == Compression::None && file.seek(SeekFrom::Start(0)).is_ok() {
            consumed.store(0, Ordering::Relaxed);
            return Ok(Input { reader: Box::new(file), compression, consumed });
        }
        let raw = Counted { inner: file, count: Arc::clone(&consumed) };
        let whole = BufReader::with_capacity(1 << 20, Cursor::new(head[..got].to_vec()).chain(raw));
        let reader: Box<dyn Read + Send> = match compression {
            Compression::None => Box::new(whole),
            // Members one after another, as `gzip` writes and Python reads them.
            Compression::Gzip => Box::new(flate2::bufread::MultiGzDecoder::new(whole)),
            Compression::Zstd => Box::new(zstd::stream::read::Decoder::with_buffer(whole)?),
        };
        Ok(Input { reader, compression, consumed })
    }

    /// Reads into `buf` until it holds `want` bytes more or the input ends;
    /// returns the bytes added (0 at the end).
    fn fill(&mut self, buf: &mut Vec<u8>, want: usize) -> io::Result<usize> {
        let start = buf.len();
        buf.reserve(want);
        let result = (&mut self.reader).take(want as u64).read_to_end(buf);
        if self.compression == Compression::None {
            // The file's bytes are the block's (a plain file is read without `Counted`).
            self.consumed.fetch_add((buf.len() - start) as u64, Ordering::Relaxed);
        }
        result.map(|_| buf.len() - start)
    }
}

/// Block buffers given back when their chunk is dropped, for the next
/// blocks: fresh memory would be cleared by the kernel page by page (a
/// tenth of the reading thread's time), and the pages' first touch is slow
/// on virtual machines.
#[derive(Clone, Default, Debug)]
pub struct Spare(Arc<Mutex<Vec<Vec<u8>>>>);

impl Spare {
    /// At most this many buffers are kept: the blocks the pipeline holds.
    const KEEP: usize = 8;

    /// A buffer, empty, from the spares if there is one.
    pub fn take(&self) -> Vec<u8> {
        let mut data = self.0.lock().unwrap_or_else(|e| e.into_inner()).pop().unwrap_or_default();
        data.clear();
        data
    }

    /// Gives a buffer back.
    pub fn put(&self, data: Vec<u8>) {
        let mut spares = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if spares.len() < Self::KEEP {
            spares.push(data);
        }
    }
}

/// A block of whole lines of the decompressed input.
#[derive(Debug)]
pub struct Block {
    /// The lines, each ending in `\n` except, at the end of the input, a
    /// last one without it.
    pub data: Vec<u8>,
    /// Whether the block ends with `\n` (false only for the input's last line).
    pub final_newline: bool,
    /// The file's bytes read when this block was cut (compressed, when it is).
    pub consumed: u64,
}

/// The input stopped early: a cut-short or corrupt compressed stream, or a
/// read error. `partial` is whether an unfinished line was dropped.
#[derive(Debug)]
pub struct ReadFailure {
    pub error: io::Error,
    pub partial: bool,
    pub compression: Compression,
}

/// Splits an input into blocks of whole lines of about `block_bytes` each
/// (a single longer line is a block of its own).
pub struct Blocks {
    input: Input,
    spare: Spare,
    block_bytes: usize,
    carry: Vec<u8>,
    /// A failure to report after the block of whole lines read before it.
    pending: Option<ReadFailure>,
    done: bool,
}

impl Blocks {
    /// Blocks are read into buffers taken from `spare` when it has some
    /// (see [`Spare`]).
    pub fn new(input: Input, block_bytes: usize, spare: Spare) -> Self {
        Blocks { input, spare, block_bytes: block_bytes.max(1), carry: Vec::new(), pending: None, done: false }
    }

    fn block(&self, data: Vec<u8>, final_newline: bool) -> Block {
        Block { data, final_newline, consumed: self.input.consumed.load(Ordering::Relaxed) }
    }
}

impl Iterator for Blocks {
    type Item = Result<Block, ReadFailure>;

    fn next(&mut self) -> Option<Self::Item> {
        if let Some(failure) = self.pending.take() {
            return Some(Err(failure));
        }
        if self.done {
            return None;
        }
        let mut data = self.spare.take();
        data.extend_from_slice(&self.carry);
        self.carry.clear();
        let mut searched = 0;
        loop {
            let want = self.block_bytes.saturating_sub(data.len()).max(self.block_bytes / 4).max(1);
            let added = match self.input.fill(&mut data, want) {
                Ok(n) => n,
                Err(error) => {
                    self.done = true;
                    let compression = self.input.compression;
                    // The whole lines read so far come first, then the failure.
                    return Some(match memchr::memrchr(b'\n', &data) {
                        Some(cut) => {
                            let partial = cut + 1 < data.len();
                            data.truncate(cut + 1);
                            self.pending = Some(ReadFailure { error, partial, compression });
                            Ok(self.block(data, true))
                        }
                        None => Err(ReadFailure { error, partial: !data.is_empty(), compression }),
                    });
                }
            };
            if added == 0 {
                self.done = true;
                if data.is_empty() {
                    return None;
                }
                let complete = data.last() == Some(&b'\n');
                return Some(Ok(self.block(data, complete)));
            }
            if data.len() >= self.block_bytes {
                if let Some(cut) = memchr::memrchr(b'\n', &data[searched..]) {
                    let cut = searched + cut;
                    self.carry.extend_from_slice(&data[cut + 1..]);
                    data.truncate(cut + 1);
                    return Some(Ok(self.block(data, true)));
                }
                searched = data.len();
            }
        }
    }
}
