"""The budget-bounded ceiling search, on synthetic rate surfaces with a simulated clock."""

from __future__ import annotations

import itertools

import pytest

from parity.bench.ceiling import SearchPlan, align_up, scout_sizes, search_ceiling


class SimClock:
    """Time advances only when a shape is 'measured': by its budget."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def surface(best: tuple[int, int, int], peak: float):
    """A rate that falls off smoothly (in log2 space) away from ``best``."""
    import math

    def rate(m: int, n: int, k: int) -> float:
        d = sum((math.log2(x) - math.log2(b)) ** 2 for x, b in zip((m, n, k), best))
        return peak / (1.0 + 0.5 * d)

    return rate


def make_evaluate(rate, clock: SimClock, calls: list):
    def evaluate(m: int, n: int, k: int, budget_s: float) -> float:
        clock.now += budget_s
        calls.append((m, n, k, budget_s))
        return rate(m, n, k)

    return evaluate


def plan(budget_s: float = 60.0) -> SearchPlan:
    return SearchPlan(budget_s=budget_s, min_dim=256, max_dim=20480, align=64, max_call_s=10.0,
                      probe_budget_s=0.1, confirm_budget_s=0.5)


def test_scout_sizes_are_aligned_geometric_and_bounded() -> None:
    sizes = scout_sizes(plan())
    assert sizes[0] == 256 and sizes[-1] <= 20480
    assert all(s % 64 == 0 for s in sizes)
    assert sizes == sorted(set(sizes))
    assert all(b / a <= 1.5 for a, b in zip(sizes, sizes[1:]))
    assert align_up(100, 64) == 128 and align_up(10, 64) == 64


@pytest.mark.parametrize("best", [(8192, 8192, 8192), (6144, 12288, 4096), (2048, 16384, 8192)])
def test_search_matches_exhaustive_grid_within_budget(best: tuple[int, int, int]) -> None:
    rate = surface(best, 800e12)
    clock, calls = SimClock(), []
    result = search_ceiling(make_evaluate(rate, clock, calls), plan(), clock=clock)
    grid = range(1024, 20481, 1024)
    exhaustive = max(rate(m, n, k) for m, n, k in itertools.product(grid, grid, grid))
    assert result.flops >= 0.98 * exhaustive
    assert result.flops == pytest.approx(rate(*result.dims))
    assert clock.now <= plan().budget_s * 1.05
    assert len(result.confirm_rates) == plan().confirm_repeats


def test_search_stops_before_too_slow_calls() -> None:
    # A CPU-like device: 1 GFLOP/s at every size; max_call_s 0.5 s allows n^3 <= 2.5e8 (n ~ 630).
    clock, calls = SimClock(), []
    slow = SearchPlan(budget_s=30.0, min_dim=16, max_dim=8192, align=16, max_call_s=0.5,
                      probe_budget_s=0.05, confirm_budget_s=0.2)
    result = search_ceiling(make_evaluate(lambda m, n, k: 1e9, clock, calls), slow, clock=clock)
    assert all(2.0 * m * n * k / 1e9 <= 0.5 for m, n, k, _ in calls)
    assert result.flops == 1e9


def test_search_finds_a_small_peak_and_reports_its_shape() -> None:
    # Rates peak at 48x64x64 and fall for larger shapes (as bf16 does on a CPU without it).
    rate = surface((48, 64, 64), 3e9)
    clock, calls = SimClock(), []
    small = SearchPlan.for_device("cpu", budget_s=12.0)
    result = search_ceiling(make_evaluate(rate, clock, calls), small, clock=clock)
    assert result.flops >= 0.97 * 3e9
    assert result.to_dict()["shape"] == {"m": result.dims[0], "n": result.dims[1], "k": result.dims[2]}
    assert result.phases["scout"] >= 3 and result.phases["confirm"] == 9


def test_refinement_is_not_misled_by_drifting_load() -> None:
    # The machine's speed swings +-60% over tens of probes (other jobs start and stop); rates
    # compared back to back still order the shapes right.
    import math

    rate = surface((32, 16, 192), 3e9)
    clock, calls = SimClock(), []

    def evaluate(m: int, n: int, k: int, budget_s: float) -> float:
        clock.now += budget_s
        calls.append((m, n, k))
        load = 1.0 + 0.6 * math.sin(len(calls) / 20.0)
        return rate(m, n, k) * load

    plan = SearchPlan.for_device("cpu", budget_s=12.0)
    result = search_ceiling(evaluate, plan, clock=clock)
    assert rate(*result.dims) >= 0.97 * 3e9
