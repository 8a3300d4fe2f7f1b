//! Reads and writes at file offsets (`pread`, `pwritev`), so that one
//! file's large reads and writes can be shared out to threads: the input's
//! blocks ([`super::input`]) and a chunk's kept lines
//! ([`super::chunk::RecordChunk::write_to_file`]).

use std::fs::File;
use std::io::{self, IoSlice, Write};
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

/// The file's position; `None` when it has none (a pipe, a terminal) or
/// appends (a write at an offset would go to its end instead).
pub fn at(file: &File) -> io::Result<Option<u64>> {
    let fd = file.as_raw_fd();
    // SAFETY: `fcntl` and `lseek` on a descriptor the caller holds open.
    let flags = unsafe { libc::fcntl(fd, libc::F_GETFL) };
    if flags < 0 {
        return Err(io::Error::last_os_error());
    }
    if flags & libc::O_APPEND != 0 {
        return Ok(None);
    }
    // SAFETY: as above.
    let pos = unsafe { libc::lseek(fd, 0, libc::SEEK_CUR) };
    Ok(u64::try_from(pos).ok())
}

/// Moves the file's position to `to`.
pub fn seek(file: &File, to: u64) -> io::Result<()> {
    // SAFETY: `lseek` on a descriptor the caller holds open.
    if unsafe { libc::lseek(file.as_raw_fd(), offset(to)?, libc::SEEK_SET) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// `slices`, in order, cut into parts of `size` bytes (the last one
/// shorter): each part's offset in the whole, and its slices.
pub fn cut<'a>(slices: &[&'a [u8]], size: usize) -> Vec<(usize, Vec<&'a [u8]>)> {
    let size = size.max(1);
    let (mut parts, mut current, mut start, mut filled) = (Vec::new(), Vec::new(), 0usize, 0usize);
    for &whole in slices {
        let mut s = whole;
        while !s.is_empty() {
            let take = (size - filled).min(s.len());
            current.push(&s[..take]);
            filled += take;
            s = &s[take..];
            if filled == size {
                parts.push((start, std::mem::take(&mut current)));
                start += size;
                filled = 0;
            }
        }
    }
    if filled > 0 {
        parts.push((start, current));
    }
    parts
}

/// A file written from offset `pos` on, moving `pos` and never the file's
/// own position: threads can write their parts of one file side by side.
pub struct At<'f> {
    pub file: &'f File,
    pub pos: u64,
}

impl Write for At<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = std::os::unix::fs::FileExt::write_at(self.file, buf, self.pos)?;
        self.pos += n as u64;
        Ok(n)
    }

    /// One `pwritev` (`IoSlice` is an `iovec`) where Linux has it.
    #[cfg(target_os = "linux")]
    fn write_vectored(&mut self, bufs: &[IoSlice<'_>]) -> io::Result<usize> {
        let count = libc::c_int::try_from(bufs.len()).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
        // SAFETY: `IoSlice` is ABI-compatible with `iovec` on Unix; the
        // slices are valid for reads; the kernel only reads them.
        let n = unsafe { libc::pwritev(self.file.as_raw_fd(), bufs.as_ptr().cast(), count, offset(self.pos)?) };
        let n = usize::try_from(n).map_err(|_| io::Error::last_os_error())?;
        self.pos += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}
