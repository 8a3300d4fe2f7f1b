//! Large buffers: reserved fallibly, and backed by transparent huge pages
//! where the OS offers them.
//!
//! Out of memory: the global allocator's failure aborts the process
//! ("memory allocation of N bytes failed"), which a Python user cannot
//! catch. So the large buffers (tables, sort buffers, id lists, batch
//! arenas, decoded keys) are reserved with `try_reserve`, and a refusal
//! unwinds with an [`OutOfMemory`] payload instead, from wherever the
//! buffer is needed, up to the one place that turns it into an error
//! (`src/py/detach.rs`: Python's `MemoryError`). Operations that know their
//! size ask for [`headroom`] first, so that most refusals come before
//! anything has changed. Small allocations still abort when memory runs
//! out entirely; by then the large ones have failed first.
//!
//! Huge pages: a 10-million-item table is 80 MB: in 4 KiB pages, building
//! it costs ~20,000 page faults and probing it a TLB miss per lookup. Asking
//! for huge pages (`madvise(MADV_HUGEPAGE)`, honoured by Linux in its
//! default "madvise" mode) cuts both by 512x. Elsewhere, or when refused,
//! plain pages serve. Only these buffers ask: the allocator is built not to
//! (`no_thp` in `Cargo.toml`), as a huge page's first touch on a virtual
//! machine can cost ten times its 512 small pages, which memory read in
//! order or held briefly never earns back. So the work arrays of one job
//! ([`work_vec`], [`work_zeroed`]) stay on small pages: on a 2-vCPU VM
//! that hands freed memory back to its host, the batch kernel's arena on
//! huge pages made `find-all` of 10^7 fingerprints after pauses 1.12 s
//! instead of 0.96-1.04 s (0.55 s of system time instead of 0.17-0.33),
//! and a first `find_all` of 10^8 9.7-10.1 s instead of 9.1 s; back to
//! back, when the host still backs the memory just freed, they saved 2-4 %
//! (`find-all` 0.86 against 0.89 s).

use crate::{Error, Result};

/// Buffers smaller than this gain nothing from huge pages.
const HUGE_MIN_BYTES: usize = 2 << 20;

/// The payload a refused reservation unwinds with (see the module docs).
#[derive(Debug, Clone, Copy)]
pub struct OutOfMemory {
    pub bytes: u64,
    pub what: &'static str,
}

impl OutOfMemory {
    pub fn error(self) -> Error {
        Error::OutOfMemory { bytes: self.bytes, what: self.what }
    }
}

/// Unwinds with [`OutOfMemory`]: no panic message is printed (this is not
/// a bug), and the caller that catches it reports a `MemoryError`.
#[cold]
pub(crate) fn out_of_memory(bytes: usize, what: &'static str) -> ! {
    std::panic::resume_unwind(Box::new(OutOfMemory { bytes: bytes as u64, what }))
}

/// Room for `n` more items in `v`, or an unwind with [`OutOfMemory`].
#[inline]
pub(crate) fn reserve<T>(v: &mut Vec<T>, n: usize, what: &'static str) {
    if v.try_reserve(n).is_err() {
        out_of_memory(n.saturating_mul(std::mem::size_of::<T>()), what);
    }
}

/// An empty vector with room for `n` items, on huge pages if large.
pub(crate) fn vec_with_capacity<T>(n: usize) -> Vec<T> {
    let v = reserved(n, "a table or an id list");
    advise_huge(&v);
    v
}

/// An empty vector with room for `n` items, on small pages: a work array
/// of one job (see the module docs).
pub(crate) fn work_vec<T>(n: usize) -> Vec<T> {
    reserved(n, "a work array")
}

/// An empty vector with room for exactly `n` items, or an unwind with
/// [`OutOfMemory`] naming `what`.
fn reserved<T>(n: usize, what: &'static str) -> Vec<T> {
    let mut v = Vec::new();
    if v.try_reserve_exact(n).is_err() {
        out_of_memory(n.saturating_mul(std::mem::size_of::<T>()), what);
    }
    v
}

/// `n` zeros on small pages: a work array of one job (see the module
/// docs), its pages faulted in by the threads that first write them.
pub(crate) fn work_zeroed<T: bytemuck::Zeroable + Clone>(n: usize) -> Vec<T> {
    try_zeroed(n).unwrap_or_else(|| out_of_memory(n.saturating_mul(std::mem::size_of::<T>()), "a work array"))
}

/// `n` zeros, on huge pages if large. Fresh zeroed memory comes from the OS
/// untouched: its pages are faulted in by whichever thread writes them
/// first, not all by this one.
pub(crate) fn zeroed<T: bytemuck::Zeroable + Clone>(n: usize) -> Vec<T> {
    let v = work_zeroed(n);
    advise_huge(&v);
    v
}

