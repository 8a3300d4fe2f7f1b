//! `ShuffleTables`: the permuted tables as shuffle keys, for
//! `rsimhash.spark` (see [`crate::distributed`]).

use numpy::{PyArray1, PyArray2, PyArrayMethods};
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;

use super::convert::U64s;
use super::detach;
use crate::distributed::{Output, ShuffleTables};

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

    /// A map task's items packed into blocks: `(tables, buckets, starts,
    /// items)`, block `b` table `tables[b]`'s bucket `buckets[b]`, holding
    /// rows `starts[b]..starts[b + 1]` of `items` (`(N * tables, 2)` uint64:
    /// fingerprint, id). Buckets by the top `bits` bits of the permuted key,
    /// at most a table's prefix (see the core's `distributed::blocks`).
    #[allow(clippy::type_complexity)]
    fn pack<'py>(
        &self,
        py: Python<'py>,
        fps: &Bound<'py, PyAny>,
        ids: &Bound<'py, PyAny>,
        bits: i64,
    ) -> PyResult<(Bound<'py, PyArray1<u32>>, Bound<'py, PyArray1<u32>>, Bound<'py, PyArray1<u64>>, Bound<'py, PyArray2<u64>>)> {
        let bits = u32::try_from(bits).map_err(|_| PyValueError::new_err(format!("bits must be from 0 to 16, got {bits}")))?;
        let (fps, ids) = (U64s::extract(fps, "fps")?, U64s::extract(ids, "ids")?);
        let (fps, ids, inner) = (fps.as_slice(), ids.as_slice(), &self.inner);
        let packed = detach::run(py, None, || inner.pack(fps, ids, bits))?;
        let rows = packed.items.len();
        let flat: Vec<u64> = bytemuck::cast_vec(packed.items);
        let items = PyArray1::from_vec(py, flat).reshape([rows, 2]).map_err(|e| PyRuntimeError::new_err(format!("internal error in rsimhash: {e}")))?;
        Ok((PyArray1::from_vec(py, packed.tables), PyArray1::from_vec(py, packed.buckets), PyArray1::from_vec(py, packed.starts), items))
    }

    /// `(a, b)` int64 arrays: the pairs `table` reports among `items` (a
    /// flat uint64 array of fingerprint, id, ...: whole buckets of the
    /// table), each `a <= b` as signed ids; `output` is `"all"` (every pair
    /// of ids), `"first"` (pairs of each fingerprint's smallest id, and its
    /// other copies linked to it) or `"forest"` (enough of those for their
    /// components).
    #[allow(clippy::type_complexity)]
    fn reduce<'py>(
        &self,
        py: Python<'py>,
        table: i64,
        items: &Bound<'py, PyAny>,
        output: &str,
    ) -> PyResult<(Bound<'py, PyArray1<i64>>, Bound<'py, PyArray1<i64>>)> {
        let t = self.table(table)?;
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
        let inner = &self.inner;
        let (a, b) = detach::run(py, None, || {
            let mut pairs: Vec<[u64; 2]> = flat.chunks_exact(2).map(|c| [c[0], c[1]]).collect();
            let found = inner.reduce(t, &mut pairs, output)?;
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
