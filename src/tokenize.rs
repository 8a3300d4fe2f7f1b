//! Steps 1–3 of SPEC v1: lowercase, find token characters, cut tokens.
//!
//! The output is the *normalized text*: the tokens joined by single spaces
//! (no leading or trailing space), plus the end offset of every token. Mode
//! `words` shingles the tokens; mode `chars` slides over the normalized text.
//! ASCII takes a table-driven fast path; everything else goes through the
//! UCD 15.1 tables of [`crate::unicode`].

use crate::unicode::{self, Class, Lower};

/// ASCII: 0 = separator, otherwise the lowercased byte of a token character.
static ASCII: [u8; 128] = {
    let mut t = [0u8; 128];
    let mut b = 0;
    while b < 128 {
        let c = b as u8;
        t[b] = match c {
            b'a'..=b'z' | b'0'..=b'9' => c,
            b'A'..=b'Z' => c + 32,
            _ => 0,
        };
        b += 1;
    }
    t
};

/// Reusable buffers for the normalized text of one document.
#[derive(Debug, Default, Clone)]
pub(crate) struct Tokens {
    /// Tokens joined by single spaces.
    pub text: Vec<u8>,
    /// `ends[i]` is the end offset of token `i` in `text`; token `i + 1`
    /// starts at `ends[i] + 1`.
    pub ends: Vec<u32>,
}

impl Tokens {
    /// Normalizes `input` into `self`, replacing what was there.
    pub(crate) fn fill(&mut self, input: &str) {
        self.text.clear();
        self.ends.clear();
        self.text.reserve(input.len());
        let mut w = Writer { tokens: self, open: false };
        let bytes = input.as_bytes();
        let mut i = 0;
        while i < bytes.len() {
            let b = bytes[i];
            if b < 0x80 {
                let lower = ASCII[b as usize];
                if lower != 0 {
                    w.open();
                    w.tokens.text.push(lower);
                } else {
                    w.close();
                }
                i += 1;
            } else {
                // `input` is a str, so a whole char starts here.
                let c = input[i..].chars().next().unwrap_or('\u{fffd}');
                i += c.len_utf8();
                match unicode::lookup(c) {
                    (class, Lower::One(l)) => w.push(class, l),
                    (_, Lower::Many(s)) => {
                        // Step 2 classifies the code points the mapping produced.
                        for l in s.chars() {
                            w.push(unicode::class_of(l), l);
                        }
                    }
                }
            }
        }
        w.close();
    }

    /// Number of tokens.
    pub(crate) fn len(&self) -> usize {
        self.ends.len()
    }
}

struct Writer<'a> {
    tokens: &'a mut Tokens,
    open: bool,
}

impl Writer<'_> {
    #[inline(always)]
    fn open(&mut self) {
        if !self.open {
            if !self.tokens.ends.is_empty() {
                self.tokens.text.push(b' ');
            }
            self.open = true;
        }
    }

    #[inline(always)]
    fn close(&mut self) {
        if self.open {
            // Offsets fit in u32: callers reject texts of 4 GiB or more.
            self.tokens.ends.push(self.tokens.text.len() as u32);
            self.open = false;
        }
    }

    #[inline]
    fn push(&mut self, class: Class, c: char) {
        match class {
            Class::Separator => self.close(),
            Class::Token => {
                self.open();
                push_char(&mut self.tokens.text, c);
            }
            Class::Solo => {
                self.close();
                self.open();
                push_char(&mut self.tokens.text, c);
                self.close();
            }
        }
    }
}

#[inline]
fn push_char(out: &mut Vec<u8>, c: char) {
    let mut buf = [0u8; 4];
    out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tokens(s: &str) -> Vec<String> {
        let mut t = Tokens::default();
        t.fill(s);
        let text = String::from_utf8(t.text.clone()).unwrap();
        if t.ends.is_empty() {
            assert!(text.is_empty());
            return vec![];
        }
        assert_eq!(text.split(' ').count(), t.ends.len());
        text.split(' ').map(str::to_owned).collect()
    }

    #[test]
    fn ascii() {
        assert_eq!(tokens("Hello, World!  It's 3.14"), ["hello", "world", "it", "s", "3", "14"]);
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
    }

    #[test]
    fn marks_join_tokens_symbols_split_them() {
        assert_eq!(tokens("e\u{301}te\u{301}"), ["e\u{301}te\u{301}"]);
        assert_eq!(tokens("a😀b"), ["a", "b"]);
        assert_eq!(tokens("a\u{a0}b\u{3000}c"), ["a", "b", "c"]);
    }
}
