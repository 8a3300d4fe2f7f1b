//! Packed blocks: the shuffle of a distributed pair job as a few large rows,
//! not one row per fingerprint and table.
//!
//! A map task hands its items, `(fingerprint, id)`, to [`ShuffleTables::pack`]:
//! for every table each item's permuted key is bucketed by its top bits
//! (the batch kernel's radix partition, one counting pass and one scatter),
//! and the items of each `(table, bucket)` come out together, a block. The
//! engine moves each block as one row (a binary column of the items, 16
//! bytes each, little-endian) to the task of its `(table, bucket)`; that
//! task concatenates the blocks it received and runs [`ShuffleTables::reduce`],
//! the batch kernel's group scan on them.
//!
//! Invariants: a table's buckets take at most its prefix bits, so a group
//! of keys sharing the prefix never spans buckets, and a reducer holding a
//! whole bucket holds whole groups; every copy of a fingerprint falls in
//! the same bucket of every table, so copies collapse in the reducer onto
//! their smallest id (ids ordered as signed 64-bit values, the order of
//! Spark's longs); a pair of distinct fingerprints is emitted only by the
//! first table whose prefix it shares, and pairs of copies only by the table
//! that reports distance 0, so the reducers' answers add up to every pair
//! exactly once, whatever the map tasks' partitioning.

use crate::batch::kernel::{Dense, TableKernel};
use crate::job::{unpack, Control};
use crate::{Error, Result};

use super::ShuffleTables;

/// The most bits a table's buckets take (65,536 buckets a table).
pub const MAX_BUCKET_BITS: u32 = 16;

/// What a reducer makes of a bucket's pairs.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Output {
    /// Every pair of ids within `k`, copies included (`find_all`'s answer).
    All,
    /// Pairs of the smallest ids of close fingerprints, and each other copy
    /// linked to its fingerprint's smallest id (`copies="first"`).
    First,
    /// Only enough of the pairs [`Output::First`] gives for their connected
    /// components (dense groups joined as the kernel joins them), for
    /// clusters and a dedup by components.
    Forest,
}

/// The blocks of a map task: block `b` is table `tables[b]`, bucket
/// `buckets[b]`, items `items[starts[b]..starts[b + 1]]` as `[fingerprint,
/// id]`. Blocks come ordered by table, then bucket; empty ones are left out.
#[derive(Debug, Default)]
pub struct Packed {
    pub tables: Vec<u32>,
    pub buckets: Vec<u32>,
    pub starts: Vec<u64>,
    pub items: Vec<[u64; 2]>,
}

impl ShuffleTables {
    /// The bits table `t`'s buckets take when a job asks for `bits`.
    pub fn bucket_bits(&self, t: usize, bits: u32) -> u32 {
        bits.min(self.prefix(t)).min(MAX_BUCKET_BITS)
    }

    /// The bucket of permuted key `key` in table `t` at `bits` bucket bits.
    #[inline]
    fn bucket(key: u64, bits: u32) -> usize {
        key.checked_shr(64 - bits).unwrap_or(0) as usize
    }

