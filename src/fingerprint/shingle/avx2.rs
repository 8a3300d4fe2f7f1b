//! Four parts of one text hashed side by side in AVX2 registers.
//!
//! The scalar kernel ([`super`]) folds every byte into `W` lanes with one
//! 64-bit multiply each; here register `i` holds lane `i` of four parts of
//! the text at once (one part per 64-bit element), so one pass of `W`
//! multiply sequences advances four streams. AVX2 has no 64-bit multiply;
//! FNV's prime is `2^40 + 0x1b3`, so
//! `x * P = lo(x) * 0x1b3 + ((hi(x) * 0x1b3 mod 2^32) << 32) + (x << 40)`:
//! one `vpmuludq`, one `vpmulld` (masked to the high halves) and a shift.
//!
//! Boundaries move the lanes down by blends, as the scalar kernel's selects
//! do. The hash a lane completes at a boundary is voted at once, never
//! stored: the masked completed hashes of 16 steps (32 in mode `words`,
//! where two adjacent steps never both complete one and are ORed first) go
//! through a Harley-Seal carry-save tree (bit-sliced counters: ones, twos,
//! fours, eights), and the carries of weight 16 are counted in byte
//! counters, so a vote costs a few logic instructions per 4 bytes instead
//! of a counter per bit per hash.
//!
//! The helpers are `#[inline(always)] unsafe fn`s without a target feature
//! of their own (Rust refuses `inline(always)` with one): they must only be
//! called from [`lanes`], which has AVX2 and into which they are inlined
//! whole (a helper left out of line runs its intrinsics as calls, several
//! times slower).
//!
//! Invariants the caller keeps: every part is at least `steps` bytes long,
//! and `steps` is a multiple of [`STEPS`]. Each part starts where the scalar kernel
//! would start a stream (see `Lanes::split_n`), so its first boundaries
//! complete junk hashes (`W - 1` of them in mode `words`, `W` in `chars`):
//! the loop votes them with the rest, and they are taken back from the
//! counts afterwards (they are the hashes of the part's first bytes up to
//! each of those boundaries). What is left of each part after `steps`
//! bytes is finished by the scalar kernel from the lanes returned here.

use std::arch::x86_64::*;

use crate::fingerprint::fnv::BASIS;

/// Unweighted votes counted here: per bit, the hashes that have it set, and
/// the number of hashes.
#[derive(Debug)]
pub(crate) struct Votes {
    pub totals: [u32; 64],
    pub n: u64,
}

impl Default for Votes {
    fn default() -> Self {
        Votes { totals: [0; 64], n: 0 }
    }
}

/// Blocks of 16 inputs a byte counter takes before it is flushed: each
/// block adds at most 4 (one per part) to it.
const FLUSH_BLOCKS: usize = 63;

/// [`lanes`] takes a multiple of this many steps (a block of either mode).
pub(super) const STEPS: usize = 32;

/// The state of the four streams between steps.
struct State<const W: usize, const CHARS: bool> {
    lanes: [__m256i; W],
    ones: __m256i,
    twos: __m256i,
    fours: __m256i,
    eights: __m256i,
    /// Byte counters of the weight-16 carries: bits 0..32 and 32..64.
    c16: [__m256i; 2],
}

/// Carry-save adder: `(carry, sum)` of three bit-vectors.
#[inline(always)]
unsafe fn csa(a: __m256i, b: __m256i, c: __m256i) -> (__m256i, __m256i) {
    let u = _mm256_xor_si256(a, b);
    (_mm256_or_si256(_mm256_and_si256(a, b), _mm256_and_si256(u, c)), _mm256_xor_si256(u, c))
}

/// `x * PRIME mod 2^64` in each 64-bit element.
#[inline(always)]
unsafe fn mul_prime(x: __m256i) -> __m256i {
    // 0x1b3 in the odd 32-bit halves only: `vpmulld` gives `hi(x) * 0x1b3`
    // there and 0 in the even halves.
    let low = _mm256_mul_epu32(x, _mm256_set1_epi64x(0x1b3));
    let high = _mm256_mullo_epi32(x, _mm256_set1_epi64x(0x1b3 << 32));
    _mm256_add_epi64(_mm256_add_epi64(low, high), _mm256_slli_epi64::<40>(x))
}

