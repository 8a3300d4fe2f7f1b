//! Adding and removing items: ids assigned or checked, items buffered and
//! merged into runs (the design re-planned as the index grows), removals
//! marked dead, and `add_unique`, which adds only what is not within `k`
//! of an item stored or added before it.

use super::*;

impl Index {
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

    pub(super) fn check_room(&self, n: usize) -> Result<()> {
        if self.live.saturating_add(n) > MAX_ITEMS {
            return Err(Error::InvalidParameter {
                name: "fps",
                expected: "at most 2**32-2 items in one index (split the corpus over several)",
                found: format!("{} stored + {n} more", self.live),
            });
        }
        self.room_for(n)
    }

    pub(super) fn check_batch(n: usize) -> Result<()> {
        if n > MAX_BATCH {
            return Err(Error::invalid("fps", "at most 2**32-1 queries per call (split the batch)", n));
        }
        Ok(())
    }

    pub(super) fn assign_ids(&mut self, n: usize, ids: Option<&[u64]>) -> Result<Vec<u64>> {
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
    pub(super) fn id_map(&mut self) -> &mut HashMap<u64, u64> {
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

    pub(super) fn insert(&mut self, items: Vec<(u64, u64)>) {
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
    pub(super) fn replan(&mut self) -> bool {
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
    pub(super) fn replan_runs(&mut self) {
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
    pub(super) fn run_layout(&self, items: usize) -> Layout {
        match self.layout {
            Layout::Packed(_) if items * 4 < self.live => Layout::Raw,
            layout => layout,
        }
    }

    /// Merges the newest run into the one before while it is at least as
    /// large, and rebuilds runs that are a quarter dead.
    pub(super) fn rebalance(&mut self) {
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

    /// For each fingerprint in order: if a stored item or an earlier new one
    /// of this call is within `k`, it is a duplicate and `matched` is the
    /// smallest such id; otherwise it is new, is stored, and `matched` is
    /// its own id. Default ids are
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
    pub(super) fn add_unique_ids(&mut self, fps: &[u64], ids: Option<&[u64]>, k: Option<u32>) -> Result<(Vec<bool>, Vec<u64>)> {
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

        // 4. Store the new ones; a new input's `matched` is its own id (as
        // for string ids and `SimilarIndex::add_unique`).
        for i in (0..n).filter(|&i| is_new[i]) {
            matched[i] = ids[i];
        }
        let new_items: Vec<(u64, u64)> = (0..n).filter(|&i| is_new[i]).map(|i| (fps[i], ids[i])).collect();
        self.insert(new_items);
        self.intact((is_new, matched))
    }

    /// For each input that is not new, the smallest of `matched` (its
    /// smallest stored match, `u64::MAX` for none) and the ids of the new
    /// inputs before it within `k`.
    pub(super) fn smallest_new_before(&self, fps: &[u64], ids: &[u64], is_new: &[bool], k: u32, matched: &mut [u64]) {
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
