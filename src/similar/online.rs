//! Verified dedup as documents stream by, in one pass: each chunk's
//! candidates are looked up among the kept documents (an [`Index`] of
//! their fingerprints) and among the chunk's own, checked against the sets
//! of the kept ones, and the documents of the chunk that stay are added.
//! Memory holds the kept documents' fingerprints and sets, never the
//! dropped ones' or the input.

use std::sync::Mutex;

use rayon::prelude::*;

use super::overlap::{alike_within, Buckets};
use super::verify::first_copy;
use super::Similar;
use crate::batch::{self, Source};
use crate::job::Control;
use crate::{Error, Index, Result};

/// Text bytes of the pieces [`OnlineDedup::add_utf8`] works in: the
/// command line's chunks (`rsimhash._records.CHUNK_BYTES`).
pub const PIECE_BYTES: usize = 8 << 20;

/// Candidate pairs checked between two looks at the cancel flag: well under
/// a tenth of a second of work.
const CHECK_PAIRS: usize = 1024;

/// The candidate pairs of one batch of the kernel that `alike` keeps, in
/// their order, checked on all threads: a small table is a single batch,
/// which would otherwise be checked on one.
///
/// # Errors
/// [`Error::Interrupted`] when `control` is cancelled (looked at every
/// [`CHECK_PAIRS`] pairs).
pub(crate) fn check_pairs<F>(pairs: &[u64], control: &Control, alike: F) -> Result<Vec<(u64, f32)>>
where
    F: Fn(u64) -> Option<(u64, f32)> + Sync,
{
    let parts: Vec<Vec<(u64, f32)>> = pairs
        .par_chunks(CHECK_PAIRS)
        .map(|part| {
            control.check()?;
            Ok(part.iter().filter_map(|&p| alike(p)).collect())
        })
        .collect::<Result<_>>()?;
    Ok(parts.concat())
}

/// The end of the piece of `texts` that starts at `start`: at least one
/// text, then as many as fit `budget` bytes.
fn piece_end<T: AsRef<[u8]>>(texts: &[T], start: usize, budget: usize) -> usize {
    let mut bytes = 0;
    let mut end = start;
    while end < texts.len() && (end == start || bytes + texts[end].as_ref().len() <= budget) {
        bytes += texts[end].as_ref().len();
        end += 1;
    }
    end
}

/// A kept document's set and buckets.
struct Kept {
    set: Vec<u64>,
    buckets: Buckets,
}

impl Kept {
    fn new(set: Vec<u64>) -> Kept {
        Kept { buckets: Buckets::of(&set), set }
    }

    fn alike(&self, other: &Kept, opts: &Similar) -> Option<f32> {
        let may_reach = |need| self.buckets.may_share(&other.buckets, &self.set, &other.set, need);
        alike_within(&self.set, &other.set, opts, may_reach).map(|s| s as f32)
    }
}

/// What became of a chunk's documents.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct ChunkDedup {
    /// One flag per document: kept.
    pub keep: Vec<bool>,
    /// For each document, the earliest kept document (a position over the
    /// whole stream) whose set it is alike, or itself when kept.
    pub matched: Vec<u64>,
    /// The similarity to `matched` (1 when kept).
    pub similarity: Vec<f32>,
}

/// The dedup of a stream of documents by verified near-duplicates: a
/// document is dropped when its set is at least the threshold alike the set
/// of a document kept before it, among the candidates; the answer of
/// [`super::Corpus::dedup`] over the same documents in order.
pub struct OnlineDedup {
    opts: Similar,
    index: Index,
    /// Sets of kept documents, by the id the index gives them.
    kept: Vec<Kept>,
    /// Stream positions of the kept documents, by the same id.
    positions: Vec<u64>,
    seen: u64,
    set_values: usize,
    /// [`PIECE_BYTES`], smaller in tests.
    piece_bytes: usize,
}

