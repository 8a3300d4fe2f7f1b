//! Look-ups of stored keys in a table of the new side: each stored key
//! compared with its group of new keys (those sharing its directory slot),
//! eight keys a step with AVX-512 (VPOPCNTDQ), four with AVX2, one at a time
//! elsewhere; the same answer on every path.
//!
//! A group holds about 15 keys at the planner's designs, so a loop over
//! the group's steps would mispredict its end on most look-ups: the vector
//! paths compare a short group (up to [`SHORT_GROUP`] keys) in a fixed
//! number of masked steps, with no branch on its size.

use super::{Scratch, Table};
use crate::cpu::Popcount;
use crate::tables::plan::Design;

/// How look-ups compare keys: the widest way this CPU has, or in tests
/// the one a test forces.
pub(super) fn for_this_cpu() -> Popcount {
    #[cfg(test)]
    if let Some(forced) = super::tests::FORCED.get() {
        return forced;
    }
    crate::cpu::widest_popcount()
}

/// Every comparison this CPU can run, the widest first (for tests).
#[cfg(test)]
pub(super) fn all_here() -> Vec<Popcount> {
    let mut all = Vec::new();
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx512f") && std::arch::is_x86_feature_detected!("avx512vpopcntdq") {
            all.push(Popcount::Avx512);
        }
        if std::arch::is_x86_feature_detected!("avx2") {
            all.push(Popcount::Avx2);
        }
    }
    all.push(Popcount::Scalar);
    all
}

/// Groups of up to this many new keys are compared in a fixed number of
/// masked steps (three of eight keys, or four of four with AVX2 for groups
/// of up to 16), whatever their size.
#[cfg(target_arch = "x86_64")]
const SHORT_GROUP: usize = 24;
#[cfg(target_arch = "x86_64")]
const SHORT_GROUP_AVX2: usize = 16;

/// Looks stored items (permuted `keys`, positions `pos`, in position order)
/// up in `table`, pushing `value << 32 | old position` to `found` for each
/// close pair (`pairs`: only those this table reports, as `find_all`
/// needs; else all, as the dedup's minimum takes).
#[allow(clippy::too_many_arguments)]
pub(super) fn lookups(design: &Design, table: &Table, keys: &[u64], pos: &[u32], k: u32, pairs: bool, scratch: &mut Scratch, found: &mut Vec<u64>) {
    scratch.memo.clear();
    scratch.memo_values.clear();
    match table.compare {
        // SAFETY: `Popcount::Avx512` is chosen only where the CPU has
        // AVX-512F and VPOPCNTDQ (or by a test on such a CPU).
        #[cfg(target_arch = "x86_64")]
        Popcount::Avx512 => unsafe { lookups_avx512(design, table, keys, pos, k, pairs, scratch, found) },
        // SAFETY: `Popcount::Avx2` is chosen only where the CPU has AVX2.
        #[cfg(target_arch = "x86_64")]
        Popcount::Avx2 => unsafe { lookups_avx2(design, table, keys, pos, k, pairs, scratch, found) },
        Popcount::Scalar => {
            for (&key, &p) in keys.iter().zip(pos) {
                let range = table.group(key);
                if range.len() > table.dense {
                    dense(scratch, key, p, pairs, found, |out| compare(design, table, key, range, k, pairs, |d| out.push(d)));
                } else {
                    compare(design, table, key, range, k, pairs, |d| found.push(pair(d, p)));
                }
            }
        }
    }
}

/// [`lookups`], eight keys a step.
///
/// # Safety
/// The CPU has AVX-512F and AVX-512 VPOPCNTDQ.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512vpopcntdq")]
#[allow(clippy::too_many_arguments)]
unsafe fn lookups_avx512(design: &Design, table: &Table, keys: &[u64], pos: &[u32], k: u32, pairs: bool, scratch: &mut Scratch, found: &mut Vec<u64>) {
    use std::arch::x86_64::*;
    let limit = _mm512_set1_epi64(i64::from(k));
    for (&key, &p) in keys.iter().zip(pos) {
        let range = table.group(key);
        if range.len() > table.dense {
            dense(scratch, key, p, pairs, found, |out| compare_avx512(design, table, key, range, k, pairs, |d| out.push(d)));
        } else if range.len() <= SHORT_GROUP {
            let group = &table.keys[range.clone()];
            let vk = _mm512_set1_epi64(key as i64);
            let live = (1u32 << group.len()) - 1;
            // The keys at..at + 8 of `live` within k (masked loads: lanes
            // beyond the group are never read). Their prefix is left to
            // `take`: a key within k is a pair whichever table meets it,
            // and it is rare.
            let close8 = |at: usize| {
                let lanes = (live >> at) as __mmask8;
                // SAFETY: only the lanes of `lanes`, within the group, are loaded.
                let x = _mm512_xor_si512(unsafe { _mm512_maskz_loadu_epi64(lanes, group.as_ptr().wrapping_add(at).cast()) }, vk);
                _mm512_mask_cmple_epu64_mask(lanes, _mm512_popcnt_epi64(x), limit)
            };
            let close = u32::from(close8(0)) | u32::from(close8(8)) << 8 | u32::from(close8(16)) << 16;
            take(design, table, key, p, range.start, close, pairs, found);
        } else {
            compare_avx512(design, table, key, range, k, pairs, |d| found.push(pair(d, p)));
        }
    }
}

