//! The work directory of a batch job: spill files, and the finished tables'
//! pairs that let a killed job resume where it stopped.
//!
//! Files (all of them the job's own; anything else there is left alone):
//! - `job.txt`: what the job is (kind, k, design, items, a digest of the
//!   data). A job started again with the same directory resumes only when
//!   this matches; otherwise the old state is removed and it starts over.
//! - `tNNN-RRR.pairs`: table NNN's pairs, one sorted run per file.
//! - `tNNN.done`: written (to a temporary name, then renamed) after the
//!   table's runs are flushed to disk: one line per run, `name length crc`.
//!   A table without it is done again from the start.
//! - `tNNN-PPPP.spill`: a part of table NNN's items, removed once used.
//! - `job.lock`: held (flock) while a job runs, so that two jobs never share
//!   a directory.

use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

use super::runs::RunFile;
use crate::{Error, Result};

const JOB: &str = "job.txt";

#[derive(Debug)]
pub(crate) struct Workdir {
    path: PathBuf,
    /// Created by the job in the system's temporary directory: removed whole at the end.
    temporary: bool,
    /// Keeps finished tables for a restart.
    pub restartable: bool,
    _lock: Option<File>,
}

impl Workdir {
    /// The directory `path` (created if missing) for a job described by
    /// `identity`, locked; state of another job found there is removed.
    ///
    /// # Errors
    /// [`Error::Io`] when it cannot be created or written, or another job
    /// holds it.
    pub fn open(path: &Path, identity: &str) -> Result<Workdir> {
        fs::create_dir_all(path).map_err(Error::io("create the work directory", path))?;
        let lock = lock(path)?;
        let dir = Workdir { path: path.to_path_buf(), temporary: false, restartable: true, _lock: Some(lock) };
        let job = path.join(JOB);
        match fs::read_to_string(&job) {
            Ok(found) if found == identity => return Ok(dir),
            Ok(_) => dir.clear()?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => dir.clear()?,
            Err(e) => return Err(Error::io("read", &job)(e)),
        }
        dir.write_atomic(JOB, identity.as_bytes())?;
        Ok(dir)
    }

    /// A new directory under `parent` (the system's temporary directory by
    /// default) for spills of a job that is not restartable; removed with
    /// everything in it when dropped.
    pub fn temporary(parent: Option<&Path>) -> Result<Workdir> {
        let parent = parent.map_or_else(std::env::temp_dir, Path::to_path_buf);
        for n in 0u32.. {
            let path = parent.join(format!("rsimhash-batch-{}-{n}", std::process::id()));
            match fs::create_dir(&path) {
                Ok(()) => return Ok(Workdir { path, temporary: true, restartable: false, _lock: None }),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(Error::io("create a work directory in", &parent)(e)),
            }
        }
        unreachable!("u32 names run out")
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn file(&self, name: &str) -> PathBuf {
        self.path.join(name)
    }

    /// Checks that the directory's filesystem has room for `bytes` more.
    ///
    /// # Errors
    /// [`Error::Io`] (storage full) naming the directory, the bytes needed
    /// and the bytes free, before anything is written.
    pub fn check_room(&self, bytes: u64) -> Result<()> {
        let Some(free) = free_bytes(&self.path) else { return Ok(()) };
        if free >= bytes {
            return Ok(());
        }
        let gb = |b: u64| b as f64 / 1e9;
        let source = std::io::Error::new(
            std::io::ErrorKind::StorageFull,
            format!(
                "the job needs {:.2} GB there and {:.2} GB are free; free some, or pass another workdir (or a larger memory_limit)",
                gb(bytes),
                gb(free)
            ),
        );
        Err(Error::Io { path: self.path.display().to_string(), action: "spill to", source })
    }

    /// The runs of table `t`, if a run before finished it and its files are there.
    pub fn done(&self, t: usize) -> Result<Option<Vec<RunFile>>> {
        let marker = self.file(&format!("t{t:03}.done"));
        let text = match fs::read_to_string(&marker) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(Error::io("read", &marker)(e)),
        };
        let mut runs = Vec::new();
        for line in text.lines() {
            let parts: Vec<&str> = line.split(' ').collect();
            let parsed = match parts.as_slice() {
                [name, len, crc] => len.parse().ok().zip(crc.parse().ok()).map(|(len, crc)| RunFile { path: self.file(name), len, crc }),
                _ => None,
            };
            match parsed {
                Some(run) if run.path.exists() => runs.push(run),
                // A marker that does not parse, or names a missing file: do the table again.
                _ => return Ok(None),
            }
        }
        Ok(Some(runs))
    }

    /// Records table `t` as finished with `runs` (already flushed to disk).
    pub fn mark_done(&self, t: usize, runs: &[RunFile]) -> Result<()> {
        let mut text = String::new();
        for run in runs {
            let name = run.path.file_name().and_then(|n| n.to_str()).unwrap_or_default();
            text.push_str(&format!("{name} {} {}\n", run.len, run.crc));
        }
        self.write_atomic(&format!("t{t:03}.done"), text.as_bytes())
    }

