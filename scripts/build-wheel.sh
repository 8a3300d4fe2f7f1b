#!/usr/bin/env bash
# The Linux build of a release: an abi3 wheel (CPython 3.9 and later) tagged
# manylinux_2_17 (manylinux2014), which RHEL 8, Ubuntu 20.04 and Amazon Linux 2
# accept, built on any Linux machine: maturin links through zig
# (`ziglang` from PyPI) against glibc 2.17's symbols, whatever glibc the
# machine has. The wheel is checked with `auditwheel show`.
#
#   bash scripts/build-wheel.sh OUTDIR
#   RSIMHASH_TARGET=aarch64-unknown-linux-gnu bash scripts/build-wheel.sh OUTDIR   # cross-build
#   RSIMHASH_TARGET=x86_64-unknown-linux-musl RSIMHASH_COMPAT=musllinux_1_2 bash scripts/build-wheel.sh OUTDIR
#
# The release workflow (.github/workflows/release.yml) runs this for Linux.
set -euo pipefail
out=${1:?usage: scripts/build-wheel.sh OUTDIR}
cd "$(dirname "$0")/.."
mkdir -p "$out"
out="$(cd "$out" && pwd)"

venv=${RSIMHASH_BUILD_VENV:-.venv-build}
python3 -m venv "$venv"
bin="$(cd "$venv" && pwd)/bin"
"$bin/python" -m pip install --quiet --upgrade pip
# zig 0.13: the newest that maturin's zig linker supports.
"$bin/python" -m pip install --quiet "maturin>=1.7,<2" "ziglang>=0.11,<0.14" "auditwheel>=6"

host=$(rustc -vV | sed -n 's/^host: //p')
target=${RSIMHASH_TARGET:-$host}
compat=${RSIMHASH_COMPAT:-manylinux2014}
if [ "$target" != "$host" ] && command -v rustup >/dev/null; then
    rustup target add "$target"
fi

log=$(mktemp)
trap 'rm -f "$log"' EXIT
PATH="$bin:$PATH" maturin build --release --locked --zig --target "$target" --compatibility "$compat" --out "$out" 2>&1 \
    | tee "$log"
# maturin ends with "Built wheel for abi3 Python >= 3.9 to PATH".
wheel=$(sed -n 's/.*Built wheel.* to \(.*\.whl\)$/\1/p' "$log" | tail -1)
[ -f "$wheel" ] || { echo "build-wheel: maturin named no wheel" >&2; exit 1; }
"$bin/auditwheel" show "$wheel"
echo "$wheel"
