//! The exact set-similarity join: every pair of sets at least a threshold
//! alike, without comparing all pairs and without the misses of simhash
//! candidates (recall 1 by construction).
//!
//! The prefix-filter join of AllPairs and PPJoin (Bayardo, Ma, Srikant,
//! WWW 2007; Xiao, Wang, Lin, Yu, WWW 2008), on the sets' FNV-1a 64 hashes:
//!
//! 1. **Token order.** Every distinct hash is counted over the sets (one
//!    sort), and ranked by its document frequency, rarest first, ties broken
//!    by the hash, so the order (and the answer's order of work) is
//!    deterministic. Each set becomes an ascending array of `u32` ranks.
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
//! 5. **Verification.** Each surviving partner is merged with `x` by rank,
//!    stopping once the overlap can no longer be reached; the similarity is
//!    computed as [`super::similarity`] computes it, in `f64`, and kept
//!    when it is at least the threshold.
//!
//! Memory beside the sets: 8 bytes a value while ranking (the hashes
//! sorted, one array), then 12 bytes a value held by two sets or more (its
//! hash and count, and its rank in each set) and 8 bytes an indexed one.

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

/// The ranks of each set: the values in two sets or more ranked by
/// document frequency (rarest first, ties by hash), each set's ranks
/// ascending, and the count of its values in no other set.
fn rank<S: AsRef<[u64]> + Sync>(sets: &[&S], control: &Control) -> Result<Ranked> {
    let parts: Vec<&[u64]> = sets.iter().map(|s| s.as_ref()).collect();
    let all = crate::tables::radix::par_sort_parts(&parts);
    control.check()?;
    // The shared values (in hash order) and how many sets hold each.
    let mut shared: Vec<u64> = Vec::new();
    let mut counts: Vec<u32> = Vec::new();
    let mut i = 0;
    while i < all.len() {
        let mut j = i + 1;
        while j < all.len() && all[j] == all[i] {
            j += 1;
        }
        if j - i > 1 {
            shared.push(all[i]);
            counts.push((j - i).min(u32::MAX as usize) as u32);
        }
        i = j;
    }
    drop(all);
    // Ranks by (count, hash): a counting sort by count, stable in hash order,
    // each kept beside its hash (one cache miss a lookup, not two).
    let top = counts.iter().copied().max().unwrap_or(0) as usize;
    let mut at = vec![0u32; top + 2];
    for &c in &counts {
        at[c as usize + 1] += 1;
    }
    for c in 1..at.len() {
        at[c] += at[c - 1];
    }
    let table: Vec<(u64, u32)> = shared
        .iter()
        .zip(&counts)
        .map(|(&h, &c)| {
            let r = at[c as usize];
            at[c as usize] += 1;
            (h, r)
        })
        .collect();
    drop((shared, counts));
    // The top bits of a hash narrow its search to about four values (hashes
    // are uniform), from a table a quarter of their number.
    let bits = (usize::BITS - table.len().leading_zeros()).saturating_sub(2).clamp(1, 24);
    let shift = 64 - bits;
    let mut bucket = vec![0u32; (1usize << bits) + 1];
    for &(h, _) in &table {
        bucket[(h >> shift) as usize + 1] += 1;
    }
    for b in 1..bucket.len() {
        bucket[b] += bucket[b - 1];
    }
    let lookup = |h: u64| {
        let b = (h >> shift) as usize;
        table[bucket[b] as usize..bucket[b + 1] as usize].iter().find(|e| e.0 >= h).filter(|e| e.0 == h).map(|e| e.1)
    };
    // Lookups in hash order, a range of the table at a time for a block of
    // sets (each set ascends by hash): the range stays in cache while the
    // block's values in it are looked up, instead of a cache miss a value.
    let range_bits = (usize::BITS - (table.len() / 4096).leading_zeros()).clamp(1, bits);
    let ranked: Vec<(Vec<u32>, u32)> = parts
        .par_chunks(1024)
        .flat_map_iter(|block| {
            let mut mine: Vec<Vec<u32>> = block.iter().map(|s| Vec::with_capacity(s.len())).collect();
            let mut at = vec![0usize; block.len()];
            for range in 0..1u64 << range_bits {
                for (k, s) in block.iter().enumerate() {
                    let mut i = at[k];
                    while i < s.len() && s[i] >> (64 - range_bits) == range {
                        if let Some(r) = lookup(s[i]) {
                            mine[k].push(r);
                        }
                        i += 1;
                    }
                    at[k] = i;
                }
            }
            mine.into_iter().zip(block).map(|(mut m, s)| {
                m.sort_unstable();
                let own = (s.len() - m.len()) as u32;
                (m, own)
            })
        })
        .collect();
    let mut starts = Vec::with_capacity(sets.len() + 1);
    starts.push(0usize);
    for (r, _) in &ranked {
        starts.push(starts[starts.len() - 1] + r.len());
    }
    let own = ranked.iter().map(|r| r.1).collect();
    let mut values = Vec::with_capacity(starts[sets.len()]);
    for (r, _) in ranked {
        values.extend_from_slice(&r);
    }
    Ok(Ranked { values, starts, own })
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
/// that stops once the rest cannot reach it.
fn overlap_at_least(x: &[u32], y: &[u32], need: usize) -> Option<usize> {
    let (mut i, mut j, mut n) = (0, 0, 0);
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
        .map(|part| {
            control.check()?;
            let mut counts = vec![0u32; n];
            let mut touched: Vec<u32> = Vec::new();
            let mut out = Vec::new();
            for &px in part {
                let (dx, nx) = (order[px] as usize, lens[px]);
                let (x, own_x) = (ranked.get(dx), ranked.own[dx] as usize);
                let o_min = need(nx, nx, t, measure);
                if o_min > nx {
                    continue;
                }
                // The length filter: partners after x in size order, not too large.
                let end = match measure {
                    Measure::Containment => n,
                    Measure::Jaccard => {
                        let most = (nx as f64 / t * (1.0 + 1e-9)).floor() as usize + 1;
                        px + 1 + lens[px + 1..].partition_point(|&l| l <= most)
                    }
                };
                if end <= px + 1 {
                    continue;
                }
                // x's probe prefix: its first nx - o_min + 1 values, own ones first.
                let probe = (nx + 1 - o_min).saturating_sub(own_x).min(x.len());
                for (k, &r) in x[..probe].iter().enumerate() {
                    let i = own_x + k;
                    let list = postings.list(r);
                    let from = list.partition_point(|&(p, _)| p as usize <= px);
                    for &(py, j) in &list[from..] {
                        let py = py as usize;
                        if py >= end {
                            break;
                        }
                        let c = counts[py];
                        if c == PRUNED {
                            continue;
                        }
                        let ny = lens[py];
                        let o = need(nx, ny, t, measure);
                        if c == 0 {
                            touched.push(py as u32);
                        }
                        counts[py] = if c as usize + 1 + (nx - i - 1).min(ny - j as usize - 1) < o { PRUNED } else { c + 1 };
                    }
                }
                for &py in &touched {
                    let py = py as usize;
                    if counts[py] != PRUNED {
                        let dy = order[py] as usize;
                        let ny = lens[py];
                        let o = need(nx, ny, t, measure);
                        // Own values never match: the merge of the shared ones decides.
                        if let Some(common) = overlap_at_least(x, ranked.get(dy), o) {
                            let whole = match measure {
                                Measure::Jaccard => nx + ny - common,
                                Measure::Containment => nx,
                            };
                            let s = common as f64 / whole as f64;
                            if s >= t {
                                out.push((u64::from(order[px]) << 32 | u64::from(order[py]), s as f32));
                            }
                        }
                    }
                    counts[py] = 0;
                }
                touched.clear();
            }
            control.advance(part.len() as u64);
            Ok(out)
        })
        .collect();
    control.advance((sets.len() - n) as u64);
    Ok(found?.concat())
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
