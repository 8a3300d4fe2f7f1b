//! Spill files: a table's items written once, part by part, so that each
//! part can be read back and worked in memory without reading the source
//! again. A record is 12 bytes: the permuted key (little-endian `u64`) and
//! the position (`u32`).

use std::fs::File;
use std::io::{BufWriter, Write};
use std::ops::Range;
use std::path::PathBuf;
use std::sync::Mutex;

use super::kernel::TableKernel;
use super::npy::read_exact_at;
use super::source::{Source, CHUNK};
use super::workdir::Workdir;
use super::Control;
use crate::{Error, Result};

const RECORD: usize = 12;

/// The spill files of one table, one per part.
pub(crate) struct Spill {
    pub files: Vec<PathBuf>,
}

/// Files written at once, well under the usual limit of 1024 open files;
/// a table in more parts is spilled in several rounds.
pub(crate) const MAX_FILES: usize = 256;

/// Writes the items of table `t` (`kt`) in buckets `parts` into one file
/// per part (`first` numbers the first); items of other buckets are skipped.
#[allow(clippy::too_many_arguments)]
pub(crate) fn write(
    kt: &TableKernel<'_>,
    t: usize,
    source: &Source<'_>,
    parts: &[Range<usize>],
    first: usize,
    dir: &Workdir,
    buffer_bytes: usize,
    control: &Control,
) -> Result<Spill> {
    const NONE: u32 = u32::MAX;
    let mut part_of = vec![NONE; kt.buckets()];
    for (p, range) in parts.iter().enumerate() {
        part_of[range.clone()].fill(p as u32);
    }
    let mut files = Vec::with_capacity(parts.len());
    let mut writers = Vec::with_capacity(parts.len());
    for p in first..first + parts.len() {
        let path = dir.file(&format!("t{t:03}-{p:04}.spill"));
        let file = crate::files::create_fresh(&path).map_err(Error::io("create", &path))?;
        writers.push(Mutex::new(BufWriter::with_capacity(buffer_bytes, file)));
        files.push(path);
    }
    source.par_chunks(0..source.len(), |start, fps| {
        control.check()?;
        // The chunk's records ordered by part (a counting sort), then each
        // part's slice appended to its file under its lock.
        let mut counts = vec![0usize; parts.len() + 1];
        let keys: Vec<u64> = fps.iter().map(|&fp| kt.permute(fp)).collect();
        for &key in &keys {
            let p = part_of[kt.bucket_of(key)];
            if p != NONE {
                counts[p as usize + 1] += 1;
            }
        }
        for p in 1..counts.len() {
            counts[p] += counts[p - 1];
        }
        let bounds = counts.clone();
        let mut bytes = vec![0u8; counts[parts.len()] * RECORD];
        for (i, &key) in keys.iter().enumerate() {
            let p = part_of[kt.bucket_of(key)];
            if p == NONE {
                continue;
            }
            let p = p as usize;
            let at = counts[p] * RECORD;
            counts[p] += 1;
            bytes[at..at + 8].copy_from_slice(&key.to_le_bytes());
            bytes[at + 8..at + RECORD].copy_from_slice(&((start + i as u64) as u32).to_le_bytes());
        }
        for (p, w) in writers.iter().enumerate() {
            let range = bounds[p] * RECORD..bounds[p + 1] * RECORD;
            if !range.is_empty() {
                let mut w = w.lock().unwrap_or_else(|e| e.into_inner());
                w.write_all(&bytes[range]).map_err(Error::io("write", &files[p]))?;
            }
        }
        control.advance(fps.len() as u64);
        Ok(())
    })?;
    for (w, path) in writers.into_iter().zip(&files) {
        let w = w.into_inner().unwrap_or_else(|e| e.into_inner());
        w.into_inner().map_err(|e| Error::io("write", path)(e.into_error()))?;
    }
    Ok(Spill { files })
}

/// Reads records `start..` of a spill file (as many as fit a chunk, up to
/// `len`) into `keys` and `pos`.
pub(crate) fn read(file: &File, path: &std::path::Path, len: u64, start: u64, keys: &mut Vec<u64>, pos: &mut Vec<u32>) -> Result<()> {
    let n = (len - start).min(CHUNK as u64) as usize;
    let mut bytes = vec![0u8; n * RECORD];
    read_exact_at(file, &mut bytes, start * RECORD as u64).map_err(Error::io("read", path))?;
    keys.clear();
    pos.clear();
    for r in bytes.chunks_exact(RECORD) {
        keys.push(u64::from_le_bytes(r[..8].try_into().expect("8 bytes")));
        pos.push(u32::from_le_bytes(r[8..].try_into().expect("4 bytes")));
    }
    Ok(())
}
