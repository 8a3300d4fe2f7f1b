//! The distinct values of fingerprints given in parts, and the values given
//! more than once: what `find-all` on a fingerprint file pairs (each value
//! once, so that a page copied 10^5 times costs one item, not 10^10 pairs)
//! and reports as paired with itself.

use crate::tables::radix::par_sort_parts;

/// See [`distinct`].
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Distinct {
    /// Every value given, once, ascending.
    pub values: Vec<u64>,
    /// Every value given more than once, once, ascending.
    pub repeated: Vec<u64>,
}

/// The values of `parts` (concatenated), distinct and ascending, and those
/// among them given more than once: a radix sort straight from the parts
/// (its buckets sorted on the rayon pool) and one pass, linear in the items
/// whatever their copies.
pub fn distinct(parts: &[&[u64]]) -> Distinct {
    let mut all = par_sort_parts(parts);
    // Compacted in place: `all[..kept]` are the distinct values so far.
    let mut repeated = Vec::new();
    let mut kept = 0;
    for i in 0..all.len() {
        let v = all[i];
        if kept > 0 && all[kept - 1] == v {
            if repeated.last() != Some(&v) {
                repeated.push(v);
            }
        } else {
            all[kept] = v;
            kept += 1;
        }
    }
    all.truncate(kept);
    Distinct { values: all, repeated }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn brute(parts: &[Vec<u64>]) -> Distinct {
        let mut counts = std::collections::BTreeMap::new();
        for &v in parts.iter().flatten() {
            *counts.entry(v).or_insert(0) += 1;
        }
        Distinct { values: counts.keys().copied().collect(), repeated: counts.iter().filter(|(_, &c)| c > 1).map(|(&v, _)| v).collect() }
    }

    fn check(parts: Vec<Vec<u64>>) {
        let slices: Vec<&[u64]> = parts.iter().map(|p| p.as_slice()).collect();
        assert_eq!(distinct(&slices), brute(&parts));
    }

    #[test]
    fn edges() {
        check(vec![]);
        check(vec![vec![], vec![]]);
        check(vec![vec![u64::MAX, 0, u64::MAX, 0, 0]]);
        // 3 x 10^5 copies of one value beside random ones, past the parallel sort's threshold.
        let mut copies = vec![0xdead_beef_u64; 300_000];
        copies.extend((0..300_000u64).map(crate::job::mix));
        check(vec![copies.clone(), copies]);
        // Past the threshold in 5,000 small parts (the blocks of --chunk-mb 0.01): pieces span them.
        check((0..5_000u64).map(|p| (0..300u64).map(|i| crate::job::mix(p * 300 + i % 250)).collect()).collect());
    }

    proptest! {
        /// Dense clusters: values from a few centres with a few bits flipped, so copies abound.
        #[test]
        fn as_brute_force(centres in prop::collection::vec(any::<u64>(), 1..5),
                          picks in prop::collection::vec((0usize..5, 0u32..64, 0u32..64), 0..3000),
                          cut in 0usize..3000) {
            let values: Vec<u64> = picks.iter().map(|&(c, a, b)| centres[c % centres.len()] ^ (1 << a) ^ (1 << b)).collect();
            let cut = cut.min(values.len());
            check(vec![values[..cut].to_vec(), values[cut..].to_vec()]);
        }
    }
}
