//! Argument conversion with messages that name the argument and the fix.

use numpy::{PyArray1, PyArray2, PyArrayDescrMethods, PyArrayMethods, PyUntypedArray, PyUntypedArrayMethods};
use pyo3::exceptions::{PyRuntimeError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyByteArray, PyBytes, PyInt, PyList, PyString, PyTuple};

/// A Python int in `0..2**64`; `what` names it in the message.
pub(crate) fn to_u64(obj: &Bound<'_, PyAny>, what: impl FnOnce() -> String) -> PyResult<u64> {
    if let Ok(v) = obj.extract::<u64>() {
        return Ok(v);
    }
    if is_ndarray(obj) {
        return Err(PyTypeError::new_err(format!("{} must be an int, got a numpy array; pass int(x), or use the batch method for arrays", what())));
    }
    if obj.is_instance_of::<PyInt>() || obj.hasattr("__index__").unwrap_or(false) {
        Err(PyValueError::new_err(format!(
            "{} must be in 0..2**64-1 (an unsigned 64-bit value), got {}",
            what(),
            obj.repr().map_or_else(|_| "?".into(), |r| r.to_string())
        )))
    } else {
        Err(PyTypeError::new_err(format!("{} must be an int, got {}", what(), type_name(obj))))
    }
}

pub(crate) fn type_name(obj: &Bound<'_, PyAny>) -> String {
    obj.get_type().name().map_or_else(|_| "?".into(), |n| n.to_string())
}

/// Whether `obj` is a numpy array (of any dtype).
pub(crate) fn is_ndarray(obj: &Bound<'_, PyAny>) -> bool {
    obj.cast::<PyUntypedArray>().is_ok()
}

/// A 1-D `uint64` numpy array, strictly: no silent casts from signed or
/// float dtypes, whose negative or fractional values would turn into
/// different fingerprints.
pub(crate) fn u64_array<'py>(obj: &Bound<'py, PyAny>, name: &str) -> PyResult<Bound<'py, PyArray1<u64>>> {
    let arr = obj.cast::<PyUntypedArray>().map_err(|_| PyTypeError::new_err(format!("{name} must be a numpy uint64 array, got {}", type_name(obj))))?;
    let py = obj.py();
    if !arr.dtype().is_equiv_to(&numpy::dtype::<u64>(py)) {
        return Err(PyTypeError::new_err(format!(
            "{name} must have dtype uint64, got {}; convert with np.ascontiguousarray({name}, dtype=np.uint64) \
             after checking the values are in 0..2**64-1",
            arr.dtype()
        )));
    }
    if arr.ndim() != 1 {
        return Err(PyValueError::new_err(format!("{name} must be one-dimensional, got an array of shape {:?}; flatten it with {name}.ravel()", arr.shape())));
    }
    Ok(obj.cast::<PyArray1<u64>>()?.clone())
}

/// Fingerprints or ids given as an int, a 1-D uint64 array (read in place
/// when contiguous) or a sequence of ints.
pub(crate) enum U64s<'py> {
    Array(numpy::PyReadonlyArray1<'py, u64>),
    Owned(Vec<u64>),
}

