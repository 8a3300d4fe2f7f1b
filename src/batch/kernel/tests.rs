//! The kernel against brute force, table by table and part by part.

use super::*;
use crate::tables::plan;
use proptest::prelude::*;
use std::sync::Mutex;

fn brute(fps: &[u64], k: u32) -> Vec<Pair> {
    let mut out = Vec::new();
    for i in 0..fps.len() {
        for j in i + 1..fps.len() {
            if (fps[i] ^ fps[j]).count_ones() <= k {
                out.push(pack(i as u32, j as u32));
            }
        }
    }
    out.sort_unstable();
    out
}

/// Every table's pairs, each table in `parts` parts of its buckets.
fn kernel_pairs(fps: &[u64], design: &Design, k: u32, parts: usize) -> Vec<Pair> {
    let source = Source::Memory(fps);
    let control = Control::default();
    let (hist, _) = histograms(design, MAX_BUCKET_BITS, &source, &control).unwrap();
    let all = Mutex::new(Vec::new());
    let mut arena = Arena::default();
    for (t, counts) in hist.iter().enumerate() {
        let kt = TableKernel::new(design, t, k, false, MAX_BUCKET_BITS);
        let per = kt.buckets().div_ceil(parts);
        for first in (0..kt.buckets()).step_by(per) {
            let range = first..(first + per).min(kt.buckets());
            kt.run_part(Items::Source(&source), counts, range, &mut arena, &control, &|found| {
                assert!(found.links.is_empty() && found.dense.is_empty(), "links only when copies collapse");
                all.lock().unwrap().extend(found.pairs);
                Ok(())
            })
            .unwrap();
        }
    }
    let mut all = all.into_inner().unwrap();
    all.sort_unstable();
    all
}

fn planted() -> impl Strategy<Value = Vec<u64>> {
    crate::testing::planted(40, 400)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn equals_brute_force(fps in planted(), k in 0u32..=8, extra in 1u32..3, parts in 1usize..4) {
        let design = plan::Design::new(k, &[k + extra]).unwrap();
        let got = kernel_pairs(&fps, &design, k, parts);
        let expected = brute(&fps, k);
        prop_assert!(got.windows(2).all(|w| w[0] < w[1]), "a pair twice");
        prop_assert_eq!(got, expected);
    }

    #[test]
    fn two_level_designs(fps in planted(), k in 1u32..=4) {
        let design = plan::Design::new(k, &[k + 1, k + 2]).unwrap();
        prop_assert_eq!(kernel_pairs(&fps, &design, k, 1), brute(&fps, k));
    }
}

#[test]
fn large_buckets_and_extremes() {
    // 5,000 items in few groups (long radix passes), and the extremes.
    let mut fps: Vec<u64> = (0..5000u64).map(|i| (i % 7) << 60 | super::super::source::mix(i) >> 40).collect();
    fps.extend([0, 1, 3, u64::MAX, u64::MAX - 1, 0, u64::MAX]);
    for k in [0, 3, 6] {
        let design = plan::plan(k, fps.len()).unwrap();
        assert_eq!(kernel_pairs(&fps, &design, k, 1), brute(&fps, k), "k = {k}");
        assert_eq!(kernel_pairs(&fps, &design, k, 3), brute(&fps, k), "k = {k}, 3 parts");
    }
}

