//! Routes: the reduce task each item of each table goes to, planned from
//! the sizes of the tables' buckets so that no task holds more than a set
//! number of distinct values, however skewed the keys.
//!
//! A table's permuted keys are cut by their top `fine` bits (at most the
//! table's prefix and [`MAX_BUCKET_BITS`]) into fine buckets; a count pass
//! ([`ShuffleTables::histogram`], the distinct values of each map task's
//! chunk, summed) sizes them, and [`ShuffleTables::plan`] makes units of
//! them: runs of consecutive fine buckets of one table holding at most
//! `target` distinct values together. A bucket holding more than `target`
//! is a unit of its own; one holding more than `cap` (a group of values
//! sharing the whole prefix, or a fine bucket the 16 bits could not cut
//! further) is split into `m` cells by a hash of the key, and its tasks are
//! the cell pairs `(i, j)`, `i <= j`: each holds two cells (about `cap`)
//! and reports the pairs within cell `i` (`i == j`) or across the two.
//!
//! Invariants: a unit is a range of keys whose ends are multiples of
//! `2^(64 - prefix)`, so a group sharing the prefix never spans units and
//! a unit's task sees each of its groups whole (a cell task: whole as far
//! as its two cells go); every copy of a value has the same key, so it
//! lands in the same unit and cell, and every task that sees a value sees
//! all its copies. Sizes only steer memory: any routes of the right shape
//! give the same pairs.

use crate::{Error, Result};

use super::{ShuffleTables, MAX_BUCKET_BITS};

/// Where a table's items go: each fine bucket's unit, each unit's cells.
#[derive(Clone, Debug)]
pub struct Routes {
    /// Fine bits of each table.
    fine: Vec<u32>,
    /// Where each table's fine buckets start in `unit_of` (one more).
    offsets: Vec<usize>,
    /// The unit of each fine bucket, the tables one after another.
    unit_of: Vec<u32>,
    /// The cells of each unit (1: the unit is one task).
    cells: Vec<u32>,
    /// The table of each unit.
    unit_table: Vec<u32>,
    /// The first task of each unit (one more: the task count).
    first_task: Vec<u32>,
}

/// What one reduce task holds: table `table`'s unit `unit`, cells `i` and
/// `j` of its `cells` (0, 0 of 1 when the unit is not split).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Task {
    pub table: usize,
    pub unit: u32,
    pub cells: u32,
    pub i: u32,
    pub j: u32,
}

/// The most cells a unit is split into (about 2^23 tasks): 2^22 items
/// a cell would take a group of 2^33 distinct values.
pub const MAX_CELLS: u32 = 1 << 12;

/// Cell pairs of `m` cells: `m (m + 1) / 2`.
fn cell_pairs(m: u32) -> u64 {
    let m = u64::from(m);
    m * (m + 1) / 2
}

impl Routes {
    /// Reduce tasks in all.
    pub fn tasks(&self) -> u32 {
        *self.first_task.last().expect("one more than the units")
    }

    pub fn units(&self) -> usize {
        self.cells.len()
    }

    /// The fine bits of each table.
    pub fn fine(&self) -> &[u32] {
        &self.fine
    }

    /// The unit of each fine bucket, table after table.
    pub fn unit_of(&self) -> &[u32] {
        &self.unit_of
    }

    /// The cells of each unit.
    pub fn cells(&self) -> &[u32] {
        &self.cells
    }

    /// The unit of permuted key `key` in table `t`.
    #[inline]
    pub(super) fn unit(&self, t: usize, key: u64) -> u32 {
        self.unit_of[self.offsets[t] + key.checked_shr(64 - self.fine[t]).unwrap_or(0) as usize]
    }

    /// The cell of a key in a unit of `m` cells: a hash, so that a dense
    /// group's values spread evenly whatever bits they share.
    #[inline]
    pub(super) fn cell(key: u64, m: u32) -> u32 {
        (crate::job::mix(key) % u64::from(m)) as u32
    }

    /// The task of cells `i <= j` of unit `u`.
    #[inline]
    pub(super) fn task_of(&self, u: u32, i: u32, j: u32) -> u32 {
        let (m, i) = (u64::from(self.cells[u as usize]), u64::from(i));
        // Row i of the triangle starts after rows 0..i, of m, m - 1, ... cells.
        let row = i * m - i * i.saturating_sub(1) / 2;
        self.first_task[u as usize] + (row + u64::from(j) - i) as u32
    }

