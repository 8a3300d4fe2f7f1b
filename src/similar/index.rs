//! [`SimilarIndex`]: an online index of texts by verified similarity, the
//! index a user of datasketch's `MinHashLSH` looks for, exact instead of
//! estimated.
//!
//! Texts are added under ids of the caller's (or ids counted up from 0);
//! each is held as its candidate fingerprint, in an [`Index`] under its id,
//! and its shingle set, in a map by id. A query's candidates are the stored
//! texts whose fingerprints are within the candidates' `k` bits of its own
//! (complete: the index answers every one within `k`); each is confirmed by
//! the exact similarity of the two sets ([`super::alike`]), the test that
//! [`super::Corpus::pairs`] applies to the same candidates. So a query of a
//! stored text's words finds exactly the texts `similar_pairs` pairs it
//! with (and itself), with the same similarities.
//!
//! An exact index ([`Similar::exact`], [`SimilarIndex::exact_opts`]) finds
//! every stored text at least the threshold alike instead: its candidates
//! come from an online prefix index of the held sets ([`prefix`]: each
//! set's first values in hash order), verified by the same test, so its
//! answer is brute force's (recall 1). Its index of fingerprints keeps the
//! ids only (each text's fingerprint of its sets' shingles, `k = 0`); an
//! `add_unique` call pairs its own texts by the exact join
//! ([`super::exact::self_join`]).
//!
//! Texts with equal sets share one held set (a [`Held`], found by a digest
//! of the set and confirmed value by value), and a query compares each held
//! set once, however many ids hold it: a page stored a thousand times costs
//! a query one comparison, and its memory once. Each held set keeps its
//! [`Buckets`], which rule most candidates out before a merge.
//!
//! Invariants:
//! - the index and the map hold the same ids, each once;
//! - every set is ascending and distinct (as `Fingerprinter::shingle_set`
//!   makes it, and as [`SimilarIndex::load`] checks it);
//! - `shared` holds each held set once, under its digest, for as long as an
//!   id holds it;
//! - ids given by default count up from one past the largest id ever given.
//!
//! Ids are ints or strings, as the [`Index`]'s are: keyed by strings, the
//! index keeps each text's string id in its name table and every id here is
//! the internal id it names (given as default ids are), so the maps, the
//! sets' sections and every search work on internal ids alone.
//!
//! Saved as an index file ([`crate::container`]): the index's own sections,
//! then `SIMILAR` (settings; layout 2 for an exact index, whose prefix
//! index is made again from the sets on loading), `SIMIDS` (ids, ascending), `SIMOFFS` (set
//! `i` is `SIMSETS[SIMOFFS[i]..SIMOFFS[i + 1]]`) and `SIMSETS`; one atomic
//! replace, every section checksummed. Loading maps the index's tables in
//! place (with `mmap`); the sets are read into memory.

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex};

use crate::index::Keys;

use rayon::prelude::*;

mod prefix;

use prefix::Prefix;

use super::overlap::{alike_within, Buckets};
use super::verify::first_copy;
use super::{fingerprints_and_sets, Candidates, Measure, Similar};
use crate::batch::{self, Source};
use crate::container::Tag;
use crate::fingerprint::{Mode, Shingling};
use crate::job::Control;
use crate::{Error, Index, Result};

const SIMILAR: Tag = *b"SIMILAR\0";
const SIM_IDS: Tag = *b"SIMIDS\0\0";
const SIM_OFFS: Tag = *b"SIMOFFS\0";
const SIM_SETS: Tag = *b"SIMSETS\0";
/// The version of the `SIMILAR` sections' layout: 1 for an index of
/// simhash candidates (11 words), 2 for an exact one (a 12th word, 1). An
/// index of candidates is still written as layout 1, which every version
/// reads; a version that reads layout 1 only refuses an exact index's file
/// rather than answer it with candidates it never had.
const LAYOUT: u64 = 1;
const LAYOUT_EXACT: u64 = 2;

/// Matches of many queries, one row a match: the query's position, the
/// stored id and the similarity; by position, then similarity descending,
/// then id.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct SimilarMatches {
    pub positions: Vec<u32>,
    pub ids: Vec<u64>,
    pub similarity: Vec<f32>,
}

/// A shingle set as held: shared by the ids of texts with equal sets.
struct Held {
    set: Vec<u64>,
    buckets: Buckets,
    /// Its slot in the [`Prefix`] index of an exact index, else `u32::MAX`.
    slot: u32,
}

