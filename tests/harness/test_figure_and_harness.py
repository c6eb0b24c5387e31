"""Typed figures, the rate formula, and the harness on a fake device (hand-computed cases)."""

from __future__ import annotations

import pytest

from parity.harness.measure import measure_work
from parity.harness.suite import CaseSpec
from parity.harness.work import Work
from parity.device.fake import FakeDevice
from parity.metrics.rates import rate_per_s
from parity.model.figure import Figure, format_value


def test_figure_round_trip_and_validation() -> None:
    figure = Figure(name="gemm.ceiling", value=2e12, unit="FLOP/s", method="best round",
                    scope={"dtype": "bf16"}, ci95=(1.9e12, 2.1e12), best=2.2e12)
    assert Figure.from_dict(figure.to_dict()) == figure
    with pytest.raises(ValueError, match="unit 'TFLOP/s' is not one of"):
        Figure(name="x", value=1.0, unit="TFLOP/s", method="m")
    with pytest.raises(ValueError, match="is not finite"):
        Figure(name="x", value=float("inf"), unit="s", method="m")
    with pytest.raises(ValueError, match="reversed"):
        Figure(name="x", value=1.0, unit="s", method="m", ci95=(2.0, 1.0))


@pytest.mark.parametrize(
    ("value", "unit", "text"),
    [(1.5e12, "FLOP/s", "1.5 TFLOP/s"), (2.5e10, "B/s", "25 GB/s"), (3e-6, "s", "3 us"),
     (0.415, "1", "41.5%"), (4096.0, "count", "4,096"), (None, "s", "n/a"), (2**30, "B", "1,024 MiB"),
     # a rate under 1 of its usual unit in the next smaller one; zero stays in the usual unit
     (3.81e10, "FLOP/s", "38.1 GFLOP/s"), (8.57e8, "FLOP/s", "857 MFLOP/s"), (6e7, "B/s", "60 MB/s"),
     (512.0, "B/s", "512 B/s"), (0.0, "FLOP/s", "0 TFLOP/s"), (4.8e12, "B/s", "4,800 GB/s")],
)
def test_format_value_makes_humans_units_at_the_edge(value: float | None, unit: str, text: str) -> None:
    assert format_value(value, unit) == text


def test_rate_is_amount_over_seconds() -> None:
    # 2*1024^3 FLOP in 1 ms: 2.147483648e12 FLOP/s.
    assert rate_per_s(2 * 1024**3, 1e-3) == pytest.approx(2.147483648e12)
    assert rate_per_s(0, 1.0) is None and rate_per_s(10, 0.0) is None


CASE = CaseSpec(suite="t", key="k", params={"n": 1})


def _work(**kw: object) -> Work:
    base = {"call": lambda: None, "check": lambda: {"passed": True, "method": "m"}, "warmup_s": 0.0,
            "budget_s": 0.0, "min_samples": 5, "max_samples": 5, "flush_cache": False}
    return Work(**{**base, **kw})  # type: ignore[arg-type]


def test_harness_times_checks_and_rates_declared_work() -> None:
    # The fake device times every call 2 ms: 1e9 FLOP and 4e6 B per call -> 5e11 FLOP/s, 2e9 B/s.
    released: list[bool] = []
    result = measure_work(CASE, _work(flop=1e9, bytes=4e6, bytes_convention="read + written",
                                      release=lambda: released.append(True)), device=FakeDevice(durations_s=[2e-3]))
    assert result.ok and released == [True]
    m = result.metrics
    assert m["median_s"] == pytest.approx(2e-3) and m["ci95_s"] == [pytest.approx(2e-3), pytest.approx(2e-3)]
    assert m["flop_per_s"] == pytest.approx(5e11) and m["bytes_per_s"] == pytest.approx(2e9)
    assert m["bytes_convention"] == "read + written" and len(result.samples["main"]) == 5


