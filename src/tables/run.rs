//! A run: an immutable set of permuted tables over some fingerprints, and
//! the ids each fingerprint carries.
//!
//! Invariants:
//! - `tables[i]` follows `design.tables()[i]`; table 0 is the identity, so its
//!   keys are the run's distinct fingerprints in ascending order, and a
//!   fingerprint's *index* is its position there.
//! - The ids of fingerprint `i` are `ids[starts[i]..starts[i + 1]]`, ascending
//!   (`starts` is empty when every fingerprint has exactly one id: then they
//!   are `ids[i..i + 1]`, which saves 4 bytes an item in the common case);
//!   removing an id sets its bit in `dead` (the slot is reclaimed when the run
//!   is rebuilt). A fingerprint whose ids are all dead stays in the tables but
//!   is never reported.

use std::borrow::Cow;
use std::sync::Arc;

use rayon::prelude::*;

mod probe;

pub(crate) use probe::{probe_batch, probe_each};

use crate::tables::packed::search_all;
use crate::tables::packed::PackedTable;
use crate::tables::plan::Design;
use crate::tables::radix::{par_sort_by_top_bits, sort_bits, sort_by_top_bits};
use crate::tables::table::{Layout, RawTable, Table};

/// Tables probed per batch of directory loads: all their loads are issued
/// before any range is scanned, so their cache misses overlap.
const PROBE_CHUNK: usize = 16;

/// Blocks of a packed table that [`for_each_chunk`] decodes at a time: about
/// 50,000 keys in 1 KiB blocks, 400 KB, which stay in a core's L2 cache.
const CHUNK_BLOCKS: usize = 256;

/// Parts a large packed table's pairs are found in: a few per thread, so
/// that no thread is left with a whole table at the end.
const PAIRS_PARTS: usize = 4;

#[derive(Debug)]
pub(crate) struct Run {
    design: Arc<Design>,
    tables: Vec<Table>,
    starts: Vec<u32>,
    ids: Vec<u64>,
    dead: Vec<u64>,
    dead_count: usize,
}

/// A match of a probe: the fingerprint index in the run and the distance.
pub(crate) type Hit = (u32, u32);

impl Run {
    /// Builds a run from `(fingerprint, id)` items (ids distinct). First the
    /// items are sorted into the distinct fingerprints (table 0) and their ids;
    /// then the other tables are built from those in parallel, each worker
    /// reusing one sort buffer.
    pub fn build(design: Arc<Design>, layout: Layout, mut items: Vec<(u64, u64)>) -> Run {
        let spec = design.tables();
        let bits = sort_bits(items.len(), spec[0].prefix);
        par_sort_by_top_bits(&mut items, bits, |p| p.0, |a, b| a.cmp(b));
        let (fps, starts, ids) = split_ids(&items);
        drop(items);
        // Table 0 holds the fingerprints as they are: packed, it is encoded
        // beside the other tables' builds rather than after them.
        let (first, rest) = rayon::join(
            || match layout {
                Layout::Raw => None,
                Layout::Packed(block_bytes) => Some(Table::Packed(Box::new(PackedTable::encode(&fps, block_bytes)))),
            },
            || -> Vec<Table> { spec[1..].par_iter().map_init(Default::default, |buffers, t| Table::build(&fps, &t.perm, t.prefix, layout, buffers)).collect() },
        );
        let mut tables = Vec::with_capacity(spec.len());
        tables.push(first.unwrap_or_else(|| Table::new(fps, spec[0].prefix, layout)));
        tables.extend(rest);
        let dead = vec![0; ids.len().div_ceil(64)];
        Run { design, tables, starts, ids, dead, dead_count: 0 }
    }

    pub fn design(&self) -> &Arc<Design> {
        &self.design
    }

