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

pub mod rows;

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

/// Reads the keys of one block in order. Each key costs one unaligned load
/// at the bit position, a shift and one table lookup; the position is the
/// only state carried from key to key, which keeps the chain of dependent
/// instructions per key short (a bit buffer refilled as it drains carries
/// more). Independent readers interleave well: see [`crate::tables::packed`].
#[derive(Clone)]
pub struct BlockReader<'a> {
    /// From the block's first byte to the end of the table's data: loads may
    /// read into the next block (bits that are never used), not past the end.
    data: &'a [u8],
    table: &'a [u16; TABLE_SIZE],
    mask: usize,
    /// Bit position of the next code.
    pos: usize,
    prev: u64,
}

impl<'a> BlockReader<'a> {
    /// A reader standing on `mark` of the block that `data` starts with;
    /// [`Self::current`] is then the mark's key with its low 32 bits zero.
    #[inline]
    pub fn at(data: &'a [u8], decoder: &'a Decoder, mark: Mark) -> BlockReader<'a> {
        BlockReader { data, table: &decoder.table, mask: decoder.mask, pos: usize::from(mark.pos), prev: u64::from(mark.top) << 32 }
    }

    /// A reader standing on the first key of the block that `data` starts
    /// with, `first` (known from the block's header: nothing is read yet).
    #[inline]
    pub fn at_first(data: &'a [u8], decoder: &'a Decoder, first: u64) -> BlockReader<'a> {
        BlockReader { data, table: &decoder.table, mask: decoder.mask, pos: 64, prev: first }
    }

    /// A reader at the start of the block that `data` starts with; the first
    /// key is [`Self::current`]. Bytes missing at the end read as zeros.
    #[inline]
    pub fn new(data: &'a [u8], decoder: &'a Decoder) -> BlockReader<'a> {
        let mut r = BlockReader { data, table: &decoder.table, mask: decoder.mask, pos: 0, prev: 0 };
        r.prev = r.peek_at(0);
        r.pos = 64;
        r
    }

    /// The last key read (the first key before any `next_key`).
    #[inline]
    pub fn current(&self) -> u64 {
        self.prev
    }

    /// The 8 bytes from byte `byte`, zeros past the end.
    #[inline(always)]
    fn peek_at(&self, byte: usize) -> u64 {
        load(self.data, byte)
    }

    /// At least 57 bits from `pos`.
    #[inline(always)]
    fn peek(&self) -> u64 {
        self.peek_at(self.pos >> 3) >> (self.pos & 7)
    }

    /// The next key, or `None` when the bits hold no valid code (corrupt).
    /// The caller knows how many keys the block has.
    #[inline(always)]
    pub fn next_key(&mut self) -> Option<u64> {
        let bits = self.peek();
        let entry = self.table[(bits as usize) & self.mask & (TABLE_SIZE - 1)];
        if is_slow(entry) {
            return self.next_key_slow(entry);
        }
        self.pos += usize::from(entry >> 8);
        self.prev = next(self.prev, bits, entry);
        Some(self.prev)
    }

    /// [`Self::next_key`] for a code and low bits longer than one load
    /// (rare: tiny tables), or no code.
    #[cold]
    #[inline(never)]
    fn next_key_slow(&mut self, entry: u16) -> Option<u64> {
        if entry == NO_CODE {
            return None;
        }
        let (h, len) = unpack(entry);
        self.pos += len as usize;
        let lo = self.peek() & low_mask(h.min(32));
        self.pos += h.min(32) as usize;
        let hi = if h > 32 { self.peek() & low_mask(h - 32) } else { 0 };
        self.pos += h.saturating_sub(32) as usize;
        self.prev = after(self.prev, h, lo | hi << 32);
        Some(self.prev)
    }

    /// Bits consumed so far, the first key's 64 included.
    pub fn bits_read(&self) -> usize {
        self.pos
    }

    /// The symbol `h` that the next code holds (0 when there is no code).
    fn symbol_ahead(&self) -> u32 {
        u32::from(self.table[(self.peek() as usize) & self.mask & (TABLE_SIZE - 1)] & 0xff)
    }
}

/// The 8 bytes of `data` from byte `byte`, little-endian, zeros past the end.
#[inline(always)]
fn load(data: &[u8], byte: usize) -> u64 {
    match data.get(byte..byte + 8) {
        Some(b) => u64::from_le_bytes(b.try_into().expect("8 bytes")),
        None => load_end(data, byte),
    }
}

