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

mod budget;
mod control;
pub(crate) mod graph;
mod ids;
mod kernel;
pub mod npy;
mod runs;
mod source;
mod spill;
mod workdir;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use rayon::prelude::*;

pub use budget::{choose_design, ITEM_BYTES};
pub use control::{Control, Progress};
pub use graph::Dedup;
pub use ids::check_distinct;
pub use source::{NpyFiles, Source};

use crate::plan::Design;
use crate::{Error, Result};
use kernel::{Arena, Items, Pair, TableKernel};
use runs::{ExternalSort, Run, RunFile};
use workdir::Workdir;

/// The most items a job takes: positions are `u32`, and one value is kept free.
pub const MAX_ITEMS: u64 = u32::MAX as u64 - 1;

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
}

impl Options {
    pub fn new(k: u32) -> Options {
        Options { k, design: None, memory_limit: 8 << 30, workdir: None, temp_parent: None, spill: None }
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

    /// Whether copies of a fingerprint may be collapsed onto their first:
    /// every pair is needed for [`find_all`], not for the others.
    fn collapses(self) -> bool {
        matches!(self, Job::Dedup | Job::Clusters)
    }
}

/// Every unordered pair of distinct items within `k`, as `[a, b]` with
/// `a < b`, sorted: positions, or `ids[position]` when ids are given (as
/// [`Index::find_all`](crate::Index::find_all) answers for those ids).
///
/// # Errors
/// [`Error::BadInput`] for more than [`MAX_ITEMS`] items, ids of another
/// length or given twice; [`Error::Io`] when the source or the work
/// directory cannot be read or written; [`Error::Interrupted`] when cancelled.
pub fn find_all(source: &Source<'_>, ids: Option<&[u64]>, opts: &Options, control: &Control) -> Result<Vec<[u64; 2]>> {
    check_ids(source, ids, opts)?;
    let job = pairs(source, opts, control, Job::FindAll)?;
    let mut out = crate::mem::vec_with_capacity(job.count() as usize);
    let runs = job.runs;
    runs::merge(runs, |batch| {
        out.extend(batch.iter().map(|&p| map_pair(p, ids)));
        Ok(())
    })?;
    if ids.is_some_and(|ids| !increasing(ids)) {
        out.par_sort_unstable();
    }
    finish(job.workdir)?;
    Ok(out)
}

/// [`find_all`] written to `out` as a `.npy` array of shape `(P, 2)` and
/// dtype `uint64` (through a temporary file, renamed into place at the end);
/// returns `P`. The pairs are never all in memory.
pub fn find_all_to_file(source: &Source<'_>, ids: Option<&[u64]>, opts: &Options, control: &Control, out: &Path) -> Result<u64> {
    check_ids(source, ids, opts)?;
    let job = pairs(source, opts, control, Job::FindAll)?;
    let count = job.count();
    let mut writer = npy::NpyWriter::create(out, "<u8", &[count, 2], 8)?;
    control.step("writing the pairs".into(), count);
    let runs = job.runs;
    match ids {
        Some(ids) if !increasing(ids) => {
            // Ids out of order: the pairs are sorted again, by id.
            let beside = out.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
            let temporary = if job.workdir.is_none() { Some(Workdir::temporary(Some(beside))?) } else { None };
            let dir = job.workdir.as_ref().or(temporary.as_ref()).expect("one of them").path().to_path_buf();
            let mut sorter = ExternalSort::<[u64; 2]>::new(&dir, "ids", budget::Budget::new(opts.memory_limit).pair_bytes);
            runs::merge(runs, |batch| {
                let mapped: Vec<[u64; 2]> = batch.iter().map(|&p| map_pair(p, Some(ids))).collect();
                sorter.push(&mapped)
            })?;
            sorter.finish(|batch| {
                control.advance_step(batch.len() as u64);
                writer.write(bytemuck::cast_slice(batch))
            })?;
        }
        _ => runs::merge(runs, |batch| {
            control.check()?;
            let mapped: Vec<[u64; 2]> = batch.iter().map(|&p| map_pair(p, ids)).collect();
            control.advance_step(batch.len() as u64);
            writer.write(bytemuck::cast_slice(&mapped))
        })?,
    }
    writer.finish()?;
    finish(job.workdir)?;
    Ok(count)
}

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
    let job = pairs(source, opts, control, Job::Candidates)?;
    let count = job.count();
    let mut last: Vec<u32> = crate::mem::zeroed(source.len() as usize);
    let mut writer = npy::NpyWriter::create(pairs_out, "<u8", &[count], 8)?;
    control.step("writing the candidates".into(), count);
    runs::merge(job.runs, |batch| {
        control.check()?;
        for &p in batch {
            let (hi, lo) = ((p >> 32) as u32, p as u32 as usize);
            last[lo] = last[lo].max(hi);
        }
        control.advance_step(batch.len() as u64);
        writer.write_u64s(batch)
    })?;
    writer.finish()?;
    let mut writer = npy::NpyWriter::create(last_out, "<u4", &[last.len() as u64], 4)?;
    writer.write(bytemuck::cast_slice(&last))?;
    writer.finish()?;
    finish(job.workdir)?;
    Ok(count)
}

