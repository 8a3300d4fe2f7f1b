//! A compressed table: the sorted permuted keys of one table in the blocks of
//! [`crate::codec`], searched through the first key of every block.
//!
//! Invariants (checked by [`PackedTable::from_parts`] for bytes read from a
//! file): blocks hold `ranks[b + 1] - ranks[b] >= 1` keys, ascending within
//! and across blocks; block `b` starts with `first[b]` and spans
//! `data[b * block_bytes..]`, `block_bytes` long except the last; `dir[x]` is
//! the number of blocks whose first key's top `dir_bits` bits are below `x`.
//! The directory is rebuilt, never stored: one `u32` per block.

use std::ops::Range;

use rayon::prelude::*;

use crate::codec::{self, check_block, BlockReader, Code, Decoder, Mark, MARKS, SYMBOLS};
use crate::container::Bytes;
use crate::table::prefetch;

/// Storage of a table's arrays: built in memory, or a view of a loaded file.
#[derive(Clone, Debug)]
enum Words<T> {
    Owned(Vec<T>),
    File(Bytes),
}

impl Words<u64> {
    #[inline]
    fn get(&self) -> &[u64] {
        match self {
            Words::Owned(v) => v,
            // Checked when loaded: cannot fail.
            Words::File(b) => b.as_u64s().unwrap_or(&[]),
        }
    }
}

impl Words<u32> {
    #[inline]
    fn get(&self) -> &[u32] {
        match self {
            Words::Owned(v) => v,
            Words::File(b) => b.as_u32s().unwrap_or(&[]),
        }
    }
}

#[derive(Clone, Debug)]
pub(crate) struct PackedTable {
    block_bytes: usize,
    code: Code,
    decoder: Decoder,
    data: Bytes,
    first: Words<u64>,
    ranks: Words<u32>,
    dir: Vec<u32>,
    dir_bits: u32,
    /// [`MARKS`] places to start decoding in each block.
    marks: Vec<Mark>,
}

/// The parts of a packed table as they are saved.
pub(crate) struct Parts<'a> {
    pub block_bytes: usize,
    pub lengths: &'a [u8; SYMBOLS],
    pub data: &'a [u8],
    pub first: &'a [u64],
    pub ranks: &'a [u32],
}

impl PackedTable {
    /// The table of ascending distinct `keys` (fewer than 2^32).
    pub fn encode(keys: &[u64], block_bytes: usize) -> PackedTable {
        let code = Code::from_counts(&codec::symbol_counts(keys));
        let e = codec::encode(keys, &code, block_bytes);
        let decoder = code.decoder();
        let mut t = PackedTable {
            block_bytes,
            code,
            decoder,
            data: Bytes::from_vec(e.data),
            first: Words::Owned(e.first),
            ranks: Words::Owned(e.ranks),
            dir: Vec::new(),
            dir_bits: 0,
            marks: e.marks,
        };
        t.build_dir();
        t
    }

