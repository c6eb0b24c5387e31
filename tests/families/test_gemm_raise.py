"""A ceiling never below what the sweep sustained: fraction intervals, the search again around a
shape that beat P, the raised P, and an implausible P (hand-computed cases, no device)."""

from __future__ import annotations

import pytest

from parity.ceilings.plan import SearchPlan
from parity.ceilings.raise_search import search_around
from parity.families.gemm.analysis import analyse
from parity.families.gemm.options import GemmOptions
from parity.families.gemm.raised import (
    bandwidth_interval,
    challenger,
    efficiency_interval,
    fraction_interval,
    implausible_finding,
    raise_case,
    raise_ceiling,
    rate_interval,
)
from parity.families.gemm.suite import GemmSuite
from parity.metrics.roofline import gemm_flops
from parity.model.result import CaseResult

from tests.families.test_gemm_analysis import TIMING, bandwidth_case, sentinel, shape_case
from tests.families.test_gemm_ceiling import SimClock, make_evaluate, surface

P = 100e12
ROUNDS = [98e12, 100e12, 102e12]  # P's rounds: median 100e12


def ceiling() -> CaseResult:
    return CaseResult(suite="gemm", key="ceiling/bf16",
                      params={"kind": "ceiling", "dtype": "bf16", "backend": "matmul", "ceiling_budget_s": 20.0,
                              "flush": True},
                      metrics={"ceiling_flops": P, "ceiling_shape": {"m": 8192, "n": 8192, "k": 8192},
                               "ceiling_rounds": {"rounds_flops": ROUNDS, "ci95_flops": [98e12, 102e12]},
                               "device_name": "NVIDIA H200", "datasheet_flops": 989.5e12},
                      check={"passed": True})


def fast_shape(rate: float, *, ci: tuple[float, float]) -> CaseResult:
    """4096^3 at ``rate`` FLOP/s with a median-call CI giving ``ci`` (FLOP/s) as its rate interval."""
    work = gemm_flops(4096, 4096, 4096)
    r = shape_case(4096, 4096, 4096, seconds=work / rate)
    return CaseResult(suite=r.suite, key=r.key, params=r.params, check=r.check,
                      metrics={**r.metrics, "ci95_s": [work / ci[1], work / ci[0]], "min_s": work / ci[1]})


def raise_result(holds: bool, flops: float | None) -> CaseResult:
    winner = {"m": 4096, "n": 4096, "k": 8192} if holds else {"m": 8192, "n": 8192, "k": 8192}
    metrics: dict[str, object] = {"raise": {"holds": holds, "flops": flops, "winner": winner}}
    if flops:
        metrics["raise_rounds"] = {"rounds_flops": [flops], "median_flops": flops, "ci95_flops": None}
    return CaseResult(suite="gemm", key="ceiling/bf16/raise", check={"passed": True}, metrics=metrics,
                      params={"kind": "ceiling-raise", "dtype": "bf16", "challenger_key": "bf16/matmul/4096x4096x4096"})


def test_rate_and_fraction_intervals_hand_computed() -> None:
    # 2e9 FLOP with its median call's CI [0.01, 0.02] s -> rates [1e11, 2e11] FLOP/s.
    assert rate_interval({"work_flop": 2e9, "ci95_s": [0.01, 0.02]}) == pytest.approx((1e11, 2e11))
    assert rate_interval({"work_flop": 2e9}) is None
    # rate [110, 130] over P [90, 100] -> [1.1, 1.444].
    assert fraction_interval((110.0, 130.0), (90.0, 100.0)) == pytest.approx((1.1, 130 / 90))
    # AI 10, B [8, 12]: attainable [min(90, 80), min(100, 120)] = [80, 100] -> [1.1, 1.625].
    assert efficiency_interval((110.0, 130.0), 10.0, (90.0, 100.0), (8.0, 12.0)) == pytest.approx((1.1, 1.625))
    # B's copy: 2 GB moved in a median call with CI [0.1, 0.2] s -> [10, 20] GB/s.
    assert bandwidth_interval({"bytes_moved": 2e9, "ci95_s": [0.1, 0.2]}, 15e9) == pytest.approx((1e10, 2e10))
    assert bandwidth_interval({}, 15e9) == (15e9, 15e9)


def test_a_shape_beyond_both_cis_is_the_challenger_and_one_within_them_is_not() -> None:
    inside = fast_shape(103e12, ci=(101e12, 105e12))  # low end 101 < P's high 102: not beyond
    beyond = fast_shape(120e12, ci=(110e12, 130e12))
    metrics = ceiling().metrics
    assert challenger([ceiling(), inside], metrics) is None
    assert challenger([ceiling(), inside, beyond], metrics) is beyond
    spec = raise_case([ceiling(), beyond], metrics)
    assert spec is not None and spec.key == "ceiling/bf16/raise" and spec.params["raise_budget_s"] == 10.0
    assert spec.params["challenger"] == {"m": 4096, "n": 4096, "k": 4096}
    assert spec.params["incumbent"] == {"m": 8192, "n": 8192, "k": 8192}
    assert raise_case([ceiling(), beyond], {**metrics, "ceiling_from": "run-1"}) is None


