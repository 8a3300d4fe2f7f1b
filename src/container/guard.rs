//! Mapped index files that another program changes in place.
//!
//! rsimhash never writes a file that is in use (saves replace it by a
//! rename), but another program may truncate or rewrite a mapped index file.
//! Reading a page past the new end of a truncated file raises SIGBUS, which
//! kills the process. So while a file is mapped, its address range is
//! registered here, and a SIGBUS handler (Linux and macOS) answers a fault
//! inside a registered range by mapping zero pages over the rest of the
//! range: the read goes on, sees zeros, and the mapping is marked *hit*.
//! The operation under way ends normally (every decoder is bounds-checked
//! and stops at bytes that do not decode), and the index then refuses to
//! answer: its operations check the marks before returning
//! ([`super::Origin::intact`]). Faults outside every registered range go to
//! the handler that was there before (Python's `faulthandler`, Rust's stack
//! overflow check) or, if none, to the default action, as if this handler
//! did not exist.
//!
//! Invariants:
//! - The handler only reads the slot table (atomics) and calls `mmap`, a
//!   system call; it takes no lock and allocates nothing.
//! - A slot's `end` is stored before its `start` (release), and `start` is
//!   cleared before the mapping is unmapped, so the handler never acts on a
//!   range that is not (or no longer) a live mapping of ours.
//! - A mapping that finds no free slot (more than [`SLOTS`] files mapped at
//!   once) is used unguarded: a truncation then kills the process, as it
//!   did before this module.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

/// Files mapped at once that are guarded.
pub(super) const SLOTS: usize = 4096;

struct Slot {
    /// Claimed by a mapping (its range may not be set yet).
    used: AtomicBool,
    start: AtomicUsize,
    end: AtomicUsize,
    hit: AtomicBool,
}

#[allow(clippy::declare_interior_mutable_const)]
const FREE: Slot = Slot { used: AtomicBool::new(false), start: AtomicUsize::new(0), end: AtomicUsize::new(0), hit: AtomicBool::new(false) };
static TABLE: [Slot; SLOTS] = [FREE; SLOTS];
/// Slots ever claimed: the handler looks at these only.
static HIGH: AtomicUsize = AtomicUsize::new(0);
/// Set whenever any mapping is hit or any decoder finds bytes that changed:
/// the check after every index operation is one load of this while false.
pub(crate) static ANY_DAMAGE: AtomicBool = AtomicBool::new(false);

/// A mapped range registered with the handler; unregistered when dropped,
/// which must happen before the range is unmapped.
#[derive(Debug)]
pub(super) struct Watch {
    slot: Option<usize>,
}

impl Watch {
    /// Guards the mapped bytes `range` (an empty one needs no guard).
    pub fn new(range: &[u8]) -> Watch {
        if range.is_empty() || !handler::install() {
            return Watch { slot: None };
        }
        let (start, end) = (range.as_ptr() as usize, range.as_ptr() as usize + range.len());
        for (i, slot) in TABLE.iter().enumerate() {
            if slot.used.compare_exchange(false, true, Ordering::AcqRel, Ordering::Relaxed).is_ok() {
                slot.hit.store(false, Ordering::Relaxed);
                slot.end.store(end, Ordering::Release);
                slot.start.store(start, Ordering::Release);
                HIGH.fetch_max(i + 1, Ordering::AcqRel);
                return Watch { slot: Some(i) };
            }
        }
        Watch { slot: None }
    }

    /// Whether a read of the range faulted (the file was cut short under it).
    pub fn hit(&self) -> bool {
        self.slot.is_some_and(|i| TABLE[i].hit.load(Ordering::Acquire))
    }

    /// Whether the range is guarded.
    #[cfg(test)]
    pub fn guarded(&self) -> bool {
        self.slot.is_some()
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        if let Some(i) = self.slot {
            let slot = &TABLE[i];
            slot.start.store(0, Ordering::Release);
            slot.end.store(0, Ordering::Release);
            slot.used.store(false, Ordering::Release);
        }
    }
}

/// Replaces the pages from the one holding `addr` to the end of its
/// registered range with zeros; returns whether `addr` was in one.
#[cfg_attr(not(any(target_os = "linux", target_os = "macos")), allow(dead_code))]
fn zero_fill(addr: usize, page: usize) -> bool {
    let high = HIGH.load(Ordering::Acquire).min(SLOTS);
    for slot in &TABLE[..high] {
        let start = slot.start.load(Ordering::Acquire);
        if start == 0 || addr < start {
            continue;
        }
        let end = slot.end.load(Ordering::Acquire);
        if addr >= end {
            continue;
        }
        let from = addr & !(page - 1);
        let to = end.next_multiple_of(page);
        if !handler::map_zeros(from, to - from) {
            return false;
        }
        slot.hit.store(true, Ordering::Release);
        ANY_DAMAGE.store(true, Ordering::Release);
        return true;
    }
    false
}

