//! The online prefix index of an exact [`SimilarIndex`](super::SimilarIndex):
//! every stored set at least the threshold alike a query is found (recall 1
//! by construction), with no candidates from fingerprints.
//!
//! The prefix filter (AllPairs, PPJoin) needs a total order of the values
//! that every set is read in. Any fixed total order keeps it correct, since
//! its argument uses the order only to name "the first values" of each set:
//!
//! - two sets with an overlap of at least `o` share a value within the
//!   first `|x| - o + 1` values of each (were they not to, the `o` common
//!   values would all lie in the last `o - 1` of one of them);
//! - a Jaccard pair at least `t` alike overlaps in at least `ceil(t
//!   max(|x|, |y|))`, so each stored set indexes its first `|y| - ceil(t0
//!   |y|) + 1` values (`t0` the index's threshold) and a query at `t >= t0`
//!   reads the lists of its first `|x| - ceil(t |x|) + 1` values: both are
//!   at least the `|.| - o + 1` the argument asks for;
//! - a containment pair overlaps in at least `ceil(t min(|x|, |y|))` only,
//!   so the larger set's prefix may be nearly all of it: every value of a
//!   stored set is indexed, with its place, and a query reads all its
//!   values' lists, taking a partner from a list of its first values (the
//!   query's prefix) or, from the others, one whose own prefix holds the
//!   value.
//!
//! **The order.** The batch join ([`crate::similar::exact`]) ranks values
//! by document frequency, rarest first, so prefixes hold rare values and
//! their lists are short. An index that takes texts a call at a time cannot
//! know the frequencies ahead, so it keeps a snapshot: a value's key is
//! `(f, value)`, `f` the number of held sets that held it when the order was
//! last made (0 for a value held by one set then, or none), ties by the
//! value. Between two makings the key is a fixed function, so the filter is
//! correct; the order is made again (every list rebuilt from the held sets)
//! whenever the held sets have doubled since the last time (from
//! [`REORDER_FROM`] on), which costs a sort of every held value each
//! doubling, about as much again as the adds themselves. Until then (small
//! indexes) every key is `(0, value)`: the order of the hashes.
//!
//! Rounding: prefix lengths come from [`exact::indexed_len`], which rounds
//! `ceil(t n)` down a hair, so a pair that passes the final `f64` test is
//! never left out by the filter. A Jaccard partner must also be of a size
//! within `[t |x|, |x| / t]` (the length filter, with the same slack). Each
//! candidate is verified as the simhash candidates are
//! ([`super::Held::alike`]), so both modes report the same similarities.
//!
//! Invariants: each distinct held set has one slot while an id holds it;
//! `lists` holds `(slot, place)` for exactly the indexed values of the sets
//! in slots, places in the current order; `members[slot]` lists the ids
//! holding that slot's set; the empty set (alike only another empty set)
//! is in no list and is found by `empty`.

use std::collections::{HashMap, HashSet};
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::Arc;

use rayon::prelude::*;

use super::Held;
use crate::similar::exact::indexed_len;
use crate::similar::Measure;

/// Held sets from which the order is first made by frequency.
const REORDER_FROM: usize = 1024;

/// A hasher for values that are hashes already (FNV-1a 64): one multiply
/// spreads them over the table's bits.
#[derive(Default)]
pub(super) struct ValueHasher(u64);

impl Hasher for ValueHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(8) ^ u64::from(b)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        }
    }

    fn write_u64(&mut self, x: u64) {
        self.0 = (x ^ (x >> 29)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }
}

type Values<V> = HashMap<u64, V, BuildHasherDefault<ValueHasher>>;

/// The online prefix index (see the module documentation).
pub(super) struct Prefix {
    /// The threshold prefixes are indexed for: the least a query may take.
    threshold: f64,
    measure: Measure,
    /// The order's first key: how many held sets held each value when it
    /// was made, for the values held by two or more.
    frequency: Values<u32>,
    /// For each indexed value, `(slot, place of the value in its set's order)`.
    lists: Values<Vec<(u32, u32)>>,
    slots: Vec<Option<Arc<Held>>>,
    /// The size of each slot's set (read for the length filter without
    /// going to the set).
    sizes: Vec<u32>,
    /// Ids holding each slot's set.
    members: Vec<Vec<u64>>,
    free: Vec<u32>,
    /// The slot of the empty set, when an id holds it.
    empty: Option<u32>,
    /// `(slot, place)` entries in `lists`, for [`Prefix::bytes`].
    entries: usize,
    /// Sets in slots.
    live: usize,
    /// The order is made again when `live` passes this.
    reorder_at: usize,
    /// Slots inserted since the last [`Prefix::settle`], not in the lists yet.
    pending: Vec<u32>,
}

