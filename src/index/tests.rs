//! The Index against brute force: adds, removes, queries, find_all, clusters and dedups on every layout.

use super::*;
use proptest::prelude::*;

fn brute_pairs(items: &[(u64, u64)], k: u32) -> Vec<[u64; 2]> {
    let mut out = Vec::new();
    for (x, &(fa, ia)) in items.iter().enumerate() {
        for &(fb, ib) in &items[x + 1..] {
            if (fa ^ fb).count_ones() <= k {
                out.push([ia.min(ib), ia.max(ib)]);
            }
        }
    }
    out.sort_unstable();
    out
}

/// Raw tables, and packed ones in blocks from the smallest size up.
fn layouts() -> impl Strategy<Value = Layout> {
    prop_oneof![Just(Layout::Raw), Just(Layout::Packed(16)), Just(Layout::Packed(100)), Just(Layout::DEFAULT)]
}

fn data() -> impl Strategy<Value = Vec<u64>> {
    planted(40, 120)
}

pub(crate) use crate::testing::planted;

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn matches_brute_force(fps in data(), k in 0u32..=5, extra in 0u32..3, chunk in 1usize..700, layout in layouts()) {
        let mut index = Index::new(k, Some(k + 1 + extra).filter(|_| extra > 0), None).unwrap();
        index.set_layout(layout).unwrap();
        for part in fps.chunks(chunk) {
            index.add(part, None).unwrap();
        }
        let items: Vec<(u64, u64)> = fps.iter().enumerate().map(|(i, &f)| (f, i as u64)).collect();
        prop_assert_eq!(index.len(), items.len());
        prop_assert_eq!(index.find_all(None, Copies::All).unwrap(), brute_pairs(&items, k));
        prop_assert_eq!(index.find_all_by_kernel(k, Copies::All).unwrap(), brute_pairs(&items, k));
        for &q in fps.iter().take(20).chain([0, u64::MAX].iter()) {
            let mut expected: Vec<(u64, u32)> = items.iter()
                .map(|&(f, id)| (id, (f ^ q).count_ones()))
                .filter(|&(_, d)| d <= k).collect();
            expected.sort_unstable_by_key(|&(id, d)| (d, id));
            prop_assert_eq!(index.query(q, None).unwrap(), expected);
        }
        let batch = index.query_batch(&fps, None).unwrap();
        for (pos, &q) in fps.iter().enumerate() {
            let got: Vec<u64> = (0..batch.positions.len()).filter(|&m| batch.positions[m] as usize == pos).map(|m| batch.ids[m]).collect();
            let expected: Vec<u64> = index.query(q, None).unwrap().into_iter().map(|(id, _)| id).collect();
            prop_assert_eq!(got, expected);
        }
    }

    #[test]
    fn add_unique_is_a_stream_loop(fps in data(), k in 0u32..=4, split in 1usize..200, layout in layouts()) {
        let mut index = Index::new(k, None, None).unwrap();
        index.set_layout(layout).unwrap();
        let mut kept: Vec<(u64, u64)> = Vec::new();
        let mut offset = 0u64;
        for part in fps.chunks(split) {
            let (is_new, matched) = index.add_unique(part, None, None).unwrap();
            for (p, &fp) in part.iter().enumerate() {
                let id = offset + p as u64;
                let near = kept.iter().filter(|&&(f, _)| (f ^ fp).count_ones() <= k).map(|&(_, i)| i).min();
                match near {
                    Some(m) => { prop_assert!(!is_new[p]); prop_assert_eq!(matched[p], m); }
                    None => { prop_assert!(is_new[p]); prop_assert_eq!(matched[p], id); kept.push((fp, id)); }
                }
            }
            offset += part.len() as u64;
        }
        prop_assert_eq!(index.len(), kept.len());
    }

    #[test]
    fn remove_then_query(fps in data(), k in 0u32..=3, drop in prop::collection::vec(any::<prop::sample::Index>(), 0..60), layout in layouts()) {
        let mut index = Index::new(k, None, None).unwrap();
        index.set_layout(layout).unwrap();
        index.add(&fps, None).unwrap();
        let mut items: Vec<(u64, u64)> = fps.iter().enumerate().map(|(i, &f)| (f, i as u64)).collect();
        let gone: Vec<u64> = drop.iter().map(|d| d.index(fps.len()) as u64).collect();
        let unique: HashSet<u64> = gone.iter().copied().collect();
        prop_assert_eq!(index.remove(&gone), unique.len());
        items.retain(|(_, id)| !unique.contains(id));
        prop_assert_eq!(index.len(), items.len());
        prop_assert_eq!(index.find_all(None, Copies::All).unwrap(), brute_pairs(&items, k));
        prop_assert_eq!(index.find_all_by_kernel(k, Copies::All).unwrap(), brute_pairs(&items, k));
        prop_assert_eq!(index.find_all_by_kernel(k, Copies::All).unwrap(), brute_pairs(&items, k));
        // Ids are never reused; removed ids may be added again explicitly.
        let again: Vec<u64> = unique.iter().copied().collect();
        index.add(&vec![7; again.len()], Some(&again)).unwrap();
        prop_assert_eq!(index.len(), fps.len());
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// Streamed or at once, on copies and dense balls, with default ids
    /// or ids in any order (some below those stored before): each input
    /// is new exactly when no kept item is within k, and matches the
    /// smallest id of those.
    #[test]
    fn add_unique_on_skew(fps in crate::testing::skewed(1500, 1500), k in 0u32..=4, split in prop_oneof![Just(usize::MAX), 1usize..400],
                          explicit in any::<bool>(), seed in any::<u64>(), stored in prop::collection::vec(any::<u64>(), 0..20)) {
        let mut index = Index::new(k, None, None).unwrap();
        // Items stored before, some near the stream (its first few, moved a bit).
        let mut before: Vec<u64> = stored;
        before.extend(fps.iter().take(3).map(|&f| f ^ 1 << (seed % 64)));
        let before_ids: Vec<u64> = (0..before.len() as u64).map(|i| 1_000_000 + 7 * i).collect();
        index.add(&before, Some(&before_ids)).unwrap();
        let mut kept: Vec<(u64, u64)> = before.iter().copied().zip(before_ids.iter().copied()).collect();
        let ids: Vec<u64> = (0..fps.len() as u64).map(|i| if explicit { crate::job::mix(i ^ seed) >> 8 } else { 1_000_000 + 7 * (before.len() as u64 - 1) + 1 + i }).collect();
        let mut offset = 0;
        for part in fps.chunks(split.min(fps.len().max(1))) {
            let part_ids = &ids[offset..offset + part.len()];
            let (is_new, matched) = index.add_unique(part, explicit.then_some(part_ids), None).unwrap();
            for (p, &fp) in part.iter().enumerate() {
                let near = kept.iter().filter(|&&(f, _)| (f ^ fp).count_ones() <= k).map(|&(_, i)| i).min();
                match near {
                    Some(m) => { prop_assert!(!is_new[p], "input {}", offset + p); prop_assert_eq!(matched[p], m, "input {}", offset + p); }
                    None => { prop_assert!(is_new[p], "input {}", offset + p); prop_assert_eq!(matched[p], part_ids[p]); kept.push((fp, part_ids[p])); }
                }
            }
            offset += part.len();
        }
        prop_assert_eq!(index.len(), kept.len());
    }

    /// Clusters and both kinds of find_all on copies and dense balls,
    /// with ids in any order, against brute force.
    #[test]
    fn clusters_and_pairs_on_skew(fps in crate::testing::skewed(600, 800), k in 0u32..=4, seed in any::<u64>(), min_size in 1usize..3) {
        let ids: Vec<u64> = (0..fps.len() as u64).map(|i| crate::job::mix(i ^ seed)).collect();
        let mut index = Index::new(k, None, None).unwrap();
        index.add(&fps, Some(&ids)).unwrap();
        // By id order, positions are ranks.
        let mut order: Vec<usize> = (0..fps.len()).collect();
        order.sort_unstable_by_key(|&i| ids[i]);
        let by_id: Vec<u64> = order.iter().map(|&i| fps[i]).collect();
        let id_of = |r: u64| ids[order[r as usize]];
        for method in [ClusterMethod::Connected, ClusterMethod::Leader] {
            let expected: Vec<Vec<u64>> = crate::testing::brute_clusters(&by_id, k, min_size, method)
                .into_iter().map(|g| g.into_iter().map(id_of).collect()).collect();
            prop_assert_eq!(index.cluster(None, min_size, method).unwrap(), expected);
        }
        let mut all: Vec<[u64; 2]> = crate::testing::brute_pairs(&by_id, k).into_iter().map(|[a, b]| [id_of(a), id_of(b)]).collect();
        all.iter_mut().for_each(|p| p.sort_unstable());
        all.sort_unstable();
        prop_assert_eq!(index.find_all(None, Copies::All).unwrap(), all);
        let first = crate::testing::brute_first_pairs(&by_id, k);
        let mut first: Vec<[u64; 2]> = first.into_iter().map(|[a, b]| { let (x, y) = (id_of(a), id_of(b)); [x.min(y), x.max(y)] }).collect();
        first.sort_unstable();
        prop_assert_eq!(index.find_all(None, Copies::First).unwrap(), first);
    }
}

