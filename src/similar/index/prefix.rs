//! The online prefix index of an exact [`SimilarIndex`](super::SimilarIndex):
//! every stored set at least the threshold alike a query is found (recall 1
//! by construction), with no candidates from fingerprints.
//!
//! The prefix filter (AllPairs, PPJoin) needs a total order of the values
//! that every set is read in. The batch join ([`crate::similar::exact`])
//! ranks values by document frequency, which an index that takes texts one
//! call at a time cannot know ahead; here the order is the values
//! themselves, the ascending FNV-1a 64 hashes the sets are already sorted
//! by. Any fixed total order keeps the filter correct, since its argument
//! uses the order only to name "the first values" of each set:
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
//! Rounding: prefix lengths come from [`exact::indexed_len`], which rounds
//! `ceil(t n)` down a hair, so a pair that passes the final `f64` test is
//! never left out by the filter. A Jaccard partner must also be of a size
//! within `[t |x|, |x| / t]` (the length filter, with the same slack). Each
//! candidate is verified as the simhash candidates are ([`super::Held::alike`]),
//! so both modes report the same similarities.
//!
//! Hash order puts frequent values (a language's commonest shingles) into
//! prefixes as often as rare ones, so lists are longer than under the
//! batch join's order; a query's work grows with how common its prefix's
//! values are in the index, never its answer.
//!
//! Invariants: each distinct held set has one slot while an id holds it;
//! `lists` holds `(slot, place)` for exactly the indexed values of the sets
//! in slots; `members[slot]` lists the ids holding that slot's set; the
//! empty set (alike only another empty set) is in no list and is found by
//! `empty`.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use super::Held;
use crate::similar::exact::indexed_len;
use crate::similar::Measure;

/// The online prefix index (see the module documentation).
pub(super) struct Prefix {
    /// The threshold prefixes are indexed for: the least a query may take.
    threshold: f64,
    measure: Measure,
    /// For each indexed value, `(slot, place of the value in its set)`.
    lists: HashMap<u64, Vec<(u32, u32)>>,
    slots: Vec<Option<Arc<Held>>>,
    /// Ids holding each slot's set.
    members: Vec<Vec<u64>>,
    free: Vec<u32>,
    /// The slot of the empty set, when an id holds it.
    empty: Option<u32>,
    /// `(slot, place)` entries in `lists`, for [`Prefix::bytes`].
    entries: usize,
}

impl Prefix {
    pub(super) fn new(threshold: f64, measure: Measure) -> Prefix {
        Prefix { threshold, measure, lists: HashMap::new(), slots: Vec::new(), members: Vec::new(), free: Vec::new(), empty: None, entries: 0 }
    }

    /// How many of a set of `n` values' first values a query at `t`, or a
    /// stored set at the index's threshold, must show: `n - ceil(t n) + 1`.
    fn prefix_len(n: usize, t: f64) -> usize {
        indexed_len(n, t, Measure::Jaccard)
    }

    /// The slot for a new distinct held set (given to [`Prefix::insert`]).
    pub(super) fn next_slot(&self) -> u32 {
        self.free.last().copied().unwrap_or(self.slots.len() as u32)
    }

    /// Indexes a new distinct held set in the slot [`Prefix::next_slot`] gave.
    pub(super) fn insert(&mut self, held: &Arc<Held>) {
        let slot = held.slot;
        debug_assert_eq!(slot, self.next_slot());
        if self.free.last() == Some(&slot) {
            self.free.pop();
            self.slots[slot as usize] = Some(Arc::clone(held));
        } else {
            self.slots.push(Some(Arc::clone(held)));
            self.members.push(Vec::new());
        }
        let set = &held.set;
        if set.is_empty() {
            self.empty = Some(slot);
        }
        let indexed = match self.measure {
            Measure::Jaccard => Self::prefix_len(set.len(), self.threshold),
            Measure::Containment => set.len(),
        };
        for (place, &v) in set[..indexed].iter().enumerate() {
            self.lists.entry(v).or_default().push((slot, place as u32));
        }
        self.entries += indexed;
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
        let dead: HashSet<u32> = slots.iter().copied().collect();
        let mut values: Vec<u64> = Vec::new();
        for &slot in slots {
            let Some(held) = self.slots[slot as usize].take() else { continue };
            debug_assert!(self.members[slot as usize].is_empty());
            let indexed = match self.measure {
                Measure::Jaccard => Self::prefix_len(held.set.len(), self.threshold),
                Measure::Containment => held.set.len(),
            };
            values.extend_from_slice(&held.set[..indexed]);
            self.entries -= indexed;
            if self.empty == Some(slot) {
                self.empty = None;
            }
            self.members[slot as usize] = Vec::new();
            self.free.push(slot);
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
    /// set that is alike is among them.
    pub(super) fn candidates(&self, query: &[u64], t: f64) -> Vec<(&Arc<Held>, &[u64])> {
        debug_assert!(t >= self.threshold);
        let mut slots: Vec<u32> = Vec::new();
        let nq = query.len();
        if nq == 0 {
            slots.extend(self.empty);
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
            for (i, v) in query.iter().enumerate() {
                if i >= probe && self.measure == Measure::Jaccard {
                    break;
                }
                let Some(list) = self.lists.get(v) else { continue };
                for &(slot, place) in list {
                    let Some(held) = &self.slots[slot as usize] else { continue };
                    let ny = held.set.len();
                    if ny < least || ny > most {
                        continue;
                    }
                    // Past the query's prefix (containment only): a smaller
                    // partner whose own prefix holds the value.
                    if i >= probe && (ny >= nq || place as usize >= Self::prefix_len(ny, self.threshold)) {
                        continue;
                    }
                    slots.push(slot);
                }
            }
            slots.sort_unstable();
            slots.dedup();
        }
        slots.into_iter().filter_map(|s| self.slots[s as usize].as_ref().map(|h| (h, &self.members[s as usize][..]))).collect()
    }

    /// Whether nothing is indexed (every slot free, every list gone).
    #[cfg(test)]
    pub(super) fn is_clear(&self) -> bool {
        self.lists.is_empty() && self.entries == 0 && self.empty.is_none() && self.slots.iter().all(Option::is_none) && self.members.iter().all(Vec::is_empty)
    }

    /// Bytes held beside the sets: the lists, the slots and their members.
    pub(super) fn bytes(&self) -> usize {
        let members: usize = self.members.iter().map(|m| m.capacity() * 8 + std::mem::size_of::<Vec<u64>>()).sum();
        self.entries * 8 + self.lists.capacity() * (8 + std::mem::size_of::<Vec<(u32, u32)>>() + 1) + self.slots.capacity() * 8 + members
    }
}
