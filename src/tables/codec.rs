//! The block codec of compressed tables (Manku, Jain, Das Sarma, WWW 2007, §3.2).
//!
//! A table's keys are ascending and distinct. They are cut into blocks of at
//! most `block_bytes` bytes. A block starts with its first key in full (8
//! bytes, little-endian); every next key follows as the Huffman code of `h`,
//! the position of the highest set bit of its XOR with the key before, then
//! the `h` bits below that bit. Bits above `h` are the previous key's and bit
//! `h` is 1 (the key is larger), so they cost nothing.
//!
//! Bits are packed least significant first (as in DEFLATE): a decoder loads a
//! little-endian word and looks its low [`MAX_CODE_LEN`] bits up in one table,
//! so a symbol costs one load, never a loop over bits.
//!
//! One canonical code per table, from that table's distribution of `h`, with
//! code lengths limited to [`MAX_CODE_LEN`] so the lookup table stays in L1.
//!
//! Decoding never reads out of bounds whatever the bytes are: missing bytes
//! read as zeros and [`check_block`] tells a consistent block from a corrupt
//! one, so a hostile file can be refused rather than trusted.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

mod read;
pub mod rows;

use read::{after, load};
pub use read::{check_block, BlockReader};

/// Symbols: `h` in `0..64`.
pub const SYMBOLS: usize = 64;
/// The longest code a table may use (in files too): a 2^12-entry lookup table.
pub const MAX_CODE_LEN: u32 = 12;
/// The longest code this encoder makes: the part of the lookup table that
/// decoding touches is then 2^10 entries (2 KiB), and the tables of ten
/// permuted tables probed together stay in L1. Rare symbols pay a bit or two.
pub const ENCODE_MAX_LEN: u32 = 10;
const TABLE_SIZE: usize = 1 << MAX_CODE_LEN;
/// The smallest block: the first key and room for one more.
pub const MIN_BLOCK_BYTES: usize = 16;
/// The largest block: bit positions inside it fit `u32` comfortably.
pub const MAX_BLOCK_BYTES: usize = 1 << 20;

/// A canonical prefix code over the symbols `0..64`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Code {
    /// Code length of each symbol, 0 for a symbol without a code.
    lengths: [u8; SYMBOLS],
    /// Each symbol's code, bit-reversed (the first bit lowest).
    codes: [u16; SYMBOLS],
}

impl Code {
    /// A length-limited Huffman code for these symbol counts.
    pub fn from_counts(counts: &[u64; SYMBOLS]) -> Code {
        let lengths = limited_lengths(counts, ENCODE_MAX_LEN);
        Code::from_lengths(lengths).expect("limited_lengths makes a valid code")
    }

    /// The canonical code with these lengths.
    ///
    /// # Errors
    /// A message when a length exceeds [`MAX_CODE_LEN`] or the lengths
    /// oversubscribe the code space (Kraft sum above 1).
    pub fn from_lengths(lengths: [u8; SYMBOLS]) -> Result<Code, String> {
        if let Some(&l) = lengths.iter().find(|&&l| u32::from(l) > MAX_CODE_LEN) {
            return Err(format!("a code length of {l} bits (at most {MAX_CODE_LEN})"));
        }
        let kraft: u64 = lengths.iter().filter(|&&l| l > 0).map(|&l| 1u64 << (MAX_CODE_LEN - u32::from(l))).sum();
        if kraft > 1 << MAX_CODE_LEN {
            return Err("code lengths that do not form a prefix code".into());
        }
        // Canonical assignment (RFC 1951, 3.2.2): shorter codes first, then by symbol.
        let mut count = [0u16; MAX_CODE_LEN as usize + 1];
        for &l in &lengths {
            count[usize::from(l)] += 1;
        }
        count[0] = 0;
        let mut next = [0u16; MAX_CODE_LEN as usize + 1];
        let mut code = 0u16;
        for len in 1..=MAX_CODE_LEN as usize {
            code = (code + count[len - 1]) << 1;
            next[len] = code;
        }
        let mut codes = [0u16; SYMBOLS];
        for (s, &l) in lengths.iter().enumerate() {
            if l > 0 {
                let l = usize::from(l);
                codes[s] = reverse(next[l], l as u32);
                next[l] += 1;
            }
        }
        Ok(Code { lengths, codes })
    }

