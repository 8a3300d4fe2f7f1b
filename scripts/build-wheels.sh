#!/usr/bin/env bash
# The release wheels, all from one Debian bookworm x86-64 machine with one
# compiler: abi3 wheels for Linux x86_64 and aarch64 (manylinux2014), macOS
# x86_64 and arm64, and Windows x86_64, each checked by scripts/check-wheels.py.
#
#   bash scripts/build-wheels.sh OUTDIR                 # all five
#   bash scripts/build-wheels.sh OUTDIR aarch64-unknown-linux-gnu x86_64-apple-darwin
#
# The recipe (issue 41): Debian's rustc-web, cargo-web and rust-web-src (Rust
# 1.96 with every LLVM backend, std's sources in the sysroot) first on PATH;
# RUSTC_BOOTSTRAP=1 and maturin's -Zbuild-std=std,panic_abort compile std for
# each target (its crates come from crates.io), so no prebuilt std and no
# rustup target is needed. Linux and macOS link through zig (`ziglang` from
# PyPI, `maturin --zig`); Windows through Debian's mingw-w64 (`--zig` trips
# on maturin's .def export names there). rustc strips Mach-O files with
# `rust-objcopy`, which rustc-web lacks: llvm-22's llvm-objcopy stands in.
# mimalloc on arm64 macOS includes CommonCrypto headers that zig lacks: two
# stub headers declare what it uses (the symbols are in libSystem).
#
# Installs what is missing (Debian packages with apt-get, as root or through
# sudo; maturin, ziglang and auditwheel from PyPI into $RSIMHASH_BUILD_VENV,
# default .venv-build) and is safe to run again. Builds go one target at a
# time into $CARGO_TARGET_DIR (default target/wheels, apart from the
# target/release that scripts/test.sh builds). The release workflow
# (.github/workflows/release.yml) runs this script, so what is checked here
# is what ships.
#
# Environment: RSIMHASH_BUILD_VENV (venv for the build tools),
# CARGO_TARGET_DIR, RSIMHASH_NO_APT=1 (never call apt-get: a missing package
# is an error naming it).
set -euo pipefail
usage="usage: scripts/build-wheels.sh OUTDIR [TARGET ...]"
out=${1:?$usage}
shift
cd "$(dirname "$0")/.."
repo=$(pwd)
all_targets=(x86_64-unknown-linux-gnu aarch64-unknown-linux-gnu x86_64-apple-darwin aarch64-apple-darwin x86_64-pc-windows-gnu)
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=("${all_targets[@]}")
for t in "${targets[@]}"; do
    case " ${all_targets[*]} " in
        *" $t "*) ;;
        *) echo "build-wheels: unknown target $t; one of: ${all_targets[*]}" >&2; exit 2 ;;
    esac
done
mkdir -p "$out"
out="$(cd "$out" && pwd)"
say() { printf '\n==> %s\n' "$*"; }
die() { printf 'build-wheels: %s\n' "$*" >&2; exit 1; }

# --- Debian packages -------------------------------------------------------
[ -r /etc/debian_version ] || die "needs a Debian (bookworm) machine for rustc-web, llvm-22 and mingw-w64; this is not one"
need=(rustc-web cargo-web rust-web-src llvm-22 python3-venv)
for t in "${targets[@]}"; do
    case $t in *windows*) need+=(mingw-w64 gcc-mingw-w64-x86-64 binutils-mingw-w64-x86-64) ;; esac
done
missing=()
for p in "${need[@]}"; do
    dpkg-query -W -f '${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
    [ "${RSIMHASH_NO_APT:-0}" != 1 ] || die "missing Debian packages: ${missing[*]} (RSIMHASH_NO_APT=1: not installing them)"
    sudo=""
    if [ "$(id -u)" -ne 0 ]; then
        command -v sudo >/dev/null || die "missing Debian packages ${missing[*]}, and neither root nor sudo to install them"
        sudo="sudo"
    fi
    say "Debian packages: ${missing[*]}"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null \
        || die "apt-get could not install ${missing[*]} (rustc-web 1.96 is in bookworm's security updates)"
