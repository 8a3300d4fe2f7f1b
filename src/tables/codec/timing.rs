//! Timings of the encoder's steps, run by hand (ignored by default).

use super::*;

/// `cargo test --release --lib codec::timing -- --ignored --nocapture`:
/// each step of encoding `KEYS` (4 million) random sorted keys.
#[test]
#[ignore]
fn encode_steps() {
    let n: usize = std::env::var("KEYS").ok().and_then(|b| b.parse().ok()).unwrap_or(4_000_000);
    let mut next = crate::testing::xorshift(1);
    let mut keys: Vec<u64> = (0..n).map(|_| next()).collect();
    keys.sort_unstable();
    keys.dedup();
    let best = |f: &mut dyn FnMut()| {
        (0..7)
            .map(|_| {
                let s = std::time::Instant::now();
                f();
                s.elapsed().as_secs_f64()
            })
            .fold(f64::MAX, f64::min)
            / keys.len() as f64
            * 1e9
    };
    let counts = symbol_counts(&keys);
    let code = Code::from_counts(&counts);
    println!(
        "counts {:.2} ns/key",
        best(&mut || {
            std::hint::black_box(symbol_counts(&keys));
        })
    );
    println!(
        "encode {:.2} ns/key",
        best(&mut || {
            std::hint::black_box(encode(&keys, &code, 1024));
        })
    );
}
