//! Union-find over dense item numbers, and the groups it forms.

/// Disjoint sets with path halving and union by size.
#[derive(Debug, Clone)]
pub(crate) struct UnionFind {
    parent: Vec<usize>,
    size: Vec<usize>,
}

impl UnionFind {
    pub fn new(n: usize) -> Self {
        UnionFind { parent: (0..n).collect(), size: vec![1; n] }
    }

    pub fn find(&mut self, mut x: usize) -> usize {
        while self.parent[x] != x {
            self.parent[x] = self.parent[self.parent[x]];
            x = self.parent[x];
        }
        x
    }

    pub fn union(&mut self, a: usize, b: usize) {
        let (mut a, mut b) = (self.find(a), self.find(b));
        if a == b {
            return;
        }
        if self.size[a] < self.size[b] {
            std::mem::swap(&mut a, &mut b);
        }
        self.parent[b] = a;
        self.size[a] += self.size[b];
    }

    /// The sets of at least `min_size` members, each ascending, ordered by
    /// their smallest member.
    pub fn groups(mut self, min_size: usize) -> Vec<Vec<usize>> {
        let n = self.parent.len();
        // Number the sets in order of their smallest member.
        let mut slot = vec![usize::MAX; n];
        let mut groups: Vec<Vec<usize>> = Vec::new();
        for x in 0..n {
            let root = self.find(x);
            if self.size[root] < min_size {
                continue;
            }
            if slot[root] == usize::MAX {
                slot[root] = groups.len();
                groups.push(Vec::with_capacity(self.size[root]));
            }
            groups[slot[root]].push(x);
        }
        groups
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chains_join() {
        let mut uf = UnionFind::new(6);
        uf.union(0, 2);
        uf.union(2, 4);
        uf.union(5, 3);
        assert_eq!(uf.clone().groups(1), vec![vec![0, 2, 4], vec![1], vec![3, 5]]);
        assert_eq!(uf.groups(2), vec![vec![0, 2, 4], vec![3, 5]]);
    }
}
