//! The exact set-similarity join: every pair of sets at least a threshold
//! alike, without comparing all pairs and without the misses of simhash
//! candidates (recall 1 by construction).
//!
//! The prefix-filter join of AllPairs and PPJoin (Bayardo, Ma, Srikant,
//! WWW 2007; Xiao, Wang, Lin, Yu, WWW 2008), on the sets' FNV-1a 64 hashes:
//!
//! 1. **Token order.** Every distinct hash is counted over the sets
//!    (scattered by its top bits and counted bucket by bucket in a table
//!    that stays in cache), and ordered rarest first by a rarity class of
//!    its document frequency, then by a fixed order within the class, so
//!    the work is the same on every run. Each set becomes an ascending
//!    array of `u32` ranks ([`rank`]).
//! 2. **Copies.** Sets equal value by value form a group, joined once: a
//!    thousand copies of a page cost one set in the join, and their
//!    `c (c - 1) / 2` pairs are listed from the groups (output size).
//! 3. **Prefix index.** Sets are taken by size, smallest first. Two sets
//!    with an overlap of at least `o` share a value within the first
//!    `|x| - o + 1` ranks of each. For Jaccard, `|x ∩ y| >= t |y|` for the
//!    larger `y`, so each set's first `|y| - ceil(t |y|) + 1` ranks are
//!    indexed; for containment the larger set's partner may be tiny, so all
//!    of it is. Values held by one set only match nothing: they rank first
//!    and are only counted (a set of them alone is left out of the join).
//! 4. **Probe.** Each set `x` (on rayon threads) reads the lists of its
//!    first `|x| - o_min + 1` ranks, `o_min` the least overlap a partner at
//!    least its size needs, over the sets after it in size order only, and
//!    only those not too large (`|y| <= |x| / t` for Jaccard, the length
//!    filter). The positional filter drops a partner as soon as the common
//!    values counted so far and those that could still come fall short of
//!    the pair's overlap.
//! 5. **Verification.** Each surviving partner is merged with `x` by rank
//!    from just after the last common value the probe counted (every one
//!    before it was counted, none after), stopping once the overlap can no
//!    longer be reached; the similarity is
//!    computed as [`super::similarity`] computes it, in `f64`, and kept
//!    when it is at least the threshold.
//!
//! Memory beside the sets: 12 bytes a value while ranking (the hashes
//! scattered, and which shared value each is), then 4 bytes a value held
//! by two sets or more (its rank in each set) and 8 bytes an indexed one.

use std::sync::atomic::AtomicU32;
use std::sync::atomic::Ordering::Relaxed;

use rayon::prelude::*;

use super::Measure;
use crate::job::Control;
use crate::Result;

/// Marks a partner the positional filter has ruled out.
const PRUNED: u32 = u32::MAX;

/// Sets as ascending arrays of the ranks of their shared values (those in
/// two sets or more), one flat array, and how many values of each set are
/// its own (in no other set: they precede the shared ones in the order and
/// never match).
struct Ranked {
    values: Vec<u32>,
    starts: Vec<usize>,
    own: Vec<u32>,
}

impl Ranked {
    /// Set `i`'s shared ranks.
    fn get(&self, i: usize) -> &[u32] {
        &self.values[self.starts[i]..self.starts[i + 1]]
    }

    /// Set `i`'s size, its own values included.
    fn size(&self, i: usize) -> usize {
        self.own[i] as usize + self.starts[i + 1] - self.starts[i]
    }
}

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

/// How many of a set's first ranks are indexed: all for containment, those
/// before the last `ceil(t n) - 1` for Jaccard (a pair at least `t` alike
/// overlaps in at least `t` times the larger set, rounded down a hair for
/// the `f64` of the final test).
pub(crate) fn indexed_len(n: usize, t: f64, measure: Measure) -> usize {
    match measure {
        Measure::Containment => n,
        Measure::Jaccard => {
            let o = (t * n as f64 - 1e-7 * (1.0 + n as f64)).ceil().max(1.0) as usize;
            (n + 1).saturating_sub(o).min(n)
        }
    }
}

