"""The command line's fingerprint store (``spill.Fingerprints``): in memory
as one growing array or as the parts added, and spilled to a ``.npy`` once
past its cap, the same values in the same order either way."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rsimhash.cli.spill import Fingerprints, Workspace

parts_st = st.lists(st.lists(st.integers(0, 2**64 - 1), max_size=7), max_size=6)


@settings(max_examples=80, deadline=None)
@given(parts=parts_st, cap=st.integers(0, 30), as_parts=st.booleans())
def test_the_values_come_back_in_order(tmp_path_factory, parts, cap, as_parts):
    arrays = [np.array(p, dtype=np.uint64) for p in parts]
    want = np.concatenate(arrays) if arrays else np.empty(0, np.uint64)
    with Workspace(str(tmp_path_factory.mktemp("work")), None) as workspace:
        store = Fingerprints(cap, workspace, as_parts=as_parts)
        for a in arrays:
            store.add(a)
        got = store.finish(parts=True)
        store.close()
        if isinstance(got, str):  # spilled: past the cap
            assert len(want) > cap and store.spilled
            np.testing.assert_array_equal(np.load(got), want)
        else:
            assert not store.spilled
            joined = np.concatenate(got) if got else np.empty(0, np.uint64)
            np.testing.assert_array_equal(joined, want)
            if as_parts and len(want):  # kept as added, never copied
                assert len(got) == len(arrays) and all(g is a for g, a in zip(got, arrays))


@pytest.mark.parametrize("as_parts", [False, True])
def test_one_array_when_asked(tmp_path, as_parts):
    with Workspace(str(tmp_path), None) as workspace:
        store = Fingerprints(100, workspace, as_parts=as_parts)
        store.add(np.array([3, 1], dtype=np.uint64))
        store.add(np.array([2**64 - 1], dtype=np.uint64))
        np.testing.assert_array_equal(store.finish(), np.array([3, 1, 2**64 - 1], dtype=np.uint64))
