//! The `.npy` files batch jobs read and write: numpy's format, version 1.0
//! to 3.0, for 1-D `uint64` inputs and C-ordered outputs.
//!
//! A file is a 6-byte magic `\x93NUMPY`, a major and minor version byte, a
//! little-endian header length (`u16` in version 1, `u32` after), and a
//! header that is a Python dict literal such as
//! `{'descr': '<u8', 'fortran_order': False, 'shape': (10,), }` padded with
//! spaces to a multiple of 64 bytes with a final newline; the data follow.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use crate::{Error, Result};

const MAGIC: &[u8; 6] = b"\x93NUMPY";

/// Where a `.npy` file's items are.
#[derive(Debug, Clone)]
pub struct NpyHeader {
    /// Byte offset of the first item.
    pub data_offset: u64,
    /// Number of items.
    pub items: u64,
}

/// Reads and checks the header of a 1-D `<u8` (`uint64`) array file.
///
/// # Errors
/// [`Error::Io`] when the file cannot be read; [`Error::BadInput`] naming
/// the path when it is not such a file (another dtype, more dimensions,
/// Fortran order, a truncated file).
pub fn read_header(path: &Path, file: &File) -> Result<NpyHeader> {
    let bad = |problem: String| Error::bad_input(path.display(), problem);
    let len = file.metadata().map_err(Error::io("read", path))?.len();
    let mut head = [0u8; 12];
    let got = read_at_most(file, &mut head, 0).map_err(Error::io("read", path))?;
    if got < 10 || &head[..6] != MAGIC {
        return Err(bad("is not a .npy file (it does not start with numpy's magic \\x93NUMPY)".into()));
    }
    let (start, header_len) = match head[6] {
        1 => (10u64, u64::from(u16::from_le_bytes([head[8], head[9]]))),
        2 | 3 if got == 12 => (12u64, u64::from(u32::from_le_bytes([head[8], head[9], head[10], head[11]]))),
        v => return Err(bad(format!("is a .npy file of format version {v}, which this version cannot read"))),
    };
    if start + header_len > len || header_len > 1 << 20 {
        return Err(bad("is a truncated .npy file (its header runs past the end)".into()));
    }
    let mut text = vec![0u8; header_len as usize];
    read_exact_at(file, &mut text, start).map_err(Error::io("read", path))?;
    let text = String::from_utf8_lossy(&text);
    let descr = dict_value(&text, "descr").and_then(quoted).ok_or_else(|| bad("has a .npy header without a 'descr' string".into()))?;
    if descr != "<u8" {
        let hint = match descr {
            "<i8" => "; if it holds fingerprints as signed 64-bit values, save arr.view(np.uint64) instead",
            ">u8" => "; save it little-endian: arr.astype('<u8')",
            _ => "",
        };
        return Err(bad(format!("holds dtype {descr}, not uint64 (<u8){hint}")));
    }
    if dict_value(&text, "fortran_order").is_some_and(|v| v.starts_with("True")) {
        return Err(bad("is a Fortran-ordered .npy array; save a 1-D array".into()));
    }
    let shape = dict_value(&text, "shape").ok_or_else(|| bad("has a .npy header without 'shape'".into()))?;
    let dims: Vec<&str> = shape.trim_start_matches('(').split(')').next().unwrap_or("").split(',').map(str::trim).filter(|s| !s.is_empty()).collect();
    if dims.len() != 1 {
        return Err(bad(format!("holds an array of shape {}, not a one-dimensional one", shape.split(')').next().unwrap_or("").to_string() + ")")));
    }
    let items: u64 = dims[0].trim_end_matches('L').parse().map_err(|_| bad(format!("has a .npy shape {shape:?} that is not a number")))?;
    let data_offset = start + header_len;
    let needed = items.checked_mul(8).and_then(|b| b.checked_add(data_offset));
    if needed.is_none_or(|n| n > len) {
        return Err(bad(format!("is truncated: its header announces {items} items, the file holds {}", (len - data_offset) / 8)));
    }
    Ok(NpyHeader { data_offset, items })
}

/// The text after `'key':` in a header dict, up to the end of the dict.
fn dict_value<'a>(text: &'a str, key: &str) -> Option<&'a str> {
    let at = text.find(&format!("'{key}'")).or_else(|| text.find(&format!("\"{key}\"")))?;
    let rest = &text[at + key.len() + 2..];
    let colon = rest.find(':')?;
    Some(rest[colon + 1..].trim_start())
}

/// The string a Python literal starts with: `'<u8', ...` gives `<u8`.
fn quoted(value: &str) -> Option<&str> {
    let q = value.chars().next().filter(|&c| c == '\'' || c == '"')?;
    let rest = &value[1..];
    Some(&rest[..rest.find(q)?])
}

/// Fills `buf` from `offset`: a short file is an error.
pub fn read_exact_at(file: &File, buf: &mut [u8], offset: u64) -> std::io::Result<()> {
    #[cfg(unix)]
    {
        std::os::unix::fs::FileExt::read_exact_at(file, buf, offset)
    }
    #[cfg(windows)]
    {
        let mut done = 0;
        while done < buf.len() {
            match std::os::windows::fs::FileExt::seek_read(file, &mut buf[done..], offset + done as u64)? {
                0 => return Err(std::io::ErrorKind::UnexpectedEof.into()),
                n => done += n,
            }
        }
        Ok(())
    }
}

