"""The report of one run: its outputs (``Found``) and its input records
(``Shard``s) in, the HTML page out.

Order of work, each step linear in the outputs' rows or the records:

1. the sample of matches is drawn from the outputs' distances or
   similarities (``sample``); a verified ``cluster`` output gives neither, so
   a first pass over the input reads the fingerprints to measure them;
2. one pass over the input (``records.scan``) counts the records and keeps
   the texts of the sampled pairs and of the largest groups' first members
   only, and the fingerprints when the distances come from them;
3. the sampled pairs' similarity is measured exactly on their texts (the
   run's shingles and measure), unless the run gives it; so is each listed
   group member's to the group's first member, and its distance is the
   output's (or, for a member not paired with the first in a find-all
   output, that of their fingerprints);
4. the page (``page``) is written within its size budget.

In verified runs the Hamming distances are those of the candidate
fingerprints (the ``--candidates`` mode and width; ``auto`` as the run
resolves it), so the chart shows where the candidates' ``k`` falls.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np

from . import charts, page, sample
from .found import Found
from .markup import count
from .pairs import Pair
from .records import Scan, Shard, scan

# Who the two sides of a pair are, and the members of a group.
ROLES = {"dedup": ("kept", "removed"), "cluster": ("first member", "member"), "find-all": ("a", "b")}
GROUP_ROLES = {"dedup": ("kept", "removed"), "cluster": ("first", "member"), "find-all": ("first", "linked")}
# (the matches, the groups, the records flagged in the shard chart, the section of groups)
WHAT = {
    "dedup": ("removed records", "groups", "removed", "kept records with the records removed for them"),
    "cluster": ("members", "clusters", "in a cluster", "clusters"),
    "find-all": ("pairs", "groups", "in a pair", "groups of records linked by pairs"),
}


class Run:
    """What the page says about the run beside its outputs: its rule (``k``;
    ``jaccard``, ``measure``, ``candidates``), shingles (``mode``,
    ``width``), table ``design``, ``seconds``, ``command`` line, ``summary``
    line and ``bad_lines``; ``notes`` are shown under the numbers."""

    def __init__(
        self,
        *,
        k: Optional[int] = 3,
        jaccard: Optional[float] = None,
        measure: str = "jaccard",
        mode: str = "words",
        width: Optional[int] = None,
        candidates: Any = "auto",
        design: Optional[str] = None,
        seconds: Optional[float] = None,
        command: Optional[str] = None,
        summary: Optional[str] = None,
        bad_lines: Optional[int] = None,
        title: Optional[str] = None,
        notes: Sequence[str] = (),
    ):
        self.k, self.jaccard, self.measure, self.candidates = k, jaccard, measure, candidates
        self.mode, self.width = mode, width
        self.design, self.seconds, self.command, self.summary = design, seconds, command, summary
        self.bad_lines, self.title, self.notes = bad_lines, title, list(notes)
        self.given_fingerprints = False  # the input holds fingerprints (hash TSV, decimal lines), not texts
        self.records: Optional[int] = None  # records read, when the input cannot be read again (stdin)
        self.distinct: Optional[int] = None

    def fingerprinting(self) -> Tuple[str, Optional[int], Optional[int]]:
        """``(mode, width, k)`` of the fingerprints the distances are of."""
        if self.jaccard is None:
            return self.mode, self.width, self.k
        if self.candidates == "auto":
            from .._rsimhash import auto_candidates

            mode, width, k = auto_candidates(float(self.jaccard))
            return mode, width, k
        mode, width, k = self.candidates
        return mode, width, k


def _flagged(found: Found) -> np.ndarray:
    flag = np.zeros(len(found.names), bool)
    if found.kind == "dedup":
        flag[found.b] = True
    elif found.kind == "cluster":
        big = np.repeat(found.sizes >= 2, found.sizes)
        flag[found.members[big]] = True
    else:
        flag[found.a] = True
        flag[found.b] = True
    return flag


def _largest(found: Found, n: int) -> List[Tuple[int, np.ndarray]]:
    sizes = found.sizes
    order = np.argsort(-sizes, kind="stable")[:n]
    starts = found.starts
    return [(int(sizes[g]), found.members[starts[g] : min(starts[g + 1], starts[g] + page.MEMBERS)]) for g in order.tolist()]


def build(run: Run, found: Found, shards: Sequence[Shard], *, show: int = 200, seed: int = 0) -> Tuple[str, Dict[str, Any]]:
    """The page, and its numbers (``records``, ``removed``, ...) by key."""
    flagged = _flagged(found)
    threshold = run.jaccard
    if found.similarity is not None and threshold is None and len(found.similarity):
        threshold = float(np.floor(found.similarity.min() * 100) / 100)
        run.notes.append(f"The threshold was not given: taken as {threshold:g}, the least similarity found, rounded down.")
        run.jaccard = threshold
    from_fps = found.distance is None
    first: Optional[Scan] = None
    if found.distance is None and found.similarity is None:
        first = scan(shards, found, np.zeros(len(found.names), bool), want_fps=True, flagged=flagged)
        _distances(found, first)
    chosen = sample.choose(found.distance, found.similarity, threshold, show, seed)
    groups = _largest(found, page.GROUPS)
    want = np.zeros(len(found.names), bool)
    want[found.a[chosen]] = True
    want[found.b[chosen]] = True
    for _, members in groups:
        want[members] = True
    sc = scan(shards, found, want, want_fps=from_fps and first is None, flagged=flagged)
    if from_fps and first is None:
        _distances(found, sc)
    pairs = _pairs(run, found, sc, chosen)
    read = first if first is not None else sc if from_fps else None  # the scan that read the fingerprints
    return _page(run, found, sc, pairs, _members(run, found, sc, groups, read), shards, threshold)


def _distances(found: Found, sc: Scan) -> None:
    found.set_distance(sc.fps)
    assert found.distance is not None
    found.distance[~(sc.seen[found.a] & sc.seen[found.b])] = -1  # an id the input does not hold


def _pairs(run: Run, found: Found, sc: Scan, chosen: np.ndarray) -> List[Pair]:
    roles = ROLES[found.kind]
    out: List[Pair] = []
    for i in chosen.tolist():
        a, b = int(found.a[i]), int(found.b[i])
        left, right = sc.texts.get(a), sc.texts.get(b)
        left_id, right_id = found.names[a], found.names[b]
        if found.values:
            if a == b:  # a value given twice: its first two records
                right = sc.second_texts.get(a)
                right_id = f"{found.names[a]} (record {sc.second_ids.get(a, '?')})"
            else:
                right_id = f"{found.names[b]} (record {sc.ids.get(b, '?')})"
            left_id = f"{found.names[a]} (record {sc.ids.get(a, '?')})"
        d = None if found.distance is None or found.distance[i] < 0 else int(found.distance[i])
        s = None if found.similarity is None else float(found.similarity[i])
        out.append(Pair(left_id, right_id, roles[0], roles[1], d, s, left, right))
    if found.similarity is None:
        out = _measured(run, out)
    return out


def _similarities(run: Run, texts: List[Tuple[str, str]]) -> List[float]:
    """The exact similarity of each pair of texts' shingle sets (the run's
    shingles and measure)."""
    from .._rsimhash import pair_similarity, shingle_sets

    if not texts:
        return []
    flat = [t for pair in texts for t in pair]
    width = run.width if run.width is not None else 3
    offsets, hashes = shingle_sets(flat, mode=run.mode, width=width)
    sims = pair_similarity(offsets, hashes, np.arange(len(flat), dtype=np.uint64), measure=run.measure)
    return [float(s) for s in sims.tolist()]


def _measured(run: Run, pairs: List[Pair]) -> List[Pair]:
    """The pairs with the exact similarity of their texts' shingle sets."""
    both = [i for i, p in enumerate(pairs) if p.left is not None and p.right is not None]
    sims = _similarities(run, [(pairs[i].left or "", pairs[i].right or "") for i in both])
    out = list(pairs)
    for i, s in zip(both, sims):
        out[i] = out[i]._replace(similarity=s)
    return out


