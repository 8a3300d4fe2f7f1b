//! The scan of a sorted bucket: each group of keys sharing the table's
//! prefix compared pair by pair (AVX-512, AVX2 or scalar, the same pairs in
//! the same order), copies collapsed onto their first copy, and dense
//! groups joined by components. The pairs a table reports are the table
//! layer's rule ([`Design::group_pairs`](crate::tables::plan::Design::group_pairs)).

use super::*;

impl TableKernel<'_> {
    /// Compares the keys of every group sharing the prefix in a sorted bucket.
    ///
    /// # Errors
    /// [`Error::Interrupted`](crate::Error::Interrupted) when `control` is
    /// cancelled: looked at between groups, every few million comparisons
    /// (a small table is one bucket of large groups).
    pub(super) fn scan(&self, keys: &[u64], pos: &[u32], found: &mut Found, copies: &mut Copies, control: &Control) -> Result<()> {
        const CHECK_COMPARISONS: usize = 1 << 22;
        let mask = self.prefix_mask;
        let n = keys.len();
        let mut compared = 0usize;
        let mut i = 0;
        while i + 1 < n {
            if (keys[i] ^ keys[i + 1]) & mask != 0 {
                i += 1;
                continue;
            }
            let mut end = i + 2;
            while end < n && (keys[i] ^ keys[end]) & mask == 0 {
                end += 1;
            }
            if self.collapse {
                self.collapsed_pairs(&keys[i..end], &pos[i..end], found, copies);
            } else if (end - i) * (end - i) > CHECK_COMPARISONS {
                self.group_pairs_checked(&keys[i..end], &pos[i..end], &mut found.pairs, CHECK_COMPARISONS, control)?;
            } else {
                self.group_pairs(&keys[i..end], &pos[i..end], &mut found.pairs);
            }
            compared += (end - i) * (end - i);
            if compared >= CHECK_COMPARISONS {
                control.check()?;
                compared = 0;
            }
            i = end;
        }
        Ok(())
    }

    /// The pairs of a group with copies of a fingerprint (identical keys)
    /// collapsed onto the first of them (the lowest position), `r`: only the
    /// first copies are compared, and in the one table that reports
    /// distance 0 each other copy `q` is linked to `r` (`r << 32 | q` in
    /// `links`). A page copied 10^5 times then costs 10^5 links and the
    /// comparisons of one item, not 5 * 10^9 pairs; every pair of the items
    /// follows from the pairs of their first copies and the links, which is
    /// all dedup, clusters and `find_all` with `copies="first"` need (and
    /// all of `find_all`'s pairs are made from them at the end).
    pub(super) fn collapsed_pairs(&self, keys: &[u64], pos: &[u32], found: &mut Found, copies: &mut Copies) {
        let n = keys.len();
        // Most groups are a few keys with no copies: compared as they are.
        if n <= 16 && !(1..n).any(|b| keys[..b].contains(&keys[b])) {
            return self.group_pairs(keys, pos, &mut found.pairs);
        }
        let items = &mut copies.items;
        items.clear();
        items.extend(keys.iter().copied().zip(pos.iter().copied()));
        // By key only: the sort is linear when every key is the same.
        items.sort_unstable_by_key(|&(key, _)| key);
        let links_here = self.design.reports(self.t, 0);
        let (rk, rp) = (&mut copies.keys, &mut copies.pos);
        rk.clear();
        rp.clear();
        let mut i = 0;
        while i < n {
            let key = items[i].0;
            let end = i + items[i..].iter().position(|&(k, _)| k != key).unwrap_or(n - i);
            let first = items[i..end].iter().map(|&(_, p)| p).min().expect("a run holds an item");
            if links_here {
                found.links.extend(items[i..end].iter().filter(|&&(_, p)| p != first).map(|&(_, p)| pack(first, p)));
            }
            rk.push(key);
            rp.push(first);
            i = end;
        }
        match self.dense {
            Dense::Leave if rk.len() > crate::batch::dense::DENSE_GROUP => found.dense.extend_from_slice(rp),
            Dense::Join if rk.len() > crate::batch::dense::DENSE_GROUP => self.joining_pairs(rk, rp, &mut found.pairs),
            _ if rk.len() >= 2 => self.group_pairs(rk, rp, &mut found.pairs),
            _ => {}
        }
    }

    /// Pairs within `k` of a dense group that join its items into its
    /// components, without comparing pairs already joined: each item is
    /// compared with the members of each component so far only until one
    /// is within `k` (then it joins that component, and its other members
    /// are skipped). A group of near-identical pages then costs about a
    /// comparison per item, not one per pair. The pairs need not be this
    /// table's to report: each joins two items within `k`, which is all
    /// clusters ask.
    pub(super) fn joining_pairs(&self, keys: &[u64], pos: &[u32], found: &mut Vec<Pair>) {
        // Components as lists of members; a merged one is left empty.
        let mut members: Vec<Vec<u32>> = Vec::new();
        for x in 0..keys.len() {
            let kx = keys[x];
            let mut mine: Option<usize> = None;
            for c in 0..members.len() {
                if Some(c) == mine || members[c].is_empty() {
                    continue;
                }
                let Some(&j) = members[c].iter().find(|&&j| (keys[j as usize] ^ kx).count_ones() <= self.k) else { continue };
                found.push(pack(pos[x], pos[j as usize]));
                match mine {
                    None => {
                        members[c].push(x as u32);
                        mine = Some(c);
                    }
                    Some(m) => {
                        // The smaller list moves into the larger one.
                        let (big, small) = if members[m].len() >= members[c].len() { (m, c) } else { (c, m) };
                        let moved = std::mem::take(&mut members[small]);
                        members[big].extend(moved);
                        mine = Some(big);
                    }
                }
            }
            if mine.is_none() {
                members.push(vec![x as u32]);
            }
        }
    }

    #[inline]
    pub(super) fn group_pairs(&self, keys: &[u64], pos: &[u32], found: &mut Vec<Pair>) {
        self.group_rows(keys, pos, 0..keys.len(), found);
    }

    /// The pairs of a group whose smaller index is in `rows`.
    #[inline]
    fn group_rows(&self, keys: &[u64], pos: &[u32], rows: std::ops::Range<usize>, found: &mut Vec<Pair>) {
        #[cfg(target_arch = "x86_64")]
        if keys.len() >= WIDE_GROUP {
            match self.wide {
                // SAFETY: `wide` says the CPU has AVX-512F and VPOPCNTDQ.
                Popcount::Avx512 => return unsafe { self.group_pairs_wide(keys, pos, rows, found) },
                // SAFETY: `wide` says the CPU has AVX2.
                Popcount::Avx2 => return unsafe { self.group_pairs_avx2(keys, pos, rows, found) },
                Popcount::Scalar => {}
            }
        }
        if rows == (0..keys.len()) {
            return self.group_pairs_scalar(keys, pos, found);
        }
        for a in rows {
            for b in a + 1..keys.len() {
                if self.design.reported(self.t, keys[a] ^ keys[b], self.k).is_some() {
                    found.push(pack(pos[a], pos[b]));
                }
            }
        }
    }

    /// [`Self::group_pairs`] a block of rows at a time, with a look at
    /// `control` after each block of about `check` comparisons: one group
    /// of a small table at wide `k` can hold most of its items.
    pub(super) fn group_pairs_checked(&self, keys: &[u64], pos: &[u32], found: &mut Vec<Pair>, check: usize, control: &Control) -> Result<()> {
        let n = keys.len();
        let mut a = 0;
        while a < n {
            let mut end = a;
            let mut compared = 0;
            while end < n && compared < check {
                compared += n - end - 1;
                end += 1;
            }
            self.group_rows(keys, pos, a..end, found);
            control.check()?;
            a = end;
        }
        Ok(())
    }

    /// [`Self::group_pairs_scalar`], four keys a step, for CPUs with AVX2
    /// but not AVX-512: the popcount of each 64-bit lane is the sum of its
    /// bytes' nibble counts (a table look-up by `vpshufb`, summed by
    /// `vpsadbw`). Pairs come out in the same order.
    ///
    /// # Safety
    /// The CPU has AVX2.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn group_pairs_avx2(&self, keys: &[u64], pos: &[u32], rows: std::ops::Range<usize>, found: &mut Vec<Pair>) {
        use std::arch::x86_64::*;
        let n = keys.len();
        let nibbles = _mm256_setr_epi8(0, 1, 1, 2, 1, 2, 2, 3, 1, 2, 2, 3, 2, 3, 3, 4, 0, 1, 1, 2, 1, 2, 2, 3, 1, 2, 2, 3, 2, 3, 3, 4);
        let low = _mm256_set1_epi8(0x0f);
        let limit = _mm256_set1_epi64x(i64::from(self.k));
        for a in rows.clone() {
            let ka = keys[a];
            let va = _mm256_set1_epi64x(ka as i64);
            // The mask of the keys b..b + 4 within k of `ka`.
            let close4 = |b: usize| -> u32 {
                // SAFETY: callers keep b + 4 <= n, so keys[b..b + 4] is in bounds.
                let x = _mm256_xor_si256(va, unsafe { _mm256_loadu_si256(keys.as_ptr().add(b).cast()) });
                let lo = _mm256_shuffle_epi8(nibbles, _mm256_and_si256(x, low));
                let hi = _mm256_shuffle_epi8(nibbles, _mm256_and_si256(_mm256_srli_epi64(x, 4), low));
                let count = _mm256_sad_epu8(_mm256_add_epi8(lo, hi), _mm256_setzero_si256());
                // Lanes with count > k set; the others are close.
                let far = _mm256_movemask_pd(_mm256_castsi256_pd(_mm256_cmpgt_epi64(count, limit))) as u32;
                !far & 0xf
            };
            let mut take = |b: usize, mut m: u32| {
                while m != 0 {
                    let j = b + m.trailing_zeros() as usize;
                    m &= m - 1;
                    if self.design.reports(self.t, ka ^ keys[j]) {
                        found.push(pack(pos[a], pos[j]));
                    }
                }
            };
            let mut b = a + 1;
            // Most steps find nothing: 16 keys a test of one combined mask.
            while b + 16 <= n {
                take(b, close4(b) | close4(b + 4) << 4 | close4(b + 8) << 8 | close4(b + 12) << 12);
                b += 16;
            }
            while b + 4 <= n {
                take(b, close4(b));
                b += 4;
            }
            for j in b..n {
                if self.design.reported(self.t, ka ^ keys[j], self.k).is_some() {
                    found.push(pack(pos[a], pos[j]));
                }
            }
        }
    }

    pub(super) fn group_pairs_scalar(&self, keys: &[u64], pos: &[u32], found: &mut Vec<Pair>) {
        self.design.group_pairs(self.t, keys, self.k, |a, b, _| found.push(pack(pos[a], pos[b])));
    }

    /// [`Self::group_pairs_scalar`], eight keys a step: real corpora put
    /// hundreds of fingerprints in one group at wide `k` (verified
    /// near-duplicates' candidates), where the quadratic scan is the job.
    /// Pairs come out in the same order.
    ///
    /// # Safety
    /// The CPU has AVX-512F and AVX-512 VPOPCNTDQ.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx512f,avx512vpopcntdq")]
    pub(super) unsafe fn group_pairs_wide(&self, keys: &[u64], pos: &[u32], rows: std::ops::Range<usize>, found: &mut Vec<Pair>) {
        use std::arch::x86_64::*;
        let n = keys.len();
        let limit = _mm512_set1_epi64(i64::from(self.k));
        for a in rows.clone() {
            let ka = keys[a];
            let va = _mm512_set1_epi64(ka as i64);
            // The mask of the keys b..b + 8 within k of `ka`.
            let close8 = |b: usize| {
                // SAFETY: callers keep b + 8 <= n, so keys[b..b + 8] is in bounds.
                let vb = unsafe { _mm512_loadu_si512(keys.as_ptr().add(b).cast()) };
                _mm512_cmple_epu64_mask(_mm512_popcnt_epi64(_mm512_xor_si512(va, vb)), limit)
            };
            // The pairs of `ka` with the keys b + i for each bit i of `m`
            // (keys within k), those this table reports.
            let mut take = |b: usize, mut m: u32| {
                while m != 0 {
                    let j = b + m.trailing_zeros() as usize;
                    m &= m - 1;
                    if self.design.reports(self.t, ka ^ keys[j]) {
                        found.push(pack(pos[a], pos[j]));
                    }
                }
            };
            let mut b = a + 1;
            // Most steps find nothing: 32 keys a test of one combined mask.
            while b + 32 <= n {
                take(b, u32::from(close8(b)) | u32::from(close8(b + 8)) << 8 | u32::from(close8(b + 16)) << 16 | u32::from(close8(b + 24)) << 24);
                b += 32;
            }
            while b + 8 <= n {
                take(b, u32::from(close8(b)));
                b += 8;
            }
            for j in b..n {
                if self.design.reported(self.t, ka ^ keys[j], self.k).is_some() {
                    found.push(pack(pos[a], pos[j]));
                }
            }
        }
    }
}
