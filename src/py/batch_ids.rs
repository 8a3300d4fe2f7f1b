//! `batch_check_ids`: the ids of `rsimhash.batch.dedup` and `clusters`
//! (which map positions to ids in Python) checked as `find_all` checks its
//! own, within the job's memory limit.

use std::path::PathBuf;

use numpy::PyReadonlyArray1;
use pyo3::prelude::*;

use super::detach;
use crate::batch::{self, Options};

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(batch_check_ids, m)?)?;
    Ok(())
}

/// Raises `ValueError` naming an id that `ids` (a 1-D uint64 array) hold
/// twice; sorts out of memory (in `workdir`, else `temp_parent`) past
/// `memory_limit` bytes.
#[pyfunction]
#[pyo3(signature = (ids, *, memory_limit, workdir = None, temp_parent = None))]
fn batch_check_ids(py: Python<'_>, ids: PyReadonlyArray1<'_, u64>, memory_limit: u64, workdir: Option<PathBuf>, temp_parent: Option<PathBuf>) -> PyResult<()> {
    let ids = ids.as_slice()?;
    let opts = Options { memory_limit, workdir, temp_parent, ..Options::new(0) };
    detach::run(py, None, || batch::check_distinct(ids, &opts))
}
