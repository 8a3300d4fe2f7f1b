//! The exact set-similarity join: every pair of sets at least a threshold
//! alike, without comparing all pairs and without the misses of simhash
//! candidates (recall 1 by construction).
//!
//! The prefix-filter join of AllPairs and PPJoin (Bayardo, Ma, Srikant,
//! WWW 2007; Xiao, Wang, Lin, Yu, WWW 2008), on the sets' FNV-1a 64 hashes:
//!
//! 1. **Token order.** Any order of the values, the same for every set,
//!    gives the right answer; rare values first gives few candidates. The
//!    order here is by a rarity class of each value's count in a sketch
//!    (a saturating `u16` a slot, the slot a hash's top bits, a slot per 4
//!    to 8 values, counted on the threads, each over a range of slots),
//!    then by hash (`Order`). Values sharing a slot only look commoner
//!    than they are, which costs a few more candidates, never an answer;
//!    a count of one is exact: that value is in no other set (a set's
//!    *own* value) and matches nothing. On the quality corpus (13,000
//!    documents, 5.3 M values) the partners this order can probe are 0.3
//!    to 7 % more than with exact document frequencies (thresholds 0.5 to
//!    0.9), and ordering takes less than half the time that counting them
//!    exactly (values scattered to buckets, a hash table a bucket) took.
//! 2. **Labels.** Each value is relabelled so that labels sort in the
//!    order: the slot's bits replaced by the slot's number in (class,
//!    slot) order, one to one. Each set becomes its shared values' labels,
//!    ascending, and a count of its own values (`Ranked`); a merge of two
//!    sets by label finds their common values.
//! 3. **Copies.** Sets equal value by value form a group, joined once: a
//!    thousand copies of a page cost one set in the join, and their
//!    `c (c - 1) / 2` pairs are listed from the groups (output size).
//! 4. **Prefix index.** Sets are taken by size, smallest first. Two sets
//!    with an overlap of at least `o` share a value within the first
//!    `|x| - o + 1` values of each in the order. For Jaccard,
//!    `|x ∩ y| >= t |y|` for the larger `y`, so each set's first `|y| -
//!    ceil(t |y|) + 1` values are indexed; for containment the larger set's
//!    partner may be tiny, so all of it is (`Indexed`).
//! 5. **Probe.** Each set `x` (on rayon threads) reads the lists of its
//!    first `|x| - o_min + 1` values, `o_min` the least overlap a partner at
//!    least its size needs, over the sets after it in size order only, and
//!    only those not too large (`|y| <= |x| / t` for Jaccard, the length
//!    filter). The positional filter drops a partner as soon as the common
//!    values counted so far and those that could still come fall short of
//!    the pair's overlap.
//! 6. **Verification.** Each surviving partner is merged with `x` by label
//!    from just after the last common value the probe counted (every one
//!    before it was counted, none after), stopping once the overlap can no
//!    longer be reached; the similarity is computed as
//!    [`super::similarity`] computes it, in `f64`, and kept when it is at
//!    least the threshold.
//!
//! Memory beside the sets: the sketch and the slots' numbers (6 bytes a
//! slot, under 1.5 bytes a value), then 8 bytes a value of every set (the
//! shared values' labels, written where the set's values would lie), 20
//! bytes an indexed one while the prefixes are grouped and 12 in the
//! posting lists.

use rayon::prelude::*;

use super::overlap::overlap_at_least;
use super::Measure;
use crate::job::Control;
use crate::Result;

/// Marks a partner the positional filter has ruled out.
const PRUNED: u32 = u32::MAX;

/// The least overlap `o` of sets of `nx` and `ny` values whose similarity,
/// computed as [`super::similarity`] does, is at least `t` (`nx <= ny`);
/// more than `nx` when none is.
fn need(nx: usize, ny: usize, t: f64, measure: Measure) -> usize {
    let alike = |o: usize| {
        let whole = match measure {
            Measure::Jaccard => nx + ny - o,
            Measure::Containment => nx,
        };
        o as f64 / whole as f64 >= t
    };
    // An estimate a little low, then up to the exact answer: the test is
    // monotone in the overlap.
    let guess = match measure {
        Measure::Jaccard => t * (nx + ny) as f64 / (1.0 + t),
        Measure::Containment => t * nx as f64,
    };
    let mut o = (guess.floor() as usize).saturating_sub(1).max(1).min(nx + 1);
    while o <= nx && !alike(o) {
        o += 1;
    }
    // The estimate may start above the answer only by rounding: step down.
    while o > 1 && alike(o - 1) {
        o -= 1;
    }
    o
}

