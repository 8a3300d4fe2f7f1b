#!/usr/bin/env python3
"""Checks release wheels before they ship (scripts/build-wheels.sh runs it).

    python scripts/check-wheels.py [--auditwheel PATH] WHEEL ...

For each wheel: its file name (rsimhash, cp39-abi3, a platform tag this
project ships) and the tags of its WHEEL file; RECORD's
hashes; for Linux, ``auditwheel show``'s verdict (manylinux_2_17) and the
newest glibc symbol version; the extension's format and architecture, the
oldest OS it asks for (macOS ``minos``; Windows subsystem version), its
exported ``PyInit__rsimhash``, and that it links no libpython and nothing
outside the platform's system libraries (on Windows only ``python3.dll``, the
stable ABI's, and not its PyUnicode_AsUTF8AndSize, which 3.9's lacks).
Then that every wheel holds the same files (the extension's own name aside).

The binaries are read with LLVM's tools (llvm-objdump, llvm-nm, llvm-readobj
from Debian's llvm-22, or $RSIMHASH_LLVM_BIN), which read ELF, Mach-O and PE
alike on any host. Exits 1 when any check fails.
"""

from __future__ import annotations

import argparse
import base64
import csv
import hashlib
import io
import os
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

LLVM = Path(os.environ.get("RSIMHASH_LLVM_BIN", "/usr/lib/llvm-22/bin"))

# Platform tag (the first of a compressed set) -> what its binary must be.
PLATFORMS = {
    "manylinux_2_17_x86_64": {"os": "linux", "arch": "x86_64", "python": "cp39"},
    "manylinux_2_17_aarch64": {"os": "linux", "arch": "aarch64", "python": "cp39"},
    "macosx_10_12_x86_64": {"os": "macos", "arch": "x86_64", "python": "cp39", "minos": (10, 12)},
    "macosx_11_0_arm64": {"os": "macos", "arch": "arm64", "python": "cp39", "minos": (11, 0)},
    "win_amd64": {"os": "windows", "arch": "x86_64", "python": "cp39"},
}

# Legacy names of the same tags (PEP 599 -> PEP 600).
ALIASES = {"manylinux2014_x86_64": "manylinux_2_17_x86_64", "manylinux2014_aarch64": "manylinux_2_17_aarch64"}

# What llvm-readobj calls each architecture.
OBJDUMP_ARCH = {
    ("linux", "x86_64"): "x86_64",
    ("linux", "aarch64"): "aarch64",
    ("macos", "x86_64"): "x86_64",
    ("macos", "arm64"): "aarch64",
    ("windows", "x86_64"): "x86_64",
}

# The platforms' own libraries, which every machine of the platform has.
LINUX_LIBS = {
    "libc.so.6",
    "libm.so.6",
    "libpthread.so.0",
    "libdl.so.2",
    "librt.so.1",
    "libutil.so.1",
    "libgcc_s.so.1",
    "ld-linux-x86-64.so.2",
    "ld-linux-aarch64.so.1",
}
MACOS_LIBS = {"/usr/lib/libSystem.B.dylib", "/usr/lib/libiconv.2.dylib", "/usr/lib/libcharset.1.dylib"}
WINDOWS_LIBS = {
    "python3.dll",
    "kernel32.dll",
    "ntdll.dll",
    "msvcrt.dll",
    "ucrtbase.dll",
    "advapi32.dll",
    "bcrypt.dll",
    "bcryptprimitives.dll",
    "userenv.dll",
    "ws2_32.dll",
}
WINDOWS_API_SETS = re.compile(r"^api-ms-win-[a-z0-9-]+\.dll$")

WHEEL_NAME = re.compile(r"^(?P<name>[^-]+)-(?P<version>[^-]+)-(?P<python>[^-]+)-(?P<abi>[^-]+)-(?P<platform>[^-]+)\.whl$")


def run(*args: str) -> str:
    return subprocess.run(args, check=True, capture_output=True, text=True).stdout


