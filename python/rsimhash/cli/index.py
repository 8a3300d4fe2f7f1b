"""``rsimhash index build|add|query|info|verify``: persistent index files.

An index file made by ``index build`` holds everything the command line
needs: the records' own ids, as strings (the index is keyed by strings: its
name table, format version 2), and the fingerprint settings in its
metadata (``Index.metadata``: ``{"mode": "words"|"chars", "width": "N"}``,
or ``{"mode": "hashes"}`` when it was built from a hash TSV), which make
``add`` and ``query`` fingerprint texts exactly as ``build`` did. One file,
replaced atomically by every change, checksummed as a whole: ``Index.load``
in Python reads it and answers the records' ids.

Files made before (issue 38, item 6) keep their ids and settings in an ids
file beside the index, ``IDX.ids`` (``index_ids``); every action still
reads them, and ``add`` keeps such a pair a pair. A file whose metadata
names no settings and that has no ids file beside it was made in Python:
``query``, ``info`` and ``verify`` take it, ``add`` refuses it. Only one
process should change an index at a time.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any, Dict, List, Optional, Tuple

import numpy as np

from .errors import CliError, InputError, UsageError, utf8
from .index_ids import IdsFile, IdsWriter, check_items, ids_path, spot_positions
from .options import (
    add_distance,
    add_input,
    add_run,
    add_text,
    bad_lines_part,
    distance,
    make_index,
    open_source,
)
from .outputs import Outputs
from .pipeline import fingerprints_of, prefetch
from .progress import Progress, count
from .shards import input_format

DESCRIPTION = """\
Build an index file from a corpus or a hash TSV, add more records to it,
probe a batch of new records against it, show what it holds, or check it.
The records' own ids and the fingerprint settings are kept in the index file.

examples:
  rsimhash index build --input corpus.jsonl --output corpus.rsh
  rsimhash index add corpus.rsh --input more.jsonl
  rsimhash index query corpus.rsh --input new.jsonl --output matches.tsv
  rsimhash index info corpus.rsh
  rsimhash index verify corpus.rsh
