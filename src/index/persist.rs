//! Index files: the sections an [`Index`] is saved as, and loading them back.
//! The container (header, checksums, atomic replace) is [`crate::container`];
//! the layout of every section is in `docs/FORMAT.md`.
//!
//! Sections, in file order:
//! - `INDEX`: the index's settings and counts, as `u64`s.
//! - `BUFFER`: unsorted `(fingerprint, id)` pairs not yet in a run.
//! - per run, `RUN` (counts), `IDS`, `STARTS` (id lists, empty when every
//!   fingerprint has one id) and `DEAD` (removed-id bits); then per table of
//!   the run `TABLE` (key count, block size, code lengths), `BLOCKS`,
//!   `FIRST` (first key of every block) and `RANKS`.
//! - for an index keyed by strings only, `NAMEIDS`, `NAMEOFFS` and `NAMES`:
//!   its name table ([`super::names`]). Such a file is format version 2, so
//!   that a reader of version 1 refuses it; every other file is version 1,
//!   byte for byte as before.
//! - for an index with metadata only, `METAOFFS` and `METATEXT`
//!   ([`super::meta`]): a reader that does not know them passes over them.
//!
//! Tables are always saved compressed: a raw table is packed on the way out.
//! Loaded tables stay packed, in place in the mapping when mapped, unless the
//! index keeps raw tables (`compress=False`): then they are decoded.

use std::path::Path;
use std::sync::Arc;

use rayon::prelude::*;

use super::{meta, Index, Metadata, Names};
use crate::container::{write_atomic_then, Container, Tag, FIRST_FORMAT_VERSION, FORMAT_VERSION};
use crate::tables::codec::SYMBOLS;
use crate::tables::packed::PackedTable;
use crate::tables::plan::{self, Design};
use crate::tables::run::Run;
use crate::tables::table::{Layout, Table};
use crate::{Result, SPEC_VERSION};

const INDEX: Tag = *b"INDEX\0\0\0";
const BUFFER: Tag = *b"BUFFER\0\0";
const RUN: Tag = *b"RUN\0\0\0\0\0";
const IDS: Tag = *b"IDS\0\0\0\0\0";
const STARTS: Tag = *b"STARTS\0\0";
const DEAD: Tag = *b"DEAD\0\0\0\0";
const TABLE: Tag = *b"TABLE\0\0\0";
const BLOCKS: Tag = *b"BLOCKS\0\0";
const FIRST: Tag = *b"FIRST\0\0\0";
const RANKS: Tag = *b"RANKS\0\0\0";
const NAME_IDS: Tag = *b"NAMEIDS\0";
const NAME_OFFS: Tag = *b"NAMEOFFS";
const NAMES: Tag = *b"NAMES\0\0\0";
const META_OFFS: Tag = *b"METAOFFS";
const META_TEXT: Tag = *b"METATEXT";

/// Block size of tables packed for saving from a raw index.
const SAVE_BLOCK_BYTES: usize = 1024;

fn words(x: &[u64]) -> &[u8] {
    bytemuck::cast_slice(x)
}

impl Index {
    /// Writes the index to `path` atomically: a crash at any moment leaves
    /// the old file or the new one, whole.
    ///
    /// # Errors
    /// [`Error::Io`] when the file cannot be written.
    pub fn save(&self, path: &Path) -> Result<()> {
        self.save_with(path, &[])
    }