impl Held {
    fn new(set: Vec<u64>) -> Held {
        Held::in_slot(set, u32::MAX)
    }

    fn in_slot(set: Vec<u64>, slot: u32) -> Held {
        Held { buckets: Buckets::of(&set), set, slot }
    }

    /// The similarity of this set and `other` when it is at least the threshold.
    fn alike(&self, other: &Held, opts: &Similar) -> Option<f32> {
        let may_reach = |need| self.buckets.may_share(&other.buckets, &self.set, &other.set, need);
        alike_within(&self.set, &other.set, opts, may_reach).map(|s| s as f32)
    }
}

/// A digest of a set, to find an equal one (confirmed value by value).
fn digest(set: &[u64]) -> u64 {
    set.iter().fold(set.len() as u64, |h, &x| (h ^ x).wrapping_mul(0x100000001b3).rotate_left(29))
}

/// Texts held by id, answering which stored texts are at least the
/// threshold alike a text (see the module documentation).
pub struct SimilarIndex {
    opts: Similar,
    index: Index,
    sets: HashMap<u64, Arc<Held>>,
    /// Each distinct held set, by digest.
    shared: HashMap<u64, Vec<Arc<Held>>>,
    /// The first id given by default: past every id ever given.
    next_id: u128,
    /// Values in all sets, for [`SimilarIndex::bytes`].
    values: usize,
    /// The prefix index that finds every match of an exact index
    /// ([`Similar::exact`]); `None` where queries take simhash candidates.
    prefix: Option<Prefix>,
}

impl SimilarIndex {
    /// # Errors
    /// As [`Index::new`] for the candidates' `k`.
    ///
    /// With [`Similar::exact`], queries find every stored text at least the
    /// threshold alike by the [`Prefix`] index, and the index of
    /// fingerprints (of `opts.candidates`, which [`SimilarIndex::exact_opts`]
    /// sets to the sets' shingles at `k = 0`) only keeps the ids.
    pub fn new(opts: Similar) -> Result<SimilarIndex> {
        let index = Index::new(opts.candidates.k, None, None)?;
        let prefix = opts.exact.then(|| Prefix::new(opts.threshold, opts.measure));
        Ok(SimilarIndex { opts, index, sets: HashMap::new(), shared: HashMap::new(), next_id: 0, values: 0, prefix })
    }

    /// The settings of an exact index: `opts` with every match found by the
    /// prefix index, and each text's fingerprint of its sets' shingles kept
    /// in an index of `k = 0` (the ids' home, and what `Index::load` reads
    /// from its file).
    pub fn exact_opts(opts: Similar) -> Similar {
        Similar { candidates: Candidates { shingling: opts.sets, k: 0 }, ..opts }.with_exact(true)
    }

    /// Whether queries find every match (the prefix index), not the
    /// simhash candidates' matches.
    pub fn exact(&self) -> bool {
        self.prefix.is_some()
    }

    pub fn opts(&self) -> &Similar {
        &self.opts
    }

    /// Texts stored.
    pub fn len(&self) -> usize {
        self.sets.len()
    }

    pub fn is_empty(&self) -> bool {
        self.sets.is_empty()
    }

    /// Whether a text is stored under `id`.
    pub fn contains(&self, id: u64) -> bool {
        self.sets.contains_key(&id)
    }

    /// Whether a text is stored under string id `name`.
    pub fn contains_name(&self, name: &str) -> bool {
        self.index.id_of(name).is_some()
    }

    /// What the index is keyed by (see [`Index::keys`]).
    pub fn keys(&self) -> Keys {
        self.index.keys()
    }

    /// The string ids of internal ids (see [`Index::names_of`]).
    ///
    /// # Errors
    /// As [`Index::names_of`].
    pub fn names_of(&self, ids: &[u64]) -> Result<Vec<Arc<str>>> {
        self.index.names_of(ids)
    }

    /// The index of the candidates' fingerprints (its design, `k`, keys).
    pub fn fingerprints(&self) -> &Index {
        &self.index
    }

    /// Bytes held: the distinct sets and their buckets, the maps, and the
    /// index of fingerprints.
    pub fn bytes(&self) -> usize {
        let held = self.shared.values().map(Vec::len).sum::<usize>();
        let prefix = self.prefix.as_ref().map_or(0, Prefix::bytes);
        self.values * 8
            + held * (std::mem::size_of::<Held>() + 48)
            + self.sets.capacity() * (std::mem::size_of::<(u64, Arc<Held>)>() + 1)
            + self.index.bytes()
            + prefix
    }

