//! Generates `src/fingerprint/unicode/tables.rs` of rsimhash: for every code point, the class
//! (Separator / Token / Solo, SPEC v1 steps 2-3) of its full lowercase mapping and
//! that mapping, from the Unicode 15.1.0 data baked into ICU4X 1.5.
//!
//! Usage: `cargo run -- [OUT_PATH] [--dump DUMP_PATH]`
//! (OUT_PATH defaults to ../../src/fingerprint/unicode/tables.rs). `--dump` also writes one line
//! per code point, decoded back from the emitted tables, for check_categories.py.

use icu_casemap::CaseMapper;
use icu_properties::{maps, GeneralCategory as GC, GeneralCategoryGroup as GCG};
use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;
use std::process::exit;

const MAX: u32 = 0x10FFFF;
const SEPARATOR: u8 = 0;
const TOKEN: u8 = 1;
const SOLO: u8 = 2;
const CLASS_NAMES: [&str; 3] = ["Separator", "Token", "Solo"];
/// Names of the class constants in the generated file.
const CLASS_CONSTS: [&str; 3] = ["SEP", "TOK", "SOLO"];

/// Delta marking a multi-char mapping: cp + MANY_DELTA is never a char.
const MANY_DELTA: i32 = 0x110000;
/// Internal marker for multi-char mappings while collecting.
const MANY_MARK: i32 = i32::MIN;

/// "No-space script" ranges of SPEC v1 step 3.
const SOLO_RANGES: [(u32, u32); 8] = [
    (0x0E00, 0x0EFF),
    (0x1000, 0x109F),
    (0x1780, 0x17FF),
    (0x3040, 0x30FF),
    (0x3400, 0x4DBF),
    (0x4E00, 0x9FFF),
    (0xF900, 0xFAFF),
    (0x20000, 0x3134F),
];

fn die(msg: impl AsRef<str>) -> ! {
    eprintln!("gen-unicode-tables: FATAL: {}", msg.as_ref());
    exit(1)
}

fn gc(cp: u32) -> GC {
    maps::general_category().get32(cp)
}

/// SPEC v1 class of a code point itself (no lowercasing).
fn class(cp: u32) -> u8 {
    let g = gc(cp);
    let token = GCG::Letter.contains(g) || GCG::Mark.contains(g) || GCG::Number.contains(g);
    if !token {
        SEPARATOR
    } else if SOLO_RANGES.iter().any(|&(lo, hi)| (lo..=hi).contains(&cp)) {
        SOLO
    } else {
        TOKEN
    }
}

/// Full lowercase mapping of a lone code point: root locale, and a one-char string
/// has no context, so no Final_Sigma / language-specific rule can apply.
fn lower(cm: &CaseMapper, c: char) -> String {
    cm.lowercase_to_string(c.encode_utf8(&mut [0; 4]), &Default::default())
}

fn ch(cp: u32) -> char {
    char::from_u32(cp).unwrap()
}

