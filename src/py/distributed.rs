//! `ShuffleTables`: the permuted tables as shuffle keys, for
//! `rsimhash.spark` (see [`crate::distributed`]).

use numpy::{PyArray1, PyArray2, PyArrayMethods, PyReadonlyArray1};
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;

use super::convert::{pairs_array, U64s};
use super::detach;
use crate::distributed::ShuffleTables;

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyShuffleTables>()
}

/// The tables of a single-level design of `blocks` blocks for `k`, as the
/// keys of a distributed job's shuffle.
#[pyclass(name = "ShuffleTables", module = "rsimhash._rsimhash", frozen)]
pub(crate) struct PyShuffleTables {
    inner: ShuffleTables,
}

impl PyShuffleTables {
    fn table(&self, table: i64) -> PyResult<usize> {
        let n = self.inner.tables();
        usize::try_from(table).ok().filter(|&t| t < n).ok_or_else(|| PyValueError::new_err(format!("table must be from 0 to {}, got {table}", n - 1)))
    }
}

#[pymethods]
impl PyShuffleTables {
    #[new]
    fn new(k: i64, blocks: i64) -> PyResult<Self> {
        let k = u32::try_from(k).map_err(|_| PyValueError::new_err(format!("k must be from 0 to 16, got {k}")))?;
        let blocks = u32::try_from(blocks).map_err(|_| PyValueError::new_err(format!("blocks must be more than k, got {blocks}")))?;
        Ok(PyShuffleTables { inner: ShuffleTables::new(k, blocks)? })
    }

    #[getter]
    fn k(&self) -> u32 {
        self.inner.k()
    }

    #[getter]
    fn tables(&self) -> usize {
        self.inner.tables()
    }

    /// Leading bits of a table's keys.
    fn prefix(&self, table: i64) -> PyResult<u32> {
        Ok(self.inner.prefix(self.table(table)?))
    }

    /// `(N, tables)` uint64: each fingerprint's key in every table.
    fn keys<'py>(&self, py: Python<'py>, fps: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyArray2<u64>>> {
        let fps = U64s::extract(fps, "fps")?;
        let (values, tables) = (fps.as_slice(), self.inner.tables());
        let inner = &self.inner;
        let flat = detach::run(py, None, || {
            let mut out = Vec::with_capacity(values.len() * tables);
            for &fp in values {
                out.extend((0..tables).map(|t| inner.key(t, fp)));
            }
            Ok(out)
        })?;
        PyArray1::from_vec(py, flat).reshape([values.len(), tables]).map_err(|e| PyRuntimeError::new_err(format!("internal error in rsimhash: {e}")))
    }

    /// `(P, 2)` uint32 positions `i < j` of `fps` (distinct values sharing
    /// `table`'s key) within k that `table` reports.
    fn group_pairs<'py>(&self, py: Python<'py>, table: i64, fps: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyArray2<u32>>> {
        let t = self.table(table)?;
        let fps = U64s::extract(fps, "fps")?;
        let (values, inner) = (fps.as_slice(), &self.inner);
        let pairs = detach::run(py, None, || Ok(inner.group_pairs(t, values)))?;
        pairs_array(py, pairs)
    }

    /// `(P, 2)` uint32 positions `(i in a, j in b)` of two parts of one
    /// group of `table` within k that `table` reports.
    fn cross_pairs<'py>(&self, py: Python<'py>, table: i64, a: &Bound<'py, PyAny>, b: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyArray2<u32>>> {
        let t = self.table(table)?;
        let (a, b) = (U64s::extract(a, "a")?, U64s::extract(b, "b")?);
        let (a, b, inner) = (a.as_slice(), b.as_slice(), &self.inner);
        let pairs = detach::run(py, None, || Ok(inner.cross_pairs(t, a, b)))?;
        pairs_array(py, pairs)
    }

    /// `(P, 2)` uint32 row positions: the pairs of many groups at once, rows
    /// of each `(table, key, cell)` together and sorted by side (see the
    /// core's `ShuffleTables::sorted_pairs`).
    #[allow(clippy::too_many_arguments)]
    fn sorted_pairs<'py>(
        &self,
        py: Python<'py>,
        tables: PyReadonlyArray1<'py, u32>,
        keys: PyReadonlyArray1<'py, u64>,
        cells: PyReadonlyArray1<'py, u64>,
        sides: PyReadonlyArray1<'py, u8>,
        fps: PyReadonlyArray1<'py, u64>,
    ) -> PyResult<Bound<'py, PyArray2<u32>>> {
        let (tables, keys, cells, sides, fps) = (tables.to_vec()?, keys.to_vec()?, cells.to_vec()?, sides.to_vec()?, fps.to_vec()?);
        let inner = &self.inner;
        let pairs = detach::run(py, None, || inner.sorted_pairs(&tables, &keys, &cells, &sides, &fps))?;
        pairs_array(py, pairs)
    }

    /// Of `pairs` (`(P, 2)` uint32 row positions into `fps`), those that
    /// join two components of the values they link: a spanning forest.
    #[staticmethod]
    fn spanning<'py>(py: Python<'py>, pairs: numpy::PyReadonlyArray2<'py, u32>, fps: PyReadonlyArray1<'py, u64>) -> PyResult<Bound<'py, PyArray2<u32>>> {
        let fps = fps.to_vec()?;
        let view = pairs.as_array();
        if view.ncols() != 2 && view.nrows() > 0 {
            return Err(pyo3::exceptions::PyValueError::new_err("pairs must have two columns"));
        }
        let rows: Vec<[u32; 2]> = view.rows().into_iter().map(|r| [r[0], r[1]]).collect();
        if let Some(&bad) = rows.iter().flatten().find(|&&i| i as usize >= fps.len()) {
            return Err(pyo3::exceptions::PyValueError::new_err(format!("pairs name row {bad}, but there are {} rows", fps.len())));
        }
        let forest = detach::run(py, None, || Ok(ShuffleTables::spanning(&rows, &fps)))?;
        pairs_array(py, forest)
    }

    /// The blocks of the single-level design for a shuffle of `n` distinct
    /// values (the core's cost model), or with `tables` the fewest blocks
    /// whose design has that many; `None` when none has.
    #[staticmethod]
    #[pyo3(signature = (n, k, tables = None))]
    fn choose_blocks(n: u64, k: u32, tables: Option<u64>) -> PyResult<Option<u32>> {
        Ok(crate::distributed::shuffle_blocks(n, k, tables)?)
    }

    fn __repr__(&self) -> String {
        format!("ShuffleTables(k={}, tables={})", self.inner.k(), self.inner.tables())
    }
}
