//! A compressed table: the sorted permuted keys of one table in the blocks of
//! [`crate::tables::codec`], searched through the first key of every block.
//!
//! Invariants (checked by [`PackedTable::from_parts`] for bytes read from a
//! file): blocks hold `ranks[b + 1] - ranks[b] >= 1` keys, ascending within
//! and across blocks; block `b` starts with `first[b]` and spans
//! `data[b * block_bytes..]`, `block_bytes` long except the last; `dir[x]` is
//! the number of blocks whose first key's top `dir_bits` bits are below `x`.
//! The directory is rebuilt, never stored: one `u32` per block.

use std::ops::Range;
use std::sync::OnceLock;

use rayon::prelude::*;

use crate::container::Bytes;
use crate::cpu::prefetch;
use crate::tables::codec::rows::{self, RowTable, Rows};
use crate::tables::codec::{self, check_block, BlockReader, Code, Decoder, Header, SYMBOLS};

#[derive(Clone, Debug)]
pub(crate) struct PackedTable {
    block_bytes: usize,
    code: Code,
    decoder: Decoder,
    /// The blocks: built in memory, or a view of a loaded (maybe mapped)
    /// file. The only bytes of a file read after it is loaded: everything
    /// else the table needs is in memory, so a file changed under its
    /// mapping can make keys wrong (and flagged: see `each_block`) but
    /// never a length, an index or an allocation (see
    /// [`crate::container::Origin`]).
    data: Bytes,
    /// Each block's first key and rank, then the key count: in memory, even
    /// for a loaded table (12 bytes a block; its header takes 128).
    first: Vec<u64>,
    ranks: Vec<u32>,
    dir: Vec<u32>,
    dir_bits: u32,
    /// Each block's first key and places to start decoding in it.
    headers: Vec<Header>,
    /// The decoding table of whole blocks, made when first needed.
    row_table: OnceLock<RowTable>,
}

/// The parts of a packed table as they are saved.
pub(crate) struct Parts<'a> {
    pub block_bytes: usize,
    pub lengths: &'a [u8; SYMBOLS],
    pub data: &'a [u8],
    pub first: &'a [u64],
    pub ranks: &'a [u32],
}

impl PackedTable {
    /// The table of ascending distinct `keys` (fewer than 2^32).
    pub fn encode(keys: &[u64], block_bytes: usize) -> PackedTable {
        let counts = codec::symbol_counts(keys);
        let code = Code::from_counts(&counts);
        let e = codec::encode_counted(keys, &code, &counts, block_bytes);
        let decoder = code.decoder();
        let mut t = PackedTable {
            block_bytes,
            code,
            decoder,
            data: Bytes::from_vec(e.data),
            first: e.first,
            ranks: e.ranks,
            dir: Vec::new(),
            dir_bits: 0,
            headers: e.headers,
            row_table: OnceLock::new(),
        };
        t.build_dir();
        t
    }