/// How many of a set's first values are indexed: all for containment,
/// those before the last `ceil(t n) - 1` for Jaccard (a pair at least `t`
/// alike overlaps in at least `t` times the larger set, rounded down a hair
/// for the `f64` of the final test).
pub(crate) fn indexed_len(n: usize, t: f64, measure: Measure) -> usize {
    match measure {
        Measure::Containment => n,
        Measure::Jaccard => {
            let o = (t * n as f64 - 1e-7 * (1.0 + n as f64)).ceil().max(1.0) as usize;
            (n + 1).saturating_sub(o).min(n)
        }
    }
}

/// How many sets hold each value, nearly: a saturating `u16` a slot, the
/// slot a value's top `bits` bits. Values sharing a slot add up, so a
/// count is never below the truth; a count of one is exact.
///
/// A slot per 4 to 8 values (at least 2^10, at most 2^26): on the quality
/// corpus, twice or four times as many slots made the candidates barely
/// fewer and the join slower, its tables out of cache. Counted on the
/// threads, each a range of slots, which is a range of each set's values:
/// no two write the same count, and the counts are the same on every run.
/// Where each set's ranges begin is found once, a block of sets at a time.
fn sketch(sets: &[&[u64]]) -> (Vec<u16>, u32) {
    let total: usize = sets.iter().map(|s| s.len()).sum();
    let bits = (usize::BITS - total.leading_zeros()).saturating_sub(3).clamp(10, SLOT_BITS);
    let shift = 64 - bits;
    let ranges = (rayon::current_num_threads() * 2).next_power_of_two().min(1 << bits);
    let per = (1usize << bits) / ranges;
    let mut counts = crate::mem::zeroed::<u16>(1 << bits);
    for block in sets.chunks(1 << 14) {
        let cuts: Vec<usize> = block
            .par_iter()
            .flat_map_iter(|s| {
                let mut at = 0;
                (0..=ranges).map(move |r| {
                    at += s[at..].partition_point(|&v| ((v >> shift) as usize) < r * per);
                    at
                })
            })
            .collect();
        counts.par_chunks_mut(per).enumerate().for_each(|(r, mine)| {
            let lo = r * per;
            for (s, c) in block.iter().zip(cuts.chunks_exact(ranges + 1)) {
                for &v in &s[c[r]..c[r + 1]] {
                    let c = &mut mine[(v >> shift) as usize - lo];
                    *c = c.saturating_add(1);
                }
            }
        });
    }
    (counts, bits)
}

/// The most slot bits: a slot's new number and its class share a `u32`.
const SLOT_BITS: u32 = 26;

/// The join's order as a relabelling of the values. Each slot of the
/// sketch gets a new number, in the order of (class of its count, slot),
/// and a value's label is its hash with the top bits (its slot) replaced
/// by that number. Labels are one to one with hashes, and ordered as
/// (class, hash) orders the values: a set relabelled and sorted is the
/// set in the join's order, and two sets share a value exactly when they
/// share its label.
struct Order {
    /// For each slot, `class << SLOT_BITS | new number`.
    slots: Vec<u32>,
    shift: u32,
}

