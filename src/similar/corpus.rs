//! Documents gathered in memory a chunk at a time, then every verified pair
//! among them, and the dedup and clusters those pairs make.

use std::sync::Mutex;

use rayon::prelude::*;

use super::verify::first_copy;
use super::{Similar, Verified, Verifier};
use crate::batch::{self, Source};
use crate::cluster::{graph, ClusterMethod, Dedup};
use crate::job::{Control, Copies};
use crate::{Error, Result};

/// Documents for verified near-duplicates: each one's candidate fingerprint
/// and its shingle set, made from one tokenization as the document is added.
/// About 8 bytes a distinct shingle are held until the pairs are found.
pub struct Corpus {
    opts: Similar,
    fps: Vec<u64>,
    sets: Vec<Vec<u64>>,
    /// Each text's key (see [`super::copies`]): which texts are copies.
    keys: Vec<[u64; 2]>,
    set_values: usize,
}

impl Corpus {
    pub fn new(opts: Similar) -> Corpus {
        Corpus { opts, fps: Vec::new(), sets: Vec::new(), keys: Vec::new(), set_values: 0 }
    }

    pub fn opts(&self) -> &Similar {
        &self.opts
    }

    pub fn len(&self) -> usize {
        self.fps.len()
    }

    pub fn is_empty(&self) -> bool {
        self.fps.is_empty()
    }

    /// Bytes held by the fingerprints and sets.
    pub fn bytes(&self) -> usize {
        self.fps.len() * 24 + self.sets.len() * std::mem::size_of::<Vec<u64>>() + self.set_values * 8
    }

    /// Adds `texts` (UTF-8), on all threads.
    ///
    /// # Errors
    /// [`Error::InvalidUtf8`] naming the first text of this call that is
    /// not UTF-8 (by its position in `texts`), nothing added;
    /// [`Error::InvalidParameter`] past 2^32 - 2 documents;
    /// [`Error::Interrupted`] when `control` is cancelled.
    pub fn add_utf8<T: AsRef<[u8]> + Sync>(&mut self, texts: &[T], control: &Control) -> Result<()> {
        if (self.len() + texts.len()) as u64 > batch::MAX_ITEMS {
            return Err(Error::invalid("texts", "at most 2**32-2 texts (split the corpus)", self.len() + texts.len()));
        }
        let made = super::fingerprints_and_sets(texts, &self.opts, control)?;
        self.keys.extend(texts.par_iter().map(|t| super::copies::content_key(t.as_ref())).collect::<Vec<_>>());
        self.fps.reserve(made.len());
        self.sets.reserve(made.len());
        for (fp, set) in made {
            self.set_values += set.len();
            self.fps.push(fp);
            self.sets.push(set);
        }
        Ok(())
    }

    /// Every pair of documents (positions in the order added) whose sets are
    /// at least the threshold alike among the candidates: the batch kernel
    /// finds the pairs of fingerprints within `k` table by table, and each
    /// candidate is checked as soon as a table finds it, on the kernel's
    /// threads ([`Verifier`]); candidates are never stored.
    ///
    /// Copies (documents with the same candidate fingerprint and an equal
    /// set) are alike with similarity 1 and alike every other document
    /// exactly when their first copy is, so only first copies are looked
    /// at; their pairs are listed as `copies` says: every pair, or each
    /// copy with its first copy only, where copies are the same text given
    /// again (equal bytes), as a stream of the texts sees them.
    ///
    /// # Errors
    /// [`Error::TooLarge`] when the pairs of copies would not fit in memory;
    /// [`Error::Interrupted`] when `control` is cancelled.
    pub fn pairs(&self, copies: Copies, control: &Control) -> Result<Verified> {
        let first = match copies {
            Copies::All => first_copy(&self.fps, &self.sets),
            Copies::First => first_text(&self.keys, &self.fps, &self.sets),
        };
        let found = self.first_pairs(&first, control)?;
        let links = first.iter().enumerate().filter(|&(i, &f)| f as usize != i).map(|(i, &f)| (i as u32, f));
        expand(found, Groups::of(links), copies)
    }

