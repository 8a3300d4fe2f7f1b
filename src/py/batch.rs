//! Batch jobs (`rsimhash.batch`): the array functions behind the Python
//! module, which resolves sources and writes other output formats.
//!
//! A job runs on a thread of its own while the calling thread, with the GIL
//! released, waits for it; every tenth of a second that thread takes the
//! GIL to check for Ctrl-C (signal handlers only run on the main thread)
//! and to report progress, and a pending exception cancels the job.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::PathBuf;
use std::sync::mpsc;
use std::sync::Arc;
use std::time::Duration;

use numpy::{PyArray1, PyArray2, PyArrayMethods, PyReadonlyArray1};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyDict;

use super::convert::{pairs_array, threads_arg, u64_array, Int};
use crate::batch::{self, Control, NpyFiles, Options, Source};
use crate::ClusterMethod;

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(batch_find_all, m)?)?;
    m.add_function(wrap_pyfunction!(batch_dedup, m)?)?;
    m.add_function(wrap_pyfunction!(batch_find_all_against, m)?)?;
    m.add_function(wrap_pyfunction!(batch_dedup_against, m)?)?;
    m.add_function(wrap_pyfunction!(batch_clusters, m)?)?;
    m.add_function(wrap_pyfunction!(batch_design, m)?)?;
    m.add_function(wrap_pyfunction!(batch_candidates, m)?)?;
    m.add_function(wrap_pyfunction!(distinct_values, m)?)?;
    Ok(())
}

/// How often the waiting thread looks at the job.
const POLL: Duration = Duration::from_millis(100);

/// Fingerprints (or ids): a 1-D uint64 array read in place, or `.npy` paths.
enum Values<'py> {
    Array(PyReadonlyArray1<'py, u64>),
    Files(Vec<PathBuf>),
}

impl<'py> Values<'py> {
    fn extract(obj: &Bound<'py, PyAny>, name: &str) -> PyResult<Values<'py>> {
        // An array is never taken for paths: pyo3 would first reserve a
        // PathBuf (24 bytes) per item of it.
        if !super::convert::is_ndarray(obj) {
            if let Ok(paths) = obj.extract::<Vec<PathBuf>>() {
                return Ok(Values::Files(paths));
            }
        }
        let arr = u64_array(obj, name)?.readonly();
        if arr.as_slice().is_err() {
            return Err(PyValueError::new_err(format!("{name} must be contiguous; pass np.ascontiguousarray({name})")));
        }
        Ok(Values::Array(arr))
    }

    fn slice(&self) -> Option<&[u64]> {
        match self {
            Values::Array(a) => a.as_slice().ok(),
            Values::Files(_) => None,
        }
    }
}

/// Job settings from the keyword arguments every job takes: `k`,
/// `memory_limit` (bytes), and optionally `workdir`, `temp_parent`,
/// `threads`, `blocks` or `tables`, `spill` and `progress`.
struct Settings {
    opts: Options,
    threads: Option<usize>,
    progress: Option<Py<PyAny>>,
}

const SETTINGS: [&str; 10] = ["k", "memory_limit", "workdir", "temp_parent", "threads", "blocks", "tables", "spill", "progress", "copies"];

impl Settings {
    fn extract(job: Option<&Bound<'_, PyDict>>) -> PyResult<Settings> {
        let get = |key: &str| -> PyResult<Option<Bound<'_, PyAny>>> {
            Ok(match job {
                Some(d) => d.get_item(key)?.filter(|v| !v.is_none()),
                None => None,
            })
        };
        if let Some(d) = job {
            if let Some(key) = d.keys().iter().find(|k| !SETTINGS.iter().any(|s| k.eq(s).unwrap_or(false))) {
                return Err(PyTypeError::new_err(format!("unexpected keyword argument {key}")));
            }
        }
        let required = |key: &str| get(key)?.ok_or_else(|| PyTypeError::new_err(format!("missing keyword argument {key}")));
        // Ints of any size: a huge one is a ValueError naming the range.
        let int = |key: &str| -> PyResult<Option<Int>> { get(key)?.map(|v| v.extract()).transpose() };
        let path = |key: &str| -> PyResult<Option<PathBuf>> { get(key)?.map(|v| v.extract()).transpose() };
        let k = required("k")?.extract::<Int>()?.range("k", 0, i64::from(crate::plan::MAX_K))? as u32;
        let memory_limit = required("memory_limit")?.extract::<Int>()?.range("memory_limit", 1, i64::MAX)?;
        let threads = threads_arg(int("threads")?.as_ref())?;
        let count = |name: &str, hi: i64| -> PyResult<Option<u32>> { Ok(Int::range_opt(int(name)?.as_ref(), name, 1, hi)?.map(|v| v as u32)) };
        let design = match (count("blocks", 64)?, count("tables", 1 << 20)?) {
            (None, None) => None,
            (Some(b), None) => Some(crate::plan::with_blocks(k, b)?),
            (None, Some(t)) => Some(crate::plan::with_tables(k, t as usize)?),
            (Some(_), Some(_)) => return Err(PyValueError::new_err("give blocks or tables, not both")),
        };
        let opts = Options {
            design: design.map(Arc::new),
            memory_limit: memory_limit as u64,
            workdir: path("workdir")?,
            temp_parent: path("temp_parent")?,
            spill: get("spill")?.map(|v| v.extract()).transpose()?,
            copies: get("copies")?.map(|v| v.extract::<String>()).transpose()?.map(|c| c.parse()).transpose()?,
            ..Options::new(k)
        };
        Ok(Settings { opts, threads, progress: get("progress")?.map(Bound::unbind) })
    }
}

