//! A new batch against a store of old fingerprints: the paper's batch query
//! (§3.3): the new batch held in memory, table by table, and the stored
//! fingerprints streamed past it. [`find_all_against`] lists the pairs
//! between the two sides, [`dedup_against`] keeps what a dedup of old + new
//! would keep among the new items.
//!
//! The old side is never compared with itself and never held: each pass
//! reads it once, a chunk at a time, and looks every old item up in the new
//! side's tables of the pass (as many tables a pass as the memory limit
//! holds, often all of them: then the store is read once). A run costs what
//! its new items cost plus one lookup per old item and table, not a job
//! over both sides.
//!
//! Invariants:
//! - The new side is its distinct fingerprints, each with its items (copies
//!   collapse: a fingerprint given 10^5 times is compared once, and its
//!   items are expanded only in the answer).
//! - A table holds the distinct values' permuted keys grouped by their top
//!   `bits` bits (in any order within a group), and a directory of them
//!   (`bits` at most the table's prefix, so a prefix group never spans
//!   directory slots): an old item's group is the slot of its key's top
//!   bits, filtered by the prefix.
//! - A pair within `k` shares the prefix of at least one table; `find_all`
//!   takes it only from the first such table ([`Design::reports`]), so no
//!   pair comes twice. The dedup keeps, for each distinct new value, the
//!   smallest old position within `k` (an atomic minimum: any order, the
//!   same answer).
//! - The dedup then deduplicates the new items no old item removes among
//!   themselves: the tables that met the store look their own keys up
//!   (the pairs of new values, each reported by one table), unless one
//!   pass could not hold every table or a slot holds a dense group; then a
//!   batch dedup of those items does it (planning and sorting them again).
//! - The store is read in blocks, each scattered by region (the top bits
//!   of the table's key), each region's items in position order: a
//!   region's new keys and directory stay in cache while its items are
//!   looked up. One pass over a block counts its regions for every table
//!   of the pass; the keys are permuted a short run at a time on the stack
//!   (to count, then to write), never stored whole, so that a table's
//!   scatter moves 20 bytes an item, not 36.
//! - A look-up compares the stored key with its group of new keys eight at
//!   a time where the CPU has AVX-512 (VPOPCNTDQ), four with AVX2, one
//!   elsewhere ([`lookup`]): a short group in a fixed number of masked
//!   steps, with no branch on its size.
//! - Skew: copies of an old fingerprint in one task (a region's items of
//!   a block) that fall in a dense new group (more than [`DENSE_GROUP`]
//!   values sharing the prefix) are compared once a task; other lookups compare the few new values of
//!   their group. Dense against dense costs the product of the distinct
//!   values of the group on each side, at most the square of the ball the
//!   values lie in.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Mutex;

use rayon::prelude::*;

use super::dense::DENSE_GROUP;
use super::kernel::Shared;
use super::source::{Source, CHUNK};
use super::{Control, Options, MAX_ITEMS};
use crate::cluster::{graph, Dedup};
use crate::cpu::Popcount;
use crate::tables::plan::{self, Design};
use crate::{Error, Result};
use lookup::lookups;

mod lookup;

/// No old item within `k`.
const NONE: u32 = u32::MAX;

/// The most bits of a table's directory: 2^22 slots, 16 MiB.
const MAX_DIRECTORY_BITS: u32 = 22;

/// A dedup against a store: [`Dedup`] over the new items, and for each
/// dropped item whether `matched` is a position in the old source (the
/// item is within `k` of a stored fingerprint) or in the new one.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct DedupAgainst {
    pub dedup: Dedup,
    /// One flag per dropped item, in the order of `dedup.dropped`.
    pub matched_old: Vec<bool>,
}

/// The new side is grouped by value through buckets of this many top bits.
const NEW_BUCKET_BITS: u32 = 11;

/// The new items, as their distinct fingerprints.
struct NewSide {
    /// Distinct fingerprints, ascending.
    values: Vec<u64>,
    /// The items of value `d`: `members[starts[d]..starts[d + 1]]`, ascending.
    starts: Vec<u32>,
    members: Vec<u32>,
}

