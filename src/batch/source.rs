//! Where a batch job reads fingerprints (and ids) from: a slice in memory, or
//! `.npy` files read a chunk at a time (so that a file larger than memory
//! never is in memory whole, and its pages never count as the process's own).

use std::fs::File;
use std::path::{Path, PathBuf};

use super::npy;
use crate::{Error, Result};

/// Items read from a source at a time: 512 KiB, which stay in a core's L2
/// cache between being read and being scattered.
pub(crate) const CHUNK: usize = 1 << 16;

/// A sequence of `u64` values.
#[derive(Debug)]
pub enum Source<'a> {
    /// Values in memory, read in place.
    Memory(&'a [u64]),
    /// `.npy` files, concatenated in the order given.
    Files(NpyFiles),
}

/// One or more 1-D `uint64` `.npy` files, concatenated.
#[derive(Debug)]
pub struct NpyFiles {
    parts: Vec<Part>,
    len: u64,
}

#[derive(Debug)]
struct Part {
    path: PathBuf,
    file: File,
    data_offset: u64,
    /// Index of the part's first item in the whole sequence.
    start: u64,
    items: u64,
}

impl NpyFiles {
    /// Opens every file and checks its header.
    ///
    /// # Errors
    /// [`Error::Io`] for a file that cannot be opened or read,
    /// [`Error::BadInput`] for one that is not a 1-D `uint64` array.
    pub fn open<P: AsRef<Path>>(paths: &[P]) -> Result<NpyFiles> {
        let mut parts = Vec::with_capacity(paths.len());
        let mut start = 0u64;
        for path in paths {
            let path = path.as_ref();
            let file = File::open(path).map_err(Error::io("open", path))?;
            if file.metadata().map_err(Error::io("read", path))?.is_dir() {
                let source = std::io::Error::new(std::io::ErrorKind::IsADirectory, "is a directory, not a .npy file");
                return Err(Error::Io { path: path.display().to_string(), action: "read", source });
            }
            let header = npy::read_header(path, &file)?;
            parts.push(Part { path: path.to_path_buf(), file, data_offset: header.data_offset, start, items: header.items });
            start += header.items;
        }
        Ok(NpyFiles { parts, len: start })
    }

    /// The paths, with their sizes and modification times: what a restarted
    /// job compares to know the files did not change.
    pub fn identity(&self) -> String {
        self.parts
            .iter()
            .map(|p| {
                let meta = p.file.metadata().ok();
                let modified =
                    meta.as_ref().and_then(|m| m.modified().ok()).and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok()).map_or(0, |d| d.as_nanos());
                format!("{}:{}:{}", p.path.display(), meta.map_or(0, |m| m.len()), modified)
            })
            .collect::<Vec<_>>()
            .join(";")
    }

    fn read(&self, start: u64, out: &mut [u64]) -> Result<()> {
        let mut at = start;
        let mut done = 0;
        let first = self.parts.partition_point(|p| p.start + p.items <= start);
        for part in &self.parts[first..] {
            if done == out.len() {
                break;
            }
            let n = ((part.start + part.items - at) as usize).min(out.len() - done);
            let bytes: &mut [u8] = bytemuck::cast_slice_mut(&mut out[done..done + n]);
            npy::read_exact_at(&part.file, bytes, part.data_offset + (at - part.start) * 8).map_err(Error::io("read", &part.path))?;
            done += n;
            at += n as u64;
        }
        if done < out.len() {
            return Err(Error::bad_input(self.describe(), "ended early: was a file truncated while the job ran?"));
        }
        Ok(())
    }

    fn describe(&self) -> String {
        match self.parts.as_slice() {
            [one] => one.path.display().to_string(),
            parts => format!("{} .npy files from {}", parts.len(), parts[0].path.display()),
        }
    }
}

impl Source<'_> {
    /// Number of values.
    pub fn len(&self) -> u64 {
        match self {
            Source::Memory(s) => s.len() as u64,
            Source::Files(f) => f.len,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// What error messages call it.
    pub fn describe(&self) -> String {
        match self {
            Source::Memory(_) => "the array".into(),
            Source::Files(f) => f.describe(),
        }
    }

    /// Values `start..start + out.len()`, copied into `out`.
    ///
    /// # Errors
    /// As [`Self::chunk`].
    pub fn read_into(&self, start: u64, out: &mut [u64]) -> Result<()> {
        match self {
            Source::Memory(s) => {
                out.copy_from_slice(&s[start as usize..start as usize + out.len()]);
                Ok(())
            }
            Source::Files(f) => f.read(start, out),
        }
    }

    /// Values `start..start + n`: borrowed when in memory, else read into `buf`.
    ///
    /// # Errors
    /// [`Error::Io`] when a file cannot be read, [`Error::BadInput`] when it
    /// has become shorter.
    pub fn chunk<'b>(&'b self, start: u64, n: usize, buf: &'b mut Vec<u64>) -> Result<&'b [u64]> {
        match self {
            Source::Memory(s) => Ok(&s[start as usize..start as usize + n]),
            Source::Files(f) => {
                buf.clear();
                buf.resize(n, 0);
                f.read(start, buf)?;
                Ok(buf)
            }
        }
    }

    /// Calls `f(start, values)` for the chunks of `range`, on rayon threads.
    pub fn par_chunks(&self, range: std::ops::Range<u64>, f: impl Fn(u64, &[u64]) -> Result<()> + Sync) -> Result<()> {
        use rayon::prelude::*;
        let chunks = (range.end - range.start).div_ceil(CHUNK as u64);
        (0..chunks).into_par_iter().try_for_each_init(Vec::new, |buf, c| {
            let start = range.start + c * CHUNK as u64;
            let n = (range.end - start).min(CHUNK as u64) as usize;
            f(start, self.chunk(start, n, buf)?)
        })
    }
}

pub(crate) use crate::job::mix;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_read_across_boundaries() {
        let dir = tempfile::tempdir().unwrap();
        let mut all = Vec::new();
        let mut paths = Vec::new();
        for (f, n) in [5u64, 0, 70_000, 3].into_iter().enumerate() {
            let values: Vec<u64> = (0..n).map(|i| mix(i + 1000 * f as u64)).collect();
            let mut bytes = npy::header("<u8", &[n]);
            bytes.extend_from_slice(bytemuck::cast_slice(&values));
            let path = dir.path().join(format!("{f}.npy"));
            std::fs::write(&path, bytes).unwrap();
            paths.push(path);
            all.extend(values);
        }
        let files = Source::Files(NpyFiles::open(&paths).unwrap());
        assert_eq!(files.len(), all.len() as u64);
        let mut buf = Vec::new();
        for (start, n) in [(0u64, 8usize), (3, 5), (4, 70_001), (70_000, 8)] {
            assert_eq!(files.chunk(start, n, &mut buf).unwrap(), &all[start as usize..start as usize + n]);
        }
    }
}
