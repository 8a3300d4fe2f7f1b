//! One sorted permuted table: raw keys and a prefix directory ([`RawTable`]),
//! or compressed blocks ([`PackedTable`]); [`Table`] is either.
//!
//! Invariants of a raw table: `keys` holds distinct permuted fingerprints in ascending
//! order; `dir[b]` is the index of the first key whose top `dir_bits` bits are
//! at least `b`, for `b` in `0..=2^dir_bits` (so `dir[2^dir_bits] == len`).
//! `dir_bits` never exceeds the table's prefix, so every key that agrees with
//! a query on the prefix lies in the query's directory bucket.

use std::borrow::Cow;

use crate::cpu::prefetch;
use crate::tables::packed::PackedTable;
use crate::tables::plan::Permutation;
use crate::tables::radix::sort_bits;

/// How a run stores its tables.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Layout {
    /// Sorted `u64` keys and a directory: 8 bytes and a bit per key, fastest.
    Raw,
    /// Huffman-coded XOR deltas in blocks of this many bytes (paper §3.2).
    Packed(usize),
}

impl Layout {
    /// Compressed in blocks of 1 KiB, the paper's choice.
    pub const DEFAULT: Layout = Layout::Packed(1024);
}

/// A table in either layout.
#[derive(Clone, Debug)]
pub(crate) enum Table {
    Raw(RawTable),
    Packed(Box<PackedTable>),
}

impl Table {
    /// The table of sorted distinct `keys` in `layout`.
    pub fn new(keys: Vec<u64>, prefix: u32, layout: Layout) -> Table {
        match layout {
            Layout::Raw => Table::Raw(RawTable::from_sorted(keys, prefix)),
            Layout::Packed(block_bytes) => Table::Packed(Box::new(PackedTable::encode(&keys, block_bytes))),
        }
    }

    /// The table of distinct fingerprints `fps` under `perm`.
    /// `buffers` are the sort's, reused from table to table: a packed
    /// table's sorted keys only live until they are encoded, so their
    /// buffer serves the next table, and its pages are faulted in once.
    pub fn build(fps: &[u64], perm: &Permutation, prefix: u32, layout: Layout, buffers: &mut (Vec<u64>, Vec<u64>)) -> Table {
        let (scratch, keys) = buffers;
        match layout {
            Layout::Raw => {
                let mut sorted = RawTable::sorted_keys(fps, perm, prefix, scratch, Vec::new());
                if sorted.capacity() > fps.len() {
                    // The sort may leave the data in the scratch allocation:
                    // keep the table's memory tight, hand the spare room back.
                    sorted.shrink_to_fit();
                }
                Table::Raw(RawTable::from_sorted(sorted, prefix))
            }
            Layout::Packed(block_bytes) => {
                let sorted = RawTable::sorted_keys(fps, perm, prefix, scratch, std::mem::take(keys));
                let table = Table::Packed(Box::new(PackedTable::encode(&sorted, block_bytes)));
                *keys = sorted;
                table
            }
        }
    }

    pub fn len(&self) -> usize {
        match self {
            Table::Raw(t) => t.keys.len(),
            Table::Packed(t) => t.len(),
        }
    }

    /// The keys, ascending (decoded when packed).
    pub fn keys(&self) -> Cow<'_, [u64]> {
        match self {
            Table::Raw(t) => Cow::Borrowed(&t.keys),
            Table::Packed(t) => Cow::Owned(t.decode()),
        }
    }

    pub fn into_keys(self) -> Vec<u64> {
        match self {
            Table::Raw(t) => t.keys,
            Table::Packed(t) => t.decode(),
        }
    }

    /// The position of `key`, if present.
    #[inline]
    pub fn position(&self, key: u64) -> Option<usize> {
        match self {
            Table::Raw(t) => t.position(key),
            Table::Packed(t) => t.position(key),
        }
    }

    pub fn bytes(&self) -> usize {
        match self {
            Table::Raw(t) => t.bytes(),
            Table::Packed(t) => t.bytes(),
        }
    }

    /// The same keys in `layout`.
    pub fn relayout(self, prefix: u32, layout: Layout) -> Table {
        match (&self, layout) {
            (Table::Raw(_), Layout::Raw) => self,
            (Table::Packed(t), Layout::Packed(b)) if t.block_bytes() == b => self,
            _ => Table::new(self.into_keys(), prefix, layout),
        }
    }
}

