//! Loading a container and checking every byte of it before use.

use std::fs::{self, File};
use std::io::Read;
use std::ops::Range;
use std::path::Path;
use std::sync::Arc;

use memmap2::Mmap;

use super::bytes::{Buffer, Storage};
use super::guard::Watch;
use super::Problem;
use super::{
    bad_file, checksums, io_error, tag_name, u32_at, u64_at, valid_tag, Container, Tag, ALIGN, AT_COUNT, AT_FILE_LEN, AT_FLAGS, AT_HEADER_CRC, AT_SPEC,
    AT_TABLE_CRC, AT_VERSION, ENTRY_LEN, FORMAT_VERSION, HEADER_LEN, MAGIC, RESERVED,
};
use crate::FileProblem;
use crate::{Error, Result};

impl Container {
    /// Opens and verifies the index file at `path`: magic, format version,
    /// SPEC version, header fields, length, section table, the placement and
    /// padding of every section, and the checksum of every section (read on
    /// rayon threads) — all before it returns.
    ///
    /// `mmap = true` maps the file read-only: loading is nearly free and the
    /// OS shares the pages between processes. The mapping stays valid when
    /// [`write_atomic`](super::write_atomic) replaces the file (the old file lives on until its
    /// last view is dropped), but another program that truncates or rewrites
    /// the file in place breaks it: reading a truncated mapping kills the
    /// process with SIGBUS. `mmap = false` reads the whole file into memory.
    ///
    /// # Errors
    /// [`Error::Io`](crate::Error::Io) when the file cannot be opened or read
    /// (missing, no permission, ...); [`Error::BadFile`](crate::Error::BadFile)
    /// naming the problem when it is not an rsimhash index file, is damaged,
    /// was written by a newer rsimhash (format version above
    /// [`FORMAT_VERSION`]), or holds fingerprints of a SPEC version other
    /// than `expect_spec`.
    pub fn open(path: &Path, mmap: bool, expect_spec: u32) -> Result<Container> {
        let buf = Arc::new(load(path, mmap)?);
        let (sections, crcs) = check(buf.bytes(), expect_spec).map_err(|problem| problem.at(path))?;
        if buf.is_damaged() {
            // Cut short while it was being checked: the zeros failed, or passed a check by chance.
            return Err(bad_file(path, "it changed while it was being loaded (another program is writing to it)"));
        }
        Ok(Container { buf, sections, crcs, expect_spec })
    }
}

fn load(path: &Path, mmap: bool) -> Result<Buffer> {
    // The path's metadata first: opening a directory succeeds on unix and
    // fails with "access denied" on Windows, neither of which says it.
    let meta = fs::metadata(path).map_err(io_error("open", path))?;
    if meta.is_dir() {
        // An OSError, as Python's own open() raises (IsADirectoryError).
        let source = std::io::Error::new(std::io::ErrorKind::IsADirectory, "it is a directory");
        return Err(Error::Io { path: path.display().to_string(), action: "load an index from", source });
    }
    if !meta.is_file() {
        return Err(bad_file(path, "it is not a regular file"));
    }
    let file = File::open(path).map_err(io_error("open", path))?;
    let len = file.metadata().map_err(io_error("read the size of", path))?.len();
    if len == 0 {
        return Err(bad_file(path, "empty file"));
    }
    let len = usize::try_from(len).map_err(|_| bad_file(path, format!("{len} bytes do not fit in memory here")))?;
    let storage = if mmap {
        // SAFETY: the mapping is read-only and private to this Buffer. The
        // hazard is the file changing under it: rsimhash never writes an
        // existing file in place (write_atomic renames a new one over it).
        // Another program doing so changes bytes under our views (every
        // decoder is bounds-checked and flags what no longer decodes) or
        // cuts the file short (the SIGBUS guard maps zeros there; see
        // `guard`), and the index then refuses to answer.
        let map = unsafe { Mmap::map(&file) }.map_err(io_error("map", path))?;
        // Guarded before the first byte is read: a file cut short even
        // while it is checked reads as zeros and fails its checksums.
        let watch = Watch::new(&map);
        let mut buf = Buffer::new(Storage::Mapped(map), path.to_owned());
        buf.watch = Some(watch);
        return Ok(buf);
    } else {
        let mut words: Vec<u64> = crate::mem::zeroed(len.div_ceil(8));
        let bytes = &mut bytemuck::cast_slice_mut(&mut words)[..len];
        (&file).read_exact(bytes).map_err(io_error("read", path))?;
        Storage::Words(words, len)
    };
    Ok(Buffer::new(storage, path.to_owned()))
}

/// Each section's tag and byte range, and the checksums of the file.
type Sections = (Vec<(Tag, Range<usize>)>, Vec<u32>);