/// Eight bytes of each part from `at`, one part per 64-bit element.
#[inline(always)]
unsafe fn load(parts: &[&[u8]; 4], at: usize) -> __m256i {
    let word = |p: &[u8]| {
        let mut b = [0u8; 8];
        b.copy_from_slice(&p[at..at + 8]);
        i64::from_le_bytes(b)
    };
    _mm256_set_epi64x(word(parts[3]), word(parts[2]), word(parts[1]), word(parts[0]))
}

impl<const W: usize, const CHARS: bool> State<W, CHARS> {
    /// One byte of each part (the low byte of each element of `v`, which
    /// moves on by a byte): returns the hashes it completes (0 elsewhere).
    /// Junk hashes are voted too; [`lanes`] takes them back afterwards, so
    /// that the loop keeps no count.
    #[inline(always)]
    unsafe fn step(&mut self, v: &mut __m256i) -> __m256i {
        let b = _mm256_and_si256(*v, _mm256_set1_epi64x(0xff));
        *v = _mm256_srli_epi64::<8>(*v);
        let basis = _mm256_set1_epi64x(BASIS as i64);
        let l = &mut self.lanes;
        if CHARS {
            // A code point starts at every byte but a continuation byte.
            let cont = _mm256_cmpeq_epi64(_mm256_and_si256(b, _mm256_set1_epi64x(0xc0)), _mm256_set1_epi64x(0x80));
            let done = _mm256_andnot_si256(cont, l[0]);
            for i in 0..W - 1 {
                l[i] = mul_prime(_mm256_xor_si256(_mm256_blendv_epi8(l[i + 1], l[i], cont), b));
            }
            l[W - 1] = mul_prime(_mm256_xor_si256(_mm256_blendv_epi8(basis, l[W - 1], cont), b));
            done
        } else {
            // The space after each token.
            let end = _mm256_cmpeq_epi64(b, _mm256_set1_epi64x(0x20));
            let done = _mm256_and_si256(end, l[0]);
            for i in 0..W - 1 {
                l[i] = mul_prime(_mm256_xor_si256(_mm256_blendv_epi8(l[i], l[i + 1], end), b));
            }
            l[W - 1] = _mm256_blendv_epi8(mul_prime(_mm256_xor_si256(l[W - 1], b)), basis, end);
            done
        }
    }

    /// Steps (bytes) per vote input: in mode `words` two boundaries are
    /// never adjacent (a token has a byte at least), so the hashes of two
    /// steps are ORed into one input of the carry-save tree, halving its
    /// work; in mode `chars` every byte can be a boundary.
    const PER_INPUT: usize = if CHARS { 1 } else { 2 };
    /// Steps of one [`Self::sixteen`]: sixteen inputs.
    const BLOCK: usize = 16 * Self::PER_INPUT;

    /// One input of the vote: the hashes one or two steps complete.
    #[inline(always)]
    unsafe fn input(&mut self, v: &mut __m256i) -> __m256i {
        let a = self.step(v);
        if CHARS {
            a
        } else {
            _mm256_or_si256(a, self.step(v))
        }
    }

    /// Two inputs; returns the carry of weight 2.
    #[inline(always)]
    unsafe fn two(&mut self, v: &mut __m256i) -> __m256i {
        let a = self.input(v);
        let b = self.input(v);
        let (carry, ones) = csa(self.ones, a, b);
        self.ones = ones;
        carry
    }

    /// Four inputs (the eight bytes of `v` in mode `words`); returns the
    /// carry of weight 4.
    #[inline(always)]
    unsafe fn four(&mut self, v: &mut __m256i) -> __m256i {
        let a = self.two(v);
        let b = self.two(v);
        let (carry, twos) = csa(self.twos, a, b);
        self.twos = twos;
        carry
    }

    /// Eight inputs from byte `at`; returns the carry of weight 8.
    #[inline(always)]
    unsafe fn eight(&mut self, parts: &[&[u8]; 4], at: usize) -> __m256i {
        let mut v = load(parts, at);
        let a = self.four(&mut v);
        let b = if CHARS {
            self.four(&mut v)
        } else {
            let mut v = load(parts, at + 8);
            self.four(&mut v)
        };
        let (carry, fours) = csa(self.fours, a, b);
        self.fours = fours;
        carry
    }

