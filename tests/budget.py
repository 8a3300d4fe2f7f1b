"""How many examples the property tests try.

``RSIMHASH_TEST_EXAMPLES`` scales every count (default 1): ``scripts/test.sh``
runs the fingerprint and index properties a second time under
``RSIMHASH_PORTABLE=1`` at half the examples, the portable code paths being
the same algorithms the first pass already searched at full strength.
"""

from __future__ import annotations

import os

SCALE = float(os.environ.get("RSIMHASH_TEST_EXAMPLES", "1"))


def examples(n: int) -> int:
    """``n`` scaled, never below 5."""
    return max(5, round(n * SCALE))
