"""GEMM and kernels figures carry an ``invalid`` finding when a fraction of the measured
ceiling exceeds 1 beyond its CI, or a rate is not positive (hand-made summaries)."""

from __future__ import annotations

import pytest

from parity.families.gemm.figures import best_fraction_ci, gemm_figures
from parity.families.gemm.summary import GemmSummary
from parity.families.kernels.figures import kernels_figures
from parity.families.kernels.summary import KernelCheck, KernelRow, KernelsSummary


def _codes(figures) -> dict[str, list[str]]:
    return {f.name: [g.code for g in f.findings] for f in figures}


def test_best_fraction_ci_follows_the_ceilings_rounds() -> None:
    # f = 1.2, P = 100 with CI [90, 110]: [1.2*100/110, 1.2*100/90]
    assert best_fraction_ci(1.2, 100.0, (90.0, 110.0)) == pytest.approx((120 / 110, 120 / 90))
    assert best_fraction_ci(1.2, 100.0, None) is None


def test_the_issues_312_percent_of_p_is_invalid() -> None:
    summary = GemmSummary(ceiling_flops=1.0e11, best_fraction_of_ceiling=3.12, bandwidth_bps=3.0e10,
                          ceiling_rounds={"ci95_flops": [0.95e11, 1.05e11]},
                          efficiency_compute_bound={"median": 2.1, "ci95_low": 1.9, "ci95_high": 2.4, "n": 7})
    codes = _codes(gemm_figures(summary))
    assert codes["gemm.best_fraction_of_ceiling"] == ["invalid"]
    assert codes["gemm.median_efficiency.compute-bound"] == ["invalid"]
    assert codes["gemm.ceiling"] == [] and codes["gemm.bandwidth_ceiling"] == []


def test_a_fraction_whose_ci_reaches_one_is_not_invalid() -> None:
    # 1.02 of P, P's CI +-5%: [0.97, 1.07]
    summary = GemmSummary(ceiling_flops=1.0e11, best_fraction_of_ceiling=1.02, bandwidth_bps=3.0e10,
                          ceiling_rounds={"ci95_flops": [0.95e11, 1.05e11]})
    assert _codes(gemm_figures(summary))["gemm.best_fraction_of_ceiling"] == []


def test_a_ceiling_that_is_not_positive_is_invalid() -> None:
    codes = _codes(gemm_figures(GemmSummary(ceiling_flops=0.0, bandwidth_bps=-1.0)))
    assert codes["gemm.ceiling"] == ["invalid"] and codes["gemm.bandwidth_ceiling"] == ["invalid"]


def _kernel(**values) -> KernelRow:
    return KernelRow(**{"key": "mm/torch/64", "op": "mm", "impl": "torch", "shape": "64", "ok": True,
                        "check": KernelCheck(passed=True), **values})


def test_a_kernel_above_its_attainable_rate_is_invalid() -> None:
    summary = KernelsSummary(rows=(_kernel(flop_per_s=3.9e10, efficiency=39.2), _kernel(flop_per_s=1e9, efficiency=0.4),
                                   _kernel(flop_per_s=0.0, efficiency=None)))
    found = {(f.name, f.scope.get("row", i)): [g.code for g in f.findings]
             for i, f in enumerate(kernels_figures(summary)) if f.name != "kernels.bandwidth_ceiling"}
    assert list(found.values()) == [[], ["invalid"], [], [], ["invalid"], []]