/// Keys per directory bucket the directory aims at (2^2 = 4): a few
/// candidates in one or two cache lines, for 1 byte of directory per key.
const BUCKET_LOG: u32 = 2;
/// The largest directory: 2^30 buckets.
const MAX_DIR_BITS: u32 = 30;

#[derive(Clone, Debug, Default)]
pub(crate) struct RawTable {
    pub keys: Vec<u64>,
    dir: Vec<u32>,
    dir_bits: u32,
}

impl RawTable {
    /// A table over keys already sorted and distinct.
    pub fn from_sorted(keys: Vec<u64>, prefix: u32) -> RawTable {
        debug_assert!(keys.windows(2).all(|w| w[0] < w[1]));
        let n = keys.len();
        let log = (usize::BITS - n.leading_zeros()).saturating_sub(1);
        let dir_bits = log.saturating_sub(BUCKET_LOG).min(prefix).min(MAX_DIR_BITS);
        let buckets = 1usize << dir_bits;
        // Count the keys of each bucket, then turn counts into starts: no
        // branch per key. Counts fit u32: runs hold fewer than 2^32 keys.
        let mut dir = vec![0u32; buckets + 1];
        for &key in &keys {
            dir[bucket(key, dir_bits) + 1] += 1;
        }
        let mut at = 0u32;
        for slot in dir.iter_mut() {
            at += *slot;
            *slot = at;
        }
        debug_assert_eq!(dir[buckets] as usize, n);
        RawTable { keys, dir, dir_bits }
    }

    /// The table of distinct fingerprints `fps` under `perm`; `scratch` is
    /// the sort's buffer, reused from table to table.
    /// The keys of the table of `fps` under `perm`, sorted, in `keys` (a
    /// buffer to reuse, or a new one when empty).
    pub fn sorted_keys(fps: &[u64], perm: &Permutation, prefix: u32, scratch: &mut Vec<u64>, mut keys: Vec<u64>) -> Vec<u64> {
        if keys.capacity() < fps.len() {
            keys = crate::mem::vec_with_capacity(fps.len());
        }
        crate::tables::radix::sort_into(fps, |f| perm.apply(f), &mut keys, scratch, sort_bits(fps.len(), prefix));
        keys
    }

    /// The slice of keys in `key`'s directory bucket.
    #[inline]
    pub fn bucket_range(&self, key: u64) -> (usize, usize) {
        let b = bucket(key, self.dir_bits);
        (self.dir[b] as usize, self.dir[b + 1] as usize)
    }

    /// Asks the CPU to start loading `key`'s directory entry.
    #[inline(always)]
    pub fn prefetch_bucket(&self, key: u64) {
        prefetch(self.dir.as_ptr().wrapping_add(bucket(key, self.dir_bits)));
    }

    /// Asks the CPU to start loading the key at `at`.
    #[inline(always)]
    pub fn prefetch_key(&self, at: usize) {
        prefetch(self.keys.as_ptr().wrapping_add(at));
    }

    /// The position of `key`, if present.
    #[inline]
    pub fn position(&self, key: u64) -> Option<usize> {
        let (lo, hi) = self.bucket_range(key);
        self.keys[lo..hi].binary_search(&key).ok().map(|i| lo + i)
    }

    /// Bytes of memory held.
    pub fn bytes(&self) -> usize {
        self.keys.capacity() * 8 + self.dir.capacity() * 4
    }
}

#[inline]
fn bucket(key: u64, bits: u32) -> usize {
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

    proptest! {
        #[test]
        fn directory_finds_every_key(
            keys in prop::collection::btree_set(prop_oneof![any::<u64>(), Just(0u64), Just(u64::MAX)], 0..3000),
            prefix in 0u32..=64,
            probe in any::<u64>(),
        ) {
            let keys: Vec<u64> = keys.into_iter().collect();
            let t = RawTable::from_sorted(keys.clone(), prefix);
            for (i, &k) in keys.iter().enumerate() {
                prop_assert_eq!(t.position(k), Some(i));
            }
            prop_assert_eq!(t.position(probe), keys.binary_search(&probe).ok());
            // The bucket holds every key that shares the prefix with the probe.
            let (lo, hi) = t.bucket_range(probe);
            for (i, &k) in keys.iter().enumerate() {
                let shares = prefix == 0 || (prefix >= 64 && k == probe) || (prefix < 64 && (k ^ probe) >> (64 - prefix) == 0);
                if shares {
                    prop_assert!(lo <= i && i < hi);
                }
            }
        }
    }
}
