//! Queries of many fingerprints at once across the runs of one design
//! ([`probe_batch`], [`probe_each`]): the queries are permuted and sorted
//! once per table, and each run's table is read in ascending order, by a
//! stream over a packed table's blocks when the queries are many for its
//! size ([`STREAM_RATIO`]), else by a search per query.

use super::*;

/// A match of a batch probe: run, query position, fingerprint index in the
/// run, distance.
pub(crate) type BatchHit = (u32, u32, u32, u32);

/// A batch decodes a packed table whole, rather than searching it query by
/// query, from one query per this many keys: a search costs a few cache
/// misses and about 15 keys decoded (from a mark to its range), some 200 ns;
/// a sequential decode and merge costs about 4 ns a key.
const STREAM_RATIO: usize = 40;

/// Queries looked up together: their directory entries are prefetched, then
/// their first keys, then they are scanned, so the misses of a block overlap.
const PIPELINE: usize = 32;

/// Every match within `k` of a batch of queries in runs that share one
/// design, sorted; the tables are probed in parallel ([`probe_table`]).
pub(crate) fn probe_batch(runs: &[&Run], queries: &[u64], k: u32) -> Vec<BatchHit> {
    let Some(first) = runs.first() else { return Vec::new() };
    let design = Arc::clone(first.design());
    let per_table: Vec<Vec<(u32, u32, u64, u32)>> = (0..design.tables().len())
        .into_par_iter()
        .map(|t| {
            let mut found = Vec::new();
            probe_table(runs, &design, t, queries, k, |r, pos, fp, d| found.push((r, pos, fp, d)));
            found
        })
        .collect();
    let mut hits: Vec<BatchHit> =
        per_table.into_iter().flatten().filter_map(|(r, pos, fp, d)| Some((r, pos, runs[r as usize].live_index(fp)? as u32, d))).collect();
    hits.sort_unstable();
    hits
}

/// [`probe_batch`] with each match handed to `hit` as the tables find it
/// (on rayon threads, in no order), none kept: memory follows the queries,
/// however many matches they have.
pub(crate) fn probe_each(runs: &[&Run], queries: &[u64], k: u32, hit: impl Fn(BatchHit) + Sync) {
    let Some(first) = runs.first() else { return };
    let design = Arc::clone(first.design());
    (0..design.tables().len()).into_par_iter().for_each(|t| {
        probe_table(runs, &design, t, queries, k, |r, pos, fp, d| {
            if let Some(i) = runs[r as usize].live_index(fp) {
                hit((r, pos, i as u32, d));
            }
        });
    });
}

/// The matches table `t` reports for a batch of queries in runs of one
/// design, as `(run, query position, fingerprint, distance)`. The queries
/// are permuted and sorted once for all runs, so that every run's directory
/// and keys are read in ascending order: neighbouring queries share cache
/// lines and the reads form a stream.
fn probe_table(runs: &[&Run], design: &Design, t: usize, queries: &[u64], k: u32, mut found: impl FnMut(u32, u32, u64, u32)) {
    debug_assert!(runs.iter().all(|r| std::ptr::eq(r.design().as_ref(), design)));
    let spec = &design.tables()[t];
    let perm = &spec.perm;
    let mut sorted: Vec<(u64, u32)> = queries.iter().enumerate().map(|(pos, &q)| (perm.apply(q), pos as u32)).collect();
    let bits = sort_bits(sorted.len(), spec.prefix);
    sort_by_top_bits(&mut sorted, &mut Vec::new(), bits, |p| p.0, |a, b| a.0.cmp(&b.0));
    let mask = spec.prefix_mask;
    for (r, run) in runs.iter().enumerate() {
        let mut check = |qp: u64, pos: u32, key: u64| {
            if let Some(d) = design.reported(t, key ^ qp, k) {
                found(r as u32, pos, design.unpermute(t, key), d);
            }
        };
        match &run.tables[t] {
            Table::Raw(raw) => scan_sorted(raw, &sorted, |qp, pos, keys| {
                keys.iter().for_each(|&key| check(qp, pos, key));
            }),
            // Many queries for the table's size: one pass decoding it
            // all beats a search per query, each decoding from a mark.
            Table::Packed(packed) if sorted.len() * STREAM_RATIO >= packed.len() => {
                stream_sorted(packed, mask, &sorted, |qp, pos, keys| keys.iter().for_each(|&key| check(qp, pos, key)));
            }
            Table::Packed(packed) => {
                for &(qp, pos) in &sorted {
                    packed.for_each_in(qp & mask, qp | !mask, |key| check(qp, pos, key));
                }
            }
        }
    }
}

