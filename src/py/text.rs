//! Reading the UTF-8 of Python `str` objects in place.
//!
//! `PyUnicode_AsUTF8AndSize` returns the UTF-8 bytes a str caches inside
//! itself (for an ASCII str, its own data): no copy, no new object. It has
//! been in CPython's ABI since 3.3 and in the limited API since 3.10; pyo3-ffi
//! hides it from abi3-py39 builds, so it is declared here, and every CPython
//! that loads this abi3 module on Linux or macOS exports it.
//!
//! Windows differs: extensions import the C API from `python3.dll` (pyo3
//! links it by raw-dylib, and so does the block below, which would otherwise
//! have no library to link against there), and `python3.dll` exports
//! `PyUnicode_AsUTF8AndSize` only from 3.10 on, so a module that imports it
//! fails to load on 3.9. Windows builds read each str through
//! `PyUnicode_AsUTF8String` instead (in the limited API of every version): a
//! UTF-8 copy in a new bytes object, kept alive as the str would be. (Raising
//! the Windows floor to abi3-py310 was tried: pyo3's abi3-py39 turns on
//! abi3-py310, and maturin takes its floor from the features of every
//! platform at once, so a per-platform pyo3 declaration breaks the Windows
//! build.) `tests/test_windows_link.py` holds the sources to both points,
//! since only a Windows build would notice.

use pyo3::exceptions::PyTypeError;
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyString};

use super::convert::type_name;

// Without the attribute a Windows link has no library to find these in.
#[cfg_attr(windows, link(name = "python3", kind = "raw-dylib"))]
extern "C" {
    // Not on Windows, where 3.9's python3.dll lacks it (see the module docs).
    #[cfg(not(windows))]
    fn PyUnicode_AsUTF8AndSize(unicode: *mut ffi::PyObject, size: *mut ffi::Py_ssize_t) -> *const std::os::raw::c_char;
}

/// A str's UTF-8 bytes and the object that holds them, or `None` (with a
/// Python exception set) for a str with a lone surrogate.
#[cfg(not(windows))]
fn utf8<'py>(s: &Bound<'py, PyString>) -> Option<(Bound<'py, PyAny>, (*const u8, usize))> {
    let mut size: ffi::Py_ssize_t = 0;
    // SAFETY: `s` is a live str and we hold the GIL; the returned buffer
    // belongs to the str, which the caller keeps alive with the span.
    let data = unsafe { PyUnicode_AsUTF8AndSize(s.as_ptr(), &mut size) };
    (!data.is_null()).then(|| (s.clone().into_any(), (data.cast::<u8>(), usize::try_from(size).unwrap_or(0))))
}

/// A str's UTF-8 bytes and the object that holds them, or `None` (with a
/// Python exception set) for a str with a lone surrogate: on Windows a copy
/// in a new bytes object (see the module docs).
#[cfg(windows)]
fn utf8<'py>(s: &Bound<'py, PyString>) -> Option<(Bound<'py, PyAny>, (*const u8, usize))> {
    // SAFETY: `s` is a live str and we hold the GIL; the call returns a new
    // reference, or null with an exception set.
    let bytes = unsafe { Bound::from_owned_ptr_or_opt(s.py(), ffi::PyUnicode_AsUTF8String(s.as_ptr())) }?;
    let bytes = bytes.cast_into::<PyBytes>().ok()?;
    let span = (bytes.as_bytes().as_ptr(), bytes.as_bytes().len());
    Some((bytes.into_any(), span))
}

/// The UTF-8 bytes of many texts, kept alive by strong references, so they
/// stay valid with the GIL released even if the caller's list changes.
#[derive(Default)]
pub(crate) struct Utf8Texts<'py> {
    keep: Vec<Bound<'py, PyAny>>,
    spans: Vec<(*const u8, usize)>,
}

impl<'py> Utf8Texts<'py> {
    pub(crate) fn with_capacity(n: usize) -> Self {
        Utf8Texts { keep: Vec::with_capacity(n), spans: Vec::with_capacity(n) }
    }

    /// Adds `obj`, which must be a str; `what` names it in the error.
    ///
    /// SPEC v1 treats a lone surrogate (which has no UTF-8) as a separator, as
    /// it does U+FFFD: such a str is read through a lossy copy instead.
    pub(crate) fn push(&mut self, obj: Bound<'py, PyAny>, what: impl FnOnce() -> String) -> PyResult<()> {
        let s = obj.cast::<PyString>().map_err(|_| PyTypeError::new_err(format!("{} must be str, got {}", what(), type_name(&obj))))?;
        match utf8(s) {
            Some((holder, span)) => {
                self.keep.push(holder);
                self.spans.push(span);
            }
            None => {
                // A lone surrogate: drop the UnicodeEncodeError, read a lossy copy.
                let _ = PyErr::take(obj.py());
                let bytes = PyBytes::new(obj.py(), s.to_string_lossy().as_bytes());
                let span = (bytes.as_bytes().as_ptr(), bytes.as_bytes().len());
                self.keep.push(bytes.into_any());
                self.spans.push(span);
            }
        }
        Ok(())
    }

    /// The texts' bytes, valid while `self` lives.
    pub(crate) fn slices(&self) -> Vec<&[u8]> {
        self.spans
            .iter()
            // SAFETY: each span points into an object held by `self.keep`
            // (strs and bytes are immutable), so it is valid for `&self`.
            .map(|&(ptr, len)| unsafe { std::slice::from_raw_parts(ptr, len) })
            .collect()
    }
}
