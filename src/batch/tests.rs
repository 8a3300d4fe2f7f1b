//! Batch jobs against brute force, in memory, in parts, spilled and resumed.

use super::*;
use crate::testing::planted;
use crate::{ClusterMethod, Index};
use proptest::prelude::*;

fn brute(fps: &[u64], k: u32) -> Vec<[u64; 2]> {
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

/// Options that work each table in several parts: tiny memory, and read
/// again or spilled as asked.
fn small(k: u32, spill: Option<bool>) -> Options {
    Options { memory_limit: 1 << 10, spill, ..Options::new(k) }
}

fn index_of(fps: &[u64], k: u32) -> Index {
    let mut index = Index::new(k, None, None).unwrap();
    index.add(fps, None).unwrap();
    index
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(40))]

    #[test]
    fn find_all_equals_brute_force(fps in planted(30, 300), k in 0u32..=8, how in 0usize..3) {
        let dir = tempfile::tempdir().unwrap();
        let opts = match how {
            0 => Options::new(k),
            1 => small(k, Some(false)),
            _ => Options { temp_parent: Some(dir.path().to_path_buf()), ..small(k, Some(true)) },
        };
        let got = find_all(&Source::Memory(&fps), None, &opts, &Control::default()).unwrap();
        prop_assert_eq!(got, brute(&fps, k));
        prop_assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0, "temporary files removed");
    }

    /// Candidates for a pass in order: every pair by its later item, and
    /// each item's last later partner, in memory, in parts or spilled.
    #[test]
    fn candidates_by_later_item(fps in planted(30, 300), k in 0u32..=8, how in 0usize..3) {
        let dir = tempfile::tempdir().unwrap();
        let opts = match how {
            0 => Options::new(k),
            1 => small(k, Some(false)),
            _ => Options { temp_parent: Some(dir.path().to_path_buf()), ..small(k, Some(true)) },
        };
        let (p, l) = (dir.path().join("pairs.npy"), dir.path().join("last.npy"));
        let count = candidates_to_files(&Source::Memory(&fps), &opts, &Control::default(), &p, &l).unwrap();
        let mut expected: Vec<u64> = brute(&fps, k).iter().map(|&[a, b]| b << 32 | a).collect();
        expected.sort_unstable();
        let mut last = vec![0u32; fps.len()];
        for &[a, b] in &brute(&fps, k) {
            last[a as usize] = last[a as usize].max(b as u32);
        }
        // The arrays end the files, after their headers.
        let pairs_bytes = std::fs::read(&p).unwrap();
        let body = &pairs_bytes[pairs_bytes.len() - expected.len() * 8..];
        prop_assert_eq!(count as usize, expected.len());
        prop_assert_eq!(bytemuck::cast_slice::<u8, u64>(body).to_vec(), expected);
        let last_bytes = std::fs::read(&l).unwrap();
        let body = &last_bytes[last_bytes.len() - fps.len() * 4..];
        let got_last: Vec<u32> = body.chunks(4).map(|c| u32::from_le_bytes(c.try_into().unwrap())).collect();
        prop_assert_eq!(got_last, last);
        prop_assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 2, "only the two outputs left");
    }

    #[test]
    fn dedup_and_clusters_equal_the_index(fps in planted(30, 300), k in 0u32..=5, spill in any::<bool>(), min_size in 1usize..3) {
        let opts = small(k, Some(spill));
        let index = index_of(&fps, k);
        let d = dedup(&Source::Memory(&fps), &opts, &Control::default()).unwrap();
        let (is_new, matched) = index_of(&[], k).add_unique(&fps, None, None).unwrap();
        prop_assert_eq!(&d.keep, &is_new);
        for (&j, &m) in d.dropped.iter().zip(&d.matched) {
            prop_assert_eq!(u64::from(m), matched[j as usize]);
        }
        for method in [ClusterMethod::Connected, ClusterMethod::Leader] {
            let (members, starts) = clusters(&Source::Memory(&fps), method, min_size, &opts, &Control::default()).unwrap();
            let got: Vec<Vec<u64>> = starts.windows(2).map(|w| members[w[0] as usize..w[1] as usize].iter().map(|&m| u64::from(m)).collect()).collect();
            prop_assert_eq!(got, index.cluster(None, min_size, method).unwrap(), "{:?}", method);
        }
    }

    #[test]
    fn ids_map_the_pairs(fps in planted(20, 100), seed in any::<u64>(), k in 0u32..=4) {
        let ids: Vec<u64> = (0..fps.len() as u64).map(|i| source::mix(i ^ seed)).collect();
        let mut index = Index::new(k, None, None).unwrap();
        index.add(&fps, Some(&ids)).unwrap();
        let got = find_all(&Source::Memory(&fps), Some(&ids), &Options::new(k), &Control::default()).unwrap();
        prop_assert_eq!(got, index.find_all(None, Copies::All).unwrap());
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(32))]

    /// Copies and dense balls, in memory, in parts read again or spilled:
    /// both kinds of find_all, the dedup and both kinds of clusters equal
    /// brute force.
    #[test]
    fn skewed_jobs_equal_brute_force(fps in crate::testing::skewed(1500, 1500), k in 0u32..=4, how in 0usize..3) {
        let dir = tempfile::tempdir().unwrap();
        let opts = match how {
            0 => Options::new(k),
            1 => small(k, Some(false)),
            _ => Options { temp_parent: Some(dir.path().to_path_buf()), ..small(k, Some(true)) },
        };
        let source = Source::Memory(&fps);
        let control = Control::default();
        prop_assert_eq!(find_all(&source, None, &opts, &control).unwrap(), crate::testing::brute_pairs(&fps, k));
        let first = Options { copies: Some(Copies::First), ..opts.clone() };
        prop_assert_eq!(find_all(&source, None, &first, &control).unwrap(), crate::testing::brute_first_pairs(&fps, k));
        let d = dedup(&source, &opts, &control).unwrap();
        let (keep, matched) = crate::testing::brute_dedup(&fps, k);
        prop_assert_eq!(&d.keep, &keep);
        let expected: Vec<(u32, u32)> = matched.iter().enumerate().filter_map(|(j, m)| Some((j as u32, (*m)? as u32))).collect();
        prop_assert_eq!(d.dropped.iter().copied().zip(d.matched.iter().copied()).collect::<Vec<_>>(), expected);
        for method in [ClusterMethod::Connected, ClusterMethod::Leader] {
            let (members, starts) = clusters(&source, method, 2, &opts, &control).unwrap();
            let got: Vec<Vec<u64>> = starts.windows(2).map(|w| members[w[0] as usize..w[1] as usize].iter().map(|&m| u64::from(m)).collect()).collect();
            prop_assert_eq!(got, crate::testing::brute_clusters(&fps, k, 2, method), "{:?}", method);
        }
        prop_assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0, "temporary files removed");
    }
}

