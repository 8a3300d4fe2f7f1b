//! The bitwise vote that turns feature hashes into one fingerprint (SPEC v1
//! "Combining feature hashes").
//!
//! Unweighted votes count, per bit position, how many hashes have that bit
//! set: bit `j` of the fingerprint is 1 iff `V[j] = ones[j] - (n - ones[j]) > 0`.
//! [`Tally`] counts in 64 one-byte counters, flushed to 32-bit totals every 255
//! hashes so they never overflow. With AVX2 (checked at run time) a hash is
//! counted in a few vector instructions; otherwise each hash byte is spread
//! into eight counters by a table lookup.

use crate::{Error, Result};

/// Hashes a byte counter takes before it must be flushed.
const FLUSH_EVERY: usize = 255;

/// `SPREAD[b]` has byte `k` equal to bit `k` of `b`.
static SPREAD: [u64; 256] = {
    let mut t = [0u64; 256];
    let mut b = 0;
    while b < 256 {
        let mut k = 0;
        while k < 8 {
            t[b] |= (((b >> k) & 1) as u64) << (8 * k);
            k += 1;
        }
        b += 1;
    }
    t
};

/// An unweighted vote that takes hashes a slice at a time.
#[derive(Clone, Debug)]
pub(crate) struct Tally {
    /// Counter `j` counts bit `j` since the last flush.
    counts: [u8; 64],
    pending: usize,
    totals: [u32; 64],
    n: u64,
    /// Whether the AVX2 kernels count (x86-64 only: other CPUs always run
    /// the portable loop).
    #[cfg(target_arch = "x86_64")]
    avx2: bool,
    /// Whether the AVX-512 kernel of `shingle` may vote here too.
    #[cfg(target_arch = "x86_64")]
    avx512: bool,
}

impl Default for Tally {
    fn default() -> Self {
        Tally {
            counts: [0; 64],
            pending: 0,
            totals: [0; 64],
            n: 0,
            #[cfg(target_arch = "x86_64")]
            avx2: crate::cpu::x86_has!("avx2"),
            #[cfg(target_arch = "x86_64")]
            avx512: super::shingle::avx512_kernel(),
        }
    }
}

impl Tally {
    /// A tally that never uses AVX2 (to test the portable path).
    #[cfg(test)]
    fn portable() -> Self {
        #[cfg(target_arch = "x86_64")]
        return Tally { avx2: false, avx512: false, ..Tally::default() };
        #[cfg(not(target_arch = "x86_64"))]
        Tally::default()
    }

    /// A tally that may take AVX2's votes, never AVX-512's (to test the
    /// AVX2 kernels on a CPU that has both).
    #[cfg(all(test, target_arch = "x86_64"))]
    pub(crate) fn without_avx512() -> Self {
        Tally { avx512: false, ..Tally::default() }
    }

    /// Whether AVX2 kernels may vote into this tally ([`Self::add_counts`]).
    #[cfg(target_arch = "x86_64")]
    pub(crate) fn avx2(&self) -> bool {
        self.avx2
    }

    /// Whether the AVX-512 kernels may vote into this tally too.
    #[cfg(target_arch = "x86_64")]
    pub(crate) fn avx512(&self) -> bool {
        self.avx512
    }

    /// Adds votes counted elsewhere: `ones[j]` hashes with bit `j` set, of
    /// `n` hashes in all (by the AVX2 kernels of `shingle`).
    #[cfg(target_arch = "x86_64")]
    pub(crate) fn add_counts(&mut self, ones: &[u32; 64], n: u64) {
        for (t, &o) in self.totals.iter_mut().zip(ones) {
            *t += o;
        }
        self.n += n;
    }

    pub(crate) fn add(&mut self, mut hashes: &[u64]) {
        while !hashes.is_empty() {
            let (now, later) = hashes.split_at(hashes.len().min(FLUSH_EVERY - self.pending));
            self.count(now);
            self.pending += now.len();
            if self.pending == FLUSH_EVERY {
                self.flush();
            }
            hashes = later;
        }
    }

