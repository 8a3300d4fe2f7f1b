//! The `Index` class: a frozen wrapper around `RwLock<Index>`. Queries share
//! the read lock, changes take the write lock, both with the GIL released
//! (inside [`detach::run`]). Two exceptions keep the GIL: `query` tries the
//! read lock without waiting (and waits only detached), and `len`, `k` and
//! `info` take it attached (`peek`): during a long `add` they wait for it
//! holding the GIL, which stalls other Python threads but cannot deadlock
//! (a change never needs the GIL).
//!
//! Ids are ints or strings ([`super::keys`]): string ids go to the core's
//! name table, and what comes back is turned into them under the lock.

use std::sync::RwLock;

use numpy::PyArray1;
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString, PyType};
use std::path::PathBuf;

use super::convert::{named_int, named_int_opt, to_u64, type_name, Int, U64s};
use super::detach;
use super::keys::{names_array, IdsArg, Keyed};
use crate::batch::{Copies, COPIES_NOTICE};
use crate::index::{ClusterMethod, Index, Keys, Metadata};
use crate::tables::table::Layout;

type NewAndMatched<'py> = (Bound<'py, PyArray1<bool>>, Bound<'py, PyAny>);

/// `ids` as the user knows them (see [`Keyed`]).
fn keyed(index: &Index, ids: Vec<u64>) -> crate::Result<Keyed> {
    Keyed::of(index.keys(), ids, |ids| index.names_of(ids))
}

/// `(id, distance)` matches as the user knows the ids.
enum Found {
    Ints(Vec<(u64, u32)>),
    Names(Vec<(std::sync::Arc<str>, u32)>),
}

fn found(index: &Index, fp: u64, k: Option<u32>) -> crate::Result<Found> {
    let matches = index.query(fp, k)?;
    if index.keys() != Keys::Strings {
        return Ok(Found::Ints(matches));
    }
    let ids: Vec<u64> = matches.iter().map(|m| m.0).collect();
    Ok(Found::Names(index.names_of(&ids)?.into_iter().zip(matches).map(|(n, (_, d))| (n, d)).collect()))
}

/// Every stored fingerprint within ``k`` bits of a query, exactly.
///
/// Permuted sorted tables after Manku, Jain and Das Sarma (WWW 2007): the
/// table design is chosen for the index's size by a cost model unless
/// ``blocks`` (one level of that many blocks, ``C(blocks, k)`` tables) or
/// ``tables`` (a design with that many tables) fixes it. Queries share a
/// read lock and adds take a write lock; heavy work runs without the GIL.
/// ``len(index)`` is the number of stored ``(id, fingerprint)`` items.
///
/// Ids are non-negative ints (``uint64``), or strings: an index is keyed
/// by the kind its first add that stores anything gives (ints when no
/// ``ids=``), for good and in its saved file. Keyed by strings, every
/// ``add`` and ``add_unique`` must give string ids, and every method that
/// returns ids returns the strings: a numpy object array of ``str`` where
/// an int-keyed index returns a ``uint64`` array, ``str`` in ``query``'s
/// tuples. Items then have internal ids counted up as default ids are, in
/// the order they were added: "sorted by id" and "smallest id" mean first
/// added. Ids of the other kind are a ``TypeError`` naming what the index
/// is keyed by. Int ids come back exactly as before, as fast.
///
/// >>> index = rsimhash.Index(k=3)
/// >>> index.add(np.array([0, 0b111, 0xFF00, 0xFF01], dtype=np.uint64)).tolist()
/// [0, 1, 2, 3]
/// >>> index.query(0b1)  # (id, distance)
/// [(0, 1), (1, 2)]
/// >>> index.find_all().tolist()
/// [[0, 1], [2, 3]]
/// >>> len(index)
/// 4
/// >>> docs = rsimhash.Index(k=3)
/// >>> docs.add([0, 0b111, 0xFF00], ids=["intro", "intro-v2", "faq"]).tolist()
/// ['intro', 'intro-v2', 'faq']
/// >>> docs.query(0b1), docs.find_all().tolist()
/// ([('intro', 1), ('intro-v2', 2)], [['intro', 'intro-v2']])
/// >>> docs.add([5])
/// Traceback (most recent call last):
/// ...
/// TypeError: ids must be given, as strings: this index is keyed by strings (its first add gave strings), got none
#[pyclass(frozen, name = "Index", module = "rsimhash._rsimhash")]
pub(crate) struct PyIndex {
    inner: RwLock<Index>,
}

