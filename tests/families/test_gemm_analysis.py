"""From stored GEMM cases to roofline rows and the sweep summary (no device needed)."""

from __future__ import annotations

import pytest

from parity.families.gemm.analysis import analyse
from parity.metrics.roofline import gemm_flops, gemm_intensity
from parity.model.findings import Finding, Severity
from parity.model.result import CaseResult

P = 100e12  # measured ceiling, FLOP/s
B = 1e12  # measured bandwidth, B/s -> ridge 100 FLOP/B
TIMING = {"warmup_s": 0.02, "budget_s": 0.08, "flush": True, "telemetry": True, "check": True, "graph": "auto",
          "max_call_s": 20.0, "max_samples": 500}


def ceiling_case() -> CaseResult:
    return CaseResult(suite="gemm", key="ceiling/bf16", params={"kind": "ceiling", "dtype": "bf16"},
                      metrics={"ceiling_flops": P, "ceiling_shape": {"m": 8192, "n": 8192, "k": 8192},
                               "device_name": "NVIDIA H200", "datasheet_flops": 989.5e12,
                               "datasheet_source": "NVIDIA H200 datasheet"})


def bandwidth_case() -> CaseResult:
    return CaseResult(suite="gemm", key="bandwidth", params={"kind": "bandwidth"}, metrics={"bandwidth_bps": B})


def shape_case(m: int, n: int, k: int, *, seconds: float, backend: str = "matmul", power: bool = False,
               passed: bool = True, error: str | None = None) -> CaseResult:
    params = {"kind": "shape", "dtype": "bf16", "backend": backend, "m": m, "n": n, "k": k,
              "name": f"s{m}x{n}x{k}", "family": "square", "origin": "test", **TIMING}
    metrics = {"work_flop": gemm_flops(m, n, k), "arithmetic_intensity": gemm_intensity(m, n, k, in_bytes=2, out_bytes=2)}
    findings: tuple[Finding, ...] = ()
    if error is None:
        metrics.update({"median_s": seconds, "iqr_s": seconds / 10, "achieved_flops": gemm_flops(m, n, k) / seconds,
                        "power_limited": power, "throttle_reasons": ["sw_power_cap"] if power else []})
        if power:
            findings = (Finding(code="throttled", severity=Severity.WARNING, message="power"),)
        if not passed:
            findings += (Finding(code="wrong-result", severity=Severity.ERROR, message="wrong"),)
    else:
        findings = (Finding(code="out-of-memory", severity=Severity.ERROR, message=error),)
    return CaseResult(suite="gemm", key=f"bf16/{backend}/{m}x{n}x{k}", params=params, metrics=metrics,
                      check={"passed": passed, "relative_error": 1e-3}, findings=findings, error=error)


def test_summary_figures_by_hand() -> None:
    # 3072^3: AI = 1024 FLOP/B (compute-bound), F = 5.8e10; at 1.16e-3 s -> 50 TFLOP/s = 50% of P.
    # 6144^3 at 80% of P; 96^3 (AI 32, memory-bound): attainable 32 TFLOP/s.
    f1, f2, f3 = gemm_flops(3072, 3072, 3072), gemm_flops(6144, 6144, 6144), gemm_flops(96, 96, 96)
    results = [ceiling_case(), bandwidth_case(),
               shape_case(3072, 3072, 3072, seconds=f1 / 50e12),
               shape_case(6144, 6144, 6144, seconds=f2 / 80e12, power=True),
               shape_case(96, 96, 96, seconds=f3 / 16e12)]
    summary = analyse(results)
    assert summary["ceiling_flops"] == pytest.approx(100e12)
    assert "ceiling_tflops" not in summary and "bandwidth_gbps" not in summary  # SI only
    assert summary["ridge_flop_per_byte"] == pytest.approx(100.0)
    assert summary["best_fraction_of_ceiling"] == pytest.approx(0.8)
    assert summary["best_shape"]["m"] == 6144
    assert summary["efficiency_compute_bound"]["median"] == pytest.approx(0.65)  # median of 0.5, 0.8
    assert "median_efficiency_compute_bound" not in summary  # one place: the distribution
    assert summary["efficiency_compute_bound"]["n"] == 2
    assert summary["classes"] == {"compute-bound": 2, "memory-bound": 1, "near-ridge": 0, "unclassified": 0}
    small = next(r for r in summary["rows"] if r["m"] == 96)
    assert small["class"] == "memory-bound"
    assert small["backends"]["matmul"]["attainable_flops"] == pytest.approx(32e12)
    assert small["backends"]["matmul"]["efficiency"] == pytest.approx(0.5)
    assert summary["power_limited"] == ["bf16/matmul/6144x6144x6144"]
    assert summary["throttled"] == ["bf16/matmul/6144x6144x6144"]
    assert summary["datasheet"]["ceiling_fraction_of_datasheet"] == pytest.approx(100 / 989.5)
    big = next(r for r in summary["rows"] if r["m"] == 6144)
    assert big["backends"]["matmul"]["fraction_of_datasheet"] == pytest.approx(80 / 989.5)