/// Runs `job` on a thread of its own (see the module docs).
pub(crate) fn run<T: Send>(
    py: Python<'_>,
    threads: Option<usize>,
    progress: Option<Py<PyAny>>,
    job: impl FnOnce(&Control) -> crate::Result<T> + Send,
) -> PyResult<T> {
    let control = Control::default();
    let (result, pending) = py.detach(|| {
        std::thread::scope(|s| {
            let (tx, rx) = mpsc::channel();
            let control = &control;
            let started = std::thread::Builder::new().name("rsimhash-job".into()).spawn_scoped(s, move || {
                let r = catch_unwind(AssertUnwindSafe(|| crate::parallel::install(threads, || job(control))));
                let _ = tx.send(r);
            });
            if let Err(e) = started {
                let failed = crate::Error::ThreadPool { threads: 1, reason: format!("{e} (out of memory, or at the process's thread limit)") };
                return (Ok(Err(failed)), None);
            }
            let mut pending: Option<PyErr> = None;
            loop {
                match rx.recv_timeout(POLL) {
                    Ok(r) => return (r, pending),
                    Err(mpsc::RecvTimeoutError::Timeout) if pending.is_none() => {
                        let seen = Python::attach(|py| -> PyResult<()> {
                            py.check_signals()?;
                            control.notices().iter().try_for_each(|m| warn(py, m))?;
                            if let Some(cb) = &progress {
                                let p = control.progress();
                                cb.call1(py, (p.done, p.total, p.step, p.step_done, p.step_total))?;
                            }
                            Ok(())
                        });
                        if let Err(e) = seen {
                            control.cancel();
                            pending = Some(e);
                        }
                    }
                    Err(mpsc::RecvTimeoutError::Timeout) => {}
                    Err(mpsc::RecvTimeoutError::Disconnected) => unreachable!("the job thread sends before it ends"),
                }
            }
        })
    });
    if let Some(e) = pending {
        return Err(e);
    }
    match result {
        Ok(Ok(Ok(value))) => {
            control.notices().iter().try_for_each(|m| warn(py, m))?;
            // The final count, so that a bar ends full however short the job.
            control.finish();
            if let Some(cb) = &progress {
                let p = control.progress();
                cb.call1(py, (p.done, p.total, p.step, p.step_done, p.step_total))?;
            }
            Ok(value)
        }
        Ok(Ok(Err(e))) | Ok(Err(e)) => Err(e.into()),
        Err(panic) => Err(super::detach::panic_error(panic)),
    }
}

/// A notice of the core as a Python `UserWarning` (an error where the
/// warnings filter says so).
pub(crate) fn warn(py: Python<'_>, message: &str) -> PyResult<()> {
    let category = py.get_type::<pyo3::exceptions::PyUserWarning>();
    let text = std::ffi::CString::new(message.replace('\0', " ")).expect("no NUL left");
    PyErr::warn(py, &category, &text, 1)
}

/// The values without the GIL: a slice or paths.
enum Plain<'a> {
    Slice(&'a [u64]),
    Files(&'a [PathBuf]),
}

impl Values<'_> {
    fn plain(&self) -> Plain<'_> {
        match self {
            Values::Array(a) => Plain::Slice(a.as_slice().unwrap_or(&[])),
            Values::Files(paths) => Plain::Files(paths),
        }
    }
}

fn open<'a>(values: &Plain<'a>) -> crate::Result<Source<'a>> {
    match *values {
        Plain::Slice(s) => Ok(Source::Memory(s)),
        Plain::Files(paths) => Ok(Source::Files(NpyFiles::open(paths)?)),
    }
}