// A write that unwound midway (a large buffer refused: MemoryError, or a
// bug: RuntimeError) may have left the index without some of its items: the
// lock is then poisoned, and the operations below refuse it (an unwind that
// `detach::run` turns into a ValueError) rather than answer from it. The
// figures of `len`, `info` and the like still read it (`peek`).
fn read(index: &RwLock<Index>) -> std::sync::RwLockReadGuard<'_, Index> {
    index.read().unwrap_or_else(|_| detach::incomplete())
}

fn write(index: &RwLock<Index>) -> std::sync::RwLockWriteGuard<'_, Index> {
    index.write().unwrap_or_else(|_| detach::incomplete())
}

fn peek(index: &RwLock<Index>) -> std::sync::RwLockReadGuard<'_, Index> {
    index.read().unwrap_or_else(|e| e.into_inner())
}

/// An optional int argument in `0..=hi` (any Python int: a huge one is a
/// `ValueError` naming the range, not an `OverflowError`).
fn small(name: &str, value: Option<Int>, hi: i64) -> PyResult<Option<u32>> {
    Ok(Int::range_opt(value.as_ref(), name, 0, hi)?.map(|v| v as u32))
}

/// An operation's `k`: any value up to `u32::MAX` goes to the core, which
/// says it must be at most the index's own; beyond, the range of any index.
fn op_k(value: Option<Int>) -> PyResult<Option<u32>> {
    match value {
        Some(Int::Fits(v)) if (0..=i64::from(u32::MAX)).contains(&v) => Ok(Some(v as u32)),
        other => small("k", other, K_MAX),
    }
}

// Arguments whose TypeError names them (see `named_int`).
fn k_arg(obj: &Bound<'_, PyAny>) -> PyResult<Int> {
    named_int(obj, "k")
}

fn opt_k_arg(obj: &Bound<'_, PyAny>) -> PyResult<Option<Int>> {
    named_int_opt(obj, "k")
}

fn blocks_arg(obj: &Bound<'_, PyAny>) -> PyResult<Option<Int>> {
    named_int_opt(obj, "blocks")
}

fn tables_arg(obj: &Bound<'_, PyAny>) -> PyResult<Option<Int>> {
    named_int_opt(obj, "tables")
}

fn block_bytes_arg(obj: &Bound<'_, PyAny>) -> PyResult<Int> {
    named_int(obj, "block_bytes")
}

fn min_size_arg(obj: &Bound<'_, PyAny>) -> PyResult<Int> {
    named_int(obj, "min_size")
}

/// The largest `k` and block count of a design; table counts are checked
/// further by the planner.
const K_MAX: i64 = crate::tables::plan::MAX_K as i64;
const BLOCKS_MAX: i64 = 64;
const TABLES_MAX: i64 = 1 << 20;

#[pymethods]
impl PyIndex {
    #[new]
    #[pyo3(signature = (k = Int::Fits(3), *, blocks = None, tables = None, compress = true, block_bytes = Int::Fits(1024)), text_signature = "(k=3, *, blocks=None, tables=None, compress=True, block_bytes=1024)")]
    fn new(
        #[pyo3(from_py_with = k_arg)] k: Int,
        #[pyo3(from_py_with = blocks_arg)] blocks: Option<Int>,
        #[pyo3(from_py_with = tables_arg)] tables: Option<Int>,
        compress: bool,
        #[pyo3(from_py_with = block_bytes_arg)] block_bytes: Int,
    ) -> PyResult<Self> {
        let k = small("k", Some(k), K_MAX)?.unwrap_or(3);
        let blocks = small("blocks", blocks, BLOCKS_MAX)?;
        let tables = small("tables", tables, TABLES_MAX)?.map(|t| t as usize);
        let block_bytes =
            block_bytes.range("block_bytes", crate::tables::codec::MIN_BLOCK_BYTES as i64, crate::tables::codec::MAX_BLOCK_BYTES as i64)? as usize;
        let mut index = Index::new(k, blocks, tables)?;
        index.set_layout(if compress { Layout::Packed(block_bytes) } else { Layout::Raw })?;
        Ok(PyIndex { inner: RwLock::new(index) })
    }

