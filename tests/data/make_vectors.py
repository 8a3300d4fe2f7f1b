#!/usr/bin/env python3
"""Regenerate tests/data/vectors_v1.json from the pure-Python reference.

    python tests/data/make_vectors.py            # write (refuses if any value changed)
    python tests/data/make_vectors.py --check    # exit 1 if the file is not up to date
    python tests/data/make_vectors.py --force    # overwrite even if values changed

The output is deterministic.  Golden vectors pin SPEC v1 forever: a changed
value means either the reference or the spec changed, and the spec must not
(add a version 2 instead).  That is why overwriting changed values needs
``--force``; adding or removing entries does not.

Every text uses only code points assigned in Unicode 14.0 (the reference relies
on Python's ``unicodedata``, which is 14.0.0 in Python 3.11).

File layout (one entry per line, ASCII-only JSON):
  {"spec_version": 1, "generator_unicode_version": "14.0.0",
   "fingerprints": [{"mode": "words"|"chars", "width": int, "text": str,
                     "fingerprint": "0x%016x"}, ...],
   "fnv1a64":      [{"bytes_hex": str, "fnv1a64": "0x%016x"}, ...],
   "weighted":     [{"features": [[kind, value, weight], ...],
                     "fingerprint": "0x%016x"}, ...]}
Weighted feature kinds: "str" (value is the string), "bytes_hex" (value is the
bytes in hex), "int" (value is the 64-bit hash as a "0x%016x" string).  All
u64 values are hex strings so that every JSON reader keeps them exact.
"""

from __future__ import annotations

import json
import os
import sys
import unicodedata

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

import reference_v1 as ref  # noqa: E402

OUT = os.path.join(HERE, "vectors_v1.json")


def hex64(x: int) -> str:
    return "0x%016x" % x


# ---------------------------------------------------------------------------
# Texts
# ---------------------------------------------------------------------------
def long_text() -> str:
    """A few KB of mixed-script text from a fixed 64-bit LCG (no `random`)."""
    vocab = [
        "the",
        "quick",
        "brown",
        "fox",
        "jumps",
        "over",
        "lazy",
        "dog",
        "Simhash",
        "fingerprint",
        "near-duplicate",
        "INDEX",
        "web",
        "scale",
        "3.14",
        "2024",
        "e-mail",
        "don't",
        "naïve",
        "café",
        "Straße",
        "мир",
        "Привет",
        "данные",
        "γειά",
        "ΟΔΟΣ",
        "שלום",
        "مرحبا",
        "١٢٣",
        "漢字",
        "東京",
        "データ",
        "ひらがな",
        "ภาษาไทย",
        "ខ្មែរ",
        "မြန်မာ",
        "한국어",
        "हिन्दी",
        "e\u0301",
        "\u0130",
        "ＡＢＣ",
        "😀",
        "👍🏽",
        "—",
        ",",
        ".",
        "!",
        "?",
        "(",
        ")",
        "\n",
        "\t",
        "\u00a0",
        "\u3000",
    ]
    state = 0x243F6A8885A308D3
    parts = []
    size = 0
    while size < 4000:
        state = (state * 6364136223846793005 + 1442695040888963407) & ref.MASK64
        w = vocab[(state >> 33) % len(vocab)]
        sep = " " if (state >> 20) & 7 else ""
        parts.append(w + sep)
        size += len(w) + len(sep)
    return "".join(parts)


