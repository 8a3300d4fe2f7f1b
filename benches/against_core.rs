//! A new batch against a store, beside the concatenation's job and floors
//! of the store's stream, in one run (issue 42, item 4): what a run
//! against a store cannot go below on this machine, with the planner's
//! design or with the issue's filter.
//!
//! ```sh
//! cargo bench --bench against_core                       # 10^6 new, 10^7 stored (10x)
//! cargo bench --bench against_core -- 1000000 100000000  # 100x
//! REPEAT=5 cargo bench --bench against_core
//! ```
//!
//! Each round, on the same random fingerprints (5 % of the new ones within
//! 1 to 3 bits of a stored one), k = 3:
//!
//! * `concatenation`: `batch::find_all` of the store followed by the new
//!   batch (the job a run against the store replaces);
//! * `against`: `find_all_against(new, store)`, the new side read and its
//!   tables built included (the pairs checked equal to the
//!   concatenation's pairs between the two sides);
//! * `against one`: the same against a store of one fingerprint: the new
//!   side read and its tables built, what a run costs whatever the store;
//! * `filter floor`: the issue's design, "a bitmap of the new batch's
//!   prefixes filters the stored fingerprints as they stream past", with
//!   tables long enough to filter (the 10 of 5 blocks: 25 to 26 leading
//!   bits, about 1.5 % of the prefixes taken at 10^6 new) and a bitmap a
//!   table of 2^23 bits (1 MiB, what a core's L2 holds; one of all 26 bits
//!   is 8 MiB, and each look-up then waits for L3). Only the look-ups are
//!   timed: no table or bitmap built, no key that passes (11 %) checked.
//! * `compare floor`: the planner's design (4 tables of 16 leading bits,
//!   about 15 new keys a prefix at 10^6 new): each stored key compared
//!   with the new keys of its prefix, eight a step, the group held in
//!   registers. The stored keys are permuted and sorted before the clock
//!   starts: only the comparisons are timed, not the grouping of the
//!   stored keys by prefix that a run must do table by table;
//! * `group floor`: the part of that grouping no design of 4 tables can
//!   skip: for each table, the stored keys permuted and scattered by their
//!   top 8 bits (a radix sort's digit), one counting pass and one writing
//!   pass, keys only (a run also carries each key's position, and groups
//!   the rest of the prefix).
//!
//! Each floor leaves out work its design cannot skip (tables built, keys
//! that pass checked, stored keys grouped), so a run against the store
//! costs more than either: the floors show how much of a run is that
//! work. Medians of `REPEAT` rounds (default 3), each a ratio to the
//! concatenation's median.

use std::time::Instant;

use rayon::prelude::*;
use rsimhash::batch::{self, Control, Options, Source};
use rsimhash::plan::{self, Design};

const K: u32 = 3;

fn xorshift(seed: u64) -> impl FnMut() -> u64 {
    let mut x = seed | 1;
    move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    }
}

/// `stored` random fingerprints, and `new` of which 5 % lie within 1 to 3
/// bits of a stored one.
fn data(new: usize, stored: usize) -> (Vec<u64>, Vec<u64>) {
    let mut next = xorshift(0x9e37_79b9_7f4a_7c15);
    let old: Vec<u64> = (0..stored).map(|_| next()).collect();
    let fresh: Vec<u64> = (0..new)
        .map(|i| {
            if i % 20 == 0 && !old.is_empty() {
                let base = old[(next() % old.len() as u64) as usize];
                (0..1 + next() % 3).fold(base, |v, _| v ^ 1 << (next() % 64))
            } else {
                next()
            }
        })
        .collect();
    (fresh, old)
}

fn env<T: std::str::FromStr>(name: &str) -> Option<T> {
    std::env::var(name).ok().and_then(|v| v.parse().ok())
}

fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(f64::total_cmp);
    xs[xs.len() / 2]
}

/// Seconds `f` took.
fn timed<T>(f: impl FnOnce() -> T) -> (f64, T) {
    let t = Instant::now();
    let out = f();
    (t.elapsed().as_secs_f64(), out)
}

/// Bits of each filter table's bitmap.
const FILTER_BITS: u32 = 23;

/// The filter floor's look-ups: how many (stored item, table) pairs pass.
fn filter_floor(design: &Design, maps: &[Vec<u64>], old: &[u64]) -> u64 {
    let leads: Vec<plan::Permutation> = design.tables().iter().map(|t| t.perm.leading(FILTER_BITS)).collect();
    old.par_chunks(4096)
        .map(|part| {
            let mut keys = [0u64; 4096];
            let keys = &mut keys[..part.len()];
            let mut pass = 0u64;
            for (lead, map) in leads.iter().zip(maps) {
                lead.apply_slice(part, keys);
                for &key in keys.iter() {
                    let s = key >> (64 - FILTER_BITS);
                    pass += (map[(s >> 6) as usize] >> (s & 63)) & 1;
                }
            }
            pass
        })
        .sum()
}

