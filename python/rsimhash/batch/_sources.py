"""What a batch job reads: arrays, ``.npy`` files and Parquet columns, and
its memory limit.

Arrays (an ``np.memmap`` too) and ``.npy`` files go to the Rust core as they
are: an array is read in place, files a chunk at a time. A Parquet column is
first copied, a row group at a time, into a ``.npy`` file of the job's work
directory (8 bytes a fingerprint), so that every table reads it back fast.
"""

from __future__ import annotations

import os
from contextlib import ExitStack
from typing import Any, List, Optional, Sequence, Tuple, Union

import numpy as np

from .. import _files, _ids
from .._records import parquet

PathLike = Union[str, "os.PathLike[str]"]
NPY_MAGIC = b"\x93NUMPY"
PARQUET_MAGIC = b"PAR1"


def _kind(path: str) -> str:
    """``npy`` or ``parquet``, by name, else by the first bytes."""
    lower = path.lower()
    if lower.endswith(".npy"):
        return "npy"
    if lower.endswith((".parquet", ".pq")):
        return "parquet"
    with open(path, "rb") as f:
        head = f.read(6)
    if head.startswith(NPY_MAGIC):
        return "npy"
    if head.startswith(PARQUET_MAGIC):
        return "parquet"
    raise ValueError(f"{path}: is neither a .npy file nor a Parquet file (by its name and its first bytes)")


def _paths(source: Any) -> List[str]:
    """The files a path, a directory or a list of paths names, in order."""
    if isinstance(source, (str, os.PathLike)):
        path = os.fspath(source)
        if os.path.isdir(path):
            names = sorted(n for n in os.listdir(path) if n.lower().endswith((".npy", ".parquet", ".pq")))
            if not names:
                raise FileNotFoundError(f"{path}: the directory holds no .npy or .parquet files")
            return [os.path.join(path, n) for n in names]
        if not os.path.exists(path):
            raise FileNotFoundError(f"{path}: no such file or directory")
        return [path]
    if isinstance(source, (list, tuple)) and source and all(isinstance(p, (str, os.PathLike)) for p in source):
        out = [os.fspath(p) for p in source]
        for p in out:
            if not os.path.isfile(p):
                raise FileNotFoundError(f"{p}: no such file" if not os.path.exists(p) else f"{p}: is not a file")
        return out
    raise TypeError(
        "source must be a 1-D uint64 numpy array, a path to a .npy or Parquet file, a directory of them "
        f"or a list of paths, got {type(source).__name__}"
    )


def u64_array(values: Any, name: str) -> np.ndarray:
    """A 1-D uint64 array, strictly (no silent casts), contiguous."""
    if not isinstance(values, np.ndarray):
        raise TypeError(f"{name} must be a numpy uint64 array, got {type(values).__name__}")
    if values.dtype != np.uint64:
        raise TypeError(
            f"{name} must have dtype uint64, got {values.dtype}; convert with "
            f"np.ascontiguousarray({name}, dtype=np.uint64) after checking the values are in 0..2**64-1"
        )
    if values.ndim != 1:
        raise ValueError(f"{name} must be one-dimensional, got an array of shape {values.shape}; flatten it with {name}.ravel()")
    if not values.flags.c_contiguous:
        values = np.ascontiguousarray(values)  # a strided view: copied once
    return values


class Resolved:
    """A source as the core takes it (an array or ``.npy`` paths), with ids.

    String ids (``names``, in item order) reach the core as their ranks in
    sorted order (``ids``): distinct ``uint64`` ids that order as the
    strings do, so the core's sorted answers are in string order and
    ``by_rank[ids]`` gives the strings back."""

    def __init__(self, values: Union[np.ndarray, List[str]], ids: Optional[np.ndarray], length: int):
        self.values = values
        self.ids = ids
        self.length = length
        self.names: Optional[np.ndarray] = None
        self.by_rank: Optional[np.ndarray] = None

    def named(self, ids: np.ndarray) -> np.ndarray:
        """The core's ``ids`` (ranks, for string ids) as the caller's ids."""
        return ids if self.by_rank is None else self.by_rank[ids.astype(np.intp)]


