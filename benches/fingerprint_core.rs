//! The fingerprint kernel without Python, for profiling (`perf record`,
//! `valgrind --tool=callgrind`) and quick comparisons of changes.
//!
//! ```sh
//! python benches/corpus.py --dump /tmp/corpus.jsonl          # {"id", "text"} lines
//! cargo bench --bench fingerprint_core -- /tmp/corpus.jsonl  # every row, 5 rounds
//! ROUNDS=1 ROWS=words1 cargo bench --bench fingerprint_core -- /tmp/corpus.jsonl
//! ```
//!
//! Rows (`ROWS`, comma-separated; default all): `words1`, `chars1` (one
//! thread), `words`, `chars` (all threads), `fnv1`, `fnv` (FNV-1a over every
//! byte of every text: the floor the issue compares with). Each round runs
//! every row once, interleaved; the medians are printed, in MB/s (10^6
//! bytes of UTF-8 text), of wall time and, for the one-thread rows, of the
//! thread's CPU time (steadier than the wall on a shared machine). The figures of record come from
//! `benches/bench_fingerprint.py`, which measures through Python.

use std::time::Instant;

use rayon::prelude::*;
use rsimhash::{fnv1a64, Fingerprinter, Mode, Shingling};

fn load(path: &str) -> Vec<String> {
    let data = std::fs::read_to_string(path).expect("a JSON-lines file of {\"text\": ...} records");
    data.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).expect("JSON");
            v["text"].as_str().expect("a text field").to_owned()
        })
        .collect()
}

fn words1(texts: &[String], s: Shingling) -> u64 {
    let mut f = Fingerprinter::new(s);
    texts.iter().fold(0, |acc, t| acc ^ f.fingerprint(t))
}

fn all(texts: &[String], s: Shingling) -> u64 {
    rsimhash::fingerprints(texts, s).iter().fold(0, |a, b| a ^ b)
}

/// This thread's CPU seconds.
fn cpu_seconds() -> f64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: a valid clock id and a valid pointer.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9
}

fn main() {
    let path = std::env::args().skip(1).find(|a| !a.starts_with('-')).expect("a corpus path");
    let texts = load(&path);
    let bytes: usize = texts.iter().map(String::len).sum();
    let rounds: usize = std::env::var("ROUNDS").ok().and_then(|r| r.parse().ok()).unwrap_or(5);
    let rows = std::env::var("ROWS").unwrap_or_else(|_| "words1,chars1,words,chars,fnv1,fnv".into());
    let words = Shingling::new(Mode::Words, Some(3)).unwrap();
    let chars = Shingling::new(Mode::Chars, Some(4)).unwrap();
    let rows: Vec<&str> = rows.split(',').collect();
    println!("{} texts, {:.1} MB, {} threads", texts.len(), bytes as f64 / 1e6, rayon::current_num_threads());
    let mut times: Vec<Vec<f64>> = vec![Vec::new(); rows.len()];
    let mut cpu: Vec<Vec<f64>> = vec![Vec::new(); rows.len()];
    let mut check = 0u64;
    for _ in 0..rounds {
        for (i, row) in rows.iter().enumerate() {
            let t = Instant::now();
            let c = cpu_seconds();
            check ^= match *row {
                "words1" => words1(&texts, words),
                "chars1" => words1(&texts, chars),
                "words" => all(&texts, words),
                "chars" => all(&texts, chars),
                "fnv1" => texts.iter().fold(0, |a, t| a ^ fnv1a64(t.as_bytes())),
                "fnv" => texts.par_iter().map(|t| fnv1a64(t.as_bytes())).reduce(|| 0, |a, b| a ^ b),
                other => panic!("unknown row {other}"),
            };
            times[i].push(t.elapsed().as_secs_f64());
            cpu[i].push(cpu_seconds() - c);
        }
    }
    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    for ((row, t), c) in rows.iter().zip(&mut times).zip(&mut cpu) {
        let (wall, cpu) = (median(t), median(c));
        let per_cpu = if row.ends_with('1') { format!("{:8.1} MB/s of CPU time", bytes as f64 / cpu / 1e6) } else { String::new() };
        println!("{row:8} {:8.1} MB/s of wall time (median {wall:.3} s of {rounds}) {per_cpu}", bytes as f64 / wall / 1e6);
    }
    println!("check {check:016x}");
}
