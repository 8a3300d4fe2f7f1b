//! Fingerprint functions: `fnv1a64`, `compute`, `fingerprint`,
//! `fingerprints`, `fingerprint_weighted` and the array kernel of `hamming`.

use numpy::{PyArray1, PyArrayMethods, PyReadonlyArray1};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;

use super::convert::{feature_bytes, iterate, reject_text, threads_arg, threads_int, to_u64, type_name, u64_array, u64_values, width_arg, Int};
use super::detach;
use super::text::Utf8Texts;
use crate::{Mode, Shingling};

/// Texts above this size are fingerprinted with the GIL released.
const DETACH_BYTES: usize = 1 << 14;

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(fnv1a64, m)?)?;
    m.add_function(wrap_pyfunction!(compute, m)?)?;
    m.add_function(wrap_pyfunction!(fingerprint, m)?)?;
    m.add_function(wrap_pyfunction!(fingerprints, m)?)?;
    m.add_function(wrap_pyfunction!(fingerprints_arrow, m)?)?;
    m.add_function(wrap_pyfunction!(fingerprint_weighted, m)?)?;
    m.add_function(wrap_pyfunction!(hamming_arrays, m)?)?;
    m.add_function(wrap_pyfunction!(fnv1a64_texts, m)?)?;
    Ok(())
}

/// The most a `width=` may be: a shingle wider than any text is no feature.
const MAX_WIDTH: i64 = i32::MAX as i64;

pub(crate) fn shingling(mode: &str, width: Option<Int>) -> PyResult<Shingling> {
    let mode: Mode = mode.parse()?;
    let width = Int::range_opt(width.as_ref(), "width", 1, MAX_WIDTH)?.map(|w| w as usize);
    Ok(Shingling::new(mode, width)?)
}

pub(crate) fn threads(threads: Option<Int>) -> PyResult<Option<usize>> {
    threads_arg(threads.as_ref())
}

/// FNV-1a 64 of ``data`` (a str is hashed as UTF-8).
///
/// Raises ``ValueError`` for a str holding a lone surrogate and ``TypeError``
/// for anything else than str or bytes.
///
/// >>> rsimhash.fnv1a64("a")
/// 12638187200555641996
/// >>> rsimhash.fnv1a64("a") == rsimhash.fnv1a64(b"a")
/// True
/// >>> hex(rsimhash.fnv1a64(b""))  # the FNV offset basis
/// '0xcbf29ce484222325'
#[pyfunction]
fn fnv1a64(data: &Bound<'_, PyAny>) -> PyResult<u64> {
    match feature_bytes(data, || "data".into())? {
        Some(bytes) => Ok(crate::fnv1a64(&bytes)),
        None => Err(PyTypeError::new_err(format!("data must be str or bytes, got {}", type_name(data)))),
    }
}

/// Unweighted simhash of feature hashes (SPEC v1 ``compute``): bit ``j`` is
/// set iff more hashes have bit ``j`` set than clear. No hashes give 0.
///
/// ``hashes`` is a sequence of ints in ``0..2**64-1`` or a 1-D ``uint64`` array.
///
/// >>> bin(rsimhash.compute([0b1100, 0b1010, 0b1001]))  # bit 3 in all three, bits 0-2 in one each
/// '0b1000'
/// >>> rsimhash.compute([rsimhash.fnv1a64(w) for w in "a bag of words".split()])
/// 590288262392783240
/// >>> rsimhash.compute([])
/// 0
#[pyfunction]
fn compute(py: Python<'_>, hashes: &Bound<'_, PyAny>) -> PyResult<u64> {
    let values = u64_values(hashes, "hashes")?;
    detach::run(py, None, move || Ok(crate::compute(&values)))
}

