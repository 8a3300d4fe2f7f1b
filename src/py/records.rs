//! `JsonLines`: a JSON-lines input read, parsed and fingerprinted by the
//! core's pipeline ([`crate::records`]), handed to Python a chunk at a time.

use std::fs::File;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use numpy::{PyArray1, PyReadonlyArray1};
use pyo3::exceptions::{PyIndexError, PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList, PyString};

use super::convert::{threads_int, width_arg, Int};
use super::detach;
use super::fingerprint::{shingling, threads};
use crate::records::chunk::PackedIds;
use crate::records::{Fields, HashFormat, Id, Item, JsonLinesReader, ReaderOptions, RecordChunk};

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyJsonLines>()?;
    m.add_class::<PyRecordChunk>()?;
    m.add_class::<PyRecordValues>()?;
    m.add_function(wrap_pyfunction!(text_rows, m)?)?;
    Ok(())
}

/// Text rows: for each row, each column's field in turn, `sep` between
/// them, `begin` and `end` around them (a TSV's by default). `pieces`: the
/// entries a text column names, each piece packed texts `(uint8 array,
/// uint64 offsets)` or numbers (a uint64 array, written in decimal), its
/// first entry in `starts` (ascending; a piece no row names may be empty);
/// `columns`: `("text", uint64 entries)` or `("number", uint64 values)`,
/// all of one length. Returns the rows' bytes, or the first row (an int)
/// whose text is not UTF-8, for the caller to name.
#[pyfunction]
#[pyo3(signature = (pieces, starts, columns, *, begin = "", sep = "\t", end = "\n"))]
fn text_rows<'py>(
    py: Python<'py>,
    pieces: Vec<Bound<'py, PyAny>>,
    starts: Vec<u64>,
    columns: Vec<(String, PyReadonlyArray1<'py, u64>)>,
    begin: &str,
    sep: &str,
    end: &str,
) -> PyResult<Bound<'py, PyAny>> {
    use crate::records::rows::{self, Column, Piece, RowsError};

    enum Held<'py> {
        Texts(PyReadonlyArray1<'py, u8>, PyReadonlyArray1<'py, u64>),
        Numbers(PyReadonlyArray1<'py, u64>),
    }
    let held = pieces
        .iter()
        .map(|p| match p.extract::<(PyReadonlyArray1<'py, u8>, PyReadonlyArray1<'py, u64>)>() {
            Ok((text, offsets)) => Ok(Held::Texts(text, offsets)),
            Err(_) => Ok(Held::Numbers(p.extract()?)),
        })
        .collect::<PyResult<Vec<_>>>()?;
    let held = held
        .iter()
        .map(|h| match h {
            Held::Texts(text, offsets) => Ok(Piece::Texts { text: text.as_slice()?, offsets: offsets.as_slice()? }),
            Held::Numbers(values) => Ok(Piece::Numbers(values.as_slice()?)),
        })
        .collect::<PyResult<_>>()?;
    let texts = rows::Pieces::at(held, starts).ok_or_else(|| PyValueError::new_err("starts must be ascending, one a piece"))?;
    let columns = columns
        .iter()
        .map(|(kind, values)| match kind.as_str() {
            "text" => Ok(Column::Text(values.as_slice()?)),
            "number" => Ok(Column::Number(values.as_slice()?)),
            other => Err(PyValueError::new_err(format!("a column is \"text\" or \"number\", got {other:?}"))),
        })
        .collect::<PyResult<Vec<_>>>()?;
    let layout = rows::Layout { begin: begin.as_bytes(), sep: sep.as_bytes(), end: end.as_bytes() };
    // On the rayon pool: the rows' cache misses are the calling thread's work otherwise.
    match detach::run(py, None, || Ok(rows::rows(&texts, &columns, layout)))? {
        Ok(out) => Ok(PyBytes::new(py, &out).into_any()),
        Err(RowsError::NotUtf8 { row }) => Ok(row.into_pyobject(py)?.into_any()),
        Err(e @ RowsError::NoEntry { .. }) => Err(PyIndexError::new_err(e.to_string())),
        Err(e) => Err(PyValueError::new_err(e.to_string())),
    }
}

