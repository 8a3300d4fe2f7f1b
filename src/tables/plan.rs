//! Table designs: how the 64 bits are cut into blocks, which permutations the
//! tables apply, and the planner that picks a design (Manku, Jain, Das Sarma,
//! WWW 2007, §3.1).
//!
//! A design is a list of *levels* of block counts `[m1, m2, ...]`, each above
//! `k`. Level 1 cuts the 64 bits into `m1` blocks of near-equal size. Two
//! fingerprints within `k` bits differ in at most `k` blocks, so they agree
//! exactly on at least `m1 - k` of them: one table per choice of `m1 - k`
//! blocks, moved to the leading bits, finds them. Level 2 cuts the bits left
//! over into `m2` blocks and applies the same argument to them, and so on.
//! Every pair within `k` therefore agrees on the leading `p_t` bits of at
//! least one table `t`; a table holds `C(m1, k) * C(m2, k) * ...` tables in all.
//!
//! Invariants:
//! - A permutation moves whole blocks and keeps the order of the bits inside
//!   them, and of the blocks left behind; so it preserves Hamming distance and
//!   table 0 (the first choice at every level) is the identity.
//! - Tables are numbered in a fixed order; [`Design::earlier`] lets a search
//!   report a pair only from the first table whose leading bits it agrees on.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::{Arc, Mutex};

use crate::{Error, Result};

/// The largest `k` an index accepts. Designs stay exact above 8, but the
/// prefixes get so short that every probe scans a large share of the index.
pub const MAX_K: u32 = 16;
/// The most tables the planner considers (memory: 8 bytes per item per table).
const MAX_TABLES: usize = 256;

/// A contiguous run of bits moved by a permutation.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
struct Move {
    /// Lowest source bit.
    src: u32,
    /// Lowest destination bit.
    dst: u32,
    /// `len` low bits set.
    mask: u64,
}

/// A permutation of the 64 bit positions that moves contiguous runs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Permutation {
    moves: Vec<Move>,
}

impl Permutation {
    /// From the source bit of every output bit, most significant first.
    fn from_order(order: &[u32]) -> Permutation {
        debug_assert_eq!(order.len(), 64);
        let mut moves: Vec<Move> = Vec::new();
        let mut i = 0;
        while i < 64 {
            // Extend while the next output bit takes the next lower source bit.
            let mut j = i + 1;
            while j < 64 && order[j] + 1 == order[j - 1] {
                j += 1;
            }
            let len = (j - i) as u32;
            let src = order[j - 1];
            let dst = 63 - (j as u32 - 1);
            let mask = if len == 64 { u64::MAX } else { (1u64 << len) - 1 };
            moves.push(Move { src, dst, mask });
            i = j;
        }
        Permutation { moves }
    }

    /// The permuted value.
    #[inline]
    pub fn apply(&self, x: u64) -> u64 {
        let mut out = 0;
        for m in &self.moves {
            out |= ((x >> m.src) & m.mask) << m.dst;
        }
        out
    }

