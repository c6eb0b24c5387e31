"""Every built-in suite states its cases' cost in one unit, expected seconds on a CPU, so the run's
ETA can scale a suite not yet started by the suites measured before it (``CaseSpec.cost``)."""

from __future__ import annotations

import pytest

from parity.harness import registry
from parity.model.errors import ParityError

pytestmark = pytest.mark.torch

# A quick CPU case takes between about a millisecond and the GEMM ceiling's 20 s budget.
LOW_S, HIGH_S = 1e-3, 30.0


def _quick_cpu_plans() -> dict[str, list]:
    from parity.device import get_device

    cpu, plans = get_device("cpu"), {}
    for name in registry.names():
        suite = registry.get_suite(name)
        try:
            plans[name] = suite.cases(device=cpu, quick=True, options=suite.options_type())
        except ParityError:
            continue  # a suite this process cannot plan (the preflight needs two ranks)
    return plans


def test_quick_cpu_case_costs_are_seconds() -> None:
    plans = _quick_cpu_plans()
    assert {"gemm", "membw", "latency", "collectives", "kernels"} <= set(plans)
    for name, cases in plans.items():
        for case in cases:
            assert LOW_S <= case.cost <= HIGH_S, f"{name} {case.key}: cost {case.cost:g} is not a case's seconds"
    # a whole quick CPU run is minutes, not hours (the first ETA a user sees)
    assert sum(c.cost for cases in plans.values() for c in cases) < 600