/// [`lookups`], four keys a step.
///
/// # Safety
/// The CPU has AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
#[allow(clippy::too_many_arguments)]
unsafe fn lookups_avx2(design: &Design, table: &Table, keys: &[u64], pos: &[u32], k: u32, pairs: bool, scratch: &mut Scratch, found: &mut Vec<u64>) {
    let close4 = Close4::new(table.prefix_mask, k);
    for (&key, &p) in keys.iter().zip(pos) {
        let range = table.group(key);
        if range.len() > table.dense {
            dense(scratch, key, p, pairs, found, |out| compare_avx2(design, table, key, range, k, pairs, |d| out.push(d)));
        } else if range.len() <= SHORT_GROUP_AVX2 {
            let group = &table.keys[range.clone()];
            let close = close4.mask(group, 0, key) | close4.mask(group, 4, key) << 4 | close4.mask(group, 8, key) << 8 | close4.mask(group, 12, key) << 12;
            take(design, table, key, p, range.start, close, pairs, found);
        } else {
            compare_avx2(design, table, key, range, k, pairs, |d| found.push(pair(d, p)));
        }
    }
}

/// The AVX2 comparison of a stored key with four new keys: the popcount of
/// each 64-bit lane is the sum of its bytes' nibble counts (a table look-up
/// by `vpshufb`, summed by `vpsadbw`).
#[cfg(target_arch = "x86_64")]
#[derive(Copy, Clone)]
struct Close4 {
    nibbles: std::arch::x86_64::__m256i,
    low: std::arch::x86_64::__m256i,
    limit: std::arch::x86_64::__m256i,
    prefix: std::arch::x86_64::__m256i,
    lanes: std::arch::x86_64::__m256i,
}

#[cfg(target_arch = "x86_64")]
impl Close4 {
    #[target_feature(enable = "avx2")]
    unsafe fn new(prefix_mask: u64, k: u32) -> Close4 {
        use std::arch::x86_64::*;
        Close4 {
            nibbles: _mm256_setr_epi8(0, 1, 1, 2, 1, 2, 2, 3, 1, 2, 2, 3, 2, 3, 3, 4, 0, 1, 1, 2, 1, 2, 2, 3, 1, 2, 2, 3, 2, 3, 3, 4),
            low: _mm256_set1_epi8(0x0f),
            limit: _mm256_set1_epi64x(i64::from(k)),
            prefix: _mm256_set1_epi64x(prefix_mask as i64),
            lanes: _mm256_setr_epi64x(0, 1, 2, 3),
        }
    }

    /// The mask (4 bits) of the keys `group[at..at + 4]` within k of `key`
    /// that share the prefix; lanes beyond the group are neither read nor
    /// set.
    #[target_feature(enable = "avx2")]
    #[inline]
    unsafe fn mask(&self, group: &[u64], at: usize, key: u64) -> u32 {
        use std::arch::x86_64::*;
        let live = _mm256_cmpgt_epi64(_mm256_set1_epi64x(group.len() as i64 - at as i64), self.lanes);
        // SAFETY: a masked load reads only the lanes of `live`, within
        // `group`; the others are neither read nor able to fault.
        let v = unsafe { _mm256_maskload_epi64(group.as_ptr().wrapping_add(at).cast(), live) };
        let x = _mm256_xor_si256(v, _mm256_set1_epi64x(key as i64));
        let lo = _mm256_shuffle_epi8(self.nibbles, _mm256_and_si256(x, self.low));
        let hi = _mm256_shuffle_epi8(self.nibbles, _mm256_and_si256(_mm256_srli_epi64(x, 4), self.low));
        let count = _mm256_sad_epu8(_mm256_add_epi8(lo, hi), _mm256_setzero_si256());
        let shares = _mm256_cmpeq_epi64(_mm256_and_si256(x, self.prefix), _mm256_setzero_si256());
        let close = _mm256_and_si256(_mm256_andnot_si256(_mm256_cmpgt_epi64(count, self.limit), shares), live);
        _mm256_movemask_pd(_mm256_castsi256_pd(close)) as u32
    }
}

