"""The ``overlap`` suite: a MoE exchange run alone, a compute kernel run alone, and both at once.

"Communication hides under compute" as a measured figure: per kernel (a GEMM, bound by the
matrix or vector units, and a large copy, bound by memory bandwidth) every rank times, each as
the maximum over ranks per iteration (``parity.timing.ranks``, an iteration started at a
barrier):

1. the exchange (MoE dispatch, ``parity.families.moe.exchange``) alone;
2. the kernel alone;
3. both together: the kernel in a second thread, the exchange in this one, each timing itself,
   and the wall time of the pair.

It reports each one's slowdown together against alone and the overlap achieved
(``parity.metrics.interference``). Threads on every device: on the CPU they share the cores and
the memory bandwidth, which is the point; on an accelerator the kernel's thread synchronizes
the device to time itself, so its time there includes the exchange's kernels when they share
the device queue (said in each row's ``method``). Both results are checked after the run
together: the exchange byte for byte, the kernel against its result alone.
"""

from __future__ import annotations

import statistics
from dataclasses import asdict, dataclass
from typing import Any

from parity.ranks.comm_group import agree, close_comm_group, open_comm_group
from parity.families.moe.case import dispatch_work, exchange_bytes
from parity.families.overlap.kernels import make_kernel
from parity.families.moe.routing import make_routing
from parity.harness.options import option
from parity.harness.suite import CaseSpec, SuiteBase
from parity.metrics.interference import overlap_achieved, slowdown
from parity.model.errors import ParityError
from parity.model.figure import Figure
from parity.model.findings import Finding, Severity
from parity.model.result import CaseResult


@dataclass(frozen=True, kw_only=True)
class OverlapOptions:
    """The options of the ``overlap`` suite (the exchange's shape, the kernels' sizes)."""

    kernels: tuple[str, ...] = option(("gemm", "copy"), help="compute kernels to overlap with",
                                      choices=("gemm", "copy"))
    tokens: int = option(128, help="tokens per rank of the exchange", minimum=1)
    hidden: int = option(2048, help="hidden size of the exchange", minimum=1)
    top_k: int = option(8, help="experts per token", minimum=1)
    experts: int = option(64, help="experts in all, a multiple of the rank count", minimum=1)
    dispatch_dtype: str = option("bf16", help="dispatch row format", choices=("bf16", "fp8"))
    gemm_n: int = option(512, help="GEMM size: n x n times n x n", minimum=1)
    copy_bytes: int = option(32 * 2**20, help="bytes of the copy's source", minimum=4)
    iterations: int = option(10, help="timed iterations of each of the three runs", minimum=1)
    seed: int = option(0, help="seed of routing and token values")


class OverlapSuite(SuiteBase):
    """A MoE exchange against a GEMM and a copy on the same device (module docstring)."""

    name = "overlap"
    description = "MoE exchange concurrent with a GEMM and a copy: slowdowns and overlap achieved"
    options_type = OverlapOptions

    def setup(self, *, device: Any, options: OverlapOptions) -> dict[str, Any]:
        group = open_comm_group(device)
        try:
            if options.experts % group.world_size:
                raise ParityError(f"overlap: {options.experts} experts do not split over {group.world_size} "
                                  "ranks; set overlap.experts to a multiple of the rank count")
            agree(group, asdict(options), what="overlap configuration")
            routing = make_routing(world=group.world_size, tokens=options.tokens, top_k=options.top_k,
                                   num_experts=options.experts, seed=options.seed)
            agree(group, routing.digest, what="routing (digest)")
        except BaseException:
            close_comm_group(group)
            raise
        shape = {"tokens": options.tokens, "hidden": options.hidden, "top_k": options.top_k,
                 "experts": options.experts}
        return {"group": group, "shape": shape, "routing": routing, "device": device,
                "bytes": exchange_bytes(routing, world=group.world_size, hidden=options.hidden)}

    def teardown(self, state: dict[str, Any] | None) -> None:
        close_comm_group(state["group"] if state else None)

    def cases(self, *, device: Any, quick: bool, options: OverlapOptions) -> list[CaseSpec]:
        return [CaseSpec(suite=self.name, key=f"dispatch+{kernel}", params={"kernel": kernel})
                for kernel in options.kernels]

    def measure(self, case: CaseSpec, *, device: Any, options: OverlapOptions, state: dict[str, Any]) -> CaseResult:
        exchange = dispatch_work(state, dtype=options.dispatch_dtype, seed=options.seed, iterations=1, warmup_s=0.0)
        kernel = make_kernel(case.params["kernel"], device=device, gemm_n=options.gemm_n,
                             copy_bytes=options.copy_bytes)
        timed = time_together(exchange.call, kernel.call, group=state["group"], iterations=options.iterations)
        return overlap_result(case, timed, exchange_check=exchange.check(), kernel_check=kernel.check(),
                              metrics={**exchange.metrics, "kernel": kernel.name, **kernel.metrics})

    def summarize(self, results: list[CaseResult], *, options: OverlapOptions) -> dict[str, Any]:
        rows = []
        for r in results:
            row = {"key": r.key, "ok": r.ok, "error": r.error, **{k: r.metrics.get(k) for k in OVERLAP_KEYS}}
            rows.append(row)
        first = next((r.metrics for r in results if r.metrics), {})
        return {"rows": rows, "ok": all(r["ok"] for r in rows), "world_size": first.get("world_size"),
                "backend": first.get("backend")}

    def figures(self, summary: dict[str, Any]) -> list[Figure]:
        figures = []
        for row in summary.get("rows", []):
            scope = {"case": row["key"], "world_size": summary.get("world_size"), "backend": summary.get("backend")}
            for name in ("exchange_slowdown", "kernel_slowdown", "overlap_fraction"):
                if row.get(name) is not None:
                    figures.append(Figure(name=f"overlap.{name}", value=row[name], unit="count",
                                          method="medians of the max over ranks per iteration; "
                                                 "slowdown = together/alone, overlap = (a + b - both)/min(a, b)",
                                          scope=scope))
        return figures


