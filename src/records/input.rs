//! Opening an input (a file or a file descriptor), recognising gzip and
//! zstd by their first bytes, and reading it in blocks of whole lines.

use std::fs::File;
use std::io::{self, BufReader, Cursor, Read, Seek, SeekFrom};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
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
    reader: Reader,
    pub compression: Compression,
    /// Bytes read from the file so far (compressed, when it is).
    pub consumed: Arc<AtomicU64>,
    /// The threads a plain file's large reads are shared out to.
    pool: Option<Arc<crate::parallel::Pool>>,
}

/// Where an input's bytes come from.
enum Reader {
    /// A plain regular file, read at offsets (`pos`: the next byte's), so
    /// that a large read can be shared out to threads: the kernel's copy
    /// of a gigabyte is a serial cap of a whole run on one thread.
    Plain { file: File, pos: u64 },
    /// A pipe, or a compressed file: read in order.
    Stream(Box<dyn Read + Send>),
}

/// A read of a plain file is shared out in pieces of at least this many
/// bytes (a smaller piece costs a thread more than it saves); tiny in
/// tests, so that their small files are read in many pieces.
#[cfg(not(test))]
const READ_PIECE: usize = 1 << 20;
#[cfg(test)]
const READ_PIECE: usize = 61;

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
            return Ok(Input { reader: Reader::Plain { file, pos: 0 }, compression, consumed, pool: None });
        }
        let raw = Counted { inner: file, count: Arc::clone(&consumed) };
        let whole = BufReader::with_capacity(1 << 20, Cursor::new(head[..got].to_vec()).chain(raw));
        let reader: Box<dyn Read + Send> = match compression {
            Compression::None => Box::new(whole),
            // Members one after another, as `gzip` writes and Python reads them.
            Compression::Gzip => Box::new(flate2::bufread::MultiGzDecoder::new(whole)),
            Compression::Zstd => Box::new(zstd::stream::read::Decoder::with_buffer(whole)?),
        };
        Ok(Input { reader: Reader::Stream(reader), compression, consumed, pool: None })
    }

    /// A plain file's reads of several pieces ([`READ_PIECE`]) are shared
    /// out to `pool`'s threads.
    pub fn with_pool(mut self, pool: Arc<crate::parallel::Pool>) -> Self {
        self.pool = Some(pool);
        self
    }

    /// Reads into `buf` until it holds `want` bytes more or the input ends;
    /// returns the bytes added (0 at the end). Room that cannot be had is an
    /// error of kind `OutOfMemory`, never an abort. On an error, the bytes
    /// read before it stay in `buf`.
    fn fill(&mut self, buf: &mut Vec<u8>, want: usize) -> io::Result<usize> {
        let start = buf.len();
        buf.try_reserve(want).map_err(|_| io::Error::from(io::ErrorKind::OutOfMemory))?;
        let result = match &mut self.reader {
            Reader::Stream(reader) => reader.take(want as u64).read_to_end(buf).map(|_| ()),
            Reader::Plain { file, pos } => {
                let result = read_at(file, *pos, buf, want, self.pool.as_deref());
                *pos += (buf.len() - start) as u64;
                result
            }
        };
        if self.compression == Compression::None {
            // The file's bytes are the block's (a plain file is read without `Counted`).
            self.consumed.fetch_add((buf.len() - start) as u64, Ordering::Relaxed);
        }
        result.map(|_| buf.len() - start)
    }
}