impl Order {
    fn of(sets: &[&[u64]]) -> Order {
        let (counts, bits) = sketch(sets);
        // Slots numbered by a counting sort on their class, in blocks on
        // the threads: each block's count of each class, then its start in
        // each class, then its slots numbered.
        let per = (counts.len() / (rayon::current_num_threads() * 4)).max(1 << 10);
        let tallies: Vec<[u32; CLASSES]> = counts
            .par_chunks(per)
            .map(|part| {
                let mut t = [0u32; CLASSES];
                for &c in part {
                    t[class(c) as usize] += 1;
                }
                t
            })
            .collect();
        let mut next = 0u32;
        let mut starts = vec![[0u32; CLASSES]; tallies.len()];
        for k in 0..CLASSES {
            for (b, t) in tallies.iter().enumerate() {
                starts[b][k] = next;
                next += t[k];
            }
        }
        let mut slots = crate::mem::zeroed::<u32>(counts.len());
        slots.par_chunks_mut(per).zip(counts.par_chunks(per)).zip(starts).for_each(|((out, part), mut at)| {
            for (o, &c) in out.iter_mut().zip(part) {
                let k = class(c) as usize;
                *o = (k as u32) << SLOT_BITS | at[k];
                at[k] += 1;
            }
        });
        Order { slots, shift: 64 - bits }
    }

    /// The class and label of value `v`.
    fn label(&self, v: u64) -> (usize, u64) {
        let e = self.slots[(v >> self.shift) as usize];
        let low = v & (u64::MAX >> (64 - self.shift));
        ((e >> SLOT_BITS) as usize, u64::from(e & ((1 << SLOT_BITS) - 1)) << self.shift | low)
    }
}

/// Rarity classes: a value in one set only, then counts 2 to 33 each a
/// class of their own, then one a power of two up to the count's 65,535.
const CLASSES: usize = 44;

/// The rarity class of a value counted `count` times (0 for a count of
/// one, and for the empty slots, which no value reads).
fn class(count: u16) -> u8 {
    match count {
        0..=33 => count.saturating_sub(1) as u8,
        _ => 33 + (count.ilog2() as u8 - 5),
    }
}

/// Sets in the join's order: each one's labels of its values held by
/// another set too, ascending, and how many of its values are its own (in
/// no other set: they precede the shared ones in the order and never
/// match). Set `i`'s labels start where its values would (`starts[i]`, the
/// sizes summed before it), so each set is written in place, on the
/// threads, with no copy gathered afterwards; the room of its own values is
/// left unused.
struct Ranked {
    values: Vec<u64>,
    starts: Vec<usize>,
    own: Vec<u32>,
    shared: Vec<u32>,
}

impl Ranked {
    fn of(sets: &[&[u64]], control: &Control) -> Result<Ranked> {
        let order = Order::of(sets);
        control.check()?;
        let mut starts = Vec::with_capacity(sets.len() + 1);
        starts.push(0usize);
        for s in sets {
            starts.push(starts[starts.len() - 1] + s.len());
        }
        let mut values = crate::mem::zeroed::<u64>(starts[sets.len()]);
        let mut rooms = Vec::with_capacity(sets.len());
        let mut rest = &mut values[..];
        for s in sets {
            let (room, after) = std::mem::take(&mut rest).split_at_mut(s.len());
            rooms.push(room);
            rest = after;
        }
        let counted: Vec<(u32, u32)> =
            sets.par_iter().zip(rooms).with_min_len(64).map_init(Vec::new, |labels, (s, room)| in_order(s, &order, labels, room)).collect();
        drop(order);
        control.check()?;
        let (own, shared) = counted.into_iter().unzip();
        Ok(Ranked { values, starts, own, shared })
    }

    /// Set `i`'s shared labels.
    fn get(&self, i: usize) -> &[u64] {
        &self.values[self.starts[i]..self.starts[i] + self.shared[i] as usize]
    }

    /// Set `i`'s size, its own values included.
    fn size(&self, i: usize) -> usize {
        self.starts[i + 1] - self.starts[i]
    }

    /// Set `i`'s shared labels among its first `len` values in the order.
    fn first(&self, i: usize, len: usize) -> &[u64] {
        let s = self.get(i);
        &s[..len.saturating_sub(self.own[i] as usize).min(s.len())]
    }
}