def llvm(tool: str, *args: str) -> str:
    exe = LLVM / tool
    if not exe.exists():
        found = shutil.which(tool)
        if found is None:
            sys.exit(f"check-wheels: {tool} not found in {LLVM} nor on PATH (Debian package llvm-22)")
        exe = Path(found)
    return run(str(exe), *args)


class Report:
    def __init__(self, wheel: Path) -> None:
        self.wheel = wheel
        self.passed: list[str] = []
        self.failed: list[str] = []

    def check(self, ok: bool, what: str) -> None:
        (self.passed if ok else self.failed).append(what)


def normalized(name: str) -> str:
    """A wheel member's name with the extension's platform suffix taken out."""
    name = re.sub(r"^rsimhash/_rsimhash\..*(so|pyd)$", "rsimhash/_rsimhash.<ext>", name)
    return name


def check_record(zf: zipfile.ZipFile, dist_info: str, r: Report) -> None:
    record = zf.read(f"{dist_info}/RECORD").decode()
    rows = list(csv.reader(io.StringIO(record)))
    listed = {row[0] for row in rows}
    bad = []
    for path, digest, _size in rows:
        if not digest:
            continue
        algo, _, want = digest.partition("=")
        got = base64.urlsafe_b64encode(hashlib.new(algo, zf.read(path)).digest()).rstrip(b"=").decode()
        if got != want:
            bad.append(path)
    members = set(zf.namelist())
    r.check(
        not bad and listed == members,
        f"RECORD lists all {len(members)} files with their hashes" + (f" (bad: {bad})" if bad else ""),
    )


def check_linux(binary: Path, plat: str, r: Report, auditwheel: str | None) -> None:
    dyn = llvm("llvm-objdump", "-p", str(binary))
    needed = set(re.findall(r"^\s*NEEDED\s+(\S+)", dyn, re.M))
    r.check(not any("python" in n for n in needed), "links no libpython")
    r.check(needed <= LINUX_LIBS, f"links only system libraries: {', '.join(sorted(needed))}")
    versions = set(re.findall(r"GLIBC_(\d+)\.(\d+)", llvm("llvm-objdump", "-T", str(binary))))
    newest = max(((int(a), int(b)) for a, b in versions), default=(0, 0))
    r.check(newest <= (2, 17), f"minimum OS: glibc {newest[0]}.{newest[1]} symbols at most (2.17 allowed)")
    exports = llvm("llvm-nm", "-D", "--defined-only", str(binary)).split()
    r.check("PyInit__rsimhash" in exports, "exports PyInit__rsimhash")
    if auditwheel:
        out = subprocess.run([auditwheel, "show", str(r.wheel)], capture_output=True, text=True)
        verdict = re.search(r'following platform tag:\s*"([^"]+)"', " ".join(out.stdout.split()))
        got = verdict.group(1) if verdict else f"no verdict ({out.stderr.strip()[-200:]})"
        r.check(got == plat, f"auditwheel show: {got}")