    /// The held set equal to `set`, or a new one.
    fn hold(&mut self, set: Vec<u64>) -> Arc<Held> {
        let group = self.shared.entry(digest(&set)).or_default();
        if let Some(held) = group.iter().find(|h| h.set == set) {
            return Arc::clone(held);
        }
        self.values += set.len();
        let held = Arc::new(Held::in_slot(set, self.prefix.as_ref().map_or(u32::MAX, Prefix::next_slot)));
        group.push(Arc::clone(&held));
        if let Some(prefix) = &mut self.prefix {
            prefix.insert(&held);
        }
        held
    }

    /// Lets go of an id's set: of the set itself when no other id holds it
    /// (and then `true`: its prefix slot, if any, is to be dropped).
    fn release(&mut self, held: Arc<Held>) -> bool {
        // Held by `shared` and by `held` alone (and by its prefix slot): the last id is gone.
        if Arc::strong_count(&held) == 2 + usize::from(self.prefix.is_some()) {
            let d = digest(&held.set);
            if let Some(group) = self.shared.get_mut(&d) {
                group.retain(|h| !Arc::ptr_eq(h, &held));
                if group.is_empty() {
                    self.shared.remove(&d);
                }
            }
            self.values -= held.set.len();
            return true;
        }
        false
    }

    /// The ids for `n` new texts: `ids` checked (one a text, distinct, none
    /// stored), or the next ones counted up. Nothing changes until
    /// [`SimilarIndex::store`].
    fn ids_for(&self, n: usize, ids: Option<&[u64]>) -> Result<Vec<u64>> {
        self.index.check_ints(n, ids.is_some())?;
        self.default_ids(n, ids)
    }

    /// [`SimilarIndex::ids_for`] for texts under string ids `names`: their
    /// internal ids, counted up as default ids are.
    fn ids_for_names<S: AsRef<str>>(&self, n: usize, names: &[S]) -> Result<Vec<u64>> {
        self.index.check_new_names(names, n)?;
        self.default_ids(n, None)
    }

    fn default_ids(&self, n: usize, ids: Option<&[u64]>) -> Result<Vec<u64>> {
        let Some(ids) = ids else {
            if self.next_id + n as u128 > u128::from(u64::MAX) + 1 {
                return Err(Error::invalid("ids", "given explicitly: the default ids ran past 2**64-1", n));
            }
            let start = self.next_id as u64;
            return Ok((0..n as u64).map(|i| start + i).collect());
        };
        if ids.len() != n {
            return Err(Error::InvalidParameter { name: "ids", expected: "one id per text", found: format!("{} ids for {n} texts", ids.len()) });
        }
        let mut sorted = ids.to_vec();
        sorted.par_sort_unstable();
        if let Some(w) = sorted.windows(2).find(|w| w[0] == w[1]) {
            return Err(Error::invalid("ids", "distinct", format!("id {} given twice", w[0])));
        }
        if let Some(id) = ids.iter().find(|id| self.sets.contains_key(id)) {
            return Err(Error::invalid("ids", "not already stored (remove it first)", format!("id {id}")));
        }
        Ok(ids.to_vec())
    }

    /// Stores texts already made: fingerprints in the index (under their
    /// string ids too, if named), sets in the map.
    fn store(&mut self, ids: &[u64], fps: &[u64], sets: Vec<Vec<u64>>, names: Option<&[&str]>) -> Result<()> {
        // The prefix index numbers distinct sets by u32 slots.
        if let Some(prefix) = &self.prefix {
            if prefix.len() + ids.len() >= u32::MAX as usize {
                return Err(Error::invalid("texts", "fewer than 2**32 - 1 distinct sets in an exact index", prefix.len() + ids.len()));
            }
        }
        match names {
            Some(names) => self.index.add_with_names(fps, ids, names)?,
            None => self.index.add(fps, Some(ids))?,
        };
        self.sets.reserve(ids.len());
        for (&id, set) in ids.iter().zip(sets) {
            let held = self.hold(set);
            if let Some(prefix) = &mut self.prefix {
                prefix.join(held.slot, id);
            }
            self.sets.insert(id, held);
        }
        if let Some(prefix) = &mut self.prefix {
            prefix.settle();
        }
        Ok(())
    }