/// Writes to the start of `room` the labels of the shared values of `set`
/// (ascending hashes) in the join's order, and returns how many of its
/// values are its own and how many shared. `labels` is scratch. A set read
/// in hash order meets each class's labels ascending: a counting sort by
/// class orders it.
fn in_order(set: &[u64], order: &Order, labels: &mut Vec<(usize, u64)>, room: &mut [u64]) -> (u32, u32) {
    let mut at = [0usize; CLASSES];
    labels.clear();
    labels.extend(set.iter().map(|&v| {
        let l = order.label(v);
        at[l.0] += 1;
        l
    }));
    let own = at[0];
    let mut next = 0;
    for a in &mut at[1..] {
        let n = *a;
        *a = next;
        next += n;
    }
    for &(k, l) in labels.iter().filter(|l| l.0 > 0) {
        room[at[k]] = l;
        at[k] += 1;
    }
    (own as u32, next as u32)
}

/// The indexed prefixes: each set's first shared labels (those among its
/// first `len(|set|)` values), each as the number of its label among all
/// of theirs (a *group*: equal labels, equal groups).
struct Indexed {
    groups: Vec<u32>,
    starts: Vec<usize>,
    n_groups: usize,
}

impl Indexed {
    /// The groups, numbered by a sort of the indexed labels (each beside
    /// where it came from), then read back to where they came from.
    /// Entries are numbered in `u32`: 2^32 - 1 indexed values or more are
    /// refused ([`crate::Error::InvalidParameter`]).
    fn of(ranked: &Ranked, len: impl Fn(usize) -> usize) -> Result<Indexed> {
        let n = ranked.own.len();
        let mut starts = Vec::with_capacity(n + 1);
        starts.push(0usize);
        let total: usize = (0..n).map(|i| ranked.first(i, len(ranked.size(i))).len()).sum();
        if total as u64 >= u64::from(u32::MAX) {
            return Err(crate::Error::invalid("sets", "fewer than 2**32 - 1 indexed shingles (split the corpus)", total));
        }
        let mut keyed: Vec<(u64, u32)> = crate::mem::vec_with_capacity(total);
        for i in 0..n {
            let at = keyed.len();
            keyed.extend(ranked.first(i, len(ranked.size(i))).iter().enumerate().map(|(k, &l)| (l, (at + k) as u32)));
            starts.push(keyed.len());
        }
        keyed.par_sort_unstable_by_key(|e| e.0);
        let mut groups = crate::mem::zeroed::<u32>(keyed.len());
        let mut n_groups = 0usize;
        for (k, &(l, i)) in keyed.iter().enumerate() {
            if k == 0 || keyed[k - 1].0 != l {
                n_groups += 1;
            }
            groups[i as usize] = (n_groups - 1) as u32;
        }
        Ok(Indexed { groups, starts, n_groups })
    }

    fn get(&self, i: usize) -> &[u32] {
        &self.groups[self.starts[i]..self.starts[i + 1]]
    }
}

/// Posting lists of the indexed values: for each group, the sets (by
/// place in size order) that index it and where in their order, by place.
struct Postings {
    starts: Vec<usize>,
    entries: Vec<(u32, u32)>,
}

impl Postings {
    /// The shared values among each set's indexed prefix (its own values
    /// come first), set by set in size order.
    fn build(indexed: &Indexed, ranked: &Ranked, order: &[u32]) -> Postings {
        let n_groups = indexed.n_groups;
        let mut starts = vec![0usize; n_groups + 1];
        for &d in order {
            for &g in indexed.get(d as usize) {
                starts[g as usize + 1] += 1;
            }
        }
        for g in 1..starts.len() {
            starts[g] += starts[g - 1];
        }
        let mut fill = starts.clone();
        let mut entries = crate::mem::zeroed::<(u32, u32)>(starts[n_groups]);
        for (place, &d) in order.iter().enumerate() {
            let own = ranked.own[d as usize];
            for (j, &g) in indexed.get(d as usize).iter().enumerate() {
                entries[fill[g as usize]] = (place as u32, own + j as u32);
                fill[g as usize] += 1;
            }
        }
        Postings { starts, entries }
    }

    fn list(&self, group: u32) -> &[(u32, u32)] {
        &self.entries[self.starts[group as usize]..self.starts[group as usize + 1]]
    }
}

