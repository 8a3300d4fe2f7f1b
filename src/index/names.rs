//! The name table of an index keyed by strings: each stored item's string
//! id (its *name*) and the `u64` id the index keeps it under.
//!
//! An index is keyed by ints or by strings, decided by its first add that
//! stores anything. Keyed by strings, it gives each item an internal id
//! counted up as default ids are (never reused, even after a remove), and
//! this table maps names to internal ids and back; the tables, runs and
//! every search work on internal ids alone, so an index keyed by strings
//! answers as an int-keyed one whose ids are those internal ids, in the
//! order the items were added.
//!
//! Invariants:
//! - `by_id` and `by_name` hold the same pairs, each name and id once;
//! - the ids are exactly the index's live ids (`Index` keeps it so: adds
//!   name what they store, removes drop the names of what they remove;
//!   [`Names::decode`] and `Index::load` check a file's table).
//!
//! Saved as three sections after the index's own: `NAMEIDS` (the internal
//! ids, ascending), `NAMEOFFS` (name `i` is `NAMES[NAMEOFFS[i]..NAMEOFFS[i + 1]]`,
//! `u64`s from 0) and `NAMES` (the names' UTF-8 bytes). A file with them is
//! format version 2: a reader of version 1, which passes over sections it
//! does not know, refuses it as newer instead of answering internal ids.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use crate::{Error, Result};

/// Names and internal ids of the items of an index keyed by strings.
#[derive(Debug, Default, Clone)]
pub(crate) struct Names {
    by_id: HashMap<u64, Arc<str>>,
    by_name: HashMap<Arc<str>, u64>,
    /// Bytes of all names, for `bytes` and the saved `NAMES` section.
    text: usize,
}

impl Names {
    pub(crate) fn len(&self) -> usize {
        self.by_id.len()
    }

    /// The internal id stored under `name`.
    pub(crate) fn id(&self, name: &str) -> Option<u64> {
        self.by_name.get(name).copied()
    }

    /// The name of internal id `id`.
    pub(crate) fn name(&self, id: u64) -> Option<&Arc<str>> {
        self.by_id.get(&id)
    }

    /// Checks that `names` are distinct and none is stored.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] naming the first repeated or stored name.
    pub(crate) fn check_new<S: AsRef<str>>(&self, names: &[S]) -> Result<()> {
        let mut seen: HashSet<&str> = HashSet::with_capacity(names.len());
        for name in names {
            let name = name.as_ref();
            if !seen.insert(name) {
                return Err(Error::invalid("ids", "distinct", format!("id {name:?} given twice")));
            }
        }
        if let Some(name) = names.iter().map(AsRef::as_ref).find(|n| self.by_name.contains_key(*n)) {
            return Err(Error::invalid("ids", "not already stored (remove it first)", format!("id {name:?}")));
        }
        Ok(())
    }

    /// Names internal id `id` (neither stored: checked by the caller).
    pub(crate) fn insert(&mut self, id: u64, name: &str) {
        let name: Arc<str> = Arc::from(name);
        self.text += name.len();
        self.by_name.insert(Arc::clone(&name), id);
        let before = self.by_id.insert(id, name);
        debug_assert!(before.is_none(), "internal id {id} named twice");
    }

    /// Forgets the name of internal id `id`, if it has one: the name may be
    /// given again.
    pub(crate) fn remove_id(&mut self, id: u64) {
        if let Some(name) = self.by_id.remove(&id) {
            self.text -= name.len();
            self.by_name.remove(&name);
        }
    }

    /// Bytes held, roughly: the names and two map entries each.
    pub(crate) fn bytes(&self) -> usize {
        self.text + self.by_id.capacity() * 48 + self.by_name.capacity() * 40
    }

    /// The table as its three sections: internal ids ascending, offsets of
    /// the names (one more than the ids, from 0) and the names' bytes.
    pub(crate) fn encode(&self) -> (Vec<u64>, Vec<u64>, Vec<u8>) {
        let mut ids: Vec<u64> = self.by_id.keys().copied().collect();
        ids.sort_unstable();
        let mut offsets = Vec::with_capacity(ids.len() + 1);
        let mut text = Vec::with_capacity(self.text);
        offsets.push(0u64);
        for id in &ids {
            text.extend_from_slice(self.by_id[id].as_bytes());
            offsets.push(text.len() as u64);
        }
        (ids, offsets, text)
    }

