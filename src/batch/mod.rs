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
mod budget;
mod dense;
mod ids;
mod kernel;
pub mod npy;
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
pub use ids::check_distinct;
pub use source::{NpyFiles, Source};

use crate::cluster::graph;
use crate::tables::plan::Design;
use crate::{Error, Result};
use kernel::{Arena, Found, Items, Pair, TableKernel};
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
    let mut writer = npy::NpyWriter::create(out, "<u8", &[count, 2], 8)?;
    control.side_step("writing the pairs".into(), count);
    let in_order = ids.is_none_or(increasing) && answer.in_order();
    if in_order {
        answer.each(&mut job, |batch| {
            control.check()?;
            let mapped: Vec<[u64; 2]> = batch.iter().map(|&p| map_pair(p, ids)).collect();
            control.advance(batch.len() as u64);
            writer.write(bytemuck::cast_slice(&mapped))
        })?;
    } else {
        // Ids out of order, or the pairs of copies: sorted again, on disk.
        let beside = out.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
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

/// The pairs [`find_all`] answers, from a job's pairs of first copies and
/// its links: their number, known before any is made, and the pairs.
struct Answer {
    copies: Copies,
    /// Copies of each first copy that has some, `None` when there are none.
    groups: Option<Groups>,
    count: u64,
    /// What `copies="first"` would answer.
    first_count: u64,
}

impl Answer {
    fn new(job: &mut Pairs, opts: &Options, control: &Control) -> Result<Answer> {
        let copies = opts.copies.unwrap_or_default();
        let first_count = job.count() + job.links.iter().map(Run::len).sum::<u64>();
        if copies == Copies::First || job.links.iter().all(|r| r.len() == 0) {
            return Ok(Answer { copies, groups: None, count: first_count, first_count });
        }
        let groups = Groups::from_links(std::mem::take(&mut job.links))?;
        job.runs = runs::sorted_in_memory(std::mem::take(&mut job.runs));
        let mut count = groups.pairs_within();
        runs::merge_ref(&job.runs, |batch| {
            for &p in batch {
                let (a, b) = kernel::unpack(p);
                count += (1 + groups.of(a).len() as u64) * (1 + groups.of(b).len() as u64);
            }
            Ok(())
        })?;
        if opts.copies.is_none() && count - first_count >= COPIES_NOTICE {
            control.notice(format!(
                "copies of the same fingerprint make {} of the {count} pairs ({:.1} GB as an array); \
                 copies=\"first\" pairs each copy with the first copy of its fingerprint only ({first_count} pairs); \
                 pass copies=\"all\" to list them all without this notice",
                count - first_count,
                count as f64 * 16.0 / 1e9,
            ));
        }
        Ok(Answer { copies, groups: Some(groups), count, first_count })
    }

    /// Whether [`Self::each`] gives the pairs in order.
    fn in_order(&self) -> bool {
        self.groups.is_none()
    }

    fn advice(&self, other: &str) -> String {
        if self.copies == Copies::All && self.first_count < self.count {
            format!("{other}, or copies=\"first\" ({} pairs: each copy with the first copy of its fingerprint)", self.first_count)
        } else {
            other.to_string()
        }
    }

    /// Calls `out` with every pair, in batches; returns whether they came
    /// in order. The job's runs are read (and those in memory given up).
    fn each(&self, job: &mut Pairs, mut out: impl FnMut(&[Pair]) -> Result<()>) -> Result<bool> {
        let Some(groups) = &self.groups else {
            // First copies' pairs and the links: both sorted pairs.
            let mut all = std::mem::take(&mut job.runs);
            all.append(&mut job.links);
            runs::merge(all, out)?;
            return Ok(true);
        };
        let mut batch: Vec<Pair> = Vec::with_capacity(1 << 14);
        let mut push = |p: Pair, out: &mut dyn FnMut(&[Pair]) -> Result<()>| -> Result<()> {
            batch.push(p);
            if batch.len() == batch.capacity() {
                out(&batch)?;
                batch.clear();
            }
            Ok(())
        };
        for (first, copies) in groups.iter() {
            for (i, &a) in copies.iter().enumerate() {
                push(kernel::pack(first, a), &mut out)?;
                for &b in &copies[i + 1..] {
                    push(kernel::pack(a, b), &mut out)?;
                }
            }
        }
        runs::merge_ref(&job.runs, |pairs| {
            for &p in pairs {
                let (a, b) = kernel::unpack(p);
                let (ga, gb) = (groups.of(a), groups.of(b));
                for x in std::iter::once(&a).chain(ga) {
                    for y in std::iter::once(&b).chain(gb) {
                        push(kernel::pack(*x, *y), &mut out)?;
                    }
                }
            }
            Ok(())
        })?;
        out(&batch)?;
        Ok(false)
    }
}

/// The links of a job in memory: for each first copy that has copies,
/// their positions, ascending.
struct Groups {
    firsts: Vec<u32>,
    starts: Vec<usize>,
    copies: Vec<u32>,
}

impl Groups {
    /// From runs of links `first << 32 | copy`.
    fn from_links(links: Vec<Run<Pair>>) -> Result<Groups> {
        let mut g = Groups { firsts: Vec::new(), starts: Vec::new(), copies: Vec::new() };
        runs::merge(links, |batch| {
            for &link in batch {
                let (first, copy) = kernel::unpack(link);
                if g.firsts.last() != Some(&first) {
                    g.firsts.push(first);
                    g.starts.push(g.copies.len());
                }
                g.copies.push(copy);
            }
            Ok(())
        })?;
        g.starts.push(g.copies.len());
        Ok(g)
    }

    /// The copies of `first` (none for most items).
    #[inline]
    fn of(&self, first: u32) -> &[u32] {
        match self.firsts.binary_search(&first) {
            Ok(i) => &self.copies[self.starts[i]..self.starts[i + 1]],
            Err(_) => &[],
        }
    }

    fn iter(&self) -> impl Iterator<Item = (u32, &[u32])> + '_ {
        self.firsts.iter().enumerate().map(|(i, &f)| (f, &self.copies[self.starts[i]..self.starts[i + 1]]))
    }

    /// Pairs among the copies of each fingerprint, the first included.
    fn pairs_within(&self) -> u64 {
        self.iter().map(|(_, c)| (c.len() as u64 + 1) * c.len() as u64 / 2).sum()
    }
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

/// A table's `of` units of the job, shared among its steps by their work:
/// the shares of steps worth `work` in all sum to `of` exactly.
struct Shares {
    of: u64,
    work: u64,
    taken: u64,
}

impl Shares {
    fn take(&mut self, units: u64) -> u64 {
        let at = |w: u64| (u128::from(self.of) * u128::from(w.min(self.work)) / u128::from(self.work.max(1))) as u64;
        let share = at(self.taken + units) - at(self.taken);
        self.taken += units;
        share
    }
}

/// Runs every table of the job, its pairs going to `sink`.
fn run_tables(source: &Source<'_>, opts: &Options, control: &Control, job: Job, sink: Sink<'_>) -> Result<Pairs> {
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
    // The job's work as the caller sees it: every fingerprint read once,
    // then once through each table, whatever the parts and spills.
    control.begin(n.saturating_mul(tables as u64 + 1));
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

    let identity = format!("rsimhash batch job, version 1\njob {job:?}\nk {}\ndesign {:?}\nitems {n}\ndigest {digest:016x}\n", opts.k, design.levels());
    let mut workdir = match &opts.workdir {
        Some(path) => Some(Workdir::open(path, &identity)?),
        None => None,
    };
    if plans.iter().any(|(_, spill)| *spill) {
        // A spilled table's items are on disk at once (12 bytes each), and
        // every table's pairs stay until the end.
        ensure_dir(&mut workdir, opts)?.check_room(ITEM_BYTES * n + (64 << 20))?;
    }
    let dirs = Dirs { work: workdir, spill: std::sync::OnceLock::new(), temp_parent: opts.temp_parent.clone() };
    // A dedup's answer is not its pairs: past the budget they go to disk
    // even without a work directory. Joined pairs are few; find_all's are
    // its answer, held in memory anyway unless they go to a file.
    let spill_always = job == Job::Dedup;
    let collapse = job.collapses() && !matches!(sink, Sink::Stream(_));
    let mut arena = Arena::default();
    let (mut runs, mut links, mut dense) = (Vec::new(), Vec::new(), Vec::new());
    for (t, plan) in plans.iter().enumerate() {
        control.check()?;
        if let Some(w) = &dirs.work {
            if let Some(done) = w.done(t)? {
                let mut kinds: [Vec<Run<Pair>>; 3] = Default::default();
                for run in done {
                    kinds[TablePairs::kind_of(&run)].push(Run::File(run));
                }
                let [p, l, d] = kinds;
                if let Sink::Join(components) = sink {
                    // A resumed job's clusters: the joins of finished tables again.
                    let mut c = components.lock().unwrap_or_else(|e| e.into_inner());
                    runs::merge(p.into_iter().chain(l).collect(), |batch| c.feed(batch))?;
                } else {
                    runs.extend(p);
                    links.extend(l);
                    dense.extend(d);
                }
                control.skip(format!("table {} of {tables} (done before)", t + 1), n);
                continue;
            }
            w.clear_table(t)?;
        }
        let guard = workdir::TableGuard::new(dirs.work.as_ref(), t);
        let dense_groups = match (job, sink) {
            (Job::Dedup, _) => kernel::Dense::Leave,
            (Job::Clusters, Sink::Join(_)) => kernel::Dense::Join,
            _ => kernel::Dense::Compare,
        };
        let kt = TableKernel::with_dense(&design, t, opts.k, collapse, dense_groups, bucket_bits);
        let kinds = TablePairs::KINDS.map(|kind| TablePairs::new(t, kind, job.by_higher(), budget.pair_bytes));
        let emit = |f: Found| match sink {
            Sink::Stream(each) => each(f.pairs),
            Sink::Keep => {
                let [found, found_links, found_dense] = &kinds;
                if !f.links.is_empty() {
                    found_links.add(f.links, &dirs, spill_always)?;
                }
                if !f.dense.is_empty() {
                    found_dense.add(f.dense.into_iter().map(u64::from).collect(), &dirs, spill_always)?;
                }
                found.add(f.pairs, &dirs, spill_always)
            }
            Sink::Join(components) => {
                let joined: Vec<Pair> = {
                    let mut c = components.lock().unwrap_or_else(|e| e.into_inner());
                    f.pairs.into_iter().chain(f.links).filter(|&q| c.join((q >> 32) as u32, q as u32)).collect()
                };
                match dirs.restartable() {
                    Some(_) => kinds[0].add(joined, &dirs, false),
                    None => Ok(()),
                }
            }
        };
        let (parts, spill) = plan;
        let name = |what: String| format!("table {} of {tables}{what}", t + 1);
        // Each step of the table takes its part of the table's n units.
        let mut shares = Shares { of: n, work: work(plan), taken: 0 };
        if *spill {
            let dir = dirs.work.as_ref().expect("made above for spilling jobs");
            for (g, group) in parts.chunks(spill::MAX_FILES).enumerate() {
                let first = g * spill::MAX_FILES;
                control.step_of(name(": spilling".into()), shares.take(n), n, n);
                let buffer = (budget.pair_bytes / group.len()).clamp(1 << 12, 1 << 20);
                let spilled = spill::write(&kt, t, source, group, first, dir, buffer, control)?;
                for (p, (range, path)) in group.iter().zip(&spilled.files).enumerate() {
                    let len: u64 = hist[t][range.clone()].iter().sum();
                    control.step_of(name(format!(", part {} of {}", first + p + 1, parts.len())), shares.take(2 * len), 2 * len, len);
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
                control.step_of(name(part), shares.take(n + len), n + len, len);
                kt.run_part(Items::Source(source), &hist[t], range.clone(), &mut arena, control, &emit)?;
            }
        }
        let [found, found_links, found_dense] = kinds;
        let table_runs = found.finish(&dirs)?;
        let table_links = found_links.finish(&dirs)?;
        let table_dense = found_dense.finish(&dirs)?;
        if let Some(w) = dirs.restartable() {
            let files: Vec<RunFile> = table_runs
                .iter()
                .chain(&table_links)
                .chain(&table_dense)
                .filter_map(|r| match r {
                    Run::File(f) => Some(f.clone()),
                    Run::Memory(m) if m.is_empty() => None,
                    Run::Memory(_) => unreachable!("a restartable job writes every run"),
                })
                .collect();
            w.mark_done(t, &files)?;
        }
        guard.done();
        if !matches!(sink, Sink::Join(_)) {
            runs.extend(table_runs);
            links.extend(table_links.into_iter().filter(|r| r.len() > 0));
            dense.extend(table_dense.into_iter().filter(|r| r.len() > 0));
        }
    }
    Ok(Pairs { runs, links, dense, design, dirs })
}

/// The work directory, made (temporary) when the job has none yet.
fn ensure_dir<'w>(workdir: &'w mut Option<Workdir>, opts: &Options) -> Result<&'w Workdir> {
    if workdir.is_none() {
        *workdir = Some(Workdir::temporary(opts.temp_parent.as_deref())?);
    }
    Ok(workdir.as_ref().expect("just made"))
}

