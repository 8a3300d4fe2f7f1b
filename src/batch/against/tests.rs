//! Jobs of new items against old ones, against brute force.

use super::lookup::pair;
use super::*;
use crate::testing::{brute_dedup, planted, skewed, xorshift};
use proptest::prelude::*;

fn brute_pairs(new: &[u64], old: &[u64], k: u32) -> Vec<[u64; 2]> {
    let mut out = Vec::new();
    for (i, &a) in new.iter().enumerate() {
        for (j, &b) in old.iter().enumerate() {
            if (a ^ b).count_ones() <= k {
                out.push([i as u64, j as u64]);
            }
        }
    }
    out
}

/// Keep mask, and per item the match: `(position, in old)`.
fn brute_dedup_against(new: &[u64], old: &[u64], k: u32) -> (Vec<bool>, Vec<Option<(u32, bool)>>) {
    let mut keep = vec![false; new.len()];
    let mut matched = vec![None; new.len()];
    let mut kept: Vec<usize> = Vec::new();
    for (j, &fp) in new.iter().enumerate() {
        if let Some(o) = old.iter().position(|&b| (b ^ fp).count_ones() <= k) {
            matched[j] = Some((o as u32, true));
        } else if let Some(&i) = kept.iter().find(|&&i| (new[i] ^ fp).count_ones() <= k) {
            matched[j] = Some((i as u32, false));
        } else {
            keep[j] = true;
            kept.push(j);
        }
    }
    (keep, matched)
}

fn options(k: u32, tiny: bool) -> Options {
    // A tiny limit: one table a pass (the store read once per table).
    Options { memory_limit: if tiny { 1 } else { 1 << 30 }, ..Options::new(k) }
}

thread_local! {
    /// When set, tables built on this thread compare keys this way.
    pub(super) static FORCED: std::cell::Cell<Option<Popcount>> = const { std::cell::Cell::new(None) };
}

/// Runs `f` with the tables of this thread comparing keys by `compare`.
fn forced<T>(compare: Popcount, f: impl FnOnce() -> T) -> T {
    FORCED.set(Some(compare));
    let out = f();
    FORCED.set(None);
    out
}

/// [`check_with`] on every comparison this CPU has.
fn check(new: &[u64], old: &[u64], k: u32, tiny: bool) -> std::result::Result<(), TestCaseError> {
    for compare in lookup::all_here() {
        forced(compare, || check_with(new, old, k, tiny))?;
    }
    Ok(())
}

fn check_with(new: &[u64], old: &[u64], k: u32, tiny: bool) -> std::result::Result<(), TestCaseError> {
    let opts = options(k, tiny);
    let c = Control::default();
    let got = find_all_against(&Source::Memory(new), &Source::Memory(old), None, None, &opts, &c).unwrap();
    prop_assert_eq!(got, brute_pairs(new, old, k));
    let d = dedup_against(&Source::Memory(new), &Source::Memory(old), &opts, &c).unwrap();
    let (keep, matched) = brute_dedup_against(new, old, k);
    prop_assert_eq!(&d.dedup.keep, &keep);
    let got_matched: Vec<(u32, u32, bool)> = d.dedup.dropped.iter().zip(&d.dedup.matched).zip(&d.matched_old).map(|((&p, &m), &o)| (p, m, o)).collect();
    let want: Vec<(u32, u32, bool)> = matched.iter().enumerate().filter_map(|(p, m)| m.map(|(m, o)| (p as u32, m, o))).collect();
    prop_assert_eq!(got_matched, want);
    Ok(())
}

