//! Batch jobs over a whole corpus of fingerprints, one table at a time (the
//! paper's batch mode, §3.3): all pairs within `k` ([`find_all`]), clusters
//! ([`clusters`]) and the keep mask of a dedup ([`dedup`]).
//!
//! Unlike an [`Index`](crate::Index), which holds every table of every item,
//! a job holds one table at a time: each table's items are permuted, put in
//! buckets by their leading bits, sorted in cache and scanned for groups
//! sharing the table's prefix (see `kernel`). Its memory is 12 bytes per
//! item of the table in work, whatever the design; under a memory limit a
//! table is worked in parts, read again from the source or spilled to disk
//! (see `budget`). Every pair is found by exactly one table, so the pairs of
//! the tables are disjoint and sorted runs of them merge into the answer.
//!
//! With a work directory, each finished table's pairs are kept there, so a
//! job killed midway and started again with the same directory resumes
//! after the last finished table (see `workdir`).
//!
//! Items are the source's positions, below 2^32 - 1.

mod against;
mod answer;
mod budget;
mod dense;
pub mod distinct;
mod ids;
pub(crate) mod kernel;
pub mod npy;
mod run_tables;
pub(crate) mod runs;
pub(crate) mod source;
mod spill;
mod workdir;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use rayon::prelude::*;

pub use crate::cluster::Dedup;
pub use crate::job::{Control, Copies, Progress};
pub use against::{dedup_against, find_all_against, DedupAgainst};
pub use budget::{choose_design, ITEM_BYTES};
pub use distinct::{distinct, Distinct};
pub use ids::check_distinct;
pub use source::{NpyFiles, Source};

use crate::cluster::graph;
use crate::tables::plan::Design;
use crate::{Error, Result};
use answer::Answer;
use kernel::{Arena, Found, Items, Pair, TableKernel};
use run_tables::run_tables;
use runs::{ExternalSort, Run, RunFile};
use workdir::Workdir;

pub use crate::MAX_ITEMS;

/// Parts of a table read again from the source rather than spilled: reading
/// the source costs 8 bytes an item each time, a spill 12 written and 12 read.
const REREAD_PARTS: usize = 2;
/// The same for a source in memory, which costs no I/O to read again.
const REREAD_PARTS_IN_MEMORY: usize = 6;

/// How a job runs.
#[derive(Debug, Clone)]
pub struct Options {
    /// Pairs within `k` bits.
    pub k: u32,
    /// The table design; by default the one with the least work for the size.
    pub design: Option<Arc<Design>>,
    /// Bytes the job may hold, beyond a source in memory.
    pub memory_limit: u64,
    /// Where finished tables are kept (so that a killed job resumes) and
    /// spill files go. Without it a job keeps its pairs in memory and spills
    /// to a temporary directory, removed at the end, under `temp_parent`
    /// (the system's temporary directory by default).
    pub workdir: Option<PathBuf>,
    pub temp_parent: Option<PathBuf>,
    /// Whether a table worked in parts spills them (`Some(true)`) or reads
    /// the source once per part (`Some(false)`); `None` chooses by cost.
    pub spill: Option<bool>,
    /// Which pairs of copies [`find_all`] lists; `None` is [`Copies::All`],
    /// with a notice ([`Control::notices`]) when copies make most of a large
    /// answer.
    pub copies: Option<Copies>,
}

impl Options {
    pub fn new(k: u32) -> Options {
        Options { k, design: None, memory_limit: 8 << 30, workdir: None, temp_parent: None, spill: None, copies: None }
    }
}

/// What a job makes of its pairs.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Job {
    FindAll,
    Dedup,
    Clusters,
    /// Every pair, by its later item: candidates for a pass in order.
    Candidates,
}

impl Job {
    /// Pairs are kept as `higher << 32 | lower` for a dedup (each item
    /// after all pairs of the items before it), else `lower << 32 | higher`
    /// (the order of [`find_all`]'s answer).
    fn by_higher(self) -> bool {
        matches!(self, Job::Dedup | Job::Candidates)
    }

    /// Whether copies of a fingerprint collapse onto their first (see
    /// `TableKernel::collapsed_pairs`): all but the candidates of a pass in
    /// order, which are consumed pair by pair. `find_all` makes the pairs of
    /// copies from the links at the end, when it knows how many there are.
    fn collapses(self) -> bool {
        !matches!(self, Job::Candidates)
    }
}