    pub fn lengths(&self) -> &[u8; SYMBOLS] {
        &self.lengths
    }

    /// The lookup table that decodes this code.
    pub fn decoder(&self) -> Decoder {
        let mut table = Box::new([NO_CODE; TABLE_SIZE]);
        for (s, &l) in self.lengths.iter().enumerate() {
            if l == 0 {
                continue;
            }
            // Every table index whose low `l` bits are the code decodes to `s`.
            let step = 1usize << l;
            let mut i = usize::from(self.codes[s]);
            let (h, len) = (s as u16, u16::from(l));
            while i < TABLE_SIZE {
                table[i] = h | (h + len) << 8;
                i += step;
            }
        }
        let longest = self.lengths.iter().map(|&l| u32::from(l)).max().unwrap_or(0);
        Decoder { table, mask: (1 << longest) - 1 }
    }

    /// Bits that encoding `h` costs: its code and its low bits.
    #[inline]
    fn cost(&self, h: u32) -> u32 {
        u32::from(self.lengths[h as usize]) + h
    }
}

/// The low `len` bits of `code` in reverse order.
fn reverse(code: u16, len: u32) -> u16 {
    code.reverse_bits() >> (16 - len)
}

/// Huffman code lengths for `counts`, limited to `max_len` bits: codes past
/// the limit are cut to it, then the longest codes below it (the rarest
/// symbols first) are lengthened until the lengths form a prefix code again.
fn limited_lengths(counts: &[u64; SYMBOLS], max_len: u32) -> [u8; SYMBOLS] {
    let mut lengths = [0u8; SYMBOLS];
    let used: Vec<usize> = (0..SYMBOLS).filter(|&s| counts[s] > 0).collect();
    match used.len() {
        0 => return lengths,
        1 => {
            lengths[used[0]] = 1;
            return lengths;
        }
        _ => {}
    }
    // Huffman's algorithm over a heap of (count, node); leaves are 0..64.
    let mut parent = vec![usize::MAX; 2 * SYMBOLS];
    let mut heap: BinaryHeap<Reverse<(u64, usize)>> = used.iter().map(|&s| Reverse((counts[s], s))).collect();
    let mut next = SYMBOLS;
    while heap.len() > 1 {
        let Reverse((ca, a)) = heap.pop().expect("two nodes");
        let Reverse((cb, b)) = heap.pop().expect("two nodes");
        parent[a] = next;
        parent[b] = next;
        heap.push(Reverse((ca.saturating_add(cb), next)));
        next += 1;
    }
    let mut depth = vec![0u32; next];
    // Parents are created after their children: walk from the root down.
    for node in (0..next - 1).rev() {
        if parent[node] != usize::MAX {
            depth[node] = depth[parent[node]] + 1;
        }
    }
    for &s in &used {
        lengths[s] = depth[s].min(max_len) as u8;
    }
    let limit = 1u64 << max_len;
    let mut kraft: u64 = used.iter().map(|&s| 1u64 << (max_len - u32::from(lengths[s]))).sum();
    while kraft > limit {
        let s = *used
            .iter()
            .filter(|&&s| u32::from(lengths[s]) < max_len)
            .max_by_key(|&&s| (lengths[s], Reverse(counts[s])))
            .expect("64 codes of max_len >= 6 bits always fit");
        kraft -= 1u64 << (max_len - u32::from(lengths[s]) - 1);
        lengths[s] += 1;
    }
    lengths
}

