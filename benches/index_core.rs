//! The Index core without Python, for profiling (`perf record`) and quick
//! comparisons of changes: build, find_all, single queries, a batch query and
//! streaming add_unique on random fingerprints.
//!
//! ```sh
//! cargo bench --bench index_core                    # 10M items, everything
//! cargo bench --bench index_core -- 1000000 unique  # one step at 1M
//! RAYON_NUM_THREADS=1 cargo bench --bench index_core -- 4000000 unique
//! ```
//!
//! Steps: `build` (add + find_all), `query`, `batch`, `unique`; default all.
//! `compare` times queries and find_all on raw and packed tables side by side.
//! `QUERIES=n` sets how many single queries `query` times (200,000);
//! `REPEAT=n` runs find_all n times and reports the median.
//! Figures against the issue's targets come from `benches/bench_index.py`,
//! which measures through Python as users call it; this harness is for
//! finding where the time goes.

use std::time::Instant;

use rsimhash::{Index, Layout};

/// `LAYOUT=raw` or `LAYOUT=<block bytes>`; default: the index's default.
fn layout() -> Layout {
    match std::env::var("LAYOUT").as_deref() {
        Ok("raw") => Layout::Raw,
        Ok(b) => Layout::Packed(b.parse().expect("LAYOUT=raw or a block size")),
        Err(_) => Layout::DEFAULT,
    }
}

/// xorshift64: fast, seeded, good enough for uniform test fingerprints.
fn random(n: usize, seed: u64) -> Vec<u64> {
    let mut x = seed | 1;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        })
        .collect()
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).filter(|a| !a.starts_with('-')).collect();
    let n: usize = args.first().and_then(|a| a.parse().ok()).unwrap_or(10_000_000);
    let step = args.get(1).map(String::as_str).unwrap_or("all");
    let all = step == "all";
    println!("n = {n}, threads = {}", rayon::current_num_threads());

    if all || step == "build" || step == "query" || step == "batch" {
        let fps = random(n, 0x9e37_79b9_7f4a_7c15);
        let mut index = Index::new(3, None, None).expect("k = 3");
        index.set_layout(layout()).expect("a valid layout");
        let t = Instant::now();
        index.add(&fps, None).expect("add");
        let build = t.elapsed().as_secs_f64();
        // `REPEAT=n` runs find_all n times (for `perf record`); the median counts.
        let repeat = std::env::var("REPEAT").ok().and_then(|r| r.parse().ok()).unwrap_or(1usize).max(1);
        let mut times = Vec::new();
        let mut pairs = 0;
        for _ in 0..repeat {
            let t = Instant::now();
            pairs = index.find_all(None, rsimhash::batch::Copies::All).expect("find_all").len();
            times.push(t.elapsed().as_secs_f64());
        }
        if repeat > 1 {
            println!("find_all times in order: {}", times.iter().map(|t| format!("{t:.3}")).collect::<Vec<_>>().join(" "));
        }
        times.sort_by(f64::total_cmp);
        let find_all = times[times.len() / 2];
        println!("build {build:.3} s, find_all {find_all:.3} s (fastest {:.3}; {pairs} pairs), {}, {:?}", times[0], index.design(), index.layout());
        let tables = index.design().tables().len();
        println!("table bytes per item per table {:.3}", index.table_bytes() as f64 / (tables * n) as f64);

        if all || step == "query" {
            // Half stored fingerprints with bits flipped, half random.
            let count = std::env::var("QUERIES").ok().and_then(|q| q.parse().ok()).unwrap_or(200_000);
            let queries: Vec<u64> = fps.iter().cycle().take(count).enumerate().map(|(i, &f)| if i % 2 == 0 { f ^ 5 } else { f.rotate_left(7) }).collect();
            let mut latency: Vec<u64> = queries
                .iter()
                .map(|&q| {
                    let t = Instant::now();
                    std::hint::black_box(index.query(q, None).expect("query"));
                    t.elapsed().as_nanos() as u64
                })
                .collect();
            latency.sort_unstable();
            println!("query median {} ns, p99 {} ns", latency[latency.len() / 2], latency[latency.len() * 99 / 100]);
        }
        if all || step == "batch" {
            let queries = random(n.min(1_000_000), 42);
            let t = Instant::now();
            let matches = index.query_batch(&queries, None).expect("query_batch");
            let secs = t.elapsed().as_secs_f64();
            println!("query_batch {:.2} M/s ({} matches)", queries.len() as f64 / secs / 1e6, matches.ids.len());
        }
    }

    if step == "compare" {
        // Raw and packed tables over the same items, queried in alternating
        // rounds so that noise from other processes hits both alike.
        let fps = random(n, 0x9e37_79b9_7f4a_7c15);
        let build = |layout: Layout| {
            let mut index = Index::new(3, None, None).expect("k = 3");
            index.set_layout(layout).expect("a valid layout");
            index.add(&fps, None).expect("add");
            index
        };
        let packed_layout = match layout() {
            Layout::Raw => Layout::DEFAULT,
            l => l,
        };
        let indexes = [build(Layout::Raw), build(packed_layout)];
        let queries: Vec<u64> = fps.iter().take(20_000).enumerate().map(|(i, &f)| if i % 2 == 0 { f ^ 5 } else { f.rotate_left(7) }).collect();
        let mut latency = [Vec::new(), Vec::new()];
        let mut find_all = [Vec::new(), Vec::new()];
        for _ in 0..7 {
            for (which, index) in indexes.iter().enumerate() {
                for &q in &queries {
                    let t = Instant::now();
                    std::hint::black_box(index.query(q, None).expect("query"));
                    latency[which].push(t.elapsed().as_nanos() as f64);
                }
                let t = Instant::now();
                std::hint::black_box(index.find_all(None, rsimhash::batch::Copies::All).expect("find_all"));
                find_all[which].push(t.elapsed().as_secs_f64());
            }
        }
        let median = |v: &mut Vec<f64>| {
            v.sort_by(f64::total_cmp);
            v[v.len() / 2]
        };
        let [lr, lp] = latency.map(|mut v| median(&mut v));
        let [fr, fp] = find_all.map(|mut v| median(&mut v));
        println!("{}, raw vs {:?}", indexes[0].design(), packed_layout);
        println!("query median {lr:.0} / {lp:.0} ns = {:.2} x", lp / lr);
        println!("find_all median {fr:.3} / {fp:.3} s = {:.2} x", fp / fr);
    }

    if all || step == "unique" {
        // 90 % random, 10 % near-duplicates of earlier items.
        let mut fps = random(n, 0x2545_f491_4f6c_dd1d);
        for i in (10..n).step_by(10) {
            fps[i] = fps[i / 2] ^ (1 << (i % 64));
        }
        let mut index = Index::new(3, None, None).expect("k = 3");
        index.set_layout(layout()).expect("a valid layout");
        let t = Instant::now();
        let mut new = 0;
        for chunk in fps.chunks(100_000) {
            let (is_new, _) = index.add_unique(chunk, None, None).expect("add_unique");
            new += is_new.iter().filter(|&&v| v).count();
        }
        let secs = t.elapsed().as_secs_f64();
        println!("add_unique {:.2} M/s ({new} new of {n}), {}", n as f64 / secs / 1e6, index.design());
    }
}