def _members(
    run: Run, found: Found, sc: Scan, groups: List[Tuple[int, np.ndarray]], read: Optional[Scan]
) -> List[Tuple[int, List[page.Member]]]:
    """The groups listed, each member with its text, and but for the first its
    distance and similarity to the first: the output's for their match (a
    verified run's similarity), else measured (the similarity on the texts,
    the distance of the fingerprints the input gives or of the texts)."""
    head_of: Dict[int, int] = {}  # member code -> its group's first member
    for _, members in groups:
        for c in members[1:].tolist():
            head_of.setdefault(c, int(members[0]))
    match: Dict[Tuple[int, int], int] = {}  # (first, member) -> the output's row
    if head_of and len(found.a):
        is_member = np.zeros(len(found.names), bool)
        is_member[list(head_of)] = True
        for row in np.flatnonzero(is_member[found.a] | is_member[found.b]).tolist():
            a, b = int(found.a[row]), int(found.b[row])
            for first, other in ((a, b), (b, a)):
                if head_of.get(other) == first:
                    match.setdefault((first, other), row)
    unmatched = [(h, c) for c, h in head_of.items() if (h, c) not in match]
    fps: Dict[int, int] = {}
    if unmatched:
        fps = _fingerprints(run, found, sc, read, sorted({x for hc in unmatched for x in hc}))
    measured: Dict[Tuple[int, int], float] = {}
    if found.similarity is None:
        both = [(h, c) for c, h in head_of.items() if h in sc.texts and c in sc.texts]
        sims = _similarities(run, [(sc.texts[h], sc.texts[c]) for h, c in both])
        measured = dict(zip(both, sims))

    def member(first: int, c: int) -> page.Member:
        name = f"{found.names[c]} (record {sc.ids.get(c, '?')})" if found.values else found.names[c]
        if c == first:
            return page.Member(name, sc.texts.get(c), None, None)
        row = match.get((first, c))
        dist: Optional[int] = None
        sim = measured.get((first, c))
        if row is not None:
            if found.distance is not None and found.distance[row] >= 0:
                dist = int(found.distance[row])
            if found.similarity is not None:
                sim = float(found.similarity[row])
        elif first in fps and c in fps:
            from .. import hamming

            dist = int(hamming(fps[first], fps[c]))
        return page.Member(name, sc.texts.get(c), dist, sim)

    return [(size, [member(int(members[0]), c) for c in members.tolist()]) for size, members in groups]


