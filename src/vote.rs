//! The bitwise vote that turns feature hashes into one fingerprint (SPEC v1
//! "Combining feature hashes").
//!
//! Unweighted votes count, per bit position, how many hashes have that bit set:
//! bit `j` of the fingerprint is 1 iff `V[j] = ones[j] - (n - ones[j]) > 0`.
//! The counting is bit-parallel: each hash byte is spread into eight one-byte
//! counters by a table lookup, so one hash costs eight table loads and eight
//! 64-bit adds. Byte counters overflow after 255 hashes, so they are flushed
//! into 32-bit totals every 255 hashes.

use crate::{Error, Result};

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

/// Accumulates unweighted votes; reusable after [`Vote::finish`].
#[derive(Clone, Debug)]
pub(crate) struct Vote {
    /// `lanes[i]` byte `k` counts bit `8i + k` since the last flush.
    lanes: [u64; 8],
    pending: u32,
    totals: [u32; 64],
    n: u64,
}

impl Default for Vote {
    fn default() -> Self {
        Vote { lanes: [0; 8], pending: 0, totals: [0; 64], n: 0 }
    }
}

impl Vote {
    #[inline(always)]
    pub(crate) fn add(&mut self, h: u64) {
        for (i, lane) in self.lanes.iter_mut().enumerate() {
            *lane += SPREAD[((h >> (8 * i)) & 0xff) as usize];
        }
        self.pending += 1;
        if self.pending == 255 {
            self.flush();
        }
    }

    #[inline(never)]
    fn flush(&mut self) {
        for (i, lane) in self.lanes.iter_mut().enumerate() {
            for k in 0..8 {
                self.totals[8 * i + k] += ((*lane >> (8 * k)) & 0xff) as u32;
            }
            *lane = 0;
        }
        self.n += u64::from(self.pending);
        self.pending = 0;
    }

    /// The fingerprint of everything added since the last call; resets.
    pub(crate) fn finish(&mut self) -> u64 {
        self.flush();
        let fp = majority(&self.totals, self.n);
        self.totals = [0; 64];
        self.n = 0;
        fp
    }
}

/// Unweighted `compute` of SPEC v1: every hash votes with weight 1.
/// Zero hashes give fingerprint 0.
pub fn compute(hashes: &[u64]) -> u64 {
    compute_parts(&[hashes])
}

/// [`compute`] over the concatenation of `parts`.
pub(crate) fn compute_parts(parts: &[&[u64]]) -> u64 {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: the CPU supports AVX2, checked just above.
            return unsafe { avx2::compute_parts(parts) };
        }
    }
    let mut vote = Vote::default();
    for part in parts {
        for &h in *part {
            vote.add(h);
        }
    }
    vote.finish()
}

/// The vote with 32 one-byte counters per AVX2 register: a hash's bytes are
/// shuffled so that byte `j / 8` lands in counter `j`, masked to bit `j % 8`
/// and compared, giving -1 in every counter whose bit is set; subtracting
/// counts it. Byte counters are flushed to 32-bit totals every 255 hashes.
#[cfg(target_arch = "x86_64")]
mod avx2 {
    use std::arch::x86_64::*;

    #[target_feature(enable = "avx2")]
    pub(super) fn compute_parts(parts: &[&[u64]]) -> u64 {
        // Counter j of `lo` (j < 32) / `hi` (j >= 32) takes byte j / 8 of the hash.
        let shuffle_lo = _mm256_setr_epi8(
            0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, //
            2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3,
        );
        let shuffle_hi = _mm256_setr_epi8(
            4, 4, 4, 4, 4, 4, 4, 4, 5, 5, 5, 5, 5, 5, 5, 5, //
            6, 6, 6, 6, 6, 6, 6, 6, 7, 7, 7, 7, 7, 7, 7, 7,
        );
        let bits = _mm256_set1_epi64x(0x8040_2010_0804_0201u64 as i64);
        let mut totals = [0u32; 64];
        let mut n = 0u64;
        let flush = |lo: __m256i, hi: __m256i, totals: &mut [u32; 64]| {
            let mut bytes = [0u8; 64];
            // SAFETY: `bytes` holds 64 bytes; unaligned stores are allowed.
            unsafe {
                _mm256_storeu_si256(bytes.as_mut_ptr().cast(), lo);
                _mm256_storeu_si256(bytes.as_mut_ptr().add(32).cast(), hi);
            }
            for (t, &b) in totals.iter_mut().zip(&bytes) {
                *t += u32::from(b);
            }
        };
        for part in parts {
            for chunk in part.chunks(255) {
                let (mut lo, mut hi) = (_mm256_setzero_si256(), _mm256_setzero_si256());
                for &h in chunk {
                    let v = _mm256_set1_epi64x(h as i64);
                    let l = _mm256_and_si256(_mm256_shuffle_epi8(v, shuffle_lo), bits);
                    let u = _mm256_and_si256(_mm256_shuffle_epi8(v, shuffle_hi), bits);
                    lo = _mm256_sub_epi8(lo, _mm256_cmpeq_epi8(l, bits));
                    hi = _mm256_sub_epi8(hi, _mm256_cmpeq_epi8(u, bits));
                }
                flush(lo, hi, &mut totals);
                n += chunk.len() as u64;
            }
        }
        super::majority(&totals, n)
    }
}

/// Bit `j` is set iff `V[j] = ones[j] - (n - ones[j]) > 0`.
fn majority(totals: &[u32; 64], n: u64) -> u64 {
    let mut fp = 0u64;
    for (j, &ones) in totals.iter().enumerate() {
        if 2 * u64::from(ones) > n {
            fp |= 1 << j;
        }
    }
    fp
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
        (0..64).filter(|&j| {
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
        hs.extend(std::iter::repeat(0).take(299));
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
        fn matches_naive(hashes in prop::collection::vec(
            prop_oneof![Just(0u64), Just(u64::MAX), any::<u64>()], 0..700)) {
            prop_assert_eq!(compute(&hashes), naive(&hashes));
            let mut scalar = Vote::default();
            hashes.iter().for_each(|&h| scalar.add(h));
            prop_assert_eq!(scalar.finish(), naive(&hashes));
            let (a, b) = hashes.split_at(hashes.len() / 3);
            prop_assert_eq!(compute_parts(&[a, b]), naive(&hashes));
            let weighted = compute_weighted(hashes.iter().map(|&h| (h, 1.0))).unwrap();
            prop_assert_eq!(weighted, naive(&hashes));
        }
    }
}
