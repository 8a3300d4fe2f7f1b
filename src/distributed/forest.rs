//! Spanning forests of edge lists: what a task of a distributed components
//! job keeps of its edges (those that join two of its components, at most
//! its ids less one), and the components of edges that fit one task.
//!
//! Ids are signed 64-bit values (Spark's longs), numbered in their order,
//! so a component's root, its smallest number, is its smallest id.

use crate::cluster::graph::Components;
use crate::{Error, Result};

/// The distinct ids of the edges, ascending, and each end's number.
fn numbered(a: &[i64], b: &[i64]) -> Result<(Vec<i64>, Vec<[u32; 2]>)> {
    if a.len() != b.len() {
        return Err(Error::invalid("b", "one end for each of a's", format!("{} for {}", b.len(), a.len())));
    }
    let mut ids: Vec<i64> = a.iter().chain(b).copied().collect();
    ids.sort_unstable();
    ids.dedup();
    if ids.len() > u32::MAX as usize {
        return Err(Error::invalid("edges", "fewer than 2^32 distinct ids", ids.len()));
    }
    let number = |x: i64| ids.binary_search(&x).unwrap_or(0) as u32;
    let ends = a.iter().zip(b).map(|(&x, &y)| [number(x), number(y)]).collect();
    Ok((ids, ends))
}

/// Which edges, taken in order, join two components of the ones before:
/// a spanning forest of the edges, with their components.
///
/// # Errors
/// [`Error::InvalidParameter`] for ends of two lengths, or 2^32 ids.
pub fn forest(a: &[i64], b: &[i64]) -> Result<Vec<bool>> {
    let (ids, ends) = numbered(a, b)?;
    let mut components = Components::new(ids.len());
    Ok(ends.into_iter().map(|[x, y]| components.join(x, y)).collect())
}

/// Each id of the edges and the smallest id of its component.
///
/// # Errors
/// [`Error::InvalidParameter`] for ends of two lengths, or 2^32 ids.
pub fn labels(a: &[i64], b: &[i64]) -> Result<(Vec<i64>, Vec<i64>)> {
    let (ids, ends) = numbered(a, b)?;
    let mut components = Components::new(ids.len());
    for [x, y] in ends {
        components.join(x, y);
    }
    let roots = components.roots().into_iter().map(|r| ids[r as usize]).collect();
    Ok((ids, roots))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_forest_keeps_the_components() {
        let a = [5, -3, 7, 5, i64::MIN, 9, 9];
        let b = [-3, 7, 5, 5, i64::MAX, 9, 10];
        assert_eq!(forest(&a, &b).unwrap(), [true, true, false, false, true, false, true]);
        let (ids, roots) = labels(&a, &b).unwrap();
        assert_eq!(ids, [i64::MIN, -3, 5, 7, 9, 10, i64::MAX]);
        assert_eq!(roots, [i64::MIN, -3, -3, -3, 9, 9, i64::MIN]);
        assert!(forest(&[1], &[]).is_err());
        assert!(forest(&[], &[]).unwrap().is_empty());
    }
}
