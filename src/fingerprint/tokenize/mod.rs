//! Steps 1–3 of SPEC v1: lowercase, find token characters, cut tokens.
//!
//! The output is a *token stream*: every token followed by exactly one space
//! (`b"hello world "`), plus the token count. Without its last byte it is the
//! normalized text of mode `chars` (tokens joined by single spaces); mode
//! `words` hashes it with the trailing space as the end-of-token marker.
//!
//! ASCII bytes take a branch-free path (a table gives the lowercased byte or a
//! space; a separator is kept only right after a token, so runs collapse), since
//! a branch per token boundary mispredicts about once a word; with AVX2 or
//! SSSE3 (checked at run time) 32 or 16 of them at a time. Other chars go
//! through the UCD 15.1 tables of [`crate::fingerprint::unicode`].

use crate::fingerprint::unicode::{self, Class, Lower};

#[cfg(target_arch = "x86_64")]
mod avx2;
#[cfg(target_arch = "x86_64")]
mod ssse3;
#[cfg(target_arch = "x86_64")]
use ssse3::State;

#[cfg(not(target_arch = "x86_64"))]
struct State {
    i: usize,
    n: usize,
    count: usize,
    in_token: bool,
}

/// By byte: the lowercased ASCII token character, b' ' for an ASCII
/// separator, 0 for a byte of a non-ASCII char.
static ASCII: [u8; 256] = {
    let mut t = [0u8; 256];
    let mut b = 0;
    while b < 128 {
        let c = b as u8;
        t[b] = match c {
            b'a'..=b'z' | b'0'..=b'9' => c,
            b'A'..=b'Z' => c + 32,
            _ => b' ',
        };
        b += 1;
    }
    t
};

/// The token stream of one document, with reusable storage.
#[derive(Debug, Default, Clone)]
pub(crate) struct Tokens {
    /// Every token followed by one space.
    pub stream: Vec<u8>,
    /// Number of tokens.
    pub count: usize,
}

impl Tokens {
    /// Normalizes `input` into `self`, replacing what was there.
    pub(crate) fn fill(&mut self, input: &str) {
        self.fill_with(input, simd_level());
    }

    fn fill_with(&mut self, input: &str, simd: Level) {
        let bytes = input.as_bytes();
        let mut out = std::mem::take(&mut self.stream);
        // Room for the ASCII paths to store unconditionally (plus 16 bytes for
        // whole-block stores); the char path grows the buffer itself, since
        // lowercasing may lengthen a char. Reused bytes are not zeroed first.
        let room = |out: &mut Vec<u8>, n: usize, left: usize| {
            if out.len() < n + left + SLACK {
                out.resize(n + left + SLACK, 0);
            }
        };
        room(&mut out, 0, bytes.len());
        let mut st = State { i: 0, n: 0, count: 0, in_token: false };
        #[cfg(not(target_arch = "x86_64"))]
        let _ = simd; // one path only
        while st.i < bytes.len() {
            #[cfg(target_arch = "x86_64")]
            {
                if simd == Level::Avx2 {
                    // SAFETY: `Avx2` only when the CPU has AVX2 (and SSSE3);
                    // the output never outgrows the input, and `room` keeps
                    // `out` as long as what is written plus what is left.
                    unsafe { avx2::ascii_blocks(bytes, &mut out, &mut st) };
                }
                if simd >= Level::Ssse3 {
                    // SAFETY: as above, with SSSE3.
                    unsafe { ssse3::ascii_blocks(bytes, &mut out, &mut st) };
                }
            }
            // Up to the end of the next 16 bytes byte by byte (SWAR where it can):
            // a block with a non-ASCII char, or the tail of the input.
            let stop = (st.i + 16).min(bytes.len());
            while st.i < stop {
                if let Some(chunk) = bytes.get(st.i..st.i + 8) {
                    let x = u64::from_le_bytes(chunk.try_into().unwrap_or([0x80; 8]));
                    if let Some(c) = Chunk::classify(x, st.in_token) {
                        out[st.n..st.n + 8].copy_from_slice(&c.bytes.to_le_bytes());
                        st.n += 8;
                        st.count += c.ended as usize;
                        st.in_token = c.in_token;
                        st.i += 8;
                        continue;
                    }
                }
                let t = ASCII[bytes[st.i] as usize];
                if t != 0 {
                    let is_token = t != b' ';
                    out[st.n] = t;
                    // A token char always stays; a separator only ends a token.
                    st.n += usize::from(is_token | st.in_token);
                    st.count += usize::from(!is_token & st.in_token);
                    st.in_token = is_token;
                    st.i += 1;
                    continue;
                }
                // `input` is a str, so a whole char starts here.
                let c = input[st.i..].chars().next().unwrap_or('\u{fffd}');
                st.i += c.len_utf8();
                let mut w = Slow { out: &mut out, n: st.n, count: st.count, in_token: st.in_token };
                match unicode::lookup(c) {
                    (class, Lower::One(l)) => w.push(class, l),
                    (_, Lower::Many(s)) => {
                        // Step 2 classifies the code points the mapping produced.
                        for l in s.chars() {
                            w.push(unicode::class_of(l), l);
                        }
                    }
                }
                (st.n, st.count, st.in_token) = (w.n, w.count, w.in_token);
                room(&mut out, st.n, bytes.len() - st.i);
            }
        }
        if st.in_token {
            out[st.n] = b' ';
            st.n += 1;
            st.count += 1;
        }
        out.truncate(st.n);
        self.stream = out;
        self.count = st.count;
    }

