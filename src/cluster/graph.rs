//! From pairs to answers: the keep mask of a dedup (each item dropped when
//! an item kept before it is within `k`), leader clusters, and connected
//! components through a union-find of 4 bytes per item.
//!
//! Items are positions `0..n` (below 2^32); a cluster is named by its
//! smallest position, so clusters come out in the order of their first
//! item and members in position order, as `Index::cluster` orders ids.

use crate::Result;

/// What a dedup keeps, and what each dropped item matched.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Dedup {
    /// One flag per item: kept.
    pub keep: Vec<bool>,
    /// Positions of the dropped items, ascending.
    pub dropped: Vec<u32>,
    /// For each dropped item, the earliest kept item within `k`.
    pub matched: Vec<u32>,
}

/// The dedup of `n` items from their pairs `higher << 32 | lower`, ascending.
pub(crate) struct DedupSweep {
    out: Dedup,
}

impl DedupSweep {
    pub fn new(n: usize) -> DedupSweep {
        DedupSweep { out: Dedup { keep: vec![true; n], dropped: Vec::new(), matched: Vec::new() } }
    }

    /// Takes the next pairs in order. When pair `(j, i)` comes (`i < j`),
    /// every pair of a higher item `i` has come before it, so `keep[i]` is
    /// final; the first kept `i` is the smallest.
    pub fn feed(&mut self, pairs: &[u64]) -> Result<()> {
        let keep = &mut self.out.keep;
        for &p in pairs {
            let (j, i) = ((p >> 32) as usize, p as u32 as usize);
            if keep[j] && keep[i] {
                keep[j] = false;
                self.out.dropped.push(j as u32);
                self.out.matched.push(i as u32);
            }
        }
        Ok(())
    }

    pub fn finish(self) -> Dedup {
        self.out
    }
}

/// The copies of a dedup, after its sweep: each copy of a fingerprint is
/// linked to its first copy (`copy << 32 | first`, fed in ascending order)
/// and goes, matched to its first when that was kept, else to what its
/// first matched (the earliest kept item within `k` of both). Copies never
/// stay, so the sweep never needs them.
pub(crate) struct CopySweep {
    out: Dedup,
    dropped: Vec<u32>,
    matched: Vec<u32>,
}

impl CopySweep {
    pub fn new(swept: Dedup) -> CopySweep {
        CopySweep { out: swept, dropped: Vec::new(), matched: Vec::new() }
    }

    pub fn feed(&mut self, links: &[u64]) -> Result<()> {
        let d = &mut self.out;
        for &link in links {
            let (copy, first) = ((link >> 32) as usize, link as u32);
            let m = if d.keep[first as usize] {
                first
            } else {
                let at = d.dropped.binary_search(&first).expect("a first copy that went was swept");
                d.matched[at]
            };
            d.keep[copy] = false;
            self.dropped.push(copy as u32);
            self.matched.push(m);
        }
        Ok(())
    }

    /// The dedup with its copies: dropped items ascending again.
    pub fn finish(self) -> Dedup {
        let CopySweep { out, dropped, matched } = self;
        if dropped.is_empty() {
            return out;
        }
        let total = out.dropped.len() + dropped.len();
        let (mut all_dropped, mut all_matched) = (Vec::with_capacity(total), Vec::with_capacity(total));
        let (mut i, mut j) = (0, 0);
        while i < out.dropped.len() || j < dropped.len() {
            if j == dropped.len() || (i < out.dropped.len() && out.dropped[i] < dropped[j]) {
                all_dropped.push(out.dropped[i]);
                all_matched.push(out.matched[i]);
                i += 1;
            } else {
                all_dropped.push(dropped[j]);
                all_matched.push(matched[j]);
                j += 1;
            }
        }
        Dedup { keep: out.keep, dropped: all_dropped, matched: all_matched }
    }
}

/// Union-find over positions whose root is always the smallest member.
pub(crate) struct Components {
    parent: Vec<u32>,
}

impl Components {
    pub fn new(n: usize) -> Components {
        let mut parent = crate::mem::vec_with_capacity(n);
        parent.extend(0..n as u32);
        Components { parent }
    }

