//! Verified near-duplicates: `SimilarCorpus` (documents in memory, then
//! their pairs, dedup or clusters), `StreamVerifier` (the second pass over a
//! corpus too large to hold), and the shingle sets they compare.

use std::sync::RwLock;

use numpy::{PyArray1, PyArray2, PyArrayMethods, PyReadonlyArray1};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;

use super::batch::run;
use super::convert::{pairs_array, threads_int, u64_array, width_arg, Int};
use super::detach;
use super::fingerprint::{arrow_slices, collect_texts, shingling, threads};
use super::text::Utf8Texts;
use crate::batch::ClusterMethod;
use crate::fingerprint::Fingerprinter;
use crate::similar::{self, Candidates, Corpus, Measure, OnlineDedup, PairSweep, Similar, StreamVerifier};

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PySimilarCorpus>()?;
    m.add_class::<PyStreamVerifier>()?;
    m.add_class::<PyOnlineDedup>()?;
    m.add_class::<PyPairSweep>()?;
    m.add_function(wrap_pyfunction!(auto_candidates, m)?)?;
    m.add_function(wrap_pyfunction!(shingle_sets, m)?)?;
    m.add_function(wrap_pyfunction!(pair_similarity, m)?)?;
    m.add_function(wrap_pyfunction!(content_keys, m)?)?;
    m.add_function(wrap_pyfunction!(copy_links, m)?)?;
    m.add_function(wrap_pyfunction!(expand_copies, m)?)?;
    Ok(())
}

/// A uint64 array as a slice, copied only when not contiguous.
fn u64s<'a>(array: &'a numpy::PyReadonlyArray1<'_, u64>, owned: &'a mut Vec<u64>) -> &'a [u64] {
    match array.as_slice() {
        Ok(s) => s,
        Err(_) => {
            *owned = array.as_array().to_vec();
            owned
        }
    }
}

/// The 128-bit keys of texts' bytes (see `similar::copies`): an `(n, 2)` uint64 array.
#[pyfunction]
#[pyo3(signature = (texts, *, threads = None))]
fn content_keys<'py>(
    py: Python<'py>,
    texts: &Bound<'py, PyAny>,
    #[pyo3(from_py_with = threads_int)] threads: Option<Int>,
) -> PyResult<Bound<'py, PyArray2<u64>>> {
    let threads = self::threads(threads)?;
    let (mut held, mut arrow) = (None, None);
    let slices = text_slices(texts, &mut held, &mut arrow)?;
    let keys: Vec<[u64; 2]> = detach::run(py, threads, || {
        use rayon::prelude::*;
        Ok(slices.par_iter().map(|t| similar::copies::content_key(t)).collect())
    })?;
    pairs_array(py, keys)
}

/// Links of copies to their first copy from the first pass's key and
/// fingerprint files, written to `out` (`.npy`); returns their number.
#[pyfunction]
#[pyo3(signature = (keys, fps, n, *, workdir, memory_limit, out))]
fn copy_links(
    py: Python<'_>,
    keys: std::path::PathBuf,
    fps: std::path::PathBuf,
    n: u64,
    workdir: std::path::PathBuf,
    memory_limit: u64,
    out: std::path::PathBuf,
) -> PyResult<u64> {
    let budget = (memory_limit / 4).clamp(1 << 20, 1 << 31) as usize;
    detach::run(py, None, || similar::copies::copy_links(&keys, &fps, n, &workdir, budget, &out))
}

/// Every alike pair from those a stream found with copies paired to their
/// first copy only, and the links: `(pairs, similarity)` as
/// `SimilarCorpus.pairs(copies=...)` gives them.
#[pyfunction]
#[pyo3(signature = (lower, higher, similarity, links, *, copies = "all"))]
fn expand_copies<'py>(
    py: Python<'py>,
    lower: PyReadonlyArray1<'py, u64>,
    higher: PyReadonlyArray1<'py, u64>,
    similarity: PyReadonlyArray1<'py, f32>,
    links: PyReadonlyArray1<'py, u64>,
    copies: &str,
) -> PyResult<Pairs<'py>> {
    let copies: crate::Copies = copies.parse()?;
    let (lo, hi, sims) = (lower.as_array(), higher.as_array(), similarity.as_array());
    if lo.len() != hi.len() || lo.len() != sims.len() {
        return Err(PyValueError::new_err("lower, higher and similarity must have one length"));
    }
    let pairs: Vec<[u64; 2]> = lo.iter().zip(hi.iter()).map(|(&a, &b)| [a, b]).collect();
    let sims = sims.to_vec();
    let mut owned = Vec::new();
    let links = u64s(&links, &mut owned);
    let found = detach::run(py, None, || similar::expand_copies(&pairs, &sims, links, copies))?;
    Ok((pairs_array(py, found.pairs)?, PyArray1::from_vec(py, found.similarity)))
}