    /// The table of [`Names::encode`]'s sections.
    ///
    /// # Errors
    /// What is wrong with them, for a `BadFile` message: ids not ascending,
    /// offsets that do not cut the bytes into one name per id, a name that
    /// is not UTF-8, or a name given twice.
    pub(crate) fn decode(ids: &[u64], offsets: &[u64], text: &[u8]) -> std::result::Result<Names, String> {
        if offsets.len() != ids.len() + 1 || offsets.first() != Some(&0) || offsets.last() != Some(&(text.len() as u64)) {
            return Err(format!("its NAMEOFFS section does not cut {} bytes of names into {} names", text.len(), ids.len()));
        }
        if let Some(w) = ids.windows(2).find(|w| w[0] >= w[1]) {
            return Err(format!("its NAMEIDS section is not ascending ({} before {})", w[0], w[1]));
        }
        let mut names = Names::default();
        names.by_id.reserve(ids.len());
        names.by_name.reserve(ids.len());
        for (i, (&id, w)) in ids.iter().zip(offsets.windows(2)).enumerate() {
            if w[0] > w[1] || w[1] > text.len() as u64 {
                return Err(format!("name {i}: its offsets run backwards or past the names"));
            }
            let bytes = &text[w[0] as usize..w[1] as usize];
            let name = std::str::from_utf8(bytes).map_err(|e| format!("name {i} is not UTF-8 ({e})"))?;
            if names.by_name.contains_key(name) {
                return Err(format!("the id {name:?} is stored twice"));
            }
            names.insert(id, name);
        }
        Ok(names)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn names_map_both_ways_and_a_removed_name_comes_back() {
        let mut names = Names::default();
        names.check_new(&["a", "", "é🙂"]).unwrap();
        for (id, name) in [(0, "a"), (1, ""), (5, "é🙂")] {
            names.insert(id, name);
        }
        assert_eq!((names.id("a"), names.id(""), names.id("é🙂"), names.id("b")), (Some(0), Some(1), Some(5), None));
        assert_eq!(names.name(5).map(|n| &**n), Some("é🙂"));
        assert!(names.check_new(&["b", "a"]).unwrap_err().to_string().contains("\"a\""));
        assert!(names.check_new(&["b", "c", "b"]).unwrap_err().to_string().contains("given twice"));
        names.remove_id(0);
        names.remove_id(0);
        assert_eq!((names.len(), names.id("a"), names.name(0)), (2, None, None));
        names.check_new(&["a"]).unwrap();
        names.insert(6, "a");
        assert_eq!(names.id("a"), Some(6));
    }

    #[test]
    fn bad_sections_are_refused() {
        let ok = Names::decode(&[1, 4], &[0, 1, 3], b"abc").unwrap();
        assert_eq!((ok.id("a"), ok.id("bc")), (Some(1), Some(4)));
        assert!(Names::decode(&[4, 1], &[0, 1, 3], b"abc").unwrap_err().contains("ascending"));
        assert!(Names::decode(&[1, 1], &[0, 1, 3], b"abc").unwrap_err().contains("ascending"));
        assert!(Names::decode(&[1, 4], &[0, 1], b"abc").unwrap_err().contains("NAMEOFFS"));
        assert!(Names::decode(&[1, 4], &[0, 1, 4], b"abc").unwrap_err().contains("NAMEOFFS"));
        assert!(Names::decode(&[1, 4, 5], &[0, 2, 1, 3], b"abc").unwrap_err().contains("backwards"));
        assert!(Names::decode(&[1, 4], &[0, 10, 3], b"abc").unwrap_err().contains("past the names"));
        assert!(Names::decode(&[1, 4], &[0, 1, 3], b"a\xff\xfe").unwrap_err().contains("UTF-8"));
        assert!(Names::decode(&[1, 4], &[0, 2, 4], b"abab").unwrap_err().contains("twice"));
        assert_eq!(Names::decode(&[], &[0], b"").unwrap().len(), 0);
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(32))]

