//! LSD radix sort on the leading bits of 64-bit keys.
//!
//! Tables only need their items grouped by a prefix of the key, so the sort
//! looks at the top `bits` bits only (a few passes of up to 11 bits), and
//! each run of items sharing all of them is then put in order: with `bits` a
//! few bits above log2(n) such runs are short and an insertion pass is
//! linear; skewed keys (copies, dense clusters) make long runs, which a
//! comparison sort orders in n log n rather than n^2.

use std::cmp::Ordering;

/// Digit width limit. Each pass scatters to 2^digit places; past ~2^11 the
/// writes overwhelm the CPU's write-combining and every store misses (13-bit
/// digits built a 10M-item index 30 % slower than 11-bit ones here).
const MAX_DIGIT: u32 = 11;

/// Sorts `items` by `cmp`, which must order first by `key`; `bits` is how
/// many leading bits of the key the radix passes look at. `scratch` is grown
/// to `items.len()` and kept for the next call. Fewer than 2^32 items.
pub(crate) fn sort_by_top_bits<T: Copy + Default>(
    items: &mut Vec<T>,
    scratch: &mut Vec<T>,
    bits: u32,
    key: impl Fn(&T) -> u64,
    cmp: impl Fn(&T, &T) -> Ordering,
) {
    let n = items.len();
    if n < 256 || bits == 0 {
        items.sort_unstable_by(&cmp);
        return;
    }
    grow(scratch, n);
    if radix_passes(items, scratch, bits, &key) {
        // The result is in the scratch buffer: trade buffers, no copy.
        std::mem::swap(items, scratch);
    }
    finish_runs(items, bits, &key, &cmp);
}

/// Makes `scratch` exactly `n` long, growing it on huge pages if needed.
fn grow<T: Copy + Default>(scratch: &mut Vec<T>, n: usize) {
    if scratch.capacity() < n {
        // Grown once and reused: fresh pages cost a fault each.
        *scratch = crate::mem::vec_with_capacity(n);
    }
    scratch.resize(n, T::default());
    scratch.truncate(n);
}

/// The LSD passes over the top `bits` bits of the keys, back and forth
/// between `items` and `scratch` (same length). Returns whether the result
/// ended in `scratch`.
fn radix_passes<T: Copy>(items: &mut [T], scratch: &mut [T], bits: u32, key: &impl Fn(&T) -> u64) -> bool {
    let n = items.len();
    let bits = bits.min(64);
    let passes = bits.div_ceil(MAX_DIGIT);
    let width = bits.div_ceil(passes);
    let lowest = 64 - bits;
    let digits: Vec<(u32, u32)> = (0..passes)
        .map(|p| {
            let shift = lowest + p * width;
            (shift, width.min(64 - shift))
        })
        .collect();
    // One read pass counts the digits of every pass.
    let mut counts = vec![[0u32; 1 << MAX_DIGIT]; passes as usize];
    for item in items.iter() {
        let k = key(item);
        for (c, &(shift, w)) in counts.iter_mut().zip(&digits) {
            c[((k >> shift) & ((1u64 << w) - 1)) as usize] += 1;
        }
    }
    let (mut from, mut to) = (items, scratch);
    let mut in_scratch = false;
    for (c, &(shift, w)) in counts.iter_mut().zip(&digits) {
        let mask = (1u64 << w) - 1;
        if c.contains(&(n as u32)) {
            continue; // every item has the same digit: nothing moves
        }
        let mut at = 0u32;
        for slot in c.iter_mut().take(1 << w) {
            let here = *slot;
            *slot = at;
            at += here;
        }
        for item in from.iter() {
            let d = ((key(item) >> shift) & mask) as usize;
            to[c[d] as usize] = *item;
            c[d] += 1;
        }
        std::mem::swap(&mut from, &mut to);
        in_scratch = !in_scratch;
    }
    in_scratch
}

