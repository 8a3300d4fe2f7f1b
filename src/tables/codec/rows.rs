//! Whole blocks decoded six at a time into rows of keys, for the work that
//! reads entire tables (`find_all`, merges, large batches of queries), and
//! the groups of keys sharing a prefix found in those rows ([`Groups`]).
//!
//! Decoding a block is one chain of dependent steps (position, load, table
//! entry, position again), about fifteen cycles a key. Six blocks side by
//! side are six chains that the CPU overlaps, and then what bounds the speed
//! is the instructions a key takes. So each lane's state is only its bit
//! position, held in a register: each key is stored to the lane's row as it
//! is decoded and the next key reads it back from there, rows lie at fixed
//! distances so that one pointer addresses every lane's slot, and one load of
//! the table entry gives the low bits' place to `bextr`. On x86-64 with BMI1
//! and BMI2 the lockstep loop is written in assembly ([`asm`]): the
//! compiler's version of it kept part of that state on the stack, and took
//! 2.4 ns a key with three lanes where this takes 1.5 with six.

use super::{load, BlockReader, Decoder, MAX_CODE_LEN, TABLE_SIZE};

#[cfg(target_arch = "x86_64")]
mod asm;

/// Blocks decoded side by side.
pub const LANES: usize = 6;
/// Keys a row holds: blocks with more are decoded otherwise.
pub const ROW: usize = 512;
/// Keys of slack after a block's keys: [`Groups::row`] reads 65 at a time.
pub const SLACK: usize = 64;
/// Row length in memory.
const STRIDE: usize = ROW + SLACK;

/// Bits one key takes at most: its code and 63 low bits.
const MAX_KEY_BITS: usize = MAX_CODE_LEN as usize + 63;

/// The decoding table of [`decode_rows`], for one code: for every
/// [`MAX_CODE_LEN`] bits, `[code length, h, code length + h, wide]`, where
/// `wide` is 0x80 when the code and its low bits do not fit one 8-byte load
/// at any bit offset, or when the bits start no code (in large tables, only
/// the rare `h` of 48 and more are wide). Then `2^h - 1` for each `h`: one
/// load instead of two instructions.
#[derive(Clone, Debug)]
pub struct RowTable {
    table: Box<Table>,
    /// No code is longer than 10 bits: the loop reads a quarter of the table
    /// (the x86-64 assembly's shortcut; the portable loop needs no flag).
    #[cfg(target_arch = "x86_64")]
    short: bool,
}

/// The mark of wide entries: the sign bit of an entry read as an `i32`.
const WIDE: u8 = 0x80;

/// What [`RowTable`] holds, laid out as the assembly reads it.
#[derive(Clone, Debug)]
#[repr(C)]
pub struct Table {
    entries: [[u8; 4]; TABLE_SIZE],
    below: [u64; 64],
}

impl RowTable {
    pub fn new(decoder: &Decoder) -> RowTable {
        let mut table = Box::new(Table { entries: [[0, 0, 0, WIDE]; TABLE_SIZE], below: std::array::from_fn(|h| super::low_mask(h as u32)) });
        for (slot, &e) in table.entries.iter_mut().zip(decoder.table.iter()) {
            if e != super::NO_CODE {
                let (h, len) = super::unpack(e);
                let wide = if h + len > super::FAST_BITS { WIDE } else { 0 };
                *slot = [len as u8, h as u8, (h + len) as u8, wide];
            }
        }
        RowTable {
            table,
            #[cfg(target_arch = "x86_64")]
            short: decoder.mask < 1 << 10,
        }
    }
}

/// Rows of keys, one a block.
pub struct Rows {
    keys: [[u64; STRIDE]; LANES],
}

impl Rows {
    pub fn new() -> Box<Rows> {
        Box::new(Rows { keys: [[0; STRIDE]; LANES] })
    }

    /// Row `l`, with its slack: the block's keys come first.
    pub fn row(&self, l: usize) -> &[u64] {
        &self.keys[l]
    }
}