impl Prefix {
    pub(super) fn new(threshold: f64, measure: Measure) -> Prefix {
        Prefix {
            threshold,
            measure,
            frequency: Values::default(),
            lists: Values::default(),
            slots: Vec::new(),
            sizes: Vec::new(),
            members: Vec::new(),
            free: Vec::new(),
            empty: None,
            entries: 0,
            live: 0,
            reorder_at: REORDER_FROM,
            pending: Vec::new(),
        }
    }

    /// Makes the order from the first `n` held sets on (tests: small `n`).
    #[cfg(test)]
    pub(super) fn reorder_from(&mut self, n: usize) {
        self.reorder_at = n;
    }

    /// How many of a set of `n` values' first values a query at `t`, or a
    /// stored set at the index's threshold, must show: `n - ceil(t n) + 1`.
    fn prefix_len(n: usize, t: f64) -> usize {
        indexed_len(n, t, Measure::Jaccard)
    }

    /// How many of a stored set's first values are indexed.
    fn indexed(&self, n: usize) -> usize {
        match self.measure {
            Measure::Jaccard => Self::prefix_len(n, self.threshold),
            Measure::Containment => n,
        }
    }

    /// The first `first` values of `set` in the order (all of them sorted
    /// when `first` is its size), in order.
    fn ordered(&self, set: &[u64], first: usize) -> Vec<u64> {
        let mut keyed: Vec<(u32, u64)> = set.iter().map(|&v| (self.frequency.get(&v).copied().unwrap_or(0), v)).collect();
        if first < keyed.len() {
            if first == 0 {
                return Vec::new();
            }
            keyed.select_nth_unstable(first - 1);
            keyed.truncate(first);
        }
        keyed.sort_unstable();
        keyed.into_iter().map(|(_, v)| v).collect()
    }

    /// Distinct sets held (in slots).
    pub(super) fn len(&self) -> usize {
        self.live
    }

    /// The slot for a new distinct held set (given to [`Prefix::insert`]).
    pub(super) fn next_slot(&self) -> u32 {
        self.free.last().copied().unwrap_or(self.slots.len() as u32)
    }

    /// Takes a new distinct held set into the slot [`Prefix::next_slot`]
    /// gave; it is in the lists once [`Prefix::settle`] has run (before
    /// any query: every call that inserts settles at its end).
    pub(super) fn insert(&mut self, held: &Arc<Held>) {
        let slot = held.slot;
        debug_assert_eq!(slot, self.next_slot());
        if self.free.last() == Some(&slot) {
            self.free.pop();
            self.slots[slot as usize] = Some(Arc::clone(held));
            self.sizes[slot as usize] = held.set.len() as u32;
        } else {
            self.slots.push(Some(Arc::clone(held)));
            self.sizes.push(held.set.len() as u32);
            self.members.push(Vec::new());
        }
        self.live += 1;
        if held.set.is_empty() {
            self.empty = Some(slot);
        }
        self.pending.push(slot);
    }

    /// Puts the indexed values of the sets in `slots` into the lists: each
    /// set's first values in the order found on all threads, then filed.
    fn index(&mut self, slots: &[u32]) {
        let firsts: Vec<(u32, Vec<u64>)> = slots
            .par_iter()
            .with_min_len(64)
            .filter_map(|&slot| self.slots[slot as usize].as_ref().map(|h| (slot, self.ordered(&h.set, self.indexed(h.set.len())))))
            .collect();
        for (slot, first) in firsts {
            for (place, &v) in first.iter().enumerate() {
                self.lists.entry(v).or_default().push((slot, place as u32));
            }
            self.entries += first.len();
        }
    }

    /// After the sets of a call are in: the new ones indexed, or the order
    /// made again (and every list rebuilt) when the held sets have doubled
    /// since it was last.
    pub(super) fn settle(&mut self) {
        let pending = std::mem::take(&mut self.pending);
        if self.live < self.reorder_at {
            self.index(&pending);
            return;
        }
        self.reorder_at = self.live.saturating_mul(2);
        let held: Vec<&[u64]> = self.slots.iter().flatten().map(|h| &h.set[..]).collect();
        let all = crate::tables::radix::par_sort_parts(&held);
        let mut frequency = Values::default();
        let mut i = 0;
        while i < all.len() {
            let j = i + all[i..].iter().take_while(|&&v| v == all[i]).count();
            if j - i > 1 {
                frequency.insert(all[i], (j - i).min(u32::MAX as usize) as u32);
            }
            i = j;
        }
        drop(all);
        self.frequency = frequency;
        self.lists = Values::default();
        self.entries = 0;
        let every: Vec<u32> = (0..self.slots.len() as u32).collect();
        self.index(&every);
    }

