//! Queries of a built index: single and batch queries across its runs,
//! `find_all` (by the runs' own pairs or, when faster, by the batch kernel
//! over the index's items), clusters and the list of items.

use super::*;

impl Index {
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
    pub(super) fn with_batch_runs<R>(&self, f: impl FnOnce(&[&Run]) -> R) -> R {
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
    pub(super) fn kernel_is_faster(&self) -> bool {
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
    pub(super) fn find_all_by_kernel(&self, k: u32, copies: Copies) -> Result<Vec<[u64; 2]>> {
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
    pub fn items_by_id(&self) -> (Vec<u64>, Vec<u64>) {
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
}
