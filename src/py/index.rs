//! The `Index` class: a frozen wrapper around `RwLock<Index>`. Queries share
//! the read lock, changes take the write lock, both with the GIL released
//! (inside [`detach::run`]). Two exceptions keep the GIL: `query` tries the
//! read lock without waiting (and waits only detached), and `len`, `k` and
//! `info` take it attached (`peek`): during a long `add` they wait for it
//! holding the GIL, which stalls other Python threads but cannot deadlock
//! (a change never needs the GIL).
//!
//! Ids are ints or strings ([`super::keys`]): string ids go to the core's
//! name table, and what comes back is turned into them under the lock.

use std::sync::RwLock;

use numpy::PyArray1;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyType};
use std::path::PathBuf;

use super::convert::{named_int, named_int_opt, to_u64, Int, U64s};
use super::detach;
use super::keys::{names_array, IdsArg, Keyed};
use crate::batch::{Copies, COPIES_NOTICE};
use crate::index::{ClusterMethod, Index, Keys};
use crate::tables::table::Layout;

type NewAndMatched<'py> = (Bound<'py, PyArray1<bool>>, Bound<'py, PyAny>);

/// `ids` as the user knows them (see [`Keyed`]).
fn keyed(index: &Index, ids: Vec<u64>) -> crate::Result<Keyed> {
    Keyed::of(index.keys(), ids, |ids| index.names_of(ids))
}

/// `(id, distance)` matches as the user knows the ids.
enum Found {
    Ints(Vec<(u64, u32)>),
    Names(Vec<(std::sync::Arc<str>, u32)>),
}

fn found(index: &Index, fp: u64, k: Option<u32>) -> crate::Result<Found> {
    let matches = index.query(fp, k)?;
    if index.keys() != Keys::Strings {
        return Ok(Found::Ints(matches));
    }
    let ids: Vec<u64> = matches.iter().map(|m| m.0).collect();
    Ok(Found::Names(index.names_of(&ids)?.into_iter().zip(matches).map(|(n, (_, d))| (n, d)).collect()))
}

#[pyclass(frozen, name = "Index", module = "rsimhash._rsimhash")]
pub(crate) struct PyIndex {
    inner: RwLock<Index>,
}

// A write that unwound midway (a large buffer refused: MemoryError, or a
// bug: RuntimeError) may have left the index without some of its items: the
// lock is then poisoned, and the operations below refuse it (an unwind that
// `detach::run` turns into a ValueError) rather than answer from it. The
// figures of `len`, `info` and the like still read it (`peek`).
fn read(index: &RwLock<Index>) -> std::sync::RwLockReadGuard<'_, Index> {
    index.read().unwrap_or_else(|_| detach::incomplete())
}

fn write(index: &RwLock<Index>) -> std::sync::RwLockWriteGuard<'_, Index> {
    index.write().unwrap_or_else(|_| detach::incomplete())
}

fn peek(index: &RwLock<Index>) -> std::sync::RwLockReadGuard<'_, Index> {
    index.read().unwrap_or_else(|e| e.into_inner())
}

/// An optional int argument in `0..=hi` (any Python int: a huge one is a
/// `ValueError` naming the range, not an `OverflowError`).
fn small(name: &str, value: Option<Int>, hi: i64) -> PyResult<Option<u32>> {
    Ok(Int::range_opt(value.as_ref(), name, 0, hi)?.map(|v| v as u32))
}

/// An operation's `k`: any value up to `u32::MAX` goes to the core, which
/// says it must be at most the index's own; beyond, the range of any index.
fn op_k(value: Option<Int>) -> PyResult<Option<u32>> {
    match value {
        Some(Int::Fits(v)) if (0..=i64::from(u32::MAX)).contains(&v) => Ok(Some(v as u32)),
        other => small("k", other, K_MAX),
    }
}

// Arguments whose TypeError names them (see `named_int`).
fn k_arg(obj: &Bound<'_, PyAny>) -> PyResult<Int> {
    named_int(obj, "k")
}

fn opt_k_arg(obj: &Bound<'_, PyAny>) -> PyResult<Option<Int>> {
    named_int_opt(obj, "k")
}

fn blocks_arg(obj: &Bound<'_, PyAny>) -> PyResult<Option<Int>> {
    named_int_opt(obj, "blocks")
}

fn tables_arg(obj: &Bound<'_, PyAny>) -> PyResult<Option<Int>> {
    named_int_opt(obj, "tables")
}

