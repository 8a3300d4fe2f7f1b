//! The permuted tables as the shuffle of a distributed engine (the paper's
//! §3.3 on MapReduce; `rsimhash.spark` on Apache Spark).
//!
//! A map task packs its items into one block a `(table, bucket)` and the
//! engine moves each block as one row to the reducer of its bucket, which
//! runs the batch kernel's group scan on the buckets it received whole
//! ([`ShuffleTables::pack`], [`ShuffleTables::reduce`], see `blocks`). A
//! pair is emitted only by the first table whose prefix it shares
//! ([`Design::reports`]), the rule of [`crate::batch::find_all`] and
//! `Index.find_all`, so the reducers' answers add up to every pair exactly
//! once with no global distinct. [`shuffle_blocks`] chooses the design.

use crate::tables::plan::Design;
use crate::Result;

mod blocks;
pub mod forest;
mod routes;
pub use blocks::{Output, Packed, MAX_BUCKET_BITS};
pub use routes::{Routes, Task, MAX_CELLS};

/// A single-level design of `blocks` blocks for `k`: `C(blocks, k)` tables.
pub struct ShuffleTables {
    design: Design,
}

impl ShuffleTables {
    /// # Errors
    /// [`crate::Error::InvalidParameter`] for a `k` above 16, or `blocks`
    /// not above `k` or above 64.
    pub fn new(k: u32, blocks: u32) -> Result<ShuffleTables> {
        Ok(ShuffleTables { design: Design::new(k, &[blocks])? })
    }

    pub fn k(&self) -> u32 {
        self.design.k()
    }

    pub fn tables(&self) -> usize {
        self.design.tables().len()
    }

    /// Leading bits of table `t`'s key.
    pub fn prefix(&self, t: usize) -> u32 {
        self.design.tables()[t].prefix
    }
}

/// Relative costs in the choice of a shuffle's design, in microseconds of
/// executor time: one item of one table through the packed shuffle (the
/// map task's permute and scatter, the block's way through Arrow and
/// Spark's shuffle, the reducer's sort; measured with
/// `benches/bench_spark.py` at 10^7, local[2] under load: the pack and
/// reduce stages' executor time over items times tables, 0.5 to 0.6 us;
/// a row of the old row-per-value shuffle cost about 2 us and this was
/// 1.0) against one
/// comparison of two values in a task (about 2 ns). The choice moves
/// little with it: at k = 3, 4 blocks up to about 10^8 values, 5 to 10^11.
const ROW_COST: f64 = 0.5;
const PAIR_COST: f64 = 0.002;

/// The blocks of the single-level design a shuffle of `n` distinct values
/// uses. With `tables`, the fewest blocks whose design has that many tables
/// (`C(blocks, k)`), or `None` when no design has; else, of `k + 1` to
/// `k + 9` blocks (at most 64), the one with the least shuffled rows
/// (`n` a table) plus expected comparisons (`n^2 / 2` a table over
/// `2^prefix`, `prefix` its longest one, [`crate::plan`]'s block rule),
/// the fewer blocks on a tie.
///
/// # Errors
/// [`crate::Error::InvalidParameter`] for a `k` above 16.
pub fn shuffle_blocks(n: u64, k: u32, tables: Option<u64>) -> Result<Option<u32>> {
    if k > crate::plan::MAX_K {
        return Err(crate::Error::invalid("k", "from 0 to 16", k));
    }
    if let Some(tables) = tables {
        return Ok((k + 1..=64).find(|&b| crate::plan::binomial(b, k) as u64 == tables));
    }
    let n = n as f64;
    let mut best: Option<(f64, u32)> = None;
    for b in k + 1..=64.min(k + 9) {
        let t = crate::plan::binomial(b, k) as f64;
        let prefix = crate::plan::leading_bits_max(64, b, k) as i32;
        // The sum in this order, as the Python planner it replaces summed it.
        let cost = n * t * ROW_COST + t * (n * n / 2f64.powi(prefix + 1)) * PAIR_COST;
        if best.is_none_or(|(c, _)| cost < c) {
            best = Some((cost, b));
        }
    }
    Ok(best.map(|(_, b)| b))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_designs() {
        assert!(ShuffleTables::new(3, 3).is_err());
        assert!(ShuffleTables::new(17, 20).is_err());
        assert_eq!(ShuffleTables::new(3, 5).unwrap().tables(), 10);
    }

    #[test]
    fn shuffle_blocks_by_cost_and_by_tables() {
        // One value: the fewest tables win (the rows dominate); many: more blocks, longer prefixes.
        assert_eq!(shuffle_blocks(1, 3, None).unwrap(), Some(4));
        let (small, large) = (shuffle_blocks(1, 3, None).unwrap().unwrap(), shuffle_blocks(1 << 40, 3, None).unwrap().unwrap());
        assert!(small < large && large <= 12, "{small} {large}");
        for b in 4..=64 {
            let tables = crate::plan::binomial(b, 3) as u64;
            assert_eq!(shuffle_blocks(5, 3, Some(tables)).unwrap(), Some(b));
            if tables <= 4096 {
                // The count the shuffle's design then has (designs stop at 4096 tables).
                assert_eq!(ShuffleTables::new(3, b).unwrap().tables() as u64, tables);
            }
        }
        assert_eq!(shuffle_blocks(5, 3, Some(5)).unwrap(), None);
        assert_eq!(shuffle_blocks(5, 0, Some(1)).unwrap(), Some(1));
        assert_eq!(shuffle_blocks(5, 0, Some(64)).unwrap(), None);
        assert_eq!(shuffle_blocks(u64::MAX, 16, None).unwrap(), Some(25));
        assert!(shuffle_blocks(5, 17, None).is_err());
    }
}