/// Appends up to `want` bytes of `file` from offset `pos` to `buf` (which
/// has the room), stopping early only at the file's end or an error: in
/// pieces of [`READ_PIECE`] bytes side by side on `pool`'s threads when
/// there are several. The bytes appended are those before the first piece that came
/// short, so they are always the file's bytes from `pos` on, in order
/// (a file that grows meanwhile is read on by the next call).
fn read_at(file: &File, pos: u64, buf: &mut Vec<u8>, want: usize, pool: Option<&crate::parallel::Pool>) -> io::Result<()> {
    let start = buf.len();
    let room = &mut buf.spare_capacity_mut()[..want];
    let piece = READ_PIECE;
    let read: Vec<(usize, Option<io::Error>)> = match pool {
        #[cfg(unix)]
        Some(pool) if want > piece => {
            use rayon::prelude::*;
            let run = || room.par_chunks_mut(piece).enumerate().map(|(i, part)| read_full_at(file, pos + (i * piece) as u64, part)).collect();
            pool.install(run).map_err(|e| io::Error::other(e.to_string()))?
        }
        _ => vec![read_full_at(file, pos, room)],
    };
    let mut got = 0;
    for (i, (n, error)) in read.into_iter().enumerate() {
        got += n;
        if let Some(error) = error {
            // SAFETY: the first `got` bytes of the room were written (every
            // piece before this one whole, then `n` of this one).
            unsafe { buf.set_len(start + got) };
            return Err(error);
        }
        if n < piece.min(want - i * piece) {
            break;
        }
    }
    // SAFETY: as above: whole pieces, then the first `n` bytes of the
    // short one.
    unsafe { buf.set_len(start + got) };
    Ok(())
}

/// Reads `out.len()` bytes of `file` from offset `pos` into `out`, fewer
/// only at the file's end or an error: the bytes written to the start of
/// `out`, and the error.
fn read_full_at(file: &File, pos: u64, out: &mut [std::mem::MaybeUninit<u8>]) -> (usize, Option<io::Error>) {
    let mut done = 0;
    while done < out.len() {
        match read_some_at(file, pos + done as u64, &mut out[done..]) {
            Ok(0) => break,
            Ok(n) => done += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return (done, Some(e)),
        }
    }
    (done, None)
}

#[cfg(unix)]
use super::positioned::read_some_at;

#[cfg(not(unix))]
fn read_some_at(mut file: &File, pos: u64, out: &mut [std::mem::MaybeUninit<u8>]) -> io::Result<usize> {
    // Elsewhere one thread reads, at the file's position (kept at `pos`).
    file.seek(SeekFrom::Start(pos))?;
    let len = out.len().min(1 << 20);
    let mut tmp = vec![0u8; len];
    let n = file.read(&mut tmp)?;
    for (o, &b) in out.iter_mut().zip(&tmp[..n]) {
        o.write(b);
    }
    Ok(n)
}

/// Block buffers given back when their chunk is dropped, for the next
/// blocks: fresh memory would be cleared by the kernel page by page (a
/// tenth of the reading thread's time), and the pages' first touch is slow
/// on virtual machines.
#[derive(Clone, Default, Debug)]
pub struct Spare(Arc<Mutex<Vec<Vec<u8>>>>);

impl Spare {
    /// At most this many buffers are kept: the blocks the pipeline holds
    /// (the core's hand-overs, the command's prefetch queue, the chunks
    /// waiting for its writer: about 13 for `dedup`; with 8, the rest were
    /// freed and came back as fresh pages, 3 % of the run's CPU time).
    const KEEP: usize = 16;

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
    /// The block stands for one line longer than the reader's limit, which
    /// is not kept (`data` is empty): its bytes are skipped.
    pub too_long: bool,
}

/// The input stopped early: a cut-short or corrupt compressed stream, or a
/// read error. `partial` is whether an unfinished line was dropped.
#[derive(Debug)]
pub struct ReadFailure {
    pub error: io::Error,
    pub partial: bool,
    pub compression: Compression,
}

/// Where a [`Blocks`] is with a line too long to hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum LongLine {
    No,
    /// Found after whole lines, which went first: its block comes next.
    Report,
    /// Its block went out: its bytes are read past next.
    Skip,
}

/// Lines longer than this are records no one meant (a file of zeros, a
/// dump with no line ends): by default they are bad lines, not buffers.
pub const MAX_LINE_BYTES: usize = 256 << 20;