    fn passed(&mut self, ids: &[u64]) {
        if let Some(&hi) = ids.iter().max() {
            self.next_id = self.next_id.max(u128::from(hi) + 1);
        }
    }

    /// Stores texts (UTF-8) under `ids` (default: counted up past every id
    /// given so far); returns their ids.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] for ids of the wrong length, repeated or
    /// already stored; [`Error::InvalidUtf8`] naming a text by position.
    /// Nothing is stored then.
    pub fn add_utf8<T: AsRef<[u8]> + Sync>(&mut self, texts: &[T], ids: Option<&[u64]>) -> Result<Vec<u64>> {
        let ids = self.ids_for(texts.len(), ids)?;
        self.add_as(texts, ids, None)
    }

    /// [`SimilarIndex::add_utf8`] under string ids `names` (one a text,
    /// distinct, none stored; an index keyed by ints refuses them);
    /// returns their internal ids.
    ///
    /// # Errors
    /// As [`SimilarIndex::add_utf8`].
    pub fn add_utf8_named<T: AsRef<[u8]> + Sync, S: AsRef<str>>(&mut self, texts: &[T], names: &[S]) -> Result<Vec<u64>> {
        let ids = self.ids_for_names(texts.len(), names)?;
        let names: Vec<&str> = names.iter().map(AsRef::as_ref).collect();
        self.add_as(texts, ids, Some(&names))
    }

    fn add_as<T: AsRef<[u8]> + Sync>(&mut self, texts: &[T], ids: Vec<u64>, names: Option<&[&str]>) -> Result<Vec<u64>> {
        let (fps, sets): (Vec<u64>, Vec<Vec<u64>>) = fingerprints_and_sets(texts, &self.making(), &Control::default())?.into_iter().unzip();
        self.store(&ids, &fps, sets, names)?;
        self.passed(&ids);
        Ok(ids)
    }

    /// Of candidate ids (any order, each once), those whose set is at
    /// least the threshold alike `query`: `(id, similarity)`, by similarity
    /// descending, then id. Each distinct held set is compared once.
    fn confirm(&self, candidates: &[u64], query: &Held) -> Vec<(u64, f32)> {
        self.confirm_at(candidates, query, &self.opts)
    }

    /// [`SimilarIndex::confirm`] at the threshold of `opts`.
    fn confirm_at(&self, candidates: &[u64], query: &Held, opts: &Similar) -> Vec<(u64, f32)> {
        let mut held: Vec<(usize, u64, &Arc<Held>)> = candidates.iter().filter_map(|id| self.sets.get(id).map(|h| (Arc::as_ptr(h) as usize, *id, h))).collect();
        held.sort_unstable_by_key(|&(p, id, _)| (p, id));
        let mut found = Vec::new();
        let mut at = 0;
        while at < held.len() {
            let end = at + held[at..].iter().take_while(|c| c.0 == held[at].0).count();
            if let Some(s) = held[at].2.alike(query, opts) {
                found.extend(held[at..end].iter().map(|c| (c.1, s)));
            }
            at = end;
        }
        found.sort_unstable_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        found
    }

    /// The settings texts are made by: an exact index keeps fingerprints
    /// too (of its sets' shingles, from the same tokenization).
    fn making(&self) -> Similar {
        self.opts.with_exact(false)
    }

    /// Of the held sets that the prefix index proposes for `query`, those
    /// at least the threshold of `opts` alike it, as [`SimilarIndex::confirm_at`]
    /// gives them (every id of each).
    fn confirm_exact(&self, prefix: &Prefix, query: &Held, opts: &Similar, seen: &mut Vec<u32>) -> Vec<(u64, f32)> {
        let mut found = Vec::new();
        for (held, ids) in prefix.candidates(&query.set, opts.threshold, seen) {
            if let Some(s) = held.alike(query, opts) {
                found.extend(ids.iter().map(|&id| (id, s)));
            }
        }
        found.sort_unstable_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        found
    }

    /// Each text's candidate fingerprint and held set (not stored), in order.
    fn made<T: AsRef<[u8]> + Sync>(&self, texts: &[T]) -> Result<(Vec<u64>, Vec<Held>)> {
        let made = fingerprints_and_sets(texts, &self.making(), &Control::default())?;
        Ok(made.into_par_iter().map(|(fp, set)| (fp, Held::new(set))).unzip())
    }

