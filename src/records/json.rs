//! One JSON-lines record: its text and id fields, read in place.
//!
//! A line of the common shape (a flat object, keys without escapes, one
//! text) is read by `json_scan` in one pass; any other by
//! serde_json (borrowed strings: a text without escapes is a slice of the
//! line, never copied), driven by seeds that look only at the two wanted
//! top-level keys and skip every other value; both read a line the same.
//! The Python reference reader (`json.loads`) is the contract: a line this
//! module accepts must be one `json.loads` accepts, giving the same text
//! and id. Anything it is not sure of (invalid JSON, a missing or mistyped
//! field, a lone surrogate, an integer too long for Python, a UTF-8
//! byte-order mark, ...) is [`Line::Defer`]red to the reference reader,
//! which accepts it or words the error; those lines are rare, so their
//! speed does not matter.

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::value::RawValue;

/// Python's `int()` refuses decimal strings longer than this (CPython's
/// default `sys.get_int_max_str_digits()`), so `json.loads` fails on such an
/// integer anywhere in a line.
const PY_INT_MAX_DIGITS: usize = 4300;

/// Which fields of a record to read.
#[derive(Debug, Clone)]
pub struct Fields {
    /// The text field's key.
    pub text: String,
    /// The id field's key, or `None` when ids are not wanted (the id field
    /// is then skipped like any other).
    pub id: Option<String>,
}

/// An id as written in a record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Id<'a> {
    Int(i64),
    UInt(u64),
    Str(Cow<'a, str>),
}

impl Id<'_> {
    /// The same id, owning its string.
    pub fn into_owned(self) -> Id<'static> {
        match self {
            Id::Int(v) => Id::Int(v),
            Id::UInt(v) => Id::UInt(v),
            Id::Str(s) => Id::Str(Cow::Owned(s.into_owned())),
        }
    }
}

/// What one line holds; `T` is what became of the text (see [`Texts`]).
#[derive(Debug, PartialEq, Eq)]
pub enum Line<'a, T = Cow<'a, str>> {
    /// Empty, or only ASCII whitespace (Python's `bytes.isspace`): not a record.
    Blank,
    /// A record with a string text; `id` is `None` when the id field is
    /// missing (or ids were not asked for).
    Record { text: T, id: Option<Id<'a>> },
    /// For the reference reader to decide (see the module's docs).
    Defer,
}

/// What to make of a text field's string while the line is parsed: the
/// string itself ([`KeepText`]), or, without keeping or copying it, its
/// fingerprint (an `Option<`[`crate::Fingerprinter`]`>`). An escaped string is decoded
/// into a scratch buffer (the scan's or serde_json's) and is only valid
/// during the call.
pub trait Texts<'de> {
    type Out;
    fn borrowed(&mut self, text: &'de str) -> Self::Out;
    fn transient(&mut self, text: &str) -> Self::Out;
}

/// Keeps the text: borrowed from the line when it has no escapes.
pub struct KeepText;

impl<'de> Texts<'de> for KeepText {
    type Out = Cow<'de, str>;

    fn borrowed(&mut self, text: &'de str) -> Self::Out {
        Cow::Borrowed(text)
    }

    fn transient(&mut self, text: &str) -> Self::Out {
        Cow::Owned(text.to_owned())
    }
}

/// The text's fingerprint with a fingerprinter; 0 without one (parsing only).
impl<'de> Texts<'de> for Option<crate::Fingerprinter> {
    type Out = u64;

    fn borrowed(&mut self, text: &'de str) -> u64 {
        self.as_mut().map_or(0, |f| f.fingerprint(text))
    }

    fn transient(&mut self, text: &str) -> u64 {
        self.as_mut().map_or(0, |f| f.fingerprint(text))
    }
}

/// Reads one line (without its `\n`), keeping its text.
pub fn parse_line<'a>(line: &'a [u8], fields: &Fields) -> Line<'a> {
    parse_line_with(line, fields, &mut KeepText)
}

