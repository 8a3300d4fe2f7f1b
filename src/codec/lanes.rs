//! Whole blocks decoded several at a time, for the work that reads entire
//! tables: `find_all`, merges, large batches of queries.
//!
//! Decoding a block is one chain of dependent steps (position, word, table
//! entry, position again). `L` blocks side by side are `L` independent
//! chains that the CPU overlaps, their state held in registers. Each step is
//! kept to about a dozen instructions: loads unchecked where the block lies
//! inside the data whatever its bits say, stores unchecked into slices of
//! known length, BMI2's shifts where the CPU has them.
//!
//! A [`Sink`] takes the keys: [`Keys`] keeps them all. (`find_all` reads
//! whole tables too, six blocks at a time: see [`super::rows`].)

use super::{after, load, low_mask, BlockReader, Decoder, MAX_CODE_LEN, TABLE_SIZE};

/// Bits one key takes at most: its code and 63 low bits.
const MAX_KEY_BITS: usize = MAX_CODE_LEN as usize + 63;

/// What a lane does with the keys of its block. Only [`decode_lanes`] calls
/// these, and the unchecked stores of the sinks below rely on how: `first`
/// once, then `push` for `i = 1, 2, ...` below [`Sink::keys`], in order.
pub trait Sink {
    /// The number of keys in the block.
    fn keys(&self) -> usize;
    /// The block's first key.
    fn first(&mut self, key: u64);
    /// Key `i` of the block is `key`, after `prev`; its code put their
    /// highest differing bit at `h`.
    fn push(&mut self, i: usize, prev: u64, key: u64, h: u32);
}

/// Every key: `out[i]` is key `i` of the block, which has `out.len()` keys.
pub struct Keys<'a>(pub &'a mut [u64]);

impl Sink for Keys<'_> {
    #[inline(always)]
    fn keys(&self) -> usize {
        self.0.len()
    }

    #[inline(always)]
    fn first(&mut self, key: u64) {
        if let Some(slot) = self.0.first_mut() {
            *slot = key;
        }
    }

    #[inline(always)]
    fn push(&mut self, i: usize, _: u64, key: u64, _: u32) {
        debug_assert!(i < self.0.len());
        // SAFETY: `i` is below `keys()`, the slice's length (see `Sink`).
        unsafe { *self.0.get_unchecked_mut(i) = key };
    }
}

/// Decodes `L` blocks of a table's `data` into their sinks: block `l`
/// starts at byte `starts[l]`. Returns each block's last key, and false if
/// some block did not decode (never, for blocks [`super::check_block`] accepted).
pub fn decode_lanes<const L: usize, S: Sink>(data: &[u8], decoder: &Decoder, starts: [usize; L], sinks: &mut [S; L]) -> ([u64; L], bool) {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("bmi2") {
        // SAFETY: the CPU has BMI2.
        return unsafe { decode_bmi2(data, decoder, starts, sinks) };
    }
    decode_any::<L, false, S>(data, decoder, starts, sinks)
}

/// # Safety
/// The CPU must have BMI2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "bmi2")]
unsafe fn decode_bmi2<const L: usize, S: Sink>(data: &[u8], decoder: &Decoder, starts: [usize; L], sinks: &mut [S; L]) -> ([u64; L], bool) {
    decode_any::<L, true, S>(data, decoder, starts, sinks)
}