# (text) computed for the default widths: words w=3 and chars n=4.
TEXTS = [
    # ASCII English
    "The quick brown fox jumps over the lazy dog.",
    "the quick brown fox jumps over the lazy dog",
    "THE QUICK BROWN FOX JUMPS OVER THE LAZY DOG!!!",
    "Near-duplicate detection at web scale: simhash fingerprints, permuted tables, and Hamming search.",
    "It's a well-known fact -- isn't it? -- that e-mail addresses (like foo@example.com) split into tokens.",
    "snake_case and kebab-case and CamelCase",
    # empty, whitespace, punctuation only
    "",
    " ",
    "   \t  \n ",
    "\t\n\r\x0b\x0c \u00a0\u1680\u2000\u2003\u2009\u200a\u2028\u2029\u202f\u205f\u3000\u0085",
    "!!! ... ??? --- ;;; @@@ ### $%^&*() [] {} <> /\\ |~`",
    "\u00bf\u00a1\u00ab\u00bb\u2014\u2026\u3001\u3002\u300c\u300d\u30fb\uff01",
    # shorter than the width, tiny
    "a",
    "hello",
    "hello world",
    "a b c",
    "a b c d",
    "ab",
    "abc",
    "abcd",
    # repeated shingles
    "spam spam spam spam spam spam",
    "to be or not to be that is the question to be or not to be",
    "aaaaaaaa",
    # case equivalence
    "Hello World",
    "HELLO WORLD",
    "hello, world",
    # CJK and Japanese
    "漢字テスト",
    "AI模型ok",
    "abc漢def",
    "我爱北京天安门。今天天气很好！",
    "東京は日本の首都です。カタカナとひらがな。",
    "ラーメン・ギョーザ",
    "か\u3099き\u3099",
    "漢\u0301字",
    "\u3400\u3401 \U00020000\U00020001 \U0002a6a5 \uf900\uf901 \u3007",
    # Thai, Lao, Khmer, Myanmar
    "ภาษาไทยเป็นภาษาที่ไม่มีการเว้นวรรคระหว่างคำ",
    "กิน ข้าว ๑๒๓ ฿100 ฯลฯ",
    "ພາສາລາວ ໑໒",
    "ភាសាខ្មែរ គឺជាភាសា",
    "မြန်မာဘာသာ ၁၂၃",
    # Hangul (not a no-space script)
    "한국어 문장은 띄어쓰기를 합니다",
    "\u1100\u1161\u11a8 \u3131\u314f",
    # combining marks
    "e\u0301te\u0301 cafe\u0301 nai\u0308ve",
    "été café naïve",
    " \u0301abc \u0301 \u20dd",
    "हिन्दी भाषा में मात्राएँ होती हैं",
    "שָׁלוֹם עוֹלָם",
    # Greek (no final sigma rule)
    "ΟΔΟΣ",
    "οδος",
    "οδοσ",
    "ΟΔΟΣ ΚΑΙ ΔΡΟΜΟΣ ΣΤΗΝ ΑΘΗΝΑ",
    "\u0391\u0345 \u1fbc \u03a9\u2126",
    # U+0130 and other special lowercase mappings
    "\u0130",
    "\u0130STANBUL \u0130zmir i\u0307stanbul",
    "Straße STRASSE strasse",
    "\u1e9e \u00df",
    "\u01c4 \u01c5 \u01c6 \u212a\u212b",
    "\u13a3\u13b3\u13a9 \u1c90\u1c91\u1c92 \U00010400\U00010401",
    # Cyrillic
    "Съешь же ещё этих мягких французских булок, да выпей чаю.",
    "ПРИВЕТ МИР привет мир",
    # Arabic with Arabic-Indic digits
    "العدد ٣٤٥ والعدد ١٢ في النص العربي",
    "\u0870\u0871 \u06f1\u06f2\u06f3",
    # emoji: separators, but VS16 (Mn) and keycap (Me) are marks
    "I \u2764\ufe0f NY \U0001f600\U0001f600 family",
    "\U0001f468\u200d\U0001f469\u200d\U0001f467\u200d\U0001f466 ok \U0001f44d\U0001f3fd ok",
    "\U0001f1eb\U0001f1f7 flag 1\ufe0f\u20e3 keycap \U0001f3f4\U000e0067\U000e0062\U000e0065\U000e006e\U000e0067\U000e007f",
    "\U0001f600",
    # numbers with separators, other numbers
    "pi is 3.14, e is 2.718; 1,000,000 and 10:30 or 1/2",
    "x\u00b2 \u00bd \u2160\u216b \u2460\u2461 \u0660\u0661",
    "\u24b6\u24b7 \u24d0\u24d1 \u2122 \u00a9",
    # fullwidth
    "ＨＥＬＬＯ　ｗｏｒｌｄ　１２３",
    "hello world 123",
    # mixed scripts
    "Hello мир 世界 مرحبا שלום γειά σου 안녕 สวัสดี",
    "data-driven データ駆動 데이터 기반 Datengetrieben",
    # separators of all kinds between words
    "tabs\tand\nnewlines\r\nand\u00a0nbsp\u2009thin\u200bzwsp\u2028ls\u2029ps\u0085nel\u180emvs",
    "\x00a\x01b\x7fc\ue000d\U000f0000e",
]

