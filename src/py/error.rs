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
    r#"A file that is not a usable rsimhash index file: the base of the four
below, and a ``ValueError``. ``path`` names the file; ``expected`` and
``found`` say what differs where one value does (a version, a checksum),
else ``None``.

>>> import os, tempfile
>>> folder = tempfile.TemporaryDirectory()
>>> path = os.path.join(folder.name, "notes.rsh")
>>> with open(path, "w") as f:
...     _ = f.write("not an index")
>>> try:
...     rsimhash.Index.load(path)
... except rsimhash.IndexFileError as e:
...     print(type(e).__name__, e.path == path, e.expected)
IndexFormatError True None
>>> folder.cleanup()"#
);
pyo3::create_exception!(
    rsimhash,
    IndexFormatError,
    IndexFileError,
    r#"Not an index file, cut short, or with fields no writer makes.

>>> issubclass(rsimhash.IndexFormatError, ValueError)
True"#
);
pyo3::create_exception!(
    rsimhash,
    IndexVersionError,
    IndexFileError,
    r#"Written by a newer format version, or for another SPEC version: upgrade
rsimhash. ``expected`` and ``found`` name both, e.g. ``"SPEC v1"`` and
``"SPEC v2"``, or ``"format version at most 2"`` and ``"format version 3"``.
A file of an index keyed by strings is format version 2, which
rsimhash before string ids refuses so.

>>> issubclass(rsimhash.IndexVersionError, rsimhash.IndexFileError)
True"#
);
pyo3::create_exception!(
    rsimhash,
    IndexChecksumError,
    IndexFileError,
    r#"Bytes that fail their checksum: the file was damaged after it was
written. ``expected`` is the CRC-32C recorded, ``found`` the one computed
(``"crc 0x..."``).

>>> issubclass(rsimhash.IndexChecksumError, rsimhash.IndexFileError)
True"#
);
pyo3::create_exception!(
    rsimhash,
    IndexChangedError,
    IndexFileError,
    r#"The file an index was loaded from (mapped) was changed in place by
another program while in use (``Index.verify()``, or any operation that
meets the changed bytes): its answers can no longer be trusted; load it
again. rsimhash's own saves replace files whole and never cause this.

>>> issubclass(rsimhash.IndexChangedError, rsimhash.IndexFileError)
True"#
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
            Error::ThreadPool { .. } | Error::Internal { .. } => PyRuntimeError::new_err(err.to_string()),
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
