use super::*;
use crate::similar::similarity;
use proptest::prelude::*;

/// Every pair at least `t` alike, by comparing all pairs.
fn brute(sets: &[Vec<u64>], t: f64, measure: Measure) -> Vec<(u64, f32)> {
    let mut out = Vec::new();
    for a in 0..sets.len() {
        for b in a + 1..sets.len() {
            let s = similarity(&sets[a], &sets[b], measure);
            if s >= t {
                out.push(((a as u64) << 32 | b as u64, s as f32));
            }
        }
    }
    out
}

fn set_of(values: Vec<u64>) -> Vec<u64> {
    let mut s = values;
    s.sort_unstable();
    s.dedup();
    s
}

/// Sets drawn from a small universe (so that they overlap), with empty
/// sets, one-value sets, copies and the extreme hashes among them.
fn corpus() -> impl Strategy<Value = Vec<Vec<u64>>> {
    let value = prop_oneof![0u64..24, Just(u64::MAX), Just(0u64)];
    let fresh = prop::collection::vec(value, 0..14).prop_map(set_of);
    prop::collection::vec((fresh, 0usize..4), 0..28).prop_map(|drawn| {
        let mut sets: Vec<Vec<u64>> = Vec::new();
        for (s, copy) in drawn {
            // A copy of an earlier set now and then.
            if copy == 0 && !sets.is_empty() {
                let again = sets[s.len() % sets.len()].clone();
                sets.push(again);
            } else {
                sets.push(s);
            }
        }
        sets
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    /// The join finds exactly the pairs brute force finds, with the same
    /// similarities, at every threshold from 0.05 to 1 and both measures.
    #[test]
    fn join_is_brute_force(sets in corpus(), containment in any::<bool>()) {
        let measure = if containment { Measure::Containment } else { Measure::Jaccard };
        for step in 1..=20 {
            let t = f64::from(step) * 0.05;
            let got = self_join(&sets, t, measure, &Control::default()).unwrap();
            prop_assert_eq!(got, brute(&sets, t, measure), "{} at {}", measure, t);
        }
    }

    /// Thresholds that are not round numbers, where the f64 test decides.
    #[test]
    fn odd_thresholds(sets in corpus(), t in 0.01f64..1.0, containment in any::<bool>()) {
        let measure = if containment { Measure::Containment } else { Measure::Jaccard };
        prop_assert_eq!(self_join(&sets, t, measure, &Control::default()).unwrap(), brute(&sets, t, measure));
    }
}

/// The greedy dedup by comparing each set with every kept one before it.
fn brute_dedup(sets: &[Vec<u64>], t: f64) -> Vec<Option<(u32, f32)>> {
    let mut kept: Vec<usize> = Vec::new();
    let mut out = Vec::new();
    for (i, s) in sets.iter().enumerate() {
        let m = kept.iter().find_map(|&j| {
            let sim = similarity(&sets[j], s, Measure::Jaccard);
            (sim >= t).then_some((j as u32, sim as f32))
        });
        if m.is_none() {
            kept.push(i);
        }
        out.push(m);
    }
    out
}

/// Distinct sets (as `dedup_distinct` takes them), in their drawn order.
fn distinct(sets: Vec<Vec<u64>>) -> Vec<Vec<u64>> {
    let mut out: Vec<Vec<u64>> = Vec::new();
    for s in sets {
        if !out.contains(&s) {
            out.push(s);
        }
    }
    out
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    /// The in-order dedup keeps and matches what brute force does, at
    /// every threshold from 0.05 to 1.
    #[test]
    fn dedup_is_brute_force(sets in corpus()) {
        let sets = distinct(sets);
        for step in 1..=20 {
            let t = f64::from(step) * 0.05;
            prop_assert_eq!(dedup_distinct(&sets, t, &Control::default()).unwrap(), brute_dedup(&sets, t), "at {}", t);
        }
    }
}

/// A dense cluster of near copies: the in-order dedup keeps one and checks
/// each other against it alone (quick at 20,000 members, where the pairs
/// number 2 x 10^8), with the same answer as brute force on a smaller one.
#[test]
fn dense_cluster_dedup_follows_the_members() {
    let base: Vec<u64> = (0..300).map(|i| i * 0x9e37_79b9_7f4a_7c15).collect();
    let near = |n: usize| -> Vec<Vec<u64>> {
        (0..n as u64)
            .map(|i| {
                let mut s = base.clone();
                s[(i % 300) as usize] = 1 + i;
                set_of(s)
            })
            .collect()
    };
    let small = distinct(near(400));
    assert_eq!(dedup_distinct(&small, 0.9, &Control::default()).unwrap(), brute_dedup(&small, 0.9));
    let big = distinct(near(20_000));
    let got = dedup_distinct(&big, 0.9, &Control::default()).unwrap();
    assert!(got[0].is_none() && got[1..].iter().all(|m| m.is_some_and(|(j, _)| j == 0)));
}

/// Larger random sets over a Zipf-like universe: long prefixes, long lists.
#[test]
fn larger_sets_match_brute_force() {
    let mut next = crate::testing::xorshift(0x9e37_79b9_7f4a_7c15u64);
    let base: Vec<Vec<u64>> = (0..40).map(|_| set_of((0..60).map(|_| next() % 400).collect())).collect();
    let mut sets = base.clone();
    for s in &base {
        let mut edited: Vec<u64> = s.iter().copied().filter(|_| !next().is_multiple_of(10)).collect();
        edited.extend((0..next() % 8).map(|_| 1000 + next() % 50));
        sets.push(set_of(edited));
    }
    for measure in [Measure::Jaccard, Measure::Containment] {
        for t in [0.3, 0.5, 0.7, 0.8, 0.9, 0.95, 1.0] {
            let got = self_join(&sets, t, measure, &Control::default()).unwrap();
            assert_eq!(got, brute(&sets, t, measure), "{measure} at {t}");
        }
    }
}

/// A thousand copies of one set and a few near copies: the copies are
/// joined once, and their pairs listed.
#[test]
fn copies_are_joined_once() {
    let one: Vec<u64> = (0..50).collect();
    let mut sets = vec![one.clone(); 1000];
    sets.push((25..75).collect());
    sets.push(vec![]);
    sets.push(vec![]);
    let got = self_join(&sets, 0.9, Measure::Jaccard, &Control::default()).unwrap();
    // 1000 * 999 / 2 copies, the two empty sets, and not the half copy.
    assert_eq!(got.len(), 1000 * 999 / 2 + 1);
    assert_eq!(got.last().unwrap(), &((1001u64 << 32 | 1002), 1.0));
    let got = self_join(&sets, 0.9, Measure::Containment, &Control::default()).unwrap();
    assert_eq!(got.len(), 1000 * 999 / 2 + 1);
}

#[test]
fn thresholds_are_checked() {
    let sets: Vec<Vec<u64>> = vec![vec![1], vec![1]];
    for t in [0.0, -1.0, 1.5, f64::NAN] {
        assert!(self_join(&sets, t, Measure::Jaccard, &Control::default()).is_err());
    }
}

#[test]
fn need_is_the_least_overlap() {
    for measure in [Measure::Jaccard, Measure::Containment] {
        for nx in 1..40usize {
            for ny in nx..50usize {
                for step in 1..=100 {
                    let t = f64::from(step) / 100.0;
                    let alike = |o: usize| {
                        let whole = if measure == Measure::Jaccard { nx + ny - o } else { nx };
                        o as f64 / whole as f64 >= t
                    };
                    let want = (1..=nx).find(|&o| alike(o)).unwrap_or(nx + 1);
                    assert_eq!(need(nx, ny, t, measure), want, "{nx} {ny} {t}");
                }
            }
        }
    }
}

/// Sets of full-width hashes, enough of them that the ranking spreads over
/// many buckets, blocks and rarity classes (values held by 2 to 33 sets
/// each a class, and by hundreds): the join is still brute force's.
#[test]
fn wide_hashes_over_many_buckets_match_brute_force() {
    let mut next = crate::testing::xorshift(0x2545_f491_4f6c_dd1du64);
    // A universe where the first values are common and the rest rare.
    let universe: Vec<u64> = (0..4000).map(|_| next()).chain([0, u64::MAX, 1 << 63]).collect();
    let pick = |r: u64| universe[((r % 4003) * (r % 4003) / 4003) as usize];
    let base: Vec<Vec<u64>> = (0..300).map(|_| set_of((0..(next() % 90)).map(|_| pick(next())).collect())).collect();
    let mut sets = base.clone();
    for s in base.iter().take(200) {
        let mut edited: Vec<u64> = s.iter().copied().filter(|_| !next().is_multiple_of(8)).collect();
        edited.extend((0..next() % 6).map(|_| next()));
        sets.push(set_of(edited));
    }
    let total: usize = sets.iter().map(Vec::len).sum();
    assert!(total > 16 * 256, "several buckets: {total} values");
    for measure in [Measure::Jaccard, Measure::Containment] {
        for t in [0.2, 0.5, 0.8, 0.9, 1.0] {
            let got = self_join(&sets, t, measure, &Control::default()).unwrap();
            assert_eq!(got, brute(&sets, t, measure), "{measure} at {t}");
        }
    }
}

#[test]
fn classes_order_counts() {
    let classes: Vec<u8> = (1..=u16::MAX).map(class).collect();
    assert!(classes.windows(2).all(|w| w[0] <= w[1]));
    assert_eq!((class(1), class(2), class(33), class(34), class(64), class(255)), (0, 1, 32, 33, 34, 35));
    assert!(usize::from(class(u16::MAX)) < CLASSES);
}

/// Labels are one to one with values and ordered as (class, hash); each
/// set's ranked labels are its shared values' labels ascending, its own
/// values (held by no other set, which the sketch counts exactly) counted,
/// however the sketch's slots collide.
#[test]
fn labels_follow_the_order() {
    let mut next = crate::testing::xorshift(0x9e37_79b9_7f4a_7c15u64);
    // Random hashes, and a run of values that share their top bits (one slot).
    let universe: Vec<u64> = (0..300).map(|_| next()).chain([0, 1, 2, u64::MAX, u64::MAX - 1]).collect();
    let sets: Vec<Vec<u64>> = (0..200).map(|_| set_of((0..next() % 60).map(|_| universe[(next() % 305) as usize]).collect())).collect();
    let parts: Vec<&[u64]> = sets.iter().map(Vec::as_slice).collect();
    let order = Order::of(&parts);
    let mut labelled: Vec<((usize, u64), u64)> = universe.iter().map(|&v| ((order.label(v).0, v), order.label(v).1)).collect();
    labelled.sort_unstable();
    assert!(labelled.windows(2).all(|w| w[0].1 < w[1].1), "labels ascend as (class, hash) does, one to one");
    let ranked = Ranked::of(&parts, &Control::default()).unwrap();
    let held = |v: u64| sets.iter().filter(|s| s.binary_search(&v).is_ok()).count();
    for (i, s) in sets.iter().enumerate() {
        assert_eq!(ranked.own[i] as usize, s.iter().filter(|&&v| held(v) == 1).count(), "a count of one is exact");
        let mut want: Vec<u64> = s.iter().filter(|&&v| held(v) > 1).map(|&v| order.label(v).1).collect();
        want.sort_unstable();
        assert_eq!(ranked.get(i), &want[..]);
        assert_eq!(ranked.size(i), s.len());
    }
}

/// The sketch counts what a plain count by slot gives, over more sets than
/// a block (the ranges' starts are found a block at a time), with sets
/// crossing every range and empty ones among them.
#[test]
fn sketch_counts_by_slot() {
    let mut next = crate::testing::xorshift(0x5851_f42d_4c95_7f2du64);
    let sets: Vec<Vec<u64>> =
        (0..40_000).map(|i| if i % 97 == 0 { Vec::new() } else { set_of((0..next() % 9).map(|_| next()).chain([0, u64::MAX]).collect()) }).collect();
    let parts: Vec<&[u64]> = sets.iter().map(Vec::as_slice).collect();
    let (counts, bits) = sketch(&parts);
    let mut want = vec![0u32; 1 << bits];
    for v in sets.iter().flatten() {
        want[(v >> (64 - bits)) as usize] += 1;
    }
    let want: Vec<u16> = want.into_iter().map(|c| c.min(u32::from(u16::MAX)) as u16).collect();
    assert_eq!(counts, want);
}