type Arrays2<'py, A, B> = (Bound<'py, PyArray1<A>>, Bound<'py, PyArray1<B>>);
type Pairs<'py> = (Bound<'py, PyArray2<u64>>, Bound<'py, PyArray1<f32>>);

/// The settings of verified near-duplicates from the Python arguments;
/// `candidates` is `(mode, width, k)`, or `None` for the automatic choice.
pub(crate) fn settings(threshold: f64, measure: &str, shingles: &str, width: Option<Int>, candidates: Option<(String, Option<Int>, Int)>) -> PyResult<Similar> {
    let measure: Measure = measure.parse()?;
    let sets = shingling(shingles, width)?;
    let candidates = match candidates {
        None => Candidates::auto(threshold)?,
        Some((mode, width, k)) => {
            let k = k.range("the candidates' k", 0, i64::from(crate::plan::MAX_K))? as u32;
            Candidates { shingling: shingling(&mode, width)?, k }
        }
    };
    Ok(Similar::new(threshold, measure, sets, candidates)?)
}

/// Texts as UTF-8 slices: a sequence of str, or `(offsets, data)` of an
/// Arrow string column. `held` keeps the str objects alive.
pub(crate) fn text_slices<'a, 'py>(
    texts: &'a Bound<'py, PyAny>,
    held: &'a mut Option<Utf8Texts<'py>>,
    arrow: &'a mut Option<(PyReadonlyArray1<'py, i64>, PyReadonlyArray1<'py, u8>)>,
) -> PyResult<Vec<&'a [u8]>> {
    if let Ok(pair) = texts.extract::<(PyReadonlyArray1<'py, i64>, PyReadonlyArray1<'py, u8>)>() {
        let (offsets, data) = arrow.insert(pair);
        return arrow_slices(offsets.as_slice()?, data.as_slice()?);
    }
    Ok(held.insert(collect_texts(texts)?).slices())
}

/// Documents gathered for verified near-duplicates.
#[pyclass(name = "SimilarCorpus", module = "rsimhash._rsimhash", frozen)]
pub(crate) struct PySimilarCorpus {
    inner: RwLock<Corpus>,
}

fn write<T>(lock: &RwLock<T>) -> std::sync::RwLockWriteGuard<'_, T> {
    lock.write().unwrap_or_else(|e| e.into_inner())
}

fn read<T>(lock: &RwLock<T>) -> std::sync::RwLockReadGuard<'_, T> {
    lock.read().unwrap_or_else(|e| e.into_inner())
}

#[pymethods]
impl PySimilarCorpus {
    #[new]
    #[pyo3(signature = (threshold, *, measure = "jaccard", shingles = "words", width = None, candidates = None, exact = false))]
    fn new(
        threshold: f64,
        measure: &str,
        shingles: &str,
        #[pyo3(from_py_with = width_arg)] width: Option<Int>,
        candidates: Option<(String, Option<Int>, Int)>,
        exact: bool,
    ) -> PyResult<Self> {
        let opts = settings(threshold, measure, shingles, width, candidates)?.with_exact(exact);
        Ok(PySimilarCorpus { inner: RwLock::new(Corpus::new(opts)) })
    }

    /// Whether pairs come from the exact join (else from the candidates).
    #[getter]
    fn exact(&self) -> bool {
        read(&self.inner).opts().exact
    }

    /// Adds texts: a sequence of str, or `(offsets, data)` of an Arrow column.
    #[pyo3(signature = (texts, *, threads = None))]
    fn add(&self, py: Python<'_>, texts: &Bound<'_, PyAny>, #[pyo3(from_py_with = threads_int)] threads: Option<Int>) -> PyResult<()> {
        let threads = self::threads(threads)?;
        let (mut held, mut arrow) = (None, None);
        let slices = text_slices(texts, &mut held, &mut arrow)?;
        let inner = &self.inner;
        run(py, threads, None, |c| write(inner).add_utf8(&slices, c))
    }