def test_a_check_that_fails_raises_or_answers_nothing_makes_the_row_not_ok() -> None:
    device = FakeDevice(durations_s=[1e-3])
    failed = measure_work(CASE, _work(check=lambda: {"passed": False, "method": "m"}), device=device)
    assert not failed.ok and "wrong-result" in [f.code for f in failed.findings]

    def broken() -> dict[str, object]:
        raise RuntimeError("no reference")

    raised = measure_work(CASE, _work(check=broken), device=device)
    assert not raised.ok and raised.check["error"] == "RuntimeError: no reference"
    silent = measure_work(CASE, _work(check=lambda: {"method": "m"}), device=device)
    assert not silent.ok and "no boolean 'passed'" in silent.check["error"]


def test_work_must_name_its_byte_convention_and_a_known_strategy() -> None:
    with pytest.raises(ValueError, match="name the convention"):
        _work(bytes=10.0)
    with pytest.raises(ValueError, match="unknown timing strategy 'cuda-graphs'"):
        _work(strategy="cuda-graphs")
    with pytest.raises(ValueError, match="needs a group of ranks"):
        measure_work(CASE, _work(strategy="max-over-ranks"), device=FakeDevice(durations_s=[1e-3]))


def test_family_summaries_become_typed_figures() -> None:
    from parity.families.gemm.figures import gemm_figures
    from parity.families.gemm.summary import GemmSummary
    from parity.families.latency.figures import latency_figures
    from parity.families.latency.summary import LatencySummary
    from parity.families.membw.figures import membw_figures
    from parity.families.membw.summary import MembwSummary

    gemm = gemm_figures(GemmSummary.from_dict({"dtype": "bf16", "device_name": "cpu", "ceiling_flops": 2e12, "ceiling_shape": {"m": 1},
                         "bandwidth_bps": None, "bandwidth_error": "out of memory",
                         "best_fraction_of_ceiling": 0.9, "measured": 3,
                         "efficiency_compute_bound": {"median": 0.4, "ci95_low": 0.3, "ci95_high": 0.5, "n": 3},
                         "efficiency_all": None}))
    by_name = {f.name: f for f in gemm}
    assert by_name["gemm.ceiling"].value == 2e12 and by_name["gemm.ceiling"].scope["dtype"] == "bf16"
    assert by_name["gemm.bandwidth_ceiling"].value is None and by_name["gemm.bandwidth_ceiling"].note == "out of memory"
    assert by_name["gemm.median_efficiency.compute-bound"].ci95 == (0.3, 0.5)
    assert by_name["gemm.median_efficiency.all"].note == "no all shapes measured"

    # Stored summaries of the untyped layout (GB/s, ns), read back as typed records.
    membw = membw_figures(MembwSummary.from_dict({"device": "cpu", "flush": True,
                           "ceiling": {"gbps": 20.0, "method": "copy", "operand_bytes": 1 << 30},
                           "curves": [{"op": "copy", "convention": "stream", "asymptotic_gbps": 25.0,
                                       "fixed_cost_s": 1e-4, "n_half_bytes": 25e5, "points": [1, 2],
                                       "regime": "cold"},
                                      {"op": "copy", "convention": "stream", "asymptotic_gbps": 50.0,
                                       "fixed_cost_s": 1e-6, "n_half_bytes": 5e4, "points": [1, 2],
                                       "regime": "warm", "label": "warm: repeated, no cache flush"}]}))
    assert [(f.name, f.value) for f in membw] == [
        ("membw.ceiling", 2e10), ("membw.copy.asymptotic", 2.5e10), ("membw.copy.fixed_cost.cold", 1e-4),
        ("membw.copy.n_half.cold", 25e5), ("membw.copy.asymptotic.warm", 5e10), ("membw.copy.fixed_cost", 1e-6),
        ("membw.copy.n_half", 5e4)]
    assert "warm" in {f.name: f for f in membw}["membw.copy.fixed_cost"].method
    latency = latency_figures(LatencySummary.from_dict({
        "device": "cpu", "method": "chase", "estimator": "minima",
        "plateaus": [{"level": "L1", "latency_ns": 1.5, "page": "4KiB", "size_bytes": 49152}],
        "blocks_curve": {"knees": [{"blocks": 4}], "page": "4KiB"}}))
    assert [(f.name, f.value, f.unit) for f in latency] == [("latency.L1", pytest.approx(1.5e-9), "s"),
                                                            ("latency.first_knee", 4.0, "count")]
