"""The GEMM suite on the real CPU: correctness checks, dtypes, error rows, case listing."""

from __future__ import annotations

from typing import Any

import pytest

from parity.families.gemm.options import GemmOptions
from parity.families.gemm.suite import GemmSuite
from parity.families.gemm.backends import TorchMatmul, load_backend
from parity.families.gemm.dtypes import resolve_dtype
from parity.families.gemm.measure_case import measure_shape
from parity.harness.suite import CaseSpec
from parity.model.errors import ParityError

pytestmark = pytest.mark.torch

FAST = {"warmup_s": 0.002, "budget_s": 0.01, "flush": False, "telemetry": False, "check": True,
        "graph": "off", "max_call_s": 20.0, "max_samples": 50}


@pytest.fixture(scope="module")
def cpu() -> Any:
    from parity.device import get_device

    return get_device("cpu")


def case(m: int, n: int, k: int, *, dtype: str = "bf16", backend: str = "matmul", **extra: Any) -> CaseSpec:
    params = {"kind": "shape", "dtype": dtype, "backend": backend, "m": m, "n": n, "k": k,
              "name": "t", "family": "user", "origin": "test", **FAST, **extra}
    return CaseSpec(suite="gemm", key=f"{dtype}/{backend}/{m}x{n}x{k}", params=params)


class TransposedResult(TorchMatmul):
    """A broken kernel: returns the right values in the wrong places."""

    name = "transposed"

    def run(self, operands: Any) -> Any:
        out = super().run(operands)
        return out.flip(0)


class Exploding(TorchMatmul):
    name = "exploding"

    def run(self, operands: Any) -> Any:
        raise RuntimeError("kernel launch failed: no kernel image for this shape")


def test_dtype_names_and_tolerances() -> None:
    assert resolve_dtype("BF16").name == "bf16"
    assert resolve_dtype("bfloat16").name == "bf16"
    assert resolve_dtype("half").name == "fp16"
    assert resolve_dtype("fp8_e4m3").name == "fp8"
    with pytest.raises(ParityError, match="unknown gemm dtype 'int3'"):
        resolve_dtype("int3")
    bf16, fp32 = resolve_dtype("bf16"), resolve_dtype("fp32")
    assert bf16.tolerance(4096) == pytest.approx(8 * 2**-8 + 2 * 2**-24 * 64)
    assert fp32.tolerance(64) < 2e-6 < bf16.tolerance(64)


@pytest.mark.parametrize("dtype", ["bf16", "fp16", "fp32"])
@pytest.mark.parametrize("backend", ["matmul", "linear"])
def test_real_shapes_pass_their_check(cpu: Any, dtype: str, backend: str) -> None:
    result = GemmSuite().measure(case(33, 65, 127, dtype=dtype, backend=backend), device=cpu, options=GemmOptions(), state={})
    assert result.error is None, result.error
    assert result.ok, result.findings
    assert result.check["passed"] and result.check["relative_error"] < result.check["tolerance"]
    assert result.metrics["work_flop"] == 2 * 33 * 65 * 127
    assert result.metrics["achieved_flops"] == pytest.approx(result.metrics["work_flop"] / result.metrics["median_s"])
    assert len(result.samples["main"]) >= 5


def test_a_wrong_result_flags_the_row(cpu: Any) -> None:
    dtype = resolve_dtype("bf16")
    result = measure_shape(case(64, 48, 32, backend="transposed"), device=cpu, dtype=dtype,
                           backend=TransposedResult(), unavailable=None, ceiling_flops=None)
    assert not result.check["passed"] and result.check["relative_error"] > 0.5
    assert not result.ok
    wrong = [f for f in result.findings if f.code == "wrong-result"]
    assert wrong and wrong[0].severity.value == "error"


def test_backend_exception_is_an_error_row(cpu: Any) -> None:
    result = measure_shape(case(16, 16, 16, backend="exploding"), device=cpu, dtype=resolve_dtype("bf16"),
                           backend=Exploding(), unavailable=None, ceiling_flops=None)
    assert result.error and "no kernel image" in result.error
    assert [f.code for f in result.findings] == ["backend-error"]
    assert result.metrics["work_flop"] == 2 * 16**3  # the row still says what it would have done


def test_unsupported_dtype_and_backend_are_rows_not_crashes(cpu: Any) -> None:
    suite = GemmSuite()
    tf32 = suite.measure(case(16, 16, 16, dtype="tf32"), device=cpu, options=GemmOptions(), state={})
    assert tf32.error and "tf32 mode is not available on cpu" in tf32.error
    assert tf32.findings[0].code == "unsupported-dtype"
    fp8_linear = suite.measure(case(16, 16, 16, dtype="fp8", backend="linear"), device=cpu, options=GemmOptions(), state={})
    assert fp8_linear.findings[0].code in ("unsupported-backend", "unsupported-dtype")