def _fingerprints(run: Run, found: Found, sc: Scan, read: Optional[Scan], codes: List[int]) -> Dict[int, int]:
    """Fingerprints of codes, as the distances are of: the outputs', or those
    a scan read, else of the texts (codes the input does not hold, or holds
    without texts, have none)."""
    if found.hashes is not None:
        return {c: int(found.hashes[c]) for c in codes}
    if read is not None:
        return {c: int(read.fps[c]) for c in codes if read.seen[c]}
    if run.given_fingerprints or not sc.has_texts:
        return {}
    from .. import fingerprints

    have = [c for c in codes if c in sc.texts]
    mode, width, _ = run.fingerprinting()
    values = fingerprints([sc.texts[c] for c in have], mode=mode, width=width).tolist() if have else []
    return dict(zip(have, (int(v) for v in values)))


def _numbers(run: Run, found: Found, sc: Scan) -> page.Numbers:
    nums = page.Numbers()
    records = sc.total if run.records is None else run.records
    distinct = sc.distinct if run.records is None else run.distinct
    what = "fingerprints read" if found.values else "records read"
    nums.add("records", what, records)
    if found.values and distinct is not None:
        nums.add("distinct", "distinct fingerprints", distinct)
    if found.kind == "dedup":
        nums.add("removed", "removed as near-duplicates", len(found.b))
        nums.add("kept", "kept", records - len(found.b))
    elif found.kind == "cluster":
        nums.add("clusters", "clusters", len(found.sizes))
        nums.add("clustered", "records in clusters", int(found.sizes.sum()))
    else:
        nums.add("pairs", "pairs", len(found.a))
    if run.bad_lines is not None:
        nums.add("bad_lines", "bad lines skipped", run.bad_lines)
    mode, width, k = run.fingerprinting()
    if run.jaccard is not None:
        nums.add("threshold", f"{run.measure} at least", f"{run.jaccard:g}", run.jaccard)
        nums.add("candidates", "candidates", f"fingerprints of {mode} {width} within {k} bits", k)
        nums.add("shingles", "shingles compared", f"{run.mode} of {run.width or 3}")
    else:
        nums.add("k", "within (bits)", k if k is not None else "?", known=k is not None)
        if run.given_fingerprints:
            nums.add("shingles", "fingerprints", "read from the input")
        else:
            nums.add("shingles", "fingerprints of", f"{mode} of {width or (3 if mode == 'words' else 4)}")
    if run.design:
        nums.add("design", "table design", run.design)
    nums.add(
        "seconds",
        "time",
        f"{run.seconds:.1f} s" if run.seconds is not None else "not known",
        round(run.seconds, 3) if run.seconds is not None else None,
        known=run.seconds is not None,
    )
    if run.command:
        nums.add("command", "command line", run.command)
    if run.summary:
        nums.add("summary", "summary line", run.summary)
    return nums