/// The keep mask of a dedup, as [`Index::add_unique`](crate::Index::add_unique)
/// answers for the items in order: an item is dropped when an item kept
/// before it is within `k`.
pub fn dedup(source: &Source<'_>, opts: &Options, control: &Control) -> Result<Dedup> {
    let job = pairs(source, opts, control, Job::Dedup)?;
    let mut sweep = graph::DedupSweep::new(source.len() as usize);
    let runs = job.runs;
    runs::merge(runs, |batch| sweep.feed(batch))?;
    finish(job.workdir)?;
    Ok(sweep.finish())
}

/// How [`clusters`] groups items.
pub use crate::index::ClusterMethod;

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
            let job = pairs(source, opts, control, Job::Clusters)?;
            let mut components = graph::Components::new(source.len() as usize);
            let runs = job.runs;
            for run in runs {
                runs::merge(vec![run], |batch| components.feed(batch))?;
            }
            finish(job.workdir)?;
            components.roots()
        }
    };
    Ok(graph::clusters(roots, min_size))
}

fn finish(workdir: Option<Workdir>) -> Result<()> {
    workdir.map_or(Ok(()), Workdir::finish)
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

/// The pairs of a job, as sorted runs of packed pairs in its order.
struct Pairs {
    runs: Vec<Run<Pair>>,
    workdir: Option<Workdir>,
}

impl Pairs {
    fn count(&self) -> u64 {
        self.runs.iter().map(Run::len).sum()
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
    let job = run_tables(source, &opts, control, Job::FindAll, Some(each))?;
    finish(job.workdir)
}

/// Runs every table of the job and returns its pairs.
fn pairs(source: &Source<'_>, opts: &Options, control: &Control, job: Job) -> Result<Pairs> {
    run_tables(source, opts, control, job, None)
}

/// Runs every table of the job: its pairs are kept in sorted runs, or
/// handed to `stream` as they come (then none are kept).
fn run_tables(source: &Source<'_>, opts: &Options, control: &Control, job: Job, stream: Option<&(dyn Fn(Vec<u64>) -> Result<()> + Sync)>) -> Result<Pairs> {
    let n = source.len();
    if n > MAX_ITEMS {
        return Err(Error::bad_input(
            source.describe(),
            format!("holds {n} fingerprints; a batch job takes at most 2**32-2 (split the corpus, or use rsimhash.spark)"),
        ));
    }
    let budget = budget::Budget::new(opts.memory_limit);
    let design = match &opts.design {
        Some(d) => Arc::clone(d),
        None => Arc::new(choose_design(opts.k, n, n > budget.part_items * REREAD_PARTS as u64)?),
    };
    if design.k() < opts.k {
        return Err(Error::invalid("k", "at most the design's k", opts.k));
    }
    let tables = design.tables().len();
    control.set_total(n);
    control.step("reading the fingerprints".into(), n);
    let bucket_bits = kernel::bucket_bits(n, budget.part_items);
    let (hist, digest) = kernel::histograms(&design, bucket_bits, source, control)?;

    // Parts and spills of every table, and the job's total work.
    let in_memory = matches!(source, Source::Memory(_));
    let reread = if in_memory { REREAD_PARTS_IN_MEMORY } else { REREAD_PARTS };
    let plans: Vec<(Vec<std::ops::Range<usize>>, bool)> = hist
        .iter()
        .map(|h| {
            let parts = budget::parts(h, budget.part_items);
            let spill = parts.len() > 1 && opts.spill.unwrap_or(parts.len() > reread);
            (parts, spill)
        })
        .collect();
    let work = |(parts, spill): &(Vec<std::ops::Range<usize>>, bool)| {
        if *spill {
            parts.len().div_ceil(spill::MAX_FILES) as u64 * n + 2 * n
        } else {
            parts.len() as u64 * n + n
        }
    };
    control.set_total(n + plans.iter().map(work).sum::<u64>());

    let identity = format!(
        "rsimhash batch job, version 1\njob {job:?}\nk {}\ndesign {:?}\nitems {n}\ndigest {digest:016x}\n",
        opts.k,
        design.levels()
    );
    let mut workdir = match &opts.workdir {
        Some(path) => Some(Workdir::open(path, &identity)?),
        None => None,
    };
    if plans.iter().any(|(_, spill)| *spill) {
        // A spilled table's items are on disk at once (12 bytes each), and
        // every table's pairs stay until the end.
        ensure_dir(&mut workdir, opts)?.check_room(ITEM_BYTES * n + (64 << 20))?;
    }
    let workdir = workdir;
    let mut arena = Arena::default();
    let mut runs = Vec::new();
    for (t, plan) in plans.iter().enumerate() {
        control.check()?;
        if let Some(w) = &workdir {
            if let Some(done) = w.done(t)? {
                runs.extend(done.into_iter().map(Run::File));
                control.skip(work(plan));
                continue;
            }
            w.clear_table(t)?;
        }
        let guard = workdir::TableGuard::new(workdir.as_ref(), t);
        let kt = TableKernel::new(&design, t, opts.k, job.collapses(), bucket_bits);
        let found = TablePairs::new(t, job.by_higher(), budget.pair_bytes);
        let emit = |p: Vec<Pair>| match stream {
            Some(each) => each(p),
            None => found.add(p, &workdir),
        };
        let (parts, spill) = plan;
        let name = |what: String| format!("table {} of {tables}{what}", t + 1);
        if *spill {
            let dir = workdir.as_ref().expect("made above for spilling jobs");
            for (g, group) in parts.chunks(spill::MAX_FILES).enumerate() {
                let first = g * spill::MAX_FILES;
                control.step(name(": spilling".into()), n);
                let buffer = (budget.pair_bytes / group.len()).clamp(1 << 12, 1 << 20);
                let spilled = spill::write(&kt, t, source, group, first, dir, buffer, control)?;
                for (p, (range, path)) in group.iter().zip(&spilled.files).enumerate() {
                    let len: u64 = hist[t][range.clone()].iter().sum();
                    control.step(name(format!(", part {} of {}", first + p + 1, parts.len())), 2 * len);
                    let file = std::fs::File::open(path).map_err(Error::io("open", path))?;
                    let read = |start: u64, k: &mut Vec<u64>, pos: &mut Vec<u32>| spill::read(&file, path, len, start, k, pos);
                    kt.run_part(Items::Spilled { len, read: &read }, &hist[t], range.clone(), &mut arena, control, &emit)?;
                    drop(file);
                    std::fs::remove_file(path).map_err(Error::io("remove", path))?;
                }
            }
        } else {
            for (p, range) in parts.iter().enumerate() {
                let len: u64 = hist[t][range.clone()].iter().sum();
                let part = if parts.len() > 1 { format!(", part {} of {}", p + 1, parts.len()) } else { String::new() };
                control.step(name(part), n + len);
                kt.run_part(Items::Source(source), &hist[t], range.clone(), &mut arena, control, &emit)?;
            }
        }
        let table_runs = found.finish(&workdir)?;
        if let Some(w) = workdir.as_ref().filter(|w| w.restartable) {
            let files: Vec<RunFile> = table_runs
                .iter()
                .map(|r| match r {
                    Run::File(f) => f.clone(),
                    Run::Memory(_) => unreachable!("a restartable job writes every run"),
                })
                .collect();
            w.mark_done(t, &files)?;
        }
        guard.done();
        runs.extend(table_runs);
    }
    Ok(Pairs { runs, workdir })
}

/// The work directory, made (temporary) when the job has none yet.
fn ensure_dir<'w>(workdir: &'w mut Option<Workdir>, opts: &Options) -> Result<&'w Workdir> {
    if workdir.is_none() {
        *workdir = Some(Workdir::temporary(opts.temp_parent.as_deref())?);
    }
    Ok(workdir.as_ref().expect("just made"))
}