/// [`sort_by_top_bits`] on two threads for large inputs: the halves are
/// sorted side by side in one shared scratch buffer, then one linear pass
/// merges them into whichever buffer is free.
pub(crate) fn par_sort_by_top_bits<T: Copy + Default + Send + Sync>(
    items: &mut Vec<T>,
    bits: u32,
    key: impl Fn(&T) -> u64 + Sync,
    cmp: impl Fn(&T, &T) -> Ordering + Sync,
) {
    par_sort_from(PARALLEL_MIN, items, bits, key, cmp)
}

fn par_sort_from<T: Copy + Default + Send + Sync>(
    min: usize,
    items: &mut Vec<T>,
    bits: u32,
    key: impl Fn(&T) -> u64 + Sync,
    cmp: impl Fn(&T, &T) -> Ordering + Sync,
) {
    let n = items.len();
    if n < min.max(512) || bits == 0 || rayon::current_num_threads() < 2 {
        return sort_by_top_bits(items, &mut Vec::new(), bits, key, cmp);
    }
    let mut scratch = Vec::new();
    grow(&mut scratch, n);
    let mid = n / 2;
    let in_scratch = {
        let (a, b) = items.split_at_mut(mid);
        let (sa, sb) = scratch.split_at_mut(mid);
        let half = |x: &mut [T], sx: &mut [T]| {
            let moved = radix_passes(x, sx, bits, &key);
            finish_runs(if moved { sx } else { x }, bits, &key, &cmp);
            moved
        };
        let (x, y) = rayon::join(|| half(a, sa), || half(b, sb));
        // A half whose keys share a digit skips that pass, so on skewed
        // input (one half all copies) the halves can end in different
        // buffers: the moved one is brought back beside the other.
        if x != y {
            if x {
                a.copy_from_slice(sa);
            } else {
                b.copy_from_slice(sb);
            }
        }
        x && y
    };
    // The sorted halves sit in one buffer; merge them into the other.
    let (src, dst) = if in_scratch { (&scratch, &mut *items) } else { (&*items, &mut scratch) };
    let (left, right) = src.split_at(mid);
    let (mut i, mut j) = (0, 0);
    for slot in dst.iter_mut() {
        let take_right = j < right.len() && (i == left.len() || cmp(&right[j], &left[i]) == Ordering::Less);
        *slot = if take_right { right[j] } else { left[i] };
        j += usize::from(take_right);
        i += usize::from(!take_right);
    }
    if !in_scratch {
        std::mem::swap(items, &mut scratch);
    }
}

/// Bits of the first pass of [`sort_into`]: 2^11 buckets, the most whose
/// writes the CPU still combines (see [`MAX_DIGIT`]).
const FIRST_BITS: u32 = 11;

/// `map(x)` for every `x` of `src`, sorted into `out`: one pass counts the
/// top bits, a second scatters each value straight to its bucket, then each
/// bucket (a few thousand values, in cache) is sorted on the next
/// `bits - 11` bits and finished by insertion. Unlike [`sort_by_top_bits`]
/// on the whole array, one pass goes through main memory and no scratch as
/// large as the input is needed. `out` and `scratch` are reused buffers.
pub(crate) fn sort_into(src: &[u64], map: impl Fn(u64) -> u64, out: &mut Vec<u64>, scratch: &mut Vec<u64>, bits: u32) {
    let first = FIRST_BITS.min(bits).max(1);
    let starts = scatter_by_top_bits(&[src], map, first, out);
    let mut counts = [0u32; 1 << MAX_DIGIT];
    for w in starts.windows(2) {
        sort_bucket(&mut out[w[0]..w[1]], first, bits, scratch, &mut counts);
    }
}