/// Fail unless the baked data is exactly Unicode 15.1 (and the mapping is the one the spec wants).
fn check_unicode_version(cm: &CaseMapper) {
    let mut bad = Vec::new();
    let mut expect_gc = |cp: u32, want: GC, why: &str| {
        let got = gc(cp);
        if got != want {
            bad.push(format!(
                "U+{cp:04X}: general category {got:?}, want {want:?} ({why})"
            ));
        }
    };
    expect_gc(0x2EBF0, GC::OtherLetter, "CJK Ext. I, new in 15.1");
    expect_gc(0x2EE5D, GC::OtherLetter, "last of CJK Ext. I, new in 15.1");
    expect_gc(0x2FFC, GC::OtherSymbol, "IDC, new in 15.1");
    expect_gc(0x31EF, GC::OtherSymbol, "CJK stroke, new in 15.1");
    expect_gc(0x11F00, GC::NonspacingMark, "Kawi, new in 15.0");
    expect_gc(0x1E030, GC::ModifierLetter, "Cyrillic Ext.-D, new in 15.0");
    expect_gc(0xA7CB, GC::Unassigned, "new in 16.0");
    expect_gc(0x1C89, GC::Unassigned, "new in 16.0");
    expect_gc(0x10D50, GC::Unassigned, "Garay, new in 16.0");
    expect_gc(0x2EE5E, GC::Unassigned, "after CJK Ext. I");
    expect_gc(0x31350, GC::OtherLetter, "CJK Ext. H (15.0)");
    expect_gc(0x323B0, GC::Unassigned, "after CJK Ext. H");
    let mut expect_lower = |cp: u32, want: &str| {
        let got = lower(cm, ch(cp));
        if got != want {
            bad.push(format!("U+{cp:04X}: lowercase {got:?}, want {want:?}"));
        }
    };
    expect_lower(0x41, "a");
    expect_lower(0x130, "i\u{307}");
    expect_lower(0x3A3, "\u{3C3}");
    expect_lower(0x49, "i");
    expect_lower(0x1E9E, "\u{DF}");
    expect_lower(0x13A0, "\u{AB70}");
    expect_lower(0x1C90, "\u{10D0}");
    expect_lower(0x10570, "\u{10597}");
    expect_lower(0xA7CB, "\u{A7CB}");
    expect_lower(0x1C89, "\u{1C89}");
    if !bad.is_empty() {
        die(format!(
            "baked data is not Unicode 15.1:\n  {}",
            bad.join("\n  ")
        ));
    }
}

struct Tables {
    shift: u32,
    index: Vec<u16>,
    leaves: Vec<Vec<u8>>,
    codes: Vec<i32>,
    many: Vec<(u32, String)>,
}

impl Tables {
    fn entry(&self, cp: u32) -> u8 {
        let leaf = self.index[(cp >> self.shift) as usize] as usize;
        self.leaves[leaf][(cp & ((1 << self.shift) - 1)) as usize]
    }
    /// Decodes (class, lowercase) back from the tables, as src/fingerprint/unicode/mod.rs does.
    fn decode(&self, cp: u32) -> (u8, String) {
        let v = self.codes[self.entry(cp) as usize];
        let s = match char::from_u32(cp.wrapping_add((v >> 2) as u32)) {
            Some(l) => l.to_string(),
            None => {
                let i = self.many.binary_search_by_key(&cp, |m| m.0).unwrap();
                self.many[i].1.clone()
            }
        };
        ((v & 3) as u8, s)
    }
    fn index_width(&self) -> usize {
        if self.leaves.len() <= 256 {
            1
        } else {
            2
        }
    }
    fn static_bytes(&self) -> usize {
        self.index.len() * self.index_width()
            + self.leaves.len() * (1 << self.shift)
            + self.codes.len() * 4
            + self.many.iter().map(|m| 4 + 16 + m.1.len()).sum::<usize>()
    }
}

fn split(entries: &[u8], shift: u32) -> (Vec<u16>, Vec<Vec<u8>>) {
    let mut ids: HashMap<&[u8], u16> = HashMap::new();
    let mut leaves: Vec<Vec<u8>> = Vec::new();
    let index = entries
        .chunks(1 << shift)
        .map(|block| {
            *ids.entry(block).or_insert_with(|| {
                leaves.push(block.to_vec());
                u16::try_from(leaves.len() - 1).unwrap()
            })
        })
        .collect();
    (index, leaves)
}