    /// Removes what an unfinished run left of table `t`.
    pub fn clear_table(&self, t: usize) -> Result<()> {
        self.remove_where(|name| name.starts_with(&format!("t{t:03}-")) || name == format!("t{t:03}.done"))
    }

    /// Removes every file of the job's own.
    pub fn clear(&self) -> Result<()> {
        self.remove_where(is_ours)
    }

    fn remove_where(&self, pick: impl Fn(&str) -> bool) -> Result<()> {
        let entries = fs::read_dir(&self.path).map_err(Error::io("read the work directory", &self.path))?;
        for entry in entries.flatten() {
            let name = entry.file_name();
            let Some(name) = name.to_str() else { continue };
            if pick(name) && name != "job.lock" {
                let path = entry.path();
                fs::remove_file(&path).map_err(Error::io("remove", &path))?;
            }
        }
        Ok(())
    }

    /// Writes `name` through a temporary file and a rename.
    fn write_atomic(&self, name: &str, bytes: &[u8]) -> Result<()> {
        let target = self.file(name);
        let tmp = self.file(&format!("{name}.tmp"));
        let mut file = File::create(&tmp).map_err(Error::io("create", &tmp))?;
        file.write_all(bytes).and_then(|_| file.sync_all()).map_err(Error::io("write", &tmp))?;
        fs::rename(&tmp, &target).map_err(Error::io("replace", &target))
    }

    /// At the end of a job: the state is no longer needed.
    pub fn finish(self) -> Result<()> {
        if !self.temporary {
            self.clear()?;
            let _ = fs::remove_file(self.file("job.lock"));
            // Removed when the job made it and nothing else is in it.
            let _ = fs::remove_dir(&self.path);
        }
        Ok(())
    }
}

impl Drop for Workdir {
    fn drop(&mut self) {
        if self.temporary {
            let _ = fs::remove_dir_all(&self.path);
        }
    }
}

/// Bytes free for this user on the filesystem of `dir`, where known.
#[cfg(unix)]
fn free_bytes(dir: &Path) -> Option<u64> {
    use std::os::unix::ffi::OsStrExt;
    let path = std::ffi::CString::new(dir.as_os_str().as_bytes()).ok()?;
    let mut st = std::mem::MaybeUninit::<libc::statvfs>::uninit();
    // SAFETY: a valid C string and a buffer of the right type; read only on success.
    let st = unsafe {
        if libc::statvfs(path.as_ptr(), st.as_mut_ptr()) != 0 {
            return None;
        }
        st.assume_init()
    };
    #[allow(clippy::unnecessary_cast)] // the field types differ between platforms
    Some(st.f_bavail as u64 * st.f_frsize as u64)
}

#[cfg(not(unix))]
fn free_bytes(_dir: &Path) -> Option<u64> {
    None
}

fn is_ours(name: &str) -> bool {
    name == JOB
        || name.ends_with(".tmp")
        || (name.starts_with('t') && (name.ends_with(".pairs") || name.ends_with(".done") || name.ends_with(".spill")))
        || name.ends_with(".run")
}

/// Locks the directory for this process.
fn lock(dir: &Path) -> Result<File> {
    let path = dir.join("job.lock");
    let file = OpenOptions::new().create(true).truncate(false).write(true).open(&path).map_err(Error::io("create", &path))?;
    #[cfg(unix)]
    {
        use std::os::unix::io::AsRawFd;
        // SAFETY: flock on a descriptor we own; no memory is involved.
        if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
            let source = std::io::Error::new(std::io::ErrorKind::WouldBlock, "another rsimhash job is using it");
            return Err(Error::Io { path: dir.display().to_string(), action: "lock the work directory", source });
        }
    }
    Ok(file)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resumes_only_the_same_job() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("w");
        {
            let w = Workdir::open(&path, "job A").unwrap();
            let run = super::super::runs::write_run(&w.file("t000-000.pairs"), &[1u64, 2, 3]).unwrap();
            w.mark_done(0, std::slice::from_ref(&run)).unwrap();
            assert_eq!(w.done(0).unwrap(), Some(vec![run]));
            assert_eq!(w.done(1).unwrap(), None);
            assert!(Workdir::open(&path, "job A").is_err(), "locked while in use");
        }
        let w = Workdir::open(&path, "job A").unwrap();
        assert!(w.done(0).unwrap().is_some());
        drop(w);
        fs::write(path.join("mine.txt"), "keep").unwrap();
        let w = Workdir::open(&path, "job B").unwrap();
        assert_eq!(w.done(0).unwrap(), None, "another job's state is cleared");
        w.finish().unwrap();
        assert!(path.join("mine.txt").exists(), "a user's file is left alone");
    }
}
