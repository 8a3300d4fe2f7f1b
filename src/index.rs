//! The index: every stored fingerprint within `k` bits of a query, exactly.
//!
//! Items live in *runs* (immutable permuted tables, see [`crate::tables::run`]) and in
//! a small unsorted buffer that single adds go to and queries scan. A full
//! buffer becomes a run; a run at least as large as the run before it is
//! merged into it (a binary counter), so there are O(log n) runs and an item
//! is merged O(log n) times: adding n items one at a time costs O(n log n).
//! Merging at half the size instead made streaming add_unique 17 % slower:
//! more merges, for a run less to probe.
//!
//! All runs share one table design, so merges are linear, table by table, and
//! a batch of queries is sorted once per table for all runs. The planner
//! chooses the design for the index's size (unless the user fixed it) and
//! chooses again when the size has doubled or fallen to a quarter; a new
//! design rebuilds every run once, which the doubling makes O(n) in all.
//!
//! Ids: every item has a distinct `u64` id. Default ids count up from the
//! largest id ever added, so they are never reused, even after a remove.
//! An index keyed by strings (its first add that stores anything gave
//! strings) gives its items default ids and keeps their strings in a name
//! table ([`names`]); it refuses int ids and adds without ids, and an
//! index keyed by ints refuses strings.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use rayon::prelude::*;

use crate::batch::Source;
pub use crate::cluster::ClusterMethod;
use crate::job::{Control, Copies};
use crate::tables::plan::{self, Design, MAX_K};
use crate::tables::run::{probe_batch, probe_each, Run};
use crate::tables::table::Layout;
use crate::{Error, Result};

mod names;
mod persist;
mod room;

use names::Names;

/// The most items an index holds ([`crate::MAX_ITEMS`]).
const MAX_ITEMS: usize = crate::MAX_ITEMS as usize;
/// The most queries one batch call takes: positions are `u32`.
pub const MAX_BATCH: usize = u32::MAX as usize;

/// Items the buffer holds before it becomes a run. Queries scan it, so it
/// stays small enough to cost well under a microsecond.
const BUFFER_MAX: usize = 1024;

/// Inputs of an `add_unique` that a plain loop over the kept ones
/// decides faster than a batch job's setup (a few hundred microseconds):
/// at most 512 * 511 / 2 comparisons, some 100 us.
const SMALL_DEDUP: usize = 512;

/// The dedup of a few fingerprints in order: each against the kept ones before it.
fn small_dedup(fps: &[u64], k: u32) -> crate::batch::Dedup {
    let mut d = crate::batch::Dedup { keep: vec![false; fps.len()], dropped: Vec::new(), matched: Vec::new() };
    let mut kept: Vec<(u64, u32)> = Vec::new();
    for (j, &fp) in fps.iter().enumerate() {
        match kept.iter().find(|&&(f, _)| (f ^ fp).count_ones() <= k) {
            Some(&(_, i)) => {
                d.dropped.push(j as u32);
                d.matched.push(i);
            }
            None => {
                d.keep[j] = true;
                kept.push((fp, j as u32));
            }
        }
    }
    d
}

/// Batch jobs run for an index: in memory, as its answers must be.
fn in_memory(k: u32) -> crate::batch::Options {
    crate::batch::Options { memory_limit: u64::MAX, ..crate::batch::Options::new(k) }
}

/// Matches of a batch query: query positions, ids and distances, sorted by
/// position, then distance, then id.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct BatchMatches {
    pub positions: Vec<u32>,
    pub ids: Vec<u64>,
    pub distances: Vec<u8>,
}

#[derive(Debug)]
pub struct Index {
    k: u32,
    /// The design of every run.
    design: Arc<Design>,
    /// Whether the user chose the design; if not, the planner re-plans it
    /// for the index's size whenever that doubles (or falls to a quarter).
    fixed: bool,
    /// The size `design` was planned for.
    planned_for: usize,
    /// How runs store their tables.
    layout: Layout,
    /// Oldest (and largest) first.
    runs: Vec<Run>,
    buffer: Vec<(u64, u64)>,
    /// The smallest id no item has had; u128 so that id 2^64-1 can be used.
    next_id: u128,
    live: usize,
    /// id -> fingerprint, built the first time an operation needs to find an
    /// id (remove, or explicit ids that are not all new), then kept up to date.
    id_map: Option<HashMap<u64, u64>>,
    /// The file the index was loaded from, whose changes it watches (see `persist`).
    origin: Option<crate::container::Origin>,
    /// The items' string ids, for an index keyed by strings; `None` when
    /// keyed by ints, or before its first add decides.
    names: Option<Names>,
}

/// What an index is keyed by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Keys {
    /// Nothing was ever stored: the first add decides.
    Undecided,
    Ints,
    Strings,
}

