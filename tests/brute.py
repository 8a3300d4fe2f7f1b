"""Brute-force model of ``rsimhash.Index``: the oracle for the index tests.

Every answer is computed by comparing the query with *every* stored item (numpy
vectorised, but with no pruning of any kind), so it is obviously complete.
Semantics (docs: /work/shared/API.md plus the lead's clarifications):

* items are ``(id, fingerprint)``; one fingerprint may carry many ids, an id is
  stored at most once;
* default ids continue after the largest id ever assigned (the counter never
  goes backwards, so a removed id is never silently reused by ``add``); default
  ids past 2**64-1 are an error;
* ``query`` -> ``[(id, dist)]`` sorted by (dist, id);
* ``query_batch`` -> ``(qi int64, ids uint64, dist uint8)`` sorted by (qi, dist, id);
* ``find_all`` -> ``uint64 (P, 2)``, smaller id first, rows sorted;
* ``cluster`` "connected": components of the within-k graph; "leader": in id
  order, each item joins the smallest-id representative within k or becomes a
  representative; clusters sorted, list sorted by smallest id, small ones dropped;
* ``add_unique``: ids are assigned to *every* input exactly as ``add`` would
  (checked the same way; default ids = first id + position, so ``matched`` maps
  back to positions; the counter moves past all of them), then in input order an
  item is a duplicate iff a stored item or an earlier new item of the same call
  is within k; matched = smallest such id; only the new items are stored;
* ``remove`` -> number of the given (distinct) ids that were stored.

The model validates only what the tests rely on; it is not an error oracle.
"""

from __future__ import annotations

import numpy as np

U64_MAX = (1 << 64) - 1

if hasattr(np, "bitwise_count"):  # numpy >= 2.0

    def popcount64(a):
        """Bit count of every element of a uint64 array (uint8 result)."""
        return np.bitwise_count(np.asarray(a, dtype=np.uint64))

else:  # pragma: no cover - numpy 1.x
    _TABLE16 = np.array([bin(i).count("1") for i in range(1 << 16)], dtype=np.uint8)

    def popcount64(a):
        a = np.asarray(a, dtype=np.uint64)
        m = np.uint64(0xFFFF)
        out = _TABLE16[(a & m).astype(np.intp)].astype(np.uint8)
        for s in (16, 32, 48):
            out += _TABLE16[((a >> np.uint64(s)) & m).astype(np.intp)]
        return out


def hamming(a: int, b: int) -> int:
    return bin(a ^ b).count("1")


def _as_list(x):
    """int, list of ints or 1-D array -> list of Python ints."""
    if isinstance(x, (int, np.integer)):
        return [int(x)]
    if isinstance(x, np.ndarray):
        return [int(v) for v in x.reshape(-1).tolist()]
    return [int(v) for v in x]


def _check_u64(v):
    if not 0 <= v <= U64_MAX:
        raise ValueError("value %d is not a uint64" % v)