/// Splits an input into blocks of whole lines of about `block_bytes` each
/// (a single longer line is a block of its own). A line longer than
/// `max_line` is not held: it becomes a block of its own marked
/// [`Block::too_long`], and its bytes are read past without being kept.
pub struct Blocks {
    input: Input,
    spare: Spare,
    block_bytes: usize,
    max_line: usize,
    carry: Vec<u8>,
    /// A failure to report after the block of whole lines read before it.
    pending: Option<ReadFailure>,
    /// A line found too long: to report, then to skip.
    long_line: LongLine,
    /// Set when the consumer is gone: a skip of an endless line stops.
    stop: Arc<AtomicBool>,
    done: bool,
}

impl Blocks {
    /// Blocks are read into buffers taken from `spare` when it has some
    /// (see [`Spare`]).
    pub fn new(input: Input, block_bytes: usize, spare: Spare) -> Self {
        Blocks {
            input,
            spare,
            block_bytes: block_bytes.max(1),
            max_line: MAX_LINE_BYTES,
            carry: Vec::new(),
            pending: None,
            long_line: LongLine::No,
            stop: Arc::new(AtomicBool::new(false)),
            done: false,
        }
    }

    /// Lines longer than `max_line` bytes are not held (see [`Blocks`]);
    /// the reading stops early once `stop` is set.
    pub fn with_limit(mut self, max_line: usize, stop: Arc<AtomicBool>) -> Self {
        self.max_line = max_line.max(1);
        self.stop = stop;
        self
    }

    fn block(&self, data: Vec<u8>, final_newline: bool) -> Block {
        Block { data, final_newline, consumed: self.input.consumed.load(Ordering::Relaxed), too_long: false }
    }

    fn failure(&mut self, error: io::Error, partial: bool) -> ReadFailure {
        self.done = true;
        ReadFailure { error, partial, compression: self.input.compression }
    }

    /// Reads past the rest of a line too long to hold, up to its `\n`
    /// (kept, with what follows, as the start of the next block).
    fn skip_line(&mut self) -> Result<(), ReadFailure> {
        let mut buf = std::mem::take(&mut self.carry);
        loop {
            if let Some(end) = memchr::memchr(b'\n', &buf) {
                self.carry = buf.split_off(end + 1);
                return Ok(());
            }
            if self.stop.load(Ordering::Relaxed) {
                self.done = true;
                return Ok(());
            }
            buf.clear();
            match self.input.fill(&mut buf, self.block_bytes.min(8 << 20)) {
                Ok(0) => {
                    self.done = true;
                    return Ok(());
                }
                Ok(_) => {}
                Err(error) => return Err(self.failure(error, false)),
            }
        }
    }
}

impl Iterator for Blocks {
    type Item = Result<Block, ReadFailure>;

