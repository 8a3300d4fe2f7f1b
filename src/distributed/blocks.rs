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

use super::routes::{Routes, Task};
use super::ShuffleTables;

/// The most bits a table's fine buckets take (65,536 a table).
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

/// The blocks of a map task: block `b` goes to reduce task `tasks[b]` and
/// holds items `items[starts[b]..starts[b + 1]]` as `[fingerprint, id]`.
/// Blocks come ordered by task (so by table); empty ones are left out.
#[derive(Debug, Default)]
pub struct Packed {
    pub tasks: Vec<u32>,
    pub starts: Vec<u64>,
    pub items: Vec<[u64; 2]>,
}

impl ShuffleTables {
    /// Every item once a table, or once for each task of its cell when its
    /// unit is split ([`Routes`]), grouped by task: a counting pass and a
    /// scatter, each table on its own thread.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] when `ids` is not one per fingerprint,
    /// or `routes` are another design's.
    pub fn pack(&self, fps: &[u64], ids: &[u64], routes: &Routes) -> Result<Packed> {
        use rayon::prelude::*;
        if ids.len() != fps.len() {
            return Err(Error::invalid("ids", "one id per fingerprint", format!("{} ids for {} fingerprints", ids.len(), fps.len())));
        }
        self.check_fine(routes.fine())?;
        let tables = self.tables();
        // Each item's unit in each table, and the items of each of the table's tasks.
        let counted: Vec<(Vec<u32>, Vec<u64>)> = (0..tables)
            .into_par_iter()
            .map(|t| {
                let perm = &self.design.tables()[t].perm;
                let base = routes.table_tasks(t).start;
                let mut counts = vec![0u64; routes.table_tasks(t).len()];
                let of = fps
                    .iter()
                    .map(|&fp| {
                        let key = perm.apply(fp);
                        let u = routes.unit(t, key);
                        let m = routes.cells()[u as usize];
                        if m == 1 {
                            counts[(routes.task_of(u, 0, 0) - base) as usize] += 1;
                        } else {
                            let c = Routes::cell(key, m);
                            for j in 0..m {
                                counts[(routes.task_of(u, c.min(j), c.max(j)) - base) as usize] += 1;
                            }
                        }
                        u
                    })
                    .collect();
                (of, counts)
            })
            .collect();
        let sizes: Vec<usize> = counted.iter().map(|(_, c)| c.iter().sum::<u64>() as usize).collect();
        let mut items: Vec<[u64; 2]> = crate::mem::zeroed(sizes.iter().sum());
        let mut parts: Vec<&mut [[u64; 2]]> = Vec::with_capacity(tables);
        let mut rest = items.as_mut_slice();
        for &size in &sizes {
            let (head, tail) = rest.split_at_mut(size);
            parts.push(head);
            rest = tail;
        }
        let per_table: Vec<Vec<u64>> = parts
            .into_par_iter()
            .zip(&counted)
            .enumerate()
            .map(|(t, (out, (of, counts)))| {
                let perm = &self.design.tables()[t].perm;
                let base = routes.table_tasks(t).start;
                let mut at = Vec::with_capacity(counts.len());
                let mut sum = 0u64;
                for &c in counts {
                    at.push(sum);
                    sum += c;
                }
                let starts = at.clone();
                for ((&fp, &id), &u) in fps.iter().zip(ids).zip(of) {
                    let m = routes.cells()[u as usize];
                    let mut put = |task: u32| {
                        let slot = &mut at[(task - base) as usize];
                        out[*slot as usize] = [fp, id];
                        *slot += 1;
                    };
                    if m == 1 {
                        put(routes.task_of(u, 0, 0));
                    } else {
                        let c = Routes::cell(perm.apply(fp), m);
                        for j in 0..m {
                            put(routes.task_of(u, c.min(j), c.max(j)));
                        }
                    }
                }
                starts
            })
            .collect();
        let mut packed = Packed::default();
        let mut offset = 0u64;
        for (t, (starts, (_, counts))) in per_table.into_iter().zip(&counted).enumerate() {
            let base = routes.table_tasks(t).start;
            for (x, (&start, &c)) in starts.iter().zip(counts).enumerate() {
                if c > 0 {
                    packed.tasks.push(base + x as u32);
                    packed.starts.push(offset + start);
                }
            }
            offset += sizes[t] as u64;
        }
        packed.starts.push(offset);
        packed.items = items;
        Ok(packed)
    }