/// The ranks of each set: the values in two sets or more in a fixed order,
/// rarest first, each set's ranks ascending, and the count of its values in
/// no other set.
///
/// The order is by rarity class (the number of sets holding a value, exact
/// up to 33, then by powers of two: what the prefix filter needs of it is
/// that the rare values come first), then by the top bits of the hash, then
/// by the first set holding the value: a fixed order, so the work is the
/// same on every run, and any order gives the same answer.
///
/// No global sort of the values and no lookup of each value's rank: the
/// values are scattered into buckets by their top bits (each block of sets
/// into buckets of its own, so the threads write apart), each bucket's
/// values are counted in a small hash table that stays in cache (which also
/// notes, for each value met, which distinct value it is), the few distinct
/// shared values are ranked by one counting sort on their class, and each
/// block then walks its sets in the scatter's own order to read every
/// value's rank back from where it was scattered. A set, read in hash
/// order, meets the values of each class in rank order (but for values
/// sharing a bucket): a counting sort by class and an insertion pass order
/// it.
fn rank<S: AsRef<[u64]> + Sync>(sets: &[&S], control: &Control) -> Result<Ranked> {
    let parts: Vec<&[u64]> = sets.iter().map(|s| s.as_ref()).collect();
    let total: usize = parts.iter().map(|p| p.len()).sum();
    // Buckets of about 256 values: a bucket's table (16 bytes a slot, twice
    // its values) is 8 KiB, in L1.
    let bits = (usize::BITS - (total / 256).leading_zeros()).clamp(1, 16);
    let blocks = scatter_blocks(&parts, bits);
    control.check()?;
    // Bucket by bucket, in groups on the threads: each group's shared
    // values' counts in the order met, and which of them each value
    // scattered is (its place among them, or NOT_SHARED).
    let groups = (rayon::current_num_threads() * 8).min(1 << bits);
    let per = (1usize << bits).div_ceil(groups);
    let counted: Vec<Vec<u32>> = (0..groups).into_par_iter().map(|g| count_buckets(&blocks, g * per..((g + 1) * per).min(1 << bits))).collect();
    control.check()?;
    // Ranks by (class, order met): a counting sort by class over the
    // groups in bucket order. `first[g]` is group g's first shared value's
    // number among all of them.
    let mut first = Vec::with_capacity(groups + 1);
    first.push(0usize);
    for c in &counted {
        first.push(first[first.len() - 1] + c.len());
    }
    let mut class_starts = [0u32; CLASSES + 1];
    for &c in counted.iter().flatten() {
        class_starts[class(c) + 1] += 1;
    }
    for c in 1..class_starts.len() {
        class_starts[c] += class_starts[c - 1];
    }
    let mut at = class_starts;
    let rank_of: Vec<u32> = counted
        .iter()
        .flatten()
        .map(|&c| {
            let r = at[class(c)];
            at[class(c)] += 1;
            r
        })
        .collect();
    drop(counted);
    let shift = 64 - bits;
    let read = |b: usize, place: u32| rank_of[first[b / per] + place as usize];
    let ranked: Vec<(Vec<u32>, Vec<usize>, Vec<u32>)> = blocks
        .par_iter()
        .map(|blk| {
            let mut at = blk.starts.clone();
            let (mut values, mut ends, mut own) = (Vec::new(), Vec::new(), Vec::new());
            let (mut met, mut by_class) = (Vec::new(), [0u32; CLASSES + 1]);
            for p in &parts[blk.sets.clone()] {
                met.clear();
                for &v in p.iter() {
                    let b = (v >> shift) as usize;
                    let place = blk.places[at[b] as usize].load(Relaxed);
                    at[b] += 1;
                    if place != NOT_SHARED {
                        met.push(read(b, place));
                    }
                }
                own.push((p.len() - met.len()) as u32);
                // By class (ranks of a class are met in order but for those
                // sharing a bucket), then by insertion.
                let from = values.len();
                by_class.fill(0);
                for &r in &met {
                    by_class[class_of_rank(r, &class_starts) + 1] += 1;
                }
                for c in 1..by_class.len() {
                    by_class[c] += by_class[c - 1];
                }
                values.resize(from + met.len(), 0);
                for &r in &met {
                    let c = class_of_rank(r, &class_starts);
                    values[from + by_class[c] as usize] = r;
                    by_class[c] += 1;
                }
                insertion_sort(&mut values[from..]);
                ends.push(values.len());
            }
            (values, ends, own)
        })
        .collect();
    drop(blocks);
    control.check()?;
    let mut starts = Vec::with_capacity(sets.len() + 1);
    starts.push(0usize);
    let (mut values, mut own) = (Vec::with_capacity(ranked.iter().map(|r| r.0.len()).sum()), Vec::with_capacity(sets.len()));
    for (v, ends, o) in ranked {
        let base = values.len();
        values.extend_from_slice(&v);
        starts.extend(ends.iter().map(|e| base + e));
        own.extend_from_slice(&o);
    }
    Ok(Ranked { values, starts, own })
}