/// Decodes [`LANES`] blocks of a table's `data` into `rows`: block `l`
/// starts at byte `starts[l]` and holds `counts[l]` keys (1 to [`ROW`]),
/// which go to the start of row `l`. Returns false if some block did not
/// decode (never, for blocks [`super::check_block`] accepted).
pub fn decode_rows(data: &[u8], decoder: &Decoder, rt: &RowTable, starts: [usize; LANES], counts: [usize; LANES], rows: &mut Rows) -> bool {
    decode_rows_by(Loop::Best, data, decoder, rt, starts, counts, rows)
}

/// Which lockstep loop decodes: tests run each.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Loop {
    /// The assembly where the CPU has BMI1 and BMI2, else the portable loop.
    Best,
    /// The portable loop even where the assembly could run (elsewhere than
    /// on x86-64, `Best` is this loop already).
    #[cfg(any(test, target_arch = "x86_64"))]
    Portable,
    /// The assembly for codes of any length, on any table.
    #[cfg(all(test, target_arch = "x86_64"))]
    Long,
}

fn decode_rows_by(by: Loop, data: &[u8], decoder: &Decoder, rt: &RowTable, starts: [usize; LANES], counts: [usize; LANES], rows: &mut Rows) -> bool {
    assert!(counts.iter().all(|&c| (1..=ROW).contains(&c)), "a row holds 1 to {ROW} keys");
    let mut pos = starts.map(|s| s * 8 + 64);
    for (row, &s) in rows.keys.iter_mut().zip(&starts) {
        row[0] = load(data, s);
    }
    // In lockstep for as many keys as the longest block has, if no load can
    // leave `data` whatever the bits say: lanes whose block has ended decode
    // on through the bytes after it, into row slots no one reads, rather
    // than leave the others to finish alone at a third of the speed. Else
    // for the keys every block has, if that fits; else each lane alone.
    let fits = |keys: usize| starts.iter().all(|&s| s + 17 + keys * MAX_KEY_BITS / 8 <= data.len());
    let (longest, common) = (counts.iter().copied().max().unwrap_or(1), counts.iter().copied().min().unwrap_or(1));
    let lockstep = if fits(longest) {
        longest
    } else if fits(common) {
        common
    } else {
        1
    };
    if lockstep > 1 {
        // SAFETY: before step `i` a lane has moved at most `(i - 1) *
        // MAX_KEY_BITS` bits past its first key and a step loads 16 bytes
        // from there, so the loads end before `s + 17 + lockstep *
        // MAX_KEY_BITS / 8`, within `data` (`fits`); the stores go to slots
        // `1..lockstep` of the rows, `lockstep <= ROW`.
        unsafe { lockstep_loop(by, data, rt, lockstep, &mut pos, rows) };
    }
    // The keys past the lockstep, lane by lane, checked.
    let mut ok = true;
    for l in 0..LANES {
        let block = data.get(starts[l]..).unwrap_or(&[]);
        let prev = rows.keys[l][lockstep - 1];
        let mut r = BlockReader { data: block, table: &decoder.table, mask: decoder.mask & (TABLE_SIZE - 1), pos: pos[l] - starts[l] * 8, prev };
        for i in lockstep..counts[l] {
            let Some(key) = r.next_key() else {
                ok = false;
                break;
            };
            rows.keys[l][i] = key;
        }
    }
    ok
}

/// Keys `1..steps` of every lane, lane `l` from bit `pos[l]` of `data` on
/// (where it is left) after key 0 of row `l`.
///
/// # Safety
/// Every load, 16 bytes from the byte of a position reached, lies within
/// `data`; `steps <= ROW`.
unsafe fn lockstep_loop(by: Loop, data: &[u8], rt: &RowTable, steps: usize, pos: &mut [usize; LANES], rows: &mut Rows) {
    #[cfg(target_arch = "x86_64")]
    if by != Loop::Portable && crate::cpu::x86_has!("bmi1", "bmi2") {
        let out = rows.keys.as_mut_ptr().cast::<u64>().add(1);
        let table: *const Table = &*rt.table;
        // SAFETY: the CPU has BMI1 and BMI2; the caller's promises.
        let (data, steps) = (data.as_ptr(), steps - 1);
        return if rt.short && by == Loop::Best { asm::short(data, table, out, steps, pos) } else { asm::any(data, table, out, steps, pos) };
    }
    // Elsewhere than on x86-64 every loop is the portable one.
    #[cfg(not(target_arch = "x86_64"))]
    let _ = by;
    portable_loop(data, rt, steps, pos, rows)
}

