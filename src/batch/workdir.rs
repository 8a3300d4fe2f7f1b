//! The work directory of a batch job: spill files, and the finished tables'
//! pairs that let a killed job resume where it stopped.
//!
//! A job never works in the directory the user gives (`workdir=`): it makes
//! a directory of its own inside it, `rsimhash-job-HHHHHHHHHHHHHHHH` (a hash
//! of what the job is), and keeps everything there. So nothing of the user's
//! is ever removed or overwritten, whatever its name, and several jobs can
//! share one `workdir`. A directory of that name is the job's only when its
//! `job.txt` names this very job: a restarted job finds its own state there
//! and resumes; a directory of that name with anything else in `job.txt` (or
//! none) is not ours and is never touched (the job takes the next name,
//! `...-1`, `...-2`). At the end the job removes its own files and its
//! directory, and the user's directory only if the job made it (it did not
//! exist) and it is empty.
//!
//! Files in the job's directory (all created new, never through a symlink:
//! see [`crate::files`]):
//! - `job.txt`: what the job is (kind, k, design, items, a digest of the data).
//! - `tNNN-RRR.pairs`: table NNN's pairs, one sorted run per file.
//! - `tNNN.done`: written (to `tNNN.done.tmp`, then renamed) after the
//!   table's runs are flushed to disk: one line per run, `name length crc`.
//!   A table without it is done again from the start.
//! - `tNNN-PPPP.spill`: a part of table NNN's items, removed once used.
//! - `job.lock`: held (flock) while a job runs, so that two runs of one job
//!   never share the directory.
//!
//! A job that fails (an error, a full disk, Ctrl-C) removes the files of
//! the table it was working on, spills included; the finished tables stay
//! for a resume. Jobs without a work directory spill into a temporary one,
//! `rsimhash-batch-PID-N`, removed whole at the end; those that dead
//! processes left are removed by the next job that makes one beside them.

use std::fs::{self, File};
use std::io::Write;
use std::path::{Path, PathBuf};

use super::runs::RunFile;
use crate::files;
use crate::{Error, Result};

const JOB: &str = "job.txt";
const LOCK: &str = "job.lock";
/// In the job's directory when the job made the user's directory too (it
/// did not exist): a resumed run removes that as well at the end, if empty.
const MADE: &str = "made-workdir";
/// The file that marks a temporary work directory as rsimhash's own.
const TEMPORARY: &str = "rsimhash-temporary";
/// Names tried for a job's directory before giving up.
const NAMES: u32 = 100;

#[derive(Debug)]
pub(crate) struct Workdir {
    /// The job's own directory.
    path: PathBuf,
    /// The directory the user gave, when the job made it (it did not exist).
    made_parent: Option<PathBuf>,
    /// Created by the job for spills: removed whole at the end.
    temporary: bool,
    /// Keeps finished tables for a restart.
    pub restartable: bool,
    _lock: Option<File>,
}

