//! The code and its blocks: round trips, limits and marks.

use super::*;
use proptest::prelude::*;

fn decode_all(e: &Encoded, code: &Code, block_bytes: usize) -> Vec<u64> {
    let dec = code.decoder();
    let mut out = Vec::new();
    for b in 0..e.first.len() {
        let block = &e.data[b * block_bytes..((b + 1) * block_bytes).min(e.data.len())];
        let count = (e.ranks[b + 1] - e.ranks[b]) as usize;
        let (last, header) = check_block(block, e.ranks[b], count, e.first[b], &dec, |_| ()).expect("a valid block");
        assert_eq!(header, e.headers[b], "header of block {b}");
        assert_eq!(header.first, e.first[b]);
        let mut whole = BlockReader::new(block, &dec);
        let keys: Vec<u64> = std::iter::once(whole.current()).chain((1..count).map(|_| whole.next_key().unwrap())).collect();
        for m in header.marks.iter().filter(|m| m.index > 0) {
            let i = usize::from(m.index);
            assert_eq!(u64::from(m.top), keys[i] >> 32, "mark on key {i}");
            // A probe just above the mark's top bits starts here or later.
            if m.top < u32::MAX {
                let n = header.mark_below((u64::from(m.top) + 1) << 32).expect("a mark");
                assert!(n.index >= m.index);
            }
            let mut r = BlockReader::at(&e.data[b * block_bytes..], &dec, *m);
            let rest: Vec<u64> = (i + 1..count).map(|_| r.next_key().unwrap()).collect();
            assert_eq!(rest, keys[i + 1..]);
        }
        for probe in keys.iter().flat_map(|&k| [k, k.wrapping_add(1 << 32), k.wrapping_sub(1)]) {
            if let Some(m) = header.mark_below(probe) {
                assert!(keys[usize::from(m.index)] < probe, "mark {m:?} for a probe of {probe:#x}");
            }
        }
        let mut r = BlockReader::new(block, &dec);
        out.push(r.current());
        for _ in 1..count {
            out.push(r.next_key().expect("a code"));
        }
        assert_eq!(out.last(), Some(&last));
    }
    out
}

fn round_trip(keys: &[u64], block_bytes: usize) {
    // This encoder's codes, and codes as long as a file may hold.
    let counts = symbol_counts(keys);
    for code in [Code::from_counts(&counts), Code::from_lengths(limited_lengths(&counts, MAX_CODE_LEN)).unwrap()] {
        let e = encode(keys, &code, block_bytes);
        assert_eq!(decode_all(&e, &code, block_bytes), keys);
        assert_eq!(e.ranks.len(), e.first.len() + 1);
        assert!(e.data.len() <= e.first.len() * block_bytes);
    }
}

/// Ascending distinct keys of several adversarial shapes.
fn keys() -> impl Strategy<Value = Vec<u64>> {
    prop_oneof![
        prop::collection::btree_set(any::<u64>(), 0..2000).prop_map(|s| s.into_iter().collect()),
        // Consecutive integers: h = 0 mostly.
        (any::<u64>(), 0usize..3000).prop_map(|(s, n)| (0..n as u64).map(|i| s.saturating_sub(n as u64) + i).collect()),
        // All keys share their leading bits.
        (any::<u64>(), prop::collection::btree_set(0u64..1 << 20, 0..2000)).prop_map(|(hi, s)| s.into_iter().map(|x| (hi << 20) | x).collect()),
        // Maximal gaps: h = 63 and other extremes, 0 and 2^64-1.
        prop::collection::btree_set(prop_oneof![Just(0u64), Just(u64::MAX), Just(1u64 << 63), Just((1u64 << 63) - 1), any::<u64>()], 0..6)
            .prop_map(|s| s.into_iter().collect()),
        // A skewed h distribution, with codes past the length limit.
        prop::collection::vec(0u32..64, 0..3000).prop_map(|hs| {
            let mut x = 0u64;
            let mut out = vec![0];
            for h in hs {
                // The next key with highest differing bit at min(h', ...) where possible.
                let h = h.min(if h % 7 == 0 { 63 } else { h % 5 });
                let next = ((x >> h) | 1) << h;
                if next > x && (x >> h) & 1 == 0 {
                    x = next;
                    out.push(x);
                }
            }
            out
        }),
    ]
}

