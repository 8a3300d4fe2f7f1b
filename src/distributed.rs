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

use crate::tables::plan::Design;
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

    /// Pairs `[i, j]`, `i < j`, of `fps` (distinct values sharing table
    /// `t`'s key) within `k` that table `t` reports.
    pub fn group_pairs(&self, t: usize, fps: &[u64]) -> Vec<[u32; 2]> {
        let perm = &self.design.tables()[t].perm;
        let keys: Vec<u64> = fps.iter().map(|&f| perm.apply(f)).collect();
        let mut out = Vec::new();
        self.design.group_pairs(t, &keys, self.design.k(), |i, j, _| out.push([i as u32, j as u32]));
        out
    }

    /// Pairs `[i, j]` of `a[i]` and `b[j]` (two parts of one group of
    /// table `t`) within `k` that table `t` reports.
    pub fn cross_pairs(&self, t: usize, a: &[u64], b: &[u64]) -> Vec<[u32; 2]> {
        let perm = &self.design.tables()[t].perm;
        let kb: Vec<u64> = b.iter().map(|&f| perm.apply(f)).collect();
        let mut out = Vec::new();
        for (i, &x) in a.iter().enumerate() {
            let x = perm.apply(x);
            for (j, &y) in kb.iter().enumerate() {
                if self.design.reported(t, x ^ y, self.design.k()).is_some() {
                    out.push([i as u32, j as u32]);
                }
            }
        }
        out
    }

    /// Of `pairs` (positions into `fps`), those that join two components of
    /// the values they link, taken in order: a spanning forest, with the
    /// components of all of them. Clusters and a dedup by components need
    /// no more, and a dense group's forest has at most one pair per value
    /// where its pairs are nearly the square of them.
    pub fn spanning(pairs: &[[u32; 2]], fps: &[u64]) -> Vec<[u32; 2]> {
        let mut ids: std::collections::HashMap<u64, u32> = std::collections::HashMap::new();
        let mut id = |fp: u64| {
            let next = ids.len() as u32;
            *ids.entry(fp).or_insert(next)
        };
        let dense: Vec<(u32, u32)> = pairs.iter().map(|&[i, j]| (id(fps[i as usize]), id(fps[j as usize]))).collect();
        let mut components = crate::cluster::graph::Components::new(ids.len());
        pairs.iter().zip(dense).filter(|(_, (a, b))| components.join(*a, *b)).map(|(&p, _)| p).collect()
    }

    /// The pairs of many groups in one call: the rows of each `(table, key,
    /// cell)` together, sorted by `side` (keys may sort as signed or
    /// unsigned values: only equal ones need be together), where a cell is a group, or in a group cut into parts
    /// one part or one pair of parts. `side` is 0 in a cell of one part,
    /// and 1 or 2 in a cell of two, for the part a row is in. Returns
    /// positions `[i, j]` of the rows: a cell of one part gives
    /// [`Self::group_pairs`] (`i < j`), one of two [`Self::cross_pairs`]
    /// (`i` on side 1), none when a side is empty.
    ///
    /// # Errors
    /// [`crate::Error::InvalidParameter`] for columns of unequal lengths,
    /// a table past the design's, or sides out of order in a cell.
    pub fn sorted_pairs(&self, tables: &[u32], keys: &[u64], cells: &[u64], sides: &[u8], fps: &[u64]) -> Result<Vec<[u32; 2]>> {
        let n = fps.len();
        if [tables.len(), keys.len(), cells.len(), sides.len()].iter().any(|&l| l != n) {
            return Err(crate::Error::invalid("columns", "one value per row in each", "columns of different lengths"));
        }
        let row = |i: usize| (tables[i], keys[i], cells[i], sides[i]);
        let mut out = Vec::new();
        let mut start = 0;
        while start < n {
            let t = tables[start] as usize;
            if t >= self.tables() {
                return Err(crate::Error::invalid("table", "a table of the design", t));
            }
            let mut split = start;
            let mut end = start + 1;
            while end < n && row(end).0 == row(start).0 && row(end).1 == row(start).1 && row(end).2 == row(start).2 {
                if sides[end] < sides[end - 1] {
                    return Err(crate::Error::invalid("rows", "of a cell sorted by side", format!("row {end} out of order")));
                }
                end += 1;
            }
            let base = start as u32;
            if sides[start] == 0 {
                if sides[end - 1] != 0 {
                    return Err(crate::Error::invalid("sides", "0 for every row of a cell of one part", sides[end - 1]));
                }
                out.extend(self.group_pairs(t, &fps[start..end]).into_iter().map(|[i, j]| [base + i, base + j]));
            } else {
                while split < end && sides[split] == 1 {
                    split += 1;
                }
                if sides[end - 1] > 2 {
                    return Err(crate::Error::invalid("sides", "0, 1 or 2", sides[end - 1]));
                }
                let other = split as u32;
                out.extend(self.cross_pairs(t, &fps[start..split], &fps[split..end]).into_iter().map(|[i, j]| [base + i, other + j]));
            }
            start = end;
        }
        Ok(out)
    }
}

/// Relative costs in the choice of a shuffle's design: one shuffled row
/// against one comparison of two values in a task (about 1 us against 2 ns
/// in `rsimhash.spark`).
const ROW_COST: f64 = 1.0;
const PAIR_COST: f64 = 0.002;