    /// Distinct fingerprints, ascending.
    pub fn fps(&self) -> Cow<'_, [u64]> {
        self.tables[0].keys()
    }

    /// Id slots, dead ones included.
    pub fn slots(&self) -> usize {
        self.ids.len()
    }

    pub fn live(&self) -> usize {
        self.ids.len() - self.dead_count
    }

    pub fn dead(&self) -> usize {
        self.dead_count
    }

    /// The live ids of fingerprint `i`, ascending.
    #[inline]
    pub fn ids_of(&self, i: usize) -> impl Iterator<Item = u64> + '_ {
        let (lo, hi) = self.slot_range(i);
        (lo..hi).filter(|&s| self.is_live(s)).map(|s| self.ids[s])
    }

    /// Every live id, in slot order.
    pub fn live_ids(&self) -> impl Iterator<Item = u64> + '_ {
        (0..self.ids.len()).filter(|&s| self.is_live(s)).map(|s| self.ids[s])
    }

    /// Whether id slot `s` holds a live id (its dead bit is clear).
    #[inline]
    fn is_live(&self, s: usize) -> bool {
        self.dead[s / 64] >> (s % 64) & 1 == 0
    }

    /// Fingerprints that carry more than one id slot.
    pub fn shared_fps(&self) -> impl Iterator<Item = usize> + '_ {
        // With no starts, every fingerprint has one slot.
        self.starts.windows(2).enumerate().filter(|(_, w)| w[1] - w[0] > 1).map(|(i, _)| i)
    }

    /// All id slots of fingerprint `i`, dead ones included.
    #[inline]
    fn id_slots(&self, i: usize) -> &[u64] {
        let (lo, hi) = self.slot_range(i);
        &self.ids[lo..hi]
    }

    /// The id slots of fingerprint `i`.
    #[inline]
    fn slot_range(&self, i: usize) -> (usize, usize) {
        if self.starts.is_empty() {
            (i, i + 1)
        } else {
            (self.starts[i] as usize, self.starts[i + 1] as usize)
        }
    }

    /// The smallest live id of fingerprint `i`.
    #[inline]
    pub fn first_id(&self, i: usize) -> Option<u64> {
        self.ids_of(i).next()
    }

    /// Marks `id` of fingerprint `fp` dead; false if it is not here (alive).
    pub fn remove(&mut self, fp: u64, id: u64) -> bool {
        let Some(i) = self.tables[0].position(fp) else { return false };
        let (lo, hi) = self.slot_range(i);
        let Ok(at) = self.ids[lo..hi].binary_search(&id) else { return false };
        let s = lo + at;
        if !self.is_live(s) {
            return false;
        }
        self.dead[s / 64] |= 1 << (s % 64);
        self.dead_count += 1;
        true
    }

    /// Every live `(fingerprint, id)` item.
    pub fn items(&self) -> Vec<(u64, u64)> {
        let mut out = Vec::with_capacity(self.live());
        for (i, &fp) in self.fps().iter().enumerate() {
            out.extend(self.ids_of(i).map(|id| (fp, id)));
        }
        out
    }

    /// Calls `hit` once for every fingerprint within `k` of `q` that has a
    /// live id (each reported by the first table whose prefix it shares).
    #[inline]
    pub fn probe(&self, q: u64, k: u32, mut hit: impl FnMut(Hit)) {
        let spec = self.design.tables();
        let mut ranges = [(0usize, 0usize, 0u64); PROBE_CHUNK];
        for first in (0..spec.len()).step_by(PROBE_CHUNK) {
            let last = (first + PROBE_CHUNK).min(spec.len());
            // Each step's loads go out for every table before the next step
            // needs them: a packed table's search waits on its directory
            // entry, then on its block header, then on its bytes.
            for t in first..last {
                let qp = spec[t].perm.apply(q);
                let (lo, hi) = match &self.tables[t] {
                    Table::Raw(raw) => raw.bucket_range(qp),
                    Table::Packed(packed) => {
                        packed.prefetch_dir(qp & spec[t].prefix_mask);
                        (0, 0)
                    }
                };
                ranges[t - first] = (lo, hi, qp);
            }
            for t in first..last {
                if let Table::Packed(packed) = &self.tables[t] {
                    packed.prefetch_header(ranges[t - first].2 & spec[t].prefix_mask);
                }
            }
            // `rank`: the key's position in table `t`, if known. Table 0's
            // ranks are fingerprint indices: no second lookup for its hits.
            let mut check = |t: usize, key: u64, rank: Option<usize>| {
                let qp = ranges[t - first].2;
                if let Some(d) = self.design.reported(t, key ^ qp, k) {
                    let i = match rank {
                        Some(i) if t == 0 => self.first_id(i).map(|_| i),
                        _ => self.live_index(self.design.unpermute(t, key)),
                    };
                    if let Some(i) = i {
                        hit((i as u32, d));
                    }
                }
            };
            let mut searches = Vec::new();
            let mut tables = [0usize; PROBE_CHUNK];
            for t in first..last {
                let (lo, hi, qp) = ranges[t - first];
                match &self.tables[t] {
                    Table::Raw(raw) => (lo..hi).for_each(|i| check(t, raw.keys[i], Some(i))),
                    Table::Packed(packed) => {
                        let mask = spec[t].prefix_mask;
                        tables[searches.len()] = t;
                        searches.push(packed.search(qp & mask, qp | !mask));
                    }
                }
            }
            search_all(&mut searches, |i, key, rank| check(tables[i], key, Some(rank)));
        }
    }

    /// The index of fingerprint `fp` if it is here with a live id.
    #[inline]
    fn live_index(&self, fp: u64) -> Option<usize> {
        self.tables[0].position(fp).filter(|&i| self.first_id(i).is_some())
    }

    /// Every unordered pair of distinct fingerprints within `k` that both have
    /// a live id, as fingerprint indices `(i, j, distance)` with `i < j`. One
    /// pass per table over the groups of keys sharing the table's prefix, in
    /// parallel and packed tables in parts; a pair is emitted by the first
    /// table whose prefix it shares, so no pair comes twice.
    pub fn pairs(&self, k: u32) -> Vec<(u32, u32, u32)> {
        let spec = self.design.tables();
        // Packed tables take longer and come in parts cut between groups,
        // so that the threads end together.
        let work: Vec<(usize, std::ops::Range<usize>)> = (0..spec.len())
            .flat_map(|t| match &self.tables[t] {
                Table::Raw(_) => vec![(t, 0..0)],
                Table::Packed(packed) => {
                    let parts = if packed.blocks() >= 1024 { PAIRS_PARTS } else { 1 };
                    packed.independent_parts(64 - spec[t].prefix, parts).into_iter().map(|r| (t, r)).collect()
                }
            })
            .collect();
        let per_part: Vec<Vec<(u32, u32, u32)>> = work
            .into_par_iter()
            .map(|(t, blocks)| {
                let mut found = Vec::new();
                match &self.tables[t] {
                    Table::Raw(raw) => groups(&raw.keys, spec[t].prefix_mask)
                        .for_each(|group| self.design.group_pairs(t, group, k, |i, j, d| found.push((group[i], group[j], d)))),
                    // The rows' groups come as their pairs (see `codec::rows`).
                    Table::Packed(packed) => packed.for_each_pair_sharing_prefix(blocks, 64 - spec[t].prefix, |x, y| {
                        if let Some(d) = self.design.reported(t, x ^ y, k) {
                            found.push((x, y, d));
                        }
                    }),
                }
                // Back to fingerprint indices.
                found
                    .into_iter()
                    .filter_map(|(a, b, d)| {
                        let i = self.live_index(self.design.unpermute(t, a))?;
                        let j = self.live_index(self.design.unpermute(t, b))?;
                        Some((i.min(j) as u32, i.max(j) as u32, d))
                    })
                    .collect()
            })
            .collect();
        per_part.concat()
    }

    /// The run holding the live items of `a` and `b` (which hold distinct
    /// ids). Runs of one design with nothing removed merge table by table in
    /// one linear pass each, in place in the larger run's buffers (grown at
    /// their end, merged from the back): only the added room is new memory,
    /// and the kernel need not clear pages for the rest. Otherwise the merged
    /// items are rebuilt.
    pub fn merge(a: Run, b: Run, design: Arc<Design>, layout: Layout) -> Run {
        let linear = Arc::ptr_eq(&a.design, &design) && Arc::ptr_eq(&b.design, &design);
        if !linear || a.dead_count > 0 || b.dead_count > 0 {
            let mut items = a.items();
            items.extend(b.items());
            drop((a, b));
            return Run::build(design, layout, items);
        }
        let (mut big, small) = if a.ids.len() >= b.ids.len() { (a, b) } else { (b, a) };
        let spec = design.tables();
        let mut tables = std::mem::take(&mut big.tables);
        let rest = tables.split_off(1);
        // Table 0's keys are the fingerprints the id lists follow: decoded
        // once (when packed), for the ids and for table 0 itself.
        let fa = tables.pop().expect("table 0").into_keys();
        let fb = small.tables[0].keys();
        let (starts, ids) = merge_ids(&big, &small, &fa, &fb);
        let (first, rest) = rayon::join(
            || Table::new(merge_into(fa, &fb), spec[0].prefix, layout),
            || {
                rest.into_par_iter()
                    .zip(small.tables[1..].par_iter())
                    .zip(spec[1..].par_iter())
                    .map(|((t, s), spec)| Table::new(merge_into(t.into_keys(), &s.keys()), spec.prefix, layout))
                    .collect::<Vec<Table>>()
            },
        );
        let mut tables = Vec::with_capacity(spec.len());
        tables.push(first);
        tables.extend(rest);
        let dead = vec![0; ids.len().div_ceil(64)];
        Run { design, tables, starts, ids, dead, dead_count: 0 }
    }

    /// Calls `pair(a, b)` once for every unordered pair of distinct live ids
    /// within `k` of each other in this run: the ids of one fingerprint, and
    /// the ids of every pair of fingerprints from [`Run::pairs`].
    pub fn id_pairs(&self, k: u32, mut pair: impl FnMut(u64, u64)) {
        for i in self.shared_fps() {
            let ids: Vec<u64> = self.ids_of(i).collect();
            for (n, &a) in ids.iter().enumerate() {
                ids[n + 1..].iter().for_each(|&b| pair(a, b));
            }
        }
        for (i, j, _) in self.pairs(k) {
            let b: Vec<u64> = self.ids_of(j as usize).collect();
            for a in self.ids_of(i as usize) {
                b.iter().for_each(|&b| pair(a, b));
            }
        }
    }

    /// The tables, id-list starts, ids and dead bits, as saved.
    pub fn parts(&self) -> (&[Table], &[u32], &[u64], &[u64]) {
        (&self.tables, &self.starts, &self.ids, &self.dead)
    }

    /// A run over saved parts, after checking that they fit together.
    ///
    /// # Errors
    /// A message naming the first inconsistency.
    pub fn from_parts(design: Arc<Design>, tables: Vec<Table>, starts: Vec<u32>, ids: Vec<u64>, dead: Vec<u64>) -> Result<Run, String> {
        if tables.len() != design.tables().len() {
            return Err(format!("{} tables where its design has {}", tables.len(), design.tables().len()));
        }
        let distinct = tables[0].len();
        if let Some(t) = tables.iter().position(|t| t.len() != distinct) {
            return Err(format!("table {t} holds {} keys, table 0 {distinct}", tables[t].len()));
        }
        if ids.len() as u64 > crate::MAX_ITEMS {
            return Err(format!("{} ids in one run", ids.len()));
        }
        if starts.is_empty() {
            if ids.len() != distinct {
                return Err(format!("{} ids for {distinct} fingerprints and no id lists", ids.len()));
            }
        } else {
            let ascending = starts.windows(2).all(|w| w[0] < w[1]);
            if starts.len() != distinct + 1 || starts[0] != 0 || !ascending || starts[distinct] as usize != ids.len() {
                return Err("id lists that do not cover the ids in order".into());
            }
            if starts.windows(2).any(|w| ids[w[0] as usize..w[1] as usize].windows(2).any(|p| p[0] >= p[1])) {
                return Err("an id list that is not strictly ascending".into());
            }
        }
        if dead.len() != ids.len().div_ceil(64) {
            return Err(format!("{} words of dead bits for {} ids", dead.len(), ids.len()));
        }
        if !ids.len().is_multiple_of(64) && dead.last().is_some_and(|&w| w >> (ids.len() % 64) != 0) {
            return Err("dead bits past the last id".into());
        }
        let dead_count = dead.iter().map(|w| w.count_ones() as usize).sum();
        Ok(Run { design, tables, starts, ids, dead, dead_count })
    }

    /// Stores the tables in `layout`.
    pub fn relayout(&mut self, layout: Layout) {
        let spec = self.design.tables();
        let tables = std::mem::take(&mut self.tables);
        self.tables = tables.into_par_iter().zip(spec.par_iter()).map(|(t, s)| t.relayout(s.prefix, layout)).collect();
    }

    /// Whether the tables are raw (not packed).
    pub fn is_raw(&self) -> bool {
        matches!(self.tables.first(), Some(Table::Raw(_)))
    }

    /// Bytes of memory held by the tables alone.
    pub fn table_bytes(&self) -> usize {
        self.tables.iter().map(Table::bytes).sum()
    }

    /// Bytes of memory held.
    pub fn bytes(&self) -> usize {
        self.tables.iter().map(Table::bytes).sum::<usize>() + self.starts.capacity() * 4 + self.ids.capacity() * 8 + self.dead.capacity() * 8
    }
}

