//! The kernel of a batch job: the close pairs of one table, or of one part
//! of it, with only that table in memory.
//!
//! For table `t`, every fingerprint is permuted and its item (permuted key
//! and position) goes to one of `2^B` buckets by the top `B` bits of the key
//! (`B` from the job's size, [`bucket_bits`], at most the table's prefix); a first pass over
//! the source counts the buckets, so the scatter writes each item once, in
//! place. Each bucket is then sorted on the rest of the prefix bits, in
//! cache, and each group of keys sharing the prefix is compared pair by pair.
//! A pair within `k` is emitted only by the first table whose prefix it
//! shares ([`Design::reports`]), so no pair comes twice and no global
//! distinct is needed.
//!
//! Invariants: a group never spans buckets (`B` is at most the prefix);
//! positions are below 2^32, so a pair packs into one `u64` as
//! `lower << 32 | higher`, which sorts as the pairs do.

use std::sync::atomic::{AtomicU64, Ordering};

use rayon::prelude::*;

use super::source::{mix, Source};
use super::Control;
pub(crate) use crate::job::{pack, unpack, Pair};

mod scan;
#[cfg(target_arch = "x86_64")]
use crate::cpu::Popcount;
use crate::tables::plan::{Design, Permutation};
use crate::Result;

/// The most bits the scatter buckets on: 2048 buckets keep the writes of a
/// pass within what the CPU's write-combining can follow, and a bucket of a
/// billion items (about 500,000 of them) sorts in the L2 and L3 caches.
pub(crate) const MAX_BUCKET_BITS: u32 = 11;

/// Items a bucket is cut down to, about: 2^15 items (384 KiB of keys and
/// positions) sort in L2. Fewer buckets than [`MAX_BUCKET_BITS`] make the
/// scatter's writes go to fewer places at once: 256 buckets instead of 2048
/// took 10^7 items 20 % faster here, 10^6 too, 10^8 the same.
const BUCKET_ITEMS_LOG2: u32 = 15;

/// The bits a job of `n` items buckets on (before the cap at each table's
/// prefix): buckets of about 2^15 items, but at least four a part when a
/// memory limit cuts a table into parts of `part_items`.
pub(crate) fn bucket_bits(n: u64, part_items: u64) -> u32 {
    let for_cache = (n >> BUCKET_ITEMS_LOG2).checked_ilog2().unwrap_or(0);
    let for_parts = if n > part_items { (n * 4).div_ceil(part_items.max(1)).next_power_of_two().ilog2() } else { 0 };
    for_cache.max(for_parts).min(MAX_BUCKET_BITS)
}

/// Bits of one local radix pass.
const MAX_DIGIT: u32 = 10;

/// Buckets below this many items are sorted by insertion.
const INSERTION_MAX: usize = 48;

/// Items of a task of the sort-and-scan step: enough to amortise a task,
/// few enough to balance two threads.
const TASK_ITEMS: usize = 1 << 16;

/// One table of a design, as the kernel works on it.
pub(crate) struct TableKernel<'d> {
    design: &'d Design,
    t: usize,
    k: u32,
    perm: &'d Permutation,
    prefix: u32,
    prefix_mask: u64,
    bucket_bits: u32,
    /// Copies of a fingerprint collapsed onto their first (see
    /// [`Self::collapsed_pairs`]).
    collapse: bool,
    /// What becomes of groups of more first copies than
    /// [`super::dense::DENSE_GROUP`].
    dense: Dense,
    /// How large groups are compared (AVX-512 or AVX2 popcounts; other
    /// CPUs have only the scalar loop).
    #[cfg(target_arch = "x86_64")]
    wide: Popcount,
}

/// What the kernel does with a group of more first copies than
/// [`super::dense::DENSE_GROUP`] (see `super::dense`).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum Dense {
    /// Compare its pairs, as any group's (find_all: every pair is the answer).
    Compare,
    /// Hand its items on as dense, for the sweep to decide (a dedup).
    Leave,
    /// Only the pairs that join it into its components (clusters).
    Join,
}

/// Work space of [`TableKernel::collapsed_pairs`], one per worker: a group's
/// items sorted by key, and the first copy of each distinct key.
#[derive(Default)]
struct Copies {
    items: Vec<(u64, u32)>,
    keys: Vec<u64>,
    pos: Vec<u32>,
}

/// Groups from this many keys go through the eight-wide comparison; in
/// smaller ones the scalar loop's setup is cheaper.
#[cfg(target_arch = "x86_64")]
const WIDE_GROUP: usize = 24;

/// What a task of the kernel hands on.
#[derive(Default)]
pub(crate) struct Found {
    /// The pairs within `k` that this table reports.
    pub pairs: Vec<Pair>,
    /// When copies collapse, in the one table that reports distance 0: the
    /// links from each first copy of a fingerprint to its other copies,
    /// `first << 32 | copy`.
    pub links: Vec<Pair>,
    /// When dense groups are left to the sweep: their first copies
    /// (see `super::dense`).
    pub dense: Vec<u32>,
}