impl Workdir {
    /// The job's own directory inside `parent` (created if missing) for a
    /// job described by `identity`, locked: the one a run of the same job
    /// left (to resume), else a new one.
    ///
    /// # Errors
    /// [`Error::Io`] when it cannot be created or written, or another run of
    /// the job holds it.
    pub fn open(parent: &Path, identity: &str) -> Result<Workdir> {
        let made_parent = match fs::metadata(parent) {
            Ok(meta) if meta.is_dir() => None,
            Ok(_) => {
                let source = std::io::Error::new(std::io::ErrorKind::NotADirectory, "it is not a directory");
                return Err(Error::Io { path: parent.display().to_string(), action: "use as the work directory", source });
            }
            Err(_) => {
                fs::create_dir_all(parent).map_err(Error::io("create the work directory", parent))?;
                Some(parent.to_path_buf())
            }
        };
        let base = format!("rsimhash-job-{:016x}", crate::fingerprint::fnv::fnv1a64(identity.as_bytes()));
        for n in 0..NAMES {
            let path = parent.join(if n == 0 { base.clone() } else { format!("{base}-{n}") });
            let dir = |lock| Workdir { path: path.clone(), made_parent: made_parent.clone(), temporary: false, restartable: true, _lock: Some(lock) };
            match fs::symlink_metadata(&path) {
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => match fs::create_dir(&path) {
                    Ok(()) => {
                        let made = dir(lock(&path)?);
                        // The marker first: a directory with `job.txt` in it
                        // always says whether the job made the user's.
                        if made.made_parent.is_some() {
                            made.write_atomic(MADE, b"")?;
                        }
                        made.write_atomic(JOB, identity.as_bytes())?;
                        return Ok(made);
                    }
                    // Made by another run meanwhile: look at it again.
                    Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                    Err(e) => return Err(Error::io("create the work directory", &path)(e)),
                },
                Err(e) => return Err(Error::io("read the work directory", &path)(e)),
                Ok(meta) if meta.is_dir() && files::read_own(&path.join(JOB)).is_ok_and(|found| found == identity) => {
                    let mut found = dir(lock(&path)?);
                    if files::read_own(&found.file(MADE)).is_ok() {
                        found.made_parent = Some(parent.to_path_buf());
                    }
                    return Ok(found);
                }
                // Made by a run killed before it wrote whose it is (nothing in it but
                // its lock, which no live run holds, and the files it writes before
                // `job.txt`): removed, and the name tried again.
                Ok(meta) if meta.is_dir() && abandoned(&path) => {
                    // Only its own names: a file put there meanwhile stays.
                    for entry in fs::read_dir(&path).into_iter().flatten().flatten() {
                        if entry.file_name().to_str().is_some_and(made_before_job) {
                            let _ = fs::remove_file(entry.path());
                        }
                    }
                    if fs::remove_dir(&path).is_ok() {
                        return Workdir::open(parent, identity);
                    }
                    continue;
                }
                // Not this job's: never touched.
                Ok(_) => continue,
            }
        }
        let source =
            std::io::Error::new(std::io::ErrorKind::AlreadyExists, format!("{NAMES} directories named {base}* that are not this job's are in the way"));
        Err(Error::Io { path: parent.display().to_string(), action: "make the job's directory in", source })
    }

