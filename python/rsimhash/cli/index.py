"""``rsimhash index build|add|query|info|verify``: persistent index files.

An index file (``Index.save``) stores ``uint64`` ids only, so the command line
keeps the records' own ids, int or string, in a second file beside it,
``IDX.ids``: a first line ``# rsimhash index ids, format 2: {...}`` holding
the fingerprint settings as JSON (``mode`` and ``width``; ``null`` when the
index was built from hashes), then one line ``hash<TAB>id`` per item, item
``i`` of the index (its ``uint64`` id ``i``) on line ``i + 2``, and a last
line ``# rsimhash index ids end: N lines, crc32 XXXXXXXX``: the number of
id lines and the CRC-32 of every byte before that line, checked whenever the
file is read (``query``, ``add``, ``verify``), so an edited id or settings
line is an error, never a wrong id. The settings make ``add`` and ``query``
fingerprint texts exactly as ``build`` did. Files of format 1 (no end line,
written before the checksum) are still read, checked only by the spot checks
below; ``verify`` says they have no checksum, and the next ``add`` rewrites
them in format 2.

Both files are replaced atomically, the ids file first: a crash between the
two leaves an ids file with lines for items the index does not hold, which
are ignored (an index of N items reads the first N). Every use checks a
sample of the lines against the index (``verify`` checks all of them), so a
pair of files that do not belong together is an error, never wrong ids.
Only one process should change an index at a time.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import zlib
from typing import Any, BinaryIO, Dict, Iterator, List, Optional, Tuple

import numpy as np

from .errors import CliError, InputError, UsageError, utf8
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
from .outputs import Output, Outputs
from .pipeline import fingerprints_of, prefetch
from .progress import Progress, count
from .shards import input_format

HELP = "persistent index files: build, add, query, info, verify"
DESCRIPTION = """\
Build an index file from a corpus or a hash TSV, add more records to it,
probe a batch of new records against it, show what it holds, or check it.
The records' own ids are kept in IDX.ids beside the index file IDX.

examples:
  rsimhash index build --input corpus.jsonl --output corpus.rsh
  rsimhash index add corpus.rsh --input more.jsonl
  rsimhash index query corpus.rsh --input new.jsonl --output matches.tsv
  rsimhash index info corpus.rsh
  rsimhash index verify corpus.rsh