def test_best_backend_per_shape_and_failures() -> None:
    f = gemm_flops(4096, 4096, 4096)
    results = [ceiling_case(), bandwidth_case(),
               shape_case(4096, 4096, 4096, seconds=f / 60e12, backend="matmul"),
               shape_case(4096, 4096, 4096, seconds=f / 70e12, backend="linear"),
               shape_case(8192, 8192, 8192, seconds=1.0, backend="matmul", error="out of memory"),
               shape_case(8192, 8192, 8192, seconds=1.0, backend="linear", passed=False)]
    summary = analyse(results)
    row = next(r for r in summary["rows"] if r["m"] == 4096)
    assert row["best_backend"] == "linear"
    assert row["backends"]["matmul"]["achieved_flops"] == pytest.approx(60e12)
    failed_row = next(r for r in summary["rows"] if r["m"] == 8192)
    assert failed_row["best_backend"] is None  # the only run was wrong, the other failed
    codes = sorted(item["code"] for item in summary["failed"])
    assert codes == ["out-of-memory", "wrong-result"]
    assert summary["backends"]["linear"]["wins"] == 1
    assert summary["backends"]["matmul"]["failed"] == 1
    assert summary["best_fraction_of_ceiling"] == pytest.approx(0.7)


def test_without_ceilings_the_rows_still_report_rates() -> None:
    f = gemm_flops(512, 512, 512)
    ceiling = CaseResult(suite="gemm", key="ceiling/tf32", params={"kind": "ceiling", "dtype": "tf32"},
                         error="tf32 mode is not available on cpu")
    summary = analyse([ceiling, bandwidth_case(), shape_case(512, 512, 512, seconds=f / 1e12)])
    assert summary["ceiling_flops"] is None
    assert summary["ceiling_error"] == "tf32 mode is not available on cpu"
    assert summary["best_fraction_of_ceiling"] is None
    assert summary["efficiency_compute_bound"] is None
    assert summary["rows"][0]["backends"]["matmul"]["achieved_flops"] == pytest.approx(1e12)
    assert summary["classes"]["unclassified"] == 1


def test_terminal_tables_show_ceilings_backends_and_failures() -> None:
    from rich.console import Console

    from parity.families.gemm.views import VIEW

    f = gemm_flops(4096, 4096, 4096)
    summary = analyse([ceiling_case(), bandwidth_case(),
                       shape_case(4096, 4096, 4096, seconds=f / 60e12, backend="matmul"),
                       shape_case(4096, 4096, 4096, seconds=f / 70e12, backend="linear", power=True),
                       shape_case(8192, 8192, 8192, seconds=1.0, backend="matmul", error="out of memory")])
    console = Console(width=200, record=True)
    console.print(VIEW.terminal(summary))
    text = console.export_text()
    assert "100 TFLOP/s at 8192x8192x8192" in text
    assert "NVIDIA H200 datasheet" in text
    assert "TFLOP/s per backend" in text and "70" in text
    assert "linear:power" in text
    assert "FAILED bf16/matmul/8192x8192x8192: [out-of-memory] out of memory" in text


def test_a_shape_off_the_trend_of_its_neighbours_is_rechecked_and_flagged_if_it_stays() -> None:
    from parity.families.gemm.suite import GemmSuite
    from parity.families.gemm.options import GemmOptions

    # K-sweep at M = N = 1024: 40, 4 (a tenth of both neighbours), 60 TFLOP/s.
    rates = {1024: 40e12, 2048: 4e12, 4096: 60e12}
    cases = [ceiling_case(), bandwidth_case()] + [
        shape_case(1024, 1024, k, seconds=gemm_flops(1024, 1024, k) / r) for k, r in rates.items()]
    (again,) = GemmSuite().recheck(cases, options=GemmOptions())
    assert again.key == "bf16/matmul/1024x1024x2048/again"
    assert again.params["again_of"] == "bf16/matmul/1024x1024x2048" and again.params["k"] == 2048

    def measured_again(rate: float) -> CaseResult:
        row = shape_case(1024, 1024, 2048, seconds=gemm_flops(1024, 1024, 2048) / rate)
        return CaseResult(**{**row.__dict__, "key": again.key, "params": again.params})

    settled = analyse(cases + [measured_again(50e12)])
    middle = next(r for r in settled["rows"] if r["k"] == 2048)
    assert middle["backends"]["matmul"]["achieved_flops"] == pytest.approx(50e12)
    assert settled["findings"] == [] and settled["shapes"] == 3
    stays = analyse(cases + [measured_again(5e12)])
    middle = next(r for r in stays["rows"] if r["k"] == 2048)
    assert middle["backends"]["matmul"]["achieved_flops"] == pytest.approx(4e12)
    (finding,) = stays["findings"]
    assert finding["code"] == "off-trend" and "4 TFLOP/s then 5 TFLOP/s" in finding["message"]


