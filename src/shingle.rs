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

/// Below this many units a text is hashed as one stream: splitting it in two
/// costs more than it saves.
const SPLIT_MIN: usize = 64;

/// The feature hashes of a text: two runs of a scratch buffer.
pub(crate) type Hashes<'a> = [&'a [u64]; 2];

/// The feature hash of every word shingle of `width` tokens. `stream` is
/// every token followed by one space; `count` is the token count.
pub(crate) fn words<'a>(stream: &[u8], count: usize, width: usize, out: &'a mut Vec<u64>) -> Hashes<'a> {
    debug_assert!(width >= 1);
    out.clear();
    if count == 0 {
        return [&[], &[]];
    }
    if count < width {
        out.push(fnv1a64(&stream[..stream.len() - 1]));
        return [out, &[]];
    }
    match width {
        1 => run::<WordLanes<1>>(stream, count, out),
        2 => run::<WordLanes<2>>(stream, count, out),
        3 => run::<WordLanes<3>>(stream, count, out),
        4 => run::<WordLanes<4>>(stream, count, out),
        5 => run::<WordLanes<5>>(stream, count, out),
        6 => run::<WordLanes<6>>(stream, count, out),
        7 => run::<WordLanes<7>>(stream, count, out),
        8 => run::<WordLanes<8>>(stream, count, out),
        _ => {
            words_wide(stream, width, out);
            [out, &[]]
        }
    }
}

/// The feature hash of every window of `width` code points of the
/// normalized `text`.
pub(crate) fn chars<'a>(text: &[u8], width: usize, out: &'a mut Vec<u64>) -> Hashes<'a> {
    debug_assert!(width >= 1);
    out.clear();
    let count = text.iter().filter(|&&b| is_lead(b)).count();
    if count == 0 {
        return [&[], &[]];
    }
    if count < width {
        out.push(fnv1a64(text));
        return [out, &[]];
    }
    match width {
        1 => run::<CharLanes<1>>(text, count, out),
        2 => run::<CharLanes<2>>(text, count, out),
        3 => run::<CharLanes<3>>(text, count, out),
        4 => run::<CharLanes<4>>(text, count, out),
        5 => run::<CharLanes<5>>(text, count, out),
        6 => run::<CharLanes<6>>(text, count, out),
        7 => run::<CharLanes<7>>(text, count, out),
        8 => run::<CharLanes<8>>(text, count, out),
        _ => {
            chars_wide(text, width, out);
            [out, &[]]
        }
    }
}

/// Every byte that is not a UTF-8 continuation byte starts a code point.
#[inline(always)]
fn is_lead(b: u8) -> bool {
    (b as i8) >= -0x40
}

/// The lanes of one stream of units, `W` shingles open at a time.
trait Lanes: Sized {
    /// Units per shingle.
    const W: usize;
    fn new() -> Self;
    /// Folds one byte in; a completed shingle goes to `out[self.written()]`.
    fn feed(&mut self, b: u8, out: &mut [u64]);
    /// Called after the last byte.
    fn finish(&mut self, out: &mut [u64]);
    /// Shingles written so far.
    fn written(&self) -> usize;
    /// Splits `units` in two halves to hash side by side: the second starts
    /// `W - 1` units before the cut so that shingles crossing it are kept.
    /// Returns the two halves and the number of shingles the first yields.
    fn split(units: &[u8], count: usize) -> Option<(&[u8], &[u8], usize)>;
}