/// Sorts `bucket`, whose values share their top `first` bits, by the next
/// `bits - first` bits and then by insertion (see [`sort_into`]).
#[inline]
fn sort_bucket(bucket: &mut [u64], first: u32, bits: u32, scratch: &mut Vec<u64>, counts: &mut [u32; 1 << MAX_DIGIT]) {
    let rest = bits.min(64).saturating_sub(first);
    let len = bucket.len();
    let mut sorted_bits = first;
    if rest > 0 && len >= 32 {
        // The bucket's values share their top bits: one counting pass
        // on the next ones, as many as leave about one value to each
        // count (more would cost more counts than values), then the
        // insertion pass below completes the order.
        let digit = rest.min(usize::BITS - len.leading_zeros()).min(MAX_DIGIT);
        let shift = 64 - first - digit;
        let mask = (1u64 << digit) - 1;
        if scratch.len() < len {
            scratch.resize(len, 0);
        }
        let tmp = &mut scratch[..len];
        tmp.copy_from_slice(bucket);
        let counts = &mut counts[..1 << digit];
        counts.fill(0);
        for &v in tmp.iter() {
            counts[((v >> shift) & mask) as usize] += 1;
        }
        let mut at = 0u32;
        for c in counts.iter_mut() {
            let here = *c;
            *c = at;
            at += here;
        }
        for &v in tmp.iter() {
            let d = ((v >> shift) & mask) as usize;
            bucket[counts[d] as usize] = v;
            counts[d] += 1;
        }
        sorted_bits += digit;
    }
    finish_runs(bucket, sorted_bits, &|&v: &u64| v, &|a: &u64, b: &u64| a.cmp(b));
}

/// `map(x)` for every `x` of `parts` (as one array) written into `out`
/// (cleared, grown if need be) in buckets by their top `first` bits: one
/// pass counts them, a second scatters each value straight to its bucket.
/// Returns the buckets' bounds: bucket `b` is `starts[b]..starts[b + 1]`.
fn scatter_by_top_bits(parts: &[&[u64]], map: impl Fn(u64) -> u64, first: u32, out: &mut Vec<u64>) -> Vec<usize> {
    let shift = 64 - first;
    let n: usize = parts.iter().map(|p| p.len()).sum();
    let mut starts = vec![0usize; (1 << first) + 1];
    for part in parts {
        for &x in part.iter() {
            starts[(map(x) >> shift) as usize + 1] += 1;
        }
    }
    for b in 1..starts.len() {
        starts[b] += starts[b - 1];
    }
    // Written straight into spare capacity: no pass zeroing it first.
    out.clear();
    if out.capacity() < n {
        *out = crate::mem::vec_with_capacity(n);
    }
    let spare = &mut out.spare_capacity_mut()[..n];
    let mut at = starts.clone();
    for part in parts {
        for &x in part.iter() {
            let v = map(x);
            let b = (v >> shift) as usize;
            spare[at[b]].write(v);
            at[b] += 1;
        }
    }
    debug_assert!(at.iter().zip(&starts[1..]).all(|(a, s)| a == s));
    // SAFETY: bucket `b` was given slots starts[b]..starts[b + 1], which
    // partition 0..n, and each value was written to the next free slot of
    // its bucket: every slot below n is initialised.
    unsafe { out.set_len(n) };
    starts
}

/// The values of `parts`, as one array, sorted: as [`sort_into`] (one
/// scatter by the top 11 bits straight from the parts, no concatenation
/// first), then the buckets sorted side by side on the rayon pool.
pub(crate) fn par_sort_parts(parts: &[&[u64]]) -> Vec<u64> {
    use rayon::prelude::*;
    let n: usize = parts.iter().map(|p| p.len()).sum();
    let bits = sort_bits(n, 0);
    let first = FIRST_BITS.min(bits);
    let mut out = Vec::new();
    let starts = if n < PARALLEL_MIN || rayon::current_num_threads() < 2 {
        scatter_by_top_bits(parts, |x| x, first, &mut out)
    } else {
        par_scatter_by_top_bits(parts, first, SCATTER_PIECE, &mut out)
    };
    let mut buckets = Vec::with_capacity(starts.len() - 1);
    let mut rest = out.as_mut_slice();
    for w in starts.windows(2) {
        let (bucket, tail) = rest.split_at_mut(w[1] - w[0]);
        buckets.push(bucket);
        rest = tail;
    }
    buckets
        .into_par_iter()
        .with_min_len(16)
        .for_each_init(|| (Vec::new(), [0u32; 1 << MAX_DIGIT]), |(scratch, counts), bucket| sort_bucket(bucket, first, bits, scratch, counts));
    out
}