/// Every pair of `sets` (ascending arrays of distinct values, as
/// [`crate::Fingerprinter::shingle_set`] makes them: a set out of order
/// gives a wrong answer) whose
/// similarity under `measure` is at least `threshold`, as `lower << 32 |
/// higher` by position with the similarity as [`super::similarity`]
/// gives it, rounded to `f32`; ascending. Two empty sets are alike (1).
///
/// # Errors
/// [`crate::Error::InvalidParameter`] for a threshold outside `(0, 1]`, or
/// 2^32 - 1 sets or indexed values or more; [`crate::Error::Interrupted`]
/// when `control` is cancelled.
pub fn self_join<S: AsRef<[u64]> + Sync>(sets: &[S], threshold: f64, measure: Measure, control: &Control) -> Result<Vec<(u64, f32)>> {
    super::check_threshold(threshold)?;
    debug_assert!(sets.iter().all(|s| s.as_ref().windows(2).all(|w| w[0] < w[1])), "sets ascend");
    if sets.len() as u64 >= u64::from(u32::MAX) {
        return Err(crate::Error::invalid("sets", "fewer than 2**32 - 1", sets.len()));
    }
    let first = super::verify::first_equal(sets);
    let reps: Vec<u32> = (0..sets.len() as u32).filter(|&i| first[i as usize] == i && !sets[i as usize].as_ref().is_empty()).collect();
    let rep_sets: Vec<&S> = reps.iter().map(|&r| &sets[r as usize]).collect();
    let mut found = join_distinct(&rep_sets, threshold, measure, control)?;
    for p in &mut found {
        let (a, b) = (reps[(p.0 >> 32) as usize], reps[p.0 as u32 as usize]);
        p.0 = u64::from(a.min(b)) << 32 | u64::from(a.max(b));
    }
    let mut out = expand_groups(found, &first);
    out.par_sort_unstable_by_key(|&(p, _)| p);
    Ok(out)
}

/// The greedy dedup of distinct sets, Jaccard only, in their order: each
/// set is dropped when it is at least `threshold` alike a set kept before
/// it, matched to the earliest such (its place and their similarity, as
/// [`self_join`] gives it); `None` for a kept set.
///
/// Unlike a dedup of [`self_join`]'s pairs, only kept sets are indexed and
/// only they are checked: a dense cluster of near copies costs one check a
/// member against the few kept, never the square of the cluster. The
/// filter is the prefix filter in the join's order, whatever the sizes
/// (two sets at least `t` alike share a value within the first `|x| -
/// ceil(t |x|) + 1` of each), with the length filter; one set at a time, as
/// a greedy dedup must go.
///
/// # Errors
/// As [`self_join`].
pub fn dedup_distinct<S: AsRef<[u64]> + Sync>(sets: &[S], threshold: f64, control: &Control) -> Result<Vec<Option<(u32, f32)>>> {
    super::check_threshold(threshold)?;
    if sets.len() as u64 >= u64::from(u32::MAX) {
        return Err(crate::Error::invalid("sets", "fewer than 2**32 - 1", sets.len()));
    }
    let t = threshold;
    let parts: Vec<&[u64]> = sets.iter().map(|s| s.as_ref()).collect();
    let mut out = vec![None; sets.len()];
    if sets.len() < 2 {
        return Ok(out);
    }
    let ranked = Ranked::of(&parts, control)?;
    let indexed = Indexed::of(&ranked, |n| indexed_len(n, t, Measure::Jaccard))?;
    control.check()?;
    // The kept sets that index each group, in the order kept.
    let mut lists: Vec<Vec<u32>> = vec![Vec::new(); indexed.n_groups];
    let (mut seen, mut touched): (Vec<bool>, Vec<u32>) = (vec![false; sets.len()], Vec::new());
    for (dx, slot) in out.iter_mut().enumerate() {
        if dx % 4096 == 0 {
            control.check()?;
        }
        let (x, nx) = (ranked.get(dx), parts[dx].len());
        // Its prefix's shared values (its own ones come first and match nothing).
        let prefix = indexed.get(dx);
        for &g in prefix {
            for &dy in &lists[g as usize] {
                if !std::mem::replace(&mut seen[dy as usize], true) {
                    touched.push(dy);
                }
            }
        }
        // The earliest kept set alike, by a merge each, the length filter first.
        touched.sort_unstable();
        let found = touched.iter().find_map(|&dy| {
            let (y, ny) = (ranked.get(dy as usize), parts[dy as usize].len());
            let o = need(nx.min(ny), nx.max(ny), t, Measure::Jaccard);
            if o > nx.min(ny) {
                return None;
            }
            let common = overlap_at_least(x, y, o)?;
            let s = common as f64 / (nx + ny - common) as f64;
            (s >= t).then_some((dy, s as f32))
        });
        for &dy in &touched {
            seen[dy as usize] = false;
        }
        touched.clear();
        match found {
            Some(m) => *slot = Some(m),
            None => {
                for &g in prefix {
                    lists[g as usize].push(dx as u32);
                }
            }
        }
        control.advance(1);
    }
    Ok(out)
}