fi

# --- the compiler: Debian's, first on PATH ----------------------------------
tools="${CARGO_TARGET_DIR:-$repo/target/wheels}/tools"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$repo/target/wheels}"
mkdir -p "$tools"
ln -sf /usr/lib/llvm-22/bin/llvm-objcopy "$tools/rust-objcopy"
venv=${RSIMHASH_BUILD_VENV:-.venv-build}
[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
vbin="$(cd "$venv" && pwd)/bin"
if ! "$vbin/python" -c 'import maturin, ziglang, auditwheel' 2>/dev/null; then
    say "build tools from PyPI into $venv"
    "$vbin/python" -m pip install --quiet --upgrade pip
    # zig 0.13: the newest that maturin's zig linker supports.
    "$vbin/python" -m pip install --quiet "maturin>=1.7,<2" "ziglang>=0.11,<0.14" "auditwheel>=6"
fi
export PATH="$vbin:$tools:/usr/bin:$PATH"
export RUSTC=/usr/bin/rustc CARGO=/usr/bin/cargo RUSTC_BOOTSTRAP=1
sysroot=$(rustc --print sysroot)
[ -f "$sysroot/lib/rustlib/src/rust/library/Cargo.lock" ] || die "std's sources are not in $sysroot/lib/rustlib/src/rust/library (package rust-web-src)"
echo "compiler: $(rustc -V) at $(command -v rustc); $(cargo -V)"
echo "maturin $("$vbin/maturin" --version | cut -d' ' -f2), zig $("$vbin/python" -m ziglang version)"

# Stub CommonCrypto headers for mimalloc on arm64 macOS (zig ships none).
stubs="$CARGO_TARGET_DIR/macos-stubs"
mkdir -p "$stubs/CommonCrypto"
cat >"$stubs/CommonCrypto/CommonCryptoError.h" <<'EOF'
/* Stub for cross-builds (scripts/build-wheels.sh): the one type mimalloc uses. */
#pragma once
#include <stdint.h>
typedef int32_t CCCryptorStatus;
enum { kCCSuccess = 0 };
EOF
cat >"$stubs/CommonCrypto/CommonRandom.h" <<'EOF'
/* Stub for cross-builds (scripts/build-wheels.sh); the function is libSystem's. */
#pragma once
#include <stddef.h>
#include <CommonCrypto/CommonCryptoError.h>
CCCryptorStatus CCRandomGenerateBytes(void *bytes, size_t count);
EOF

# --- one target at a time -----------------------------------------------------
built=()
for t in "${targets[@]}"; do
    say "wheel for $t"
    start=$SECONDS
    args=(build --release --locked --target "$t" -Zbuild-std=std,panic_abort --out "$out")
    case $t in
        *-linux-gnu) args+=(--zig --compatibility manylinux2014) ;;
        *-apple-darwin) args+=(--zig) ;;
    esac
    log=$(mktemp)
    (
        case $t in
            aarch64-apple-darwin) export CFLAGS_aarch64_apple_darwin="-I$stubs" ;;
            x86_64-pc-windows-gnu) export CARGO_TARGET_X86_64_PC_WINDOWS_GNU_LINKER=x86_64-w64-mingw32-gcc ;;
        esac
        maturin "${args[@]}"
    ) 2>&1 | tee "$log"
    # maturin ends with "Built wheel for abi3 Python >= 3.9 to PATH".
    wheel=$(sed -n 's/.*Built wheel.* to \(.*\.whl\)$/\1/p' "$log" | tail -1)
    rm -f "$log"
    [ -n "$wheel" ] && [ -f "$wheel" ] || die "maturin named no wheel for $t"
    printf '    [%d s: %s]\n' $((SECONDS - start)) "$(basename "$wheel")"
    built+=("$wheel")
done

say "checks"
"$vbin/python" scripts/check-wheels.py --auditwheel "$vbin/auditwheel" "${built[@]}"
printf '%s\n' "${built[@]}"