impl<'py> U64s<'py> {
    pub(crate) fn extract(obj: &Bound<'py, PyAny>, name: &str) -> PyResult<U64s<'py>> {
        if is_ndarray(obj) {
            let ro = u64_array(obj, name)?.readonly();
            return Ok(if ro.as_slice().is_ok() { U64s::Array(ro) } else { U64s::Owned(ro.as_array().to_vec()) });
        }
        if obj.is_instance_of::<PyInt>() || obj.hasattr("__index__").unwrap_or(false) && !obj.hasattr("__len__").unwrap_or(false) {
            return Ok(U64s::Owned(vec![to_u64(obj, || name.to_string())?]));
        }
        Ok(U64s::Owned(u64_values(obj, name)?))
    }

    pub(crate) fn as_slice(&self) -> &[u64] {
        match self {
            U64s::Array(a) => a.as_slice().unwrap_or(&[]),
            U64s::Owned(v) => v,
        }
    }
}

/// `hashes` as u64 values: a 1-D uint64 array (read in place when
/// contiguous) or a sequence of ints.
pub(crate) fn u64_values(obj: &Bound<'_, PyAny>, name: &str) -> PyResult<Vec<u64>> {
    if is_ndarray(obj) {
        let arr = u64_array(obj, name)?;
        let ro = arr.readonly();
        return Ok(match ro.as_slice() {
            Ok(s) => s.to_vec(),
            Err(_) => ro.as_array().iter().copied().collect(),
        });
    }
    reject_text(obj, name, "a sequence of ints or a uint64 array")?;
    let mut out = Vec::with_capacity(obj.len().unwrap_or(0));
    for (i, item) in iterate(obj, name, "a sequence of ints or a uint64 array")?.enumerate() {
        out.push(to_u64(&item?, || format!("{name}[{i}]"))?);
    }
    Ok(out)
}

/// A str or bytes argument is almost always a mistake where a collection is
/// expected: iterating it would fingerprint single characters.
pub(crate) fn reject_text(obj: &Bound<'_, PyAny>, name: &str, expected: &str) -> PyResult<()> {
    if obj.is_instance_of::<PyString>() || obj.is_instance_of::<PyBytes>() {
        return Err(PyTypeError::new_err(format!("{name} must be {expected}, got a single {}; wrap it in a list", type_name(obj))));
    }
    Ok(())
}

/// Iterates lists and tuples without the iterator protocol, anything else with it.
pub(crate) fn iterate<'py>(obj: &Bound<'py, PyAny>, name: &str, expected: &str) -> PyResult<Box<dyn Iterator<Item = PyResult<Bound<'py, PyAny>>> + 'py>> {
    if let Ok(list) = obj.cast::<PyList>() {
        return Ok(Box::new(list.clone().into_iter().map(Ok)));
    }
    if let Ok(tuple) = obj.cast::<PyTuple>() {
        return Ok(Box::new(tuple.clone().into_iter().map(Ok)));
    }
    let it = obj.try_iter().map_err(|_| PyTypeError::new_err(format!("{name} must be {expected}, got {}", type_name(obj))))?;
    Ok(Box::new(it))
}

/// The UTF-8 bytes of a feature or text given as str, bytes or bytearray.
/// A str holding a lone surrogate cannot be UTF-8: `ValueError`.
pub(crate) fn feature_bytes(obj: &Bound<'_, PyAny>, what: impl FnOnce() -> String) -> PyResult<Option<Vec<u8>>> {
    if let Ok(s) = obj.cast::<PyString>() {
        return match s.encode_utf8() {
            Ok(b) => Ok(Some(b.as_bytes().to_vec())),
            Err(_) => Err(PyValueError::new_err(format!("{} is a str that cannot be encoded as UTF-8 (it holds a lone surrogate)", what()))),
        };
    }
    if let Ok(b) = obj.cast::<PyBytes>() {
        return Ok(Some(b.as_bytes().to_vec()));
    }
    if let Ok(b) = obj.cast::<PyByteArray>() {
        return Ok(Some(b.to_vec()));
    }
    Ok(None)
}

