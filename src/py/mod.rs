//! The Python module `rsimhash._rsimhash`: the only code that names pyo3 or
//! numpy. Every function follows three phases: convert and validate the
//! arguments holding the GIL, run the core with the GIL released
//! ([`detach::run`]), convert the results.
//!
//! The doc comments of the objects `rsimhash` re-exports (`Index` and its
//! members, the fingerprint functions, the index file exceptions) become
//! their Python `__doc__`: they are the docstrings of `_rsimhash.pyi`,
//! written from it by `tools/stub_docs.py --write` (the stub is the one
//! source; tests/test_docstrings.py compares them at run time). They are
//! Python docstrings (double backquotes, doctest examples), not Markdown.

mod batch;
mod batch_ids;
mod convert;
mod detach;
mod distributed;
mod error;
mod fingerprint;
mod index;
mod keys;
mod records;
mod similar;
mod similar_index;
mod text;

use pyo3::prelude::*;

#[pymodule]
fn _rsimhash(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add("SPEC_VERSION", crate::SPEC_VERSION)?;
    let (a, b, c) = crate::unicode::UNICODE_VERSION;
    m.add("UNICODE_VERSION", format!("{a}.{b}.{c}"))?;
    m.add_function(wrap_pyfunction!(portable_paths, m)?)?;
    fingerprint::register(m)?;
    batch::register(m)?;
    batch_ids::register(m)?;
    similar::register(m)?;
    distributed::register(m)?;
    records::register(m)?;
    m.add_class::<index::PyIndex>()?;
    error::register(m)?;
    m.add_class::<similar_index::PySimilarIndex>()?;
    Ok(())
}

/// Whether the core runs its portable paths only (`RSIMHASH_PORTABLE=1`:
/// the code non-x86 builds run), not the CPU's SIMD extensions.
#[pyfunction]
fn portable_paths() -> bool {
    crate::cpu::portable()
}
