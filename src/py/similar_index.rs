//! The `SimilarIndex` class: a frozen wrapper around `RwLock<SimilarIndex>`,
//! guarded as `Index` is (see `index.rs`): queries share the read lock,
//! changes take the write lock, both taken only with the GIL released, and
//! a change that unwound midway leaves the object refusing to answer.
//! Ids are ints or strings, as `Index`'s are ([`super::keys`]).

use std::path::PathBuf;
use std::sync::RwLock;

use numpy::PyArray1;
use pyo3::prelude::*;
use pyo3::types::PyType;

use super::convert::{threads_int, width_arg, Int};
use super::detach;
use super::fingerprint::threads;
use super::keys::{names_array, IdsArg, Keyed};
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

type Matches<'py> = (Bound<'py, PyArray1<i64>>, Bound<'py, PyAny>, Bound<'py, PyArray1<f32>>);
type NewAndMatched<'py> = (Bound<'py, PyArray1<bool>>, Bound<'py, PyAny>);

/// `ids` as the user knows them (see [`Keyed`]).
fn keyed(index: &SimilarIndex, ids: Vec<u64>) -> crate::Result<Keyed> {
    Keyed::of(index.keys(), ids, |ids| index.names_of(ids))
}

/// Ints (`None` for the default ids) or strings.
fn split<'a>(ids: &'a Option<IdsArg<'_>>) -> (Option<&'a [u64]>, Option<&'a [String]>) {
    match ids {
        Some(IdsArg::Ints(ids)) => (Some(ids.as_slice()), None),
        Some(IdsArg::Names(names)) => (None, Some(names)),
        None => (None, None),
    }
}

#[pymethods]
impl PySimilarIndex {
    #[new]
    #[pyo3(signature = (threshold, *, measure = "jaccard", shingles = "words", width = None, candidates = None, exact = false))]
    fn new(
        threshold: f64,
        measure: &str,
        shingles: &str,
        #[pyo3(from_py_with = width_arg)] width: Option<Int>,
        candidates: Option<(String, Option<Int>, Int)>,
        exact: bool,
    ) -> PyResult<Self> {
        if exact && candidates.is_some() {
            return Err(pyo3::exceptions::PyValueError::new_err("an exact SimilarIndex takes no candidates (it finds every match by its prefix index)"));
        }
        let mut opts = settings(threshold, measure, shingles, width, candidates)?;
        if exact {
            opts = SimilarIndex::exact_opts(opts);
        }
        Ok(PySimilarIndex { inner: RwLock::new(SimilarIndex::new(opts)?) })
    }

    /// Whether queries find every match by the prefix index (`candidates="exact"`).
    #[getter]
    fn exact(&self) -> bool {
        peek(&self.inner).exact()
    }