    /// A table over saved parts, after checking every block, and the
    /// wrapping sum of `digest` over its keys (order-free: tables of one run
    /// hold the same fingerprints in different orders).
    ///
    /// # Errors
    /// A message naming the first inconsistency.
    pub fn from_parts(
        block_bytes: usize,
        lengths: [u8; SYMBOLS],
        data: Bytes,
        first: Bytes,
        ranks: Bytes,
        digest: impl Fn(u64) -> u64 + Sync,
    ) -> Result<(PackedTable, u64), String> {
        if !(codec::MIN_BLOCK_BYTES..=codec::MAX_BLOCK_BYTES).contains(&block_bytes) {
            return Err(format!("a block size of {block_bytes} bytes"));
        }
        let code = Code::from_lengths(lengths)?;
        // Copied out of the file: what the table reads of them after it is
        // loaded must not change with the file.
        let first = first.as_u64s().map_err(|e| e.to_string())?.to_vec();
        let ranks = ranks.as_u32s().map_err(|e| e.to_string())?.to_vec();
        let (nf, nr) = (first.len(), ranks.len());
        let decoder = code.decoder();
        let t = PackedTable { block_bytes, code, decoder, data, first, ranks, dir: Vec::new(), dir_bits: 0, headers: Vec::new(), row_table: OnceLock::new() };
        if nr != nf + 1 {
            return Err(format!("{nf} blocks but {nr} block ranks (expected one more)"));
        }
        let ranks = &t.ranks;
        if ranks[0] != 0 || ranks.windows(2).any(|w| w[1] <= w[0]) {
            return Err("block ranks that do not ascend from 0".into());
        }
        let expected = if nf == 0 { 0 } else { (nf - 1) * block_bytes + 8 };
        let data_len = t.data.len();
        if data_len < expected || data_len > nf * block_bytes {
            return Err(format!("{data_len} bytes of blocks for {nf} blocks of {block_bytes}"));
        }
        let firsts = &t.first;
        if firsts.windows(2).any(|w| w[1] <= w[0]) {
            return Err("block keys that do not ascend".into());
        }
        let checked: Vec<Result<(u64, Header, u64), String>> = (0..nf)
            .into_par_iter()
            .map(|b| {
                let count = (ranks[b + 1] - ranks[b]) as usize;
                let mut sum = 0u64;
                let (last, header) = check_block(t.block(b), ranks[b], count, firsts[b], &t.decoder, |key| sum = sum.wrapping_add(digest(key)))
                    .map_err(|e| format!("block {b}: {e}"))?;
                Ok((last, header, sum))
            })
            .collect();
        let mut headers = Vec::with_capacity(nf);
        let mut sum = 0u64;
        for (b, result) in checked.into_iter().enumerate() {
            let (last, header, block_sum) = result?;
            sum = sum.wrapping_add(block_sum);
            if b + 1 < nf && last >= firsts[b + 1] {
                return Err(format!("block {b} ends above where block {} starts", b + 1));
            }
            headers.push(header);
        }
        let mut t = t;
        t.headers = headers;
        t.build_dir();
        Ok((t, sum))
    }