/// The decoding table of a [`Code`]: entry `bits & mask` holds the symbol
/// `h` in its low byte and the bits the key takes, code and low bits, in its
/// high byte ([`NO_CODE`] where no code matches). That layout saves work on
/// the hot path: x86's shifts read the low 6 bits of their count, so the
/// entry itself shifts by `h`, and the difference of its bytes by the code
/// length. `mask` keeps the bits of the longest code: only that much of the
/// table is touched.
#[derive(Clone, Debug)]
pub struct Decoder {
    table: Box<[u16; TABLE_SIZE]>,
    mask: usize,
}

/// The table entry of bits that start no code: it takes no bits.
const NO_CODE: u16 = 0;

/// Whether [`BlockReader::next_key_slow`] decodes `entry`: there is no code,
/// or the code and its `h` low bits do not fit in one load ([`FAST_BITS`]).
#[inline(always)]
fn is_slow(entry: u16) -> bool {
    // The bits taken, less one, wrap around when there is no code.
    (entry >> 8).wrapping_sub(1) >= FAST_BITS as u16
}

/// `h` and the code length of a table entry (not [`NO_CODE`]).
#[inline(always)]
fn unpack(entry: u16) -> (u32, u32) {
    let h = u32::from(entry & 0xff);
    (h, u32::from(entry >> 8) - h)
}

/// Bits one 8-byte load yields at any bit offset.
const FAST_BITS: u32 = 57;

/// `h`: the position of the highest bit in which `key` differs from `prev`.
#[inline]
fn symbol(prev: u64, key: u64) -> u32 {
    63 - (prev ^ key).leading_zeros()
}

/// The low `bits` bits set (`bits` below 64).
#[inline(always)]
fn low_mask(bits: u32) -> u64 {
    debug_assert!(bits < 64);
    (1u64 << bits) - 1
}

/// Counts of `h` over consecutive keys: the distribution a table's code is built from.
pub fn symbol_counts(keys: &[u64]) -> [u64; SYMBOLS] {
    let mut counts = [0u64; SYMBOLS];
    for w in keys.windows(2) {
        counts[symbol(w[0], w[1]) as usize] += 1;
    }
    counts
}

/// Bits written least significant first into a block buffer, a whole
/// 8-byte word at a time.
struct BitWriter<'a> {
    block: &'a mut [u8],
    /// Byte where the next word goes.
    at: usize,
    acc: u64,
    /// Bits held in `acc`, below 64.
    fill: u32,
}

impl BitWriter<'_> {
    /// Appends the low `n` bits of `value` (`n` at most 57, higher bits zero).
    #[inline(always)]
    fn put(&mut self, value: u64, n: u32) {
        debug_assert!(n <= 57 && value >> n == 0);
        self.acc |= value << self.fill;
        let total = self.fill + n;
        if total >= 64 {
            self.block[self.at..self.at + 8].copy_from_slice(&self.acc.to_le_bytes());
            self.at += 8;
            // The bits of `value` that did not fit (none when it ended the word).
            self.acc = value.checked_shr(64 - self.fill).unwrap_or(0);
            self.fill = total - 64;
        } else {
            self.fill = total;
        }
    }

    fn finish(self) {
        self.block[self.at..self.at + 8].copy_from_slice(&self.acc.to_le_bytes());
    }
}

/// A table's keys encoded in blocks.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Encoded {
    /// Block `b` is `data[b * block_bytes..]`, `block_bytes` long except the last.
    pub data: Vec<u8>,
    /// The first key of each block.
    pub first: Vec<u64>,
    /// The rank of each block's first key, then the number of keys.
    pub ranks: Vec<u32>,
    /// The header of each block: its first key and marks.
    pub headers: Vec<Header>,
}

/// Marks per block: a search decodes from the last mark below the key it
/// looks for, a fifteenth of a block on average (about 6 keys of a 1 KiB
/// block at 10^7 keys) instead of half of it. With the block's first key,
/// rank and count they fill a 128-byte [`Header`], two cache lines side by
/// side: finding the block and the place to start in it costs one trip to
/// memory. Six marks in one line cost 15 % more time a query at 10^7 keys
/// (13 keys decoded) for 0.36 bytes per key and table less memory. Headers
/// live in memory only: they are rebuilt while a loaded block is checked.
pub const MARKS: usize = 14;

