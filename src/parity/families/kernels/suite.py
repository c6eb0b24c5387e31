"""The ``kernels`` suite: DeepSeek's kernel-library operations through torch references and,
where installed and runnable, the libraries' own kernels on the same inputs.

Cases, in order: the compute ceiling ``P`` for bf16 (and fp8 on accelerators), the bandwidth
ceiling ``B`` (the gemm suite's protocols, shorter budgets), then per operation and shape the
torch reference ``<op>/torch/<shape>`` and each runnable library kernel ``<op>/<library>/<shape>``.
Every torch case records, in ``params["libraries"]``, each library's reason for not running
here (or the key it was measured under), so the summary says per library why it did not run.
"""

from __future__ import annotations

import importlib
from typing import Any

from parity.families.gemm.dtypes import resolve_dtype, unavailable_reason
from parity.families.gemm.measure_case import measure_bandwidth, measure_ceiling
from parity.families.kernels.libraries import LIBRARY_KERNELS, library_kernel, library_reason
from parity.families.kernels.ops import op_case, op_work
from parity.families.kernels.options import KernelsOptions
from parity.families.kernels.shapes import FULL, QUICK, shape_tag
from parity.families.kernels.figures import kernels_figures
from parity.families.kernels.summary import KernelsSummary, summarize_kernels
from parity.harness.suite import CaseSpec, SuiteBase
from parity.model.figure import Figure
from parity.model.result import CaseResult

SUITE = "kernels"
TIMING = {True: {"warmup_s": 0.01, "budget_s": 0.05}, False: {"warmup_s": 0.025, "budget_s": 0.2}}
# ETA: a case's expected seconds (CaseSpec.cost) are its warm-up and budget plus set-up and check
CASE_OVERHEAD_S = 0.05
BANDWIDTH_S = 0.5  # the shared bandwidth ceiling (read once a process)
CEILING_BUDGET_S = {("cpu", True): 3.0, ("cpu", False): 20.0, ("accel", True): 10.0, ("accel", False): 30.0}


def ceiling_dtypes(device_type: str) -> tuple[str, ...]:
    """bf16 everywhere; fp8 too on accelerators (a CPU emulates fp8 matmuls)."""
    return ("bf16",) if device_type == "cpu" else ("bf16", "fp8")


class KernelsSuite(SuiteBase):
    """``parity kernels`` / ``parity run --suite kernels``; state: the ceilings measured so far."""

    name = SUITE
    description = "block-scaled fp8 GEMM, grouped GEMMs, MLA decode: torch references and library kernels"
    options_type = KernelsOptions

    def cases(self, *, device: Any, quick: bool, options: KernelsOptions) -> list[CaseSpec]:
        kind = "cpu" if device.type == "cpu" else "accel"
        budget = options.ceiling_budget_s or CEILING_BUDGET_S[(kind, quick)]
        cases = [CaseSpec(suite=SUITE, key=f"ceiling/{dtype}", cost=budget,
                          params={"kind": "ceiling", "dtype": dtype, "backend": "matmul", "ceiling_budget_s": budget})
                 for dtype in ceiling_dtypes(device.type)]
        cases.append(CaseSpec(suite=SUITE, key="bandwidth", cost=BANDWIDTH_S, params={"kind": "bandwidth"}))
        for op in options.ops:
            for shape in (QUICK if quick else FULL)[op]:
                cases += self._op_cases(op, shape, device=device, options=options, quick=quick)
        return cases

    def _op_cases(self, op: str, shape: dict[str, Any], *, device: Any, options: KernelsOptions,
                  quick: bool) -> list[CaseSpec]:
        tag = shape_tag(op, shape)
        base = {"kind": "op", "op": op, "seed": options.seed, **shape, **TIMING[quick]}
        cost = TIMING[quick]["warmup_s"] + TIMING[quick]["budget_s"] + CASE_OVERHEAD_S
        if op == "mla_decode":
            base["value_dim"] = 512
        reasons: dict[str, str] = {}
        extra = []
        for kernel in LIBRARY_KERNELS[op]:
            why = (library_reason(kernel, device_type=device.type, device_name=device.name)
                   if options.libraries else "library kernels were not asked for (kernels.libraries=false)")
            if why is None:
                key = f"{op}/{kernel.library}/{tag}"
                reasons[kernel.library] = f"measured as {key}"
                extra.append(CaseSpec(suite=SUITE, key=key, cost=cost, params={**base, "impl": kernel.library}))
            else:
                reasons[kernel.library] = why
        torch_case = CaseSpec(suite=SUITE, key=f"{op}/torch/{tag}", cost=cost,
                              params={**base, "impl": "torch", "libraries": reasons})
        return [torch_case, *extra]

    def setup(self, *, device: Any, options: KernelsOptions) -> dict[str, float]:
        return {}

    def measure(self, case: CaseSpec, *, device: Any, options: KernelsOptions, state: dict[str, float]) -> Any:
        p = case.params
        if p["kind"] == "bandwidth":
            return measure_bandwidth(case, device=device)
        if p["kind"] == "ceiling":
            dtype = resolve_dtype(p["dtype"])
            result = measure_ceiling(case, device=device, dtype=dtype, unavailable=unavailable_reason(dtype, device))
            if result.error is None:
                state[dtype.name] = float(result.metrics["ceiling_flops"])
            return result
        built = op_case(p, device)
        if p["impl"] == "torch":
            return op_work(built, call=lambda: built.reference(built.inputs), library=None, timing=p)
        kernel = library_kernel(p["op"], p["impl"])
        prepared = kernel.prepare(importlib.import_module(kernel.module), built.inputs, p)
        return op_work(built, call=lambda: kernel.call(prepared), library=kernel.library, timing=p)

    def summarize(self, results: list[CaseResult], *, options: KernelsOptions) -> KernelsSummary:
        return summarize_kernels(results)

    def figures(self, summary: KernelsSummary | dict[str, Any]) -> list[Figure]:
        return kernels_figures(summary)
