//! What the tests of every layer share: fingerprints shaped like real
//! corpora (planted near neighbours, copies, dense balls) and the answers of
//! brute force to hold every index operation and batch job to.

use proptest::prelude::*;

use crate::job::mix;
use crate::ClusterMethod;

/// A seeded stream of pseudo-random `u64` (xorshift64; `seed` not 0):
/// for tests that want many values fast and the same ones every run.
pub(crate) fn xorshift(seed: u64) -> impl FnMut() -> u64 {
    let mut x = seed;
    move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    }
}

/// Fingerprints with planted near neighbours, duplicates and extremes:
/// up to `centers` centers and `near` items 0 to 4 bits from one of them.
pub(crate) fn planted(centers: usize, near: usize) -> impl Strategy<Value = Vec<u64>> {
    (
        prop::collection::vec(prop_oneof![any::<u64>(), Just(0u64), Just(u64::MAX)], 1..centers),
        prop::collection::vec((0usize..centers, prop::collection::vec(0u32..64, 0..5)), 0..near),
    )
        .prop_map(|(centers, noise)| {
            let mut out = centers.clone();
            for (c, flips) in noise {
                out.push(flips.iter().fold(centers[c % centers.len()], |x, &b| x ^ (1 << b)));
            }
            out
        })
}

/// `n` draws from the ball of radius `r` around `center` within the bits
/// of `bits` (every value differing from the center in at most `r` of
/// them): a dense cluster of near-identical fingerprints, copies included.
pub(crate) fn ball(center: u64, r: usize, bits: &[u32], n: usize, seed: u64) -> Vec<u64> {
    (0..n as u64)
        .map(|i| {
            let mut x = mix(seed ^ i.wrapping_mul(0x9e37_79b9_7f4a_7c15));
            let flips = (x % (r as u64 + 1)) as usize;
            (0..flips).fold(center, |v, _| {
                x = mix(x);
                v ^ 1 << bits[(x % bits.len() as u64) as usize]
            })
        })
        .collect()
}

/// The items in an order of `seed`'s choosing (copies and balls apart).
fn shuffled(mut items: Vec<u64>, seed: u64) -> Vec<u64> {
    for i in (1..items.len()).rev() {
        items.swap(i, (mix(seed ^ i as u64) % (i as u64 + 1)) as usize);
    }
    items
}

/// Skewed corpora: planted neighbours, one value copied up to `copies`
/// times, a ball of up to `dense` draws within 2 or 3 bits among 6 to 14
/// bit positions, each mixed with random values and shuffled (or not).
pub(crate) fn skewed(copies: usize, dense: usize) -> impl Strategy<Value = Vec<u64>> {
    let random = prop::collection::vec(any::<u64>(), 0..60);
    let copied = (prop_oneof![any::<u64>(), Just(0u64), Just(u64::MAX)], 1..copies, 0usize..3).prop_map(|(v, n, near)| {
        let mut out = vec![v; n];
        // A few close values and their own copies beside them.
        for b in 0..near {
            out.extend(std::iter::repeat_n(v ^ (0b11 << (7 * b)), n / 3 + 1));
        }
        out
    });
    let dense_ball = (any::<u64>(), 2usize..=3, prop::collection::btree_set(0u32..64, 6..14), 1..dense, any::<u64>())
        .prop_map(|(c, r, bits, n, seed)| ball(c, r, &bits.into_iter().collect::<Vec<_>>(), n, seed));
    (prop_oneof![planted(30, 200), copied, dense_ball], random, any::<u64>(), any::<bool>()).prop_map(|(mut items, random, seed, shuffle)| {
        items.extend(random);
        if shuffle {
            shuffled(items, seed)
        } else {
            items
        }
    })
}

/// Every pair of positions within `k`, `[lower, higher]`, sorted.
pub(crate) fn brute_pairs(fps: &[u64], k: u32) -> Vec<[u64; 2]> {
    let mut out = Vec::new();
    for i in 0..fps.len() {
        for j in i + 1..fps.len() {
            if (fps[i] ^ fps[j]).count_ones() <= k {
                out.push([i as u64, j as u64]);
            }
        }
    }
    out
}

/// The pairs `copies="first"` lists: each copy of a fingerprint with the
/// first copy (the lowest position) only, and first copies within `k`.
pub(crate) fn brute_first_pairs(fps: &[u64], k: u32) -> Vec<[u64; 2]> {
    let first = |x: u64| fps.iter().position(|&f| f == fps[x as usize]).expect("itself") as u64;
    let mut out: Vec<[u64; 2]> =
        brute_pairs(fps, k).into_iter().filter(|&[a, b]| (first(a) == a && first(b) == b) || (fps[a as usize] == fps[b as usize] && first(b) == a)).collect();
    out.sort_unstable();
    out
}

/// The dedup in order: each item kept unless a kept one before it is
/// within `k`; for a dropped one, the earliest such.
pub(crate) fn brute_dedup(fps: &[u64], k: u32) -> (Vec<bool>, Vec<Option<u64>>) {
    let mut keep = vec![false; fps.len()];
    let mut matched = vec![None; fps.len()];
    let mut kept: Vec<usize> = Vec::new();
    for (j, &fp) in fps.iter().enumerate() {
        match kept.iter().find(|&&i| (fps[i] ^ fp).count_ones() <= k) {
            Some(&i) => matched[j] = Some(i as u64),
            None => {
                keep[j] = true;
                kept.push(j);
            }
        }
    }
    (keep, matched)
}

/// Clusters of positions of at least `min_size` items, each ascending,
/// ordered by their first item.
pub(crate) fn brute_clusters(fps: &[u64], k: u32, min_size: usize, method: ClusterMethod) -> Vec<Vec<u64>> {
    let n = fps.len();
    let mut root: Vec<usize> = (0..n).collect();
    match method {
        ClusterMethod::Connected => {
            fn find(root: &mut [usize], mut x: usize) -> usize {
                while root[x] != x {
                    x = root[x];
                }
                x
            }
            for [a, b] in brute_pairs(fps, k) {
                let (ra, rb) = (find(&mut root, a as usize), find(&mut root, b as usize));
                root[ra.max(rb)] = ra.min(rb);
            }
            for x in 0..n {
                root[x] = find(&mut root, x);
            }
        }
        ClusterMethod::Leader => {
            for (j, m) in brute_dedup(fps, k).1.into_iter().enumerate() {
                if let Some(i) = m {
                    root[j] = i as usize;
                }
            }
        }
    }
    let mut groups: Vec<Vec<u64>> = vec![Vec::new(); n];
    for (x, &r) in root.iter().enumerate() {
        groups[r].push(x as u64);
    }
    groups.into_iter().filter(|g| !g.is_empty() && g.len() >= min_size).collect()
}