    /// The alike pairs of first copies, `lower << 32 | higher` by position, ascending.
    fn first_pairs(&self, first: &[u32], control: &Control) -> Result<Vec<(u64, f32)>> {
        if self.opts.exact {
            return self.exact_pairs(first, control);
        }
        let verifier = Verifier::new(&self.sets, &self.opts);
        let reps: Vec<u32> = (0..first.len() as u32).filter(|&i| first[i as usize] == i).collect();
        let rep_fps: Vec<u64> = reps.iter().map(|&r| self.fps[r as usize]).collect();
        let found = Mutex::new(Vec::new());
        let job = batch::Options { memory_limit: u64::MAX, ..batch::Options::new(self.opts.candidates.k) };
        batch::for_each_pair(&Source::Memory(&rep_fps), &job, control, &|pairs| {
            let kept = super::online::check_pairs(&pairs, control, |p| {
                let (a, b) = (reps[(p >> 32) as usize], reps[p as u32 as usize]);
                verifier.check(a, b).map(|s| (u64::from(a) << 32 | u64::from(b), s))
            })?;
            found.lock().unwrap_or_else(|e| e.into_inner()).extend(kept);
            Ok(())
        })?;
        let mut found = found.into_inner().unwrap_or_else(|e| e.into_inner());
        found.par_sort_unstable_by_key(|&(p, _)| p);
        Ok(found)
    }

    /// [`Self::first_pairs`] by the exact join of the first copies' sets.
    fn exact_pairs(&self, first: &[u32], control: &Control) -> Result<Vec<(u64, f32)>> {
        let reps: Vec<u32> = (0..first.len() as u32).filter(|&i| first[i as usize] == i).collect();
        let sets: Vec<&[u64]> = reps.iter().map(|&r| &self.sets[r as usize][..]).collect();
        control.begin(sets.len() as u64);
        control.step("exact join".into(), sets.len() as u64);
        let mut found = super::exact::self_join(&sets, self.opts.threshold, self.opts.measure, control)?;
        for p in &mut found {
            p.0 = u64::from(reps[(p.0 >> 32) as usize]) << 32 | u64::from(reps[p.0 as u32 as usize]);
        }
        // Positions ascend with places among the first copies: still sorted.
        Ok(found)
    }

    /// The keep mask of a dedup in the order added (a document is dropped
    /// when its set is at least the threshold alike a kept earlier one's,
    /// among the candidates), with the similarity to the earliest kept
    /// match of each dropped one. Copies follow their first copy.
    ///
    /// # Errors
    /// As [`Self::pairs`].
    pub fn dedup(&self, control: &Control) -> Result<(Dedup, Vec<f32>)> {
        let first = first_copy(&self.fps, &self.sets);
        let (d, sims) = if self.opts.exact && self.opts.measure == super::Measure::Jaccard {
            self.exact_dedup(&first, control)?
        } else {
            dedup_of(self.len(), &unpacked(self.first_pairs(&first, control)?))
        };
        Ok(follow_first(d, sims, &first))
    }

    /// The dedup of the first copies by the exact join's in-order dedup
    /// ([`super::exact::dedup_distinct`]): only kept texts are checked, so a
    /// dense cluster costs its members, not its pairs. The other copies
    /// are left kept, for [`follow_first`].
    fn exact_dedup(&self, first: &[u32], control: &Control) -> Result<(Dedup, Vec<f32>)> {
        let reps: Vec<u32> = (0..first.len() as u32).filter(|&i| first[i as usize] == i).collect();
        let sets: Vec<&[u64]> = reps.iter().map(|&r| &self.sets[r as usize][..]).collect();
        control.begin(sets.len() as u64);
        control.step("exact dedup".into(), sets.len() as u64);
        let found = super::exact::dedup_distinct(&sets, self.opts.threshold, control)?;
        let mut d = Dedup { keep: vec![true; self.len()], dropped: Vec::new(), matched: Vec::new() };
        let mut sims = Vec::new();
        for (&r, m) in reps.iter().zip(found) {
            if let Some((j, s)) = m {
                d.keep[r as usize] = false;
                d.dropped.push(r);
                d.matched.push(reps[j as usize]);
                sims.push(s);
            }
        }
        Ok((d, sims))
    }

    /// Clusters as [`batch::clusters`] makes them, of the verified pairs.
    ///
    /// # Errors
    /// As [`Self::pairs`], and [`Error::InvalidParameter`] for a `min_size` of 0.
    pub fn clusters(&self, method: ClusterMethod, min_size: usize, control: &Control) -> Result<(Vec<u32>, Vec<u64>)> {
        if min_size < 1 {
            return Err(Error::invalid("min_size", "at least 1", min_size));
        }
        let roots = match method {
            ClusterMethod::Leader => graph::leader_roots(&self.dedup(control)?.0),
            ClusterMethod::Connected => {
                let mut components = graph::Components::new(self.len());
                let first = first_copy(&self.fps, &self.sets);
                let packed: Vec<u64> = self.first_pairs(&first, control)?.into_iter().map(|(p, _)| p).collect();
                components.feed(&packed)?;
                for (i, &f) in first.iter().enumerate() {
                    components.join(f, i as u32);
                }
                components.roots()
            }
        };
        Ok(graph::clusters(roots, min_size))
    }
}

