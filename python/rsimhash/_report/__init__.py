"""``rsimhash.report``: a page people can look at, of what a run removed.

The page is one self-contained HTML file (see ``page`` and ``build``): the
run in numbers, charts drawn as inline SVG, the largest groups with their
members' first lines, and a stratified sample of pairs side by side with a
word-level diff. Inputs are the records (a column of texts in memory here,
files read by the command line's readers for ``rsimhash report``) and the
run's outputs, as files or as the arrays and DataFrames the package's
functions return. This package never imports the command line.
"""

from __future__ import annotations

import functools
import html
import os
import time
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence

import numpy as np

from .. import _files, _texts
from . import found as outputs
from .build import Run, build
from .found import SIMILARITY, Found, OutputFormatError, default_path
from .records import Block, Shard

__all__ = ["report", "Report", "Run", "Shard", "Block", "build", "OutputFormatError"]

BLOCK = 1 << 16


class Report(str):
    """The page as a ``str`` of HTML, which a notebook shows inline
    (``_repr_html_``, in a sandboxed frame); ``save(path)`` writes it and
    ``numbers`` holds the run-in-numbers values by key: numbers as ``int``
    or ``float`` (``None`` when not known, as the time of a run given by its
    outputs), the rest (command line, summary line, design) as ``str``."""

    numbers: Dict[str, Any]

    def __new__(cls, page: str, numbers: Optional[Dict[str, Any]] = None) -> "Report":
        self = super().__new__(cls, page)
        self.numbers = dict(numbers or {})
        return self

    def _repr_html_(self) -> str:
        return (
            f'<iframe srcdoc="{html.escape(str(self), quote=True)}" sandbox="allow-scripts" '
            'style="width:100%;height:720px;border:1px solid #ccc" title="rsimhash report"></iframe>'
        )

    def __repr__(self) -> str:
        return f"<rsimhash report: {len(self.encode('utf-8', 'surrogatepass')):,} bytes of HTML; .save(path) writes it>"

    def save(self, path: Any) -> None:
        """Writes the page to ``path`` (UTF-8), whole or not at all: under a
        temporary name beside it, renamed over it when complete."""
        _files.write_whole(os.fspath(path), str(self).encode("utf-8", "surrogatepass"))


class _Column:
    """Texts given in any kind the package takes, read one at a time."""

    def __init__(self, texts: Any):
        self.pieces: List[Any] = []
        self.starts = [0]
        for piece in _texts.pieces(texts):
            if not isinstance(piece, _texts.ArrowBuffers) and not hasattr(piece, "__getitem__"):
                piece = list(piece)
            self.pieces.append(piece)
            self.starts.append(self.starts[-1] + len(piece))

    def __len__(self) -> int:
        return self.starts[-1]

    def get(self, rows: Sequence[int]) -> List[str]:
        out = []
        which = np.searchsorted(self.starts, np.asarray(rows, dtype=np.int64), side="right") - 1
        for r, p in zip(rows, which.tolist()):
            piece, i = self.pieces[p], r - self.starts[p]
            if isinstance(piece, _texts.ArrowBuffers):
                a, b = int(piece.offsets[i]), int(piece.offsets[i + 1])
                value = bytes(piece.data[a:b]).decode("utf-8")
            else:
                value = piece[i]
            if not isinstance(value, str):
                raise TypeError(f"texts[{r}] must be str, got {type(value).__name__}")
            out.append(value)
        return out


def _as_list(values: Any) -> List[Any]:
    if hasattr(values, "to_list"):  # polars
        return list(values.to_list())
    if hasattr(values, "tolist"):  # numpy, pandas
        return list(values.tolist())
    return list(values)


def _columns(table: Any, what: str) -> Dict[str, List[Any]]:
    """The columns of a DataFrame (pandas, polars) or dict of columns."""
    names = list(table.columns) if hasattr(table, "columns") else list(table.keys()) if hasattr(table, "keys") else None
    if names is None:
        raise TypeError(f"{what} must be a path, a DataFrame or a dict of columns, got {type(table).__name__}")
    return {str(n): _as_list(table[n]) for n in names}


def _pick(
    cols: Dict[str, List[Any]], what: str, need: Sequence[str], one_of: Sequence[str] = (), optional: bool = False
) -> Optional[str]:
    missing = [n for n in need if n not in cols]
    if missing:
        raise ValueError(f"{what} has no column {missing[0]!r} (columns: {', '.join(cols)})")
    for n in one_of:
        if n in cols:
            return n
    if one_of and not optional:
        raise ValueError(f"{what} needs one of the columns {', '.join(map(repr, one_of))} (columns: {', '.join(cols)})")
    return None


def _names(values: Any) -> List[str]:
    return [str(int(v)) if isinstance(v, (int, np.integer)) else str(v) for v in _as_list(values)]


