//! The batch engine without Python, for profiling (`perf record`) and quick
//! comparisons of changes: `batch::find_all` on random fingerprints with 1 %
//! planted near pairs, each table's time and the whole job's.
//!
//! ```sh
//! cargo bench --bench batch_core                       # 10M items, k = 3
//! cargo bench --bench batch_core -- 1000000            # 1M
//! TABLES=4 REPEAT=5 cargo bench --bench batch_core     # a fixed design, 5 runs
//! LIMIT=200000000 cargo bench --bench batch_core       # a memory limit in bytes
//! ```
//!
//! Figures against the issue's targets come from `benches/bench_batch.py`,
//! which measures through Python as users call it.

use std::sync::Arc;
use std::time::Instant;

use rsimhash::batch::{self, Control, Options, Source};

/// xorshift64 with 1 % of items a copy of an earlier one with 1 to 3 bits flipped.
fn planted(n: usize, seed: u64) -> Vec<u64> {
    let mut x = seed | 1;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let mut out: Vec<u64> = Vec::with_capacity(n);
    for i in 0..n {
        let r = next();
        if i > 0 && r % 100 == 0 {
            let orig = out[(next() % i as u64) as usize];
            let flips = 1 + next() % 3;
            out.push((0..flips).fold(orig, |v, _| v ^ (1 << (next() % 64))));
        } else {
            out.push(r);
        }
    }
    out
}

fn env<T: std::str::FromStr>(name: &str) -> Option<T> {
    std::env::var(name).ok().and_then(|v| v.parse().ok())
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).filter(|a| !a.starts_with('-')).collect();
    let n: usize = args.first().and_then(|a| a.parse().ok()).unwrap_or(10_000_000);
    let k: u32 = env("K").unwrap_or(3);
    let fps = planted(n, 0x9e37_79b9_7f4a_7c15);
    let mut opts = Options::new(k);
    if let Some(t) = env::<usize>("TABLES") {
        opts.design = Some(Arc::new(rsimhash::plan::with_tables(k, t).expect("a table count with a design")));
    }
    if let Some(limit) = env::<u64>("LIMIT") {
        opts.memory_limit = limit;
    }
    let design = opts.design.clone().map_or_else(|| batch::choose_design(k, n as u64, false).unwrap().to_string(), |d| d.to_string());
    println!("n = {n}, k = {k}, threads = {}, design: {design}", rayon::current_num_threads());
    let mut times = Vec::new();
    for _ in 0..env("REPEAT").unwrap_or(3usize) {
        let control = Control::default();
        let t = Instant::now();
        let pairs = batch::find_all(&Source::Memory(&fps), None, &opts, &control).expect("find_all");
        let s = t.elapsed().as_secs_f64();
        println!("find_all: {s:.3} s, {} pairs", pairs.len());
        times.push(s);
    }
    times.sort_by(f64::total_cmp);
    println!("median {:.3} s", times[times.len() / 2]);
}
