//! What a batch job spends: the table design it works with, and how a
//! memory limit is shared between the table in work and the pairs found.
//!
//! A table in work costs [`ITEM_BYTES`] per item (a permuted key and a
//! position). When a table's items do not fit, its buckets are cut into
//! parts that do, and the parts are worked one after another: read from the
//! source again for each part when there are few of them, or written once
//! into spill files that are read back part by part.

use std::ops::Range;

use crate::tables::plan::{self, Design};
use crate::Result;

/// Bytes of a table's item in work: a permuted key and a position.
pub const ITEM_BYTES: u64 = 12;

/// Nanoseconds per item and table of the work that does not depend on the
/// design (reading, permuting, scattering, sorting in cache, scanning), on
/// one core of the machines this was measured on.
const TABLE_NS: f64 = 12.0;
/// Extra nanoseconds per item and table when the items go through spill files.
const SPILL_NS: f64 = 25.0;
/// Nanoseconds per pair of keys compared inside a group.
const COMPARE_NS: f64 = 0.6;
/// The most tables a batch design may have: each costs a pass over the data.
const MAX_TABLES: usize = 64;

/// The design with the least expected work for `n` items: each table costs
/// a pass over the items, and the keys sharing each table's prefix are
/// compared pair by pair (about `n^2 / 2^(prefix + 1)` pairs of random keys).
pub fn choose_design(k: u32, n: u64, spilled: bool) -> Result<Design> {
    let n = n as f64;
    let per_table = n * (TABLE_NS + if spilled { SPILL_NS } else { 0.0 });
    let cost = |d: &Design| -> f64 { d.tables().iter().map(|t| per_table + COMPARE_NS * n * n * (-(f64::from(t.prefix) + 1.0)).exp2()).sum() };
    let mut best: Option<(f64, Design)> = None;
    for design in plan::designs(k, MAX_TABLES) {
        let c = cost(&design);
        if best.as_ref().is_none_or(|(b, d)| c < b * 0.999 || (c <= b * 1.001 && design.tables().len() < d.tables().len())) {
            best = Some((c, design));
        }
    }
    match best {
        Some((_, d)) => Ok(d),
        None => plan::plan(k, n as usize),
    }
}

/// How a job shares its memory limit.
#[derive(Debug, Clone, Copy)]
pub struct Budget {
    /// Items of a table in work at a time.
    pub part_items: u64,
    /// Bytes of pairs held in memory before they go to a run file.
    pub pair_bytes: usize,
}

impl Budget {
    pub fn new(limit: u64) -> Budget {
        let pair_bytes: u64 = (limit / 8).clamp(1 << 12, 1 << 31);
        let overhead = (limit / 16).min(64 << 20);
        let arena = limit.saturating_sub(pair_bytes + overhead);
        // A floor for limits too small to mean anything but "as many parts
        // as there are buckets" (tests use them to force parts).
        Budget { part_items: (arena / ITEM_BYTES).max(64), pair_bytes: pair_bytes as usize }
    }
}

/// Consecutive bucket ranges holding at most `max_items` items each (a
/// bucket larger than that is a part of its own).
pub fn parts(counts: &[u64], max_items: u64) -> Vec<Range<usize>> {
    let mut out = Vec::new();
    let (mut start, mut held) = (0, 0u64);
    for (b, &c) in counts.iter().enumerate() {
        if held > 0 && held + c > max_items {
            out.push(start..b);
            start = b;
            held = 0;
        }
        held += c;
    }
    out.push(start..counts.len());
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn designs_grow_with_size() {
        let small = choose_design(3, 1_000_000, false).unwrap().tables().len();
        let large = choose_design(3, 1_000_000_000, false).unwrap().tables().len();
        assert!(small <= large, "{small} tables at 1M, {large} at 1G");
        for k in 0..=16 {
            assert!(choose_design(k, 1 << 20, false).is_ok(), "k = {k}");
        }
    }

    #[test]
    fn parts_cover_every_bucket() {
        let counts = [5, 0, 7, 100, 2, 2, 2];
        let p = parts(&counts, 10);
        assert_eq!(p, vec![0..2, 2..3, 3..4, 4..7]);
        assert_eq!(parts(&counts, 1000), vec![0..7]);
        assert_eq!(parts(&[], 10), vec![0..0]);
    }
}