# Texts also computed for every width in the sweep.
SWEEP_TEXTS = [
    "The quick brown fox jumps over the lazy dog.",
    "hello world",
    "Съешь же ещё этих мягких французских булок, да выпей чаю.",
    "我爱北京天安门。今天天气很好！",
    "e\u0301te\u0301 \u0130STANBUL Straße ΟΔΟΣ",
]
WORD_WIDTHS = [1, 2, 3, 4, 5]
CHAR_WIDTHS = [1, 2, 3, 4, 6]


def fingerprint_entries():
    seen = set()
    out = []

    def add(mode, width, text):
        key = (mode, width, text)
        if key in seen:
            return
        seen.add(key)
        out.append({"mode": mode, "width": width, "text": text, "fingerprint": hex64(ref.fingerprint(text, mode, width))})

    for text in TEXTS:
        add("words", 3, text)
        add("chars", 4, text)
    for text in SWEEP_TEXTS:
        for w in WORD_WIDTHS:
            add("words", w, text)
        for n in CHAR_WIDTHS:
            add("chars", n, text)
    lt = long_text()
    add("words", 3, lt)
    add("chars", 4, lt)
    return out


def fnv_entries():
    samples = [
        b"",
        b"a",
        b"foobar",
        b"hello",
        b"a b c",
        "漢字".encode("utf-8"),
        "i\u0307".encode("utf-8"),
        "\U0001f600".encode("utf-8"),
        b"\x00",
        b"\xff",
        b"\xff\xfe\x80",  # not UTF-8
        bytes(range(256)),
    ]
    return [{"bytes_hex": b.hex(), "fnv1a64": hex64(ref.fnv1a64(b))} for b in samples]


def weighted_entries():
    cases = [
        [],
        [["str", "a", 1.0]],
        [["str", "a", 1.0], ["str", "b", 1.0], ["str", "c", 1.0]],
        [["str", "a", 2.0], ["str", "b", -1.0]],
        [["str", "a", 0.0], ["str", "b", -0.0]],
        [["str", "a", -1.0]],
        [["bytes_hex", b"foobar".hex(), 0.5], ["str", "foobar", 0.25], ["int", hex64(0), 0.125]],
        [
            ["int", hex64(0xFFFFFFFFFFFFFFFF), 1.0],
            ["int", hex64(0x8000000000000001), -2.5],
            ["int", hex64(0x0123456789ABCDEF), 3.75],
        ],
        [["str", "漢字", 0.1], ["str", "\u0130", 0.2], ["str", "\U0001f600", 0.3], ["bytes_hex", "ff00", -0.7]],
        # order of accumulation matters: (1e16 + 1) - 1e16 == 0 in doubles
        [["str", "p", 1e16], ["str", "q", 1.0], ["str", "p", -1e16]],
        # overflow to +-inf follows IEEE-754 in the given order: x reaches +-inf
        # first and stays there, although y has the larger exact total
        [["str", "x", 1.7e308], ["str", "x", 1.7e308], ["str", "y", 1.7e308], ["str", "y", 1.7e308], ["str", "y", 1.7e308]],
        [["str", "tiny", 5e-324], ["str", "huge", -1e-300]],
        [["int", hex64(1 << k), float(k - 32)] for k in range(64)],
        [["str", "w%d" % i, float(2**52 + i)] for i in range(8)],
    ]

    def decode(kind, value):
        if kind == "str":
            return value
        if kind == "bytes_hex":
            return bytes.fromhex(value)
        if kind == "int":
            return int(value, 16)
        raise ValueError(kind)

    out = []
    for feats in cases:
        fp = ref.fingerprint_weighted([(decode(k, v), w) for k, v, w in feats])
        out.append({"features": feats, "fingerprint": hex64(fp)})
    return out