    /// What [`Self::from_parts`] takes back.
    pub fn parts(&self) -> Parts<'_> {
        Parts { block_bytes: self.block_bytes, lengths: self.code.lengths(), data: self.data.as_slice(), first: &self.first, ranks: &self.ranks }
    }

    fn build_dir(&mut self) {
        let first = &self.first;
        let n = first.len();
        let bits = (usize::BITS - n.leading_zeros()).saturating_sub(1).min(24);
        let mut dir = vec![0u32; (1usize << bits) + 1];
        for &key in first {
            dir[top(key, bits) + 1] += 1;
        }
        for x in 1..dir.len() {
            dir[x] += dir[x - 1];
        }
        self.dir = dir;
        self.dir_bits = bits;
    }

    /// Number of keys.
    pub fn len(&self) -> usize {
        *self.ranks.last().unwrap_or(&0) as usize
    }

    pub fn block_bytes(&self) -> usize {
        self.block_bytes
    }

    pub fn blocks(&self) -> usize {
        self.first.len()
    }

    /// Bytes of memory (or of the mapping) held.
    pub fn bytes(&self) -> usize {
        let rows = self.row_table.get().map_or(0, |_| std::mem::size_of::<rows::Table>());
        self.data.len() + self.blocks() * 12 + 4 + self.dir.len() * 4 + self.headers.len() * std::mem::size_of::<Header>() + rows
    }

    #[inline]
    fn block(&self, b: usize) -> &[u8] {
        let data = self.data.as_slice();
        let start = (b * self.block_bytes).min(data.len());
        &data[start..(start + self.block_bytes).min(data.len())]
    }

    /// The data from block `b` on: what a reader of block `b` takes.
    #[inline]
    fn tail(&self, b: usize) -> &[u8] {
        let data = self.data.as_slice();
        &data[(b * self.block_bytes).min(data.len())..]
    }

    #[inline]
    fn count(&self, b: usize) -> usize {
        self.headers[b].count as usize
    }

    /// The directory entry for `key`: blocks from `dir[x + 1]` on start
    /// above `key`'s top bits.
    #[inline]
    fn dir_entry(&self, key: u64) -> &u32 {
        &self.dir[top(key, self.dir_bits) + 1]
    }

    /// The last block whose first key is at most `key` (0 if none is).
    #[inline]
    fn locate(&self, key: u64) -> usize {
        let mut j = *self.dir_entry(key) as usize;
        while j > 0 && self.headers[j - 1].first > key {
            j -= 1;
        }
        j.saturating_sub(1)
    }

    /// The first of the steps that [`Run::probe`](crate::tables::run::Run::probe)
    /// takes for many tables in turn, so that their cache misses overlap:
    /// requests the directory entry for `key`.
    #[inline]
    pub fn prefetch_dir(&self, key: u64) {
        prefetch(self.dir_entry(key) as *const u32 as *const u8);
    }

    /// The second step: requests the header of the block where a search for
    /// `key` most likely starts (the directory entry is in cache by now).
    #[inline]
    pub fn prefetch_header(&self, key: u64) {
        let j = *self.dir_entry(key) as usize;
        if let Some(h) = self.headers.get(j.saturating_sub(1)) {
            let line = h as *const Header as *const u8;
            prefetch(line);
            prefetch(line.wrapping_add(64));
        }
    }

    /// Calls `f` with every key in `lo..=hi`, ascending.
    #[inline]
    pub fn for_each_in(&self, lo: u64, hi: u64, mut f: impl FnMut(u64)) {
        search_all(&mut [self.search(lo, hi)], |_, key, _| f(key));
    }

    /// A reader of block `b` standing on the first key or the last mark
    /// below `key`, and the index in the block of the key it stands on.
    /// Reads the header only: the block's bytes may still be on their way.
    #[inline]
    fn start(&self, b: usize, key: u64) -> (BlockReader<'_>, usize) {
        let h = &self.headers[b];
        match h.mark_below(key) {
            Some(m) => (BlockReader::at(self.tail(b), &self.decoder, m), usize::from(m.index)),
            None => (BlockReader::at_first(self.tail(b), &self.decoder, h.first), 0),
        }
    }

    /// A search for the keys in `lo..=hi`, to run with others by
    /// [`search_all`]. The bytes it decodes first are requested from memory
    /// now: searches created together wait for them together.
    #[inline]
    pub fn search(&self, lo: u64, hi: u64) -> Search<'_> {
        if self.blocks() == 0 {
            let reader = BlockReader::new(&[], &self.decoder);
            return Search { table: self, reader, block: 0, left: 0, lo, hi, done: true, broken: false };
        }
        let b = self.locate(lo);
        let (reader, index) = self.start(b, lo);
        let at = reader.bits_read() / 8;
        let tail = self.tail(b);
        // The decoder reads 8 bytes at a time: a key may straddle two lines.
        for line in [at, at + 64] {
            if line < tail.len() {
                prefetch(tail[line..].as_ptr());
            }
        }
        Search { table: self, reader, block: b, left: self.count(b) - 1 - index, lo, hi, done: false, broken: false }
    }

    /// The rank of `key`, if present.
    #[inline]
    pub fn position(&self, key: u64) -> Option<usize> {
        if self.blocks() == 0 {
            return None;
        }
        let b = self.locate(key);
        let (mut r, index) = self.start(b, key);
        let count = self.count(b);
        let mut cur = r.current();
        for i in index..count {
            if i > index {
                let Some(key) = r.next_key() else {
                    self.data.mark_damaged();
                    return None;
                };
                cur = key;
            }
            if cur >= key {
                return (cur == key).then(|| self.headers[b].rank as usize + i);
            }
        }
        None
    }

    /// Appends the keys of blocks `range`.
    pub fn decode_blocks(&self, range: Range<usize>, out: &mut Vec<u64>) {
        let Some(first) = self.headers.get(range.start) else { return };
        let end = self.headers.get(range.end).map_or(self.len(), |h| h.rank as usize);
        let at = out.len();
        out.resize(at + end - first.rank as usize, 0);
        self.decode_into(range, &mut out[at..]);
    }

    /// Writes the keys of blocks `range` to `out`, which holds exactly that
    /// many.
    fn decode_into(&self, range: Range<usize>, out: &mut [u64]) {
        let mut at = 0;
        self.each_block(range, false, |keys, n| {
            out[at..at + n].copy_from_slice(&keys[..n]);
            at += n;
        });
    }

    /// Calls `f(keys, n)` for each block of `range`, in order: its `n` keys
    /// are the first of `keys`, which has [`rows::SLACK`] more after them.
    /// Six blocks at a time by the row decoder, where they fit its rows.
    ///
    /// Every block is checked as it is decoded: its first key is the one its
    /// header holds, its keys ascend, and its last is below the next block's
    /// first. Blocks were checked when built or loaded, so one that fails
    /// comes from a file changed under its mapping: the table is flagged
    /// damaged (the operation then fails, see [`Self::damaged`]) and the
    /// block goes to `f` as decoded, or with `n = 0` when `skip_damaged`
    /// (for work whose cost grows with what the keys say, such as pairs).
    fn each_block(&self, range: Range<usize>, skip_damaged: bool, mut f: impl FnMut(&[u64], usize)) {
        let rt = self.row_table.get_or_init(|| RowTable::new(&self.decoder));
        let mut rows = Rows::new();
        let mut keys: Vec<u64> = Vec::new();
        let data = self.data.as_slice();
        let mut b = range.start;
        let end = range.end.min(self.blocks());
        let mut give = |b: usize, keys: &[u64], n: usize, decoded: bool| {
            if decoded && self.sound(b, &keys[..n]) {
                f(keys, n);
            } else {
                self.data.mark_damaged();
                f(keys, if skip_damaged { 0 } else { n });
            }
        };
        while b < end {
            let group = b..b + rows::LANES;
            if group.end <= end && group.clone().all(|b| self.count(b) <= rows::ROW) {
                let starts = std::array::from_fn(|l| (b + l) * self.block_bytes);
                let counts: [usize; rows::LANES] = std::array::from_fn(|l| self.count(b + l));
                let ok = rows::decode_rows(data, &self.decoder, rt, starts, counts, &mut rows);
                for (l, &n) in counts.iter().enumerate() {
                    give(b + l, rows.row(l), n, ok);
                }
                b = group.end;
            } else {
                keys.clear();
                let mut r = BlockReader::new(self.tail(b), &self.decoder);
                keys.push(r.current());
                let mut ok = true;
                for _ in 1..self.count(b) {
                    let Some(key) = r.next_key() else {
                        ok = false;
                        break;
                    };
                    keys.push(key);
                }
                let n = self.count(b);
                keys.resize(n + rows::SLACK, 0);
                give(b, &keys, n, ok);
                b += 1;
            }
        }
    }

    /// Whether `keys`, decoded from block `b`, are what the block held when
    /// it was checked, as far as its header tells: the same first key, and
    /// the last one above it and below the next block's first key. Changed
    /// bytes decode to keys that are still in order nearly everywhere (a
    /// key is built above the one before; only an overflow past 2^64 - 1
    /// goes back), so the ends tell a changed block at a constant cost a
    /// block; a full check of the order cost a tenth of the decoding.
    #[inline]
    fn sound(&self, b: usize, keys: &[u64]) -> bool {
        let (Some(&first), Some(&last)) = (keys.first(), keys.last()) else { return true };
        first == self.headers[b].first && (keys.len() == 1 || last > first) && self.headers.get(b + 1).is_none_or(|h| last < h.first)
    }

    /// The blocks cut into about `parts` ranges, none of them empty, at
    /// places where the neighbouring keys are not close (see
    /// [`Self::for_each_pair_sharing_prefix`]): what each range holds of the pairs
    /// can be worked on alone.
    pub fn independent_parts(&self, below: u32, parts: usize) -> Vec<Range<usize>> {
        let limit = rows::close_limit(below);
        let blocks = self.blocks();
        let mut cuts = vec![0];
        let mut keys = Vec::new();
        for p in 1..parts.max(1) {
            // Past the last cut, the first block whose first key is not
            // close to the key before it (about one in five is).
            let mut b = (blocks * p / parts).max(cuts[cuts.len() - 1] + 1);
            while b < blocks {
                keys.clear();
                self.decode_blocks(b - 1..b, &mut keys);
                if keys.last().is_none_or(|&last| last ^ self.headers[b].first > limit) {
                    break;
                }
                b += 1;
            }
            if b >= blocks {
                break;
            }
            cuts.push(b);
        }
        cuts.push(blocks);
        cuts.windows(2).filter(|w| w[0] < w[1]).map(|w| w[0]..w[1]).collect()
    }

    /// Calls `f(x, y)`, `x` before `y`, for every two keys of `blocks` that
    /// share their top `64 - below` bits (whose highest differing bit is
    /// below `below`), when no key of `blocks` shares them with a key
    /// outside (see [`Self::independent_parts`]).
    pub fn for_each_pair_sharing_prefix(&self, blocks: Range<usize>, below: u32, mut f: impl FnMut(u64, u64)) {
        let mut groups = rows::Groups::new(below);
        self.each_block(blocks, true, |keys, n| groups.row(keys, n, &mut f));
    }

    /// Every key, ascending.
    pub fn decode(&self) -> Vec<u64> {
        let mut out = crate::mem::vec_with_capacity(self.len());
        self.decode_blocks(0..self.blocks(), &mut out);
        out
    }
}

