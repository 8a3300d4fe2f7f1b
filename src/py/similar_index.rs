//! The `SimilarIndex` class: a frozen wrapper around `RwLock<SimilarIndex>`,
//! guarded as `Index` is (see `index.rs`): queries share the read lock,
//! changes take the write lock, both taken only with the GIL released, and
//! a change that unwound midway leaves the object refusing to answer.

use std::path::PathBuf;
use std::sync::RwLock;

use numpy::PyArray1;
use pyo3::prelude::*;
use pyo3::types::PyType;

use super::convert::{Int, U64s};
use super::detach;
use super::fingerprint::threads;
use super::similar::{settings, text_slices};
use crate::similar::SimilarIndex;

#[pyclass(frozen, name = "SimilarIndex", module = "rsimhash._rsimhash")]
pub(crate) struct PySimilarIndex {
    inner: RwLock<SimilarIndex>,
}

fn read(index: &RwLock<SimilarIndex>) -> std::sync::RwLockReadGuard<'_, SimilarIndex> {
    index.read().unwrap_or_else(|_| detach::incomplete())
}

fn write(index: &RwLock<SimilarIndex>) -> std::sync::RwLockWriteGuard<'_, SimilarIndex> {
    index.write().unwrap_or_else(|_| detach::incomplete())
}

fn peek(index: &RwLock<SimilarIndex>) -> std::sync::RwLockReadGuard<'_, SimilarIndex> {
    index.read().unwrap_or_else(|e| e.into_inner())
}

type Matches<'py> = (Bound<'py, PyArray1<i64>>, Bound<'py, PyArray1<u64>>, Bound<'py, PyArray1<f32>>);
type NewAndMatched<'py> = (Bound<'py, PyArray1<bool>>, Bound<'py, PyArray1<u64>>);

#[pymethods]
impl PySimilarIndex {
    #[new]
    #[pyo3(signature = (threshold, *, measure = "jaccard", shingles = "words", width = None, candidates = None))]
    fn new(threshold: f64, measure: &str, shingles: &str, width: Option<Int>, candidates: Option<(String, Option<Int>, Int)>) -> PyResult<Self> {
        Ok(PySimilarIndex { inner: RwLock::new(SimilarIndex::new(settings(threshold, measure, shingles, width, candidates)?)?) })
    }

    /// Stores texts (a sequence of str, or `(offsets, data)` of an Arrow
    /// column) under `ids`; returns their ids.
    #[pyo3(signature = (texts, ids = None, *, threads = None))]
    fn add<'py>(
        &self,
        py: Python<'py>,
        texts: &Bound<'py, PyAny>,
        ids: Option<&Bound<'py, PyAny>>,
        threads: Option<Int>,
    ) -> PyResult<Bound<'py, PyArray1<u64>>> {
        let threads = self::threads(threads)?;
        let ids = ids.map(|i| U64s::extract(i, "ids")).transpose()?;
        let ids = ids.as_ref().map(U64s::as_slice);
        let (mut held, mut arrow) = (None, None);
        let slices = text_slices(texts, &mut held, &mut arrow)?;
        let out = detach::run(py, threads, || write(&self.inner).add_utf8(&slices, ids))?;
        Ok(PyArray1::from_vec(py, out))
    }

    /// The stored texts alike each text: `(positions, ids, similarity)`.
    #[pyo3(signature = (texts, *, threads = None))]
    fn query<'py>(&self, py: Python<'py>, texts: &Bound<'py, PyAny>, threads: Option<Int>) -> PyResult<Matches<'py>> {
        let threads = self::threads(threads)?;
        let (mut held, mut arrow) = (None, None);
        let slices = text_slices(texts, &mut held, &mut arrow)?;
        let m = detach::run(py, threads, || read(&self.inner).query_utf8(&slices))?;
        let positions: Vec<i64> = m.positions.iter().map(|&p| i64::from(p)).collect();
        Ok((PyArray1::from_vec(py, positions), PyArray1::from_vec(py, m.ids), PyArray1::from_vec(py, m.similarity)))
    }

    /// Stores the texts that nothing stored (nor an earlier one) is alike: `(is_new, matched)`.
    #[pyo3(signature = (texts, ids = None, *, threads = None))]
    fn add_unique<'py>(
        &self,
        py: Python<'py>,
        texts: &Bound<'py, PyAny>,
        ids: Option<&Bound<'py, PyAny>>,
        threads: Option<Int>,
    ) -> PyResult<NewAndMatched<'py>> {
        let threads = self::threads(threads)?;
        let ids = ids.map(|i| U64s::extract(i, "ids")).transpose()?;
        let ids = ids.as_ref().map(U64s::as_slice);
        let (mut held, mut arrow) = (None, None);
        let slices = text_slices(texts, &mut held, &mut arrow)?;
        let (is_new, matched) = detach::run(py, threads, || write(&self.inner).add_unique_utf8(&slices, ids))?;
        Ok((PyArray1::from_vec(py, is_new), PyArray1::from_vec(py, matched)))
    }

    /// Removes texts by id; returns how many were stored.
    fn remove(&self, py: Python<'_>, ids: &Bound<'_, PyAny>) -> PyResult<usize> {
        let ids = U64s::extract(ids, "ids")?;
        let ids = ids.as_slice();
        detach::run(py, None, || write(&self.inner).remove(ids))
    }

    /// Writes the index to `path` atomically.
    fn save(&self, py: Python<'_>, path: PathBuf) -> PyResult<()> {
        detach::run(py, None, || read(&self.inner).save(&path))
    }

    /// Reads a file written by `save`.
    #[classmethod]
    #[pyo3(signature = (path, *, mmap = true))]
    fn load(_cls: &Bound<'_, PyType>, py: Python<'_>, path: PathBuf, mmap: bool) -> PyResult<Self> {
        let index = detach::run(py, None, || SimilarIndex::load(&path, mmap))?;
        Ok(PySimilarIndex { inner: RwLock::new(index) })
    }

    /// Whether a text is stored under `id`.
    fn contains(&self, id: u64) -> bool {
        peek(&self.inner).contains(id)
    }

    /// `(threshold, measure, shingles, width, (mode, width, k))`.
    #[getter]
    fn settings(&self) -> (f64, String, String, usize, (String, usize, u32)) {
        let o = *peek(&self.inner).opts();
        let c = o.candidates;
        (o.threshold, o.measure.to_string(), o.sets.mode().to_string(), o.sets.width(), (c.shingling.mode().to_string(), c.shingling.width(), c.k))
    }

    /// Bytes held by the shingle sets and the index of fingerprints.
    #[getter]
    fn nbytes(&self) -> usize {
        peek(&self.inner).bytes()
    }

    fn __len__(&self) -> usize {
        peek(&self.inner).len()
    }
}