#[test]
fn bad_arguments() {
    assert!(Index::new(17, None, None).is_err());
    assert!(Index::new(3, Some(3), None).is_err());
    assert!(Index::new(3, Some(5), Some(4)).is_err());
    let mut index = Index::new(3, None, None).unwrap();
    assert!(index.query(1, Some(4)).is_err());
    assert!(index.add(&[1, 2], Some(&[5])).is_err());
    assert!(index.add(&[1, 2], Some(&[5, 5])).is_err());
    index.add(&[1], Some(&[5])).unwrap();
    assert!(index.add(&[1], Some(&[5])).is_err());
    assert_eq!(index.add(&[2], None).unwrap(), vec![6]);
    index.add(&[3], Some(&[u64::MAX])).unwrap();
    assert!(index.add(&[4], None).is_err());
}

/// The tables' first close pair may start at key 0, with no key before
/// it (the proptests' indexes are mostly too small to leave the buffer).
#[test]
fn find_all_from_key_zero() {
    let mut fps: Vec<u64> = (1..=3000u64).map(|i| i.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1 << 63).collect();
    fps.extend([0, 1, 3, u64::MAX, u64::MAX - 1]);
    let items: Vec<(u64, u64)> = fps.iter().enumerate().map(|(i, &f)| (f, i as u64)).collect();
    for layout in [Layout::Raw, Layout::Packed(16), Layout::Packed(100), Layout::DEFAULT] {
        for k in [1, 3] {
            let mut index = Index::new(k, None, None).unwrap();
            index.set_layout(layout).unwrap();
            index.add(&fps, None).unwrap();
            assert_eq!(index.shape(), (1, 0), "one run, nothing buffered");
            let mut pairs = index.find_all(None, Copies::All).unwrap();
            pairs.sort_unstable();
            assert_eq!(pairs, brute_pairs(&items, k), "{layout:?}, k = {k}");
        }
    }
}