/// The groups of a table's keys, fed row by row: runs of keys each close
/// to the next (`a ^ b <= limit`: in a table, sharing its prefix). Every two
/// keys of a group make a pair, as `find_all` compares them.
///
/// Within a row the pairs come from bit masks, 64 neighbours to a word: bit
/// `j` of `close` says keys `j` and `j + 1` are close; `close & close >> 1`
/// says keys `j` to `j + 2` are, so `j` and `j + 2` pair; and so on while
/// any bit is left. Each level is a loop over its set bits, with no branch
/// that depends on the shape of the groups; in a table of 10^7 keys a
/// seventh to a quarter of neighbours are close, and few groups have more
/// than three keys. Where most neighbours are close (long groups, many
/// levels), nested loops over each group serve better.
pub struct Groups {
    limit: u64,
    /// The group open at the end of the keys so far: the last key and the
    /// keys before it in its group.
    carry: Vec<u64>,
    /// Masks of the current row, level by level, and one zero word after.
    close: Vec<u64>,
    #[cfg(target_arch = "x86_64")]
    avx2: bool,
}

impl Groups {
    /// Groups of keys whose highest differing bit is below `below`.
    pub fn new(below: u32) -> Groups {
        Groups {
            limit: close_limit(below),
            carry: Vec::new(),
            close: Vec::new(),
            #[cfg(target_arch = "x86_64")]
            avx2: crate::cpu::x86_has!("avx2"),
        }
    }

    /// The first `n` keys of `keys` (which has [`SLACK`] more after them, of
    /// any value) follow those so far: calls `f(x, y)` for each pair of a
    /// group that they complete, `x` before `y`.
    pub fn row(&mut self, keys: &[u64], n: usize, mut f: impl FnMut(u64, u64)) {
        assert!(n + SLACK <= keys.len());
        if n == 0 {
            return;
        }
        let words = n.div_ceil(64);
        self.close.clear();
        self.close.resize(words + 1, 0);
        for (w, at) in (0..n).step_by(64).enumerate() {
            let window = &keys[at..at + 65];
            #[cfg(target_arch = "x86_64")]
            // SAFETY: the CPU has AVX2.
            let m = if self.avx2 { unsafe { close_mask_avx2(window, self.limit) } } else { close_mask(window, self.limit) };
            #[cfg(not(target_arch = "x86_64"))]
            let m = close_mask(window, self.limit);
            // Neighbours from the slack on do not count.
            let valid = (n - 1 - at).min(64) as u32;
            self.close[w] = m & u64::MAX.checked_shr(64 - valid).unwrap_or(0);
        }
        // The run of keys from the first on that are close in turn.
        let lead = leading_run(&self.close);
        // Pairs with the group open before the row, if the row continues it.
        let bridged = self.carry.last().is_some_and(|&last| last ^ keys[0] <= self.limit);
        if bridged {
            for &y in &keys[..=lead] {
                self.carry.iter().for_each(|&x| f(x, y));
            }
        }
        // Pairs within the row: level by level where groups are short (most
        // neighbours not close), as nested loops over each group where they
        // are long and levels many.
        let close: u32 = self.close[..words].iter().map(|m| m.count_ones()).sum();
        if close as usize * 2 <= n {
            self.by_levels(keys, words, &mut f);
        } else {
            self.by_runs(keys, words, &mut f);
        }
        // The group open at the row's end, for the next row: the carry and
        // the whole row if the row continues it throughout, else the keys
        // from the last one not close to the one after it.
        if !(bridged && lead == n - 1) {
            self.carry.clear();
        }
        let trail = if bridged && lead == n - 1 { 0 } else { n - 1 - self.trailing_run(keys, n) };
        self.carry.extend_from_slice(&keys[trail..n]);
    }