    /// Sixteen inputs from byte `at` ([`Self::BLOCK`] steps); the carries
    /// of weight 16 go to the byte counters.
    #[inline(always)]
    unsafe fn sixteen(&mut self, parts: &[&[u8]; 4], at: usize) {
        let a = self.eight(parts, at);
        let b = self.eight(parts, at + Self::BLOCK / 2);
        let (carry, eights) = csa(self.eights, a, b);
        self.eights = eights;
        // Counter j of c16 takes byte j / 8 of each element (by a shuffle)
        // masked to bit j % 8; comparing with the mask gives -1 where set.
        let bits = _mm256_set1_epi64x(0x8040_2010_0804_0201u64 as i64);
        let spread_lo = _mm256_setr_epi8(
            0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, //
            2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3,
        );
        let spread_hi = _mm256_setr_epi8(
            4, 4, 4, 4, 4, 4, 4, 4, 5, 5, 5, 5, 5, 5, 5, 5, //
            6, 6, 6, 6, 6, 6, 6, 6, 7, 7, 7, 7, 7, 7, 7, 7,
        );
        for e in [
            _mm256_permute4x64_epi64::<0x00>(carry),
            _mm256_permute4x64_epi64::<0x55>(carry),
            _mm256_permute4x64_epi64::<0xaa>(carry),
            _mm256_permute4x64_epi64::<0xff>(carry),
        ] {
            let lo = _mm256_and_si256(_mm256_shuffle_epi8(e, spread_lo), bits);
            let hi = _mm256_and_si256(_mm256_shuffle_epi8(e, spread_hi), bits);
            self.c16[0] = _mm256_sub_epi8(self.c16[0], _mm256_cmpeq_epi8(lo, bits));
            self.c16[1] = _mm256_sub_epi8(self.c16[1], _mm256_cmpeq_epi8(hi, bits));
        }
    }

    /// Adds the byte counters (weight 16) to `totals` and clears them.
    #[target_feature(enable = "avx2")]
    fn flush(&mut self, totals: &mut [u32; 64]) {
        let mut bytes = [0u8; 64];
        // SAFETY: `bytes` is 64 bytes: two unaligned 32-byte stores.
        unsafe {
            _mm256_storeu_si256(bytes.as_mut_ptr().cast(), self.c16[0]);
            _mm256_storeu_si256(bytes.as_mut_ptr().add(32).cast(), self.c16[1]);
        }
        for (t, &b) in totals.iter_mut().zip(&bytes) {
            *t += 16 * u32::from(b);
        }
        self.c16 = [_mm256_setzero_si256(); 2];
    }
}

/// The four 64-bit elements of `x`.
#[inline(always)]
unsafe fn elements(x: __m256i) -> [u64; 4] {
    let mut out = [0u64; 4];
    // `out` is 32 bytes.
    _mm256_storeu_si256(out.as_mut_ptr().cast(), x);
    out
}

/// Hashes the first `steps` bytes of each part side by side, voting into
/// `votes` every hash completed there that the scalar kernel would vote;
/// returns each part's lanes (oldest first) and boundaries seen, for the
/// scalar kernel to go on from.
#[target_feature(enable = "avx2")]
pub(super) fn lanes<const W: usize, const CHARS: bool>(parts: [&[u8]; 4], steps: usize, votes: &mut Votes) -> ([[u64; W]; 4], [u64; 4]) {
    assert!(steps.is_multiple_of(STEPS) && parts.iter().all(|p| p.len() >= steps));
    let zero = _mm256_setzero_si256();
    let mut st = State::<W, CHARS> { lanes: [_mm256_set1_epi64x(BASIS as i64); W], ones: zero, twos: zero, fours: zero, eights: zero, c16: [zero; 2] };
    let mut blocks = 0;
    for at in (0..steps).step_by(State::<W, CHARS>::BLOCK) {
        // SAFETY: this function runs only with AVX2 (see the module docs).
        unsafe { st.sixteen(&parts, at) };
        blocks += 1;
        if blocks == FLUSH_BLOCKS {
            st.flush(&mut votes.totals);
            blocks = 0;
        }
    }
    st.flush(&mut votes.totals);
    for (plane, weight) in [(st.ones, 1), (st.twos, 2), (st.fours, 4), (st.eights, 8)] {
        // SAFETY: as above.
        for x in unsafe { elements(plane) } {
            for (j, t) in votes.totals.iter_mut().enumerate() {
                *t += weight * ((x >> j) & 1) as u32;
            }
        }
    }
    let seen = super::take_back_junk::<W, CHARS, 4>(&parts, steps, votes);
    let mut lanes = [[0u64; W]; 4];
    for (i, &lane) in st.lanes.iter().enumerate() {
        // SAFETY: as above.
        for (part, x) in unsafe { elements(lane) }.into_iter().enumerate() {
            lanes[part][i] = x;
        }
    }
    (lanes, seen)
}