/// A place to start decoding inside a block: key `index` of the block has
/// `top` as its top 32 bits, and the code of the next one starts at bit
/// `pos`. `index` 0 means no mark. The key after a mark differs from it above
/// bit 31, so it decodes exactly from `top` alone; a search starts at the
/// last mark whose `top` is below its key's, so the mark's key is below it.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
#[repr(C)]
pub struct Mark {
    pub top: u32,
    pub pos: u16,
    pub index: u16,
}

/// A block's first key, the rank of that key in the table, the number of
/// keys in the block, and marks: two cache lines, aligned to them.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
#[repr(C, align(128))]
pub struct Header {
    pub first: u64,
    pub rank: u32,
    pub count: u32,
    pub marks: [Mark; MARKS],
}

impl Header {
    /// The header of a block whose keys are `keys`, the code after key `i`
    /// starting at bit `pos[i]`.
    pub fn new(keys: &[u64], pos: &[u32], rank: u32) -> Header {
        let mut marker = Marker::new(keys.first().copied().unwrap_or(0), rank, keys.len());
        // Only the keys where the marker acts are offered.
        let mut i = marker.wait;
        while i < keys.len().saturating_sub(1) {
            marker.offer(i, keys[i], pos[i], keys[i + 1]);
            i = (i + 1).max(marker.wait);
        }
        marker.header
    }

    /// The last mark whose key is below `key`.
    #[inline]
    pub fn mark_below(&self, key: u64) -> Option<Mark> {
        let top = (key >> 32) as u32;
        self.marks.iter().rev().find(|m| m.index > 0 && m.top < top).copied()
    }
}

/// Places the marks of a block as its keys go by. Mark `m` goes on the first
/// key from index `(m + 1) * count / (MARKS + 1)` on whose successor differs
/// from it above bit 31 (nearly always that one: in a table of N random keys
/// two neighbours share their top 32 bits with odds N / 2^32) and whose
/// position fits in 16 bits (blocks past 8 KiB lose their later marks).
pub struct Marker {
    pub header: Header,
    next: usize,
    /// `from[m]` = `(m + 1) * count / (MARKS + 1)`: where window `m` starts
    /// (`from[MARKS]` = `count`), worked out once a block.
    from: [usize; MARKS + 1],
    /// The first key index at which `offer` can do anything: it returns at
    /// once for keys before it, nearly all of them.
    wait: usize,
}

impl Marker {
    pub fn new(first: u64, rank: u32, count: usize) -> Marker {
        let from = std::array::from_fn(|m| (m + 1) * count / (MARKS + 1));
        let header = Header { first, rank, count: count as u32, marks: [Mark::default(); MARKS] };
        let mut marker = Marker { header, next: 0, from, wait: 0 };
        marker.wait = marker.wait_from();
        marker
    }

    /// Where `offer` next acts: mark `next`'s window (never at key 0), or
    /// the start of the window after it, whichever comes first.
    fn wait_from(&self) -> usize {
        match self.next {
            m if m < MARKS => self.from[m].max(1).min(self.from[m + 1]),
            _ => usize::MAX,
        }
    }

    /// Key `i` of the block is `key`, followed by `next`; the code of `next`
    /// starts at bit `pos`.
    #[inline]
    pub fn offer(&mut self, i: usize, key: u64, pos: u32, next: u64) {
        if i < self.wait {
            return;
        }
        // Windows end where the next one starts: a mark missed is left empty.
        while self.next < MARKS && i >= self.from[self.next + 1] {
            self.next += 1;
        }
        let m = self.next;
        if m < MARKS && i >= self.from[m].max(1) && (key ^ next) >> 32 != 0 && pos <= u32::from(u16::MAX) {
            self.header.marks[m] = Mark { top: (key >> 32) as u32, pos: pos as u16, index: i as u16 };
            self.next += 1;
        }
        self.wait = self.wait_from();
    }
}

