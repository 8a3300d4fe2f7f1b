//! Sorted runs of fixed-size records, in memory or in files of the work
//! directory, and their merge: how pairs too many for memory are sorted.
//!
//! A run file is the records' little-endian bytes and nothing else; its
//! length and CRC-32C are kept by whoever wrote it (the job's `.done`
//! markers), and a reader checks both as it goes, so a damaged run is an
//! error, never a wrong pair.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use bytemuck::Pod;
use rayon::prelude::*;

use super::npy::read_exact_at;
use crate::{Error, Result};

/// Records a run reader reads at a time.
const READ_RECORDS: usize = 1 << 14;

/// A sorted run.
#[derive(Debug)]
pub(crate) enum Run<T> {
    Memory(Vec<T>),
    File(RunFile),
}

/// A run in a file: its path, record count and checksum.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RunFile {
    pub path: PathBuf,
    pub len: u64,
    pub crc: u32,
}

impl<T> Run<T> {
    pub fn len(&self) -> u64 {
        match self {
            Run::Memory(v) => v.len() as u64,
            Run::File(f) => f.len,
        }
    }
}

/// Writes sorted `records` to `path` (a new file: whatever a killed run
/// left there is replaced, a symlink never followed), flushed to disk. On
/// an error (a full disk) the partial file is removed.
pub(crate) fn write_run<T: Pod>(path: &Path, records: &[T]) -> Result<RunFile> {
    let bytes: &[u8] = bytemuck::cast_slice(records);
    let file = crate::files::create_fresh(path).map_err(Error::io("create", path))?;
    let written = (|| {
        let mut out = BufWriter::with_capacity(1 << 20, &file);
        out.write_all(bytes).and_then(|_| out.flush()).map_err(Error::io("write", path))?;
        drop(out);
        file.sync_all().map_err(Error::io("flush to disk", path))
    })();
    if let Err(e) = written {
        drop(file);
        let _ = std::fs::remove_file(path);
        return Err(e);
    }
    Ok(RunFile { path: path.to_path_buf(), len: records.len() as u64, crc: crc32c::crc32c(bytes) })
}

/// Reads a run file a block at a time, checking its length and checksum.
struct Reader<T> {
    file: File,
    run: RunFile,
    at: u64,
    crc: u32,
    buf: Vec<T>,
    next: usize,
}

impl<T: Pod> Reader<T> {
    fn open(run: &RunFile) -> Result<Reader<T>> {
        let file = File::open(&run.path).map_err(Error::io("open", &run.path))?;
        let size = file.metadata().map_err(Error::io("read", &run.path))?.len();
        if size != run.len * std::mem::size_of::<T>() as u64 {
            return Err(damaged(&run.path, format!("holds {size} bytes, {} were written", run.len * std::mem::size_of::<T>() as u64)));
        }
        Ok(Reader { file, run: run.clone(), at: 0, crc: 0, buf: Vec::new(), next: 0 })
    }

    /// The next record, refilling the buffer when needed.
    fn next(&mut self) -> Result<Option<T>> {
        if self.next == self.buf.len() {
            let n = ((self.run.len - self.at) as usize).min(READ_RECORDS);
            if n == 0 {
                return Ok(None);
            }
            self.buf.clear();
            self.buf.resize(n, T::zeroed());
            let bytes: &mut [u8] = bytemuck::cast_slice_mut(&mut self.buf);
            read_exact_at(&self.file, bytes, self.at * std::mem::size_of::<T>() as u64).map_err(Error::io("read", &self.run.path))?;
            self.crc = crc32c::crc32c_append(self.crc, bytes);
            self.at += n as u64;
            self.next = 0;
            if self.at == self.run.len && self.crc != self.run.crc {
                return Err(damaged(&self.run.path, "its checksum does not match what was written"));
            }
        }
        self.next += 1;
        Ok(Some(self.buf[self.next - 1]))
    }
}

fn damaged(path: &Path, problem: impl std::fmt::Display) -> Error {
    Error::bad_input(path.display(), format!("a run file of the work directory is damaged ({problem}); delete the work directory and run again"))
}

/// Calls `out` with the records of every run in ascending order, in
/// batches. Runs all in memory are sorted together in parallel; otherwise
/// a heap merges them.
pub(crate) fn merge<T: Pod + Ord + Send + Sync>(runs: Vec<Run<T>>, out: impl FnMut(&[T]) -> Result<()>) -> Result<()> {
    match sorted_in_memory(runs).as_slice() {
        [Run::Memory(all)] => all.chunks(READ_RECORDS).try_for_each(out),
        runs => merge_ref(runs, out),
    }
}

/// Runs all in memory as one, sorted in parallel; others as they are.
pub(crate) fn sorted_in_memory<T: Pod + Ord + Send + Sync>(runs: Vec<Run<T>>) -> Vec<Run<T>> {
    if !runs.iter().all(|r| matches!(r, Run::Memory(_))) {
        return runs;
    }
    let mut all: Vec<T> = crate::mem::vec_with_capacity(runs.iter().map(|r| r.len() as usize).sum());
    for run in runs {
        if let Run::Memory(v) = run {
            all.extend(v);
        }
    }
    all.par_sort_unstable();
    vec![Run::Memory(all)]
}

