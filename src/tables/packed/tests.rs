//! Packed tables against the sorted keys they hold: searches, parts and pairs sharing a prefix.

use super::*;
use proptest::prelude::*;

fn keys() -> impl Strategy<Value = Vec<u64>> {
    keys_up_to(3000)
}

/// Up to `most` distinct sorted keys, of three shapes.
fn keys_up_to(most: usize) -> impl Strategy<Value = Vec<u64>> {
    prop_oneof![
        prop::collection::btree_set(prop_oneof![any::<u64>(), Just(0u64), Just(u64::MAX)], 0..most),
        (any::<u64>(), prop::collection::btree_set(0u64..5000, 0..most)).prop_map(|(hi, s)| s.into_iter().map(|x| (hi << 16) | x).collect()),
        // Few distinct top halves: many neighbours that marks must skip.
        prop::collection::btree_set((0u64..16, any::<u32>()).prop_map(|(a, b)| a << 32 | u64::from(b)), 0..most),
    ]
    .prop_map(|s| s.into_iter().collect())
}

proptest! {
    #[test]
    fn searches_match_a_sorted_array(keys in keys(), probes in prop::collection::vec(any::<u64>(), 1..20),
                                      width in 0u32..64, block_bytes in prop_oneof![Just(16usize), Just(1024), 16usize..300]) {
        let t = PackedTable::encode(&keys, block_bytes);
        prop_assert_eq!(t.len(), keys.len());
        prop_assert_eq!(t.decode(), keys.clone());
        let again = t.parts();
        let t2 = PackedTable::from_parts(
            block_bytes, *again.lengths, Bytes::from_vec(again.data.to_vec()),
            Bytes::from_vec(again.first.iter().flat_map(|k| k.to_le_bytes()).collect()),
            Bytes::from_vec(again.ranks.iter().flat_map(|k| k.to_le_bytes()).collect()),
            |k| k.wrapping_mul(0x9e37_79b9_7f4a_7c15),
        );
        let (t2, sum) = t2.expect("a table's own parts are valid");
        prop_assert_eq!(sum, keys.iter().fold(0u64, |s, &k| s.wrapping_add(k.wrapping_mul(0x9e37_79b9_7f4a_7c15))));
        for &k in keys.iter().step_by(37) {
            prop_assert_eq!(t.position(k), keys.binary_search(&k).ok());
            prop_assert_eq!(t2.position(k), keys.binary_search(&k).ok());
        }
        for &p in probes.iter().chain(keys.iter().take(5)) {
            prop_assert_eq!(t.position(p), keys.binary_search(&p).ok());
            let mask = u64::MAX.checked_shl(width).unwrap_or(0);
            let (lo, hi) = (p & mask, p | !mask);
            let mut got = Vec::new();
            t.for_each_in(lo, hi, |k| got.push(k));
            let expected: Vec<u64> = keys.iter().copied().filter(|&k| lo <= k && k <= hi).collect();
            prop_assert_eq!(&got, &expected);
            // The same searches run together.
            let mut searches = vec![t.search(lo, hi), t2.search(lo, hi), t.search(lo, hi)];
            let mut together = vec![Vec::new(); 3];
            search_all(&mut searches, |i, k, rank| {
                assert_eq!(keys[rank], k);
                together[i].push(k)
            });
            prop_assert!(together.iter().all(|g| g == &expected));
        }
    }

    #[test]
    // Up to 1,500 keys: a wide prefix pairs them all, and 3,000 keys made
    // 4.5 million pairs a case (this test was 30 s of each Rust test run);
    // 16-byte blocks still cut such a table into hundreds of blocks.
    fn pairs_sharing_a_prefix_are_found_in_independent_parts(keys in keys_up_to(1500), below in prop_oneof![0u32..=64, 40u32..50],
                                                             block_bytes in prop_oneof![Just(16usize), Just(1024), 16usize..300]) {
        let t = PackedTable::encode(&keys, block_bytes);
        let mut expected = Vec::new();
        for (a, &x) in keys.iter().enumerate() {
            for &y in keys[a + 1..].iter().take_while(|&&y| (x ^ y).checked_shr(below).unwrap_or(0) == 0) {
                expected.push((x, y));
            }
        }
        expected.sort_unstable();
        for parts in [1, 2, 7] {
            let ranges = t.independent_parts(below, parts);
            prop_assert!(ranges.len() <= parts);
            prop_assert_eq!(ranges.iter().map(|r| r.len()).sum::<usize>(), t.blocks());
            prop_assert!(ranges.windows(2).all(|w| w[0].end == w[1].start));
            let mut got = Vec::new();
            for r in ranges {
                t.for_each_pair_sharing_prefix(r, below, |a, b| got.push((a, b)));
            }
            got.sort_unstable();
            prop_assert_eq!(&got, &expected);
        }
    }
}
