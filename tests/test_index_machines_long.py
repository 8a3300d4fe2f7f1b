"""The index's long state machines: thousands of operations, each checked
against the model (``test_index_properties.py`` has the machines and their
short runs). A file of their own, so that the test run's two workers, which
take a file at a time, share the long runs with the rest of the properties."""

from __future__ import annotations

import pytest
from hypothesis import settings

from budget import examples
from test_index_properties import _HC, IndexMachine, IndexRunsMachine


class IndexRunsMachineLong(IndexRunsMachine):
    pass


IndexRunsMachineLong.TestCase.settings = settings(
    max_examples=examples(25), stateful_step_count=40, deadline=None, suppress_health_check=_HC
)
test_index_runs_state_machine_long = pytest.mark.slow(IndexRunsMachineLong.TestCase)


class IndexMachineLong(IndexMachine):
    pass


# 120 sequences of 50 steps: about 6,000 operations, each checked against
# the model (300 x 60 took over six minutes of CI time on two cores).
IndexMachineLong.TestCase.settings = settings(
    max_examples=examples(120), stateful_step_count=50, deadline=None, suppress_health_check=_HC
)
test_index_state_machine_long = pytest.mark.slow(IndexMachineLong.TestCase)