impl Found {
    fn is_empty(&self) -> bool {
        self.pairs.is_empty() && self.links.is_empty() && self.dense.is_empty()
    }
}

pub(crate) type Emit<'e> = &'e (dyn Fn(Found) -> Result<()> + Sync);

/// The work arrays of a part: permuted keys and positions, reused from table
/// to table so that their pages are touched once, on small pages (see
/// `crate::mem`: a job's arena never earned back its huge pages' first touch).
#[derive(Default)]
pub(crate) struct Arena {
    keys: Vec<u64>,
    pos: Vec<u32>,
}

impl Arena {
    fn ensure(&mut self, n: usize) {
        if self.keys.len() < n {
            // Freed first: the old and new arrays never coexist.
            self.keys = Vec::new();
            self.pos = Vec::new();
            self.keys = crate::mem::work_zeroed(n);
            self.pos = crate::mem::work_zeroed(n);
        }
    }
}

/// Items of each bucket of every table, and a digest of the source's values
/// and their positions (a restarted job compares it): one read for all.
pub(crate) fn histograms(design: &Design, bucket_bits: u32, source: &Source<'_>, control: &Control) -> Result<(Vec<Vec<u64>>, u64)> {
    let kernels: Vec<TableKernel<'_>> = (0..design.tables().len()).map(|t| TableKernel::new(design, t, 0, false, bucket_bits)).collect();
    let totals: Vec<Vec<AtomicU64>> = kernels.iter().map(|kt| (0..kt.buckets()).map(|_| AtomicU64::new(0)).collect()).collect();
    let digest = AtomicU64::new(0);
    let leading: Vec<Permutation> = kernels.iter().map(|kt| kt.perm.leading(kt.bucket_bits)).collect();
    source.par_chunks(0..source.len(), |start, fps| {
        control.check()?;
        let mut sum = 0u64;
        for (i, &fp) in fps.iter().enumerate() {
            sum = sum.wrapping_add(mix(fp ^ mix(start + i as u64)));
        }
        digest.fetch_add(sum, Ordering::Relaxed);
        for ((kt, total), lead) in kernels.iter().zip(&totals).zip(&leading) {
            let mut counts = vec![0u32; kt.buckets()];
            for &fp in fps {
                counts[kt.bucket_of(lead.apply(fp))] += 1;
            }
            for (c, t) in counts.iter().zip(total) {
                if *c > 0 {
                    t.fetch_add(u64::from(*c), Ordering::Relaxed);
                }
            }
        }
        control.advance(fps.len() as u64);
        Ok(())
    })?;
    let hist = totals.into_iter().map(|t| t.into_iter().map(AtomicU64::into_inner).collect()).collect();
    Ok((hist, digest.into_inner() ^ source.len()))
}

/// Reads items `start..` of a spill file into keys and positions.
pub(crate) type ReadSpill<'s> = &'s (dyn Fn(u64, &mut Vec<u64>, &mut Vec<u32>) -> Result<()> + Sync);