    /// [`Index::save`], with `extra` sections of the caller's after the
    /// index's own (a [`crate::similar::SimilarIndex`] adds its shingle
    /// sets): one file, one atomic replace, every section checksummed.
    /// [`Index::load`] passes over sections it does not know.
    ///
    /// # Errors
    /// As [`Index::save`].
    pub(crate) fn save_with(&self, path: &Path, extra: &[(Tag, &[u8])]) -> Result<()> {
        let spec = self.design.tables();
        // Raw tables are packed for the file; packed ones are written as they are.
        let packed: Vec<Vec<Option<PackedTable>>> = self
            .runs
            .iter()
            .map(|run| {
                run.parts()
                    .0
                    .par_iter()
                    .map(|t| match t {
                        Table::Raw(raw) => Some(PackedTable::encode(&raw.keys, SAVE_BLOCK_BYTES)),
                        Table::Packed(_) => None,
                    })
                    .collect()
            })
            .collect();
        let layout_bytes = match self.layout {
            Layout::Raw => 0,
            Layout::Packed(b) => b as u64,
        };
        let mut meta: Vec<u64> = vec![
            u64::from(self.k),
            u64::from(self.fixed),
            self.planned_for as u64,
            layout_bytes,
            self.next_id as u64,
            (self.next_id >> 64) as u64,
            self.live as u64,
            self.runs.len() as u64,
            spec.len() as u64,
            self.design.levels().len() as u64,
        ];
        meta.extend(self.design.levels().iter().map(|&m| u64::from(m)));
        let buffer: Vec<u64> = self.buffer.iter().flat_map(|&(fp, id)| [fp, id]).collect();

        // Every table as written: the packed ones held, or their packed copies.
        let saved: Vec<Vec<&PackedTable>> = self
            .runs
            .iter()
            .zip(&packed)
            .map(|(run, copies)| {
                run.parts()
                    .0
                    .iter()
                    .zip(copies)
                    .map(|(table, copy)| match table {
                        Table::Packed(p) => &**p,
                        Table::Raw(_) => copy.as_ref().expect("packed above"),
                    })
                    .collect()
            })
            .collect();
        let run_meta: Vec<[u64; 2]> = self
            .runs
            .iter()
            .map(|run| {
                let (_, starts, ids, _) = run.parts();
                [ids.len() as u64, u64::from(!starts.is_empty())]
            })
            .collect();
        let table_meta: Vec<Vec<Vec<u64>>> = saved
            .iter()
            .map(|tables| {
                tables
                    .iter()
                    .map(|p| {
                        let parts = p.parts();
                        let mut m = vec![p.len() as u64, parts.block_bytes as u64];
                        m.extend(parts.lengths.chunks(8).map(|c| u64::from_le_bytes(c.try_into().expect("8 lengths"))));
                        m
                    })
                    .collect()
            })
            .collect();
        let mut sections: Vec<(Tag, &[u8])> = vec![(INDEX, words(&meta)), (BUFFER, words(&buffer))];
        for (r, run) in self.runs.iter().enumerate() {
            let (_, starts, ids, dead) = run.parts();
            sections.push((RUN, words(&run_meta[r])));
            sections.push((IDS, words(ids)));
            sections.push((STARTS, bytemuck::cast_slice(starts)));
            sections.push((DEAD, words(dead)));
            for (p, m) in saved[r].iter().zip(&table_meta[r]) {
                let parts = p.parts();
                sections.push((TABLE, words(m)));
                sections.push((BLOCKS, parts.data));
                sections.push((FIRST, words(parts.first)));
                sections.push((RANKS, bytemuck::cast_slice(parts.ranks)));
            }
        }
        let names = self.names.as_ref().map(Names::encode);
        if let Some((ids, offsets, text)) = &names {
            sections.extend([(NAME_IDS, words(ids)), (NAME_OFFS, words(offsets)), (NAMES, &text[..])]);
        }
        // Only an index with metadata writes these: every other file keeps its bytes.
        let metadata = (!self.metadata.is_empty()).then(|| meta::encode(&self.metadata));
        if let Some((offsets, text)) = &metadata {
            sections.extend([(META_OFFS, words(offsets)), (META_TEXT, &text[..])]);
        }
        sections.extend_from_slice(extra);
        // Tables copied from a mapped file are written as they are: the file
        // must not have changed before, nor while they were copied.
        self.intact(())?;
        let unchanged = || match &self.origin {
            Some(origin) if origin.mapped_in_use() => origin.verify(),
            _ => Ok(()),
        };
        write_atomic_then(path, SPEC_VERSION, self.format_version(), &sections, &unchanged)
    }

    /// The format version of the file [`Index::save`] writes: 2 for an
    /// index keyed by strings (its name table), else 1.
    pub fn format_version(&self) -> u32 {
        if self.names.is_some() {
            FORMAT_VERSION
        } else {
            FIRST_FORMAT_VERSION
        }
    }

