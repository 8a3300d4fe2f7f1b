//! What every job shares, below the index, the batch jobs, the verified
//! jobs and the distributed helpers: the [`Control`] a caller holds to
//! follow and cancel a job, which pairs of copies an answer lists
//! ([`Copies`]), how a pair of positions packs into one `u64`, and the
//! 64-bit mix that spreads positions and seeds test data.
//!
//! Nothing here imports another module of the crate but the error type:
//! every layer above may use it, and it uses none of them.

mod control;

#[cfg(test)]
pub(crate) use control::tests::check as check_readings;
pub use control::{Control, Progress};

use crate::{Error, Result};

/// Which pairs of copies (items with the same fingerprint) [`find_all`](crate::batch::find_all) lists.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub enum Copies {
    /// Every pair: `c` copies of a fingerprint make `c (c - 1) / 2` pairs
    /// among themselves, and `c` times the pairs of their first copy.
    #[default]
    All,
    /// Each copy paired with the first copy of its fingerprint only (a
    /// star), and the first copies of close fingerprints with each other:
    /// what clusters and a dedup need, one pair per copy.
    First,
}

impl std::str::FromStr for Copies {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self> {
        match s {
            "all" => Ok(Copies::All),
            "first" => Ok(Copies::First),
            other => Err(Error::invalid("copies", "\"all\" or \"first\"", format!("{other:?}"))),
        }
    }
}

/// A pair of positions packed as `lower << 32 | higher`, which sorts as
/// the pairs do (positions are below 2^32).
pub(crate) type Pair = u64;

#[inline]
pub(crate) fn pack(a: u32, b: u32) -> Pair {
    let (lo, hi) = if a < b { (a, b) } else { (b, a) };
    u64::from(lo) << 32 | u64::from(hi)
}

#[inline]
pub(crate) fn unpack(p: Pair) -> (u32, u32) {
    ((p >> 32) as u32, p as u32)
}

/// splitmix64's finaliser: a cheap, well-spread 64-bit mix.
#[inline]
pub(crate) fn mix(mut x: u64) -> u64 {
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}