"""


def add_arguments(p: argparse.ArgumentParser) -> None:
    sub = p.add_subparsers(dest="index_command", metavar="ACTION", title="actions")
    sub.required = True

    def action(name: str, help: str, description: str) -> argparse.ArgumentParser:
        return sub.add_parser(name, help=help, description=description, formatter_class=argparse.RawDescriptionHelpFormatter)

    b = action(
        "build",
        "build an index file from records or hashes",
        "Fingerprint the input (or read its hashes) and write an index file keyed by the "
        "records' ids.\n\nexample:\n  rsimhash index build --input corpus.jsonl --output corpus.rsh",
    )
    add_input(b, shards=True)
    b.add_argument("--output", "-o", metavar="IDX", required=True, help="the index file to write")
    add_text(b)
    add_distance(b, what="items the index answers completely")
    add_run(b)
    b.set_defaults(run=build)

    a = action(
        "add",
        "add records or hashes to an index file",
        "Add the input's records to an index file (and to its ids file IDX.ids, for a file "
        "made before index files kept ids), fingerprinted as at build time."
        "\n\nexample:\n  rsimhash index add corpus.rsh --input more.jsonl",
    )
    a.add_argument("index", metavar="IDX", help="the index file (changed in place, atomically)")
    add_input(a, shards=True)
    a.add_argument(
        "--skip-existing",
        action="store_true",
        help="skip records whose id the index holds already (by default such a record is an error: "
        "each id is stored once, so adding the same file twice is refused)",
    )
    add_text(a, mode_default=None)
    add_run(a)
    a.set_defaults(run=add)

    q = action(
        "query",
        "probe a batch of records against an index file",
        "Write every stored item within K bits of each input record as a TSV "
        "'id<TAB>matched_id<TAB>distance', by input order, then distance, then matched item."
        "\n\nexample:\n  rsimhash index query corpus.rsh --input new.jsonl --output matches.tsv",
    )
    q.add_argument("index", metavar="IDX", help="the index file")
    add_input(q, shards=True)
    q.add_argument(
        "--output", "-o", metavar="FILE", default="-", help="the TSV of matches; - writes stdout. Default: %(default)s"
    )
    q.add_argument(
        "--distance",
        "-k",
        type=distance,
        metavar="K",
        default=None,
        help="largest distance of a match, at most the index's k. Default: the index's k",
    )
    add_text(q, mode_default=None)
    add_run(q)
    q.set_defaults(run=query)

    i = action(
        "info",
        "show what an index file holds",
        "Items, k, table design, bytes per item, spec and format versions of an index file."
        "\n\nexample:\n  rsimhash index info corpus.rsh",
    )
    i.add_argument("index", metavar="IDX", help="the index file")
    i.add_argument("--json", action="store_true", help="print one JSON object instead of a table")
    i.set_defaults(run=info)

    v = action(
        "verify",
        "check every checksum of an index file and its ids",
        "Load the index file checking every checksum, table block and id (and, for a file made "
        "before index files kept ids, every line of IDX.ids against it). Prints one line; "
        "exit code 0 when all is well, 1 otherwise."
        "\n\nexample:\n  rsimhash index verify corpus.rsh",
    )
    v.add_argument("index", metavar="IDX", help="the index file")
    v.set_defaults(run=verify)


# -- the index file and its ids file ------------------------------------------------


def load_index(path: str, mmap: bool = True) -> Any:
    from .. import Index

    try:
        return Index.load(path, mmap=mmap)
    except (OSError, ValueError) as e:
        raise CliError(str(e)) from None


def save_index(index: Any, path: str) -> None:
    try:
        index.save(path)
    except (OSError, ValueError) as e:
        raise CliError(str(e)) from None


def file_settings(index: Any, path: str) -> Optional[Dict[str, Any]]:
    """The fingerprint settings an index file keeps in its metadata (``index
    build`` records them): ``{"mode", "width"}``, both ``None`` for an
    index built from hashes; ``None`` when it records none (a file made
    before index files kept ids, or in Python)."""
    meta = index.metadata
    mode = meta.get("mode")
    if mode is None:
        return None
    if mode == "hashes":
        return {"mode": None, "width": None}
    width = meta.get("width", "")
    if mode not in ("words", "chars") or not width.isdigit() or not 0 < int(width) <= 1 << 16:
        raise CliError(
            f"{path}: its metadata names fingerprint settings rsimhash cannot use (mode {mode!r}, width {width!r}); "
            "set Index.metadata to {'mode': 'words' or 'chars', 'width': 'N'}, or rebuild it with rsimhash index build"
        )
    return {"mode": mode, "width": int(width)}


def settings_metadata(settings: Dict[str, Any]) -> Dict[str, str]:
    """The metadata that records ``settings`` (see ``file_settings``)."""
    if settings["mode"] is None:
        return {"mode": "hashes"}
    return {"mode": settings["mode"], "width": str(settings["width"])}


def items_of(index: Any) -> Tuple[np.ndarray, List[str]]:
    """Every item's fingerprint and id (as text), in the order they were added."""
    fps, ids = index.items()
    return fps, [str(i) for i in ids.tolist()]


def settings_for(args: argparse.Namespace, source_format: str, recorded: Dict[str, Any]) -> Dict[str, Any]:
    """Fingerprint settings for this run: those recorded at build time, which
    flags may repeat but not contradict."""
    texts = source_format in ("json", "parquet")
    mode = recorded.get("mode")
    width = recorded.get("width")
    if not texts:
        return dict(recorded)
    if mode is not None and args.mode is not None and args.mode != mode:
        raise UsageError(f"--mode {args.mode} differs from the index's mode {mode} (recorded at build time)")
    mode = mode or args.mode or "words"
    default_width = 3 if mode == "words" else 4
    if width is not None and args.width is not None and args.width != width:
        raise UsageError(f"--window {args.width} differs from the index's width {width} (recorded at build time)")
    width = width or args.width or default_width
    return {"mode": mode, "width": width}


class _Stored:
    """The record ids an index file holds, as its ids file writes them: each
    is stored once. A record whose id is held already is an error naming it,
    or, with ``skip``, left out."""

    def __init__(self, index_path: str, skip: bool = False, building: bool = False):
        self.index_path, self.skip, self.building = index_path, skip, building
        self.ids: "set[str]" = set()
        self.skipped = 0

    def new(self, source_path: str, ids: List[Any], fps: np.ndarray) -> Tuple[List[Any], np.ndarray]:
        """The records of a chunk to store: ``(ids, fps)``."""
        keep = np.ones(len(ids), dtype=bool)
        for n, rid in enumerate(ids):
            text = str(rid)
            if text in self.ids:
                if not self.skip:
                    raise InputError(
                        "<stdin>" if source_path == "-" else source_path,
                        None,
                        f"the id {text!r} is given twice: each id is stored once"
                        if self.building
                        else f"the id {text!r} is in {self.index_path} already (or twice in the input): each id is "
                        "stored once; --skip-existing leaves such records out",
                    )
                keep[n] = False
            self.ids.add(text)
        if keep.all():
            return ids, fps
        self.skipped += int((~keep).sum())
        return [i for i, k in zip(ids, keep.tolist()) if k], fps[keep]


