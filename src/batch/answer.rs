//! The answer of [`find_all`](super::find_all) from a job's pairs of first
//! copies and its links: how many pairs it holds (known before any is
//! made, so that a large answer gets its notice first), and the pairs,
//! with every copy's pairs made from its first copy's as `copies` asks.

use super::*;

/// The pairs [`find_all`] answers, from a job's pairs of first copies and
/// its links: their number, known before any is made, and the pairs.
pub(super) struct Answer {
    copies: Copies,
    /// Copies of each first copy that has some, `None` when there are none.
    groups: Option<Groups>,
    pub(super) count: u64,
    /// What `copies="first"` would answer.
    first_count: u64,
}

impl Answer {
    pub(super) fn new(job: &mut Pairs, opts: &Options, control: &Control) -> Result<Answer> {
        let copies = opts.copies.unwrap_or_default();
        let first_count = job.count() + job.links.iter().map(Run::len).sum::<u64>();
        if copies == Copies::First || job.links.iter().all(|r| r.len() == 0) {
            return Ok(Answer { copies, groups: None, count: first_count, first_count });
        }
        let groups = Groups::from_links(std::mem::take(&mut job.links))?;
        job.runs = runs::sorted_in_memory(std::mem::take(&mut job.runs));
        let mut count = groups.pairs_within();
        runs::merge_ref(&job.runs, |batch| {
            for &p in batch {
                let (a, b) = kernel::unpack(p);
                count += (1 + groups.of(a).len() as u64) * (1 + groups.of(b).len() as u64);
            }
            Ok(())
        })?;
        if opts.copies.is_none() && count - first_count >= COPIES_NOTICE {
            control.notice(format!(
                "copies of the same fingerprint make {} of the {count} pairs ({:.1} GB as an array); \
                 copies=\"first\" pairs each copy with the first copy of its fingerprint only ({first_count} pairs); \
                 pass copies=\"all\" to list them all without this notice",
                count - first_count,
                count as f64 * 16.0 / 1e9,
            ));
        }
        Ok(Answer { copies, groups: Some(groups), count, first_count })
    }

    /// Whether [`Self::each`] gives the pairs in order.
    pub(super) fn in_order(&self) -> bool {
        self.groups.is_none()
    }

    pub(super) fn advice(&self, other: &str) -> String {
        if self.copies == Copies::All && self.first_count < self.count {
            format!("{other}, or copies=\"first\" ({} pairs: each copy with the first copy of its fingerprint)", self.first_count)
        } else {
            other.to_string()
        }
    }

    /// Calls `out` with every pair, in batches; returns whether they came
    /// in order. The job's runs are read (and those in memory given up).
    pub(super) fn each(&self, job: &mut Pairs, mut out: impl FnMut(&[Pair]) -> Result<()>) -> Result<bool> {
        let Some(groups) = &self.groups else {
            // First copies' pairs and the links: both sorted pairs.
            let mut all = std::mem::take(&mut job.runs);
            all.append(&mut job.links);
            runs::merge(all, out)?;
            return Ok(true);
        };
        let mut batch: Vec<Pair> = Vec::with_capacity(1 << 14);
        let mut push = |p: Pair, out: &mut dyn FnMut(&[Pair]) -> Result<()>| -> Result<()> {
            batch.push(p);
            if batch.len() == batch.capacity() {
                out(&batch)?;
                batch.clear();
            }
            Ok(())
        };
        for (first, copies) in groups.iter() {
            for (i, &a) in copies.iter().enumerate() {
                push(kernel::pack(first, a), &mut out)?;
                for &b in &copies[i + 1..] {
                    push(kernel::pack(a, b), &mut out)?;
                }
            }
        }
        runs::merge_ref(&job.runs, |pairs| {
            for &p in pairs {
                let (a, b) = kernel::unpack(p);
                let (ga, gb) = (groups.of(a), groups.of(b));
                for x in std::iter::once(&a).chain(ga) {
                    for y in std::iter::once(&b).chain(gb) {
                        push(kernel::pack(*x, *y), &mut out)?;
                    }
                }
            }
            Ok(())
        })?;
        out(&batch)?;
        Ok(false)
    }
}

/// The links of a job in memory: for each first copy that has copies,
/// their positions, ascending.
struct Groups {
    firsts: Vec<u32>,
    starts: Vec<usize>,
    copies: Vec<u32>,
}

impl Groups {
    /// From runs of links `first << 32 | copy`.
    pub(super) fn from_links(links: Vec<Run<Pair>>) -> Result<Groups> {
        let mut g = Groups { firsts: Vec::new(), starts: Vec::new(), copies: Vec::new() };
        runs::merge(links, |batch| {
            for &link in batch {
                let (first, copy) = kernel::unpack(link);
                if g.firsts.last() != Some(&first) {
                    g.firsts.push(first);
                    g.starts.push(g.copies.len());
                }
                g.copies.push(copy);
            }
            Ok(())
        })?;
        g.starts.push(g.copies.len());
        Ok(g)
    }

    /// The copies of `first` (none for most items).
    #[inline]
    pub(super) fn of(&self, first: u32) -> &[u32] {
        match self.firsts.binary_search(&first) {
            Ok(i) => &self.copies[self.starts[i]..self.starts[i + 1]],
            Err(_) => &[],
        }
    }

    pub(super) fn iter(&self) -> impl Iterator<Item = (u32, &[u32])> + '_ {
        self.firsts.iter().enumerate().map(|(i, &f)| (f, &self.copies[self.starts[i]..self.starts[i + 1]]))
    }

    /// Pairs among the copies of each fingerprint, the first included.
    pub(super) fn pairs_within(&self) -> u64 {
        self.iter().map(|(_, c)| (c.len() as u64 + 1) * c.len() as u64 / 2).sum()
    }
}
