//! The one place where core errors become Python exceptions.

use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::PyErr;

use crate::Error;

impl From<Error> for PyErr {
    fn from(err: Error) -> PyErr {
        match err {
            Error::InvalidParameter { .. } | Error::NonFiniteWeight { .. } | Error::InvalidUtf8 { .. } => {
                PyValueError::new_err(err.to_string())
            }
            Error::ThreadPool { .. } => PyRuntimeError::new_err(err.to_string()),
        }
    }
}