    #[inline]
    fn count(&mut self, hashes: &[u64]) {
        #[cfg(target_arch = "x86_64")]
        {
            if self.avx2 {
                // SAFETY: `avx2` is only true when the CPU supports AVX2.
                unsafe { avx2::count(&mut self.counts, hashes) };
                return;
            }
        }
        let mut lanes: [u64; 8] = std::array::from_fn(|i| u64::from_le_bytes(self.counts[8 * i..8 * i + 8].try_into().unwrap_or_default()));
        for &h in hashes {
            for (i, lane) in lanes.iter_mut().enumerate() {
                *lane += SPREAD[((h >> (8 * i)) & 0xff) as usize];
            }
        }
        for (i, lane) in lanes.iter().enumerate() {
            self.counts[8 * i..8 * i + 8].copy_from_slice(&lane.to_le_bytes());
        }
    }

    fn flush(&mut self) {
        for (t, c) in self.totals.iter_mut().zip(&mut self.counts) {
            *t += u32::from(*c);
            *c = 0;
        }
        self.n += self.pending as u64;
        self.pending = 0;
    }

    /// The fingerprint of everything added since the last call; resets.
    pub(crate) fn finish(&mut self) -> u64 {
        self.flush();
        let mut fp = 0u64;
        for (j, &ones) in self.totals.iter().enumerate() {
            if 2 * u64::from(ones) > self.n {
                fp |= 1 << j;
            }
        }
        self.totals = [0; 64];
        self.n = 0;
        fp
    }
}

/// Counter `j` of a 32-byte register takes byte `j / 8` of the hash (by a
/// shuffle), masked to bit `j % 8`; comparing with the mask gives -1 where the
/// bit is set, and subtracting that counts it.
#[cfg(target_arch = "x86_64")]
mod avx2 {
    use std::arch::x86_64::*;

    #[target_feature(enable = "avx2")]
    pub(super) fn count(counts: &mut [u8; 64], hashes: &[u64]) {
        let shuffle_lo = _mm256_setr_epi8(
            0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, //
            2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3,
        );
        let shuffle_hi = _mm256_setr_epi8(
            4, 4, 4, 4, 4, 4, 4, 4, 5, 5, 5, 5, 5, 5, 5, 5, //
            6, 6, 6, 6, 6, 6, 6, 6, 7, 7, 7, 7, 7, 7, 7, 7,
        );
        let bits = _mm256_set1_epi64x(0x8040_2010_0804_0201u64 as i64);
        let ptr = counts.as_mut_ptr();
        // SAFETY: `counts` is 64 bytes: two unaligned 32-byte loads and stores.
        let (mut lo, mut hi) = unsafe { (_mm256_loadu_si256(ptr.cast()), _mm256_loadu_si256(ptr.add(32).cast())) };
        for &h in hashes {
            let v = _mm256_set1_epi64x(h as i64);
            let l = _mm256_and_si256(_mm256_shuffle_epi8(v, shuffle_lo), bits);
            let u = _mm256_and_si256(_mm256_shuffle_epi8(v, shuffle_hi), bits);
            lo = _mm256_sub_epi8(lo, _mm256_cmpeq_epi8(l, bits));
            hi = _mm256_sub_epi8(hi, _mm256_cmpeq_epi8(u, bits));
        }
        // SAFETY: as above.
        unsafe {
            _mm256_storeu_si256(ptr.cast(), lo);
            _mm256_storeu_si256(ptr.add(32).cast(), hi);
        }
    }
}

/// Unweighted `compute` of SPEC v1: every hash votes with weight 1.
/// Zero hashes give fingerprint 0.
pub fn compute(hashes: &[u64]) -> u64 {
    let mut tally = Tally::default();
    tally.add(hashes);
    tally.finish()
}