impl NewSide {
    fn read(source: &Source<'_>, control: &Control) -> Result<NewSide> {
        let n = source.len();
        if n > MAX_ITEMS {
            return Err(Error::bad_input(source.describe(), format!("holds {n} fingerprints; a batch job takes at most 2**32-2 (split the new batch)")));
        }
        let mut fps: Vec<u64> = crate::mem::zeroed(n as usize);
        read_block(source, 0, &mut fps, control)?;
        // By value, then position: a stable scatter by the top bits, then
        // each bucket (a few hundred items at 10^6, in cache) sorted, side
        // by side. Each value's items come ascending.
        let mut bounds = vec![0usize; (1 << NEW_BUCKET_BITS) + 1];
        for &v in &fps {
            bounds[slot(v, NEW_BUCKET_BITS) + 1] += 1;
        }
        for b in 1..bounds.len() {
            bounds[b] += bounds[b - 1];
        }
        let mut items: Vec<(u64, u32)> = crate::mem::zeroed(fps.len());
        let mut at = bounds.clone();
        for (p, &v) in fps.iter().enumerate() {
            let b = slot(v, NEW_BUCKET_BITS);
            items[at[b]] = (v, p as u32);
            at[b] += 1;
        }
        drop(fps);
        let mut buckets = Vec::with_capacity(bounds.len() - 1);
        let mut rest = &mut items[..];
        for w in bounds.windows(2) {
            let (bucket, tail) = rest.split_at_mut(w[1] - w[0]);
            buckets.push(bucket);
            rest = tail;
        }
        buckets.into_par_iter().with_min_len(64).for_each(|b| b.sort_unstable());
        let mut values: Vec<u64> = Vec::new();
        let mut starts: Vec<u32> = Vec::new();
        let mut members: Vec<u32> = crate::mem::vec_with_capacity(items.len());
        for (i, &(v, p)) in items.iter().enumerate() {
            if i == 0 || values.last() != Some(&v) {
                values.push(v);
                starts.push(i as u32);
            }
            members.push(p);
        }
        starts.push(items.len() as u32);
        Ok(NewSide { values, starts, members })
    }

    fn items(&self, d: u32) -> &[u32] {
        &self.members[self.starts[d as usize] as usize..self.starts[d as usize + 1] as usize]
    }

    /// The value number of each item, in item order.
    fn value_of(&self) -> Vec<u32> {
        let mut value_of: Vec<u32> = crate::mem::zeroed(self.members.len());
        for d in 0..self.values.len() as u32 {
            for &p in self.items(d) {
                value_of[p as usize] = d;
            }
        }
        value_of
    }

    /// Bytes a table of the new side holds: a key and a value number per
    /// distinct value, and the directory.
    fn table_bytes(&self) -> u64 {
        self.values.len() as u64 * 12 + (4u64 << directory_bits(self.values.len()))
    }
}

/// Directory bits for `d` distinct values: about one value a slot.
fn directory_bits(d: usize) -> u32 {
    (d.max(1).next_power_of_two().ilog2()).min(MAX_DIRECTORY_BITS)
}

/// One table of the new side.
struct Table {
    t: usize,
    perm: plan::Permutation,
    prefix_mask: u64,
    bits: u32,
    keys: Vec<u64>,
    values: Vec<u32>,
    /// `dir[s]..dir[s + 1]`: the keys whose top `bits` bits are `s`.
    dir: Vec<u32>,
    /// How look-ups compare keys on this CPU.
    compare: Popcount,
    /// Groups of more new keys than this are dense ([`DENSE_GROUP`]).
    dense: usize,
    /// The most new keys of a directory slot.
    largest: usize,
}

