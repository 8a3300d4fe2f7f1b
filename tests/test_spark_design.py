"""The Spark planner's design (``spark._pairs.choose_blocks``) is the core's
choice (``ShuffleTables.choose_blocks``, ``distributed::shuffle_blocks``):
the same blocks as the pure-Python planner it replaced (with the costs retuned
for the packed shuffle), kept here as the oracle, for every k and a grid of sizes and table counts. No Spark needed.
"""

from __future__ import annotations

import math
from typing import List, Optional, Tuple

import numpy as np
import pytest

from rsimhash.spark._pairs import choose_blocks

# The core's costs (distributed::ROW_COST, PAIR_COST): an item of a table
# through the packed shuffle against a comparison, in microseconds.
ROW_COST, PAIR_COST = 0.5, 0.002


def block_sizes(blocks: int) -> List[int]:
    return [64 // blocks + (i < 64 % blocks) for i in range(blocks)]


def oracle(n: int, k: int, tables: Optional[int] = None) -> int:
    """``choose_blocks`` in Python, as it was written before the core took it over."""
    if tables is not None:
        fits = [b for b in range(k + 1, 65) if math.comb(b, k) == tables]
        if not fits:
            options = ", ".join(str(math.comb(b, k)) for b in range(k + 1, min(64, k + 7) + 1))
            raise ValueError(f"no design for k={k} has {tables} tables; choose one of {options}, ...")
        return fits[0]
    best: Optional[Tuple[float, int]] = None
    for b in range(k + 1, min(64, k + 9) + 1):
        t = math.comb(b, k)
        prefix = sum(sorted(block_sizes(b), reverse=True)[: b - k])
        cost = n * t * ROW_COST + t * (n * n / 2.0 ** (prefix + 1)) * PAIR_COST
        if best is None or cost < best[0]:
            best = (cost, b)
    assert best is not None
    return best[1]


def sizes() -> List[int]:
    rng = np.random.default_rng(25)
    grid = {1, 2, 3, 7, 10, 99, 1000, 4096, 10**6, 10**9, 10**12, 2**53}
    grid |= {1 << e for e in range(63)} | {(1 << e) - 1 for e in range(1, 63)} | {3 << e for e in range(60)}
    grid |= {int(x) for x in rng.integers(1, 1 << 53, size=200)}
    return sorted(grid)


@pytest.mark.parametrize("k", range(17))
def test_the_same_blocks_as_the_python_planner(k):
    got = {n: choose_blocks(n, k) for n in sizes()}
    want = {n: oracle(n, k) for n in sizes()}
    assert got == want
    # The grid spans more than one design (k = 0 has one: every block count is one table
    # of all 64 bits): the check compares choices, not one constant.
    assert len(set(want.values())) > (1 if k else 0)


@pytest.mark.parametrize("k", range(17))
def test_the_same_blocks_for_a_table_count(k):
    counts = {math.comb(b, k) for b in range(k + 1, 65)} | {-1, 0, 2, 5, 7, 10**30, (1 << 64) - 1, 1 << 64}
    for tables in sorted(counts):
        try:
            want: object = oracle(5, k, tables)
        except ValueError as e:
            want = str(e)
        try:
            got: object = choose_blocks(5, k, tables)
        except ValueError as e:
            got = str(e)
        assert got == want, tables