def test_the_ceilings_own_shape_is_timed_again_and_its_fraction_of_p_has_a_ci() -> None:
    from parity.families.gemm.suite import GemmSuite
    from parity.families.gemm.options import GemmOptions

    rounds = [P * r for r in (0.98, 1.0, 1.02, 0.99, 1.01)]
    ceiling = CaseResult(suite="gemm", key="ceiling/bf16",
                         params={"kind": "ceiling", "dtype": "bf16", "backend": "matmul", "ceiling_budget_s": 20.0},
                         metrics={**ceiling_case().metrics, "ceiling_rounds": {"rounds_flops": rounds}},
                         check={"passed": True})
    f = gemm_flops(3072, 3072, 3072)
    cases = [ceiling, bandwidth_case(), shape_case(3072, 3072, 3072, seconds=f / 50e12)]
    # Nothing swept: no shape timing to copy, no own-shape case.
    assert GemmSuite().recheck(cases[:2], options=GemmOptions()) == []
    (own,) = GemmSuite().recheck(cases, options=GemmOptions())
    assert own.key == "ceiling/bf16/own-shape"
    assert own.params == {**TIMING, "kind": "ceiling-shape", "dtype": "bf16", "backend": "matmul",
                          "ceiling_budget_s": 20.0, "rounds": 5, "index": 0, "m": 8192, "n": 8192, "k": 8192}
    assert "ceiling_own_shape" in analyse(cases) and analyse(cases)["ceiling_own_shape"] is None

    def timed_again(scale: float) -> CaseResult:
        return CaseResult(suite="gemm", key=own.key, params=own.params, check={"passed": True},
                          metrics={"rounds_flops": list(rounds), "own_flops": [scale * r for r in rounds]})

    same = analyse(cases + [timed_again(1.0)])["ceiling_own_shape"]
    assert same["fraction"] == pytest.approx(1.0) and same["reproduced"] and same["source"] == "timed after the sweep"
    assert same["ci95"][0] <= 1.0 <= same["ci95"][1] and same["shape"] == {"m": 8192, "n": 8192, "k": 8192}
    assert same["confirm_fraction"]["fraction"] == pytest.approx(1.0)
    slow = analyse(cases + [timed_again(0.7)])
    assert slow["ceiling_own_shape"]["fraction"] == pytest.approx(0.7) and not slow["ceiling_own_shape"]["reproduced"]
    (finding,) = slow["findings"]
    assert finding["code"] == "ceiling-not-reproduced" and "70.0% of P" in finding["message"]
    assert not [c for c in GemmSuite().recheck(cases + [timed_again(1.0)], options=GemmOptions())
                if c.key not in {r.key for r in cases + [timed_again(1.0)]}]


def sentinel(index: int, rate: float, own: float | None = None) -> CaseResult:
    """A sentinel: one round of P's shape at ``rate`` and the shape timed as a sweep shape beside
    it at ``own`` (``rate`` when not given; no own timing at all when ``own`` is 0)."""
    metrics: dict[str, object] = {"rounds_flops": [rate]}
    if own != 0:
        metrics["own_flops"] = [rate if own is None else own]
    return CaseResult(suite="gemm", key=f"ceiling/bf16/sentinel-{index}",
                      params={**TIMING, "kind": "ceiling-sentinel", "dtype": "bf16", "backend": "matmul", "rounds": 1,
                              "index": index - 1, "m": 8192, "n": 8192, "k": 8192},
                      check={"passed": True}, metrics=metrics)


