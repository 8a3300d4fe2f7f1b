//! Records of JSON-lines inputs read, parsed and fingerprinted in the core
//! (and fingerprint files read the same way, see [`hashes`]).
//!
//! [`JsonLinesReader`] is a pipeline of two threads ahead of its consumer:
//! one reads and decompresses the input into blocks of whole lines
//! ([`input::Blocks`]), the other parses each block's lines and
//! fingerprints their texts on the rayon pool ([`chunk::RecordChunk`]).
//! Each hand-over holds two blocks, so memory is bounded by the block size
//! (and the longest line), never by the input; the consumer (the index,
//! the writer) works on one chunk while the next ones are read and parsed.

pub mod chunk;
pub mod hashes;
pub mod input;
pub mod json;
mod json_scan;
#[cfg(unix)]
mod positioned;
pub mod rows;
mod wordwise;

use std::fs::File;
use std::panic::{self, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

pub use chunk::{Entry, RecordChunk, Status};
pub use hashes::HashFormat;
pub use input::{Compression, Input, ReadFailure};
pub use json::{Fields, Id, Line};

use crate::fingerprint::Shingling;

/// What the pipeline hands over: a chunk, or the failure that ended the input
/// (the line it happened at: the first line not read whole).
#[derive(Debug)]
pub enum Item {
    Chunk(RecordChunk),
    /// A `lines` block whose every line is a number or blank, or a hash
    /// TSV's block past its header whose every line is a record or blank,
    /// read for its values (and the TSV's ids) alone
    /// ([`ReaderOptions::values_only`]).
    Values {
        fingerprints: Vec<u64>,
        ids: Option<chunk::PackedIds>,
        lines: u64,
        nbytes: usize,
        consumed: u64,
    },
    Failed {
        failure: ReadFailure,
        line: u64,
    },
}

/// How a [`JsonLinesReader`] reads.
#[derive(Debug, Clone)]
pub struct ReaderOptions {
    pub fields: Fields,
    /// Fingerprint each record's text this way, in the parsing pass.
    pub shingling: Option<Shingling>,
    /// Rayon threads for parsing (`None`: the default pool).
    pub threads: Option<usize>,
    /// About this many decompressed bytes a chunk.
    pub block_bytes: usize,
    /// A fingerprint file instead of JSON lines (`fields` and `shingling`
    /// are then unused).
    pub hashes: Option<HashFormat>,
    /// Lines longer than this are bad lines ([`Status::TooLong`]), never
    /// held (default [`input::MAX_LINE_BYTES`], 256 MiB).
    pub max_line_bytes: usize,
    /// A fingerprint file's consumer wants the values (and a TSV's ids)
    /// alone: blocks of plain numbers, or of well-formed TSV records past
    /// the header, come as [`Item::Values`], any other as a chunk.
    pub values_only: bool,
}

/// The chunks of one JSON-lines input, read and parsed ahead on threads of
/// their own. Dropping it stops them (a thread blocked reading a pipe ends
/// when the pipe gives data or closes).
pub struct JsonLinesReader {
    /// In a mutex only to be `Sync` (one consumer takes the chunks).
    rx: Mutex<Receiver<crate::Result<Item>>>,
    pub compression: Compression,
    /// Set when dropped: the reading thread stops skipping an endless line.
    stop: Arc<AtomicBool>,
    pool: Arc<crate::parallel::Pool>,
}

/// A block as the consumer gets it, its first line `next_line` (moved past it).
fn block_item(block: input::Block, next_line: &mut u64, hashes: &mut Option<HashFormat>, options: &ReaderOptions, spare: &input::Spare) -> Item {
    #[cfg(test)]
    tests::maybe_panic(&block.data);
    if options.values_only && !block.too_long {
        // A TSV's header is read by `parse_block`, which sets its columns.
        let values = match &*hashes {
            Some(HashFormat::Lines) => hashes::lines_values(&block.data).map(|(v, n)| (v, None, n)),
            Some(HashFormat::Tsv { columns: Some(c), .. }) if *next_line > 1 => hashes::tsv_values(&block.data, *c).map(|(v, ids, n)| (v, Some(ids), n)),
            _ => None,
        };
        if let Some((fingerprints, ids, lines)) = values {
            *next_line += lines;
            let (nbytes, consumed) = (block.data.len(), block.consumed);
            spare.put(block.data);
            return Item::Values { fingerprints, ids, lines, nbytes, consumed };
        }
    }
    let chunk = match hashes.as_mut() {
        Some(format) => hashes::parse_block(block, *next_line, format, Some(spare.clone())),
        None => RecordChunk::parse(block, *next_line, &options.fields, options.shingling, Some(spare.clone())),
    };
    *next_line += chunk.lines;
    Item::Chunk(chunk)
}

impl Drop for JsonLinesReader {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

impl JsonLinesReader {
    /// Starts reading `file`.
    ///
    /// # Errors
    /// [`crate::Error::Io`] when its first bytes cannot be read or a thread
    /// cannot be started.
    pub fn new(file: File, name: &str, options: ReaderOptions) -> crate::Result<Self> {
        let io_error = |action, source| crate::Error::Io { path: name.to_owned(), action, source };
        let input = Input::new(file).map_err(|e| io_error("read", e))?;
        let compression = input.compression;
        let spare = input::Spare::default();
        let stop = Arc::new(AtomicBool::new(false));
        let pool = Arc::new(crate::parallel::Pool::new(options.threads)?);
        // A plain file's reads are shared out to the parsing threads.
        let input = input.with_pool(Arc::clone(&pool));
        let blocks = input::Blocks::new(input, options.block_bytes, spare.clone()).with_limit(options.max_line_bytes, Arc::clone(&stop));
        // Two blocks in each hand-over: a consumer that stalls on a slow
        // write does not stall the parsing behind it at once.
        let (block_tx, block_rx) = sync_channel(2);
        let (chunk_tx, chunk_rx) = sync_channel(2);
        // A thread that panics ends its hand-over as the input's end would:
        // the reading thread leaves its panic here, and the parsing thread
        // (which catches its own) hands it on as an error, never as a
        // short input.
        let read_panic: Arc<Mutex<Option<crate::Error>>> = Arc::default();
        let read_panicked = Arc::clone(&read_panic);
        thread::Builder::new()
            .name("rsimhash-read".into())
            .spawn(move || {
                let read = panic::catch_unwind(AssertUnwindSafe(|| {
                    for block in blocks {
                        #[cfg(test)]
                        if let Ok(block) = &block {
                            tests::maybe_panic_reading(&block.data);
                        }
                        if block_tx.send(block).is_err() {
                            return; // the consumer is gone
                        }
                    }
                }));
                if let Err(payload) = read {
                    *read_panicked.lock().unwrap_or_else(|e| e.into_inner()) = Some(crate::Error::from_panic(payload));
                }
                drop(block_tx); // after the panic is left: the parsing thread looks once the hand-over ends
            })
            .map_err(|e| io_error("start a thread to read", e))?;
        let parse_pool = Arc::clone(&pool);
        thread::Builder::new()
            .name("rsimhash-parse".into())
            .spawn(move || {
                let mut next_line = 1;
                let mut hashes = options.hashes.clone();
                for block in block_rx {
                    let item = match block {
                        Ok(block) => {
                            panic::catch_unwind(AssertUnwindSafe(|| parse_pool.install(|| block_item(block, &mut next_line, &mut hashes, &options, &spare))))
                                .unwrap_or_else(|payload| Err(crate::Error::from_panic(payload)))
                        }
                        // Out of memory is not a property of the input: an error.
                        Err(failure) if failure.error.kind() == std::io::ErrorKind::OutOfMemory => {
                            Err(crate::Error::OutOfMemory { bytes: options.block_bytes as u64, what: "a block of input lines" })
                        }
                        Err(failure) => Ok(Item::Failed { failure, line: next_line }),
                    };
                    let stop = !matches!(item, Ok(Item::Chunk(_) | Item::Values { .. }));
                    if chunk_tx.send(item).is_err() || stop {
                        return;
                    }
                }
                if let Some(error) = read_panic.lock().unwrap_or_else(|e| e.into_inner()).take() {
                    let _ = chunk_tx.send(Err(error));
                }
            })
            .map_err(|e| io_error("start a thread to parse", e))?;
        Ok(JsonLinesReader { rx: Mutex::new(chunk_rx), compression, stop, pool })
    }

    /// The threads that read and parse: a chunk's kept lines are written
    /// by them too ([`RecordChunk::write_to_file`]).
    pub fn pool(&self) -> Arc<crate::parallel::Pool> {
        Arc::clone(&self.pool)
    }

    /// The next item, waiting at most `timeout`: `Ok(None)` at the end of
    /// the input, `Err(())` when nothing came in time (the caller may check
    /// for Ctrl-C and wait again).
    #[allow(clippy::result_unit_err)]
    pub fn next_within(&self, timeout: Duration) -> Result<Option<crate::Result<Item>>, ()> {
        let rx = self.rx.lock().unwrap_or_else(|e| e.into_inner());
        match rx.recv_timeout(timeout) {
            Ok(item) => Ok(Some(item)),
            Err(RecvTimeoutError::Disconnected) => Ok(None),
            Err(RecvTimeoutError::Timeout) => Err(()),
        }
    }
}

impl Iterator for JsonLinesReader {
    type Item = crate::Result<Item>;

    fn next(&mut self) -> Option<Self::Item> {
        self.rx.get_mut().unwrap_or_else(|e| e.into_inner()).recv().ok()
    }
}

#[cfg(test)]
mod tests;
