//! SimilarIndex against the Corpus's answers and brute force.

use super::*;
use crate::similar::{similarity, Corpus};
use crate::Copies;
use proptest::prelude::*;

fn opts(threshold: f64, measure: Measure, k: u32) -> Similar {
    let candidates = Candidates { shingling: Shingling::new(Mode::Words, Some(1)).unwrap(), k };
    Similar::new(threshold, measure, Shingling::new(Mode::Words, Some(2)).unwrap(), candidates).unwrap()
}

/// Texts from a small vocabulary: many alike pairs, copies, empty texts.
fn texts() -> impl Strategy<Value = Vec<String>> {
    const WORDS: [&str; 8] = ["a", "b", "c", "d", "e", "f", "g", "h"];
    prop::collection::vec(prop::collection::vec(prop::sample::select(&WORDS[..]), 0..9).prop_map(|w| w.join(" ")), 0..40)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// Queries answer as brute force over the candidates (every stored
    /// text within k, confirmed by the exact similarity), and as the
    /// corpus's pairs: every stored text alike a stored one is among
    /// its pairs, with the same similarity.
    #[test]
    fn queries_equal_brute_force_and_the_corpus(texts in texts(), t in prop_oneof![Just(1.0f64), 0.2f64..1.0], containment in any::<bool>(), k in 0u32..=16) {
        let measure = if containment { Measure::Containment } else { Measure::Jaccard };
        let o = opts(t, measure, k);
        let mut index = SimilarIndex::new(o).unwrap();
        let ids: Vec<u64> = (0..texts.len() as u64).map(|i| i * 7 + 3).collect();
        index.add_utf8(&texts, Some(&ids)).unwrap();
        let m = index.query_utf8(&texts).unwrap();
        let mut f = crate::Fingerprinter::new(o.candidates.shingling);
        let made: Vec<(u64, Vec<u64>)> = texts.iter().map(|x| { let (fp, s) = f.fingerprint_and_set(x, o.sets); (fp, s.to_vec()) }).collect();
        let mut want = SimilarMatches::default();
        for (q, (fq, sq)) in made.iter().enumerate() {
            let mut found: Vec<(u64, f32)> = made.iter().zip(&ids)
                .filter(|((fp, _), _)| (fp ^ fq).count_ones() <= k)
                .filter_map(|((_, s), &id)| { let x = similarity(s, sq, measure); (x >= t).then_some((id, x as f32)) })
                .collect();
            found.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
            for (id, s) in found { want.positions.push(q as u32); want.ids.push(id); want.similarity.push(s); }
        }
        prop_assert_eq!(&m, &want);

        let mut corpus = Corpus::new(o);
        corpus.add_utf8(&texts, &Control::default()).unwrap();
        let pairs = corpus.pairs(Copies::All, &Control::default()).unwrap();
        let mut from_queries: Vec<([u64; 2], f32)> = (0..m.ids.len())
            .map(|r| (m.positions[r] as u64, (m.ids[r] - 3) / 7, m.similarity[r]))
            .filter(|&(q, id, _)| q < id)
            .map(|(q, id, s)| ([q, id], s))
            .collect();
        from_queries.sort_by_key(|p| p.0);
        let from_corpus: Vec<([u64; 2], f32)> = pairs.pairs.iter().copied().zip(pairs.similarity.iter().copied()).collect();
        prop_assert_eq!(from_queries, from_corpus);
    }

    /// add_unique keeps what the stream dedup keeps, and matches as
    /// documented; then stored texts are exactly the new ones.
    #[test]
    fn add_unique_in_order(texts in texts(), t in prop_oneof![Just(1.0f64), 0.2f64..1.0], split in 0usize..40, k in 0u32..=12) {
        let o = opts(t, Measure::Jaccard, k);
        let mut index = SimilarIndex::new(o).unwrap();
        let at = split.min(texts.len());
        let (mut is_new, mut matched) = index.add_unique_utf8(&texts[..at], None).unwrap();
        let (b, m) = index.add_unique_utf8(&texts[at..], None).unwrap();
        is_new.extend(b);
        matched.extend(m);
        // Brute force, in order.
        let mut f = crate::Fingerprinter::new(o.candidates.shingling);
        let made: Vec<(u64, Vec<u64>)> = texts.iter().map(|x| { let (fp, s) = f.fingerprint_and_set(x, o.sets); (fp, s.to_vec()) }).collect();
        let near = |i: usize, j: usize| (made[i].0 ^ made[j].0).count_ones() <= k && similarity(&made[i].1, &made[j].1, Measure::Jaccard) >= t;
        let mut kept: Vec<usize> = Vec::new();
        for j in 0..texts.len() {
            let call_start = if j < at { 0 } else { at };
            let stored = kept.iter().copied().filter(|&i| i < call_start && near(i, j)).min();
            let earlier = kept.iter().copied().filter(|&i| i >= call_start && near(i, j)).min();
            match stored.or(earlier) {
                Some(i) => { prop_assert!(!is_new[j], "{}", j); prop_assert_eq!(matched[j], i as u64); }
                None => { prop_assert!(is_new[j], "{}", j); prop_assert_eq!(matched[j], j as u64); kept.push(j); }
            }
        }
        prop_assert_eq!(index.len(), kept.len());
    }

    /// Saved and loaded (mapped or read), the index answers alike, and
    /// both take more texts and removals alike.
    #[test]
    fn save_load_round_trip(texts in texts(), t in 0.3f64..1.0, mmap in any::<bool>(), gone in prop::collection::vec(0u64..40, 0..10)) {
        let o = opts(t, Measure::Jaccard, 8);
        let mut index = SimilarIndex::new(o).unwrap();
        index.add_utf8(&texts, None).unwrap();
        prop_assert_eq!(index.remove(&gone).unwrap(), gone.iter().collect::<std::collections::HashSet<_>>().into_iter().filter(|&&g| (g as usize) < texts.len()).count());
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("similar.rsh");
        index.save(&path).unwrap();
        let mut loaded = SimilarIndex::load(&path, mmap).unwrap();
        prop_assert_eq!(loaded.opts(), index.opts());
        prop_assert_eq!(loaded.len(), index.len());
        prop_assert_eq!(loaded.query_utf8(&texts).unwrap(), index.query_utf8(&texts).unwrap());
        let more: Vec<String> = texts.iter().map(|x| format!("{x} more")).collect();
        prop_assert_eq!(loaded.add_utf8(&more, None).unwrap(), index.add_utf8(&more, None).unwrap());
        prop_assert_eq!(loaded.query_utf8(&more).unwrap(), index.query_utf8(&more).unwrap());
        loaded.save(&path).unwrap();
        let again = SimilarIndex::load(&path, !mmap).unwrap();
        prop_assert_eq!(again.query_utf8(&texts).unwrap(), index.query_utf8(&texts).unwrap());
    }
}