    fn next(&mut self) -> Option<Self::Item> {
        if let Some(failure) = self.pending.take() {
            return Some(Err(failure));
        }
        match self.long_line {
            LongLine::No => {}
            LongLine::Report => {
                self.long_line = LongLine::Skip;
                return Some(Ok(Block { too_long: true, ..self.block(Vec::new(), true) }));
            }
            LongLine::Skip => {
                self.long_line = LongLine::No;
                if let Err(failure) = self.skip_line() {
                    return Some(Err(failure));
                }
            }
        }
        if self.done {
            return None;
        }
        let mut data = self.spare.take();
        if data.try_reserve(self.carry.len()).is_err() {
            return Some(Err(self.failure(io::ErrorKind::OutOfMemory.into(), true)));
        }
        data.extend_from_slice(&self.carry);
        self.carry.clear();
        let mut searched = 0;
        // Where the line being read starts: after the last `\n` seen.
        let mut line_start = memchr::memrchr(b'\n', &data).map_or(0, |i| i + 1);
        loop {
            let want = self.block_bytes.saturating_sub(data.len()).max(self.block_bytes / 4).max(1);
            // Never more than the longest line needs past its start.
            let want = want.min((line_start + self.max_line + 1).saturating_sub(data.len()).max(1));
            let before = data.len();
            let added = match self.input.fill(&mut data, want) {
                Ok(n) => n,
                Err(error) => {
                    let out_of_memory = error.kind() == io::ErrorKind::OutOfMemory;
                    let failure = self.failure(error, false);
                    // The whole lines read so far come first, then the failure.
                    return Some(match memchr::memrchr(b'\n', &data) {
                        Some(cut) if !out_of_memory => {
                            let partial = cut + 1 < data.len();
                            data.truncate(cut + 1);
                            self.pending = Some(ReadFailure { partial, ..failure });
                            Ok(self.block(data, true))
                        }
                        _ => Err(ReadFailure { partial: !data.is_empty(), ..failure }),
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
            if let Some(i) = memchr::memrchr(b'\n', &data[before..]) {
                line_start = before + i + 1;
            }
            if data.len() - line_start > self.max_line {
                // A line too long to hold: the whole lines before it first,
                // then a block that stands for it; its bytes are skipped.
                self.carry = data.split_off(line_start);
                if data.is_empty() {
                    self.spare.put(data);
                    self.long_line = LongLine::Skip;
                    return Some(Ok(Block { too_long: true, ..self.block(Vec::new(), true) }));
                }
                self.long_line = LongLine::Report;
                return Some(Ok(self.block(data, true)));
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

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::io::Write;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(48))]

        /// A plain file read in pieces on threads (pieces of 61 bytes in
        /// tests), by reads of any size, is the file, in order, and then
        /// its end, again and again.
        #[test]
        fn reads_in_pieces_are_the_file(bytes in prop::collection::vec(any::<u8>(), 0..4000), wants in prop::collection::vec(1usize..700, 1..40), threads in 1usize..4) {
            let mut f = tempfile::tempfile().unwrap();
            f.write_all(&bytes).unwrap();
            let mut input = Input::new(f).unwrap();
            // Gzip and zstd magic can open the random bytes: those are streams.
            prop_assume!(input.compression == Compression::None);
            input = input.with_pool(Arc::new(crate::parallel::Pool::new(Some(threads)).unwrap()));
            let mut got = Vec::new();
            let mut i = 0;
            loop {
                let before = got.len();
                let n = input.fill(&mut got, wants[i % wants.len()]).unwrap();
                prop_assert_eq!(n, got.len() - before);
                prop_assert!(n <= wants[i % wants.len()]);
                if n == 0 {
                    break;
                }
                i += 1;
            }
            prop_assert_eq!(&got, &bytes);
            prop_assert_eq!(input.fill(&mut got, 100).unwrap(), 0);
            prop_assert_eq!(input.consumed.load(Ordering::Relaxed), bytes.len() as u64);
        }
    }

    /// A file that grows between reads is read on from where the last read
    /// stopped; a file cut shorter ends the reading there.
    #[test]
    fn a_file_that_changes_is_read_in_order() {
        let path = tempfile::NamedTempFile::new().unwrap();
        std::fs::write(path.path(), [b'a'; 1000]).unwrap();
        let mut other = std::fs::OpenOptions::new().append(true).open(path.path()).unwrap();
        let mut input = Input::new(File::open(path.path()).unwrap()).unwrap().with_pool(Arc::new(crate::parallel::Pool::new(Some(3)).unwrap()));
        let mut got = Vec::new();
        assert_eq!(input.fill(&mut got, 600).unwrap(), 600);
        other.write_all(&[b'b'; 500]).unwrap();
        assert_eq!(input.fill(&mut got, 5000).unwrap(), 900);
        assert_eq!(&got[..1000], &[b'a'; 1000][..]);
        assert_eq!(&got[1000..], &[b'b'; 500][..]);
        other.set_len(100).unwrap();
        assert_eq!(input.fill(&mut got, 5000).unwrap(), 0);
    }
}