/// A search in progress: the reader stands on the next key to look at.
pub(crate) struct Search<'a> {
    table: &'a PackedTable,
    reader: BlockReader<'a>,
    block: usize,
    /// Keys of the block after the current one.
    left: usize,
    lo: u64,
    hi: u64,
    done: bool,
    /// The search met bytes that no longer decode as checked: the table is
    /// flagged damaged when the searches end (see [`search_all`]).
    broken: bool,
}

impl Search<'_> {
    /// Looks at the current key and moves to the next; false once done.
    #[inline(always)]
    fn step(&mut self, mut found: impl FnMut(u64, usize)) -> bool {
        let key = self.reader.current();
        if key > self.hi {
            self.done = true;
            return false;
        }
        if key >= self.lo {
            let h = &self.table.headers[self.block];
            found(key, h.rank as usize + h.count as usize - 1 - self.left);
        }
        if self.left > 0 {
            self.left -= 1;
            // Checked blocks always decode: one that does not comes from a
            // file changed under its mapping, and ends the search. (No
            // branch here: this is the inner loop of every probe.)
            let undecodable = self.reader.next_key().is_none();
            self.broken |= undecodable;
            self.done = undecodable;
        } else {
            self.block += 1;
            self.done = self.block >= self.table.blocks();
            if !self.done {
                self.reader = BlockReader::new(self.table.tail(self.block), &self.table.decoder);
                self.left = self.table.count(self.block) - 1;
                // The same for a block that no longer starts with its first key.
                let changed = self.reader.current() != self.table.headers[self.block].first;
                self.broken |= changed;
                self.done = changed;
            }
        }
        !self.done
    }
}

