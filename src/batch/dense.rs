//! Dense groups of a dedup: decided against the kept items, not pair by pair.
//!
//! Template pages put thousands of distinct fingerprints within a few bits
//! of each other, so some groups of a table (keys sharing its prefix) hold
//! thousands of first copies. Comparing them pair by pair costs the square
//! of the group and makes as many pairs, nearly all useless to a dedup: a
//! pair matters only when its earlier item is kept, and in a dense group
//! few are. So the kernel compares a group only up to [`DENSE_GROUP`] first
//! copies; the items of a larger one are marked *dense* instead ([`Dense`]).
//!
//! The sweep then goes through the items in order. An item that is in no
//! dense group has every pair it is in (each pair is found by the first
//! table whose prefix it shares, and all its groups were compared), so its
//! pairs decide it, as before. A dense item is decided by its pairs and by
//! a look-up among the kept dense items before it ([`KeptDense`]): a kept
//! item within `k` whose pair with it was not made shares a dense group
//! with it, so it is dense too. Kept dense items are far apart (more than
//! `k` bits), so a look-up reads few of them. Memory follows the items.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};

use super::source::{Source, CHUNK};
use crate::cluster::Dedup;
use crate::tables::plan::Design;
use crate::Result;

/// First copies a group may hold and still be compared pair by pair.
/// Past it, an item costs a look-up among the kept dense items (a few
/// microseconds) rather than a comparison with each of the group's others.
/// Tests take a small one, so that their small corpora go both ways.
#[cfg(not(test))]
pub(crate) const DENSE_GROUP: usize = 512;
#[cfg(test)]
pub(crate) const DENSE_GROUP: usize = 6;

/// One bit per item: in a dense group of some table.
pub(crate) struct Dense {
    words: Vec<AtomicU64>,
    any: std::sync::atomic::AtomicBool,
}

impl Dense {
    pub fn new(n: usize) -> Dense {
        Dense { words: (0..n.div_ceil(64)).map(|_| AtomicU64::new(0)).collect(), any: false.into() }
    }

    /// Marks the items (positions, as `u64`) dense.
    pub fn mark(&self, items: &[u64]) {
        for &p in items {
            self.words[p as usize / 64].fetch_or(1 << (p % 64), Ordering::Relaxed);
        }
        self.any.store(true, Ordering::Relaxed);
    }

    pub fn any(&self) -> bool {
        self.any.load(Ordering::Relaxed)
    }

    #[inline]
    fn has(&self, p: u32) -> bool {
        self.words[p as usize / 64].load(Ordering::Relaxed) >> (p % 64) & 1 == 1
    }

    /// The dense items from `from` on, ascending.
    fn from(&self, from: u32) -> impl Iterator<Item = u32> + '_ {
        let first = from as usize / 64;
        self.words[first..].iter().enumerate().flat_map(move |(w, word)| {
            let mut bits = word.load(Ordering::Relaxed);
            let base = ((first + w) * 64) as u32;
            std::iter::from_fn(move || {
                if bits == 0 {
                    return None;
                }
                let b = bits.trailing_zeros();
                bits &= bits - 1;
                Some(base + b)
            })
            .filter(move |&p| p >= from)
        })
    }
}

/// The kept dense items so far: for each table of a design, their permuted
/// keys by prefix. A kept item within `k` of a query shares the prefix of
/// one table at least, so it is in the bucket that table's look-up reads.
struct KeptDense<'d> {
    design: &'d Design,
    k: u32,
    tables: Vec<HashMap<u64, Vec<(u64, u32)>>>,
}

