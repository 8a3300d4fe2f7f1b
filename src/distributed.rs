//! The permuted tables as the keys of a distributed engine's shuffle (the
//! paper's §3.3 on MapReduce; `rsimhash.spark` on Apache Spark).
//!
//! Each fingerprint goes out once a table, keyed by the table and its
//! permuted prefix; the engine groups the rows by key and each group's
//! pairs within `k` are found here. A pair is emitted only by the first
//! table whose prefix it shares ([`Design::reports`]), the rule of
//! [`crate::batch::find_all`] and `Index.find_all`, so the groups' answers
//! add up to every pair exactly once with no global distinct. A group too
//! large for one task is cut into parts; every pair of parts (and each
//! part with itself) then goes to a task, [`ShuffleTables::cross_pairs`].

use crate::plan::Design;
use crate::Result;

/// A single-level design of `blocks` blocks for `k`: `C(blocks, k)` tables.
pub struct ShuffleTables {
    design: Design,
}

impl ShuffleTables {
    /// # Errors
    /// [`crate::Error::InvalidParameter`] for a `k` above 16, or `blocks`
    /// not above `k` or above 64.
    pub fn new(k: u32, blocks: u32) -> Result<ShuffleTables> {
        Ok(ShuffleTables { design: Design::new(k, &[blocks])? })
    }

    pub fn k(&self) -> u32 {
        self.design.k()
    }

    pub fn tables(&self) -> usize {
        self.design.tables().len()
    }

    /// Leading bits of table `t`'s key.
    pub fn prefix(&self, t: usize) -> u32 {
        self.design.tables()[t].prefix
    }

    /// The key of `fp` in table `t`: its permuted value's prefix bits, at
    /// the top (the rest zero).
    #[inline]
    pub fn key(&self, t: usize, fp: u64) -> u64 {
        let spec = &self.design.tables()[t];
        spec.perm.apply(fp) & spec.prefix_mask
    }

    /// Pairs `(i, j)`, `i < j`, of `fps` (distinct values sharing table
    /// `t`'s key) within `k` that table `t` reports.
    pub fn group_pairs(&self, t: usize, fps: &[u64]) -> Vec<(u32, u32)> {
        let perm = &self.design.tables()[t].perm;
        let keys: Vec<u64> = fps.iter().map(|&f| perm.apply(f)).collect();
        let mut out = Vec::new();
        for (i, &a) in keys.iter().enumerate() {
            for (j, &b) in keys.iter().enumerate().skip(i + 1) {
                self.push_if_reported(t, a ^ b, i as u32, j as u32, &mut out);
            }
        }
        out
    }

    /// Pairs `(i, j)` of `a[i]` and `b[j]` (two parts of one group of
    /// table `t`) within `k` that table `t` reports.
    pub fn cross_pairs(&self, t: usize, a: &[u64], b: &[u64]) -> Vec<(u32, u32)> {
        let perm = &self.design.tables()[t].perm;
        let kb: Vec<u64> = b.iter().map(|&f| perm.apply(f)).collect();
        let mut out = Vec::new();
        for (i, &x) in a.iter().enumerate() {
            let x = perm.apply(x);
            for (j, &y) in kb.iter().enumerate() {
                self.push_if_reported(t, x ^ y, i as u32, j as u32, &mut out);
            }
        }
        out
    }

    #[inline]
    fn push_if_reported(&self, t: usize, x: u64, i: u32, j: u32, out: &mut Vec<(u32, u32)>) {
        if x.count_ones() <= self.design.k() && self.design.reports(t, x) {
            out.push((i, j));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::{BTreeMap, BTreeSet};

    /// Every pair within k of distinct values, by the shuffle's rule:
    /// grouped by key per table, parts of at most `part` values.
    fn shuffled(values: &[u64], k: u32, blocks: u32, part: usize) -> Vec<(u64, u64)> {
        let s = ShuffleTables::new(k, blocks).unwrap();
        let mut out = Vec::new();
        for t in 0..s.tables() {
            let mut groups: BTreeMap<u64, Vec<u64>> = BTreeMap::new();
            for &v in values {
                groups.entry(s.key(t, v)).or_default().push(v);
            }
            for g in groups.values() {
                let parts: Vec<&[u64]> = g.chunks(part).collect();
                for (p, a) in parts.iter().enumerate() {
                    out.extend(s.group_pairs(t, a).into_iter().map(|(i, j)| (a[i as usize], a[j as usize])));
                    for b in &parts[p + 1..] {
                        out.extend(s.cross_pairs(t, a, b).into_iter().map(|(i, j)| (a[i as usize], b[j as usize])));
                    }
                }
            }
        }
        out.iter_mut().for_each(|p| *p = (p.0.min(p.1), p.0.max(p.1)));
        out.sort_unstable();
        out
    }

    fn brute(values: &[u64], k: u32) -> Vec<(u64, u64)> {
        let mut out = Vec::new();
        for (i, &a) in values.iter().enumerate() {
            for &b in &values[i + 1..] {
                if (a ^ b).count_ones() <= k {
                    out.push((a.min(b), a.max(b)));
                }
            }
        }
        out.sort_unstable();
        out
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        #[test]
        fn each_pair_once(fps in crate::index::tests::planted(30, 300), k in 0u32..=6, extra in 1u32..4, part in 1usize..50) {
            let values: Vec<u64> = fps.into_iter().collect::<BTreeSet<_>>().into_iter().collect();
            let got = shuffled(&values, k, k + extra, part);
            prop_assert!(got.windows(2).all(|w| w[0] < w[1]), "a pair twice");
            prop_assert_eq!(got, brute(&values, k));
        }
    }

    #[test]
    fn extremes_and_bad_designs() {
        let values = [0u64, 1, 3, 7, u64::MAX, u64::MAX - 1, u64::MAX >> 1, 1 << 63];
        for k in 0..=3 {
            assert_eq!(shuffled(&values, k, k + 2, 3), brute(&values, k), "k = {k}");
        }
        assert!(ShuffleTables::new(3, 3).is_err());
        assert!(ShuffleTables::new(17, 20).is_err());
    }
}