/// Runs the kernel over `units` (`count` of them, at least `L::W`) and
/// returns the `count - W + 1` shingle hashes, written into `out`. Long texts
/// are cut in two halves hashed in one loop, which doubles the independent
/// multiplications in flight: one stream alone waits on the latency of its
/// FNV chains.
///
/// A stream writes a hash at every unit boundary, the first `W - 1` of them
/// from lanes that started before unit 0; each stream's region therefore
/// begins with `W - 1` slots of garbage, left out of the result.
#[inline(always)]
fn run<'a, L: Lanes>(units: &[u8], count: usize, out: &'a mut Vec<u64>) -> Hashes<'a> {
    let junk = L::W - 1;
    let total = count - junk;
    match (count >= SPLIT_MIN).then(|| L::split(units, count)).flatten() {
        Some((a, b, in_a)) => {
            let in_b = total - in_a;
            out.resize((junk + in_a + 1) + (junk + in_b + 1), 0);
            let (out_a, out_b) = out.split_at_mut(junk + in_a + 1);
            let (mut la, mut lb) = (L::new(), L::new());
            let n = a.len().min(b.len());
            for (&x, &y) in a[..n].iter().zip(&b[..n]) {
                la.feed(x, out_a);
                lb.feed(y, out_b);
            }
            a[n..].iter().for_each(|&x| la.feed(x, out_a));
            b[n..].iter().for_each(|&y| lb.feed(y, out_b));
            la.finish(out_a);
            lb.finish(out_b);
            debug_assert_eq!((la.written(), lb.written()), (junk + in_a, junk + in_b));
            [&out_a[junk..junk + in_a], &out_b[junk..junk + in_b]]
        }
        None => {
            out.resize(junk + total + 1, 0);
            let mut lanes = L::new();
            units.iter().for_each(|&x| lanes.feed(x, out));
            lanes.finish(out);
            debug_assert_eq!(lanes.written(), junk + total);
            [&out[junk..junk + total], &[]]
        }
    }
}

/// Lanes of mode `words` over a token stream (each token followed by a space).
/// At the space after a token, `lanes[0]` is the shingle that token completes.
struct WordLanes<const W: usize> {
    lanes: [u64; W],
    written: usize,
}

impl<const W: usize> Lanes for WordLanes<W> {
    const W: usize = W;

    #[inline(always)]
    fn new() -> Self {
        WordLanes { lanes: [BASIS; W], written: 0 }
    }

    #[inline(always)]
    fn feed(&mut self, b: u8, out: &mut [u64]) {
        let boundary = b == b' ';
        // Store unconditionally and advance only past a real shingle: the
        // slot is overwritten until then. `min` keeps the store in bounds.
        out[self.written.min(out.len() - 1)] = self.lanes[0];
        self.written += usize::from(boundary);
        for i in 0..W - 1 {
            let src = if boundary { self.lanes[i + 1] } else { self.lanes[i] };
            self.lanes[i] = step(src, b);
        }
        self.lanes[W - 1] = if boundary { BASIS } else { step(self.lanes[W - 1], b) };
    }

    #[inline(always)]
    fn finish(&mut self, _out: &mut [u64]) {}

    #[inline(always)]
    fn written(&self) -> usize {
        self.written
    }

    fn split(stream: &[u8], count: usize) -> Option<(&[u8], &[u8], usize)> {
        // The first half ends with the space after the token crossing the middle.
        let mid = stream.len() / 2;
        let cut = mid + stream[mid..].iter().position(|&b| b == b' ')?;
        let tokens_a = stream[..=cut].iter().filter(|&&b| b == b' ').count();
        if tokens_a < W || tokens_a >= count {
            return None;
        }
        // The second half starts at token tokens_a - (W - 1).
        let mut space = cut;
        for _ in 0..W - 1 {
            space = stream[..space].iter().rposition(|&b| b == b' ')?;
        }
        let b_start = if W == 1 { cut + 1 } else { space + 1 };
        Some((&stream[..=cut], &stream[b_start..], tokens_a - W + 1))
    }
}

/// Lanes of mode `chars` over the normalized text. At the lead byte of a code
/// point, `lanes[0]` is the window the previous code point completes.
struct CharLanes<const W: usize> {
    lanes: [u64; W],
    written: usize,
}

impl<const W: usize> Lanes for CharLanes<W> {
    const W: usize = W;

    #[inline(always)]
    fn new() -> Self {
        // The first lead byte writes the initial lanes: one more junk slot
        // than mode `words`, which is why `written` starts at -1.
        CharLanes { lanes: [BASIS; W], written: usize::MAX }
    }

