//! Text fingerprints of SPEC v1: modes `words` (word shingles) and `chars`
//! (character n-grams of the normalized text).
//!
//! The pipeline, one module a stage, each importing only the stages before
//! it: [`unicode`] (the UCD tables: classes and lowercase) -> `tokenize`
//! (tokens of a text) -> [`fnv`] (FNV-1a 64 of a feature) -> `shingle`
//! (the features of a mode and width, hashed) -> `vote` (the bitwise vote
//! into 64 bits) -> this module ([`Fingerprinter`], [`fingerprints`]).
//! Nothing here imports the tables or the jobs that search fingerprints.

use std::fmt;
use std::str::FromStr;

use rayon::prelude::*;

pub mod fnv;
mod shingle;
mod tokenize;
pub mod unicode;
pub(crate) mod vote;

use crate::{Error, Result};
use tokenize::Tokens;
use vote::Tally;

/// Which features of a text vote (SPEC v1 "Text features").
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Default)]
pub enum Mode {
    /// Shingles of `width` consecutive tokens (default width 3).
    #[default]
    Words,
    /// Windows of `width` consecutive code points of the normalized text
    /// (default width 4).
    Chars,
}

impl Mode {
    /// The SPEC v1 default width of this mode.
    pub fn default_width(self) -> usize {
        match self {
            Mode::Words => 3,
            Mode::Chars => 4,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Words => "words",
            Mode::Chars => "chars",
        }
    }
}

impl fmt::Display for Mode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Mode {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self> {
        match s {
            "words" => Ok(Mode::Words),
            "chars" => Ok(Mode::Chars),
            other => Err(Error::invalid("mode", "\"words\" or \"chars\"", format!("{other:?}"))),
        }
    }
}

/// A validated feature extraction setting: mode and width.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct Shingling {
    mode: Mode,
    width: usize,
}

impl Shingling {
    /// `width` of `None` takes the mode's default.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] for a width below 1.
    pub fn new(mode: Mode, width: Option<usize>) -> Result<Self> {
        let width = width.unwrap_or_else(|| mode.default_width());
        if width < 1 {
            return Err(Error::invalid("width", "at least 1", width));
        }
        Ok(Shingling { mode, width })
    }

    pub fn mode(&self) -> Mode {
        self.mode
    }

    pub fn width(&self) -> usize {
        self.width
    }
}

impl Default for Shingling {
    fn default() -> Self {
        Shingling { mode: Mode::Words, width: 3 }
    }
}

/// Computes fingerprints with buffers reused from one text to the next.
#[derive(Debug, Clone)]
pub struct Fingerprinter {
    shingling: Shingling,
    tokens: Tokens,
    tally: Tally,
    /// A shingle set, and the radix sort's buffer for it.
    hashes: Vec<u64>,
    scratch: Vec<u64>,
}

impl Fingerprinter {
    pub fn new(shingling: Shingling) -> Self {
        Fingerprinter { shingling, tokens: Tokens::default(), tally: Tally::default(), hashes: Vec::new(), scratch: Vec::new() }
    }

    /// The SPEC v1 fingerprint of `text`.
    pub fn fingerprint(&mut self, text: &str) -> u64 {
        self.tokens.fill(text);
        features(&self.tokens, self.shingling, &mut self.tally);
        self.tally.finish()
    }

    /// The shingle set of `text` under `set`: its distinct feature hashes
    /// (SPEC v1 shingles of that mode and width), ascending, in a buffer
    /// of the fingerprinter's. Verified near-duplicates compare these sets
    /// ([`crate::similar`]).
    pub fn shingle_set(&mut self, text: &str, set: Shingling) -> &[u64] {
        self.tokens.fill(text);
        self.set_of(set)
    }

    /// [`Self::fingerprint`] and [`Self::shingle_set`] of one text, which is
    /// tokenized once (both modes start from the same tokens).
    pub fn fingerprint_and_set(&mut self, text: &str, set: Shingling) -> (u64, &[u64]) {
        self.tokens.fill(text);
        features(&self.tokens, self.shingling, &mut self.tally);
        let fp = self.tally.finish();
        (fp, self.set_of(set))
    }