/// For each document, the first one of the same text (the same key and
/// fingerprint, and an equal set: a key collision is no copy).
fn first_text(keys: &[[u64; 2]], fps: &[u64], sets: &[Vec<u64>]) -> Vec<u32> {
    let mut seen: std::collections::HashMap<([u64; 2], u64), u32> = std::collections::HashMap::new();
    (0..fps.len())
        .map(|i| {
            let f = *seen.entry((keys[i], fps[i])).or_insert(i as u32);
            if sets[f as usize] == sets[i] {
                f
            } else {
                i as u32
            }
        })
        .collect()
}

/// The copies of each first copy that has some.
struct Groups {
    members: Vec<Vec<u32>>,
    of: std::collections::HashMap<u32, usize>,
}

impl Groups {
    /// From links `(copy, first)`.
    fn of(links: impl Iterator<Item = (u32, u32)>) -> Groups {
        let mut g = Groups { members: Vec::new(), of: std::collections::HashMap::new() };
        for (copy, first) in links {
            let at = *g.of.entry(first).or_insert_with(|| {
                g.members.push(vec![first]);
                g.members.len() - 1
            });
            g.members[at].push(copy);
        }
        g
    }

    /// `r` and its copies.
    fn with<'a>(&'a self, r: &'a u32) -> &'a [u32] {
        self.of.get(r).map_or(std::slice::from_ref(r), |&g| &self.members[g][..])
    }
}

/// The alike pairs of all documents from those of first copies (`found`,
/// `lower << 32 | higher`, ascending, none a copy's): with
/// [`Copies::First`] each copy paired with its first only, with
/// [`Copies::All`] every pair (counted first, and refused when they would
/// not fit in memory).
fn expand(found: Vec<(u64, f32)>, groups: Groups, copies: Copies) -> Result<Verified> {
    if groups.members.is_empty() {
        return Ok(unpacked(found));
    }
    let count: u64 = match copies {
        Copies::First => found.len() as u64 + groups.members.iter().map(|m| m.len() as u64 - 1).sum::<u64>(),
        Copies::All => {
            found.iter().map(|&(p, _)| groups.with(&((p >> 32) as u32)).len() as u64 * groups.with(&(p as u32)).len() as u64).sum::<u64>()
                + groups.members.iter().map(|m| m.len() as u64 * (m.len() as u64 - 1) / 2).sum::<u64>()
        }
    };
    let need = count.saturating_mul(20);
    let too_large = |available| Error::TooLarge {
        what: format!("the {count} alike pairs"),
        bytes: need,
        available,
        advice: "pass copies=\"first\" to pair each copy with the first copy of its text only".into(),
    };
    if let Some(available) = crate::mem::available().filter(|&a| need > a) {
        return Err(too_large(available));
    }
    let mut out: Vec<([u64; 2], f32)> = Vec::new();
    out.try_reserve_exact(count as usize).map_err(|_| too_large(0))?;
    for m in &groups.members {
        match copies {
            Copies::First => out.extend(m[1..].iter().map(|&c| ([u64::from(m[0]), u64::from(c)], 1.0))),
            Copies::All => {
                for (i, &a) in m.iter().enumerate() {
                    out.extend(m[i + 1..].iter().map(|&b| ([u64::from(a.min(b)), u64::from(a.max(b))], 1.0)));
                }
            }
        }
    }
    for (p, s) in found {
        let (a, b) = ((p >> 32) as u32, p as u32);
        match copies {
            Copies::First => out.push(([u64::from(a), u64::from(b)], s)),
            Copies::All => {
                for &x in groups.with(&a) {
                    out.extend(groups.with(&b).iter().map(|&y| ([u64::from(x.min(y)), u64::from(x.max(y))], s)));
                }
            }
        }
    }
    out.par_sort_unstable_by_key(|&(p, _)| p);
    let (pairs, similarity) = out.into_iter().unzip();
    Ok(Verified { pairs, similarity })
}