impl OnlineDedup {
    /// # Errors
    /// As [`Index::new`] for the candidates' `k`.
    pub fn new(opts: Similar) -> Result<OnlineDedup> {
        let index = Index::new(opts.candidates.k, None, None)?;
        Ok(OnlineDedup { opts, index, kept: Vec::new(), positions: Vec::new(), seen: 0, set_values: 0, piece_bytes: PIECE_BYTES })
    }

    /// Documents seen so far.
    pub fn seen(&self) -> u64 {
        self.seen
    }

    /// Bytes held: the kept documents' sets and buckets, and the index.
    pub fn bytes(&self) -> usize {
        self.set_values * 8 + self.kept.len() * (std::mem::size_of::<Kept>() + 8) + self.index.bytes()
    }

    /// The next documents of the stream (UTF-8): which stay, and what each
    /// dropped one matched.
    ///
    /// The documents are taken in pieces of about [`PIECE_BYTES`] of text,
    /// as the command line reads its input: every candidate pair inside a
    /// piece is checked, but a later piece's documents are checked against
    /// the kept documents only, so a corpus given whole costs no more than
    /// the same corpus given a chunk at a time (the answer is the same
    /// either way).
    ///
    /// # Errors
    /// [`Error::InvalidUtf8`] naming a text by its place in `texts`;
    /// [`Error::InvalidParameter`] past 2^32 - 2 kept documents;
    /// [`Error::Interrupted`] when `control` is cancelled (checked between
    /// pieces and within each). After an error the stream is as it was
    /// before the call: none of `texts` is taken.
    pub fn add_utf8<T: AsRef<[u8]> + Sync>(&mut self, texts: &[T], control: &Control) -> Result<ChunkDedup> {
        let (kept, seen, set_values) = (self.kept.len(), self.seen, self.set_values);
        let mut out =
            ChunkDedup { keep: Vec::with_capacity(texts.len()), matched: Vec::with_capacity(texts.len()), similarity: Vec::with_capacity(texts.len()) };
        let mut start = 0;
        while start < texts.len() {
            let end = piece_end(texts, start, self.piece_bytes);
            match self.add_piece(&texts[start..end], control) {
                Ok(c) => {
                    out.keep.extend(c.keep);
                    out.matched.extend(c.matched);
                    out.similarity.extend(c.similarity);
                }
                Err(e) => {
                    // Undone: the pieces taken by this call leave the index and the sets.
                    let ids: Vec<u64> = (kept as u64..self.kept.len() as u64).collect();
                    self.index.remove(&ids);
                    self.kept.truncate(kept);
                    self.positions.truncate(kept);
                    (self.seen, self.set_values) = (seen, set_values);
                    return Err(match e {
                        Error::InvalidUtf8 { index, valid_up_to } => Error::InvalidUtf8 { index: index + start, valid_up_to },
                        e => e,
                    });
                }
            }
            start = end;
        }
        Ok(out)
    }