/// [`merge`] without taking the runs, which may be merged again: a heap
/// merges them (one run in memory is read as it is).
pub(crate) fn merge_ref<T: Pod + Ord, R: std::borrow::Borrow<Run<T>>>(runs: &[R], mut out: impl FnMut(&[T]) -> Result<()>) -> Result<()> {
    if let [one] = runs {
        if let Run::Memory(v) = one.borrow() {
            return v.chunks(READ_RECORDS).try_for_each(out);
        }
    }
    enum Cursor<'r, T> {
        Memory(std::iter::Copied<std::slice::Iter<'r, T>>),
        File(Reader<T>),
    }
    let mut cursors = Vec::with_capacity(runs.len());
    for run in runs {
        cursors.push(match run.borrow() {
            Run::Memory(v) => Cursor::Memory(v.iter().copied()),
            Run::File(f) => Cursor::File(Reader::open(f)?),
        });
    }
    let advance = |c: &mut Cursor<'_, T>| -> Result<Option<T>> {
        match c {
            Cursor::Memory(it) => Ok(it.next()),
            Cursor::File(r) => r.next(),
        }
    };
    let mut heap = BinaryHeap::with_capacity(cursors.len());
    for (i, c) in cursors.iter_mut().enumerate() {
        if let Some(x) = advance(c)? {
            heap.push(Reverse((x, i)));
        }
    }
    let mut batch = Vec::with_capacity(READ_RECORDS);
    while let Some(Reverse((x, i))) = heap.pop() {
        batch.push(x);
        if batch.len() == READ_RECORDS {
            out(&batch)?;
            batch.clear();
        }
        if let Some(y) = advance(&mut cursors[i])? {
            heap.push(Reverse((y, i)));
        }
    }
    if !batch.is_empty() {
        out(&batch)?;
    }
    Ok(())
}

/// Sorts records too many for memory: buffered up to `budget` records, then
/// sorted and written as a run under `dir`.
pub(crate) struct ExternalSort<T> {
    dir: PathBuf,
    name: String,
    budget: usize,
    buffer: Vec<T>,
    runs: Vec<Run<T>>,
    pushed: u64,
}

impl<T: Pod + Ord + Send + Sync> ExternalSort<T> {
    pub fn new(dir: &Path, name: &str, budget_bytes: usize) -> ExternalSort<T> {
        let budget = (budget_bytes / std::mem::size_of::<T>()).max(1 << 16);
        ExternalSort { dir: dir.to_path_buf(), name: name.to_string(), budget, buffer: Vec::new(), runs: Vec::new(), pushed: 0 }
    }

    /// Records pushed so far.
    pub fn len(&self) -> u64 {
        self.pushed
    }

    pub fn push(&mut self, records: &[T]) -> Result<()> {
        self.pushed += records.len() as u64;
        self.buffer.extend_from_slice(records);
        if self.buffer.len() >= self.budget {
            let mut full = std::mem::take(&mut self.buffer);
            full.par_sort_unstable();
            let path = self.dir.join(format!("{}-{:04}.run", self.name, self.runs.len()));
            self.runs.push(Run::File(write_run(&path, &full)?));
        }
        Ok(())
    }

    /// The records, ascending; the run files are removed after (or when
    /// the sort is dropped unfinished, after an error).
    pub fn finish(mut self, out: impl FnMut(&[T]) -> Result<()>) -> Result<()> {
        let mut runs = std::mem::take(&mut self.runs);
        self.runs = runs.iter().filter_map(|r| if let Run::File(f) = r { Some(Run::File(f.clone())) } else { None }).collect();
        let mut last = std::mem::take(&mut self.buffer);
        last.par_sort_unstable();
        runs.push(Run::Memory(last));
        merge(runs, out)
    }
}

impl<T> Drop for ExternalSort<T> {
    fn drop(&mut self) {
        for run in &self.runs {
            if let Run::File(f) = run {
                let _ = std::fs::remove_file(&f.path);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merges_memory_and_files() {
        let dir = tempfile::tempdir().unwrap();
        let mut sorter = ExternalSort::<u64>::new(dir.path(), "t", 8);
        let mut expected = Vec::new();
        let mut x = 7u64;
        for round in 0..5 {
            let batch: Vec<u64> = (0..40_000)
                .map(|_| {
                    x = super::super::source::mix(x);
                    x % 100_000
                })
                .collect();
            expected.extend_from_slice(&batch);
            sorter.push(&batch).unwrap();
            assert!(round == 0 || std::fs::read_dir(dir.path()).unwrap().count() > 0);
        }
        expected.sort_unstable();
        let mut got = Vec::new();
        sorter
            .finish(|b| {
                got.extend_from_slice(b);
                Ok(())
            })
            .unwrap();
        assert!(got == expected, "{} records merged, {} expected", got.len(), expected.len());
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0, "run files removed");
    }

    #[test]
    fn damaged_runs_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let values: Vec<u64> = (0..50_000).collect();
        let run = write_run(&dir.path().join("a.run"), &values).unwrap();
        let mut bytes = std::fs::read(&run.path).unwrap();
        bytes[1000] ^= 1;
        std::fs::write(&run.path, &bytes).unwrap();
        let err = merge(vec![Run::<u64>::File(run.clone())], |_| Ok(())).unwrap_err().to_string();
        assert!(err.contains("checksum"), "{err}");
        std::fs::write(&run.path, &bytes[..800]).unwrap();
        let err = merge(vec![Run::<u64>::File(run)], |_| Ok(())).unwrap_err().to_string();
        assert!(err.contains("bytes"), "{err}");
    }
}