// The lanes step through several arrays in lockstep: indices read best.
#[allow(clippy::needless_range_loop)]
#[inline(always)]
fn decode_any<const L: usize, const BMI2: bool, S: Sink>(data: &[u8], decoder: &Decoder, starts: [usize; L], sinks: &mut [S; L]) -> ([u64; L], bool) {
    // The mask cut to the table's size: lookups need no bounds check.
    let (table, mask) = (&*decoder.table, decoder.mask & (TABLE_SIZE - 1));
    let counts: [usize; L] = std::array::from_fn(|l| sinks[l].keys());
    let mut pos = starts.map(|s| s * 8 + 64);
    let mut prev = starts.map(|s| load(data, s));
    for l in 0..L {
        sinks[l].first(prev[l]);
    }
    // In lockstep for the keys every lane has, if no load can leave `data`
    // whatever the bits say (all blocks but the last few of a table); then
    // each lane alone, with checked loads.
    let common = counts.iter().copied().min().unwrap_or(0).max(1);
    let fits = starts.iter().all(|&s| s + 17 + common * MAX_KEY_BITS / 8 <= data.len());
    let lockstep = if fits { common } else { 1 };
    let mut ok = true;
    for i in 1..lockstep {
        // SAFETY (the unchecked loads): before step `i` a lane has moved at
        // most `(i - 1) * MAX_KEY_BITS` bits past its first key and a step
        // loads 16 bytes from there, so the loads end before
        // `s + 17 + common * MAX_KEY_BITS / 8`, within `data` (`fits`).
        let (words, bits): ([u64; L], [u64; L]) = (
            std::array::from_fn(|l| unsafe { load_unchecked(data, (pos[l] >> 3) + 8) }),
            std::array::from_fn(|l| unsafe { load_unchecked(data, pos[l] >> 3) } >> (pos[l] & 7)),
        );
        // The whole table: the codes' entries repeat across it.
        let entry: [u16; L] = std::array::from_fn(|l| table[(bits[l] as usize) & (TABLE_SIZE - 1)]);
        for l in 0..L {
            let e = u32::from(entry[l]);
            let key = next_wide::<BMI2>(prev[l], bits[l], words[l], pos[l] as u32, e);
            pos[l] += (e >> 8) as usize;
            sinks[l].push(i, prev[l], key, e & 0xff);
            prev[l] = key;
        }
    }
    for l in 0..L {
        let block = data.get(starts[l]..).unwrap_or(&[]);
        let mut r = BlockReader { data: block, table, mask, pos: pos[l] - starts[l] * 8, prev: prev[l] };
        for i in lockstep..counts[l] {
            let h = r.symbol_ahead();
            let Some(key) = r.next_key() else {
                ok = false;
                break;
            };
            sinks[l].push(i, prev[l], key, h);
            prev[l] = key;
        }
    }
    (prev, ok)
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

/// The key after `prev` whose code has decoding table `entry` and starts
/// at bit `pos`, with `bits` the stream from there and `word` the 8 bytes
/// after the 8 that `bits` came from: its low bits may reach into `word`
/// (up to 7 + 12 + 63 bits from the first byte), so they are shifted in
/// from both words, and every code is decoded without a branch. A missing
/// code ([`super::NO_CODE`]) yields some key and takes no bits: lanes decode
/// checked blocks, which have none.
#[inline(always)]
fn next_wide<const BMI2: bool>(prev: u64, bits: u64, word: u64, pos: u32, e: u32) -> u64 {
    // The code length and the offset of the low bits in `word`'s pair, both
    // modulo 64 (all the shifts look at): `e >> 8` is `h` plus the length.
    let len = (e >> 8).wrapping_sub(e);
    let at = len.wrapping_add(pos & 7);
    let low = bits.wrapping_shr(len) | word.wrapping_shl(at.wrapping_neg());
    #[cfg(target_arch = "x86_64")]
    if BMI2 {
        use std::arch::x86_64::_bzhi_u64;
        // SAFETY: `BMI2` is true only under `decode_bmi2`, run on CPUs with
        // BMI2. `bzhi` takes `h` from the entry's low byte as it is.
        let (low, below_h) = unsafe { (_bzhi_u64(low, e), _bzhi_u64(u64::MAX, e)) };
        return (prev | below_h).wrapping_add(1).wrapping_add(low);
    }
    let h = e & 0xff;
    after(prev, h, low & low_mask(h & 63))
}