/// 10^5 copies of one value among others: a dedup, clusters and the
/// pairs of first copies cost what the items cost (a quadratic path would
/// take minutes here), and find_all's answer is refused before it is made
/// when it would not fit in memory.
#[test]
fn a_hundred_thousand_copies() {
    let v = 0x0bad_cafe_dead_beefu64;
    let mut fps: Vec<u64> = (0..20_000u64).map(source::mix).collect();
    fps.extend(std::iter::repeat_n(v, 100_000));
    fps.push(v ^ 0b111);
    let source = Source::Memory(&fps);
    let (opts, control) = (Options::new(3), Control::default());
    let d = dedup(&source, &opts, &control).unwrap();
    assert_eq!(d.keep.iter().filter(|&&k| !k).count(), 100_000, "all copies but the first, and the close one");
    assert!(d.dropped.iter().zip(&d.matched).all(|(_, &m)| m == 20_000));
    let (members, starts) = clusters(&source, ClusterMethod::Connected, 2, &opts, &control).unwrap();
    assert_eq!((starts.len(), members.len()), (2, 100_001));
    let first = find_all(&source, None, &Options { copies: Some(Copies::First), ..opts.clone() }, &control).unwrap();
    assert_eq!(first.len(), 100_000);
    // 5 * 10^9 pairs: 80 GB, more than there is here.
    if crate::mem::available().is_some_and(|a| a < 80_000_000_000) {
        let err = find_all(&source, None, &opts, &control).unwrap_err();
        assert!(matches!(err, Error::TooLarge { .. }), "{err}");
        let text = err.to_string();
        assert!(text.contains("out=") && text.contains("copies=\"first\""), "{text}");
    }
}

/// Pairs of copies past the notice's size: a notice when `copies` was
/// left unset, none when it was set.
#[test]
fn pairs_of_copies_get_a_notice_unless_asked_for() {
    let fps = vec![7u64; 20]; // 190 pairs, past the tests' notice of 64
    for (copies, notices) in [(None, 1), (Some(Copies::All), 0), (Some(Copies::First), 0)] {
        let control = Control::default();
        let pairs = find_all(&Source::Memory(&fps), None, &Options { copies, ..Options::new(3) }, &control).unwrap();
        assert_eq!(pairs.len(), if copies == Some(Copies::First) { 19 } else { 190 });
        let said = control.notices();
        assert_eq!(said.len(), notices, "{copies:?}: {said:?}");
        assert!(said.iter().all(|n| n.contains("copies=\"first\"") && n.contains("190")), "{said:?}");
    }
}