/// Reads one line (without its `\n`), handing its text to `texts`: the
/// common shape by `json_scan`, anything else by serde_json.
pub fn parse_line_with<'a, T: Texts<'a>>(line: &'a [u8], fields: &Fields, texts: &mut T) -> Line<'a, T::Out> {
    match checked(line) {
        Ok(text) => parse_line_scanned(text, fields, texts).unwrap_or_else(|| parse_str_whole(text, fields, texts)),
        Err(line) => line,
    }
}

/// The line as UTF-8, or what it is when that is all it takes to say.
fn checked<'a, O>(line: &'a [u8]) -> Result<&'a str, Line<'a, O>> {
    if line.iter().all(|&b| matches!(b, b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c)) {
        return Err(Line::Blank);
    }
    // json.loads decodes the whole line first: bad UTF-8 anywhere is an
    // error there (and UTF-8-encoded surrogates, which it lets through, are
    // deferred here with the rest).
    simdutf8::basic::from_utf8(line).map_err(|_| Line::Defer)
}

/// [`parse_line_with`] by serde_json alone (the tests compare the two ways).
#[cfg(test)]
pub(super) fn parse_line_whole<'a, T: Texts<'a>>(line: &'a [u8], fields: &Fields, texts: &mut T) -> Line<'a, T::Out> {
    checked(line).map_or_else(|line| line, |text| parse_str_whole(text, fields, texts))
}

/// A line of the common shape ([`super::json_scan`]); `None` when
/// [`parse_str_whole`] must decide.
pub(super) fn parse_line_scanned<'a, T: Texts<'a>>(line: &'a str, fields: &Fields, texts: &mut T) -> Option<Line<'a, T::Out>> {
    super::json_scan::record(
        line,
        fields,
        |raw| !has_long_integer(raw),
        |text, id| {
            // The id first: a line deferred for it is not fingerprinted.
            let Some(id) = id_of(id) else { return Line::Defer };
            let text = match text {
                super::json_scan::Text::Borrowed(text) => texts.borrowed(text),
                super::json_scan::Text::Decoded(text) => texts.transient(text),
            };
            Line::Record { text, id }
        },
    )
}

/// A whole line read by serde_json, driven by the seeds below.
fn parse_str_whole<'a, T: Texts<'a>>(text: &'a str, fields: &Fields, texts: &mut T) -> Line<'a, T::Out> {
    let mut de = serde_json::Deserializer::from_str(text);
    let Ok(found) = (RecordSeed { fields, texts }).deserialize(&mut de) else {
        return Line::Defer;
    };
    if de.end().is_err() {
        return Line::Defer;
    }
    let Some(Some(text)) = found.text else { return Line::Defer };
    let Some(id) = id_of(found.id.map(RawValue::get)) else { return Line::Defer };
    Line::Record { text, id }
}

/// A record's id from its raw JSON, or none when it has no id field;
/// `None` when the line is deferred for it (see [`decode_id`]).
fn id_of(raw: Option<&str>) -> Option<Option<Id<'_>>> {
    match raw {
        None => Some(None),
        Some(raw) => decode_id(raw).map(Some),
    }
}

/// The fields found in an object: the last value of each wanted key
/// (duplicate keys: the last wins, as in `json.loads`); a text that is not
/// a string is `Some(None)`, an id is its raw JSON.
struct Found<'a, O> {
    text: Option<Option<O>>,
    id: Option<&'a RawValue>,
}

struct RecordSeed<'f, 't, T> {
    fields: &'f Fields,
    texts: &'t mut T,
}

impl<'de, T: Texts<'de>> DeserializeSeed<'de> for RecordSeed<'_, '_, T> {
    type Value = Found<'de, T::Out>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de, T: Texts<'de>> Visitor<'de> for RecordSeed<'_, '_, T> {
    type Value = Found<'de, T::Out>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut found = Found { text: None, id: None };
        while let Some(key) = map.next_key_seed(KeySeed { fields: self.fields })? {
            match key {
                // The text is read in the one pass over the line: it is most of it.
                Key::Text => found.text = Some(map.next_value_seed(TextSeed(&mut *self.texts))?),
                Key::Id => found.id = Some(map.next_value()?),
                Key::Other => {
                    let value: &'de RawValue = map.next_value()?;
                    if has_long_integer(value.get()) {
                        return Err(de::Error::custom("an integer too long for Python"));
                    }
                }
            }
        }
        Ok(found)
    }
}

