#!/usr/bin/env bash
# The Linux aarch64 wheel, tested on this x86-64 machine under emulation: a
# Debian bookworm arm64 chroot run by qemu-user-static through binfmt_misc.
#
#   bash scripts/test-wheel-aarch64.sh WHEEL
#   RSIMHASH_ARM64_ROOT=/somewhere bash scripts/test-wheel-aarch64.sh WHEEL
#
# Makes the chroot once (debootstrap, minbase, with python3, python3-venv)
# under $RSIMHASH_ARM64_ROOT (default /var/tmp/rsimhash-arm64, outside the
# repo) and reuses it after. pip inside the chroot has no registry
# certificates, so the test dependencies are downloaded on the host as
# manylinux2014_aarch64 wheels for the chroot's CPython 3.11 and installed
# offline. Then, in a fresh venv there:
#   1. scripts/wheel-smoke.py --check: fingerprints of 300 mixed-Unicode texts
#      in three settings, an index's answers, the x86-64 index file loaded
#      and verified here, and this build's save of it byte-identical to the
#      x86-64 one (tests/data/wheel_reference/, made by an x86-64 build);
#   2. pytest under emulation on the portable test files: the portable,
#      golden-file, SPEC-vector, index-file and fingerprint-property tests,
#      with a fifth of the hypothesis examples (RSIMHASH_TEST_EXAMPLES, to
#      stay within minutes; RSIMHASH_ARM64_EXAMPLES sets another share).
# Needs root (chroot, mount) and, where they are missing, installs Debian's
# qemu-user-static, binfmt-support and debootstrap.
set -euo pipefail
wheel=${1:?usage: scripts/test-wheel-aarch64.sh WHEEL}
[ -f "$wheel" ] || { echo "test-wheel-aarch64: no such wheel: $wheel" >&2; exit 2; }
wheel="$(cd "$(dirname "$wheel")" && pwd)/$(basename "$wheel")"
case $(basename "$wheel") in
    *aarch64*) ;;
    *) echo "test-wheel-aarch64: $wheel is not an aarch64 wheel" >&2; exit 2 ;;
esac
cd "$(dirname "$0")/.."
repo=$(pwd)
die() { printf 'test-wheel-aarch64: %s\n' "$*" >&2; exit 1; }
say() { printf '\n==> %s\n' "$*"; }
[ "$(id -u)" -eq 0 ] || die "needs root (debootstrap, chroot and mounts); run it with sudo"
[ "$(uname -m)" = x86_64 ] || die "runs on an x86-64 Linux host (emulating aarch64)"