/// [`scan_sorted`] for a packed table, decoded once from start to end by
/// [`for_each_chunk`]: the sorted queries and the decoded keys are merged.
/// Queries with the prefix of the group held back for the next chunk, or a
/// higher one, wait for it too.
fn stream_sorted(table: &PackedTable, mask: u64, sorted: &[(u64, u32)], mut visit: impl FnMut(u64, u32, &[u64])) {
    let mut next = 0;
    for_each_chunk(table, mask, |keys, after| {
        // Queries ascend, so the first key of a query's range never moves
        // back: `at` walks to it (a few dozen keys at most, with a query per
        // STREAM_RATIO keys or more).
        let mut at = 0;
        while let Some(&(qp, pos)) = sorted.get(next) {
            if after.is_some_and(|key| qp & mask >= key & mask) {
                break;
            }
            while at < keys.len() && keys[at] < qp & mask {
                at += 1;
            }
            let mut end = at;
            while end < keys.len() && keys[end] <= qp | !mask {
                end += 1;
            }
            visit(qp, pos, &keys[at..end]);
            next += 1;
        }
    });
}

/// Calls `f(keys, after)` with the keys of `table`, ascending, a chunk of
/// [`CHUNK_BLOCKS`] blocks at a time decoded into a buffer that stays in
/// cache, in whole groups of keys equal under `mask`: a chunk's last group
/// may go on in the next chunk, so it waits for it. `after` is the key that
/// follows `keys` (the first of the group held back); `None` at the end.
fn for_each_chunk(table: &PackedTable, mask: u64, mut f: impl FnMut(&[u64], Option<u64>)) {
    let mut buf = Vec::new();
    let blocks = table.blocks();
    for start in (0..blocks).step_by(CHUNK_BLOCKS) {
        let end = (start + CHUNK_BLOCKS).min(blocks);
        table.decode_blocks(start..end, &mut buf);
        let cut = if end == blocks { buf.len() } else { last_group(&buf, mask) };
        f(&buf[..cut], buf.get(cut).copied());
        buf.drain(..cut);
    }
}

/// Calls `visit(query, position, bucket keys)` for every sorted query, with
/// a software pipeline over blocks of [`PIPELINE`] queries: directory entries
/// are prefetched two blocks ahead, bucket ranges resolved and their first
/// keys prefetched one block ahead, so each load has a block's worth of work
/// to arrive in.
#[inline]
fn scan_sorted(table: &RawTable, sorted: &[(u64, u32)], mut visit: impl FnMut(u64, u32, &[u64])) {
    let blocks: Vec<&[(u64, u32)]> = sorted.chunks(PIPELINE).collect();
    let resolve = |block: &[(u64, u32)], ranges: &mut [(usize, usize); PIPELINE]| {
        for (slot, &(qp, _)) in ranges.iter_mut().zip(block) {
            *slot = table.bucket_range(qp);
            table.prefetch_key(slot.0);
        }
    };
    for block in blocks.iter().take(2) {
        block.iter().for_each(|&(qp, _)| table.prefetch_bucket(qp));
    }
    let (mut current, mut next) = ([(0usize, 0usize); PIPELINE], [(0usize, 0usize); PIPELINE]);
    if let Some(first) = blocks.first() {
        resolve(first, &mut current);
    }
    for (b, block) in blocks.iter().enumerate() {
        if let Some(ahead) = blocks.get(b + 2) {
            ahead.iter().for_each(|&(qp, _)| table.prefetch_bucket(qp));
        }
        if let Some(following) = blocks.get(b + 1) {
            resolve(following, &mut next);
        }
        for (&(lo, hi), &(qp, pos)) in current.iter().zip(block.iter()) {
            visit(qp, pos, &table.keys[lo..hi]);
        }
        std::mem::swap(&mut current, &mut next);
    }
}