/// The pairs of one table as they come from the kernel's tasks: in memory,
/// sorted into run files when they pass the budget.
struct TablePairs {
    t: usize,
    by_higher: bool,
    budget: usize,
    state: Mutex<(Vec<Pair>, Vec<Run<Pair>>)>,
}

impl TablePairs {
    fn new(t: usize, by_higher: bool, budget: usize) -> TablePairs {
        TablePairs { t, by_higher, budget: budget / 8, state: Mutex::new((Vec::new(), Vec::new())) }
    }

    fn add(&self, mut pairs: Vec<Pair>, workdir: &Option<Workdir>) -> Result<()> {
        if self.by_higher {
            pairs.iter_mut().for_each(|p| *p = p.rotate_left(32));
        }
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        state.0.extend(pairs);
        if state.0.len() > self.budget {
            // Too many for memory: a sorted run on disk (in the job's work
            // directory when it has one; otherwise kept, as the answer
            // itself must fit in memory then).
            if let Some(w) = workdir {
                let mut full = std::mem::take(&mut state.0);
                full.par_sort_unstable();
                let path = w.file(&format!("t{:03}-{:03}.pairs", self.t, state.1.len()));
                let run = runs::write_run(&path, &full)?;
                state.1.push(Run::File(run));
            }
        }
        Ok(())
    }

    /// The table's runs: written to the work directory when the job is restartable.
    fn finish(self, workdir: &Option<Workdir>) -> Result<Vec<Run<Pair>>> {
        let (mut last, mut runs) = self.state.into_inner().unwrap_or_else(|e| e.into_inner());
        last.par_sort_unstable();
        match workdir.as_ref().filter(|w| w.restartable) {
            Some(w) => {
                let path = w.file(&format!("t{:03}-{:03}.pairs", self.t, runs.len()));
                runs.push(Run::File(runs::write_run(&path, &last)?));
            }
            None => runs.push(Run::Memory(last)),
        }
        Ok(runs)
    }
}


#[cfg(test)]
mod tests;