/// Values a piece of [`par_scatter_by_top_bits`] holds at least: its
/// counts and slots (2^11 of each) are small beside it.
const SCATTER_PIECE: usize = 1 << 16;

/// [`scatter_by_top_bits`] (without a map) on the rayon pool: the parts,
/// as one array, cut into pieces of at least `min_piece` values, about four
/// a thread, each piece's buckets counted side by side, then each piece
/// writes its values into slots of its own in every bucket, after those of
/// the pieces before it: the serial scatter's result, value for value. One
/// thread's scatter of 10^7 values, and the faults of the fresh pages it
/// wrote, were most of `find-all`'s serial time. A piece may span parts:
/// each piece costs counts and slots for every bucket, so their number
/// follows the values and the threads, never the parts (many small blocks).
fn par_scatter_by_top_bits(parts: &[&[u64]], first: u32, min_piece: usize, out: &mut Vec<u64>) -> Vec<usize> {
    use rayon::prelude::*;
    let shift = 64 - first;
    let buckets = 1usize << first;
    let n: usize = parts.iter().map(|p| p.len()).sum();
    let size = (n / (4 * rayon::current_num_threads())).max(min_piece).max(1);
    let mut pieces: Vec<Vec<&[u64]>> = vec![Vec::new()];
    let mut room = size;
    for part in parts {
        let mut rest: &[u64] = part;
        while !rest.is_empty() {
            if room == 0 {
                pieces.push(Vec::new());
                room = size;
            }
            let (mine, tail) = rest.split_at(rest.len().min(room));
            pieces.last_mut().expect("a piece").push(mine);
            room -= mine.len();
            rest = tail;
        }
    }
    let counts: Vec<Vec<usize>> = pieces
        .par_iter()
        .map(|piece| {
            let mut c = vec![0usize; buckets];
            for &x in piece.iter().copied().flatten() {
                c[(x >> shift) as usize] += 1;
            }
            c
        })
        .collect();
    let mut starts = vec![0usize; buckets + 1];
    for c in &counts {
        for (b, &k) in c.iter().enumerate() {
            starts[b + 1] += k;
        }
    }
    for b in 1..starts.len() {
        starts[b] += starts[b - 1];
    }
    out.clear();
    if out.capacity() < n {
        // Small pages: its callers' sorted values are read in order and dropped (`crate::mem`).
        *out = crate::mem::work_vec(n);
    }
    // Each piece's slots, bucket by bucket: split off the output in the
    // order bucket, then piece, so that they partition it.
    let mut slots: Vec<Vec<&mut [std::mem::MaybeUninit<u64>]>> = (0..pieces.len()).map(|_| Vec::with_capacity(buckets)).collect();
    let mut rest = &mut out.spare_capacity_mut()[..n];
    for b in 0..buckets {
        for (mine, c) in slots.iter_mut().zip(&counts) {
            let (slot, tail) = std::mem::take(&mut rest).split_at_mut(c[b]);
            mine.push(slot);
            rest = tail;
        }
    }
    pieces.par_iter().zip(slots.par_iter_mut()).for_each(|(piece, slots)| {
        let mut at = vec![0usize; buckets];
        for &x in piece.iter().copied().flatten() {
            let b = (x >> shift) as usize;
            slots[b][at[b]].write(x);
            at[b] += 1;
        }
    });
    // SAFETY: the slots partition 0..n, and each piece wrote as many
    // values to each of its slots as it counted for that bucket: its
    // slot's length. Every slot below n is initialised.
    unsafe { out.set_len(n) };
    starts
}