    /// The normalized text: the tokens joined by single spaces.
    pub(crate) fn text(&self) -> &[u8] {
        &self.stream[..self.stream.len().saturating_sub(1)]
    }
}

/// Bytes past the input's length that `out` keeps for whole-block stores.
const SLACK: usize = 17;

/// The widest ASCII path the CPU allows.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Level {
    Portable,
    #[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
    Ssse3,
    #[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
    Avx2,
}

fn simd_level() -> Level {
    #[cfg(target_arch = "x86_64")]
    {
        if crate::cpu::x86_has!("avx2", "ssse3") {
            return Level::Avx2;
        }
        if crate::cpu::x86_has!("ssse3") {
            return Level::Ssse3;
        }
    }
    Level::Portable
}

const ONES: u64 = 0x0101_0101_0101_0101;
const HIGH: u64 = 0x8080_8080_8080_8080;

/// Eight ASCII bytes classified at once (SWAR): each byte's high bit tells
/// whether it lies in `lo..=hi`. Bytes below 0x80 plus at most 0x80 never
/// carry into the next byte.
#[inline(always)]
fn in_range(x: u64, lo: u8, hi: u8) -> u64 {
    let at_least_lo = x.wrapping_add(ONES * u64::from(0x80 - lo));
    let above_hi = x.wrapping_add(ONES * u64::from(0x7f - hi));
    at_least_lo & !above_hi & HIGH
}

/// An 8-byte chunk that the token stream takes as it is (lowercased, with
/// separators as spaces): all ASCII and no separator after a separator
/// (counting the one before the chunk).
struct Chunk {
    bytes: u64,
    /// Tokens the chunk ends.
    ended: u32,
    in_token: bool,
}

impl Chunk {
    #[inline(always)]
    fn classify(x: u64, in_token: bool) -> Option<Chunk> {
        if x & HIGH != 0 {
            return None;
        }
        let letter = in_range(x | (ONES * 0x20), b'a', b'z');
        let token = letter | in_range(x, b'0', b'9');
        let sep = !token & HIGH;
        let before = if in_token { 0 } else { 0x80 }; // is the byte before a separator?
        if sep & ((sep << 8) | before) != 0 {
            return None;
        }
        let lower = x | (letter >> 2); // 0x80 >> 2 = 0x20: 'A' becomes 'a'
        let token_bytes = (token >> 7) * 0xff;
        let bytes = (lower & token_bytes) | ((sep >> 7) * 0x20);
        // A separator ends a token when a token byte precedes it.
        let ended = (sep & ((token << 8) | (0x80 - before))).count_ones();
        Some(Chunk { bytes, ended, in_token: token >> 63 != 0 })
    }
}

/// The state of [`Tokens::fill`] on its non-ASCII path.
struct Slow<'a> {
    out: &'a mut Vec<u8>,
    n: usize,
    count: usize,
    in_token: bool,
}