/// SPEC v1 fingerprint of one text.
///
/// ``mode="words"`` shingles tokens (width default 3); ``mode="chars"`` takes
/// windows of code points of the normalized text (width default 4). Case,
/// punctuation and spacing do not count in either mode.
///
/// >>> rsimhash.fingerprint("The quick brown fox")
/// 801640746765152521
/// >>> rsimhash.fingerprint("the QUICK, brown  fox!")
/// 801640746765152521
/// >>> rsimhash.fingerprint("The quick brown fox", mode="chars")
/// 7597028271780175128
///
/// A copy with a few words more is a few bits away (more for short texts):
///
/// >>> text = "The city council voted on Tuesday to approve a new budget for the schools and the roads."
/// >>> rsimhash.hamming(rsimhash.fingerprint(text), rsimhash.fingerprint("Updated 09:41. " + text))
/// 6
#[pyfunction]
#[pyo3(signature = (text, *, mode = "words", width = None))]
fn fingerprint(py: Python<'_>, text: &Bound<'_, PyAny>, mode: &str, #[pyo3(from_py_with = width_arg)] width: Option<Int>) -> PyResult<u64> {
    let shingling = shingling(mode, width)?;
    let mut texts = Utf8Texts::with_capacity(1);
    texts.push(text.clone(), || "text".into())?;
    let slices = texts.slices();
    let bytes = slices[0];
    let run = move || match std::str::from_utf8(bytes) {
        Ok(t) => Ok(crate::fingerprint(t, shingling)),
        Err(e) => Err(crate::Error::InvalidUtf8 { index: 0, valid_up_to: e.valid_up_to() }),
    };
    if bytes.len() < DETACH_BYTES {
        return Ok(run()?);
    }
    detach::run(py, None, run)
}

#[pyfunction]
#[pyo3(signature = (texts, *, mode = "words", width = None, threads = None))]
fn fingerprints<'py>(
    py: Python<'py>,
    texts: &Bound<'py, PyAny>,
    mode: &str,
    #[pyo3(from_py_with = width_arg)] width: Option<Int>,
    #[pyo3(from_py_with = threads_int)] threads: Option<Int>,
) -> PyResult<Bound<'py, PyArray1<u64>>> {
    let options = (shingling(mode, width)?, self::threads(threads)?);
    fingerprint_slices(py, &collect_texts(texts)?.slices(), options)
}

/// The UTF-8 of every str of `texts` (a sequence or iterable), in place.
pub(crate) fn collect_texts<'py>(texts: &Bound<'py, PyAny>) -> PyResult<Utf8Texts<'py>> {
    let expected = "a list (or other sequence or iterable) of str";
    reject_text(texts, "texts", expected)?;
    let mut utf8 = Utf8Texts::with_capacity(texts.len().unwrap_or(0));
    for (i, item) in iterate(texts, "texts", expected)?.enumerate() {
        utf8.push(item?, || format!("texts[{i}]"))?;
    }
    Ok(utf8)
}

/// The batch fingerprints of texts as UTF-8 slices, without the GIL.
fn fingerprint_slices<'py>(py: Python<'py>, slices: &[&[u8]], (shingling, threads): (Shingling, Option<usize>)) -> PyResult<Bound<'py, PyArray1<u64>>> {
    let fps = detach::run(py, threads, || crate::fingerprint::fingerprints_utf8(slices, shingling))?;
    Ok(PyArray1::from_vec(py, fps))
}

/// Fingerprints of an Arrow string column given as its offsets (int64, one
/// more than the number of texts) and data buffer (uint8), read in place.
#[pyfunction]
#[pyo3(signature = (offsets, data, *, mode = "words", width = None, threads = None))]
fn fingerprints_arrow<'py>(
    py: Python<'py>,
    offsets: PyReadonlyArray1<'py, i64>,
    data: PyReadonlyArray1<'py, u8>,
    mode: &str,
    #[pyo3(from_py_with = width_arg)] width: Option<Int>,
    #[pyo3(from_py_with = threads_int)] threads: Option<Int>,
) -> PyResult<Bound<'py, PyArray1<u64>>> {
    let options = (shingling(mode, width)?, self::threads(threads)?);
    fingerprint_slices(py, &arrow_slices(offsets.as_slice()?, data.as_slice()?)?, options)
}

/// The texts of an Arrow string column: its offsets (int64, one more than
/// the number of texts) and data buffer, checked to agree.
pub(crate) fn arrow_slices<'a>(offsets: &[i64], data: &'a [u8]) -> PyResult<Vec<&'a [u8]>> {
    let mut slices = Vec::with_capacity(offsets.len().saturating_sub(1));
    for (i, pair) in offsets.windows(2).enumerate() {
        let (start, end) = (pair[0], pair[1]);
        if start < 0 || end < start || end as u64 > data.len() as u64 {
            return Err(PyValueError::new_err(format!("corrupt Arrow string array: text {i} spans bytes {start}..{end} of a {}-byte buffer", data.len())));
        }
        slices.push(&data[start as usize..end as usize]);
    }
    Ok(slices)
}

