//! Reading the UTF-8 of Python `str` objects in place.
//!
//! `PyUnicode_AsUTF8AndSize` returns the UTF-8 bytes a str caches inside
//! itself (for an ASCII str, its own data): no copy, no new object. It has
//! been in CPython's ABI since 3.3 and in the limited API since 3.10; pyo3-ffi
//! hides it from abi3-py39 builds, so it is declared here. Every CPython this
//! abi3 wheel can load into exports it: on Windows the symbol is imported
//! from `python3.dll` (raw-dylib, as pyo3 links everything else there), which
//! exports it from 3.10 on, so Windows builds are abi3-py310 (Cargo.toml).
//! Every `extern` block of the bindings carries that link attribute; a test
//! (`tests/test_windows_link.py`) holds them to it, since only a Windows
//! build would notice a missing one.

use std::os::raw::c_char;

use pyo3::exceptions::PyTypeError;
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyString};

use super::convert::type_name;

// Without the attribute the Windows link has no library to find it in.
#[cfg_attr(windows, link(name = "python3", kind = "raw-dylib"))]
extern "C" {
    fn PyUnicode_AsUTF8AndSize(unicode: *mut ffi::PyObject, size: *mut ffi::Py_ssize_t) -> *const c_char;
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
        let mut size: ffi::Py_ssize_t = 0;
        // SAFETY: `s` is a live str and we hold the GIL; the returned buffer
        // belongs to the str, which `self.keep` keeps alive below.
        let data = unsafe { PyUnicode_AsUTF8AndSize(s.as_ptr(), &mut size) };
        if data.is_null() {
            // A lone surrogate: drop the UnicodeEncodeError, read a lossy copy.
            let _ = PyErr::take(obj.py());
            let bytes = PyBytes::new(obj.py(), s.to_string_lossy().as_bytes());
            let span = (bytes.as_bytes().as_ptr(), bytes.as_bytes().len());
            self.keep.push(bytes.into_any());
            self.spans.push(span);
        } else {
            self.keep.push(obj);
            self.spans.push((data.cast::<u8>(), usize::try_from(size).unwrap_or(0)));
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