def _from_given(kind: str, given: Any, similarity: Any, ids: List[Any]) -> Found:
    path = default_path(given)
    if path is not None:
        return outputs.read(path, kind)
    if kind == "dedup":
        cols = _columns(given, "removed")
        column = _pick(cols, "removed", ("id", "duplicate_of"), ("distance",) + SIMILARITY)
        assert column is not None
        return outputs.removed(_names(cols["id"]), _names(cols["duplicate_of"]), cols[column], column)
    if kind == "cluster":
        if isinstance(given, list):  # Index.cluster: arrays of ids
            members = [_names(c) for c in given]
            return outputs.clusters([m for c in members for m in c], [g for g, c in enumerate(members) for _ in c])
        if isinstance(given, tuple) and len(given) == 2:  # batch.clusters: (ids, labels)
            return outputs.clusters(_names(given[0]), _as_list(given[1]))
        cols = _columns(given, "clusters")
        _pick(cols, "clusters", ("id", "cluster"))
        return outputs.clusters(_names(cols["id"]), cols["cluster"], cols.get("hash"))
    if isinstance(given, np.ndarray) or isinstance(given, list):  # find_all / similar_pairs: (P, 2) ids
        arr = np.asarray(given)
        if arr.ndim != 2 or (arr.size and arr.shape[1] != 2):
            raise ValueError(f"pairs must be a (P, 2) array of ids, got shape {arr.shape}")
        arr = arr.reshape(-1, 2)
        sims = None if similarity is None else np.asarray(similarity, dtype=np.float32).reshape(-1)
        if sims is not None and len(sims) != len(arr):
            raise ValueError(f"similarity has {len(sims)} values for {len(arr)} pairs")
        return outputs.pairs(_names(arr[:, 0]), _names(arr[:, 1]), sims, None if sims is None else "jaccard")
    cols = _columns(given, "pairs")
    column = _pick(cols, "pairs", ("id_a", "id_b"), ("distance",) + SIMILARITY, optional=True)
    return outputs.pairs(_names(cols["id_a"]), _names(cols["id_b"]), cols.get(column or ""), column)


def _blocks(column: _Column, ids: List[Any], rows: np.ndarray, fps: Callable[[np.ndarray], np.ndarray]) -> Iterator[Block]:
    for lo in range(0, len(rows), BLOCK):
        part = rows[lo : lo + BLOCK]
        yield Block([ids[r] for r in part.tolist()], functools.partial(fps, part), functools.partial(_texts_of, column, part))


def _texts_of(column: _Column, part: np.ndarray, pick: List[int]) -> List[str]:
    return column.get(part[pick].tolist())


def report(
    texts: Any,
    *,
    ids: Any = None,
    k: int = 3,
    jaccard: Optional[float] = None,
    measure: str = "jaccard",
    mode: str = "words",
    width: Optional[int] = None,
    candidates: Any = "auto",
    removed: Any = None,
    clusters: Any = None,
    pairs: Any = None,
    similarity: Any = None,
    shards: Any = None,
    show: int = 200,
    seed: int = 0,
    title: Optional[str] = None,
    threads: Optional[int] = None,
) -> Report:
    """A report page of a near-duplicate run over ``texts``: a ``str`` of
    self-contained HTML (no network; charts drawn inline) that a notebook
    shows inline; ``.save(path)`` writes it, ``.numbers`` holds its numbers.

    ``texts``: the records' texts, as ``rsimhash.dedup`` takes them (a list,
    a pandas or polars Series, a pyarrow array); ``ids``: their ids (default
    the positions ``0..n-1``). The run is given by one of:

    * nothing: the report runs ``rsimhash.dedup(texts, k)`` (or with
      ``jaccard=``) itself, naming for each removed text the kept one it
      matched;
    * ``removed=``: ``rsimhash dedup --removed``'s TSV (a path), or a
      DataFrame or dict with its columns ``id``, ``duplicate_of`` and
      ``distance`` (or ``jaccard``/``containment``);
    * ``clusters=``: ``rsimhash cluster``'s TSV, a DataFrame with ``id`` and
      ``cluster`` (and ``hash``), ``Index.cluster``'s list of arrays of ids,
      or ``batch.clusters``' tuple ``(ids, labels)``;
    * ``pairs=``: ``rsimhash find-all``'s output, a DataFrame with ``id_a``
      and ``id_b`` (and ``distance``/``jaccard``), or a ``(P, 2)`` array of
      ids as ``Index.find_all`` and ``similar_pairs`` return (its similarity
      in ``similarity=``).

    ``k``, ``jaccard``, ``measure``, ``mode``, ``width`` and ``candidates``
    describe the run as for ``rsimhash.dedup``. ``shards``: a label per
    text (the file it came from) for the chart of the share removed by
    shard. ``show``: pairs in the sample, drawn across the distance range
    (``seed`` picks them).

    >>> base = "the cat sat on the mat by the door of the old house"
    >>> page = rsimhash.report([base, "<b>" + base + "</b>", "a dog barked"], k=8)
    >>> page.numbers["records"], page.numbers["removed"], page.numbers["kept"]
    (3, 1, 2)
    >>> page.startswith("<!DOCTYPE html>"), "&lt;b&gt;" in page, "<b>" in page  # shown, never rendered
    (True, True, False)
    """
    column = _Column(texts)
    n = len(column)
    id_list: List[Any] = list(range(n)) if ids is None else _as_list(ids)
    if len(id_list) != n:
        raise ValueError(f"ids has {len(id_list)} values for {n} texts")
    given = [(kind, v) for kind, v in (("dedup", removed), ("cluster", clusters), ("find-all", pairs)) if v is not None]
    if len(given) > 1:
        raise ValueError("give at most one of removed=, clusters= and pairs=")
    run = Run(
        k=None if jaccard is not None else k,
        jaccard=jaccard,
        measure=measure,
        mode=mode,
        width=width,
        candidates=candidates,
        title=title,
        command="rsimhash.report(...)",
    )
    fmode, fwidth, _ = run.fingerprinting()
    cache: Dict[str, np.ndarray] = {}

    def fingerprints_of(rows: np.ndarray) -> np.ndarray:
        from .. import fingerprints

        if "all" in cache:
            return cache["all"][rows]
        return fingerprints(column.get(rows.tolist()), mode=fmode, width=fwidth, threads=threads)

    if given:
        found = _from_given(given[0][0], given[0][1], similarity, id_list)
    else:
        started = time.perf_counter()
        found = _dedup(column, id_list, run, cache, threads)
        run.seconds = time.perf_counter() - started
        from .. import Index

        if jaccard is None:
            run.design = Index(k).design
    labels = None if shards is None else _as_list(shards)
    if labels is not None and len(labels) != n:
        raise ValueError(f"shards has {len(labels)} labels for {n} texts")
    if labels is None:
        groups = [("input", np.arange(n))]
    else:
        order: Dict[Any, List[int]] = {}
        for i, label in enumerate(labels):
            order.setdefault(label, []).append(i)
        groups = [(str(label), np.asarray(rows, dtype=np.int64)) for label, rows in order.items()]
    shard_list = [Shard(name, functools.partial(_blocks, column, id_list, rows, fingerprints_of)) for name, rows in groups]
    page, numbers = build(run, found, shard_list, show=show, seed=seed)
    return Report(page, numbers)