/// Each filter table's bitmap of the new side's leading bits.
fn filter_maps(design: &Design, new: &[u64]) -> Vec<Vec<u64>> {
    design
        .tables()
        .iter()
        .map(|t| {
            let lead = t.perm.leading(FILTER_BITS);
            let mut map = vec![0u64; 1 << (FILTER_BITS - 6)];
            for &v in new {
                let s = lead.apply(v) >> (64 - FILTER_BITS);
                map[(s >> 6) as usize] |= 1 << (s & 63);
            }
            map
        })
        .collect()
}

/// One table of the compare floor: the new keys grouped by their leading
/// `bits` (`dir[s]..dir[s + 1]`), and the stored keys sorted.
struct Grouped {
    bits: u32,
    new: Vec<u64>,
    dir: Vec<u32>,
    old: Vec<u64>,
}

fn grouped(design: &Design, t: usize, new: &[u64], old: &[u64]) -> Grouped {
    let spec = &design.tables()[t];
    let bits = spec.prefix;
    let mut keys: Vec<u64> = new.iter().map(|&v| spec.perm.apply(v)).collect();
    keys.par_sort_unstable();
    let mut dir = vec![0u32; (1 << bits) + 1];
    for &key in &keys {
        dir[(key >> (64 - bits)) as usize + 1] += 1;
    }
    for s in 1..dir.len() {
        dir[s] += dir[s - 1];
    }
    let mut stored: Vec<u64> = vec![0; old.len()];
    spec.perm.apply_slice(old, &mut stored);
    stored.par_sort_unstable();
    Grouped { bits, new: keys, dir, old: stored }
}

/// Bits of the group floor's one pass: 256 places, as a radix sort's digit.
const GROUP_BITS: u32 = 8;

/// The group floor for one table: the stored keys permuted and scattered
/// by their top [`GROUP_BITS`] bits into `out`, in one counting pass and
/// one writing pass over pieces side by side (keys only, no positions).
fn group_floor(perm: &plan::Permutation, old: &[u64], out: &mut [u64]) -> usize {
    let piece = old.len().div_ceil(rayon::current_num_threads() * 4).max(1);
    let counts: Vec<Vec<usize>> = old
        .par_chunks(piece)
        .map(|part| {
            let mut c = vec![0usize; 1 << GROUP_BITS];
            let mut keys = [0u64; 256];
            for run in part.chunks(256) {
                let keys = &mut keys[..run.len()];
                perm.apply_slice(run, keys);
                for &key in keys.iter() {
                    c[(key >> (64 - GROUP_BITS)) as usize] += 1;
                }
            }
            c
        })
        .collect();
    let mut at = vec![vec![0usize; 1 << GROUP_BITS]; counts.len()];
    let mut total = 0;
    for d in 0..1 << GROUP_BITS {
        for (p, c) in counts.iter().enumerate() {
            at[p][d] = total;
            total += c[d];
        }
    }
    // Each piece writes its own places: hand each one the whole buffer
    // as a raw address.
    let base = out.as_mut_ptr() as usize;
    old.par_chunks(piece).zip(at).for_each(|(part, mut at)| {
        let mut keys = [0u64; 256];
        for run in part.chunks(256) {
            let keys = &mut keys[..run.len()];
            perm.apply_slice(run, keys);
            for &key in keys.iter() {
                let d = (key >> (64 - GROUP_BITS)) as usize;
                // SAFETY: `at[d]` walks the places reserved for this
                // piece's keys of digit `d`, below `total` = `old.len()` =
                // `out.len()`; no other piece writes them.
                unsafe { (base as *mut u64).add(at[d]).write(key) };
                at[d] += 1;
            }
        }
    });
    total
}

/// The compare floor's comparisons for one table: pairs within `K`. The
/// sorted stored keys are cut into pieces at prefix changes, and each
/// piece walked run by run (a run: the keys of one prefix), side by side.
fn compare_floor(g: &Grouped) -> u64 {
    let prefix = |key: u64| (key >> (64 - g.bits)) as usize;
    let pieces = rayon::current_num_threads() * 16;
    let mut cuts: Vec<usize> = (0..=pieces).map(|i| i * g.old.len() / pieces).collect();
    for c in cuts.iter_mut().skip(1) {
        while *c < g.old.len() && *c > 0 && prefix(g.old[*c]) == prefix(g.old[*c - 1]) {
            *c += 1;
        }
    }
    cuts.windows(2)
        .collect::<Vec<_>>()
        .into_par_iter()
        .map(|w| {
            let piece = &g.old[w[0]..w[1].max(w[0])];
            let mut close = 0;
            let mut at = 0;
            while at < piece.len() {
                let s = prefix(piece[at]);
                let end = at + piece[at..].iter().take_while(|&&key| prefix(key) == s).count();
                let group = &g.new[g.dir[s] as usize..g.dir[s + 1] as usize];
                if !group.is_empty() {
                    close += close_pairs(group, &piece[at..end]);
                }
                at = end;
            }
            close
        })
        .sum()
}

