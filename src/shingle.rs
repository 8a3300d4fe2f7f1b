//! Feature hashes of shingles, streamed without building shingle strings.
//!
//! A shingle of width `W` is `W` consecutive *units*: tokens in mode `words`
//! (hashed joined by single spaces), code points of the normalized text in
//! mode `chars`. FNV-1a is a sequential chain over bytes, so instead of hashing
//! each shingle on its own, `W` chains ("lanes") run side by side over the token
//! stream: `lanes[0]` holds the oldest open shingle, `lanes[W - 1]` the newest.
//! Every byte is folded into all lanes at once (the `W` multiplications are
//! independent, so they overlap in the CPU). At a unit boundary the oldest lane
//! is complete: it is written out, the others move down one place and the
//! newest restarts from the FNV basis. The moves are selects, not branches: a
//! branch per boundary would mispredict about once per word.
//!
//! Lanes of shingles that would start before unit 0 hold garbage and are never
//! written out. When `0 < units < W`, the one shingle of all units is hashed
//! directly (a short text, off the hot path).

use crate::fnv::{fnv1a64, step, BASIS};

/// Appends the feature hash of every word shingle of `width` tokens to `out`.
/// `stream` is every token followed by one space; `count` is the token count.
pub(crate) fn words(stream: &[u8], count: usize, width: usize, out: &mut Vec<u64>) {
    debug_assert!(width >= 1);
    if count == 0 {
        return;
    }
    if count < width {
        out.push(fnv1a64(&stream[..stream.len() - 1]));
        return;
    }
    let start = out.len();
    // One slot per shingle plus one: the kernels store at every boundary and
    // advance only when the stored shingle is real.
    out.resize(start + count - width + 2, 0);
    let slots = &mut out[start..];
    let written = match width {
        1 => words_kernel::<1>(stream, slots),
        2 => words_kernel::<2>(stream, slots),
        3 => words_kernel::<3>(stream, slots),
        4 => words_kernel::<4>(stream, slots),
        5 => words_kernel::<5>(stream, slots),
        6 => words_kernel::<6>(stream, slots),
        7 => words_kernel::<7>(stream, slots),
        8 => words_kernel::<8>(stream, slots),
        _ => words_wide(stream, width, slots),
    };
    debug_assert_eq!(written, count - width + 1);
    out.truncate(start + written);
}

#[inline(always)]
fn words_kernel<const W: usize>(stream: &[u8], out: &mut [u64]) -> usize {
    let mut lanes = [BASIS; W];
    let mut k = 0; // shingles written
    let mut ended = 0; // tokens ended so far
    for &b in stream {
        let boundary = b == b' ';
        // At the space after token `ended`, lanes[0] is the shingle of tokens
        // ended + 1 - W ..= ended: real once `ended + 1 >= W`.
        out[k.min(out.len() - 1)] = lanes[0];
        k += usize::from(boundary & (ended + 1 >= W));
        ended += usize::from(boundary);
        for i in 0..W - 1 {
            let src = if boundary { lanes[i + 1] } else { lanes[i] };
            lanes[i] = step(src, b);
        }
        lanes[W - 1] = if boundary { BASIS } else { step(lanes[W - 1], b) };
    }
    k
}

/// Word shingles wider than the kernels: rare, hashed one by one.
fn words_wide(stream: &[u8], width: usize, out: &mut [u64]) -> usize {
    let tokens: Vec<&[u8]> = stream.split(|&b| b == b' ').filter(|t| !t.is_empty()).collect();
    let mut k = 0;
    for window in tokens.windows(width) {
        let mut h = BASIS;
        for (i, token) in window.iter().enumerate() {
            if i > 0 {
                h = step(h, b' ');
            }
            h = token.iter().fold(h, |h, &b| step(h, b));
        }
        out[k] = h;
        k += 1;
    }
    k
}