/// The chunks of a JSON-lines input (plain, gzip or zstd), in order.
///
/// Iterating gives a `RecordChunk`, or, when the input stops early (a
/// cut-short or corrupt compressed stream, a read error), one last
/// `(line, compression, error)` tuple: the first line not read whole, the
/// input's compression (`"plain"`, `"gzip"`, `"zstd"`) and what failed.
#[pyclass(name = "JsonLines", module = "rsimhash._rsimhash", frozen)]
pub(crate) struct PyJsonLines {
    /// Taken by `__next__` for its wait; `None` once the input is done.
    reader: Mutex<Option<JsonLinesReader>>,
    /// Set by `close`, which another thread may call while `__next__` waits.
    closed: AtomicBool,
    compression: &'static str,
    fields: Arc<Fields>,
    /// Whether records have texts (JSON lines, not a fingerprint file).
    texts: bool,
}

#[pymethods]
impl PyJsonLines {
    /// `source` is a path, or (on Unix) a file descriptor this object takes
    /// over and closes. With `mode`, each record's text is fingerprinted as
    /// it is parsed; `id_field=None` skips ids. `format="lines"` or `"hash"`
    /// reads a fingerprint file instead (`RecordChunk.fingerprints` are the
    /// hashes read; a TSV's ids are its `id_field` column, default `id`).
    /// With `values_only` (format `"lines"`), a block whose every line is a
    /// number or blank comes as a `RecordValues`, without per-line entries.
    #[new]
    #[pyo3(signature = (source, *, text_field, id_field=None, mode=None, width=None, threads=None, chunk_bytes=None, format="json", max_record_bytes=None, values_only=false))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        source: &Bound<'_, PyAny>,
        text_field: String,
        id_field: Option<String>,
        mode: Option<&str>,
        #[pyo3(from_py_with = width_arg)] width: Option<Int>,
        #[pyo3(from_py_with = threads_int)] threads: Option<Int>,
        chunk_bytes: Option<Int>,
        format: &str,
        max_record_bytes: Option<Int>,
        values_only: bool,
    ) -> PyResult<Self> {
        let shingling = mode.map(|m| shingling(m, width)).transpose()?;
        let fields = Fields { text: text_field, id: id_field };
        // At most 1 TiB each: a buffer of either size is held at once.
        let chunk_bytes = Int::range_opt(chunk_bytes.as_ref(), "chunk_bytes", 1, 1 << 40)?.map_or(8 << 20, |b| b as usize);
        let max_line_bytes =
            Int::range_opt(max_record_bytes.as_ref(), "max_record_bytes", 1, 1 << 40)?.map_or(crate::records::input::MAX_LINE_BYTES, |b| b as usize);
        let threads = self::threads(threads)?;
        let (file, name) = open(source)?;
        let hashes = match format {
            "json" => None,
            "lines" => Some(HashFormat::Lines),
            "hash" => Some(HashFormat::Tsv { id: fields.id.clone().unwrap_or_else(|| "id".into()), columns: None }),
            other => return Err(PyValueError::new_err(format!("format must be \"json\", \"hash\" or \"lines\", got {other:?}"))),
        };
        let texts = hashes.is_none();
        let options = ReaderOptions { fields: fields.clone(), shingling, threads, block_bytes: chunk_bytes, hashes, max_line_bytes, values_only };
        let reader = JsonLinesReader::new(file, &name, options)?;
        Ok(PyJsonLines {
            compression: reader.compression.name(),
            reader: Mutex::new(Some(reader)),
            closed: AtomicBool::new(false),
            fields: Arc::new(fields),
            texts,
        })
    }

    /// `"plain"`, `"gzip"` or `"zstd"`.
    #[getter]
    fn compression(&self) -> &'static str {
        self.compression
    }

    /// Stops the reading threads (at once, or when a `__next__` waiting on
    /// another thread next wakes).
    fn close(&self) {
        self.closed.store(true, Ordering::Relaxed);
        if let Ok(mut reader) = self.reader.try_lock() {
            *reader = None;
        }
    }

    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    fn __next__(&self, py: Python<'_>) -> PyResult<Option<Py<PyAny>>> {
        // Never waited for with the GIL held: that could deadlock with the holder.
        let mut slot = self.reader.try_lock().map_err(|_| PyRuntimeError::new_err("JsonLines is being read by another thread"))?;
        // Wait in short steps without the GIL, so Ctrl-C (and `close`) is
        // seen while a slow input (a pipe) gives nothing.
        let item = loop {
            let Some(reader) = slot.as_ref().filter(|_| !self.closed.load(Ordering::Relaxed)) else {
                *slot = None;
                return Ok(None);
            };
            match py.detach(|| reader.next_within(Duration::from_millis(100))) {
                Ok(item) => break item,
                Err(()) => py.check_signals()?,
            }
        };
        let done = !matches!(item, Some(Ok(Item::Chunk(_) | Item::Values { .. })));
        let pool = slot.as_ref().map(JsonLinesReader::pool);
        if done {
            *slot = None;
        }
        match item {
            None => Ok(None),
            Some(Err(e)) => Err(e.into()),
            Some(Ok(Item::Chunk(chunk))) => {
                let chunk = PyRecordChunk { chunk, fields: Arc::clone(&self.fields), texts: self.texts, pool };
                Ok(Some(Py::new(py, chunk)?.into_any()))
            }
            Some(Ok(Item::Values { fingerprints, ids, lines, nbytes, consumed })) => {
                let count = fingerprints.len();
                let fingerprints = PyArray1::from_vec(py, fingerprints).unbind(); // the vector itself, no copy
                let ids = ids.map(|ids| {
                    let (text, offsets) = packed_to_py(py, ids);
                    (text.unbind(), offsets.unbind())
                });
                Ok(Some(Py::new(py, PyRecordValues { fingerprints, ids, count, lines, nbytes, consumed })?.into_any()))
            }
            Some(Ok(Item::Failed { failure, line })) => {
                let failed = (line, failure.compression.name(), failure.error.to_string());
                Ok(Some(failed.into_pyobject(py)?.into_any().unbind()))
            }
        }
    }
}