/// Weighted `compute` of SPEC v1: `V[j]` accumulates `+w` or `-w` in IEEE-754
/// double precision, in the order the features are given.
///
/// # Errors
/// [`Error::NonFiniteWeight`] for a NaN or infinite weight.
pub fn compute_weighted<I>(features: I) -> Result<u64>
where
    I: IntoIterator<Item = (u64, f64)>,
{
    let mut v = [0f64; 64];
    for (index, (h, w)) in features.into_iter().enumerate() {
        if !w.is_finite() {
            return Err(Error::NonFiniteWeight { index, value: w });
        }
        for (j, vj) in v.iter_mut().enumerate() {
            *vj += if (h >> j) & 1 == 1 { w } else { -w };
        }
    }
    Ok(v.iter().enumerate().filter(|(_, &vj)| vj > 0.0).fold(0, |fp, (j, _)| fp | 1 << j))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn naive(hashes: &[u64]) -> u64 {
        (0..64)
            .filter(|&j| {
                let v: i64 = hashes.iter().map(|h| if (h >> j) & 1 == 1 { 1 } else { -1 }).sum();
                v > 0
            })
            .fold(0, |fp, j| fp | 1 << j)
    }

    #[test]
    fn empty_is_zero() {
        assert_eq!(compute(&[]), 0);
        assert_eq!(compute_weighted([]).unwrap(), 0);
    }

    #[test]
    fn single_hash_is_itself() {
        for h in [0, 1, u64::MAX, 0x8000_0000_0000_0000, 0xdead_beef] {
            assert_eq!(compute(&[h]), h);
        }
    }

    #[test]
    fn ties_clear_the_bit() {
        assert_eq!(compute(&[u64::MAX, 0]), 0);
        assert_eq!(compute(&[u64::MAX, u64::MAX, 0]), u64::MAX);
    }

    #[test]
    fn flushes_across_255_boundary() {
        // 300 all-ones against 299 zeros: counters wrap if flushing were wrong.
        let mut hs = vec![u64::MAX; 300];
        hs.extend(std::iter::repeat_n(0, 299));
        assert_eq!(compute(&hs), u64::MAX);
        hs.push(0);
        assert_eq!(compute(&hs), 0);
    }

    #[test]
    fn weighted_rejects_non_finite() {
        let err = compute_weighted([(1, 1.0), (2, f64::NAN)]).unwrap_err();
        assert!(matches!(err, Error::NonFiniteWeight { index: 1, .. }));
        assert!(compute_weighted([(1, f64::INFINITY)]).is_err());
    }

    #[test]
    fn weighted_negative_and_zero() {
        assert_eq!(compute_weighted([(u64::MAX, -1.0)]).unwrap(), 0);
        assert_eq!(compute_weighted([(0, -1.0)]).unwrap(), u64::MAX);
        assert_eq!(compute_weighted([(u64::MAX, 0.0)]).unwrap(), 0);
    }

    proptest! {
        #[test]
        fn matches_naive(
            hashes in prop::collection::vec(prop_oneof![Just(0u64), Just(u64::MAX), any::<u64>()], 0..700),
            cuts in prop::collection::vec(0usize..700, 0..5),
        ) {
            let expected = naive(&hashes);
            prop_assert_eq!(compute(&hashes), expected);
            let weighted = compute_weighted(hashes.iter().map(|&h| (h, 1.0))).unwrap();
            prop_assert_eq!(weighted, expected);
            // Added in pieces, through either path, reused after finish.
            for mut tally in [Tally::default(), Tally::portable()] {
                for _ in 0..2 {
                    let mut start = 0;
                    for &cut in &cuts {
                        let cut = cut.min(hashes.len()).max(start);
                        tally.add(&hashes[start..cut]);
                        start = cut;
                    }
                    tally.add(&hashes[start..]);
                    prop_assert_eq!(tally.finish(), expected);
                }
            }
        }
    }
}