impl Index {
    /// An empty index answering every query within `k` completely. The table
    /// design is chosen per run by the planner unless `blocks` (a single
    /// level of that many blocks) or `tables` (a design with that many
    /// tables) fixes it.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] for `k` above 16, a block count not above
    /// `k`, a table count no design has, or `blocks` and `tables` that disagree.
    pub fn new(k: u32, blocks: Option<u32>, tables: Option<usize>) -> Result<Index> {
        if k > MAX_K {
            return Err(Error::invalid("k", "at most 16", k));
        }
        let design = match (blocks, tables) {
            (None, None) => plan::plan_cached(k, 0)?,
            (Some(b), None) => Arc::new(plan::with_blocks(k, b)?),
            (None, Some(t)) => Arc::new(plan::with_tables(k, t)?),
            (Some(b), Some(t)) => {
                let d = plan::with_blocks(k, b)?;
                if d.tables().len() != t {
                    return Err(Error::InvalidParameter {
                        name: "tables",
                        expected: "the table count of the given blocks",
                        found: format!("{t}, but blocks={b} with k={k} makes {} tables", d.tables().len()),
                    });
                }
                Arc::new(d)
            }
        };
        let fixed = blocks.is_some() || tables.is_some();
        Ok(Index {
            k,
            design,
            fixed,
            planned_for: 0,
            layout: Layout::DEFAULT,
            runs: Vec::new(),
            buffer: Vec::new(),
            next_id: 0,
            live: 0,
            id_map: None,
            origin: None,
            names: None,
        })
    }

    /// The largest distance answered completely.
    pub fn k(&self) -> u32 {
        self.k
    }

    /// Stored items.
    pub fn len(&self) -> usize {
        self.live
    }

    pub fn is_empty(&self) -> bool {
        self.live == 0
    }

    /// How the tables are stored.
    pub fn layout(&self) -> Layout {
        self.layout
    }