    /// The candidate ids of each fingerprint: stored items within `k`, by
    /// the batch kernel for many queries, a probe each for a few.
    fn candidates(&self, fps: &[u64]) -> Result<Vec<Vec<u64>>> {
        if fps.len() < 64 {
            return fps.par_iter().map(|&fp| Ok(self.index.query(fp, None)?.into_iter().map(|(id, _)| id).collect())).collect();
        }
        let hits = self.index.query_batch(fps, None)?;
        let mut out = vec![Vec::new(); fps.len()];
        for (&q, &id) in hits.positions.iter().zip(&hits.ids) {
            out[q as usize].push(id);
        }
        Ok(out)
    }

    /// The matches of each text (UTF-8) among the stored ones.
    ///
    /// # Errors
    /// [`Error::InvalidUtf8`] naming a text by position; [`Error::Changed`]
    /// when the file a loaded index maps changed under it.
    pub fn query_utf8<T: AsRef<[u8]> + Sync>(&self, texts: &[T]) -> Result<SimilarMatches> {
        self.query_utf8_at(texts, None)
    }

    /// [`SimilarIndex::query_utf8`] at a `threshold` stricter than the
    /// index's (or equal to it; `None` for the index's): the same
    /// candidates, confirmed against the higher threshold, so the answer is
    /// exactly the index's matches at least that alike.
    ///
    /// # Errors
    /// As [`SimilarIndex::query_utf8`]; [`Error::InvalidParameter`] for a
    /// threshold above 1 or below the index's (its candidates are chosen
    /// for its own threshold, so a looser one could miss pairs).
    pub fn query_utf8_at<T: AsRef<[u8]> + Sync>(&self, texts: &[T], threshold: Option<f64>) -> Result<SimilarMatches> {
        if texts.len() > u32::MAX as usize {
            return Err(Error::invalid("texts", "at most 2**32-1 queries per call (split the batch)", texts.len()));
        }
        let mut opts = self.opts;
        if let Some(t) = threshold {
            if !(t >= self.opts.threshold && t <= 1.0) {
                return Err(Error::invalid("threshold", "at least the index's threshold and at most 1", t));
            }
            opts.threshold = t;
        }
        let (fps, made) = self.made(texts)?;
        let per: Vec<Vec<(u64, f32)>> = match &self.prefix {
            Some(prefix) => made.par_iter().with_min_len(8).map_init(Vec::new, |seen, q| self.confirm_exact(prefix, q, &opts, seen)).collect(),
            None => {
                let candidates = self.candidates(&fps)?;
                candidates.par_iter().zip(&made).with_min_len(8).map(|(c, q)| self.confirm_at(c, q, &opts)).collect()
            }
        };
        let mut out = SimilarMatches::default();
        for (q, found) in per.into_iter().enumerate() {
            for (id, s) in found {
                out.positions.push(q as u32);
                out.ids.push(id);
                out.similarity.push(s);
            }
        }
        Ok(out)
    }

    /// For each text (UTF-8) in order: it is new when no stored text and no
    /// earlier new text of this call is at least the threshold alike it,
    /// and new texts are stored. `matched`: for a text that is not new, the
    /// smallest id of the stored texts alike it or, when none is, the id of
    /// the earliest new text of this call alike it; for a new one, its own
    /// id. Default ids are given to every text, stored or not (`id = first
    /// id + position`), as [`Index::add_unique`] gives them.
    ///
    /// Copies (the same fingerprint and set) follow their first copy; only
    /// first copies are looked up and paired, so a text repeated a thousand
    /// times costs one look-up.
    ///
    /// # Errors
    /// As [`SimilarIndex::add_utf8`]; nothing is stored then.
    pub fn add_unique_utf8<T: AsRef<[u8]> + Sync>(&mut self, texts: &[T], ids: Option<&[u64]>) -> Result<(Vec<bool>, Vec<u64>)> {
        let ids = self.ids_for(texts.len(), ids)?;
        self.add_unique_as(texts, ids, None)
    }

    /// [`SimilarIndex::add_unique_utf8`] under string ids `names` (checked
    /// as [`SimilarIndex::add_utf8_named`] checks them, every one): new
    /// texts are stored under their names. `matched` holds internal ids.
    ///
    /// # Errors
    /// As [`SimilarIndex::add_unique_utf8`].
    pub fn add_unique_utf8_named<T: AsRef<[u8]> + Sync, S: AsRef<str>>(&mut self, texts: &[T], names: &[S]) -> Result<(Vec<bool>, Vec<u64>)> {
        let ids = self.ids_for_names(texts.len(), names)?;
        let names: Vec<&str> = names.iter().map(AsRef::as_ref).collect();
        self.add_unique_as(texts, ids, Some(&names))
    }

