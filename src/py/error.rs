//! The one place where core errors become Python exceptions.

use std::io::ErrorKind;

use pyo3::exceptions::{
    PyFileNotFoundError, PyIsADirectoryError, PyKeyboardInterrupt, PyMemoryError, PyNotADirectoryError, PyOSError, PyPermissionError, PyRuntimeError,
    PyValueError,
};
use pyo3::PyErr;

use crate::Error;

impl From<Error> for PyErr {
    fn from(err: Error) -> PyErr {
        match err {
            Error::InvalidParameter { .. } | Error::NonFiniteWeight { .. } | Error::InvalidUtf8 { .. } => PyValueError::new_err(err.to_string()),
            Error::ThreadPool { .. } => PyRuntimeError::new_err(err.to_string()),
            // The OSError subclass Python's own `open` would raise.
            Error::Io { ref source, .. } => match source.kind() {
                ErrorKind::NotFound => PyFileNotFoundError::new_err(err.to_string()),
                ErrorKind::PermissionDenied => PyPermissionError::new_err(err.to_string()),
                ErrorKind::IsADirectory => PyIsADirectoryError::new_err(err.to_string()),
                ErrorKind::NotADirectory => PyNotADirectoryError::new_err(err.to_string()),
                _ => PyOSError::new_err(err.to_string()),
            },
            Error::BadFile { .. } | Error::BadInput { .. } | Error::Changed { .. } => PyValueError::new_err(err.to_string()),
            Error::TooLarge { .. } | Error::OutOfMemory { .. } => PyMemoryError::new_err(err.to_string()),
            Error::Interrupted => PyKeyboardInterrupt::new_err("interrupted"),
        }
    }
}
