//! The common record, read in one pass of its own: a flat object whose keys
//! have no escapes, with one text string, decoded as it is scanned (into a
//! buffer each thread reuses when it has escapes). Values other than the
//! text are handed to serde_json one at a time, which checks them as the
//! whole-line parse of [`super::json`] does.
//!
//! serde_json decodes an escaped text into a scratch buffer of its own, new
//! for every line and grown by doubling: 4 % of a JSON-lines dedup's CPU
//! went to growing that buffer, 6 % to finding escapes 8 bytes at a time.
//! This scan is only ever a shortcut: whatever it is not sure of (a key
//! with escapes, a key twice, a text that is not a string, a lone
//! surrogate, anything malformed) gives `None`, and the line is read by the
//! whole-line parse, which decides; so a line read here is read the same
//! there (`agrees_with_the_whole_line_parse` in the tests).

use std::cell::RefCell;

use serde_json::value::RawValue;

use super::json::Fields;

/// The text the scan found: a slice of the line, or decoded (valid only
/// during the call it is handed to).
pub(super) enum Text<'a, 'd> {
    Borrowed(&'a str),
    Decoded(&'d str),
}

/// A thread keeps at most this much room for decoded texts between lines.
const KEEP_DECODED: usize = 4 << 20;

thread_local! {
    /// An escaped text, decoded: reused line after line.
    static DECODED: RefCell<String> = const { RefCell::new(String::new()) };
}

/// Reads `line` (UTF-8, not blank) if it has the common shape, handing its
/// text and its id's raw JSON to `found`; `None` when the whole-line parse
/// must decide. `check_other` is called on each other value's raw JSON and
/// may refuse the line.
pub(super) fn record<'a, R>(
    line: &'a str,
    fields: &Fields,
    check_other: impl Fn(&str) -> bool,
    found: impl FnOnce(Text<'a, '_>, Option<&'a str>) -> R,
) -> Option<R> {
    DECODED.with(|decoded| {
        let mut decoded = decoded.try_borrow_mut().ok()?;
        let out = scan(line, fields, check_other, &mut decoded)
            .map(|(start, end, escaped, id)| found(if escaped { Text::Decoded(&decoded) } else { Text::Borrowed(&line[start..end]) }, id));
        if decoded.capacity() > KEEP_DECODED {
            *decoded = String::new(); // a huge text's room is not held by the thread for good
        }
        out
    })
}

/// [`record`]'s pass over the line: the text's span, whether it had escapes
/// (then decoded into `decoded`), and the id's raw JSON.
fn scan<'a>(line: &'a str, fields: &Fields, check_other: impl Fn(&str) -> bool, decoded: &mut String) -> Option<(usize, usize, bool, Option<&'a str>)> {
    let bytes = line.as_bytes();
    let mut pos = skip_ws(bytes, 0);
    if bytes.get(pos) != Some(&b'{') {
        return None;
    }
    pos = skip_ws(bytes, pos + 1);
    // The text's span in the line, and whether it was decoded.
    let mut text: Option<(usize, usize, bool)> = None;
    let mut id = None;
    loop {
        if bytes.get(pos) != Some(&b'"') {
            return None; // also `{}` and a comma before `}`: the parse words it
        }
        let start = pos + 1;
        let end = find_special(bytes, start);
        if bytes.get(end) != Some(&b'"') {
            return None; // a key with escapes or a control character
        }
        let key = &line[start..end];
        pos = skip_ws(bytes, end + 1);
        if bytes.get(pos) != Some(&b':') {
            return None;
        }
        pos = skip_ws(bytes, pos + 1);
        if key == fields.text {
            if text.is_some() || bytes.get(pos) != Some(&b'"') {
                return None;
            }
            let (end, escaped) = string(line, pos + 1, decoded)?;
            text = Some((pos + 1, end - 1, escaped));
            pos = end;
        } else {
            let (raw, end) = value(line, pos)?;
            if fields.id.as_deref() == Some(key) {
                if id.is_some() {
                    return None;
                }
                id = Some(raw);
            } else if !check_other(raw) {
                return None;
            }
            pos = end;
        }
        pos = skip_ws(bytes, pos);
        match bytes.get(pos) {
            Some(b',') => pos = skip_ws(bytes, pos + 1),
            Some(b'}') => break,
            _ => return None,
        }
    }
    if skip_ws(bytes, pos + 1) != bytes.len() {
        return None;
    }
    let (start, end, escaped) = text?;
    Some((start, end, escaped, id))
}

/// The first position at or after `at` that is not JSON whitespace.
fn skip_ws(bytes: &[u8], mut at: usize) -> usize {
    while let Some(b' ' | b'\t' | b'\n' | b'\r') = bytes.get(at) {
        at += 1;
    }
    at
}

/// One value (not the text) from `at`, read by serde_json: its raw JSON and
/// the position after it.
fn value(line: &str, at: usize) -> Option<(&str, usize)> {
    let mut values = serde_json::Deserializer::from_str(&line[at..]).into_iter::<&RawValue>();
    let raw = values.next()?.ok()?;
    Some((raw.get(), at + values.byte_offset()))
}

/// The string whose content starts at `at`, up to its closing quote: the
/// position after that quote, and whether it had escapes (then decoded into
/// `decoded`). `None` for a control character, an unknown escape, a lone
/// surrogate or no closing quote (as serde_json, which errs on those).
fn string(line: &str, at: usize, decoded: &mut String) -> Option<(usize, bool)> {
    let bytes = line.as_bytes();
    let (mut from, mut escaped) = (at, false);
    loop {
        let i = find_special(bytes, from);
        match bytes.get(i)? {
            b'"' => {
                if escaped {
                    decoded.push_str(&line[from..i]);
                }
                return Some((i + 1, escaped));
            }
            b'\\' => {
                if !escaped {
                    decoded.clear();
                    escaped = true;
                }
                // Specials are ASCII: the segment ends on a char boundary.
                decoded.push_str(&line[from..i]);
                let (c, len) = escape(&bytes[i + 1..])?;
                decoded.push(c);
                from = i + 1 + len;
            }
            _ => return None, // a control character
        }
    }
}

/// The char an escape stands for (`bytes` start after its backslash) and
/// the bytes it takes after the backslash.
fn escape(bytes: &[u8]) -> Option<(char, usize)> {
    let c = match bytes.first()? {
        b'"' => '"',
        b'\\' => '\\',
        b'/' => '/',
        b'b' => '\u{8}',
        b'f' => '\u{c}',
        b'n' => '\n',
        b'r' => '\r',
        b't' => '\t',
        b'u' => {
            let high = hex4(bytes.get(1..5)?)?;
            return match high {
                0xD800..=0xDBFF => {
                    // A pair: `\uD83D\uDE00` is one char.
                    if bytes.get(5..7)? != b"\\u" {
                        return None;
                    }
                    let low = hex4(bytes.get(7..11)?)?;
                    if !(0xDC00..=0xDFFF).contains(&low) {
                        return None;
                    }
                    char::from_u32(0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00)).map(|c| (c, 11))
                }
                _ => char::from_u32(high).map(|c| (c, 5)), // None for a lone low surrogate
            };
        }
        _ => return None,
    };
    Some((c, 1))
}