def _write_ids(out: IdsWriter, ids: List[Any], fps: np.ndarray) -> None:
    out.write(utf8("".join(f"{h}\t{i}\n" for h, i in zip(fps.tolist(), ids))), len(ids))


def _text_ids(ids: List[Any]) -> List[str]:
    """Record ids as the index file keeps them: text, which must be UTF-8
    (an ``UnencodableError`` naming an id that is not, such as one holding a
    lone surrogate from a JSON escape)."""
    text = [str(i) for i in ids]
    utf8("\t".join(text))
    return text


def _no_stdout(path: str, what: str) -> None:
    if path == "-":
        raise UsageError(f"{what} must be a file, not stdout")


# -- actions ---------------------------------------------------------------------------


def build(args: argparse.Namespace) -> int:
    _no_stdout(args.output, "--output (an index file)")
    index = make_index(args.distance, args.blocks)
    mode = args.mode or "words"
    settings: Dict[str, Any] = {"mode": mode, "width": args.width or (3 if mode == "words" else 4)}
    with open_source(args, shingling=(settings["mode"], settings["width"])) as source:
        if source.format not in ("json", "parquet"):
            settings = {"mode": None, "width": None}
        index.metadata = settings_metadata(settings)
        progress = Progress("index build", source.total, args.quiet)
        stored = _Stored(args.output, building=True)
        for chunk in prefetch(source.chunks()):
            fps = fingerprints_of(chunk, settings["mode"] or "words", settings["width"], args.threads)
            ids, fps = stored.new(str(args.input), chunk.ids, fps)
            index.add(fps, ids=_text_ids(ids))
            progress.update(source.position(), source.records)
        save_index(index, args.output)
        _drop_old_ids_file(args.output)
        progress.summary(
            "index build",
            [
                count(source.records, "record") + " read",
                f"{args.output}: {count(len(index), 'item')} ({index.design})",
                bad_lines_part(source),
            ],
            source.nbytes,
        )
    return 0


def _drop_old_ids_file(index_path: str) -> None:
    """Removes the ids file a build of the ids-file era left beside
    ``index_path``, once the new file is in place: a crash before leaves
    the new index and the old ids file, which nothing reads (the index's
    metadata names its settings)."""
    try:
        os.unlink(ids_path(index_path))
    except FileNotFoundError:
        pass
    except OSError as e:
        raise CliError(
            f"{ids_path(index_path)}: cannot remove the ids file of the index file built before: {e.strerror or e}"
        ) from None


def add(args: argparse.Namespace) -> int:
    index = load_index(args.index, mmap=False)
    recorded = file_settings(index, args.index)
    if recorded is None:
        return _add_with_ids_file(args, index)
    settings = settings_for(args, input_format(args), recorded)
    with open_source(args, shingling=(settings["mode"] or "words", settings["width"])) as source:
        progress = Progress("index add", source.total, args.quiet)
        stored = _Stored(args.index, skip=args.skip_existing)
        stored.ids.update(items_of(index)[1])
        for chunk in prefetch(source.chunks()):
            fps = fingerprints_of(chunk, settings["mode"] or "words", settings["width"], args.threads)
            ids, fps = stored.new(str(args.input), chunk.ids, fps)
            try:
                index.add(fps, ids=_text_ids(ids))
            except TypeError as e:  # keyed by ints: made in Python, its metadata set by hand
                raise CliError(f"{args.index}: {e}") from None
            progress.update(source.position(), source.records)
        save_index(index, args.index)
        _add_summary(args, source, stored, index, progress)
    return 0


def _add_summary(args: argparse.Namespace, source: Any, stored: "_Stored", index: Any, progress: Progress) -> None:
    progress.summary(
        "index add",
        [
            count(source.records - stored.skipped, "record") + " added",
        ]
        + ([f"{stored.skipped:,} skipped (their ids were stored already)"] if args.skip_existing else [])
        + [
            f"{args.index}: {count(len(index), 'item')} ({index.design})",
            bad_lines_part(source),
        ],
        source.nbytes,
    )


