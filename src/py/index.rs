//! The `Index` class: a frozen wrapper around `RwLock<Index>`. Queries share
//! the read lock, changes take the write lock, both with the GIL released
//! (locks are only ever taken inside [`detach::run`], so a thread waiting for
//! a lock never holds the GIL).

use std::sync::RwLock;

use numpy::{PyArray1, PyArray2};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyType};
use std::path::PathBuf;

use super::convert::{pairs_array, to_u64, U64s};
use super::detach;
use crate::batch::{Copies, COPIES_NOTICE};
use crate::index::{ClusterMethod, Index};
use crate::table::Layout;

type NewAndMatched<'py> = (Bound<'py, PyArray1<bool>>, Bound<'py, PyArray1<u64>>);

#[pyclass(frozen, name = "Index", module = "rsimhash._rsimhash")]
pub(crate) struct PyIndex {
    inner: RwLock<Index>,
}

fn read(index: &RwLock<Index>) -> std::sync::RwLockReadGuard<'_, Index> {
    // A panic while writing is a bug already reported as RuntimeError; the
    // index it left is still consistent enough to read, so go on.
    index.read().unwrap_or_else(|e| e.into_inner())
}

fn write(index: &RwLock<Index>) -> std::sync::RwLockWriteGuard<'_, Index> {
    index.write().unwrap_or_else(|e| e.into_inner())
}

/// An optional non-negative small integer argument.
fn small(name: &str, value: Option<i64>) -> PyResult<Option<u32>> {
    match value {
        None => Ok(None),
        Some(v) if (0..=i64::from(u32::MAX)).contains(&v) => Ok(Some(v as u32)),
        Some(v) => Err(PyValueError::new_err(format!("{name} must be a non-negative integer, got {v}"))),
    }
}

#[pymethods]
impl PyIndex {
    #[new]
    #[pyo3(signature = (k = 3, *, blocks = None, tables = None, compress = true, block_bytes = 1024))]
    fn new(k: i64, blocks: Option<i64>, tables: Option<i64>, compress: bool, block_bytes: i64) -> PyResult<Self> {
        let k = small("k", Some(k))?.unwrap_or(3);
        let blocks = small("blocks", blocks)?;
        let tables = small("tables", tables)?.map(|t| t as usize);
        let block_bytes = small("block_bytes", Some(block_bytes))?.unwrap_or(1024) as usize;
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
        matches!(read(&self.inner).layout(), Layout::Packed(_))
    }

