"""The command's process asks OpenBLAS for one thread; a library import
changes nothing of its host's (``rsimhash._command``)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from rsimhash._command import is_command

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
