//! From verified pairs, as a stream in order delivers them, to the dedup
//! and the clusters: the keep mask with each dropped document's earliest
//! kept match and their similarity, and connected components through the
//! batch engine's union-find (4 bytes a document).

use crate::cluster::graph::{self, Components, Dedup};
use crate::cluster::ClusterMethod;
use crate::{Error, Result};

/// Alike pairs of `n` documents folded into a dedup and components.
pub struct PairSweep {
    dedup: Dedup,
    similarity: Vec<f32>,
    components: Components,
    /// The last pair taken, to refuse pairs out of order.
    last: Option<u64>,
}

impl PairSweep {
    pub fn new(n: usize) -> PairSweep {
        PairSweep {
            dedup: Dedup { keep: vec![true; n], dropped: Vec::new(), matched: Vec::new() },
            similarity: Vec::new(),
            components: Components::new(n),
            last: None,
        }
    }

    /// Takes the next alike pairs `higher << 32 | lower` with their
    /// similarity, ascending over all calls. When `(j, i)` comes, every
    /// pair of a later document `i` has come, so `keep[i]` is final and
    /// the first kept `i` is the earliest. Returns the documents these
    /// pairs dropped: `(dropped, matched, similarity)`, ascending.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] for lengths that differ, pairs out of
    /// order, or a document past `n`.
    ///
    /// `links` (`copy << 32 | first`, ascending) are the copies among the
    /// same documents (see [`super::copies`]): each goes, matched to its
    /// first copy (similarity 1) when that was kept, else to what its
    /// first copy matched, with the same similarity.
    pub fn feed(&mut self, pairs: &[u64], similarity: &[f32], links: &[u64]) -> Result<(&[u32], &[u32], &[f32])> {
        if pairs.len() != similarity.len() {
            return Err(Error::invalid("similarity", "one value per pair", format!("{} for {} pairs", similarity.len(), pairs.len())));
        }
        let n = self.dedup.keep.len() as u64;
        let before = self.similarity.len();
        for (&p, &s) in pairs.iter().zip(similarity) {
            let (j, i) = (p >> 32, p & u64::from(u32::MAX));
            if j >= n || i >= j || self.last.is_some_and(|l| l >= p) {
                return Err(Error::invalid("pairs", "ascending pairs (later, earlier) of the documents", format!("({j}, {i}) of {n}")));
            }
            self.last = Some(p);
            let keep = &mut self.dedup.keep;
            if keep[j as usize] && keep[i as usize] {
                keep[j as usize] = false;
                self.dedup.dropped.push(j as u32);
                self.dedup.matched.push(i as u32);
                self.similarity.push(s);
            }
        }
        self.components.feed(pairs)?;
        if !links.is_empty() {
            self.follow_first(before, links)?;
        }
        Ok((&self.dedup.dropped[before..], &self.dedup.matched[before..], &self.similarity[before..]))
    }

    /// Drops the linked copies, then puts this feed's dropped documents
    /// (from `before`) in order again.
    fn follow_first(&mut self, before: usize, links: &[u64]) -> Result<()> {
        let n = self.dedup.keep.len() as u64;
        let d = &mut self.dedup;
        let mut copies: Vec<(u32, u32, f32)> = Vec::with_capacity(links.len());
        for &l in links {
            let (copy, first) = (l >> 32, l & u64::from(u32::MAX));
            if copy >= n || first >= copy {
                return Err(Error::invalid("links", "(copy, first copy) of the documents", format!("({copy}, {first}) of {n}")));
            }
            let (copy, first) = (copy as u32, first as u32);
            copies.push(if d.keep[first as usize] {
                (copy, first, 1.0)
            } else {
                let at = d.dropped.binary_search(&first).map_err(|_| Error::invalid("links", "copies after their first copy's pairs", first))?;
                (copy, d.matched[at], self.similarity[at])
            });
            d.keep[copy as usize] = false;
            self.components.join(first, copy);
        }
        let mut new: Vec<(u32, u32, f32)> =
            d.dropped[before..].iter().zip(&d.matched[before..]).zip(&self.similarity[before..]).map(|((&j, &m), &s)| (j, m, s)).collect();
        new.extend(copies);
        new.sort_unstable_by_key(|c| c.0);
        d.dropped.truncate(before);
        d.matched.truncate(before);
        self.similarity.truncate(before);
        for (j, m, s) in new {
            d.dropped.push(j);
            d.matched.push(m);
            self.similarity.push(s);
        }
        Ok(())
    }

    /// The dedup and the similarity of each dropped document to its match.
    pub fn dedup(self) -> (Dedup, Vec<f32>) {
        (self.dedup, self.similarity)
    }

    /// Clusters of at least `min_size` documents, as [`crate::batch::clusters`] gives them.
    pub fn clusters(self, method: ClusterMethod, min_size: usize) -> Result<(Vec<u32>, Vec<u64>)> {
        if min_size < 1 {
            return Err(Error::invalid("min_size", "at least 1", min_size));
        }
        let roots = match method {
            ClusterMethod::Leader => graph::leader_roots(&self.dedup),
            ClusterMethod::Connected => self.components.roots(),
        };
        Ok(graph::clusters(roots, min_size))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sweeps_in_order() {
        // 0~1, 1~2 (1 dropped, so 2 stays), 0~3, 2~4.
        let pairs = [1 << 32, 2 << 32 | 1, 3 << 32, 4 << 32 | 2];
        let mut s = PairSweep::new(6);
        assert_eq!(s.feed(&pairs[..2], &[0.9, 0.8], &[]).unwrap(), (&[1u32][..], &[0u32][..], &[0.9f32][..]));
        assert_eq!(s.feed(&pairs[2..], &[0.95, 1.0], &[]).unwrap(), (&[3u32, 4][..], &[0u32, 2][..], &[0.95f32, 1.0][..]));
        assert!(s.feed(&[2 << 32], &[0.5], &[]).is_err(), "out of order");
        let (d, sims) = PairSweep::new(6).tap_feed(&pairs, &[0.9, 0.8, 0.95, 1.0]).dedup();
        assert_eq!(d.keep, [true, false, true, false, false, true]);
        assert_eq!((d.dropped, d.matched, sims), (vec![1, 3, 4], vec![0, 0, 2], vec![0.9, 0.95, 1.0]));
        let (members, starts) = PairSweep::new(6).tap_feed(&pairs, &[0.9, 0.8, 0.95, 1.0]).clusters(ClusterMethod::Connected, 2).unwrap();
        assert_eq!((members, starts), (vec![0, 1, 2, 3, 4], vec![0, 5]));
        let (members, starts) = PairSweep::new(6).tap_feed(&pairs, &[0.9, 0.8, 0.95, 1.0]).clusters(ClusterMethod::Leader, 1).unwrap();
        assert_eq!((members, starts), (vec![0, 1, 3, 2, 4, 5], vec![0, 3, 5, 6]));
        assert!(PairSweep::new(3).feed(&[5 << 32], &[1.0], &[]).is_err(), "past n");
        assert!(PairSweep::new(3).feed(&[1 << 32], &[], &[]).is_err(), "lengths");
    }

    impl PairSweep {
        fn tap_feed(mut self, pairs: &[u64], sims: &[f32]) -> PairSweep {
            self.feed(pairs, sims, &[]).unwrap();
            self
        }
    }
}
