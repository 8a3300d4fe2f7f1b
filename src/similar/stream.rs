//! The second pass of verified near-duplicates over a corpus too large to
//! hold: documents come again in order, a chunk at a time, and each
//! candidate pair is checked when its later document comes. A document's
//! shingle set is made when its chunk comes (if some pair names it), kept
//! while a later document is still to pair with it, and dropped after, so
//! memory follows the candidates that span the stream, not the corpus.

use std::collections::HashMap;

use rayon::prelude::*;

use super::overlap::{alike_within, Buckets};
use super::Similar;
use crate::fingerprint::Fingerprinter;
use crate::job::Control;
use crate::{Error, Result};

/// A set made for the pass: the set, its buckets, and the last document
/// that pairs with it.
struct Open {
    set: Vec<u64>,
    buckets: Buckets,
    last: u64,
}

/// Checks candidate pairs as the documents of a corpus go by in order.
pub struct StreamVerifier {
    opts: Similar,
    /// Sets of documents before `next` that a later document pairs with.
    open: HashMap<u64, Open>,
    /// The position of the next document.
    next: u64,
}

impl StreamVerifier {
    pub fn new(opts: Similar) -> StreamVerifier {
        StreamVerifier { opts, open: HashMap::new(), next: 0 }
    }

    /// Documents held for later pairs, and their set values.
    pub fn held(&self) -> (usize, usize) {
        (self.open.len(), self.open.values().map(|o| o.set.len()).sum())
    }