    /// [`Self::apply`] to each of `xs`, into `out` (of the same length): a
    /// move at a time over the whole slice, so that each move is a few
    /// vector instructions for many values.
    pub fn apply_slice(&self, xs: &[u64], out: &mut [u64]) {
        assert_eq!(xs.len(), out.len(), "apply_slice: lengths differ");
        #[cfg(target_arch = "x86_64")]
        {
            if crate::cpu::x86_has!("avx512f") {
                // SAFETY: the CPU has AVX-512F.
                return unsafe { self.apply_slice_avx512(xs, out) };
            }
            if crate::cpu::x86_has!("avx2") {
                // SAFETY: the CPU has AVX2.
                return unsafe { self.apply_slice_avx2(xs, out) };
            }
        }
        self.apply_slice_portable(xs, out);
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx512f")]
    unsafe fn apply_slice_avx512(&self, xs: &[u64], out: &mut [u64]) {
        self.apply_slice_portable(xs, out);
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2")]
    unsafe fn apply_slice_avx2(&self, xs: &[u64], out: &mut [u64]) {
        self.apply_slice_portable(xs, out);
    }

    #[inline(always)]
    fn apply_slice_portable(&self, xs: &[u64], out: &mut [u64]) {
        let Some((first, rest)) = self.moves.split_first() else {
            return out.fill(0);
        };
        for (o, &x) in out.iter_mut().zip(xs) {
            *o = ((x >> first.src) & first.mask) << first.dst;
        }
        for m in rest {
            for (o, &x) in out.iter_mut().zip(xs) {
                *o |= ((x >> m.src) & m.mask) << m.dst;
            }
        }
    }

    /// The moves that fill the top `bits` bits of the result: the same top
    /// bits for less work, where only they matter.
    pub fn leading(&self, bits: u32) -> Permutation {
        let lowest = 64 - bits.min(64);
        let moves = self.moves.iter().filter(|m| m.dst + (64 - m.mask.leading_zeros()) > lowest).copied().collect();
        Permutation { moves }
    }

    /// The inverse permutation.
    pub fn inverse(&self) -> Permutation {
        let mut moves: Vec<Move> = self.moves.iter().map(|m| Move { src: m.dst, dst: m.src, mask: m.mask }).collect();
        moves.sort_by_key(|m| std::cmp::Reverse(m.dst));
        Permutation { moves }
    }

    pub fn is_identity(&self) -> bool {
        self.moves.iter().all(|m| m.src == m.dst)
    }
}

/// One table of a design.
#[derive(Clone, Debug)]
pub struct TableSpec {
    pub perm: Permutation,
    pub inverse: Permutation,
    /// Leading bits (of the permuted value) that a pair within `k` found by
    /// this table agrees on.
    pub prefix: u32,
    /// Those bits set: a pair shares the prefix iff its permuted XOR has none of them.
    pub prefix_mask: u64,
}

/// A complete table design for one `k`.
#[derive(Clone, Debug)]
pub struct Design {
    k: u32,
    levels: Vec<u32>,
    tables: Vec<TableSpec>,
    /// `earlier[t]` holds, for every table `u < t`, the bits of `u`'s prefix
    /// as they sit in `t`'s permuted space.
    earlier: Vec<Vec<u64>>,
}

impl Design {
    /// The design with these block counts per level.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] when a level has `k` or fewer blocks, more
    /// blocks than bits left, or the design would exceed 4096 tables.
    pub fn new(k: u32, levels: &[u32]) -> Result<Design> {
        check_k(k)?;
        if levels.is_empty() {
            return Err(Error::invalid("levels", "at least one level of blocks", "none"));
        }
        let mut count: usize = 1;
        let mut bits_left = 64u32;
        for &m in levels {
            if m <= k {
                return Err(Error::invalid("blocks", "more than k (so that some blocks always agree)", format!("{m} with k={k}")));
            }
            if m > bits_left {
                return Err(Error::invalid("blocks", "at most the number of bits left to cut", m));
            }
            count = count.saturating_mul(binomial(m, k));
            bits_left -= leading_bits_max(bits_left, m, k);
            if count > 4096 {
                return Err(Error::invalid("tables", "at most 4096", count));
            }
        }
        let mut tables = Vec::with_capacity(count);
        let all: Vec<u32> = (0..64).rev().collect();
        enumerate(k, levels, Vec::new(), all, &mut tables);
        let masks: Vec<u64> = tables.iter().map(|t| leading_mask(&t.inverse, t.prefix)).collect();
        let earlier = tables.iter().enumerate().map(|(t, spec)| masks[..t].iter().map(|&m| spec.perm.apply(m)).collect()).collect();
        Ok(Design { k, levels: levels.to_vec(), tables, earlier })
    }

    pub fn k(&self) -> u32 {
        self.k
    }

    pub fn levels(&self) -> &[u32] {
        &self.levels
    }

    pub fn tables(&self) -> &[TableSpec] {
        &self.tables
    }

    /// Whether a pair whose permuted XOR in table `t` is `x` is table `t`'s
    /// to report: it shares `t`'s prefix and no earlier table's.
    #[inline]
    pub fn reports(&self, t: usize, x: u64) -> bool {
        x & self.tables[t].prefix_mask == 0 && !self.earlier[t].iter().any(|&m| x & m == 0)
    }

    /// The distance of a pair whose permuted XOR in table `t` is `x`, if
    /// table `t` reports it: within `k` (the search's, at most the
    /// design's), and [`Self::reports`]. Every search
    /// of a table (the index's queries and pairs, the batch kernel, the
    /// distributed keys) asks this, so a pair is found once, by one table.
    #[inline(always)]
    pub fn reported(&self, t: usize, x: u64, k: u32) -> Option<u32> {
        let d = x.count_ones();
        if d <= k && self.reports(t, x) {
            Some(d)
        } else {
            None
        }
    }

    /// Calls `f(i, j, d)`, in order, for every pair `i < j` of `keys` (keys
    /// of table `t` in one group, sharing its prefix) that table `t`
    /// reports within `k` ([`Self::reported`]), `d` its distance: the pairs
    /// of a group that this table reports.
    #[inline(always)]
    pub fn group_pairs(&self, t: usize, keys: &[u64], k: u32, mut f: impl FnMut(usize, usize, u32)) {
        for (i, &a) in keys.iter().enumerate() {
            for (j, &b) in keys.iter().enumerate().skip(i + 1) {
                if let Some(d) = self.reported(t, a ^ b, k) {
                    f(i, j, d);
                }
            }
        }
    }

    /// The fingerprint behind key `key` of table `t`.
    #[inline]
    pub fn unpermute(&self, t: usize, key: u64) -> u64 {
        // Table 0 is the identity: skip its (one-move) inverse.
        if t == 0 {
            key
        } else {
            self.tables[t].inverse.apply(key)
        }
    }

    pub fn min_prefix(&self) -> u32 {
        self.tables.iter().map(|t| t.prefix).min().unwrap_or(64)
    }

    /// Probe cost of one query at `n` items, in the units of [`COST`].
    pub fn query_cost(&self, n: usize) -> f64 {
        self.tables.iter().map(|t| COST.probe + COST.candidate * n as f64 * (-(t.prefix as f64)).exp2()).sum()
    }

    /// Query cost plus the rent of the tables' memory.
    pub fn cost(&self, n: usize) -> f64 {
        self.query_cost(n) + COST.table * self.tables.len() as f64
    }
}

impl fmt::Display for Design {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let levels: Vec<String> = self.levels.iter().map(|m| m.to_string()).collect();
        let (lo, hi) = (self.min_prefix(), self.tables.iter().map(|t| t.prefix).max().unwrap_or(64));
        let prefix = if lo == hi { lo.to_string() } else { format!("{lo}-{hi}") };
        write!(f, "{} tables, blocks {}, {} leading bits, k={}", self.tables.len(), levels.join("x"), prefix, self.k)
    }
}

/// The planner's prices, in nanoseconds of one query on this machine class.
/// A probe costs a directory lookup and the cache lines of its range, a
/// candidate a popcount on a contiguous run; each table also costs 8 bytes
/// per item and a sort at build time, charged as `table` per query so that
/// memory is only spent where it buys probe time.
pub struct Cost {
    pub probe: f64,
    pub candidate: f64,
    pub table: f64,
}

pub const COST: Cost = Cost { probe: 30.0, candidate: 1.0, table: 10.0 };

/// The design the planner picks for `n` items: the lowest [`Design::cost`]
/// among single- and two-level designs, fewer tables on a tie.
pub fn plan(k: u32, n: usize) -> Result<Design> {
    check_k(k)?;
    let mut best: Option<Design> = None;
    for levels in candidates(k) {
        if table_count(k, &levels) > MAX_TABLES {
            continue;
        }
        let Ok(design) = Design::new(k, &levels) else { continue };
        let better = match &best {
            None => true,
            Some(b) => {
                let (c, cb) = (design.cost(n), b.cost(n));
                c < cb * 0.999 || (c <= cb * 1.001 && design.tables.len() < b.tables.len())
            }
        };
        if better {
            best = Some(design);
        }
    }
    best.ok_or_else(|| Error::invalid("k", "a value with a feasible table design", k))
}

/// [`plan`] for sizes rounded to a power of two, each design made once and
/// shared (the planner's choice moves only over such factors).
pub fn plan_cached(k: u32, n: usize) -> Result<Arc<Design>> {
    static CACHE: Mutex<BTreeMap<(u32, u32), Arc<Design>>> = Mutex::new(BTreeMap::new());
    let class = usize::BITS - n.leading_zeros();
    if let Some(d) = CACHE.lock().unwrap_or_else(|e| e.into_inner()).get(&(k, class)) {
        return Ok(Arc::clone(d));
    }
    let design = Arc::new(plan(k, if class == 0 { 0 } else { 1 << (class - 1) })?);
    CACHE.lock().unwrap_or_else(|e| e.into_inner()).insert((k, class), Arc::clone(&design));
    Ok(design)
}

/// The single-level design with `blocks` blocks (`C(blocks, k)` tables), as
/// simhash-cpp builds it.
pub fn with_blocks(k: u32, blocks: u32) -> Result<Design> {
    Design::new(k, &[blocks])
}

/// The design with exactly `tables` tables and the longest shortest prefix.
pub fn with_tables(k: u32, tables: usize) -> Result<Design> {
    check_k(k)?;
    let mut best: Option<Design> = None;
    let mut counts = std::collections::BTreeSet::new();
    for levels in candidates(k) {
        let count = table_count(k, &levels);
        if count > MAX_TABLES && count != tables {
            continue;
        }
        let Ok(design) = Design::new(k, &levels) else { continue };
        counts.insert(design.tables.len());
        if design.tables.len() == tables && best.as_ref().is_none_or(|b| design.min_prefix() > b.min_prefix()) {
            best = Some(design);
        }
    }
    best.ok_or_else(|| {
        let list: Vec<String> = counts.iter().map(|c| c.to_string()).collect();
        Error::InvalidParameter {
            name: "tables",
            expected: "a table count some design has",
            found: format!("{tables}; with k={k} the designs have {}", list.join(", ")),
        }
    })
}

/// Every design the planners consider for `k`, with at most `max_tables` tables.
pub(crate) fn designs(k: u32, max_tables: usize) -> Vec<Design> {
    candidates(k).into_iter().filter(|levels| table_count(k, levels) <= max_tables).filter_map(|levels| Design::new(k, &levels).ok()).collect()
}

fn check_k(k: u32) -> Result<()> {
    if k > MAX_K {
        return Err(Error::invalid("k", "at most 16", k));
    }
    Ok(())
}

/// Level lists the planner tries: one level of `k+1..=k+6` blocks, two
/// levels of `k+1..=k+4` blocks each.
fn candidates(k: u32) -> Vec<Vec<u32>> {
    let mut out: Vec<Vec<u32>> = (k + 1..=k + 6).filter(|&m| m <= 64).map(|m| vec![m]).collect();
    for m1 in k + 1..=k + 4 {
        for m2 in k + 1..=k + 4 {
            out.push(vec![m1, m2]);
        }
    }
    out
}

fn table_count(k: u32, levels: &[u32]) -> usize {
    levels.iter().fold(1usize, |acc, &m| if m <= k { 0 } else { acc.saturating_mul(binomial(m, k)) })
}

pub(crate) fn binomial(n: u32, k: u32) -> usize {
    let k = k.min(n - k) as usize;
    let n = n as usize;
    (0..k).fold(1usize, |acc, i| acc.saturating_mul(n - i) / (i + 1))
}

/// Sizes of `m` near-equal blocks of `bits` bits, larger ones first.
fn block_sizes(bits: u32, m: u32) -> Vec<u32> {
    (0..m).map(|i| bits / m + u32::from(i < bits % m)).collect()
}

/// The most leading bits a level can take (its `m - k` largest blocks), so
/// the fewest it can leave to the next level.
pub(crate) fn leading_bits_max(bits: u32, m: u32, k: u32) -> u32 {
    block_sizes(bits, m)[..(m - k) as usize].iter().sum()
}

/// Builds every table: `lead` holds the leading source bits chosen so far (in
/// order), `rest` the bits left, most significant first.
fn enumerate(k: u32, levels: &[u32], lead: Vec<u32>, rest: Vec<u32>, out: &mut Vec<TableSpec>) {
    let Some((&m, deeper)) = levels.split_first() else {
        let prefix = lead.len() as u32;
        let order: Vec<u32> = lead.into_iter().chain(rest).collect();
        let perm = Permutation::from_order(&order);
        let inverse = perm.inverse();
        let prefix_mask = top_bits(prefix);
        out.push(TableSpec { perm, inverse, prefix, prefix_mask });
        return;
    };
    let sizes = block_sizes(rest.len() as u32, m);
    let mut blocks = Vec::with_capacity(m as usize);
    let mut at = 0usize;
    for s in sizes {
        blocks.push(&rest[at..at + s as usize]);
        at += s as usize;
    }
    for chosen in combinations(m as usize, (m - k) as usize) {
        let mut lead = lead.clone();
        let mut left = Vec::with_capacity(rest.len());
        for (b, block) in blocks.iter().enumerate() {
            if chosen.contains(&b) {
                lead.extend_from_slice(block);
            } else {
                left.extend_from_slice(block);
            }
        }
        enumerate(k, deeper, lead, left, out);
    }
}

/// All `r`-subsets of `0..n` in lexicographic order.
fn combinations(n: usize, r: usize) -> Vec<Vec<usize>> {
    let mut out = Vec::new();
    let mut c: Vec<usize> = (0..r).collect();
    loop {
        out.push(c.clone());
        let Some(i) = (0..r).rev().find(|&i| c[i] != i + n - r) else { return out };
        c[i] += 1;
        for j in i + 1..r {
            c[j] = c[j - 1] + 1;
        }
    }
}

/// The top `n` bits set.
fn top_bits(n: u32) -> u64 {
    match n {
        0 => 0,
        64.. => u64::MAX,
        n => !(u64::MAX >> n),
    }
}

/// The source bits that land in the top `prefix` bits of a table.
fn leading_mask(inverse: &Permutation, prefix: u32) -> u64 {
    inverse.apply(top_bits(prefix))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn paper_designs_for_k3() {
        // §3.1.1: 20, 16, 10 and 4 tables.
        let d = with_blocks(3, 6).unwrap();
        assert_eq!((d.tables.len(), d.min_prefix()), (20, 31));
        let d = Design::new(3, &[4, 4]).unwrap();
        assert_eq!((d.tables.len(), d.min_prefix()), (16, 28));
        let d = with_blocks(3, 5).unwrap();
        assert_eq!((d.tables.len(), d.min_prefix()), (10, 25));
        let d = with_blocks(3, 4).unwrap();
        assert_eq!((d.tables.len(), d.min_prefix()), (4, 16));
    }

    #[test]
    fn table_zero_is_identity() {
        for k in 0..=8 {
            for levels in candidates(k) {
                if let Ok(d) = Design::new(k, &levels) {
                    assert!(d.tables[0].perm.is_identity(), "k={k} {levels:?}");
                }
            }
        }
    }

    #[test]
    fn planner_picks() {
        assert_eq!(plan(3, 0).unwrap().tables.len(), 4);
        assert_eq!(plan(3, 1_000_000).unwrap().tables.len(), 4);
        assert_eq!(plan(3, 10_000_000).unwrap().tables.len(), 10);
        assert_eq!(plan(0, 10_000_000).unwrap().tables.len(), 1);
        for k in 0..=MAX_K {
            for n in [0, 1000, 1 << 20, 1 << 24, 1 << 30] {
                let d = plan(k, n).unwrap();
                assert!(d.tables.len() <= MAX_TABLES);
            }
        }
    }

    #[test]
    fn forced_designs() {
        assert!(with_blocks(3, 3).is_err());
        assert!(with_blocks(3, 65).is_err());
        assert_eq!(with_tables(3, 10).unwrap().tables.len(), 10);
        let err = with_tables(3, 7).unwrap_err().to_string();
        assert!(err.contains("4, ") && err.contains("10"), "{err}");
        assert!(plan(17, 10).is_err());
    }

    fn check_complete(d: &Design, a: u64, flips: &[u32]) -> Result<(), TestCaseError> {
        let b = flips.iter().fold(a, |x, &bit| x ^ (1 << bit));
        prop_assume!((a ^ b).count_ones() <= d.k);
        // Some table has a and b agreeing on its prefix, and the first such
        // table is the one `seen_earlier` leaves it to.
        let mut first = None;
        for (t, spec) in d.tables.iter().enumerate() {
            let x = spec.perm.apply(a) ^ spec.perm.apply(b);
            prop_assert_eq!(x.count_ones(), (a ^ b).count_ones());
            prop_assert_eq!(spec.inverse.apply(spec.perm.apply(a)), a);
            for bits in [1, 11, 30, 64] {
                prop_assert_eq!(spec.perm.leading(bits).apply(a) >> (64 - bits), spec.perm.apply(a) >> (64 - bits));
            }
            // A slice of values, a move at a time, as one at a time (odd
            // lengths: the vector loops' ends).
            let xs: Vec<u64> = (0..37u64).map(|i| a.rotate_left(i as u32) ^ b.wrapping_mul(i)).collect();
            let mut out = vec![0u64; xs.len()];
            for len in [0, 1, 7, 8, 9, 37] {
                out.fill(!0);
                spec.perm.apply_slice(&xs[..len], &mut out[..len]);
                prop_assert!(xs[..len].iter().zip(&out).all(|(&x, &o)| spec.perm.apply(x) == o));
                let mut portable = vec![!0u64; len];
                spec.perm.apply_slice_portable(&xs[..len], &mut portable);
                prop_assert_eq!(&portable[..], &out[..len]);
            }
            let agrees = spec.prefix == 0 || (spec.prefix >= 64 && x == 0) || (spec.prefix < 64 && x >> (64 - spec.prefix) == 0);
            // Exactly the first table that shares its prefix reports the pair.
            prop_assert_eq!(d.reports(t, x), agrees && first.is_none());
            if agrees && first.is_none() {
                first = Some(t);
            }
        }
        prop_assert!(first.is_some(), "no table finds a pair within k");
        Ok(())
    }

    proptest! {
        #[test]
        fn every_design_is_complete(
            k in 0u32..=8,
            extra in prop::collection::vec(1u32..4, 1..3),
            a in any::<u64>(),
            flips in prop::collection::vec(0u32..64, 0..9),
        ) {
            let levels: Vec<u32> = extra.iter().map(|e| k + e).collect();
            if let Ok(d) = Design::new(k, &levels) {
                let flips: Vec<u32> = flips.into_iter().take(k as usize).collect();
                check_complete(&d, a, &flips)?;
            }
        }
    }
}