    /// A new directory under `parent` (the system's temporary directory by
    /// default) for spills of a job that is not restartable; removed with
    /// everything in it when dropped. Those that dead processes left there
    /// are removed first.
    pub fn temporary(parent: Option<&Path>) -> Result<Workdir> {
        let parent = parent.map_or_else(std::env::temp_dir, Path::to_path_buf);
        files::remove_stale(&parent, Some(TEMPORARY), |name| files::pid_in(name, "rsimhash-batch-", '-', ""));
        for n in 0u32.. {
            let path = parent.join(format!("rsimhash-batch-{}-{n}", std::process::id()));
            match fs::create_dir(&path) {
                Ok(()) => {
                    let dir = Workdir { path, made_parent: None, temporary: true, restartable: false, _lock: None };
                    let marker = dir.file(TEMPORARY);
                    files::create_new(&marker).map_err(Error::io("create", &marker))?;
                    return Ok(dir);
                }
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
        check_room_in(&self.path, bytes, "spill to", "the job needs", "pass another workdir (or a larger memory_limit)")
    }

    /// The runs of table `t`, if a run before finished it and its files are there.
    pub fn done(&self, t: usize) -> Result<Option<Vec<RunFile>>> {
        let marker = self.file(&format!("t{t:03}.done"));
        let text = match files::read_own(&marker) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(Error::io("read", &marker)(e)),
        };
        let mut runs = Vec::new();
        for line in text.lines() {
            let parts: Vec<&str> = line.split(' ').collect();
            let parsed = match parts.as_slice() {
                // Only names of this table's runs, in this directory.
                [name, len, crc] if name.starts_with(&format!("t{t:03}-")) && !name.contains(['/', '\\']) => {
                    len.parse().ok().zip(crc.parse().ok()).map(|(len, crc)| RunFile { path: self.file(name), len, crc })
                }
                _ => None,
            };
            match parsed {
                Some(run) if fs::symlink_metadata(&run.path).is_ok_and(|m| m.is_file()) => runs.push(run),
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
        self.remove_where(|name| name.starts_with(&format!("t{t:03}-")) || name.starts_with(&format!("t{t:03}.done")))
    }

    fn remove_where(&self, pick: impl Fn(&str) -> bool) -> Result<()> {
        let entries = fs::read_dir(&self.path).map_err(Error::io("read the work directory", &self.path))?;
        for entry in entries.flatten() {
            let name = entry.file_name();
            let Some(name) = name.to_str() else { continue };
            if pick(name) && name != LOCK {
                let path = entry.path();
                match fs::remove_file(&path) {
                    Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(Error::io("remove", &path)(e)),
                    _ => {}
                }
            }
        }
        Ok(())
    }

    /// Writes `name` through a temporary file and a rename.
    fn write_atomic(&self, name: &str, bytes: &[u8]) -> Result<()> {
        let target = self.file(name);
        let tmp = self.file(&format!("{name}.tmp"));
        let mut file = files::create_fresh(&tmp).map_err(Error::io("create", &tmp))?;
        file.write_all(bytes).and_then(|_| file.sync_all()).map_err(Error::io("write", &tmp))?;
        fs::rename(&tmp, &target).map_err(Error::io("replace", &target))
    }

    /// At the end of a job: the state is no longer needed.
    ///
    /// In an order that leaves, if the run is killed at any point, a
    /// directory the next run takes for its own: the tables' markers go
    /// first (no table is then finished), their runs and spills next, and
    /// `job.txt` only when nothing else of the job's is left. (Removed in
    /// the directory's order, `job.txt` could go first, and a kill then left
    /// runs in a directory no run would ever claim or remove.)
    pub fn finish(self) -> Result<()> {
        if !self.temporary {
            for step in 0..CLEANUP_STEPS {
                self.remove_where(|name| cleanup_step(name) == Some(step))?;
            }
            let _ = fs::remove_file(self.file(LOCK));
            // Only when empty: whatever someone else put there stays.
            let _ = fs::remove_dir(&self.path);
            if let Some(parent) = &self.made_parent {
                let _ = fs::remove_dir(parent);
            }
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

/// Removes table `t`'s files from the job's directory when dropped before
/// [`TableGuard::done`]: a table that failed midway (an error, a full disk,
/// Ctrl-C) leaves neither spills nor partial runs behind.
pub(crate) struct TableGuard<'w> {
    dir: Option<&'w Workdir>,
    t: usize,
}

impl<'w> TableGuard<'w> {
    pub fn new(dir: Option<&'w Workdir>, t: usize) -> TableGuard<'w> {
        TableGuard { dir: dir.filter(|d| !d.temporary), t }
    }

    /// The table is finished: its files stay.
    pub fn done(mut self) {
        self.dir = None;
    }
}

impl Drop for TableGuard<'_> {
    fn drop(&mut self) {
        if let Some(dir) = self.dir {
            let _ = dir.clear_table(self.t);
        }
    }
}

/// `bytes` in GB, with as many decimals as it takes to tell it from `other`.
fn show_bytes(bytes: u64, other: u64) -> String {
    let gb = |b: u64, d: usize| format!("{:.d$} GB", b as f64 / 1e9);
    for d in 2..=9 {
        if gb(bytes, d) != gb(other, d) {
            return gb(bytes, d);
        }
    }
    format!("{bytes} bytes")
}

/// Bytes free for this user on the filesystem of `dir`, where known.
/// [`Error::Io`] (storage full) when `dir` has less than `bytes` free,
/// naming both amounts: `who_needs` them to `action` it; `advice` says
/// what else to do besides freeing some.
pub(crate) fn check_room_in(dir: &Path, bytes: u64, action: &'static str, who_needs: &str, advice: &str) -> Result<()> {
    let Some(free) = free_bytes(dir) else { return Ok(()) };
    if free >= bytes {
        return Ok(());
    }
    let source = std::io::Error::new(
        std::io::ErrorKind::StorageFull,
        format!("{who_needs} {} there and {} are free; free some, or {advice}", show_bytes(bytes, free), show_bytes(free, bytes)),
    );
    Err(Error::Io { path: dir.display().to_string(), action, source })
}

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

/// The names of the files a job writes in its own directory.
fn is_ours(name: &str) -> bool {
    name == JOB
        || name == MADE
        || name.strip_suffix(".tmp").is_some_and(|n| n == JOB || n == MADE)
        || (name.starts_with('t') && [".pairs", ".done", ".done.tmp", ".spill"].iter().any(|s| name.ends_with(s)))
        || name.ends_with(".run")
}

/// The steps of [`Workdir::finish`].
const CLEANUP_STEPS: u8 = 3;

/// When [`Workdir::finish`] removes `name` (the lock aside, last): tables'
/// markers (0), then their runs and spills (1), then `job.txt` and what a
/// run writes before it (2); None for what is not the job's.
fn cleanup_step(name: &str) -> Option<u8> {
    if !is_ours(name) || name == LOCK {
        return None;
    }
    Some(if name.ends_with(".done") || name.ends_with(".done.tmp") {
        0
    } else if name == JOB || made_before_job(name) {
        2
    } else {
        1
    })
}

/// Whether `name` is a file a run writes in a new job directory before
/// `job.txt` is in place: its lock, the made-workdir marker, and the
/// temporary files of [`Workdir::write_atomic`] for both (a run killed
/// mid-write leaves `job.txt.tmp`).
fn made_before_job(name: &str) -> bool {
    name == LOCK || name == MADE || name.strip_suffix(".tmp").is_some_and(|n| n == JOB || n == MADE)
}

/// Whether `dir` is a job's directory that its run never finished making:
/// no `job.txt`, nothing but what a run writes before it, and a lock file
/// (if any) no live run holds.
fn abandoned(dir: &Path) -> bool {
    let Ok(entries) = fs::read_dir(dir) else { return false };
    let names: Vec<_> = entries.filter_map(|e| e.ok().map(|e| e.file_name())).collect();
    if !names.iter().all(|n| n.to_str().is_some_and(made_before_job)) {
        return false;
    }
    !names.iter().any(|n| n == LOCK) || lock(dir).is_ok()
}

/// Locks the directory for this process (an error when another holds it).
fn lock(dir: &Path) -> Result<File> {
    let path = dir.join(LOCK);
    let file = files::open_own(&path).map_err(Error::io("create", &path))?;
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
        let own = {
            let w = Workdir::open(&path, "job A").unwrap();
            let run = super::super::runs::write_run(&w.file("t000-000.pairs"), &[1u64, 2, 3]).unwrap();
            w.mark_done(0, std::slice::from_ref(&run)).unwrap();
            assert_eq!(w.done(0).unwrap(), Some(vec![run]));
            assert_eq!(w.done(1).unwrap(), None);
            assert!(Workdir::open(&path, "job A").is_err(), "locked while in use");
            assert_ne!(w.path(), path, "a directory of the job's own");
            w.path().to_path_buf()
        };
        let w = Workdir::open(&path, "job A").unwrap();
        assert_eq!(w.path(), own);
        assert!(w.done(0).unwrap().is_some());
        drop(w);
        let b = Workdir::open(&path, "job B").unwrap();
        assert_eq!(b.done(0).unwrap(), None, "another job has its own state");
        b.finish().unwrap();
        let a = Workdir::open(&path, "job A").unwrap();
        assert!(a.done(0).unwrap().is_some(), "and leaves the first job's alone");
        a.finish().unwrap();
        assert!(!path.exists(), "the job made the directory, and it is empty: removed");
    }

    /// The reproduction: files of the user's with the names a job
    /// uses, and an empty directory of theirs, all stay.
    #[test]
    fn never_touches_what_it_did_not_make() {
        let dir = tempfile::tempdir().unwrap();
        let names = ["notes.tmp", "experiment.run", "thesis.done", "t000.done", "t001-000.pairs", "t002.spill", "job.txt", "job.lock", "keep.txt"];
        for name in names {
            fs::write(dir.path().join(name), "x").unwrap();
        }
        let empty = tempfile::tempdir().unwrap();
        for parent in [dir.path(), empty.path()] {
            let w = Workdir::open(parent, "job A").unwrap();
            let run = super::super::runs::write_run(&w.file("t000-000.pairs"), &[1u64]).unwrap();
            w.mark_done(0, &[run]).unwrap();
            w.clear_table(1).unwrap();
            w.finish().unwrap();
        }
        for name in names {
            assert_eq!(fs::read_to_string(dir.path().join(name)).unwrap(), "x", "{name}");
        }
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), names.len());
        assert!(empty.path().is_dir(), "the directory the user made stays");
        assert_eq!(fs::read_dir(empty.path()).unwrap().count(), 0);
    }

    /// A run killed at any point of its clean-up at the end leaves a
    /// directory the next run of the job takes as its own (and removes
    /// whole when it ends), never one no run claims.
    #[test]
    fn a_run_killed_while_cleaning_up_leaves_nothing_for_good() {
        let dir = tempfile::tempdir().unwrap();
        let parent = dir.path().join("made");
        let w = Workdir::open(&parent, "job A").unwrap();
        let own = w.path().to_path_buf();
        for t in 0..3 {
            let run = super::super::runs::write_run(&w.file(&format!("t{t:03}-000.pairs")), &[t as u64]).unwrap();
            w.mark_done(t, &[run]).unwrap();
        }
        fs::write(w.file("t003-0000.spill"), "").unwrap();
        drop(w);
        // Every file, in the order a clean-up removes them.
        let mut names: Vec<String> = fs::read_dir(&own).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
        names.retain(|n| cleanup_step(n).is_some());
        names.sort_by_key(|n| cleanup_step(n));
        assert_eq!(names.last().map(|n| cleanup_step(n)), Some(Some(2)));
        let saved: Vec<(String, Vec<u8>)> = names.iter().map(|n| (n.clone(), fs::read(own.join(n)).unwrap())).collect();
        for killed_after in 0..=names.len() {
            fs::create_dir_all(&own).unwrap();
            for (name, bytes) in &saved[killed_after..] {
                fs::write(own.join(name), bytes).unwrap();
            }
            fs::write(own.join(LOCK), "").unwrap();
            let w = Workdir::open(&parent, "job A").unwrap();
            assert_eq!(w.path(), own, "killed after {killed_after} removals: the directory is the job's");
            w.finish().unwrap();
            assert!(
                !parent.exists() || fs::read_dir(&parent).unwrap().count() == 0,
                "killed after {killed_after}: {:?}",
                fs::read_dir(&parent).unwrap().collect::<Vec<_>>()
            );
            let _ = fs::remove_dir(&parent);
        }
    }

    /// A run killed between making its directory and writing whose it is
    /// leaves it empty (or holding only its lock): the next run takes the
    /// name back, and nothing of it stays when the job ends.
    #[test]
    fn a_directory_abandoned_while_made_is_taken_back() {
        let dir = tempfile::tempdir().unwrap();
        let w = Workdir::open(dir.path(), "job A").unwrap();
        let own = w.path().to_path_buf();
        w.finish().unwrap();
        // Killed at each step before `job.txt` is in place.
        for leftover in [&[][..], &[LOCK][..], &[LOCK, "made-workdir.tmp"][..], &[LOCK, MADE][..], &[LOCK, MADE, "job.txt.tmp"][..], &[LOCK, "job.txt.tmp"][..]]
        {
            fs::create_dir(&own).unwrap();
            for name in leftover {
                fs::write(own.join(name), "").unwrap();
            }
            let w = Workdir::open(dir.path(), "job A").unwrap();
            assert_eq!(w.path(), own);
            w.finish().unwrap();
            assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 0);
        }
    }

    /// A directory with the job's name that is not the job's (no marker, or
    /// another job's) is passed over, untouched.
    #[test]
    fn a_foreign_directory_is_passed_over() {
        let dir = tempfile::tempdir().unwrap();
        let w = Workdir::open(dir.path(), "job A").unwrap();
        let name = w.path().file_name().unwrap().to_owned();
        w.finish().unwrap();
        let foreign = dir.path().join(&name);
        fs::create_dir(&foreign).unwrap();
        fs::write(foreign.join("t000.done"), "t000-000.pairs 1 0\n").unwrap();
        let w = Workdir::open(dir.path(), "job A").unwrap();
        assert_ne!(w.path(), foreign);
        assert_eq!(w.done(0).unwrap(), None);
        w.finish().unwrap();
        assert_eq!(fs::read_to_string(foreign.join("t000.done")).unwrap(), "t000-000.pairs 1 0\n");
    }

    /// A symlink planted in a killed job's directory under the name of a
    /// temporary file is replaced, never written through.
    #[cfg(unix)]
    #[test]
    fn a_planted_symlink_is_not_followed() {
        let dir = tempfile::tempdir().unwrap();
        let outside = dir.path().join("outside.txt");
        fs::write(&outside, "precious").unwrap();
        let work = dir.path().join("w");
        let own = Workdir::open(&work, "job A").unwrap().path().to_path_buf();
        for name in ["t000.done.tmp", "t000-000.pairs", "t000-0000.spill"] {
            std::os::unix::fs::symlink(&outside, own.join(name)).unwrap();
        }
        let w = Workdir::open(&work, "job A").unwrap();
        let run = super::super::runs::write_run(&w.file("t000-000.pairs"), &[1u64, 2]).unwrap();
        w.mark_done(0, &[run]).unwrap();
        assert!(w.done(0).unwrap().is_some());
        assert_eq!(fs::read_to_string(&outside).unwrap(), "precious");
        w.finish().unwrap();
        assert_eq!(fs::read_to_string(&outside).unwrap(), "precious");
    }

    #[test]
    fn space_messages_tell_the_amounts_apart() {
        assert_eq!(show_bytes(210_000_000, 209_999_000), "0.210000 GB");
        assert_eq!(show_bytes(209_999_000, 210_000_000), "0.209999 GB");
        assert_eq!(show_bytes(5_000_000_000, 1_000_000_000), "5.00 GB");
    }

    /// More than any disk holds: refused up front, the amounts and the
    /// advice in the message; what fits passes.
    #[test]
    fn room_is_checked_before_writing() {
        let dir = tempfile::tempdir().unwrap();
        check_room_in(dir.path(), 1 << 20, "write to", "the pairs need", "pass another out=").unwrap();
        let Err(Error::Io { path, action, source }) = check_room_in(dir.path(), u64::MAX, "write to", "the pairs need", "pass another out=") else {
            panic!("no disk holds 2^64 bytes")
        };
        assert_eq!((path, action), (dir.path().display().to_string(), "write to"));
        assert_eq!(source.kind(), std::io::ErrorKind::StorageFull);
        let text = source.to_string();
        assert!(text.starts_with("the pairs need 18446744073.71 GB there and ") && text.ends_with("free; free some, or pass another out="), "{text}");
    }
}