#[test]
fn ids_are_checked_before_anything_changes() {
    let mut index = SimilarIndex::new(opts(0.5, Measure::Jaccard, 4)).unwrap();
    assert_eq!(index.add_utf8(&["a b c", "d e f"], Some(&[5, 9])).unwrap(), vec![5, 9]);
    assert!(index.add_utf8(&["x", "y"], Some(&[1, 1])).unwrap_err().to_string().contains("given twice"));
    assert!(index.add_utf8(&["x"], Some(&[9])).unwrap_err().to_string().contains("already stored"));
    assert!(index.add_unique_utf8(&["x"], Some(&[5])).is_err());
    assert!(index.add_utf8(&["x"], Some(&[1, 2])).is_err());
    assert_eq!(index.len(), 2);
    // Default ids go past every id given.
    assert_eq!(index.add_utf8(&["g h"], None).unwrap(), vec![10]);
    assert_eq!(index.remove(&[5, 5, 77]).unwrap(), 1);
    assert!(!index.contains(5));
    assert_eq!(index.add_utf8(&["a b c"], Some(&[5])).unwrap(), vec![5]);
    let bad: &[&[u8]] = &[b"ok", b"\xff"];
    assert!(matches!(index.add_utf8(bad, None), Err(Error::InvalidUtf8 { index: 1, .. })));
    assert_eq!(index.len(), 3);
}

