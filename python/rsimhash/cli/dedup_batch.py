"""``rsimhash dedup`` through the batch engine, for inputs whose index would
not fit in memory: two passes over the input.

1. The records are read and fingerprinted; the fingerprints go to a
   ``.npy`` spill file in the work directory (8 bytes a record), and, for
   ``--removed``, the ids to an ids file.
2. ``rsimhash.batch.dedup`` gives the keep mask and, for each removed
   record, the earliest kept record within K bits: the answer of
   ``Index.add_unique`` over the records in order, found one table at a
   time within the memory limit.
3. The input is read again (stdin from its copy in the work directory) and
   the kept records are written exactly as the one-pass path writes them;
   bad lines skipped in the first pass are skipped again, silently.
"""

from __future__ import annotations

import argparse
from typing import Any, Iterator, List, Optional

import numpy as np

from .dedup_writer import KeptWriter, bits, summary, write_removed
from .inputs import Chunk, Source
from .options import open_source
from .outputs import Output
from .pipeline import fingerprints_of, prefetch
from .progress import Progress
from .spill import Fingerprints, Ids, Workspace, engine_part


def dedup_batch(
    args: argparse.Namespace,
    source: Source,
    chunks: Iterator[Chunk],
    out: Output,
    removed: Optional[Output],
    limit: int,
    workspace: Workspace,
    path: str,
) -> int:
    from .. import batch

    # Pass 1: fingerprints (and ids) to spill files.
    progress = Progress("dedup", source.total, args.quiet)
    store = Fingerprints(0, workspace)
    saving = getattr(args, "save_fingerprints", None) is not None
    ids = Ids(0, workspace) if removed is not None or saving else None
    try:
        for chunk in chunks:
            store.add(fingerprints_of(chunk, args.mode, args.width, args.threads))
            if ids is not None:
                ids.extend(chunk.ids)
            progress.update(source.position(), source.records)
        fps_source = store.finish()
    finally:
        store.close()
    if ids is not None:
        ids.finish()
    progress.close()
    stores = getattr(args, "against_stores", None)
    job = dict(
        return_matched=True,
        blocks=args.blocks,
        memory_limit=limit,
        workdir=workspace.path,
        threads=args.threads,
        progress=False if args.quiet else None,
    )
    in_old = None
    if stores is not None and len(stores):
        # Against the stores: the new records held, the stored ones streamed past them.
        keep, matched, in_old = batch.dedup(fps_source, args.distance, against=stores.paths, **job)
    else:
        keep, matched = batch.dedup(fps_source, args.distance, **job)
    fps: Any = np.load(fps_source, mmap_mode="r") if isinstance(fps_source, str) else fps_source

    # Pass 2: the kept records, as read.
    n_removed = int(len(keep) - np.count_nonzero(keep))
    again_progress = Progress("dedup: writing", source.total, args.quiet)
    with open_source(args, need_ids=False, full_rows=True, path=path, quiet_bad_lines=True, shingling=None) as again:
        writer = KeptWriter(out, again)
        position = 0
        for chunk in prefetch(again.chunks()):
            n = len(chunk)
            is_new = keep[position : position + n]
            writer.write(chunk, is_new)
            if removed is not None and ids is not None:
                gone = np.flatnonzero(~is_new) + position
                if len(gone):
                    _write_removed(removed, ids, stores, fps, gone, matched, in_old)
            position += n
            again_progress.update(again.position(), again.records)
        writer.close()
    if saving and ids is not None:
        from .store import save as save_store  # `store` is the spilled fingerprints here

        kept = np.flatnonzero(keep)
        save_store(args.save_fingerprints, args, np.asarray(fps[kept]), ids.text(kept.tolist()))
    if ids is not None:
        ids.close()
    again_progress.close()
    summary(progress, args, source, n_removed, [engine_part(workspace)])
    return 0


def _write_removed(removed: Output, ids: Any, stores: Any, fps: Any, gone: np.ndarray, matched: Any, in_old: Any) -> None:
    """``--removed`` rows of removed records at positions ``gone``, in order:
    each names the kept record it matched, in this input or in a store."""
    others = matched[gone]
    old = in_old[gone] if in_old is not None else np.zeros(len(gone), dtype=bool)
    names: List[str] = ids.text(gone.tolist())
    other_names: List[str] = [""] * len(gone)
    other_fps = np.empty(len(gone), dtype=np.uint64)
    new_at = np.flatnonzero(~old)
    for i, name in zip(new_at.tolist(), ids.text(others[new_at].tolist())):
        other_names[i] = name
    other_fps[new_at] = fps[others[new_at]]
    old_at = np.flatnonzero(old)
    if len(old_at):
        for i, name in zip(old_at.tolist(), stores.ids(others[old_at])):
            other_names[i] = name
        other_fps[old_at] = stores.fingerprints(others[old_at])
    write_removed(removed, names, other_names, bits(fps[gone], other_fps).tolist())