/// The pairs of distinct, non-empty sets, by place in `sets`, in no order.
fn join_distinct<S: AsRef<[u64]> + Sync>(sets: &[&S], t: f64, measure: Measure, control: &Control) -> Result<Vec<(u64, f32)>> {
    if sets.len() < 2 {
        return Ok(Vec::new());
    }
    let parts: Vec<&[u64]> = sets.iter().map(|s| s.as_ref()).collect();
    let ranked = Ranked::of(&parts, control)?;
    let indexed = Indexed::of(&ranked, |n| indexed_len(n, t, measure))?;
    // Size order, smallest first, ties by place; a set with no shared value
    // among its indexed ones (nor, then, among those it probes) is alike no
    // other (thresholds are above 0) and is left out.
    let mut order: Vec<u32> = (0..sets.len() as u32).filter(|&d| !indexed.get(d as usize).is_empty()).collect();
    order.sort_by_key(|&d| (parts[d as usize].len(), d));
    let lens: Vec<usize> = order.iter().map(|&d| parts[d as usize].len()).collect();
    let postings = Postings::build(&indexed, &ranked, &order);
    control.check()?;
    let n = order.len();
    let chunk = (n / (rayon::current_num_threads() * 16)).clamp(64, 1 << 14);
    let places: Vec<usize> = (0..n).collect();
    let found: Result<Vec<Vec<(u64, f32)>>> = places
        .par_chunks(chunk)
        .map_init(
            || (vec![[0u32; 4]; n], Vec::new()),
            |(partners, touched), part| {
                control.check()?;
                let mut out = Vec::new();
                for &px in part {
                    probe(
                        px,
                        &Probe { order: &order, lens: &lens, ranked: &ranked, indexed: &indexed, postings: &postings, t, measure },
                        partners,
                        touched,
                        &mut out,
                    );
                }
                control.advance(part.len() as u64);
                Ok(out)
            },
        )
        .collect();
    control.advance((sets.len() - n) as u64);
    Ok(found?.concat())
}

/// What the probe of one set has found of a partner so far: the common
/// values counted, the overlap the pair needs, and where in each set the
/// last common value is (the verification resumes after it). An array of
/// `u32`, not a struct, so that a thread's `vec![[0; 4]; n]` is memory the
/// system zeroes when first touched, not `n` writes.
type Partner = [u32; 4];
const COUNT: usize = 0;
const NEED: usize = 1;
const AT_X: usize = 2;
const AT_Y: usize = 3;

/// What every probe reads: the sets in size order, in the join's order,
/// their indexed prefixes and postings.
struct Probe<'a> {
    order: &'a [u32],
    lens: &'a [usize],
    ranked: &'a Ranked,
    indexed: &'a Indexed,
    postings: &'a Postings,
    t: f64,
    measure: Measure,
}

