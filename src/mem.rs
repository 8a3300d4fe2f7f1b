//! Large buffers backed by transparent huge pages where the OS offers them.
//!
//! A 10-million-item table is 80 MB: in 4 KiB pages, building it costs ~20,000
//! page faults and probing it a TLB miss per lookup. Asking for huge pages
//! (`madvise(MADV_HUGEPAGE)`, honoured by Linux in its default "madvise"
//! mode) cuts both by 512x. Elsewhere, or when refused, plain pages serve.

/// Buffers smaller than this gain nothing from huge pages.
const HUGE_MIN_BYTES: usize = 2 << 20;

/// An empty vector with room for `n` items, on huge pages if large.
pub(crate) fn vec_with_capacity<T>(n: usize) -> Vec<T> {
    let v = Vec::with_capacity(n);
    advise_huge(&v);
    v
}

/// `n` zeros, on huge pages if large. Fresh zeroed memory comes from the OS
/// untouched: its pages are faulted in by whichever thread writes them
/// first, not all by this one.
pub(crate) fn zeroed<T: bytemuck::Zeroable + Clone>(n: usize) -> Vec<T> {
    let v = vec![T::zeroed(); n];
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
            available = available.min((limit as u64).saturating_sub(mapped.unwrap_or(0) * page));
        }
    }
    Some(available)
}

#[cfg(not(target_os = "linux"))]
pub(crate) fn available() -> Option<u64> {
    None
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
