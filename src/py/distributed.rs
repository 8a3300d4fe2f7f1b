//! `ShuffleTables`: the permuted tables as shuffle keys, for
//! `rsimhash.spark` (see [`crate::distributed`]).

use numpy::{PyArray1, PyArray2, PyArrayMethods, PyReadonlyArray1};
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;

use super::convert::U64s;
use super::detach;
use crate::distributed::{Output, Routes, ShuffleTables};

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyShuffleTables>()?;
    m.add_class::<PyRoutes>()?;
    m.add_function(wrap_pyfunction!(spanning_forest, m)?)?;
    m.add_function(wrap_pyfunction!(component_labels, m)?)
}

/// The mask of the edges `(a[i], b[i])` (int64 arrays) that, taken in
/// order, join two components of the edges before them: a spanning forest.
#[pyfunction]
fn spanning_forest<'py>(py: Python<'py>, a: PyReadonlyArray1<'py, i64>, b: PyReadonlyArray1<'py, i64>) -> PyResult<Bound<'py, PyArray1<bool>>> {
    let (a, b) = (a.as_slice()?, b.as_slice()?);
    let mask = detach::run(py, None, || crate::distributed::forest::forest(a, b))?;
    Ok(PyArray1::from_vec(py, mask))
}

/// `(ids, roots)`: each id of the edges `(a[i], b[i])` (int64 arrays),
/// ascending, and the smallest id of its component.
#[pyfunction]
#[allow(clippy::type_complexity)]
fn component_labels<'py>(
    py: Python<'py>,
    a: PyReadonlyArray1<'py, i64>,
    b: PyReadonlyArray1<'py, i64>,
) -> PyResult<(Bound<'py, PyArray1<i64>>, Bound<'py, PyArray1<i64>>)> {
    let (a, b) = (a.as_slice()?, b.as_slice()?);
    let (ids, roots) = detach::run(py, None, || crate::distributed::forest::labels(a, b))?;
    Ok((PyArray1::from_vec(py, ids), PyArray1::from_vec(py, roots)))
}

/// Where a job's items go: each table's fine buckets' units and each
/// unit's cells (see the core's `distributed::routes`).
#[pyclass(name = "ShuffleRoutes", module = "rsimhash._rsimhash", frozen)]
pub(crate) struct PyRoutes {
    inner: Routes,
}

#[pymethods]
impl PyRoutes {
    /// Reduce tasks in all.
    #[getter]
    fn tasks(&self) -> u32 {
        self.inner.tasks()
    }

    /// `(table, cells, i, j)` of reduce task `task`.
    fn task(&self, task: u32) -> PyResult<(usize, u32, u32, u32)> {
        let t = self.inner.task(task)?;
        Ok((t.table, t.cells, t.i, t.j))
    }

    fn __repr__(&self) -> String {
        format!("ShuffleRoutes(units={}, tasks={})", self.inner.units(), self.inner.tasks())
    }
}