fn split(all: Vec<u64>, at: usize) -> (Vec<u64>, Vec<u64>) {
    let at = at.min(all.len());
    (all[at..].to_vec(), all[..at].to_vec())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(40))]

    #[test]
    fn against_equals_brute_force(all in planted(30, 300), at in 0usize..200, k in 0u32..=6, tiny in any::<bool>()) {
        let (new, old) = split(all, at);
        check(&new, &old, k, tiny)?;
    }

    /// Copies and dense balls on either side (or both: a day's crawl
    /// of the same template pages as the day before).
    #[test]
    fn skewed_sides(new in skewed(1500, 1500), old in skewed(1500, 1500), k in 0u32..=4, tiny in any::<bool>()) {
        check(&new, &old, k, tiny)?;
    }

    /// Against a store that is a dedup's kept items: the same keep mask
    /// as the dedup of old + new, among the new items.
    #[test]
    fn equals_the_dedup_of_both(all in planted(30, 300), at in 0usize..200, k in 0u32..=5) {
        let (kept_old, _) = brute_dedup(&all[..at.min(all.len())], k);
        let old: Vec<u64> = all[..at.min(all.len())].iter().zip(&kept_old).filter(|(_, &kp)| kp).map(|(&f, _)| f).collect();
        let new = all[at.min(all.len())..].to_vec();
        let both: Vec<u64> = old.iter().chain(&new).copied().collect();
        let (keep_both, _) = brute_dedup(&both, k);
        let d = dedup_against(&Source::Memory(&new), &Source::Memory(&old), &options(k, false), &Control::default()).unwrap();
        prop_assert_eq!(&d.dedup.keep[..], &keep_both[old.len()..]);
    }
}

#[test]
fn empty_sides_and_extremes() {
    let c = Control::default();
    let some = [0u64, u64::MAX, 1, u64::MAX - 1, 0, 3];
    for k in [0, 1, 3] {
        for (new, old) in [(&[][..], &some[..]), (&some[..], &[][..]), (&[][..], &[][..]), (&some[..], &some[..])] {
            check(new, old, k, false).unwrap();
            check(new, old, k, true).unwrap();
        }
    }
    let d = dedup_against(&Source::Memory(&[]), &Source::Memory(&some), &options(3, false), &c).unwrap();
    assert!(d.dedup.keep.is_empty());
}

#[test]
fn copies_on_both_sides_cost_what_the_items_cost() {
    // 10^5 copies of one value in each side, and a dense ball of 3,000
    // values on each: a pair-by-pair job would compare 10^10 copies.
    let mut new = vec![42u64; 100_000];
    let bits: Vec<u32> = (0..12).collect();
    new.extend(crate::testing::ball(7 << 40, 3, &bits, 3000, 1));
    let mut old = vec![42u64; 100_000];
    old.extend(crate::testing::ball(7 << 40, 3, &bits, 3000, 2));
    let started = std::time::Instant::now();
    let d = dedup_against(&Source::Memory(&new), &Source::Memory(&old), &options(3, false), &Control::default()).unwrap();
    assert!(d.dedup.keep.iter().all(|&k| !k), "every new item is within 3 of a stored one");
    assert!(d.dedup.matched[..100_000].iter().all(|&m| m == 0));
    let ids: Vec<u64> = (0..old.len() as u64).collect();
    let c = Control::default();
    let pairs = find_all_against(&Source::Memory(&new[..10]), &Source::Memory(&old), None, Some(&ids), &options(3, false), &c).unwrap();
    let near_42 = old.iter().filter(|&&b| (b ^ 42).count_ones() <= 3).count();
    assert_eq!(pairs.len(), 10 * near_42);
    assert!(near_42 >= 100_000);
    assert!(started.elapsed().as_secs() < 60, "{:?}", started.elapsed());
}

#[test]
fn ids_of_another_length() {
    let c = Control::default();
    let e = find_all_against(&Source::Memory(&[1, 2]), &Source::Memory(&[1]), Some(&[5]), None, &options(3, false), &c).unwrap_err();
    assert!(e.to_string().contains("ids"), "{e}");
}