/// The blocks of the single-level design a shuffle of `n` distinct values
/// uses. With `tables`, the fewest blocks whose design has that many tables
/// (`C(blocks, k)`), or `None` when no design has; else, of `k + 1` to
/// `k + 9` blocks (at most 64), the one with the least shuffled rows
/// (`n` a table) plus expected comparisons (`n^2 / 2` a table over
/// `2^prefix`, `prefix` its longest one, [`crate::plan`]'s block rule),
/// the fewer blocks on a tie.
///
/// # Errors
/// [`crate::Error::InvalidParameter`] for a `k` above 16.
pub fn shuffle_blocks(n: u64, k: u32, tables: Option<u64>) -> Result<Option<u32>> {
    if k > crate::plan::MAX_K {
        return Err(crate::Error::invalid("k", "from 0 to 16", k));
    }
    if let Some(tables) = tables {
        return Ok((k + 1..=64).find(|&b| crate::plan::binomial(b, k) as u64 == tables));
    }
    let n = n as f64;
    let mut best: Option<(f64, u32)> = None;
    for b in k + 1..=64.min(k + 9) {
        let t = crate::plan::binomial(b, k) as f64;
        let prefix = crate::plan::leading_bits_max(64, b, k) as i32;
        // The sum in this order, as the Python planner it replaces summed it.
        let cost = n * t * ROW_COST + t * (n * n / 2f64.powi(prefix + 1)) * PAIR_COST;
        if best.is_none_or(|(c, _)| cost < c) {
            best = Some((cost, b));
        }
    }
    Ok(best.map(|(_, b)| b))
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
                    out.extend(s.group_pairs(t, a).into_iter().map(|[i, j]| (a[i as usize], a[j as usize])));
                    for b in &parts[p + 1..] {
                        out.extend(s.cross_pairs(t, a, b).into_iter().map(|[i, j]| (a[i as usize], b[j as usize])));
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
        fn each_pair_once(fps in crate::testing::planted(30, 300), k in 0u32..=6, extra in 1u32..4, part in 1usize..50) {
            let values: Vec<u64> = fps.into_iter().collect::<BTreeSet<_>>().into_iter().collect();
            let got = shuffled(&values, k, k + extra, part);
            prop_assert!(got.windows(2).all(|w| w[0] < w[1]), "a pair twice");
            prop_assert_eq!(got, brute(&values, k));
        }
    }

    #[test]
    fn sorted_rows_give_each_group_its_pairs() {
        let s = ShuffleTables::new(3, 5).unwrap();
        let values: Vec<u64> = (0..200u64).map(|i| (i % 5) << 60 | (i * 0x9E37_79B9) & 0xFF).collect::<BTreeSet<_>>().into_iter().collect();
        // Every table's rows, groups cut into two parts of one cell each
        // and the cross cell, as the shuffle would sort them.
        let mut rows: Vec<(u32, u64, u64, u8, u64)> = Vec::new();
        for t in 0..s.tables() {
            for &v in &values {
                let part = v & 1;
                rows.push((t as u32, s.key(t, v), part * 3, 0, v)); // the cell of its own part
                rows.push((t as u32, s.key(t, v), 1, part as u8 + 1, v)); // the cell of parts 0 and 1
            }
        }
        rows.sort_unstable();
        let col = |f: fn(&(u32, u64, u64, u8, u64)) -> u64| rows.iter().map(f).collect::<Vec<u64>>();
        let tables: Vec<u32> = rows.iter().map(|r| r.0).collect();
        let sides: Vec<u8> = rows.iter().map(|r| r.3).collect();
        let (keys, cells, fps) = (col(|r| r.1), col(|r| r.2), col(|r| r.4));
        let mut got: Vec<(u64, u64)> = s
            .sorted_pairs(&tables, &keys, &cells, &sides, &fps)
            .unwrap()
            .into_iter()
            .map(|[i, j]| (fps[i as usize].min(fps[j as usize]), fps[i as usize].max(fps[j as usize])))
            .collect();
        got.sort_unstable();
        assert_eq!(got, brute(&values, 3));
        let mut unsorted = sides.clone();
        let i = (1..sides.len()).find(|&i| sides[i] > sides[i - 1] && cells[i] == cells[i - 1] && keys[i] == keys[i - 1]).unwrap();
        unsorted.swap(i - 1, i);
        assert!(s.sorted_pairs(&tables, &keys, &cells, &unsorted, &fps).is_err());
        assert!(s.sorted_pairs(&tables[1..], &keys, &cells, &sides, &fps).is_err());
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

    #[test]
    fn shuffle_blocks_by_cost_and_by_tables() {
        // One value: the fewest tables win (the rows dominate); many: more blocks, longer prefixes.
        assert_eq!(shuffle_blocks(1, 3, None).unwrap(), Some(4));
        let (small, large) = (shuffle_blocks(1, 3, None).unwrap().unwrap(), shuffle_blocks(1 << 40, 3, None).unwrap().unwrap());
        assert!(small < large && large <= 12, "{small} {large}");
        for b in 4..=64 {
            let tables = crate::plan::binomial(b, 3) as u64;
            assert_eq!(shuffle_blocks(5, 3, Some(tables)).unwrap(), Some(b));
            if tables <= 4096 {
                // The count the shuffle's design then has (designs stop at 4096 tables).
                assert_eq!(ShuffleTables::new(3, b).unwrap().tables() as u64, tables);
            }
        }
        assert_eq!(shuffle_blocks(5, 3, Some(5)).unwrap(), None);
        assert_eq!(shuffle_blocks(5, 0, Some(1)).unwrap(), Some(1));
        assert_eq!(shuffle_blocks(5, 0, Some(64)).unwrap(), None);
        assert_eq!(shuffle_blocks(u64::MAX, 16, None).unwrap(), Some(25));
        assert!(shuffle_blocks(5, 17, None).is_err());
    }
}