/// Calls `check` with groups of every length around the eight-wide
/// steps, of keys that share a prefix and differ in a few bits (copies,
/// 0 and MAX among them), and the scalar scan's pairs for each (for the
/// x86-64 comparisons' tests).
#[cfg(target_arch = "x86_64")]
fn each_group(mut check: impl FnMut(&TableKernel<'_>, &[u64], &[u32], &[Pair], String)) {
    for k in [0u32, 3, 7, 10] {
        let design = plan::Design::new(k, &[k + 1]).unwrap();
        let mut found = 0;
        for t in 0..design.tables().len() {
            let kt = TableKernel::new(&design, t, k, false, MAX_BUCKET_BITS);
            for n in [2usize, 7, 8, 9, 23, 24, 25, 31, 64, 200] {
                let mut keys: Vec<u64> = (0..n as u64)
                    .map(|i| {
                        let m = super::super::source::mix(i * 31 + u64::from(k));
                        (m & !kt.prefix_mask) & (m >> 7) & (m >> 13) | ((i % 3) * (i & 1))
                    })
                    .collect();
                keys[0] = 0;
                keys[n - 1] = !kt.prefix_mask;
                keys.sort_unstable();
                let pos: Vec<u32> = (0..n as u32).map(|i| i * 3 + 1).collect();
                let mut scalar = Vec::new();
                kt.group_pairs_scalar(&keys, &pos, &mut scalar);
                check(&kt, &keys, &pos, &scalar, format!("k = {k}, table {t}, n = {n}"));
                found += scalar.len();
            }
        }
        assert!(found > 100, "k = {k}: only {found} pairs, the keys test too little");
    }
}

#[test]
#[cfg(target_arch = "x86_64")]
fn avx2_and_scalar_groups_agree() {
    if !std::arch::is_x86_feature_detected!("avx2") {
        panic!("no AVX2 on this CPU: run this test on x86-64 with AVX2 (every CPU the project supports has it)");
    }
    each_group(|kt, keys, pos, scalar, case| {
        let mut avx2 = Vec::new();
        // SAFETY: AVX2, checked above.
        unsafe { kt.group_pairs_avx2(keys, pos, 0..keys.len(), &mut avx2) };
        assert_eq!(scalar, avx2, "AVX2: {case}");
    });
}

/// A group compared a block of rows at a time (so that Ctrl-C is seen
/// inside one large group) gives the same pairs in the same order; a
/// cancelled job stops after its first block.
#[test]
fn groups_in_blocks_agree() {
    each_group(|kt, keys, pos, scalar, case| {
        for check in [1, 7, 1000] {
            let mut blocks = Vec::new();
            kt.group_pairs_checked(keys, pos, &mut blocks, check, &Control::default()).unwrap();
            assert_eq!(scalar, blocks, "blocks of {check} comparisons: {case}");
        }
        let cancelled = Control::default();
        cancelled.cancel();
        assert!(matches!(kt.group_pairs_checked(keys, pos, &mut Vec::new(), 1, &cancelled), Err(crate::Error::Interrupted)));
    });
}

/// Ignored by default (cargo lists it as ignored, with this reason);
/// scripts/test.sh runs it with `--ignored` on every x86-64 CPU, telling it
/// in `RSIMHASH_EXPECT_AVX512` (1 or 0) whether the kernel's flags in
/// /proc/cpuinfo promise AVX-512F and VPOPCNTDQ: the test fails where that
/// and the detection the kernel's dispatch uses disagree, so the AVX-512
/// path can never go untested on a CPU that takes it.
#[test]
#[cfg(target_arch = "x86_64")]
#[ignore = "needs AVX-512F and VPOPCNTDQ: scripts/test.sh runs it with --ignored, saying whether the CPU has them"]
fn avx512_and_scalar_groups_agree() {
    let has = std::arch::is_x86_feature_detected!("avx512f") && std::arch::is_x86_feature_detected!("avx512vpopcntdq");
    match std::env::var("RSIMHASH_EXPECT_AVX512").as_deref() {
        Ok("1") => assert!(has, "/proc/cpuinfo lists avx512f and avx512_vpopcntdq, but the CPU detection used by the kernel says no"),
        Ok("0") => {
            assert!(!has, "the CPU detection used by the kernel finds AVX-512F and VPOPCNTDQ, which /proc/cpuinfo does not list");
            return; // nothing to compare on this CPU
        }
        _ => assert!(has, "this CPU lacks AVX-512F or VPOPCNTDQ: the test cannot run here"),
    }
    each_group(|kt, keys, pos, scalar, case| {
        let mut avx512 = Vec::new();
        // SAFETY: checked above.
        unsafe { kt.group_pairs_wide(keys, pos, 0..keys.len(), &mut avx512) };
        assert_eq!(scalar, avx512, "AVX-512: {case}");
    });
}