    /// The pairs within the row, `d` apart for `d` = 1, 2, ... while any
    /// keys are close in turn that far (the masks are spent).
    fn by_levels(&mut self, keys: &[u64], words: usize, f: &mut impl FnMut(u64, u64)) {
        let mut d = 1;
        loop {
            let mut any = 0;
            for (w, &m) in self.close[..words].iter().enumerate() {
                any |= m;
                let mut m = m;
                while m != 0 {
                    let j = w * 64 + m.trailing_zeros() as usize;
                    f(keys[j], keys[j + d]);
                    m &= m - 1;
                }
            }
            if any == 0 {
                break;
            }
            // Keys `j..=j + d + 1` close in turn: both `j..=j + d` and
            // `j + 1..=j + d + 1` are.
            for w in 0..words {
                self.close[w] &= self.close[w] >> 1 | self.close[w + 1] << 63;
            }
            d += 1;
        }
    }

    /// The pairs within the row, group by group: a group starts at a close
    /// neighbour pair whose key before is not close to its own, and ends at
    /// one whose key after is not.
    fn by_runs(&mut self, keys: &[u64], words: usize, f: &mut impl FnMut(u64, u64)) {
        let mut start = 0;
        for w in 0..words {
            let m = self.close[w];
            let before = if w > 0 { self.close[w - 1] >> 63 } else { 0 };
            let (mut starts, mut ends) = (m & !(m << 1 | before), m & !(m >> 1 | self.close[w + 1] << 63));
            while starts | ends != 0 {
                // A group's end comes after its start, in this word or a later one.
                let s = starts.trailing_zeros();
                let e = ends.trailing_zeros();
                if s <= e && starts != 0 {
                    start = w * 64 + s as usize;
                    starts &= starts - 1;
                } else {
                    each_pair(&keys[start..=w * 64 + e as usize + 1], f);
                    ends &= ends - 1;
                }
            }
        }
    }

    /// The number of keys before the row's last that are close in turn to
    /// it, from the row itself (the masks were spent on the levels).
    fn trailing_run(&self, keys: &[u64], n: usize) -> usize {
        keys[..n].windows(2).rev().take_while(|w| w[0] ^ w[1] <= self.limit).count()
    }
}

/// The largest `a ^ b` of keys whose highest differing bit is below
/// `below`: the keys are close when their XOR is at most this.
pub fn close_limit(below: u32) -> u64 {
    u64::MAX.checked_shr(64 - below.min(64)).unwrap_or(0)
}

/// Calls `f(x, y)` for every two keys of `group`, `x` before `y`.
#[inline]
fn each_pair(group: &[u64], f: &mut impl FnMut(u64, u64)) {
    for (a, &x) in group.iter().enumerate() {
        group[a + 1..].iter().for_each(|&y| f(x, y));
    }
}

/// How many keys after the first are close in turn to it, from masks of
/// close neighbours (a zero word ends them).
fn leading_run(close: &[u64]) -> usize {
    let mut run = 0;
    for &m in close {
        let ones = m.trailing_ones() as usize;
        run += ones;
        if ones < 64 {
            break;
        }
    }
    run
}

/// Bit `j` set where `keys[j] ^ keys[j + 1] <= limit`, for the 65 `keys`.
fn close_mask(keys: &[u64], limit: u64) -> u64 {
    keys.windows(2).enumerate().fold(0, |m, (j, w)| m | u64::from(w[0] ^ w[1] <= limit) << j)
}

/// [`close_mask`], four neighbours to a vector.
///
/// # Safety
/// The CPU has AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn close_mask_avx2(keys: &[u64], limit: u64) -> u64 {
    use std::arch::x86_64::*;
    assert_eq!(keys.len(), 65);
    let p = keys.as_ptr();
    // `x <= limit` as `x & !limit == 0`: `limit` is a mask of low bits.
    let high = _mm256_set1_epi64x(!limit as i64);
    let zero = _mm256_setzero_si256();
    let mut m = 0u64;
    for q in 0..16 {
        // SAFETY: keys `4q..4q + 5` of the 65.
        let a = _mm256_loadu_si256(p.add(4 * q).cast());
        let b = _mm256_loadu_si256(p.add(4 * q + 1).cast());
        let far = _mm256_and_si256(_mm256_xor_si256(a, b), high);
        let close = _mm256_cmpeq_epi64(far, zero);
        m |= (_mm256_movemask_pd(_mm256_castsi256_pd(close)) as u64) << (4 * q);
    }
    m
}