    /// Every verified pair: `(pairs, similarity)`, positions in the order added.
    #[pyo3(signature = (*, threads = None, progress = None, copies = "all"))]
    fn pairs<'py>(
        &self,
        py: Python<'py>,
        #[pyo3(from_py_with = threads_int)] threads: Option<Int>,
        progress: Option<Py<PyAny>>,
        copies: &str,
    ) -> PyResult<Pairs<'py>> {
        let inner = &self.inner;
        let copies: crate::Copies = copies.parse()?;
        let found = run(py, self::threads(threads)?, progress, |c| read(inner).pairs(copies, c))?;
        Ok((pairs_array(py, found.pairs)?, PyArray1::from_vec(py, found.similarity)))
    }

    /// The dedup in the order added: `(keep, dropped, matched, similarity)`.
    #[pyo3(signature = (*, threads = None, progress = None))]
    #[allow(clippy::type_complexity)]
    fn dedup<'py>(
        &self,
        py: Python<'py>,
        #[pyo3(from_py_with = threads_int)] threads: Option<Int>,
        progress: Option<Py<PyAny>>,
    ) -> PyResult<(Bound<'py, PyArray1<bool>>, Bound<'py, PyArray1<u32>>, Bound<'py, PyArray1<u32>>, Bound<'py, PyArray1<f32>>)> {
        let inner = &self.inner;
        let (d, sims) = run(py, self::threads(threads)?, progress, |c| read(inner).dedup(c))?;
        Ok((PyArray1::from_vec(py, d.keep), PyArray1::from_vec(py, d.dropped), PyArray1::from_vec(py, d.matched), PyArray1::from_vec(py, sims)))
    }

    /// Clusters of the verified pairs: `(members, starts)`.
    #[pyo3(signature = (*, method = "connected", min_size = Int::Fits(2), threads = None, progress = None), text_signature = "($self, *, method='connected', min_size=2, threads=None, progress=None)")]
    fn clusters<'py>(
        &self,
        py: Python<'py>,
        method: &str,
        min_size: Int,
        #[pyo3(from_py_with = threads_int)] threads: Option<Int>,
        progress: Option<Py<PyAny>>,
    ) -> PyResult<Arrays2<'py, u32, u64>> {
        let method: ClusterMethod = method.parse()?;
        let min_size = min_size.range("min_size", 1, i64::MAX)? as usize;
        let inner = &self.inner;
        let (members, starts) = run(py, self::threads(threads)?, progress, |c| read(inner).clusters(method, min_size, c))?;
        Ok((PyArray1::from_vec(py, members), PyArray1::from_vec(py, starts)))
    }

    /// The candidates' `(mode, width, k)`.
    #[getter]
    fn candidates(&self) -> (String, usize, u32) {
        let c = read(&self.inner).opts().candidates;
        (c.shingling.mode().to_string(), c.shingling.width(), c.k)
    }

    /// Bytes held by the fingerprints and shingle sets.
    #[getter]
    fn nbytes(&self) -> usize {
        read(&self.inner).bytes()
    }

    fn __len__(&self) -> usize {
        read(&self.inner).len()
    }
}

/// The second pass of verified near-duplicates over a corpus in order.
#[pyclass(name = "StreamVerifier", module = "rsimhash._rsimhash", frozen)]
pub(crate) struct PyStreamVerifier {
    inner: RwLock<StreamVerifier>,
}

#[pymethods]
impl PyStreamVerifier {
    #[new]
    #[pyo3(signature = (threshold, *, measure = "jaccard", shingles = "words", width = None))]
    fn new(threshold: f64, measure: &str, shingles: &str, #[pyo3(from_py_with = width_arg)] width: Option<Int>) -> PyResult<Self> {
        // The candidates are given to `feed`; their settings are not used here.
        let opts = settings(threshold, measure, shingles, width, None)?;
        Ok(PyStreamVerifier { inner: RwLock::new(StreamVerifier::new(opts)) })
    }