    /// What the index holds and how: a dict of counts, sizes and versions.
    fn info<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let index = read(&self.inner);
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
        d.set_item("block_bytes", match index.layout() { Layout::Packed(b) => Some(b), Layout::Raw => None })?;
        d.set_item("runs", runs)?;
        d.set_item("buffered", buffered)?;
        d.set_item("nbytes", index.bytes())?;
        d.set_item("table_bytes", table_bytes)?;
        // Per item per table of the runs (the buffer has no tables).
        let stored = (items - buffered) as f64;
        let per = if stored == 0.0 { 0.0 } else { table_bytes as f64 / (tables as f64 * stored) };
        d.set_item("table_bytes_per_item_per_table", per)?;
        d.set_item("spec_version", crate::SPEC_VERSION)?;
        d.set_item("format_version", crate::container::FORMAT_VERSION)?;
        Ok(d)
    }

    /// The largest distance answered completely.
    #[getter]
    fn k(&self) -> u32 {
        read(&self.inner).k()
    }

    /// Permuted tables held per item (of the largest run).
    #[getter]
    fn tables(&self) -> usize {
        read(&self.inner).design().tables().len()
    }

    /// The table design, in words.
    #[getter]
    fn design(&self) -> String {
        read(&self.inner).design().to_string()
    }

    /// Bytes of memory held by the tables and ids.
    #[getter]
    fn nbytes(&self) -> usize {
        read(&self.inner).bytes()
    }

    fn __len__(&self) -> usize {
        read(&self.inner).len()
    }

    fn __repr__(&self) -> String {
        let index = read(&self.inner);
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
    fn add<'py>(
        &self,
        py: Python<'py>,
        fps: &Bound<'py, PyAny>,
        ids: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyArray1<u64>>> {
        let fps = U64s::extract(fps, "fps")?;
        let ids = ids.map(|i| U64s::extract(i, "ids")).transpose()?;
        let (fps, ids) = (fps.as_slice(), ids.as_ref().map(U64s::as_slice));
        let out = detach::run(py, None, || write(&self.inner).add(fps, ids))?;
        Ok(PyArray1::from_vec(py, out))
    }

    /// `(id, distance)` of every stored item within `k`, by distance then id.
    #[pyo3(signature = (fp, k = None))]
    fn query(&self, py: Python<'_>, fp: &Bound<'_, PyAny>, k: Option<i64>) -> PyResult<Vec<(u64, u32)>> {
        let fp = to_u64(fp, || "fp".into())?;
        let k = small("k", k)?;
        // The common case, an uncontended lock, answers in well under a
        // microsecond: cheaper to keep the GIL than to hand it over.
        if let Ok(index) = self.inner.try_read() {
            return Ok(index.query(fp, k)?);
        }
        detach::run(py, None, || read(&self.inner).query(fp, k))
    }

    /// Matches of many queries: `(qi, ids, dist)` arrays.
    #[pyo3(signature = (fps, k = None))]
    #[allow(clippy::type_complexity)]
    fn query_batch<'py>(
        &self,
        py: Python<'py>,
        fps: &Bound<'py, PyAny>,
        k: Option<i64>,
    ) -> PyResult<(Bound<'py, PyArray1<i64>>, Bound<'py, PyArray1<u64>>, Bound<'py, PyArray1<u8>>)> {
        let fps = U64s::extract(fps, "fps")?;
        let (fps, k) = (fps.as_slice(), small("k", k)?);
        let m = detach::run(py, None, || read(&self.inner).query_batch(fps, k))?;
        let qi: Vec<i64> = m.positions.iter().map(|&p| i64::from(p)).collect();
        Ok((PyArray1::from_vec(py, qi), PyArray1::from_vec(py, m.ids), PyArray1::from_vec(py, m.distances)))
    }

    /// Every pair of distinct stored ids within `k`: a `(P, 2)` uint64 array.
    #[pyo3(signature = (k = None, *, copies = None))]
    fn find_all<'py>(&self, py: Python<'py>, k: Option<i64>, copies: Option<&str>) -> PyResult<Bound<'py, PyArray2<u64>>> {
        let k = small("k", k)?;
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
        let pairs = detach::run(py, None, || read(&self.inner).find_all(k, copies))?;
        pairs_array(py, pairs)
    }

    /// Clusters of ids, each a sorted uint64 array.
    #[pyo3(signature = (k = None, min_size = 2, method = "connected"))]
    fn cluster<'py>(
        &self,
        py: Python<'py>,
        k: Option<i64>,
        min_size: i64,
        method: &str,
    ) -> PyResult<Vec<Bound<'py, PyArray1<u64>>>> {
        let k = small("k", k)?;
        let method: ClusterMethod = method.parse()?;
        if min_size < 1 {
            return Err(PyValueError::new_err(format!("min_size must be at least 1, got {min_size}")));
        }
        let min_size = min_size as usize;
        let groups = detach::run(py, None, || read(&self.inner).cluster(k, min_size, method))?;
        Ok(groups.into_iter().map(|g| PyArray1::from_vec(py, g)).collect())
    }

    /// Removes items by id; returns how many were stored.
    fn remove(&self, py: Python<'_>, ids: &Bound<'_, PyAny>) -> PyResult<usize> {
        let ids = U64s::extract(ids, "ids")?;
        let ids = ids.as_slice();
        detach::run(py, None, || Ok(write(&self.inner).remove(ids)))
    }

    /// Stores the fingerprints that have nothing within `k` yet: `(is_new, matched)`.
    #[pyo3(signature = (fps, ids = None, k = None))]
    fn add_unique<'py>(
        &self,
        py: Python<'py>,
        fps: &Bound<'py, PyAny>,
        ids: Option<&Bound<'py, PyAny>>,
        k: Option<i64>,
    ) -> PyResult<NewAndMatched<'py>> {
        let fps = U64s::extract(fps, "fps")?;
        let ids = ids.map(|i| U64s::extract(i, "ids")).transpose()?;
        let (fps, ids, k) = (fps.as_slice(), ids.as_ref().map(U64s::as_slice), small("k", k)?);
        let (is_new, matched) = detach::run(py, None, || write(&self.inner).add_unique(fps, ids, k))?;
        Ok((PyArray1::from_vec(py, is_new), PyArray1::from_vec(py, matched)))
    }
}