/// [`lockstep_loop`] in Rust, the same steps as the assembly.
///
/// # Safety
/// As for [`lockstep_loop`].
// The lanes step through several arrays in lockstep: indices read best.
#[allow(clippy::needless_range_loop)]
unsafe fn portable_loop(data: &[u8], rt: &RowTable, steps: usize, pos: &mut [usize; LANES], rows: &mut Rows) {
    for i in 1..steps {
        for l in 0..LANES {
            let p = pos[l];
            let bits = load_unchecked(data, p >> 3) >> (p & 7);
            // Every entry of the table is filled: no mask but its size.
            let [len, h, tot, wide] = rt.table.entries[(bits as usize) & (TABLE_SIZE - 1)];
            let low =
                if wide == 0 { (bits >> len) & super::low_mask(u32::from(h) & 63) } else { low_wide(bits, load_unchecked(data, (p >> 3) + 8), p, len, h) };
            let prev = *rows.keys.get_unchecked(l).get_unchecked(i - 1);
            *rows.keys.get_unchecked_mut(l).get_unchecked_mut(i) = super::after(prev, u32::from(h) & 63, low);
            pos[l] = p + usize::from(tot);
        }
    }
}

/// The low `h` bits of a key whose code (`len` bits) starts at bit `p`, when
/// they reach past the 57 bits of `bits` into `word`, the 8 bytes after the
/// 8 that `bits` came from.
fn low_wide(bits: u64, word: u64, p: usize, len: u8, h: u8) -> u64 {
    // `len + p % 8` is at least 1 for any code: the shift is below 64.
    let at = u32::from(len) + (p & 7) as u32;
    let low = bits.wrapping_shr(u32::from(len)) | word.wrapping_shl(at.wrapping_neg());
    low & super::low_mask(u32::from(h) & 63)
}

/// The 8 bytes of `data` from byte `byte`, little-endian.
///
/// # Safety
/// `byte + 8 <= data.len()`.
#[inline(always)]
unsafe fn load_unchecked(data: &[u8], byte: usize) -> u64 {
    debug_assert!(byte + 8 <= data.len());
    u64::from_le(data.as_ptr().add(byte).cast::<u64>().read_unaligned())
}

#[cfg(test)]
mod tests {
    use super::super::{encode, limited_lengths, symbol_counts, Code};
    use super::*;
    use proptest::prelude::*;

    /// Ascending distinct keys: random, dense, sharing their top bits, with
    /// gaps so wide that their codes need two loads, or 0 and 2^64-1.
    fn keys() -> impl Strategy<Value = Vec<u64>> {
        prop_oneof![
            prop::collection::btree_set(any::<u64>(), 0..4000),
            (any::<u64>(), 1u64..5000, 0usize..4000).prop_map(|(s, step, n)| (0..n as u64)
                .map(|i| (s / 2).wrapping_add(i * step))
                .take_while(|&k| k >= s / 2)
                .collect::<std::collections::BTreeSet<u64>>()),
            (any::<u64>(), prop::collection::btree_set(0u64..1 << 24, 0..4000)).prop_map(|(hi, s)| s.into_iter().map(|x| (hi << 24) | x).collect()),
            prop::collection::btree_set(prop_oneof![Just(0u64), Just(u64::MAX), Just(1u64 << 63), any::<u64>().prop_map(|x| x | 1 << 63)], 0..200),
        ]
        .prop_map(|s| s.into_iter().collect())
    }