#[cfg(unix)]
fn from_fd(fd: i32) -> File {
    use std::os::fd::FromRawFd;
    // SAFETY: the caller hands this descriptor over (see `PyJsonLines::new`).
    unsafe { File::from_raw_fd(fd) }
}

fn open(source: &Bound<'_, PyAny>) -> PyResult<(File, String)> {
    if let Ok(path) = source.extract::<std::path::PathBuf>() {
        let name = path.display().to_string();
        let file = File::open(&path).map_err(|e| crate::Error::Io { path: name.clone(), action: "open", source: e })?;
        return Ok((file, name));
    }
    #[cfg(unix)]
    if let Ok(fd) = source.extract::<i32>() {
        if fd < 0 {
            return Err(PyValueError::new_err(format!("source must be a path or an open file descriptor, got {fd}")));
        }
        return Ok((from_fd(fd), format!("file descriptor {fd}")));
    }
    Err(PyValueError::new_err("source must be a path (or, on Unix, a file descriptor)"))
}

/// Packed ids as Python has them: `(text, offsets)`, both the vectors
/// themselves (a `bytes` of the text was a copy, and fresh pages, of every
/// id on the main thread with the GIL held).
fn packed_to_py(py: Python<'_>, ids: PackedIds) -> (Bound<'_, PyArray1<u8>>, Bound<'_, PyArray1<u64>>) {
    (PyArray1::from_vec(py, ids.text), PyArray1::from_vec(py, ids.offsets))
}

/// A block of a fingerprint file read for its values (and a TSV's ids)
/// alone (`values_only`).
#[pyclass(name = "RecordValues", module = "rsimhash._rsimhash", frozen)]
pub(crate) struct PyRecordValues {
    fingerprints: Py<PyArray1<u64>>,
    #[allow(clippy::type_complexity)]
    ids: Option<(Py<PyArray1<u8>>, Py<PyArray1<u64>>)>,
    count: usize,
    lines: u64,
    nbytes: usize,
    consumed: u64,
}

#[pymethods]
impl PyRecordValues {
    fn __len__(&self) -> usize {
        self.count
    }

    /// The block's values (uint64), in input order.
    #[getter]
    fn fingerprints(&self, py: Python<'_>) -> Py<PyArray1<u64>> {
        self.fingerprints.clone_ref(py)
    }

    /// A hash TSV's ids, packed as ``RecordChunk.id_texts`` packs them
    /// (``(text, offsets)``); None for a ``lines`` file.
    #[getter]
    #[allow(clippy::type_complexity)]
    fn ids(&self, py: Python<'_>) -> Option<(Py<PyArray1<u8>>, Py<PyArray1<u64>>)> {
        self.ids.as_ref().map(|(text, offsets)| (text.clone_ref(py), offsets.clone_ref(py)))
    }