def confirmed_ceiling(rounds: list[float]) -> CaseResult:
    return CaseResult(suite="gemm", key="ceiling/bf16",
                      params={"kind": "ceiling", "dtype": "bf16", "backend": "matmul", "ceiling_budget_s": 20.0},
                      metrics={**ceiling_case().metrics, "ceiling_flops": sorted(rounds)[len(rounds) // 2],
                               "ceiling_rounds": {"rounds_flops": rounds}},
                      check={"passed": True})


def test_p_is_read_from_the_sentinels_timed_through_the_sweep() -> None:
    from parity.families.gemm.options import GemmOptions
    from parity.families.gemm.suite import GemmSuite

    confirmation = [P * r for r in (1.0, 1.01, 0.99)]
    f = gemm_flops(3072, 3072, 3072)
    swept = shape_case(3072, 3072, 3072, seconds=f / 50e12)
    # The machine ran 10% slower through the sweep than through the search: P is the sweep's.
    slow = [sentinel(i + 1, P * r) for i, r in enumerate((0.90, 0.91, 0.89))]
    cases = [confirmed_ceiling(confirmation), bandwidth_case(), swept, *slow]
    summary = analyse(cases)
    assert summary["ceiling_flops"] == pytest.approx(P * 0.90)
    rounds = summary["ceiling_rounds"]
    assert rounds["confirm_flops"] == confirmation and rounds["sentinel_flops"] == [P * 0.90, P * 0.91, P * 0.89]
    assert rounds["rounds_flops"] == rounds["sentinel_flops"] and rounds["spread"] == pytest.approx(0.02 / 0.90)
    assert summary["best_fraction_of_ceiling"] == pytest.approx(50e12 / (P * 0.90))
    # ... and the move since the search is a finding: the six rounds spread (1.01 - 0.89) / 0.95.
    assert summary["ceiling_findings"] == ["unstable-ceiling"]
    assert [f["code"] for f in summary["findings"]] == ["unstable-ceiling"]
    assert "confirmation and sentinel rounds spread 13%" in summary["findings"][0]["message"]
    own = summary["ceiling_own_shape"]
    assert own["source"] == "sentinels through the sweep" and own["fraction"] == pytest.approx(1.0)
    assert own["reproduced"] and own["confirm_fraction"]["fraction"] == pytest.approx(0.90)
    # With three sentinels timed, the post-sweep own-shape case is not needed.
    assert not [c for c in GemmSuite().recheck(cases, options=GemmOptions()) if c.params["kind"] == "ceiling-shape"]
    # The shape timed as the sweep times it reads 95% of the round beside it in every pair: the
    # pairs cancel the drift, and the shortfall is a finding.
    short = [sentinel(i + 1, P * r, own=0.95 * P * r) for i, r in enumerate((0.90, 0.80, 1.0))]
    low = analyse([confirmed_ceiling(confirmation), bandwidth_case(), swept, *short])
    assert low["ceiling_own_shape"]["fraction"] == pytest.approx(0.95)
    assert low["ceiling_own_shape"]["ci95"] == pytest.approx([0.95, 0.95])
    assert "ceiling-not-reproduced" in [f["code"] for f in low["findings"]]
    # A steady machine: the sentinels read P, the fraction is 1.0 within its CI, nothing is flagged.
    steady = [sentinel(i + 1, P * r) for i, r in enumerate((1.0, 0.995, 1.005))]
    calm = analyse([confirmed_ceiling(confirmation), bandwidth_case(), *steady])
    assert calm["ceiling_own_shape"]["reproduced"] and calm["ceiling_findings"] == []
    assert calm["ceiling_flops"] == pytest.approx(P) and not calm["findings"]
    # Sentinels stored without own timings: P is still theirs, but there is no own-shape figure.
    bare = analyse([confirmed_ceiling(confirmation), bandwidth_case(), *[sentinel(i + 1, P, own=0) for i in range(3)]])
    assert bare["ceiling_flops"] == pytest.approx(P) and bare["ceiling_own_shape"] is None
    # Two sentinels (a run resumed past its ceiling skips the rest): P is the confirmation's, and the
    # own shape is timed after the sweep instead.
    few = [confirmed_ceiling(confirmation), bandwidth_case(), swept, *slow[:2]]
    assert analyse(few)["ceiling_flops"] == pytest.approx(P) and analyse(few)["ceiling_own_shape"] is None
    (own_case,) = [c for c in GemmSuite().recheck(few, options=GemmOptions()) if c.params["kind"] == "ceiling-shape"]
    assert own_case.params["rounds"] == 3


def test_a_reused_ceiling_keeps_its_p_and_its_sentinels_are_its_fraction() -> None:
    confirmation = [P * r for r in (1.0, 1.01, 0.99)]
    reused = confirmed_ceiling(confirmation)
    reused = CaseResult(suite=reused.suite, key=reused.key, params=reused.params, check=reused.check,
                        metrics={**reused.metrics, "ceiling_from": "20260101-000000-abcd"})
    summary = analyse([reused, bandwidth_case(), *[sentinel(i + 1, P * 0.8) for i in range(3)]])
    assert summary["ceiling_flops"] == pytest.approx(P) and "sentinel_flops" not in summary["ceiling_rounds"]
    own = summary["ceiling_own_shape"]
    assert own["fraction"] == pytest.approx(0.8) and not own["reproduced"]
    assert own["statistic"] == "median own-shape timing over the median of P's rounds"