def test_p_is_raised_to_the_larger_of_the_sweep_rate_and_the_search_when_it_holds() -> None:
    beyond = fast_shape(120e12, ci=(110e12, 130e12))
    metrics = {**ceiling().metrics, "findings": []}
    # The search around it held and found 125e12: P becomes 125e12, from the search.
    raised = raise_ceiling(metrics, [ceiling(), beyond, raise_result(True, 125e12)])
    assert raised["ceiling_flops"] == pytest.approx(125e12)
    assert raised["ceiling_shape"] == {"m": 4096, "n": 4096, "k": 8192}
    assert raised["ceiling_statistic"].startswith("raised after the sweep")
    (finding,) = raised["findings"]
    assert finding.code == "ceiling-raised" and "100 to 125" in finding.message
    # It held at 115e12 only: P becomes the sweep's 120e12, with the shape's CI.
    swept = raise_ceiling(metrics, [ceiling(), beyond, raise_result(True, 115e12)])
    assert swept["ceiling_flops"] == pytest.approx(120e12)
    assert swept["ceiling_rounds"]["ci95_flops"] == pytest.approx([110e12, 130e12])
    # It did not hold: P stays, with a note saying the sweep's rate was a fast moment.
    kept = raise_ceiling(metrics, [ceiling(), beyond, raise_result(False, None)])
    assert kept["ceiling_flops"] == P and [f.code for f in kept["findings"]] == ["ceiling-kept"]
    assert "4096x4096x4096 read 120 TFLOP/s" in kept["findings"][0].message


def test_summary_fractions_are_against_the_raised_p() -> None:
    beyond = fast_shape(120e12, ci=(110e12, 130e12))
    summary = analyse([ceiling(), bandwidth_case(), beyond, raise_result(True, 115e12)])
    assert summary["ceiling_flops"] == pytest.approx(120e12)
    assert summary["best_fraction_of_ceiling"] == pytest.approx(1.0)
    assert summary["ceiling_raised"]["from_flops"] == pytest.approx(P)
    assert "ceiling-raised" in summary["ceiling_findings"]
    assert any(f["code"] == "ceiling-raised" for f in summary["findings"])
    row = summary["rows"][0]["backends"]["matmul"]
    assert row["fraction_of_ceiling"] == pytest.approx(1.0) and row["efficiency"] == pytest.approx(1.0)
    assert summary["over_ceiling_beyond_ci"] == []
    # Without the raise, the fraction 1.2 and its interval [110/102, 130/98] are in the summary.
    plain = analyse([ceiling(), bandwidth_case(), beyond])
    interval = plain["rows"][0]["backends"]["matmul"]["fraction_of_ceiling_ci95"]
    assert interval == pytest.approx([110 / 102, 130 / 98])
    assert plain["over_ceiling_beyond_ci"] == ["s4096x4096x4096"]
    assert plain["over_attainable_beyond_ci"] == ["s4096x4096x4096"]  # compute-bound: efficiency = fraction
    assert plain["rows"][0]["backends"]["matmul"]["efficiency_ci95"] == pytest.approx([110 / 102, 130 / 98])
    assert plain["case_figures"]["rows"][beyond.key]["fraction_of_ceiling_ci95_low"] == pytest.approx(110 / 102)
    # The search around it did not hold: P kept, noted, the shape still listed beyond its CI.
    kept = analyse([ceiling(), bandwidth_case(), beyond, raise_result(False, None)])
    assert kept["ceiling_flops"] == P and "ceiling-kept" in [f["code"] for f in kept["findings"]]
    assert kept["over_ceiling_beyond_ci"] == ["s4096x4096x4096"]


def test_the_suite_asks_for_the_search_again_after_the_sweep() -> None:
    beyond = fast_shape(120e12, ci=(110e12, 130e12))
    sentinels = [sentinel(i + 1, rate) for i, rate in enumerate(ROUNDS)]
    again = GemmSuite().recheck([ceiling(), beyond, *sentinels], options=GemmOptions())
    assert [c.key for c in again if c.params["kind"] == "ceiling-raise"] == ["ceiling/bf16/raise"]
    calm = fast_shape(90e12, ci=(85e12, 95e12))
    assert not [c for c in GemmSuite().recheck([ceiling(), calm, *sentinels], options=GemmOptions())
                if c.params["kind"] == "ceiling-raise"]
    assert TIMING["max_call_s"] == 20.0