/// The sections of `data` and their checksums, or what is wrong with it.
pub(super) fn check(data: &[u8], expect_spec: u32) -> std::result::Result<Sections, Problem> {
    let n = data.len();
    if n < MAGIC.len() && MAGIC.starts_with(data) || n < HEADER_LEN && data.starts_with(&MAGIC) {
        return Err(format!("truncated: the file has {n} bytes, fewer than the {HEADER_LEN}-byte header").into());
    }
    if !data.starts_with(&MAGIC) {
        let shown: Vec<String> = data.iter().take(8).map(|b| format!("{b:02x}")).collect();
        let more = if n > 8 { " ..." } else { "" };
        return Err(format!("not an rsimhash index file (it starts with {}{more})", shown.join(" ")).into());
    }
    let header = &data[..HEADER_LEN];
    let version = u32_at(header, AT_VERSION);
    if version > FORMAT_VERSION {
        let text = format!("written by a newer rsimhash (format version {version}; this version reads {FORMAT_VERSION}): upgrade rsimhash");
        return Err(Problem::new(FileProblem::Version, text, format!("format version at most {FORMAT_VERSION}"), format!("format version {version}")));
    }
    if version == 0 {
        return Err(String::from("format version 0 does not exist: the file is corrupt").into());
    }
    if crc32c::crc32c(&header[..AT_HEADER_CRC]) != u32_at(header, AT_HEADER_CRC) {
        let (want, got) = (u32_at(header, AT_HEADER_CRC), crc32c::crc32c(&header[..AT_HEADER_CRC]));
        return Err(Problem::new(
            FileProblem::Checksum,
            "the header fails its checksum: the file is corrupt".into(),
            format!("crc {want:#010x}"),
            format!("crc {got:#010x}"),
        ));
    }
    let spec = u32_at(header, AT_SPEC);
    if spec != expect_spec {
        let text = format!("its fingerprints follow SPEC v{spec}; this rsimhash computes v{expect_spec}");
        return Err(Problem::new(FileProblem::Version, text, format!("SPEC v{expect_spec}"), format!("SPEC v{spec}")));
    }
    // The header's checksum holds, so odd values below come from a writer,
    // not from damage: most likely a newer one.
    let flags = u32_at(header, AT_FLAGS);
    if flags != 0 {
        return Err(format!("unknown flags {flags:#x} (written by a newer rsimhash? upgrade rsimhash)").into());
    }
    if header[RESERVED].iter().any(|&b| b != 0) {
        return Err(format!("reserved header bytes {}..{} are not zero (written by a newer rsimhash? upgrade rsimhash)", RESERVED.start, RESERVED.end).into());
    }
    let file_len = u64_at(header, AT_FILE_LEN);
    if file_len > n as u64 {
        return Err(format!("truncated: the header says {file_len} bytes, the file has {n}").into());
    }
    if file_len < n as u64 {
        return Err(format!("{} trailing bytes after the {file_len} bytes the header records", n as u64 - file_len).into());
    }
    let count = u32_at(header, AT_COUNT) as u64;
    let table_end = HEADER_LEN as u64 + count * ENTRY_LEN as u64;
    if table_end > file_len {
        return Err(format!("its section table ({count} entries, bytes {HEADER_LEN}..{table_end}) runs past the end of the file ({n} bytes)").into());
    }
    // Every offset below is now at most n, so `as usize` is exact.
    let table = &data[HEADER_LEN..table_end as usize];
    if crc32c::crc32c(table) != u32_at(header, AT_TABLE_CRC) {
        let (want, got) = (u32_at(header, AT_TABLE_CRC), crc32c::crc32c(table));
        return Err(Problem::new(
            FileProblem::Checksum,
            "its section table fails its checksum: the file is corrupt".into(),
            format!("crc {want:#010x}"),
            format!("crc {got:#010x}"),
        ));
    }
    let mut sections = Vec::with_capacity(count as usize);
    let mut crcs = Vec::with_capacity(count as usize);
    let mut prev_end = table_end;
    for (i, entry) in table.chunks_exact(ENTRY_LEN).enumerate() {
        let tag: Tag = entry[..8].try_into().unwrap();
        let name = tag_name(&tag);
        if !valid_tag(&tag) {
            return Err(format!("section {i} has the tag {name}, not 1 to 8 printable ASCII bytes").into());
        }
        let (offset, len) = (u64_at(entry, 8), u64_at(entry, 16));
        if u32_at(entry, 28) != 0 {
            return Err(format!("the reserved field of section {name} is not zero").into());
        }
        if offset % ALIGN != 0 {
            return Err(format!("section {name} starts at byte {offset}, not a multiple of {ALIGN}").into());
        }
        if offset < prev_end {
            return Err(format!("section {name} starts at byte {offset}, before the end of what precedes it ({prev_end})").into());
        }
        let end = offset.checked_add(len).filter(|&end| end <= file_len);
        let Some(end) = end else {
            let end = offset as u128 + len as u128;
            return Err(format!("section {name} (bytes {offset}..{end}) runs past the end of the file ({n} bytes)").into());
        };
        let (start, end) = (offset as usize, end as usize);
        if data[prev_end as usize..start].iter().any(|&b| b != 0) {
            return Err(format!("the padding before section {name} (bytes {prev_end}..{start}) is not zero: the file is corrupt").into());
        }
        sections.push((tag, start..end));
        crcs.push(u32_at(entry, 24));
        prev_end = end as u64;
    }
    if prev_end != file_len {
        return Err(format!("bytes {prev_end}..{file_len} after the last section belong to no section").into());
    }
    let parts: Vec<&[u8]> = sections.iter().map(|(_, r)| &data[r.clone()]).collect();
    let found = checksums(&parts);
    for ((tag, range), (want, got)) in sections.iter().zip(crcs.iter().zip(found)) {
        if *want != got {
            let name = tag_name(tag);
            let text = format!("section {name} (bytes {}..{}) fails its checksum: the file is corrupt", range.start, range.end);
            return Err(Problem::new(FileProblem::Checksum, text, format!("crc {want:#010x}"), format!("crc {got:#010x}")));
        }
    }
    Ok((sections, crcs))
}
