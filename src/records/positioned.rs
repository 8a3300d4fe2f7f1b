//! Reads at file offsets (`pread`), so that one file's large reads can be
//! shared out to threads: the input's blocks ([`super::input`]).

use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;

fn offset(pos: u64) -> io::Result<libc::off_t> {
    libc::off_t::try_from(pos).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))
}

/// One `pread` of up to `out.len()` bytes at `pos`.
pub fn read_some_at(file: &File, pos: u64, out: &mut [std::mem::MaybeUninit<u8>]) -> io::Result<usize> {
    // SAFETY: `out` is writable memory of `out.len()` bytes; `pread` writes
    // at most that many and never reads them.
    let n = unsafe { libc::pread(file.as_raw_fd(), out.as_mut_ptr().cast(), out.len(), offset(pos)?) };
    usize::try_from(n).map_err(|_| io::Error::last_os_error())
}