    /// Takes documents `first..first + texts.len()` (UTF-8), which must
    /// follow the last chunk, with the candidate pairs whose later document
    /// is among them (`higher << 32 | lower`, ascending: each document's
    /// pairs together) and, for each of these documents, the last later
    /// document a candidate pairs it with (itself or less for none).
    /// Returns the pairs that are alike enough, in the same order, with
    /// their similarity.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] for a chunk out of order, or a pair whose
    /// later document is not in the chunk, or whose earlier document's set
    /// was dropped (the `last` given for it was too small);
    /// [`Error::InvalidUtf8`] naming a text by its place in `texts`;
    /// [`Error::Interrupted`] when `control` is cancelled.
    ///
    /// `links` (`copy << 32 | first`, ascending) link copies in the chunk to
    /// the first copy of their text (see [`super::copies`]): each is
    /// confirmed by comparing the two sets, and returned with the alike
    /// pairs (similarity 1) in their place.
    ///
    /// # Errors
    /// Also [`Error::BadInput`] for a link whose sets differ.
    pub fn feed<T: AsRef<[u8]> + Sync>(
        &mut self,
        first: u64,
        texts: &[T],
        pairs: &[u64],
        last: &[u32],
        links: &[u64],
        control: &Control,
    ) -> Result<Vec<(u64, f32)>> {
        let n = texts.len() as u64;
        if first != self.next {
            return Err(Error::invalid("first", "the position after the last chunk's documents", format!("{first}, expected {}", self.next)));
        }
        if last.len() != texts.len() {
            return Err(Error::invalid("last", "one value per text", format!("{} for {} texts", last.len(), texts.len())));
        }
        let end = first + n;
        let mut named = vec![false; texts.len()];
        for (i, &l) in last.iter().enumerate() {
            named[i] = u64::from(l) > first + i as u64;
        }
        for &p in pairs.iter().chain(links) {
            let (hi, lo) = (p >> 32, p & u64::from(u32::MAX));
            if !(first..end).contains(&hi) || lo >= hi {
                return Err(Error::invalid(
                    "pairs",
                    "pairs (later, earlier) whose later document is in the chunk",
                    format!("({hi}, {lo}) for documents {first}..{end}"),
                ));
            }
            named[(hi - first) as usize] = true;
            if lo >= first {
                named[(lo - first) as usize] = true;
            } else if !self.open.contains_key(&lo) {
                return Err(Error::invalid(
                    "last",
                    "the last later document of each earlier one",
                    format!("document {lo} was dropped before {hi} paired with it"),
                ));
            }
        }
        // Sets of the chunk's documents that some pair names, on all threads.
        let sets = self.opts.sets;
        let made: Vec<Option<Open>> = texts
            .par_iter()
            .zip(&named)
            .enumerate()
            .with_min_len(16)
            .map_init(
                || Fingerprinter::new(sets),
                |f, (i, (bytes, &needed))| {
                    if !needed {
                        return Ok(None);
                    }
                    let text = std::str::from_utf8(bytes.as_ref()).map_err(|e| Error::InvalidUtf8 { index: i, valid_up_to: e.valid_up_to() })?;
                    let set = f.shingle_set(text, sets).to_vec();
                    Ok(Some(Open { buckets: Buckets::of(&set), set, last: u64::from(last[i]) }))
                },
            )
            .collect::<Result<_>>()?;
        control.check()?;
        let open = &self.open;
        let set_of = |d: u64| if d >= first { made[(d - first) as usize].as_ref() } else { open.get(&d) };
        let opts = &self.opts;
        let mut found: Vec<(u64, f32)> = pairs
            .par_iter()
            .filter_map(|&p| {
                let (a, b) = (set_of(p & u64::from(u32::MAX))?, set_of(p >> 32)?);
                let may_reach = |need| a.buckets.may_share(&b.buckets, &a.set, &b.set, need);
                alike_within(&a.set, &b.set, opts, may_reach).map(|s| (p, s as f32))
            })
            .collect();
        if !links.is_empty() {
            if let Some(&l) = links.iter().find(|&&l| set_of(l & u64::from(u32::MAX)).map(|o| &o.set) != set_of(l >> 32).map(|o| &o.set)) {
                return Err(Error::bad_input(
                    format!("texts {} and {}", l & u64::from(u32::MAX), l >> 32),
                    "have the same 128-bit hash and fingerprint but not the same shingle sets (a hash collision: please report it)",
                ));
            }
            found.extend(links.iter().map(|&l| (l, 1.0)));
            found.sort_unstable_by_key(|&(p, _)| p);
        }
        self.open.retain(|_, o| o.last >= end);
        for (i, o) in made.into_iter().enumerate() {
            if let Some(o) = o.filter(|o| o.last >= end) {
                self.open.insert(first + i as u64, o);
            }
        }
        self.next = end;
        control.advance(n);
        Ok(found)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::similar::{Candidates, Corpus, Measure};
    use crate::{Mode, Shingling};

    /// Fed in chunks of any size with the candidates by later document, the
    /// stream finds what the corpus in memory finds, and holds only the
    /// sets that later documents need.
    #[test]
    fn streams_with_copies_equal_memory() {
        // Texts given again (some many times), as a two-pass job sees them:
        // copies linked to their first by their bytes' key, candidates
        // among first copies only; the stream and its sweep then answer as
        // the corpus in memory does, for every pair, the dedup and clusters.
        let base: Vec<String> = (0..40).map(|i| format!("note {i} on the {} mill and {} fields of {}", i % 6, i % 4, i % 5)).collect();
        let mut texts: Vec<String> = base.clone();
        for i in 0..120 {
            texts.push(base[(i * 7) % 13].clone());
        }
        texts.push(base[3].to_uppercase()); // the same set and fingerprint, other bytes
        let candidates = Candidates { shingling: Shingling::new(Mode::Words, Some(1)).unwrap(), k: 14 };
        let opts = Similar::new(0.5, Measure::Jaccard, Shingling::new(Mode::Words, Some(2)).unwrap(), candidates).unwrap();
        let control = Control::default();
        let mut corpus = Corpus::new(opts);
        corpus.add_utf8(&texts, &control).unwrap();
        let expected = corpus.pairs(crate::Copies::All, &control).unwrap();
        let (expected_dedup, expected_sims) = corpus.dedup(&control).unwrap();
        let fps = crate::fingerprint::fingerprints(&texts, candidates.shingling);
        let keys: Vec<[u64; 2]> = texts.iter().map(|t| super::super::copies::content_key(t.as_bytes())).collect();
        let first: Vec<usize> = (0..texts.len()).map(|i| (0..=i).find(|&j| keys[j] == keys[i] && fps[j] == fps[i]).unwrap()).collect();
        let links: Vec<u64> = (0..texts.len()).filter(|&i| first[i] != i).map(|i| (i as u64) << 32 | first[i] as u64).collect();
        assert!(links.len() > 100);
        let mut by_higher = Vec::new();
        let mut last = vec![0u32; texts.len()];
        for b in (0..texts.len()).filter(|&b| first[b] == b) {
            for a in (0..b).filter(|&a| first[a] == a) {
                if crate::hamming(fps[a], fps[b]) <= candidates.k {
                    by_higher.push((b as u64) << 32 | a as u64);
                    last[a] = last[a].max(b as u32);
                }
            }
        }
        for &l in &links {
            let f = (l & 0xffff_ffff) as usize;
            last[f] = last[f].max((l >> 32) as u32);
        }
        for chunk in [1, 9, texts.len()] {
            let mut stream = StreamVerifier::new(opts);
            let mut sweep = crate::similar::PairSweep::new(texts.len());
            let mut got: Vec<([u64; 2], f32)> = Vec::new();
            for start in (0..texts.len()).step_by(chunk) {
                let end = (start + chunk).min(texts.len());
                let part = |v: &[u64]| (v.partition_point(|&p| p >> 32 < start as u64), v.partition_point(|&p| p >> 32 < end as u64));
                let ((lo, hi), (llo, lhi)) = (part(&by_higher), part(&links));
                let found = stream.feed(start as u64, &texts[start..end], &by_higher[lo..hi], &last[start..end], &links[llo..lhi], &control).unwrap();
                let (alike, sims): (Vec<u64>, Vec<f32>) = found.iter().filter(|(p, _)| links[llo..lhi].binary_search(p).is_err()).copied().unzip();
                sweep.feed(&alike, &sims, &links[llo..lhi]).unwrap();
                got.extend(found.into_iter().map(|(p, s)| ([p & 0xffff_ffff, p >> 32], s)));
            }
            got.sort_by_key(|&(p, _)| p);
            let (pairs, similarity): (Vec<[u64; 2]>, Vec<f32>) = got.into_iter().unzip();
            let all = crate::similar::expand_copies(&pairs, &similarity, &links, crate::Copies::All).unwrap();
            assert_eq!(all, expected, "chunks of {chunk}");
            assert_eq!(sweep.dedup(), (expected_dedup.clone(), expected_sims.clone()), "chunks of {chunk}");
        }
    }

    #[test]
    fn streams_equal_memory() {
        let base: Vec<String> = (0..60).map(|i| format!("item {i} about the {} lake and {} roads of county {}", i % 7, i % 4, i % 9)).collect();
        let texts: Vec<String> =
            base.iter().chain(base.iter().take(30)).enumerate().map(|(i, t)| if i % 3 == 0 { format!("{t} now") } else { t.clone() }).collect();
        let candidates = Candidates { shingling: Shingling::new(Mode::Words, Some(1)).unwrap(), k: 14 };
        let opts = Similar::new(0.5, Measure::Jaccard, Shingling::new(Mode::Words, Some(2)).unwrap(), candidates).unwrap();
        let control = Control::default();
        let mut corpus = Corpus::new(opts);
        corpus.add_utf8(&texts, &control).unwrap();
        let expected = corpus.pairs(crate::Copies::All, &control).unwrap();
        let fps = crate::fingerprint::fingerprints(&texts, candidates.shingling);
        let mut by_higher = Vec::new();
        let mut last = vec![0u32; texts.len()];
        for b in 0..texts.len() {
            for a in 0..b {
                if crate::hamming(fps[a], fps[b]) <= candidates.k {
                    by_higher.push((b as u64) << 32 | a as u64);
                    last[a] = last[a].max(b as u32);
                }
            }
        }
        assert!(!expected.pairs.is_empty());
        for chunk in [1, 7, 64, texts.len()] {
            let mut stream = StreamVerifier::new(opts);
            let mut got: Vec<([u64; 2], f32)> = Vec::new();
            let mut most = 0;
            for start in (0..texts.len()).step_by(chunk) {
                let end = (start + chunk).min(texts.len());
                let lo = by_higher.partition_point(|&p| p >> 32 < start as u64);
                let hi = by_higher.partition_point(|&p| p >> 32 < end as u64);
                let found = stream.feed(start as u64, &texts[start..end], &by_higher[lo..hi], &last[start..end], &[], &control).unwrap();
                got.extend(found.into_iter().map(|(p, s)| ([p & 0xffff_ffff, p >> 32], s)));
                most = most.max(stream.held().0);
                // Held: exactly the documents so far with a later partner.
                assert_eq!(stream.held().0, (0..end).filter(|&d| last[d] as usize >= end).count());
            }
            got.sort_by_key(|&(p, _)| p);
            let (pairs, similarity): (Vec<[u64; 2]>, Vec<f32>) = got.into_iter().unzip();
            assert_eq!((pairs, similarity), (expected.pairs.clone(), expected.similarity.clone()), "chunks of {chunk}");
            assert!(most <= texts.len());
        }
    }

    #[test]
    fn misuse_is_refused() {
        let opts = Similar::new(0.5, Measure::Jaccard, Shingling::default(), Candidates::auto(0.5).unwrap()).unwrap();
        let control = Control::default();
        let texts = ["a b c", "a b c d", "x y z"];
        let mut s = StreamVerifier::new(opts);
        assert!(s.feed(1, &texts, &[], &[0, 0, 0], &[], &control).is_err(), "out of order");
        assert!(s.feed(0, &texts, &[5 << 32], &[0, 0, 0], &[], &control).is_err(), "a pair outside the chunk");
        assert!(s.feed(0, &texts, &[], &[0, 0], &[], &control).is_err(), "last of another length");
        s.feed(0, &texts[..1], &[], &[0], &[], &control).unwrap();
        // Document 0 was said to have no later partner, so its set is gone.
        assert!(s.feed(1, &texts[1..], &[1 << 32], &[0, 0], &[], &control).is_err());
    }
}
