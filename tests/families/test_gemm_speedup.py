"""Tuned GEMM backends against the baseline: the speedup CI, size buckets, the quick subset,
alternated timing with the winner re-checked, and the backends' reasons for not running."""

from __future__ import annotations

from typing import Any

import pytest

from parity.families.gemm.catalog.shapes import Shape
from parity.families.gemm.speedup_summary import speedup_summary
from parity.metrics.speedup import size_bucket, speedup_distribution
from parity.model.result import CaseResult
from parity.stats.speedup import paired_speedup_ci

FAST = {"warmup_s": 0.002, "budget_s": 0.03, "flush": False, "telemetry": False, "check": True,
        "graph": "off", "max_call_s": 20.0, "max_samples": 60}


def test_paired_speedup_ci_hand_cases() -> None:
    assert paired_speedup_ci([[2, 2], [4, 4]], [[1, 1], [2, 2]]) == (2.0, 2.0, 2.0)
    speedup, low, high = paired_speedup_ci([[2], [3]], [[1], [3]])
    # pooled medians 2.5 / 2; resampled rounds give 2 (round 0 twice), 1 (round 1 twice) or 1.25
    assert speedup == pytest.approx(1.25) and low == pytest.approx(1.0) and high == pytest.approx(2.0)
    with pytest.raises(ValueError, match="same positive number of rounds"):
        paired_speedup_ci([[1.0]], [])


def test_speedup_distribution_and_buckets() -> None:
    dist = speedup_distribution([0.9, 1.0, 1.2, 1.4])
    assert dist == pytest.approx({"n": 4, "median": 1.1, "p25": 0.975, "p75": 1.25, "min": 0.9, "max": 1.4,
                                  "gain_max": 0.4})
    assert size_bucket(2 * 64**3) == "small (<= 2^24 FLOP)"
    assert size_bucket(2.0**24) == "small (<= 2^24 FLOP)"
    assert size_bucket(2 * 512**3) == "medium (<= 2^30 FLOP)"
    assert size_bucket(2 * 2048**3) == "large (> 2^30 FLOP)"


def _result(backend: str, m: int, speedup: float | None, *, error: str | None = None) -> CaseResult:
    params = {"kind": "shape", "backend": backend, "baseline": "torch", "m": m, "n": m, "k": m, "name": f"s{m}",
              "subset": "all 3 shapes"}
    metrics = {} if error else {"speedup": speedup, "speedup_ci95": [speedup * 0.9, speedup * 1.1], "tuning_s": 2.0,
                                "speedup_method": "ratio of medians", "winner": backend}
    return CaseResult(suite="gemm", key=f"bf16/{backend}/{m}", params=params, metrics=metrics,
                      check={} if error else {"passed": True}, error=error)


def test_speedup_summary_by_bucket() -> None:
    results = [_result("compile", 64, 1.4), _result("compile", 128, 1.0), _result("compile", 2048, 0.9),
               _result("compile", 4096, None, error="BackendCompilerFailed: no C++ compiler"),
               CaseResult(suite="gemm", key="bf16/torch/64", params={"kind": "shape", "backend": "torch"})]
    entry = speedup_summary(results)["compile"]
    assert entry["baseline"] == "torch" and len(entry["rows"]) == 4
    assert entry["buckets"]["small (<= 2^24 FLOP)"]["n"] == 2
    assert entry["buckets"]["small (<= 2^24 FLOP)"]["median"] == pytest.approx(1.2)
    assert entry["buckets"]["medium (<= 2^30 FLOP)"] == {"n": 0}
    assert entry["buckets"]["large (> 2^30 FLOP)"]["max"] == pytest.approx(0.9)
    assert entry["overall"]["gain_max"] == pytest.approx(0.4)
    assert entry["tuning_s_total"] == pytest.approx(6.0)
    assert entry["failed"] == [{"key": "bf16/compile/4096", "error": "BackendCompilerFailed: no C++ compiler"}]


def test_quick_subset_of_a_tuned_backend_spans_the_work_range() -> None:
    from parity.families.gemm.suite import spread_by_work, tuned_subset
    from parity.families.gemm.tuned import TorchCompile

    shapes = [Shape(m=d, n=d, k=d, name=f"c{d}", family="square", origin="test") for d in (8, 16, 32, 64, 128, 256, 512)]
    picked = spread_by_work(shapes, 3)
    assert [s.m for s in picked] == [8, 64, 512]
    chosen, note = tuned_subset(TorchCompile(), shapes, quick=True)
    assert len(chosen) == 7 and note.startswith("7 of the 7 quick shapes")
    chosen, note = tuned_subset(TorchCompile(), shapes, quick=False)
    assert len(chosen) == 7 and note == "all 7 shapes"


