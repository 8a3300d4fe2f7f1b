//! The ASCII path of the tokenizer, 16 bytes at a time (SSSE3).
//!
//! For a block of 16 ASCII bytes: compare to find token characters, lowercase
//! letters by setting bit 0x20, turn separators into spaces, then keep every
//! token byte and the first separator after a token (the stream's one space
//! per boundary). Kept bytes are packed to the front with a byte shuffle whose
//! pattern comes from a 256-entry table, one 8-byte half at a time.

use std::arch::x86_64::*;

/// `PACK[mask]` lists the positions of the set bits of `mask`, in order.
pub(super) static PACK: [[u8; 8]; 256] = {
    let mut t = [[0x80u8; 8]; 256];
    let mut mask = 0;
    while mask < 256 {
        let (mut bit, mut k) = (0, 0);
        while bit < 8 {
            if mask & (1 << bit) != 0 {
                t[mask][k] = bit as u8;
                k += 1;
            }
            bit += 1;
        }
        mask += 1;
    }
    t
};

/// The tokenizer's state between blocks.
pub(in crate::fingerprint::tokenize) struct State {
    pub i: usize,
    pub n: usize,
    pub count: usize,
    pub in_token: bool,
}

/// Consumes 16-byte blocks of `input` from `st.i` while they are all ASCII,
/// writing to `out` from `st.n`. `out` must have 16 bytes of room past
/// `st.n + (input.len() - st.i)`.
#[target_feature(enable = "ssse3")]
pub(super) fn ascii_blocks(input: &[u8], out: &mut [u8], st: &mut State) {
    let lower_a = _mm_set1_epi8(b'a' as i8 - 1);
    let above_z = _mm_set1_epi8(b'z' as i8 + 1);
    let below_0 = _mm_set1_epi8(b'0' as i8 - 1);
    let above_9 = _mm_set1_epi8(b'9' as i8 + 1);
    let case = _mm_set1_epi8(0x20);
    let eight = _mm_set1_epi8(8);
    while let Some(block) = input.get(st.i..st.i + 16) {
        // SAFETY: `block` is 16 readable bytes; unaligned loads are allowed.
        let v = unsafe { _mm_loadu_si128(block.as_ptr().cast()) };
        if _mm_movemask_epi8(v) != 0 {
            return; // a non-ASCII byte: the caller's char path takes over
        }
        let folded = _mm_or_si128(v, case);
        let letter = _mm_and_si128(_mm_cmpgt_epi8(folded, lower_a), _mm_cmplt_epi8(folded, above_z));
        let digit = _mm_and_si128(_mm_cmpgt_epi8(v, below_0), _mm_cmplt_epi8(v, above_9));
        let token = _mm_or_si128(letter, digit);
        // Token bytes lowercased, separators as spaces.
        let bytes = _mm_or_si128(_mm_and_si128(token, _mm_or_si128(v, _mm_and_si128(letter, case))), _mm_andnot_si128(token, case));
        let token_bits = _mm_movemask_epi8(token) as u32;
        let sep_bits = !token_bits & 0xffff;
        let after_sep = (sep_bits << 1) | u32::from(!st.in_token);
        let ends = sep_bits & !after_sep; // first separator after a token
        let keep = token_bits | ends;
        let (lo, hi) = ((keep & 0xff) as usize, (keep >> 8) as usize);
        let (n_lo, n_hi) = (lo.count_ones() as usize, hi.count_ones() as usize);
        // SAFETY: PACK rows are 8 bytes; `out` has 16 bytes of room past
        // `st.n` (the caller keeps it long enough), and each store writes 8.
        unsafe {
            let pack_lo = _mm_loadl_epi64(PACK[lo].as_ptr().cast());
            let pack_hi = _mm_add_epi8(_mm_loadl_epi64(PACK[hi].as_ptr().cast()), eight);
            let dst = out[st.n..st.n + 16].as_mut_ptr();
            _mm_storel_epi64(dst.cast(), _mm_shuffle_epi8(bytes, pack_lo));
            _mm_storel_epi64(dst.add(n_lo).cast(), _mm_shuffle_epi8(bytes, pack_hi));
        }
        st.n += n_lo + n_hi;
        st.count += ends.count_ones() as usize;
        st.in_token = token_bits & 0x8000 != 0;
        st.i += 16;
    }
}
