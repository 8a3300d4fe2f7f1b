//! Which instruction-set extensions the core may use.
//!
//! Each fast path checks the CPU at run time; `RSIMHASH_PORTABLE=1` in the
//! environment (read once, at the first check) turns them all off, so the
//! code that an aarch64 or Apple silicon build runs (the portable loops every
//! target compiles) is run and tested on x86-64 too.

use std::sync::OnceLock;

/// The environment variable that forces the portable paths.
pub const PORTABLE_VAR: &str = "RSIMHASH_PORTABLE";

/// Whether the portable paths are forced (`RSIMHASH_PORTABLE` set to
/// anything but empty or `0`).
pub fn portable() -> bool {
    static PORTABLE: OnceLock<bool> = OnceLock::new();
    *PORTABLE.get_or_init(|| std::env::var_os(PORTABLE_VAR).is_some_and(|v| !v.is_empty() && v != "0"))
}

/// Whether the CPU has an x86 feature and the fast paths are allowed.
#[cfg(target_arch = "x86_64")]
macro_rules! x86_has {
    ($($feature:tt),+) => {
        !$crate::cpu::portable() $(&& std::arch::is_x86_feature_detected!($feature))+
    };
}
#[cfg(target_arch = "x86_64")]
pub(crate) use x86_has;

/// A hint to load the cache line at `p`; never faults, whatever `p` is.
#[inline(always)]
pub(crate) fn prefetch<T>(p: *const T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch does not access memory architecturally: any address,
    // even an invalid one, is allowed.
    #[allow(unused_unsafe)]
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(p.cast());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

/// How keys are compared by popcount: the widest way this CPU allows.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum Popcount {
    /// One key at a time.
    Scalar,
    /// Four keys a step, popcounts by nibble tables (AVX2).
    #[cfg(target_arch = "x86_64")]
    Avx2,
    /// Eight keys a step (AVX-512F and VPOPCNTDQ).
    #[cfg(target_arch = "x86_64")]
    Avx512,
}

/// The widest [`Popcount`] this CPU has (`RSIMHASH_PORTABLE` turns the
/// vector ones off).
pub(crate) fn widest_popcount() -> Popcount {
    #[cfg(target_arch = "x86_64")]
    {
        if x86_has!("avx512f", "avx512vpopcntdq") {
            return Popcount::Avx512;
        }
        if x86_has!("avx2") {
            return Popcount::Avx2;
        }
    }
    Popcount::Scalar
}