def _page(
    run: Run,
    found: Found,
    sc: Scan,
    pairs: List[Pair],
    groups: List[Tuple[int, List[page.Member]]],
    shards: Sequence[Shard],
    threshold: Optional[float],
) -> Tuple[str, Dict[str, Any]]:
    from .. import __version__
    from .markup import text

    what_matches, what_groups, flagged_what, groups_title = WHAT[found.kind]
    mode, width, k = run.fingerprinting()
    nums = _numbers(run, found, sc)
    notes = list(run.notes)
    unseen = int(np.count_nonzero(~sc.seen))
    if unseen and run.records is None:  # (an input read only by the run names none)
        notes.append(
            f"{count(unseen)} of the {count(len(found.names))} ids the outputs name are not in the input: "
            "is it the run's input? Their texts and distances are missing here."
        )
    if not sc.has_texts:
        notes.append("The input holds fingerprints, not texts: the pairs are shown without their texts.")
    numbers = nums.html() + "".join(f'<p class="warn">{text(n)}</p>' for n in notes)
    figures = []
    dist = found.distance[found.distance >= 0] if found.distance is not None else np.zeros(0, np.int16)
    of = {
        "dedup": "each removed record to the kept record it matched",
        "cluster": "each member to its cluster's first member",
        "find-all": "the pairs",
    }[found.kind]
    if found.distance is not None:
        fps = "fingerprints" if run.given_fingerprints else f"fingerprints ({mode} of {width or (3 if mode == 'words' else 4)})"
        fps = "candidate " + fps if run.jaccard is not None else fps
        figures.append(
            charts.hamming(
                dist,
                k,
                unit=what_matches,
                title=f"Hamming distance of the {fps} of {of}" + (f"; k = {k} dashed" if k is not None else ""),
            )
        )
    if found.similarity is not None:
        figures.append(
            charts.similarity(
                found.similarity,
                threshold,
                run.measure,
                unit=what_matches,
                title=f"{run.measure.capitalize()} similarity of {of}"
                + (f" (at least {threshold:g})" if threshold is not None else ""),
            )
        )
    figures.append(charts.sizes_loglog(found.sizes, what=what_groups))
    if len(shards) > 1:
        figures.append(charts.shards([s.name for s in shards], sc.records, sc.flagged, what=flagged_what))
    roles = GROUP_ROLES[found.kind]
    how = (
        "drawn across the distance range (each distance has an equal share)"
        if found.similarity is None
        else "drawn across the similarity range (each tenth of it has an equal share, exact copies apart)"
    )
    how += ", so the borderline pairs are there"
    max_d = int(dist.max()) if len(dist) else None
    if max_d is not None and k is not None:
        max_d = max(max_d, k)
    sim_range = None
    sims = [p.similarity for p in pairs if p.similarity is not None]
    if found.similarity is not None and sims:
        sim_range = (float(np.floor(min(sims) * 100) / 100), 1.0)
    sections = [
        ("numbers", "The run in numbers", numbers),
        ("charts", "Charts", f'<div class="charts">{"".join(figures)}</div>'),
        (
            "groups",
            f"The largest {groups_title}",
            page.groups_html(groups, groups_title, roles, len(found.sizes), run.measure, sc.has_texts),
        ),
        ("pairs", "A sample of pairs", page.pairs_html(pairs, len(found.a), how, run.measure, max_d, sim_range)),
    ]
    kind = found.kind
    title = run.title or f"rsimhash {kind} report"
    rule = f"{run.measure} at least {run.jaccard:g}" if run.jaccard is not None else f"within {k} bits"
    records = sc.total if run.records is None else run.records
    html = page.document(title, f"{kind}, {rule}, {count(records)} records", sections, __version__)
    values = {key: raw for key, _, _, raw in nums.rows}
    return html, values