    /// `id` now holds the set in `slot`.
    pub(super) fn join(&mut self, slot: u32, id: u64) {
        self.members[slot as usize].push(id);
    }

    /// Each `(slot, id)`: the id no longer holds the slot's set.
    pub(super) fn leave(&mut self, gone: &[(u32, u64)]) {
        let mut by_slot: HashMap<u32, HashSet<u64>> = HashMap::new();
        for &(slot, id) in gone {
            by_slot.entry(slot).or_default().insert(id);
        }
        for (slot, ids) in by_slot {
            self.members[slot as usize].retain(|id| !ids.contains(id));
        }
    }

    /// Drops the slots of sets no id holds any more: their values leave the
    /// lists (each list touched once however many of its sets go).
    pub(super) fn drop_slots(&mut self, slots: &[u32]) {
        debug_assert!(self.pending.is_empty(), "settled before any removal");
        let dead: HashSet<u32> = slots.iter().copied().collect();
        let mut values: Vec<u64> = Vec::new();
        for &slot in slots {
            let Some(held) = self.slots[slot as usize].take() else { continue };
            debug_assert!(self.members[slot as usize].is_empty());
            let first = self.ordered(&held.set, self.indexed(held.set.len()));
            self.entries -= first.len();
            values.extend(first);
            if self.empty == Some(slot) {
                self.empty = None;
            }
            self.members[slot as usize] = Vec::new();
            self.sizes[slot as usize] = 0;
            self.free.push(slot);
            self.live -= 1;
        }
        values.sort_unstable();
        values.dedup();
        for v in values {
            if let Some(list) = self.lists.get_mut(&v) {
                list.retain(|e| !dead.contains(&e.0));
                if list.is_empty() {
                    self.lists.remove(&v);
                }
            }
        }
    }

    /// The held sets that may be at least `t` alike `query` (`t` at least
    /// the index's threshold), each once, with the ids holding each; every
    /// set that is alike is among them. `seen` is scratch space (any
    /// contents; left empty).
    pub(super) fn candidates(&self, query: &[u64], t: f64, seen: &mut Vec<u32>) -> Vec<(&Arc<Held>, &[u64])> {
        debug_assert!(t >= self.threshold);
        seen.clear();
        let nq = query.len();
        if nq == 0 {
            seen.extend(self.empty);
        } else {
            let probe = Self::prefix_len(nq, t);
            // The length filter of Jaccard, with the slack of the prefixes'
            // rounding: a partner of `n` values has `t n <= nq <= n / t`.
            let (least, most) = match self.measure {
                Measure::Jaccard => {
                    let slack = 1e-7 * (1.0 + nq as f64);
                    ((t * nq as f64 - slack).floor().max(1.0) as usize, ((nq as f64 + slack) / t).ceil() as usize)
                }
                Measure::Containment => (1, usize::MAX),
            };
            let read = match self.measure {
                Measure::Jaccard => probe,
                Measure::Containment => nq,
            };
            for (i, v) in self.ordered(query, read).iter().enumerate() {
                let Some(list) = self.lists.get(v) else { continue };
                for &(slot, place) in list {
                    let ny = self.sizes[slot as usize] as usize;
                    if ny < least || ny > most {
                        continue;
                    }
                    // Past the query's prefix (containment only): a smaller
                    // partner whose own prefix holds the value.
                    if i >= probe && (ny >= nq || place as usize >= Self::prefix_len(ny, self.threshold)) {
                        continue;
                    }
                    seen.push(slot);
                }
            }
            seen.sort_unstable();
            seen.dedup();
        }
        let out = seen.iter().filter_map(|&s| self.slots[s as usize].as_ref().map(|h| (h, &self.members[s as usize][..]))).collect();
        seen.clear();
        out
    }

    /// Whether nothing is indexed (every slot free, every list gone).
    #[cfg(test)]
    pub(super) fn is_clear(&self) -> bool {
        self.lists.is_empty()
            && self.pending.is_empty()
            && self.entries == 0
            && self.live == 0
            && self.empty.is_none()
            && self.slots.iter().all(Option::is_none)
            && self.members.iter().all(Vec::is_empty)
    }

    /// Bytes held beside the sets: the order's frequencies, the lists, the
    /// slots and their members.
    pub(super) fn bytes(&self) -> usize {
        let members: usize = self.members.iter().map(|m| m.capacity() * 8 + std::mem::size_of::<Vec<u64>>()).sum();
        self.frequency.capacity() * 13
            + self.entries * 8
            + self.lists.capacity() * (8 + std::mem::size_of::<Vec<(u32, u32)>>() + 1)
            + self.slots.capacity() * 12
            + members
    }
}
