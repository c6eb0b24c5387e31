"""The ``overlap`` suite: a MoE exchange run alone, a compute kernel run alone, and both at once.

"Communication hides under compute" as a measured figure: per kernel (a GEMM, bound by the
matrix or vector units, and a large copy, bound by memory bandwidth) each case is declared work
timed by the harness with the together-and-alone strategy (``parity.timing.together``): the
exchange (MoE dispatch, ``parity.families.moe.exchange``) alone, the kernel alone, and both
together (the kernel in a second thread), interleaved iteration by iteration, each as the
maximum over ranks per iteration (an iteration started at a barrier).

It reports each one's slowdown together against alone and the overlap achieved
(``parity.metrics.interference``, from the medians; ``interference`` below). On an accelerator
the kernel's thread synchronizes the device to time itself, so its time there includes the
exchange's kernels when they share the device queue. Both results are checked after the run
together: the exchange byte for byte, the kernel against its result alone.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict
from typing import Any

from parity.families.moe.case import dispatch_work, exchange_bytes
from parity.families.moe.routing import make_routing
from parity.families.overlap.figures import overlap_figures
from parity.families.overlap.kernels import make_kernel
from parity.families.overlap.options import OverlapOptions
from parity.families.overlap.summary import OverlapSummary, summarize_overlap
from parity.harness.strategies import TogetherAndAlone
from parity.harness.suite import CaseSpec, SuiteBase
from parity.harness.work import Work, one_rank_findings
from parity.metrics.interference import overlap_achieved, slowdown
from parity.model.errors import ParityError
from parity.model.figure import Figure
from parity.model.findings import Finding, Severity
from parity.model.result import CaseResult
from parity.ranks.gather import agree
from parity.ranks.group import close_group, open_group

# ETA: expected seconds of a case on a CPU (CaseSpec.cost; 0.05-0.07 s measured on a 2-core host)
CASE_S = 0.05


class OverlapSuite(SuiteBase):
    """A MoE exchange against a GEMM and a copy on the same device (module docstring)."""

    name = "overlap"
    description = "MoE exchange concurrent with a GEMM and a copy: slowdowns and overlap achieved"
    options_type = OverlapOptions

    def setup(self, *, device: Any, options: OverlapOptions) -> dict[str, Any]:
        group = open_group(device)
        try:
            if options.experts % group.world_size:
                raise ParityError(f"overlap: {options.experts} experts do not split over {group.world_size} "
                                  "ranks; set overlap.experts to a multiple of the rank count")
            agree(group, asdict(options), what="overlap configuration")
            routing = make_routing(world=group.world_size, tokens=options.tokens, top_k=options.top_k,
                                   num_experts=options.experts, seed=options.seed)
            agree(group, routing.digest, what="routing (digest)")
        except BaseException:
            close_group(group)
            raise
        shape = {"tokens": options.tokens, "hidden": options.hidden, "top_k": options.top_k,
                 "experts": options.experts}
        return {"group": group, "shape": shape, "routing": routing, "device": device,
                "bytes": exchange_bytes(routing, world=group.world_size, hidden=options.hidden)}

    def teardown(self, state: dict[str, Any] | None) -> None:
        close_group(state["group"] if state else None)

    def cases(self, *, device: Any, quick: bool, options: OverlapOptions) -> list[CaseSpec]:
        return [CaseSpec(suite=self.name, key=f"dispatch+{kernel}", params={"kernel": kernel}, cost=CASE_S)
                for kernel in options.kernels]

    def measure(self, case: CaseSpec, *, device: Any, options: OverlapOptions, state: dict[str, Any]) -> Work:
        exchange = dispatch_work(state, dtype=options.dispatch_dtype, seed=options.seed, iterations=1, warmup_s=0.0)
        kernel = make_kernel(case.params["kernel"], device=device, gemm_n=options.gemm_n,
                             copy_bytes=options.copy_bytes)

        def check() -> dict[str, Any]:
            return both_checks(exchange.check(), kernel.check())

        strategy = TogetherAndAlone(companion=kernel.call, iterations=options.iterations,
                                      names=("exchange", "kernel"), derive=interference)
        return Work(call=exchange.call, check=check, strategy=strategy, flush_cache=False,
                    findings=one_rank_findings(state["group"].world_size),
                    metrics={**exchange.metrics, "kernel": kernel.name, **kernel.metrics})

    def summarize(self, results: list[CaseResult], *, options: OverlapOptions) -> OverlapSummary:
        return summarize_overlap(results)

    def figures(self, summary: OverlapSummary) -> list[Figure]:
        return overlap_figures(summary)


def interference(medians: Mapping[str, float]) -> tuple[dict[str, Any], tuple[Finding, ...]]:
    """The slowdowns and the overlap achieved from the medians of the five series, s, and the
    findings they call for (a kernel faster together than alone; both together slower than one
    after the other)."""
    figures = {"exchange_slowdown": slowdown(medians["exchange_together_s"], medians["exchange_alone_s"]),
               "kernel_slowdown": slowdown(medians["kernel_together_s"], medians["kernel_alone_s"]),
               "overlap_fraction": overlap_achieved(medians["exchange_alone_s"], medians["kernel_alone_s"],
                                                    medians["both_s"])}
    findings = []
    if any(v is not None and v < 1.0 for v in (figures["exchange_slowdown"], figures["kernel_slowdown"])):
        findings.append(Finding(code="faster-together", severity=Severity.WARNING,
                                message="a kernel ran faster beside the exchange than alone, so the times "
                                        "alone are not steady and the overlap is not to be quoted",
                                hint="run with more iterations on a quiet machine"))
    if figures["overlap_fraction"] is not None and figures["overlap_fraction"] < 0:
        findings.append(Finding(code="negative-overlap", severity=Severity.WARNING,
                                message="running both together took longer than one after the other",
                                hint="the two contend for the same cores or memory; see the slowdowns"))
    return figures, tuple(findings)


def both_checks(exchange_check: dict[str, Any], kernel_check: dict[str, Any]) -> dict[str, Any]:
    """The case's check: the exchange's and the kernel's, both after the run together."""
    passed = bool(exchange_check.get("passed")) and bool(kernel_check.get("passed"))
    return {"passed": passed, "method": f"exchange: {exchange_check.get('method')}; kernel: "
                                        f"{kernel_check.get('method')}", "wrong": exchange_check.get("wrong")}