    /// Stores tables in `layout` from now on, converting those held (but for
    /// small raw runs under a packed layout: see `run_layout`).
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] for a block size outside 16 bytes .. 1 MiB.
    pub fn set_layout(&mut self, layout: Layout) -> Result<()> {
        if let Layout::Packed(b) = layout {
            if !(crate::tables::codec::MIN_BLOCK_BYTES..=crate::tables::codec::MAX_BLOCK_BYTES).contains(&b) {
                return Err(Error::invalid("block_bytes", "from 16 to 1048576", b));
            }
        }
        self.layout = layout;
        let live = self.live;
        for run in &mut self.runs {
            // Small raw runs stay raw (see `run_layout`); packed ones stay
            // packed too (loaded ones are read in place from their file).
            let target = match layout {
                Layout::Packed(_) if run.is_raw() && run.live() * 4 < live => Layout::Raw,
                layout => layout,
            };
            run.relayout(target);
        }
        Ok(())
    }

    /// The table design of every run.
    pub fn design(&self) -> Arc<Design> {
        Arc::clone(&self.design)
    }

    /// Number of runs and items in the buffer (for `repr` and tests).
    pub fn shape(&self) -> (usize, usize) {
        (self.runs.len(), self.buffer.len())
    }

    /// Bytes of the tables' keys (compressed or raw) and search structures,
    /// summed over runs.
    pub fn table_bytes(&self) -> usize {
        self.runs.iter().map(Run::table_bytes).sum()
    }

    /// Bytes held by the tables, ids, buffer and names.
    pub fn bytes(&self) -> usize {
        self.runs.iter().map(Run::bytes).sum::<usize>() + self.buffer.capacity() * 16 + self.names.as_ref().map_or(0, Names::bytes)
    }

    /// `k` of an operation: the index's own by default, never above it.
    fn op_k(&self, k: Option<u32>) -> Result<u32> {
        match k {
            None => Ok(self.k),
            Some(k) if k <= self.k => Ok(k),
            Some(k) => Err(Error::InvalidParameter {
                name: "k",
                expected: "at most the index's k (its tables cannot promise complete answers above it)",
                found: format!("{k} > {}", self.k),
            }),
        }
    }

    // ----- adding and removing -------------------------------------------

    /// Stores `fps` with `ids` (default: consecutive after the largest id so
    /// far) and returns the ids. New items are visible to the next query.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] for ids of the wrong length, an id given
    /// twice, an id already stored, or default ids past 2^64 - 1.
    pub fn add(&mut self, fps: &[u64], ids: Option<&[u64]>) -> Result<Vec<u64>> {
        self.check_ints(fps.len(), ids.is_some())?;
        self.check_room(fps.len())?;
        let ids = self.assign_ids(fps.len(), ids)?;
        self.insert(fps.iter().copied().zip(ids.iter().copied()).collect());
        self.intact(ids)
    }

    fn check_room(&self, n: usize) -> Result<()> {
        if self.live.saturating_add(n) > MAX_ITEMS {
            return Err(Error::InvalidParameter {
                name: "fps",
                expected: "at most 2**32-2 items in one index (split the corpus over several)",
                found: format!("{} stored + {n} more", self.live),
            });
        }
        self.room_for(n)
    }

    fn check_batch(n: usize) -> Result<()> {
        if n > MAX_BATCH {
            return Err(Error::invalid("fps", "at most 2**32-1 queries per call (split the batch)", n));
        }
        Ok(())
    }

    fn assign_ids(&mut self, n: usize, ids: Option<&[u64]>) -> Result<Vec<u64>> {
        let Some(ids) = ids else {
            let end = self.next_id + n as u128;
            if end > u128::from(u64::MAX) + 1 {
                return Err(Error::invalid("ids", "given explicitly: the default ids ran past 2**64-1", n));
            }
            let start = self.next_id as u64;
            self.next_id = end;
            return Ok((0..n as u64).map(|i| start + i).collect());
        };
        if ids.len() != n {
            return Err(Error::InvalidParameter { name: "ids", expected: "one id per fingerprint", found: format!("{} ids for {n} fingerprints", ids.len()) });
        }
        let mut sorted = ids.to_vec();
        sorted.sort_unstable();
        if let Some(w) = sorted.windows(2).find(|w| w[0] == w[1]) {
            return Err(Error::invalid("ids", "distinct", format!("id {} given twice", w[0])));
        }
        // Ids at or above next_id were never stored: only older ones need a look-up.
        if sorted.first().is_some_and(|&lo| u128::from(lo) < self.next_id) {
            let map = self.id_map();
            if let Some(&id) = sorted.iter().find(|id| map.contains_key(id)) {
                return Err(Error::invalid("ids", "not already stored (remove it first)", format!("id {id}")));
            }
        }
        if let Some(&hi) = sorted.last() {
            self.next_id = self.next_id.max(u128::from(hi) + 1);
        }
        Ok(ids.to_vec())
    }

    /// The id map, built on first use.
    fn id_map(&mut self) -> &mut HashMap<u64, u64> {
        if self.id_map.is_none() {
            let mut map = HashMap::with_capacity(self.live);
            for run in &self.runs {
                map.extend(run.items().into_iter().map(|(fp, id)| (id, fp)));
            }
            map.extend(self.buffer.iter().map(|&(fp, id)| (id, fp)));
            self.id_map = Some(map);
        }
        self.id_map.get_or_insert_with(HashMap::new)
    }

    fn insert(&mut self, items: Vec<(u64, u64)>) {
        if let Some(map) = &mut self.id_map {
            map.extend(items.iter().map(|&(fp, id)| (id, fp)));
        }
        self.live += items.len();
        if self.buffer.len() + items.len() < BUFFER_MAX {
            self.buffer.extend(items);
            return;
        }
        let mut all = std::mem::take(&mut self.buffer);
        if all.is_empty() {
            all = items;
        } else {
            all.extend(items);
        }
        // The design for the new size is chosen before the run is built:
        // a large first add builds its tables once, not once with the
        // design of an empty index and again with its own.
        if self.replan() {
            all.extend(self.runs.drain(..).flat_map(|run| run.items()));
            let layout = self.run_layout(all.len());
            self.runs.push(Run::build(Arc::clone(&self.design), layout, all));
            return;
        }
        let layout = self.run_layout(all.len());
        self.runs.push(Run::build(Arc::clone(&self.design), layout, all));
        self.rebalance();
    }

    /// Chooses the design again once the size has doubled or fallen to a
    /// quarter since it was chosen; returns whether it changed (the runs
    /// must then be rebuilt).
    fn replan(&mut self) -> bool {
        if self.fixed || (self.live < 2 * self.planned_for.max(BUFFER_MAX) && self.live * 4 >= self.planned_for) {
            return false;
        }
        self.planned_for = self.live;
        let Ok(design) = plan::plan_cached(self.k, self.live) else { return false };
        if design.levels() == self.design.levels() {
            return false;
        }
        self.design = design;
        true
    }

    /// [`Self::replan`], and every run rebuilt into one when the design changed.
    fn replan_runs(&mut self) {
        if self.replan() {
            let items: Vec<(u64, u64)> = self.runs.drain(..).flat_map(|run| run.items()).collect();
            if !items.is_empty() {
                let layout = self.run_layout(items.len());
                self.runs.push(Run::build(Arc::clone(&self.design), layout, items));
            }
        }
    }

    /// The layout of a new run of `items` items: the index's, except that
    /// runs under a quarter of the index stay raw when the index packs its
    /// tables. Those are merged again soon (a run is merged each time the
    /// runs after it add up to its size); packing and unpacking them at every
    /// merge made streamed `add_unique` three times slower than with raw
    /// tables. Runs shrink from the oldest to the newest; with batches of
    /// one size each is half the one before, so these hold under a quarter
    /// of the items (uneven batches can leave more).
    fn run_layout(&self, items: usize) -> Layout {
        match self.layout {
            Layout::Packed(_) if items * 4 < self.live => Layout::Raw,
            layout => layout,
        }
    }

    /// Merges the newest run into the one before while it is at least as
    /// large, and rebuilds runs that are a quarter dead.
    fn rebalance(&mut self) {
        while self.runs.len() >= 2 {
            let n = self.runs.len();
            if self.runs[n - 2].live() > self.runs[n - 1].live() {
                break;
            }
            let b = self.runs.pop().expect("two runs");
            let a = self.runs.pop().expect("two runs");
            let layout = self.run_layout(a.live() + b.live());
            self.runs.push(Run::merge(a, b, Arc::clone(&self.design), layout));
        }
        for i in 0..self.runs.len() {
            if self.runs[i].dead() * 4 > self.runs[i].slots() {
                let items = self.runs[i].items();
                if items.is_empty() {
                    self.runs.remove(i);
                    return self.rebalance();
                }
                let layout = self.run_layout(items.len());
                self.runs[i] = Run::build(Arc::clone(&self.design), layout, items);
            }
        }
    }

    /// Removes the items with these ids; returns how many were stored.
    pub fn remove(&mut self, ids: &[u64]) -> usize {
        let mut gone: Vec<(u64, u64)> = Vec::new();
        {
            let map = self.id_map();
            for id in ids {
                if let Some(fp) = map.remove(id) {
                    gone.push((fp, *id));
                }
            }
        }
        if gone.is_empty() {
            return 0;
        }
        let in_buffer: HashSet<(u64, u64)> = gone.iter().copied().collect();
        let before = self.buffer.len();
        self.buffer.retain(|item| !in_buffer.contains(item));
        let mut removed = before - self.buffer.len();
        for &(fp, id) in &gone {
            if self.runs.iter_mut().any(|run| run.remove(fp, id)) {
                removed += 1;
            }
        }
        debug_assert_eq!(removed, gone.len());
        if let Some(table) = &mut self.names {
            gone.iter().for_each(|&(_, id)| table.remove_id(id));
        }
        self.live -= removed;
        self.rebalance();
        self.replan_runs();
        removed
    }

    // ----- queries ---------------------------------------------------------

    /// `(id, distance)` of every stored item within `k` of `fp`, sorted by
    /// distance, then id.
    pub fn query(&self, fp: u64, k: Option<u32>) -> Result<Vec<(u64, u32)>> {
        let k = self.op_k(k)?;
        let mut out = Vec::new();
        for run in &self.runs {
            run.probe(fp, k, |(i, d)| out.extend(run.ids_of(i as usize).map(|id| (id, d))));
        }
        for &(f, id) in &self.buffer {
            let d = (f ^ fp).count_ones();
            if d <= k {
                out.push((id, d));
            }
        }
        out.sort_unstable_by_key(|&(id, d)| (d, id));
        self.intact(out)
    }

    /// Runs `f` over the runs to search in a batch operation: the buffer
    /// joins them, last, as a temporary run.
    fn with_batch_runs<R>(&self, f: impl FnOnce(&[&Run]) -> R) -> R {
        // Raw: it lives for one call, packing it would cost more than it saves.
        let temp = (!self.buffer.is_empty()).then(|| Run::build(Arc::clone(&self.design), Layout::Raw, self.buffer.clone()));
        let runs: Vec<&Run> = self.runs.iter().chain(temp.as_ref()).collect();
        f(&runs)
    }

    /// Matches of many queries, on rayon threads.
    pub fn query_batch(&self, fps: &[u64], k: Option<u32>) -> Result<BatchMatches> {
        let k = self.op_k(k)?;
        Self::check_batch(fps.len())?;
        let mut all: Vec<(u32, u32, u64)> = self.with_batch_runs(|runs| {
            let mut all = Vec::new();
            for (r, pos, i, d) in probe_batch(runs, fps, k) {
                all.extend(runs[r as usize].ids_of(i as usize).map(|id| (pos, d, id)));
            }
            all
        });
        all.par_sort_unstable();
        self.intact(BatchMatches {
            positions: all.iter().map(|m| m.0).collect(),
            distances: all.iter().map(|m| m.1 as u8).collect(),
            ids: all.iter().map(|m| m.2).collect(),
        })
    }

    /// Every unordered pair of distinct stored ids within `k`, smaller id
    /// first, sorted. Ids on one fingerprint (copies) pair as `copies`
    /// says: all with each other (the default), or each with the smallest
    /// of them only ([`Copies::First`]).
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] for `k` above the index's;
    /// [`Error::TooLarge`] when the pairs of copies alone would not fit in
    /// memory (before any is made).
    pub fn find_all(&self, k: Option<u32>, copies: Copies) -> Result<Vec<[u64; 2]>> {
        let k = self.op_k(k)?;
        if copies == Copies::First {
            return self.find_all_by_kernel(k, copies);
        }
        if let Some(available) = crate::mem::available() {
            let need = self.copy_pairs().saturating_mul(16);
            if need > available {
                return Err(Error::TooLarge {
                    what: format!("the {} pairs of ids sharing a fingerprint", self.copy_pairs()),
                    bytes: need,
                    available,
                    advice: "pass copies=\"first\" to pair each with the smallest id of its fingerprint only".into(),
                });
            }
        }
        if self.kernel_is_faster() {
            return self.intact(self.find_all_by_kernel(k, copies)?);
        }
        let mut pairs: Vec<[u64; 2]> = Vec::new();
        let mut emit = |a: u64, b: u64| pairs.push([a.min(b), a.max(b)]);
        self.with_batch_runs(|runs| {
            for (r, run) in runs.iter().enumerate() {
                run.id_pairs(k, &mut emit);
                // Pairs with earlier runs: probe them with this run's
                // fingerprints. Runs shrink from the oldest to the newest, so
                // the smaller side is the one sorted and searched for.
                let earlier = &runs[..r];
                if earlier.is_empty() {
                    continue;
                }
                let fps = run.fps();
                let live: Vec<usize> = (0..fps.len()).filter(|&i| run.first_id(i).is_some()).collect();
                let queries: Vec<u64> = live.iter().map(|&i| fps[i]).collect();
                for (o, pos, j, _) in probe_batch(earlier, &queries, k) {
                    let b: Vec<u64> = earlier[o as usize].ids_of(j as usize).collect();
                    for a in run.ids_of(live[pos as usize]) {
                        b.iter().for_each(|&b| emit(a, b));
                    }
                }
            }
        });
        pairs.par_sort_unstable();
        // A loaded index whose file changed under it may pair anything:
        // the check below refuses the answer.
        debug_assert!(self.intact(()).is_err() || pairs.windows(2).all(|w| w[0] != w[1]), "a pair was emitted twice");
        self.intact(pairs)
    }

    /// Whether the batch kernel, which reads every item once per table of
    /// its own design, finds all pairs faster than the runs' tables: those
    /// are scanned once each, but every run after the first is probed into
    /// the runs before it, which costs a sort of its fingerprints per table
    /// and a stream through (or a search in) each earlier run. The costs are
    /// nanoseconds of one core, fitted to `find_all` at 10^7 items in runs of
    /// several shapes (benches/README.md).
    fn kernel_is_faster(&self) -> bool {
        let tables = self.design.tables().len() as f64;
        let mut runs: Vec<(f64, bool)> = self.runs.iter().map(|r| (r.live() as f64, r.is_raw())).collect();
        if !self.buffer.is_empty() {
            runs.push((self.buffer.len() as f64, true));
        }
        let mut own = 0.0;
        for (j, &(queries, raw)) in runs.iter().enumerate() {
            own += tables * queries * if raw { 1.6 } else { 2.2 };
            if j == 0 {
                continue;
            }
            own += tables * queries * 15.0;
            for &(n, raw) in &runs[..j] {
                own += tables
                    * match (raw, queries * 40.0 >= n) {
                        (true, _) => queries * 20.0,
                        (false, true) => n * 4.2,
                        (false, false) => queries * 500.0,
                    };
            }
        }
        let n = self.live as f64;
        let kernel_tables = crate::batch::choose_design(self.k, self.live as u64, false).map_or(tables, |d| d.tables().len() as f64);
        // The kernel's passes, its first (the histograms), and the items
        // taken out of the runs and sorted by id.
        n * (17.0 * kernel_tables + 20.0 + 50.0) < own
    }

    /// [`Self::find_all`] through the batch kernel.
    fn find_all_by_kernel(&self, k: u32, copies: Copies) -> Result<Vec<[u64; 2]>> {
        let (fps, ids) = self.items_by_id();
        let opts = crate::batch::Options { copies: Some(copies), ..in_memory(k) };
        crate::batch::find_all(&Source::Memory(&fps), Some(&ids), &opts, &Control::default())
    }

    /// Pairs of live ids that share a fingerprint in one run (the pairs of
    /// copies [`Self::find_all`] lists, but for copies in different runs
    /// and the buffer, which are few).
    pub fn copy_pairs(&self) -> u64 {
        let mut pairs = 0u64;
        for run in &self.runs {
            for i in run.shared_fps() {
                let c = run.ids_of(i).count() as u64;
                pairs += c * c.saturating_sub(1) / 2;
            }
        }
        pairs
    }

    /// Every live item's fingerprint and id, ordered by id.
    fn items_by_id(&self) -> (Vec<u64>, Vec<u64>) {
        let mut items = self.items();
        items.par_sort_unstable_by_key(|&(_, id)| id);
        items.into_iter().unzip()
    }

    /// Clusters of stored ids, each sorted, ordered by their smallest id;
    /// clusters smaller than `min_size` are left out. The batch kernel
    /// finds them over the items in id order, joining pairs as it finds
    /// them: memory follows the items, however dense the clusters.
    pub fn cluster(&self, k: Option<u32>, min_size: usize, method: ClusterMethod) -> Result<Vec<Vec<u64>>> {
        let k = self.op_k(k)?;
        if min_size < 1 {
            return Err(Error::invalid("min_size", "at least 1", min_size));
        }
        let (fps, ids) = self.items_by_id();
        let (members, starts) = crate::batch::clusters(&Source::Memory(&fps), method, min_size, &in_memory(k), &Control::default())?;
        self.intact(starts.windows(2).map(|w| members[w[0] as usize..w[1] as usize].iter().map(|&m| ids[m as usize]).collect()).collect())
    }

    /// Every stored `(fingerprint, id)`.
    pub fn items(&self) -> Vec<(u64, u64)> {
        let mut out: Vec<(u64, u64)> = self.runs.iter().flat_map(Run::items).collect();
        out.extend_from_slice(&self.buffer);
        out
    }

    /// For each fingerprint in order: if a stored item or an earlier new one
    /// of this call is within `k`, it is a duplicate and `matched` is the
    /// smallest such id; otherwise it is new and is stored. Default ids are
    /// given to every input in order, stored or not, so that `matched` and
    /// positions correspond (`id = first id + position`).
    ///
    /// Each input is decided against the kept items only: the stored ones
    /// (a lookup), then, for the inputs none is near, the batch kernel's
    /// dedup in order, where the copies of a fingerprint follow their first
    /// copy and only first copies are compared. Time and memory follow the
    /// items, however many copies or near neighbours they have.
    pub fn add_unique(&mut self, fps: &[u64], ids: Option<&[u64]>, k: Option<u32>) -> Result<(Vec<bool>, Vec<u64>)> {
        self.check_ints(fps.len(), ids.is_some())?;
        self.add_unique_ids(fps, ids, k)
    }

    /// [`Index::add_unique`], whatever the index is keyed by.
    fn add_unique_ids(&mut self, fps: &[u64], ids: Option<&[u64]>, k: Option<u32>) -> Result<(Vec<bool>, Vec<u64>)> {
        let k = self.op_k(k)?;
        Self::check_batch(fps.len())?;
        self.check_room(fps.len())?;
        let fresh_from = self.next_id;
        let ids = self.assign_ids(fps.len(), ids)?;
        let n = fps.len();

        // 1. The smallest stored id within k of each input.
        let near: Vec<AtomicBool> = (0..n).map(|_| AtomicBool::new(false)).collect();
        let smallest: Vec<AtomicU64> = (0..n).map(|_| AtomicU64::new(u64::MAX)).collect();
        self.with_batch_runs(|runs| {
            probe_each(runs, fps, k, |(r, pos, i, _)| {
                if let Some(id) = runs[r as usize].first_id(i as usize) {
                    near[pos as usize].store(true, Ordering::Relaxed);
                    smallest[pos as usize].fetch_min(id, Ordering::Relaxed);
                }
            });
        });
        let near: Vec<bool> = near.into_iter().map(AtomicBool::into_inner).collect();
        let mut matched: Vec<u64> = smallest.into_iter().map(AtomicU64::into_inner).collect();

        // 2. The inputs no stored item is near, deduplicated in order.
        let open: Vec<u32> = (0..n as u32).filter(|&p| !near[p as usize]).collect();
        let open_fps: Vec<u64> = open.iter().map(|&p| fps[p as usize]).collect();
        let d = if open.len() <= SMALL_DEDUP {
            small_dedup(&open_fps, k)
        } else {
            crate::batch::dedup(&Source::Memory(&open_fps), &in_memory(k), &Control::default())?
        };
        let mut is_new = vec![false; n];
        for (&p, &keep) in open.iter().zip(&d.keep) {
            is_new[p as usize] = keep;
        }

        // 3. What each duplicate matched: with ids ascending past every id
        // so far, the stored match is the smallest, and an open input's is
        // the earliest new one the dedup names; otherwise every new input
        // before it is looked at.
        let ascending = ids.first().is_none_or(|&first| u128::from(first) >= fresh_from) && ids.windows(2).all(|w| w[0] < w[1]);
        if ascending {
            for (&j, &m) in d.dropped.iter().zip(&d.matched) {
                matched[open[j as usize] as usize] = ids[open[m as usize] as usize];
            }
        } else {
            self.smallest_new_before(fps, &ids, &is_new, k, &mut matched);
        }

        // 4. Store the new ones.
        let new_items: Vec<(u64, u64)> = (0..n).filter(|&i| is_new[i]).map(|i| (fps[i], ids[i])).collect();
        self.insert(new_items);
        self.intact((is_new, matched))
    }

    /// For each input that is not new, the smallest of `matched` (its
    /// smallest stored match, `u64::MAX` for none) and the ids of the new
    /// inputs before it within `k`.
    fn smallest_new_before(&self, fps: &[u64], ids: &[u64], is_new: &[bool], k: u32, matched: &mut [u64]) {
        let new: Vec<(u64, u64)> = (0..fps.len()).filter(|&p| is_new[p]).map(|p| (fps[p], p as u64)).collect();
        if new.is_empty() {
            return;
        }
        let dups = fps.len() - new.len();
        if new.len().saturating_mul(dups) <= SMALL_DEDUP * SMALL_DEDUP / 2 {
            // Few enough to compare every duplicate with every new input.
            for b in (0..fps.len()).filter(|&b| !is_new[b]) {
                let near = new.iter().take_while(|&&(_, a)| a < b as u64).filter(|&&(f, _)| (f ^ fps[b]).count_ones() <= k);
                if let Some(m) = near.map(|&(_, a)| ids[a as usize]).min() {
                    matched[b] = matched[b].min(m);
                }
            }
            return;
        }
        // Ids of this run are input positions (below 2^32: checked by the caller).
        let run = Run::build(plan::plan_cached(k, new.len()).unwrap_or_else(|_| Arc::clone(&self.design)), Layout::Raw, new);
        let dups: Vec<u32> = (0..fps.len() as u32).filter(|&p| !is_new[p as usize]).collect();
        let queries: Vec<u64> = dups.iter().map(|&p| fps[p as usize]).collect();
        let best: Vec<AtomicU64> = dups.iter().map(|&p| AtomicU64::new(matched[p as usize])).collect();
        probe_each(&[&run], &queries, k, |(_, q, i, _)| {
            let b = dups[q as usize] as u64;
            for a in run.ids_of(i as usize).filter(|&a| a < b) {
                best[q as usize].fetch_min(ids[a as usize], Ordering::Relaxed);
            }
        });
        for (&p, m) in dups.iter().zip(best) {
            matched[p as usize] = m.into_inner();
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use proptest::prelude::*;

    fn brute_pairs(items: &[(u64, u64)], k: u32) -> Vec<[u64; 2]> {
        let mut out = Vec::new();
        for (x, &(fa, ia)) in items.iter().enumerate() {
            for &(fb, ib) in &items[x + 1..] {
                if (fa ^ fb).count_ones() <= k {
                    out.push([ia.min(ib), ia.max(ib)]);
                }
            }
        }
        out.sort_unstable();
        out
    }

    /// Raw tables, and packed ones in blocks from the smallest size up.
    fn layouts() -> impl Strategy<Value = Layout> {
        prop_oneof![Just(Layout::Raw), Just(Layout::Packed(16)), Just(Layout::Packed(100)), Just(Layout::DEFAULT)]
    }

    fn data() -> impl Strategy<Value = Vec<u64>> {
        planted(40, 120)
    }

    pub(crate) use crate::testing::planted;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        #[test]
        fn matches_brute_force(fps in data(), k in 0u32..=5, extra in 0u32..3, chunk in 1usize..700, layout in layouts()) {
            let mut index = Index::new(k, Some(k + 1 + extra).filter(|_| extra > 0), None).unwrap();
            index.set_layout(layout).unwrap();
            for part in fps.chunks(chunk) {
                index.add(part, None).unwrap();
            }
            let items: Vec<(u64, u64)> = fps.iter().enumerate().map(|(i, &f)| (f, i as u64)).collect();
            prop_assert_eq!(index.len(), items.len());
            prop_assert_eq!(index.find_all(None, Copies::All).unwrap(), brute_pairs(&items, k));
            prop_assert_eq!(index.find_all_by_kernel(k, Copies::All).unwrap(), brute_pairs(&items, k));
            for &q in fps.iter().take(20).chain([0, u64::MAX].iter()) {
                let mut expected: Vec<(u64, u32)> = items.iter()
                    .map(|&(f, id)| (id, (f ^ q).count_ones()))
                    .filter(|&(_, d)| d <= k).collect();
                expected.sort_unstable_by_key(|&(id, d)| (d, id));
                prop_assert_eq!(index.query(q, None).unwrap(), expected);
            }
            let batch = index.query_batch(&fps, None).unwrap();
            for (pos, &q) in fps.iter().enumerate() {
                let got: Vec<u64> = (0..batch.positions.len()).filter(|&m| batch.positions[m] as usize == pos).map(|m| batch.ids[m]).collect();
                let expected: Vec<u64> = index.query(q, None).unwrap().into_iter().map(|(id, _)| id).collect();
                prop_assert_eq!(got, expected);
            }
        }

        #[test]
        fn add_unique_is_a_stream_loop(fps in data(), k in 0u32..=4, split in 1usize..200, layout in layouts()) {
            let mut index = Index::new(k, None, None).unwrap();
            index.set_layout(layout).unwrap();
            let mut kept: Vec<(u64, u64)> = Vec::new();
            let mut offset = 0u64;
            for part in fps.chunks(split) {
                let (is_new, matched) = index.add_unique(part, None, None).unwrap();
                for (p, &fp) in part.iter().enumerate() {
                    let id = offset + p as u64;
                    let near = kept.iter().filter(|&&(f, _)| (f ^ fp).count_ones() <= k).map(|&(_, i)| i).min();
                    match near {
                        Some(m) => { prop_assert!(!is_new[p]); prop_assert_eq!(matched[p], m); }
                        None => { prop_assert!(is_new[p]); kept.push((fp, id)); }
                    }
                }
                offset += part.len() as u64;
            }
            prop_assert_eq!(index.len(), kept.len());
        }

        #[test]
        fn remove_then_query(fps in data(), k in 0u32..=3, drop in prop::collection::vec(any::<prop::sample::Index>(), 0..60), layout in layouts()) {
            let mut index = Index::new(k, None, None).unwrap();
            index.set_layout(layout).unwrap();
            index.add(&fps, None).unwrap();
            let mut items: Vec<(u64, u64)> = fps.iter().enumerate().map(|(i, &f)| (f, i as u64)).collect();
            let gone: Vec<u64> = drop.iter().map(|d| d.index(fps.len()) as u64).collect();
            let unique: HashSet<u64> = gone.iter().copied().collect();
            prop_assert_eq!(index.remove(&gone), unique.len());
            items.retain(|(_, id)| !unique.contains(id));
            prop_assert_eq!(index.len(), items.len());
            prop_assert_eq!(index.find_all(None, Copies::All).unwrap(), brute_pairs(&items, k));
            prop_assert_eq!(index.find_all_by_kernel(k, Copies::All).unwrap(), brute_pairs(&items, k));
            prop_assert_eq!(index.find_all_by_kernel(k, Copies::All).unwrap(), brute_pairs(&items, k));
            // Ids are never reused; removed ids may be added again explicitly.
            let again: Vec<u64> = unique.iter().copied().collect();
            index.add(&vec![7; again.len()], Some(&again)).unwrap();
            prop_assert_eq!(index.len(), fps.len());
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(48))]

        /// Streamed or at once, on copies and dense balls, with default ids
        /// or ids in any order (some below those stored before): each input
        /// is new exactly when no kept item is within k, and matches the
        /// smallest id of those.
        #[test]
        fn add_unique_on_skew(fps in crate::testing::skewed(1500, 1500), k in 0u32..=4, split in prop_oneof![Just(usize::MAX), 1usize..400],
                              explicit in any::<bool>(), seed in any::<u64>(), stored in prop::collection::vec(any::<u64>(), 0..20)) {
            let mut index = Index::new(k, None, None).unwrap();
            // Items stored before, some near the stream (its first few, moved a bit).
            let mut before: Vec<u64> = stored;
            before.extend(fps.iter().take(3).map(|&f| f ^ 1 << (seed % 64)));
            let before_ids: Vec<u64> = (0..before.len() as u64).map(|i| 1_000_000 + 7 * i).collect();
            index.add(&before, Some(&before_ids)).unwrap();
            let mut kept: Vec<(u64, u64)> = before.iter().copied().zip(before_ids.iter().copied()).collect();
            let ids: Vec<u64> = (0..fps.len() as u64).map(|i| if explicit { crate::batch::source::mix(i ^ seed) >> 8 } else { 1_000_000 + 7 * (before.len() as u64 - 1) + 1 + i }).collect();
            let mut offset = 0;
            for part in fps.chunks(split.min(fps.len().max(1))) {
                let part_ids = &ids[offset..offset + part.len()];
                let (is_new, matched) = index.add_unique(part, explicit.then_some(part_ids), None).unwrap();
                for (p, &fp) in part.iter().enumerate() {
                    let near = kept.iter().filter(|&&(f, _)| (f ^ fp).count_ones() <= k).map(|&(_, i)| i).min();
                    match near {
                        Some(m) => { prop_assert!(!is_new[p], "input {}", offset + p); prop_assert_eq!(matched[p], m, "input {}", offset + p); }
                        None => { prop_assert!(is_new[p], "input {}", offset + p); kept.push((fp, part_ids[p])); }
                    }
                }
                offset += part.len();
            }
            prop_assert_eq!(index.len(), kept.len());
        }

        /// Clusters and both kinds of find_all on copies and dense balls,
        /// with ids in any order, against brute force.
        #[test]
        fn clusters_and_pairs_on_skew(fps in crate::testing::skewed(600, 800), k in 0u32..=4, seed in any::<u64>(), min_size in 1usize..3) {
            let ids: Vec<u64> = (0..fps.len() as u64).map(|i| crate::batch::source::mix(i ^ seed)).collect();
            let mut index = Index::new(k, None, None).unwrap();
            index.add(&fps, Some(&ids)).unwrap();
            // By id order, positions are ranks.
            let mut order: Vec<usize> = (0..fps.len()).collect();
            order.sort_unstable_by_key(|&i| ids[i]);
            let by_id: Vec<u64> = order.iter().map(|&i| fps[i]).collect();
            let id_of = |r: u64| ids[order[r as usize]];
            for method in [ClusterMethod::Connected, ClusterMethod::Leader] {
                let expected: Vec<Vec<u64>> = crate::testing::brute_clusters(&by_id, k, min_size, method)
                    .into_iter().map(|g| g.into_iter().map(id_of).collect()).collect();
                prop_assert_eq!(index.cluster(None, min_size, method).unwrap(), expected);
            }
            let mut all: Vec<[u64; 2]> = crate::testing::brute_pairs(&by_id, k).into_iter().map(|[a, b]| [id_of(a), id_of(b)]).collect();
            all.iter_mut().for_each(|p| p.sort_unstable());
            all.sort_unstable();
            prop_assert_eq!(index.find_all(None, Copies::All).unwrap(), all);
            let first = crate::testing::brute_first_pairs(&by_id, k);
            let mut first: Vec<[u64; 2]> = first.into_iter().map(|[a, b]| { let (x, y) = (id_of(a), id_of(b)); [x.min(y), x.max(y)] }).collect();
            first.sort_unstable();
            prop_assert_eq!(index.find_all(None, Copies::First).unwrap(), first);
        }
    }

    #[test]
    fn bad_arguments() {
        assert!(Index::new(17, None, None).is_err());
        assert!(Index::new(3, Some(3), None).is_err());
        assert!(Index::new(3, Some(5), Some(4)).is_err());
        let mut index = Index::new(3, None, None).unwrap();
        assert!(index.query(1, Some(4)).is_err());
        assert!(index.add(&[1, 2], Some(&[5])).is_err());
        assert!(index.add(&[1, 2], Some(&[5, 5])).is_err());
        index.add(&[1], Some(&[5])).unwrap();
        assert!(index.add(&[1], Some(&[5])).is_err());
        assert_eq!(index.add(&[2], None).unwrap(), vec![6]);
        index.add(&[3], Some(&[u64::MAX])).unwrap();
        assert!(index.add(&[4], None).is_err());
    }

    /// The tables' first close pair may start at key 0, with no key before
    /// it (the proptests' indexes are mostly too small to leave the buffer).
    #[test]
    fn find_all_from_key_zero() {
        let mut fps: Vec<u64> = (1..=3000u64).map(|i| i.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1 << 63).collect();
        fps.extend([0, 1, 3, u64::MAX, u64::MAX - 1]);
        let items: Vec<(u64, u64)> = fps.iter().enumerate().map(|(i, &f)| (f, i as u64)).collect();
        for layout in [Layout::Raw, Layout::Packed(16), Layout::Packed(100), Layout::DEFAULT] {
            for k in [1, 3] {
                let mut index = Index::new(k, None, None).unwrap();
                index.set_layout(layout).unwrap();
                index.add(&fps, None).unwrap();
                assert_eq!(index.shape(), (1, 0), "one run, nothing buffered");
                let mut pairs = index.find_all(None, Copies::All).unwrap();
                pairs.sort_unstable();
                assert_eq!(pairs, brute_pairs(&items, k), "{layout:?}, k = {k}");
            }
        }
    }

    /// Clusters of an index where one fingerprint carries thousands of ids
    /// (the batch kernel's path), against a union-find over brute force.
    #[test]
    fn clusters_of_many_copies() {
        let mut fps: Vec<u64> = (0..1000u64).map(|i| i.wrapping_mul(0x9e37_79b9_7f4a_7c15)).collect();
        fps.extend(std::iter::repeat_n(fps[10], 3000));
        fps.extend(std::iter::repeat_n(fps[20] ^ 0b11, 500));
        fps.push(fps[10] ^ 1 << 40);
        let items: Vec<(u64, u64)> = fps.iter().enumerate().map(|(i, &f)| (f, 5 * i as u64)).collect();
        let ids: Vec<u64> = items.iter().map(|p| p.1).collect();
        for layout in [Layout::Raw, Layout::DEFAULT] {
            let mut index = Index::new(3, None, None).unwrap();
            index.set_layout(layout).unwrap();
            index.add(&fps, Some(&ids)).unwrap();
            assert!(index.copy_pairs() > index.len() as u64, "the test takes the kernel's path");
            let expected: Vec<Vec<u64>> = crate::testing::brute_clusters(&fps, 3, 2, ClusterMethod::Connected)
                .into_iter()
                .map(|g| g.into_iter().map(|i| ids[i as usize]).collect())
                .collect();
            assert_eq!(index.cluster(None, 2, ClusterMethod::Connected).unwrap(), expected, "{layout:?}");
        }
    }

    #[test]
    fn many_single_adds_merge_into_few_runs() {
        let mut index = Index::new(3, None, None).unwrap();
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        for _ in 0..20_000 {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            index.add(&[x], None).unwrap();
        }
        let (runs, buffer) = index.shape();
        assert!(runs <= 6 && buffer < BUFFER_MAX, "{runs} runs, {buffer} buffered");
        assert_eq!(index.len(), 20_000);
    }
}
