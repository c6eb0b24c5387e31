"""``parity run --quick`` without ``--suite`` takes every registered suite on one rank: each one
it keeps must list its cases there (a suite that cannot declares ``min_ranks`` and is left
out; ``parity.cli.run.suites_for_ranks``)."""

from __future__ import annotations

import pytest

from parity.cli.run import suites_for_ranks
from parity.harness import registry
from parity.harness.options import parse_options

pytestmark = pytest.mark.torch


def test_every_suite_kept_on_one_rank_lists_its_quick_cases() -> None:
    from parity.device import get_device

    device = get_device("cpu")
    kept, left_out = suites_for_ranks(registry.resolve([]), 1)
    assert set(left_out) == {"preflight"} and kept
    for suite in kept:
        options = parse_options(suite.options_type, {}, suite=suite.name)
        cases = suite.cases(device=device, quick=True, options=options)
        assert cases, suite.name
        assert len({c.key for c in cases}) == len(cases), suite.name