/// Reads up to `buf.len()` bytes at `offset`; returns how many.
fn read_at_most(file: &File, buf: &mut [u8], offset: u64) -> std::io::Result<usize> {
    let mut done = 0;
    while done < buf.len() {
        #[cfg(unix)]
        let n = std::os::unix::fs::FileExt::read_at(file, &mut buf[done..], offset + done as u64)?;
        #[cfg(windows)]
        let n = std::os::windows::fs::FileExt::seek_read(file, &mut buf[done..], offset + done as u64)?;
        if n == 0 {
            break;
        }
        done += n;
    }
    Ok(done)
}

/// The header of a C-ordered array of `shape` with numpy dtype `descr`,
/// padded so that the data start at a multiple of 64 bytes.
pub fn header(descr: &str, shape: &[u64]) -> Vec<u8> {
    let dims = match shape {
        [n] => format!("({n},)"),
        dims => format!("({})", dims.iter().map(u64::to_string).collect::<Vec<_>>().join(", ")),
    };
    let dict = format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': {dims}, }}");
    let mut out = MAGIC.to_vec();
    out.extend_from_slice(&[1, 0]);
    let unpadded = out.len() + 2 + dict.len() + 1;
    let total = unpadded.next_multiple_of(64);
    let header_len = (total - out.len() - 2) as u16;
    out.extend_from_slice(&header_len.to_le_bytes());
    out.extend_from_slice(dict.as_bytes());
    out.resize(total - 1, b' ');
    out.push(b'\n');
    out
}

/// A `.npy` file written in order, to a temporary name beside its target
/// and renamed into place by [`NpyWriter::finish`] once every item is in;
/// dropped before, it removes the temporary file.
pub struct NpyWriter {
    out: BufWriter<File>,
    tmp: crate::container::TempFile,
    target: PathBuf,
    expected: u64,
    written: u64,
    item_bytes: u64,
}

impl NpyWriter {
    /// A file for an array of `shape` and `descr` (`<u8` or `|b1`) whose
    /// items, `item_bytes` each, will be written in C order.
    pub fn create(target: &Path, descr: &str, shape: &[u64], item_bytes: u64) -> Result<NpyWriter> {
        let tmp = crate::container::TempFile::create(target, "write")?;
        let file = tmp.file().try_clone().map_err(Error::io("write", &tmp.path))?;
        let mut out = BufWriter::with_capacity(1 << 20, file);
        out.write_all(&header(descr, shape)).map_err(Error::io("write", &tmp.path))?;
        let expected = shape.iter().product::<u64>() * item_bytes;
        Ok(NpyWriter { out, tmp, target: target.to_path_buf(), expected, written: 0, item_bytes })
    }

    pub fn write(&mut self, bytes: &[u8]) -> Result<()> {
        self.written += bytes.len() as u64;
        self.out.write_all(bytes).map_err(Error::io("write", &self.tmp.path))
    }

    pub fn write_u64s(&mut self, values: &[u64]) -> Result<()> {
        self.write(bytemuck::cast_slice(values))
    }

    /// Flushes the file to disk and renames it into place.
    pub fn finish(mut self) -> Result<()> {
        assert_eq!(self.written, self.expected, "npy writer: {} bytes of {} ({}-byte items)", self.written, self.expected, self.item_bytes);
        self.out.flush().map_err(Error::io("write", &self.tmp.path))?;
        self.tmp.file().sync_all().map_err(Error::io("flush to disk", &self.tmp.path))?;
        self.tmp.rename_to(&self.target)?;
        crate::container::sync_dir(&self.target)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_round_trip() {
        let dir = tempfile::tempdir().unwrap();
        for n in [0u64, 1, 1000, 1 << 33] {
            let path = dir.path().join(format!("a{n}.npy"));
            let mut bytes = header("<u8", &[n]);
            let offset = bytes.len() as u64;
            assert_eq!(offset % 64, 0);
            bytes.resize(bytes.len() + 8 * n.min(1000) as usize, 7);
            std::fs::write(&path, &bytes).unwrap();
            let f = File::open(&path).unwrap();
            match read_header(&path, &f) {
                Ok(h) => assert_eq!((h.items, h.data_offset), (n, offset)),
                Err(e) => assert!(n > 1000 && e.to_string().contains("truncated"), "{e}"),
            }
        }
    }

    #[test]
    fn refuses_other_arrays() {
        let dir = tempfile::tempdir().unwrap();
        let cases: [(&str, Vec<u8>); 5] = [
            ("not numpy", b"hello world, not numpy".to_vec()),
            ("int64", header("<i8", &[3])),
            ("2-D", header("<u8", &[3, 2])),
            ("float", header("<f8", &[3])),
            ("empty", Vec::new()),
        ];
        for (name, mut bytes) in cases {
            bytes.resize(bytes.len() + 48, 0);
            let path = dir.path().join(name);
            std::fs::write(&path, &bytes).unwrap();
            let err = read_header(&path, &File::open(&path).unwrap()).unwrap_err().to_string();
            assert!(err.contains(&path.display().to_string()), "{name}: {err}");
        }
    }
}