    /// Stores texts (a sequence of str, or `(offsets, data)` of an Arrow
    /// column) under `ids`; returns their ids.
    #[pyo3(signature = (texts, ids = None, *, threads = None))]
    fn add<'py>(
        &self,
        py: Python<'py>,
        texts: &Bound<'py, PyAny>,
        ids: Option<&Bound<'py, PyAny>>,
        #[pyo3(from_py_with = threads_int)] threads: Option<Int>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let threads = self::threads(threads)?;
        let ids = ids.map(|i| IdsArg::extract(i, "ids")).transpose()?;
        let (ints, names) = split(&ids);
        let (mut held, mut arrow) = (None, None);
        let slices = text_slices(texts, &mut held, &mut arrow)?;
        if let Some(names) = names {
            detach::run(py, threads, || write(&self.inner).add_utf8_named(&slices, names))?;
            return Ok(names_array(py, names.iter().map(String::as_str)).into_any());
        }
        let out = detach::run(py, threads, || write(&self.inner).add_utf8(&slices, ints))?;
        Ok(PyArray1::from_vec(py, out).into_any())
    }

    /// The stored texts alike each text: `(positions, ids, similarity)`,
    /// at `threshold` (at least the index's; `None` for the index's).
    #[pyo3(signature = (texts, *, threshold = None, threads = None))]
    fn query<'py>(
        &self,
        py: Python<'py>,
        texts: &Bound<'py, PyAny>,
        threshold: Option<f64>,
        #[pyo3(from_py_with = threads_int)] threads: Option<Int>,
    ) -> PyResult<Matches<'py>> {
        let threads = self::threads(threads)?;
        let (mut held, mut arrow) = (None, None);
        let slices = text_slices(texts, &mut held, &mut arrow)?;
        let (m, ids) = detach::run(py, threads, || {
            let index = read(&self.inner);
            let mut m = index.query_utf8_at(&slices, threshold)?;
            let ids = keyed(&index, std::mem::take(&mut m.ids))?;
            Ok((m, ids))
        })?;
        let positions: Vec<i64> = m.positions.iter().map(|&p| i64::from(p)).collect();
        Ok((PyArray1::from_vec(py, positions), ids.array(py), PyArray1::from_vec(py, m.similarity)))
    }

    /// Stores the texts that nothing stored (nor an earlier one) is alike: `(is_new, matched)`.
    #[pyo3(signature = (texts, ids = None, *, threads = None))]
    fn add_unique<'py>(
        &self,
        py: Python<'py>,
        texts: &Bound<'py, PyAny>,
        ids: Option<&Bound<'py, PyAny>>,
        #[pyo3(from_py_with = threads_int)] threads: Option<Int>,
    ) -> PyResult<NewAndMatched<'py>> {
        let threads = self::threads(threads)?;
        let ids = ids.map(|i| IdsArg::extract(i, "ids")).transpose()?;
        let (ints, names) = split(&ids);
        let (mut held, mut arrow) = (None, None);
        let slices = text_slices(texts, &mut held, &mut arrow)?;
        let (is_new, matched) = detach::run(py, threads, || {
            let mut index = write(&self.inner);
            let (is_new, matched) = match names {
                Some(names) => index.add_unique_utf8_named(&slices, names)?,
                None => index.add_unique_utf8(&slices, ints)?,
            };
            Ok((is_new, keyed(&index, matched)?))
        })?;
        Ok((PyArray1::from_vec(py, is_new), matched.array(py)))
    }

    /// Removes texts by id; returns how many were stored.
    fn remove(&self, py: Python<'_>, ids: &Bound<'_, PyAny>) -> PyResult<usize> {
        let ids = Some(IdsArg::extract(ids, "ids")?);
        let (ints, names) = split(&ids);
        detach::run(py, None, || match names {
            Some(names) => write(&self.inner).remove_named(names),
            None => write(&self.inner).remove(ints.unwrap_or_default()),
        })
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

    /// Whether a text is stored under `id` (an int or a str).
    fn contains(&self, id: &Bound<'_, PyAny>) -> bool {
        if let Ok(name) = id.extract::<String>() {
            return peek(&self.inner).contains_name(&name);
        }
        match id.extract::<u64>() {
            Ok(id) => {
                let index = peek(&self.inner);
                index.keys() != crate::index::Keys::Strings && index.contains(id)
            }
            Err(_) => false,
        }
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

    /// `(design, k, tables, keys)` of the index of the candidates' fingerprints
    /// (keys: `"int"`, `"str"` or `None` until an add stores something).
    #[getter]
    fn design(&self) -> (String, u32, usize, Option<&'static str>) {
        let index = peek(&self.inner);
        let fps = index.fingerprints();
        let keys = match fps.keys() {
            crate::index::Keys::Undecided => None,
            crate::index::Keys::Ints => Some("int"),
            crate::index::Keys::Strings => Some("str"),
        };
        (fps.design().to_string(), fps.k(), fps.design().tables().len(), keys)
    }

    fn __len__(&self) -> usize {
        peek(&self.inner).len()
    }
}