#[test]
fn files_out_and_resume() {
    let dir = tempfile::tempdir().unwrap();
    let mut fps: Vec<u64> = (0..20_000u64).map(source::mix).collect();
    for i in 0..2_000 {
        fps.push(fps[i * 7] ^ (1 << (i % 64)) ^ (1 << ((i * 13) % 64)));
    }
    fps.extend([0, 0, u64::MAX, 1]);
    let path = dir.path().join("fps.npy");
    let mut bytes = npy::header("<u8", &[fps.len() as u64]);
    bytes.extend_from_slice(bytemuck::cast_slice(&fps));
    std::fs::write(&path, bytes).unwrap();
    let source = Source::Files(NpyFiles::open(&[&path]).unwrap());
    let expected = brute(&fps, 3);
    let design = Arc::new(crate::tables::plan::with_blocks(3, 5).unwrap());
    let work = dir.path().join("work");
    let opts = Options { design: Some(design), workdir: Some(work.clone()), ..small(3, None) };

    // Cancelled at the fourth table, then resumed: the first three are kept.
    let control = Control::default();
    control.cancel_at_step.set("table 4".into()).unwrap();
    let result = find_all(&source, None, &opts, &control);
    assert!(matches!(result, Err(Error::Interrupted)), "{result:?}");
    // The job's state is in a directory of its own inside the one given.
    let own: Vec<_> = std::fs::read_dir(&work).unwrap().flatten().map(|e| e.path()).collect();
    assert!(own.len() == 1 && own[0].file_name().unwrap().to_str().unwrap().starts_with("rsimhash-job-"), "{own:?}");
    let done: Vec<String> =
        std::fs::read_dir(&own[0]).unwrap().flatten().map(|e| e.file_name().into_string().unwrap()).filter(|n| n.ends_with(".done")).collect();
    // Tables 1 to 3 at least are kept (more if the job outran the cancel).
    assert!((3..10).contains(&done.len()), "{done:?}");
    let out = dir.path().join("pairs.npy");
    let control = Control::default();
    let count = find_all_to_file(&source, None, &opts, &control, &out).unwrap();
    assert_eq!(count, expected.len() as u64);
    let written = std::fs::read(&out).unwrap();
    let header = npy::header("<u8", &[count, 2]).len();
    let pairs: &[u64] = bytemuck::cast_slice(&written[header..]);
    assert_eq!(pairs, bytemuck::cast_slice::<[u64; 2], u64>(&expected));
    assert!(!work.exists(), "the work directory is removed when done");
}

/// A dedup and clusters with dense groups and copies, cancelled after a
/// table and resumed from the work directory: the finished tables' pairs,
/// links, dense items and joins are taken up again, and the answers equal
/// brute force.
#[test]
fn dense_jobs_resume() {
    let dir = tempfile::tempdir().unwrap();
    let bits: Vec<u32> = (20..32).collect();
    let mut fps = crate::testing::ball(0x0123_4567_89ab_cdef, 3, &bits, 3_000, 7);
    fps.extend((0..3_000u64).map(source::mix));
    fps.extend(std::iter::repeat_n(fps[10], 500));
    let design = Arc::new(crate::tables::plan::with_blocks(3, 5).unwrap());
    let (keep, matched) = crate::testing::brute_dedup(&fps, 3);
    let expected_clusters = crate::testing::brute_clusters(&fps, 3, 2, ClusterMethod::Connected);
    for job in ["dedup", "clusters"] {
        let work = dir.path().join(job);
        let opts = Options { design: Some(Arc::clone(&design)), workdir: Some(work.clone()), ..Options::new(3) };
        let source = Source::Memory(&fps);
        let run = |control: &Control| -> Result<()> {
            if job == "dedup" {
                let d = dedup(&source, &opts, control)?;
                assert_eq!(d.keep, keep);
                let want: Vec<(u32, u32)> = matched.iter().enumerate().filter_map(|(j, m)| Some((j as u32, (*m)? as u32))).collect();
                assert_eq!(d.dropped.iter().copied().zip(d.matched.iter().copied()).collect::<Vec<_>>(), want);
            } else {
                let (members, starts) = clusters(&source, ClusterMethod::Connected, 2, &opts, control)?;
                let got: Vec<Vec<u64>> = starts.windows(2).map(|w| members[w[0] as usize..w[1] as usize].iter().map(|&m| u64::from(m)).collect()).collect();
                assert_eq!(got, expected_clusters);
            }
            Ok(())
        };
        let control = Control::default();
        control.cancel_at_step.set("table 3".into()).unwrap();
        let result = run(&control);
        assert!(matches!(result, Err(Error::Interrupted)), "{job}: {result:?}");
        // The job's state is in a directory of its own inside `work`.
        let [own]: [std::fs::DirEntry; 1] = std::fs::read_dir(&work).unwrap().flatten().collect::<Vec<_>>().try_into().unwrap();
        let names: Vec<String> = std::fs::read_dir(own.path()).unwrap().flatten().map(|e| e.file_name().to_string_lossy().into_owned()).collect();
        assert!(names.iter().any(|n| n.ends_with(".done")), "{job}: tables kept: {names:?}");
        if job == "dedup" {
            assert!(names.iter().any(|n| n.contains("-d")) && names.iter().any(|n| n.contains("-l")), "dense items and links kept: {names:?}");
        }
        run(&Control::default()).unwrap();
        assert!(!work.exists(), "{job}: the work directory is removed when done");
    }
}

