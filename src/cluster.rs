//! How items are grouped into clusters.

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
