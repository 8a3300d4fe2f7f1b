//! How items are grouped into clusters, and the answers made of pairs: the
//! keep mask of a dedup, leader clusters and the one union-find
//! ([`graph`]), shared by the batch jobs, the verified jobs and the
//! distributed helpers.
//!
//! This layer sits below all of them: it takes pairs of positions and
//! imports none of the jobs that make them.

pub(crate) mod graph;

pub use graph::Dedup;

use crate::{Error, Result};

/// How items are grouped into clusters ([`Index::cluster`](crate::Index::cluster),
/// [`crate::batch::clusters`]).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum ClusterMethod {
    /// Connected components of the within-`k` graph.
    Connected,
    /// In id order, each item joins the first representative within `k`
    /// (the one with the smallest id) or becomes one.
    Leader,
}

impl std::str::FromStr for ClusterMethod {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self> {
        match s {
            "connected" => Ok(ClusterMethod::Connected),
            "leader" => Ok(ClusterMethod::Leader),
            other => Err(Error::invalid("method", "\"connected\" or \"leader\"", format!("{other:?}"))),
        }
    }
}