/// Bytes this process can still allocate, where the OS says: the memory
/// Linux reports available (`MemAvailable`), or less under an address-space
/// limit (`RLIMIT_AS`) beyond what the process has mapped.
#[cfg(target_os = "linux")]
pub(crate) fn available() -> Option<u64> {
    let meminfo = std::fs::read_to_string("/proc/meminfo").ok()?;
    let kib = meminfo.lines().find_map(|l| l.strip_prefix("MemAvailable:"))?.trim().trim_end_matches("kB").trim().parse::<u64>().ok()?;
    let mut available = kib * 1024;
    let mut limit = std::mem::MaybeUninit::<libc::rlimit>::uninit();
    // SAFETY: getrlimit fills the struct on success; read only then.
    if unsafe { libc::getrlimit(libc::RLIMIT_AS, limit.as_mut_ptr()) } == 0 {
        let limit = unsafe { limit.assume_init() }.rlim_cur;
        if limit != libc::RLIM_INFINITY {
            let mapped = std::fs::read_to_string("/proc/self/statm").ok().and_then(|s| s.split_whitespace().next()?.parse::<u64>().ok());
            // SAFETY: sysconf has no preconditions.
            let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) }.max(4096) as u64;
            available = available.min(limit.saturating_sub(mapped.unwrap_or(0) * page));
        }
    }
    Some(available)
}

#[cfg(not(target_os = "linux"))]
pub(crate) fn available() -> Option<u64> {
    None
}

/// `n` zeros, from zeroed memory (`calloc`), or `None` when refused.
fn try_zeroed<T: bytemuck::Zeroable + Clone>(n: usize) -> Option<Vec<T>> {
    let layout = std::alloc::Layout::array::<T>(n).ok()?;
    if layout.size() == 0 {
        return Some(vec![T::zeroed(); n]);
    }
    // SAFETY: a non-zero-sized layout; all-zero bytes are a valid T
    // (Zeroable); the Vec takes the allocation with its exact layout.
    unsafe {
        let p = std::alloc::alloc_zeroed(layout) as *mut T;
        if p.is_null() {
            return None;
        }
        Some(Vec::from_raw_parts(p, n, n))
    }
}

/// Whether `bytes` more of address space can be had now: an operation that
/// is about to build that much asks first, so that it fails with
/// [`Error::OutOfMemory`] before it has changed anything. The room is
/// mapped (not touched) and unmapped at once: under an address-space limit
/// (`ulimit -v`, `RLIMIT_AS`) or strict overcommit this is exactly what the
/// buffers will need; it is not a reservation.
///
/// # Errors
/// [`Error::OutOfMemory`] naming `what`.
pub(crate) fn headroom(bytes: u64, what: &'static str) -> Result<()> {
    let refused = || Error::OutOfMemory { bytes, what };
    let len = usize::try_from(bytes).map_err(|_| refused())?;
    if len < HUGE_MIN_BYTES {
        return Ok(());
    }
    #[cfg(unix)]
    {
        // SAFETY: a fresh anonymous mapping, never read or written, unmapped at once.
        unsafe {
            let p = libc::mmap(std::ptr::null_mut(), len, libc::PROT_READ | libc::PROT_WRITE, libc::MAP_PRIVATE | libc::MAP_ANONYMOUS, -1, 0);
            if p == libc::MAP_FAILED {
                return Err(refused());
            }
            libc::munmap(p, len);
        }
        Ok(())
    }
    #[cfg(not(unix))]
    {
        let mut probe: Vec<u8> = Vec::new();
        probe.try_reserve_exact(len).map_err(|_| refused())
    }
}

#[cfg(target_os = "linux")]
fn advise_huge<T>(v: &Vec<T>) {
    let bytes = v.capacity() * std::mem::size_of::<T>();
    if bytes < HUGE_MIN_BYTES {
        return;
    }
    const HUGE: usize = 2 << 20;
    let start = (v.as_ptr() as usize).next_multiple_of(HUGE);
    let end = (v.as_ptr() as usize + bytes) & !(HUGE - 1);
    if end > start {
        // SAFETY: the range lies inside the vector's allocation; MADV_HUGEPAGE
        // only changes how the kernel backs it, never its contents. A failure
        // (no THP support) leaves ordinary pages, which is fine.
        unsafe {
            libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_HUGEPAGE);
        }
    }
}

#[cfg(not(target_os = "linux"))]
fn advise_huge<T>(_v: &Vec<T>) {}