fn hex4(digits: &[u8]) -> Option<u32> {
    digits.iter().try_fold(0u32, |v, &d| Some(v << 4 | char::from(d).to_digit(16)?))
}

/// The position of the first `"`, `\` or control character at or after
/// `from`, or `bytes.len()` when there is none.
fn find_special(bytes: &[u8], from: usize) -> usize {
    #[cfg(target_arch = "x86_64")]
    if !crate::cpu::portable() {
        // SAFETY: SSE2 is part of x86-64.
        return unsafe { sse2::find_special(bytes, from) };
    }
    find_special_portable(bytes, from)
}

fn find_special_portable(bytes: &[u8], from: usize) -> usize {
    bytes[from..].iter().position(|&b| is_special(b)).map_or(bytes.len(), |i| from + i)
}

fn is_special(b: u8) -> bool {
    b == b'"' || b == b'\\' || b < 0x20
}

#[cfg(target_arch = "x86_64")]
mod sse2 {
    use std::arch::x86_64::*;

    /// [`super::find_special`], 16 bytes a step.
    ///
    /// # Safety
    /// The CPU must have SSE2 (every x86-64 does).
    #[target_feature(enable = "sse2")]
    pub unsafe fn find_special(bytes: &[u8], from: usize) -> usize {
        let (quote, backslash, below_space) = (_mm_set1_epi8(b'"' as i8), _mm_set1_epi8(b'\\' as i8), _mm_set1_epi8(0x1f));
        let mut i = from;
        while i + 16 <= bytes.len() {
            // SAFETY: `i + 16 <= len`: the 16 bytes are in the slice.
            let v = unsafe { _mm_loadu_si128(bytes.as_ptr().add(i).cast()) };
            // A byte at most 0x1f is its own maximum with 0x1f.
            let control = _mm_cmpeq_epi8(_mm_max_epu8(v, below_space), below_space);
            let hits = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, quote), _mm_cmpeq_epi8(v, backslash)), control);
            let mask = _mm_movemask_epi8(hits) as u32;
            if mask != 0 {
                return i + mask.trailing_zeros() as usize;
            }
            i += 16;
        }
        super::find_special_portable(bytes, i)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn specials_are_found_by_both_paths() {
        let mut bytes: Vec<u8> = (0x20..0x7f).filter(|&b| b != b'"' && b != b'\\').cycle().take(100).collect();
        for at in [0, 15, 16, 17, 40, 99] {
            for special in [b'"', b'\\', 0x00, 0x1f, b'\n'] {
                let keep = bytes[at];
                bytes[at] = special;
                for from in [0, at.saturating_sub(3), at] {
                    assert_eq!(find_special(&bytes, from), at);
                    assert_eq!(find_special_portable(&bytes, from), at);
                }
                bytes[at] = keep;
            }
        }
        assert_eq!(find_special(&bytes, 0), bytes.len());
        assert_eq!(find_special("é\u{7f}\u{80}€".as_bytes(), 0), "é\u{7f}\u{80}€".len(), "no byte of 0x7f and above is special");
    }

    #[test]
    fn escapes() {
        let decode = |s: &str| {
            let mut out = String::new();
            string(s, 0, &mut out).map(|(end, escaped)| (end, escaped, out))
        };
        assert_eq!(decode(r#"plain" rest"#), Some((6, false, String::new())));
        assert_eq!(decode(r#"a\n\t\"\\\/\b\f\r\u00e9\uD83D\uDE00\u0000z"x"#).map(|d| d.2), Some("a\n\t\"\\/\u{8}\u{c}\r\u{e9}\u{1F600}\0z".to_owned()));
        for bad in [r#"\ud800""#, r#"\udc00""#, r#"\ud800\u0041""#, r#"\x""#, r#"\u12g4""#, r#"\u12""#, "raw\ttab\"", "no end", "ends in \\"] {
            assert_eq!(decode(bad), None, "{bad:?}");
        }
    }

    fn fields(id: Option<&str>) -> Fields {
        Fields { text: "text".into(), id: id.map(str::to_owned) }
    }

    /// A record's parts, adversarial: keys that are and are not wanted,
    /// twice, with escapes; texts with every escape, surrogates, control
    /// characters; nested values; numbers; stray commas and bytes.
    fn line() -> impl Strategy<Value = String> {
        let odd_key = prop::sample::select(vec!["te\\u0078t", "t", "", "text ", "i\\nd", "i\td"]);
        let key = prop_oneof![1 => Just("text"), 3 => Just("id"), 3 => Just("meta"), 1 => odd_key];
        let good = prop::sample::select(vec![
            "a",
            "é",
            "€",
            "😀",
            " ",
            "\\n",
            "\\\"",
            "\\\\",
            "\\/",
            "\\u00e9",
            "\\uD83D\\uDE00",
            "\\u0000",
            "0123456789",
            "\\b\\f\\r\\t",
        ]);
        let bad = prop::sample::select(vec!["\\ud800", "\\udc00", "\\uD83D\\u0041", "\\x", "\t", "\\u12", "\u{1f}"]);
        let piece = prop_oneof![12 => good, 1 => bad];
        let text = prop::collection::vec(piece, 0..12).prop_map(|p| format!("\"{}\"", p.concat()));
        let good = prop::sample::select(vec![
            "0",
            "-0",
            "7",
            "-12",
            "1.5",
            "1e3",
            "18446744073709551615",
            "123456789012345678901234567890",
            "true",
            "null",
            "[1, {\"text\": \"no\"}]",
            "{\"a\": [ ]}",
            "\"\\ud800\"",
            "\"doc-1\"",
            "\"a\\tb\"",
            "\"\\u00e9\"",
        ]);
        let bad = prop::sample::select(vec!["NaN", "01", "[1,]", "{", "\"", "1.", "tru"]);
        let other = prop_oneof![6 => good, 1 => bad].prop_map(str::to_owned);
        let value = prop_oneof![text.clone(), other.clone()];
        let ws = prop_oneof![6 => prop::sample::select(vec!["", " ", "\t", "\r\n"]), 1 => Just("\u{b}")];
        let pair = |key: BoxedStrategy<&'static str>, value: BoxedStrategy<String>| {
            (key, ws.clone(), value, ws.clone()).prop_map(|(k, w1, v, w2)| format!("\"{k}\"{w1}:{w1}{v}{w2}"))
        };
        // Mostly one text field among the others, somewhere.
        let text_pair = prop_oneof![6 => pair(Just("text").boxed(), text.boxed()), 1 => pair(Just("text").boxed(), other.boxed())];
        let pairs = (prop::collection::vec(pair(key.boxed(), value.boxed()), 0..4), prop::option::weighted(0.9, text_pair), any::<prop::sample::Index>());
        let pairs = pairs.prop_map(|(mut pairs, text, at)| {
            if let Some(text) = text {
                let at = at.index(pairs.len() + 1);
                pairs.insert(at, text);
            }
            pairs.join(",")
        });
        let tail = prop_oneof![8 => Just(""), 1 => prop::sample::select(vec![",", " x", "}"])];
        (pairs, ws, tail).prop_map(|(pairs, w, tail)| format!("{w}{{{pairs}}}{w}{tail}"))
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(4000))]

        /// Every line the scan reads, the whole-line parse reads the same
        /// (text and id); and the common shapes are read by the scan.
        #[test]
        fn agrees_with_the_whole_line_parse(line in line(), with_id: bool) {
            let fields = fields(with_id.then_some("id"));
            let whole = super::super::json::parse_line_whole(line.as_bytes(), &fields, &mut super::super::json::KeepText);
            if let Some(line) = super::super::json::parse_line_scanned(&line, &fields, &mut super::super::json::KeepText) {
                prop_assert_eq!(line, whole);
            }
        }
    }

    /// The lines the property test draws are read by the scan often, and
    /// left to the whole-line parse often: both sides are tried.
    #[test]
    fn the_drawn_lines_take_both_ways() {
        use proptest::strategy::ValueTree;
        use proptest::test_runner::TestRunner;
        let mut runner = TestRunner::deterministic();
        let f = fields(Some("id"));
        let (mut scanned, n) = (0, 2000);
        for _ in 0..n {
            let line = line().new_tree(&mut runner).unwrap().current();
            scanned += usize::from(super::super::json::parse_line_scanned(&line, &f, &mut super::super::json::KeepText).is_some());
        }
        assert!(scanned > n / 10 && scanned < n * 9 / 10, "{scanned} of {n} scanned");
    }

    #[test]
    fn a_huge_decoded_text_is_not_held_after_its_line() {
        let f = fields(None);
        let huge = format!(r#"{{"text":"{}"}}"#, "a\\n".repeat(KEEP_DECODED));
        let len = record(
            &huge,
            &f,
            |_| true,
            |text, _| match text {
                Text::Decoded(t) => t.len(),
                Text::Borrowed(_) => 0,
            },
        );
        assert_eq!(len, Some(2 * KEEP_DECODED));
        assert!(DECODED.with(|d| d.borrow().capacity()) <= KEEP_DECODED);
        // And after a line the scan then leaves to the whole-line parse.
        assert!(record(&format!("{huge} x"), &f, |_| true, |_, _| ()).is_none());
        assert!(DECODED.with(|d| d.borrow().capacity()) <= KEEP_DECODED);
    }

    #[test]
    fn the_common_shapes_are_scanned() {
        use super::super::json::{parse_line_scanned, Id, KeepText, Line};
        let f = fields(Some("id"));
        for (line, text, id) in [
            (r#"{"id": 0, "text": "a b"}"#, "a b", Some(Id::Int(0))),
            (r#" {"text":"x\n\u00e9","id":"doc-1","meta":{"a":[1,2,{"text":"no"}]},"n":1.5e3} "#, "x\n\u{e9}", Some(Id::Str("doc-1".into()))),
            (r#"{"url":"http:\/\/a","text":"\uD83D\uDE00"}"#, "\u{1F600}", None),
        ] {
            let Some(Line::Record { text: got, id: got_id }) = parse_line_scanned(line, &f, &mut KeepText) else { panic!("{line}: not scanned") };
            assert_eq!((got.as_ref(), got_id), (text, id), "{line}");
        }
        for line in [r#"{"text":"a","text":"b"}"#, r#"{"te\u0078t":"x"}"#, r#"{"text":1}"#, r#"{"text":"\ud800"}"#, r#"{"text":"x"} x"#, r#"{"text":"x",}"#] {
            assert!(parse_line_scanned(line, &f, &mut KeepText).is_none(), "{line}: left to the whole-line parse");
        }
    }
}