base=${RSIMHASH_ARM64_ROOT:-/var/tmp/rsimhash-arm64}
root="$base/root"
case "$root/" in "$repo"/*) die "keep the chroot out of the repo (RSIMHASH_ARM64_ROOT=$base)" ;; esac

need=()
for p in qemu-user-static binfmt-support debootstrap; do
    dpkg-query -W -f '${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || need+=("$p")
done
if [ ${#need[@]} -gt 0 ]; then
    say "Debian packages: ${need[*]}"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null \
        || die "apt-get could not install ${need[*]}"
fi

# binfmt_misc: the kernel hands aarch64 ELF files to qemu. The F flag
# (update-binfmts' default for qemu-user-static) opens qemu once at
# registration, so nothing needs copying into the chroot.
if [ ! -e /proc/sys/fs/binfmt_misc/status ]; then
    mount -t binfmt_misc binfmt_misc /proc/sys/fs/binfmt_misc \
        || die "cannot mount binfmt_misc (a container without that privilege?): aarch64 programs cannot run here"
fi
update-binfmts --enable qemu-aarch64 >/dev/null 2>&1 || true
grep -qx enabled /proc/sys/fs/binfmt_misc/qemu-aarch64 2>/dev/null \
    || die "binfmt_misc has no enabled qemu-aarch64 entry (update-binfmts --enable qemu-aarch64 failed)"

if [ ! -f "$base/.ready" ]; then
    say "arm64 chroot at $root (debootstrap, a few minutes, once)"
    rm -rf "$root"
    mkdir -p "$base"
    debootstrap --arch=arm64 --foreign --variant=minbase --include=python3,python3-venv,python3-numpy \
        bookworm "$root" http://deb.debian.org/debian >"$base/debootstrap.log" 2>&1 \
        || die "debootstrap (first stage) failed; see $base/debootstrap.log"
    chroot "$root" /debootstrap/debootstrap --second-stage >>"$base/debootstrap.log" 2>&1 \
        || die "debootstrap (second stage, under emulation) failed; see $base/debootstrap.log"
    touch "$base/.ready"
fi
[ "$(chroot "$root" uname -m)" = aarch64 ] || die "the chroot does not run as aarch64"
pyver=$(chroot "$root" python3 -c 'import sys; print("%d%d" % sys.version_info[:2])')

# Test dependencies as aarch64 wheels, downloaded here, installed offline there.
house="$base/wheelhouse-cp$pyver"
deps=("numpy>=1.21" "tqdm>=4.50" "pytest>=7" "hypothesis>=6")
if [ ! -f "$house/.complete" ]; then
    say "test dependencies for aarch64 CPython ${pyver:0:1}.${pyver:1} into $house"
    mkdir -p "$house"
    python3 -m pip download --quiet --dest "$house" --only-binary=:all: \
        --platform manylinux2014_aarch64 --platform manylinux_2_28_aarch64 \
        --implementation cp --python-version "$pyver" "${deps[@]}" \
        || die "pip download of ${deps[*]} for aarch64 failed (PyPI unreachable?)"
    touch "$house/.complete"
fi

# A fresh copy of the tests, the reference data and the wheel in the chroot.
run="$root/rsimhash-test"
rm -rf "$run"
mkdir -p "$run/wheelhouse"
cp -r tests pyproject.toml "$run/"
cp scripts/wheel-smoke.py "$run/"
cp "$house"/*.whl "$wheel" "$run/wheelhouse/"
for fs in proc dev; do
    mountpoint -q "$root/$fs" || mount --bind "/$fs" "$root/$fs"
done
trap 'umount "$root/dev" "$root/proc" 2>/dev/null || true' EXIT

in_chroot() { chroot "$root" /usr/bin/env -i HOME=/root PATH=/usr/local/bin:/usr/bin:/bin LANG=C.UTF-8 "$@"; }
start=$SECONDS
say "install $(basename "$wheel") and the test dependencies offline in a fresh venv"
in_chroot python3 -m venv --clear /rsimhash-test/venv
in_chroot /rsimhash-test/venv/bin/python -m pip install --quiet --no-index --find-links /rsimhash-test/wheelhouse \
    "/rsimhash-test/wheelhouse/$(basename "$wheel")" "${deps[@]}"
in_chroot /rsimhash-test/venv/bin/python -c 'import platform, rsimhash; print("rsimhash", rsimhash.__version__, "on", platform.machine(), platform.python_version())'
printf '    [%d s]\n' $((SECONDS - start))

start=$SECONDS
say "smoke test: answers equal to the x86-64 build's (tests/data/wheel_reference)"
in_chroot sh -c 'cd /rsimhash-test && venv/bin/python wheel-smoke.py --check tests/data/wheel_reference --out out'
cp "$run/out/index_here.rsh" "$base/index_aarch64.rsh"
echo "this build's index file: $base/index_aarch64.rsh"
printf '    [%d s]\n' $((SECONDS - start))

start=$SECONDS
say "the portable test files under emulation"
files=(tests/test_portable.py tests/test_spec_vectors.py tests/test_golden_index.py tests/test_index_files.py tests/test_fingerprint_properties.py)
in_chroot env RSIMHASH_TEST_EXAMPLES="${RSIMHASH_ARM64_EXAMPLES:-0.2}" sh -c \
    "cd /rsimhash-test && venv/bin/python -m pytest -q -p no:cacheprovider ${files[*]}"
printf '    [%d s]\n' $((SECONDS - start))