/// The partners of the set at place `px` in size order (after it, and not
/// too large) at least `t` alike, into `out` as `set << 32 | partner`.
/// `partners` is all zero on entry and left so; `touched` empty.
fn probe(px: usize, p: &Probe<'_>, partners: &mut [Partner], touched: &mut Vec<u32>, out: &mut Vec<(u64, f32)>) {
    let (t, measure, n) = (p.t, p.measure, p.order.len());
    let (dx, nx) = (p.order[px] as usize, p.lens[px]);
    let (x, own_x) = (p.ranked.get(dx), p.ranked.own[dx] as usize);
    let o_min = need(nx, nx, t, measure);
    if o_min > nx {
        return;
    }
    // The length filter: partners after x in size order, not too large.
    let end = match measure {
        Measure::Containment => n,
        Measure::Jaccard => {
            let most = (nx as f64 / t * (1.0 + 1e-9)).floor() as usize + 1;
            px + 1 + p.lens[px + 1..].partition_point(|&l| l <= most)
        }
    };
    if end <= px + 1 {
        return;
    }
    // x's probe prefix: its first nx - o_min + 1 values, own ones first;
    // no longer than its indexed prefix, as o_min is at least t nx.
    let groups = p.indexed.get(dx);
    let prefix = (nx + 1 - o_min).saturating_sub(own_x).min(groups.len());
    for (k, &g) in groups[..prefix].iter().enumerate() {
        let i = own_x + k;
        let list = p.postings.list(g);
        let from = list.partition_point(|&(q, _)| q as usize <= px);
        for &(py, j) in &list[from..] {
            let py = py as usize;
            if py >= end {
                break;
            }
            let c = &mut partners[py];
            if c[COUNT] == PRUNED {
                continue;
            }
            let ny = p.lens[py];
            if c[COUNT] == 0 {
                touched.push(py as u32);
                c[NEED] = need(nx, ny, t, measure) as u32;
            }
            // The positional filter: the common values so far and those
            // that could still come fall short of the overlap needed.
            if c[COUNT] as usize + 1 + (nx - i - 1).min(ny - j as usize - 1) < c[NEED] as usize {
                c[COUNT] = PRUNED;
            } else {
                *c = [c[COUNT] + 1, c[NEED], k as u32, j];
            }
        }
    }
    for &py in touched.iter() {
        let py = py as usize;
        let c = std::mem::take(&mut partners[py]);
        if c[COUNT] == PRUNED {
            continue;
        }
        let dy = p.order[py] as usize;
        let ny = p.lens[py];
        // Every common value up to the last one counted was counted (both
        // sets ascend in the order), and none after it: the merge resumes
        // there. Own values never match.
        let y = p.ranked.get(dy);
        let from_y = c[AT_Y] as usize - p.ranked.own[dy] as usize + 1;
        let rest = (c[NEED] as usize).saturating_sub(c[COUNT] as usize);
        if let Some(more) = overlap_at_least(&x[c[AT_X] as usize + 1..], &y[from_y..], rest) {
            let common = c[COUNT] as usize + more;
            let whole = match measure {
                Measure::Jaccard => nx + ny - common,
                Measure::Containment => nx,
            };
            let s = common as f64 / whole as f64;
            if s >= t {
                out.push((u64::from(p.order[px]) << 32 | u64::from(p.order[py]), s as f32));
            }
        }
    }
    touched.clear();
}

/// The pairs of the first sets of groups of equal sets made whole: each
/// pair of groups gives every pair of their members, and each group its
/// own pairs (similarity 1).
fn expand_groups(found: Vec<(u64, f32)>, first: &[u32]) -> Vec<(u64, f32)> {
    let mut members: std::collections::HashMap<u32, Vec<u32>> = std::collections::HashMap::new();
    for (i, &f) in first.iter().enumerate() {
        if f as usize != i {
            members.entry(f).or_insert_with(|| vec![f]).push(i as u32);
        }
    }
    if members.is_empty() {
        return found;
    }
    let group = |r: u32| members.get(&r).map_or_else(|| vec![r], |m| m.clone());
    let mut out = Vec::with_capacity(found.len());
    for (p, s) in found {
        let (ga, gb) = (group((p >> 32) as u32), group(p as u32));
        for &a in &ga {
            for &b in &gb {
                out.push((u64::from(a.min(b)) << 32 | u64::from(a.max(b)), s));
            }
        }
    }
    for m in members.values() {
        for (k, &a) in m.iter().enumerate() {
            for &b in &m[k + 1..] {
                out.push((u64::from(a.min(b)) << 32 | u64::from(a.max(b)), 1.0));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests;