/// Where a job's pairs go as the tables find them.
#[derive(Copy, Clone)]
enum Sink<'s> {
    /// Kept in sorted runs (pairs and links apart), for the end of the job.
    Keep,
    /// Handed to a caller that consumes them: every pair, copies included, none kept.
    Stream(&'s (dyn Fn(Vec<u64>) -> Result<()> + Sync)),
    /// Joined in a union-find at once; only the pairs that joined two
    /// clusters are kept, and only by a job that can resume (at most one
    /// per item: memory follows the items, however dense the groups).
    Join(&'s Mutex<graph::Components>),
}

/// Every unordered pair of distinct items within `k`, as `[a, b]` with
/// `a < b`, sorted: positions, or `ids[position]` when ids are given (as
/// [`Index::find_all`](crate::Index::find_all) answers for those ids).
/// Copies of a fingerprint are listed as `opts.copies` says.
///
/// # Errors
/// [`Error::BadInput`] for more than [`MAX_ITEMS`] items;
/// [`Error::InvalidParameter`] for ids of another length or given twice;
/// [`Error::TooLarge`] when the answer would not fit
/// in memory (found before it is made); [`Error::Io`] when the source or
/// the work directory cannot be read or written; [`Error::Interrupted`]
/// when cancelled.
pub fn find_all(source: &Source<'_>, ids: Option<&[u64]>, opts: &Options, control: &Control) -> Result<Vec<[u64; 2]>> {
    check_ids(source, ids, opts)?;
    let mut job = pairs(source, opts, control, Job::FindAll)?;
    let answer = Answer::new(&mut job, opts, control)?;
    if let Some(available) = crate::mem::available() {
        let need = answer.count.saturating_mul(16);
        if need > available {
            return Err(Error::TooLarge {
                what: format!("the {} pairs of find_all", answer.count),
                bytes: need,
                available,
                advice: answer.advice("pass out= to write them to a file"),
            });
        }
    }
    let mut out: Vec<[u64; 2]> = Vec::new();
    out.try_reserve_exact(answer.count as usize).map_err(|_| Error::TooLarge {
        what: format!("the {} pairs of find_all", answer.count),
        bytes: answer.count.saturating_mul(16),
        available: 0,
        advice: answer.advice("pass out= to write them to a file"),
    })?;
    let sorted = answer.each(&mut job, |batch| {
        out.extend(batch.iter().map(|&p| map_pair(p, ids)));
        Ok(())
    })?;
    if !sorted || ids.is_some_and(|ids| !increasing(ids)) {
        out.par_sort_unstable();
    }
    job.finish()?;
    Ok(out)
}

/// [`find_all`] written to `out` as a `.npy` array of shape `(P, 2)` and
/// dtype `uint64` (through a temporary file, renamed into place at the end);
/// returns `P`. The pairs are never all in memory.
pub fn find_all_to_file(source: &Source<'_>, ids: Option<&[u64]>, opts: &Options, control: &Control, out: &Path) -> Result<u64> {
    check_ids(source, ids, opts)?;
    let mut job = pairs(source, opts, control, Job::FindAll)?;
    let answer = Answer::new(&mut job, opts, control)?;
    let count = answer.count;
    let in_order = ids.is_none_or(increasing) && answer.in_order();
    // Room for the answer before any of it is written (and for its sorted
    // runs too when it is sorted again on disk, mostly beside it): a disk
    // filled for every other process after hours of work is worse than an
    // error now.
    let beside = out.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let bytes = count.saturating_mul(16).saturating_mul(if in_order { 1 } else { 2 });
    workdir::check_room_in(beside, bytes, "write to", &format!("the {count} pairs of find_all need"), &answer.advice("pass another out="))?;
    let mut writer = npy::NpyWriter::create(out, "<u8", &[count, 2], 8)?;
    control.side_step("writing the pairs".into(), count);
    if in_order {
        answer.each(&mut job, |batch| {
            control.check()?;
            let mapped: Vec<[u64; 2]> = batch.iter().map(|&p| map_pair(p, ids)).collect();
            control.advance(batch.len() as u64);
            writer.write(bytemuck::cast_slice(&mapped))
        })?;
    } else {
        // Ids out of order, or the pairs of copies: sorted again, on disk.
        let temporary = if job.dirs.work.is_none() { Some(Workdir::temporary(Some(beside))?) } else { None };
        let dir = job.dirs.work.as_ref().or(temporary.as_ref()).expect("one of them").path().to_path_buf();
        let mut sorter = ExternalSort::<[u64; 2]>::new(&dir, "ids", budget::Budget::new(opts.memory_limit).pair_bytes);
        answer.each(&mut job, |batch| {
            control.check()?;
            let mapped: Vec<[u64; 2]> = batch.iter().map(|&p| map_pair(p, ids)).collect();
            sorter.push(&mapped)
        })?;
        sorter.finish(|batch| {
            control.advance(batch.len() as u64);
            writer.write(bytemuck::cast_slice(batch))
        })?;
    }
    writer.finish()?;
    job.finish()?;
    Ok(count)
}

/// Pairs of copies past which an answer the caller did not ask for with
/// `copies` set gets a notice: 2^26 pairs, 1 GiB as an array.
pub const COPIES_NOTICE: u64 = if cfg!(test) { 64 } else { 1 << 26 };

/// Every pair within `k` as the candidates of a second pass over the items
/// in order (verified near-duplicates, [`crate::similar::StreamVerifier`]):
/// written to `pairs_out` as a 1-D uint64 `.npy` array of `higher << 32 |
/// lower`, ascending, so that each item's pairs with earlier items come
/// together and in item order; and to `last_out` a uint32 `.npy` array
/// giving for each item the last later item it pairs with (0 for none).
/// Both go through temporary files renamed into place. Returns the number
/// of pairs.
///
/// # Errors
/// As [`find_all`].
pub fn candidates_to_files(source: &Source<'_>, opts: &Options, control: &Control, pairs_out: &Path, last_out: &Path) -> Result<u64> {
    let mut job = pairs(source, opts, control, Job::Candidates)?;
    let count = job.count();
    let mut last: Vec<u32> = crate::mem::zeroed(source.len() as usize);
    let mut writer = npy::NpyWriter::create(pairs_out, "<u8", &[count], 8)?;
    control.side_step("writing the candidates".into(), count);
    runs::merge(std::mem::take(&mut job.runs), |batch| {
        control.check()?;
        for &p in batch {
            let (hi, lo) = ((p >> 32) as u32, p as u32 as usize);
            last[lo] = last[lo].max(hi);
        }
        control.advance(batch.len() as u64);
        writer.write_u64s(batch)
    })?;
    writer.finish()?;
    let mut writer = npy::NpyWriter::create(last_out, "<u4", &[last.len() as u64], 4)?;
    writer.write(bytemuck::cast_slice(&last))?;
    writer.finish()?;
    job.finish()?;
    Ok(count)
}

/// The keep mask of a dedup, as [`Index::add_unique`](crate::Index::add_unique)
/// answers for the items in order: an item is dropped when an item kept
/// before it is within `k`.
///
/// Copies of a fingerprint cost what one item costs: only first copies
/// are compared (and only their pairs kept); each other copy follows its
/// first ([`graph::CopySweep`]). The pairs of first copies are kept in
/// memory up to the budget, and in sorted runs on disk past it.
pub fn dedup(source: &Source<'_>, opts: &Options, control: &Control) -> Result<Dedup> {
    let mut job = pairs(source, opts, control, Job::Dedup)?;
    let swept = if job.dense.iter().all(|r| r.len() == 0) {
        let mut sweep = graph::DedupSweep::new(source.len() as usize);
        runs::merge(std::mem::take(&mut job.runs), |batch| sweep.feed(batch))?;
        sweep.finish()
    } else {
        let marks = dense::Dense::new(source.len() as usize);
        runs::merge(std::mem::take(&mut job.dense), |batch| {
            marks.mark(batch);
            Ok(())
        })?;
        let design = job.design.as_ref();
        let mut sweep = dense::DenseSweep::new(source, &marks, design, opts.k);
        runs::merge(std::mem::take(&mut job.runs), |batch| sweep.feed(batch))?;
        sweep.finish()?
    };
    let mut copies = graph::CopySweep::new(swept);
    runs::merge(std::mem::take(&mut job.links), |batch| copies.feed(batch))?;
    job.finish()?;
    Ok(copies.finish())
}

/// How [`clusters`] groups items.
pub use crate::cluster::ClusterMethod;

/// Clusters of at least `min_size` items as `(members, starts)`: cluster `c`
/// holds positions `members[starts[c]..starts[c + 1]]`, ascending, and
/// clusters are ordered by their first item. `Connected`: components of
/// the within-`k` graph; `Leader`: in position order each item joins the
/// earliest kept item within `k` (the dedup's), or leads a cluster.
pub fn clusters(source: &Source<'_>, method: ClusterMethod, min_size: usize, opts: &Options, control: &Control) -> Result<(Vec<u32>, Vec<u64>)> {
    if min_size < 1 {
        return Err(Error::invalid("min_size", "at least 1", min_size));
    }
    let roots = match method {
        ClusterMethod::Leader => graph::leader_roots(&dedup(source, opts, control)?),
        ClusterMethod::Connected => {
            // The pairs are joined as the tables find them; none is held.
            let components = Mutex::new(graph::Components::new(source.len() as usize));
            let job = run_tables(source, opts, control, Job::Clusters, Sink::Join(&components))?;
            job.finish()?;
            components.into_inner().unwrap_or_else(|e| e.into_inner()).roots()
        }
    };
    Ok(graph::clusters(roots, min_size))
}

#[inline]
fn map_pair(p: Pair, ids: Option<&[u64]>) -> [u64; 2] {
    let (a, b) = kernel::unpack(p);
    match ids {
        None => [u64::from(a), u64::from(b)],
        Some(ids) => {
            let (x, y) = (ids[a as usize], ids[b as usize]);
            [x.min(y), x.max(y)]
        }
    }
}

fn increasing(ids: &[u64]) -> bool {
    ids.par_windows(2).all(|w| w[0] < w[1])
}

/// Ids are one per item and distinct.
fn check_ids(source: &Source<'_>, ids: Option<&[u64]>, opts: &Options) -> Result<()> {
    let Some(ids) = ids else { return Ok(()) };
    if ids.len() as u64 != source.len() {
        return Err(Error::InvalidParameter {
            name: "ids",
            expected: "one id per fingerprint",
            found: format!("{} ids for {} fingerprints", ids.len(), source.len()),
        });
    }
    ids::check_distinct(ids, opts)
}

/// The pairs of a job, as sorted runs of packed pairs in its order, and the
/// links of copies to their first copy (in the same order) apart.
struct Pairs {
    runs: Vec<Run<Pair>>,
    links: Vec<Run<Pair>>,
    /// A dedup's items in dense groups, as `u64` (see `dense`).
    dense: Vec<Run<u64>>,
    design: Arc<Design>,
    dirs: Dirs,
}

impl Pairs {
    fn count(&self) -> u64 {
        self.runs.iter().map(Run::len).sum()
    }

    /// At the end of a job: its state is no longer needed.
    fn finish(self) -> Result<()> {
        let Pairs { runs, links, dense, dirs, .. } = self;
        drop((runs, links, dense));
        dirs.work.map_or(Ok(()), Workdir::finish)
    }
}

/// A job's directories: the work directory (the caller's, where a job
/// resumes, or a temporary one for spills), and a temporary one made the
/// first time pairs pass the memory budget without a work directory.
struct Dirs {
    work: Option<Workdir>,
    spill: std::sync::OnceLock<Workdir>,
    temp_parent: Option<PathBuf>,
}

impl Dirs {
    /// The work directory when the job can resume from it.
    fn restartable(&self) -> Option<&Workdir> {
        self.work.as_ref().filter(|w| w.restartable)
    }

    /// Where pairs past the budget go.
    fn for_spills(&self) -> Result<&Workdir> {
        if let Some(w) = &self.work {
            return Ok(w);
        }
        if let Some(w) = self.spill.get() {
            return Ok(w);
        }
        let made = Workdir::temporary(self.temp_parent.as_deref())?;
        // Two threads may both make one: the one not kept is removed on drop.
        Ok(self.spill.get_or_init(|| made))
    }
}

/// Every pair within `k`, given to `each` as `lower << 32 | higher`
/// position pairs in batches as the tables find them: each pair once, in no
/// particular order, none kept. For work that consumes the pairs as they
/// come (verified near-duplicates check each candidate at once); there is
/// nothing to resume, so `opts.workdir` only takes spills.
///
/// # Errors
/// As [`find_all`], and whatever `each` returns.
pub fn for_each_pair(source: &Source<'_>, opts: &Options, control: &Control, each: &(dyn Fn(Vec<u64>) -> Result<()> + Sync)) -> Result<()> {
    let opts = Options { workdir: None, temp_parent: opts.temp_parent.clone().or_else(|| opts.workdir.clone()), ..opts.clone() };
    run_tables(source, &opts, control, Job::FindAll, Sink::Stream(each))?.finish()
}

/// Runs every table of the job and returns its pairs.
fn pairs(source: &Source<'_>, opts: &Options, control: &Control, job: Job) -> Result<Pairs> {
    run_tables(source, opts, control, job, Sink::Keep)
}

#[cfg(test)]
mod tests;