class BruteIndex:
    """Same interface as ``rsimhash.Index``, computed by exhaustive comparison."""

    def __init__(self, k: int = 3):
        if k < 0:
            raise ValueError("k must be >= 0")
        self.k = k
        self.items: dict[int, int] = {}  # id -> fingerprint
        self.next_id = 0  # largest id ever assigned + 1
        self._cache = None
        self._pairs_of = None  # the _cache the pairs were computed from

    # -- helpers -----------------------------------------------------------
    def __len__(self):
        return len(self.items)

    def _k(self, k):
        if k is None:
            return self.k
        if k < 0 or k > self.k:
            raise ValueError("k=%d outside 0..%d" % (k, self.k))
        return k

    def _arrays(self):
        """(ids ascending, fps in the same order) as uint64 arrays."""
        if self._cache is None:
            ids = sorted(self.items)
            self._cache = (np.array(ids, dtype=np.uint64), np.array([self.items[i] for i in ids], dtype=np.uint64))
        return self._cache

    def _store(self, i, fp):
        self.items[i] = fp
        self.next_id = max(self.next_id, i + 1)
        self._cache = None

    def distances(self, fp: int):
        """(ids ascending, distance of fp to each) over every stored item."""
        ids, fps = self._arrays()
        return ids, popcount64(fps ^ np.uint64(fp))

    # -- API ---------------------------------------------------------------
    def _assign_ids(self, n, ids):
        """The ids of n new items (given, or default) after every check; the
        counter moves past them (whether or not the items end up stored)."""
        if ids is None:
            if self.next_id + n > U64_MAX + 1:
                raise ValueError("default ids past 2**64-1")
            ids = list(range(self.next_id, self.next_id + n))
        else:
            ids = _as_list(ids)
            if len(ids) != n:
                raise ValueError("ids length")
            for i in ids:
                _check_u64(i)
            if len(set(ids)) != len(ids):
                raise ValueError("duplicate id in call")
            if any(i in self.items for i in ids):
                raise ValueError("id already stored")
        if ids:
            self.next_id = max(self.next_id, max(ids) + 1)
        return ids

    def add(self, fps, ids=None):
        fps = _as_list(fps)
        for v in fps:
            _check_u64(v)
        ids = self._assign_ids(len(fps), ids)
        for i, v in zip(ids, fps):
            self._store(i, v)
        return np.array(ids, dtype=np.uint64)

    def query(self, fp: int, k=None):
        k = self._k(k)
        _check_u64(fp)
        ids, d = self.distances(fp)
        hits = [(int(d[j]), int(ids[j])) for j in np.nonzero(d <= k)[0]]
        hits.sort()
        return [(i, dist) for dist, i in hits]

    def query_batch(self, fps, k=None):
        k = self._k(k)
        qi, out_ids, out_d = [], [], []
        for q, fp in enumerate(_as_list(fps)):
            for i, dist in self.query(fp, k):
                qi.append(q)
                out_ids.append(i)
                out_d.append(dist)
        return (np.array(qi, dtype=np.int64), np.array(out_ids, dtype=np.uint64), np.array(out_d, dtype=np.uint8))

    def find_all(self, k=None):
        k = self._k(k)
        rows, dist = self._pairs()
        return rows if k == self.k else rows[dist <= k]

    def _pairs(self):
        """Every pair within the index k (rows sorted, smaller id first) and
        its distance: all pairs compared, once per state of the model (a
        bulk test asks for the pairs at k, at k - 1 and for its clusters, on
        60,000 items)."""
        ids, fps = self._arrays()
        if self._pairs_of is not self._cache:
            n, k = len(ids), self.k
            rows, dists = [np.zeros((0, 2), dtype=np.uint64)], [np.zeros(0, dtype=np.uint8)]
            chunk = max(1, 4_000_000 // max(n, 1))
            for lo in range(0, n, chunk):
                hi = min(n, lo + chunk)
                # row r (item lo + r) against every item at position >= lo
                d = popcount64(fps[lo:hi, None] ^ fps[None, lo:])
                r, c = np.divmod(np.flatnonzero(d <= k), d.shape[1])  # np.nonzero, row-major, 3 x faster
                keep = c > r  # each unordered pair once
                r, c = r[keep], c[keep]
                dists.append(d[r, c])
                r, c = r + lo, c + lo
                # ids ascending, so ids[r] < ids[c]; row-major -> rows sorted
                rows.append(np.stack([ids[r], ids[c]], axis=1).astype(np.uint64))
            pairs = (np.concatenate(rows), np.concatenate(dists))
            for a in pairs:
                a.setflags(write=False)  # shared by every caller until the model changes
            self._pairs_of, self._pairs_cached = self._cache, pairs
        return self._pairs_cached

    def cluster(self, k=None, min_size=2, method="connected"):
        k = self._k(k)
        if min_size < 1:
            raise ValueError("min_size")
        if method == "connected":
            groups = self._connected(k)
        elif method == "leader":
            groups = self._leader(k)
        else:
            raise ValueError("method")
        out = [np.array(sorted(g), dtype=np.uint64) for g in groups if len(g) >= min_size]
        out.sort(key=lambda a: int(a[0]))
        return out

    def _connected(self, k):
        parent = {i: i for i in self.items}

        def find(x):
            while parent[x] != x:
                parent[x] = parent[parent[x]]
                x = parent[x]
            return x

        for a, b in self.find_all(k).tolist():
            ra, rb = find(a), find(b)
            if ra != rb:
                parent[max(ra, rb)] = min(ra, rb)
        groups: dict[int, list[int]] = {}
        for i in self.items:
            groups.setdefault(find(i), []).append(i)
        return list(groups.values())

    def _leader(self, k):
        ids, fps = self._arrays()  # id order
        rep_fps = np.zeros(len(ids), dtype=np.uint64)
        reps: list[int] = []  # representative ids, ascending
        members: dict[int, list[int]] = {}
        for i, fp in zip(ids.tolist(), fps.tolist()):
            d = popcount64(rep_fps[: len(reps)] ^ np.uint64(fp))
            within = np.nonzero(d <= k)[0]
            if len(within):
                members[reps[within[0]]].append(i)  # smallest id: reps ascending
            else:
                rep_fps[len(reps)] = fp
                reps.append(i)
                members[i] = [i]
        return list(members.values())

    def remove(self, ids):
        n = 0
        for i in set(_as_list(ids)):
            if i in self.items:
                del self.items[i]
                n += 1
        self._cache = None
        return n

    def add_unique(self, fps, ids=None, k=None):
        k = self._k(k)
        fps = _as_list(fps)
        for v in fps:
            _check_u64(v)
        old_ids, old_fps = self._arrays()  # stored before the call
        ids = self._assign_ids(len(fps), ids)  # every input gets an id, as in add
        new_ids: list[int] = []  # new items of this call, in order
        new_fps = np.zeros(len(fps), dtype=np.uint64)
        is_new = np.zeros(len(fps), dtype=bool)
        matched = np.zeros(len(fps), dtype=np.uint64)
        for j, fp in enumerate(fps):
            q = np.uint64(fp)
            hits = old_ids[popcount64(old_fps ^ q) <= k].tolist()
            d_new = popcount64(new_fps[: len(new_ids)] ^ q)
            hits += [new_ids[t] for t in np.nonzero(d_new <= k)[0]]
            if hits:
                matched[j] = min(hits)
            else:
                is_new[j] = True
                new_fps[len(new_ids)] = fp
                new_ids.append(ids[j])
        for t, i in enumerate(new_ids):
            self._store(i, int(new_fps[t]))
        return is_new, matched

    @property
    def tables(self):
        return 1