fn block_bytes_arg(obj: &Bound<'_, PyAny>) -> PyResult<Int> {
    named_int(obj, "block_bytes")
}

fn min_size_arg(obj: &Bound<'_, PyAny>) -> PyResult<Int> {
    named_int(obj, "min_size")
}

/// The largest `k` and block count of a design; table counts are checked
/// further by the planner.
const K_MAX: i64 = crate::tables::plan::MAX_K as i64;
const BLOCKS_MAX: i64 = 64;
const TABLES_MAX: i64 = 1 << 20;

#[pymethods]
impl PyIndex {
    #[new]
    #[pyo3(signature = (k = Int::Fits(3), *, blocks = None, tables = None, compress = true, block_bytes = Int::Fits(1024)), text_signature = "(k=3, *, blocks=None, tables=None, compress=True, block_bytes=1024)")]
    fn new(
        #[pyo3(from_py_with = k_arg)] k: Int,
        #[pyo3(from_py_with = blocks_arg)] blocks: Option<Int>,
        #[pyo3(from_py_with = tables_arg)] tables: Option<Int>,
        compress: bool,
        #[pyo3(from_py_with = block_bytes_arg)] block_bytes: Int,
    ) -> PyResult<Self> {
        let k = small("k", Some(k), K_MAX)?.unwrap_or(3);
        let blocks = small("blocks", blocks, BLOCKS_MAX)?;
        let tables = small("tables", tables, TABLES_MAX)?.map(|t| t as usize);
        let block_bytes =
            block_bytes.range("block_bytes", crate::tables::codec::MIN_BLOCK_BYTES as i64, crate::tables::codec::MAX_BLOCK_BYTES as i64)? as usize;
        let mut index = Index::new(k, blocks, tables)?;
        index.set_layout(if compress { Layout::Packed(block_bytes) } else { Layout::Raw })?;
        Ok(PyIndex { inner: RwLock::new(index) })
    }

    /// Reads an index file written by `save`; with `mmap`, its tables are
    /// used in place from a read-only mapping of the file.
    #[classmethod]
    #[pyo3(signature = (path, *, mmap = true))]
    fn load(_cls: &Bound<'_, PyType>, py: Python<'_>, path: PathBuf, mmap: bool) -> PyResult<Self> {
        let index = detach::run(py, None, || Index::load(&path, mmap))?;
        Ok(PyIndex { inner: RwLock::new(index) })
    }

    /// Writes the index to `path` atomically.
    fn save(&self, py: Python<'_>, path: PathBuf) -> PyResult<()> {
        detach::run(py, None, || read(&self.inner).save(&path))
    }

    /// Whether tables are stored compressed.
    #[getter]
    fn compressed(&self) -> bool {
        matches!(peek(&self.inner).layout(), Layout::Packed(_))
    }