/// Pairs within `K` between `group` and `run`.
fn close_pairs(group: &[u64], run: &[u64]) -> u64 {
    #[cfg(target_arch = "x86_64")]
    if group.len() <= 24 && std::arch::is_x86_feature_detected!("avx512f") && std::arch::is_x86_feature_detected!("avx512vpopcntdq") {
        // SAFETY: the CPU has AVX-512F and VPOPCNTDQ.
        return unsafe { close_pairs_avx512(group, run) };
    }
    run.iter().map(|&key| group.iter().filter(|&&n| (n ^ key).count_ones() <= K).count() as u64).sum()
}

/// [`close_pairs`], the group (at most 24 keys) in three registers.
///
/// # Safety
/// The CPU has AVX-512F and AVX-512 VPOPCNTDQ.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512vpopcntdq")]
unsafe fn close_pairs_avx512(group: &[u64], run: &[u64]) -> u64 {
    use std::arch::x86_64::*;
    let live = (1u32 << group.len()) - 1;
    let lanes = [live as __mmask8, (live >> 8) as __mmask8, (live >> 16) as __mmask8];
    // SAFETY: only the lanes of each mask, within the group, are loaded
    // (masked lanes are never read and cannot fault).
    let held = [0, 1, 2].map(|s| unsafe { _mm512_maskz_loadu_epi64(lanes[s], group.as_ptr().wrapping_add(8 * s).cast()) });
    let limit = _mm512_set1_epi64(i64::from(K));
    let mut pairs = 0u64;
    for &key in run {
        let vk = _mm512_set1_epi64(key as i64);
        let mut close = 0u32;
        for s in 0..3 {
            close |= u32::from(_mm512_mask_cmple_epu64_mask(lanes[s], _mm512_popcnt_epi64(_mm512_xor_si512(held[s], vk)), limit)) << (8 * s);
        }
        pairs += u64::from(close.count_ones());
    }
    pairs
}

fn main() {
    let args: Vec<u64> = std::env::args().skip(1).filter_map(|a| a.parse().ok()).collect();
    let new_n = args.first().copied().unwrap_or(1_000_000) as usize;
    let stored_n = args.get(1).copied().unwrap_or(10_000_000) as usize;
    let rounds: usize = env("REPEAT").unwrap_or(3);
    let (new, old) = data(new_n, stored_n);
    let both: Vec<u64> = old.iter().chain(&new).copied().collect();
    let filter = plan::with_blocks(K, 5).expect("a design of 5 blocks");
    let planned = plan::plan(K, new_n).expect("a design"); // as a run against a store plans its new side
    println!("{new_n} new against {stored_n} stored, k = {K}, {} threads; filter floor: {filter}; compare floor: {planned}", rayon::current_num_threads());
    let opts = Options::new(K);
    let maps = filter_maps(&filter, &new);
    let mut times: [Vec<f64>; 6] = Default::default();
    for round in 0..rounds {
        let (concat, all) = timed(|| batch::find_all(&Source::Memory(&both), None, &opts, &Control::default()).expect("find_all"));
        let (against, found) =
            timed(|| batch::find_all_against(&Source::Memory(&new), &Source::Memory(&old), None, None, &opts, &Control::default()).expect("against"));
        let (fixed, _) =
            timed(|| batch::find_all_against(&Source::Memory(&new), &Source::Memory(&old[..1]), None, None, &opts, &Control::default()).expect("against one"));
        let between = all.iter().filter(|p| (p[0] as usize) < stored_n && (p[1] as usize) >= stored_n).count();
        assert_eq!(found.len(), between, "against and the concatenation disagree");
        drop(all);
        let (filtered, pass) = timed(|| filter_floor(&filter, &maps, &old));
        let mut out = vec![0u64; old.len()];
        let mut grouping = 0.0;
        for spec in planned.tables() {
            let (s, n) = timed(|| group_floor(&spec.perm, &old, &mut out));
            assert_eq!(n, old.len());
            grouping += s;
        }
        drop(out);
        let mut compared = 0.0;
        let mut close = 0;
        for t in 0..planned.tables().len() {
            let g = grouped(&planned, t, &new, &old);
            let (s, n) = timed(|| compare_floor(&g));
            compared += s;
            close += n;
        }
        println!(
            "round {}: concatenation {concat:.3} s, against {against:.3} s ({} pairs), against one {fixed:.3} s, filter floor {filtered:.3} s ({:.1} % pass), group floor {grouping:.3} s, compare floor {compared:.3} s ({close} close)",
            round + 1,
            found.len(),
            100.0 * pass as f64 / (old.len() * filter.tables().len()) as f64,
        );
        for (v, s) in times.iter_mut().zip([concat, against, fixed, filtered, grouping, compared]) {
            v.push(s);
        }
    }
    let [concat, against, fixed, filtered, grouping, compared] = times.map(median);
    println!("median: concatenation {concat:.3} s, against {against:.3} s = {:.3}x", against / concat);
    println!("        against a store of one {fixed:.3} s = {:.3}x", fixed / concat);
    println!("        filter floor {filtered:.3} s = {:.3}x", filtered / concat);
    println!(
        "        group floor {grouping:.3} s = {:.3}x, compare floor {compared:.3} s = {:.3}x; with a store of one's, {:.3}x",
        grouping / concat,
        compared / concat,
        (fixed + grouping + compared) / concat
    );
}