impl Slow<'_> {
    fn put(&mut self, bytes: &[u8]) {
        if self.out.len() < self.n + bytes.len() + SLACK {
            self.out.resize(self.n + bytes.len() + SLACK + 64, 0);
        }
        self.out[self.n..self.n + bytes.len()].copy_from_slice(bytes);
        self.n += bytes.len();
    }

    fn end_token(&mut self) {
        if self.in_token {
            self.put(b" ");
            self.count += 1;
            self.in_token = false;
        }
    }

    fn push(&mut self, class: Class, c: char) {
        let mut buf = [0u8; 4];
        match class {
            Class::Separator => self.end_token(),
            Class::Token => {
                self.put(c.encode_utf8(&mut buf).as_bytes());
                self.in_token = true;
            }
            Class::Solo => {
                self.end_token();
                self.put(c.encode_utf8(&mut buf).as_bytes());
                self.in_token = true;
                self.end_token();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tokens(s: &str) -> Vec<String> {
        let mut t = Tokens::default();
        t.fill(s);
        // Every narrower path the CPU allows gives the same stream.
        for level in [Level::Portable, Level::Ssse3, Level::Avx2].into_iter().filter(|&l| l <= simd_level()) {
            let mut other = Tokens::default();
            other.fill_with(s, level);
            assert_eq!((&other.stream, other.count), (&t.stream, t.count), "{s:?} {level:?}");
        }
        let stream = String::from_utf8(t.stream.clone()).unwrap();
        if t.count == 0 {
            assert!(stream.is_empty());
            return vec![];
        }
        assert!(stream.ends_with(' ') && !stream.starts_with(' ') && !stream.contains("  "), "{stream:?}");
        let words: Vec<String> = stream.split_terminator(' ').map(str::to_owned).collect();
        assert_eq!(words.len(), t.count);
        assert_eq!(t.text(), words.join(" ").as_bytes());
        words
    }

    #[test]
    fn ascii() {
        assert_eq!(tokens("Hello, World!  It's 3.14"), ["hello", "world", "it", "s", "3", "14"]);
        assert_eq!(tokens("  lead and trail  "), ["lead", "and", "trail"]);
        assert!(tokens("").is_empty());
        assert!(tokens(" \t\n.,;").is_empty());
        assert_eq!(tokens("x"), ["x"]);
    }

    #[test]
    fn no_space_scripts_are_single_tokens() {
        assert_eq!(tokens("AI模型ok"), ["ai", "模", "型", "ok"]);
        assert_eq!(tokens("漢字"), ["漢", "字"]);
        assert_eq!(tokens("ภาษาไทย"), ["ภ", "า", "ษ", "า", "ไ", "ท", "ย"]);
    }

    #[test]
    fn lowercase_without_context() {
        assert_eq!(tokens("ΟΔΟΣ"), ["οδοσ"]);
        assert_eq!(tokens("İstanbul"), ["i\u{307}stanbul"]);
        assert_eq!(tokens("STRASSE straße"), ["strasse", "straße"]);
        // Lowercasing lengthens U+023A (2 bytes) to U+2C65 (3 bytes).
        assert_eq!(tokens(&"\u{23a}".repeat(50)), ["\u{2c65}".repeat(50)]);
    }

    #[test]
    fn chunks_agree_with_bytes() {
        // Every ASCII byte value at every offset of a chunk, around tokens.
        for b in 0u8..128 {
            for pos in 0..12 {
                let mut s: Vec<u8> = b"Ab1 cD2 eF3 gh".to_vec();
                s.insert(pos, b);
                let s = String::from_utf8(s).unwrap();
                let expected: Vec<String> = s.split(|c: char| !c.is_ascii_alphanumeric()).filter(|t| !t.is_empty()).map(str::to_ascii_lowercase).collect();
                assert_eq!(tokens(&s), expected, "{s:?}");
            }
        }
    }

    proptest::proptest! {
        #[test]
        fn simd_and_portable_agree(s in "[ a-zA-Z0-9.,;\\-\n\tÉé漢😀İ]{0,200}") {
            tokens(&s);
        }
    }

    #[test]
    fn marks_join_tokens_symbols_split_them() {
        assert_eq!(tokens("e\u{301}te\u{301}"), ["e\u{301}te\u{301}"]);
        assert_eq!(tokens("a😀b"), ["a", "b"]);
        assert_eq!(tokens("a\u{a0}b\u{3000}c"), ["a", "b", "c"]);
    }
}