/// A uint64 array of values that fit 32 bits, as `u32`s.
fn small_u32s(obj: &Bound<'_, PyAny>, name: &str) -> PyResult<Vec<u32>> {
    let values = U64s::extract(obj, name)?;
    values.as_slice().iter().map(|&v| u32::try_from(v).map_err(|_| PyValueError::new_err(format!("{name} must hold values below 2**32, got {v}")))).collect()
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

    /// Distinct values of `fps` (uint64) in each fine bucket of each table
    /// (`fine`: the bits of each), the tables one after another (uint32).
    fn histogram<'py>(&self, py: Python<'py>, fps: &Bound<'py, PyAny>, fine: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyArray1<u32>>> {
        let fine = small_u32s(fine, "fine")?;
        let fps = U64s::extract(fps, "fps")?;
        let (fps, inner) = (fps.as_slice(), &self.inner);
        let hist = detach::run(py, None, || inner.histogram(fps, &fine))?;
        Ok(PyArray1::from_vec(py, hist))
    }

    /// Routes from a histogram summed over the map tasks: `(unit_of,
    /// cells, sizes)`, uint64 arrays: each fine bucket's unit, each unit's
    /// cells, each task's distinct values (about). Units hold about
    /// `target` values at most, a fine bucket above `cap` is cut into cells.
    #[allow(clippy::type_complexity)]
    fn plan<'py>(
        &self,
        py: Python<'py>,
        fine: &Bound<'py, PyAny>,
        hist: &Bound<'py, PyAny>,
        target: u64,
        cap: u64,
    ) -> PyResult<(Bound<'py, PyArray1<u64>>, Bound<'py, PyArray1<u64>>, Bound<'py, PyArray1<u64>>)> {
        let fine = small_u32s(fine, "fine")?;
        let hist = U64s::extract(hist, "hist")?;
        let routes = self.inner.plan(&fine, hist.as_slice(), target, cap)?;
        let sizes = routes.sizes(hist.as_slice());
        let widen = |x: &[u32]| x.iter().map(|&v| u64::from(v)).collect::<Vec<u64>>();
        Ok((PyArray1::from_vec(py, widen(routes.unit_of())), PyArray1::from_vec(py, widen(routes.cells())), PyArray1::from_vec(py, sizes)))
    }

    /// The routes of a plan (`fine`, `unit_of`, `cells` as `plan` gives
    /// them), checked, for `pack` and `reduce`.
    fn routes(&self, fine: &Bound<'_, PyAny>, unit_of: &Bound<'_, PyAny>, cells: &Bound<'_, PyAny>) -> PyResult<PyRoutes> {
        let fine = small_u32s(fine, "fine")?;
        let unit_of = small_u32s(unit_of, "unit_of")?;
        let cells = small_u32s(cells, "cells")?;
        Ok(PyRoutes { inner: self.inner.routes(fine, unit_of, cells)? })
    }

    /// A map task's items packed into blocks: `(tasks, starts, items)`,
    /// block `b` for reduce task `tasks[b]`, holding rows `starts[b]..starts[b
    /// + 1]` of `items` (`(rows, 2)` uint64: fingerprint, id), each item once
    /// a table (once a task of its cell when its unit is cut into cells).
    #[allow(clippy::type_complexity)]
    fn pack<'py>(
        &self,
        py: Python<'py>,
        fps: &Bound<'py, PyAny>,
        ids: &Bound<'py, PyAny>,
        routes: &PyRoutes,
    ) -> PyResult<(Bound<'py, PyArray1<u32>>, Bound<'py, PyArray1<u64>>, Bound<'py, PyArray2<u64>>)> {
        let (fps, ids) = (U64s::extract(fps, "fps")?, U64s::extract(ids, "ids")?);
        let (fps, ids, inner, routes) = (fps.as_slice(), ids.as_slice(), &self.inner, &routes.inner);
        let packed = detach::run(py, None, || inner.pack(fps, ids, routes))?;
        let rows = packed.items.len();
        let flat: Vec<u64> = bytemuck::cast_vec(packed.items);
        let items = PyArray1::from_vec(py, flat).reshape([rows, 2]).map_err(|e| PyRuntimeError::new_err(format!("internal error in rsimhash: {e}")))?;
        Ok((PyArray1::from_vec(py, packed.tasks), PyArray1::from_vec(py, packed.starts), items))
    }

    /// `(a, b)` int64 arrays: the pairs reduce task `task` of `routes`
    /// reports among `items` (a flat uint64 array of fingerprint, id, ...:
    /// every item `pack` sent the task), each `a <= b` as signed ids;
    /// `output` is `"all"` (every pair of ids), `"first"` (pairs of each
    /// fingerprint's smallest id, and its other copies linked to it) or
    /// `"forest"` (enough of those for their components).
    #[allow(clippy::type_complexity)]
    fn reduce<'py>(
        &self,
        py: Python<'py>,
        routes: &PyRoutes,
        task: u32,
        items: &Bound<'py, PyAny>,
        output: &str,
    ) -> PyResult<(Bound<'py, PyArray1<i64>>, Bound<'py, PyArray1<i64>>)> {
        let output = match output {
            "all" => Output::All,
            "first" => Output::First,
            "forest" => Output::Forest,
            other => return Err(PyValueError::new_err(format!(r#"output must be "all", "first" or "forest", got {other:?}"#))),
        };
        let items = U64s::extract(items, "items")?;
        let flat = items.as_slice();
        if flat.len() % 2 != 0 {
            return Err(PyValueError::new_err(format!("items must hold a fingerprint and an id each: an even length, got {}", flat.len())));
        }
        let (inner, routes) = (&self.inner, &routes.inner);
        let (a, b) = detach::run(py, None, || {
            let mut pairs: Vec<[u64; 2]> = flat.chunks_exact(2).map(|c| [c[0], c[1]]).collect();
            let found = inner.reduce(routes, task, &mut pairs, output)?;
            Ok(found.into_iter().map(|[a, b]| (a, b)).unzip::<i64, i64, Vec<i64>, Vec<i64>>())
        })?;
        Ok((PyArray1::from_vec(py, a), PyArray1::from_vec(py, b)))
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