/// Below this many items one thread sorts alone.
const PARALLEL_MIN: usize = 1 << 20;

/// Runs longer than this are sorted by comparison, not insertion.
const INSERTION_MAX: usize = 32;

/// Completes the order of `items`, already in order of the top `bits` bits
/// of their keys: each run sharing all of them is sorted by `cmp`, by
/// insertion when short, else by a comparison sort (see the module docs).
fn finish_runs<T: Copy>(items: &mut [T], bits: u32, key: &impl Fn(&T) -> u64, cmp: &impl Fn(&T, &T) -> Ordering) {
    let shift = 64 - bits.min(64);
    let top = |x: &T| key(x).checked_shr(shift).unwrap_or(0);
    let mut i = 0;
    while i < items.len() {
        let t = top(&items[i]);
        let mut j = i + 1;
        while j < items.len() && top(&items[j]) == t {
            j += 1;
        }
        let run = &mut items[i..j];
        if run.len() > INSERTION_MAX {
            run.sort_unstable_by(cmp);
        } else {
            insertion_pass(run, cmp);
        }
        i = j;
    }
}

/// Insertion sort: linear on input that is sorted but for a few local swaps.
fn insertion_pass<T: Copy>(items: &mut [T], cmp: &impl Fn(&T, &T) -> Ordering) {
    for i in 1..items.len() {
        if cmp(&items[i - 1], &items[i]) == Ordering::Greater {
            let x = items[i];
            let mut j = i;
            while j > 0 && cmp(&items[j - 1], &x) == Ordering::Greater {
                items[j] = items[j - 1];
                j -= 1;
            }
            items[j] = x;
        }
    }
}