    /// A table over saved parts, after checking every block.
    ///
    /// # Errors
    /// A message naming the first inconsistency.
    pub fn from_parts(block_bytes: usize, lengths: [u8; SYMBOLS], data: Bytes, first: Bytes, ranks: Bytes) -> Result<PackedTable, String> {
        if !(codec::MIN_BLOCK_BYTES..=codec::MAX_BLOCK_BYTES).contains(&block_bytes) {
            return Err(format!("a block size of {block_bytes} bytes"));
        }
        let code = Code::from_lengths(lengths)?;
        let nf = first.as_u64s().map_err(|e| e.to_string())?.len();
        let nr = ranks.as_u32s().map_err(|e| e.to_string())?.len();
        let decoder = code.decoder();
        let t = PackedTable {
            block_bytes,
            code,
            decoder,
            data,
            first: Words::File(first),
            ranks: Words::File(ranks),
            dir: Vec::new(),
            dir_bits: 0,
            marks: Vec::new(),
        };
        if nr != nf + 1 {
            return Err(format!("{nf} blocks but {nr} block ranks (expected one more)"));
        }
        let ranks = t.ranks.get();
        if ranks[0] != 0 || ranks.windows(2).any(|w| w[1] <= w[0]) {
            return Err("block ranks that do not ascend from 0".into());
        }
        let expected = if nf == 0 { 0 } else { (nf - 1) * block_bytes + 8 };
        let data_len = t.data.len();
        if data_len < expected || data_len > nf * block_bytes {
            return Err(format!("{data_len} bytes of blocks for {nf} blocks of {block_bytes}"));
        }
        let firsts = t.first.get();
        if firsts.windows(2).any(|w| w[1] <= w[0]) {
            return Err("block keys that do not ascend".into());
        }
        let checked: Vec<Result<(u64, [Mark; MARKS]), String>> = (0..nf)
            .into_par_iter()
            .map(|b| {
                let count = (ranks[b + 1] - ranks[b]) as usize;
                check_block(t.block(b), count, firsts[b], &t.decoder).map_err(|e| format!("block {b}: {e}"))
            })
            .collect();
        let mut marks = Vec::with_capacity(nf * MARKS);
        for (b, result) in checked.into_iter().enumerate() {
            let (last, block_marks) = result?;
            if b + 1 < nf && last >= firsts[b + 1] {
                return Err(format!("block {b} ends above where block {} starts", b + 1));
            }
            marks.extend(block_marks);
        }
        let mut t = t;
        t.marks = marks;
        t.build_dir();
        Ok(t)
    }