/// Rarity classes: counts 2 to 33 each a class of their own, then one a
/// power of two (a `u32` count has at most 32 bits).
const CLASSES: usize = 32 + 28;

/// The rarity class of a value held by `count` sets (`count >= 2`).
fn class(count: u32) -> usize {
    if count <= 33 {
        count as usize - 2
    } else {
        32 + (u32::BITS - count.leading_zeros()) as usize - 6
    }
}

/// The class of rank `r`, from where each class's ranks start.
fn class_of_rank(r: u32, starts: &[u32; CLASSES + 1]) -> usize {
    starts.partition_point(|&s| s <= r) - 1
}

/// Orders a slice that is nearly in order (a few values out of place) in
/// about one pass.
fn insertion_sort(v: &mut [u32]) {
    for i in 1..v.len() {
        let x = v[i];
        let mut j = i;
        while j > 0 && v[j - 1] > x {
            v[j] = v[j - 1];
            j -= 1;
        }
        v[j] = x;
    }
}

/// Marks a value scattered that no other set holds.
const NOT_SHARED: u32 = u32::MAX;

/// The values of a block of sets (`sets`, a range of them) in buckets by
/// their top bits (bucket `b` is `starts[b]..starts[b + 1]`), and for each
/// its place among the shared values of its group of buckets (written by
/// the thread counting that group, so atomic; relaxed, as the threads are
/// joined before it is read).
struct Block {
    sets: std::ops::Range<usize>,
    values: Vec<u64>,
    places: Vec<AtomicU32>,
    starts: Vec<u32>,
}

/// `parts` cut into blocks of about equal values (a few a thread), each
/// scattered into buckets by the top `bits` bits, on the threads.
fn scatter_blocks(parts: &[&[u64]], bits: u32) -> Vec<Block> {
    let total: usize = parts.iter().map(|p| p.len()).sum();
    let want = (rayon::current_num_threads() * 4).max(1);
    let mut cuts = vec![0usize];
    let mut sum = 0;
    for (i, p) in parts.iter().enumerate() {
        sum += p.len();
        if sum * want >= total * cuts.len() && i + 1 < parts.len() {
            cuts.push(i + 1);
        }
    }
    cuts.push(parts.len());
    cuts.dedup();
    let shift = 64 - bits;
    cuts.par_windows(2)
        .map(|w| {
            let mine = &parts[w[0]..w[1]];
            let mut starts = vec![0u32; (1 << bits) + 1];
            for p in mine {
                for &v in p.iter() {
                    starts[(v >> shift) as usize + 1] += 1;
                }
            }
            for b in 1..starts.len() {
                starts[b] += starts[b - 1];
            }
            let n = starts[1 << bits] as usize;
            let mut values = vec![0u64; n];
            let mut at = starts.clone();
            for p in mine {
                for &v in p.iter() {
                    let b = (v >> shift) as usize;
                    values[at[b] as usize] = v;
                    at[b] += 1;
                }
            }
            let places = (0..n).map(|_| AtomicU32::new(NOT_SHARED)).collect();
            Block { sets: w[0]..w[1], values, places, starts }
        })
        .collect()
}