    /// Documents `first..` with their candidate pairs (`higher << 32 |
    /// lower`, ascending) and each one's last later partner: the pairs that
    /// are alike, as `(higher, lower, similarity)`.
    #[pyo3(signature = (first, texts, pairs, last, *, links = None, threads = None))]
    #[allow(clippy::too_many_arguments, clippy::type_complexity)]
    fn feed<'py>(
        &self,
        py: Python<'py>,
        first: u64,
        texts: &Bound<'py, PyAny>,
        pairs: &Bound<'py, PyAny>,
        last: PyReadonlyArray1<'py, u32>,
        links: Option<PyReadonlyArray1<'py, u64>>,
        #[pyo3(from_py_with = threads_int)] threads: Option<Int>,
    ) -> PyResult<(Bound<'py, PyArray1<u64>>, Bound<'py, PyArray1<u64>>, Bound<'py, PyArray1<f32>>)> {
        let threads = self::threads(threads)?;
        let (mut held, mut arrow) = (None, None);
        let slices = text_slices(texts, &mut held, &mut arrow)?;
        let pairs = u64_array(pairs, "pairs")?.readonly();
        let owned;
        let pairs = match pairs.as_slice() {
            Ok(s) => s,
            Err(_) => {
                owned = pairs.as_array().to_vec();
                &owned[..]
            }
        };
        let last = last.as_slice().map_err(|_| PyTypeError::new_err("last must be a contiguous uint32 array"))?;
        let mut owned_links = Vec::new();
        let links: &[u64] = match &links {
            Some(l) => u64s(l, &mut owned_links),
            None => &[],
        };
        let inner = &self.inner;
        let found = run(py, threads, None, |c| write(inner).feed(first, &slices, pairs, last, links, c))?;
        let hi = found.iter().map(|&(p, _)| p >> 32).collect();
        let lo = found.iter().map(|&(p, _)| p & u64::from(u32::MAX)).collect();
        let sims = found.iter().map(|&(_, s)| s).collect();
        Ok((PyArray1::from_vec(py, hi), PyArray1::from_vec(py, lo), PyArray1::from_vec(py, sims)))
    }

    /// Documents held for later pairs and their set values: `(documents, values)`.
    #[getter]
    fn held(&self) -> (usize, usize) {
        read(&self.inner).held()
    }
}

/// The verified dedup of a stream of texts, a chunk at a time.
#[pyclass(name = "OnlineDedup", module = "rsimhash._rsimhash", frozen)]
pub(crate) struct PyOnlineDedup {
    inner: RwLock<OnlineDedup>,
}

#[pymethods]
impl PyOnlineDedup {
    #[new]
    #[pyo3(signature = (threshold, *, measure = "jaccard", shingles = "words", width = None, candidates = None))]
    fn new(
        threshold: f64,
        measure: &str,
        shingles: &str,
        #[pyo3(from_py_with = width_arg)] width: Option<Int>,
        candidates: Option<(String, Option<Int>, Int)>,
    ) -> PyResult<Self> {
        Ok(PyOnlineDedup { inner: RwLock::new(OnlineDedup::new(settings(threshold, measure, shingles, width, candidates)?)?) })
    }

    /// The next texts: `(keep, matched, similarity)`, `matched` the stream
    /// position of the earliest kept text each is alike (itself when kept).
    #[pyo3(signature = (texts, *, threads = None))]
    #[allow(clippy::type_complexity)]
    fn add<'py>(
        &self,
        py: Python<'py>,
        texts: &Bound<'py, PyAny>,
        #[pyo3(from_py_with = threads_int)] threads: Option<Int>,
    ) -> PyResult<(Bound<'py, PyArray1<bool>>, Bound<'py, PyArray1<u64>>, Bound<'py, PyArray1<f32>>)> {
        let threads = self::threads(threads)?;
        let (mut held, mut arrow) = (None, None);
        let slices = text_slices(texts, &mut held, &mut arrow)?;
        let inner = &self.inner;
        let c = run(py, threads, None, |c| write(inner).add_utf8(&slices, c))?;
        Ok((PyArray1::from_vec(py, c.keep), PyArray1::from_vec(py, c.matched), PyArray1::from_vec(py, c.similarity)))
    }

    /// Texts seen so far.
    #[getter]
    fn seen(&self) -> u64 {
        read(&self.inner).seen()
    }

    /// Bytes held by the kept texts' sets and the index of their fingerprints.
    #[getter]
    fn nbytes(&self) -> usize {
        read(&self.inner).bytes()
    }
}

