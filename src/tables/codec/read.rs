//! Reading a block: [`BlockReader`] decodes its keys in order, and
//! [`check_block`] tells a consistent block from a corrupt one before any
//! search trusts it.

use super::*;

/// Reads the keys of one block in order. Each key costs one unaligned load
/// at the bit position, a shift and one table lookup; the position is the
/// only state carried from key to key, which keeps the chain of dependent
/// instructions per key short (a bit buffer refilled as it drains carries
/// more). Independent readers interleave well: see [`crate::tables::packed`].
#[derive(Clone)]
pub struct BlockReader<'a> {
    /// From the block's first byte to the end of the table's data: loads may
    /// read into the next block (bits that are never used), not past the end.
    pub(super) data: &'a [u8],
    pub(super) table: &'a [u16; TABLE_SIZE],
    pub(super) mask: usize,
    /// Bit position of the next code.
    pub(super) pos: usize,
    pub(super) prev: u64,
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
pub(super) fn load(data: &[u8], byte: usize) -> u64 {
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
pub(super) fn after(prev: u64, h: u32, low: u64) -> u64 {
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