/// Every pair within k: a `(P, 2)` uint64 array, or the count written to `out` (a `.npy` path).
#[pyfunction]
#[pyo3(signature = (source, *, ids = None, out = None, **job))]
fn batch_find_all<'py>(
    py: Python<'py>,
    source: &Bound<'py, PyAny>,
    ids: Option<&Bound<'py, PyAny>>,
    out: Option<PathBuf>,
    job: Option<&Bound<'py, PyDict>>,
) -> PyResult<Bound<'py, PyAny>> {
    let held = Values::extract(source, "source")?;
    let values = held.plain();
    let ids = ids.map(|i| Values::extract(i, "ids")).transpose()?;
    let ids = match &ids {
        None => None,
        Some(v) => Some(v.slice().ok_or_else(|| PyTypeError::new_err("ids must be a uint64 array"))?),
    };
    let s = Settings::extract(job)?;
    let opts = &s.opts;
    match out {
        Some(path) => {
            let count = run(py, s.threads, s.progress, |c| batch::find_all_to_file(&open(&values)?, ids, opts, c, &path))?;
            Ok(count.into_pyobject(py)?.into_any())
        }
        None => {
            let pairs = run(py, s.threads, s.progress, |c| batch::find_all(&open(&values)?, ids, opts, c))?;
            Ok(pairs_array(py, pairs)?.into_any())
        }
    }
}

/// Every pair within k as the candidates of a pass in order: written to
/// `pairs_out` (uint64 `higher << 32 | lower`, ascending) and `last_out`
/// (each item's last later partner, uint32); returns the count.
#[pyfunction]
#[pyo3(signature = (source, *, pairs_out, last_out, **job))]
fn batch_candidates<'py>(
    py: Python<'py>,
    source: &Bound<'py, PyAny>,
    pairs_out: PathBuf,
    last_out: PathBuf,
    job: Option<&Bound<'py, PyDict>>,
) -> PyResult<u64> {
    let held = Values::extract(source, "source")?;
    let values = held.plain();
    let s = Settings::extract(job)?;
    let opts = &s.opts;
    run(py, s.threads, s.progress, |c| batch::candidates_to_files(&open(&values)?, opts, c, &pairs_out, &last_out))
}

/// The keep mask of a dedup, and for each dropped item the earliest kept item within k:
/// `(keep, dropped, matched)`.
#[pyfunction]
#[pyo3(signature = (source, **job))]
#[allow(clippy::type_complexity)]
fn batch_dedup<'py>(
    py: Python<'py>,
    source: &Bound<'py, PyAny>,
    job: Option<&Bound<'py, PyDict>>,
) -> PyResult<(Bound<'py, PyArray1<bool>>, Bound<'py, PyArray1<u32>>, Bound<'py, PyArray1<u32>>)> {
    let held = Values::extract(source, "source")?;
    let values = held.plain();
    let s = Settings::extract(job)?;
    let opts = &s.opts;
    let d = run(py, s.threads, s.progress, |c| batch::dedup(&open(&values)?, opts, c))?;
    Ok((PyArray1::from_vec(py, d.keep), PyArray1::from_vec(py, d.dropped), PyArray1::from_vec(py, d.matched)))
}

/// Every pair of a new item and an old one within k: a `(P, 2)` uint64
/// array of `[new, old]` (positions, or ids), sorted.
#[pyfunction]
#[pyo3(signature = (source, against, *, ids = None, against_ids = None, **job))]
fn batch_find_all_against<'py>(
    py: Python<'py>,
    source: &Bound<'py, PyAny>,
    against: &Bound<'py, PyAny>,
    ids: Option<&Bound<'py, PyAny>>,
    against_ids: Option<&Bound<'py, PyAny>>,
    job: Option<&Bound<'py, PyDict>>,
) -> PyResult<Bound<'py, PyArray2<u64>>> {
    let (new_held, old_held) = (Values::extract(source, "source")?, Values::extract(against, "against")?);
    let (new_values, old_values) = (new_held.plain(), old_held.plain());
    let new_ids = ids.map(|i| Values::extract(i, "ids")).transpose()?;
    let old_ids = against_ids.map(|i| Values::extract(i, "against_ids")).transpose()?;
    let (new_ids, old_ids) = (id_slice(&new_ids, "ids")?, id_slice(&old_ids, "against_ids")?);
    let s = Settings::extract(job)?;
    let opts = &s.opts;
    let pairs = run(py, s.threads, s.progress, |c| batch::find_all_against(&open(&new_values)?, &open(&old_values)?, new_ids, old_ids, opts, c))?;
    pairs_array(py, pairs)
}

/// Ids in memory: paths are no ids.
fn id_slice<'a>(v: &'a Option<Values<'_>>, name: &str) -> PyResult<Option<&'a [u64]>> {
    match v {
        None => Ok(None),
        Some(v) => Ok(Some(v.slice().ok_or_else(|| PyTypeError::new_err(format!("{name} must be a uint64 array")))?)),
    }
}