    fn add_unique_as<T: AsRef<[u8]> + Sync>(&mut self, texts: &[T], ids: Vec<u64>, names: Option<&[&str]>) -> Result<(Vec<bool>, Vec<u64>)> {
        let n = texts.len();
        if n > u32::MAX as usize {
            return Err(Error::invalid("texts", "at most 2**32-1 texts per call (split the batch)", n));
        }
        let opts = self.opts;
        let (fps, made) = self.made(texts)?;
        let sets: Vec<&[u64]> = made.iter().map(|h| &h.set[..]).collect();
        let first = first_copy(&fps, &sets);
        let reps: Vec<usize> = (0..n).filter(|&i| first[i] as usize == i).collect();

        // The smallest stored id alike each first copy.
        let rep_fps: Vec<u64> = reps.iter().map(|&i| fps[i]).collect();
        let stored: Vec<Option<u64>> = match &self.prefix {
            Some(prefix) => {
                reps.par_iter().map_init(Vec::new, |seen, &r| self.confirm_exact(prefix, &made[r], &opts, seen).into_iter().map(|(id, _)| id).min()).collect()
            }
            None => {
                let candidates = self.candidates(&rep_fps)?;
                candidates.par_iter().zip(&reps).map(|(c, &r)| self.confirm(c, &made[r]).into_iter().map(|(id, _)| id).min()).collect()
            }
        };

        // Alike pairs of first copies inside the call, as `later << 32 | earlier`:
        // every one by the exact join for an exact index, else the candidates'.
        let mut inside = if self.prefix.is_some() {
            let rep_sets: Vec<&[u64]> = reps.iter().map(|&r| &made[r].set[..]).collect();
            let pairs = super::exact::self_join(&rep_sets, opts.threshold, opts.measure, &Control::default())?;
            pairs.into_iter().map(|(p, _)| (reps[p as u32 as usize] as u64) << 32 | reps[(p >> 32) as usize] as u64).collect()
        } else {
            let inside = Mutex::new(Vec::new());
            let job = batch::Options { memory_limit: u64::MAX, ..batch::Options::new(opts.candidates.k) };
            batch::for_each_pair(&Source::Memory(&rep_fps), &job, &Control::default(), &|pairs| {
                let found: Vec<u64> = pairs
                    .iter()
                    .filter_map(|&p| {
                        let (a, b) = (reps[(p >> 32) as usize], reps[p as u32 as usize]);
                        made[a].alike(&made[b], &opts).map(|_| (b as u64) << 32 | a as u64)
                    })
                    .collect();
                inside.lock().unwrap_or_else(|e| e.into_inner()).extend(found);
                Ok(())
            })?;
            inside.into_inner().unwrap_or_else(|e| e.into_inner())
        };
        inside.par_sort_unstable();

        // In order: each first copy against the stored texts, then the
        // earliest new one before it (pairs by later text, then earlier).
        let mut is_new = vec![false; n];
        let mut matched = ids.clone();
        let mut at = 0;
        for (&j, stored) in reps.iter().zip(stored) {
            let mut earliest = None;
            while at < inside.len() && (inside[at] >> 32) as usize == j {
                let i = inside[at] as u32 as usize;
                if earliest.is_none() && is_new[i] {
                    earliest = Some(i);
                }
                at += 1;
            }
            match (stored, earliest) {
                (Some(id), _) => matched[j] = id,
                (None, Some(i)) => matched[j] = ids[i],
                (None, None) => is_new[j] = true,
            }
        }
        for (q, &f) in first.iter().enumerate() {
            let f = f as usize;
            if f != q {
                matched[q] = if is_new[f] { ids[f] } else { matched[f] };
            }
        }

        let keep: Vec<usize> = (0..n).filter(|&j| is_new[j]).collect();
        let new_ids: Vec<u64> = keep.iter().map(|&j| ids[j]).collect();
        let new_fps: Vec<u64> = keep.iter().map(|&j| fps[j]).collect();
        let mut made: Vec<Option<Held>> = made.into_iter().map(Some).collect();
        let new_sets: Vec<Vec<u64>> = keep.iter().map(|&j| made[j].take().map(|h| h.set).unwrap_or_default()).collect();
        let new_names: Option<Vec<&str>> = names.map(|names| keep.iter().map(|&j| names[j]).collect());
        self.store(&new_ids, &new_fps, new_sets, new_names.as_deref())?;
        self.passed(&ids);
        Ok((is_new, matched))
    }