#[cold]
#[inline(never)]
fn load_end(data: &[u8], byte: usize) -> u64 {
    let mut b = [0u8; 8];
    let rest = data.get(byte..).unwrap_or(&[]);
    b[..rest.len()].copy_from_slice(rest);
    u64::from_le_bytes(b)
}

/// The key after `prev` whose code, at the bottom of `bits`, has decoding
/// table `entry` (not [`is_slow`]). The shift takes the code length
/// modulo 64 straight from the entry's bytes (see [`Decoder`]).
#[inline(always)]
fn next(prev: u64, bits: u64, entry: u16) -> u64 {
    let e = u32::from(entry);
    let h = e & 63;
    after(prev, h, bits.wrapping_shr((e >> 8).wrapping_sub(e)) & low_mask(h))
}

/// The key after `prev` that differs from it first at bit `h`, with `low`
/// below that bit: `prev`'s bits above `h`, a 1 at `h` (`prev` has a 0 there
/// in every block [`check_block`] accepts), then `low`. Setting the bits
/// below `h` and adding 1 carries into bit `h`: three instructions.
#[inline(always)]
fn after(prev: u64, h: u32, low: u64) -> u64 {
    (prev | low_mask(h)).wrapping_add(1).wrapping_add(low)
}

/// Checks that `block` holds `count` keys (at least 1) in ascending order,
/// starting at `first` and within its bytes; returns the last key and the
/// block's header. `each` sees every key, in order, as it is checked.
///
/// # Errors
/// A message naming the first inconsistency.
pub fn check_block(block: &[u8], rank: u32, count: usize, first: u64, decoder: &Decoder, mut each: impl FnMut(u64)) -> Result<(u64, Header), String> {
    if block.len() < 8 {
        return Err(format!("a block of {} bytes (its first key alone takes 8)", block.len()));
    }
    if count == 0 {
        return Err("an empty block".into());
    }
    let mut r = BlockReader::new(block, decoder);
    if r.current() != first {
        return Err(format!("a block starting at {:#018x} where the block index says {first:#018x}", r.current()));
    }
    let mut marker = Marker::new(first, rank, count);
    each(first);
    for i in 1..count {
        let (prev, pos, h) = (r.current(), r.bits_read() as u32, r.symbol_ahead());
        let Some(key) = r.next_key() else {
            return Err(format!("key {i} of a block has no valid code"));
        };
        if key <= prev {
            return Err(format!("key {i} of a block is not above the key before it"));
        }
        // The code said where the keys first differ: a block that lies about
        // it (no encoder writes one) would decode differently elsewhere.
        if h != symbol(prev, key) {
            return Err(format!("key {i} of a block is coded with the wrong high bit"));
        }
        if r.bits_read() > block.len() * 8 {
            return Err(format!("a block whose {count} keys need more than its {} bytes", block.len()));
        }
        marker.offer(i - 1, prev, pos, key);
        each(key);
    }
    Ok((r.current(), marker.header))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn decode_all(e: &Encoded, code: &Code, block_bytes: usize) -> Vec<u64> {
        let dec = code.decoder();
        let mut out = Vec::new();
        for b in 0..e.first.len() {
            let block = &e.data[b * block_bytes..((b + 1) * block_bytes).min(e.data.len())];
            let count = (e.ranks[b + 1] - e.ranks[b]) as usize;
            let (last, header) = check_block(block, e.ranks[b], count, e.first[b], &dec, |_| ()).expect("a valid block");
            assert_eq!(header, e.headers[b], "header of block {b}");
            assert_eq!(header.first, e.first[b]);
            let mut whole = BlockReader::new(block, &dec);
            let keys: Vec<u64> = std::iter::once(whole.current()).chain((1..count).map(|_| whole.next_key().unwrap())).collect();
            for m in header.marks.iter().filter(|m| m.index > 0) {
                let i = usize::from(m.index);
                assert_eq!(u64::from(m.top), keys[i] >> 32, "mark on key {i}");
                // A probe just above the mark's top bits starts here or later.
                if m.top < u32::MAX {
                    let n = header.mark_below((u64::from(m.top) + 1) << 32).expect("a mark");
                    assert!(n.index >= m.index);
                }
                let mut r = BlockReader::at(&e.data[b * block_bytes..], &dec, *m);
                let rest: Vec<u64> = (i + 1..count).map(|_| r.next_key().unwrap()).collect();
                assert_eq!(rest, keys[i + 1..]);
            }
            for probe in keys.iter().flat_map(|&k| [k, k.wrapping_add(1 << 32), k.wrapping_sub(1)]) {
                if let Some(m) = header.mark_below(probe) {
                    assert!(keys[usize::from(m.index)] < probe, "mark {m:?} for a probe of {probe:#x}");
                }
            }
            let mut r = BlockReader::new(block, &dec);
            out.push(r.current());
            for _ in 1..count {
                out.push(r.next_key().expect("a code"));
            }
            assert_eq!(out.last(), Some(&last));
        }
        out
    }

    fn round_trip(keys: &[u64], block_bytes: usize) {
        // This encoder's codes, and codes as long as a file may hold.
        let counts = symbol_counts(keys);
        for code in [Code::from_counts(&counts), Code::from_lengths(limited_lengths(&counts, MAX_CODE_LEN)).unwrap()] {
            let e = encode(keys, &code, block_bytes);
            assert_eq!(decode_all(&e, &code, block_bytes), keys);
            assert_eq!(e.ranks.len(), e.first.len() + 1);
            assert!(e.data.len() <= e.first.len() * block_bytes);
        }
    }

    /// Ascending distinct keys of several adversarial shapes.
    fn keys() -> impl Strategy<Value = Vec<u64>> {
        prop_oneof![
            prop::collection::btree_set(any::<u64>(), 0..2000).prop_map(|s| s.into_iter().collect()),
            // Consecutive integers: h = 0 mostly.
            (any::<u64>(), 0usize..3000).prop_map(|(s, n)| (0..n as u64).map(|i| s.saturating_sub(n as u64) + i).collect()),
            // All keys share their leading bits.
            (any::<u64>(), prop::collection::btree_set(0u64..1 << 20, 0..2000)).prop_map(|(hi, s)| s.into_iter().map(|x| (hi << 20) | x).collect()),
            // Maximal gaps: h = 63 and other extremes, 0 and 2^64-1.
            prop::collection::btree_set(prop_oneof![Just(0u64), Just(u64::MAX), Just(1u64 << 63), Just((1u64 << 63) - 1), any::<u64>()], 0..6)
                .prop_map(|s| s.into_iter().collect()),
            // A skewed h distribution, with codes past the length limit.
            prop::collection::vec(0u32..64, 0..3000).prop_map(|hs| {
                let mut x = 0u64;
                let mut out = vec![0];
                for h in hs {
                    // The next key with highest differing bit at min(h', ...) where possible.
                    let h = h.min(if h % 7 == 0 { 63 } else { h % 5 });
                    let next = ((x >> h) | 1) << h;
                    if next > x && (x >> h) & 1 == 0 {
                        x = next;
                        out.push(x);
                    }
                }
                out
            }),
        ]
    }

    /// Marks by the rule as the Marker docs state it, one key at a time.
    fn marks_by_definition(keys: &[u64], pos: &[u32]) -> [Mark; MARKS] {
        let (count, mut marks, mut next) = (keys.len(), [Mark::default(); MARKS], 0);
        for i in 0..count.saturating_sub(1) {
            while next < MARKS && i >= (next + 2) * count / (MARKS + 1) {
                next += 1;
            }
            if next < MARKS && i >= ((next + 1) * count / (MARKS + 1)).max(1) && (keys[i] ^ keys[i + 1]) >> 32 != 0 && pos[i] <= u32::from(u16::MAX) {
                marks[next] = Mark { top: (keys[i] >> 32) as u32, pos: pos[i] as u16, index: i as u16 };
                next += 1;
            }
        }
        marks
    }

    proptest! {
        #[test]
        fn blocks_round_trip(keys in keys(), block_bytes in prop_oneof![Just(16usize), Just(17), Just(64), Just(1024), 16usize..200]) {
            round_trip(&keys, block_bytes);
        }

        #[test]
        fn marks_follow_their_rule(keys in keys(), step in prop_oneof![Just(1u32), 1u32..5000]) {
            let pos: Vec<u32> = (0..keys.len() as u32).map(|i| 64 + i * step).collect();
            let header = Header::new(&keys, &pos, 0);
            prop_assert_eq!(header.marks, marks_by_definition(&keys, &pos));
        }

        /// Arbitrary bytes never make the decoder read out of bounds or panic,
        /// and whatever check_block accepts decodes to ascending keys.
        #[test]
        fn hostile_blocks_are_safe(
            block in prop::collection::vec(any::<u8>(), 0..300),
            counts in prop::collection::vec(prop_oneof![Just(0u64), 0u64..1000, any::<u64>()], SYMBOLS),
            count in 0usize..400,
            first in any::<u64>(),
        ) {
            let code = Code::from_counts(&counts.try_into().unwrap());
            let dec = code.decoder();
            if let Ok((last, _)) = check_block(&block, 0, count, first, &dec, |_| ()) {
                let mut r = BlockReader::new(&block, &dec);
                let mut prev = r.current();
                for _ in 1..count {
                    let key = r.next_key().unwrap();
                    prop_assert!(key > prev);
                    prev = key;
                }
                prop_assert_eq!(prev, last);
                prop_assert!(r.bits_read() <= block.len() * 8);
            }
            // Reading past the end is still safe.
            let mut r = BlockReader::new(&block, &dec);
            for _ in 0..count {
                let _ = r.next_key();
            }
        }
    }

    #[test]
    fn code_lengths_are_limited_and_prefix_free() {
        // Fibonacci counts make the deepest unlimited Huffman trees.
        let mut counts = [0u64; SYMBOLS];
        let (mut a, mut b) = (1u64, 1u64);
        for c in counts.iter_mut() {
            *c = a;
            (a, b) = (b, a.saturating_add(b));
        }
        let code = Code::from_counts(&counts);
        assert!(code.lengths().iter().all(|&l| l >= 1 && u32::from(l) <= ENCODE_MAX_LEN));
        // Prefix-free: every table slot decodes to at most one symbol (checked
        // by construction), and all symbols decode back.
        let dec = code.decoder();
        for s in 0..SYMBOLS {
            let e = dec.table[usize::from(code.codes[s])];
            let (h, len) = unpack(e);
            assert_eq!((h as usize, len), (s, u32::from(code.lengths[s])));
            assert_eq!(is_slow(e), len + h > FAST_BITS);
        }
    }

    #[test]
    fn huffman_is_optimal_when_unlimited() {
        // Dyadic counts: lengths are exactly -log2(p).
        let mut counts = [0u64; SYMBOLS];
        counts[40] = 8;
        counts[39] = 4;
        counts[41] = 2;
        counts[38] = 1;
        counts[42] = 1;
        let l = Code::from_counts(&counts).lengths;
        assert_eq!((l[40], l[39], l[41], l[38], l[42]), (1, 2, 3, 4, 4));
    }

    #[test]
    fn bad_lengths_are_refused() {
        let mut lengths = [0u8; SYMBOLS];
        lengths[0] = 13;
        assert!(Code::from_lengths(lengths).is_err());
        let lengths = [1u8; SYMBOLS];
        assert!(Code::from_lengths(lengths).is_err());
    }

    #[test]
    fn edge_tables() {
        round_trip(&[], 1024);
        round_trip(&[0], 1024);
        round_trip(&[u64::MAX], 16);
        round_trip(&[0, u64::MAX], 16);
        round_trip(&[0, 1, 2, 3], 16);
    }
}

#[cfg(test)]
mod timing {
    use super::*;

    /// `cargo test --release --lib codec::timing -- --ignored --nocapture`:
    /// each step of encoding `KEYS` (4 million) random sorted keys.
    #[test]
    #[ignore]
    fn encode_steps() {
        let n: usize = std::env::var("KEYS").ok().and_then(|b| b.parse().ok()).unwrap_or(4_000_000);
        let mut x = 1u64;
        let mut keys: Vec<u64> = (0..n)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x
            })
            .collect();
        keys.sort_unstable();
        keys.dedup();
        let best = |f: &mut dyn FnMut()| {
            (0..7)
                .map(|_| {
                    let s = std::time::Instant::now();
                    f();
                    s.elapsed().as_secs_f64()
                })
                .fold(f64::MAX, f64::min)
                / keys.len() as f64
                * 1e9
        };
        let counts = symbol_counts(&keys);
        let code = Code::from_counts(&counts);
        println!(
            "counts {:.2} ns/key",
            best(&mut || {
                std::hint::black_box(symbol_counts(&keys));
            })
        );
        println!(
            "encode {:.2} ns/key",
            best(&mut || {
                std::hint::black_box(encode(&keys, &code, 1024));
            })
        );
    }
}