/// [`Corpus::pairs`]' answer made from what a stream of the documents
/// found: its alike pairs with copies paired to their first copy only
/// (`pairs` `[lower, higher]` in any order, the links among them) and the
/// links (`copy << 32 | first`).
///
/// # Errors
/// As [`Corpus::pairs`].
pub fn expand_copies(pairs: &[[u64; 2]], similarity: &[f32], links: &[u64], copies: Copies) -> Result<Verified> {
    let mut linked: Vec<u64> = links.iter().map(|&l| (l & u64::from(u32::MAX)) << 32 | l >> 32).collect();
    linked.sort_unstable();
    let mut found: Vec<(u64, f32)> =
        pairs.iter().zip(similarity).map(|(&[a, b], &s)| (a << 32 | b, s)).filter(|(p, _)| linked.binary_search(p).is_err()).collect();
    found.par_sort_unstable_by_key(|&(p, _)| p);
    expand(found, Groups::of(links.iter().map(|&l| ((l >> 32) as u32, l as u32))), copies)
}

/// Packed pairs `lower << 32 | higher` with their similarity as [`Verified`].
fn unpacked(found: Vec<(u64, f32)>) -> Verified {
    let (pairs, similarity) = found.into_iter().map(|(p, s)| ([p >> 32, p & u64::from(u32::MAX)], s)).unzip();
    Verified { pairs, similarity }
}

/// A dedup of the first copies made whole: each other copy goes, matched
/// to its first copy (similarity 1) when that was kept, else to what its
/// first copy matched, with the same similarity.
fn follow_first(d: Dedup, sims: Vec<f32>, first: &[u32]) -> (Dedup, Vec<f32>) {
    let copies: Vec<(u32, u32, f32)> = first
        .iter()
        .enumerate()
        .filter(|&(i, &f)| f as usize != i)
        .map(|(i, &f)| {
            if d.keep[f as usize] {
                (i as u32, f, 1.0)
            } else {
                let at = d.dropped.binary_search(&f).expect("a first copy that went was swept");
                (i as u32, d.matched[at], sims[at])
            }
        })
        .collect();
    if copies.is_empty() {
        return (d, sims);
    }
    let mut keep = d.keep;
    let mut all: Vec<(u32, u32, f32)> = d.dropped.iter().zip(&d.matched).zip(&sims).map(|((&j, &m), &s)| (j, m, s)).collect();
    for &(j, _, _) in &copies {
        keep[j as usize] = false;
    }
    all.extend(copies);
    all.sort_unstable_by_key(|&(j, _, _)| j);
    let dropped = all.iter().map(|c| c.0).collect();
    let matched = all.iter().map(|c| c.1).collect();
    let sims = all.iter().map(|c| c.2).collect();
    (Dedup { keep, dropped, matched }, sims)
}

/// The dedup of `n` documents from their verified pairs: the batch dedup's
/// sweep over the pairs by their later document, and the similarity of
/// each dropped document to the kept one it matched.
pub fn dedup_of(n: usize, found: &Verified) -> (Dedup, Vec<f32>) {
    let mut by_higher: Vec<u64> = found.pairs.iter().map(|&[a, b]| b << 32 | a).collect();
    by_higher.sort_unstable();
    let mut sweep = graph::DedupSweep::new(n);
    sweep.feed(&by_higher).expect("a sweep in memory does not fail");
    let d = sweep.finish();
    let sims = d
        .dropped
        .iter()
        .zip(&d.matched)
        .map(|(&j, &i)| {
            let at = found.pairs.binary_search(&[u64::from(i), u64::from(j)]).expect("a dropped document matched a verified pair");
            found.similarity[at]
        })
        .collect();
    (d, sims)
}