    /// What [`Self::from_parts`] takes back.
    pub fn parts(&self) -> Parts<'_> {
        Parts {
            block_bytes: self.block_bytes,
            lengths: self.code.lengths(),
            data: self.data.as_slice(),
            first: self.first.get(),
            ranks: self.ranks.get(),
        }
    }

    fn build_dir(&mut self) {
        let first = self.first.get();
        let n = first.len();
        let bits = (usize::BITS - n.leading_zeros()).saturating_sub(1).min(24);
        let mut dir = vec![0u32; (1usize << bits) + 1];
        for &key in first {
            dir[top(key, bits) + 1] += 1;
        }
        for x in 1..dir.len() {
            dir[x] += dir[x - 1];
        }
        self.dir = dir;
        self.dir_bits = bits;
    }

    /// Number of keys.
    pub fn len(&self) -> usize {
        *self.ranks.get().last().unwrap_or(&0) as usize
    }

    pub fn block_bytes(&self) -> usize {
        self.block_bytes
    }

    pub fn blocks(&self) -> usize {
        self.first.get().len()
    }

    /// Bytes of memory (or of the mapping) held.
    pub fn bytes(&self) -> usize {
        self.data.len() + self.blocks() * 12 + 4 + self.dir.len() * 4 + self.marks.len() * std::mem::size_of::<Mark>()
    }

    #[inline]
    fn block(&self, b: usize) -> &[u8] {
        let data = self.data.as_slice();
        let start = (b * self.block_bytes).min(data.len());
        &data[start..(start + self.block_bytes).min(data.len())]
    }

    /// The data from block `b` on: what a reader of block `b` takes.
    #[inline]
    fn tail(&self, b: usize) -> &[u8] {
        let data = self.data.as_slice();
        &data[(b * self.block_bytes).min(data.len())..]
    }

    #[inline]
    fn count(&self, b: usize) -> usize {
        let r = self.ranks.get();
        (r[b + 1] - r[b]) as usize
    }

    /// The last block whose first key is at most `key` (0 if none is).
    #[inline]
    fn locate(&self, key: u64) -> usize {
        let first = self.first.get();
        let x = top(key, self.dir_bits);
        // Blocks from dir[x + 1] on start above `key`'s top bits.
        let mut j = self.dir[x + 1] as usize;
        while j > 0 && first[j - 1] > key {
            j -= 1;
        }
        j.saturating_sub(1)
    }

    /// The block where a search for `lo` starts, with its bytes requested
    /// from memory: a block spans many cache lines that decoding would
    /// otherwise miss one after the other.
    #[inline]
    pub fn prefetch(&self, lo: u64) -> usize {
        let b = self.locate(lo);
        let data = self.tail(b);
        for line in (0..data.len().min(self.block_bytes)).step_by(64) {
            prefetch(data.as_ptr().wrapping_add(line));
        }
        b
    }

    /// Calls `f` with every key in `lo..=hi`, ascending.
    #[inline]
    pub fn for_each_in(&self, lo: u64, hi: u64, f: impl FnMut(u64)) {
        self.for_each_from(self.locate(lo), lo, hi, f);
    }

    /// [`Self::for_each_in`] from block `b`, which [`Self::prefetch`] gave.
    #[inline]
    pub fn for_each_from(&self, b: usize, lo: u64, hi: u64, mut f: impl FnMut(u64)) {
        search_all(&mut [self.search(b, lo, hi)], |_, key| f(key));
    }

    /// A reader of block `b` standing on the last key at most `key` among
    /// the block's first key and marks, and the number of keys after it.
    #[inline]
    fn start(&self, b: usize, key: u64) -> (BlockReader<'_>, usize) {
        let marks = &self.marks[b * MARKS..(b + 1) * MARKS];
        let count = self.count(b);
        match marks.iter().rev().find(|m| m.key <= key && m.index > 0) {
            Some(&m) => (BlockReader::at(self.tail(b), &self.decoder, m), count - 1 - m.index as usize),
            None => (BlockReader::new(self.tail(b), &self.decoder), count - 1),
        }
    }

    /// A search for the keys in `lo..=hi` from block `b` (see
    /// [`Self::prefetch`]), to run with others by [`search_all`].
    #[inline]
    pub fn search(&self, b: usize, lo: u64, hi: u64) -> Search<'_> {
        if self.blocks() == 0 {
            let reader = BlockReader::new(&[], &self.decoder);
            return Search { table: self, reader, block: 0, left: 0, lo, hi, done: true };
        }
        let b = b.min(self.blocks() - 1);
        let (reader, left) = self.start(b, lo);
        Search { table: self, reader, block: b, left, lo, hi, done: false }
    }

    /// The rank of `key`, if present.
    #[inline]
    pub fn position(&self, key: u64) -> Option<usize> {
        if self.blocks() == 0 {
            return None;
        }
        let b = self.locate(key);
        let (mut r, left) = self.start(b, key);
        let count = self.count(b);
        let mut cur = r.current();
        for i in count - 1 - left..count {
            if i > count - 1 - left {
                cur = r.next_key()?;
            }
            if cur >= key {
                return (cur == key).then(|| self.ranks.get()[b] as usize + i);
            }
        }
        None
    }

    /// Appends the keys of blocks `range`.
    pub fn decode_blocks(&self, range: Range<usize>, out: &mut Vec<u64>) {
        for b in range {
            let mut r = BlockReader::new(self.tail(b), &self.decoder);
            out.push(r.current());
            for _ in 1..self.count(b) {
                out.push(r.next_key().unwrap_or(u64::MAX));
            }
        }
    }

    /// Every key, ascending.
    pub fn decode(&self) -> Vec<u64> {
        let mut out = crate::mem::vec_with_capacity(self.len());
        self.decode_blocks(0..self.blocks(), &mut out);
        out
    }
}

/// A search in progress: the reader stands on the next key to look at.
pub(crate) struct Search<'a> {
    table: &'a PackedTable,
    reader: BlockReader<'a>,
    block: usize,
    /// Keys of the block after the current one.
    left: usize,
    lo: u64,
    hi: u64,
    done: bool,
}