/// For the buckets `range` of every block: the count of each value held by
/// two sets or more, in the order the values are first met (bucket by
/// bucket, block by block, so by the first set holding them), each value's
/// place in that order written beside it in its block.
fn count_buckets(blocks: &[Block], range: std::ops::Range<usize>) -> Vec<u32> {
    const EMPTY: u32 = u32::MAX;
    let mut shared = Vec::new();
    let mut table: Vec<(u64, u32)> = Vec::new();
    let (mut group, mut counts, mut place): (Vec<u32>, Vec<u32>, Vec<u32>) = (Vec::new(), Vec::new(), Vec::new());
    for b in range {
        let held = |blk: &Block| blk.starts[b] as usize..blk.starts[b + 1] as usize;
        let n: usize = blocks.iter().map(|blk| held(blk).len()).sum();
        if n < 2 {
            continue;
        }
        // Open addressing on the hash's low bits (uniform, unlike the top
        // ones the bucket shares), half full at most.
        let mask = (2 * n).next_power_of_two() - 1;
        table.clear();
        table.resize(mask + 1, (0, EMPTY));
        group.clear();
        counts.clear();
        for blk in blocks {
            for &v in &blk.values[held(blk)] {
                let mut i = v as usize & mask;
                let g = loop {
                    let (key, g) = table[i];
                    if g == EMPTY {
                        table[i] = (v, counts.len() as u32);
                        counts.push(0);
                        break counts.len() as u32 - 1;
                    }
                    if key == v {
                        break g;
                    }
                    i = (i + 1) & mask;
                };
                counts[g as usize] += 1;
                group.push(g);
            }
        }
        place.clear();
        place.resize(counts.len(), NOT_SHARED);
        let mut e = 0;
        for blk in blocks {
            for slot in &blk.places[held(blk)] {
                let g = group[e] as usize;
                e += 1;
                if counts[g] < 2 {
                    continue;
                }
                if place[g] == NOT_SHARED {
                    place[g] = shared.len() as u32;
                    shared.push(counts[g]);
                }
                slot.store(place[g], Relaxed);
            }
        }
    }
    shared
}

/// Posting lists of the indexed ranks: for each rank, the sets (by place
/// in size order) that index it and where in their ranks, by place.
struct Postings {
    starts: Vec<usize>,
    entries: Vec<(u32, u32)>,
}

impl Postings {
    /// The shared ranks among the first `indexed_len` of each set's values
    /// (its own values come first), set by set in size order.
    fn build(ranked: &Ranked, order: &[u32], t: f64, measure: Measure) -> Postings {
        let n_ranks = ranked.values.iter().max().map_or(0, |&m| m as usize + 1);
        let indexed = |d: usize| {
            let own = ranked.own[d] as usize;
            let s = ranked.get(d);
            (own, &s[..indexed_len(own + s.len(), t, measure).saturating_sub(own).min(s.len())])
        };
        let mut starts = vec![0usize; n_ranks + 1];
        for &d in order {
            for &r in indexed(d as usize).1 {
                starts[r as usize + 1] += 1;
            }
        }
        for r in 1..starts.len() {
            starts[r] += starts[r - 1];
        }
        let mut fill = starts.clone();
        let mut entries = vec![(0u32, 0u32); starts[n_ranks]];
        for (place, &d) in order.iter().enumerate() {
            let (own, ranks) = indexed(d as usize);
            for (j, &r) in ranks.iter().enumerate() {
                entries[fill[r as usize]] = (place as u32, (own + j) as u32);
                fill[r as usize] += 1;
            }
        }
        Postings { starts, entries }
    }

    fn list(&self, rank: u32) -> &[(u32, u32)] {
        self.starts.get(rank as usize + 1).map_or(&[], |&end| &self.entries[self.starts[rank as usize]..end])
    }
}

/// `|x ∩ y|` of ascending ranks when it is at least `need`, by a merge
/// that stops once the rest cannot reach it: four values of each at a time
/// where SSE2 is (every x86-64), each four of `x` against every rotation of
/// the four of `y` (the block merge of Schlegel, Willhalm and Lehner, ADMS
/// 2011), then one at a time.
fn overlap_at_least(x: &[u32], y: &[u32], need: usize) -> Option<usize> {
    let (mut i, mut j, mut n) = (0, 0, 0);
    #[cfg(target_arch = "x86_64")]
    while i + 4 <= x.len() && j + 4 <= y.len() {
        if n + (x.len() - i).min(y.len() - j) < need {
            return None;
        }
        n += common_of_fours(&x[i..i + 4], &y[j..j + 4]);
        let (a, b) = (x[i + 3], y[j + 3]);
        i += if a <= b { 4 } else { 0 };
        j += if b <= a { 4 } else { 0 };
    }
    while i < x.len() && j < y.len() {
        if n + (x.len() - i).min(y.len() - j) < need {
            return None;
        }
        let (a, b) = (x[i], y[j]);
        n += usize::from(a == b);
        i += usize::from(a <= b);
        j += usize::from(b <= a);
    }
    (n >= need).then_some(n)
}