/// Copies share one held set: a query answers every copy, and the set
/// goes when its last copy does.
#[test]
fn copies_share_their_set() {
    let mut index = SimilarIndex::new(opts(0.5, Measure::Jaccard, 16)).unwrap();
    let texts: Vec<&str> = std::iter::repeat_n("a b c d e", 100).chain(["a b c d f", "x y z w"]).collect();
    index.add_utf8(&texts, None).unwrap();
    assert_eq!(index.shared.values().map(Vec::len).sum::<usize>(), 3);
    let m = index.query_utf8(&["a b c d e"]).unwrap();
    assert_eq!(m.ids, (0..100).chain([100]).collect::<Vec<u64>>());
    assert!(m.similarity[..100].iter().all(|&s| s == 1.0) && m.similarity[100] == 0.6);
    let values = index.values;
    assert_eq!(index.remove(&(0..99).collect::<Vec<u64>>()).unwrap(), 99);
    assert_eq!(index.values, values);
    assert_eq!(index.remove(&[99]).unwrap(), 1);
    assert_eq!(index.values, values - 4);
    assert_eq!(index.shared.values().map(Vec::len).sum::<usize>(), 2);
    assert_eq!(index.query_utf8(&["a b c d e"]).unwrap().ids, vec![100]);
}

#[test]
fn a_plain_index_file_is_refused_with_a_reason() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("plain.rsh");
    let mut plain = Index::new(4, None, None).unwrap();
    plain.add(&[1, 2, 3], None).unwrap();
    plain.save(&path).unwrap();
    let e = SimilarIndex::load(&path, true).err().unwrap().to_string();
    assert!(e.contains("fingerprints only"), "{e}");
    // And a SimilarIndex file loads as a plain Index of its fingerprints.
    let mut index = SimilarIndex::new(opts(0.5, Measure::Jaccard, 4)).unwrap();
    index.add_utf8(&["a b c", "d e f"], None).unwrap();
    index.save(&path).unwrap();
    assert_eq!(Index::load(&path, false).unwrap().len(), 2);
}

/// The settings of an exact index over word 2-shingles.
fn exact_opts(threshold: f64, measure: Measure) -> Similar {
    SimilarIndex::exact_opts(opts(threshold, measure, 0))
}

/// Every `(query position, id, similarity)` at least `t` alike, by brute
/// force over the stored sets, in the index's order.
fn brute_matches(stored: &[(u64, Vec<u64>)], queries: &[Vec<u64>], t: f64, measure: Measure) -> SimilarMatches {
    let mut want = SimilarMatches::default();
    for (q, sq) in queries.iter().enumerate() {
        let mut found: Vec<(u64, f32)> = stored
            .iter()
            .filter_map(|(id, s)| {
                let x = similarity(s, sq, measure);
                (x >= t).then_some((*id, x as f32))
            })
            .collect();
        found.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        for (id, s) in found {
            want.positions.push(q as u32);
            want.ids.push(id);
            want.similarity.push(s);
        }
    }
    want
}