    /// `value`, unless the file the index was loaded from was found changed
    /// while in use (rewritten or cut short in place under its mapping):
    /// every operation's answer goes through this, so an answer read from
    /// changed bytes is never returned. One atomic load while no file was.
    ///
    /// # Errors
    /// [`Error::Changed`] naming the file.
    #[inline]
    pub fn intact<T>(&self, value: T) -> Result<T> {
        match &self.origin {
            Some(origin) => origin.intact().map(|()| value),
            None => Ok(value),
        }
    }

    /// Checks again every checksum of the file the index was loaded from,
    /// as far as the index still reads it (while any of its tables is in
    /// use); an index built in memory has nothing to check.
    ///
    /// # Errors
    /// [`Error::Changed`] naming what changed; the index then refuses to
    /// answer.
    pub fn verify(&self) -> Result<()> {
        match &self.origin {
            Some(origin) => origin.verify(),
            None => Ok(()),
        }
    }

    /// Reads an index saved by [`Index::save`]. With `mmap`, tables are used
    /// in place from a read-only mapping of the file; without, the file is
    /// read into memory. Either way every checksum and every table block is
    /// checked first.
    ///
    /// # Errors
    /// [`Error::Io`] when the file cannot be read, [`Error::BadFile`] naming
    /// the problem when it is not a complete index file of this version.
    pub fn load(path: &Path, mmap: bool) -> Result<Index> {
        Ok(Index::load_with(path, mmap)?.0)
    }