    /// Every item once a table, bucketed by the top `bits` bits of its
    /// permuted key (at most the table's prefix, [`Self::bucket_bits`]).
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] when `ids` is not one per fingerprint,
    /// or `bits` is above [`MAX_BUCKET_BITS`].
    pub fn pack(&self, fps: &[u64], ids: &[u64], bits: u32) -> Result<Packed> {
        use rayon::prelude::*;
        if ids.len() != fps.len() {
            return Err(Error::invalid("ids", "one id per fingerprint", format!("{} ids for {} fingerprints", ids.len(), fps.len())));
        }
        if bits > MAX_BUCKET_BITS {
            return Err(Error::invalid("bits", "from 0 to 16", bits));
        }
        let n = fps.len();
        let tables = self.tables();
        let mut items: Vec<[u64; 2]> = crate::mem::zeroed(n * tables);
        let per_table: Vec<(Vec<u32>, Vec<u64>)> = items
            .par_chunks_mut(n.max(1))
            .take(tables)
            .enumerate()
            .map(|(t, out)| {
                let spec = &self.design.tables()[t];
                let b = self.bucket_bits(t, bits);
                let mut counts = vec![0u64; 1 << b];
                // Each item's bucket, kept for the scatter (b is at most 16 bits).
                let of: Vec<u16> = fps.iter().map(|&fp| Self::bucket(spec.perm.apply(fp), b) as u16).collect();
                for &x in &of {
                    counts[x as usize] += 1;
                }
                let mut at = Vec::with_capacity(counts.len());
                let mut sum = 0u64;
                for &c in &counts {
                    at.push(sum);
                    sum += c;
                }
                let starts = at.clone();
                for ((&fp, &id), &x) in fps.iter().zip(ids).zip(&of) {
                    let slot = &mut at[x as usize];
                    out[*slot as usize] = [fp, id];
                    *slot += 1;
                }
                let offset = (t * n) as u64;
                let filled: Vec<u32> = (0..counts.len() as u32).filter(|&i| counts[i as usize] > 0).collect();
                let starts = filled.iter().map(|&i| offset + starts[i as usize]).collect();
                (filled, starts)
            })
            .collect();
        let mut packed = Packed { items, ..Packed::default() };
        if n == 0 {
            packed.starts.push(0);
            return Ok(packed);
        }
        for (t, (filled, starts)) in per_table.into_iter().enumerate() {
            packed.tables.extend(std::iter::repeat_n(t as u32, filled.len()));
            packed.buckets.extend(filled);
            packed.starts.extend(starts);
        }
        packed.starts.push((n * tables) as u64);
        Ok(packed)
    }

    /// The pairs table `t` reports among `items` (`[fingerprint, id]`, in
    /// any order: the whole of one or more of the table's buckets), as
    /// `output` asks, each `[smaller, larger]` as signed ids; in no
    /// particular order.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] for a table past the design's, or more
    /// than 2^32 - 1 distinct fingerprints.
    pub fn reduce(&self, t: usize, items: &mut [[u64; 2]], output: Output) -> Result<Vec<[i64; 2]>> {
        if t >= self.tables() {
            return Err(Error::invalid("table", "a table of the design", t));
        }
        // Each item's fingerprint becomes its key in the table (the ids are
        // all the answer needs), sorted by key, then id: groups sharing the
        // prefix together, and in them copies together, smallest id first.
        let perm = &self.design.tables()[t].perm;
        for item in items.iter_mut() {
            item[0] = perm.apply(item[0]);
        }
        // By key alone (cheaper than by the pair), then each run of copies by id.
        items.sort_unstable_by_key(|&[key, _]| key);
        let mut i = 0;
        while i < items.len() {
            let end = i + items[i..].iter().position(|x| x[0] != items[i][0]).unwrap_or(items.len() - i);
            if end - i > 1 {
                items[i..end].sort_unstable_by_key(|&[_, id]| id as i64);
            }
            i = end;
        }
        let mut starts: Vec<u32> = Vec::new();
        let mut keys: Vec<u64> = Vec::new();
        for (i, item) in items.iter().enumerate() {
            if i == 0 || items[i - 1][0] != item[0] {
                starts.push(u32::try_from(i).map_err(|_| Error::invalid("items", "fewer than 2^32 a task", items.len()))?);
                keys.push(item[0]);
            }
        }
        let distinct = starts.len();
        starts.push(items.len() as u32);
        let pos: Vec<u32> = (0..distinct as u32).collect();
        let dense = if output == Output::Forest { Dense::Join } else { Dense::Compare };
        let kernel = TableKernel::with_dense(&self.design, t, self.k(), true, dense, 0);
        let found = kernel.scan_sorted(&keys, &pos, &Control::default())?;
        drop((keys, pos));

        let id = |i: u32| items[i as usize][1] as i64;
        let run = |d: u32| starts[d as usize]..starts[d as usize + 1];
        let ordered = |a: i64, b: i64| if a <= b { [a, b] } else { [b, a] };
        let mut out: Vec<[i64; 2]> = Vec::new();
        match output {
            Output::All => {
                for &p in &found.pairs {
                    let (a, b) = unpack(p);
                    for x in run(a) {
                        out.extend(run(b).map(|y| ordered(id(x), id(y))));
                    }
                }
            }
            Output::First => out.extend(found.pairs.iter().map(|&p| {
                let (a, b) = unpack(p);
                ordered(id(starts[a as usize]), id(starts[b as usize]))
            })),
            Output::Forest => {
                let mut components = crate::cluster::graph::Components::new(distinct);
                out.extend(found.pairs.iter().filter_map(|&p| {
                    let (a, b) = unpack(p);
                    components.join(a, b).then(|| ordered(id(starts[a as usize]), id(starts[b as usize])))
                }));
            }
        }
        if self.design.reports(t, 0) {
            for d in 0..distinct as u32 {
                let r = run(d);
                if output == Output::All {
                    for x in r.clone() {
                        out.extend((x + 1..r.end).map(|y| ordered(id(x), id(y))).filter(|[a, b]| a != b));
                    }
                } else {
                    let first = id(r.start);
                    out.extend((r.start + 1..r.end).map(|y| [first, id(y)]).filter(|[a, b]| a != b));
                }
            }
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::{BTreeMap, BTreeSet};

    /// The job as an engine would run it: the items cut among `maps` map
    /// tasks, each packed; the blocks of each `(table, bucket)` brought
    /// together (in the map tasks' order reversed: any order will do) and
    /// reduced.
    fn shuffled(items: &[[u64; 2]], k: u32, blocks: u32, bits: u32, maps: usize, output: Output) -> Vec<[i64; 2]> {
        let s = ShuffleTables::new(k, blocks).unwrap();
        let mut buckets: BTreeMap<(u32, u32), Vec<[u64; 2]>> = BTreeMap::new();
        for chunk in items.chunks(items.len().div_ceil(maps).max(1)).rev() {
            let fps: Vec<u64> = chunk.iter().map(|x| x[0]).collect();
            let ids: Vec<u64> = chunk.iter().map(|x| x[1]).collect();
            let p = s.pack(&fps, &ids, bits).unwrap();
            for b in 0..p.tables.len() {
                let block = &p.items[p.starts[b] as usize..p.starts[b + 1] as usize];
                assert!(block
                    .iter()
                    .all(|&[fp, _]| ShuffleTables::bucket(s.design.tables()[p.tables[b] as usize].perm.apply(fp), s.bucket_bits(p.tables[b] as usize, bits))
                        == p.buckets[b] as usize));
                buckets.entry((p.tables[b], p.buckets[b])).or_default().extend_from_slice(block);
            }
        }
        let mut out = Vec::new();
        for ((t, _), mut items) in buckets {
            out.extend(s.reduce(t as usize, &mut items, output).unwrap());
        }
        out.sort_unstable();
        out
    }

    /// Every pair of items within k, by brute force.
    fn brute(items: &[[u64; 2]], k: u32) -> Vec<[i64; 2]> {
        let mut out = Vec::new();
        for (i, a) in items.iter().enumerate() {
            for b in &items[i + 1..] {
                if (a[0] ^ b[0]).count_ones() <= k {
                    let (x, y) = (a[1] as i64, b[1] as i64);
                    out.push([x.min(y), x.max(y)]);
                }
            }
        }
        out.sort_unstable();
        out
    }

    /// Items with distinct ids, some of them negative as signed values.
    fn with_ids(fps: Vec<u64>, salt: u64) -> Vec<[u64; 2]> {
        fps.into_iter().enumerate().map(|(i, fp)| [fp, (i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ salt]).collect()
    }

    fn components(pairs: &[[i64; 2]]) -> BTreeMap<i64, i64> {
        let mut root: BTreeMap<i64, i64> = BTreeMap::new();
        fn find(root: &mut BTreeMap<i64, i64>, x: i64) -> i64 {
            let p = *root.entry(x).or_insert(x);
            if p == x {
                return x;
            }
            let r = find(root, p);
            root.insert(x, r);
            r
        }
        for &[a, b] in pairs {
            let (ra, rb) = (find(&mut root, a), find(&mut root, b));
            root.insert(ra.max(rb), ra.min(rb));
        }
        let keys: Vec<i64> = root.keys().copied().collect();
        keys.into_iter().map(|x| (x, find(&mut root, x))).collect()
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        #[test]
        fn every_pair_once_for_any_partitioning(
            fps in crate::testing::planted(30, 300), k in 0u32..=6, extra in 1u32..4, bits in 0u32..6,
            maps in 1usize..5, salt in any::<u64>(),
        ) {
            let items = with_ids(fps, salt);
            let got = shuffled(&items, k, k + extra, bits, maps, Output::All);
            prop_assert!(got.windows(2).all(|w| w[0] < w[1]), "a pair twice");
            let want = brute(&items, k);
            prop_assert_eq!(&got, &want);
            let first = shuffled(&items, k, k + extra, bits, maps, Output::First);
            prop_assert!(first.windows(2).all(|w| w[0] < w[1]), "a pair twice");
            let forest = shuffled(&items, k, k + extra, bits, maps, Output::Forest);
            // A forest a bucket: fewer pairs than items in each table.
            prop_assert!(forest.len() < crate::plan::binomial(k + extra, k).max(1) * items.len().max(1));
            prop_assert_eq!(components(&first), components(&want));
            prop_assert_eq!(components(&forest), components(&want));
        }
    }

    #[test]
    fn copies_collapse_onto_the_smallest_id() {
        // One fingerprint 500 times, and a neighbour 1 bit away twice.
        let mut items: Vec<[u64; 2]> = (0..500u64).map(|i| [0xABCD, 1000 - i]).collect();
        items.push([0xABCC, 7]);
        items.push([0xABCC, (-3i64) as u64]);
        let all = shuffled(&items, 3, 5, 2, 3, Output::All);
        assert_eq!(all, brute(&items, 3));
        let first = shuffled(&items, 3, 5, 2, 3, Output::First);
        // 499 links to id 501, one to id -3, and the two smallest ids paired.
        assert_eq!(first.len(), 499 + 1 + 1);
        assert!(first.contains(&[-3, 501]) && first.contains(&[-3, 7]));
        assert!(first.iter().filter(|p| p[0] == 501).count() == 499);
    }

    #[test]
    fn extremes_empty_and_bad_arguments() {
        let fps = [0u64, 1, 3, 7, u64::MAX, u64::MAX - 1, u64::MAX >> 1, 1 << 63, 0, u64::MAX];
        let items = with_ids(fps.to_vec(), 5);
        for k in 0..=3 {
            for bits in [0, 3, 16] {
                assert_eq!(shuffled(&items, k, k + 2, bits, 2, Output::All), brute(&items, k), "k = {k}");
            }
        }
        let s = ShuffleTables::new(3, 4).unwrap();
        let empty = s.pack(&[], &[], 4).unwrap();
        assert!(empty.tables.is_empty() && empty.starts == [0]);
        assert!(s.pack(&[1, 2], &[1], 0).is_err());
        assert!(s.pack(&[1], &[1], 17).is_err());
        assert!(s.reduce(4, &mut [[1, 1]], Output::All).is_err());
        assert!(s.reduce(0, &mut [], Output::All).unwrap().is_empty());
    }

    #[test]
    fn a_dense_ball_joins_in_few_pairs() {
        // Every value within 2 bits of one centre: 2,081 values, about a
        // million pairs within 3; the forest keeps one pair a value at most.
        let centre = 0x0123_4567_89AB_CDEFu64;
        let mut fps = vec![centre];
        for i in 0..64 {
            fps.push(centre ^ 1 << i);
            for j in i + 1..64 {
                fps.push(centre ^ 1 << i ^ 1 << j);
            }
        }
        let items = with_ids(fps.iter().copied().collect::<BTreeSet<_>>().into_iter().collect(), 0);
        let forest = shuffled(&items, 3, 4, 4, 2, Output::Forest);
        assert!(forest.len() <= 4 * items.len(), "{}", forest.len());
        let ids: BTreeSet<i64> = components(&forest).into_values().collect();
        assert_eq!(ids.len(), 1);
    }
}
