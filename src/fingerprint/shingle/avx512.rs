//! Eight or sixteen parts of one text hashed side by side in AVX-512
//! registers.
//!
//! The AVX2 kernel ([`super::avx2`]) with eight parts a register instead
//! of four, and for long texts two such registers a lane (`K` = 2) stepped
//! together. Each byte step is a chain of dependent operations (a blend, a
//! xor, a multiply) per lane, so a kernel of one register waits on the
//! multiply's latency: more parts a step do more work in the same chain.
//! Both registers' completed hashes feed one vote tree (a vote is a vote,
//! whichever part it comes from).
//! AVX-512 also has what AVX2 lacks: a 64-bit multiply (`vpmullq`), mask
//! registers for the boundaries, and a three-input logic instruction that
//! makes each half of a carry-save adder one instruction.
//!
//! The vote is the AVX2 kernel's Harley-Seal tree on 512-bit planes; its
//! weight-16 carries go to 64 byte counters, a part at a time: a part's 64
//! carry bits, as a mask, become 64 bytes of 0 or -1 (`vpmovm2b`), which are
//! subtracted. The invariants of [`super::avx2`] hold here too (parts at
//! least `steps` long, `steps` a multiple of [`STEPS`], junk hashes voted
//! and taken back afterwards by [`super::take_back_junk`]).

use std::arch::x86_64::*;

use super::avx2::Votes;
use crate::fingerprint::fnv::{BASIS, PRIME};

/// Blocks of 16 inputs a byte counter takes before it is flushed: each
/// block adds at most 8 to it (one per element).
const FLUSH_BLOCKS: usize = 31;

/// [`lanes`] takes a multiple of this many steps (a block of either mode).
pub(super) const STEPS: usize = 32;

/// The state of the `8 K` streams between steps.
struct State<const W: usize, const CHARS: bool, const K: usize> {
    /// Lane `i` of parts `8 k .. 8 k + 8` in `lanes[k][i]`.
    lanes: [[__m512i; W]; K],
    ones: __m512i,
    twos: __m512i,
    fours: __m512i,
    eights: __m512i,
    /// Byte counter `j` counts the weight-16 carries of bit `j`.
    c16: __m512i,
}

/// Carry-save adder: `(carry, sum)` of three bit-vectors (majority and
/// parity, one `vpternlogq` each).
#[inline(always)]
unsafe fn csa(a: __m512i, b: __m512i, c: __m512i) -> (__m512i, __m512i) {
    (_mm512_ternarylogic_epi64::<0xe8>(a, b, c), _mm512_ternarylogic_epi64::<0x96>(a, b, c))
}

/// `x * PRIME mod 2^64` in each 64-bit element.
#[inline(always)]
unsafe fn mul_prime(x: __m512i) -> __m512i {
    _mm512_mullo_epi64(x, _mm512_set1_epi64(PRIME as i64))
}

/// Eight bytes of each of eight parts from `at`, one part per 64-bit element.
#[inline(always)]
unsafe fn load(parts: &[&[u8]], at: usize) -> __m512i {
    let word = |p: &[u8]| {
        let mut b = [0u8; 8];
        b.copy_from_slice(&p[at..at + 8]);
        i64::from_le_bytes(b)
    };
    _mm512_set_epi64(word(parts[7]), word(parts[6]), word(parts[5]), word(parts[4]), word(parts[3]), word(parts[2]), word(parts[1]), word(parts[0]))
}

/// The eight 64-bit elements of `x`.
#[inline(always)]
unsafe fn elements(x: __m512i) -> [u64; 8] {
    let mut out = [0u64; 8];
    // `out` is 64 bytes.
    _mm512_storeu_si512(out.as_mut_ptr().cast(), x);
    out
}

impl<const W: usize, const CHARS: bool, const K: usize> State<W, CHARS, K> {
    /// Every lane at FNV's basis, every counter zero.
    #[inline(always)]
    unsafe fn new() -> Self {
        let zero = _mm512_setzero_si512();
        State { lanes: [[_mm512_set1_epi64(BASIS as i64); W]; K], ones: zero, twos: zero, fours: zero, eights: zero, c16: zero }
    }

    /// Each part's lanes (`N = 8 K` parts), oldest first.
    #[inline(always)]
    unsafe fn part_lanes<const N: usize>(&self) -> [[u64; W]; N] {
        let mut lanes = [[0u64; W]; N];
        for (k, register) in self.lanes.iter().enumerate() {
            for (i, &lane) in register.iter().enumerate() {
                for (e, x) in elements(lane).into_iter().enumerate() {
                    lanes[8 * k + e][i] = x;
                }
            }
        }
        lanes
    }

    /// One byte of each part of register `k` (the low byte of each element
    /// of `v`, which moves on by a byte): returns the hashes it completes
    /// (0 elsewhere).
    #[inline(always)]
    unsafe fn step(&mut self, k: usize, v: &mut __m512i) -> __m512i {
        let (completes, done) = self.advance(k, v);
        _mm512_maskz_mov_epi64(completes, done)
    }

