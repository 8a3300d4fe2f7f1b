//! The similarity of two shingle sets (ascending arrays of distinct hash
//! values), and cheap ways to rule a pair out before the merge that counts
//! their common values.

use super::{Measure, Similar};

/// `|a ∩ b|` of two ascending arrays of distinct values: the merge of
/// [`overlap_at_least`] (which needs nothing, so it runs to the end), or a
/// galloping search of the larger when one is much smaller.
pub fn intersection_len(a: &[u64], b: &[u64]) -> usize {
    let (small, large) = if a.len() <= b.len() { (a, b) } else { (b, a) };
    if small.is_empty() {
        return 0;
    }
    if small.len() * 32 < large.len() {
        return gallop(small, large);
    }
    overlap_at_least(small, large, 0).unwrap_or(0)
}

/// Each value of `small` looked up in the rest of `large` by doubling steps.
fn gallop(small: &[u64], large: &[u64]) -> usize {
    let (mut rest, mut n) = (large, 0);
    for &x in small {
        let mut step = 1;
        while step < rest.len() && rest[step] < x {
            step *= 2;
        }
        let end = (step + 1).min(rest.len());
        match rest[..end].binary_search(&x) {
            Ok(at) => {
                n += 1;
                rest = &rest[at + 1..];
            }
            Err(at) => rest = &rest[at..],
        }
        if rest.is_empty() {
            break;
        }
    }
    n
}

/// The similarity of two shingle sets.
pub fn similarity(a: &[u64], b: &[u64], measure: Measure) -> f64 {
    if a.is_empty() || b.is_empty() {
        return if a.is_empty() && b.is_empty() { 1.0 } else { 0.0 };
    }
    let common = intersection_len(a, b);
    let whole = match measure {
        Measure::Jaccard => a.len() + b.len() - common,
        Measure::Containment => a.len().min(b.len()),
    };
    common as f64 / whole as f64
}

/// The similarity of `a` and `b` when it is at least `opts.threshold`.
///
/// Cheaper than [`similarity`] on pairs that are not alike: sets whose
/// sizes alone rule the threshold out are not read, and the merge stops as
/// soon as the values it has passed without a match leave too few to reach
/// the overlap the threshold needs (sets of random hash values: the first
/// part of a merge is a fair sample of the whole).
pub fn alike(a: &[u64], b: &[u64], opts: &Similar) -> Option<f64> {
    alike_within(a, b, opts, |_| true)
}

/// [`alike`], with `may_reach(need)` a cheap necessary condition for an
/// overlap of `need` (a bound from [`Buckets`]), asked before the merge.
pub(crate) fn alike_within(a: &[u64], b: &[u64], opts: &Similar, may_reach: impl FnOnce(usize) -> bool) -> Option<f64> {
    if a.is_empty() || b.is_empty() {
        let s = similarity(a, b, opts.measure);
        return (s >= opts.threshold).then_some(s);
    }
    let (small, large) = if a.len() <= b.len() { (a, b) } else { (b, a) };
    let need = least_overlap(small.len(), large.len(), opts)?;
    if !may_reach(need) {
        return None;
    }
    let common = if small.len() * 32 < large.len() { Some(gallop(small, large)).filter(|&c| c >= need) } else { overlap_at_least(small, large, need) }?;
    let whole = match opts.measure {
        Measure::Jaccard => small.len() + large.len() - common,
        Measure::Containment => small.len(),
    };
    let s = common as f64 / whole as f64;
    (s >= opts.threshold).then_some(s)
}

/// The least overlap of sets of `a <= b` values that is alike enough, as
/// [`similarity`] computes it; `None` when no overlap is.
fn least_overlap(a: usize, b: usize, opts: &Similar) -> Option<usize> {
    let sim = |o: usize| match opts.measure {
        Measure::Jaccard => o as f64 / (a + b - o) as f64,
        Measure::Containment => o as f64 / a as f64,
    };
    if sim(a) < opts.threshold {
        return None;
    }
    // From just below the exact bound up to the first overlap that passes
    // in the same floating-point arithmetic as the final check.
    let estimate = match opts.measure {
        Measure::Jaccard => opts.threshold * (a + b) as f64 / (1.0 + opts.threshold),
        Measure::Containment => opts.threshold * a as f64,
    };
    let mut o = (estimate.floor() as usize).saturating_sub(2).min(a);
    while sim(o) < opts.threshold {
        o += 1;
    }
    Some(o)
}