/// Runs `searches` together, one key of each in turn, calling `found` with
/// the search's position, and every key in its range and the key's rank. Decoding a block is one
/// long chain of dependent loads; interleaving independent searches lets the
/// CPU overlap their chains, several times faster than one after the other.
#[inline]
pub(crate) fn search_all(searches: &mut [Search<'_>], mut found: impl FnMut(usize, u64, usize)) {
    let mut active = searches.iter().filter(|s| !s.done).count();
    while active > 0 {
        active = 0;
        for (i, s) in searches.iter_mut().enumerate() {
            if !s.done && s.step(|key, rank| found(i, key, rank)) {
                active += 1;
            }
        }
    }
    for s in searches.iter().filter(|s| s.broken) {
        s.table.data.mark_damaged();
    }
}

#[inline]
fn top(key: u64, bits: u32) -> usize {
    if bits == 0 {
        0
    } else {
        (key >> (64 - bits)) as usize
    }
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod timing {
    use super::*;

    /// `cargo test --release --lib packed::timing -- --ignored --nocapture`;
    /// `KEYS=n` keys (4 million), of `KEY_BITS` random bits (64).
    #[test]
    #[ignore]
    fn decode_speed() {
        let mut next = crate::testing::xorshift(1);
        let bits = std::env::var("KEY_BITS").ok().and_then(|b| b.parse().ok()).unwrap_or(64u32);
        let n: usize = std::env::var("KEYS").ok().and_then(|b| b.parse().ok()).unwrap_or(4_000_000);
        let mut keys: Vec<u64> = (0..n).map(|_| next() >> (64 - bits)).collect();
        keys.sort_unstable();
        keys.dedup();
        let mut best = f64::MAX;
        for _ in 0..5 {
            let s = std::time::Instant::now();
            std::hint::black_box(PackedTable::encode(&keys, 1024));
            best = best.min(s.elapsed().as_secs_f64());
        }
        println!("encode: {:.2} ns/key", best / keys.len() as f64 * 1e9);
        let t = PackedTable::encode(&keys, 1024);
        let mut out = vec![0u64; keys.len()];
        t.decode_into(0..t.blocks(), &mut out);
        assert_eq!(out, keys);
        let mut best = f64::MAX;
        for _ in 0..9 {
            let s = std::time::Instant::now();
            t.decode_into(0..t.blocks(), &mut out);
            best = best.min(s.elapsed().as_secs_f64());
        }
        println!("decode_into: {:.2} ns/key", best / keys.len() as f64 * 1e9);
        let rt = RowTable::new(&t.decoder);
        let mut rows = Rows::new();
        let mut best = f64::MAX;
        for _ in 0..9 {
            let s = std::time::Instant::now();
            for b in (0..t.blocks() - t.blocks() % rows::LANES).step_by(rows::LANES) {
                let starts = std::array::from_fn(|l| (b + l) * t.block_bytes);
                let counts = std::array::from_fn(|l| t.count(b + l));
                assert!(rows::decode_rows(t.data.as_slice(), &t.decoder, &rt, starts, counts, &mut rows));
            }
            best = best.min(s.elapsed().as_secs_f64());
        }
        println!("rows of {} lanes: {:.2} ns/key", rows::LANES, best / keys.len() as f64 * 1e9);
        // Pairs sharing a prefix as `find_all` takes them: `PREFIX` bits
        // (25 is the design's for 10^7 keys).
        let prefix = std::env::var("PREFIX").ok().and_then(|b| b.parse().ok()).unwrap_or(25u32);
        let (mut pairs, mut best) = (0, f64::MAX);
        for _ in 0..9 {
            pairs = 0;
            let s = std::time::Instant::now();
            t.for_each_pair_sharing_prefix(0..t.blocks(), 64 - prefix, |_, _| pairs += 1);
            best = best.min(s.elapsed().as_secs_f64());
        }
        println!("pairs sharing {prefix} bits, rows included: {:.2} ns/key ({pairs} pairs)", best / keys.len() as f64 * 1e9);
    }
}
