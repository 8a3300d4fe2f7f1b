//! Memory an index operation is about to take, asked for before it starts
//! (see `crate::mem`): a build that cannot have its buffers fails with
//! `Error::OutOfMemory` before the index has changed, rather than midway.

use super::{Index, BUFFER_MAX};
use crate::Result;

/// Address space that building a run takes per item, at its peak: the
/// items and their sort buffer (32 bytes), fingerprints and ids (16), and
/// each table's keys and sort buffer while it is built, on every thread,
/// plus the packed tables and their headers. Measured at 8 million items:
/// 148 bytes of address space an item (`ulimit -v` counts that, not the
/// pages touched); rounded up.
const BUILD_BYTES_PER_ITEM: u64 = 96;

impl Index {
    /// Checks that adding `n` items can have the memory of the run they
    /// make (nothing when they only fill the buffer). A merge or a new
    /// design that rebuilds older runs as well may still run out midway:
    /// then the index refuses further use (see `src/py/index.rs`).
    ///
    /// # Errors
    /// [`crate::Error::OutOfMemory`].
    pub(super) fn room_for(&self, n: usize) -> Result<()> {
        let built = (n + self.buffer.len()) as u64;
        if built < BUFFER_MAX as u64 {
            return Ok(());
        }
        crate::mem::headroom(built.saturating_mul(BUILD_BYTES_PER_ITEM), "building the index's tables")
    }
}