/// Verified pairs of `n` documents, fed in order, folded into the dedup and the clusters.
#[pyclass(name = "PairSweep", module = "rsimhash._rsimhash", frozen)]
pub(crate) struct PyPairSweep {
    inner: std::sync::Mutex<Option<PairSweep>>,
}

impl PyPairSweep {
    fn take(&self) -> PyResult<PairSweep> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner()).take().ok_or_else(|| PyValueError::new_err("this PairSweep has given its answer already"))
    }
}

#[pymethods]
impl PyPairSweep {
    #[new]
    fn new(n: u64) -> PyResult<Self> {
        if n > u64::from(u32::MAX) {
            return Err(PyValueError::new_err(format!("at most 2^32 - 1 documents, got {n}")));
        }
        Ok(PyPairSweep { inner: std::sync::Mutex::new(Some(PairSweep::new(n as usize))) })
    }

    /// The next alike pairs, as `StreamVerifier.feed` returns them (later,
    /// earlier, similarity), without the links of copies, which come apart
    /// (`copy << 32 | first`): the documents they drop, `(dropped, matched, similarity)`.
    #[pyo3(signature = (higher, lower, similarity, links = None))]
    #[allow(clippy::type_complexity)]
    fn feed<'py>(
        &self,
        py: Python<'py>,
        higher: PyReadonlyArray1<'py, u64>,
        lower: PyReadonlyArray1<'py, u64>,
        similarity: PyReadonlyArray1<'py, f32>,
        links: Option<PyReadonlyArray1<'py, u64>>,
    ) -> PyResult<(Bound<'py, PyArray1<u32>>, Bound<'py, PyArray1<u32>>, Bound<'py, PyArray1<f32>>)> {
        let (hi, lo) = (higher.as_array(), lower.as_array());
        if hi.len() != lo.len() {
            return Err(PyValueError::new_err(format!("higher and lower differ in length: {} and {}", hi.len(), lo.len())));
        }
        if let Some((&h, &l)) = hi.iter().zip(lo.iter()).find(|(&h, &l)| h > u64::from(u32::MAX) || l > u64::from(u32::MAX)) {
            return Err(PyValueError::new_err(format!("document numbers must be below 2^32, got ({h}, {l})")));
        }
        let pairs: Vec<u64> = hi.iter().zip(lo.iter()).map(|(&h, &l)| h << 32 | l).collect();
        let sims = similarity.as_array().to_vec();
        let mut guard = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        let sweep = guard.as_mut().ok_or_else(|| PyValueError::new_err("this PairSweep has given its answer already"))?;
        let mut owned_links = Vec::new();
        let links: &[u64] = match &links {
            Some(l) => u64s(l, &mut owned_links),
            None => &[],
        };
        let (dropped, matched, sims) = sweep.feed(&pairs, &sims, links)?;
        Ok((PyArray1::from_slice(py, dropped), PyArray1::from_slice(py, matched), PyArray1::from_slice(py, sims)))
    }

    /// `(keep, dropped, matched, similarity)`; ends the sweep.
    #[allow(clippy::type_complexity)]
    fn dedup<'py>(
        &self,
        py: Python<'py>,
    ) -> PyResult<(Bound<'py, PyArray1<bool>>, Bound<'py, PyArray1<u32>>, Bound<'py, PyArray1<u32>>, Bound<'py, PyArray1<f32>>)> {
        let (d, sims) = self.take()?.dedup();
        Ok((PyArray1::from_vec(py, d.keep), PyArray1::from_vec(py, d.dropped), PyArray1::from_vec(py, d.matched), PyArray1::from_vec(py, sims)))
    }

    /// Clusters as `(members, starts)`; ends the sweep.
    #[pyo3(signature = (*, method = "connected", min_size = Int::Fits(2)), text_signature = "($self, *, method='connected', min_size=2)")]
    fn clusters<'py>(&self, py: Python<'py>, method: &str, min_size: Int) -> PyResult<Arrays2<'py, u32, u64>> {
        let method: ClusterMethod = method.parse()?;
        let min_size = min_size.range("min_size", 1, i64::MAX)? as usize;
        let (members, starts) = self.take()?.clusters(method, min_size)?;
        Ok((PyArray1::from_vec(py, members), PyArray1::from_vec(py, starts)))
    }
}

