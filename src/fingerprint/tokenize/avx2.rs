//! The ASCII path of the tokenizer, 32 bytes at a time (AVX2).
//!
//! The same steps as [`super::ssse3`] on twice the bytes: compare to find
//! token characters, lowercase letters by setting bit 0x20, turn separators
//! into spaces, keep every token byte and the first separator after a
//! token. The kept bytes of each 8-byte quarter are packed to the front by a
//! byte shuffle whose pattern comes from [`super::ssse3::PACK`], and the
//! four quarters are stored one after another.

use std::arch::x86_64::*;

use super::ssse3::{State, PACK};

/// Consumes 32-byte blocks of `input` from `st.i` while they are all ASCII,
/// writing to `out` from `st.n`. `out` must have 32 bytes of room past
/// `st.n + (input.len() - st.i)` (the caller's `room` gives it, since every
/// block leaves at least as many input bytes as it can write).
#[target_feature(enable = "avx2")]
pub(super) fn ascii_blocks(input: &[u8], out: &mut [u8], st: &mut State) {
    let lower_a = _mm256_set1_epi8(b'a' as i8 - 1);
    let above_z = _mm256_set1_epi8(b'z' as i8 + 1);
    let below_0 = _mm256_set1_epi8(b'0' as i8 - 1);
    let above_9 = _mm256_set1_epi8(b'9' as i8 + 1);
    let case = _mm256_set1_epi8(0x20);
    let eight = _mm_set1_epi8(8);
    // The state in locals (not through `st`, which the compiler would store
    // back every block), written back at the end.
    let (mut i, mut n, mut count, mut in_token) = (st.i, st.n, st.count, st.in_token);
    while let Some(block) = input.get(i..i + 32) {
        if n + 32 > out.len() {
            break; // never, given the caller's room; checked once a block, not once a store
        }
        // SAFETY: `block` is 32 readable bytes; unaligned loads are allowed.
        let v = unsafe { _mm256_loadu_si256(block.as_ptr().cast()) };
        if _mm256_movemask_epi8(v) != 0 {
            break; // a non-ASCII byte: the narrower paths take over
        }
        let folded = _mm256_or_si256(v, case);
        let letter = _mm256_and_si256(_mm256_cmpgt_epi8(folded, lower_a), _mm256_cmpgt_epi8(above_z, folded));
        let digit = _mm256_and_si256(_mm256_cmpgt_epi8(v, below_0), _mm256_cmpgt_epi8(above_9, v));
        let token = _mm256_or_si256(letter, digit);
        // Token bytes lowercased, separators as spaces.
        let bytes = _mm256_or_si256(_mm256_and_si256(token, _mm256_or_si256(v, _mm256_and_si256(letter, case))), _mm256_andnot_si256(token, case));
        let token_bits = _mm256_movemask_epi8(token) as u32;
        let sep_bits = !token_bits;
        let after_sep = (sep_bits << 1) | u32::from(!in_token);
        let ends = sep_bits & !after_sep; // first separator after a token
        let keep = token_bits | ends;
        let halves = [_mm256_castsi256_si128(bytes), _mm256_extracti128_si256::<1>(bytes)];
        for (q, half) in [0, 0, 1, 1].into_iter().enumerate() {
            let mask = ((keep >> (8 * q)) & 0xff) as usize;
            // SAFETY: PACK rows are 8 bytes; `n + 32 <= out.len()` above and
            // the four stores of 8 bytes start at most 24 past that `n`.
            unsafe {
                let mut pack = _mm_loadl_epi64(PACK[mask].as_ptr().cast());
                if q % 2 == 1 {
                    pack = _mm_add_epi8(pack, eight);
                }
                _mm_storel_epi64(out.as_mut_ptr().add(n).cast(), _mm_shuffle_epi8(halves[half], pack));
            }
            n += mask.count_ones() as usize;
        }
        count += ends.count_ones() as usize;
        in_token = token_bits & 0x8000_0000 != 0;
        i += 32;
    }
    (st.i, st.n, st.count, st.in_token) = (i, n, count, in_token);
}
