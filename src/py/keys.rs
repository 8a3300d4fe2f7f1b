//! Ids of an `Index` or `SimilarIndex` in and out: ints (as `U64s`, read
//! in place from a `uint64` array as before) or strings.
//!
//! In: one pass over the argument, its first element deciding the kind;
//! a `uint64` array never looks at an element. Out: the index's internal
//! ids turned into its string ids (`Arc<str>` clones) while the caller
//! still holds the lock, without the GIL; Python strings are made from
//! them afterwards, with it. Int ids come out exactly as before.

use std::sync::Arc;

use numpy::{PyArray1, PyArrayDescrMethods, PyArrayMethods, PyUntypedArray, PyUntypedArrayMethods};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyString;

use super::convert::{is_ndarray, iterate, pairs_array, to_u64, type_name, U64s};
use crate::index::Keys;
use crate::Result;

/// Ids given by the user: ints or strings.
pub(crate) enum IdsArg<'py> {
    Ints(U64s<'py>),
    Names(Vec<String>),
}

const EXPECTED: &str = "a sequence of ints (or a uint64 array) or of strings";

impl<'py> IdsArg<'py> {
    /// `obj` as ids: an int or a str (one id), a numpy array (`uint64`, or
    /// of `str`/objects holding strings), or any sequence of ints or of
    /// strings, all of one kind.
    pub(crate) fn extract(obj: &Bound<'py, PyAny>, name: &str) -> PyResult<IdsArg<'py>> {
        if let Ok(s) = obj.cast::<PyString>() {
            return Ok(IdsArg::Names(vec![utf8(s, name, 0)?]));
        }
        if is_ndarray(obj) {
            let kind = obj.cast::<PyUntypedArray>()?.dtype().kind();
            if kind != b'O' && kind != b'U' {
                return Ok(IdsArg::Ints(U64s::extract(obj, name)?));
            }
        } else if obj.is_instance_of::<pyo3::types::PyInt>() || obj.hasattr("__index__").unwrap_or(false) && !obj.hasattr("__len__").unwrap_or(false) {
            return Ok(IdsArg::Ints(U64s::extract(obj, name)?));
        }
        if obj.is_instance_of::<pyo3::types::PyBytes>() {
            return Err(PyTypeError::new_err(format!("{name} must be {EXPECTED}, got a single bytes; decode it, or wrap ints in a list")));
        }
        let mut items = iterate(obj, name, EXPECTED)?.enumerate();
        let Some((_, first)) = items.next() else { return Ok(IdsArg::Ints(U64s::Owned(Vec::new()))) };
        let first = first?;
        let mixed = |i: usize, item: &Bound<'_, PyAny>, kind: &str| {
            PyTypeError::new_err(format!("{name} must be all ints or all strings, got {kind} first, then {} at position {i}", type_name(item)))
        };
        let n = obj.len().unwrap_or(0);
        if let Ok(s) = first.cast::<PyString>() {
            let mut out = Vec::with_capacity(n);
            out.push(utf8(s, name, 0)?);
            for (i, item) in items {
                let item = item?;
                let s = item.cast::<PyString>().map_err(|_| mixed(i, &item, "a string"))?;
                out.push(utf8(s, name, i)?);
            }
            return Ok(IdsArg::Names(out));
        }
        let mut out = Vec::with_capacity(n);
        out.push(to_u64(&first, || format!("{name}[0]"))?);
        for (i, item) in items {
            let item = item?;
            if item.is_instance_of::<PyString>() {
                return Err(mixed(i, &item, "an int"));
            }
            out.push(to_u64(&item, || format!("{name}[{i}]"))?);
        }
        Ok(IdsArg::Ints(U64s::Owned(out)))
    }
}

fn utf8(s: &Bound<'_, PyString>, name: &str, i: usize) -> PyResult<String> {
    s.to_cow()
        .map(std::borrow::Cow::into_owned)
        .map_err(|_| PyValueError::new_err(format!("{name}[{i}] is a str that cannot be encoded as UTF-8 (it holds a lone surrogate)")))
}

/// Ids on their way out: the index's ints, or the string ids of its
/// internal ids.
pub(crate) enum Keyed {
    Ints(Vec<u64>),
    Names(Vec<Arc<str>>),
}

impl Keyed {
    /// `ids` as the user knows them: `names_of` turns internal ids into
    /// string ids when the index is keyed by strings.
    pub(crate) fn of(keys: Keys, ids: Vec<u64>, names_of: impl FnOnce(&[u64]) -> Result<Vec<Arc<str>>>) -> Result<Keyed> {
        Ok(match keys {
            Keys::Strings => Keyed::Names(names_of(&ids)?),
            Keys::Ints | Keys::Undecided => Keyed::Ints(ids),
        })
    }

    /// A 1-D array: `uint64`, or of `str` objects.
    pub(crate) fn array(self, py: Python<'_>) -> Bound<'_, PyAny> {
        match self {
            Keyed::Ints(ids) => PyArray1::from_vec(py, ids).into_any(),
            Keyed::Names(names) => names_array(py, names.iter().map(|n| &**n)).into_any(),
        }
    }

    /// A `(P, 2)` array of pairs, flattened row by row in `self`.
    pub(crate) fn pairs(self, py: Python<'_>) -> PyResult<Bound<'_, PyAny>> {
        match self {
            Keyed::Ints(ids) => Ok(pairs_array(py, bytemuck::allocation::cast_vec::<u64, [u64; 2]>(ids))?.into_any()),
            Keyed::Names(names) => {
                let n = names.len() / 2;
                let flat = names_array(py, names.iter().map(|n| &**n));
                Ok(flat.reshape([n, 2])?.into_any())
            }
        }
    }
}

/// A numpy object array of Python strings.
pub(crate) fn names_array<'py, 'a>(py: Python<'py>, names: impl Iterator<Item = &'a str>) -> Bound<'py, PyArray1<Py<PyAny>>> {
    let objects: Vec<Py<PyAny>> = names.map(|n| PyString::new(py, n).into_any().unbind()).collect();
    PyArray1::from_vec(py, objects)
}