    /// [`Index::load`], and the checked file, for the sections a caller of
    /// [`Index::save_with`] added.
    ///
    /// # Errors
    /// As [`Index::load`].
    pub(crate) fn load_with(path: &Path, mmap: bool) -> Result<(Index, Container)> {
        let file = Container::open(path, mmap, SPEC_VERSION)?;
        let bad = |problem: String| crate::container::Problem::from(problem).at(path);
        let meta = file.section(INDEX)?;
        let meta = meta.as_u64s()?;
        let field = |i: usize, name: &str| meta.get(i).copied().ok_or_else(|| bad(format!("its INDEX section ends before the {name}")));
        let k = field(0, "k")?;
        let fixed = field(1, "fixed flag")?;
        let planned_for = field(2, "planned size")?;
        let layout = match field(3, "block size")? {
            0 => Layout::Raw,
            b => Layout::Packed(b as usize),
        };
        let next_id = u128::from(field(4, "next id")?) | u128::from(field(5, "next id")?) << 64;
        let live = field(6, "item count")?;
        let run_count = field(7, "run count")? as usize;
        let table_count = field(8, "table count")? as usize;
        let level_count = field(9, "level count")? as usize;
        if level_count > 64 {
            return Err(bad(format!("a design of {level_count} levels")));
        }
        let levels: Vec<u32> = (0..level_count).map(|i| field(10 + i, "levels").map(|m| u32::try_from(m).unwrap_or(u32::MAX))).collect::<Result<_>>()?;
        if meta.len() != 10 + level_count {
            return Err(bad(format!("an INDEX section of {} fields for {level_count} levels", meta.len())));
        }
        if k > u64::from(plan::MAX_K) || fixed > 1 {
            return Err(bad(format!("k = {k}, fixed = {fixed}")));
        }
        let design = Arc::new(Design::new(k as u32, &levels).map_err(|e| bad(format!("its table design: {e}")))?);
        if design.tables().len() != table_count {
            return Err(bad(format!("{table_count} tables a run, where its design has {}", design.tables().len())));
        }
        let mut index = Index::new(k as u32, None, None).map_err(|e| bad(e.to_string()))?;
        index.design = Arc::clone(&design);
        index.fixed = fixed == 1;
        index.planned_for = planned_for as usize;
        index.set_layout(layout).map_err(|e| bad(format!("its layout: {e}")))?;
        index.next_id = next_id;

        let buffer = file.section(BUFFER)?;
        let buffer = buffer.as_u64s()?;
        if buffer.len() % 2 != 0 {
            return Err(bad("an odd number of words in its BUFFER section".into()));
        }
        index.buffer = buffer.chunks(2).map(|p| (p[0], p[1])).collect();

        let (runs, ids, starts, dead) = (file.sections(RUN), file.sections(IDS), file.sections(STARTS), file.sections(DEAD));
        let (tables, blocks, first, ranks) = (file.sections(TABLE), file.sections(BLOCKS), file.sections(FIRST), file.sections(RANKS));
        if [runs.len(), ids.len(), starts.len(), dead.len()].iter().any(|&n| n != run_count)
            || [tables.len(), blocks.len(), first.len(), ranks.len()].iter().any(|&n| n != run_count * table_count)
        {
            return Err(bad(format!("sections that do not make {run_count} runs of {table_count} tables")));
        }
        // Tables are checked block by block: in parallel, all runs at once.
        // Each also sums a digest of its keys unpermuted, to check below that
        // the tables of a run hold one set of fingerprints.
        let loaded: Vec<std::result::Result<(Table, u64), String>> = (0..run_count * table_count)
            .into_par_iter()
            .map(|i| {
                let t = i % table_count;
                let m = tables[i].as_u64s().map_err(|e| e.to_string())?;
                if m.len() != 2 + SYMBOLS / 8 {
                    return Err(format!("a TABLE section of {} words", m.len()));
                }
                let mut lengths = [0u8; SYMBOLS];
                for (c, w) in lengths.chunks_mut(8).zip(&m[2..]) {
                    c.copy_from_slice(&w.to_le_bytes());
                }
                let digest = |key| fingerprint_digest(design.unpermute(t, key));
                let (table, sum) = PackedTable::from_parts(m[1] as usize, lengths, blocks[i].clone(), first[i].clone(), ranks[i].clone(), digest)?;
                if table.len() as u64 != m[0] {
                    return Err(format!("{} keys where its header says {}", table.len(), m[0]));
                }
                Ok((Table::Packed(Box::new(table)), sum))
            })
            .collect();
        let mut loaded = loaded.into_iter();
        let mut total = index.buffer.len();
        let mut max_id = index.buffer.iter().map(|&(_, id)| id).max();
        for r in 0..run_count {
            let (run_tables, sums): (Vec<Table>, Vec<u64>) = (0..table_count)
                .map(|t| loaded.next().expect("counted above").map_err(|e| bad(format!("run {r}, table {t}: {e}"))))
                .collect::<Result<Vec<(Table, u64)>>>()?
                .into_iter()
                .unzip();
            // A table with other fingerprints than table 0 (sections swapped
            // or edited with their checksums made good) would answer queries
            // wrongly without a sound: refuse it here.
            if let Some(t) = sums.iter().position(|&s| s != sums[0]) {
                return Err(bad(format!(
                    "run {r}: table {t} does not hold the fingerprints of table 0 (the file is damaged or was altered after it was written)"
                )));
            }
            let m = runs[r].as_u64s()?;
            let ids = ids[r].as_u64s()?.to_vec();
            let starts = starts[r].as_u32s()?.to_vec();
            let dead = dead[r].as_u64s()?.to_vec();
            if m.len() != 2 || m[0] != ids.len() as u64 || m[1] != u64::from(!starts.is_empty()) {
                return Err(bad(format!("run {r}: its RUN section does not match its ids")));
            }
            max_id = max_id.max(ids.iter().copied().max());
            let run = Run::from_parts(Arc::clone(&design), run_tables, starts, ids, dead).map_err(|e| bad(format!("run {r}: {e}")))?;
            total += run.live();
            index.runs.push(run);
        }
        if total as u64 != live {
            return Err(bad(format!("{total} items where its header says {live}")));
        }
        if max_id.is_some_and(|m| u128::from(m) >= next_id) {
            return Err(bad("ids at or above the next id to give".into()));
        }
        // Ids are distinct across the whole index (each run checked its own
        // lists): a repeated id would answer twice and remove once.
        // Only live ids: a removed id may have been added again.
        let all = index.runs.iter().flat_map(|r| r.live_ids()).chain(index.buffer.iter().map(|&(_, id)| id));
        if let Some(id) = repeated_id(all, total, next_id) {
            return Err(bad(format!("id {id} is stored twice")));
        }
        index.live = total;
        index.names = load_names(&file, &index).map_err(bad)?;
        index.metadata = load_metadata(&file).map_err(bad)?;
        // Tables come packed from the file; an index that keeps raw tables
        // gets them back raw.
        index.set_layout(layout).map_err(|e| bad(format!("its layout: {e}")))?;
        index.origin = Some(file.origin());
        // Cut short or rewritten while it was read and checked.
        index.intact(())?;
        Ok((index, file))
    }
}