/// Arrays of a dedup against a store: keep, dropped, matched, and whether
/// each match is an old position.
type DedupArrays<'py> = (Bound<'py, PyArray1<bool>>, Bound<'py, PyArray1<u32>>, Bound<'py, PyArray1<u32>>, Bound<'py, PyArray1<bool>>);

/// The dedup of a new batch against a store: `(keep, dropped, matched,
/// matched_old)`, `matched_old[i]` telling that `matched[i]` is a position
/// in `against` rather than in `source`.
#[pyfunction]
#[pyo3(signature = (source, against, **job))]
fn batch_dedup_against<'py>(
    py: Python<'py>,
    source: &Bound<'py, PyAny>,
    against: &Bound<'py, PyAny>,
    job: Option<&Bound<'py, PyDict>>,
) -> PyResult<DedupArrays<'py>> {
    let (new_held, old_held) = (Values::extract(source, "source")?, Values::extract(against, "against")?);
    let (new_values, old_values) = (new_held.plain(), old_held.plain());
    let s = Settings::extract(job)?;
    let opts = &s.opts;
    let d = run(py, s.threads, s.progress, |c| batch::dedup_against(&open(&new_values)?, &open(&old_values)?, opts, c))?;
    let (dedup, old) = (d.dedup, d.matched_old);
    Ok((PyArray1::from_vec(py, dedup.keep), PyArray1::from_vec(py, dedup.dropped), PyArray1::from_vec(py, dedup.matched), PyArray1::from_vec(py, old)))
}

/// Members and starts of clusters.
type Clusters<'py> = (Bound<'py, PyArray1<u32>>, Bound<'py, PyArray1<u64>>);

/// Clusters as `(members, starts)`: positions, cluster by cluster.
#[pyfunction]
#[pyo3(signature = (source, *, method = "connected", min_size = Int::Fits(2), **job), text_signature = "(source, *, method='connected', min_size=2, **job)")]
fn batch_clusters<'py>(py: Python<'py>, source: &Bound<'py, PyAny>, method: &str, min_size: Int, job: Option<&Bound<'py, PyDict>>) -> PyResult<Clusters<'py>> {
    let method: ClusterMethod = method.parse()?;
    let min_size = min_size.range("min_size", 1, i64::MAX)?;
    let held = Values::extract(source, "source")?;
    let values = held.plain();
    let s = Settings::extract(job)?;
    let opts = &s.opts;
    let (members, starts) = run(py, s.threads, s.progress, |c| batch::clusters(&open(&values)?, method, min_size as usize, opts, c))?;
    Ok((PyArray1::from_vec(py, members), PyArray1::from_vec(py, starts)))
}

type TwoArrays<'py> = (Bound<'py, PyArray1<u64>>, Bound<'py, PyArray1<u64>>);

/// `(values, repeated)`: the distinct values of the uint64 arrays `parts`
/// (as one), ascending, and those given more than once (see
/// [`batch::distinct`]); the arrays are read in place, without the GIL.
#[pyfunction]
#[pyo3(signature = (parts, *, threads = None))]
fn distinct_values<'py>(py: Python<'py>, parts: Vec<Bound<'py, PyAny>>, threads: Option<Int>) -> PyResult<TwoArrays<'py>> {
    let threads = threads_arg(threads.as_ref())?;
    let held = parts.iter().map(|p| Ok(u64_array(p, "parts")?.readonly())).collect::<PyResult<Vec<_>>>()?;
    let slices = held.iter().map(|a| a.as_slice().map_err(|_| PyValueError::new_err("parts must be contiguous arrays"))).collect::<PyResult<Vec<&[u64]>>>()?;
    let found = super::detach::run(py, threads, || Ok(batch::distinct(&slices)))?;
    Ok((PyArray1::from_vec(py, found.values), PyArray1::from_vec(py, found.repeated)))
}

/// The design a job would use for `n` items: `(tables, description)`.
#[pyfunction]
#[pyo3(signature = (n, *, k, blocks = None, tables = None))]
fn batch_design(
    py: Python<'_>,
    n: u64,
    k: &Bound<'_, PyAny>,
    blocks: Option<&Bound<'_, PyAny>>,
    tables: Option<&Bound<'_, PyAny>>,
) -> PyResult<(usize, String)> {
    let job = PyDict::new(py);
    job.set_item("k", k)?;
    job.set_item("memory_limit", 1)?;
    job.set_item("blocks", blocks)?;
    job.set_item("tables", tables)?;
    let s = Settings::extract(Some(&job))?;
    let design = match s.opts.design {
        Some(d) => d,
        None => Arc::new(batch::choose_design(s.opts.k, n, false)?),
    };
    Ok((design.tables().len(), design.to_string()))
}
