#!/usr/bin/env bash
# The whole test suite, from nothing: a fresh venv, build tools from PyPI, a
# release wheel built by maturin and installed into the venv, then cargo's
# tests of the Rust core and pytest against the installed wheel.
#
#   bash scripts/test.sh            # everything
#   RSIMHASH_VENV=/tmp/v bash scripts/test.sh   # another venv location
set -euo pipefail
cd "$(dirname "$0")/.."

venv=${RSIMHASH_VENV:-.venv-test}
# Each stage's wall time, and the whole run's, printed as the next stage
# starts and at the end (also when a stage fails): where CI time goes.
step_name="" step_start=$SECONDS bg_pid=""
step_done() { [ -z "$step_name" ] || printf '    [%d s: %s]\n' $((SECONDS - step_start)) "$step_name"; }
step() { step_done; step_name="$*" step_start=$SECONDS; printf '\n==> %s\n' "$*"; }
# A background stage still running when the run stops (a failure, ^C) is
# stopped with it: it runs in a process group of its own.
trap 'step_done; [ -z "$bg_pid" ] || kill -- -"$bg_pid" 2>/dev/null || true; printf "\n    [%d s in all]\n" "$SECONDS"' EXIT

# The report's browser tests (tests/test_report_browser.py) drive headless
# Chromium from Debian's packages; install them only when they are missing.
if ! command -v chromium >/dev/null 2>&1 || ! command -v chromedriver >/dev/null 2>&1; then
    step "chromium and chromium-driver (Debian packages) for the report's browser tests"
    sudo=""; [ "$(id -u)" -eq 0 ] || sudo="sudo"
    $sudo apt-get update -qq >/dev/null
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq chromium chromium-driver >/dev/null
fi
export RSIMHASH_BROWSER_TESTS=1   # a missing browser fails those tests here, never skips them

# Work that waits on the network and the disk (the venv's installs) runs in
# the background beside work that needs both cores (clippy): its output is
# printed, and its failure fails the run, when it is waited for. (The wheel
# and the Rust tests' build both keep two cores busy: run side by side, they
# took as long as one after the other.)
bg_name="" bg_log="" bg_start=0
background() {
    bg_name="$1"; shift
    bg_log=$(mktemp) bg_start=$SECONDS
    printf '\n==> %s (in the background)\n' "$bg_name"
    set -m   # job control for this one job: its own process group
    ( "$@" ) >"$bg_log" 2>&1 &
    bg_pid=$!
    set +m
}
wait_background() {
    local rc=0
    wait "$bg_pid" || rc=$?
    bg_pid=""
    printf '\n==> %s: done\n' "$bg_name"
    cat "$bg_log"; rm -f "$bg_log"
    printf '    [%d s: %s, in the background]\n' $((SECONDS - bg_start)) "$bg_name"
    [ "$rc" -eq 0 ] || { echo "failed: $bg_name (exit status $rc)"; exit "$rc"; }
}

make_venv() {
    python3 -m venv --clear "$venv"
    "$venv/bin/python" -m pip install --quiet --upgrade pip
    "$venv/bin/python" -m pip install --quiet "maturin>=1.7,<2" "numpy>=1.21" "pytest>=7" "hypothesis>=6" pyarrow mypy tqdm zstandard griffe \
        matplotlib "pandas<3" polars "pyspark[sql]>=3.5" html5lib "selenium>=4.11" "ruff>=0.6" pytest-xdist \
        -r docs/requirements.txt
}
background "venv $venv: build tools and test dependencies from PyPI" make_venv

step "lint: rustfmt, clippy (warnings denied)"
cargo fmt --check
cargo clippy --locked --release --all-targets -- -D warnings
cargo clippy --locked --release --lib --features python -- -D warnings   # the bindings too

wait_background
py="$(cd "$venv" && pwd)/bin/python"
step "lint: ruff check and ruff format"
"$(dirname "$py")/ruff" check python tests benches scripts
"$(dirname "$py")/ruff" format --check python tests benches scripts

step "release wheel"
rm -rf dist
"$(dirname "$py")/maturin" build --release --locked --out dist
"$py" -m pip install --quiet --force-reinstall --no-deps dist/rsimhash-*.whl

step "cargo test (Rust core, no Python)"
cargo test --locked --profile test-opt
# The AVX-512 kernel's test is ignored by default (cargo lists it as such).
# On x86-64 it runs always, told what the kernel's CPU flags promise (Linux
# spells them avx512f and avx512_vpopcntdq): it compares the AVX-512 and
# scalar paths where the CPU has them, and fails where those flags and the
# kernel's own CPU detection disagree.
if [ "$(uname -m)" = x86_64 ]; then
    expect=0
    if grep -qw avx512f /proc/cpuinfo 2>/dev/null && grep -qw avx512_vpopcntdq /proc/cpuinfo 2>/dev/null; then expect=1; fi
    echo "AVX-512F and VPOPCNTDQ listed by /proc/cpuinfo: $([ $expect = 1 ] && echo yes || echo no)"
    RSIMHASH_EXPECT_AVX512=$expect cargo test --locked --profile test-opt --lib avx512_and_scalar -- --ignored
fi
RSIMHASH_PORTABLE=1 cargo test --locked --profile test-opt --lib   # the code non-x86 builds run

step "portable paths: RSIMHASH_PORTABLE=1 runs the code non-x86 builds run (fingerprint and index properties)"
# Half the examples, and not the two long state machines (index bookkeeping:
# merges, rebuilds, removals, the same code on both paths; the full pass runs them).
RSIMHASH_PORTABLE=1 RSIMHASH_TEST_EXAMPLES=0.5 "$py" -m pytest -q -p no:cacheprovider -n 2 --dist load tests/test_portable.py tests/test_spec_vectors.py \
    tests/test_fingerprint_properties.py tests/test_index_properties.py -k "not state_machine_long"

step "stubs match the compiled module"
(cd /tmp && "$py" -m mypy.stubtest rsimhash)
"$py" tools/stub_docs.py --check   # the Rust doc comments of the public objects are the stub's docstrings

step "docs site builds with warnings as errors"
site=$(mktemp -d)
NO_MKDOCS_2_WARNING=1 "$py" -m mkdocs build --strict --quiet --site-dir "$site"
rm -rf "$site"

step "pytest against the installed wheel (two workers, a test file each at a time, longest first)"
# Files in collection order (tests/conftest.py puts the longest first), not
# xdist's default order by number of tests; the slowest tests listed, for the next trim.
"$py" -m pytest -q -p no:cacheprovider -n 2 --dist loadfile --no-loadscope-reorder --durations=30

step "side by side: benches/compare.py --quick (with the peers installed here, if any)"
"$py" benches/compare.py --quick
