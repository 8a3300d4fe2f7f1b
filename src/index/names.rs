//! String ids: the name table of an index keyed by strings (each stored
//! item's string id, its *name*, and the `u64` id the index keeps it
//! under), and the index's methods by name and its checks of id kinds.
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

use super::{Index, Keys};
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

/// An index's keys: what it is keyed by, and its adds, add_uniques and
/// removes by string id.
impl Index {
    /// What the index is keyed by.
    pub fn keys(&self) -> Keys {
        match (&self.names, self.next_id) {
            (Some(_), _) => Keys::Strings,
            (None, 0) => Keys::Undecided,
            (None, _) => Keys::Ints,
        }
    }

    /// Checks that `n` int ids (or, with `given` false, default ids) may
    /// be used: not on an index keyed by strings (an empty list passes).
    ///
    /// # Errors
    /// [`Error::IdKind`] saying what the index is keyed by.
    pub fn check_ints(&self, n: usize, given: bool) -> Result<()> {
        match (self.names.is_some() && n > 0, given) {
            (false, _) => Ok(()),
            (true, true) => Err(Error::IdKind { expected: "strings: this index is keyed by strings (its first add gave strings)", found: "ints" }),
            (true, false) => Err(Error::IdKind { expected: "given, as strings: this index is keyed by strings (its first add gave strings)", found: "none" }),
        }
    }

    /// Checks that `n` string ids may be used: not on an index keyed by
    /// ints (an empty list passes).
    ///
    /// # Errors
    /// [`Error::IdKind`] saying what the index is keyed by.
    pub fn check_strings(&self, n: usize) -> Result<()> {
        if n > 0 && self.keys() == Keys::Ints {
            return Err(Error::IdKind { expected: "ints: this index is keyed by ints (its first add gave ints, or no ids)", found: "strings" });
        }
        Ok(())
    }

    /// Checks that string ids `names` may be stored: one per item of `n`,
    /// the index not keyed by ints, distinct and none stored.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] naming the problem.
    pub(crate) fn check_new_names<S: AsRef<str>>(&self, names: &[S], n: usize) -> Result<()> {
        if names.len() != n {
            return Err(Error::InvalidParameter { name: "ids", expected: "one id per item", found: format!("{} ids for {n} items", names.len()) });
        }
        self.check_strings(n)?;
        match &self.names {
            Some(table) => table.check_new(names),
            None => Names::default().check_new(names),
        }
    }

    /// The internal id stored under string id `name`.
    pub fn id_of(&self, name: &str) -> Option<u64> {
        self.names.as_ref().and_then(|t| t.id(name))
    }

    /// The string ids of internal ids `ids` (of an index keyed by strings;
    /// every id stored).
    ///
    /// # Errors
    /// [`Error::BadInput`] for an id without a name (a bug: every stored
    /// item of an index keyed by strings has one).
    pub fn names_of(&self, ids: &[u64]) -> Result<Vec<Arc<str>>> {
        let table = self.names.as_ref();
        ids.iter()
            .map(|&id| {
                table.and_then(|t| t.name(id)).cloned().ok_or_else(|| Error::BadInput {
                    what: "the index".into(),
                    problem: format!("internal error: item {id} has no string id (please report it)"),
                })
            })
            .collect()
    }

    /// Stores `fps` under string ids `names` (one each, distinct, none
    /// stored; an index keyed by ints refuses them); returns their
    /// internal ids, counted up as default ids are.
    ///
    /// # Errors
    /// As [`Index::add`], and for names of the wrong kind, count,
    /// repeated or stored.
    pub fn add_named<S: AsRef<str>>(&mut self, fps: &[u64], names: &[S]) -> Result<Vec<u64>> {
        let end = self.next_id + fps.len() as u128;
        if end > u128::from(u64::MAX) + 1 {
            return Err(Error::invalid("ids", "fewer: the internal ids ran past 2**64-1", fps.len()));
        }
        let ids: Vec<u64> = (self.next_id as u64..).take(fps.len()).collect();
        self.add_with_names(fps, &ids, names)
    }

    /// [`Index::add_named`] under internal ids of the caller's (a
    /// `SimilarIndex` gives its own).
    pub(crate) fn add_with_names<S: AsRef<str>>(&mut self, fps: &[u64], ids: &[u64], names: &[S]) -> Result<Vec<u64>> {
        self.check_room(fps.len())?;
        self.check_new_names(names, fps.len())?;
        if fps.is_empty() {
            return Ok(Vec::new());
        }
        let ids = self.assign_ids(fps.len(), Some(ids))?;
        self.insert(fps.iter().copied().zip(ids.iter().copied()).collect());
        let table = self.names.get_or_insert_with(Names::default);
        for (&id, name) in ids.iter().zip(names) {
            table.insert(id, name.as_ref());
        }
        self.intact(ids)
    }

    /// [`Index::add_unique`] under string ids `names` (checked as
    /// [`Index::add_named`] checks them, every one): the new items are
    /// stored under their names. `matched` holds internal ids: of the
    /// match for an item that is not new, of the item itself for a new one.
    ///
    /// # Errors
    /// As [`Index::add_unique`] and [`Index::add_named`].
    pub fn add_unique_named<S: AsRef<str>>(&mut self, fps: &[u64], names: &[S], k: Option<u32>) -> Result<(Vec<bool>, Vec<u64>)> {
        self.check_new_names(names, fps.len())?;
        if fps.is_empty() {
            return Ok((Vec::new(), Vec::new()));
        }
        let first = self.next_id as u64;
        let (is_new, mut matched) = self.add_unique_ids(fps, None, k)?;
        let table = self.names.get_or_insert_with(Names::default);
        for (p, name) in names.iter().enumerate() {
            if is_new[p] {
                matched[p] = first + p as u64;
                table.insert(first + p as u64, name.as_ref());
            }
        }
        Ok((is_new, matched))
    }

    /// Removes the items stored under string ids `names` (names not
    /// stored are passed over); returns how many were stored.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] on an index keyed by ints.
    pub fn remove_named<S: AsRef<str>>(&mut self, names: &[S]) -> Result<usize> {
        self.check_strings(names.len())?;
        let ids: Vec<u64> = names.iter().filter_map(|n| self.id_of(n.as_ref())).collect();
        Ok(self.remove(&ids))
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
