//! The one error type of the core. The Python layer maps each variant to the
//! builtin exception users already catch (see `src/py/error.rs`).

use std::fmt;

/// Everything the core can refuse, with the data a message needs.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A parameter outside its domain, e.g. `width=0`.
    #[error("{name} must be {expected}, got {found}")]
    InvalidParameter { name: &'static str, expected: &'static str, found: String },

    /// Ids of the other kind than an index is keyed by (ints or strings):
    /// a `TypeError` in Python.
    #[error("ids must be {expected}, got {found}")]
    IdKind { expected: &'static str, found: &'static str },

    /// A weight that is NaN or infinite (SPEC v1 allows only finite weights).
    #[error("weight of feature {index} must be finite, got {value}")]
    NonFiniteWeight { index: usize, value: f64 },

    /// Input bytes that are not UTF-8 where text is required.
    #[error("text {index} is not valid UTF-8 (byte {valid_up_to})")]
    InvalidUtf8 { index: usize, valid_up_to: usize },

    /// A thread pool could not be built (`threads` 0: the default pool).
    #[error("could not start worker threads ({threads} asked for; 0: one per core): {reason}")]
    ThreadPool { threads: usize, reason: String },

    /// A file that could not be opened, read, written or replaced.
    #[error("could not {action} {path}: {source}")]
    Io { path: String, action: &'static str, source: std::io::Error },

    /// A file that is not an index file this version can use: not one at
    /// all (`kind` [`FileProblem::Format`]), damaged ([`FileProblem::Checksum`]),
    /// or written for another version ([`FileProblem::Version`]); `expected`
    /// and `found` say what differs where a single value does.
    #[error("{path} is not a usable rsimhash index file: {problem}")]
    BadFile { path: String, problem: String, kind: FileProblem, expected: Option<String>, found: Option<String> },

    /// An index file that was rewritten or cut short in place while an
    /// index loaded from it was using it (mapped): its answers can no longer
    /// be trusted. rsimhash's own saves replace files atomically; another
    /// program writing into the file is what this reports.
    #[error("index file changed or damaged while in use: {path}: {problem}")]
    Changed { path: String, problem: String },

    /// Input data a batch job cannot use: a file that is not a 1-D `uint64`
    /// `.npy` array, ids of another length or given twice, a work directory
    /// holding another job's state.
    #[error("{what}: {problem}")]
    BadInput { what: String, problem: String },

    /// An answer or a buffer larger than the memory there is, found before
    /// it is made (`available` 0 when an allocation was refused).
    #[error("{what} need {:.2} GB of memory{}; {advice}", *bytes as f64 / 1e9, available_text(*available))]
    TooLarge { what: String, bytes: u64, available: u64, advice: String },
    /// A large buffer could not be had: the operation stopped instead of
    /// the process aborting (see `src/mem.rs`).
    #[error("out of memory: {what} needs {bytes} more bytes than can be had (free memory, raise the limit, or work in smaller parts)")]
    OutOfMemory { bytes: u64, what: &'static str },

    /// The caller asked a long job to stop (Ctrl-C in Python).
    #[error("interrupted")]
    Interrupted,

    /// A panic on a thread of the core's own, handed to the caller: a bug
    /// in rsimhash, never an answer (a `RuntimeError` in Python).
    #[error("internal error in rsimhash (please report it): {what}")]
    Internal { what: String },
}

/// What is wrong with a file that is not a usable index file (Python raises
/// `IndexFormatError`, `IndexVersionError` or `IndexChecksumError`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileProblem {
    /// Not an index file, cut short, or with fields no writer makes.
    Format,
    /// Written by a newer format version, or for another SPEC version.
    Version,
    /// Bytes that fail their checksum: damaged since they were written.
    Checksum,
}

fn available_text(available: u64) -> String {
    if available == 0 {
        " and the allocation was refused".to_string()
    } else {
        format!(" and {:.2} GB are available", available as f64 / 1e9)
    }
}

/// `Result` with the core [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    pub(crate) fn bad_input(what: impl fmt::Display, problem: impl fmt::Display) -> Self {
        Error::BadInput { what: what.to_string(), problem: problem.to_string() }
    }

    pub(crate) fn io<'a>(action: &'static str, path: &'a std::path::Path) -> impl FnOnce(std::io::Error) -> Error + 'a {
        move |source| Error::Io { path: path.display().to_string(), action, source }
    }

    /// What a caught panic's payload says: a large buffer refused
    /// (`crate::mem::OutOfMemory`) is out of memory, anything else a bug.
    pub(crate) fn from_panic(payload: Box<dyn std::any::Any + Send>) -> Self {
        if let Some(oom) = payload.downcast_ref::<crate::mem::OutOfMemory>() {
            return oom.error();
        }
        let what = payload.downcast_ref::<&str>().map(|s| s.to_string()).or_else(|| payload.downcast_ref::<String>().cloned());
        Error::Internal { what: what.unwrap_or_else(|| "unknown panic".into()) }
    }

    pub(crate) fn invalid(name: &'static str, expected: &'static str, found: impl fmt::Display) -> Self {
        Error::InvalidParameter { name, expected, found: found.to_string() }
    }
}