#[test]
fn bad_ids() {
    let fps = [1u64, 2, 3];
    let err = find_all(&Source::Memory(&fps), Some(&[1, 2]), &Options::new(3), &Control::default()).unwrap_err();
    assert!(err.to_string().contains("2 ids for 3"), "{err}");
    let err = find_all(&Source::Memory(&fps), Some(&[5, 1, 5]), &Options::new(3), &Control::default()).unwrap_err();
    assert!(err.to_string().contains("id 5 given twice"), "{err}");
}

#[test]
fn copies_collapse_onto_their_first() {
    // 5,000 copies of a, then of b (2 bits from a), among random others.
    let (a, b) = (0x0123_4567_89ab_cdefu64, 0x0123_4567_89ab_cdefu64 ^ 0b101);
    let mut fps: Vec<u64> = (0..5_000u64).map(source::mix).collect();
    fps.extend(std::iter::repeat_n(a, 5_000));
    fps.extend((0..2_000u64).map(|i| source::mix(i + 99)));
    fps.extend(std::iter::repeat_n(b, 5_000));
    let opts = Options::new(3);
    // A dedup needs each copy's pair with the first copy of each close
    // fingerprint, not all 5 * 10^7 pairs of copies.
    let job = pairs(&Source::Memory(&fps), &opts, &Control::default(), Job::Dedup).unwrap();
    assert!(job.count() < 30_000, "{} pairs", job.count());
    let d = dedup(&Source::Memory(&fps), &opts, &Control::default()).unwrap();
    let (is_new, matched) = index_of(&[], 3).add_unique(&fps, None, None).unwrap();
    assert_eq!(d.keep, is_new);
    for (&j, &m) in d.dropped.iter().zip(&d.matched) {
        assert_eq!(u64::from(m), matched[j as usize]);
    }
    // Clusters, against the index on fewer copies (it lists all their pairs).
    let small: Vec<u64> = fps.iter().copied().enumerate().filter(|(i, _)| i % 10 == 0).map(|(_, f)| f).collect();
    let index = index_of(&small, 3);
    for method in [ClusterMethod::Connected, ClusterMethod::Leader] {
        let (members, starts) = clusters(&Source::Memory(&small), method, 2, &opts, &Control::default()).unwrap();
        let got: Vec<Vec<u64>> = starts.windows(2).map(|w| members[w[0] as usize..w[1] as usize].iter().map(|&m| u64::from(m)).collect()).collect();
        assert_eq!(got, index.cluster(None, 2, method).unwrap(), "{method:?}");
    }
}

#[test]
fn a_batch_job_keeps_one_total_through_parts_and_spills() {
    use crate::job::check_readings as check;
    use std::sync::atomic::{AtomicBool, Ordering};
    let mut rng = 7u64;
    let fps: Vec<u64> = (0..300_000)
        .map(|_| {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            rng
        })
        .collect();
    for spill in [Some(false), Some(true)] {
        let dir = tempfile::tempdir().unwrap();
        let opts = Options { memory_limit: 1 << 20, spill, workdir: Some(dir.path().join("w")), ..Options::new(3) };
        let control = Control::default();
        let seen = std::sync::Mutex::new(Vec::new());
        let stop = AtomicBool::new(false);
        std::thread::scope(|s| {
            s.spawn(|| {
                while !stop.load(Ordering::Relaxed) {
                    seen.lock().unwrap().push(control.progress());
                    std::thread::yield_now();
                }
            });
            find_all(&Source::Memory(&fps), None, &opts, &control).unwrap();
            stop.store(true, Ordering::Relaxed);
        });
        control.finish();
        let mut seen = seen.into_inner().unwrap();
        seen.retain(|p| p.total > 0);
        seen.push(control.progress());
        check(&seen);
        let last = seen.last().unwrap();
        assert_eq!(last.done, last.total);
        assert_eq!(last.total % fps.len() as u64, 0, "fingerprints times passes");
        assert!(spill != Some(true) || seen.iter().any(|p| p.step.contains("spilling")), "spilled");
        assert!(seen.iter().any(|p| p.step.contains("part")), "worked in parts: {:?}", seen.iter().map(|p| &p.step).collect::<std::collections::BTreeSet<_>>());
    }
}
