"""The command's process asks OpenBLAS for one thread; a library import
changes nothing of its host's (``rsimhash._command``). Start-up loads what
the run uses: ``import rsimhash`` leaves the batch engine, the report and
the Jaccard tools until first used, and a command's run imports its own
command's module, not the others'."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from rsimhash._command import is_command
from rsimhash.cli import COMMANDS, main

PY = "/venv/bin/python"


@pytest.mark.parametrize(
    "orig_argv",
    [
        [PY, "-m", "rsimhash.cli", "dedup", "--input", "x"],
        [PY, "-m", "rsimhash"],
        [PY, "-mrsimhash.cli"],
        [PY, "-X", "importtime", "-W", "ignore", "-m", "rsimhash.cli"],
        [PY, "-O", "-u", "-m", "rsimhash"],
    ],
)
def test_the_module_run_as_a_program_is_the_command(orig_argv: list) -> None:
    assert is_command(["-m"], orig_argv)


@pytest.mark.parametrize(
    "argv, orig_argv",
    [
        (["-c"], [PY, "-c", "import rsimhash"]),
        (["-m"], [PY, "-m", "pytest", "-m", "rsimhash"]),
        (["-m"], [PY, "-m", "rsimhash_tools"]),
        (["-m"], [PY, "-X", "-m", "rsimhash"]),  # "-m" is the value of -X: "rsimhash" is a script's name
        (["etl.py"], [PY, "etl.py", "-m", "rsimhash"]),
        (["/x/rsimhash/run.py"], [PY, "/x/rsimhash/run.py"]),
        ([], []),
    ],
)
def test_a_host_process_is_not(argv: list, orig_argv: list) -> None:
    assert not is_command(argv, orig_argv)


def test_the_script_is_the_command() -> None:
    for script in ("/venv/bin/rsimhash", "/venv/Scripts/rsimhash.exe", "rsimhash"):
        assert is_command([script, "dedup"], [PY, script, "dedup"])


def _blas_threads_seen(code: str, **env: str) -> str:
    base = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    out = subprocess.run([sys.executable, "-c", code], env={**base, **env}, capture_output=True, text=True, check=True)
    return out.stdout.strip()


PRINT = "import rsimhash, os; print(os.environ.get('OPENBLAS_NUM_THREADS'))"


def test_only_the_command_asks_for_one_thread_and_never_over_the_user() -> None:
    assert _blas_threads_seen(PRINT) == "None"  # a library import
    as_script = "import sys; sys.argv[0] = '/venv/bin/rsimhash'; " + PRINT
    assert _blas_threads_seen(as_script) == "1"
    assert _blas_threads_seen(as_script, OPENBLAS_NUM_THREADS="3") == "3"


def _loaded_after(code: str) -> set:
    """The rsimhash modules a fresh interpreter holds after running ``code``."""
    show = "; import sys; print(*sorted(m for m in sys.modules if m.startswith('rsimhash')))"
    out = subprocess.run([sys.executable, "-c", code + show], capture_output=True, text=True, check=True)
    return set(out.stdout.split())


LAZY_MODULES = {"rsimhash.batch", "rsimhash._report", "rsimhash.etl", "rsimhash.similar", "rsimhash.similar_index"}


def test_importing_the_package_leaves_what_it_loads_on_use() -> None:
    assert not LAZY_MODULES & _loaded_after("import rsimhash")
    assert {"rsimhash.batch", "rsimhash._report"} <= _loaded_after("import rsimhash; rsimhash.batch; rsimhash.report")


def test_every_public_name_is_there_when_asked_for() -> None:
    import rsimhash.batch
    import rsimhash.similar_index

    for name in rsimhash.__all__:
        assert getattr(rsimhash, name) is not None, name
    assert rsimhash.batch is sys.modules["rsimhash.batch"]
    assert rsimhash.SimilarIndex is rsimhash.similar_index.SimilarIndex
    with pytest.raises(AttributeError, match="has no attribute 'no_such_name'"):
        rsimhash.no_such_name  # noqa: B018
    assert not hasattr(rsimhash, "no_such_name")


def test_a_run_imports_its_own_command_only(tmp_path) -> None:
    src = os.path.join(os.path.dirname(__file__), "..", "examples", "news.jsonl")
    argv = ["dedup", "--input", src, "--output", str(tmp_path / "kept.jsonl"), "--quiet"]
    run = f"from rsimhash.cli import main; assert main({argv!r}) == 0"
    commands = {f"rsimhash.cli.{module}" for _, module, _ in COMMANDS}
    loaded = _loaded_after(run)
    assert "rsimhash.cli.dedup" in loaded and (tmp_path / "kept.jsonl").exists()
    assert not (commands - {"rsimhash.cli.dedup", "rsimhash.cli.report"}) & loaded  # report: --report's option
    assert not commands & _loaded_after("from rsimhash.cli import main; main(['--version'])") - {"rsimhash.cli.report"}


def test_the_help_names_every_command_with_its_line(capsys) -> None:
    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    for name, _, line in COMMANDS:
        assert name in out and line[:40] in out, name
    for name, _, _ in COMMANDS:  # and each command's own help, its module loaded for it
        assert main([name, "--help"]) == 0
        assert f"usage: rsimhash {name}" in capsys.readouterr().out