    /// Reads an index file written by ``save``; every checksum is verified first.
    ///
    /// With ``mmap`` the compressed tables are used in place from a read-only
    /// mapping of the file. Raises ``ValueError`` naming the problem for a
    /// damaged, truncated or foreign file, and ``OSError`` when it cannot be read.
    /// A loaded index answers as the saved one did and can take more ``add`` calls.
    ///
    /// A mapped file must not change while the index uses it. ``save`` (here
    /// or in another process) replaces a file atomically, which is safe: the
    /// index goes on reading the file it mapped. Another program writing
    /// into the file in place, or truncating it, is not: the index then
    /// raises ``ValueError("index file changed or damaged while in use: ...")``
    /// from the first operation that reads the changed bytes (never a crash,
    /// never an answer read from them once they are found), and
    /// ``Index.verify()`` re-checks every checksum on demand. Load with
    /// ``mmap=False`` to read the file into memory instead.
    ///
    /// >>> import os, tempfile
    /// >>> index = rsimhash.Index(k=3)
    /// >>> index.add([0, 0b111, 0xFF00]).tolist()
    /// [0, 1, 2]
    /// >>> with tempfile.TemporaryDirectory() as tmp:
    /// ...     index.save(os.path.join(tmp, "corpus.rsh"))
    /// ...     loaded = rsimhash.Index.load(os.path.join(tmp, "corpus.rsh"), mmap=False)
    /// >>> len(loaded), loaded.k, loaded.query(0b1)
    /// (3, 3, [(0, 1), (1, 2)])
    #[classmethod]
    #[pyo3(signature = (path, *, mmap = true))]
    fn load(_cls: &Bound<'_, PyType>, py: Python<'_>, path: PathBuf, mmap: bool) -> PyResult<Self> {
        let index = detach::run(py, None, || Index::load(&path, mmap))?;
        Ok(PyIndex { inner: RwLock::new(index) })
    }

    /// Writes the index atomically: a crash mid-save leaves the old file intact.
    ///
    /// The file is written under a temporary name beside ``path``, synced and
    /// renamed over ``path``; ``Index.load`` reads it back.
    ///
    /// >>> import os, tempfile
    /// >>> index = rsimhash.Index(k=3)
    /// >>> index.add([0, 0b111]).tolist()
    /// [0, 1]
    /// >>> with tempfile.TemporaryDirectory() as tmp:
    /// ...     index.save(os.path.join(tmp, "corpus.rsh"))
    /// ...     os.listdir(tmp)
    /// ['corpus.rsh']
    fn save(&self, py: Python<'_>, path: PathBuf) -> PyResult<()> {
        detach::run(py, None, || read(&self.inner).save(&path))
    }

    /// Whether the tables are stored compressed (Huffman-coded XOR deltas).
    ///
    /// >>> rsimhash.Index().compressed, rsimhash.Index(compress=False).compressed
    /// (True, False)
    #[getter]
    fn compressed(&self) -> bool {
        matches!(peek(&self.inner).layout(), Layout::Packed(_))
    }