    /// Removes the texts stored under `ids` (ids not stored are passed
    /// over); returns how many were stored.
    ///
    /// # Errors
    /// [`Error::Changed`] when the file a loaded index maps changed.
    pub fn remove(&mut self, ids: &[u64]) -> Result<usize> {
        self.index.check_ints(ids.len(), true)?;
        self.remove_ids(ids)
    }

    /// Removes the texts stored under string ids `names` (names not stored
    /// are passed over); returns how many were stored.
    ///
    /// # Errors
    /// As [`SimilarIndex::remove`]; an index keyed by ints refuses names.
    pub fn remove_named<S: AsRef<str>>(&mut self, names: &[S]) -> Result<usize> {
        self.index.check_strings(names.len())?;
        let ids: Vec<u64> = names.iter().filter_map(|n| self.index.id_of(n.as_ref())).collect();
        self.remove_ids(&ids)
    }

    fn remove_ids(&mut self, ids: &[u64]) -> Result<usize> {
        let removed = self.index.remove(ids);
        let mut gone = 0;
        let (mut left, mut dead) = (Vec::new(), Vec::new());
        for &id in ids {
            if let Some(held) = self.sets.remove(&id) {
                let slot = held.slot;
                if self.prefix.is_some() {
                    left.push((slot, id));
                }
                if self.release(held) && self.prefix.is_some() {
                    dead.push(slot);
                }
                gone += 1;
            }
        }
        if let Some(prefix) = &mut self.prefix {
            prefix.leave(&left);
            prefix.drop_slots(&dead);
        }
        debug_assert_eq!(removed, gone);
        self.index.intact(gone)
    }

    /// Writes the index to `path` atomically (see the module documentation).
    ///
    /// # Errors
    /// [`Error::Io`] when the file cannot be written.
    pub fn save(&self, path: &Path) -> Result<()> {
        let mut ids: Vec<u64> = self.sets.keys().copied().collect();
        ids.par_sort_unstable();
        let mut offsets = Vec::with_capacity(ids.len() + 1);
        let mut values = Vec::with_capacity(self.values);
        offsets.push(0u64);
        for id in &ids {
            values.extend_from_slice(&self.sets[id].set);
            offsets.push(values.len() as u64);
        }
        let o = &self.opts;
        let mut meta: Vec<u64> = vec![
            if self.exact() { LAYOUT_EXACT } else { LAYOUT },
            o.threshold.to_bits(),
            measure_code(o.measure),
            mode_code(o.sets.mode()),
            o.sets.width() as u64,
            mode_code(o.candidates.shingling.mode()),
            o.candidates.shingling.width() as u64,
            u64::from(o.candidates.k),
            self.next_id as u64,
            (self.next_id >> 64) as u64,
            ids.len() as u64,
        ];
        if self.exact() {
            meta.push(1);
        }
        let words = |x: &[u64]| -> Vec<u8> { bytemuck::cast_slice(x).to_vec() };
        let (meta, ids, offsets, values) = (words(&meta), words(&ids), words(&offsets), words(&values));
        self.index.save_with(path, &[(SIMILAR, &meta), (SIM_IDS, &ids), (SIM_OFFS, &offsets), (SIM_SETS, &values)])
    }