impl<'d> KeptDense<'d> {
    fn new(design: &'d Design, k: u32) -> KeptDense<'d> {
        KeptDense { design, k, tables: vec![HashMap::new(); design.tables().len()] }
    }

    /// The earliest kept item within `k` of `fp`.
    fn earliest_within(&self, fp: u64) -> Option<u32> {
        let mut best: Option<u32> = None;
        for (spec, table) in self.design.tables().iter().zip(&self.tables) {
            let key = spec.perm.apply(fp);
            if let Some(bucket) = table.get(&(key & spec.prefix_mask)) {
                for &(other, p) in bucket {
                    if (other ^ key).count_ones() <= self.k && best.is_none_or(|b| p < b) {
                        best = Some(p);
                    }
                }
            }
        }
        best
    }

    fn insert(&mut self, fp: u64, p: u32) {
        for (spec, table) in self.design.tables().iter().zip(&mut self.tables) {
            let key = spec.perm.apply(fp);
            table.entry(key & spec.prefix_mask).or_default().push((key, p));
        }
    }
}

/// The fingerprints of a source read in order, a chunk at a time.
struct Cursor<'s, 'a> {
    source: &'s Source<'a>,
    start: u64,
    buf: Vec<u64>,
}

impl Cursor<'_, '_> {
    fn get(&mut self, p: u32) -> Result<u64> {
        let p = u64::from(p);
        if let Source::Memory(fps) = self.source {
            return Ok(fps[p as usize]);
        }
        if p < self.start || p >= self.start + self.buf.len() as u64 {
            let n = (self.source.len() - p).min(CHUNK as u64) as usize;
            let mut buf = std::mem::take(&mut self.buf);
            let got = self.source.chunk(p, n, &mut buf)?.to_vec();
            self.buf = got;
            self.start = p;
        }
        Ok(self.buf[(p - self.start) as usize])
    }
}

/// The dedup of `n` items from their pairs `higher << 32 | lower`, fed in
/// ascending order, and the dense items (see the module docs).
pub(crate) struct DenseSweep<'j, 's, 'a> {
    out: Dedup,
    dense: &'j Dense,
    kept: KeptDense<'j>,
    fps: Cursor<'s, 'a>,
    /// The item whose pairs are being fed, the earliest kept item among them.
    current: Option<(u32, Option<u32>)>,
    /// Dense items before this one are decided.
    next_dense: u32,
}

impl<'j, 's, 'a> DenseSweep<'j, 's, 'a> {
    pub fn new(source: &'s Source<'a>, dense: &'j Dense, design: &'j Design, k: u32) -> DenseSweep<'j, 's, 'a> {
        let n = source.len() as usize;
        DenseSweep {
            out: Dedup { keep: vec![true; n], dropped: Vec::new(), matched: Vec::new() },
            dense,
            kept: KeptDense::new(design, k),
            fps: Cursor { source, start: 0, buf: Vec::new() },
            current: None,
            next_dense: 0,
        }
    }

    pub fn feed(&mut self, pairs: &[u64]) -> Result<()> {
        for &p in pairs {
            let (j, i) = ((p >> 32) as u32, p as u32);
            match self.current {
                Some((c, _)) if c == j => {}
                _ => {
                    self.close()?;
                    self.dense_before(j)?;
                    self.current = Some((j, None));
                }
            }
            if let Some((_, best @ None)) = &mut self.current {
                if self.out.keep[i as usize] {
                    *best = Some(i);
                }
            }
        }
        Ok(())
    }

    pub fn finish(mut self) -> Result<Dedup> {
        self.close()?;
        self.dense_before(self.out.keep.len() as u32)?;
        Ok(self.out)
    }

    /// Decides the dense items before `j` (they have no pairs left).
    fn dense_before(&mut self, j: u32) -> Result<()> {
        if !self.dense.any() || self.next_dense >= j {
            return Ok(());
        }
        let todo: Vec<u32> = self.dense.from(self.next_dense).take_while(|&d| d < j).collect();
        for d in todo {
            self.decide(d, None)?;
        }
        self.next_dense = j;
        Ok(())
    }

    /// Decides the item whose pairs were fed.
    fn close(&mut self) -> Result<()> {
        if let Some((j, best)) = self.current.take() {
            self.decide(j, best)?;
            self.next_dense = self.next_dense.max(j + 1);
        }
        Ok(())
    }

    /// Item `j`, the earliest kept item among its pairs `best`.
    fn decide(&mut self, j: u32, mut best: Option<u32>) -> Result<()> {
        let dense = self.dense.any() && self.dense.has(j);
        let fp = if dense { Some(self.fps.get(j)?) } else { None };
        if let Some(fp) = fp {
            if let Some(m) = self.kept.earliest_within(fp) {
                best = Some(best.map_or(m, |b| b.min(m)));
            }
        }
        match best {
            Some(m) => {
                self.out.keep[j as usize] = false;
                self.out.dropped.push(j);
                self.out.matched.push(m);
            }
            None => {
                if let Some(fp) = fp {
                    self.kept.insert(fp, j);
                }
            }
        }
        Ok(())
    }
}