impl Table {
    /// Table `t` of the new side; `bucket` is work space, kept from table
    /// to table.
    ///
    /// The keys are grouped by slot in counting passes, not sorted: one
    /// pass counts every slot (the directory), one scatters the keys into
    /// place by the slot's top half, and each of those buckets (a few
    /// thousand keys, copied aside in cache) is then scattered by the rest
    /// of the slot. Two passes through main memory, and no work space as
    /// large as the table.
    fn build(design: &Design, t: usize, new: &NewSide, compare: Popcount, bucket: &mut Vec<(u64, u32)>) -> Table {
        let spec = &design.tables()[t];
        let n = new.values.len();
        let bits = directory_bits(n).min(spec.prefix);
        let (high, low) = (bits.div_ceil(2), bits / 2);
        let mut dir = vec![0u32; (1usize << bits) + 1];
        for &v in &new.values {
            dir[slot(spec.perm.apply(v), bits) + 1] += 1;
        }
        let mut largest = 0;
        for s in 1..dir.len() {
            largest = largest.max(dir[s]);
            dir[s] += dir[s - 1];
        }
        let mut keys: Vec<u64> = crate::mem::zeroed(n);
        let mut values: Vec<u32> = crate::mem::zeroed(n);
        // Each bucket of the top `high` bits starts where its first slot does.
        let mut at: Vec<u32> = (0..1usize << high).map(|h| dir[h << low]).collect();
        for (d, &v) in new.values.iter().enumerate() {
            let key = spec.perm.apply(v);
            let h = slot(key, high);
            keys[at[h] as usize] = key;
            values[at[h] as usize] = d as u32;
            at[h] += 1;
        }
        if low > 0 {
            let mut place = vec![0u32; 1 << low];
            for h in 0..1usize << high {
                let slots = h << low..(h + 1) << low;
                let items = dir[slots.start] as usize..dir[slots.end] as usize;
                bucket.clear();
                bucket.extend(keys[items.clone()].iter().copied().zip(values[items].iter().copied()));
                place.copy_from_slice(&dir[slots]);
                for &(key, d) in bucket.iter() {
                    let s = slot(key, bits) & ((1 << low) - 1);
                    keys[place[s] as usize] = key;
                    values[place[s] as usize] = d;
                    place[s] += 1;
                }
            }
        }
        Table { t, perm: spec.perm.clone(), prefix_mask: spec.prefix_mask, bits, keys, values, dir, compare, dense: DENSE_GROUP, largest: largest as usize }
    }

    /// Tables `ts` of the new side, built side by side.
    fn build_all(design: &Design, ts: std::ops::Range<usize>, new: &NewSide) -> Vec<Table> {
        let compare = lookup::for_this_cpu();
        ts.into_par_iter().map_init(Vec::new, |bucket, t| Table::build(design, t, new, compare, bucket)).collect()
    }

    /// The new keys that may be close to `key`: its directory slot.
    #[inline(always)]
    fn group(&self, key: u64) -> std::ops::Range<usize> {
        let s = slot(key, self.bits);
        self.dir[s] as usize..self.dir[s + 1] as usize
    }
}

#[inline]
fn slot(key: u64, bits: u32) -> usize {
    key.checked_shr(64 - bits).unwrap_or(0) as usize
}