def _add_with_ids_file(args: argparse.Namespace, index: Any) -> int:
    """``index add`` to a file of the ids-file era: the index and ``IDX.ids``
    both rewritten, the ids file first."""
    old = IdsFile(args.index)
    try:
        settings = settings_for(args, input_format(args), old.settings)
        with open_source(args, shingling=(settings["mode"] or "words", settings["width"])) as source:
            n_old = len(index)
            progress = Progress("index add", source.total, args.quiet)
            with Outputs() as outs:
                out = IdsWriter(outs.open(old.path), settings)
                spots = spot_positions(n_old)
                positions: List[int] = []
                fps_seen: List[int] = []
                n_copied = 0
                stored = _Stored(args.index, skip=args.skip_existing)
                for _lineno, fp, rid in old.lines(limit=n_old):
                    out.write(b"%d\t%s\n" % (fp, rid), 1)
                    stored.ids.add(rid.decode("utf-8", "replace"))
                    if n_copied in spots:
                        positions.append(n_copied)
                        fps_seen.append(fp)
                    n_copied += 1
                if n_copied < n_old:
                    raise InputError(
                        old.path,
                        None,
                        f"holds {n_copied:,} ids but {args.index} holds {n_old:,} items: the two files do not belong together",
                    )
                check_items(index, old.path, args.index, positions, fps_seen)
                position = n_old
                for chunk in prefetch(source.chunks()):
                    fps = fingerprints_of(chunk, settings["mode"] or "words", settings["width"], args.threads)
                    ids, fps = stored.new(str(args.input), chunk.ids, fps)
                    index.add(fps, ids=np.arange(position, position + len(fps), dtype=np.uint64))
                    _write_ids(out, ids, fps)
                    position += len(fps)
                    progress.update(source.position(), source.records)
                out.finish()
            save_index(index, args.index)
            _add_summary(args, source, stored, index, progress)
    finally:
        old.close()
    return 0


def _read_ids(index: Any, index_path: str) -> Tuple[Optional[List[str]], Dict[str, Any]]:
    """The ids of the index's items (None without an ids file) and the settings."""
    ids_file = IdsFile(index_path, required=False)
    if not ids_file.exists:
        return None, {}
    try:
        n = len(index)
        spots = spot_positions(n)
        ids: List[str] = []
        positions: List[int] = []
        fps: List[int] = []
        for _lineno, fp, rid in ids_file.lines(limit=n):
            if len(ids) in spots:
                positions.append(len(ids))
                fps.append(fp)
            ids.append(rid.decode("utf-8", "replace"))
        if len(ids) < n:
            raise InputError(
                ids_file.path,
                None,
                f"holds {len(ids):,} ids but {index_path} holds {n:,} items: the two files do not belong together",
            )
        check_items(index, ids_file.path, index_path, positions, fps)
        return ids, ids_file.settings
    finally:
        ids_file.close()


def query(args: argparse.Namespace) -> int:
    index = load_index(args.index)
    k = index.k if args.distance is None else args.distance
    if k > index.k:
        raise UsageError(
            f"--distance {k} is more than the k={index.k} that {args.index} answers "
            f"completely; rebuild it with rsimhash index build --distance {k}"
        )
    recorded = file_settings(index, args.index)
    ids: Optional[List[str]] = None  # the index's own ids (strings of a file made by index build)
    if recorded is None:
        ids, recorded = _read_ids(index, args.index)
    settings = settings_for(args, input_format(args), recorded)
    with open_source(args, shingling=(settings.get("mode") or "words", settings.get("width"))) as source, Outputs() as outs:
        out = outs.open(args.output)
        out.write(b"id\tmatched_id\tdistance\n")
        progress = Progress("index query", source.total, args.quiet)
        n_hits = n_matched = 0
        for chunk in prefetch(source.chunks()):
            fps = fingerprints_of(chunk, settings.get("mode") or "words", settings.get("width"), args.threads)
            qi, hit, dist = index.query_batch(fps, k=k)
            names = chunk.ids
            if ids is None:
                rows = [f"{names[q]}\t{h}\t{d}\n" for q, h, d in zip(qi.tolist(), hit.tolist(), dist.tolist())]
            else:
                rows = [f"{names[q]}\t{ids[h]}\t{d}\n" for q, h, d in zip(qi.tolist(), hit.tolist(), dist.tolist())]
            out.write(utf8("".join(rows)))
            n_hits += len(qi)
            n_matched += len(np.unique(qi))
            progress.update(source.position(), source.records)
        progress.summary(
            "index query",
            [
                count(source.records, "record") + " queried",
                f"{n_matched:,} with a match",
                count(n_hits, "match", "matches") + f" within {k} bits",
                bad_lines_part(source),
            ],
            source.nbytes,
        )
    return 0


