//! Saving a container atomically: readers see the old file or the new one,
//! never a part of either, even across a crash or power loss.

use std::ffi::OsString;
use std::fs::{self, File};
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use super::{
    checksums, io_error, tag_name, valid_tag, Tag, ALIGN, AT_COUNT, AT_FILE_LEN, AT_HEADER_CRC, AT_SPEC, AT_TABLE_CRC, AT_VERSION, ENTRY_LEN,
    FIRST_FORMAT_VERSION, HEADER_LEN, MAGIC,
};
use crate::{Error, Result};

/// Writes go through a buffer this large; section data larger than it goes
/// straight to the file in one `write_all`.
const WRITE_BUFFER: usize = 1 << 20;

/// Saves `sections` as a container at `path`, replacing any file there.
///
/// The data goes to a new temporary file in the same directory (named
/// `.{file name}.{pid}.{counter}.tmp`), which is flushed to disk and then
/// renamed over `path`; then the directory itself is flushed, so that the
/// rename survives a power loss. Checksums are computed first, on rayon
/// threads. A process killed midway can leave the hidden temporary file
/// behind, never a damaged `path`; the next save to `path` removes such
/// leftovers of processes that are gone. A symlink at `path` is replaced,
/// not followed.
///
/// # Errors
/// [`Error::InvalidParameter`] for a tag that is not 1 to 8 printable ASCII
/// bytes followed by zeros. [`Error::Io`] when the temporary file cannot be
/// created, written or flushed, or not renamed over `path` (e.g. `path` is a
/// directory): the temporary file is then removed and `path` is untouched.
/// Only when flushing the directory fails, after the rename, is the new file
/// already in place (but possibly not yet durable).
pub fn write_atomic(path: &Path, spec_version: u32, sections: &[(Tag, &[u8])]) -> Result<()> {
    write_atomic_then(path, spec_version, FIRST_FORMAT_VERSION, sections, &|| Ok(()))
}

/// [`write_atomic`], with `before_commit` called once the new file is
/// written and flushed, before it replaces `path`: an error from it drops
/// the new file and leaves `path` as it was (an index checks there that
/// the mapped file it copied its tables from did not change meanwhile).
/// `format_version`: the oldest version whose readers know every section
/// written (see [`super::FORMAT_VERSION`]).
pub(crate) fn write_atomic_then(
    path: &Path,
    spec_version: u32,
    format_version: u32,
    sections: &[(Tag, &[u8])],
    before_commit: &dyn Fn() -> Result<()>,
) -> Result<()> {
    if let Some((tag, _)) = sections.iter().find(|(tag, _)| !valid_tag(tag)) {
        return Err(Error::invalid("section tag", "1 to 8 printable ASCII bytes, zero padded", tag_name(tag)));
    }
    let count = u32::try_from(sections.len()).map_err(|_| Error::invalid("sections", "at most 2**32-1", sections.len()))?;
    let parts: Vec<&[u8]> = sections.iter().map(|(_, data)| *data).collect();
    let crcs = checksums(&parts);
    let (head, offsets) = encode_head(spec_version, format_version, count, sections, &crcs);

    let mut tmp = TempFile::create(path, "save an index to")?;
    let write = |file: &File| -> io::Result<()> {
        let mut out = BufWriter::with_capacity(WRITE_BUFFER, file);
        out.write_all(&head)?;
        let mut pos = head.len() as u64;
        for (data, &offset) in parts.iter().zip(&offsets) {
            out.write_all(&[0; ALIGN as usize][..(offset - pos) as usize])?;
            out.write_all(data)?;
            pos = offset + data.len() as u64;
        }
        out.flush()
    };
    write(tmp.file()).map_err(io_error("write", &tmp.path))?;
    tmp.file().sync_all().map_err(io_error("flush to disk", &tmp.path))?;
    before_commit()?;
    tmp.rename_to(path)?;
    sync_dir(path)
}