fn sets_of(texts: &[String], o: &Similar) -> Vec<Vec<u64>> {
    let mut f = crate::Fingerprinter::new(o.sets);
    texts.iter().map(|x| f.shingle_set(x, o.sets).to_vec()).collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// An exact index finds every stored text at least the threshold alike
    /// (brute force over all of them), at its own threshold and a stricter
    /// one, before and after removals, for both measures.
    #[test]
    fn exact_queries_equal_brute_force(
        texts in texts(),
        queries in texts(),
        t in prop_oneof![Just(1.0f64), Just(0.05f64), 0.05f64..1.0],
        stricter in 0.0f64..1.0,
        containment in any::<bool>(),
        gone in prop::collection::vec(0u64..40, 0..20),
        reorder in 0usize..6,
    ) {
        let measure = if containment { Measure::Containment } else { Measure::Jaccard };
        let o = exact_opts(t, measure);
        let mut index = SimilarIndex::new(o).unwrap();
        prop_assert!(index.exact());
        // The order by frequency, made from `reorder` held sets on (0: the hash order throughout).
        if reorder > 0 {
            index.prefix.as_mut().unwrap().reorder_from(reorder);
        }
        let ids: Vec<u64> = (0..texts.len() as u64).map(|i| i * 5 + 1).collect();
        index.add_utf8(&texts, Some(&ids)).unwrap();
        let sets = sets_of(&texts, &o);
        let mut stored: Vec<(u64, Vec<u64>)> = ids.iter().copied().zip(sets.iter().cloned()).collect();
        let all: Vec<String> = texts.iter().chain(&queries).cloned().collect();
        let query_sets = sets_of(&all, &o);
        prop_assert_eq!(index.query_utf8(&all).unwrap(), brute_matches(&stored, &query_sets, t, measure));
        let t2 = t + (1.0 - t) * stricter;
        prop_assert_eq!(index.query_utf8_at(&all, Some(t2)).unwrap(), brute_matches(&stored, &query_sets, t2, measure));

        let gone: Vec<u64> = gone.iter().map(|g| g * 5 + 1).collect();
        index.remove(&gone).unwrap();
        stored.retain(|(id, _)| !gone.contains(id));
        prop_assert_eq!(index.len(), stored.len());
        prop_assert_eq!(index.query_utf8(&all).unwrap(), brute_matches(&stored, &query_sets, t, measure));
        // Removed texts come back (their slots reused) and are found again.
        let back: Vec<String> = queries.iter().map(|q| format!("{q} back")).collect();
        let back_ids: Vec<u64> = (0..back.len() as u64).map(|i| 1000 + i).collect();
        index.add_utf8(&back, Some(&back_ids)).unwrap();
        stored.extend(back_ids.iter().copied().zip(sets_of(&back, &o)));
        prop_assert_eq!(index.query_utf8(&all).unwrap(), brute_matches(&stored, &query_sets, t, measure));
        // Everything removed: nothing held, nothing found.
        let every: Vec<u64> = stored.iter().map(|s| s.0).collect();
        index.remove(&every).unwrap();
        prop_assert!(index.is_empty());
        prop_assert_eq!(index.values, 0);
        prop_assert!(index.prefix.as_ref().unwrap().is_clear());
        prop_assert!(index.query_utf8(&all).unwrap().ids.is_empty());
    }

    /// An exact index's add_unique keeps, in order, each text that no kept
    /// text is at least the threshold alike (brute force over all of them).
    #[test]
    fn exact_add_unique_equals_brute_force(texts in texts(), t in 0.05f64..=1.0, split in 0usize..40, containment in any::<bool>(), reorder in any::<bool>()) {
        let measure = if containment { Measure::Containment } else { Measure::Jaccard };
        let o = exact_opts(t, measure);
        let mut index = SimilarIndex::new(o).unwrap();
        if reorder {
            index.prefix.as_mut().unwrap().reorder_from(1);
        }
        let at = split.min(texts.len());
        let (mut is_new, mut matched) = index.add_unique_utf8(&texts[..at], None).unwrap();
        let (b, m) = index.add_unique_utf8(&texts[at..], None).unwrap();
        is_new.extend(b);
        matched.extend(m);
        let sets = sets_of(&texts, &o);
        let near = |i: usize, j: usize| similarity(&sets[i], &sets[j], measure) >= t;
        let mut kept: Vec<usize> = Vec::new();
        for j in 0..texts.len() {
            let call_start = if j < at { 0 } else { at };
            let stored = kept.iter().copied().filter(|&i| i < call_start && near(i, j)).min();
            let earlier = kept.iter().copied().filter(|&i| i >= call_start && near(i, j)).min();
            match stored.or(earlier) {
                Some(i) => { prop_assert!(!is_new[j], "{}", j); prop_assert_eq!(matched[j], i as u64); }
                None => { prop_assert!(is_new[j], "{}", j); prop_assert_eq!(matched[j], j as u64); kept.push(j); }
            }
        }
        prop_assert_eq!(index.len(), kept.len());
    }

    /// An exact index saved and loaded (mapped or read) is exact still, and
    /// answers, takes texts and removes them as before.
    #[test]
    fn exact_save_load_round_trip(texts in texts(), t in 0.05f64..=1.0, mmap in any::<bool>(), gone in prop::collection::vec(0u64..40, 0..10)) {
        let o = exact_opts(t, Measure::Jaccard);
        let mut index = SimilarIndex::new(o).unwrap();
        index.add_utf8(&texts, None).unwrap();
        index.remove(&gone).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("exact.rsh");
        index.save(&path).unwrap();
        let saved = index.len();
        let mut loaded = SimilarIndex::load(&path, mmap).unwrap();
        prop_assert!(loaded.exact());
        prop_assert_eq!(loaded.opts(), index.opts());
        prop_assert_eq!(loaded.query_utf8(&texts).unwrap(), index.query_utf8(&texts).unwrap());
        let more: Vec<String> = texts.iter().map(|x| format!("{x} more")).collect();
        prop_assert_eq!(loaded.add_utf8(&more, None).unwrap(), index.add_utf8(&more, None).unwrap());
        prop_assert_eq!(loaded.remove(&gone).unwrap(), index.remove(&gone).unwrap());
        prop_assert_eq!(loaded.query_utf8(&more).unwrap(), index.query_utf8(&more).unwrap());
        // The file's fingerprints load as a plain index (k = 0) of its texts.
        prop_assert_eq!(Index::load(&path, false).unwrap().len(), saved);
    }
}