/// Weighted simhash: str/bytes features are hashed with FNV-1a 64, ints are
/// taken as hashes; weights are finite floats (negative and zero allowed).
/// Bit ``j`` is set iff the weights of the features with bit ``j`` set sum
/// to more than those with it clear.
///
/// >>> rsimhash.fingerprint_weighted([("rust", 2.0), ("python", 1.0)]) == rsimhash.fnv1a64("rust")
/// True
/// >>> rsimhash.fingerprint_weighted([("rust", 2.0), (b"\x00\x01", 0.5), (0xDEADBEEF, -1.0)])
/// 13834740431434729255
#[pyfunction]
fn fingerprint_weighted(py: Python<'_>, features: &Bound<'_, PyAny>) -> PyResult<u64> {
    let expected = "an iterable of (feature, weight) pairs";
    reject_text(features, "features", expected)?;
    let mut pairs: Vec<(u64, f64)> = Vec::with_capacity(features.len().unwrap_or(0));
    for (i, item) in iterate(features, "features", expected)?.enumerate() {
        let item = item?;
        let (feature, weight): (Bound<'_, PyAny>, Bound<'_, PyAny>) =
            item.extract().map_err(|_| PyTypeError::new_err(format!("features[{i}] must be a (feature, weight) pair, got {}", type_name(&item))))?;
        let hash = match feature_bytes(&feature, || format!("features[{i}][0]"))? {
            Some(bytes) => crate::fnv1a64(&bytes),
            None if feature.cast::<pyo3::types::PyInt>().is_ok() => to_u64(&feature, || format!("features[{i}][0]"))?,
            None => return Err(PyTypeError::new_err(format!("features[{i}][0] must be str, bytes or an int hash, got {}", type_name(&feature)))),
        };
        let weight: f64 =
            weight.extract().map_err(|_| PyTypeError::new_err(format!("features[{i}][1] (the weight) must be a float, got {}", type_name(&weight))))?;
        pairs.push((hash, weight));
    }
    detach::run(py, None, move || crate::compute_weighted(pairs))
}

/// FNV-1a 64 of each text's UTF-8, on the rayon pool: the plain loop over
/// every byte that `benches/bench_fingerprint.py` measures fingerprints
/// against (the same texts, collected the same way, on the same cores).
#[pyfunction]
#[pyo3(name = "_fnv1a64_texts", signature = (texts, *, threads = None))]
fn fnv1a64_texts<'py>(
    py: Python<'py>,
    texts: &Bound<'py, PyAny>,
    #[pyo3(from_py_with = threads_int)] threads: Option<Int>,
) -> PyResult<Bound<'py, PyArray1<u64>>> {
    use rayon::prelude::*;

    let threads = self::threads(threads)?;
    let utf8 = collect_texts(texts)?;
    let slices = utf8.slices();
    let hashes = detach::run(py, threads, || Ok(slices.par_iter().with_min_len(16).map(|s| crate::fnv1a64(s)).collect()))?;
    Ok(PyArray1::from_vec(py, hashes))
}

/// Popcount of `a ^ b` over two equal-length 1-D uint64 arrays.
#[pyfunction]
fn hamming_arrays<'py>(py: Python<'py>, a: &Bound<'py, PyAny>, b: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyArray1<u8>>> {
    let (a, b) = (u64_array(a, "a")?, u64_array(b, "b")?);
    let (a, b) = (a.readonly(), b.readonly());
    let (a, b) = (a.as_slice()?, b.as_slice()?);
    if a.len() != b.len() {
        return Err(PyValueError::new_err(format!("a and b differ in length: {} and {}", a.len(), b.len())));
    }
    let out = detach::run(py, None, || Ok(a.iter().zip(b).map(|(x, y)| crate::hamming(*x, *y) as u8).collect()))?;
    Ok(PyArray1::from_vec(py, out))
}