/// The runs of two or more consecutive `keys` equal under `mask`. Such
/// groups are rare: neighbours are compared in chunks, and looked at closer
/// only where a group starts.
fn groups(keys: &[u64], mask: u64) -> impl Iterator<Item = &[u64]> {
    let mut start = 0;
    std::iter::from_fn(move || {
        let at = keys.get(start..)?.windows(2).position(|w| (w[0] ^ w[1]) & mask == 0)?;
        let first = start + at;
        let mut end = first + 2;
        while end < keys.len() && (keys[first] ^ keys[end]) & mask == 0 {
            end += 1;
        }
        start = end;
        Some(&keys[first..end])
    })
}

/// Where the last group of `keys` equal under `mask` starts (a group of one
/// included).
fn last_group(keys: &[u64], mask: u64) -> usize {
    let Some(&last) = keys.last() else { return 0 };
    keys.iter().rposition(|&x| (x ^ last) & mask != 0).map_or(0, |i| i + 1)
}

/// Sorted items cut into distinct fingerprints, id-list starts (empty when
/// no fingerprint repeats) and ids.
fn split_ids(items: &[(u64, u64)]) -> (Vec<u64>, Vec<u32>, Vec<u64>) {
    let mut fps: Vec<u64> = crate::mem::vec_with_capacity(items.len());
    let mut ids: Vec<u64> = crate::mem::vec_with_capacity(items.len());
    if !items.par_windows(2).any(|w| w[0].0 == w[1].0) {
        fps.extend(items.iter().map(|p| p.0));
        ids.extend(items.iter().map(|p| p.1));
        return (fps, Vec::new(), ids);
    }
    let mut starts = crate::mem::vec_with_capacity(items.len() + 1);
    for (i, &(fp, id)) in items.iter().enumerate() {
        if fps.last() != Some(&fp) {
            fps.push(fp);
            // Slots fit u32: a run holds fewer than 2^32 items.
            starts.push(i as u32);
        }
        ids.push(id);
    }
    starts.push(items.len() as u32);
    fps.shrink_to_fit();
    starts.shrink_to_fit();
    (fps, starts, ids)
}

