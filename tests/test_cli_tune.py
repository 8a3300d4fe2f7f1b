"""``rsimhash tune`` run in-process through ``rsimhash.cli.main`` (stdin in a
subprocess, as it is read from its file descriptor): its truth,
plain-simhash rows, verified options and recommendation checked against
references computed here independently (shingle sets of
``reference_v1.tokens``, all-pairs Hamming distances by a byte popcount),
the recommended ``similar_pairs`` call run on the same texts, ``--plot``
with and without matplotlib, outputs that cannot be written, bad arguments
and the two ways of sampling.

The corpus: 400 documents of 150-300 random words, 84 planted copies of
distinct documents with isolated words replaced (so their word 3-shingle
Jaccard is about (m - 3e) / (m + 3e)): exact copies, copies in capitals
with punctuation (equal under SPEC v1 tokenisation), copies at Jaccard 0.9
to 0.99 and copies at 0.8 to 0.9; and two texts without a token (two empty
sets are alike: similarity 1). Shuffled, so any prefix holds some pairs.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import random
import re
import shlex
import struct
import sys
import zlib
from dataclasses import dataclass
from itertools import combinations
from typing import Any, Dict, List, Sequence, Set, Tuple

import numpy as np
import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

import reference_v1 as ref  # noqa: E402
from cli_helpers import leftovers, ok, run_cli  # noqa: E402

rsimhash = pytest.importorskip("rsimhash")
from rsimhash.cli import (
    main,  # noqa: E402
    tune_plot,  # noqa: E402
)
from rsimhash.cli import tune as tune_module  # noqa: E402

MODES = (("words", 3), ("chars", 4), ("words", 1))  # the columns of the plain table, in order
TARGETS = (0.95, 0.97, 0.99)
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
INSTALL = 'pip install "rsimhash[plot]"'

Pair = Tuple[int, int]


# -- running the command ------------------------------------------------------------------


@dataclass
class Run:
    code: int
    out: str
    err: str
    args: List[str]

    def json_out(self) -> Dict[str, Any]:
        return json.loads(self.out)


def tune(*args: Any) -> Run:
    """``rsimhash tune ARGS`` in this process; stdout and stderr captured
    (with a ``.buffer``, as the outputs to ``-`` write bytes). An exception
    that escapes ``main`` fails the test with its traceback."""
    out, err = io.BytesIO(), io.BytesIO()
    stdout = io.TextIOWrapper(out, encoding="utf-8", newline="", write_through=True)
    stderr = io.TextIOWrapper(err, encoding="utf-8", newline="", write_through=True)
    argv = [os.fspath(a) if isinstance(a, os.PathLike) else str(a) for a in args]
    with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
        code = main(["tune", *argv])
    stdout.flush()
    stderr.flush()
    return Run(code, out.getvalue().decode("utf-8"), err.getvalue().decode("utf-8"), argv)


def succeeded(run: Run) -> Run:
    assert run.code == 0, run.err
    assert "Traceback" not in run.err
    lines = run.err.splitlines()
    if "-q" in run.args or "--quiet" in run.args:
        assert lines == []
    else:  # the summary line, and nothing else (no progress bar: stderr is not a terminal)
        assert len(lines) == 1 and lines[0].startswith("rsimhash tune: "), lines
    return run


def one_error(run: Run, code: int, *needles: str) -> str:
    """A failed run: exit ``code``, one stderr line ``rsimhash: error: ...``
    holding every needle, nothing on stdout, no traceback."""
    lines = run.err.splitlines()
    assert run.code == code, (run.code, lines)
    assert "Traceback" not in run.err
    assert len(lines) == 1 and lines[0].startswith("rsimhash: error: "), lines
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])
    assert run.out == ""
    return lines[0]


# -- the corpus and the references ---------------------------------------------------------


@dataclass
class Corpus:
    path: Any
    texts: List[str]
    high: Set[Pair]  # planted pairs at Jaccard >= 0.9 (positions, smaller first)
    mid: Set[Pair]  # planted pairs at 0.8 <= Jaccard < 0.9


def _edit(rng: random.Random, words: List[str], vocab: List[str], jaccard: float) -> List[str]:
    """``words`` with isolated words replaced so that the word 3-shingle sets
    are about ``jaccard`` alike: e edits 3 apart change 3e of m shingles."""
    m = len(words) - 2
    e = max(1, round(m * (1 - jaccard) / (3 * (1 + jaccard))))
    out = list(words)
    for p in rng.sample(range(2, len(words) - 2, 3), e):
        out[p] = rng.choice([w for w in rng.sample(vocab, 3) if w != words[p]])
    return out


def make_corpus(directory: Any, seed: int = 11) -> Corpus:
    rng = random.Random(seed)
    vocab = sorted({"".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(2, 9))) for _ in range(4000)})
    base = [[rng.choice(vocab) for _ in range(rng.randint(150, 300))] for _ in range(400)]
    docs: List[Tuple[str, int]] = [(" ".join(w), i) for i, w in enumerate(base)]  # (text, its base)
    sources = rng.sample(range(len(base)), 84)
    for n, b in enumerate(sources):
        if n < 2:
            text = " ".join(base[b])  # exact copy
        elif n < 4:
            text = ". ".join(w.upper() if i % 2 else w.capitalize() + "," for i, w in enumerate(base[b]))
        elif n < 50:
            text = " ".join(_edit(rng, base[b], vocab, rng.uniform(0.91, 0.99)))
        else:
            text = " ".join(_edit(rng, base[b], vocab, rng.uniform(0.81, 0.885)))
        docs.append((text, b))
    docs += [("", -1), (" -- !? -- ", -2)]  # no tokens: empty sets
    rng.shuffle(docs)
    texts = [t for t, _ in docs]
    where: Dict[int, List[int]] = {}
    for pos, (_, b) in enumerate(docs):
        where.setdefault(b, []).append(pos)
    sets = [word_set(t) for t in texts]
    high, mid = set(), set()
    for b in sources:
        a, c = sorted(where[b])
        j = jaccard(sets[a], sets[c])
        assert abs(j - 0.9) > 1e-6, "a planted pair on the threshold: change the seed"
        (high if j >= 0.9 else mid if j >= 0.8 else set()).add((a, c))
    assert len(high) >= 40 and len(mid) >= 25, (len(high), len(mid))
    path = directory / "corpus.jsonl"
    path.write_text("".join(json.dumps({"id": i, "text": t}) + "\n" for i, t in enumerate(texts)), "utf-8")
    return Corpus(path, texts, high, mid)


def word_set(text: str, width: int = 3) -> Set[str]:
    return set(ref.word_shingles(ref.tokens(text), width))


def char_set(text: str, width: int) -> Set[str]:
    return set(ref.char_ngrams(ref.tokens(text), width))


def jaccard(a: Set[str], b: Set[str]) -> float:
    if not a and not b:
        return 1.0  # as similar_pairs defines it
    return len(a & b) / len(a | b)


def true_pairs(sets: Sequence[Set[str]], t: float) -> Dict[Pair, float]:
    """Every pair at Jaccard >= t, exactly: pairs of non-empty sets share a
    shingle (an inverted index finds them all), and empty sets pair up."""
    owners: Dict[str, List[int]] = {}
    for i, s in enumerate(sets):
        for sh in s:
            owners.setdefault(sh, []).append(i)
    sharing = {p for ids in owners.values() for p in combinations(ids, 2)}
    empty = [i for i, s in enumerate(sets) if not s]
    out = {p: jaccard(sets[p[0]], sets[p[1]]) for p in sharing | set(combinations(empty, 2))}
    return {p: j for p, j in sorted(out.items()) if j >= t}


def true_pairs_all(sets: Sequence[Set[str]], t: float) -> Dict[Pair, float]:
    """The same by brute force over all pairs (for sets sharing much)."""
    out = {}
    for a, b in combinations(range(len(sets)), 2):
        small, large = sorted((len(sets[a]), len(sets[b])))
        if small >= t * large - 1e-9:
            j = jaccard(sets[a], sets[b])
            if j >= t:
                out[(a, b)] = j
    return out


_POPCOUNT = np.array([bin(i).count("1") for i in range(256)], dtype=np.int64)


def distances(fps: np.ndarray) -> np.ndarray:
    """All-pairs Hamming distances, (n, n), by a byte-table popcount."""
    x = np.ascontiguousarray(fps[:, None] ^ fps[None, :], dtype=np.uint64)
    return _POPCOUNT[x.view(np.uint8)].reshape(len(fps), len(fps), 8).sum(axis=2)


@dataclass
class Plain:
    mode: str
    width: int
    found: List[int]
    true: List[int]
    truth: int

    def precision(self, k: int) -> Any:
        return self.true[k] / self.found[k] if self.found[k] else None

    def recall(self, k: int) -> Any:
        return self.true[k] / self.truth if self.truth else None

    def f1(self, k: int) -> Any:
        p, r = self.precision(k), self.recall(k)
        return None if p is None or r is None or p + r == 0 else 2 * p * r / (p + r)


def brute_plain(texts: List[str], truth: Sequence[Pair], max_k: int) -> List[Plain]:
    """Pairs within each k and true pairs among them, per mode, by brute force."""
    out = []
    upper = np.triu_indices(len(texts), k=1)
    for mode, width in MODES:
        d = distances(rsimhash.fingerprints(texts, mode=mode, width=width)) if texts else np.zeros((0, 0), int)
        pair_d = d[upper]
        true_d = [int(d[a, b]) for a, b in truth]
        out.append(
            Plain(
                mode,
                width,
                [int((pair_d <= k).sum()) for k in range(max_k + 1)],
                [sum(x <= k for x in true_d) for k in range(max_k + 1)],
                len(truth),
            )
        )
    return out


def within(texts: List[str], pairs: Sequence[Pair], mode: str, width: int, k: int) -> Set[Pair]:
    fps = rsimhash.fingerprints(texts, mode=mode, width=width)
    return {p for p in pairs if rsimhash.hamming(int(fps[p[0]]), int(fps[p[1]])) <= k}


def approx(x: Any) -> Any:
    return None if x is None else pytest.approx(x, rel=1e-12, abs=1e-12)


def pairs_of(result: Tuple[np.ndarray, np.ndarray]) -> Dict[Pair, float]:
    pairs, sims = result
    return {(int(a), int(b)): float(s) for (a, b), s in zip(pairs.tolist(), sims.tolist())}


def write_texts(path: Any, texts: Sequence[str]) -> Any:
    path.write_text("".join(json.dumps({"text": t}) + "\n" for t in texts), "utf-8")
    return path


# -- fixtures ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Corpus:
    return make_corpus(tmp_path_factory.mktemp("tune"))


@pytest.fixture(scope="module")
def truth(corpus) -> Dict[Pair, float]:
    return true_pairs([word_set(t) for t in corpus.texts], 0.9)


@pytest.fixture(scope="module")
def measured(corpus, tmp_path_factory) -> Tuple[Run, Dict[str, Any]]:
    """One run at --jaccard 0.9 on the whole corpus: its output and its JSON."""
    out = tmp_path_factory.mktemp("tune-json") / "out.json"
    run = succeeded(tune("--input", corpus.path, "--jaccard", "0.9", "--json", out))
    return run, json.loads(out.read_text("utf-8"))


# -- the figures against independent references -------------------------------------------


def test_tokenisation_of_the_reference_is_the_specs():
    """The truth here rests on reference_v1's tokens: words of letters,
    lower-cased, anything else a separator."""
    assert ref.tokens("Abc, DEF.ghi  jk") == ["abc", "def", "ghi", "jk"]
    assert ref.tokens(" -- !? -- ") == []
    assert word_set("a b c d") == {"a b c", "b c d"} and word_set("A, b") == {"a b"}
    assert list(rsimhash.shingles("Abc, DEF.ghi jk")) == sorted(ref.fnv1a64(s) for s in word_set("abc def ghi jk"))


def test_truth_equals_the_exact_jaccard_pairs(corpus, truth, measured):
    run, fig = measured
    assert set(corpus.high) <= set(truth) and not set(corpus.mid) & set(truth)
    assert fig["truth"]["pairs"] == [list(p) for p in truth]
    assert fig["truth"]["similarity"] == [approx(j) for j in truth.values()]
    assert fig["truth"]["compared"] >= len(truth)
    assert fig["threshold"] == 0.9 and fig["shingles"] == "words" and fig["width"] == 3
    n = len(corpus.texts)
    assert fig["sample"] == dict(
        documents=n, how=f"all {n} records", lines=list(range(1, n + 1)), input_records=n, input_records_exact=True
    )
    assert fig["expected_size"] == n


@pytest.mark.parametrize("threshold", ["0.25", "0.5", "0.6", "0.75", "0.8", "1"])
def test_truth_of_small_overlapping_sets(threshold, tmp_path):
    """Sets of single words from a small vocabulary: many pairs share some
    words, some sit exactly on the threshold, some are empty or equal. The
    prefix and size filters must miss none of them."""
    rng = random.Random(int(float(threshold) * 100))
    vocab = [f"w{i}" for i in range(12)]
    texts = [" ".join(rng.sample(vocab, rng.randint(1, 8))) for _ in range(80)] + ["", "", "w1 w2 w3"]
    # and on each threshold: 1/4, 2/4, 3/5, 3/4, 4/5, 8/10
    texts += [
        "w1",
        "w1 w2 w3 w4",
        "w5 w6",
        "w5 w6 w7 w8",
        "w0 w9 w10",
        "w0 w9 w10 w11 w1",
        "w4 w3 w2",
        "w2 w3 w4 w5",
        "w1 w2 w3 w4 w5",
        "w11 w10 w9 w8 w7 w6 w5 w4",
        "w11 w10 w9 w8 w7 w6 w5 w4 w3 w2",
    ]
    rng.shuffle(texts)
    path = write_texts(tmp_path / "small.jsonl", texts)
    fig = succeeded(tune("-i", path, "--width", "1", "--jaccard", threshold, "--max-k", "3", "-q", "--json", "-")).json_out()
    truth = true_pairs_all([word_set(t, 1) for t in texts], float(threshold))
    assert fig["truth"]["pairs"] == [list(p) for p in truth]
    assert fig["truth"]["similarity"] == [approx(j) for j in truth.values()]
    assert any(j == float(threshold) for j in truth.values()), "pairs on the threshold"
    assert len(truth) < len(texts) * (len(texts) - 1) / 4, "pairs below the threshold too"


def test_plain_rows_equal_brute_force_hamming(corpus, truth, measured):
    _, fig = measured
    plain = brute_plain(corpus.texts, list(truth), 10)
    expected = [
        dict(
            mode=c.mode,
            width=c.width,
            k=k,
            found=c.found[k],
            true=c.true[k],
            precision=approx(c.precision(k)),
            recall=approx(c.recall(k)),
            f1=approx(c.f1(k)),
        )
        for c in plain
        for k in range(11)
    ]
    assert fig["plain"] == expected
    # the corpus must make the rows worth checking: pairs found that are not true, and true pairs missed
    assert any(c.found[10] > c.true[10] for c in plain) and any(c.true[0] < c.truth for c in plain)


def test_verified_options_and_recommendation_equal_brute_force(corpus, truth, measured):
    _, fig = measured
    plain = brute_plain(corpus.texts, list(truth), 10)
    assert [v["target"] for v in fig["verified"]] == list(TARGETS)
    for v in fig["verified"]:
        options = []
        for c in plain:
            k = next((k for k in range(11) if c.recall(k) >= v["target"]), None)
            if k is not None:
                options.append(dict(mode=c.mode, width=c.width, k=k, candidate_pairs=c.found[k], recall=approx(c.recall(k))))
        assert v["options"] == options
        assert options, "every target must be reached on this corpus"
        best = min(options, key=lambda o: (o["k"], o["candidate_pairs"]))
        assert v["chosen"] == [best["mode"], best["width"], best["k"]]
        # verification is exact, so the verified pairs' recall is the candidates'
        assert v["recall_measured"] == best["recall"]
        assert v["seconds"] >= 0 and v["bytes_per_document"] > 0
    v97 = fig["verified"][1]
    assert fig["recommendation"]["verified"]["candidates"] == v97["chosen"]
    rec = fig["recommendation"]["plain"]
    f1 = {(c.mode, c.width, k): c.f1(k) for c in plain for k in range(11) if c.f1(k) is not None}
    best_f1 = max(f1.values())
    assert f1[(rec["mode"], rec["width"], rec["k"])] == pytest.approx(best_f1)
    assert all(f1.get((rec["mode"], rec["width"], k), 0) < best_f1 for k in range(rec["k"])), "the least k of the best"
    assert rec["design"].endswith(f"k={rec['k']}")


def test_recommended_candidates_recover_the_planted_pairs(corpus, truth, measured):
    _, fig = measured
    mode, width, k = fig["recommendation"]["verified"]["candidates"]
    got = pairs_of(rsimhash.similar_pairs(corpus.texts, 0.9, candidates=(mode, width, k)))
    # verified pairs are true pairs with their exact similarity (float32) ...
    assert set(got) <= set(truth)
    assert all(got[p] == pytest.approx(truth[p], abs=1e-6) for p in got)
    # ... exactly the true pairs whose fingerprints are within k bits ...
    assert set(got) == within(corpus.texts, list(truth), mode, width, k)
    # ... which is the recall promised, and here recovers the planted pairs at >= 0.9
    assert len(got) >= 0.97 * len(truth)
    assert len(corpus.high & set(got)) >= 0.97 * len(corpus.high)
    assert not corpus.mid & set(got)


def test_leading_bits_equal_the_sorted_neighbours(corpus, measured):
    _, fig = measured
    bits = fig["leading_bits"]
    assert list(bits) == [f"{m}, width {w}" for m, w in MODES] + ["random"]
    for mode, width in MODES:
        fps = sorted(int(x) for x in rsimhash.fingerprints(corpus.texts, mode=mode, width=width))
        hist = [0] * 65
        for a, b in zip(fps, fps[1:]):
            hist[64 - (a ^ b).bit_length()] += 1
        assert bits[f"{mode}, width {width}"] == hist
    assert len(bits["random"]) == 65 and sum(bits["random"]) == len(corpus.texts) - 1


# -- the report ---------------------------------------------------------------------------


def _cell(x: Any) -> str:
    return "-" if x is None else f"{x:.3f}"


def plain_rows(out: str) -> Tuple[List[str], Dict[int, List[Tuple[str, str, int]]]]:
    """The plain table of a report: its column names and, for each k, the
    (precision, recall, pairs) cells of each column."""
    lines = out.splitlines()
    head = next(i for i, line in enumerate(lines) if line.startswith("plain simhash: the pairs within k bits"))
    names = [c.strip() for c in lines[head + 1].split("|")[1:]]
    rows = {}
    for line in lines[head + 3 :]:
        if not re.match(r"^\s*\d+ \|", line):
            break
        k, *cells = line.split("|")
        rows[int(k)] = [(c.split()[0], c.split()[1], int(c.split()[2].replace(",", ""))) for c in cells]
    return names, rows


def test_report_has_the_plain_rows_and_the_recommendation(corpus, truth, measured):
    run, fig = measured
    n = len(corpus.texts)
    assert run.out.startswith(
        f"sample: all {n} records of {corpus.path}\ntruth: {len(truth)} pairs with Jaccard >= 0.9 of words 3-shingle sets"
    )
    names, rows = plain_rows(run.out)
    assert names == [f"{m},{w}" for m, w in MODES]
    assert sorted(rows) == list(range(11))
    plain = brute_plain(corpus.texts, list(truth), 10)
    for k in range(11):
        assert rows[k] == [(_cell(c.precision(k)), _cell(c.recall(k)), c.found[k]) for c in plain], k

    lines = run.out.splitlines()
    start = lines.index(f"recommendation for {n} documents (--expected-size to change):")
    rec = lines[start + 1 :]
    p = fig["recommendation"]["plain"]
    source = f"--input {shlex.quote(str(corpus.path))} --output {shlex.quote('kept-' + os.path.basename(corpus.path))}"
    assert rec[0].startswith(f"  plain simhash: {p['mode']} width {p['width']}, k = {p['k']}, the best F1")
    assert rec[1] == f"    rsimhash dedup {source} --mode {p['mode']} --window {p['width']} --distance {p['k']}"
    mode, width, k = fig["recommendation"]["verified"]["candidates"]
    assert f"  verified (recall >= 0.97 on the sample, precision 1): candidates {mode},{width},{k}" in rec
    assert f"    rsimhash dedup {source} --jaccard 0.9 --candidates {mode},{width},{k}" in rec
    assert "give the command the same shingles" not in run.out
    call = f"rsimhash.similar_pairs(texts, 0.9, candidates=({mode!r}, {width}, {k}))"
    assert f"    {call}" in rec
    # the Python call printed is one that runs, and finds the true pairs within k
    got = pairs_of(eval(call, {"rsimhash": rsimhash, "texts": corpus.texts}))
    assert set(got) == within(corpus.texts, list(truth), mode, width, k)
    # The exact join beside the candidates: every true pair, measured on the sample.
    assert fig["exact"]["recall_measured"] == 1.0 and fig["exact"]["pairs"] == len(truth)
    assert "exact join: every pair, no candidates (recall 1 by construction; the sets held in memory)" in lines
    assert any(
        re.fullmatch(rf"  [0-9.]+ seconds on the sample, measured recall 1.000, {len(truth)} pairs; sets held about .*", x)
        for x in lines
    )
    assert any(x.startswith(f"  the candidates for a recall of 0.97 ({mode},{width},{k}): ") for x in lines)
    assert f"    rsimhash dedup {source} --jaccard 0.9 --candidates exact" in rec
    assert '    rsimhash.similar_pairs(texts, 0.9, candidates="exact")' in rec
    assert fig["recommendation"]["exact"]["bytes"] > 0
    assert "None" not in run.out
    assert re.fullmatch(
        rf"rsimhash tune: {n} documents measured, {len(truth)} true pairs, 0 bad lines, "
        r"[0-9.]+ s\n",
        run.err,
    )


def test_recommended_commands_run(corpus, measured, tmp_path, monkeypatch):
    """The two ``rsimhash dedup`` lines of the recommendation run exactly as
    printed (each names its --output), and the verified one keeps what
    ``dedup(jaccard=)`` keeps."""
    run, fig = measured
    commands = [line.strip() for line in run.out.splitlines() if line.strip().startswith("rsimhash dedup ")]
    assert len(commands) == 3, commands
    for n, command in enumerate(commands):
        workdir = tmp_path / str(n)
        workdir.mkdir()
        monkeypatch.chdir(workdir)
        args = shlex.split(command)[1:]
        out = workdir / args[args.index("--output") + 1]
        with contextlib.redirect_stderr(io.StringIO()):
            assert main(args) == 0, command
        kept = [json.loads(line)["text"] for line in out.read_text("utf-8").splitlines()]
        if "--jaccard" in args:
            mode, width, k = fig["recommendation"]["verified"]["candidates"]
            exact = args[args.index("--candidates") + 1] == "exact"
            keep = rsimhash.dedup(corpus.texts, jaccard=0.9, candidates="exact" if exact else (mode, width, k))
            assert kept == [t for t, k in zip(corpus.texts, keep.tolist()) if k]
            assert len(kept) < len(corpus.texts) - 40  # the planted copies at >= 0.9 go


def test_max_k_bounds_the_rows(corpus, tmp_path):
    path = write_texts(tmp_path / "head.jsonl", corpus.texts[:150])
    sets = [word_set(t) for t in corpus.texts[:150]]
    pairs = list(true_pairs(sets, 0.9))
    assert pairs
    run = succeeded(tune("-i", path, "--max-k", "4", "-q", "--json", tmp_path / "f.json"))
    assert run.err == ""
    _, rows = plain_rows(run.out)
    assert sorted(rows) == [0, 1, 2, 3, 4]
    fig = json.loads((tmp_path / "f.json").read_text())
    assert [(r["mode"], r["k"]) for r in fig["plain"]] == [(m, k) for m, _ in MODES for k in range(5)]
    assert [r["found"] for r in fig["plain"]] == [f for c in brute_plain(corpus.texts[:150], pairs, 4) for f in c.found]


def test_json_to_stdout_replaces_the_report(corpus, measured):
    _, fig = measured
    run = succeeded(tune("--input", corpus.path, "--json", "-"))
    out = run.json_out()
    assert run.out.count("\n") == 1
    for key in ("truth", "plain", "sample", "recommendation", "leading_bits"):
        assert out[key] == fig[key], key


# -- --plot ----------------------------------------------------------------------------------


def test_plot_writes_a_png(corpus, tmp_path):
    pytest.importorskip("matplotlib")
    path = write_texts(tmp_path / "head.jsonl", corpus.texts[:120])
    png = tmp_path / "curves.png"
    run = succeeded(tune("--input", path, "--plot", png))
    assert run.out.startswith("sample: all 120 records")
    data = png.read_bytes()
    assert data[:8] == PNG_SIGNATURE
    length, kind = struct.unpack(">I4s", data[8:16])
    assert (length, kind) == (13, b"IHDR")
    width, height = struct.unpack(">II", data[16:24])
    assert width > 0 and height > 0
    assert struct.unpack(">I", data[29:33])[0] == zlib.crc32(data[12:29])
    assert data.endswith(b"IEND\xaeB`\x82")
    image = pytest.importorskip("matplotlib.image").imread(png)
    assert image.shape[:2] == (height, width)
    assert image[..., :3].min() < 0.5 < image[..., :3].max(), "something is drawn"
    assert leftovers(tmp_path) == []


def test_plot_fits_its_axes_and_labels_overlap_nothing():
    """Points between 0.85 and 1 (a corpus's usual) fill the panel, and no
    two k labels are drawn over each other."""
    pytest.importorskip("matplotlib")
    from rsimhash.cli.tune_stats import Curve

    shapes = (("words", 3, 0), ("chars", 4, 1), ("words", 1, 2))
    curves = [
        Curve(m, w, found=[100 + 3 * k + s for k in range(11)], true=[86 + k + s // 2 for k in range(11)], truth=100, n=9)
        for m, w, s in shapes
    ]
    fig = tune_plot.figure(curves, {"words,3": np.ones(65)}, np.ones(65), 0.9, "t")
    ax = fig.axes[0]
    recall = [c.recall(k) for c in curves for k in range(11)]
    precision = [c.precision(k) for c in curves for k in range(11)]
    (x0, x1), (y0, y1) = ax.get_xlim(), ax.get_ylim()
    assert x0 <= min(recall) and max(recall) <= x1 and x1 - x0 < 2 * (max(recall) - min(recall)) + 0.05
    assert y0 <= min(precision) and max(precision) <= y1 and y1 - y0 < 2 * (max(precision) - min(precision)) + 0.05
    boxes = [t.get_window_extent(fig.canvas.get_renderer()) for t in ax.texts]
    assert len(boxes) >= 11
    assert not any(a.overlaps(b) for i, a in enumerate(boxes) for b in boxes[i + 1 :])


def _no_matplotlib_module(monkeypatch):
    real = tune_plot.module

    def module(name: str) -> Any:
        if name == "matplotlib" or name.startswith("matplotlib."):
            raise ImportError(f"No module named {name!r}")
        return real(name)

    monkeypatch.setattr(tune_plot, "module", module)


def _no_matplotlib_installed(monkeypatch):
    for name in [m for m in sys.modules if m == "matplotlib" or m.startswith("matplotlib.")] + [
        "matplotlib",
        "matplotlib.figure",
        "matplotlib.backends",
        "matplotlib.backends.backend_agg",
    ]:
        monkeypatch.setitem(sys.modules, name, None)  # import raises ImportError


@pytest.mark.parametrize("hide", [_no_matplotlib_module, _no_matplotlib_installed])
def test_plot_without_matplotlib_says_what_to_install(hide, corpus, tmp_path, monkeypatch):
    hide(monkeypatch)
    # before anything else: the input is not read (it does not exist) and no output is opened
    line = one_error(
        tune("--input", tmp_path / "missing.jsonl", "--plot", tmp_path / "p.png", "--json", tmp_path / "f.json"),
        2,
        "--plot needs matplotlib",
        INSTALL,
    )
    assert "missing.jsonl" not in line
    assert os.listdir(tmp_path) == []
    one_error(tune("--input", corpus.path, "--plot", "-"), 2, INSTALL)
    # without --plot, matplotlib is not needed
    path = write_texts(tmp_path / "few.jsonl", corpus.texts[:30])
    assert succeeded(tune("--input", path, "-q", "--json", "-")).json_out()["sample"]["documents"] == 30


@pytest.mark.parametrize("real_input", [False, True])
def test_plot_into_a_missing_directory_fails_before_the_work(real_input, corpus, tmp_path, monkeypatch):
    pytest.importorskip("matplotlib")
    if real_input:  # the input is there, but nothing may be measured
        monkeypatch.setattr(tune_module, "measure", lambda *a: pytest.fail("measured before the outputs"))
    source = corpus.path if real_input else tmp_path / "missing.jsonl"  # missing: not even read
    target = tmp_path / "no-such-dir" / "curves.png"
    one_error(tune("--input", source, "--plot", target, "--json", tmp_path / "f.json"), 1, str(target), "cannot write")
    assert os.listdir(tmp_path) == []


def test_plot_onto_a_directory_or_stdout(corpus, tmp_path):
    pytest.importorskip("matplotlib")
    one_error(tune("--input", corpus.path, "--plot", tmp_path), 1, "it is a directory")
    one_error(tune("--input", corpus.path, "--plot", "-"), 2, "--plot needs a file name")
    # an unwritable --json fails too, and takes the plot's temporary file with it
    one_error(tune("--input", corpus.path, "--plot", tmp_path / "p.png", "--json", tmp_path / "x" / "f.json"), 1, "cannot write")
    assert os.listdir(tmp_path) == []


# -- bad arguments and odd inputs ---------------------------------------------------------------


@pytest.mark.parametrize(
    "value, needle",
    [
        ("0", "must be in (0, 1]"),
        ("1.5", "must be in (0, 1]"),
        ("-0.5", "must be in (0, 1]"),
        ("nan", "must be in (0, 1]"),
        ("inf", "must be in (0, 1]"),
        ("x", "expected a number in (0, 1], got 'x'"),
    ],
)
def test_bad_jaccard(value, needle, corpus):
    one_error(tune("--input", corpus.path, "--jaccard", value), 2, "--jaccard", needle)


@pytest.mark.parametrize(
    "args, needle",
    [
        (["--sample", "0"], "--sample"),
        (["--max-k", "17"], "--max-k"),
        (["--seed", "x"], "--seed"),
        (["--shingles", "bytes"], "--shingles"),
        (["--width", "0"], "--width"),
        (["--format", "hash"], "--format"),
    ],
)
def test_bad_options(args, needle, corpus):
    one_error(tune("--input", corpus.path, *args), 2, needle)


@pytest.mark.parametrize("name", ["hashes.tsv", "hashes.txt", "hashes.txt.gz"])
def test_input_of_fingerprints_is_a_usage_error(name, tmp_path):
    path = tmp_path / name
    path.write_text("id\thash\n1\t12345\n" if name.endswith(".tsv") else "12345\n")
    one_error(tune("--input", path, "--json", tmp_path / "f.json"), 2, "tune needs texts", "JSON lines or Parquet")
    assert os.listdir(tmp_path) == [name], "the --json output is not left behind"


def test_jaccard_one_counts_equal_sets(corpus, tmp_path):
    run = succeeded(tune("--input", corpus.path, "--jaccard", "1", "-q", "--json", tmp_path / "f.json"))
    fig = json.loads((tmp_path / "f.json").read_text())
    sets = [word_set(t) for t in corpus.texts]
    assert fig["truth"]["pairs"] == [list(p) for p in true_pairs(sets, 1.0)]
    assert len(fig["truth"]["pairs"]) == 5  # 2 exact copies, 2 in capitals, the 2 texts without a token
    assert "Jaccard >= 1 " in run.out


@pytest.mark.parametrize("content", ["", "\n\n"])
def test_empty_input(content, tmp_path):
    path = tmp_path / "empty.jsonl"
    path.write_text(content)
    run = succeeded(tune("--input", path, "--json", tmp_path / "f.json"))
    assert "sample: all 0 records" in run.out and "nothing to tune on" in run.out
    assert "None" not in run.out
    fig = json.loads((tmp_path / "f.json").read_text())
    assert fig["sample"]["documents"] == 0 and fig["truth"]["pairs"] == [] and fig["recommendation"] == {}
    assert all(r["found"] == 0 and r["recall"] is None for r in fig["plain"])
    assert "0 documents measured, 0 true pairs" in run.err


def test_one_document(tmp_path):
    path = write_texts(tmp_path / "one.jsonl", ["just one text with a few words"])
    run = succeeded(tune("--input", path))
    assert "nothing to tune on" in run.out and "None" not in run.out


def test_sample_without_true_pairs_has_nothing_to_tune_on(corpus, tmp_path):
    paired = {i for p in true_pairs([word_set(t) for t in corpus.texts], 0.5) for i in p}
    alone = [i for i in range(len(corpus.texts)) if i not in paired][:60]
    path = write_texts(tmp_path / "alone.jsonl", [corpus.texts[i] for i in alone])
    run = succeeded(tune("--input", path, "--jaccard", "0.5", "--json", tmp_path / "f.json"))
    assert "truth: 0 pairs with Jaccard >= 0.5" in run.out
    rec = run.out.split("recommendation for 60 documents (--expected-size to change):\n")[1]
    assert rec.startswith("  no pair of the sample is at Jaccard >= 0.5: nothing to tune on")
    assert "similar_pairs" not in rec and "dedup" not in rec
    fig = json.loads((tmp_path / "f.json").read_text())
    assert fig["truth"]["pairs"] == [] and fig["recommendation"] == {}
    assert all(v["options"] == [] and v["chosen"] is None for v in fig["verified"])
    assert all(r["recall"] is None and r["true"] == 0 for r in fig["plain"])
    assert any(r["found"] > 0 for r in fig["plain"]), "plain simhash still finds (false) pairs"


# -- sampling ---------------------------------------------------------------------------------


def test_first_records_sample(corpus, tmp_path):
    n = len(corpus.texts)
    run = succeeded(tune("--input", corpus.path, "--sample", "200", "--json", tmp_path / "f.json"))
    fig = json.loads((tmp_path / "f.json").read_text())
    sample = fig["sample"]
    assert sample["documents"] == 200 and sample["lines"] == list(range(1, 201))
    assert sample["input_records_exact"] is False and 0.8 * n <= sample["input_records"] <= 1.2 * n
    assert sample["how"] == f"the first 200 of about {sample['input_records']:,} records"
    assert fig["expected_size"] == sample["input_records"]
    head = true_pairs([word_set(t) for t in corpus.texts[:200]], 0.9)
    assert head and fig["truth"]["pairs"] == [list(p) for p in head]
    assert run.out.startswith(f"sample: the first 200 of about {sample['input_records']:,} records of ")
    # stdin: the size of the input is unknown
    fig = tune_stdin(corpus, "--sample", "200", "--expected-size", "12345")
    assert fig["sample"]["how"] == "the first 200 records" and fig["expected_size"] == 12345
    assert fig["truth"]["pairs"] == [list(p) for p in head]


def tune_stdin(corpus: Corpus, *args: str) -> Dict[str, Any]:
    """stdin is read from its file descriptor: a subprocess."""
    proc = ok(run_cli("tune", "--input", "-", "--json", "-", *args, input=corpus.path.read_bytes()))
    return json.loads(proc.stdout)


def test_seeded_sample_is_random_sized_and_reproducible(corpus, tmp_path):
    n = len(corpus.texts)

    def sample(seed: int, size: int = 150) -> Dict[str, Any]:
        return succeeded(tune("--input", corpus.path, "--sample", size, "--seed", seed, "--json", "-")).json_out()

    a, b, c = sample(5), sample(5), sample(6)
    lines = a["sample"]["lines"]
    assert a["sample"]["documents"] == len(lines) == 150
    assert lines == sorted(set(lines)) and 1 <= lines[0] and lines[-1] <= n
    assert lines[-1] > 150, "not the first records"
    assert a["sample"]["how"] == f"a random 150 (seed 5) of {n} records"
    assert a["sample"]["input_records"] == n and a["sample"]["input_records_exact"] is True
    assert b["sample"] == a["sample"] and b["truth"] == a["truth"] and b["plain"] == a["plain"]
    assert c["sample"]["lines"] != lines
    texts = [corpus.texts[line - 1] for line in lines]
    assert a["truth"]["pairs"] == [list(p) for p in true_pairs([word_set(t) for t in texts], 0.9)]
    # a sample as large as the input is all of it
    whole = sample(5, size=n + 10)
    assert whole["sample"]["how"] == f"all {n} records" and whole["sample"]["lines"] == list(range(1, n + 1))
    # with the chunks read one record at a time, the same sample
    small = succeeded(tune("--input", corpus.path, "--sample", 150, "--seed", 5, "--chunk-mb", "0.001", "--json", "-")).json_out()
    assert small["sample"]["lines"] == lines


class _Chunk:
    def __init__(self, lines: List[int]):
        self.lines = lines
        self.texts = [f"text {i}" for i in lines]


class _Source:
    records = 0

    def __init__(self, sizes: Sequence[int]):
        starts = np.cumsum([0, *sizes])
        self._chunks = [_Chunk(list(range(a + 1, b + 1))) for a, b in zip(starts, starts[1:])]

    def chunks(self):
        return iter(self._chunks)

    def position(self) -> int:
        return 0


def test_reservoir_is_uniform():
    """Each of 10 records (in chunks of 4 and 6) is in a sample of 3 with
    probability 0.3: 3,000 seeds, each count within 5 standard deviations."""
    trials, counts = 3000, [0] * 10
    for seed in range(trials):
        s = tune_module._reservoir(_Source([4, 6]), 3, seed, tune_module.Progress("tune", None, True))
        assert len(s.texts) == 3 and s.lines == sorted(set(s.lines)) and s.read == 10
        assert s.texts == [f"text {i}" for i in s.lines]
        for line in s.lines:
            counts[line - 1] += 1
    sd = (trials * 0.3 * 0.7) ** 0.5
    assert all(abs(c - trials * 0.3) < 5 * sd for c in counts), counts


def test_char_shingles_of_another_width(corpus, tmp_path):
    """--shingles chars --width 5: the truth of character 5-grams, and a
    recommended call that names those shingles."""
    texts = corpus.texts[:100]
    path = write_texts(tmp_path / "head.jsonl", texts)
    run = succeeded(
        tune("--input", path, "--shingles", "chars", "--width", "5", "--jaccard", "0.8", "--json", tmp_path / "f.json")
    )
    fig = json.loads((tmp_path / "f.json").read_text())
    truth = true_pairs_all([char_set(t, 5) for t in texts], 0.8)
    assert truth
    assert fig["truth"]["pairs"] == [list(p) for p in truth] and fig["width"] == 5
    assert fig["truth"]["similarity"] == [approx(j) for j in truth.values()]
    assert "of chars 5-shingle sets" in run.out
    mode, width, k = fig["recommendation"]["verified"]["candidates"]
    call = f"rsimhash.similar_pairs(texts, 0.8, shingles='chars', width=5, candidates=({mode!r}, {width}, {k}))"
    assert f"    {call}" in run.out.splitlines()
    got = pairs_of(eval(call, {"rsimhash": rsimhash, "texts": texts}))
    assert set(got) == within(texts, list(truth), mode, width, k)
    # The command names those shingles too, and runs as printed, keeping what the call's dedup keeps.
    command = next(
        line.strip() for line in run.out.splitlines() if "--jaccard" in line and line.strip().startswith("rsimhash dedup")
    )
    assert f"--jaccard 0.8 --mode chars --width 5 --candidates {mode},{width},{k}" in command
    args = shlex.split(command)[1:]
    args[args.index("--output") + 1] = str(tmp_path / "kept.jsonl")
    with contextlib.redirect_stderr(io.StringIO()):
        assert main(args) == 0
    kept = [json.loads(line)["text"] for line in (tmp_path / "kept.jsonl").read_text("utf-8").splitlines()]
    keep = rsimhash.dedup(texts, jaccard=0.8, mode="chars", width=5, candidates=(mode, width, k))
    assert kept == [t for t, x in zip(texts, keep.tolist()) if x]