    /// Bytes of (decompressed) input the block covers.
    #[getter]
    fn nbytes(&self) -> usize {
        self.nbytes
    }

    /// The file's bytes read when the block was cut (compressed, when it is).
    #[getter]
    fn consumed(&self) -> u64 {
        self.consumed
    }

    /// Lines the block covers, blank ones included.
    #[getter]
    fn line_count(&self) -> u64 {
        self.lines
    }
}

/// An Arrow large-string column's buffers: offsets and bytes.
type ArrowStrings<'py> = (Bound<'py, PyArray1<i64>>, Bound<'py, PyArray1<u8>>);

/// The caller's open file descriptor `fd` as a `File`, borrowed: never
/// closed here. A negative number is no descriptor (and -1 no `File`).
#[cfg(unix)]
fn borrowed(fd: i32) -> PyResult<std::mem::ManuallyDrop<File>> {
    use std::os::fd::FromRawFd;
    if fd < 0 {
        return Err(PyValueError::new_err(format!("fd must be an open file descriptor, got {fd}")));
    }
    // SAFETY: the caller's descriptor, not -1, open for the call; ManuallyDrop never closes it.
    Ok(std::mem::ManuallyDrop::new(unsafe { File::from_raw_fd(fd) }))
}

/// One block of whole lines: its non-blank lines ("entries"), each with
/// its line number, status (0 a record, 1 a record without its id field,
/// 2 for the reference reader, 3 a TSV's header), fingerprint and id.
#[pyclass(name = "RecordChunk", module = "rsimhash._rsimhash", frozen)]
pub(crate) struct PyRecordChunk {
    chunk: RecordChunk,
    fields: Arc<Fields>,
    texts: bool,
    /// The reader's threads, which write the chunk's lines too.
    pool: Option<Arc<crate::parallel::Pool>>,
}

impl PyRecordChunk {
    /// `i` as an entry's index, or an `IndexError` naming it.
    fn entry(&self, i: i64) -> PyResult<usize> {
        let n = self.chunk.entries.len();
        usize::try_from(i).ok().filter(|&i| i < n).ok_or_else(|| PyIndexError::new_err(format!("entry {i} out of 0..{n}")))
    }

    fn picked(&self, indices: &PyReadonlyArray1<'_, i64>) -> PyResult<Vec<usize>> {
        indices.as_array().iter().map(|&i| self.entry(i)).collect()
    }
}

#[pymethods]
impl PyRecordChunk {
    fn __len__(&self) -> usize {
        self.chunk.entries.len()
    }

    /// Bytes of (decompressed) input the block covers.
    #[getter]
    fn nbytes(&self) -> usize {
        self.chunk.data.len()
    }

    /// The file's bytes read when the block was cut (compressed, when it is).
    #[getter]
    fn consumed(&self) -> u64 {
        self.chunk.consumed
    }

    /// Lines the block covers, blank ones included.
    #[getter]
    fn line_count(&self) -> u64 {
        self.chunk.lines
    }

    /// Each entry's 1-based line number (int64).
    fn lines<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<i64>> {
        PyArray1::from_iter(py, self.chunk.entries.iter().map(|e| e.line as i64))
    }

    /// Each entry's status (uint8): 0 a record, 1 no id field, 2 deferred,
    /// 3 a TSV's header line.
    fn status<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<u8>> {
        PyArray1::from_iter(py, self.chunk.entries.iter().map(|e| e.status as u8))
    }