        /// An index keyed by strings answers as one keyed by ints whose
        /// ids are its internal ids, the names mapped both ways: through
        /// add, add_unique, remove, adding removed names again, and a save
        /// and load (mapped or read).
        #[test]
        fn a_named_index_answers_as_the_int_one(fps in crate::testing::planted(40, 400), k in 0u32..=3, split in 0usize..400,
                                                drop in prop::collection::vec(any::<prop::sample::Index>(), 0..30), mmap in any::<bool>()) {
            use crate::index::{ClusterMethod, Index, Keys};
            use crate::Copies;
            let mut named = Index::new(k, None, None).unwrap();
            let mut ints = Index::new(k, None, None).unwrap();
            let n = fps.len();
            let names: Vec<String> = (0..n).map(|i| if i % 7 == 3 { format!("é{i}🙂") } else if i == 5 { String::new() } else { format!("doc-{i}") }).collect();
            let half = split.min(n);
            let ids = named.add_named(&fps[..half], &names[..half]).unwrap();
            ints.add(&fps[..half], Some(&ids)).unwrap();
            prop_assert_eq!(named.keys(), if half > 0 { Keys::Strings } else { Keys::Undecided });
            let (is_new, matched) = named.add_unique_named(&fps[half..], &names[half..], None).unwrap();
            let (int_new, int_matched) = ints.add_unique(&fps[half..], None, None).unwrap();
            prop_assert_eq!(&is_new, &int_new);
            for p in 0..is_new.len() {
                let want = if is_new[p] { (half + p) as u64 } else { int_matched[p] };
                prop_assert_eq!(matched[p], want);
            }
            let stored: Vec<&str> = (0..n).filter(|&i| i < half || is_new[i - half]).map(|i| names[i].as_str()).collect();
            let gone: Vec<&str> = drop.iter().map(|d| stored[d.index(stored.len().max(1)) % stored.len().max(1)]).filter(|_| !stored.is_empty()).collect();
            let gone_ids: Vec<u64> = gone.iter().map(|g| named.id_of(g).unwrap()).collect();
            prop_assert_eq!(named.remove_named(&gone).unwrap(), ints.remove(&gone_ids));
            let same = |a: &Index, b: &Index| -> std::result::Result<(), TestCaseError> {
                prop_assert_eq!(a.len(), b.len());
                prop_assert_eq!(a.find_all(None, Copies::All).unwrap(), b.find_all(None, Copies::All).unwrap());
                prop_assert_eq!(a.cluster(None, 1, ClusterMethod::Connected).unwrap(), b.cluster(None, 1, ClusterMethod::Connected).unwrap());
                prop_assert_eq!(a.query_batch(&fps, None).unwrap(), b.query_batch(&fps, None).unwrap());
                let all: Vec<u64> = a.items().into_iter().map(|(_, id)| id).collect();
                prop_assert_eq!(a.names_of(&all).unwrap().len(), all.len());
                Ok(())
            };
            same(&named, &ints)?;
            for g in &gone {
                prop_assert_eq!(named.id_of(g), None);
            }
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("named.rsh");
            named.save(&path).unwrap();
            let mut loaded = Index::load(&path, mmap).unwrap();
            same(&loaded, &ints)?;
            prop_assert_eq!(loaded.keys(), named.keys());
            for name in &stored {
                prop_assert_eq!(loaded.id_of(name), named.id_of(name));
            }
            // Removed names come back, under new internal ids, in both.
            let mut again: Vec<&str> = gone.clone();
            again.sort_unstable();
            again.dedup();
            let back: Vec<u64> = vec![7; again.len()];
            let new_ids = loaded.add_named(&back, &again).unwrap();
            named.add_named(&back, &again).unwrap();
            ints.add(&back, Some(&new_ids)).unwrap();
            same(&loaded, &ints)?;
            same(&named, &ints)?;
        }

        /// Encoding and decoding give the same table, for any names
        /// (empty, unicode) and sparse ids.
        #[test]
        fn round_trip(names in prop::collection::hash_set(".{0,6}", 0..40), gaps in prop::collection::vec(1u64..1000, 40)) {
            let mut table = Names::default();
            let mut id = 0;
            for (name, gap) in names.iter().zip(&gaps) {
                id += gap;
                table.insert(id, name);
            }
            let (ids, offsets, text) = table.encode();
            let back = Names::decode(&ids, &offsets, &text).unwrap();
            prop_assert_eq!(back.len(), names.len());
            for name in &names {
                let id = table.id(name).unwrap();
                prop_assert_eq!(back.id(name), Some(id));
                prop_assert_eq!(back.name(id).map(|n| n.to_string()), Some(name.clone()));
            }
            prop_assert_eq!(back.text, table.text);
        }
    }
}