def check_macos(binary: Path, spec: dict, r: Report) -> None:
    heads = llvm("llvm-objdump", "--macho", "--private-headers", str(binary))
    # The dylibs it loads: LC_LOAD_DYLIB and kin, not LC_ID_DYLIB or the dyld of LC_LOAD_DYLINKER.
    libs = set()
    for command in heads.split("Load command")[1:]:
        kind = re.search(r"cmd (LC_\w+)", command)
        name = re.search(r"^\s*name (\S+) \(offset", command, re.M)
        if kind and name and kind.group(1) in ("LC_LOAD_DYLIB", "LC_LOAD_WEAK_DYLIB", "LC_REEXPORT_DYLIB", "LC_LAZY_LOAD_DYLIB"):
            libs.add(name.group(1))
    r.check(not any("ython" in n for n in libs), "links no libpython or Python framework")
    r.check(libs <= MACOS_LIBS, f"links only system libraries: {', '.join(sorted(libs))}")
    minos = re.search(r"cmd LC_BUILD_VERSION.*?minos (\d+)\.(\d+)", heads, re.S) or re.search(
        r"cmd LC_VERSION_MIN_MACOSX.*?version (\d+)\.(\d+)", heads, re.S
    )
    got = (int(minos.group(1)), int(minos.group(2))) if minos else None
    shown = "%d.%d" % got if got else "?"
    r.check(got is not None and got <= spec["minos"], f"minimum OS: macOS {shown} (tag: %d.%d)" % spec["minos"])
    if spec["arch"] == "arm64":
        # Apple silicon runs only signed code: the linker's ad-hoc signature must be there.
        r.check("cmd LC_CODE_SIGNATURE" in heads, "carries a code signature (LC_CODE_SIGNATURE; arm64 runs only signed code)")
    exports = llvm("llvm-nm", "-g", "--defined-only", str(binary)).split()
    r.check("_PyInit__rsimhash" in exports, "exports PyInit__rsimhash")
    undefined = llvm("llvm-nm", "-u", str(binary)).split()
    r.check("_PyModule_Create2" in undefined or "_PyModuleDef_Init" in undefined, "Python symbols resolved at load time")


def check_windows(binary: Path, r: Report) -> None:
    heads = llvm("llvm-objdump", "-p", str(binary))
    dlls = [d.lower() for d in re.findall(r"^\s*DLL Name: (\S+)", heads, re.M)]
    r.check(
        not any(re.match(r"python3\d+\.dll$", d) for d in dlls),
        "links no versioned pythonXY.dll (only the stable ABI's python3.dll)",
    )
    foreign = [d for d in dlls if d not in WINDOWS_LIBS and not WINDOWS_API_SETS.match(d)]
    r.check(not foreign, f"links only system DLLs and python3.dll: {', '.join(sorted(set(dlls)))}")
    # The import table, DLL by DLL: PyUnicode_AsUTF8AndSize comes from python3.dll.
    imports: dict[str, list[str]] = {}
    current = None
    for line in heads.splitlines():
        m = re.match(r"^\s*DLL Name: (\S+)", line)
        if m:
            current = m.group(1).lower()
            imports[current] = []
        elif current and re.match(r"^\s+\d+\s+\S+$", line):
            imports[current].append(line.split()[-1])
        elif not line.strip():
            current = None
    # python3.dll exports it only from 3.10 on: imported, the module would not load on 3.9 (src/py/text.rs).
    r.check(
        not any("PyUnicode_AsUTF8AndSize" in names for names in imports.values()),
        "imports no PyUnicode_AsUTF8AndSize (python3.dll of CPython 3.9 lacks it)",
    )
    r.check(
        bool(imports.get("python3.dll")), f"imports the C API from python3.dll ({len(imports.get('python3.dll', []))} functions)"
    )
    r.check(re.search(r"^\s+\d+\s+\S*\s*PyInit__rsimhash$", heads, re.M) is not None, "exports PyInit__rsimhash")
    hdr = llvm("llvm-readobj", "--file-headers", str(binary))
    major = re.search(r"MajorSubsystemVersion: (\d+)", hdr)
    minor = re.search(r"MinorSubsystemVersion: (\d+)", hdr)
    version = f"{major.group(1)}.{minor.group(1)}" if major and minor else "?"
    r.check(
        major is not None and int(major.group(1)) <= 6,
        f"minimum OS: PE subsystem version {version}, none newer asked for (Rust's std needs Windows 10)",
    )