/// Clusters of an index where one fingerprint carries thousands of ids
/// (the batch kernel's path), against a union-find over brute force.
#[test]
fn clusters_of_many_copies() {
    let mut fps: Vec<u64> = (0..1000u64).map(|i| i.wrapping_mul(0x9e37_79b9_7f4a_7c15)).collect();
    fps.extend(std::iter::repeat_n(fps[10], 3000));
    fps.extend(std::iter::repeat_n(fps[20] ^ 0b11, 500));
    fps.push(fps[10] ^ 1 << 40);
    let items: Vec<(u64, u64)> = fps.iter().enumerate().map(|(i, &f)| (f, 5 * i as u64)).collect();
    let ids: Vec<u64> = items.iter().map(|p| p.1).collect();
    for layout in [Layout::Raw, Layout::DEFAULT] {
        let mut index = Index::new(3, None, None).unwrap();
        index.set_layout(layout).unwrap();
        index.add(&fps, Some(&ids)).unwrap();
        assert!(index.copy_pairs() > index.len() as u64, "the test takes the kernel's path");
        let expected: Vec<Vec<u64>> = crate::testing::brute_clusters(&fps, 3, 2, ClusterMethod::Connected)
            .into_iter()
            .map(|g| g.into_iter().map(|i| ids[i as usize]).collect())
            .collect();
        assert_eq!(index.cluster(None, 2, ClusterMethod::Connected).unwrap(), expected, "{layout:?}");
    }
}

#[test]
fn many_single_adds_merge_into_few_runs() {
    let mut index = Index::new(3, None, None).unwrap();
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    for _ in 0..20_000 {
        x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        index.add(&[x], None).unwrap();
    }
    let (runs, buffer) = index.shape();
    assert!(runs <= 6 && buffer < BUFFER_MAX, "{runs} runs, {buffer} buffered");
    assert_eq!(index.len(), 20_000);
}