def check_assigned(entries):
    for e in entries:
        for c in e["text"]:
            cat = unicodedata.category(c)
            if cat in ("Cn", "Cs"):
                raise SystemExit("text %r has %s code point U+%04X" % (e["text"], cat, ord(c)))


def render(doc) -> str:
    """Deterministic JSON, one entry per line, ASCII only."""
    lines = ["{"]
    lines.append('"spec_version": %s,' % json.dumps(doc["spec_version"]))
    lines.append('"generator_unicode_version": %s,' % json.dumps(doc["generator_unicode_version"]))
    keys = ["fingerprints", "fnv1a64", "weighted"]
    for ki, key in enumerate(keys):
        lines.append('"%s": [' % key)
        items = doc[key]
        for i, e in enumerate(items):
            lines.append(json.dumps(e, ensure_ascii=True) + ("," if i + 1 < len(items) else ""))
        lines.append("]" + ("," if ki + 1 < len(keys) else ""))
    lines.append("}")
    return "\n".join(lines) + "\n"


def entry_key(section, e):
    if section == "fingerprints":
        return (e["mode"], e["width"], e["text"])
    if section == "fnv1a64":
        return e["bytes_hex"]
    return json.dumps(e["features"])


def changed_values(old, new):
    changes = []
    for section, field in (("fingerprints", "fingerprint"), ("fnv1a64", "fnv1a64"), ("weighted", "fingerprint")):
        before = {entry_key(section, e): e[field] for e in old.get(section, [])}
        for e in new[section]:
            k = entry_key(section, e)
            if k in before and before[k] != e[field]:
                changes.append((section, k, before[k], e[field]))
    return changes


def build():
    doc = {
        "spec_version": 1,
        "generator_unicode_version": "14.0.0",
        "fingerprints": fingerprint_entries(),
        "fnv1a64": fnv_entries(),
        "weighted": weighted_entries(),
    }
    check_assigned(doc["fingerprints"])
    return doc


def main(argv):
    force = "--force" in argv
    check = "--check" in argv
    if ref.UNICODE_VERSION != "14.0.0":
        print("note: running with unicodedata %s, vectors were made with 14.0.0" % ref.UNICODE_VERSION, file=sys.stderr)
    doc = build()
    text = render(doc)
    json.loads(text)  # sanity
    old_text = None
    if os.path.exists(OUT):
        with open(OUT, encoding="utf-8") as f:
            old_text = f.read()
    if old_text == text:
        print(
            "%s is up to date (%d fingerprint, %d fnv, %d weighted vectors)"
            % (OUT, len(doc["fingerprints"]), len(doc["fnv1a64"]), len(doc["weighted"]))
        )
        return 0
    if check:
        print("%s is NOT up to date" % OUT, file=sys.stderr)
        return 1
    if old_text is not None:
        changes = changed_values(json.loads(old_text), doc)
        if changes and not force:
            for section, k, a, b in changes[:20]:
                print("changed %s %r: %s -> %s" % (section, k, a, b), file=sys.stderr)
            print("refusing to overwrite %d changed value(s); use --force" % len(changes), file=sys.stderr)
            return 2
    with open(OUT, "w", encoding="utf-8", newline="\n") as f:
        f.write(text)
    print(
        "wrote %s (%d fingerprint, %d fnv, %d weighted vectors, %d bytes)"
        % (OUT, len(doc["fingerprints"]), len(doc["fnv1a64"]), len(doc["weighted"]), len(text.encode("utf-8")))
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