@pytest.mark.torch
def test_backend_names_and_reasons(monkeypatch: pytest.MonkeyPatch) -> None:
    from parity.families.gemm import tuned
    from parity.families.gemm.backends import TorchMatmul, load_backend
    from parity.families.gemm.dtypes import resolve_dtype
    from parity.families.gemm.options import GemmOptions
    from parity.harness.options import parse_options
    from parity.device import get_device

    cpu = get_device("cpu")
    assert isinstance(load_backend("torch"), TorchMatmul)
    assert parse_options(GemmOptions, {"backends": "torch,compile"}, suite="gemm").backends == ("torch", "compile")
    compile_ = load_backend("compile")
    assert compile_.unavailable_reason(device=cpu, dtype=resolve_dtype("fp8")).startswith("torch.compile's GEMM")
    monkeypatch.setattr(tuned.shutil, "which", lambda name: None)
    assert "needs a C++ compiler" in compile_.unavailable_reason(device=cpu, dtype=resolve_dtype("bf16"))
    assert load_backend("triton").unavailable_reason(device=cpu, dtype=resolve_dtype("bf16")) == (
        "the Triton matmul is compiled for CUDA GPUs; selected cpu")
    assert load_backend("tilelang").unavailable_reason(device=cpu, dtype=resolve_dtype("bf16"))


class _Twin:
    """A baseline stand-in that is torch.matmul under another name."""

    name = "twin"

    def __init__(self, *, wrong: bool = False) -> None:
        from parity.families.gemm.backends import TorchMatmul

        self._inner, self._wrong = TorchMatmul(), wrong

    def unavailable_reason(self, **kwargs: Any) -> None:
        return None

    def prepare(self, a: Any, b: Any, *, dtype: Any) -> Any:
        return self._inner.prepare(a, b, dtype=dtype)

    def run(self, operands: Any) -> Any:
        out = self._inner.run(operands)
        return out.flip(0) if self._wrong else out


def _shape_case(backend: str, m: int, n: int, k: int, dtype: str = "fp32") -> Any:
    from parity.harness.suite import CaseSpec

    params = {"kind": "shape", "dtype": dtype, "backend": backend, "baseline": "twin", "m": m, "n": n, "k": k,
              "name": "t", "family": "user", "origin": "test", **FAST}
    return CaseSpec(suite="gemm", key=f"{dtype}/{backend}/{m}x{n}x{k}", params=params)


@pytest.mark.torch
def test_alternated_timing_records_speedup_and_rechecks_the_winner() -> None:
    from parity.families.gemm.backends import TorchMatmul
    from parity.families.gemm.dtypes import resolve_dtype
    from parity.families.gemm.measure_case import measure_shape
    from parity.device import get_device

    cpu = get_device("cpu")
    result = measure_shape(_shape_case("matmul", 48, 40, 32), device=cpu, dtype=resolve_dtype("fp32"),
                           backend=TorchMatmul(), unavailable=None, ceiling_flops=None, baseline=_Twin(wrong=True))
    m = result.metrics
    assert result.ok and m["speedup_rounds"] == 6
    low, high = m["speedup_ci95"]
    assert low <= m["speedup"] <= high and m["baseline_median_s"] > 0
    assert result.samples["main"].meta["rounds"] == 6 and result.samples["main"].meta["alternated_with"] == "twin"
    assert len(result.samples["main"]) >= 18
    # the winner is re-checked: the broken baseline, when it wins, fails its re-check
    assert m["winner"] in ("matmul", "twin")
    assert m["winner_check"]["passed"] is (m["winner"] == "matmul")


@pytest.mark.slow
@pytest.mark.torch
def test_compile_backend_tunes_times_and_checks_one_shape() -> None:
    from parity.families.gemm.backends import load_backend
    from parity.families.gemm.dtypes import resolve_dtype
    from parity.families.gemm.measure_case import measure_shape
    from parity.device import get_device

    cpu = get_device("cpu")
    backend = load_backend("compile")
    result = measure_shape(_shape_case("compile", 32, 32, 32), device=cpu, dtype=resolve_dtype("fp32"),
                           backend=backend, unavailable=None, ceiling_flops=None, baseline=_Twin())
    assert result.error is None, result.error
    assert result.ok and result.check["relative_error"] < result.check["tolerance"]
    assert result.metrics["tuning_s"] > 0 and result.metrics["speedup"] > 0
    assert result.metrics["winner_check"]["passed"]


@pytest.mark.accelerator
@pytest.mark.cuda
@pytest.mark.torch
def test_triton_autotuned_matmul_on_a_gpu() -> None:
    from parity.families.gemm.backends import load_backend
    from parity.families.gemm.dtypes import resolve_dtype
    from parity.families.gemm.measure_case import measure_shape
    from parity.device import get_device

    gpu = get_device("cuda:0")
    result = measure_shape(_shape_case("triton", 512, 384, 256, dtype="bf16"), device=gpu,
                           dtype=resolve_dtype("bf16"), backend=load_backend("triton"), unavailable=None,
                           ceiling_flops=None, baseline=_Twin())
    assert result.ok, (result.error, result.findings)
    assert result.metrics["tuning_s"] > 0


def test_speedup_figures_per_bucket() -> None:
    from parity.families.gemm.figures import speedup_figures

    speedups = speedup_summary([_result("compile", 64, 1.4), _result("compile", 128, 1.0)])
    figures = {f.scope["bucket"]: f for f in speedup_figures(speedups, {"dtype": "bf16", "device": "cpu"})}
    assert figures["small (<= 2^24 FLOP)"].value == pytest.approx(1.2)
    assert figures["small (<= 2^24 FLOP)"].best == pytest.approx(1.4)
    assert figures["large (> 2^30 FLOP)"].value is None and figures["large (> 2^30 FLOP)"].note
    assert figures["all"].name == "gemm.speedup.compile" and figures["all"].scope["baseline"] == "torch"