    /// Decodes every group of six blocks that `decode_rows` takes, by each
    /// loop, and compares them with the keys.
    fn check(keys: &[u64], code: &Code, block_bytes: usize) {
        let e = encode(keys, code, block_bytes);
        let decoder = code.decoder();
        let rt = RowTable::new(&decoder);
        let mut rows = Rows::new();
        let blocks = e.first.len();
        #[cfg(target_arch = "x86_64")]
        let loops = [Loop::Best, Loop::Portable, Loop::Long];
        #[cfg(not(target_arch = "x86_64"))]
        let loops = [Loop::Best, Loop::Portable];
        for by in loops {
            for b in (0..blocks.saturating_sub(LANES - 1)).step_by(3) {
                let counts: [usize; LANES] = std::array::from_fn(|l| (e.ranks[b + l + 1] - e.ranks[b + l]) as usize);
                if counts.iter().any(|&c| c > ROW) {
                    continue;
                }
                rows.keys = [[0xdead; STRIDE]; LANES];
                let starts = std::array::from_fn(|l| (b + l) * block_bytes);
                assert!(decode_rows_by(by, &e.data, &decoder, &rt, starts, counts, &mut rows));
                for l in 0..LANES {
                    let at = e.ranks[b + l] as usize;
                    assert_eq!(&rows.row(l)[..counts[l]], &keys[at..at + counts[l]], "{by:?}, block {}", b + l);
                }
            }
        }
    }

    proptest! {
        #[test]
        fn rows_hold_the_keys(keys in keys(), block_bytes in prop_oneof![Just(1024usize), Just(16), 16usize..400]) {
            let counts = symbol_counts(&keys);
            check(&keys, &Code::from_counts(&counts), block_bytes);
            // Codes as long as a file may hold.
            check(&keys, &Code::from_lengths(limited_lengths(&counts, MAX_CODE_LEN)).unwrap(), block_bytes);
        }
    }

    proptest! {
        #[test]
        fn groups_pair_every_two_keys_in_a_run(keys in prop::collection::vec(any::<u64>(), 0..400), cuts in prop::collection::vec(0usize..400, 0..4), bits in 0u32..=64, dense in 0u64..=5) {
            let limit = u64::MAX.checked_shr(64 - bits).unwrap_or(0);
            // Runs of neighbours close in a few low bits: `dense` in 5 of
            // them, so that rows take either way to their pairs.
            let mut keys = keys;
            for i in 1..keys.len() {
                if keys[i] % 5 < dense {
                    keys[i] = keys[i - 1] ^ (keys[i] & limit);
                }
            }
            let mut expected = Vec::new();
            let mut start = 0;
            for i in 0..=keys.len() {
                if i == keys.len() || (i > 0 && keys[i - 1] ^ keys[i] > limit) {
                    for a in start..i {
                        for b in a + 1..i {
                            expected.push((keys[a], keys[b]));
                        }
                    }
                    start = i;
                }
            }
            // Fed in rows cut anywhere.
            let mut cuts: Vec<usize> = cuts.into_iter().map(|c| c.min(keys.len())).chain([0, keys.len()]).collect();
            cuts.sort_unstable();
            let mut groups = Groups::new(bits);
            let mut got = Vec::new();
            for w in cuts.windows(2) {
                let row: Vec<u64> = keys[w[0]..w[1]].iter().copied().chain(std::iter::repeat_n(0, SLACK)).collect();
                groups.row(&row, w[1] - w[0], |a, b| got.push((a, b)));
            }
            got.sort_unstable();
            expected.sort_unstable();
            prop_assert_eq!(got, expected);
        }
    }

    #[test]
    fn wide_codes_decode() {
        // Keys so spread that most codes do not fit one load.
        let mut next = crate::testing::xorshift(7);
        let mut keys: Vec<u64> = (0..400).map(|_| next()).collect();
        keys.sort_unstable();
        keys.dedup();
        let counts = symbol_counts(&keys);
        let code = Code::from_counts(&counts);
        let wide: u64 = (0..64).filter(|&h| h as u32 + u32::from(code.lengths()[h]) > super::super::FAST_BITS).map(|h| counts[h]).sum();
        assert!(wide > 200, "{wide} wide codes");
        check(&keys, &code, 64);
        check(&keys, &code, 16);
    }
}
