//! Feature hashes of shingles, streamed without building shingle strings.
//!
//! A shingle of width `w` is `w` consecutive *units* (tokens in mode `words`,
//! code points of the normalized text in mode `chars`), and its feature hash is
//! FNV-1a over the units' bytes, joined by a space in mode `words`. FNV-1a is a
//! sequential chain over bytes, so instead of hashing each shingle on its own
//! we keep `w` chains ("lanes") in flight: lane `s mod w` holds the shingle
//! that starts at unit `s`. Every unit is fed to all lanes at once (the `w`
//! multiplications are independent, so they overlap in the CPU), the lane of
//! the unit starting a new shingle is reset to the FNV basis, and the lane of
//! the shingle that just got its `w`-th unit is emitted.
//!
//! Lanes of shingles that would start before unit 0 run on garbage and are
//! never emitted. When `0 < units < w`, the one shingle of all units is lane 0.

use crate::fnv::{step, BASIS};

/// Where a unit is found in the normalized text.
pub(crate) trait Units {
    /// Number of units.
    fn count(&self) -> usize;
    /// Calls `f` with the bytes of every unit in order; in mode `words`,
    /// `joined` is true and a space separates units inside a shingle.
    fn for_each(&self, f: impl FnMut(&[u8]));
    const JOINED: bool;
}

/// Emits the feature hash of every shingle of `width` units to `sink`.
pub(crate) fn hash_shingles<U: Units>(units: &U, width: usize, sink: impl FnMut(u64)) {
    debug_assert!(width >= 1);
    // Constant lane counts let the compiler unroll the per-byte loop over lanes.
    match width {
        1 => run(units, &mut [BASIS; 1], sink),
        2 => run(units, &mut [BASIS; 2], sink),
        3 => run(units, &mut [BASIS; 3], sink),
        4 => run(units, &mut [BASIS; 4], sink),
        5 => run(units, &mut [BASIS; 5], sink),
        6 => run(units, &mut [BASIS; 6], sink),
        7 => run(units, &mut [BASIS; 7], sink),
        8 => run(units, &mut [BASIS; 8], sink),
        _ => run(units, &mut vec![BASIS; width], sink),
    }
}

#[inline(always)]
fn run<U: Units>(units: &U, lanes: &mut [u64], mut sink: impl FnMut(u64)) {
    let width = lanes.len();
    let count = units.count();
    if count == 0 {
        return;
    }
    let mut j = 0usize; // index of the unit being fed
    let mut slot = 0usize; // j mod width: the lane of the shingle starting at j
    units.for_each(|unit| {
        if U::JOINED && j > 0 {
            for h in lanes.iter_mut() {
                *h = step(*h, b' ');
            }
        }
        lanes[slot] = BASIS;
        for &b in unit {
            for h in lanes.iter_mut() {
                *h = step(*h, b);
            }
        }
        j += 1;
        slot += 1;
        if slot == width {
            slot = 0;
        }
        // The shingle starting at j - width is complete; its lane is `slot`.
        if j >= width {
            sink(lanes[slot]);
        }
    });
    if count < width {
        sink(lanes[0]);
    }
}

/// Units of mode `words`: the tokens.
pub(crate) struct Words<'a> {
    pub text: &'a [u8],
    pub ends: &'a [u32],
}

impl Units for Words<'_> {
    const JOINED: bool = true;

    fn count(&self) -> usize {
        self.ends.len()
    }

    #[inline(always)]
    fn for_each(&self, mut f: impl FnMut(&[u8])) {
        let mut start = 0usize;
        for &end in self.ends {
            let end = end as usize;
            f(&self.text[start..end]);
            start = end + 1;
        }
    }
}

/// Units of mode `chars`: the code points of the normalized text.
pub(crate) struct Chars<'a> {
    pub text: &'a [u8],
}

impl Units for Chars<'_> {
    const JOINED: bool = false;

    fn count(&self) -> usize {
        // Every byte that is not a UTF-8 continuation byte starts a code point.
        self.text.iter().filter(|&&b| (b as i8) >= -0x40).count()
    }

    #[inline(always)]
    fn for_each(&self, mut f: impl FnMut(&[u8])) {
        let text = self.text;
        let mut i = 0;
        while i < text.len() {
            let len = utf8_len(text[i]);
            let end = (i + len).min(text.len());
            f(&text[i..end]);
            i = end;
        }
    }
}

#[inline(always)]
fn utf8_len(lead: u8) -> usize {
    match lead {
        0x00..=0x7f => 1,
        0xc0..=0xdf => 2,
        0xe0..=0xef => 3,
        _ => 4,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fnv::fnv1a64;
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

    fn words(tokens: &[&str], width: usize) -> Vec<u64> {
        let text = tokens.join(" ");
        let mut ends = vec![];
        let mut end = 0;
        for t in tokens {
            end += t.len();
            ends.push(end as u32);
            end += 1;
        }
        let mut out = vec![];
        hash_shingles(&Words { text: text.as_bytes(), ends: &ends }, width, |h| out.push(h));
        out
    }

    fn chars(text: &str, width: usize) -> Vec<u64> {
        let mut out = vec![];
        hash_shingles(&Chars { text: text.as_bytes() }, width, |h| out.push(h));
        out
    }

    #[test]
    fn words_small() {
        assert_eq!(words(&["a", "b", "c"], 3), vec![fnv1a64(b"a b c")]);
        assert_eq!(words(&["a", "b"], 3), vec![fnv1a64(b"a b")]);
        assert_eq!(words(&[], 3), Vec::<u64>::new());
        assert_eq!(words(&["ab", "c", "de", "f"], 2), naive(&["ab", "c", "de", "f"], 2, " "));
    }

    proptest! {
        #[test]
        fn words_match_naive(tokens in prop::collection::vec("[a-zé漢]{1,6}", 0..40), width in 1usize..12) {
            let refs: Vec<&str> = tokens.iter().map(String::as_str).collect();
            prop_assert_eq!(words(&refs, width), naive(&refs, width, " "));
        }

        #[test]
        fn chars_match_naive(text in "[a-z é漢😀]{0,40}", width in 1usize..12) {
            let mut units = vec![];
            let mut buf = [0u8; 4];
            let owned: Vec<String> = text.chars().map(|c| c.encode_utf8(&mut buf).to_owned()).collect();
            units.extend(owned.iter().map(String::as_str));
            prop_assert_eq!(chars(&text, width), naive(&units, width, ""));
        }
    }
}