    #[inline(always)]
    fn feed(&mut self, b: u8, out: &mut [u64]) {
        let lead = is_lead(b);
        out[self.written.min(out.len() - 1)] = self.lanes[0];
        self.written = self.written.wrapping_add(usize::from(lead));
        for i in 0..W - 1 {
            let src = if lead { self.lanes[i + 1] } else { self.lanes[i] };
            self.lanes[i] = step(src, b);
        }
        self.lanes[W - 1] = step(if lead { BASIS } else { self.lanes[W - 1] }, b);
    }

    #[inline(always)]
    fn finish(&mut self, out: &mut [u64]) {
        // The last window ends with the text.
        out[self.written.min(out.len() - 1)] = self.lanes[0];
        self.written = self.written.wrapping_add(1);
    }

    #[inline(always)]
    fn written(&self) -> usize {
        self.written
    }

    fn split(text: &[u8], count: usize) -> Option<(&[u8], &[u8], usize)> {
        // The first half ends before the code point starting at or after the middle.
        let mid = text.len() / 2;
        let cut = mid + text[mid..].iter().position(|&b| is_lead(b))?;
        let chars_a = text[..cut].iter().filter(|&&b| is_lead(b)).count();
        if chars_a < W || chars_a >= count {
            return None;
        }
        // The second half starts W - 1 code points before the cut.
        let mut b_start = cut;
        for _ in 0..W - 1 {
            b_start = text[..b_start].iter().rposition(|&b| is_lead(b))?;
        }
        Some((&text[..cut], &text[b_start..], chars_a - W + 1))
    }
}

/// Word shingles wider than the kernels: rare, hashed one by one.
fn words_wide(stream: &[u8], width: usize, out: &mut Vec<u64>) {
    out.clear();
    let tokens: Vec<&[u8]> = stream.split(|&b| b == b' ').filter(|t| !t.is_empty()).collect();
    for window in tokens.windows(width) {
        let mut h = BASIS;
        for (i, token) in window.iter().enumerate() {
            if i > 0 {
                h = step(h, b' ');
            }
            h = token.iter().fold(h, |h, &b| step(h, b));
        }
        out.push(h);
    }
}

/// Character windows wider than the kernels, hashed one by one.
fn chars_wide(text: &[u8], width: usize, out: &mut Vec<u64>) {
    out.clear();
    let starts: Vec<usize> = (0..text.len()).filter(|&i| is_lead(text[i])).chain([text.len()]).collect();
    out.extend(starts.windows(width + 1).map(|w| fnv1a64(&text[w[0]..w[width]])));
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
        let mut out = vec![7; 3]; // scratch content is replaced
        words(stream.as_bytes(), tokens.len(), width, &mut out).concat()
    }

    fn chars_of(text: &str, width: usize) -> Vec<u64> {
        let mut out = vec![];
        chars(text.as_bytes(), width, &mut out).concat()
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
        fn long_words_match_naive(tokens in prop::collection::vec("[a-zé]{1,9}", 60..300), width in 1usize..10) {
            let refs: Vec<&str> = tokens.iter().map(String::as_str).collect();
            prop_assert_eq!(words_of(&refs, width), naive(&refs, width, " "));
        }

        #[test]
        fn long_chars_match_naive(text in "[a-z é漢😀]{60,300}", width in 1usize..10) {
            let owned: Vec<String> = text.chars().map(String::from).collect();
            let units: Vec<&str> = owned.iter().map(String::as_str).collect();
            prop_assert_eq!(chars_of(&text, width), naive(&units, width, ""));
        }

        #[test]
        fn chars_match_naive(text in "[a-z é漢😀]{0,40}", width in 1usize..12) {
            let owned: Vec<String> = text.chars().map(String::from).collect();
            let units: Vec<&str> = owned.iter().map(String::as_str).collect();
            prop_assert_eq!(chars_of(&text, width), naive(&units, width, ""));
        }
    }
}
