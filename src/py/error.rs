//! The one place where core errors become Python exceptions.

use std::io::ErrorKind;

use pyo3::exceptions::{
    PyFileNotFoundError, PyIsADirectoryError, PyKeyboardInterrupt, PyMemoryError, PyNotADirectoryError, PyOSError, PyPermissionError, PyRuntimeError,
    PyValueError,
};
use pyo3::prelude::*;
use pyo3::PyErr;

use crate::{Error, FileProblem};

// Index files that cannot be used: ValueError subclasses, so that code
// catching ValueError (as the docs said before these) still catches them.
pyo3::create_exception!(
    rsimhash,
    IndexFileError,
    PyValueError,
    "A file that is not a usable rsimhash index file; `path`, `expected` and `found` say where and what (None when no single value differs)."
);
pyo3::create_exception!(rsimhash, IndexFormatError, IndexFileError, "Not an index file, cut short, or with fields no writer makes.");
pyo3::create_exception!(rsimhash, IndexVersionError, IndexFileError, "Written by a newer format version, or for another SPEC version: upgrade rsimhash.");
pyo3::create_exception!(rsimhash, IndexChecksumError, IndexFileError, "Bytes that fail their checksum: the file was damaged after it was written.");
pyo3::create_exception!(
    rsimhash,
    IndexChangedError,
    IndexFileError,
    "The file an index was loaded from (mapped) was changed in place while in use: its answers can no longer be trusted."
);

/// The exception classes, for the module.
pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("IndexFileError", py.get_type::<IndexFileError>())?;
    m.add("IndexFormatError", py.get_type::<IndexFormatError>())?;
    m.add("IndexVersionError", py.get_type::<IndexVersionError>())?;
    m.add("IndexChecksumError", py.get_type::<IndexChecksumError>())?;
    m.add("IndexChangedError", py.get_type::<IndexChangedError>())?;
    Ok(())
}

/// `err` with `path`, `expected` and `found` set on its value.
fn with_details(err: PyErr, path: &str, expected: Option<&str>, found: Option<&str>) -> PyErr {
    Python::attach(|py| {
        let value = err.value(py);
        let _ = value.setattr("path", path);
        let _ = value.setattr("expected", expected);
        let _ = value.setattr("found", found);
    });
    err
}

impl From<Error> for PyErr {
    fn from(err: Error) -> PyErr {
        match err {
            Error::InvalidParameter { .. } | Error::NonFiniteWeight { .. } | Error::InvalidUtf8 { .. } => PyValueError::new_err(err.to_string()),
            Error::IdKind { .. } => pyo3::exceptions::PyTypeError::new_err(err.to_string()),
            Error::ThreadPool { .. } => PyRuntimeError::new_err(err.to_string()),
            // The OSError subclass Python's own `open` would raise.
            Error::Io { ref source, .. } => match source.kind() {
                ErrorKind::NotFound => PyFileNotFoundError::new_err(err.to_string()),
                ErrorKind::PermissionDenied => PyPermissionError::new_err(err.to_string()),
                ErrorKind::IsADirectory => PyIsADirectoryError::new_err(err.to_string()),
                ErrorKind::NotADirectory => PyNotADirectoryError::new_err(err.to_string()),
                _ => PyOSError::new_err(err.to_string()),
            },
            Error::BadFile { ref path, kind, ref expected, ref found, .. } => {
                let text = err.to_string();
                let e = match kind {
                    FileProblem::Format => IndexFormatError::new_err(text),
                    FileProblem::Version => IndexVersionError::new_err(text),
                    FileProblem::Checksum => IndexChecksumError::new_err(text),
                };
                with_details(e, path, expected.as_deref(), found.as_deref())
            }
            Error::Changed { ref path, .. } => with_details(IndexChangedError::new_err(err.to_string()), path, None, None),
            Error::BadInput { .. } => PyValueError::new_err(err.to_string()),
            Error::TooLarge { .. } | Error::OutOfMemory { .. } => PyMemoryError::new_err(err.to_string()),
            Error::Interrupted => PyKeyboardInterrupt::new_err("interrupted"),
        }
    }
}