fn main() {
    let mut out_path = String::from("../../src/fingerprint/unicode/tables.rs");
    let mut dump_path: Option<String> = None;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--dump" => dump_path = Some(args.next().unwrap_or_else(|| die("--dump needs a path"))),
            "-h" | "--help" => {
                println!("usage: gen-unicode-tables [OUT_PATH] [--dump DUMP_PATH]");
                return;
            }
            _ if a.starts_with('-') => die(format!("unknown option {a}")),
            _ => out_path = a,
        }
    }

    let cm = CaseMapper::new();
    check_unicode_version(&cm);

    // Per code point: class of its lowercase mapping, and that mapping.
    let mut delta_count: BTreeMap<i32, u32> = BTreeMap::new();
    let mut raw: Vec<(u8, i32)> = Vec::with_capacity(MAX as usize + 1); // (class, delta or MANY_MARK)
    let mut many: Vec<(u32, String)> = Vec::new();
    for cp in 0..=MAX {
        let Some(c) = char::from_u32(cp) else {
            // Surrogates: category Cs, a separator; never reach Rust, identity mapping.
            raw.push((SEPARATOR, 0));
            continue;
        };
        let l = lower(&cm, c);
        let lc: Vec<u32> = l.chars().map(u32::from).collect();
        if lc.is_empty() {
            die(format!("U+{cp:04X} lowers to the empty string"));
        }
        let cls: Vec<u8> = lc.iter().map(|&x| class(x)).collect();
        if cls.iter().any(|&k| k != cls[0]) {
            die(format!(
                "U+{cp:04X} lowers to {l:?} whose chars have different classes {cls:?}"
            ));
        }
        // class_of(c) in mod.rs is this table's class: lowercasing must never change the class.
        if class(cp) != cls[0] {
            die(format!(
                "U+{cp:04X} has class {} but its lowercase {l:?} has class {}",
                class(cp),
                cls[0]
            ));
        }
        if lc.len() == 1 {
            let d = lc[0] as i32 - cp as i32;
            *delta_count.entry(d).or_default() += 1;
            raw.push((cls[0], d));
        } else {
            many.push((cp, l));
            raw.push((cls[0], MANY_MARK));
        }
    }

    // Entry codes: each distinct (class, delta) pair gets one byte value. CODES[code] packs
    // (delta << 2) | class; multi-char mappings use MANY_DELTA, which no code point plus it
    // is a char, so the runtime's char::from_u32 check doubles as the "is it Many?" test.
    let mut pair_count: HashMap<(u8, i32), u32> = HashMap::new();
    for &p in &raw {
        *pair_count.entry(p).or_default() += 1;
    }
    let mut pairs: Vec<((u8, i32), u32)> = pair_count.into_iter().collect();
    pairs.sort_by_key(|&((cls, d), n)| (std::cmp::Reverse(n), cls, d));
    if pairs.len() > 256 {
        die(format!(
            "{} distinct (class, delta) pairs do not fit a byte",
            pairs.len()
        ));
    }
    let code_of: HashMap<(u8, i32), u8> = pairs
        .iter()
        .enumerate()
        .map(|(i, &(p, _))| (p, i as u8))
        .collect();
    let mut codes: Vec<i32> = pairs
        .iter()
        .map(|&((cls, d), _)| {
            if d == MANY_MARK {
                (MANY_DELTA << 2) | cls as i32
            } else {
                (d << 2) | cls as i32
            }
        })
        .collect();
    let n_used = codes.len();
    // Padded to a power of two so the runtime's `CODES[e & (len - 1)]` needs no bounds check.
    codes.resize(n_used.next_power_of_two(), 0); // padding: (Separator, identity); never referenced
    let n_deltas = delta_count.len(); // distinct single-char deltas, including 0
    let entries: Vec<u8> = raw.iter().map(|p| code_of[p]).collect();

    // Block size minimising total static bytes.
    let mut best: Option<Tables> = None;
    eprintln!("shift  block  leaves  index_bytes  leaf_bytes  total_static_bytes");
    for shift in 2..=12u32 {
        let (index, leaves) = split(&entries, shift);
        let t = Tables {
            shift,
            index,
            leaves,
            codes: codes.clone(),
            many: many.clone(),
        };
        eprintln!(
            "{:5}  {:5}  {:6}  {:11}  {:10}  {:5}",
            shift,
            1 << shift,
            t.leaves.len(),
            t.index.len() * t.index_width(),
            t.leaves.len() << shift,
            t.static_bytes()
        );
        if best
            .as_ref()
            .is_none_or(|b| t.static_bytes() < b.static_bytes())
        {
            best = Some(t);
        }
    }
    let t = best.unwrap();

    // Self-check: the tables decode back to what was computed.
    for cp in 0..=MAX {
        let Some(c) = char::from_u32(cp) else {
            continue;
        };
        let want = lower(&cm, c);
        let (cls, got) = t.decode(cp);
        if got != want || cls != class(cp) {
            die(format!("table self-check failed at U+{cp:04X}"));
        }
    }

    let src = emit(&t, n_used, n_deltas);
    std::fs::write(&out_path, src).unwrap_or_else(|e| die(format!("writing {out_path}: {e}")));
    eprintln!(
        "wrote {out_path}: block size {} (shift {}), {} leaves, {} entry codes, \
         {} distinct single-char deltas (incl. 0), {} multi-char mappings, {} static bytes",
        1 << t.shift,
        t.shift,
        t.leaves.len(),
        n_used,
        n_deltas,
        many.len(),
        t.static_bytes()
    );

    if let Some(p) = dump_path {
        let mut d = String::with_capacity(30 << 20);
        d.push_str("# cp class_of(cp) lowercase(cps joined by '_'), decoded back from the emitted tables\n");
        for cp in 0..=MAX {
            // Surrogates never reach Rust: category Cs, a separator, identity mapping.
            let (cls, s) = if char::from_u32(cp).is_some() {
                t.decode(cp)
            } else {
                (SEPARATOR, String::new())
            };
            let l = if s.is_empty() {
                format!("{cp:04X}")
            } else {
                s.chars()
                    .map(|x| format!("{:04X}", x as u32))
                    .collect::<Vec<_>>()
                    .join("_")
            };
            writeln!(d, "{cp:04X} {} {l}", CLASS_NAMES[cls as usize]).unwrap();
        }
        std::fs::write(&p, d).unwrap_or_else(|e| die(format!("writing {p}: {e}")));
        eprintln!("dumped {p}");
    }
}