    /// Counts, sizes and versions: items, k, tables, design, compressed, bytes per item per table, ...
    ///
    /// >>> index = rsimhash.Index(k=3)
    /// >>> index.add([0, 0b111, 0xFF00]).tolist()
    /// [0, 1, 2]
    /// >>> info = index.info()
    /// >>> info["items"], info["k"], info["tables"], info["compressed"]
    /// (3, 3, 4, True)
    /// >>> info["spec_version"], info["format_version"], info["keys"]
    /// (1, 1, 'int')
    ///
    /// ``keys``: ``"int"`` or ``"str"``, what the index is keyed by
    /// (``None`` until an add stores something); ``format_version``: that
    /// of the file ``save`` writes (2 for an index keyed by strings).
    fn info<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let index = peek(&self.inner);
        let (runs, buffered) = index.shape();
        let table_bytes = index.table_bytes();
        let tables = index.design().tables().len();
        let items = index.len();
        let d = PyDict::new(py);
        d.set_item("items", items)?;
        d.set_item("k", index.k())?;
        d.set_item("tables", tables)?;
        d.set_item("design", index.design().to_string())?;
        d.set_item("compressed", matches!(index.layout(), Layout::Packed(_)))?;
        d.set_item(
            "block_bytes",
            match index.layout() {
                Layout::Packed(b) => Some(b),
                Layout::Raw => None,
            },
        )?;
        d.set_item("runs", runs)?;
        d.set_item("buffered", buffered)?;
        d.set_item("nbytes", index.bytes())?;
        d.set_item("table_bytes", table_bytes)?;
        // Per item per table of the runs (the buffer has no tables).
        let stored = (items - buffered) as f64;
        let per = if stored == 0.0 { 0.0 } else { table_bytes as f64 / (tables as f64 * stored) };
        d.set_item("table_bytes_per_item_per_table", per)?;
        d.set_item("spec_version", crate::SPEC_VERSION)?;
        // The version its file has (2 keyed by strings, else 1).
        d.set_item("format_version", index.format_version())?;
        d.set_item(
            "keys",
            match index.keys() {
                Keys::Undecided => None,
                Keys::Ints => Some("int"),
                Keys::Strings => Some("str"),
            },
        )?;
        Ok(d)
    }

    /// The largest distance answered completely.
    ///
    /// >>> rsimhash.Index(k=5).k
    /// 5
    #[getter]
    fn k(&self) -> u32 {
        peek(&self.inner).k()
    }

    /// Permuted tables held per item.
    ///
    /// >>> rsimhash.Index(k=3, blocks=6).tables  # C(6, 3)
    /// 20
    #[getter]
    fn tables(&self) -> usize {
        peek(&self.inner).design().tables().len()
    }

    /// The table design in words, e.g. ``"10 tables, blocks 5, 25-26 leading bits, k=3"``.
    ///
    /// >>> rsimhash.Index(k=3, blocks=5).design
    /// '10 tables, blocks 5, 25-26 leading bits, k=3'
    #[getter]
    fn design(&self) -> String {
        peek(&self.inner).design().to_string()
    }

    /// Bytes of memory held by the tables and ids.
    ///
    /// >>> index = rsimhash.Index()
    /// >>> index.nbytes
    /// 0
    /// >>> index.add([0, 0b111, 0xFF00, 0xFF01]).tolist()
    /// [0, 1, 2, 3]
    /// >>> index.nbytes
    /// 64
    #[getter]
    fn nbytes(&self) -> usize {
        peek(&self.inner).bytes()
    }

    /// The index's metadata: your own ``str`` keys and values, saved in its file.
    ///
    /// Empty until set; ``save`` writes it into the file (two sections that
    /// change no answer, so the format version stays what the ids make it)
    /// and ``load`` reads it back. Reading gives a new ``dict``: assign a
    /// whole ``dict`` to change it. ``rsimhash index build`` records how it
    /// made the fingerprints here (``{"mode": "words", "width": "3"}``, or
    /// ``{"mode": "hashes"}`` from a hash TSV), so that texts are
    /// fingerprinted the same way later. Raises ``TypeError`` for anything
    /// but a ``dict`` of ``str`` to ``str``.
    ///
    /// >>> index = rsimhash.Index(k=3)
    /// >>> index.metadata
    /// {}
    /// >>> index.metadata = {"mode": "words", "width": "3"}
    /// >>> index.metadata["width"]
    /// '3'
    #[getter]
    fn metadata<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
        for (key, value) in peek(&self.inner).metadata() {
            d.set_item(key, value)?;
        }
        Ok(d)
    }

    #[setter]
    fn set_metadata(&self, py: Python<'_>, value: &Bound<'_, PyAny>) -> PyResult<()> {
        let wrong = |what: String| PyTypeError::new_err(format!("metadata must be a dict of str keys and str values, got {what}"));
        let d = value.cast::<PyDict>().map_err(|_| wrong(type_name(value)))?;
        let text = |obj: &Bound<'_, PyAny>, what: &str| -> PyResult<String> {
            let s = obj.cast::<PyString>().map_err(|_| wrong(format!("a {what} of type {}", type_name(obj))))?;
            s.to_cow()
                .map(std::borrow::Cow::into_owned)
                .map_err(|_| pyo3::exceptions::PyValueError::new_err(format!("metadata {what} {obj} cannot be encoded as UTF-8 (it holds a lone surrogate)")))
        };
        let mut meta = Metadata::new();
        for (key, val) in d.iter() {
            meta.insert(text(&key, "key")?, text(&val, "value")?);
        }
        detach::run(py, None, move || {
            write(&self.inner).set_metadata(meta);
            Ok(())
        })
    }

    /// ``(fps, ids)``: every stored item's fingerprint and id, in the order of their ids.
    ///
    /// Two arrays of ``len(index)``: the fingerprints (``uint64``) and the
    /// ids (``uint64``, or object of ``str`` for an index keyed by strings,
    /// in the order they were added).
    ///
    /// >>> index = rsimhash.Index(k=3)
    /// >>> index.add([0xFF00, 0b111], ids=["b", "a"]).tolist()
    /// ['b', 'a']
    /// >>> fps, ids = index.items()
    /// >>> fps.tolist(), ids.tolist()
    /// ([65280, 7], ['b', 'a'])
    fn items<'py>(&self, py: Python<'py>) -> PyResult<(Bound<'py, PyArray1<u64>>, Bound<'py, PyAny>)> {
        let (fps, ids) = detach::run(py, None, || {
            let index = read(&self.inner);
            let (fps, ids) = index.items_by_id();
            let ids = keyed(&index, ids)?;
            index.intact((fps, ids))
        })?;
        Ok((PyArray1::from_vec(py, fps), ids.array(py)))
    }

    fn __len__(&self) -> usize {
        peek(&self.inner).len()
    }

    fn __repr__(&self) -> String {
        let index = peek(&self.inner);
        let (runs, buffered) = index.shape();
        format!(
            "Index(k={}, items={}, design=\"{}\", compressed={}, runs={runs}, buffered={buffered})",
            index.k(),
            index.len(),
            index.design(),
            if matches!(index.layout(), Layout::Packed(_)) { "True" } else { "False" }
        )
    }

    /// Stores fingerprints and returns their ids (default: consecutive after the largest id so far).
    ///
    /// ``fps``: an int or a 1-D ``uint64`` array (or a sequence of ints);
    /// ``ids``: one id per fingerprint, a ``uint64`` id or a string (see
    /// the class). One fingerprint may carry many ids; an id given twice,
    /// or already stored, raises ``ValueError``. Returns a ``uint64``
    /// array, or an object array of the string ids given.
    ///
    /// >>> index = rsimhash.Index(k=3)
    /// >>> index.add(np.array([0, 0b111], dtype=np.uint64)).tolist()
    /// [0, 1]
    /// >>> index.add(0xFF00).tolist()
    /// [2]
    /// >>> index.add([0xFF01, 0xFF01], ids=[100, 101]).tolist()
    /// [100, 101]
    /// >>> index.add(5).tolist()
    /// [102]
    /// >>> by_name = rsimhash.Index(k=3)
    /// >>> by_name.add([0xFF01, 0xFF01], ids=["a", "é"]).tolist()
    /// ['a', 'é']
    #[pyo3(signature = (fps, ids = None))]
    fn add<'py>(&self, py: Python<'py>, fps: &Bound<'py, PyAny>, ids: Option<&Bound<'py, PyAny>>) -> PyResult<Bound<'py, PyAny>> {
        let fps = U64s::extract(fps, "fps")?;
        let fps = fps.as_slice();
        match ids.map(|i| IdsArg::extract(i, "ids")).transpose()? {
            Some(IdsArg::Names(names)) => {
                detach::run(py, None, || write(&self.inner).add_named(fps, &names))?;
                Ok(names_array(py, names.iter().map(String::as_str)).into_any())
            }
            Some(IdsArg::Ints(ids)) => {
                let ids = ids.as_slice();
                Ok(PyArray1::from_vec(py, detach::run(py, None, || write(&self.inner).add(fps, Some(ids)))?).into_any())
            }
            None => Ok(PyArray1::from_vec(py, detach::run(py, None, || write(&self.inner).add(fps, None))?).into_any()),
        }
    }

    /// ``(id, distance)`` of every stored item within ``k``, sorted by distance, then id.
    ///
    /// ``k`` defaults to the index's ``k``; a larger one raises ``ValueError``.
    ///
    /// >>> index = rsimhash.Index(k=3)
    /// >>> index.add([0, 0b111, 0xFF00, 0xFF01]).tolist()
    /// [0, 1, 2, 3]
    /// >>> index.query(0)
    /// [(0, 0), (1, 3)]
    /// >>> index.query(0, k=1)
    /// [(0, 0)]
    /// >>> index.query(0xFF03)
    /// [(3, 1), (2, 2)]
    /// >>> by_name = rsimhash.Index(k=3)
    /// >>> by_name.add([0xFF01, 0xFF01, 0xFF00], ids=["b", "a", "c"]).tolist()
    /// ['b', 'a', 'c']
    /// >>> by_name.query(0xFF03)  # ties by when added, not by the strings
    /// [('b', 1), ('a', 1), ('c', 2)]
    #[pyo3(signature = (fp, k = None))]
    fn query<'py>(&self, py: Python<'py>, fp: &Bound<'py, PyAny>, #[pyo3(from_py_with = opt_k_arg)] k: Option<Int>) -> PyResult<Bound<'py, PyAny>> {
        let fp = to_u64(fp, || "fp".into())?;
        let k = op_k(k)?;
        // The common case, an uncontended lock, answers in well under a
        // microsecond: cheaper to keep the GIL than to hand it over.
        let matches = match self.inner.try_read() {
            Ok(index) => found(&index, fp, k)?,
            Err(_) => detach::run(py, None, || found(&read(&self.inner), fp, k))?,
        };
        match matches {
            Found::Ints(m) => Ok(m.into_pyobject(py)?.into_any()),
            Found::Names(m) => Ok(m.iter().map(|(n, d)| (&**n, *d)).collect::<Vec<_>>().into_pyobject(py)?.into_any()),
        }
    }

    /// ``(qi, ids, dist)``: query position, matching id and distance, sorted by qi, distance, id.
    ///
    /// Three equal-length arrays (``int64``, ``uint64`` or object for
    /// string ids, ``uint8``), one row per match; ``k`` as in ``query``.
    ///
    /// >>> index = rsimhash.Index(k=3)
    /// >>> index.add([0, 0b111, 0xFF00, 0xFF01]).tolist()
    /// [0, 1, 2, 3]
    /// >>> qi, ids, dist = index.query_batch(np.array([0b1, 0xFF00, 1 << 40 | 0xF0F0], dtype=np.uint64))
    /// >>> qi.tolist(), ids.tolist(), dist.tolist()
    /// ([0, 0, 1, 1], [0, 1, 2, 3], [1, 2, 0, 1])
    /// >>> by_name = rsimhash.Index(k=3)
    /// >>> by_name.add([0, 0xFF00], ids=["zero", "ff"]).tolist()
    /// ['zero', 'ff']
    /// >>> by_name.query_batch([0b1, 0xFF00])[1]
    /// array(['zero', 'ff'], dtype=object)
    #[pyo3(signature = (fps, k = None))]
    #[allow(clippy::type_complexity)]
    fn query_batch<'py>(
        &self,
        py: Python<'py>,
        fps: &Bound<'py, PyAny>,
        #[pyo3(from_py_with = opt_k_arg)] k: Option<Int>,
    ) -> PyResult<(Bound<'py, PyArray1<i64>>, Bound<'py, PyAny>, Bound<'py, PyArray1<u8>>)> {
        let fps = U64s::extract(fps, "fps")?;
        let (fps, k) = (fps.as_slice(), op_k(k)?);
        let (m, ids) = detach::run(py, None, || {
            let index = read(&self.inner);
            let mut m = index.query_batch(fps, k)?;
            let ids = keyed(&index, std::mem::take(&mut m.ids))?;
            Ok((m, ids))
        })?;
        let qi: Vec<i64> = m.positions.iter().map(|&p| i64::from(p)).collect();
        Ok((PyArray1::from_vec(py, qi), ids.array(py), PyArray1::from_vec(py, m.distances)))
    }

    /// Every unordered pair of distinct stored ids within ``k``: shape ``(P, 2)``, smaller id first, sorted.
    ///
    /// A ``uint64`` array (object, of ``str``, for string ids; "smaller"
    /// then means added first); ids sharing one fingerprint (copies) pair at
    /// distance 0. ``copies="all"`` (the default) lists every pair of them:
    /// ``c`` copies make ``c (c - 1) / 2``; ``copies="first"`` pairs each
    /// only with the smallest id of its fingerprint, one pair per copy.
    /// Left unset, a ``UserWarning`` says so when copies alone make over
    /// 2^26 pairs; pairs of copies that would not fit in memory are a
    /// ``MemoryError`` raised before any is made.
    ///
    /// >>> index = rsimhash.Index(k=3)
    /// >>> index.add([0, 0b111, 0xFF00, 0xFF01]).tolist()
    /// [0, 1, 2, 3]
    /// >>> index.find_all().tolist()
    /// [[0, 1], [2, 3]]
    /// >>> index.find_all(k=1).tolist()
    /// [[2, 3]]
    /// >>> index.add([0xFF00, 0xFF00]).tolist()  # two more copies of 0xFF00
    /// [4, 5]
    /// >>> index.find_all(k=0).tolist(), index.find_all(k=0, copies="first").tolist()
    /// ([[2, 4], [2, 5], [4, 5]], [[2, 4], [2, 5]])
    #[pyo3(signature = (k = None, *, copies = None))]
    fn find_all<'py>(&self, py: Python<'py>, #[pyo3(from_py_with = opt_k_arg)] k: Option<Int>, copies: Option<&str>) -> PyResult<Bound<'py, PyAny>> {
        let k = op_k(k)?;
        let chosen = copies.map(str::parse::<Copies>).transpose()?;
        if chosen.is_none() {
            let of_copies = detach::run(py, None, || Ok(read(&self.inner).copy_pairs()))?;
            if of_copies >= COPIES_NOTICE {
                let message = format!(
                    "ids sharing a fingerprint make {of_copies} pairs ({:.1} GB as an array); copies=\"first\" pairs \
                     each only with the smallest id of its fingerprint; pass copies=\"all\" to list them all without this warning",
                    of_copies as f64 * 16.0 / 1e9
                );
                super::batch::warn(py, &message)?;
            }
        }
        let copies = chosen.unwrap_or_default();
        let pairs = detach::run(py, None, || {
            let index = read(&self.inner);
            let pairs = index.find_all(k, copies)?;
            keyed(&index, bytemuck::allocation::cast_vec(pairs))
        })?;
        pairs.pairs(py)
    }

    /// Clusters of ids: ``"connected"`` components of the within-k graph, or ``"leader"`` groups.
    ///
    /// ``"connected"``: each member is within ``k`` of at least one other
    /// member. ``"leader"``: in id order, each item joins the first
    /// representative within ``k`` or becomes one. Only clusters of at least
    /// ``min_size`` ids; each a sorted ``uint64`` array, clusters sorted by
    /// their smallest id (for string ids, object arrays of them, in the
    /// order the items were added).
    ///
    /// >>> index = rsimhash.Index(k=3)
    /// >>> index.add([0, 0b111, 0b111111, 0xFF00]).tolist()  # 0-1 and 1-2 are 3 bits apart, 0-2 six
    /// [0, 1, 2, 3]
    /// >>> [c.tolist() for c in index.cluster()]
    /// [[0, 1, 2]]
    /// >>> [c.tolist() for c in index.cluster(method="leader", min_size=1)]
    /// [[0, 1], [2], [3]]
    /// >>> by_name = rsimhash.Index(k=3)
    /// >>> by_name.add([0, 0b111, 0xFF00], ids=["x", "y", "z"]).tolist()
    /// ['x', 'y', 'z']
    /// >>> [c.tolist() for c in by_name.cluster()]
    /// [['x', 'y']]
    #[pyo3(signature = (k = None, min_size = Int::Fits(2), method = "connected"), text_signature = "($self, k=None, min_size=2, method='connected')")]
    fn cluster<'py>(
        &self,
        py: Python<'py>,
        #[pyo3(from_py_with = opt_k_arg)] k: Option<Int>,
        #[pyo3(from_py_with = min_size_arg)] min_size: Int,
        method: &str,
    ) -> PyResult<Vec<Bound<'py, PyAny>>> {
        let k = op_k(k)?;
        let method: ClusterMethod = method.parse()?;
        let min_size = min_size.range("min_size", 1, i64::MAX)? as usize;
        let groups = detach::run(py, None, || {
            let index = read(&self.inner);
            index.cluster(k, min_size, method)?.into_iter().map(|g| keyed(&index, g)).collect::<crate::Result<Vec<Keyed>>>()
        })?;
        Ok(groups.into_iter().map(|g| g.array(py)).collect())
    }

    /// Removes items by id; returns how many were stored.
    ///
    /// Ids not stored are passed over. A removed string id may be added
    /// again.
    ///
    /// >>> index = rsimhash.Index(k=3)
    /// >>> index.add([0, 0b111, 0xFF00]).tolist()
    /// [0, 1, 2]
    /// >>> index.remove([1, 7])
    /// 1
    /// >>> len(index), index.query(0)
    /// (2, [(0, 0)])
    /// >>> by_name = rsimhash.Index(k=3)
    /// >>> by_name.add([0, 0xFF00], ids=["a", "b"]).tolist()
    /// ['a', 'b']
    /// >>> by_name.remove(["a", "gone"]), by_name.add([1], ids=["a"]).tolist()
    /// (1, ['a'])
    fn remove(&self, py: Python<'_>, ids: &Bound<'_, PyAny>) -> PyResult<usize> {
        let ids = IdsArg::extract(ids, "ids")?;
        let (ints, names) = match &ids {
            IdsArg::Ints(ids) => (ids.as_slice(), None),
            IdsArg::Names(names) => (&[][..], Some(names)),
        };
        detach::run(py, None, || {
            let mut index = write(&self.inner);
            let removed = match names {
                Some(names) => index.remove_named(names)?,
                None => {
                    index.check_ints(ints.len(), true)?;
                    index.remove(ints)
                }
            };
            index.intact(removed)
        })
    }

    /// Checks again every checksum of the file the index was loaded from.
    ///
    /// Reads the whole file (as long as the index still uses its tables;
    /// an index built in memory has nothing to check) and compares it with
    /// what ``load`` verified. Raises ``ValueError("index file changed or
    /// damaged while in use: ...")`` naming what changed; every later
    /// operation of the index then raises it too. Returns ``None``.
    ///
    /// >>> import os, tempfile
    /// >>> index = rsimhash.Index(k=3)
    /// >>> index.add(np.arange(5000, dtype=np.uint64)).tolist()[:3]
    /// [0, 1, 2]
    /// >>> with tempfile.TemporaryDirectory() as tmp:
    /// ...     path = os.path.join(tmp, "corpus.rsh")
    /// ...     index.save(path)
    /// ...     loaded = rsimhash.Index.load(path)
    /// ...     loaded.verify()                      # as loaded: None
    /// ...     with open(path, "r+b") as f:         # another program writes into it
    /// ...         _ = f.seek(os.path.getsize(path) - 100)
    /// ...         _ = f.write(b"something else")
    /// ...     try:
    /// ...         loaded.verify()
    /// ...     except ValueError as e:
    /// ...         print(str(e).split(":")[0])
    /// ...     del loaded
    /// index file changed or damaged while in use
    fn verify(&self, py: Python<'_>) -> PyResult<()> {
        detach::run(py, None, || read(&self.inner).verify())
    }

    /// ``(is_new, matched)``: each input, in order, is new unless a stored or earlier new item is within ``k``.
    ///
    /// Only the new items are stored (with their ids; the default ids are
    /// given to every input, as ``add`` gives them). ``is_new`` is a ``bool``
    /// array; ``matched`` a ``uint64`` array of the smallest id within ``k``
    /// of each item that is not new (stored, or new earlier in the call),
    /// and of the item's own id where new: ``matched[is_new]`` are the new
    /// items' ids, as ``SimilarIndex.add_unique`` gives them. A streaming
    /// dedup, in order. With string ids, ``matched`` is an object array of
    /// them ("smallest" means added first); every id given is checked as
    /// ``add`` checks it, and only the new ones are stored.
    ///
    /// >>> index = rsimhash.Index(k=2)
    /// >>> is_new, matched = index.add_unique(np.array([0, 0b1, 0xFF << 40, 0b11], dtype=np.uint64))
    /// >>> is_new.tolist(), matched.tolist()
    /// ([True, False, True, False], [0, 0, 2, 0])
    /// >>> len(index)
    /// 2
    /// >>> by_name = rsimhash.Index(k=2)
    /// >>> is_new, matched = by_name.add_unique([0, 0b1, 0xFF << 40], ids=["a", "a-copy", "b"])
    /// >>> is_new.tolist(), matched.tolist()
    /// ([True, False, True], ['a', 'a', 'b'])
    #[pyo3(signature = (fps, ids = None, k = None))]
    fn add_unique<'py>(
        &self,
        py: Python<'py>,
        fps: &Bound<'py, PyAny>,
        ids: Option<&Bound<'py, PyAny>>,
        #[pyo3(from_py_with = opt_k_arg)] k: Option<Int>,
    ) -> PyResult<NewAndMatched<'py>> {
        let fps = U64s::extract(fps, "fps")?;
        let ids = ids.map(|i| IdsArg::extract(i, "ids")).transpose()?;
        let (fps, k) = (fps.as_slice(), op_k(k)?);
        if let Some(IdsArg::Names(names)) = &ids {
            let (is_new, matched) = detach::run(py, None, || {
                let mut index = write(&self.inner);
                let (is_new, matched) = index.add_unique_named(fps, names, k)?;
                Ok((is_new, keyed(&index, matched)?))
            })?;
            return Ok((PyArray1::from_vec(py, is_new), matched.array(py)));
        }
        let ids = match &ids {
            Some(IdsArg::Ints(ids)) => Some(ids.as_slice()),
            _ => None,
        };
        let (is_new, matched) = detach::run(py, None, || write(&self.inner).add_unique(fps, ids, k))?;
        Ok((PyArray1::from_vec(py, is_new), PyArray1::from_vec(py, matched).into_any()))
    }
}