def info(args: argparse.Namespace) -> int:
    index = load_index(args.index)
    facts: Dict[str, Any] = dict(index.info())
    facts["file"] = args.index
    facts["file_bytes"] = os.path.getsize(args.index)
    items = facts.get("items", len(index))
    facts["file_bytes_per_item"] = round(facts["file_bytes"] / items, 2) if items else None
    recorded = file_settings(index, args.index)
    facts["ids_file"] = None
    if recorded is None:  # a file of the ids-file era, or made in Python
        ids_file = IdsFile(args.index, required=False)
        try:
            facts["ids_file"] = ids_file.path if ids_file.exists else None
            recorded = ids_file.settings
        finally:
            ids_file.close()
    facts["fingerprint_mode"] = recorded.get("mode")
    facts["fingerprint_width"] = recorded.get("width")
    if args.json:
        print(json.dumps(facts))
        return 0
    labels = [
        ("file", "file"),
        ("file_bytes", "file bytes"),
        ("items", "items"),
        ("k", "k"),
        ("tables", "tables"),
        ("design", "design"),
        ("compressed", "compressed tables"),
        ("file_bytes_per_item", "file bytes per item"),
        ("table_bytes_per_item_per_table", "table bytes per item per table"),
        ("nbytes", "memory bytes"),
        ("spec_version", "fingerprint spec version"),
        ("format_version", "file format version"),
        ("ids_file", "ids file"),
        ("fingerprint_mode", "fingerprint mode"),
        ("fingerprint_width", "fingerprint width"),
    ]
    shown = {key for key, _ in labels}
    rows = [(label, facts.get(key)) for key, label in labels if key in facts]
    rows += [(key.replace("_", " "), value) for key, value in facts.items() if key not in shown]
    width = max(len(label) for label, _ in rows)
    for label, value in rows:
        if value is None:
            value = "-"
        elif isinstance(value, int) and not isinstance(value, bool):
            value = f"{value:,}"
        print(f"{label:<{width}}  {value}")
    return 0


def verify(args: argparse.Namespace) -> int:
    index = load_index(args.index, mmap=False)  # checks every checksum, table block and id
    n = len(index)
    if file_settings(index, args.index) is not None or index.info()["keys"] == "str":
        note = _check_own_ids(index, args.index)
        print(f"{args.index}: ok: {count(n, 'item')}, every checksum verified, {note}")
        if sys.stdout is not None:
            sys.stdout.flush()
        return 0
    ids_file = IdsFile(args.index, required=False)
    note = "no ids file"
    try:
        if ids_file.exists:
            step = 1 << 16
            positions: List[int] = []
            fps: List[int] = []
            seen = 0
            for _lineno, fp, _ in ids_file.lines(limit=n):
                positions.append(seen)
                fps.append(fp)
                seen += 1
                if len(positions) == step:
                    check_items(index, ids_file.path, args.index, positions, fps)
                    positions, fps = [], []
            check_items(index, ids_file.path, args.index, positions, fps)
            if seen < n:
                raise InputError(
                    ids_file.path,
                    None,
                    f"holds {seen:,} ids but {args.index} holds {n:,} items: the two files do not belong together",
                )
            note = f"all {seen:,} ids of {ids_file.path} match"
            if ids_file.checksummed:
                note += " and its checksum"
            else:
                note += " (format 1: the file has no checksum; the next index add writes one)"
    finally:
        ids_file.close()
    print(f"{args.index}: ok: {count(n, 'item')}, every checksum verified, {note}")
    if sys.stdout is not None:
        sys.stdout.flush()
    return 0


def _check_own_ids(index: Any, index_path: str) -> str:
    """Checks the ids an index file keeps itself (``load`` checked the name
    table: checksummed, UTF-8, each id once, every item named): one per
    item, and, for a file made by ``index build``, each an id the command
    line can write. Returns what ``verify`` says of them."""
    fps, ids = index.items()
    if len(ids) != len(index) or len(fps) != len(index):
        raise CliError(f"{index_path}: {len(ids):,} ids for {len(index):,} items")
    if index.info()["keys"] == "int":
        return f"{len(ids):,} int ids (the index is keyed by ints: it was not made by rsimhash index build)"
    if len(set(ids.tolist())) != len(ids):
        raise CliError(f"{index_path}: an id is stored twice")
    return f"all {len(ids):,} string ids of its name table distinct, one per item"