enum Key {
    Text,
    Id,
    Other,
}

/// Classifies a key without copying it (a key with escapes is decoded by
/// serde_json into a scratch buffer and compared from there).
struct KeySeed<'f> {
    fields: &'f Fields,
}

impl<'de> DeserializeSeed<'de> for KeySeed<'_> {
    type Value = Key;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Key, D::Error> {
        d.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for KeySeed<'_> {
    type Value = Key;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a key")
    }

    fn visit_str<E: de::Error>(self, key: &str) -> Result<Key, E> {
        Ok(if key == self.fields.text {
            Key::Text
        } else if self.fields.id.as_deref() == Some(key) {
            Key::Id
        } else {
            Key::Other
        })
    }
}

/// A text field's value: `Some` string (borrowed from the line when it has
/// no escapes), `None` for any other kind of value (deferred). A lone
/// surrogate is an error, deferred with the line.
struct TextSeed<'t, T>(&'t mut T);

impl<'de, T: Texts<'de>> DeserializeSeed<'de> for TextSeed<'_, T> {
    type Value = Option<T::Out>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de, T: Texts<'de>> Visitor<'de> for TextSeed<'_, T> {
    type Value = Option<T::Out>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_borrowed_str<E: de::Error>(self, s: &'de str) -> Result<Self::Value, E> {
        Ok(Some(self.0.borrowed(s)))
    }

    fn visit_str<E: de::Error>(self, s: &str) -> Result<Self::Value, E> {
        Ok(Some(self.0.transient(s)))
    }

    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_i64<E: de::Error>(self, _: i64) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_u64<E: de::Error>(self, _: u64) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(None)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(None)
    }
}

/// A JSON string's value (borrowed from the line when it has no escapes);
/// `None` for any other kind of value or a lone surrogate.
fn decode_str(json: &str) -> Option<Cow<'_, str>> {
    if !json.starts_with('"') {
        return None;
    }
    let mut de = serde_json::Deserializer::from_str(json);
    StrSeed.deserialize(&mut de).ok()
}

struct StrSeed;

impl<'de> DeserializeSeed<'de> for StrSeed {
    type Value = Cow<'de, str>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for StrSeed {
    type Value = Cow<'de, str>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a string")
    }

    fn visit_borrowed_str<E: de::Error>(self, s: &'de str) -> Result<Self::Value, E> {
        Ok(Cow::Borrowed(s))
    }

    fn visit_str<E: de::Error>(self, s: &str) -> Result<Self::Value, E> {
        Ok(Cow::Owned(s.to_owned()))
    }
}

/// An id: an integer in i64 or u64 (as Python's `int` of the literal; a
/// longer one is left to the reference reader) or a string with no tab or
/// line break (a TSV output could not hold those).
fn decode_id(json: &str) -> Option<Id<'_>> {
    if json.starts_with('"') {
        let s = decode_str(json)?;
        return (!s.contains(['\t', '\n', '\r'])).then_some(Id::Str(s));
    }
    if json == "-0" {
        return Some(Id::Int(0)); // serde_json reads it as the float -0.0
    }
    // Only an integer literal: `1.0` and `1e3` are floats to json.loads.
    let digits = json.strip_prefix('-').unwrap_or(json);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let mut de = serde_json::Deserializer::from_str(json);
    IdSeed.deserialize(&mut de).ok().flatten()
}

struct IdSeed;

impl<'de> DeserializeSeed<'de> for IdSeed {
    type Value = Option<Id<'de>>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for IdSeed {
    type Value = Option<Id<'de>>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an integer")
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
        Ok(Some(Id::Int(v)))
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
        Ok(Some(i64::try_from(v).map_or(Id::UInt(v), Id::Int)))
    }

    fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
        Ok(None) // an integer literal beyond u64, which serde_json reads as a float
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(None)
    }
}

