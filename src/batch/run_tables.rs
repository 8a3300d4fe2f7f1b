//! The loop of a job over its tables: each table's items scattered,
//! sorted and scanned by the kernel, in parts under a memory budget (read
//! again or spilled), its steps' shares of the progress, and its pairs kept
//! in memory or sorted into run files, and in the work directory once the
//! table is done so that a job started again resumes after it.

use super::*;

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
pub(super) fn run_tables(source: &Source<'_>, opts: &Options, control: &Control, job: Job, sink: Sink<'_>) -> Result<Pairs> {
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