/// How many leading key bits to radix on for `n` items: at least `prefix`,
/// and enough that items sharing all of them are few (the insertion pass
/// then only swaps neighbours).
pub(crate) fn sort_bits(n: usize, prefix: u32) -> u32 {
    let log = usize::BITS - n.leading_zeros();
    (log + 2).max(prefix).min(64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// One half copies of a key, the other random: the halves take
    /// different passes and end in different buffers (they once were merged
    /// from the wrong one: a silently unsorted table).
    #[test]
    fn halves_that_take_other_passes() {
        for bits in [11, 20, 23, 40, 64] {
            let mut v: Vec<(u64, u64)> = (0..1000u64).map(|i| (0xabcd_ef01_2345_6789, i)).collect();
            v.extend((0..1000u64).map(|i| (crate::job::mix(i), i)));
            let mut expected = v.clone();
            expected.sort_unstable();
            par_sort_from(1000, &mut v, bits, |p| p.0, |a, b| a.cmp(b));
            assert_eq!(v, expected, "bits = {bits}");
        }
    }

    #[test]
    fn a_hundred_thousand_close_keys_sort_in_n_log_n() {
        let mut v: Vec<(u64, u64)> = (0..100_000u64).map(|i| (0x1234_5678_0000_0000 | (i.wrapping_mul(0x9e37_79b9) & 0xffff_ffff), 100_000 - i)).collect();
        let mut expected = v.clone();
        expected.sort_unstable();
        let bits = sort_bits(v.len(), 16);
        sort_by_top_bits(&mut v, &mut Vec::new(), bits, |p| p.0, |a, b| a.cmp(b));
        assert_eq!(v, expected);
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(24))]

        #[test]
        fn sorts_like_std(
            mut v in prop::collection::vec(prop_oneof![any::<u64>(), 0u64..16, Just(u64::MAX)], 0..3000),
            bits in 0u32..=64,
        ) {
            let mut expected = v.clone();
            expected.sort_unstable();
            sort_by_top_bits(&mut v, &mut Vec::new(), bits, |&x| x, |a, b| a.cmp(b));
            prop_assert_eq!(v, expected);
        }

        #[test]
        fn parallel_sort_agrees(seed in any::<u64>(), bits in 1u32..=64) {
            let mut next = crate::testing::xorshift(seed | 1);
            let mut v: Vec<u64> = (0..5000).map(|_| { let x = next(); x >> (x % 7) }).collect();
            let mut expected = v.clone();
            expected.sort_unstable();
            par_sort_from(1000, &mut v, bits, |&x| x, |a, b| a.cmp(b));
            prop_assert_eq!(v, expected);
        }

        /// The parallel scatter puts every value where the serial one
        /// does, in pieces cut across parts of any length (many small
        /// ones too), copies too.
        #[test]
        fn the_parallel_scatter_is_the_serial_one(
            parts in prop::collection::vec(prop::collection::vec(prop_oneof![any::<u64>(), 0u64..16, Just(u64::MAX)], 0..700), 0..40),
            first in 1u32..=11,
            min_piece in 1usize..300,
        ) {
            let slices: Vec<&[u64]> = parts.iter().map(Vec::as_slice).collect();
            let (mut serial, mut parallel) = (Vec::new(), vec![5; 9]);
            let expected = scatter_by_top_bits(&slices, |x| x, first, &mut serial);
            let starts = crate::parallel::install(Some(3), || par_scatter_by_top_bits(&slices, first, min_piece, &mut parallel)).unwrap();
            prop_assert_eq!(starts, expected);
            prop_assert_eq!(parallel, serial);
        }

        #[test]
        fn sort_into_sorts_the_mapped_values(
            v in prop::collection::vec(prop_oneof![any::<u64>(), 0u64..16, Just(u64::MAX)], 0..5000),
            bits in 0u32..=64,
            xor in any::<u64>(),
        ) {
            let mut expected: Vec<u64> = v.iter().map(|&x| x ^ xor).collect();
            expected.sort_unstable();
            let (mut out, mut scratch) = (vec![7; 3], Vec::new());
            sort_into(&v, |x| x ^ xor, &mut out, &mut scratch, bits);
            prop_assert_eq!(out, expected);
        }

        /// Skewed keys (many sharing every radixed bit, payloads in any
        /// order) are sorted too, in n log n (a quadratic pass would make
        /// the 10^5-item case below take minutes).
        #[test]
        fn sorts_skewed_keys(seed in any::<u64>(), copies in 1usize..4000, bits in 1u32..=64) {
            let mut next = crate::testing::xorshift(seed | 1);
            let mut v: Vec<(u64, u64)> = (0..copies).map(|_| (0xabcd_0000_0000_0000 | next() & 0xffff, next())).collect();
            v.extend((0..200).map(|_| (next(), next())));
            let mut expected = v.clone();
            expected.sort_unstable();
            par_sort_from(1000, &mut v, bits, |p| p.0, |a, b| a.cmp(b));
            prop_assert_eq!(v, expected);
            let mut w: Vec<u64> = (0..copies as u64).map(|i| 0xabcd_0000_0000_0000 | (i * 7919) & 0xffff).collect();
            let mut expected: Vec<u64> = w.clone();
            expected.sort_unstable();
            let (mut out, mut scratch) = (Vec::new(), Vec::new());
            sort_into(&w, |v| v, &mut out, &mut scratch, bits);
            w.clear();
            prop_assert_eq!(out, expected);
        }

        #[test]
        fn sorts_pairs_by_key_then_payload(v in prop::collection::vec((0u64..64, any::<u64>()), 0..2000)) {
            let mut v: Vec<(u64, u64)> = v.into_iter().map(|(a, b)| (a << 58, b)).collect();
            let mut expected = v.clone();
            expected.sort_unstable();
            sort_by_top_bits(&mut v, &mut Vec::new(), 10, |p| p.0, |a, b| a.cmp(b));
            prop_assert_eq!(v, expected);
        }
    }
}