/// Where the items of a part come from.
pub(crate) enum Items<'s, 'a> {
    /// Raw fingerprints: item `i` of the source is at position `i`.
    Source(&'s Source<'a>),
    /// Permuted keys and positions, read by `read(start, keys, pos)` in
    /// chunks from a spill file holding `len` of them.
    Spilled { len: u64, read: ReadSpill<'s> },
}

/// A raw pointer that threads write through at places they reserved.
#[derive(Copy, Clone)]
pub(super) struct Shared<T>(pub(super) *mut T);
// SAFETY: only used for writes at disjoint indices, reserved with atomics.
unsafe impl<T> Send for Shared<T> {}
unsafe impl<T> Sync for Shared<T> {}

impl<T> Shared<T> {
    /// # Safety
    /// `i` is in bounds of the allocation and no other thread accesses it.
    #[inline]
    pub(super) unsafe fn write(self, i: usize, value: T) {
        unsafe { self.0.add(i).write(value) }
    }
}

impl<'d> TableKernel<'d> {
    /// The kernel of table `t`, bucketing on at most `bucket_bits` bits
    /// (see [`bucket_bits`]; never more than the table's prefix).
    pub fn new(design: &'d Design, t: usize, k: u32, collapse: bool, bucket_bits: u32) -> TableKernel<'d> {
        Self::with_dense(design, t, k, collapse, Dense::Compare, bucket_bits)
    }

    /// [`Self::new`], with dense groups handled as `dense` says.
    pub fn with_dense(design: &'d Design, t: usize, k: u32, collapse: bool, dense: Dense, bucket_bits: u32) -> TableKernel<'d> {
        let spec = &design.tables()[t];
        TableKernel {
            design,
            t,
            k,
            perm: &spec.perm,
            prefix: spec.prefix,
            prefix_mask: spec.prefix_mask,
            bucket_bits: spec.prefix.min(bucket_bits).min(MAX_BUCKET_BITS),
            collapse,
            dense,
            #[cfg(target_arch = "x86_64")]
            wide: crate::cpu::widest_popcount(),
        }
    }

    /// The pairs of keys already sorted so that each group sharing the
    /// prefix is together (`pos` their items), as one task of
    /// [`Self::run_part`] finds them: what a distributed job's reducer runs
    /// on a bucket it received whole (`crate::distributed`).
    ///
    /// # Errors
    /// [`crate::Error::Interrupted`] when `control` is cancelled.
    pub(crate) fn scan_sorted(&self, keys: &[u64], pos: &[u32], control: &Control) -> Result<Found> {
        let mut found = Found::default();
        self.scan(keys, pos, &mut found, &mut Copies::default(), control)?;
        Ok(found)
    }

    pub fn buckets(&self) -> usize {
        1 << self.bucket_bits
    }

    #[inline]
    pub fn bucket_of(&self, key: u64) -> usize {
        (key.checked_shr(64 - self.bucket_bits).unwrap_or(0)) as usize
    }

    #[inline]
    pub fn permute(&self, fp: u64) -> u64 {
        self.perm.apply(fp)
    }

    /// The close pairs among the items of buckets `range`, whose sizes are
    /// `counts[range]`: scattered into `arena`, sorted, scanned; `emit` gets
    /// each task's pairs.
    pub fn run_part(
        &self,
        items: Items<'_, '_>,
        counts: &[u64],
        range: std::ops::Range<usize>,
        arena: &mut Arena,
        control: &Control,
        emit: Emit<'_>,
    ) -> Result<()> {
        let mut starts = Vec::with_capacity(range.len() + 1);
        let mut at = 0u64;
        for &c in &counts[range.clone()] {
            starts.push(at);
            at += c;
        }
        starts.push(at);
        let n = at as usize;
        arena.ensure(n);
        self.scatter(items, &starts, range.start, arena, control)?;
        self.sort_and_scan(&starts, &mut arena.keys[..n], &mut arena.pos[..n], control, emit)
    }

    /// Writes every item of buckets `first..first + starts.len() - 1` to its
    /// bucket's slots.
    fn scatter(&self, items: Items<'_, '_>, starts: &[u64], first: usize, arena: &mut Arena, control: &Control) -> Result<()> {
        let buckets = starts.len() - 1;
        let cursors: Vec<AtomicU64> = starts[..buckets].iter().map(|&s| AtomicU64::new(s)).collect();
        let keys = Shared(arena.keys.as_mut_ptr());
        let pos = Shared(arena.pos.as_mut_ptr());
        let place = |chunk_keys: &[u64], chunk_pos: &dyn Fn(usize) -> u32, local: &mut Vec<u32>, at: &mut Vec<u64>| {
            local.clear();
            local.resize(buckets, 0);
            for &key in chunk_keys {
                let b = self.bucket_of(key).wrapping_sub(first);
                if b < buckets {
                    local[b] += 1;
                }
            }
            at.clear();
            at.extend(local.iter().enumerate().map(|(b, &c)| if c > 0 { cursors[b].fetch_add(u64::from(c), Ordering::Relaxed) } else { 0 }));
            for (i, &key) in chunk_keys.iter().enumerate() {
                let b = self.bucket_of(key).wrapping_sub(first);
                if b < buckets {
                    let slot = at[b] as usize;
                    at[b] += 1;
                    // SAFETY: `slot` lies in the range this chunk reserved in
                    // bucket `b` (starts[b] .. starts[b + 1], within the
                    // arena's `n` slots); no other chunk writes it.
                    unsafe {
                        keys.write(slot, key);
                        pos.write(slot, chunk_pos(i));
                    }
                }
            }
        };
        match items {
            Items::Source(source) => {
                source.par_chunks(0..source.len(), |start, fps| {
                    control.check()?;
                    thread_local! {
                        static BUF: std::cell::RefCell<(Vec<u64>, Vec<u32>, Vec<u64>)> = Default::default();
                    }
                    BUF.with_borrow_mut(|(permuted, local, at)| {
                        permuted.clear();
                        permuted.extend(fps.iter().map(|&fp| self.perm.apply(fp)));
                        place(permuted, &|i| (start + i as u64) as u32, local, at);
                    });
                    control.advance(fps.len() as u64);
                    Ok(())
                })?;
            }
            Items::Spilled { len, read } => {
                let chunks = len.div_ceil(super::source::CHUNK as u64);
                (0..chunks).into_par_iter().try_for_each_init(
                    || (Vec::new(), Vec::new(), Vec::new(), Vec::new()),
                    |(k, p, local, at), c| {
                        control.check()?;
                        read(c * super::source::CHUNK as u64, k, p)?;
                        place(k, &|i| p[i], local, at);
                        control.advance(k.len() as u64);
                        Ok(())
                    },
                )?;
            }
        }
        debug_assert!(cursors.iter().zip(&starts[1..]).all(|(c, &e)| c.load(Ordering::Relaxed) == e));
        Ok(())
    }

    /// Sorts each bucket on the prefix bits below the bucket bits and
    /// compares the keys of each group sharing the prefix.
    fn sort_and_scan(&self, starts: &[u64], mut keys: &mut [u64], mut pos: &mut [u32], control: &Control, emit: Emit<'_>) -> Result<()> {
        // Tasks of whole buckets, about TASK_ITEMS items each.
        let mut tasks: Vec<(Vec<usize>, &mut [u64], &mut [u32])> = Vec::new();
        let buckets = starts.len() - 1;
        let mut b = 0;
        while b < buckets {
            let first = b;
            while b < buckets && (b == first || starts[b + 1] - starts[first] <= TASK_ITEMS as u64) {
                b += 1;
            }
            let len = (starts[b] - starts[first]) as usize;
            let (k, rest_k) = std::mem::take(&mut keys).split_at_mut(len);
            let (p, rest_p) = std::mem::take(&mut pos).split_at_mut(len);
            keys = rest_k;
            pos = rest_p;
            let sizes = (first..b).map(|x| (starts[x + 1] - starts[x]) as usize).collect();
            tasks.push((sizes, k, p));
        }
        tasks.into_par_iter().try_for_each_init(
            || (Vec::new(), Vec::new(), Copies::default()),
            |(sk, sp, copies), (sizes, keys, pos)| {
                control.check()?;
                let mut found = Found::default();
                let mut at = 0;
                for size in sizes {
                    let (k, p) = (&mut keys[at..at + size], &mut pos[at..at + size]);
                    self.sort_bucket(k, p, sk, sp);
                    self.scan(k, p, &mut found, copies, control)?;
                    at += size;
                }
                control.advance(at as u64);
                if !found.is_empty() {
                    emit(found)?;
                }
                Ok(())
            },
        )
    }

    /// Sorts one bucket's items on the prefix bits below the bucket bits.
    fn sort_bucket(&self, keys: &mut [u64], pos: &mut [u32], sk: &mut Vec<u64>, sp: &mut Vec<u32>) {
        let bits = self.prefix - self.bucket_bits;
        if bits == 0 || keys.len() < 2 {
            return;
        }
        let lowest = 64 - self.prefix;
        if keys.len() <= INSERTION_MAX {
            let mask = self.prefix_mask;
            for i in 1..keys.len() {
                let (k, p) = (keys[i], pos[i]);
                let mut j = i;
                while j > 0 && keys[j - 1] & mask > k & mask {
                    keys[j] = keys[j - 1];
                    pos[j] = pos[j - 1];
                    j -= 1;
                }
                keys[j] = k;
                pos[j] = p;
            }
            return;
        }
        let passes = bits.div_ceil(MAX_DIGIT);
        let width = bits.div_ceil(passes);
        sk.resize(keys.len(), 0);
        sp.resize(keys.len(), 0);
        let mut in_scratch = false;
        let mut counts = [0u32; 1 << MAX_DIGIT];
        for p in 0..passes {
            let shift = lowest + p * width;
            let w = width.min(self.prefix - self.bucket_bits - p * width);
            let mask = (1u64 << w) - 1;
            let (fk, fp, tk, tp): (&[u64], &[u32], &mut [u64], &mut [u32]) = if in_scratch { (sk, sp, keys, pos) } else { (keys, pos, sk, sp) };
            let counts = &mut counts[..1 << w];
            counts.fill(0);
            for &k in fk.iter() {
                counts[((k >> shift) & mask) as usize] += 1;
            }
            if counts.iter().any(|&c| c as usize == fk.len()) {
                continue; // one digit: nothing moves
            }
            let mut at = 0u32;
            for c in counts.iter_mut() {
                let here = *c;
                *c = at;
                at += here;
            }
            for (&k, &p) in fk.iter().zip(fp.iter()) {
                let d = ((k >> shift) & mask) as usize;
                let slot = counts[d] as usize;
                tk[slot] = k;
                tp[slot] = p;
                counts[d] += 1;
            }
            in_scratch = !in_scratch;
        }
        if in_scratch {
            keys.copy_from_slice(&sk[..keys.len()]);
            pos.copy_from_slice(&sp[..keys.len()]);
        }
    }
}

#[cfg(test)]
mod tests;