/// What a pass does with each close pair `(new value, old position)`.
enum Sink<'s> {
    /// The smallest old position of each new value.
    Min(&'s [AtomicU32]),
    /// Every pair, `value << 32 | old`, reported by one table only.
    Pairs(&'s Mutex<Vec<u64>>),
}

/// The design of the new side's tables: the caller's, or the one whose
/// lookups cost least for this many distinct values (an index's design:
/// the old items are its queries).
fn design_for(opts: &Options, distinct: usize) -> Result<std::sync::Arc<Design>> {
    let design = match &opts.design {
        Some(d) => std::sync::Arc::clone(d),
        None => std::sync::Arc::new(plan::plan(opts.k, distinct)?),
    };
    if design.k() < opts.k {
        return Err(Error::invalid("k", "at most the design's k", opts.k));
    }
    Ok(design)
}

/// Stored items read at a time (a block), at least: a block is scattered
/// by region of the new side's table, so that each region's keys and
/// directory (about [`REGION_BYTES`]) are loaded into the cache once a
/// block and looked up many times, rather than once per look-up from
/// memory. A block of as many items as the new side has distinct values
/// loads its tables once for about 12 bytes a stored item; a larger one
/// leaves the cache while it is scattered (measured at 10^6 new: 4 * 10^6
/// stored items a block scattered at half the speed of 10^6).
const MIN_BLOCK: u64 = 1 << 20;
/// New-side bytes (keys and directory) of a region: about a core's L1
/// data cache (measured at 10^6 new: regions of 8 to 128 KiB within 10 %
/// of each other, 32 KiB the fastest).
const REGION_BYTES: u64 = 1 << 15;
/// At most 2^11 regions: a scatter to more places than that loses the
/// CPU's write combining (see the radix sort's digit); a new side of
/// 10^7 fingerprints or more then has regions above [`REGION_BYTES`].
const MAX_REGION_BITS: u32 = 11;

/// The new side's tables after a stream whose one pass held them all.
struct Held {
    design: std::sync::Arc<Design>,
    tables: Vec<Table>,
}

/// Streams `old` past the new side's tables, as many a pass as the memory
/// limit holds, handing every close pair to `sink`; the tables, when one
/// pass held them all.
fn stream(new: &NewSide, old: &Source<'_>, opts: &Options, control: &Control, sink: &Sink<'_>, then: u64) -> Result<Option<Held>> {
    let m = old.len();
    if m > MAX_ITEMS {
        return Err(Error::bad_input(old.describe(), format!("holds {m} fingerprints; a store takes at most 2**32-2 (split it, and pass each part)")));
    }
    let design = design_for(opts, new.values.len())?;
    let tables = design.tables().len();
    // The new side, and the work space of building its tables (a key and a
    // value number for each value of a bucket, for each thread building
    // one: at most every value, on a skewed side).
    let held = new.values.len() as u64 * 8 + new.members.len() as u64 * 8 + new.values.len() as u64 * 16 * rayon::current_num_threads() as u64;
    // A block: 8 bytes a stored item read, 12 scattered.
    let block = (new.values.len() as u64).max(MIN_BLOCK).min(m.max(1));
    let per_pass = (opts.memory_limit.saturating_sub(held + block * 20) / new.table_bytes().max(1)).clamp(1, tables as u64) as usize;
    let passes = tables.div_ceil(per_pass);
    // The job as the caller sees it: the new fingerprints read, each pass
    // over the stored ones, and `then` units of the caller's after it.
    let n = new.members.len() as u64;
    control.begin(n + passes as u64 * m + then);
    control.step("reading the new fingerprints".into(), n);
    control.advance(n);
    if new.values.is_empty() || m == 0 {
        control.skip("the stored fingerprints".into(), passes as u64 * m);
        return Ok(None);
    }
    let pairs = matches!(sink, Sink::Pairs(_));
    let region_bits = (new.table_bytes() / REGION_BYTES).max(1).ilog2().min(MAX_REGION_BITS);
    let mut fps: Vec<u64> = crate::mem::zeroed(block as usize);
    let mut scattered = Scattered { keys: crate::mem::zeroed(block as usize), pos: crate::mem::zeroed(block as usize), starts: Vec::new() };
    let mut last = Vec::new();
    for (p, first) in (0..tables).step_by(per_pass).enumerate() {
        control.check()?;
        drop(std::mem::take(&mut last));
        let group = Table::build_all(&design, first..(first + per_pass).min(tables), new);
        let name = if passes == 1 { "the stored fingerprints".to_string() } else { format!("the stored fingerprints, pass {} of {passes}", p + 1) };
        control.step(name, m);
        let mut start = 0u64;
        while start < m {
            let len = (m - start).min(block) as usize;
            read_block(old, start, &mut fps[..len], control)?;
            let pieces = Pieces::of(len);
            let counts = count_regions(&group, &fps[..len], region_bits, pieces);
            for (table, counts) in group.iter().zip(counts) {
                let bits = region_bits.min(table.bits);
                scatter(table, &fps[..len], start, bits, pieces, &counts, &mut scattered);
                let tasks = region_tasks(&scattered.starts);
                tasks.into_par_iter().try_for_each(|range| -> Result<()> {
                    control.check()?;
                    let (lo, hi) = (scattered.starts[range.start], scattered.starts[range.end]);
                    let found = SCRATCH.with_borrow_mut(|scratch| {
                        let mut found = std::mem::take(&mut scratch.found);
                        found.clear();
                        lookups(&design, table, &scattered.keys[lo..hi], &scattered.pos[lo..hi], opts.k, pairs, scratch, &mut found);
                        found
                    });
                    deliver(sink, &found);
                    SCRATCH.with_borrow_mut(|scratch| scratch.found = found);
                    Ok(())
                })?;
            }
            control.advance(len as u64);
            start += len as u64;
        }
        last = group;
    }
    Ok((passes == 1).then_some(Held { design, tables: last }))
}

/// Hands a task's close pairs to the sink.
fn deliver(sink: &Sink<'_>, found: &[u64]) {
    match sink {
        Sink::Min(best) => {
            for &f in found {
                best[(f >> 32) as usize].fetch_min(f as u32, Ordering::Relaxed);
            }
        }
        Sink::Pairs(all) => {
            if !found.is_empty() {
                let mut all = all.lock().unwrap_or_else(|e| e.into_inner());
                crate::mem::reserve(&mut all, found.len(), "the pairs of find_all");
                all.extend_from_slice(found);
            }
        }
    }
}

/// Reads stored items `start..start + out.len()` into `out`, on rayon threads.
fn read_block(old: &Source<'_>, start: u64, out: &mut [u64], control: &Control) -> Result<()> {
    out.par_chunks_mut(CHUNK).enumerate().try_for_each(|(c, part)| {
        control.check()?;
        old.read_into(start + (c * CHUNK) as u64, part)
    })
}

/// A block's permuted keys and positions, grouped by region (the top bits
/// of the key), each region's items in position order.
struct Scattered {
    keys: Vec<u64>,
    pos: Vec<u32>,
    /// Region `r`'s items: `starts[r]..starts[r + 1]`.
    starts: Vec<usize>,
}

/// Keys permuted at a time, on the stack: the scatter permutes each run
/// twice (to count, then to write) rather than store a block of keys.
const RUN: usize = 256;

/// How a block is cut for the threads: pieces of `len` items, the same
/// for counting and writing (a piece writes where its counts reserved).
#[derive(Copy, Clone)]
struct Pieces {
    len: usize,
}

impl Pieces {
    fn of(items: usize) -> Pieces {
        let pieces = (rayon::current_num_threads() * 4).min(items.div_ceil(4096)).max(1);
        Pieces { len: items.div_ceil(pieces).max(1) }
    }
}

/// Calls `f` with each run of `part`'s keys permuted by `perm` and the
/// offset of the run in `part`.
#[inline(always)]
fn permuted_runs(perm: &plan::Permutation, part: &[u64], mut f: impl FnMut(usize, &[u64])) {
    let mut buf = [0u64; RUN];
    for (c, run) in part.chunks(RUN).enumerate() {
        let keys = &mut buf[..run.len()];
        perm.apply_slice(run, keys);
        f(c * RUN, keys);
    }
}

/// For each table of `group`, each piece's count of items by region (the
/// top `region_bits` bits of the table's key, at most the table's
/// directory bits): a piece is read from memory once and counted for
/// every table of the pass while it is in cache.
fn count_regions(group: &[Table], fps: &[u64], region_bits: u32, pieces: Pieces) -> Vec<Vec<Vec<u32>>> {
    // Counting needs only the keys' top bits: fewer moves than whole keys.
    let leads: Vec<(plan::Permutation, u32)> = group
        .iter()
        .map(|t| {
            let bits = region_bits.min(t.bits);
            (t.perm.leading(bits), bits)
        })
        .collect();
    let by_piece: Vec<Vec<Vec<u32>>> = fps
        .par_chunks(pieces.len)
        .map(|part| {
            leads
                .iter()
                .map(|(lead, bits)| {
                    let mut c = vec![0u32; 1 << bits];
                    permuted_runs(lead, part, |_, keys| {
                        for &key in keys {
                            c[slot(key, *bits)] += 1;
                        }
                    });
                    c
                })
                .collect()
        })
        .collect();
    // [piece][table] to [table][piece].
    let mut by_table: Vec<Vec<Vec<u32>>> = vec![Vec::with_capacity(by_piece.len()); group.len()];
    for piece in by_piece {
        for (t, c) in piece.into_iter().enumerate() {
            by_table[t].push(c);
        }
    }
    by_table
}

/// Permutes a block for `table` and groups it by the top `bits` bits, from
/// each piece's `counts` of its regions (a stable counting sort: each piece
/// writes its items at the places reserved for it).
fn scatter(table: &Table, fps: &[u64], start: u64, bits: u32, pieces: Pieces, counts: &[Vec<u32>], out: &mut Scattered) {
    let regions = 1usize << bits;
    // Where each piece's items of each region go.
    let mut at = vec![vec![0usize; regions]; counts.len()];
    let mut total = 0usize;
    out.starts.clear();
    for r in 0..regions {
        out.starts.push(total);
        for (p, c) in counts.iter().enumerate() {
            at[p][r] = total;
            total += c[r] as usize;
        }
    }
    out.starts.push(total);
    assert!(total == fps.len() && total <= out.keys.len().min(out.pos.len()), "scatter: the counts do not match the block");
    let keys = Shared(out.keys.as_mut_ptr());
    let pos = Shared(out.pos.as_mut_ptr());
    fps.par_chunks(pieces.len).zip(at).enumerate().for_each(|(p, (part, mut at))| {
        let first = start + (p * pieces.len) as u64;
        permuted_runs(&table.perm, part, |offset, run| {
            for (i, &key) in run.iter().enumerate() {
                let r = slot(key, bits);
                // SAFETY: `at[r]` walks the slots reserved for this piece's
                // items of region `r`, within the block (`total` = fps.len()
                // <= the buffers' length, checked above); no other piece
                // writes them.
                unsafe {
                    keys.write(at[r], key);
                    pos.write(at[r], (first + (offset + i) as u64) as u32);
                }
                at[r] += 1;
            }
        });
    });
}

/// Tasks of whole regions, about [`CHUNK`] items each.
fn region_tasks(starts: &[usize]) -> Vec<std::ops::Range<usize>> {
    let mut tasks = Vec::new();
    let regions = starts.len() - 1;
    let mut r = 0;
    while r < regions {
        let first = r;
        r += 1;
        while r < regions && starts[r + 1] - starts[first] <= CHUNK {
            r += 1;
        }
        tasks.push(first..r);
    }
    tasks
}

/// Work space of a thread's look-ups, kept from task to task.
#[derive(Default)]
struct Scratch {
    found: Vec<u64>,
    memo: HashMap<u64, (u32, u32)>,
    memo_values: Vec<u32>,
}

thread_local! {
    static SCRATCH: std::cell::RefCell<Scratch> = Default::default();
}

/// Every pair of a new item and an old item within `k`, as `[new, old]`
/// (positions in each source, or `new_ids[new]` and `old_ids[old]`),
/// sorted. The old items are never paired with each other, nor the new.
///
/// # Errors
/// [`Error::BadInput`] for a side of more than [`MAX_ITEMS`] items;
/// [`Error::InvalidParameter`] for ids of another length; [`Error::TooLarge`] when the answer would not fit in
/// memory (found before it is made); [`Error::Io`] when a source cannot be
/// read; [`Error::Interrupted`] when cancelled.
pub fn find_all_against(
    new: &Source<'_>,
    old: &Source<'_>,
    new_ids: Option<&[u64]>,
    old_ids: Option<&[u64]>,
    opts: &Options,
    control: &Control,
) -> Result<Vec<[u64; 2]>> {
    check_len("ids", new, new_ids)?;
    check_len("against_ids", old, old_ids)?;
    let side = NewSide::read(new, control)?;
    let found = Mutex::new(Vec::new());
    stream(&side, old, opts, control, &Sink::Pairs(&found), 0)?;
    let found = found.into_inner().unwrap_or_else(|e| e.into_inner());
    let count: u64 = found.par_iter().map(|&f| side.items((f >> 32) as u32).len() as u64).sum();
    let need = count.saturating_mul(16);
    if let Some(available) = crate::mem::available().filter(|&a| need > a) {
        return Err(Error::TooLarge {
            what: format!("the {count} pairs of find_all against a store"),
            bytes: need,
            available,
            advice: "split the new batch".into(),
        });
    }
    let mut out: Vec<[u64; 2]> = Vec::new();
    out.try_reserve_exact(count as usize).map_err(|_| Error::TooLarge {
        what: format!("the {count} pairs of find_all against a store"),
        bytes: need,
        available: 0,
        advice: "split the new batch".into(),
    })?;
    for f in found {
        let o = f as u32 as usize;
        let old_id = old_ids.map_or(o as u64, |ids| ids[o]);
        out.extend(side.items((f >> 32) as u32).iter().map(|&p| [new_ids.map_or(u64::from(p), |ids| ids[p as usize]), old_id]));
    }
    out.par_sort_unstable();
    Ok(out)
}

/// The dedup of the new items against a store: an item is dropped when it
/// is within `k` of any old item (matched to the old item of the smallest
/// position within `k`), or of a new item kept before it (matched to the
/// earliest such). When the old items are themselves a dedup's kept items
/// (no two within `k`), this keeps exactly what a dedup of old + new, in
/// that order, keeps among the new items. Copies and dense groups of the
/// new side cost what they cost in [`super::dedup`].
///
/// # Errors
/// As [`find_all_against`].
pub fn dedup_against(new: &Source<'_>, old: &Source<'_>, opts: &Options, control: &Control) -> Result<DedupAgainst> {
    let side = NewSide::read(new, control)?;
    let best: Vec<AtomicU32> = (0..side.values.len()).map(|_| AtomicU32::new(NONE)).collect();
    let held = stream(&side, old, opts, control, &Sink::Min(&best), side.members.len() as u64)?;
    let n = side.members.len();
    // The new items no old item removes, deduplicated among themselves
    // (those removed never remove others: they are not kept).
    control.step("deduplicating the new fingerprints".into(), n as u64);
    let inner = match held {
        // Without a dense group, the tables that met the store find the
        // pairs among the new values at a look-up each.
        Some(held) if held.tables.iter().all(|t| t.largest <= DENSE_GROUP) => among_new(&side, &best, &held, opts.k, control)?,
        _ => {
            let _nested = control.nest();
            dedup_survivors(&side, &best, opts, control)?
        }
    };
    control.advance(n as u64);
    let value_of = side.value_of();
    drop(side);
    let mut out = DedupAgainst { dedup: Dedup { keep: inner.keep, dropped: Vec::new(), matched: Vec::new() }, matched_old: Vec::new() };
    let mut inner_dropped = inner.dropped.iter().zip(&inner.matched).peekable();
    for (p, &d) in value_of.iter().enumerate() {
        // The first old match of the item's value (NONE: none).
        let b = best[d as usize].load(Ordering::Relaxed);
        if inner_dropped.peek().is_some_and(|&(&q, _)| q as usize == p) {
            let (_, &m) = inner_dropped.next().expect("peeked");
            debug_assert_eq!(b, NONE, "an item an old one removes is not in the inner dedup");
            out.dedup.dropped.push(p as u32);
            out.dedup.matched.push(m);
            out.matched_old.push(false);
        } else if b != NONE {
            out.dedup.keep[p] = false;
            out.dedup.dropped.push(p as u32);
            out.dedup.matched.push(b);
            out.matched_old.push(true);
        }
    }
    Ok(out)
}

/// The dedup among the new items of the values no old item is close to
/// (`best[d] == NONE`), in item positions (the others: kept, never
/// dropped, never matched), from the pairs of those values the new side's
/// tables hold: each table's keys looked up in itself, a pair reported by
/// the first table whose prefix it shares, as `find_all` reports them.
/// A look-up costs its slot's keys, at most [`DENSE_GROUP`].
fn among_new(side: &NewSide, best: &[AtomicU32], held: &Held, k: u32, control: &Control) -> Result<Dedup> {
    let survives = |d: u32| best[d as usize].load(Ordering::Relaxed) == NONE;
    let first = |d: u32| side.members[side.starts[d as usize] as usize];
    let tasks: Vec<(&Table, std::ops::Range<usize>)> =
        held.tables.iter().flat_map(|t| (0..t.keys.len()).step_by(CHUNK).map(move |at| (t, at..(at + CHUNK).min(t.keys.len())))).collect();
    let found: Vec<Vec<u64>> = tasks
        .into_par_iter()
        .map(|(table, range)| -> Result<Vec<u64>> {
            control.check()?;
            let mut found = Vec::new();
            SCRATCH.with_borrow_mut(|scratch| lookups(&held.design, table, &table.keys[range.clone()], &table.values[range], k, true, scratch, &mut found));
            // Each pair comes from both of its values (and each value meets
            // itself): the lower value's look-up keeps it.
            found.retain(|&f| {
                let (d, e) = ((f >> 32) as u32, f as u32);
                d > e && survives(d) && survives(e)
            });
            for f in &mut found {
                let (a, b) = (first((*f >> 32) as u32), first(*f as u32));
                *f = u64::from(a.max(b)) << 32 | u64::from(a.min(b));
            }
            Ok(found)
        })
        .collect::<Result<_>>()?;
    let mut pairs = found.concat();
    pairs.par_sort_unstable();
    let mut sweep = graph::DedupSweep::new(side.members.len());
    sweep.feed(&pairs)?;
    drop(pairs);
    // Every later copy of a value follows its first copy.
    let mut links: Vec<u64> = Vec::new();
    for d in 0..side.values.len() as u32 {
        let items = side.items(d);
        if items.len() > 1 && survives(d) {
            links.extend(items[1..].iter().map(|&p| u64::from(p) << 32 | u64::from(items[0])));
        }
    }
    links.par_sort_unstable();
    let mut copies = graph::CopySweep::new(sweep.finish());
    copies.feed(&links)?;
    Ok(copies.finish())
}

/// [`among_new`] by a batch dedup of the surviving items' fingerprints,
/// for a new side whose tables did not fit one pass or hold a dense group.
fn dedup_survivors(side: &NewSide, best: &[AtomicU32], opts: &Options, control: &Control) -> Result<Dedup> {
    let n = side.members.len();
    let value_of = side.value_of();
    let survivors: Vec<u32> = (0..n as u32).filter(|&p| best[value_of[p as usize] as usize].load(Ordering::Relaxed) == NONE).collect();
    let fps: Vec<u64> = survivors.iter().map(|&p| side.values[value_of[p as usize] as usize]).collect();
    drop(value_of);
    let inner = super::dedup(&Source::Memory(&fps), opts, control)?;
    let mut keep = vec![true; n];
    for (&p, &kept) in survivors.iter().zip(&inner.keep) {
        keep[p as usize] = kept;
    }
    let dropped = inner.dropped.iter().map(|&s| survivors[s as usize]).collect();
    let matched = inner.matched.iter().map(|&s| survivors[s as usize]).collect();
    Ok(Dedup { keep, dropped, matched })
}

fn check_len(name: &'static str, source: &Source<'_>, ids: Option<&[u64]>) -> Result<()> {
    match ids {
        Some(ids) if ids.len() as u64 != source.len() => {
            Err(Error::InvalidParameter { name, expected: "one id per fingerprint", found: format!("{} ids for {} fingerprints", ids.len(), source.len()) })
        }
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests;