/// The header and section table, and the offset of each section.
fn encode_head(spec_version: u32, format_version: u32, count: u32, sections: &[(Tag, &[u8])], crcs: &[u32]) -> (Vec<u8>, Vec<u64>) {
    let table_end = HEADER_LEN + sections.len() * ENTRY_LEN;
    let mut head = vec![0u8; table_end];
    let mut end = table_end as u64;
    let mut offsets = Vec::with_capacity(sections.len());
    for (i, ((tag, data), crc)) in sections.iter().zip(crcs).enumerate() {
        let offset = end.next_multiple_of(ALIGN);
        let entry = &mut head[HEADER_LEN + i * ENTRY_LEN..][..ENTRY_LEN];
        entry[..8].copy_from_slice(tag);
        entry[8..16].copy_from_slice(&offset.to_le_bytes());
        entry[16..24].copy_from_slice(&(data.len() as u64).to_le_bytes());
        entry[24..28].copy_from_slice(&crc.to_le_bytes());
        offsets.push(offset);
        end = offset + data.len() as u64;
    }
    let table_crc = crc32c::crc32c(&head[HEADER_LEN..]);
    let header = &mut head[..HEADER_LEN];
    header[..8].copy_from_slice(&MAGIC);
    header[AT_VERSION..][..4].copy_from_slice(&format_version.to_le_bytes());
    header[AT_SPEC..][..4].copy_from_slice(&spec_version.to_le_bytes());
    header[AT_COUNT..][..4].copy_from_slice(&count.to_le_bytes());
    header[AT_FILE_LEN..][..8].copy_from_slice(&end.to_le_bytes());
    header[AT_TABLE_CRC..][..4].copy_from_slice(&table_crc.to_le_bytes());
    let header_crc = crc32c::crc32c(&header[..AT_HEADER_CRC]);
    header[AT_HEADER_CRC..][..4].copy_from_slice(&header_crc.to_le_bytes());
    (head, offsets)
}

/// A temporary file that is removed when dropped, unless renamed.
pub(crate) struct TempFile {
    pub path: PathBuf,
    file: Option<File>,
}

impl TempFile {
    /// A new file beside `target`: same directory, so that the rename is
    /// atomic (no copy across filesystems). `action` names what the file is
    /// for in the error of a target that is a directory. Created with
    /// `O_EXCL | O_NOFOLLOW` (see [`crate::files`]); the temporary files of
    /// `target` that dead processes left (`.NAME.PID.N.tmp`) are removed.
    pub fn create(target: &Path, action: &'static str) -> Result<TempFile> {
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        let Some(name) = target.file_name() else {
            // ".", ".." or "/": a directory, as for a path naming one.
            let source = std::io::Error::new(std::io::ErrorKind::IsADirectory, "the path names a directory, not a file");
            return Err(Error::Io { path: target.display().to_string(), action, source });
        };
        // The file is renamed over the target when complete: a device or a
        // pipe there (/dev/null, a FIFO) would be replaced by a plain file.
        if let Ok(meta) = std::fs::metadata(target) {
            if !meta.is_file() {
                let (kind, what) = if meta.is_dir() {
                    (io::ErrorKind::IsADirectory, "the path names a directory, not a file")
                } else {
                    (io::ErrorKind::InvalidInput, "it is a device, a pipe or a socket, which a finished file would replace; name a file")
                };
                return Err(Error::Io { path: target.display().to_string(), action, source: io::Error::new(kind, what) });
            }
        }
        if let Some(name) = name.to_str() {
            let dir = match target.parent() {
                Some(dir) if !dir.as_os_str().is_empty() => dir,
                _ => Path::new("."),
            };
            let prefix = format!(".{name}.");
            crate::files::remove_stale(dir, None, |n| crate::files::pid_in(n, &prefix, '.', ".tmp"));
        }
        loop {
            let mut tmp_name = OsString::from(".");
            tmp_name.push(name);
            tmp_name.push(format!(".{}.{}.tmp", std::process::id(), COUNTER.fetch_add(1, Ordering::Relaxed)));
            let path = target.with_file_name(tmp_name);
            match crate::files::create_new(&path) {
                Ok(file) => return Ok(TempFile { path, file: Some(file) }),
                // Left by a crashed process that had our pid: take the next number.
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(io_error("create the temporary file", &path)(e)),
            }
        }
    }

    pub fn file(&self) -> &File {
        self.file.as_ref().expect("the file is open until renamed")
    }

    /// Closes the file and renames it to `target`.
    pub fn rename_to(&mut self, target: &Path) -> Result<()> {
        // Closed first: on Windows an open handle can block the rename.
        drop(self.file.take());
        fs::rename(&self.path, target).map_err(io_error("replace", target))?;
        self.path = PathBuf::new();
        Ok(())
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        drop(self.file.take());
        if !self.path.as_os_str().is_empty() {
            // Best effort: the original error is the one worth reporting.
            let _ = fs::remove_file(&self.path);
        }
    }
}

/// Flushes the directory holding `path` so that a rename in it is durable.
#[cfg(unix)]
pub(crate) fn sync_dir(path: &Path) -> Result<()> {
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    File::open(dir).and_then(|d| d.sync_all()).map_err(io_error("flush the directory", dir))
}

/// Windows offers no directory flush through std: a directory cannot be
/// opened as a `File` there.
#[cfg(not(unix))]
pub(crate) fn sync_dir(_path: &Path) -> Result<()> {
    Ok(())
}