/// Every stored key looked up in a table whose groups hold 0 to 60 new
/// keys (copies, and keys within and beyond `k`, sharing a prefix): every
/// comparison this CPU has (eight keys a step, four, one) finds the same
/// pairs as brute force, the dense memo off and on.
#[test]
fn lookups_by_group_size() {
    let mut new = Vec::new();
    let mut old = Vec::new();
    let mut rnd = xorshift(0x9e37_79b9_7f4a_7c15);
    for size in 0..=60u64 {
        // Group `size`: its top 6 bits are `size` (a directory slot of its
        // own) and its prefix (the top 16 bits, table 0's) is shared; the
        // low bits are near one centre, so that some keys are within k of
        // the stored ones and some are not.
        let centre = size << 58 | (rnd() >> 6);
        for i in 0..size {
            let flips = rnd() % 6;
            let mut v = centre;
            for _ in 0..flips {
                v ^= 1 << (rnd() % 48);
            }
            new.push(if i % 7 == 3 { centre } else { v });
        }
        for _ in 0..5 {
            let mut v = centre;
            for _ in 0..rnd() % 4 {
                v ^= 1 << (rnd() % 48);
            }
            old.push(v);
        }
    }
    let side = NewSide::read(&Source::Memory(&new), &Control::default()).unwrap();
    let design = plan::with_blocks(3, 4).unwrap();
    let key_of: Vec<u64> = old.iter().map(|&v| design.tables()[0].perm.apply(v)).collect();
    let pos: Vec<u32> = (0..old.len() as u32).collect();
    let mut results = Vec::new();
    for compare in lookup::all_here() {
        for dense in [usize::MAX, 4] {
            let mut table = forced(compare, || Table::build_all(&design, 0..1, &side).remove(0));
            assert_eq!(table.compare, compare);
            table.dense = dense;
            let mut found = Vec::new();
            lookups(&design, &table, &key_of, &pos, 3, true, &mut Scratch::default(), &mut found);
            found.sort_unstable();
            results.push(found);
        }
    }
    // Brute force: pairs (distinct new value, old position) within 3 that
    // table 0 reports.
    let mut want: Vec<u64> = Vec::new();
    for (d, &v) in side.values.iter().enumerate() {
        for (o, &key) in key_of.iter().enumerate() {
            let x = design.tables()[0].perm.apply(v) ^ key;
            if design.reported(0, x, 3).is_some() {
                want.push(pair(d as u32, o as u32));
            }
        }
    }
    want.sort_unstable();
    assert!(want.len() > 100, "the planted groups give pairs: {}", want.len());
    for got in &results {
        assert_eq!(got, &want);
    }
    // Groups of every shape of the vector look-ups: one step, two, three,
    // four, and more than the fixed steps.
    let table = Table::build_all(&design, 0..1, &side).remove(0);
    let sizes: Vec<usize> = key_of.iter().map(|&key| table.group(key).len()).collect();
    for shape in [0..=0, 1..=4, 5..=8, 9..=12, 13..=16, 17..=24, 25..=usize::MAX] {
        assert!(sizes.iter().any(|n| shape.contains(n)), "no group of {shape:?} keys: {sizes:?}");
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(40))]

    /// The dedup among the new values from the tables (what a dedup
    /// against a store runs after its stream, when no group is dense)
    /// equals a batch dedup of the surviving items, dense groups and
    /// copies included; every `removed`-th value stands for one an old
    /// item removed.
    #[test]
    fn among_new_equals_the_dedup_of_the_survivors(new in skewed(1500, 1500), k in 0u32..=4, removed in 1usize..8) {
        let c = Control::default();
        let side = NewSide::read(&Source::Memory(&new), &c).unwrap();
        let best: Vec<AtomicU32> = (0..side.values.len()).map(|d| AtomicU32::new(if d % removed == removed - 1 { d as u32 } else { NONE })).collect();
        let opts = options(k, false);
        let design = design_for(&opts, side.values.len()).unwrap();
        for compare in lookup::all_here() {
            let tables = forced(compare, || Table::build_all(&design, 0..design.tables().len(), &side));
            let held = Held { design: std::sync::Arc::clone(&design), tables };
            let got = among_new(&side, &best, &held, k, &c).unwrap();
            let want = dedup_survivors(&side, &best, &opts, &c).unwrap();
            prop_assert_eq!(got, want);
        }
    }
}

