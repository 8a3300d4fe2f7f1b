//! rsimhash: near-duplicate detection with simhash fingerprints.
//!
//! The core is plain Rust and usable without Python; the PyO3 bindings live in
//! `src/py/` behind the `python` cargo feature.
//!
//! - [`fnv1a64`], [`compute`], [`compute_weighted`]: the hashing and bit vote of SPEC v1.
//! - [`Shingling`] and [`Fingerprinter`]: text fingerprints (modes `words` and `chars`).
//! - [`fingerprints`]: many texts at once on rayon threads.
//! - [`hamming`]: the distance between two fingerprints.
//! - [`container`]: the checksummed file that index files are stored in.
//! - [`records`]: JSON-lines inputs read, parsed and fingerprinted on threads.
//! - [`similar`]: verified near-duplicates, candidates confirmed by the
//!   exact similarity of shingle sets.
//!
//! Fingerprints are stored in users' files, so what version 1 computes never
//! changes: `tests/data/vectors_v1.json` pins it.
//!
//! The modules form layers, each importing only those below it:
//! 1. `error`, `mem`, `cpu`, `files`, [`parallel`] and [`job`] (what every
//!    job shares: its [`job::Control`], [`Copies`], pair packing), with
//!    [`MAX_ITEMS`] at the root;
//! 2. [`container`] (the checksummed file) and `cluster` (answers made of
//!    pairs: dedup sweeps, leader clusters, the one union-find);
//! 3. `tables` (the permuted tables: [`plan`], raw and packed tables, their
//!    codec, the radix sort, an index segment), with the one rule for the
//!    pairs a table reports;
//! 4. [`fingerprint`] (the SPEC v1 pipeline: `unicode`, `tokenize`, `fnv`,
//!    `shingle`, `vote`; it borrows the tables' radix sort);
//! 5. [`batch`] (jobs one table at a time) and [`distributed`] (the keys and
//!    group pairs of the Spark helpers);
//! 6. [`index`] (which calls the batch kernel for its whole-corpus answers)
//!    and [`records`] (JSON-lines inputs fingerprinted);
//! 7. [`similar`] (verified near-duplicates, over the index and the batch
//!    jobs), and the Python bindings in `py`.

pub mod batch;
mod cluster;
pub mod container;
pub mod cpu;
pub mod distributed;
pub mod error;
mod files;
pub mod fingerprint;
pub mod index;
pub mod job;
mod mem;
pub mod parallel;
pub mod records;
pub mod similar;
mod tables;
#[cfg(test)]
pub(crate) mod testing;

// SPEC v1's golden vectors through the public paths (`rsimhash::...`), as a
// user's crate calls them: compiled into the unit tests rather than as an
// integration test, which would build the whole crate a second time.
#[cfg(test)]
extern crate self as rsimhash;
#[cfg(test)]
#[path = "../tests/spec_vectors.rs"]
mod spec_vectors;

#[cfg(feature = "python")]
mod py;

pub use cluster::ClusterMethod;
pub use error::{Error, FileProblem, Result};
pub use job::Copies;

/// The most items an index or a batch job holds: positions and id slots
/// are `u32`, and one value is kept free. One limit for every layer.
pub const MAX_ITEMS: u64 = u32::MAX as u64 - 1;
pub use fingerprint::fnv::fnv1a64;
pub use fingerprint::vote::{compute, compute_weighted};
pub use fingerprint::{fingerprint, fingerprints, Fingerprinter, Mode, Shingling};
pub use fingerprint::{fnv, unicode};
pub use index::{BatchMatches, Index, Keys, Metadata};
pub use tables::plan;
pub use tables::table::Layout;

/// The version of the fingerprint algorithm this crate computes (`docs/spec.md`).
pub const SPEC_VERSION: u32 = 1;

/// Number of differing bits between two fingerprints.
#[inline]
pub fn hamming(a: u64, b: u64) -> u32 {
    (a ^ b).count_ones()
}

/// mimalloc keeps freed memory for reuse instead of handing large blocks
/// back to the OS at once: building a run frees and allocates tables of
/// tens of megabytes, and fresh pages must be cleared by the kernel.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;