#[cfg(any(target_os = "linux", target_os = "macos"))]
mod handler {
    use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicUsize, Ordering};
    use std::sync::Mutex;

    use libc::{c_int, c_void, sigaction, siginfo_t};

    /// The handler that was installed before ours (null: the default).
    static PREVIOUS: AtomicPtr<sigaction> = AtomicPtr::new(std::ptr::null_mut());
    static PAGE: AtomicUsize = AtomicUsize::new(4096);
    static INSTALL: Mutex<()> = Mutex::new(());
    /// Set once a foreign fault was passed on: a handler that answers by
    /// sending SIGBUS again (`faulthandler` does, after its report) then
    /// gets the default action, not a second report and a loop.
    static CHAINED: AtomicBool = AtomicBool::new(false);

    /// Makes ours the SIGBUS handler (again, if another was installed over
    /// it since, which then becomes the one ours passes foreign faults to).
    pub fn install() -> bool {
        let _one = INSTALL.lock().unwrap_or_else(|e| e.into_inner());
        // SAFETY: sigaction with a valid out-pointer; sysconf has no preconditions.
        unsafe {
            let mut current: sigaction = std::mem::zeroed();
            if libc::sigaction(libc::SIGBUS, std::ptr::null(), &mut current) != 0 {
                return false;
            }
            if current.sa_sigaction == on_sigbus as *const () as usize {
                return true;
            }
            let page = libc::sysconf(libc::_SC_PAGESIZE);
            if page > 0 {
                PAGE.store(page as usize, Ordering::Relaxed);
            }
            let mut ours: sigaction = std::mem::zeroed();
            ours.sa_sigaction = on_sigbus as *const () as usize;
            ours.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK;
            libc::sigemptyset(&mut ours.sa_mask);
            let mut old: sigaction = std::mem::zeroed();
            if libc::sigaction(libc::SIGBUS, &ours, &mut old) != 0 {
                return false;
            }
            // The old record is leaked: the handler may be reading it.
            let previous = if old.sa_sigaction == libc::SIG_DFL { std::ptr::null_mut() } else { Box::into_raw(Box::new(old)) };
            PREVIOUS.store(previous, Ordering::Release);
        }
        true
    }

    /// Maps `len` bytes of zero pages, read-only, at `at` (page-aligned,
    /// inside a mapping of ours). An async-signal-safe system call.
    pub fn map_zeros(at: usize, len: usize) -> bool {
        // SAFETY: the range lies inside a live read-only mapping of ours
        // (see the module's invariants); MAP_FIXED replaces its pages.
        let p = unsafe { libc::mmap(at as *mut c_void, len, libc::PROT_READ, libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_FIXED, -1, 0) };
        p != libc::MAP_FAILED
    }

    extern "C" fn on_sigbus(sig: c_int, info: *mut siginfo_t, context: *mut c_void) {
        // SAFETY: the kernel passes a valid siginfo_t to an SA_SIGINFO handler.
        let (code, addr) = unsafe { ((*info).si_code, (*info).si_addr() as usize) };
        // A fault the kernel raised (si_code > 0), not a signal someone sent.
        if code > 0 && super::zero_fill(addr, PAGE.load(Ordering::Relaxed)) {
            return;
        }
        let previous = PREVIOUS.load(Ordering::Acquire);
        // SAFETY: a record stored by `install` and never freed; calling the
        // previous handler as it asked to be called.
        unsafe {
            if !(previous.is_null() || code <= 0 && CHAINED.load(Ordering::Acquire)) {
                CHAINED.store(true, Ordering::Release);
                let act = &*previous;
                if act.sa_sigaction != libc::SIG_IGN {
                    if act.sa_flags & libc::SA_SIGINFO != 0 {
                        let f: extern "C" fn(c_int, *mut siginfo_t, *mut c_void) = std::mem::transmute(act.sa_sigaction);
                        f(sig, info, context);
                    } else {
                        let f: extern "C" fn(c_int) = std::mem::transmute(act.sa_sigaction);
                        f(sig);
                    }
                    return;
                }
            }
            // The default action: restored, and the fault (or the signal) comes again.
            let mut default: sigaction = std::mem::zeroed();
            default.sa_sigaction = libc::SIG_DFL;
            libc::sigaction(libc::SIGBUS, &default, std::ptr::null_mut());
            if code <= 0 {
                libc::raise(sig);
            }
        }
    }
}

#[cfg(not(any(target_os = "linux", target_os = "macos")))]
mod handler {
    pub fn install() -> bool {
        false
    }

    pub fn map_zeros(_at: usize, _len: usize) -> bool {
        false
    }
}

#[cfg(all(test, any(target_os = "linux", target_os = "macos")))]
mod tests {
    use super::*;

    /// A mapped file cut short under its mapping: reading past the new end
    /// gives zeros and marks the watch, instead of killing the process.
    #[test]
    fn a_truncated_mapping_reads_zeros() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        std::fs::write(&path, vec![7u8; 1 << 20]).unwrap();
        let file = std::fs::File::open(&path).unwrap();
        // SAFETY: the test's own file, truncated on purpose.
        let map = unsafe { memmap2::Mmap::map(&file).unwrap() };
        let watch = Watch::new(&map);
        assert!(watch.guarded() && !watch.hit());
        assert_eq!(map[1000], 7);
        std::fs::OpenOptions::new().write(true).open(&path).unwrap().set_len(4096).unwrap();
        let sum: u64 = map.iter().map(|&b| u64::from(b)).sum();
        assert_eq!(sum, 7 * 4096, "the first page is the file's, the rest zeros");
        assert!(watch.hit() && ANY_DAMAGE.load(Ordering::Acquire));
        drop(watch);
    }
}