/// `|x ∩ y|` of ascending values when it is at least `need`, else `None`,
/// possibly before the end: a value passed without a match is one fewer
/// that can match. Four values of each at a time where the CPU has AVX2,
/// each four of `x` against every rotation of the four of `y` (the block
/// merge of Schlegel, Willhalm and Lehner, ADMS 2011), then one at a time.
pub(crate) fn overlap_at_least(x: &[u64], y: &[u64], need: usize) -> Option<usize> {
    #[cfg(target_arch = "x86_64")]
    if crate::cpu::x86_has!("avx2") {
        // SAFETY: the CPU has AVX2 (checked just above).
        return unsafe { overlap_avx2(x, y, need) };
    }
    overlap_from(x, y, need, (0, 0, 0))
}

/// The one-at-a-time merge of [`overlap_at_least`], from `x[i]` and `y[j]`
/// with `n` common values counted before them; the reach is checked every
/// 32 steps (neither side can run out within them).
fn overlap_from(x: &[u64], y: &[u64], need: usize, (mut i, mut j, mut n): (usize, usize, usize)) -> Option<usize> {
    loop {
        let steps = (x.len() - i).min(y.len() - j);
        if n + steps < need {
            return None;
        }
        if steps == 0 {
            break;
        }
        for _ in 0..steps.min(32) {
            let (a, b) = (x[i], y[j]);
            n += usize::from(a == b);
            i += usize::from(a <= b);
            j += usize::from(b <= a);
        }
    }
    (n >= need).then_some(n)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn overlap_avx2(x: &[u64], y: &[u64], need: usize) -> Option<usize> {
    use std::arch::x86_64::*;
    let (mut i, mut j, mut n) = (0, 0, 0);
    while i + 4 <= x.len() && j + 4 <= y.len() {
        if n + (x.len() - i).min(y.len() - j) < need {
            return None;
        }
        // SAFETY: both loads read four values inside their slices (the
        // loop's bounds), unaligned loads.
        let (va, vb) = unsafe { (_mm256_loadu_si256(x.as_ptr().add(i).cast()), _mm256_loadu_si256(y.as_ptr().add(j).cast())) };
        let m = _mm256_or_si256(
            _mm256_or_si256(_mm256_cmpeq_epi64(va, vb), _mm256_cmpeq_epi64(va, _mm256_permute4x64_epi64::<0b00_11_10_01>(vb))),
            _mm256_or_si256(
                _mm256_cmpeq_epi64(va, _mm256_permute4x64_epi64::<0b01_00_11_10>(vb)),
                _mm256_cmpeq_epi64(va, _mm256_permute4x64_epi64::<0b10_01_00_11>(vb)),
            ),
        );
        n += _mm256_movemask_pd(_mm256_castsi256_pd(m)).count_ones() as usize;
        let (a, b) = (x[i + 3], y[j + 3]);
        i += if a <= b { 4 } else { 0 };
        j += if b <= a { 4 } else { 0 };
    }
    overlap_from(x, y, need, (i, j, n))
}

/// How many values of a set fall in each of 256 buckets (by their top 8
/// bits). A value in two sets is in the same bucket of both, so the sum
/// over buckets of the smaller count bounds the overlap from above: on the
/// documentation corpus it left 40 thousand of 1.7 million candidates (those
/// of sizes that could be alike at 0.8) for a merge, for 512 bytes a set.
/// Counts stop at 65,535; the bound only counts on a set that has fewer
/// values than that, whose counts are exact.
pub struct Buckets([u16; 256]);

impl Buckets {
    pub fn of(set: &[u64]) -> Buckets {
        let mut c = [0u16; 256];
        for &h in set {
            let b = &mut c[(h >> 56) as usize];
            *b = b.saturating_add(1);
        }
        Buckets(c)
    }

    /// An upper bound of the overlap of the two sets, when one has fewer
    /// than 65,535 values (else `None`).
    pub fn overlap_bound(&self, other: &Buckets, smaller_len: usize) -> Option<usize> {
        // Summed in u32 (at most 256 * 65,535): a usize sum made the
        // compiler widen every value to 64 bits, two lanes a step.
        (smaller_len < usize::from(u16::MAX)).then(|| self.0.iter().zip(&other.0).map(|(&x, &y)| u32::from(x.min(y))).sum::<u32>() as usize)
    }

    /// Whether sets `a` and `b` (with these buckets) may share `need` values.
    pub(crate) fn may_share(&self, other: &Buckets, a: &[u64], b: &[u64], need: usize) -> bool {
        self.overlap_bound(other, a.len().min(b.len())).is_none_or(|bound| bound >= need)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::similar::Candidates;
    use crate::Shingling;
    use proptest::prelude::*;
    use std::collections::BTreeSet;

    /// The block merge counts what a plain merge counts, and stops only
    /// where the overlap cannot be reached; the one-at-a-time merge too.
    #[test]
    fn overlap_is_the_plain_merges() {
        let mut next = crate::testing::xorshift(0x853c_49e6_748f_ea9bu64);
        let mut set_of = |high: u64, span: u64, n: u64| -> Vec<u64> { (0..n).map(|_| high + next() % span).collect::<BTreeSet<u64>>().into_iter().collect() };
        let mut draw = crate::testing::xorshift(0x2545_f491_4f6c_dd1du64);
        for _ in 0..3000 {
            let span = 4 + draw() % 200;
            let high = draw() % 2 * (u64::MAX - 300);
            let a = set_of(high, span, draw() % 40);
            let b = set_of(high, span, draw() % 40);
            let common = a.iter().filter(|v| b.binary_search(v).is_ok()).count();
            for need in [0, common.saturating_sub(1), common, common + 1] {
                let want = (common >= need).then_some(common);
                assert_eq!(overlap_at_least(&a, &b, need), want, "{a:?} {b:?} {need}");
                assert_eq!(overlap_from(&a, &b, need, (0, 0, 0)), want, "{a:?} {b:?} {need}");
            }
        }
    }

    fn set(v: &BTreeSet<u64>) -> Vec<u64> {
        v.iter().copied().collect()
    }

    /// Two sets sharing a part: `common` values in both, `only_a` and
    /// `only_b` values in one (values drawn so that the parts are disjoint).
    fn overlapping() -> impl Strategy<Value = (Vec<u64>, Vec<u64>)> {
        (0usize..400, 0usize..120, 0usize..120, any::<u64>(), prop_oneof![Just(1u64), Just(3), 1u64..1000, Just(1 << 56)]).prop_map(
            |(common, only_a, only_b, seed, stride)| {
                let v = |i: usize| seed.wrapping_add((i as u64).wrapping_mul(stride));
                let mut a: Vec<u64> = (0..common).chain(common..common + only_a).map(v).collect();
                let mut b: Vec<u64> = (0..common).chain(common + only_a..common + only_a + only_b).map(v).collect();
                a.sort_unstable();
                a.dedup();
                b.sort_unstable();
                b.dedup();
                (a, b)
            },
        )
    }

    fn opts(t: f64, measure: Measure) -> Similar {
        Similar::new(t, measure, Shingling::default(), Candidates { shingling: Shingling::default(), k: 3 }).unwrap()
    }

    proptest! {
        #[test]
        fn intersections_count_common_values(
            a in prop::collection::btree_set(0u64..400, 0..300),
            b in prop::collection::btree_set(0u64..400, 0..20),
            c in prop::collection::btree_set(any::<u64>(), 0..50),
        ) {
            for (x, y) in [(&a, &b), (&b, &a), (&a, &a), (&a, &c), (&c, &c)] {
                let expected = x.intersection(y).count();
                prop_assert_eq!(intersection_len(&set(x), &set(y)), expected);
            }
        }

        /// The early-stopping check answers as the full similarity does.
        #[test]
        fn alike_agrees_with_similarity((a, b) in overlapping(), t in prop_oneof![Just(1.0f64), Just(0.5), 0.01f64..1.0]) {
            for measure in [Measure::Jaccard, Measure::Containment] {
                let s = similarity(&a, &b, measure);
                prop_assert_eq!(alike(&a, &b, &opts(t, measure)), (s >= t).then_some(s));
                prop_assert_eq!(alike(&b, &a, &opts(t, measure)), (s >= t).then_some(s));
            }
        }

        /// The bucket bound never falls below the overlap, so it never
        /// turns a pair away that is alike.
        #[test]
        fn bucket_bounds_hold((a, b) in overlapping()) {
            let bound = Buckets::of(&a).overlap_bound(&Buckets::of(&b), a.len().min(b.len())).unwrap();
            prop_assert!(bound >= intersection_len(&a, &b));
        }
    }

    #[test]
    fn similarities() {
        let (a, b) = ([1, 2, 3, 4], [3, 4, 5]);
        assert_eq!(similarity(&a, &b, Measure::Jaccard), 2.0 / 5.0);
        assert_eq!(similarity(&a, &b, Measure::Containment), 2.0 / 3.0);
        assert_eq!(similarity(&[], &[], Measure::Jaccard), 1.0);
        assert_eq!(similarity(&[], &b, Measure::Containment), 0.0);
        assert_eq!(similarity(&a, &a, Measure::Jaccard), 1.0);
    }

    #[test]
    fn full_buckets_give_no_bound() {
        // 70,000 values in one bucket: the count stops at 65,535.
        let big: Vec<u64> = (0..70_000).collect();
        let (x, y) = (Buckets::of(&big), Buckets::of(&big));
        assert_eq!(x.overlap_bound(&y, big.len()), None);
        assert!(x.may_share(&y, &big, &big, 70_000));
        assert_eq!(x.overlap_bound(&y, 10), Some(65_535));
    }
}
