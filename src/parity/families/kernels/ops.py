"""Each operation's case: its inputs, torch reference, float64 truth, declared work and check.

``op_case(params, device)`` builds one :class:`OpCase` from a case's params (the shapes and the
seed), and ``op_work`` turns it into the declared ``Work`` the harness times: the torch
reference or a library kernel on the same inputs, checked against the float64 truth after
timing. FLOP and bytes come from ``parity.metrics.kernels`` (valid rows only, causal mask
counted), and the byte convention is stated with them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from parity.families.kernels import fp8_gemm, grouped, mla
from parity.families.kernels.check import LIBRARY_TOLERANCE, OUTPUT_TOLERANCE, compare
from parity.harness.work import Work
from parity.metrics import kernels as formulas

CONVENTION = "minimum traffic: inputs read once, outputs written once (valid rows only)"
OPS = ("fp8_gemm", "grouped_contiguous", "grouped_masked", "mla_decode")


@dataclass(kw_only=True)
class OpCase:
    """One operation on one shape: ``reference(inputs)`` is the torch reference,
    ``output(result)`` the tensor compared, ``truth()`` the float64 ground truth."""

    inputs: dict[str, Any]
    reference: Callable[[dict[str, Any]], Any]
    truth: Callable[[], Any]
    output: Callable[[Any], Any] = lambda result: result
    valid: Any = None
    flop: float
    bytes: float
    out_dtype: str = "bf16"
    metrics: dict[str, Any] = field(default_factory=dict)


def _fp8_case(p: dict[str, Any], device: Any) -> OpCase:
    m, n, k = int(p["m"]), int(p["n"]), int(p["k"])
    inputs = fp8_gemm.make_operands(m, n, k, device=device.torch_device, seed=int(p["seed"]))
    return OpCase(inputs=inputs, reference=fp8_gemm.torch_call, truth=lambda: fp8_gemm.float64_truth(inputs),
                  flop=formulas.block_scaled_gemm_flops(m, n, k), bytes=formulas.block_scaled_gemm_bytes(m, n, k),
                  metrics={"scale_layout": "A per 1x128 group, B per 128x128 block, fp32 scales"})


def _grouped_case(p: dict[str, Any], device: Any, layout: str) -> OpCase:
    import torch

    n, k, groups = int(p["n"]), int(p["k"]), int(p["groups"])
    seed = int(p["seed"])
    if layout == "contiguous":
        group_m = grouped.draw_group_m(groups, int(p["expected_m"]), seed=seed)
        inputs = grouped.make_contiguous(group_m, n, k, align=int(p["align"]), device=device.torch_device,
                                         seed=seed, dtype=torch.bfloat16)
        rows = int(inputs["a"].shape[0])
        computed = sum(end - start for _, start, end in inputs["spans"])
    else:
        max_m = int(p["max_m"])
        group_m = grouped.draw_group_m(groups, int(p["expected_m"]), seed=seed, max_m=max_m)
        inputs = grouped.make_masked(group_m, n, k, max_m=max_m, device=device.torch_device, seed=seed,
                                     dtype=torch.bfloat16)
        rows = computed = groups * max_m
    return OpCase(
        inputs=inputs, reference=lambda x: grouped.torch_call(x, layout),
        truth=lambda: grouped.float64_truth(inputs, layout), valid=grouped.valid_rows(inputs, layout),
        flop=formulas.grouped_gemm_flops(group_m, n, k),
        bytes=formulas.grouped_gemm_bytes(group_m, n, k, layout=layout, rows=rows),
        metrics={"group_m": group_m, "rows": rows, "layout": layout,
                 "reference_computed_flop": 2 * computed * n * k,
                 "note": "work counts valid rows only; the torch reference's own multiplies are "
                         "reference_computed_flop"})


def _mla_case(p: dict[str, Any], device: Any) -> OpCase:
    import torch

    s_q, heads, page = int(p["query_tokens"]), int(p["heads"]), int(p["page"])
    seqlens = mla.draw_seqlens(int(p["batch"]), int(p["mean_seqlen"]), query_tokens=s_q, seed=int(p["seed"]))
    inputs = mla.make_inputs(seqlens, query_tokens=s_q, heads=heads, page=page, device=device.torch_device,
                             seed=int(p["seed"]), dtype=torch.bfloat16)
    table_entries = int(inputs["block_table"].numel())
    shape = {"query_tokens": s_q, "heads": heads, "head_dim": mla.HEAD_DIM, "value_dim": mla.VALUE_DIM}
    return OpCase(
        inputs=inputs, reference=mla.torch_call, truth=lambda: mla.float64_truth(inputs)[0],
        output=lambda result: result[0] if isinstance(result, tuple) else result,
        flop=formulas.mla_decode_flops(seqlens, causal=True, **shape),
        bytes=formulas.mla_decode_bytes(seqlens, table_entries=table_entries, **shape),
        metrics={"seqlens": seqlens, "flop_without_causal_mask": formulas.mla_decode_flops(seqlens, causal=False, **shape),
                 "page": page, "note": "flop counts only the keys the causal mask leaves; "
                                       "flop_without_causal_mask counts every key for every query token"})


def op_case(params: dict[str, Any], device: Any) -> OpCase:
    """The :class:`OpCase` of ``params["op"]``."""
    op = params["op"]
    if op == "fp8_gemm":
        return _fp8_case(params, device)
    if op in ("grouped_contiguous", "grouped_masked"):
        return _grouped_case(params, device, op.removeprefix("grouped_"))
    if op == "mla_decode":
        return _mla_case(params, device)
    raise ValueError(f"unknown kernels operation {op!r}; use one of {', '.join(OPS)}")


def op_work(case: OpCase, *, call: Callable[[], Any], library: str | None, timing: dict[str, Any]) -> Work:
    """Declared work timing ``call``; the check runs it once more on the same inputs and
    compares its output with the float64 truth: the torch reference by relative error with
    the output dtype's tolerance, a library kernel by its own measure and threshold."""
    if library is None:
        measure, tolerance, who = "relative_error", OUTPUT_TOLERANCE[case.out_dtype], "torch reference"
    else:
        measure, tolerance, who = "similarity_diff", LIBRARY_TOLERANCE[library], f"{library}'s own test threshold"

    def check() -> dict[str, Any]:
        verdict = compare(case.output(call()), case.truth(), valid=case.valid, tolerance=tolerance, measure=measure)
        return {**verdict, "tolerance_from": who}

    return Work(call=call, check=check, flop=float(case.flop), bytes=float(case.bytes), bytes_convention=CONVENTION,
                warmup_s=float(timing["warmup_s"]), budget_s=float(timing["budget_s"]), max_samples=200,
                metrics={"work_flop": float(case.flop), "min_traffic_bytes": float(case.bytes),
                         "arithmetic_intensity": case.flop / case.bytes, **case.metrics})
