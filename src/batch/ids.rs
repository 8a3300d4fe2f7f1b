//! Ids given to a batch job: one per item, distinct. Checked before any
//! work, within the job's memory limit: ids in increasing order (the
//! common case) in one pass; others through an external sort whose runs go
//! to a temporary directory (inside the job's work directory when it has
//! one), removed at the end.

use rayon::prelude::*;

use super::budget::Budget;
use super::runs::ExternalSort;
use super::workdir::Workdir;
use super::Options;
use crate::{Error, Result};

/// Whether `ids` increase strictly.
pub(crate) fn increasing(ids: &[u64]) -> bool {
    ids.par_windows(2).all(|w| w[0] < w[1])
}

/// Checks that `ids` are distinct.
///
/// # Errors
/// [`Error::InvalidParameter`] naming an id given twice; [`Error::Io`] when
/// the sort's runs cannot be written.
pub fn check_distinct(ids: &[u64], opts: &Options) -> Result<()> {
    if increasing(ids) {
        return Ok(());
    }
    let budget = Budget::new(opts.memory_limit).pair_bytes;
    let dir = match &opts.workdir {
        Some(dir) if dir.is_dir() => Workdir::temporary(Some(dir))?,
        _ => Workdir::temporary(opts.temp_parent.as_deref())?,
    };
    let mut sorter = ExternalSort::<u64>::new(dir.path(), "ids", budget);
    for chunk in ids.chunks(1 << 20) {
        sorter.push(chunk)?;
    }
    let mut last: Option<u64> = None;
    let mut twice = None;
    sorter.finish(|batch| {
        for &id in batch {
            if last == Some(id) && twice.is_none() {
                twice = Some(id);
            }
            last = Some(id);
        }
        Ok(())
    })?;
    match twice {
        Some(id) => Err(Error::invalid("ids", "distinct", format!("id {id} given twice"))),
        None => Ok(()),
    }
}