/// Encodes ascending distinct `keys` (fewer than 2^32) in blocks of
/// `block_bytes` with `code`, which must have a code for every `h` they need
/// (one from [`symbol_counts`] of the same keys does).
#[cfg(test)]
pub fn encode(keys: &[u64], code: &Code, block_bytes: usize) -> Encoded {
    encode_counted(keys, code, &symbol_counts(keys), block_bytes)
}

/// [`encode`] given the [`symbol_counts`] of `keys`.
pub fn encode_counted(keys: &[u64], code: &Code, counts: &[u64; SYMBOLS], block_bytes: usize) -> Encoded {
    debug_assert!((MIN_BLOCK_BYTES..=MAX_BLOCK_BYTES).contains(&block_bytes));
    debug_assert!(keys.windows(2).all(|w| w[0] < w[1]));
    let n = keys.len();
    let mut out = Encoded::default();
    let capacity = (block_bytes as u32 - 8) * 8;
    // Per symbol: its code, code length and cost, looked up once per key.
    let codes: [u64; SYMBOLS] = std::array::from_fn(|h| u64::from(code.codes[h]));
    let lengths: [u32; SYMBOLS] = std::array::from_fn(|h| u32::from(code.lengths[h]));
    let costs: [u32; SYMBOLS] = std::array::from_fn(|h| code.cost(h as u32));
    // Sized ahead from every key's bits; a block wastes less than one key's
    // largest cost, 75 bits. Not on huge pages: faulting those in made a
    // 10^7-item build 25 % slower here (the kernel zeroes and may compact
    // 2 MiB at a time), and probes were no faster with them.
    let bits: u64 = counts.iter().zip(&costs).map(|(&c, &cost)| c * u64::from(cost)).sum();
    let per_block = u64::from(capacity.saturating_sub(75)).max(1);
    let blocks = ((bits / per_block + 1) as usize).min(n.max(1));
    crate::mem::reserve(&mut out.data, blocks * block_bytes, "a packed table");
    out.headers = crate::mem::vec_with_capacity(blocks);
    // Each block is written in this buffer, in cache, then appended whole:
    // the table's bytes are written once, in order, never read back.
    let mut block = vec![0u8; block_bytes + 8];
    let mut pos: Vec<u32> = Vec::with_capacity(capacity as usize + 1);
    let mut i = 0;
    while i < n {
        out.first.push(keys[i]);
        out.ranks.push(i as u32);
        block.fill(0);
        block[..8].copy_from_slice(&keys[i].to_le_bytes());
        let mut w = BitWriter { block: &mut block, at: 8, acc: 0, fill: 0 };
        let mut used = 0u32;
        let block_start = i;
        pos.clear();
        pos.push(64);
        let mut prev = keys[i];
        i += 1;
        for &key in &keys[i..] {
            // Keys ascend, so h is below 64 (the mask tells the compiler).
            let h = symbol(prev, key) as usize & (SYMBOLS - 1);
            let cost = costs[h];
            if used + cost > capacity {
                break;
            }
            debug_assert!(lengths[h] > 0, "no code for h = {h}");
            let (len, low) = (lengths[h], key & low_mask(h as u32));
            if cost <= 57 {
                w.put(codes[h] | low << len, cost);
            } else {
                w.put(codes[h] | (low & low_mask(32)) << len, len + 32);
                w.put(low >> 32, h as u32 - 32);
            }
            used += cost;
            pos.push(64 + used);
            prev = key;
            i += 1;
        }
        w.finish();
        out.headers.push(Header::new(&keys[block_start..i], &pos, block_start as u32));
        // Every block but the last is exactly block_bytes long.
        let len = if i < n { block_bytes } else { 8 + used.div_ceil(8) as usize };
        out.data.extend_from_slice(&block[..len]);
    }
    out.ranks.push(n as u32);
    out
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod timing;