/// Whether JSON text holds a run of digits longer than Python's `int()`
/// takes (in a string too: this only decides whether to defer). A shorter
/// text cannot, and is not scanned.
fn has_long_integer(json: &str) -> bool {
    if json.len() <= PY_INT_MAX_DIGITS {
        return false;
    }
    let mut run = 0;
    for b in json.bytes() {
        if b.is_ascii_digit() {
            run += 1;
            if run > PY_INT_MAX_DIGITS {
                return true;
            }
        } else {
            run = 0;
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fields(id: Option<&str>) -> Fields {
        Fields { text: "text".into(), id: id.map(str::to_owned) }
    }

    fn parse(line: &str) -> Line<'_> {
        parse_line(line.as_bytes(), &fields(Some("id")))
    }

    fn record<'a>(text: &'a str, id: Option<Id<'a>>) -> Line<'a> {
        Line::Record { text: Cow::Borrowed(text), id }
    }

    #[test]
    fn text_and_id() {
        assert_eq!(parse(r#"{"id": 7, "text": "a b"}"#), record("a b", Some(Id::Int(7))));
        assert_eq!(parse(r#"{"text":"x","id":"doc-1"}"#), record("x", Some(Id::Str("doc-1".into()))));
        assert_eq!(parse(r#"{"text":"x"}"#), record("x", None));
        assert_eq!(parse(r#"{"text":"x","id":-0}"#), record("x", Some(Id::Int(0))));
        assert_eq!(parse(r#"{"text":"x","id":18446744073709551615}"#), record("x", Some(Id::UInt(u64::MAX))));
        assert_eq!(parse("  {\"text\":\"x\"}\r"), record("x", None));
    }

    #[test]
    fn escapes_are_decoded_and_borrowed_otherwise() {
        let Line::Record { text, .. } = parse(r#"{"text":"a\n\u00e9\ud83d\ude00\u0000"}"#) else { panic!() };
        assert_eq!(text, "a\n\u{e9}\u{1F600}\0");
        assert!(matches!(text, Cow::Owned(_)));
        let Line::Record { text, .. } = parse(r#"{"text":"plain"}"#) else { panic!() };
        assert!(matches!(text, Cow::Borrowed(_)));
        // A key written with escapes is the same key.
        assert_eq!(parse(r#"{"\u0074ext":"x"}"#), record("x", None));
    }

    #[test]
    fn last_duplicate_wins_and_other_fields_are_skipped() {
        assert_eq!(parse(r#"{"text":1,"text":"b"}"#), record("b", None));
        assert_eq!(parse(r#"{"text":"a","text":1}"#), Line::Defer);
        assert_eq!(parse(r#"{"meta":{"a":[1,2,{"text":"no"}]},"text":"yes","n":1.5e3}"#), record("yes", None));
    }

    #[test]
    fn blank_lines() {
        assert_eq!(parse(""), Line::Blank);
        assert_eq!(parse(" \t\r\x0b\x0c"), Line::Blank);
    }

    #[test]
    fn deferred_to_the_reference_reader() {
        for line in [
            "{",
            "[1]",
            r#"{"text":"x"} x"#,
            r#"{"id":1}"#,
            r#"{"text":null}"#,
            r#"{"text":"x","id":1.0}"#,
            r#"{"text":"x","id":1e3}"#,
            r#"{"text":"x","id":true}"#,
            r#"{"text":"x","id":[1]}"#,
            r#"{"text":"x","id":"a\tb"}"#,
            r#"{"text":"x","id":123456789012345678901234567890}"#,
            r#"{"text":"\ud800"}"#,
            "{\"text\":\"raw\ttab\"}",
            r#"{"text":"x","n":NaN}"#,
            "\u{feff}{\"text\":\"x\"}",
            "{\"text\":\"x\"}\x0c",
        ] {
            assert_eq!(parse(line), Line::Defer, "{line:?}");
        }
        assert_eq!(parse_line(b"{\"text\":\"\xff\"}", &fields(None)), Line::Defer);
        let long = format!(r#"{{"text":"x","n":{}}}"#, "1".repeat(PY_INT_MAX_DIGITS + 1));
        assert_eq!(parse(&long), Line::Defer);
        let ok = format!(r#"{{"text":"x","n":{}}}"#, "1".repeat(PY_INT_MAX_DIGITS));
        assert_eq!(parse(&ok), record("x", None));
    }

    #[test]
    fn ids_not_wanted_are_not_checked() {
        let line = br#"{"text":"x","id":1.5}"#;
        assert_eq!(parse_line(line, &fields(None)), record("x", None));
    }
}