def test_search_around_holds_when_the_challengers_region_is_faster() -> None:
    rate = surface((2048, 2048, 4096), 1e12)
    clock, calls = SimClock(), []
    plan = SearchPlan(budget_s=10.0, min_dim=256, max_dim=20480, align=64, max_call_s=1.0,
                      probe_budget_s=0.1, confirm_budget_s=0.3)
    found = search_around(make_evaluate(rate, clock, calls), challenger=(2048, 2048, 2048),
                          incumbent=(512, 512, 512), plan=plan, clock=clock)
    assert found.holds and found.flops is not None and found.flops >= rate(2048, 2048, 2048)
    assert clock.now <= 1.2 * plan.budget_s
    # The incumbent is the faster one: the finding does not hold, P stays.
    other = SimClock()
    lost = search_around(make_evaluate(surface((512, 512, 512), 1e12), other, []),
                         challenger=(2048, 2048, 2048), incumbent=(512, 512, 512), plan=plan, clock=other)
    assert not lost.holds and lost.flops is None and lost.to_dict()["holds"] is False


def test_implausible_ceiling_hand_computed() -> None:
    # 1.4 GFLOP/s against a 665 GFLOP/s ISA peak: 0.21%, under 5%.
    finding = implausible_finding(1.4e9, 664.6e9, "AVX-512 BF16")
    assert finding is not None and finding.code == "ceiling-implausible" and "0.21%" in finding.message
    assert implausible_finding(100e9, 664.6e9, "AVX-512 BF16") is None  # 15%
    assert implausible_finding(1.4e9, None, None) is None


def test_a_ceiling_above_the_peak_says_the_peak_understates_the_device() -> None:
    from parity.families.gemm.raised import above_peak_finding

    # 420.6 GFLOP/s against a 332.8 GFLOP/s Zen 4 bf16 peak (64 x 2 cores x 2.6 GHz): 126%.
    finding = above_peak_finding(420.6e9, 332.8e9, "AVX-512 BF16 on AMD Zen 4")
    assert finding is not None and finding.code == "ceiling-above-peak" and "126%" in finding.message
    assert "clock" in finding.hint and "--peak-tflops" in finding.hint
    assert above_peak_finding(332.8e9, 332.8e9, "x") is None  # at the peak: not above it
    assert above_peak_finding(420.6e9, None, None) is None


def test_a_shape_above_p_within_the_cis_floors_p_at_its_rate() -> None:
    from parity.families.gemm.raised import floor_at_sweep

    inside = fast_shape(101e12, ci=(97e12, 105e12))  # low end 97 <= P's high 102: within noise
    metrics = {**ceiling().metrics, "findings": []}
    floored = floor_at_sweep(metrics, [ceiling(), inside])
    assert floored["ceiling_flops"] == pytest.approx(101e12)
    assert floored["ceiling_rounds"]["ci95_flops"] == pytest.approx([97e12, 105e12])
    assert floored["ceiling_raised"]["within_ci"] is True and floored["ceiling_raised"]["from_flops"] == P
    (finding,) = floored["findings"]
    assert finding.code == "ceiling-raised" and finding.severity.value == "info" and "100 to 101" in finding.message
    # Slower than P, or P reused from another run: unchanged.
    assert floor_at_sweep(metrics, [ceiling(), fast_shape(99e12, ci=(97e12, 101e12))]) is metrics
    assert floor_at_sweep({**metrics, "ceiling_from": "run-1"}, [ceiling(), inside])["ceiling_flops"] == P


def test_no_fraction_of_p_over_one_without_a_finding() -> None:
    from parity.families.gemm.figures import gemm_figures
    from parity.families.gemm.summary import GemmSummary

    inside = fast_shape(101e12, ci=(97e12, 105e12))
    summary = analyse([ceiling(), bandwidth_case(), inside])
    assert summary["ceiling_flops"] == pytest.approx(101e12)
    assert summary["best_fraction_of_ceiling"] == pytest.approx(1.0)
    row = summary["rows"][0]["backends"]["matmul"]
    assert row["fraction_of_ceiling"] <= 1.0 and row["efficiency"] <= 1.0
    assert any(f["code"] == "ceiling-raised" for f in summary["findings"])
    # A challenger the search did not confirm stays over 1 and its figure is invalid.
    beyond = fast_shape(120e12, ci=(110e12, 130e12))
    kept = GemmSummary.from_dict(analyse([ceiling(), bandwidth_case(), beyond, raise_result(False, None)]))
    codes = {f.name: [x.code for x in f.findings] for f in gemm_figures(kept)}
    assert "invalid" in codes["gemm.best_fraction_of_ceiling"]
    assert "invalid" in codes["gemm.median_efficiency.all"]


def test_over_attainable_shapes_get_a_finding_within_or_beyond_their_ci() -> None:
    from parity.families.gemm.figures import over_attainable_findings
    from parity.families.gemm.summary import GemmSummary

    base = GemmSummary.from_dict(analyse([ceiling(), bandwidth_case()]))
    from dataclasses import replace

    within = over_attainable_findings(replace(base, over_ceiling=["a"], over_attainable_beyond_ci=[]))
    assert [(f.code, f.severity.value) for f in within] == [("over-attainable", "warning")]
    both = over_attainable_findings(replace(base, over_ceiling=["a", "b"], over_attainable_beyond_ci=["b"]))
    assert [f.code for f in both] == ["invalid", "over-attainable"]
    assert "b" in both[0].message and "a" in both[1].message
    assert over_attainable_findings(base) == ()