/// The union of ascending distinct `a` and `b`, ascending and distinct, built
/// in `a`'s buffer: grown by `b.len()`, filled from the back. Keys in both
/// leave a gap at the front of the merged part, closed by one shift.
fn merge_into(mut a: Vec<u64>, b: &[u64]) -> Vec<u64> {
    let n = a.len();
    a.resize(n + b.len(), 0);
    let (mut i, mut j, mut w) = (n, b.len(), n + b.len());
    while j > 0 {
        // Invariant: a[w..] is the merged tail; w >= i + j (equal until a key
        // common to both has been seen).
        w -= 1;
        if i > 0 && a[i - 1] > b[j - 1] {
            a[w] = a[i - 1];
            i -= 1;
        } else {
            a[w] = b[j - 1];
            i -= usize::from(i > 0 && a[i - 1] == b[j - 1]);
            j -= 1;
        }
    }
    if w > i {
        a.copy_within(w.., i);
        a.truncate(a.len() - (w - i));
    }
    a
}

/// The id lists of the union of `big` and `small` (one design, nothing
/// dead): `(starts, ids)` over the merged fingerprints, `starts` empty when
/// no fingerprint has more than one id; `fa`, `fb` are their fingerprints.
fn merge_ids(big: &Run, small: &Run, fa: &[u64], fb: &[u64]) -> (Vec<u32>, Vec<u64>) {
    let shared = !big.starts.is_empty() || !small.starts.is_empty() || has_common(fa, fb);
    let mut ids = crate::mem::vec_with_capacity(big.ids.len() + small.ids.len());
    let mut starts = Vec::new();
    if shared {
        starts.reserve(fa.len() + fb.len() + 1);
    }
    let (mut i, mut j) = (0, 0);
    while i < fa.len() || j < fb.len() {
        if shared {
            starts.push(ids.len() as u32);
        }
        let take_a = j == fb.len() || (i < fa.len() && fa[i] <= fb[j]);
        let take_b = i == fa.len() || (j < fb.len() && fb[j] <= fa[i]);
        let at = ids.len();
        if take_a {
            ids.extend_from_slice(big.id_slots(i));
        }
        if take_b {
            ids.extend_from_slice(small.id_slots(j));
        }
        if take_a && take_b {
            ids[at..].sort_unstable();
        }
        i += usize::from(take_a);
        j += usize::from(take_b);
    }
    if shared {
        starts.push(ids.len() as u32);
    }
    (starts, ids)
}

/// Whether two ascending lists share a value.
fn has_common(a: &[u64], b: &[u64]) -> bool {
    let (mut i, mut j) = (0, 0);
    while i < a.len() && j < b.len() {
        if a[i] == b[j] {
            return true;
        }
        let (x, y) = (a[i], b[j]);
        i += usize::from(x < y);
        j += usize::from(y < x);
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn merge_into_is_a_sorted_union(
            a in prop::collection::btree_set(0u64..200, 0..100),
            b in prop::collection::btree_set(0u64..200, 0..100),
        ) {
            let expected: Vec<u64> = a.union(&b).copied().collect();
            let got = merge_into(a.into_iter().collect(), &b.into_iter().collect::<Vec<_>>());
            prop_assert_eq!(got, expected);
        }
    }
}
