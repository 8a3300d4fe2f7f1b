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
//!    of it is. Values held by one set only are never indexed: they match
//!    nothing.
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
//! Memory beside the sets: 16 bytes a value while ranking (the hashes
//! sorted), then 4 bytes a value (the ranks) and 8 bytes an indexed value.

use rayon::prelude::*;

use super::Measure;
use crate::job::Control;
use crate::Result;

/// Marks a partner the positional filter has ruled out.
const PRUNED: u32 = u32::MAX;

/// Sets as ascending arrays of ranks, one flat array.
struct Ranked {
    values: Vec<u32>,
    starts: Vec<usize>,
}

impl Ranked {
    fn get(&self, i: usize) -> &[u32] {
        &self.values[self.starts[i]..self.starts[i + 1]]
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
fn indexed_len(n: usize, t: f64, measure: Measure) -> usize {
    match measure {
        Measure::Containment => n,
        Measure::Jaccard => {
            let o = (t * n as f64 - 1e-7 * (1.0 + n as f64)).ceil().max(1.0) as usize;
            (n + 1).saturating_sub(o).min(n)
        }
    }
}

/// The ranks of each set: hashes ranked by document frequency (rarest
/// first, ties by hash), each set's ranks ascending. Returns the ranked
/// sets and how many ranks belong to values in one set only (the first
/// ranks: they match nothing).
fn rank<S: AsRef<[u64]> + Sync>(sets: &[&S], control: &Control) -> Result<(Ranked, u32)> {
    let mut starts = Vec::with_capacity(sets.len() + 1);
    starts.push(0usize);
    for s in sets {
        starts.push(starts[starts.len() - 1] + s.as_ref().len());
    }
    let total = starts[sets.len()];
    let mut all: Vec<u64> = Vec::with_capacity(total);
    for s in sets {
        all.extend_from_slice(s.as_ref());
    }
    all.par_sort_unstable();
    control.check()?;
    // Distinct values and their counts.
    let mut distinct: Vec<(u32, u64)> = Vec::new();
    let mut i = 0;
    while i < all.len() {
        let mut j = i + 1;
        while j < all.len() && all[j] == all[i] {
            j += 1;
        }
        distinct.push(((j - i).min(u32::MAX as usize) as u32, all[i]));
        i = j;
    }
    drop(all);
    let singles = distinct.iter().filter(|d| d.0 == 1).count() as u32;
    // The rank of each distinct value, by (count, hash).
    let mut order: Vec<u32> = (0..distinct.len() as u32).collect();
    order.par_sort_unstable_by_key(|&d| distinct[d as usize]);
    let mut rank_of = vec![0u32; distinct.len()];
    for (r, &d) in order.iter().enumerate() {
        rank_of[d as usize] = r as u32;
    }
    drop(order);
    let hashes: Vec<u64> = distinct.iter().map(|d| d.1).collect();
    drop(distinct);
    // The top bits of a hash narrow its search to a few values (hashes are uniform).
    let bits = (usize::BITS - hashes.len().leading_zeros()).clamp(1, 24);
    let shift = 64 - bits;
    let mut bucket = vec![0u32; (1usize << bits) + 1];
    for &h in &hashes {
        bucket[(h >> shift) as usize + 1] += 1;
    }
    for b in 1..bucket.len() {
        bucket[b] += bucket[b - 1];
    }
    let lookup = |h: u64| {
        let b = (h >> shift) as usize;
        let (lo, hi) = (bucket[b] as usize, bucket[b + 1] as usize);
        let at = lo + hashes[lo..hi].partition_point(|&x| x < h);
        rank_of[at]
    };
    let mut values = vec![0u32; total];
    let mut rest: &mut [u32] = &mut values;
    let mut pieces = Vec::with_capacity(sets.len());
    for s in sets {
        let (head, tail) = rest.split_at_mut(s.as_ref().len());
        pieces.push(head);
        rest = tail;
    }
    pieces.into_par_iter().zip(sets.par_iter()).with_min_len(64).for_each(|(out, s)| {
        for (o, &h) in out.iter_mut().zip(s.as_ref()) {
            *o = lookup(h);
        }
        out.sort_unstable();
    });
    Ok((Ranked { values, starts }, singles))
}

/// Posting lists of the indexed ranks: for each rank, the sets (by place
/// in size order) that index it and where in their ranks, by place.
struct Postings {
    starts: Vec<usize>,
    entries: Vec<(u32, u32)>,
}

impl Postings {
    fn build(ranked: &Ranked, order: &[u32], singles: u32, t: f64, measure: Measure) -> Postings {
        let n_ranks = ranked.values.iter().max().map_or(0, |&m| m as usize + 1);
        let mut starts = vec![0usize; n_ranks + 1];
        for &d in order {
            let s = ranked.get(d as usize);
            for &r in &s[..indexed_len(s.len(), t, measure)] {
                if r >= singles {
                    starts[r as usize + 1] += 1;
                }
            }
        }
        for r in 1..starts.len() {
            starts[r] += starts[r - 1];
        }
        let mut fill = starts.clone();
        let mut entries = vec![(0u32, 0u32); starts[n_ranks]];
        for (place, &d) in order.iter().enumerate() {
            let s = ranked.get(d as usize);
            for (j, &r) in s[..indexed_len(s.len(), t, measure)].iter().enumerate() {
                if r >= singles {
                    entries[fill[r as usize]] = (place as u32, j as u32);
                    fill[r as usize] += 1;
                }
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

/// Every pair of `sets` (ascending arrays of distinct values) whose
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
    let (ranked, singles) = rank(sets, control)?;
    // Size order: smallest first, ties by place.
    let mut order: Vec<u32> = (0..sets.len() as u32).collect();
    order.sort_by_key(|&d| (ranked.get(d as usize).len(), d));
    let lens: Vec<usize> = order.iter().map(|&d| ranked.get(d as usize).len()).collect();
    let postings = Postings::build(&ranked, &order, singles, t, measure);
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
                let x = ranked.get(order[px] as usize);
                let nx = x.len();
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
                for (i, &r) in x[..nx + 1 - o_min].iter().enumerate() {
                    if r < singles {
                        continue;
                    }
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
                        if c as usize + 1 + (nx - i - 1).min(ny - j as usize - 1) < o {
                            if c == 0 {
                                touched.push(py as u32);
                            }
                            counts[py] = PRUNED;
                            continue;
                        }
                        if c == 0 {
                            touched.push(py as u32);
                        }
                        counts[py] = c + 1;
                    }
                }
                for &py in &touched {
                    let py = py as usize;
                    if counts[py] != PRUNED {
                        let y = ranked.get(order[py] as usize);
                        let o = need(nx, y.len(), t, measure);
                        if let Some(common) = overlap_at_least(x, y, o) {
                            let whole = match measure {
                                Measure::Jaccard => nx + y.len() - common,
                                Measure::Containment => nx,
                            };
                            let s = common as f64 / whole as f64;
                            if s >= t {
                                let (a, b) = (order[px], order[py]);
                                out.push((u64::from(a) << 32 | u64::from(b), s as f32));
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