    /// Each entry's fingerprint (uint64; 0 unless a record), or None when
    /// the reader was not given a mode.
    fn fingerprints<'py>(&self, py: Python<'py>) -> Option<Bound<'py, PyArray1<u64>>> {
        self.chunk.fingerprints.as_deref().map(|f| PyArray1::from_slice(py, f))
    }

    /// Each entry's id (int, str, or None when it has none or is deferred),
    /// or None when the reader was not asked for ids.
    fn ids<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyList>>> {
        let Some(ids) = self.chunk.ids.as_ref() else { return Ok(None) };
        let list = PyList::empty(py);
        for i in 0..ids.len() {
            match self.chunk.id(i) {
                None => list.append(py.None())?,
                Some(Id::Int(v)) => list.append(v)?,
                Some(Id::UInt(v)) => list.append(v)?,
                Some(Id::Str(s)) => list.append(PyString::new(py, &s))?,
            }
        }
        Ok(Some(list))
    }

    /// Each entry's id as text (an int in decimal, as ``str`` writes it),
    /// packed: ``(text, offsets)``, ``text`` a uint8 array, id ``i`` the
    /// UTF-8 of ``text[offsets[i]:offsets[i + 1]]``; None when the reader
    /// was not asked for ids or an entry has none (the caller takes ``ids``
    /// then).
    /// No Python object a record: what keeps the ids of a fingerprint file
    /// of 10^7 lines off the interpreter.
    /// With `entries` (int64 entry numbers), theirs alone, in that order.
    #[allow(clippy::type_complexity)]
    #[pyo3(signature = (entries = None))]
    fn id_texts<'py>(
        &self,
        py: Python<'py>,
        entries: Option<PyReadonlyArray1<'_, i64>>,
    ) -> PyResult<Option<(Bound<'py, PyArray1<u8>>, Bound<'py, PyArray1<u64>>)>> {
        let chunk = &self.chunk;
        let packed = match entries {
            None => py.detach(|| chunk.id_texts()),
            Some(entries) => {
                let picked = self.picked(&entries)?;
                py.detach(|| chunk.id_texts_of(picked.into_iter()))
            }
        };
        Ok(packed.map(|p| packed_to_py(py, p)))
    }

    /// Entry `i`'s line as read, without its `\n`.
    fn line<'py>(&self, py: Python<'py>, i: i64) -> PyResult<Bound<'py, PyBytes>> {
        Ok(PyBytes::new(py, self.chunk.line(self.entry(i)?)))
    }

    /// The lines of the entries `indices` (ascending int64), as read, each
    /// with its `\n` (but the input's last line if it had none).
    fn write<'py>(&self, py: Python<'py>, indices: PyReadonlyArray1<'_, i64>) -> PyResult<Bound<'py, PyBytes>> {
        let picked = self.picked(&indices)?;
        let mut out = Vec::new();
        py.detach(|| self.chunk.write_lines(picked.iter().copied(), &mut out));
        Ok(PyBytes::new(py, &out))
    }

    /// Writes the lines `write` gives to the open file descriptor `fd`
    /// (Unix), without copying them first; returns the bytes written.
    #[cfg(unix)]
    fn write_to(&self, py: Python<'_>, fd: i32, indices: PyReadonlyArray1<'_, i64>) -> PyResult<u64> {
        let picked = self.picked(&indices)?;
        let file = borrowed(fd)?;
        let written = py.detach(|| self.chunk.write_to_file(picked, &file, self.pool.as_deref()));
        Ok(written?)
    }

    /// Asks the OS to start writing bytes `offset..offset + length` of the
    /// file open as `fd` to disk (Linux; elsewhere nothing), on a thread of
    /// the reader's pool while the caller goes on (see
    /// `RecordChunk::start_writeback`).
    #[cfg(unix)]
    fn start_writeback(&self, fd: i32, offset: u64, length: u64) -> PyResult<()> {
        let file = borrowed(fd)?;
        Ok(RecordChunk::start_writeback(&file, offset, length, self.pool.as_deref())?)
    }

    /// The decoded texts of the entries `indices` (records only), as Arrow
    /// large-string buffers: `(offsets int64, data uint8)`.
    fn texts<'py>(&self, py: Python<'py>, indices: PyReadonlyArray1<'_, i64>) -> PyResult<ArrowStrings<'py>> {
        if !self.texts {
            return Err(PyValueError::new_err("a fingerprint file's records have no texts"));
        }
        let picked = self.picked(&indices)?;
        if let Some(&i) = picked
            .iter()
            .find(|&&i| self.chunk.entries[i].status != crate::records::Status::Record && self.chunk.entries[i].status != crate::records::Status::NoId)
        {
            return Err(PyValueError::new_err(format!("entry {i} is not a record")));
        }
        let (offsets, data) = detach::run(py, None, || Ok(self.chunk.texts(&picked, &self.fields)))?;
        Ok((PyArray1::from_vec(py, offsets), PyArray1::from_vec(py, data)))
    }
}