    /// One piece of [`Self::add_utf8`].
    fn add_piece<T: AsRef<[u8]> + Sync>(&mut self, texts: &[T], control: &Control) -> Result<ChunkDedup> {
        control.check()?;
        let opts = self.opts;
        let made: Vec<(u64, Kept)> = super::fingerprints_and_sets(texts, &opts, control)?.into_iter().map(|(fp, set)| (fp, Kept::new(set))).collect();
        control.check()?;
        let fps: Vec<u64> = made.iter().map(|m| m.0).collect();
        let n = fps.len();
        // Copies (the same fingerprint and set) follow their first copy:
        // only first copies are looked up and paired.
        let sets: Vec<&[u64]> = made.iter().map(|m| &m.1.set[..]).collect();
        let first = first_copy(&fps, &sets);
        let reps: Vec<usize> = (0..n).filter(|&i| first[i] as usize == i).collect();
        let rep_fps: Vec<u64> = reps.iter().map(|&i| fps[i]).collect();

        // The earliest alike kept document of an earlier chunk, for each first copy.
        let hits = self.index.query_batch(&rep_fps, None)?;
        let mut starts = vec![0usize; reps.len() + 1];
        for &q in &hits.positions {
            starts[q as usize + 1] += 1;
        }
        for q in 0..reps.len() {
            starts[q + 1] += starts[q];
        }
        let found_before: Vec<Option<(u64, f32)>> = (0..reps.len())
            .into_par_iter()
            .with_min_len(64)
            .map(|q| {
                if q % 64 == 0 {
                    control.check()?;
                }
                let mut ids = hits.ids[starts[q]..starts[q + 1]].to_vec();
                ids.sort_unstable();
                Ok(ids.into_iter().find_map(|id| self.kept[id as usize].alike(&made[reps[q]].1, &opts).map(|s| (self.positions[id as usize], s))))
            })
            .collect::<Result<_>>()?;
        let mut earlier: Vec<Option<(u64, f32)>> = vec![None; n];
        for (&r, e) in reps.iter().zip(found_before) {
            earlier[r] = e;
        }

        // Alike pairs of first copies inside the chunk, by later document.
        let inside = Mutex::new(Vec::new());
        let job = batch::Options { memory_limit: u64::MAX, ..batch::Options::new(opts.candidates.k) };
        batch::for_each_pair(&Source::Memory(&rep_fps), &job, control, &|pairs| {
            let found = check_pairs(&pairs, control, |p| {
                let (a, b) = (reps[(p >> 32) as usize], reps[p as u32 as usize]);
                made[a].1.alike(&made[b].1, &opts).map(|s| ((b as u64) << 32 | a as u64, s))
            })?;
            inside.lock().unwrap_or_else(|e| e.into_inner()).extend(found);
            Ok(())
        })?;
        let mut inside = inside.into_inner().unwrap_or_else(|e| e.into_inner());
        inside.sort_unstable_by_key(|&(p, _)| p);

        // In order: a document goes when an earlier chunk's kept document or
        // a kept one before it in the chunk is alike.
        let mut out = ChunkDedup { keep: vec![true; n], matched: vec![0; n], similarity: vec![1.0; n] };
        let mut at = 0;
        for (j, &before) in earlier.iter().enumerate() {
            let pos = self.seen + j as u64;
            let mut found = before;
            while at < inside.len() && (inside[at].0 >> 32) as usize == j {
                let (i, s) = (inside[at].0 as u32 as usize, inside[at].1);
                if found.is_none() && out.keep[i] {
                    found = Some((self.seen + i as u64, s));
                }
                at += 1;
            }
            match found {
                Some((m, s)) => {
                    out.keep[j] = false;
                    out.matched[j] = m;
                    out.similarity[j] = s;
                }
                None => out.matched[j] = pos,
            }
        }
        for (q, &f) in first.iter().enumerate() {
            let f = f as usize;
            if f != q {
                out.keep[q] = false;
                if out.keep[f] {
                    out.matched[q] = self.seen + f as u64;
                } else {
                    out.matched[q] = out.matched[f];
                    out.similarity[q] = out.similarity[f];
                }
            }
        }
        let kept_fps: Vec<u64> = (0..n).filter(|&j| out.keep[j]).map(|j| fps[j]).collect();
        let first_id = self.kept.len() as u64;
        let ids: Vec<u64> = (first_id..first_id + kept_fps.len() as u64).collect();
        self.index.add(&kept_fps, Some(&ids))?;
        for (j, (_, k)) in made.into_iter().enumerate() {
            if out.keep[j] {
                self.set_values += k.set.len();
                self.kept.push(k);
                self.positions.push(self.seen + j as u64);
            }
        }
        self.seen += n as u64;
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::similar::{Candidates, Corpus, Measure};
    use crate::{Mode, Shingling};

    /// In chunks of any size, the stream keeps what the corpus in memory
    /// keeps, with the same matches and similarities.
    #[test]
    fn streamed_dedup_equals_the_corpus() {
        let base: Vec<String> = (0..50).map(|i| format!("note {i} on the {} hill and {} farms of {}", i % 6, i % 4, i % 5)).collect();
        let texts: Vec<String> =
            base.iter().chain(base.iter().take(25)).enumerate().map(|(i, t)| if i % 4 == 0 { format!("{t} again") } else { t.clone() }).collect();
        for (threshold, measure) in [(0.4, Measure::Jaccard), (0.7, Measure::Jaccard), (0.6, Measure::Containment), (1.0, Measure::Jaccard)] {
            let candidates = Candidates { shingling: Shingling::new(Mode::Words, Some(1)).unwrap(), k: 12 };
            let opts = Similar::new(threshold, measure, Shingling::new(Mode::Words, Some(2)).unwrap(), candidates).unwrap();
            let control = Control::default();
            let mut corpus = Corpus::new(opts);
            corpus.add_utf8(&texts, &control).unwrap();
            let (d, sims) = corpus.dedup(&control).unwrap();
            assert!(!d.dropped.is_empty());
            for chunk in [1, 9, 40, texts.len()] {
                let mut online = OnlineDedup::new(opts).unwrap();
                let mut all = ChunkDedup::default();
                for part in texts.chunks(chunk) {
                    let c = online.add_utf8(part, &control).unwrap();
                    all.keep.extend(c.keep);
                    all.matched.extend(c.matched);
                    all.similarity.extend(c.similarity);
                }
                assert_eq!(all.keep, d.keep, "chunks of {chunk} at {threshold}");
                for (at, (&j, &i)) in d.dropped.iter().zip(&d.matched).enumerate() {
                    assert_eq!(all.matched[j as usize], u64::from(i));
                    assert_eq!(all.similarity[j as usize], sims[at]);
                }
                assert_eq!(online.seen(), texts.len() as u64);
            }
            // One call, worked in pieces of a few texts: the same answer.
            let mut online = OnlineDedup::new(opts).unwrap();
            online.piece_bytes = 200;
            let whole = online.add_utf8(&texts, &control).unwrap();
            assert_eq!(whole.keep, d.keep, "pieces at {threshold}");
        }
    }

    /// A call that fails in a later piece (bad UTF-8, or cancelled) takes
    /// none of its texts: the stream goes on as if it had not been made.
    #[test]
    fn a_failed_call_takes_nothing() {
        let texts: Vec<Vec<u8>> = (0..60).map(|i| format!("item {} of the list and {} more", i % 7, i % 3).into_bytes()).collect();
        let candidates = Candidates { shingling: Shingling::new(Mode::Words, Some(1)).unwrap(), k: 12 };
        let opts = Similar::new(0.6, Measure::Jaccard, Shingling::new(Mode::Words, Some(2)).unwrap(), candidates).unwrap();
        let control = Control::default();
        let mut fresh = OnlineDedup::new(opts).unwrap();
        fresh.add_utf8(&texts[..10], &control).unwrap();
        let expected = fresh.add_utf8(&texts[10..], &control).unwrap();

        let mut online = OnlineDedup::new(opts).unwrap();
        online.piece_bytes = 100;
        online.add_utf8(&texts[..10], &control).unwrap();
        let state = |o: &OnlineDedup| (o.seen(), o.kept.len(), o.positions.len(), o.set_values, o.index.len());
        let before = state(&online);
        let mut bad = texts[10..].to_vec();
        bad[45] = vec![b'a', 0xff];
        match online.add_utf8(&bad, &control) {
            Err(Error::InvalidUtf8 { index, .. }) => assert_eq!(index, 45),
            other => panic!("{other:?}"),
        }
        assert_eq!(state(&online), before);
        let cancelled = Control::default();
        cancelled.cancel();
        assert!(matches!(online.add_utf8(&texts[10..], &cancelled), Err(Error::Interrupted)));
        assert_eq!(state(&online), before);
        assert_eq!(online.add_utf8(&texts[10..], &control).unwrap(), expected);
    }
}