    /// [`Self::step`] as the parts that complete a hash there and lane 0
    /// before the step (which holds the hash in those parts).
    #[inline(always)]
    unsafe fn advance(&mut self, k: usize, v: &mut __m512i) -> (__mmask8, __m512i) {
        let b = _mm512_and_si512(*v, _mm512_set1_epi64(0xff));
        *v = _mm512_srli_epi64::<8>(*v);
        let basis = _mm512_set1_epi64(BASIS as i64);
        let l = &mut self.lanes[k];
        if CHARS {
            // A code point starts at every byte but a continuation byte.
            let cont = _mm512_cmpeq_epi64_mask(_mm512_and_si512(b, _mm512_set1_epi64(0xc0)), _mm512_set1_epi64(0x80));
            let done = (!cont, l[0]);
            for i in 0..W - 1 {
                l[i] = mul_prime(_mm512_xor_si512(_mm512_mask_blend_epi64(cont, l[i + 1], l[i]), b));
            }
            l[W - 1] = mul_prime(_mm512_xor_si512(_mm512_mask_blend_epi64(cont, basis, l[W - 1]), b));
            done
        } else {
            // The space after each token.
            let end = _mm512_cmpeq_epi64_mask(b, _mm512_set1_epi64(0x20));
            let done = (end, l[0]);
            for i in 0..W - 1 {
                l[i] = mul_prime(_mm512_xor_si512(_mm512_mask_blend_epi64(end, l[i], l[i + 1]), b));
            }
            l[W - 1] = _mm512_mask_blend_epi64(end, mul_prime(_mm512_xor_si512(l[W - 1], b)), basis);
            done
        }
    }

    /// Steps (bytes) per vote input, as in the AVX2 kernel: two in mode
    /// `words` (boundaries are never adjacent there), one in mode `chars`.
    const PER_INPUT: usize = if CHARS { 1 } else { 2 };
    /// Steps of one [`Self::four`]: four inputs, taken from the `K`
    /// registers in turn.
    const FOUR: usize = 4 * Self::PER_INPUT / K;
    /// Steps of one [`Self::sixteen`]: sixteen inputs.
    const BLOCK: usize = 4 * Self::FOUR;

    /// One input of the vote: the hashes one or two steps of register `k`
    /// complete.
    #[inline(always)]
    unsafe fn input(&mut self, k: usize, v: &mut [__m512i; K]) -> __m512i {
        let a = self.step(k, &mut v[k]);
        if CHARS {
            a
        } else {
            _mm512_or_si512(a, self.step(k, &mut v[k]))
        }
    }

    /// Two inputs (the next steps of both registers when `K` is 2);
    /// returns the carry of weight 2.
    #[inline(always)]
    unsafe fn two(&mut self, v: &mut [__m512i; K]) -> __m512i {
        let a = self.input(0, v);
        let b = self.input(K - 1, v);
        let (carry, ones) = csa(self.ones, a, b);
        self.ones = ones;
        carry
    }

    /// Four inputs; returns the carry of weight 4.
    #[inline(always)]
    unsafe fn four(&mut self, v: &mut [__m512i; K]) -> __m512i {
        let a = self.two(v);
        let b = self.two(v);
        let (carry, twos) = csa(self.twos, a, b);
        self.twos = twos;
        carry
    }

    /// Sixteen inputs from byte `at` ([`Self::BLOCK`] steps), eight bytes
    /// of each part loaded as the steps reach them; the carries of weight
    /// 16 go to the byte counters, an element at a time.
    #[inline(always)]
    unsafe fn sixteen(&mut self, parts: &[&[u8]], at: usize) {
        let mut v = [_mm512_setzero_si512(); K];
        let mut carries = [_mm512_setzero_si512(); 4];
        for (f, carry) in carries.iter_mut().enumerate() {
            if (f * Self::FOUR).is_multiple_of(8) {
                for (k, v) in v.iter_mut().enumerate() {
                    *v = load(&parts[8 * k..8 * k + 8], at + f * Self::FOUR);
                }
            }
            *carry = self.four(&mut v);
        }
        let (a, fours) = csa(self.fours, carries[0], carries[1]);
        let (b, fours) = csa(fours, carries[2], carries[3]);
        self.fours = fours;
        let (carry, eights) = csa(self.eights, a, b);
        self.eights = eights;
        for element in elements(carry) {
            self.c16 = _mm512_sub_epi8(self.c16, _mm512_movm_epi8(element));
        }
    }

    /// Adds the byte counters (weight 16) to `totals` and clears them.
    #[inline(always)]
    unsafe fn flush(&mut self, totals: &mut [u32; 64]) {
        let mut bytes = [0u8; 64];
        // `bytes` is 64 bytes.
        _mm512_storeu_si512(bytes.as_mut_ptr().cast(), self.c16);
        for (t, &b) in totals.iter_mut().zip(&bytes) {
            *t += 16 * u32::from(b);
        }
        self.c16 = _mm512_setzero_si512();
    }
}