def resolve(source: Any, *, column: Optional[str], ids: Any, spill_dir: Any, stack: ExitStack, name: str = "source") -> Resolved:
    """Checks ``source`` and ``ids`` and turns them into what the core reads.
    ``spill_dir()`` gives the directory for copies of Parquet columns;
    ``name`` is what messages call the source."""
    if isinstance(source, np.ndarray):
        values: Union[np.ndarray, List[str]] = u64_array(source, name)
        if column is not None:
            raise ValueError("column names a Parquet column; source is an array")
        length = len(values)
        parquet: List[str] = []
    else:
        paths = _paths(source)
        kinds = {_kind(p) for p in paths}
        if len(kinds) > 1:
            raise ValueError("source mixes .npy and Parquet files; give files of one kind")
        if kinds == {"parquet"}:
            parquet = paths
            values = [_parquet_to_npy(paths, column, spill_dir(), stack)]
        else:
            if column is not None:
                raise ValueError("column names a Parquet column; the source is .npy files")
            parquet = []
            values = paths
        length = sum(_npy_length(p) for p in values)
    ids_name = "ids" if name == "source" else f"{name}_ids"
    id_array = None
    if ids is not None:
        if isinstance(ids, str) and not isinstance(source, np.ndarray) and parquet:
            id_array = _parquet_column(parquet, ids, what="ids", strings=True)
        elif isinstance(ids, str):
            raise TypeError(f"{ids_name} names a column only for a Parquet source; pass a sequence of ids")
        else:
            id_array = _ids.any_ids(ids, ids_name)
        if len(id_array) != length:
            raise ValueError(f"{ids_name} must have one id per fingerprint: {len(id_array)} ids for {length} fingerprints")
    if id_array is not None and id_array.dtype == object:
        ranks, by_rank = _ids.ranked(id_array, ids_name)
        r = Resolved(values, ranks, length)
        r.names, r.by_rank = id_array, by_rank
        return r
    return Resolved(values, None if id_array is None else np.ascontiguousarray(id_array), length)


def _npy_length(path: str) -> int:
    """Items of a 1-D uint64 ``.npy`` file, from its header alone."""
    fmt = np.lib.format
    with open(path, "rb") as f:
        if f.read(6) != NPY_MAGIC:
            raise ValueError(f"{path}: is not a .npy file (it does not start with numpy's magic \\x93NUMPY)")
        f.seek(0)
        try:
            version = fmt.read_magic(f)
            read = fmt.read_array_header_1_0 if version == (1, 0) else fmt.read_array_header_2_0
            shape, fortran, dtype = read(f)
        except ValueError as e:
            raise ValueError(f"{path}: is a damaged or unsupported .npy file ({e})") from None
    if dtype != np.dtype("<u8"):
        hint = "; save arr.view(np.uint64) if it holds fingerprints as signed values" if dtype == np.int64 else ""
        raise TypeError(f"{path}: holds dtype {dtype}, not uint64{hint}")
    if len(shape) != 1 or fortran:
        raise ValueError(f"{path}: holds an array of shape {shape}; the source must be one-dimensional")
    return int(shape[0])


def _parquet_files(paths: Sequence[str]) -> Any:
    try:
        pa, _ = parquet.modules()
    except ImportError:
        raise ImportError("reading Parquet needs pyarrow: pip install 'rsimhash[parquet]'") from None
    return pa, [parquet.open_file(p, pre_buffer=True) for p in paths]  # whole row groups are read here


def _column_name(files: Any, paths: Sequence[str], column: Optional[str], what: str) -> str:
    names = files[0].schema_arrow.names
    if column is None:
        ints = [f.name for f in files[0].schema_arrow if f.type in ("int64", "uint64")]
        if len(ints) == 1:
            return ints[0]
        raise ValueError(f"{paths[0]}: name the fingerprint column with column=; the file has {', '.join(names)}")
    for path, f in zip(paths, files):
        if column not in f.schema_arrow.names:
            raise ValueError(f"{path}: has no column {column!r} ({what}); its columns are {', '.join(f.schema_arrow.names)}")
    return column