/// Sets of random hash values, sizes from 0 to 300, with near copies:
/// exact queries against brute force where the prefixes are long.
#[test]
fn exact_queries_of_large_sets() {
    let mut state = 39u64;
    let mut next = move || {
        state = state.wrapping_add(0x9e3779b97f4a7c15);
        let z = (state ^ (state >> 30)).wrapping_mul(0xbf58476d1ce4e5b9);
        let z = (z ^ (z >> 27)).wrapping_mul(0x94d049bb133111eb);
        z ^ (z >> 31)
    };
    let base: Vec<u64> = (0..400).map(|_| next()).collect();
    let mut sets: Vec<Vec<u64>> = Vec::new();
    for _ in 0..300 {
        let n = next() % 300;
        let mut s: Vec<u64> = (0..n).map(|_| if next() % 10 < 7 { base[(next() % 400) as usize] } else { next() }).collect();
        s.sort_unstable();
        s.dedup();
        sets.push(s);
    }
    for &(t, measure, reorder) in &[
        (0.3, Measure::Jaccard, false),
        (0.6, Measure::Jaccard, true),
        (0.9, Measure::Containment, false),
        (0.4, Measure::Containment, true),
        (0.5, Measure::Jaccard, true),
    ] {
        let mut index = SimilarIndex::new(exact_opts(t, measure)).unwrap();
        if reorder {
            index.prefix.as_mut().unwrap().reorder_from(10);
        }
        let ids: Vec<u64> = (0..sets.len() as u64).collect();
        index.store(&ids, &vec![0; sets.len()], sets.clone(), None).unwrap();
        let stored: Vec<(u64, Vec<u64>)> = ids.iter().copied().zip(sets.iter().cloned()).collect();
        let got = {
            let prefix = index.prefix.as_ref().unwrap();
            let o = *index.opts();
            let mut m = SimilarMatches::default();
            for (q, s) in sets.iter().enumerate() {
                for (id, x) in index.confirm_exact(prefix, &Held::new(s.clone()), &o, &mut Vec::new()) {
                    m.positions.push(q as u32);
                    m.ids.push(id);
                    m.similarity.push(x);
                }
            }
            m
        };
        let want = brute_matches(&stored, &sets, t, measure);
        assert!(want.ids.len() > sets.len(), "{t} {measure}: only {} matches", want.ids.len());
        assert_eq!(got, want, "{t} {measure}");
    }
}

#[test]
fn an_exact_index_refuses_a_looser_query() {
    let mut index = SimilarIndex::new(exact_opts(0.8, Measure::Jaccard)).unwrap();
    index.add_utf8(&["a b c d"], None).unwrap();
    assert!(index.query_utf8_at(&["a b c d"], Some(0.7)).is_err());
    assert_eq!(index.query_utf8_at(&["a b c d"], Some(0.9)).unwrap().ids, vec![0]);
}