/// Both ways of the dedup among the new values run in the tests above:
/// the tables' (one pass, no dense group) and the batch dedup's (one table
/// a pass, or a dense group).
#[test]
fn both_inner_dedups_are_taken() {
    let c = Control::default();
    let spread: Vec<u64> = (0..400u64).map(|i| i.wrapping_mul(0x9E37_79B9_7F4A_7C15)).collect();
    let side = NewSide::read(&Source::Memory(&spread), &c).unwrap();
    let best: Vec<AtomicU32> = (0..side.values.len()).map(|_| AtomicU32::new(NONE)).collect();
    let held = stream(&side, &Source::Memory(&spread[..10]), &options(3, false), &c, &Sink::Min(&best), 0).unwrap().expect("one pass");
    assert!(held.tables.iter().all(|t| t.largest <= DENSE_GROUP));
    assert!(stream(&side, &Source::Memory(&spread[..10]), &options(3, true), &c, &Sink::Min(&best), 0).unwrap().is_none());
    let ball: Vec<u64> = (0..64).map(|b| 1u64 << b).chain([0, 3, 5, 6]).collect();
    let side = NewSide::read(&Source::Memory(&ball), &c).unwrap();
    let held = stream(&side, &Source::Memory(&ball[..1]), &options(3, false), &c, &Sink::Min(&best), 0).unwrap().expect("one pass");
    assert!(held.tables.iter().any(|t| t.largest > DENSE_GROUP));
}

/// The shape of a large batch: the planner's four tables for k = 3 and
/// 2^16 new values or more, whose directory covers the whole prefix
/// (every slot a group of about one new value; the other tests' slots are
/// shorter than the prefix): the same pairs and dedup as brute force, on
/// every comparison this CPU has.
#[test]
fn directory_covering_the_prefix() {
    let mut rnd = xorshift(0x2545_f491_4f6c_dd1d);
    let old: Vec<u64> = (0..300).map(|_| rnd()).collect();
    let mut new: Vec<u64> = (0..70_000).map(|_| rnd()).collect();
    for (i, &o) in old.iter().enumerate() {
        for flips in 0..5 {
            let mut v = o;
            for _ in 0..flips {
                v ^= 1 << (rnd() % 64);
            }
            new.push(v);
        }
        // A copy of a new value, and one differing only in the prefix.
        new.push(new[i]);
        new.push(o ^ 1 << 63);
    }
    let design = std::sync::Arc::new(plan::with_blocks(3, 4).unwrap());
    let side = NewSide::read(&Source::Memory(&new), &Control::default()).unwrap();
    let table = Table::build_all(&design, 0..1, &side).remove(0);
    assert!(table.bits >= table.prefix_mask.leading_ones(), "{} directory bits, a prefix of {}", table.bits, table.prefix_mask.leading_ones());
    let opts = Options { design: Some(design), ..options(3, false) };
    let want = brute_pairs(&new, &old, 3);
    assert!(want.len() > 1000, "{}", want.len());
    let (keep, _) = brute_dedup_against(&new, &old, 3);
    for compare in lookup::all_here() {
        forced(compare, || {
            let c = Control::default();
            assert_eq!(find_all_against(&Source::Memory(&new), &Source::Memory(&old), None, None, &opts, &c).unwrap(), want, "{compare:?}");
            let d = dedup_against(&Source::Memory(&new), &Source::Memory(&old), &opts, &c).unwrap();
            assert_eq!(d.dedup.keep, keep, "{compare:?}");
        });
    }
}