/// The name table of a file with one (an index keyed by strings), checked
/// to name exactly the live ids of `index`.
fn load_names(file: &Container, index: &Index) -> std::result::Result<Option<Names>, String> {
    let count = file.tags().filter(|t| [NAME_IDS, NAME_OFFS, NAMES].contains(t)).count();
    if count == 0 {
        return Ok(None);
    }
    if count != 3 {
        return Err("an incomplete name table (NAMEIDS, NAMEOFFS and NAMES go together, once)".into());
    }
    let section = |tag| file.section(tag).map_err(|e| e.to_string());
    let (ids, offsets, text) = (section(NAME_IDS)?, section(NAME_OFFS)?, section(NAMES)?);
    let ids = ids.as_u64s().map_err(|e| e.to_string())?;
    let offsets = offsets.as_u64s().map_err(|e| e.to_string())?;
    let names = Names::decode(ids, offsets, text.as_slice())?;
    // As many names as items, distinct ids, and every live id named: the
    // same set.
    if names.len() != index.live {
        return Err(format!("{} string ids for {} items", names.len(), index.live));
    }
    let live = index.runs.iter().flat_map(|r| r.live_ids()).chain(index.buffer.iter().map(|&(_, id)| id));
    if let Some(id) = live.into_iter().find(|&id| names.name(id).is_none()) {
        return Err(format!("item {id} has no string id"));
    }
    Ok(Some(names))
}

/// The metadata of a file with some (`METAOFFS` and `METATEXT`, once each).
fn load_metadata(file: &Container) -> std::result::Result<Metadata, String> {
    let count = file.tags().filter(|t| [META_OFFS, META_TEXT].contains(t)).count();
    if count == 0 {
        return Ok(Metadata::new());
    }
    if count != 2 {
        return Err("incomplete metadata (METAOFFS and METATEXT go together, once)".into());
    }
    let (offsets, text) = (file.section(META_OFFS).map_err(|e| e.to_string())?, file.section(META_TEXT).map_err(|e| e.to_string())?);
    meta::decode(offsets.as_u64s().map_err(|e| e.to_string())?, text.as_slice())
}