/// What `candidates="auto"` picks for a threshold: `(mode, width, k)`.
#[pyfunction]
fn auto_candidates(threshold: f64) -> PyResult<(String, usize, u32)> {
    let c = Candidates::auto(threshold)?;
    Ok((c.shingling.mode().to_string(), c.shingling.width(), c.k))
}

/// The shingle sets of texts, one flat array: `(offsets, hashes)`, set `i`
/// being `hashes[offsets[i]:offsets[i + 1]]` (ascending, distinct).
#[pyfunction]
#[pyo3(signature = (texts, *, mode = "words", width = None, threads = None))]
fn shingle_sets<'py>(
    py: Python<'py>,
    texts: &Bound<'py, PyAny>,
    mode: &str,
    #[pyo3(from_py_with = width_arg)] width: Option<Int>,
    #[pyo3(from_py_with = threads_int)] threads: Option<Int>,
) -> PyResult<Arrays2<'py, i64, u64>> {
    let (set, threads) = (shingling(mode, width)?, self::threads(threads)?);
    let (mut held, mut arrow) = (None, None);
    let slices = text_slices(texts, &mut held, &mut arrow)?;
    let (offsets, hashes) = detach::run(py, threads, || {
        use rayon::prelude::*;
        let sets: Vec<Vec<u64>> = slices
            .par_iter()
            .enumerate()
            .map_init(
                || Fingerprinter::new(set),
                |f, (index, bytes)| {
                    let text = std::str::from_utf8(bytes).map_err(|e| crate::Error::InvalidUtf8 { index, valid_up_to: e.valid_up_to() })?;
                    Ok(f.shingle_set(text, set).to_vec())
                },
            )
            .collect::<crate::Result<_>>()?;
        let mut offsets = Vec::with_capacity(sets.len() + 1);
        offsets.push(0i64);
        for s in &sets {
            offsets.push(offsets[offsets.len() - 1] + s.len() as i64);
        }
        Ok((offsets, sets.concat()))
    })?;
    Ok((PyArray1::from_vec(py, offsets), PyArray1::from_vec(py, hashes)))
}

/// The similarity of each pair (`pairs`: a flat uint64 array of set numbers,
/// two a pair) over sets given as `shingle_sets` returns them.
#[pyfunction]
#[pyo3(signature = (offsets, hashes, pairs, *, measure = "jaccard"))]
fn pair_similarity<'py>(
    py: Python<'py>,
    offsets: PyReadonlyArray1<'py, i64>,
    hashes: &Bound<'py, PyAny>,
    pairs: PyReadonlyArray1<'py, u64>,
    measure: &str,
) -> PyResult<Bound<'py, PyArray1<f64>>> {
    let measure: Measure = measure.parse()?;
    let hashes = u64_array(hashes, "hashes")?.readonly();
    let (offsets, hashes, pairs) = (offsets.as_slice()?, hashes.as_slice()?, pairs.as_slice()?);
    if offsets.first() != Some(&0) || offsets.windows(2).any(|w| w[1] < w[0]) || offsets.last().is_some_and(|&e| e as usize != hashes.len()) {
        return Err(PyValueError::new_err("offsets must ascend from 0 to len(hashes)"));
    }
    let sets = offsets.len() - 1;
    if pairs.len() % 2 != 0 {
        return Err(PyValueError::new_err("pairs must hold two set numbers a pair"));
    }
    if let Some(&bad) = pairs.iter().find(|&&p| p as usize >= sets) {
        return Err(PyValueError::new_err(format!("pairs name set {bad}, but there are {sets} sets")));
    }
    let set = |i: u64| &hashes[offsets[i as usize] as usize..offsets[i as usize + 1] as usize];
    let out = detach::run(py, None, || {
        use rayon::prelude::*;
        Ok(pairs.par_chunks(2).map(|p| similar::similarity(set(p[0]), set(p[1]), measure)).collect())
    })?;
    Ok(PyArray1::from_vec(py, out))
}