/// Pairs as a `(P, 2)` array (uint64 ids or uint32 positions), moved without a copy.
pub(crate) fn pairs_array<T: numpy::Element + bytemuck::Pod>(py: Python<'_>, pairs: Vec<[T; 2]>) -> PyResult<Bound<'_, PyArray2<T>>> {
    let n = pairs.len();
    let flat: Vec<T> = bytemuck::allocation::cast_vec(pairs);
    PyArray1::from_vec(py, flat).reshape([n, 2]).map_err(|e| PyRuntimeError::new_err(format!("internal error in rsimhash: {e}")))
}

/// An int argument of any size (a Python int, or an object with
/// `__index__` such as a numpy integer). pyo3's `i64` conversion raises
/// `OverflowError` for `2**70`, where a user needs a `ValueError` naming the
/// parameter and its range: [`Int::range`] gives it.
#[derive(Clone, Debug)]
pub(crate) enum Int {
    Fits(i64),
    /// Beyond `i64`: its repr, for the message.
    Huge(String),
}

impl<'a, 'py> FromPyObject<'a, 'py> for Int {
    type Error = PyErr;

    fn extract(obj: Borrowed<'a, 'py, PyAny>) -> PyResult<Self> {
        match obj.extract::<i64>() {
            Ok(v) => Ok(Int::Fits(v)),
            Err(e) if e.is_instance_of::<pyo3::exceptions::PyOverflowError>(obj.py()) => {
                let shown = obj.repr().map_or_else(|_| "a huge integer".into(), |r| r.to_string());
                Ok(Int::Huge(shown))
            }
            Err(e) => Err(e),
        }
    }
}

/// An int argument whose `TypeError` names it: pyo3's own says only
/// "'str' object cannot be interpreted as an integer" (and names the
/// argument in a note that `str(e)` leaves out).
pub(crate) fn named_int(obj: &Bound<'_, PyAny>, name: &str) -> PyResult<Int> {
    obj.extract::<Int>().map_err(|e| {
        if e.is_instance_of::<PyTypeError>(obj.py()) {
            PyTypeError::new_err(format!("{name} must be an int, got {}", type_name(obj)))
        } else {
            e
        }
    })
}

/// [`named_int`], `None` passing as not given.
pub(crate) fn named_int_opt(obj: &Bound<'_, PyAny>, name: &str) -> PyResult<Option<Int>> {
    if obj.is_none() {
        Ok(None)
    } else {
        named_int(obj, name).map(Some)
    }
}

/// `width=`, its `TypeError` naming it (for `#[pyo3(from_py_with)]`).
pub(crate) fn width_arg(obj: &Bound<'_, PyAny>) -> PyResult<Option<Int>> {
    named_int_opt(obj, "width")
}

/// `threads=`, its `TypeError` naming it (for `#[pyo3(from_py_with)]`).
pub(crate) fn threads_int(obj: &Bound<'_, PyAny>) -> PyResult<Option<Int>> {
    named_int_opt(obj, "threads")
}

impl Int {
    /// The value if it lies in `lo..=hi`, else a `ValueError` naming `name`
    /// and the range (`hi_text` says what `hi` is, when it is a bound of
    /// the machine's, such as the thread limit).
    pub(crate) fn range(&self, name: &str, lo: i64, hi: i64) -> PyResult<i64> {
        match self {
            Int::Fits(v) if (lo..=hi).contains(v) => Ok(*v),
            Int::Fits(v) => Err(out_of_range(name, lo, hi, &v.to_string())),
            Int::Huge(shown) => Err(out_of_range(name, lo, hi, shown)),
        }
    }

    /// [`Self::range`] for an optional argument.
    pub(crate) fn range_opt(value: Option<&Int>, name: &str, lo: i64, hi: i64) -> PyResult<Option<i64>> {
        value.map(|v| v.range(name, lo, hi)).transpose()
    }
}

/// The `ValueError` of an int argument outside its range.
pub(crate) fn out_of_range(name: &str, lo: i64, hi: i64, shown: &str) -> PyErr {
    let hi_text = if hi == i64::MAX { "2**63-1".to_string() } else { hi.to_string() };
    PyValueError::new_err(format!("{name} must be an integer from {lo} to {hi_text}, got {shown}"))
}

/// A `threads=` argument: `None` for the default pool, else 1 up to
/// [`crate::parallel::max_threads`] (asking for 100,000 threads is a
/// mistake, not a plan: each is an OS thread with its own stack).
pub(crate) fn threads_arg(value: Option<&Int>) -> PyResult<Option<usize>> {
    let max = crate::parallel::max_threads() as i64;
    let shown = match value {
        None => return Ok(None),
        Some(Int::Fits(v)) if (1..=max).contains(v) => return Ok(Some(*v as usize)),
        Some(Int::Fits(v)) => v.to_string(),
        Some(Int::Huge(shown)) => shown.clone(),
    };
    Err(PyValueError::new_err(format!("threads must be from 1 to {max} (4 per core, at least 1024), or None for all cores; got {shown}")))
}