    /// The pairs reduce task `task` of `routes` reports among `items`
    /// (`[fingerprint, id]`, in any order: every item [`Self::pack`] sent
    /// it), as `output` asks, each `[smaller, larger]` as signed ids; in no
    /// particular order. A task of two cells `i < j` reports only the pairs
    /// across them with [`Output::All`] and [`Output::First`] (those within
    /// a cell are its own task's); with [`Output::Forest`] it joins its
    /// components whatever cells they lie in.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] for a task past the routes' last, routes
    /// of another design, or more than 2^32 - 1 distinct fingerprints.
    pub fn reduce(&self, routes: &Routes, task: u32, items: &mut Vec<[u64; 2]>, output: Output) -> Result<Vec<[i64; 2]>> {
        self.check_fine(routes.fine())?;
        let Task { table: t, cells, i: ci, j: cj, .. } = routes.task(task)?;
        let cross = ci != cj;
        // Each item's fingerprint becomes its key in the table (the ids are
        // all the answer needs), sorted by key, then id: groups sharing the
        // prefix together, and in them copies together, smallest id first.
        let perm = &self.design.tables()[t].perm;
        for item in items.iter_mut() {
            item[0] = perm.apply(item[0]);
        }
        // The batch engine's radix sort on the top bits of the key (a task
        // holds millions of items),
        // runs sharing them by key, then id.
        let bits = crate::tables::radix::sort_bits(items.len(), self.prefix(t));
        crate::tables::radix::sort_by_top_bits(items, &mut Vec::new(), bits, |x| x[0], |x, y| (x[0], x[1] as i64).cmp(&(y[0], y[1] as i64)));
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
        let mut found = kernel.scan_sorted(&keys, &pos, &Control::default())?;
        drop(pos);
        if cross && output != Output::Forest {
            // Pairs within one cell are the task (c, c)'s.
            found.pairs.retain(|&p| {
                let (a, b) = unpack(p);
                Routes::cell(keys[a as usize], cells) != Routes::cell(keys[b as usize], cells)
            });
        }
        drop(keys);

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
        // Copies of a value share a cell: their pairs are the task (c, c)'s.
        if self.design.reports(t, 0) && !cross {
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
    /// tasks; a count pass over them (their histograms summed) and routes
    /// planned from it for `target` and `cap` distinct values a task; each
    /// map task packed; the blocks of each task brought together (in the
    /// map tasks' order reversed: any order will do) and reduced.
    fn shuffled_capped(items: &[[u64; 2]], k: u32, blocks: u32, bits: u32, maps: usize, cap: u64, output: Output) -> Vec<[i64; 2]> {
        let s = ShuffleTables::new(k, blocks).unwrap();
        let chunks: Vec<&[[u64; 2]]> = items.chunks(items.len().div_ceil(maps).max(1)).rev().collect();
        let fine: Vec<u32> = (0..s.tables()).map(|t| s.fine_bits(t, bits)).collect();
        let mut hist = vec![0u64; fine.iter().map(|&f| 1usize << f).sum()];
        for chunk in &chunks {
            let fps: Vec<u64> = chunk.iter().map(|x| x[0]).collect();
            for (h, c) in hist.iter_mut().zip(s.histogram(&fps, &fine).unwrap()) {
                *h += u64::from(c);
            }
        }
        let routes = s.plan(&fine, &hist, cap.div_ceil(2), cap).unwrap();
        let mut tasks: BTreeMap<u32, Vec<[u64; 2]>> = BTreeMap::new();
        for chunk in &chunks {
            let fps: Vec<u64> = chunk.iter().map(|x| x[0]).collect();
            let ids: Vec<u64> = chunk.iter().map(|x| x[1]).collect();
            let p = s.pack(&fps, &ids, &routes).unwrap();
            assert!(p.tasks.windows(2).all(|w| w[0] < w[1]));
            for b in 0..p.tasks.len() {
                let block = &p.items[p.starts[b] as usize..p.starts[b + 1] as usize];
                let task = routes.task(p.tasks[b]).unwrap();
                let table = &s.design.tables()[task.table];
                for &[fp, _] in block {
                    let key = table.perm.apply(fp);
                    assert_eq!(routes.unit(task.table, key), task.unit);
                    if task.cells > 1 {
                        assert!([task.i, task.j].contains(&Routes::cell(key, task.cells)));
                    }
                }
                tasks.entry(p.tasks[b]).or_default().extend_from_slice(block);
            }
        }
        let mut out = Vec::new();
        for (task, mut items) in tasks {
            out.extend(s.reduce(&routes, task, &mut items, output).unwrap());
        }
        out.sort_unstable();
        out
    }

    /// [`shuffled_capped`] with no cap: each fine bucket whole.
    fn shuffled(items: &[[u64; 2]], k: u32, blocks: u32, bits: u32, maps: usize, output: Output) -> Vec<[i64; 2]> {
        shuffled_capped(items, k, blocks, bits, maps, u64::MAX, output)
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
            maps in 1usize..5, salt in any::<u64>(), cap in prop_oneof![Just(u64::MAX), 1u64..40],
        ) {
            let items = with_ids(fps, salt);
            let got = shuffled_capped(&items, k, k + extra, bits, maps, cap, Output::All);
            prop_assert!(got.windows(2).all(|w| w[0] < w[1]), "a pair twice");
            let want = brute(&items, k);
            prop_assert_eq!(&got, &want);
            let first = shuffled_capped(&items, k, k + extra, bits, maps, cap, Output::First);
            prop_assert!(first.windows(2).all(|w| w[0] < w[1]), "a pair twice");
            let forest = shuffled_capped(&items, k, k + extra, bits, maps, cap, Output::Forest);
            if cap == u64::MAX {
                // A forest a bucket: fewer pairs than items in each table.
                prop_assert!(forest.len() < crate::plan::binomial(k + extra, k).max(1) * items.len().max(1));
            }
            prop_assert_eq!(components(&first), components(&want));
            prop_assert_eq!(components(&forest), components(&want));
        }

        #[test]
        fn copies_and_a_dense_ball_split_into_cells(
            centre in prop_oneof![Just(0u64), Just(u64::MAX), any::<u64>()], flips in proptest::collection::vec((0u32..64, 0u32..64), 0..60),
            copies in 1usize..40, loose in proptest::collection::vec(any::<u64>(), 0..20), k in 1u32..=4,
            maps in 1usize..5, cap in 1u64..24, salt in any::<u64>(),
        ) {
            let mut fps: Vec<u64> = flips.iter().map(|&(a, b)| centre ^ 1 << a ^ 1 << b).collect();
            fps.extend(std::iter::repeat_n(centre, copies));
            fps.extend(loose);
            fps.extend([0, u64::MAX]);
            let items = with_ids(fps, salt);
            let want = brute(&items, k);
            for output in [Output::All, Output::First, Output::Forest] {
                let got = shuffled_capped(&items, k, k + 1, 16, maps, cap, output);
                if output == Output::All {
                    prop_assert_eq!(&got, &want);
                } else {
                    if output == Output::First {
                        prop_assert!(got.windows(2).all(|w| w[0] < w[1]), "a pair twice");
                        prop_assert_eq!(&got, &shuffled(&items, k, k + 1, 16, maps, Output::First));
                    }
                    prop_assert_eq!(components(&got), components(&want));
                }
            }
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
        let routes = s.uniform(4);
        let empty = s.pack(&[], &[], &routes).unwrap();
        assert!(empty.tasks.is_empty() && empty.starts == [0]);
        assert!(s.pack(&[1, 2], &[1], &routes).is_err());
        assert!(s.pack(&[1], &[1], &ShuffleTables::new(3, 5).unwrap().uniform(4)).is_err());
        assert!(s.reduce(&routes, routes.tasks(), &mut vec![[1, 1]], Output::All).is_err());
        assert!(s.reduce(&routes, 0, &mut Vec::new(), Output::All).unwrap().is_empty());
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