    /// The first and one past the last task of table `t`.
    pub(super) fn table_tasks(&self, t: usize) -> std::ops::Range<u32> {
        let first = self.unit_of[self.offsets[t]];
        let last = self.unit_of[self.offsets[t + 1] - 1];
        self.first_task[first as usize]..self.first_task[last as usize + 1]
    }

    /// What task `task` holds.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] for a task past the last.
    pub fn task(&self, task: u32) -> Result<Task> {
        if task >= self.tasks() {
            return Err(Error::invalid("task", "a task of the routes", format!("{task} of {}", self.tasks())));
        }
        let unit = self.first_task.partition_point(|&f| f <= task) - 1;
        let m = self.cells[unit];
        let mut left = task - self.first_task[unit];
        let mut i = 0;
        while left >= m - i {
            left -= m - i;
            i += 1;
        }
        Ok(Task { table: self.unit_table[unit] as usize, unit: unit as u32, cells: m, i, j: i + left })
    }

    /// The distinct values of each task, about, from the fine buckets'
    /// counts (`hist`, as [`ShuffleTables::histogram`] lays them out): a
    /// cell task holds its share of its unit's.
    pub fn sizes(&self, hist: &[u64]) -> Vec<u64> {
        let mut unit = vec![0u64; self.units()];
        for (&u, &c) in self.unit_of.iter().zip(hist) {
            unit[u as usize] += c;
        }
        let mut out = Vec::with_capacity(self.tasks() as usize);
        for (&c, &m) in unit.iter().zip(&self.cells) {
            for i in 0..m {
                out.extend((i..m).map(|j| c.div_ceil(u64::from(m)) * if i == j { 1 } else { 2 }));
            }
        }
        out
    }
}

impl ShuffleTables {
    /// The fine bits of table `t` when a job asks for `bits`: at most its
    /// prefix (a group never spans two fine buckets) and 16.
    pub fn fine_bits(&self, t: usize, bits: u32) -> u32 {
        bits.min(self.prefix(t)).min(MAX_BUCKET_BITS)
    }

    pub(super) fn check_fine(&self, fine: &[u32]) -> Result<Vec<usize>> {
        if fine.len() != self.tables() {
            return Err(Error::invalid("fine", "fine bits for each table", format!("{} for {} tables", fine.len(), self.tables())));
        }
        let mut offsets = vec![0usize];
        for (t, &f) in fine.iter().enumerate() {
            if f > self.fine_bits(t, MAX_BUCKET_BITS) {
                return Err(Error::invalid(
                    "fine",
                    "at most a table's prefix and 16 bits",
                    format!("{f} for table {t} of {}", self.fine_bits(t, MAX_BUCKET_BITS)),
                ));
            }
            offsets.push(offsets[t] + (1 << f));
        }
        Ok(offsets)
    }

    /// The distinct values of `fps` in each fine bucket of each table
    /// (`fine` bits of each), the tables one after another.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] for fine bits of the wrong count or
    /// above a table's prefix or 16.
    pub fn histogram(&self, fps: &[u64], fine: &[u32]) -> Result<Vec<u32>> {
        use rayon::prelude::*;
        let offsets = self.check_fine(fine)?;
        // Copies count once: a value is one item of the reducer's scan.
        let mut distinct = fps.to_vec();
        distinct.par_sort_unstable();
        distinct.dedup();
        let mut hist = vec![0u32; offsets[self.tables()]];
        let mut parts: Vec<&mut [u32]> = Vec::new();
        let mut rest = hist.as_mut_slice();
        for t in 0..self.tables() {
            let (head, tail) = rest.split_at_mut(offsets[t + 1] - offsets[t]);
            parts.push(head);
            rest = tail;
        }
        parts.into_par_iter().enumerate().for_each(|(t, counts)| {
            let perm = &self.design.tables()[t].perm;
            for &fp in &distinct {
                counts[perm.apply(fp).checked_shr(64 - fine[t]).unwrap_or(0) as usize] += 1;
            }
        });
        Ok(hist)
    }