/// The pairs (or links) of one table as they come from the kernel's tasks:
/// in memory, sorted into run files when they pass the budget.
struct TablePairs {
    t: usize,
    /// What the run files' names hold after the table's number: "" for
    /// pairs, "l" for links, "d" for dense items (see [`Found`]).
    kind: &'static str,
    /// Pairs and links are turned to `higher << 32 | lower`.
    by_higher: bool,
    budget: usize,
    state: Mutex<(Vec<Pair>, Vec<Run<Pair>>)>,
}

impl TablePairs {
    const KINDS: [&'static str; 3] = ["", "l", "d"];

    fn new(t: usize, kind: &'static str, by_higher: bool, budget: usize) -> TablePairs {
        let by_higher = by_higher && kind != "d";
        TablePairs { t, kind, by_higher, budget: budget / 8, state: Mutex::new((Vec::new(), Vec::new())) }
    }

    /// What a finished table's run file holds: its place in [`Self::KINDS`].
    fn kind_of(run: &RunFile) -> usize {
        let name = run.path.file_name().and_then(|n| n.to_str()).unwrap_or_default();
        match name.get(4..6) {
            Some("-l") => 1,
            Some("-d") => 2,
            _ => 0,
        }
    }

    fn run_path(&self, dir: &Workdir, n: usize) -> PathBuf {
        dir.file(&format!("t{:03}-{}{:03}.pairs", self.t, self.kind, n))
    }

    /// `spill`: past the budget, to disk even without a work directory.
    fn add(&self, mut pairs: Vec<Pair>, dirs: &Dirs, spill: bool) -> Result<()> {
        if self.by_higher {
            pairs.iter_mut().for_each(|p| *p = p.rotate_left(32));
        }
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        state.0.extend(pairs);
        if state.0.len() > self.budget && (spill || dirs.work.is_some()) {
            // Too many for memory: a sorted run on disk (otherwise kept, as
            // the answer itself must fit in memory then).
            let dir = dirs.for_spills()?;
            let mut full = std::mem::take(&mut state.0);
            full.par_sort_unstable();
            let path = self.run_path(dir, state.1.len());
            let run = runs::write_run(&path, &full)?;
            state.1.push(Run::File(run));
        }
        Ok(())
    }

    /// The table's runs: written to the work directory when the job is restartable.
    fn finish(self, dirs: &Dirs) -> Result<Vec<Run<Pair>>> {
        let (mut last, mut runs) = std::mem::take(&mut *self.state.lock().unwrap_or_else(|e| e.into_inner()));
        last.par_sort_unstable();
        match dirs.restartable() {
            Some(w) if !last.is_empty() || runs.is_empty() && self.kind.is_empty() => {
                let path = self.run_path(w, runs.len());
                runs.push(Run::File(runs::write_run(&path, &last)?));
            }
            _ => runs.push(Run::Memory(last)),
        }
        Ok(runs)
    }
}

#[cfg(test)]
mod tests;