BARRIER_TIMEOUT_S = 60.0  # how long each run's barrier waits for a missing rank
OVERLAP_KEYS = ("kernel", "exchange_alone_s", "kernel_alone_s", "exchange_together_s", "kernel_together_s",
                "both_s", "exchange_slowdown", "kernel_slowdown", "overlap_fraction")


def time_together(exchange: Any, kernel: Any, *, group: Any, iterations: int) -> dict[str, Any]:
    """The five series of the protocol (module docstring), each a ``Samples`` of the max over
    ranks. The three runs are interleaved, iteration by iteration (alone, alone, together), so a
    drift of the machine's speed falls on all three alike; each run starts at a barrier."""
    import threading
    import time

    from parity.ranks.gather import barrier
    from parity.timing.ranks import max_over_ranks

    mine: dict[str, list[float]] = {name: [] for name in
                                    ("exchange_alone", "kernel_alone", "both", "exchange_together", "kernel_together")}
    failure: list[BaseException] = []

    def timed(name: str, fn: Any) -> None:
        begin = time.perf_counter()
        try:
            fn()
            group.device.synchronize()
        except BaseException as exc:  # noqa: BLE001 - raised again on this rank's main thread
            failure.append(exc)
        mine[name].append(time.perf_counter() - begin)

    def both() -> None:
        worker = threading.Thread(target=timed, args=("kernel_together", kernel))
        worker.start()
        timed("exchange_together", exchange)
        worker.join()

    exchange()
    kernel()
    for _ in range(iterations):
        for name, fn in (("exchange_alone", exchange), ("kernel_alone", kernel), ("both", both)):
            group.device.synchronize()
            barrier(group, timeout_s=BARRIER_TIMEOUT_S)
            timed(name, fn)
            if failure:
                raise failure[0]
    return {name: max_over_ranks(values, group=group, rank_method="host-clock") for name, values in mine.items()}


def overlap_result(case: CaseSpec, timed: dict[str, Any], *, exchange_check: dict[str, Any],
                   kernel_check: dict[str, Any], metrics: dict[str, Any]) -> CaseResult:
    """The stored row: every series' samples, the medians, slowdowns and overlap, both checks."""
    median = {f"{name}_s": statistics.median(s.values_s) for name, s in timed.items()}
    figures = {"exchange_slowdown": slowdown(median["exchange_together_s"], median["exchange_alone_s"]),
               "kernel_slowdown": slowdown(median["kernel_together_s"], median["kernel_alone_s"]),
               "overlap_fraction": overlap_achieved(median["exchange_alone_s"], median["kernel_alone_s"],
                                                    median["both_s"])}
    passed = bool(exchange_check.get("passed")) and bool(kernel_check.get("passed"))
    check = {"passed": passed, "method": f"exchange: {exchange_check.get('method')}; kernel: "
                                         f"{kernel_check.get('method')}", "wrong": exchange_check.get("wrong")}
    findings = []
    if not passed:
        findings.append(Finding(code="wrong-result", severity=Severity.ERROR,
                                message="a result computed during the overlapped run is wrong",
                                hint="the times of this case are not to be quoted"))
    if any(v is not None and v < 1.0 for v in (figures["exchange_slowdown"], figures["kernel_slowdown"])):
        findings.append(Finding(code="faster-together", severity=Severity.WARNING,
                                message="a kernel ran faster beside the exchange than alone, so the times "
                                        "alone are not steady and the overlap is not to be quoted",
                                hint="run with more iterations on a quiet machine"))
    if figures["overlap_fraction"] is not None and figures["overlap_fraction"] < 0:
        findings.append(Finding(code="negative-overlap", severity=Severity.WARNING,
                                message="running both together took longer than one after the other",
                                hint="the two contend for the same cores or memory; see the slowdowns"))
    samples = {("main" if name == "both" else name): s for name, s in timed.items()}
    return CaseResult(suite=case.suite, key=case.key, params=dict(case.params), samples=samples,
                      metrics={**metrics, **median, **figures}, check=check, findings=tuple(findings))
