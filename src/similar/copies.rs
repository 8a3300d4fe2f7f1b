//! Copies among texts too many to hold at once: the same text given again
//! (equal bytes: the same candidate fingerprint and shingle set). The first
//! pass of a two-pass job keys each text by a 128-bit hash of its bytes and
//! its fingerprint; texts with equal keys are linked to the first of them,
//! which alone is paired and checked, and the second pass confirms each
//! link by comparing the two sets (a hash collision is an error, never a
//! wrong answer). So a page copied 10^5 times makes 10^5 links, not
//! 5 * 10^9 candidate pairs.

use std::io::Read;
use std::path::Path;

use crate::batch::npy::NpyWriter;
use crate::batch::runs::ExternalSort;
use crate::{Error, Result};

/// The 128-bit key of a text's bytes (XXH3).
pub fn content_key(text: &[u8]) -> [u64; 2] {
    let h = xxhash_rust::xxh3::xxh3_128(text);
    [(h >> 64) as u64, h as u64]
}

/// From `n` texts' keys (`keys`: a raw file of 16 bytes a text, as
/// [`content_key`] gives them, little-endian) and fingerprints (`fps`: a
/// raw file of 8 bytes a text): the links of texts to the first text with
/// the same key and fingerprint, `copy << 32 | first`, ascending, written
/// to `out` as a 1-D uint64 `.npy` array (through a temporary file renamed
/// into place). Sorted on disk under `dir` past `budget` bytes. Returns
/// the number of links.
///
/// # Errors
/// [`Error::Io`] when a file cannot be read or written, [`Error::BadInput`]
/// when the files are shorter than `n` texts.
pub fn copy_links(keys: &Path, fps: &Path, n: u64, dir: &Path, budget: usize, out: &Path) -> Result<u64> {
    let open = |p: &Path| std::fs::File::open(p).map(|f| std::io::BufReader::with_capacity(1 << 20, f)).map_err(Error::io("open", p));
    let (mut kr, mut fr) = (open(keys)?, open(fps)?);
    let mut by_key = ExternalSort::<[u64; 4]>::new(dir, ".rsimhash-copies", budget);
    let (mut kbuf, mut fbuf) = (vec![0u8; 16 << 14], vec![0u8; 8 << 14]);
    let mut at = 0u64;
    while at < n {
        let m = (n - at).min(1 << 14) as usize;
        kr.read_exact(&mut kbuf[..16 * m]).map_err(|e| read_failed(keys, n, e))?;
        fr.read_exact(&mut fbuf[..8 * m]).map_err(|e| read_failed(fps, n, e))?;
        let word = |b: &[u8], i: usize| u64::from_le_bytes(b[8 * i..8 * i + 8].try_into().expect("8 bytes"));
        let records: Vec<[u64; 4]> = (0..m).map(|i| [word(&kbuf, 2 * i), word(&kbuf, 2 * i + 1), word(&fbuf, i), at + i as u64]).collect();
        by_key.push(&records)?;
        at += m as u64;
    }
    let mut links = ExternalSort::<u64>::new(dir, ".rsimhash-links", budget);
    let mut group: Option<([u64; 3], u64)> = None;
    let mut pending: Vec<u64> = Vec::new();
    by_key.finish(|batch| {
        for r in batch {
            let key = [r[0], r[1], r[2]];
            match group {
                Some((k, first)) if k == key => pending.push(r[3] << 32 | first),
                _ => group = Some((key, r[3])),
            }
        }
        if pending.len() >= 1 << 16 {
            links.push(&pending)?;
            pending.clear();
        }
        Ok(())
    })?;
    links.push(&pending)?;
    let count = links.len();
    let mut writer = NpyWriter::create(out, "<u8", &[count], 8)?;
    links.finish(|batch| writer.write_u64s(batch))?;
    writer.finish()?;
    Ok(count)
}

fn read_failed(path: &Path, n: u64, e: std::io::Error) -> Error {
    match e.kind() {
        std::io::ErrorKind::UnexpectedEof => Error::bad_input(path.display(), format!("holds fewer than the {n} texts of the first pass")),
        _ => Error::io("read", path)(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn links_go_to_the_first_copy() {
        let dir = tempfile::tempdir().unwrap();
        let texts: Vec<&[u8]> = vec![b"a", b"b", b"a", b"c", b"b", b"a", b"a"];
        // Text 6 has another fingerprint: not a copy (the same bytes cannot, but the key must hold both).
        let fps: Vec<u64> = vec![1, 2, 1, 3, 2, 1, 9];
        let keys: Vec<u8> = texts.iter().flat_map(|t| content_key(t).into_iter().flat_map(u64::to_le_bytes)).collect();
        std::fs::write(dir.path().join("k"), keys).unwrap();
        std::fs::write(dir.path().join("f"), fps.iter().flat_map(|f| f.to_le_bytes()).collect::<Vec<u8>>()).unwrap();
        let out = dir.path().join("links.npy");
        let n = copy_links(&dir.path().join("k"), &dir.path().join("f"), 7, dir.path(), 1 << 10, &out).unwrap();
        assert_eq!(n, 3);
        let bytes = std::fs::read(&out).unwrap();
        let links: Vec<u64> = bytes[bytes.len() - 24..].chunks(8).map(|c| u64::from_le_bytes(c.try_into().unwrap())).collect();
        assert_eq!(links, vec![2 << 32, 4 << 32 | 1, 5 << 32]);
        assert!(copy_links(&dir.path().join("k"), &dir.path().join("f"), 8, dir.path(), 1 << 10, &out).is_err(), "short files");
    }
}