def test_fp8_through_scaled_matmul_where_supported(cpu: Any) -> None:
    result = GemmSuite().measure(case(32, 48, 64, dtype="fp8"), device=cpu, options=GemmOptions(), state={})
    if result.error is not None:  # a torch build without CPU fp8 says so in a row
        assert result.findings[0].code in ("unsupported-dtype", "backend-error")
        return
    assert result.ok and result.check["passed"]
    assert result.metrics["min_traffic_bytes"] == (32 * 64 + 64 * 48) * 1 + 32 * 48 * 2


def test_shape_too_large_for_memory_is_an_error_row(cpu: Any) -> None:
    huge = 2**22
    result = GemmSuite().measure(case(huge, huge, huge), device=cpu, options=GemmOptions(), state={})
    assert result.error and "GiB" in result.error
    assert result.findings[0].code == "out-of-memory"


def test_shape_too_slow_at_the_ceiling_is_skipped(cpu: Any) -> None:
    result = measure_shape(case(4096, 4096, 4096, max_call_s=1.0), device=cpu, dtype=resolve_dtype("bf16"),
                           backend=TorchMatmul(), unavailable=None, ceiling_flops=1e9)
    assert result.findings[0].code == "too-slow" and "137 s" in result.error


def test_cases_list_ceiling_bandwidth_then_shapes(cpu: Any) -> None:
    cases = GemmSuite().cases(device=cpu, quick=True, options=GemmOptions(backends=("matmul", "linear")))
    assert [c.key for c in cases[:2]] == ["ceiling/bf16", "bandwidth"]
    shapes = [c for c in cases[2:] if c.params["kind"] == "shape"]
    sentinels = [c for c in cases[2:] if c.params["kind"] == "ceiling-sentinel"]
    assert len(shapes) + len(sentinels) == len(cases) - 2
    assert len(shapes) % 2 == 0 and len({c.key for c in cases}) == len(cases)
    assert all(c.cost > 0.1 for c in shapes)
    # As many sentinels as the CPU ceiling has confirmation rounds, spread through the sweep, never at an end.
    assert [c.key for c in sentinels] == [f"ceiling/bf16/sentinel-{i}" for i in range(1, 8)]
    where = [i for i, c in enumerate(cases) if c.params["kind"] == "ceiling-sentinel"]
    gaps = [b - a for a, b in zip(where, where[1:])]
    assert where[0] > 2 and where[-1] < len(cases) - 1 and max(gaps) - min(gaps) <= 1
    with pytest.raises(ParityError, match="unknown gemm backend 'cublas'"):
        GemmSuite().cases(device=cpu, quick=True, options=GemmOptions(backends=("cublas",)))


PLUGIN = """
import torch


class DoubledMatmul:
    \"\"\"A one-file backend: computes (2A) @ B / 2 to show the plugin interface.\"\"\"

    name = "doubled"

    def unavailable_reason(self, *, device, dtype):
        return None

    def prepare(self, a, b, *, dtype):
        return a * 2, b

    def run(self, operands):
        a, b = operands
        return torch.matmul(a, b) / 2
"""


def test_one_file_plugin_backend(tmp_path: Any, monkeypatch: pytest.MonkeyPatch, cpu: Any) -> None:
    (tmp_path / "my_gemm_plugin.py").write_text(PLUGIN)
    monkeypatch.syspath_prepend(str(tmp_path))
    backend = load_backend("my_gemm_plugin:DoubledMatmul")
    assert backend.name == "doubled"
    result = measure_shape(case(40, 24, 56, backend="my_gemm_plugin:DoubledMatmul"), device=cpu,
                           dtype=resolve_dtype("fp32"), backend=backend, unavailable=None, ceiling_flops=None)
    assert result.ok and result.check["passed"], result.findings
    with pytest.raises(ParityError, match="cannot be loaded"):
        load_backend("my_gemm_plugin:Missing")
    with pytest.raises(ParityError, match="unknown gemm backend"):
        load_backend("no-such-backend")


QUICK_TIMING = {"warmup_s": 0.005, "budget_s": 0.02, "flush": True, "telemetry": False, "check": True,
                "graph": "off", "max_call_s": 20.0, "max_samples": 50}


