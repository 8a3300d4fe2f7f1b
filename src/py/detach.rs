//! Running core work with the GIL released.

use std::panic::{catch_unwind, AssertUnwindSafe};

use pyo3::marker::Ungil;
use pyo3::prelude::*;

/// Runs `f` without the GIL on `threads` rayon workers (`None`: all cores),
/// then maps its error and gives Ctrl-C pressed meanwhile a chance to raise.
///
/// A panic is a bug in rsimhash, never an answer: it becomes a
/// `RuntimeError` instead of pyo3's `PanicException`, which is a
/// `BaseException` that ordinary handlers miss.
pub(crate) fn run<T, F>(py: Python<'_>, threads: Option<usize>, f: F) -> PyResult<T>
where
    T: Send + Ungil,
    F: FnOnce() -> crate::Result<T> + Send + Ungil,
{
    let result = py.detach(|| catch_unwind(AssertUnwindSafe(|| crate::parallel::install(threads, f))));
    py.check_signals()?;
    match result {
        Ok(Ok(Ok(value))) => Ok(value),
        Ok(Ok(Err(e))) | Ok(Err(e)) => Err(e.into()),
        Err(panic) => Err(panic_error(panic)),
    }
}

/// The payload of [`incomplete`].
struct Incomplete;

/// Unwinds from an operation on an object that an earlier operation left
/// incomplete (it unwound midway with the object's lock held); [`run`]
/// reports a `ValueError` saying so.
pub(crate) fn incomplete() -> ! {
    std::panic::resume_unwind(Box::new(Incomplete))
}

/// A panic as the `RuntimeError` users see (see [`run`]); a large buffer
/// refused (`crate::mem::OutOfMemory`) as the `MemoryError` it is.
pub(crate) fn panic_error(panic: Box<dyn std::any::Any + Send>) -> PyErr {
    if panic.is::<Incomplete>() {
        return pyo3::exceptions::PyValueError::new_err(
            "this Index is incomplete: an earlier change to it stopped midway (out of memory, or an internal \
             error), so it may lack items; build or load it again",
        );
    }
    crate::Error::from_panic(panic).into()
}