    #[inline]
    fn find(&mut self, mut x: u32) -> u32 {
        while self.parent[x as usize] != x {
            let grand = self.parent[self.parent[x as usize] as usize];
            self.parent[x as usize] = grand;
            x = grand;
        }
        x
    }

    /// Joins the items of pairs `lower << 32 | higher`, in any order.
    pub fn feed(&mut self, pairs: &[u64]) -> Result<()> {
        for &p in pairs {
            self.join((p >> 32) as u32, p as u32);
        }
        Ok(())
    }

    /// Joins the clusters of `a` and `b`; false when they were one already.
    #[inline]
    pub fn join(&mut self, a: u32, b: u32) -> bool {
        let (a, b) = (self.find(a), self.find(b));
        if a == b {
            return false;
        }
        self.parent[a.max(b) as usize] = a.min(b);
        true
    }

    /// Each item's root (its component's smallest item).
    pub fn roots(mut self) -> Vec<u32> {
        for x in 0..self.parent.len() as u32 {
            let r = self.find(x);
            self.parent[x as usize] = r;
        }
        self.parent
    }
}

/// The roots of leader clusters: a kept item leads its own, a dropped one
/// joins the earliest kept item within `k`.
pub(crate) fn leader_roots(d: &Dedup) -> Vec<u32> {
    let mut roots: Vec<u32> = crate::mem::vec_with_capacity(d.keep.len());
    roots.extend(0..d.keep.len() as u32);
    for (&j, &m) in d.dropped.iter().zip(&d.matched) {
        roots[j as usize] = m;
    }
    roots
}

/// Clusters of at least `min_size` items as `(members, starts)`: cluster `c`
/// is `members[starts[c]..starts[c + 1]]`, ascending; clusters ordered by
/// their smallest member. `roots[x]` is the smallest member of `x`'s cluster.
pub(crate) fn clusters(roots: Vec<u32>, min_size: usize) -> (Vec<u32>, Vec<u64>) {
    let n = roots.len();
    // Sizes by root, then turned in place into each cluster's next slot.
    let mut slot = vec![0u32; n];
    for &r in &roots {
        slot[r as usize] += 1;
    }
    let mut starts = vec![0u64];
    let mut total = 0u64;
    for x in 0..n {
        if roots[x] as usize == x {
            let size = u64::from(slot[x]);
            if size as usize >= min_size {
                slot[x] = total as u32;
                total += size;
                starts.push(total);
                continue;
            }
        }
        slot[x] = u32::MAX;
    }
    let mut members = vec![0u32; total as usize];
    for (x, &r) in roots.iter().enumerate() {
        let s = slot[r as usize];
        if s != u32::MAX {
            members[s as usize] = x as u32;
            slot[r as usize] = s + 1;
        }
    }
    (members, starts)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dedup_keeps_the_first_of_chains() {
        // 0-1, 1-2, 3-4: 1 goes (near 0), 2 stays (1 went), 4 goes (near 3).
        let mut pairs: Vec<u64> = [(1u64, 0u64), (2, 1), (4, 3), (4, 0)].iter().map(|&(j, i)| j << 32 | i).collect();
        pairs.sort_unstable();
        let mut s = DedupSweep::new(5);
        s.feed(&pairs).unwrap();
        let d = s.finish();
        assert_eq!(d.keep, vec![true, false, true, true, false]);
        assert_eq!((d.dropped, d.matched), (vec![1, 4], vec![0, 0]));
    }

    #[test]
    fn components_and_their_order() {
        let mut c = Components::new(7);
        c.feed(&[5u64 << 32 | 6, 2 << 32 | 6, 1 << 32 | 3]).unwrap();
        let roots = c.roots();
        assert_eq!(roots, vec![0, 1, 2, 1, 4, 2, 2]);
        assert_eq!(clusters(roots.clone(), 2), (vec![1, 3, 2, 5, 6], vec![0, 2, 5]));
        assert_eq!(clusters(roots, 1).1.len(), 5);
    }
}