def test_the_ceilings_own_shape_is_timed_in_pairs_as_the_sweep_times_shapes(cpu: Any, monkeypatch: Any) -> None:
    from parity.families.gemm.measure_case import measure_ceiling_shape

    flushes = []
    real_flush = cpu.flush_cache
    monkeypatch.setattr(cpu, "flush_cache", lambda: (flushes.append(1), real_flush()))
    spec = CaseSpec(suite="gemm", key="ceiling/fp32/own-shape",
                    params={**QUICK_TIMING, "kind": "ceiling-shape", "dtype": "fp32", "backend": "matmul",
                            "ceiling_budget_s": 1.0, "rounds": 3, "index": 0, "m": 48, "n": 32, "k": 16})
    result = measure_ceiling_shape(spec, device=cpu, dtype=resolve_dtype("fp32"), unavailable=None)
    assert result.ok and result.check["passed"]
    metrics = result.metrics
    assert len(metrics["rounds_flops"]) == 3 and len(metrics["own_flops"]) == 3 and min(metrics["own_flops"]) > 0
    assert metrics["median_flops"] == sorted(metrics["rounds_flops"])[1]
    # Alternating order, in the order the samples were taken.
    assert metrics["orders"] == ["round-first", "shape-first", "round-first"]
    assert list(result.samples) == ["round1", "own1", "own2", "round2", "round3", "own3"]
    # Both halves flush before their calls, as the sweep does; told not to, neither does.
    assert len(flushes) >= 2 * 3 * 3
    flushes.clear()
    unflushed = CaseSpec(suite="gemm", key=spec.key, params={**spec.params, "flush": False, "index": 1})
    again = measure_ceiling_shape(unflushed, device=cpu, dtype=resolve_dtype("fp32"), unavailable=None)
    assert again.ok and again.metrics["orders"][0] == "shape-first" and flushes == []
    refused = measure_ceiling_shape(spec, device=cpu, dtype=resolve_dtype("fp32"), unavailable="no fp32 here")
    assert not refused.ok and refused.findings[0].code == "unsupported-dtype"


def test_sentinels_are_spread_evenly_between_cases() -> None:
    from parity.families.gemm.suite import spread_between

    cases = [CaseSpec(suite="gemm", key=f"s{i}") for i in range(8)]
    marks = [CaseSpec(suite="gemm", key=f"x{j}") for j in range(2)]
    assert [c.key for c in spread_between(cases, marks)] == ["s0", "s1", "x0", "s2", "s3", "s4", "s5", "x1", "s6", "s7"]
    assert spread_between(cases, []) == cases
    assert [c.key for c in spread_between([], marks)] == ["x0", "x1"]


def test_a_sentinel_times_one_round_of_the_ceilings_shape_from_the_state(cpu: Any) -> None:
    suite = GemmSuite()
    options = GemmOptions(dtype="fp32")
    spec = CaseSpec(suite="gemm", key="ceiling/fp32/sentinel-1",
                    params={**QUICK_TIMING, "kind": "ceiling-sentinel", "dtype": "fp32", "backend": "matmul",
                            "ceiling_budget_s": 1.0, "rounds": 1, "index": 0})
    skipped = suite.measure(spec, device=cpu, options=options, state={})
    assert skipped.ok and skipped.findings[0].code == "sentinel-skipped" and "rounds_flops" not in skipped.metrics
    state = {(cpu.name, "fp32"): {"flops": 1e9, "dims": (48, 32, 16)}}
    timed = suite.measure(spec, device=cpu, options=options, state=state)
    assert timed.ok and timed.check["passed"]
    assert (timed.params["m"], timed.params["n"], timed.params["k"]) == (48, 32, 16)
    assert len(timed.metrics["rounds_flops"]) == 1 and timed.metrics["rounds_flops"][0] > 0
    assert len(timed.metrics["own_flops"]) == 1 and timed.metrics["own_flops"][0] > 0


def test_the_sweeps_ceiling_search_is_not_compared_as_a_case_and_a_kernels_ceiling_is(cpu: Any) -> None:
    """The GEMM sweep's P is made after the search (its sentinels' rounds, or a raise), so the
    search's case says it is not compared and where P is (the figure gemm.ceiling); the same
    search in the kernels suite is that suite's P, compared as its case."""
    from parity.families.gemm.measure_case import SEARCH_NOT_COMPARED, measure_ceiling

    spec = CaseSpec(suite="gemm", key="ceiling/fp32",
                    params={**QUICK_TIMING, "kind": "ceiling", "dtype": "fp32", "backend": "matmul",
                            "ceiling_budget_s": 0.2, "rounds": 1, "flush": False})
    searched = GemmSuite().measure(spec, device=cpu, options=GemmOptions(dtype="fp32"), state={})
    assert searched.ok and searched.metrics["ceiling_flops"] > 0
    assert searched.metrics["not_compared"] == SEARCH_NOT_COMPARED and "headline_metric" not in searched.metrics
    final = measure_ceiling(spec, device=cpu, dtype=resolve_dtype("fp32"), unavailable=None)
    assert final.metrics["headline_metric"] == "ceiling_flops" and "not_compared" not in final.metrics