impl Search<'_> {
    /// Looks at the current key and moves to the next; false once done.
    #[inline(always)]
    fn step(&mut self, mut found: impl FnMut(u64)) -> bool {
        let key = self.reader.current();
        if key > self.hi {
            self.done = true;
            return false;
        }
        if key >= self.lo {
            found(key);
        }
        if self.left > 0 {
            self.left -= 1;
            // Checked blocks always decode; a corrupt one ends the search.
            self.done = self.reader.next_key().is_none();
        } else {
            self.block += 1;
            self.done = self.block >= self.table.blocks();
            if !self.done {
                self.reader = BlockReader::new(self.table.tail(self.block), &self.table.decoder);
                self.left = self.table.count(self.block) - 1;
            }
        }
        !self.done
    }
}

/// Runs `searches` together, one key of each in turn, calling `found` with
/// the search's position and every key in its range. Decoding a block is one
/// long chain of dependent loads; interleaving independent searches lets the
/// CPU overlap their chains, several times faster than one after the other.
#[inline]
pub(crate) fn search_all(searches: &mut [Search<'_>], mut found: impl FnMut(usize, u64)) {
    let mut active = searches.iter().filter(|s| !s.done).count();
    while active > 0 {
        active = 0;
        for (i, s) in searches.iter_mut().enumerate() {
            if !s.done && s.step(|key| found(i, key)) {
                active += 1;
            }
        }
    }
}

#[inline]
fn top(key: u64, bits: u32) -> usize {
    if bits == 0 {
        0
    } else {
        (key >> (64 - bits)) as usize
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn keys() -> impl Strategy<Value = Vec<u64>> {
        prop_oneof![
            prop::collection::btree_set(prop_oneof![any::<u64>(), Just(0u64), Just(u64::MAX)], 0..3000),
            (any::<u64>(), prop::collection::btree_set(0u64..5000, 0..3000))
                .prop_map(|(hi, s)| s.into_iter().map(|x| (hi << 16) | x).collect()),
        ]
        .prop_map(|s| s.into_iter().collect())
    }

    proptest! {
        #[test]
        fn searches_match_a_sorted_array(keys in keys(), probes in prop::collection::vec(any::<u64>(), 1..20),
                                          width in 0u32..64, block_bytes in prop_oneof![Just(16usize), Just(1024), 16usize..300]) {
            let t = PackedTable::encode(&keys, block_bytes);
            prop_assert_eq!(t.len(), keys.len());
            prop_assert_eq!(t.decode(), keys.clone());
            let again = t.parts();
            let t2 = PackedTable::from_parts(
                block_bytes, *again.lengths, Bytes::from_vec(again.data.to_vec()),
                Bytes::from_vec(again.first.iter().flat_map(|k| k.to_le_bytes()).collect()),
                Bytes::from_vec(again.ranks.iter().flat_map(|k| k.to_le_bytes()).collect()),
            );
            let t2 = t2.expect("a table's own parts are valid");
            for &k in keys.iter().step_by(37) {
                prop_assert_eq!(t.position(k), keys.binary_search(&k).ok());
                prop_assert_eq!(t2.position(k), keys.binary_search(&k).ok());
            }
            for &p in probes.iter().chain(keys.iter().take(5)) {
                prop_assert_eq!(t.position(p), keys.binary_search(&p).ok());
                let mask = u64::MAX.checked_shl(width).unwrap_or(0);
                let (lo, hi) = (p & mask, p | !mask);
                let mut got = Vec::new();
                t.for_each_in(lo, hi, |k| got.push(k));
                let expected: Vec<u64> = keys.iter().copied().filter(|&k| lo <= k && k <= hi).collect();
                prop_assert_eq!(&got, &expected);
                // The same searches run together.
                let mut searches = vec![t.search(t.prefetch(lo), lo, hi), t2.search(t2.locate(lo), lo, hi), t.search(0, lo, hi)];
                let mut together = vec![Vec::new(); 3];
                search_all(&mut searches, |i, k| together[i].push(k));
                prop_assert!(together.iter().all(|g| g == &expected));
            }
        }
    }
}

