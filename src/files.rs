//! Files rsimhash writes for itself: temporary names, work files, locks.
//!
//! Invariants every writer here keeps:
//! - A file is only ever created new: `O_CREAT | O_EXCL`, and `O_NOFOLLOW` on
//!   unix, so a name that someone else made (a symlink planted in a work
//!   directory, a file of the user's) is never opened, written through or
//!   truncated. A name of our own that a killed run left behind is removed
//!   first (`unlink` removes a symlink itself, never what it points to).
//! - A temporary name says whose it is: the writing process's id is part of
//!   it, so a later run can tell the leftovers of a dead process (removed)
//!   from those of a live one (left alone). Only names of rsimhash's own
//!   patterns are ever looked at.

use std::fs::{self, File, OpenOptions};
use std::io;
use std::path::Path;

/// Creates `path` for writing; fails if anything (a file, a symlink, a
/// directory) is already there.
///
/// # Errors
/// The `io::Error` of `open` (`AlreadyExists` when the name is taken).
pub(crate) fn create_new(path: &Path) -> io::Result<File> {
    let mut options = OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags(libc::O_NOFOLLOW);
    }
    options.open(path)
}

/// Creates `path` for writing after removing whatever of our own a killed
/// run left under that name (a symlink is removed, never followed).
///
/// # Errors
/// As [`create_new`]; a directory at `path` is an error.
pub(crate) fn create_fresh(path: &Path) -> io::Result<File> {
    match fs::symlink_metadata(path) {
        Ok(meta) if meta.is_dir() => return Err(io::Error::new(io::ErrorKind::IsADirectory, "a directory is in the way of a work file")),
        Ok(_) => fs::remove_file(path)?,
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => return Err(e),
    }
    create_new(path)
}

/// Opens (creating if missing) a file that persists between runs, such as
/// a lock, without following a symlink at `path`.
///
/// # Errors
/// The `io::Error` of `open` (`ELOOP` for a symlink, on unix).
pub(crate) fn open_own(path: &Path) -> io::Result<File> {
    let mut options = OpenOptions::new();
    options.write(true).create(true).truncate(false);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags(libc::O_NOFOLLOW);
    }
    options.open(path)
}

/// Reads a small file of our own, without following a symlink.
pub(crate) fn read_own(path: &Path) -> io::Result<String> {
    let mut options = OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags(libc::O_NOFOLLOW);
    }
    io::read_to_string(options.open(path)?)
}

/// Whether process `pid` may still be running: only a process known to be
/// gone (`kill(pid, 0)` fails with `ESRCH`) counts as dead.
pub(crate) fn pid_alive(pid: u32) -> bool {
    if pid == std::process::id() {
        return true;
    }
    #[cfg(unix)]
    {
        let Ok(pid) = libc::pid_t::try_from(pid) else { return true };
        if pid <= 0 {
            return true;
        }
        // SAFETY: signal 0 sends nothing; it only checks that the process exists.
        if unsafe { libc::kill(pid, 0) } == 0 {
            return true;
        }
        io::Error::last_os_error().raw_os_error() != Some(libc::ESRCH)
    }
    #[cfg(not(unix))]
    {
        true
    }
}

/// Removes the entries of `dir` that `stale_pid` recognises as a temporary
/// of process `pid` (returning it) when that process is gone; `dirs` says
/// whether such entries are directories (removed whole, and only when they
/// hold `marker`) or files. Best effort: errors are ignored (another run may
/// be removing the same leftovers).
pub(crate) fn remove_stale(dir: &Path, dirs: Option<&str>, stale_pid: impl Fn(&str) -> Option<u32>) {
    let Ok(entries) = fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name.to_str().and_then(&stale_pid) else { continue };
        if pid_alive(pid) {
            continue;
        }
        let path = entry.path();
        let Ok(meta) = fs::symlink_metadata(&path) else { continue };
        match dirs {
            Some(marker) if meta.is_dir() && fs::symlink_metadata(path.join(marker)).is_ok_and(|m| m.is_file()) => {
                let _ = fs::remove_dir_all(&path);
            }
            None if !meta.is_dir() => {
                let _ = fs::remove_file(&path);
            }
            _ => {}
        }
    }
}

/// The process id in a name `{prefix}{pid}{sep}{digits}{suffix}`, if the
/// name has exactly that shape.
pub(crate) fn pid_in(name: &str, prefix: &str, sep: char, suffix: &str) -> Option<u32> {
    let rest = name.strip_prefix(prefix)?.strip_suffix(suffix)?;
    let (pid, n) = rest.split_once(sep)?;
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    if !digits(pid) || !digits(n) {
        return None;
    }
    pid.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_parse_only_in_their_own_shape() {
        assert_eq!(pid_in(".a.npy.123.4.tmp", ".a.npy.", '.', ".tmp"), Some(123));
        assert_eq!(pid_in(".a.npy.123.tmp", ".a.npy.", '.', ".tmp"), None);
        assert_eq!(pid_in(".a.npy.x.4.tmp", ".a.npy.", '.', ".tmp"), None);
        assert_eq!(pid_in(".a.npy.1.2.3.tmp", ".a.npy.", '.', ".tmp"), None);
        assert_eq!(pid_in("rsimhash-batch-77-0", "rsimhash-batch-", '-', ""), Some(77));
    }

    #[cfg(unix)]
    #[test]
    fn never_writes_through_a_symlink() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("precious");
        fs::write(&target, "keep").unwrap();
        let link = dir.path().join("work.tmp");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        assert!(create_new(&link).is_err(), "a symlink is never opened");
        assert!(open_own(&link).is_err(), "nor followed by a lock");
        use std::io::Write;
        create_fresh(&link).unwrap().write_all(b"new").unwrap();
        assert_eq!(fs::read_to_string(&target).unwrap(), "keep");
        assert_eq!(fs::read_to_string(&link).unwrap(), "new");
        assert!(!fs::symlink_metadata(&link).unwrap().file_type().is_symlink());
    }

    #[cfg(unix)]
    #[test]
    fn stale_entries_of_dead_processes_go() {
        let dir = tempfile::tempdir().unwrap();
        // A child that has exited: its pid is free (unless reused at once).
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let dead = child.id();
        child.wait().unwrap();
        let mine = std::process::id();
        for pid in [dead, mine] {
            fs::write(dir.path().join(format!(".out.{pid}.0.tmp")), "x").unwrap();
            let d = dir.path().join(format!("rsimhash-batch-{pid}-0"));
            fs::create_dir(&d).unwrap();
            fs::write(d.join("rsimhash-temporary"), "").unwrap();
        }
        let unmarked = dir.path().join(format!("rsimhash-batch-{dead}-1"));
        fs::create_dir(&unmarked).unwrap();
        fs::write(dir.path().join("user.tmp"), "mine").unwrap();
        remove_stale(dir.path(), None, |n| pid_in(n, ".out.", '.', ".tmp"));
        remove_stale(dir.path(), Some("rsimhash-temporary"), |n| pid_in(n, "rsimhash-batch-", '-', ""));
        let mut left: Vec<String> = fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
        left.sort();
        let mut expected = vec![format!(".out.{mine}.0.tmp"), format!("rsimhash-batch-{mine}-0"), format!("rsimhash-batch-{dead}-1"), "user.tmp".to_string()];
        expected.sort();
        assert_eq!(left, expected);
    }
}