/// Hashes the first `steps` bytes of each of the `N = 8 K` parts side by
/// side, voting into `votes` every hash completed there that the scalar
/// kernel would vote; returns each part's lanes (oldest first) and
/// boundaries seen, for the scalar kernel to go on from.
#[target_feature(enable = "avx512f,avx512bw,avx512dq")]
pub(super) fn lanes<const W: usize, const CHARS: bool, const K: usize, const N: usize>(
    parts: [&[u8]; N],
    steps: usize,
    votes: &mut Votes,
) -> ([[u64; W]; N], [u64; N]) {
    assert!(N == 8 * K && steps.is_multiple_of(STEPS) && parts.iter().all(|p| p.len() >= steps));
    // SAFETY: this function runs only with AVX-512 F, BW and DQ.
    let mut st = unsafe { State::<W, CHARS, K>::new() };
    let mut blocks = 0;
    for at in (0..steps).step_by(State::<W, CHARS, K>::BLOCK) {
        // SAFETY: this function runs only with AVX-512 F, BW and DQ (see
        // the module docs); `sixteen` reads bytes `at..at + BLOCK` of each
        // part, all below `steps`.
        unsafe { st.sixteen(&parts, at) };
        blocks += 1;
        if blocks == FLUSH_BLOCKS {
            // SAFETY: as above.
            unsafe { st.flush(&mut votes.totals) };
            blocks = 0;
        }
    }
    // SAFETY: as above.
    unsafe { st.flush(&mut votes.totals) };
    for (plane, weight) in [(st.ones, 1), (st.twos, 2), (st.fours, 4), (st.eights, 8)] {
        // SAFETY: as above.
        for x in unsafe { elements(plane) } {
            for (j, t) in votes.totals.iter_mut().enumerate() {
                *t += weight * ((x >> j) & 1) as u32;
            }
        }
    }
    let seen = super::take_back_junk::<W, CHARS, N>(&parts, steps, votes);
    // SAFETY: as above.
    let lanes = unsafe { st.part_lanes::<N>() };
    (lanes, seen)
}

/// Hashes the first `steps` bytes of each of the `N = 8 K` parts side by
/// side, appending to `out` every hash a boundary completes there (the
/// junk ones too: the caller takes them out), in no order; returns each
/// part's lanes (oldest first).
///
/// Each step's hashes are packed to the front of a register
/// (`vpcompressq`) and the whole register stored where the list ends; the
/// list then grows by the hashes packed, and the next store overwrites the
/// rest (a compressing store to memory is slow on some CPUs).
#[target_feature(enable = "avx512f,avx512bw,avx512dq")]
pub(super) fn emit<const W: usize, const CHARS: bool, const K: usize, const N: usize>(parts: [&[u8]; N], steps: usize, out: &mut Vec<u64>) -> [[u64; W]; N] {
    assert!(N == 8 * K && steps.is_multiple_of(8) && parts.iter().all(|p| p.len() >= steps));
    // SAFETY: this function runs only with AVX-512 F, BW and DQ.
    let mut st = unsafe { State::<W, CHARS, K>::new() };
    let mut len = out.len();
    for at in (0..steps).step_by(8) {
        // Room for the eight steps' hashes (at most one a part a step) and
        // a whole register past them; the list grows as a `Vec` does, so a
        // huge text of few boundaries does not reserve a slot a byte.
        if out.capacity() - len < 8 * N + 8 {
            // SAFETY: every slot below `len` was written (a packed hash each).
            unsafe { out.set_len(len) };
            out.reserve(8 * N + 8);
        }
        let end = out.as_mut_ptr();
        let mut v = [_mm512_setzero_si512(); K];
        for (k, v) in v.iter_mut().enumerate() {
            // SAFETY: bytes `at..at + 8` of each part, below `steps`.
            *v = unsafe { load(&parts[8 * k..8 * k + 8], at) };
        }
        for _ in 0..8 {
            for (k, v) in v.iter_mut().enumerate() {
                // SAFETY: this function runs only with AVX-512 F, BW and DQ;
                // the store writes 8 slots from `len`, at most `8 N` past
                // the length the room was made for, within the capacity.
                unsafe {
                    let (completes, hashes) = st.advance(k, v);
                    _mm512_storeu_si512(end.add(len).cast(), _mm512_maskz_compress_epi64(completes, hashes));
                    len += completes.count_ones() as usize;
                }
            }
        }
    }
    // SAFETY: every slot below `len` was written (a packed hash each).
    unsafe { out.set_len(len) };
    // SAFETY: this function runs only with AVX-512 F, BW and DQ.
    unsafe { st.part_lanes::<N>() }
}
