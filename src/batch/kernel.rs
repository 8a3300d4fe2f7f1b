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
    /// How large groups are compared (AVX-512 or AVX2 popcounts).
    wide: Wide,
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
const WIDE_GROUP: usize = 24;

/// How large groups are compared on this CPU.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Wide {
    /// One key at a time.
    Scalar,
    /// Four keys a step, popcounts by nibble tables (AVX2).
    Avx2,
    /// Eight keys a step (AVX-512F and VPOPCNTDQ).
    Avx512,
}

/// The widest comparison of groups this CPU has.
fn wide_popcount() -> Wide {
    #[cfg(target_arch = "x86_64")]
    {
        if crate::cpu::x86_has!("avx512f", "avx512vpopcntdq") {
            return Wide::Avx512;
        }
        if crate::cpu::x86_has!("avx2") {
            return Wide::Avx2;
        }
    }
    Wide::Scalar
}

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
/// to table so that their pages are touched once.
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
            self.keys = crate::mem::zeroed(n);
            self.pos = crate::mem::zeroed(n);
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
            wide: wide_popcount(),
        }
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
                    self.scan(k, p, &mut found, copies);
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

    /// Compares the keys of every group sharing the prefix in a sorted bucket.
    fn scan(&self, keys: &[u64], pos: &[u32], found: &mut Found, copies: &mut Copies) {
        let mask = self.prefix_mask;
        let n = keys.len();
        let mut i = 0;
        while i + 1 < n {
            if (keys[i] ^ keys[i + 1]) & mask != 0 {
                i += 1;
                continue;
            }
            let mut end = i + 2;
            while end < n && (keys[i] ^ keys[end]) & mask == 0 {
                end += 1;
            }
            if self.collapse {
                self.collapsed_pairs(&keys[i..end], &pos[i..end], found, copies);
            } else {
                self.group_pairs(&keys[i..end], &pos[i..end], &mut found.pairs);
            }
            i = end;
        }
    }

    /// The pairs of a group with copies of a fingerprint (identical keys)
    /// collapsed onto the first of them (the lowest position), `r`: only the
    /// first copies are compared, and in the one table that reports
    /// distance 0 each other copy `q` is linked to `r` (`r << 32 | q` in
    /// `links`). A page copied 10^5 times then costs 10^5 links and the
    /// comparisons of one item, not 5 * 10^9 pairs; every pair of the items
    /// follows from the pairs of their first copies and the links, which is
    /// all dedup, clusters and `find_all` with `copies="first"` need (and
    /// all of `find_all`'s pairs are made from them at the end).
    fn collapsed_pairs(&self, keys: &[u64], pos: &[u32], found: &mut Found, copies: &mut Copies) {
        let n = keys.len();
        // Most groups are a few keys with no copies: compared as they are.
        if n <= 16 && !(1..n).any(|b| keys[..b].contains(&keys[b])) {
            return self.group_pairs(keys, pos, &mut found.pairs);
        }
        let items = &mut copies.items;
        items.clear();
        items.extend(keys.iter().copied().zip(pos.iter().copied()));
        // By key only: the sort is linear when every key is the same.
        items.sort_unstable_by_key(|&(key, _)| key);
        let links_here = self.design.reports(self.t, 0);
        let (rk, rp) = (&mut copies.keys, &mut copies.pos);
        rk.clear();
        rp.clear();
        let mut i = 0;
        while i < n {
            let key = items[i].0;
            let end = i + items[i..].iter().position(|&(k, _)| k != key).unwrap_or(n - i);
            let first = items[i..end].iter().map(|&(_, p)| p).min().expect("a run holds an item");
            if links_here {
                found.links.extend(items[i..end].iter().filter(|&&(_, p)| p != first).map(|&(_, p)| pack(first, p)));
            }
            rk.push(key);
            rp.push(first);
            i = end;
        }
        match self.dense {
            Dense::Leave if rk.len() > super::dense::DENSE_GROUP => found.dense.extend_from_slice(rp),
            Dense::Join if rk.len() > super::dense::DENSE_GROUP => self.joining_pairs(rk, rp, &mut found.pairs),
            _ if rk.len() >= 2 => self.group_pairs(rk, rp, &mut found.pairs),
            _ => {}
        }
    }

    /// Pairs within `k` of a dense group that join its items into its
    /// components, without comparing pairs already joined: each item is
    /// compared with the members of each component so far only until one
    /// is within `k` (then it joins that component, and its other members
    /// are skipped). A group of near-identical pages then costs about a
    /// comparison per item, not one per pair. The pairs need not be this
    /// table's to report: each joins two items within `k`, which is all
    /// clusters ask.
    fn joining_pairs(&self, keys: &[u64], pos: &[u32], found: &mut Vec<Pair>) {
        // Components as lists of members; a merged one is left empty.
        let mut members: Vec<Vec<u32>> = Vec::new();
        for x in 0..keys.len() {
            let kx = keys[x];
            let mut mine: Option<usize> = None;
            for c in 0..members.len() {
                if Some(c) == mine || members[c].is_empty() {
                    continue;
                }
                let Some(&j) = members[c].iter().find(|&&j| (keys[j as usize] ^ kx).count_ones() <= self.k) else { continue };
                found.push(pack(pos[x], pos[j as usize]));
                match mine {
                    None => {
                        members[c].push(x as u32);
                        mine = Some(c);
                    }
                    Some(m) => {
                        // The smaller list moves into the larger one.
                        let (big, small) = if members[m].len() >= members[c].len() { (m, c) } else { (c, m) };
                        let moved = std::mem::take(&mut members[small]);
                        members[big].extend(moved);
                        mine = Some(big);
                    }
                }
            }
            if mine.is_none() {
                members.push(vec![x as u32]);
            }
        }
    }

    #[inline]
    fn group_pairs(&self, keys: &[u64], pos: &[u32], found: &mut Vec<Pair>) {
        #[cfg(target_arch = "x86_64")]
        if keys.len() >= WIDE_GROUP {
            match self.wide {
                // SAFETY: `wide` says the CPU has AVX-512F and VPOPCNTDQ.
                Wide::Avx512 => return unsafe { self.group_pairs_wide(keys, pos, found) },
                // SAFETY: `wide` says the CPU has AVX2.
                Wide::Avx2 => return unsafe { self.group_pairs_avx2(keys, pos, found) },
                Wide::Scalar => {}
            }
        }
        self.group_pairs_scalar(keys, pos, found);
    }

    /// [`Self::group_pairs_scalar`], four keys a step, for CPUs with AVX2
    /// but not AVX-512: the popcount of each 64-bit lane is the sum of its
    /// bytes' nibble counts (a table look-up by `vpshufb`, summed by
    /// `vpsadbw`). Pairs come out in the same order.
    ///
    /// # Safety
    /// The CPU has AVX2.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2")]
    unsafe fn group_pairs_avx2(&self, keys: &[u64], pos: &[u32], found: &mut Vec<Pair>) {
        use std::arch::x86_64::*;
        let n = keys.len();
        let nibbles = _mm256_setr_epi8(0, 1, 1, 2, 1, 2, 2, 3, 1, 2, 2, 3, 2, 3, 3, 4, 0, 1, 1, 2, 1, 2, 2, 3, 1, 2, 2, 3, 2, 3, 3, 4);
        let low = _mm256_set1_epi8(0x0f);
        let limit = _mm256_set1_epi64x(i64::from(self.k));
        for a in 0..n {
            let ka = keys[a];
            let va = _mm256_set1_epi64x(ka as i64);
            // The mask of the keys b..b + 4 within k of `ka`.
            let close4 = |b: usize| -> u32 {
                // SAFETY: callers keep b + 4 <= n, so keys[b..b + 4] is in bounds.
                let x = _mm256_xor_si256(va, unsafe { _mm256_loadu_si256(keys.as_ptr().add(b).cast()) });
                let lo = _mm256_shuffle_epi8(nibbles, _mm256_and_si256(x, low));
                let hi = _mm256_shuffle_epi8(nibbles, _mm256_and_si256(_mm256_srli_epi64(x, 4), low));
                let count = _mm256_sad_epu8(_mm256_add_epi8(lo, hi), _mm256_setzero_si256());
                // Lanes with count > k set; the others are close.
                let far = _mm256_movemask_pd(_mm256_castsi256_pd(_mm256_cmpgt_epi64(count, limit))) as u32;
                !far & 0xf
            };
            let mut take = |b: usize, mut m: u32| {
                while m != 0 {
                    let j = b + m.trailing_zeros() as usize;
                    m &= m - 1;
                    if self.design.reports(self.t, ka ^ keys[j]) {
                        found.push(pack(pos[a], pos[j]));
                    }
                }
            };
            let mut b = a + 1;
            // Most steps find nothing: 16 keys a test of one combined mask.
            while b + 16 <= n {
                take(b, close4(b) | close4(b + 4) << 4 | close4(b + 8) << 8 | close4(b + 12) << 12);
                b += 16;
            }
            while b + 4 <= n {
                take(b, close4(b));
                b += 4;
            }
            for j in b..n {
                if self.design.reported(self.t, ka ^ keys[j], self.k).is_some() {
                    found.push(pack(pos[a], pos[j]));
                }
            }
        }
    }

    fn group_pairs_scalar(&self, keys: &[u64], pos: &[u32], found: &mut Vec<Pair>) {
        self.design.group_pairs(self.t, keys, self.k, |a, b, _| found.push(pack(pos[a], pos[b])));
    }

    /// [`Self::group_pairs_scalar`], eight keys a step: real corpora put
    /// hundreds of fingerprints in one group at wide `k` (verified
    /// near-duplicates' candidates), where the quadratic scan is the job.
    /// Pairs come out in the same order.
    ///
    /// # Safety
    /// The CPU has AVX-512F and AVX-512 VPOPCNTDQ.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx512f,avx512vpopcntdq")]
    unsafe fn group_pairs_wide(&self, keys: &[u64], pos: &[u32], found: &mut Vec<Pair>) {
        use std::arch::x86_64::*;
        let n = keys.len();
        let limit = _mm512_set1_epi64(i64::from(self.k));
        for a in 0..n {
            let ka = keys[a];
            let va = _mm512_set1_epi64(ka as i64);
            // The mask of the keys b..b + 8 within k of `ka`.
            let close8 = |b: usize| {
                // SAFETY: callers keep b + 8 <= n, so keys[b..b + 8] is in bounds.
                let vb = unsafe { _mm512_loadu_si512(keys.as_ptr().add(b).cast()) };
                _mm512_cmple_epu64_mask(_mm512_popcnt_epi64(_mm512_xor_si512(va, vb)), limit)
            };
            // The pairs of `ka` with the keys b + i for each bit i of `m`
            // (keys within k), those this table reports.
            let mut take = |b: usize, mut m: u32| {
                while m != 0 {
                    let j = b + m.trailing_zeros() as usize;
                    m &= m - 1;
                    if self.design.reports(self.t, ka ^ keys[j]) {
                        found.push(pack(pos[a], pos[j]));
                    }
                }
            };
            let mut b = a + 1;
            // Most steps find nothing: 32 keys a test of one combined mask.
            while b + 32 <= n {
                take(b, u32::from(close8(b)) | u32::from(close8(b + 8)) << 8 | u32::from(close8(b + 16)) << 16 | u32::from(close8(b + 24)) << 24);
                b += 32;
            }
            while b + 8 <= n {
                take(b, u32::from(close8(b)));
                b += 8;
            }
            for j in b..n {
                if self.design.reported(self.t, ka ^ keys[j], self.k).is_some() {
                    found.push(pack(pos[a], pos[j]));
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tables::plan;
    use proptest::prelude::*;
    use std::sync::Mutex;

    fn brute(fps: &[u64], k: u32) -> Vec<Pair> {
        let mut out = Vec::new();
        for i in 0..fps.len() {
            for j in i + 1..fps.len() {
                if (fps[i] ^ fps[j]).count_ones() <= k {
                    out.push(pack(i as u32, j as u32));
                }
            }
        }
        out.sort_unstable();
        out
    }

    /// Every table's pairs, each table in `parts` parts of its buckets.
    fn kernel_pairs(fps: &[u64], design: &Design, k: u32, parts: usize) -> Vec<Pair> {
        let source = Source::Memory(fps);
        let control = Control::default();
        let (hist, _) = histograms(design, MAX_BUCKET_BITS, &source, &control).unwrap();
        let all = Mutex::new(Vec::new());
        let mut arena = Arena::default();
        for (t, counts) in hist.iter().enumerate() {
            let kt = TableKernel::new(design, t, k, false, MAX_BUCKET_BITS);
            let per = kt.buckets().div_ceil(parts);
            for first in (0..kt.buckets()).step_by(per) {
                let range = first..(first + per).min(kt.buckets());
                kt.run_part(Items::Source(&source), counts, range, &mut arena, &control, &|found| {
                    assert!(found.links.is_empty() && found.dense.is_empty(), "links only when copies collapse");
                    all.lock().unwrap().extend(found.pairs);
                    Ok(())
                })
                .unwrap();
            }
        }
        let mut all = all.into_inner().unwrap();
        all.sort_unstable();
        all
    }

    fn planted() -> impl Strategy<Value = Vec<u64>> {
        crate::testing::planted(40, 400)
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(48))]

        #[test]
        fn equals_brute_force(fps in planted(), k in 0u32..=8, extra in 1u32..3, parts in 1usize..4) {
            let design = plan::Design::new(k, &[k + extra]).unwrap();
            let got = kernel_pairs(&fps, &design, k, parts);
            let expected = brute(&fps, k);
            prop_assert!(got.windows(2).all(|w| w[0] < w[1]), "a pair twice");
            prop_assert_eq!(got, expected);
        }

        #[test]
        fn two_level_designs(fps in planted(), k in 1u32..=4) {
            let design = plan::Design::new(k, &[k + 1, k + 2]).unwrap();
            prop_assert_eq!(kernel_pairs(&fps, &design, k, 1), brute(&fps, k));
        }
    }

    #[test]
    fn large_buckets_and_extremes() {
        // 5,000 items in few groups (long radix passes), and the extremes.
        let mut fps: Vec<u64> = (0..5000u64).map(|i| (i % 7) << 60 | super::super::source::mix(i) >> 40).collect();
        fps.extend([0, 1, 3, u64::MAX, u64::MAX - 1, 0, u64::MAX]);
        for k in [0, 3, 6] {
            let design = plan::plan(k, fps.len()).unwrap();
            assert_eq!(kernel_pairs(&fps, &design, k, 1), brute(&fps, k), "k = {k}");
            assert_eq!(kernel_pairs(&fps, &design, k, 3), brute(&fps, k), "k = {k}, 3 parts");
        }
    }

    /// Calls `check` with groups of every length around the eight-wide
    /// steps, of keys that share a prefix and differ in a few bits (copies,
    /// 0 and MAX among them), and the scalar scan's pairs for each.
    fn each_group(mut check: impl FnMut(&TableKernel<'_>, &[u64], &[u32], &[Pair], String)) {
        for k in [0u32, 3, 7, 10] {
            let design = plan::Design::new(k, &[k + 1]).unwrap();
            let mut found = 0;
            for t in 0..design.tables().len() {
                let kt = TableKernel::new(&design, t, k, false, MAX_BUCKET_BITS);
                for n in [2usize, 7, 8, 9, 23, 24, 25, 31, 64, 200] {
                    let mut keys: Vec<u64> = (0..n as u64)
                        .map(|i| {
                            let m = super::super::source::mix(i * 31 + u64::from(k));
                            (m & !kt.prefix_mask) & (m >> 7) & (m >> 13) | ((i % 3) * (i & 1))
                        })
                        .collect();
                    keys[0] = 0;
                    keys[n - 1] = !kt.prefix_mask;
                    keys.sort_unstable();
                    let pos: Vec<u32> = (0..n as u32).map(|i| i * 3 + 1).collect();
                    let mut scalar = Vec::new();
                    kt.group_pairs_scalar(&keys, &pos, &mut scalar);
                    check(&kt, &keys, &pos, &scalar, format!("k = {k}, table {t}, n = {n}"));
                    found += scalar.len();
                }
            }
            assert!(found > 100, "k = {k}: only {found} pairs, the keys test too little");
        }
    }

    #[test]
    #[cfg(target_arch = "x86_64")]
    fn avx2_and_scalar_groups_agree() {
        if !std::arch::is_x86_feature_detected!("avx2") {
            panic!("no AVX2 on this CPU: run this test on x86-64 with AVX2 (every CPU the project supports has it)");
        }
        each_group(|kt, keys, pos, scalar, case| {
            let mut avx2 = Vec::new();
            // SAFETY: AVX2, checked above.
            unsafe { kt.group_pairs_avx2(keys, pos, &mut avx2) };
            assert_eq!(scalar, avx2, "AVX2: {case}");
        });
    }

    /// Ignored where the CPU lacks AVX-512 (cargo lists it as ignored, with
    /// this reason); scripts/test.sh runs it with `--ignored` where it has it.
    #[test]
    #[cfg(target_arch = "x86_64")]
    #[ignore = "needs AVX-512F and VPOPCNTDQ: scripts/test.sh runs it with --ignored on a CPU that has them"]
    fn avx512_and_scalar_groups_agree() {
        let has = std::arch::is_x86_feature_detected!("avx512f") && std::arch::is_x86_feature_detected!("avx512vpopcntdq");
        assert!(has, "this CPU lacks AVX-512F or VPOPCNTDQ: the test cannot run here");
        each_group(|kt, keys, pos, scalar, case| {
            let mut avx512 = Vec::new();
            // SAFETY: checked above.
            unsafe { kt.group_pairs_wide(keys, pos, &mut avx512) };
            assert_eq!(scalar, avx512, "AVX-512: {case}");
        });
    }
}