def check_wheel(wheel: Path, auditwheel: str | None) -> tuple[Report, set[str]]:
    r = Report(wheel)
    m = WHEEL_NAME.match(wheel.name)
    if not m:
        r.check(False, f"file name {wheel.name} is not a wheel's")
        return r, set()
    # A compressed tag set (maturin writes manylinux2014_X.manylinux_2_17_X):
    # the one of its tags this project knows, by its PEP 600 name.
    plats = [ALIASES.get(p, p) for p in m["platform"].split(".")]
    plat = next((p for p in plats if p in PLATFORMS), plats[0])
    spec = PLATFORMS.get(plat)
    r.check(m["name"] == "rsimhash", f"distribution name {m['name']}")
    r.check(spec is not None, f"platform tag {m['platform']} is one the release ships ({plat})")
    spec = spec or {"os": "?", "arch": "?", "python": "?"}
    r.check(
        m["abi"] == "abi3" and m["python"] == spec["python"], f"Python tags {m['python']}-{m['abi']} (want {spec['python']}-abi3)"
    )
    with zipfile.ZipFile(wheel) as zf:
        names = set(zf.namelist())
        dist_info = f"rsimhash-{m['version']}.dist-info"
        meta = zf.read(f"{dist_info}/WHEEL").decode()
        tags = set(re.findall(r"^Tag: (\S+)", meta, re.M))
        want = {
            f"{py}-{abi}-{p}" for py in m["python"].split(".") for abi in m["abi"].split(".") for p in m["platform"].split(".")
        }
        r.check(tags == want, f"WHEEL tags {', '.join(sorted(tags))} match the file name")
        r.check("Root-Is-Purelib: false" in meta, "Root-Is-Purelib: false")
        check_record(zf, dist_info, r)
        ext = [n for n in names if re.match(r"^rsimhash/_rsimhash\..*(so|pyd)$", n)]
        want_ext = "rsimhash/_rsimhash.pyd" if spec["os"] == "windows" else "rsimhash/_rsimhash.abi3.so"
        r.check(ext == [want_ext], f"one extension module {want_ext}: {ext}")
        if not ext:
            return r, {normalized(n) for n in names}
        with tempfile.TemporaryDirectory() as tmp:
            binary = Path(tmp) / Path(ext[0]).name
            binary.write_bytes(zf.read(ext[0]))
            # llvm-readobj, not llvm-objdump -f, which refuses zig's Mach-O files.
            head = llvm("llvm-readobj", "--file-headers", str(binary))
            arch = re.search(r"^Arch: (\S+)", head, re.M)
            want_arch = OBJDUMP_ARCH.get((spec["os"], spec["arch"]))
            fmt = re.search(r"^Format: (.+)$", head, re.M)
            r.check(
                arch is not None and arch.group(1) == want_arch,
                f"binary: {fmt.group(1) if fmt else '?'}, architecture {arch.group(1) if arch else '?'}",
            )
            if spec["os"] == "linux":
                check_linux(binary, plat, r, auditwheel)
            elif spec["os"] == "macos":
                check_macos(binary, spec, r)
            elif spec["os"] == "windows":
                check_windows(binary, r)
    return r, {normalized(n) for n in names}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("wheels", nargs="+", type=Path)
    ap.add_argument("--auditwheel", help="auditwheel to run on Linux wheels (default: the one on PATH)")
    args = ap.parse_args()
    auditwheel = args.auditwheel or shutil.which("auditwheel")
    bad = 0
    contents: dict[Path, set[str]] = {}
    for wheel in args.wheels:
        r, names = check_wheel(wheel, auditwheel)
        contents[wheel] = names
        size = wheel.stat().st_size
        print(f"{wheel.name}  ({size / 1e6:.2f} MB, {len(names)} files)")
        for what in r.passed:
            print(f"  ok    {what}")
        for what in r.failed:
            print(f"  FAIL  {what}")
        bad += bool(r.failed)
    same = True
    if len(contents) > 1:
        (first, names0), *rest = contents.items()
        for wheel, names in rest:
            if names != names0:
                same = False
                print(f"FAIL  {wheel.name} and {first.name} hold different files: {sorted(names ^ names0)}")
        if same:
            print(f"ok    all {len(contents)} wheels hold the same {len(names0)} files")
    print(
        f"check-wheels: {len(args.wheels) - bad} of {len(args.wheels)} wheels passed" + ("" if same else "; their files differ")
    )
    return 1 if bad or not same else 0


if __name__ == "__main__":
    sys.exit(main())
