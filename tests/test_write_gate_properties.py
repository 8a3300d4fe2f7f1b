"""The write gate as a property: on random trees of inputs, outputs, globs,
``..`` paths and symlinks, a run of any command changes no file but those
under the outputs it was given, never an input; and a rerun of a run that
finished leaves every file byte-identical.

Each example builds its tree in a fresh temporary directory and runs the
command line in this process (``rsimhash.cli.main``), from that directory.
"""

from __future__ import annotations

import contextlib
import glob
import io
import os
import shutil
import sys
import tempfile

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)
from cli_helpers import make_records, write_jsonl  # noqa: E402
from rsimhash.cli import main  # noqa: E402
from test_write_gate import snapshot  # noqa: E402

EXAMPLES = int(os.environ.get("RSIMHASH_GATE_EXAMPLES", "40"))

FILES = ["in/a.jsonl", "in/b.jsonl", "in/sub/c.jsonl", "other/d.jsonl", "out/old.jsonl"]
LINKS = [
    ("in/link", "../out"),
    ("in/up", ".."),
    ("out/back", "../in"),
    ("out/e.jsonl", "../in/a.jsonl"),
    ("in/f.jsonl", "../other/d.jsonl"),
]
INPUTS = ["in", "in/a.jsonl", "in/*.jsonl", "in/*", "in/sub/../*.jsonl", "in/*/../../other/*.jsonl", ".", "..", "other", "out"]
OUTPUTS = [
    "out",
    "out/k.jsonl",
    "k.jsonl",
    "in/k.jsonl",
    "in",
    "in/a.jsonl",
    "other/d.jsonl",
    "out/sub",
    "../k.jsonl",
    "in/link/k.jsonl",
]
EXTRAS = [None, "out/removed.tsv", "removed.tsv", "in/a.jsonl", "in/sub/r.tsv", "k.jsonl"]


def under(rel: str, given: str, cwd: str, top: str) -> bool:
    """Whether ``rel`` (relative to ``top``) lies at or under the output path
    ``given`` (relative to ``cwd``), as written, links not followed."""
    target = os.path.relpath(os.path.normpath(os.path.join(cwd, given)), top)
    return rel == target or rel.startswith(target + os.sep) or os.path.basename(rel).startswith(f".{os.path.basename(target)}")


def read_by(values, cwd: str) -> set:
    """Real paths of every file the ``--input`` values can reach: glob
    matches, and directories walked through their links."""
    found, seen = set(), set()

    def walk(path: str) -> None:
        path = os.path.realpath(path)
        if os.path.isfile(path):
            found.add(path)
        elif os.path.isdir(path) and path not in seen:
            seen.add(path)
            for name in os.listdir(path):
                walk(os.path.join(path, name))

    for value in values:
        for match in glob.glob(os.path.join(cwd, value)) or [os.path.join(cwd, value)]:
            walk(match)
    return found


@st.composite
def trees(draw):
    # Weighted towards runs that go through (and so are rerun): most trees
    # have in/a.jsonl, few links, and run from the top.
    files = ["in/a.jsonl"] + draw(st.lists(st.sampled_from(FILES[1:]), max_size=len(FILES) - 1, unique=True))
    links = draw(st.lists(st.sampled_from(LINKS), max_size=1 + draw(st.integers(0, 3)) // 3, unique=True))
    command = draw(st.sampled_from(["dedup", "dedup", "dedup", "cluster", "fingerprint", "find-all", "index"]))
    inputs = draw(st.lists(st.sampled_from(INPUTS), min_size=1, max_size=2, unique=True))
    output = draw(st.sampled_from(OUTPUTS))
    extra = draw(st.sampled_from(EXTRAS))
    cwd = draw(st.sampled_from(["", "", "", "in", "in/sub"]))
    seed = draw(st.integers(0, 3))
    return files, links, command, inputs, output, extra, cwd, seed


def argv_of(command: str, inputs, output: str, extra) -> list:
    if command in ("fingerprint", "index"):
        inputs = inputs[:1]  # one input file
    args = [command] if command != "index" else ["index", "build"]
    for i in inputs:
        args += ["--input", i]
    args += ["--output", output, "-q"]
    if extra is not None and command == "dedup":
        args += ["--removed", extra]
    elif extra is not None and command in ("cluster", "find-all"):
        args += ["--report", extra + ".html"]
    return args


def run(argv, cwd: str) -> int:
    old = os.getcwd()
    os.chdir(cwd)
    try:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            return main(argv)
    finally:
        os.chdir(old)


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(trees())
def test_a_run_touches_only_its_outputs_and_a_rerun_changes_nothing(case):
    files, links, command, inputs, output, extra, cwd_rel, seed = case
    top = tempfile.mkdtemp(prefix="gate-")
    try:
        root = os.path.join(top, "root")
        for d in ("in/sub", "other", "out"):
            os.makedirs(os.path.join(root, d), exist_ok=True)
        for i, f in enumerate(files):
            write_jsonl(os.path.join(root, f), make_records(12, seed=seed * 10 + i, dup_share=0.5))
        for link, target in links:
            if not os.path.lexists(os.path.join(root, link)):
                os.symlink(target, os.path.join(root, link))
        cwd = os.path.join(root, cwd_rel)
        before = snapshot(top)
        argv = argv_of(command, inputs, output, extra)
        code = run(argv, cwd)
        event(f"{command} exit {code}")
        assert code in (0, 1, 2), (argv, code)
        after = snapshot(top)
        outs = [output] + ([extra] if extra is not None and command == "dedup" else [])
        outs += [extra + ".html"] if extra is not None and command in ("cluster", "find-all") else []
        outs += [output + ".ids"] if command == "index" else []
        read = read_by(inputs if command not in ("fingerprint", "index") else inputs[:1], cwd)
        for rel, digest in before.items():
            if after.get(rel) == digest:
                continue
            assert os.path.realpath(os.path.join(top, rel)) not in read, (argv, cwd_rel, links, f"changed the input {rel}")
            assert any(under(rel, o, cwd, top) for o in outs), (argv, cwd_rel, links, f"changed {rel}")
        for rel in after:
            assert not rel.endswith(".tmp"), (argv, f"left {rel}")
        if code == 0:
            assert run(argv, cwd) == 0, argv
            assert snapshot(top) == after, (argv, cwd_rel, links, "a rerun changed a file")
    finally:
        shutil.rmtree(top, ignore_errors=True)