def _batches(paths: Sequence[str], column: Optional[str], what: str) -> Any:
    """uint64 arrays of the column, a row group at a time."""
    pa, files = _parquet_files(paths)
    name = _column_name(files, paths, column, what)
    for path, f in zip(paths, files):
        field = f.schema_arrow.field(name)
        if str(field.type) not in ("uint64", "int64"):
            raise TypeError(
                f"{path}: column {name!r} has type {field.type}; {what} must be uint64, or int64 holding the same bits"
            )
        row = 0
        for g in range(f.num_row_groups):
            col = f.read_row_group(g, columns=[name]).column(0)
            if col.null_count:
                first = int(parquet.null_rows(col)[0])
                raise ValueError(f"{path}: row {row + first + 1}: column {name!r} is null; every row needs its {what}")
            arr = col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col
            yield arr.to_numpy(zero_copy_only=False).view(np.uint64)
            row += len(col)


def _parquet_to_npy(paths: Sequence[str], column: Optional[str], directory: str, stack: ExitStack) -> str:
    """The column copied into a ``.npy`` file under ``directory`` (removed when the job ends)."""
    os.makedirs(directory, exist_ok=True)
    # A job may copy two sources (a new batch and the store it is checked against).
    n = 0
    while os.path.exists(os.path.join(directory, f"source-{os.getpid()}-{n}.npy")):
        n += 1
    target = os.path.join(directory, f"source-{os.getpid()}-{n}.npy")
    stack.callback(_remove, target)
    lengths = 0
    with _files.create_fresh(target + ".tmp") as out:
        np.lib.format.write_array_header_1_0(out, {"descr": "<u8", "fortran_order": False, "shape": (0,)})
        header_at = out.tell()
        for arr in _batches(paths, column, "the fingerprints"):
            out.write(np.ascontiguousarray(arr, dtype="<u8").tobytes())
            lengths += len(arr)
    # The header now that the length is known (it keeps its size: padded to 64 bytes).
    with open(target + ".tmp", "r+b") as out:
        out.seek(0)
        np.lib.format.write_array_header_1_0(out, {"descr": "<u8", "fortran_order": False, "shape": (lengths,)})
        if out.tell() != header_at:
            raise RuntimeError("internal error in rsimhash: the .npy header changed size")
    os.replace(target + ".tmp", target)
    return target


def _parquet_column(paths: Sequence[str], column: str, what: str, strings: bool = False) -> np.ndarray:
    """The column as ``uint64`` or, with ``strings``, a string column as an
    object array of ``str``."""
    if strings:
        _, files = _parquet_files(paths)
        name = _column_name(files, paths, column, what)
        if all(str(f.schema_arrow.field(name).type) in ("string", "large_string") for f in files):
            out: List[Any] = []
            for path, f in zip(paths, files):
                col = f.read(columns=[name]).column(0)
                if col.null_count:
                    first = int(parquet.null_rows(col)[0])
                    raise ValueError(f"{path}: row {first + 1}: column {name!r} is null; every row needs its {what}")
                out.extend(col.to_pylist())
            arr = np.empty(len(out), dtype=object)
            arr[:] = out
            return arr
    parts = list(_batches(paths, column, what))
    return np.concatenate(parts) if parts else np.empty(0, dtype=np.uint64)


def _remove(path: str) -> None:
    for p in (path, path + ".tmp"):
        try:
            os.remove(p)
        except FileNotFoundError:
            pass


def parent_of(path: Optional[str]) -> Optional[str]:
    """The directory of ``path``, checked to exist."""
    if path is None:
        return None
    parent = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(parent):
        raise FileNotFoundError(f"{path}: the directory {parent} does not exist")
    return parent


def check_writable(path: str) -> Tuple[str, str]:
    """``(directory, extension)`` of an output path, after checking it can be written."""
    parent = parent_of(path)
    assert parent is not None
    if os.path.isdir(path):
        raise IsADirectoryError(f"{path}: is a directory; out= names a file")
    probe = os.path.join(parent, f".rsimhash-probe-{os.getpid()}")
    try:
        _files.create_fresh(probe).close()
    except OSError as e:
        raise type(e)(e.errno, f"{path}: cannot write in {parent} ({e.strerror})") from None
    finally:
        try:
            os.remove(probe)
        except OSError:
            pass
    lower = path.lower()
    for ext in (".npy", ".parquet", ".tsv"):
        if lower.endswith(ext):
            return parent, ext
    return parent, os.path.splitext(lower)[1]
