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

mod add;
mod meta;
mod names;
mod persist;
mod query;
mod room;

pub use meta::Metadata;
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
    /// The user's own `key -> value` strings, saved with the index ([`meta`]).
    metadata: Metadata,
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
            metadata: Metadata::new(),
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
}

#[cfg(test)]
pub(crate) mod tests;