/// Pushes the pairs of the keys `start + i` for each bit `i` of `close`
/// (for `find_all`, those this table reports: their prefix shared, and
/// no earlier table's; the dedup's minimum takes any pair within k).
#[cfg(target_arch = "x86_64")]
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn take(design: &Design, table: &Table, key: u64, p: u32, start: usize, mut close: u32, pairs: bool, found: &mut Vec<u64>) {
    while close != 0 {
        let j = start + close.trailing_zeros() as usize;
        close &= close - 1;
        if !pairs || design.reports(table.t, table.keys[j] ^ key) {
            found.push(pair(table.values[j], p));
        }
    }
}

#[inline(always)]
pub(super) fn pair(value: u32, old: u32) -> u64 {
    u64::from(value) << 32 | u64::from(old)
}

/// A look-up in a dense group (more than [`Table::dense`] new values): the
/// copies of `key` in this task are compared once, by `compare_into`.
#[inline(always)]
fn dense(scratch: &mut Scratch, key: u64, p: u32, pairs: bool, found: &mut Vec<u64>, compare_into: impl FnOnce(&mut Vec<u32>)) {
    let Scratch { memo, memo_values, .. } = scratch;
    if let Some(&(at, len)) = memo.get(&key) {
        if pairs {
            found.extend(memo_values[at as usize..(at + len) as usize].iter().map(|&d| pair(d, p)));
        }
        // A dedup: the earlier copy's position is smaller.
        return;
    }
    let at = memo_values.len();
    compare_into(memo_values);
    found.extend(memo_values[at..].iter().map(|&d| pair(d, p)));
    memo.insert(key, (at as u32, (memo_values.len() - at) as u32));
}

/// Calls `hit` with each new value of `range` within `k` of `key` that
/// shares the table's prefix (for `find_all`, only those this table
/// reports).
#[inline]
fn compare(design: &Design, table: &Table, key: u64, range: std::ops::Range<usize>, k: u32, pairs: bool, mut hit: impl FnMut(u32)) {
    for j in range {
        let x = table.keys[j] ^ key;
        if x & table.prefix_mask == 0 && x.count_ones() <= k && (!pairs || design.reports(table.t, x)) {
            hit(table.values[j]);
        }
    }
}

/// [`compare`], eight keys a step.
///
/// # Safety
/// The CPU has AVX-512F and AVX-512 VPOPCNTDQ.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512vpopcntdq")]
unsafe fn compare_avx512(design: &Design, table: &Table, key: u64, range: std::ops::Range<usize>, k: u32, pairs: bool, mut hit: impl FnMut(u32)) {
    use std::arch::x86_64::*;
    let (vk, prefix, limit) = (_mm512_set1_epi64(key as i64), _mm512_set1_epi64(table.prefix_mask as i64), _mm512_set1_epi64(i64::from(k)));
    let group = &table.keys[range.clone()];
    for (c, eight) in group.chunks(8).enumerate() {
        let lanes = ((1u32 << eight.len()) - 1) as __mmask8;
        // SAFETY: only the lanes of `lanes`, within `eight`, are loaded.
        let x = _mm512_xor_si512(unsafe { _mm512_maskz_loadu_epi64(lanes, eight.as_ptr().cast()) }, vk);
        let mut close = _mm512_mask_testn_epi64_mask(_mm512_mask_cmple_epu64_mask(lanes, _mm512_popcnt_epi64(x), limit), x, prefix);
        while close != 0 {
            let j = range.start + c * 8 + close.trailing_zeros() as usize;
            close &= close - 1;
            if !pairs || design.reports(table.t, table.keys[j] ^ key) {
                hit(table.values[j]);
            }
        }
    }
}

/// [`compare`], four keys a step.
///
/// # Safety
/// The CPU has AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn compare_avx2(design: &Design, table: &Table, key: u64, range: std::ops::Range<usize>, k: u32, pairs: bool, mut hit: impl FnMut(u32)) {
    let close4 = Close4::new(table.prefix_mask, k);
    let group = &table.keys[range.clone()];
    for at in (0..group.len()).step_by(4) {
        let mut close = close4.mask(group, at, key);
        while close != 0 {
            let j = range.start + at + close.trailing_zeros() as usize;
            close &= close - 1;
            if !pairs || design.reports(table.t, table.keys[j] ^ key) {
                hit(table.values[j]);
            }
        }
    }
}
