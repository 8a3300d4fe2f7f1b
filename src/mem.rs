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