    /// What the index holds and how: a dict of counts, sizes and versions.
    fn info<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let index = peek(&self.inner);
        let (runs, buffered) = index.shape();
        let table_bytes = index.table_bytes();
        let tables = index.design().tables().len();
        let items = index.len();
        let d = PyDict::new(py);
        d.set_item("items", items)?;
        d.set_item("k", index.k())?;
        d.set_item("tables", tables)?;
        d.set_item("design", index.design().to_string())?;
        d.set_item("compressed", matches!(index.layout(), Layout::Packed(_)))?;
        d.set_item(
            "block_bytes",
            match index.layout() {
                Layout::Packed(b) => Some(b),
                Layout::Raw => None,
            },
        )?;
        d.set_item("runs", runs)?;
        d.set_item("buffered", buffered)?;
        d.set_item("nbytes", index.bytes())?;
        d.set_item("table_bytes", table_bytes)?;
        // Per item per table of the runs (the buffer has no tables).
        let stored = (items - buffered) as f64;
        let per = if stored == 0.0 { 0.0 } else { table_bytes as f64 / (tables as f64 * stored) };
        d.set_item("table_bytes_per_item_per_table", per)?;
        d.set_item("spec_version", crate::SPEC_VERSION)?;
        // The version its file has (2 keyed by strings, else 1).
        d.set_item("format_version", index.format_version())?;
        d.set_item(
            "keys",
            match index.keys() {
                Keys::Undecided => None,
                Keys::Ints => Some("int"),
                Keys::Strings => Some("str"),
            },
        )?;
        Ok(d)
    }

    /// The largest distance answered completely.
    #[getter]
    fn k(&self) -> u32 {
        peek(&self.inner).k()
    }

    /// Permuted tables held per item (of the largest run).
    #[getter]
    fn tables(&self) -> usize {
        peek(&self.inner).design().tables().len()
    }

    /// The table design, in words.
    #[getter]
    fn design(&self) -> String {
        peek(&self.inner).design().to_string()
    }

    /// Bytes of memory held by the tables and ids.
    #[getter]
    fn nbytes(&self) -> usize {
        peek(&self.inner).bytes()
    }

    fn __len__(&self) -> usize {
        peek(&self.inner).len()
    }

    fn __repr__(&self) -> String {
        let index = peek(&self.inner);
        let (runs, buffered) = index.shape();
        format!(
            "Index(k={}, items={}, design=\"{}\", compressed={}, runs={runs}, buffered={buffered})",
            index.k(),
            index.len(),
            index.design(),
            if matches!(index.layout(), Layout::Packed(_)) { "True" } else { "False" }
        )
    }

    /// Adds fingerprints; returns their ids.
    #[pyo3(signature = (fps, ids = None))]
    fn add<'py>(&self, py: Python<'py>, fps: &Bound<'py, PyAny>, ids: Option<&Bound<'py, PyAny>>) -> PyResult<Bound<'py, PyAny>> {
        let fps = U64s::extract(fps, "fps")?;
        let fps = fps.as_slice();
        match ids.map(|i| IdsArg::extract(i, "ids")).transpose()? {
            Some(IdsArg::Names(names)) => {
                detach::run(py, None, || write(&self.inner).add_named(fps, &names))?;
                Ok(names_array(py, names.iter().map(String::as_str)).into_any())
            }
            Some(IdsArg::Ints(ids)) => {
                let ids = ids.as_slice();
                Ok(PyArray1::from_vec(py, detach::run(py, None, || write(&self.inner).add(fps, Some(ids)))?).into_any())
            }
            None => Ok(PyArray1::from_vec(py, detach::run(py, None, || write(&self.inner).add(fps, None))?).into_any()),
        }
    }

    /// `(id, distance)` of every stored item within `k`, by distance then id.
    #[pyo3(signature = (fp, k = None))]
    fn query<'py>(&self, py: Python<'py>, fp: &Bound<'py, PyAny>, #[pyo3(from_py_with = opt_k_arg)] k: Option<Int>) -> PyResult<Bound<'py, PyAny>> {
        let fp = to_u64(fp, || "fp".into())?;
        let k = op_k(k)?;
        // The common case, an uncontended lock, answers in well under a
        // microsecond: cheaper to keep the GIL than to hand it over.
        let matches = match self.inner.try_read() {
            Ok(index) => found(&index, fp, k)?,
            Err(_) => detach::run(py, None, || found(&read(&self.inner), fp, k))?,
        };
        match matches {
            Found::Ints(m) => Ok(m.into_pyobject(py)?.into_any()),
            Found::Names(m) => Ok(m.iter().map(|(n, d)| (&**n, *d)).collect::<Vec<_>>().into_pyobject(py)?.into_any()),
        }
    }

    /// Matches of many queries: `(qi, ids, dist)` arrays.
    #[pyo3(signature = (fps, k = None))]
    #[allow(clippy::type_complexity)]
    fn query_batch<'py>(
        &self,
        py: Python<'py>,
        fps: &Bound<'py, PyAny>,
        #[pyo3(from_py_with = opt_k_arg)] k: Option<Int>,
    ) -> PyResult<(Bound<'py, PyArray1<i64>>, Bound<'py, PyAny>, Bound<'py, PyArray1<u8>>)> {
        let fps = U64s::extract(fps, "fps")?;
        let (fps, k) = (fps.as_slice(), op_k(k)?);
        let (m, ids) = detach::run(py, None, || {
            let index = read(&self.inner);
            let mut m = index.query_batch(fps, k)?;
            let ids = keyed(&index, std::mem::take(&mut m.ids))?;
            Ok((m, ids))
        })?;
        let qi: Vec<i64> = m.positions.iter().map(|&p| i64::from(p)).collect();
        Ok((PyArray1::from_vec(py, qi), ids.array(py), PyArray1::from_vec(py, m.distances)))
    }

    /// Every pair of distinct stored ids within `k`: a `(P, 2)` uint64 array.
    #[pyo3(signature = (k = None, *, copies = None))]
    fn find_all<'py>(&self, py: Python<'py>, #[pyo3(from_py_with = opt_k_arg)] k: Option<Int>, copies: Option<&str>) -> PyResult<Bound<'py, PyAny>> {
        let k = op_k(k)?;
        let chosen = copies.map(str::parse::<Copies>).transpose()?;
        if chosen.is_none() {
            let of_copies = detach::run(py, None, || Ok(read(&self.inner).copy_pairs()))?;
            if of_copies >= COPIES_NOTICE {
                let message = format!(
                    "ids sharing a fingerprint make {of_copies} pairs ({:.1} GB as an array); copies=\"first\" pairs \
                     each only with the smallest id of its fingerprint; pass copies=\"all\" to list them all without this warning",
                    of_copies as f64 * 16.0 / 1e9
                );
                super::batch::warn(py, &message)?;
            }
        }
        let copies = chosen.unwrap_or_default();
        let pairs = detach::run(py, None, || {
            let index = read(&self.inner);
            let pairs = index.find_all(k, copies)?;
            keyed(&index, bytemuck::allocation::cast_vec(pairs))
        })?;
        pairs.pairs(py)
    }

    /// Clusters of ids, each a sorted uint64 array.
    #[pyo3(signature = (k = None, min_size = Int::Fits(2), method = "connected"), text_signature = "($self, k=None, min_size=2, method='connected')")]
    fn cluster<'py>(
        &self,
        py: Python<'py>,
        #[pyo3(from_py_with = opt_k_arg)] k: Option<Int>,
        #[pyo3(from_py_with = min_size_arg)] min_size: Int,
        method: &str,
    ) -> PyResult<Vec<Bound<'py, PyAny>>> {
        let k = op_k(k)?;
        let method: ClusterMethod = method.parse()?;
        let min_size = min_size.range("min_size", 1, i64::MAX)? as usize;
        let groups = detach::run(py, None, || {
            let index = read(&self.inner);
            index.cluster(k, min_size, method)?.into_iter().map(|g| keyed(&index, g)).collect::<crate::Result<Vec<Keyed>>>()
        })?;
        Ok(groups.into_iter().map(|g| g.array(py)).collect())
    }

    /// Removes items by id; returns how many were stored.
    fn remove(&self, py: Python<'_>, ids: &Bound<'_, PyAny>) -> PyResult<usize> {
        let ids = IdsArg::extract(ids, "ids")?;
        let (ints, names) = match &ids {
            IdsArg::Ints(ids) => (ids.as_slice(), None),
            IdsArg::Names(names) => (&[][..], Some(names)),
        };
        detach::run(py, None, || {
            let mut index = write(&self.inner);
            let removed = match names {
                Some(names) => index.remove_named(names)?,
                None => {
                    index.check_ints(ints.len(), true)?;
                    index.remove(ints)
                }
            };
            index.intact(removed)
        })
    }

    /// Checks again every checksum of the file the index was loaded from
    /// (as far as its tables still read it); `ValueError` if it changed.
    fn verify(&self, py: Python<'_>) -> PyResult<()> {
        detach::run(py, None, || read(&self.inner).verify())
    }

    /// Stores the fingerprints that have nothing within `k` yet: `(is_new, matched)`.
    #[pyo3(signature = (fps, ids = None, k = None))]
    fn add_unique<'py>(
        &self,
        py: Python<'py>,
        fps: &Bound<'py, PyAny>,
        ids: Option<&Bound<'py, PyAny>>,
        #[pyo3(from_py_with = opt_k_arg)] k: Option<Int>,
    ) -> PyResult<NewAndMatched<'py>> {
        let fps = U64s::extract(fps, "fps")?;
        let ids = ids.map(|i| IdsArg::extract(i, "ids")).transpose()?;
        let (fps, k) = (fps.as_slice(), op_k(k)?);
        if let Some(IdsArg::Names(names)) = &ids {
            let (is_new, matched) = detach::run(py, None, || {
                let mut index = write(&self.inner);
                let (is_new, matched) = index.add_unique_named(fps, names, k)?;
                Ok((is_new, keyed(&index, matched)?))
            })?;
            return Ok((PyArray1::from_vec(py, is_new), matched.array(py)));
        }
        let ids = match &ids {
            Some(IdsArg::Ints(ids)) => Some(ids.as_slice()),
            _ => None,
        };
        let (is_new, matched) = detach::run(py, None, || write(&self.inner).add_unique(fps, ids, k))?;
        Ok((PyArray1::from_vec(py, is_new), PyArray1::from_vec(py, matched).into_any()))
    }
}