/// A fingerprint's share of its table's digest: the splitmix64 finalizer, so
/// that tables holding different fingerprints sum alike only by a 2^-64
/// chance (a plain sum would let two changed keys cancel out).
fn fingerprint_digest(fp: u64) -> u64 {
    let mut z = fp;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// An id that `ids` (`n` of them, all below `next_id`: checked before)
/// hold twice, if any.
/// Ids given by default count up from 0, so `next_id` is usually close to
/// `n`: one bit per possible id then finds a repeat in one pass; sparse ids
/// are sorted instead.
fn repeated_id(ids: impl Iterator<Item = u64>, n: usize, next_id: u128) -> Option<u64> {
    if next_id <= 64 * n as u128 + 4096 {
        let mut seen = vec![0u64; (next_id as usize).div_ceil(64)];
        for id in ids {
            let (word, bit) = ((id / 64) as usize, id % 64);
            if seen[word] >> bit & 1 == 1 {
                return Some(id);
            }
            seen[word] |= 1 << bit;
        }
        return None;
    }
    let mut all: Vec<u64> = ids.collect();
    all.par_sort_unstable();
    all.par_windows(2).find_any(|w| w[0] == w[1]).map(|w| w[0])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ClusterMethod;
    use proptest::prelude::*;

    /// Up to 1,200 planted neighbours: hundreds of packed blocks, several
    /// runs; the answers compared (every pair, copies included, at k up to
    /// 4) grow with the square of a center's neighbours, which the files
    /// do not need.
    fn data() -> impl Strategy<Value = Vec<u64>> {
        crate::testing::planted(30, 1200)
    }

    #[test]
    fn repeated_ids_are_found_dense_or_sparse() {
        let dense: Vec<u64> = (0..1000).rev().collect();
        assert_eq!(repeated_id(dense.iter().copied(), dense.len(), 1000), None);
        let twice = dense.iter().copied().chain([417]);
        assert_eq!(repeated_id(twice, 1001, 1000), Some(417));
        // Sparse ids, up to 2^64 - 2: sorted instead of a bitmap.
        let sparse = [u64::MAX - 1, 3, 1 << 40, 7];
        assert_eq!(repeated_id(sparse.iter().copied(), 4, u128::from(u64::MAX)), None);
        let twice = sparse.iter().copied().chain([1 << 40]);
        assert_eq!(repeated_id(twice, 5, u128::from(u64::MAX)), Some(1 << 40));
    }

    fn same_answers(a: &Index, b: &Index, probes: &[u64]) {
        assert_eq!(a.len(), b.len());
        assert_eq!(a.find_all(None, crate::Copies::All).unwrap(), b.find_all(None, crate::Copies::All).unwrap());
        assert_eq!(a.cluster(None, 1, ClusterMethod::Connected).unwrap(), b.cluster(None, 1, ClusterMethod::Connected).unwrap());
        assert_eq!(a.query_batch(probes, None).unwrap(), b.query_batch(probes, None).unwrap());
        for &q in probes.iter().take(50) {
            assert_eq!(a.query(q, None).unwrap(), b.query(q, None).unwrap());
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(24))]

        #[test]
        fn save_load_round_trip(fps in data(), k in 0u32..=4, layout in prop_oneof![Just(Layout::Raw), Just(Layout::Packed(16)), Just(Layout::Packed(1024))],
                                chunk in 1usize..2000, drop in prop::collection::vec(any::<prop::sample::Index>(), 0..30), mmap in any::<bool>()) {
            let mut index = Index::new(k, None, None).unwrap();
            index.set_layout(layout).unwrap();
            for part in fps.chunks(chunk) {
                index.add(part, None).unwrap();
            }
            let gone: Vec<u64> = drop.iter().map(|d| d.index(fps.len()) as u64).collect();
            index.remove(&gone);
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("index.rsh");
            index.save(&path).unwrap();
            let mut loaded = Index::load(&path, mmap).unwrap();
            same_answers(&index, &loaded, &fps);
            prop_assert_eq!(loaded.layout(), layout);
            // Both take more adds alike, and save again over the mapped file.
            let more: Vec<u64> = fps.iter().map(|f| f.rotate_left(3)).take(1500).collect();
            index.add(&more, None).unwrap();
            loaded.add(&more, None).unwrap();
            same_answers(&index, &loaded, &more);
            loaded.save(&path).unwrap();
            let again = Index::load(&path, !mmap).unwrap();
            same_answers(&index, &again, &fps);
        }
    }

    #[test]
    fn a_removed_id_added_again_round_trips() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("again.rsh");
        let mut index = Index::new(3, None, None).unwrap();
        let fps: Vec<u64> = (0..5000u64).map(|i| i.wrapping_mul(0x9e37_79b9_7f4a_7c15)).collect();
        index.add(&fps, None).unwrap();
        index.remove(&[5]);
        index.add(&[42], Some(&[5])).unwrap();
        index.save(&path).unwrap();
        let loaded = Index::load(&path, true).unwrap();
        assert_eq!(loaded.query(42, Some(0)).unwrap(), vec![(5, 0)]);
        assert_eq!(loaded.len(), 5000);
    }

    /// What a file changed under a mapped index does: every operation
    /// answers or refuses with `Error::Changed`, never panics, and `verify`
    /// finds the change (cut short, zeroed or overwritten anywhere).
    #[cfg(any(target_os = "linux", target_os = "macos"))]
    #[test]
    fn a_file_changed_in_place_is_refused_never_a_panic() {
        let fps: Vec<u64> = (0..30_000u64).map(|i| i.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ (i % 7)).collect();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("changed.rsh");
        let mut index = Index::new(3, None, None).unwrap();
        for part in fps.chunks(11_000) {
            index.add(part, None).unwrap();
        }
        index.save(&path).unwrap();
        let bytes = std::fs::read(&path).unwrap();
        let n = bytes.len();
        let mut x = 7u64;
        let mut next = |m: usize| {
            x = fingerprint_digest(x.wrapping_add(0x9e37_79b9_7f4a_7c15));
            (x % m as u64) as usize
        };
        for round in 0..24 {
            std::fs::write(&path, &bytes).unwrap();
            let mut loaded = Index::load(&path, true).unwrap();
            let changed = match round % 3 {
                0 => bytes[..next(n)].to_vec(),
                1 => {
                    let mut b = bytes.clone();
                    let at = next(n);
                    let len = 1 + next(n - at);
                    b[at..at + len].fill(0);
                    b
                }
                _ => {
                    let mut b = bytes.clone();
                    for _ in 0..16 {
                        let at = next(n);
                        b[at] ^= 0x5a;
                    }
                    b
                }
            };
            // In place: the same inode, rewritten and resized.
            use std::io::{Seek, Write};
            let mut f = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
            f.set_len(changed.len() as u64).unwrap();
            f.seek(std::io::SeekFrom::Start(0)).unwrap();
            f.write_all(&changed).unwrap();
            drop(f);
            let refused = |r: Result<()>| match r {
                Ok(()) => false,
                Err(crate::Error::Changed { .. }) => true,
                Err(e) => panic!("round {round}: {e}"),
            };
            let mut any = false;
            any |= refused(loaded.query(fps[3], None).map(drop));
            any |= refused(loaded.query_batch(&fps[..500], None).map(drop));
            any |= refused(loaded.find_all(None, crate::Copies::All).map(drop));
            any |= refused(loaded.cluster(None, 2, ClusterMethod::Connected).map(drop));
            any |= refused(loaded.add_unique(&fps[..100], None, None).map(drop));
            any |= refused(loaded.save(&dir.path().join("copy.rsh")));
            any |= refused(loaded.verify());
            assert!(any || changed == bytes, "round {round}: verify missed a change");
        }
    }

    #[test]
    fn empty_index_round_trips() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("empty.rsh");
        let index = Index::new(3, Some(6), None).unwrap();
        index.save(&path).unwrap();
        let loaded = Index::load(&path, true).unwrap();
        assert!(loaded.is_empty());
        assert_eq!(loaded.design().levels(), index.design().levels());
        assert!(loaded.fixed);
    }

    #[test]
    fn metadata_round_trips_and_changes_no_other_byte() {
        let dir = tempfile::tempdir().unwrap();
        let (plain, with) = (dir.path().join("plain.rsh"), dir.path().join("meta.rsh"));
        let mut index = Index::new(3, None, None).unwrap();
        index.add_named(&[1, 2, 0xFF00], &["a", "b", "c"]).unwrap();
        index.save(&plain).unwrap();
        assert!(Index::load(&plain, true).unwrap().metadata().is_empty());
        let meta: Metadata = [("mode".to_string(), "words".to_string()), ("width".to_string(), "3".to_string())].into();
        index.set_metadata(meta.clone());
        index.save(&with).unwrap();
        let loaded = Index::load(&with, false).unwrap();
        assert_eq!(loaded.metadata(), &meta);
        assert_eq!(loaded.format_version(), 2);
        let (a, b) = (std::fs::read(&plain).unwrap(), std::fs::read(&with).unwrap());
        assert!(b.len() > a.len());
        // A file with one of the two sections only is refused.
        let mut cut = Index::load(&with, false).unwrap();
        cut.set_metadata(Metadata::new());
        let path = dir.path().join("half.rsh");
        let (offsets, _) = meta::encode(&meta);
        cut.save_with(&path, &[(META_OFFS, words(&offsets))]).unwrap();
        let e = Index::load(&path, false).unwrap_err().to_string();
        assert!(e.contains("incomplete metadata"), "{e}");
    }
}