    /// Reads a file written by [`SimilarIndex::save`]: with `mmap`, the
    /// index's tables are used in place from a read-only mapping; the sets
    /// are read into memory. Every checksum is checked first, and the sets
    /// against the index's ids.
    ///
    /// # Errors
    /// [`Error::Io`] when the file cannot be read, [`Error::BadFile`] naming
    /// the problem when it is not a complete `SimilarIndex` file (an index
    /// of fingerprints alone is one).
    pub fn load(path: &Path, mmap: bool) -> Result<SimilarIndex> {
        let (index, file) = Index::load_with(path, mmap)?;
        let bad = |problem: String| crate::container::Problem::from(problem).at(path);
        if !file.tags().any(|t| t == SIMILAR) {
            return Err(bad("it holds fingerprints only, not the shingle sets of a SimilarIndex (load it with Index.load)".into()));
        }
        let (meta, ids, offsets, values) = (file.section(SIMILAR)?, file.section(SIM_IDS)?, file.section(SIM_OFFS)?, file.section(SIM_SETS)?);
        let (meta, ids, offsets, values) = (meta.as_u64s()?, ids.as_u64s()?, offsets.as_u64s()?, values.as_u64s()?);
        let exact = match (meta.first(), meta.len()) {
            (Some(&LAYOUT), 11) => false,
            (Some(&LAYOUT_EXACT), 12) if meta[11] == 1 => true,
            _ => {
                return Err(bad(format!(
                    "a SIMILAR section of {} words, layout {:?} (this version reads layouts {LAYOUT} and {LAYOUT_EXACT}, of 11 and 12 words)",
                    meta.len(),
                    meta.first()
                )))
            }
        };
        let shingling = |mode: u64, width: u64| -> Result<Shingling> {
            let mode = match mode {
                0 => Mode::Words,
                1 => Mode::Chars,
                m => return Err(bad(format!("shingle mode {m}"))),
            };
            let width = usize::try_from(width).ok().filter(|&w| w <= 1 << 20).ok_or_else(|| bad(format!("shingle width {width}")))?;
            Shingling::new(mode, Some(width)).map_err(|e| bad(e.to_string()))
        };
        let measure = match meta[2] {
            0 => Measure::Jaccard,
            1 => Measure::Containment,
            m => return Err(bad(format!("measure {m}"))),
        };
        let k = u32::try_from(meta[7]).map_err(|_| bad(format!("k = {}", meta[7])))?;
        let candidates = Candidates { shingling: shingling(meta[5], meta[6])?, k };
        let opts = Similar::new(f64::from_bits(meta[1]), measure, shingling(meta[3], meta[4])?, candidates).map_err(|e| bad(e.to_string()))?.with_exact(exact);
        if exact && opts != SimilarIndex::exact_opts(opts) {
            return Err(bad(format!(
                "an exact index over fingerprints of {} within {k} bits (its sets' shingles at k = 0 expected)",
                candidates.shingling.mode()
            )));
        }
        if k != index.k() {
            return Err(bad(format!("candidates within {k} bits over an index of k = {}", index.k())));
        }
        let next_id = u128::from(meta[8]) | u128::from(meta[9]) << 64;
        let n = ids.len();
        if meta[10] != n as u64 || offsets.len() != n + 1 || index.len() != n {
            return Err(bad(format!("{} sets, {n} ids, {} offsets and {} indexed texts", meta[10], offsets.len(), index.len())));
        }
        if offsets[0] != 0 || offsets.windows(2).any(|w| w[1] < w[0]) || offsets[n] != values.len() as u64 {
            return Err(bad("set offsets that do not ascend from 0 to the number of set values".into()));
        }
        if ids.windows(2).any(|w| w[1] <= w[0]) || ids.last().is_some_and(|&hi| u128::from(hi) >= next_id) {
            return Err(bad("set ids that are not ascending, or at or above the next id to give".into()));
        }
        let mut indexed: Vec<u64> = index.items().into_iter().map(|(_, id)| id).collect();
        indexed.par_sort_unstable();
        if indexed != ids {
            return Err(bad("sets under other ids than the fingerprints' (the file is damaged or was altered)".into()));
        }
        let set = |i: usize| &values[offsets[i] as usize..offsets[i + 1] as usize];
        if let Some(i) = (0..n).into_par_iter().find_any(|&i| set(i).windows(2).any(|w| w[1] <= w[0])) {
            return Err(bad(format!("the set of id {} is not ascending", ids[i])));
        }
        // Cut short or rewritten while the sets were read.
        index.intact(())?;
        let prefix = exact.then(|| Prefix::new(opts.threshold, opts.measure));
        let mut loaded = SimilarIndex { opts, index, sets: HashMap::with_capacity(n), shared: HashMap::new(), next_id, values: 0, prefix };
        // The prefix index is not saved: it is made again from the sets.
        for (i, &id) in ids.iter().enumerate() {
            let held = loaded.hold(set(i).to_vec());
            if let Some(prefix) = &mut loaded.prefix {
                prefix.join(held.slot, id);
            }
            loaded.sets.insert(id, held);
        }
        if let Some(prefix) = &mut loaded.prefix {
            prefix.settle();
        }
        Ok(loaded)
    }
}

fn measure_code(m: Measure) -> u64 {
    match m {
        Measure::Jaccard => 0,
        Measure::Containment => 1,
    }
}

fn mode_code(m: Mode) -> u64 {
    match m {
        Mode::Words => 0,
        Mode::Chars => 1,
    }
}

#[cfg(test)]
mod tests;