fn emit(t: &Tables, n_used: usize, n_deltas: usize) -> String {
    let mut s = String::new();
    let nleaves = t.leaves.len();
    let block = 1usize << t.shift;
    let index_ty = if t.index_width() == 1 { "u8" } else { "u16" };
    s.push_str(
        "// @generated by tools/gen-unicode-tables from UCD 15.1.0 (ICU4X 1.5 baked data); do not edit\n\
         //\n\
         // Entry byte of code point cp: LEAVES[INDEX[cp >> SHIFT]][cp & ((1 << SHIFT) - 1)].\n\
         // CODES[entry] = (delta << 2) | class, where class is the Class (0 Separator, 1 Token,\n\
         // 2 Solo) of cp's full lowercase mapping (always the class of cp itself too), and the\n\
         // mapping is the single char cp + delta; delta MANY_DELTA (cp + it is never a char)\n\
         // means a multi-char mapping, held in MANY.\n\n",
    );
    writeln!(s, "/// log2 of the leaf block size.").unwrap();
    writeln!(s, "pub(super) const SHIFT: u32 = {};", t.shift).unwrap();
    writeln!(s, "/// Number of distinct leaf blocks.").unwrap();
    writeln!(s, "pub(super) const NLEAVES: usize = {nleaves};").unwrap();
    writeln!(s, "/// Delta of multi-char mappings in CODES.").unwrap();
    writeln!(s, "pub(super) const MANY_DELTA: i32 = 0x{MANY_DELTA:X};").unwrap();
    writeln!(s, "/// Entry codes in use (the rest of CODES is padding); {n_deltas} distinct single-char deltas.").unwrap();
    writeln!(
        s,
        "#[allow(dead_code)]\npub(super) const NCODES_USED: usize = {n_used};\n"
    )
    .unwrap();

    s.push_str(
        "const SEP: i32 = 0;\nconst TOK: i32 = 1;\nconst SOLO: i32 = 2;\n\
         const fn code(delta: i32, class: i32) -> i32 {\n    (delta << 2) | class\n}\n\n",
    );
    writeln!(s, "/// Length of CODES, a power of two.").unwrap();
    writeln!(s, "pub(super) const NCODES: usize = {};", t.codes.len()).unwrap();
    writeln!(s, "/// (lowercase delta << 2) | class, by entry byte.").unwrap();
    writeln!(
        s,
        "#[rustfmt::skip]\npub(super) static CODES: [i32; NCODES] = ["
    )
    .unwrap();
    let items: Vec<String> = t
        .codes
        .iter()
        .enumerate()
        .map(|(i, &v)| match v >> 2 {
            _ if i >= n_used => "0".to_string(),
            MANY_DELTA => format!("code(MANY_DELTA, {})", CLASS_CONSTS[(v & 3) as usize]),
            d => format!("code({d}, {})", CLASS_CONSTS[(v & 3) as usize]),
        })
        .collect();
    push_rows(&mut s, &items, "    ");
    s.push_str("];\n\n");

    writeln!(
        s,
        "/// Multi-char lowercase mappings, sorted by code point."
    )
    .unwrap();
    writeln!(
        s,
        "#[rustfmt::skip]\npub(super) static MANY: [(char, &str); {}] = [",
        t.many.len()
    )
    .unwrap();
    for (cp, l) in &t.many {
        let esc: String = l
            .chars()
            .map(|x| format!("\\u{{{:X}}}", x as u32))
            .collect();
        writeln!(s, "    ('\\u{{{cp:X}}}', \"{esc}\"),").unwrap();
    }
    s.push_str("];\n\n");

    writeln!(
        s,
        "/// Leaf number of each block of 2^SHIFT code points, for all of U+0000..=U+10FFFF."
    )
    .unwrap();
    writeln!(
        s,
        "pub(super) static INDEX: [{index_ty}; 0x110000 >> SHIFT] = INDEX_VALUES;"
    )
    .unwrap();
    writeln!(
        s,
        "/// INDEX's values as a const, so that they can be checked at compile time."
    )
    .unwrap();
    writeln!(
        s,
        "#[rustfmt::skip]\npub(super) const INDEX_VALUES: [{index_ty}; 0x110000 >> SHIFT] = ["
    )
    .unwrap();
    push_rows(
        &mut s,
        &t.index.iter().map(|x| x.to_string()).collect::<Vec<_>>(),
        "    ",
    );
    s.push_str("];\n\n");

    writeln!(s, "/// Deduplicated leaf blocks of entry bytes.").unwrap();
    writeln!(
        s,
        "#[rustfmt::skip]\npub(super) static LEAVES: [[u8; 1 << SHIFT]; NLEAVES] = ["
    )
    .unwrap();
    for (i, leaf) in t.leaves.iter().enumerate() {
        // First block using this leaf, for orientation.
        let first = t.index.iter().position(|&x| x as usize == i).unwrap() * block;
        writeln!(s, "    // {i}: U+{first:04X}").unwrap();
        s.push_str("    [\n");
        push_rows(
            &mut s,
            &leaf.iter().map(|x| x.to_string()).collect::<Vec<_>>(),
            "        ",
        );
        s.push_str("    ],\n");
    }
    s.push_str("];\n");
    s
}

/// Comma-separated items, wrapped below 120 columns.
fn push_rows(s: &mut String, items: &[String], indent: &str) {
    let mut line = String::from(indent);
    for it in items {
        if line.len() + it.len() + 2 > 118 {
            s.push_str(line.trim_end());
            s.push('\n');
            line = String::from(indent);
        }
        line.push_str(it);
        line.push_str(", ");
    }
    if !line.trim().is_empty() {
        s.push_str(line.trim_end());
        s.push('\n');
    }
}