/// Every pair of `texts` (by position) whose shingle sets are at least
/// `opts.threshold` alike, among the candidates ([`Corpus`] of the texts).
///
/// # Errors
/// [`Error::InvalidUtf8`] naming the first text that is not UTF-8;
/// [`Error::Interrupted`] when `control` is cancelled.
pub fn similar_pairs_utf8<T: AsRef<[u8]> + Sync>(texts: &[T], opts: &Similar, copies: Copies, control: &Control) -> Result<Verified> {
    let mut corpus = Corpus::new(*opts);
    // The job as the caller sees it: the texts read once, then once
    // through the batch job that finds and checks their candidates.
    let n = texts.len() as u64;
    control.begin(2 * n);
    control.step("fingerprints and shingle sets".into(), n);
    corpus.add_utf8(texts, control)?;
    control.step("candidates".into(), n);
    let _nested = control.nest();
    corpus.pairs(copies, control)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fingerprint::Fingerprinter;
    use crate::similar::{similarity, Candidates, Measure};
    use crate::{Mode, Shingling};

    fn texts() -> Vec<String> {
        let base: Vec<String> = (0..40).map(|i| format!("story {i} tells of the {} river and the {} hills near town {i}", i % 5, i % 3)).collect();
        let mut texts = base.clone();
        for (i, t) in base.iter().enumerate().take(20) {
            texts.push(format!("{t} again"));
            texts.push(t.clone());
            if i % 4 == 0 {
                texts.push(String::new());
            }
        }
        texts
    }

    /// Every verified pair is a candidate with its exact similarity, and
    /// every candidate at or above the threshold is verified; the dedup and
    /// clusters follow from those pairs.
    #[test]
    fn verified_pairs_are_the_similar_candidates() {
        let texts = texts();
        let sets = Shingling::new(Mode::Words, Some(2)).unwrap();
        let candidates = Candidates { shingling: Shingling::new(Mode::Chars, Some(3)).unwrap(), k: 12 };
        let fps = crate::fingerprint::fingerprints(&texts, candidates.shingling);
        let mut f = Fingerprinter::new(sets);
        let all: Vec<Vec<u64>> = texts.iter().map(|t| f.shingle_set(t, sets).to_vec()).collect();
        for measure in [Measure::Jaccard, Measure::Containment] {
            for threshold in [0.3, 0.6, 0.9, 1.0] {
                let opts = Similar::new(threshold, measure, sets, candidates).unwrap();
                let got = similar_pairs_utf8(&texts, &opts, Copies::All, &Control::default()).unwrap();
                let mut expected = Verified::default();
                for a in 0..texts.len() {
                    for b in a + 1..texts.len() {
                        let s = similarity(&all[a], &all[b], measure);
                        if crate::hamming(fps[a], fps[b]) <= candidates.k && s >= threshold {
                            expected.pairs.push([a as u64, b as u64]);
                            expected.similarity.push(s as f32);
                        }
                    }
                }
                assert!(!expected.pairs.is_empty());
                assert_eq!(got, expected, "{measure} at {threshold}");

                // The dedup: each document against the kept ones before it.
                let (d, sims) = dedup_of(texts.len(), &got);
                let mut keep = vec![true; texts.len()];
                for j in 0..texts.len() {
                    if let Some(i) = (0..j).find(|&i| keep[i] && got.pairs.contains(&[i as u64, j as u64])) {
                        keep[j] = false;
                        let at = d.dropped.iter().position(|&x| x as usize == j).unwrap();
                        assert_eq!(d.matched[at] as usize, i);
                        assert_eq!(sims[at], similarity(&all[i], &all[j], measure) as f32);
                    }
                }
                assert_eq!(d.keep, keep);
            }
        }
    }

    #[test]
    fn chunks_add_up_to_the_whole() {
        let texts = texts();
        let opts = Similar::new(0.5, Measure::Jaccard, Shingling::default(), Candidates::auto(0.5).unwrap()).unwrap();
        let mut corpus = Corpus::new(opts);
        let control = Control::default();
        for chunk in texts.chunks(7) {
            corpus.add_utf8(chunk, &control).unwrap();
        }
        assert_eq!(corpus.len(), texts.len());
        assert_eq!(corpus.pairs(Copies::All, &control).unwrap(), similar_pairs_utf8(&texts, &opts, Copies::All, &control).unwrap());
        let (members, starts) = corpus.clusters(ClusterMethod::Connected, 2, &control).unwrap();
        assert_eq!(*starts.last().unwrap() as usize, members.len());
        assert!(corpus.clusters(ClusterMethod::Leader, 0, &control).is_err());
    }

    #[test]
    fn bad_utf8_is_named() {
        let opts = Similar::new(0.9, Measure::Jaccard, Shingling::default(), Candidates::auto(0.9).unwrap()).unwrap();
        let mut corpus = Corpus::new(opts);
        let texts: [&[u8]; 3] = [b"fine", b"also fine", b"\xff bad"];
        assert!(matches!(corpus.add_utf8(&texts, &Control::default()), Err(Error::InvalidUtf8 { index: 2, .. })));
        assert!(corpus.is_empty());
    }
}