    /// Routes for fine buckets holding `hist` distinct values (as
    /// [`Self::histogram`] lays them out, summed over the map tasks): units
    /// of consecutive fine buckets holding at most `target` together, a
    /// bucket above `target` a unit of its own, one above `cap` split into
    /// cells of about `cap / 2` (at most [`MAX_CELLS`]).
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] for bad fine bits, a histogram of
    /// another length, a `target` or `cap` of 0, or more than 2^32 - 1 tasks.
    pub fn plan(&self, fine: &[u32], hist: &[u64], target: u64, cap: u64) -> Result<Routes> {
        let offsets = self.check_fine(fine)?;
        if hist.len() != offsets[self.tables()] {
            return Err(Error::invalid("hist", "a count for each fine bucket", format!("{} for {}", hist.len(), offsets[self.tables()])));
        }
        if target == 0 || cap == 0 {
            return Err(Error::invalid("target", "at least 1 item a task", target.min(cap)));
        }
        let mut unit_of = Vec::with_capacity(hist.len());
        let mut cells: Vec<u32> = Vec::new();
        for t in 0..self.tables() {
            // The open unit's count, if one is open (a table starts a new one).
            let mut open: Option<u64> = None;
            for &c in &hist[offsets[t]..offsets[t + 1]] {
                if c > target {
                    let m = if c > cap { c.saturating_mul(2).div_ceil(cap).clamp(2, u64::from(MAX_CELLS)) as u32 } else { 1 };
                    cells.push(m);
                    open = None;
                } else {
                    match open {
                        Some(s) if s + c <= target => open = Some(s + c),
                        _ => {
                            cells.push(1);
                            open = Some(c);
                        }
                    }
                }
                unit_of.push(cells.len() as u32 - 1);
            }
        }
        self.routes(fine.to_vec(), unit_of, cells)
    }

    /// Routes from their parts (as [`Routes::fine`], [`Routes::unit_of`]
    /// and [`Routes::cells`] give them), checked.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] when the parts do not fit together:
    /// fine bits of the wrong count or too many, units not numbered from 0
    /// in order, a unit over two tables, cells from 1 to [`MAX_CELLS`]
    /// not one a unit, or more than 2^32 - 1 tasks.
    pub fn routes(&self, fine: Vec<u32>, unit_of: Vec<u32>, cells: Vec<u32>) -> Result<Routes> {
        let offsets = self.check_fine(&fine)?;
        if unit_of.len() != offsets[self.tables()] {
            return Err(Error::invalid("unit_of", "a unit for each fine bucket", format!("{} for {}", unit_of.len(), offsets[self.tables()])));
        }
        let mut unit_table = Vec::with_capacity(cells.len());
        for t in 0..self.tables() {
            for i in offsets[t]..offsets[t + 1] {
                let next = unit_table.len() as u32;
                let same = i > offsets[t] && unit_of[i] == unit_of[i - 1];
                if !same && unit_of[i] != next {
                    return Err(Error::invalid("unit_of", "units numbered in order, a new one for each table", format!("{} at {i}", unit_of[i])));
                }
                if !same {
                    unit_table.push(t as u32);
                }
            }
        }
        if cells.len() != unit_table.len() || cells.iter().any(|&m| m == 0 || m > MAX_CELLS) {
            return Err(Error::invalid("cells", "from 1 to 4096 for each unit", format!("{} for {} units", cells.len(), unit_table.len())));
        }
        let mut first_task = Vec::with_capacity(cells.len() + 1);
        let mut sum = 0u64;
        for &m in &cells {
            first_task.push(sum as u32);
            sum += cell_pairs(m);
            if sum > u64::from(u32::MAX) {
                return Err(Error::invalid("cells", "at most 2^32 - 1 tasks", sum));
            }
        }
        first_task.push(sum as u32);
        Ok(Routes { fine, offsets, unit_of, cells, unit_table, first_task })
    }

    /// Routes with no cells and a unit for each fine bucket of `bits` bits
    /// (at most each table's prefix): the buckets of an even spread.
    pub fn uniform(&self, bits: u32) -> Routes {
        let fine: Vec<u32> = (0..self.tables()).map(|t| self.fine_bits(t, bits)).collect();
        let units: usize = fine.iter().map(|&f| 1usize << f).sum();
        self.routes(fine, (0..units as u32).collect(), vec![1; units]).expect("routes of the table's own buckets")
    }
}
