#!/usr/bin/env python3
"""Cross-check the generated Unicode tables against independent sources.

    cargo run -- --dump /tmp/ucd_dump.txt          # in tools/gen-unicode-tables
    python3 check_categories.py /tmp/ucd_dump.txt  # needs unicodedata2==15.1.0

The dump has one line per code point, decoded back from the emitted tables:
``CP CLASS LOWER`` (hex, LOWER's code points joined by ``_``).

Checks, for every code point U+0000..U+10FFFF:
1. CLASS == the SPEC v1 class computed from ``unicodedata2.category`` (UCD 15.1.0):
   Separator unless L*/M*/N*; Solo if a token char in the no-space ranges; else Token.
2. CLASS == the class of every code point of LOWER (the runtime returns the class of
   the lowercase mapping; the generator asserts it equals the code point's own).
3. LOWER == Python's ``chr(cp).lower()`` (Unicode 14.0 in Python 3.11) for every code
   point assigned in Python's ``unicodedata`` (14.0). Code points assigned only in
   15.0/15.1 are listed if their mapping is not the identity (there should be none:
   those versions added no case pairs), and so are 14.0-unassigned code points whose
   ``str.lower()`` differs from the table (there should be none either).

It also prints FNV-1a 64 digests of the reference data that src/fingerprint/unicode/mod.rs's tests
compare against. Exit status 1 on any mismatch.
"""
import sys
import unicodedata

import unicodedata2

SOLO_RANGES = [
    (0x0E00, 0x0EFF), (0x1000, 0x109F), (0x1780, 0x17FF), (0x3040, 0x30FF),
    (0x3400, 0x4DBF), (0x4E00, 0x9FFF), (0xF900, 0xFAFF), (0x20000, 0x3134F),
]
SOLO = bytearray(0x110000)
for lo, hi in SOLO_RANGES:
    SOLO[lo:hi + 1] = b"\x01" * (hi + 1 - lo)

NAMES = ["Separator", "Token", "Solo"]


def spec_class(cp):
    """SPEC v1 class from UCD 15.1.0 general category: 0 Separator, 1 Token, 2 Solo."""
    if unicodedata2.category(chr(cp))[0] not in "LMN":
        return 0
    return 2 if SOLO[cp] else 1


class Fnv:
    def __init__(self):
        self.h = 0xCBF29CE484222325

    def update(self, data):
        h = self.h
        for b in data:
            h = ((h ^ b) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
        self.h = h


def main():
    path = sys.argv[1] if len(sys.argv) > 1 else "/tmp/ucd_dump.txt"
    if unicodedata2.unidata_version != "15.1.0":
        sys.exit(f"unicodedata2 is UCD {unicodedata2.unidata_version}, need 15.1.0")
    print(f"unicodedata2 {unicodedata2.unidata_version}; Python {sys.version.split()[0]} "
          f"unicodedata {unicodedata.unidata_version}")

    table = {}
    with open(path) as f:
        for line in f:
            if line.startswith("#"):
                continue
            cp, cls, low = line.split()
            table[int(cp, 16)] = (NAMES.index(cls), "".join(chr(int(x, 16)) for x in low.split("_")))
    if sorted(table) != list(range(0x110000)):
        sys.exit("dump does not cover exactly U+0000..U+10FFFF")

    class_bad, lowclass_bad, lower_bad, new_cased, unassigned_lower_bad = [], [], [], [], []
    ref_class = [spec_class(cp) for cp in range(0x110000)]
    n_assigned14 = 0
    for cp in range(0x110000):
        cls, low = table[cp]
        if cls != ref_class[cp]:
            class_bad.append((cp, NAMES[cls], NAMES[ref_class[cp]], unicodedata2.category(chr(cp))))
        lc = {ref_class[ord(x)] for x in low}
        if lc != {cls}:
            lowclass_bad.append((cp, NAMES[cls], low))
        if 0xD800 <= cp <= 0xDFFF:
            continue  # surrogates never reach Rust; Python maps them to themselves too
        py = chr(cp).lower()
        if unicodedata.category(chr(cp)) != "Cn":
            n_assigned14 += 1
            if py != low:
                lower_bad.append((cp, low, py))
        else:
            if low != chr(cp) and unicodedata2.category(chr(cp)) != "Cn":
                new_cased.append((cp, low))
            if py != low:
                unassigned_lower_bad.append((cp, low, py))

    def show(title, rows):
        print(f"{title}: {len(rows)}")
        for r in rows[:50]:
            print("   ", " ".join(f"U+{x:04X}" if isinstance(x, int) else repr(x) for x in r))

    print(f"code points checked: {len(table)}; assigned in Unicode 14.0 (non-surrogate): {n_assigned14}")
    show("class mismatches vs unicodedata2 15.1.0 category", class_bad)
    show("class of lowercase mapping != class of code point", lowclass_bad)
    show("lowercase mismatches vs Python str.lower() (14.0-assigned)", lower_bad)
    show("cased code points new in 15.0/15.1 (not checkable against Python)", new_cased)
    show("lowercase mismatches vs Python str.lower() (14.0-unassigned)", unassigned_lower_bad)

    # Digests of the *reference* data (not of the dump), over all scalar values in order.
    dc, dl = Fnv(), Fnv()
    dc.update(bytes(c for cp, c in enumerate(ref_class) if not 0xD800 <= cp <= 0xDFFF))
    for cp in range(0x110000):
        if not 0xD800 <= cp <= 0xDFFF:
            dl.update(chr(cp).lower().encode() + b"\xff")
    print(f"REF_CLASS_DIGEST (unicodedata2 15.1.0 classes, one byte per scalar value) = 0x{dc.h:016x}")
    print(f"REF_LOWER_DIGEST (Python str.lower() UTF-8 + 0xFF per scalar value)      = 0x{dl.h:016x}")

    bad = class_bad or lowclass_bad or lower_bad or new_cased or unassigned_lower_bad
    print("FAIL" if bad else "OK: no mismatches")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