def _dedup(column: _Column, ids: List[Any], run: Run, cache: Dict[str, np.ndarray], threads: Optional[int]) -> Found:
    """The dedup of ``rsimhash.dedup``, with the kept text each removed one matched."""
    from .. import Index, hamming

    names = _names(ids)
    if run.jaccard is None:
        fps = _texts.fingerprint_pieces(column.pieces, mode=run.mode, width=run.width, threads=threads)
        cache["all"] = fps
        is_new, matched = Index(run.k if run.k is not None else 3).add_unique(fps)
        gone = np.flatnonzero(~np.asarray(is_new, dtype=bool))
        kept = matched[gone].astype(np.int64)
        dist = hamming(fps[gone], fps[kept]) if len(gone) else np.zeros(0, np.uint8)
        return outputs.removed([names[i] for i in gone.tolist()], [names[i] for i in kept.tolist()], dist, "distance")
    from .._rsimhash import OnlineDedup, SimilarCorpus
    from ..similar import _threshold, candidates_arg, join_is_exact

    pieces = [p.core() if isinstance(p, _texts.ArrowBuffers) else p for p in column.pieces]
    sims: Any
    if join_is_exact(run.candidates):  # the exact join, as the run took it in memory
        corpus = SimilarCorpus(_threshold(run.jaccard), measure=run.measure, shingles=run.mode, width=run.width, exact=True)
        for p in pieces:
            corpus.add(p, threads=threads)
        _, dropped, matched, dropped_sims = corpus.dedup(threads=threads)
        gone, kept = dropped.astype(np.intp), matched.astype(np.int64)
        sims = np.zeros(len(names), np.float32)
        sims[gone] = dropped_sims
    else:
        online = OnlineDedup(
            _threshold(run.jaccard),
            measure=run.measure,
            shingles=run.mode,
            width=run.width,
            candidates=candidates_arg(run.candidates),
        )
        answers = [online.add(p, threads=threads) for p in pieces]
        keep, matched_at, sims = (_concat([a[i] for a in answers]) for i in range(3))
        gone = np.flatnonzero(~np.asarray(keep, dtype=bool))
        kept = np.asarray(matched_at)[gone].astype(np.int64)
    return outputs.removed(
        [names[i] for i in gone.tolist()],
        [names[i] for i in kept.tolist()],
        np.asarray(sims)[gone],
        "jaccard" if run.measure == "jaccard" else "containment",
    )


def _concat(parts: List[np.ndarray]) -> np.ndarray:
    return np.concatenate(parts) if parts else np.zeros(0)