    fn set_of(&mut self, set: Shingling) -> &[u64] {
        let out = &mut self.hashes;
        out.clear();
        features(&self.tokens, set, out);
        // Feature hashes are uniform: one radix pass on the top bits (two
        // more than the count's, at most 11) leaves little for insertion.
        let bits = (usize::BITS - out.len().leading_zeros() + 2).min(11);
        crate::tables::radix::sort_by_top_bits(out, &mut self.scratch, bits, |&h| h, u64::cmp);
        out.dedup();
        out
    }

    /// Number of tokens of the last text fingerprinted.
    pub fn last_token_count(&self) -> usize {
        self.tokens.count
    }
}

/// Feeds the feature hashes of tokenized text under `s` to `sink`.
fn features(tokens: &Tokens, s: Shingling, sink: &mut impl shingle::Sink) {
    match s.mode {
        Mode::Words => shingle::words(&tokens.stream, tokens.count, s.width, sink),
        Mode::Chars => shingle::chars(tokens.text(), s.width, sink),
    }
}

/// The SPEC v1 fingerprint of one text.
pub fn fingerprint(text: &str, shingling: Shingling) -> u64 {
    Fingerprinter::new(shingling).fingerprint(text)
}

/// Fingerprints of many texts, in order, on the current rayon pool (see
/// [`crate::parallel::install`] to choose the number of threads).
pub fn fingerprints<S: AsRef<str> + Sync>(texts: &[S], shingling: Shingling) -> Vec<u64> {
    let mut out = Vec::with_capacity(texts.len());
    texts.par_iter().with_min_len(16).map_init(|| Fingerprinter::new(shingling), |f, t| f.fingerprint(t.as_ref())).collect_into_vec(&mut out);
    out
}

/// Fingerprints of many texts given as UTF-8 bytes (from Python strs or an
/// Arrow string column), in order, on the current rayon pool.
///
/// # Errors
/// [`Error::InvalidUtf8`] naming the first text (by position) that is not UTF-8.
pub fn fingerprints_utf8<T: AsRef<[u8]> + Sync>(texts: &[T], shingling: Shingling) -> Result<Vec<u64>> {
    texts
        .par_iter()
        .enumerate()
        .with_min_len(16)
        .map_init(
            || Fingerprinter::new(shingling),
            |f, (index, bytes)| match std::str::from_utf8(bytes.as_ref()) {
                Ok(text) => Ok(f.fingerprint(text)),
                Err(e) => Err(Error::InvalidUtf8 { index, valid_up_to: e.valid_up_to() }),
            },
        )
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fnv1a64;

    fn words(text: &str, width: usize) -> u64 {
        fingerprint(text, Shingling::new(Mode::Words, Some(width)).unwrap())
    }

    fn chars(text: &str, width: usize) -> u64 {
        fingerprint(text, Shingling::new(Mode::Chars, Some(width)).unwrap())
    }

    #[test]
    fn hand_checked() {
        assert_eq!(words("", 3), 0);
        assert_eq!(words("  ...  ", 3), 0);
        assert_eq!(words("Hello", 3), fnv1a64(b"hello"));
        assert_eq!(words("A, b; C!", 3), fnv1a64(b"a b c"));
        assert_eq!(words("a b", 3), fnv1a64(b"a b"));
        assert_eq!(chars("Ab", 4), fnv1a64(b"ab"));
        assert_eq!(chars("漢字", 3), fnv1a64("漢 字".as_bytes()));
        assert_eq!(chars("abcd", 4), fnv1a64(b"abcd"));
    }

    #[test]
    fn width_zero_is_an_error() {
        assert!(matches!(Shingling::new(Mode::Words, Some(0)), Err(Error::InvalidParameter { .. })));
        assert_eq!(Shingling::new(Mode::Chars, None).unwrap().width(), 4);
        assert!("bogus".parse::<Mode>().is_err());
    }

    #[test]
    fn batch_equals_one_by_one() {
        let texts: Vec<String> = (0..500).map(|i| format!("doc {i} is about {} things", i % 7)).collect();
        let s = Shingling::default();
        let batch = fingerprints(&texts, s);
        let single: Vec<u64> = texts.iter().map(|t| fingerprint(t, s)).collect();
        assert_eq!(batch, single);
    }
}