/// Marks by the rule as the Marker docs state it, one key at a time.
fn marks_by_definition(keys: &[u64], pos: &[u32]) -> [Mark; MARKS] {
    let (count, mut marks, mut next) = (keys.len(), [Mark::default(); MARKS], 0);
    for i in 0..count.saturating_sub(1) {
        while next < MARKS && i >= (next + 2) * count / (MARKS + 1) {
            next += 1;
        }
        if next < MARKS && i >= ((next + 1) * count / (MARKS + 1)).max(1) && (keys[i] ^ keys[i + 1]) >> 32 != 0 && pos[i] <= u32::from(u16::MAX) {
            marks[next] = Mark { top: (keys[i] >> 32) as u32, pos: pos[i] as u16, index: i as u16 };
            next += 1;
        }
    }
    marks
}

proptest! {
    #[test]
    fn blocks_round_trip(keys in keys(), block_bytes in prop_oneof![Just(16usize), Just(17), Just(64), Just(1024), 16usize..200]) {
        round_trip(&keys, block_bytes);
    }

    #[test]
    fn marks_follow_their_rule(keys in keys(), step in prop_oneof![Just(1u32), 1u32..5000]) {
        let pos: Vec<u32> = (0..keys.len() as u32).map(|i| 64 + i * step).collect();
        let header = Header::new(&keys, &pos, 0);
        prop_assert_eq!(header.marks, marks_by_definition(&keys, &pos));
    }

    /// Arbitrary bytes never make the decoder read out of bounds or panic,
    /// and whatever check_block accepts decodes to ascending keys.
    #[test]
    fn hostile_blocks_are_safe(
        block in prop::collection::vec(any::<u8>(), 0..300),
        counts in prop::collection::vec(prop_oneof![Just(0u64), 0u64..1000, any::<u64>()], SYMBOLS),
        count in 0usize..400,
        first in any::<u64>(),
    ) {
        let code = Code::from_counts(&counts.try_into().unwrap());
        let dec = code.decoder();
        if let Ok((last, _)) = check_block(&block, 0, count, first, &dec, |_| ()) {
            let mut r = BlockReader::new(&block, &dec);
            let mut prev = r.current();
            for _ in 1..count {
                let key = r.next_key().unwrap();
                prop_assert!(key > prev);
                prev = key;
            }
            prop_assert_eq!(prev, last);
            prop_assert!(r.bits_read() <= block.len() * 8);
        }
        // Reading past the end is still safe.
        let mut r = BlockReader::new(&block, &dec);
        for _ in 0..count {
            let _ = r.next_key();
        }
    }
}

#[test]
fn code_lengths_are_limited_and_prefix_free() {
    // Fibonacci counts make the deepest unlimited Huffman trees.
    let mut counts = [0u64; SYMBOLS];
    let (mut a, mut b) = (1u64, 1u64);
    for c in counts.iter_mut() {
        *c = a;
        (a, b) = (b, a.saturating_add(b));
    }
    let code = Code::from_counts(&counts);
    assert!(code.lengths().iter().all(|&l| l >= 1 && u32::from(l) <= ENCODE_MAX_LEN));
    // Prefix-free: every table slot decodes to at most one symbol (checked
    // by construction), and all symbols decode back.
    let dec = code.decoder();
    for s in 0..SYMBOLS {
        let e = dec.table[usize::from(code.codes[s])];
        let (h, len) = unpack(e);
        assert_eq!((h as usize, len), (s, u32::from(code.lengths[s])));
        assert_eq!(is_slow(e), len + h > FAST_BITS);
    }
}

#[test]
fn huffman_is_optimal_when_unlimited() {
    // Dyadic counts: lengths are exactly -log2(p).
    let mut counts = [0u64; SYMBOLS];
    counts[40] = 8;
    counts[39] = 4;
    counts[41] = 2;
    counts[38] = 1;
    counts[42] = 1;
    let l = Code::from_counts(&counts).lengths;
    assert_eq!((l[40], l[39], l[41], l[38], l[42]), (1, 2, 3, 4, 4));
}

#[test]
fn bad_lengths_are_refused() {
    let mut lengths = [0u8; SYMBOLS];
    lengths[0] = 13;
    assert!(Code::from_lengths(lengths).is_err());
    let lengths = [1u8; SYMBOLS];
    assert!(Code::from_lengths(lengths).is_err());
}

#[test]
fn edge_tables() {
    round_trip(&[], 1024);
    round_trip(&[0], 1024);
    round_trip(&[u64::MAX], 16);
    round_trip(&[0, u64::MAX], 16);
    round_trip(&[0, 1, 2, 3], 16);
}