/// Appends the feature hash of every window of `width` code points of the
/// normalized `text` to `out`.
pub(crate) fn chars(text: &[u8], width: usize, out: &mut Vec<u64>) {
    debug_assert!(width >= 1);
    // Every byte that is not a UTF-8 continuation byte starts a code point.
    let count = text.iter().filter(|&&b| (b as i8) >= -0x40).count();
    if count == 0 {
        return;
    }
    if count < width {
        out.push(fnv1a64(text));
        return;
    }
    let start = out.len();
    out.resize(start + count - width + 2, 0);
    let slots = &mut out[start..];
    let written = match width {
        1 => chars_kernel::<1>(text, slots),
        2 => chars_kernel::<2>(text, slots),
        3 => chars_kernel::<3>(text, slots),
        4 => chars_kernel::<4>(text, slots),
        5 => chars_kernel::<5>(text, slots),
        6 => chars_kernel::<6>(text, slots),
        7 => chars_kernel::<7>(text, slots),
        8 => chars_kernel::<8>(text, slots),
        _ => chars_wide(text, width, slots),
    };
    debug_assert_eq!(written, count - width + 1);
    out.truncate(start + written);
}

#[inline(always)]
fn chars_kernel<const W: usize>(text: &[u8], out: &mut [u64]) -> usize {
    let mut lanes = [BASIS; W];
    let mut k = 0;
    let mut started = 0; // code points started so far
    for &b in text {
        // A lead byte starts code point `started`; lanes[0] then holds the
        // window of code points started - W ..= started - 1.
        let lead = (b as i8) >= -0x40;
        out[k.min(out.len() - 1)] = lanes[0];
        k += usize::from(lead & (started >= W));
        started += usize::from(lead);
        for i in 0..W - 1 {
            let src = if lead { lanes[i + 1] } else { lanes[i] };
            lanes[i] = step(src, b);
        }
        lanes[W - 1] = step(if lead { BASIS } else { lanes[W - 1] }, b);
    }
    // The last window ends with the text.
    out[k] = lanes[0];
    k + 1
}

/// Character windows wider than the kernels, hashed one by one.
fn chars_wide(text: &[u8], width: usize, out: &mut [u64]) -> usize {
    let starts: Vec<usize> = (0..text.len()).filter(|&i| (text[i] as i8) >= -0x40).chain([text.len()]).collect();
    let mut k = 0;
    for w in starts.windows(width + 1) {
        out[k] = fnv1a64(&text[w[0]..w[width]]);
        k += 1;
    }
    k
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Shingles built the obvious way: join, then hash.
    fn naive(units: &[&str], width: usize, sep: &str) -> Vec<u64> {
        if units.is_empty() {
            return vec![];
        }
        if units.len() < width {
            return vec![fnv1a64(units.join(sep).as_bytes())];
        }
        units.windows(width).map(|w| fnv1a64(w.join(sep).as_bytes())).collect()
    }

    fn words_of(tokens: &[&str], width: usize) -> Vec<u64> {
        let stream: String = tokens.iter().map(|t| format!("{t} ")).collect();
        let mut out = vec![7]; // hashes are appended after what is there
        words(stream.as_bytes(), tokens.len(), width, &mut out);
        assert_eq!(out.remove(0), 7);
        out
    }

    fn chars_of(text: &str, width: usize) -> Vec<u64> {
        let mut out = vec![];
        chars(text.as_bytes(), width, &mut out);
        out
    }

    #[test]
    fn words_small() {
        assert_eq!(words_of(&["a", "b", "c"], 3), vec![fnv1a64(b"a b c")]);
        assert_eq!(words_of(&["a", "b"], 3), vec![fnv1a64(b"a b")]);
        assert_eq!(words_of(&[], 3), Vec::<u64>::new());
        assert_eq!(words_of(&["ab", "c", "de", "f"], 2), naive(&["ab", "c", "de", "f"], 2, " "));
        assert_eq!(chars_of("abcde", 4), vec![fnv1a64(b"abcd"), fnv1a64(b"bcde")]);
    }

    proptest! {
        #[test]
        fn words_match_naive(tokens in prop::collection::vec("[a-zé漢]{1,6}", 0..40), width in 1usize..12) {
            let refs: Vec<&str> = tokens.iter().map(String::as_str).collect();
            prop_assert_eq!(words_of(&refs, width), naive(&refs, width, " "));
        }

        #[test]
        fn chars_match_naive(text in "[a-z é漢😀]{0,40}", width in 1usize..12) {
            let owned: Vec<String> = text.chars().map(String::from).collect();
            let units: Vec<&str> = owned.iter().map(String::as_str).collect();
            prop_assert_eq!(chars_of(&text, width), naive(&units, width, ""));
        }
    }
}
