//! The golden vectors of SPEC v1 (`tests/data/vectors_v1.json`, made by the
//! pure-Python reference in `tests/reference_v1.py`), checked against the Rust
//! core without Python. These values are stored in users' files: they never change.

use rsimhash::{compute_weighted, fingerprint, fnv1a64, Mode, Shingling};
use serde_json::Value;

fn hex_u64(v: &Value) -> u64 {
    let s = v.as_str().expect("hex string");
    u64::from_str_radix(s.trim_start_matches("0x"), 16).expect("hex u64")
}

fn hex_bytes(s: &str) -> Vec<u8> {
    (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap()).collect()
}

fn vectors() -> Vec<Value> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/vectors_v1.json");
    let data = std::fs::read_to_string(path).expect("tests/data/vectors_v1.json");
    let json: Value = serde_json::from_str(&data).expect("valid JSON");
    match json {
        Value::Array(items) => items,
        Value::Object(map) => {
            ["fingerprints", "fnv1a64", "weighted"].iter().flat_map(|key| map[*key].as_array().cloned().unwrap_or_else(|| panic!("a {key:?} array"))).collect()
        }
        _ => panic!("unexpected vectors file shape"),
    }
}

#[test]
fn golden_vectors() {
    let (mut texts, mut fnvs, mut weighted) = (0, 0, 0);
    for v in vectors() {
        if let Some(text) = v.get("text") {
            let mode: Mode = v["mode"].as_str().unwrap().parse().unwrap();
            let width = v["width"].as_u64().map(|w| w as usize);
            let s = Shingling::new(mode, width).unwrap();
            let got = fingerprint(text.as_str().unwrap(), s);
            assert_eq!(got, hex_u64(&v["fingerprint"]), "{mode} width {width:?} text {text}");
            texts += 1;
        } else if let Some(bytes) = v.get("bytes_hex") {
            assert_eq!(fnv1a64(&hex_bytes(bytes.as_str().unwrap())), hex_u64(&v["fnv1a64"]));
            fnvs += 1;
        } else if let Some(features) = v.get("features") {
            let pairs = features.as_array().unwrap().iter().map(|f| {
                let (kind, value, weight) = (f[0].as_str().unwrap(), &f[1], f[2].as_f64().unwrap());
                let hash = match kind {
                    "str" => fnv1a64(value.as_str().unwrap().as_bytes()),
                    "bytes_hex" => fnv1a64(&hex_bytes(value.as_str().unwrap())),
                    "int" => value.as_u64().unwrap_or_else(|| hex_u64(value)),
                    other => panic!("unknown feature kind {other}"),
                };
                (hash, weight)
            });
            assert_eq!(compute_weighted(pairs).unwrap(), hex_u64(&v["fingerprint"]), "{v}");
            weighted += 1;
        }
    }
    assert!(texts >= 100 && fnvs >= 3 && weighted >= 1, "too few vectors: {texts} {fnvs} {weighted}");
}