/// How many of four distinct values are among four others.
#[cfg(target_arch = "x86_64")]
#[inline]
fn common_of_fours(a: &[u32], b: &[u32]) -> usize {
    use std::arch::x86_64::*;
    assert!(a.len() == 4 && b.len() == 4);
    // SAFETY: SSE2 is part of x86-64; both loads read the 16 bytes of a
    // four-value slice (checked above), unaligned loads.
    unsafe {
        let va = _mm_loadu_si128(a.as_ptr().cast());
        let vb = _mm_loadu_si128(b.as_ptr().cast());
        let m = _mm_or_si128(
            _mm_or_si128(_mm_cmpeq_epi32(va, vb), _mm_cmpeq_epi32(va, _mm_shuffle_epi32::<0b00_11_10_01>(vb))),
            _mm_or_si128(_mm_cmpeq_epi32(va, _mm_shuffle_epi32::<0b01_00_11_10>(vb)), _mm_cmpeq_epi32(va, _mm_shuffle_epi32::<0b10_01_00_11>(vb))),
        );
        _mm_movemask_ps(_mm_castsi128_ps(m)).count_ones() as usize
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
/// [`crate::Error::InvalidParameter`] for a threshold outside `(0, 1]` or
/// 2^32 - 1 sets or more; [`crate::Error::Interrupted`] when `control` is
/// cancelled.
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
/// filter is the prefix filter in the join's rank order, whatever the sizes
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
    let refs: Vec<&S> = sets.iter().collect();
    let mut out = vec![None; sets.len()];
    if sets.len() < 2 {
        return Ok(out);
    }
    let ranked = rank(&refs, control)?;
    let n_ranks = ranked.values.iter().max().map_or(0, |&m| m as usize + 1);
    // The kept sets that index each rank, in the order kept.
    let mut lists: Vec<Vec<u32>> = vec![Vec::new(); n_ranks];
    let (mut seen, mut touched): (Vec<bool>, Vec<u32>) = (vec![false; sets.len()], Vec::new());
    for (dx, slot) in out.iter_mut().enumerate() {
        if dx % 4096 == 0 {
            control.check()?;
        }
        let (x, own_x, nx) = (ranked.get(dx), ranked.own[dx] as usize, ranked.size(dx));
        // Its prefix's shared values (its own ones come first and match nothing).
        let prefix = &x[..indexed_len(nx, t, Measure::Jaccard).saturating_sub(own_x).min(x.len())];
        for &r in prefix {
            for &dy in &lists[r as usize] {
                if !std::mem::replace(&mut seen[dy as usize], true) {
                    touched.push(dy);
                }
            }
        }
        // The earliest kept set alike, by a merge each, the length filter first.
        touched.sort_unstable();
        let found = touched.iter().find_map(|&dy| {
            let ny = ranked.size(dy as usize);
            let o = need(nx.min(ny), nx.max(ny), t, Measure::Jaccard);
            if o > nx.min(ny) {
                return None;
            }
            let common = overlap_at_least(x, ranked.get(dy as usize), o)?;
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
                for &r in prefix {
                    lists[r as usize].push(dx as u32);
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
    let ranked = rank(sets, control)?;
    // Size order, smallest first, ties by place; a set with no shared value
    // is alike no other (thresholds are above 0) and is left out.
    let mut order: Vec<u32> = (0..sets.len() as u32).filter(|&d| !ranked.get(d as usize).is_empty()).collect();
    order.sort_by_key(|&d| (ranked.size(d as usize), d));
    let lens: Vec<usize> = order.iter().map(|&d| ranked.size(d as usize)).collect();
    let postings = Postings::build(&ranked, &order, t, measure);
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
                    probe(px, &Probe { order: &order, lens: &lens, ranked: &ranked, postings: &postings, t, measure }, partners, touched, &mut out);
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

/// What every probe reads: the sets in size order and their postings.
struct Probe<'a> {
    order: &'a [u32],
    lens: &'a [usize],
    ranked: &'a Ranked,
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
    // x's probe prefix: its first nx - o_min + 1 values, own ones first.
    let prefix = (nx + 1 - o_min).saturating_sub(own_x).min(x.len());
    for (k, &r) in x[..prefix].iter().enumerate() {
        let i = own_x + k;
        let list = p.postings.list(r);
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
        // Every common value up to the last one counted was counted (ranks
        // ascend in both sets), and none after it: the merge resumes there.
        // Own values never match.
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
