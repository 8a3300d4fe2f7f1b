//! Metadata: the user's own `key -> value` strings an index keeps with it
//! and its file, e.g. how its fingerprints were made (`rsimhash index
//! build` records the shingle mode and width there, so that later adds and
//! queries fingerprint texts the same way).
//!
//! Saved, when there is any, as two sections after the name table:
//! `METAOFFS` (`2 n + 1` `u64`s from 0: key `i` is
//! `METATEXT[METAOFFS[2i] .. METAOFFS[2i + 1]]`, its value
//! `METATEXT[METAOFFS[2i + 1] .. METAOFFS[2i + 2]]`) and `METATEXT` (the
//! UTF-8 bytes of keys and values, one after the other). Keys are strictly
//! ascending (bytewise), so each is there once. A reader that does not know
//! the two tags passes over them and loads the index as it is (metadata
//! changes no answer), so they need no new format version.

use std::collections::BTreeMap;

use super::Index;

/// An index's metadata: keys in ascending order, each once.
pub type Metadata = BTreeMap<String, String>;

/// The two sections of `meta`: offsets of keys and values, and their bytes.
pub(crate) fn encode(meta: &Metadata) -> (Vec<u64>, Vec<u8>) {
    let mut offsets = Vec::with_capacity(2 * meta.len() + 1);
    let mut text = Vec::new();
    offsets.push(0u64);
    for (key, value) in meta {
        for s in [key, value] {
            text.extend_from_slice(s.as_bytes());
            offsets.push(text.len() as u64);
        }
    }
    (offsets, text)
}

/// The metadata of [`encode`]'s sections.
///
/// # Errors
/// What is wrong with them, for a `BadFile` message: offsets that do not cut
/// the bytes into keys and values, text that is not UTF-8, keys not strictly
/// ascending.
pub(crate) fn decode(offsets: &[u64], text: &[u8]) -> std::result::Result<Metadata, String> {
    if offsets.len() % 2 != 1 || offsets.first() != Some(&0) || offsets.last() != Some(&(text.len() as u64)) {
        return Err(format!("its METAOFFS section does not cut {} bytes of metadata into keys and values", text.len()));
    }
    if offsets.windows(2).any(|w| w[0] > w[1]) {
        return Err("its METAOFFS section is not ascending".into());
    }
    let string = |i: usize| {
        let bytes = &text[offsets[i] as usize..offsets[i + 1] as usize];
        std::str::from_utf8(bytes).map(str::to_owned).map_err(|_| format!("metadata string {i} is not UTF-8"))
    };
    let mut meta = Metadata::new();
    let mut last: Option<String> = None;
    for i in 0..offsets.len() / 2 {
        let key = string(2 * i)?;
        if last.as_ref().is_some_and(|l| l.as_bytes() >= key.as_bytes()) {
            return Err(format!("metadata keys not strictly ascending at {key:?}"));
        }
        let value = string(2 * i + 1)?;
        last = Some(key.clone());
        meta.insert(key, value);
    }
    Ok(meta)
}

impl Index {
    /// The index's metadata (empty unless set, or loaded from a file with some).
    pub fn metadata(&self) -> &Metadata {
        &self.metadata
    }

    /// Replaces the index's metadata: [`Index::save`] writes it to the file.
    pub fn set_metadata(&mut self, meta: Metadata) {
        self.metadata = meta;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_bad_sections() {
        let mut meta = Metadata::new();
        assert_eq!(decode(&encode(&meta).0, &encode(&meta).1).unwrap(), meta);
        meta.insert("width".into(), "3".into());
        meta.insert("mode".into(), "words".into());
        meta.insert(String::new(), "é\0".into());
        let (offsets, text) = encode(&meta);
        assert_eq!(offsets.len(), 7);
        assert_eq!(decode(&offsets, &text).unwrap(), meta);
        for (offs, text, problem) in [
            (vec![], &b""[..], "does not cut"),
            (vec![0, 1], &b"a"[..], "does not cut"),
            (vec![0, 2, 1], &b"a"[..], "not ascending"),
            (vec![0, 1, 2], &b"\xffa"[..], "not UTF-8"),
            (vec![0, 1, 1, 2, 2], &b"bb"[..], "strictly ascending"),
            (vec![0, 1, 1, 2, 2], &b"ba"[..], "strictly ascending"),
        ] {
            let e = decode(&offs, text).unwrap_err();
            assert!(e.contains(problem), "{e}");
        }
    }
}