"""

IDS_MAGIC = b"# rsimhash index ids, format 2: "
IDS_MAGIC_V1 = b"# rsimhash index ids, format 1: "
IDS_END = b"# rsimhash index ids end: "
SPOT_CHECKS = 64


def add_arguments(p: argparse.ArgumentParser) -> None:
    sub = p.add_subparsers(dest="index_command", metavar="ACTION", title="actions")
    sub.required = True

    def action(name: str, help: str, description: str) -> argparse.ArgumentParser:
        return sub.add_parser(name, help=help, description=description, formatter_class=argparse.RawDescriptionHelpFormatter)

    b = action(
        "build",
        "build an index file from records or hashes",
        "Fingerprint the input (or read its hashes) and write an index file and its ids file "
        "IDX.ids.\n\nexample:\n  rsimhash index build --input corpus.jsonl --output corpus.rsh",
    )
    add_input(b, shards=True)
    b.add_argument("--output", "-o", metavar="IDX", required=True, help="the index file to write (and IDX.ids)")
    add_text(b)
    add_distance(b, what="items the index answers completely")
    add_run(b)
    b.set_defaults(run=build)

    a = action(
        "add",
        "add records or hashes to an index file",
        "Add the input's records to an index file and its ids file, fingerprinted as at build "
        "time.\n\nexample:\n  rsimhash index add corpus.rsh --input more.jsonl",
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
        "check every checksum of an index file and its ids file",
        "Load the index file checking every checksum and table block, and check every line of "
        "IDX.ids against it. Prints one line; exit code 0 when all is well, 1 otherwise."
        "\n\nexample:\n  rsimhash index verify corpus.rsh",
    )
    v.add_argument("index", metavar="IDX", help="the index file")
    v.set_defaults(run=verify)


# -- the index file and its ids file ------------------------------------------------


def ids_path(index_path: str) -> str:
    return index_path + ".ids"


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


class IdsFile:
    """Reader of ``IDX.ids``: the settings line, then ``(lineno, hash, id)``
    lines; the end line's count and checksum are checked when the lines have
    been read (format 2)."""

    def __init__(self, index_path: str, required: bool = True):
        self.path = ids_path(index_path)
        self.index_path = index_path
        self.settings: Dict[str, Any] = {}
        self.file: Optional[BinaryIO] = None
        self.checksummed = False  # format 2: an end line with the count and CRC
        try:
            self.file = open(self.path, "rb")
        except FileNotFoundError:
            if required:
                raise InputError(
                    self.path, None, f"is missing: {index_path} was not made by rsimhash index build (or the ids file was moved)"
                ) from None
            return
        except OSError as e:
            raise InputError(self.path, None, f"cannot read: {e.strerror or e}") from None
        first = self.file.readline()
        self._crc = zlib.crc32(first)
        if first.startswith(IDS_MAGIC):
            self.checksummed = True
        elif not first.startswith(IDS_MAGIC_V1):
            raise InputError(
                self.path, 1, f"is not an rsimhash ids file (its first line should start with {IDS_MAGIC.decode()!r})"
            )
        try:
            settings = json.loads(first[len(IDS_MAGIC) :])
            if not isinstance(settings, dict):
                raise ValueError("not an object")
        except ValueError:
            raise InputError(self.path, 1, "the settings after the first line's colon are not a JSON object") from None
        self.settings = settings

    @property
    def exists(self) -> bool:
        return self.file is not None

    def lines(self, limit: Optional[int] = None) -> Iterator[Tuple[int, int, bytes]]:
        """``(lineno, hash, id)`` of the first ``limit`` items (all by default).
        A checksummed file is read to its end line, which must match."""
        assert self.file is not None
        lineno = 1
        crc = self._crc
        for n, line in enumerate(self.file):
            lineno += 1
            if self.checksummed and line.startswith(IDS_END):
                self._check_end(line, lineno, n, crc)
                return
            crc = zlib.crc32(line, crc)
            if limit is not None and n >= limit:
                if not self.checksummed:
                    return
                continue  # lines past the index's items: not used, but checksummed
            fp, tab, rid = line.rstrip(b"\n").partition(b"\t")
            if not tab or not fp.isdigit() or int(fp) >= 1 << 64:
                raise InputError(self.path, lineno, "expected 'hash<TAB>id'")
            yield lineno, int(fp), rid
        if self.checksummed:
            raise InputError(
                self.path,
                None,
                "is cut short: its end line (count and checksum) is missing; rebuild it with rsimhash index build",
            )

    def _check_end(self, line: bytes, lineno: int, count: int, crc: int) -> None:
        expected = ids_end(count, crc)
        if line != expected:
            raise InputError(
                self.path,
                lineno,
                "fails its checksum: the file was edited or damaged after it "
                "was written (ids, order or settings changed); rebuild it with "
                "rsimhash index build",
            )
        if self.file is not None and self.file.read(1):
            raise InputError(self.path, lineno + 1, "has lines after its end line: the file was edited or damaged")

    def close(self) -> None:
        if self.file is not None:
            self.file.close()


def ids_header(settings: Dict[str, Any]) -> bytes:
    return IDS_MAGIC + json.dumps(settings, sort_keys=True).encode() + b"\n"


def ids_end(count: int, crc: int) -> bytes:
    """The end line of an ids file of ``count`` id lines whose bytes before it have CRC-32 ``crc``."""
    return IDS_END + b"%d lines, crc32 %08x\n" % (count, crc & 0xFFFFFFFF)


class IdsWriter:
    """Writes an ids file through an ``Output``: the settings line, id
    lines, then (``finish``) the end line with their count and checksum."""

    def __init__(self, out: Output, settings: Dict[str, Any]):
        self.out = out
        self.count = 0
        self.crc = 0
        self.write(ids_header(settings), 0)

    def write(self, data: bytes, lines: int) -> None:
        self.crc = zlib.crc32(data, self.crc)
        self.count += lines
        self.out.write(data)

    def finish(self) -> None:
        self.out.write(ids_end(self.count, self.crc))


def check_items(index: Any, ids_file: str, index_path: str, positions: List[int], fps: List[int]) -> None:
    """Raises unless item ``positions[j]`` of the index has fingerprint ``fps[j]``."""
    if not positions:
        return
    pos = np.asarray(positions, dtype=np.uint64)
    qi, hit, _ = index.query_batch(np.asarray(fps, dtype=np.uint64), k=0)
    ok = np.zeros(len(pos), dtype=bool)
    ok[qi[hit == pos[qi]]] = True
    if not ok.all():
        bad = int(np.flatnonzero(~ok)[0])
        raise InputError(
            ids_file,
            positions[bad] + 2,
            f"does not belong to {index_path}: its item {positions[bad]} has another "
            "fingerprint (rebuild both with rsimhash index build)",
        )


def spot_positions(n: int) -> "set[int]":
    """Items checked on every use: evenly spread, the first and the last."""
    if n == 0:
        return set()
    return set(np.linspace(0, n - 1, min(n, SPOT_CHECKS)).astype(np.int64).tolist())


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
        progress = Progress("index build", source.total, args.quiet)
        stored = _Stored(args.output, building=True)
        with Outputs() as outs:
            out = IdsWriter(outs.open(ids_path(args.output)), settings)
            for chunk in prefetch(source.chunks()):
                fps = fingerprints_of(chunk, settings["mode"] or "words", settings["width"], args.threads)
                ids, fps = stored.new(str(args.input), chunk.ids, fps)
                index.add(fps)  # ids 0, 1, 2, ...: line i + 2 of the ids file
                _write_ids(out, ids, fps)
                progress.update(source.position(), source.records)
            out.finish()
        save_index(index, args.output)
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


def add(args: argparse.Namespace) -> int:
    index = load_index(args.index, mmap=False)
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
    ids_file = IdsFile(args.index, required=False)
    try:
        facts["ids_file"] = ids_file.path if ids_file.exists else None
        facts["fingerprint_mode"] = ids_file.settings.get("mode")
        facts["fingerprint_width"] = ids_file.settings.get("width")
    finally:
        ids_file.close()
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
    index = load_index(args.index, mmap=False)  # checks every checksum and table block
    n = len(index)
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
