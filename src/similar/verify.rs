//! Candidate pairs checked against shingle sets held in memory.

use std::collections::HashMap;
use std::sync::Mutex;

use rayon::prelude::*;

use super::overlap::{alike_within, Buckets};
use super::Similar;

/// Checks candidate pairs of documents against their shingle sets.
///
/// Documents with identical sets (equal, checked value by value) form a
/// group: a pair inside a group is alike with similarity 1 without a look,
/// and a pair across two groups of copies is checked once and remembered
/// for the other copies, so a page copied a thousand times costs one check
/// per other page, not a thousand. Each set's [`Buckets`] rule most pairs
/// out before a merge.
pub struct Verifier<'s> {
    sets: &'s [Vec<u64>],
    opts: &'s Similar,
    /// Each document's group: the first document with an equal set.
    first: Vec<u32>,
    /// Whether a group holds more than one document.
    copied: Vec<bool>,
    memo: Mutex<HashMap<u64, Option<f32>>>,
    buckets: Vec<Buckets>,
}

impl<'s> Verifier<'s> {
    pub fn new(sets: &'s [Vec<u64>], opts: &'s Similar) -> Verifier<'s> {
        let first = first_equal(sets);
        let mut copied = vec![false; sets.len()];
        for (i, &r) in first.iter().enumerate() {
            if r as usize != i {
                copied[r as usize] = true;
            }
        }
        let buckets = sets.par_iter().map(|s| Buckets::of(s)).collect();
        Verifier { sets, opts, first, copied, memo: Mutex::new(HashMap::new()), buckets }
    }

    /// The similarity of documents `a` and `b` when it is at least the threshold.
    pub fn check(&self, a: u32, b: u32) -> Option<f32> {
        let (x, y) = (self.first[a as usize], self.first[b as usize]);
        if x == y {
            return (1.0 >= self.opts.threshold).then_some(1.0);
        }
        let (x, y) = (x.min(y) as usize, x.max(y) as usize);
        let (sx, sy) = (&self.sets[x], &self.sets[y]);
        let look = || {
            let may_reach = |need| self.buckets[x].may_share(&self.buckets[y], sx, sy, need);
            alike_within(sx, sy, self.opts, may_reach).map(|s| s as f32)
        };
        if !self.copied[x] && !self.copied[y] {
            return look();
        }
        let key = (x as u64) << 32 | y as u64;
        if let Some(&s) = self.memo.lock().unwrap_or_else(|e| e.into_inner()).get(&key) {
            return s;
        }
        let s = look();
        self.memo.lock().unwrap_or_else(|e| e.into_inner()).insert(key, s);
        s
    }
}

/// For each document, the first one with the same candidate fingerprint
/// and an equal set: its *copy* for verified near-duplicates (alike with
/// similarity 1, and alike every other document exactly when it is), so
/// that only first copies need candidates.
pub(crate) fn first_copy<S: AsRef<[u64]> + Sync>(fps: &[u64], sets: &[S]) -> Vec<u32> {
    let by_set = first_equal(sets);
    let mut shared = vec![false; sets.len()];
    for (i, &g) in by_set.iter().enumerate() {
        if g as usize != i {
            shared[g as usize] = true;
        }
    }
    let mut first: Vec<u32> = (0..fps.len() as u32).collect();
    // Only documents whose set has copies: the rest are their own first.
    let mut seen: HashMap<(u32, u64), u32> = HashMap::new();
    for (i, (&g, &fp)) in by_set.iter().zip(fps).enumerate() {
        if shared[g as usize] {
            first[i] = *seen.entry((g, fp)).or_insert(i as u32);
        }
    }
    first
}

/// For each set, the first set equal to it (by position): sets are grouped
/// by a digest, and each confirmed equal to its group's first value by
/// value, so a digest collision costs time, never a wrong answer.
pub(crate) fn first_equal<S: AsRef<[u64]> + Sync>(sets: &[S]) -> Vec<u32> {
    let digest = |s: &[u64]| s.iter().fold(s.len() as u64, |h, &x| (h ^ x).wrapping_mul(0x100000001b3).rotate_left(29));
    let mut order: Vec<(u64, u32)> = sets.par_iter().enumerate().map(|(i, s)| (digest(s.as_ref()), i as u32)).collect();
    order.par_sort_unstable();
    let mut first: Vec<u32> = (0..sets.len() as u32).collect();
    let mut g = 0;
    while g < order.len() {
        let mut end = g + 1;
        while end < order.len() && order[end].0 == order[g].0 {
            end += 1;
        }
        // Within a digest group (ascending positions), each set joins the
        // first earlier set equal to it that leads a group of its own.
        for i in g + 1..end {
            let s = order[i].1 as usize;
            if let Some(&(_, r)) = order[g..i].iter().find(|&&(_, r)| first[r as usize] == r && sets[r as usize].as_ref() == sets[s].as_ref()) {
                first[s] = r;
            }
        }
        g = end;
    }
    first
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::similar::{similarity, Candidates, Measure};
    use crate::Shingling;
    use proptest::prelude::*;

    proptest! {
        /// Each set's first equal set is the first set equal to it.
        #[test]
        fn first_equal_sets(picks in prop::collection::vec(0usize..6, 0..40)) {
            let pool: Vec<Vec<u64>> = vec![vec![], vec![1], vec![1, 2], vec![2], vec![1, 2, 3], vec![u64::MAX]];
            let sets: Vec<Vec<u64>> = picks.iter().map(|&p| pool[p].clone()).collect();
            let first = first_equal(&sets);
            for (i, s) in sets.iter().enumerate() {
                prop_assert_eq!(first[i] as usize, sets.iter().position(|x| x == s).unwrap());
            }
        }

        /// Checks with copies, memory and bounds answer as the plain similarity.
        #[test]
        fn checks_equal_similarity(
            picks in prop::collection::vec(0usize..8, 2..30),
            t in prop_oneof![Just(1.0f64), 0.05f64..1.0],
            containment in any::<bool>(),
        ) {
            let pool: Vec<Vec<u64>> = (0..8u64).map(|p| (0..40 + p * 7).map(|i| i.wrapping_mul(0x9e37_79b9_7f4a_7c15).wrapping_add(p * (i % 3))).collect()).collect();
            let pool: Vec<Vec<u64>> = pool.into_iter().map(|mut s| { s.sort_unstable(); s.dedup(); s }).collect();
            let sets: Vec<Vec<u64>> = picks.iter().map(|&p| pool[p].clone()).collect();
            let measure = if containment { Measure::Containment } else { Measure::Jaccard };
            let opts = Similar::new(t, measure, Shingling::default(), Candidates { shingling: Shingling::default(), k: 3 }).unwrap();
            let v = Verifier::new(&sets, &opts);
            for a in 0..sets.len() {
                for b in 0..sets.len() {
                    let s = similarity(&sets[a], &sets[b], measure);
                    prop_assert_eq!(v.check(a as u32, b as u32), (s >= t).then_some(s as f32));
                }
            }
        }
    }
}
