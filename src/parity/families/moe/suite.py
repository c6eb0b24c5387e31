"""The ``moe`` suite: expert-parallel dispatch and combine, in every labelled byte convention.

Presets mirror DeepEP's tests and its Ascend port's published configuration; ``custom`` takes
``tokens``, ``hidden``, ``top_k`` and ``experts`` (each of which also overrides a preset).
Routing is made from ``seed`` (uniform, or Zipf-skewed by ``skew``) or read from
``routing_file``; before the first exchange every rank compares the configuration and the
routing digest with rank 0's and the run is refused when they differ. Per dispatch dtype,
two cases: ``dispatch`` (the exchange of token rows) and ``combine`` (rows back in bf16, with
the per-token weighted sum), each timed as the maximum over ranks per iteration and checked:
dispatch bit for bit against the rows every rank can rebuild, combine against
``x̂·Σ w·g`` (``parity.families.moe.exchange``). Bytes per ``parity.metrics.moe``.
"""

from __future__ import annotations

from dataclasses import asdict, replace
from typing import Any

from parity.families.moe.case import combine_work, dispatch_work, exchange_bytes, exchange_metrics
from parity.families.moe.deepep import deepep_unavailable, deepep_work, open_buffer
from parity.families.moe.figures import moe_figures
from parity.families.moe.options import PRESETS, MoeOptions
from parity.families.moe.routing import make_routing
from parity.families.moe.summary import MoeSummary, summarize_moe
from parity.harness.suite import CaseSpec, SuiteBase
from parity.harness.work import Work, one_rank_findings
from parity.model.errors import ParityError
from parity.model.figure import Figure
from parity.model.result import CaseResult
from parity.ranks.gather import agree
from parity.ranks.group import close_group, open_group

# ETA: expected seconds of a case on a CPU (CaseSpec.cost; 0.05-0.07 s measured on a 2-core host)
CASE_S = 0.05


def resolve_shape(options: MoeOptions) -> dict[str, int]:
    """``tokens``, ``hidden``, ``top_k``, ``experts`` of the preset, with the options' overrides."""
    if options.preset == "custom" and None in (options.tokens, options.hidden, options.top_k, options.experts):
        raise ParityError("moe.preset=custom needs moe.tokens, moe.hidden, moe.top_k and moe.experts")
    base = PRESETS.get(options.preset, (0, 0, 0, 0))
    given = (options.tokens, options.hidden, options.top_k, options.experts)
    return dict(zip(("tokens", "hidden", "top_k", "experts"), (g or b for g, b in zip(given, base))))


def library_backends(device_type: str | None = None) -> dict[str, str]:
    """Whether each MoE communication library is measured beside parity's own exchange, and why
    not where it is not (``parity.families.moe.deepep``)."""
    reason = deepep_unavailable(device_type or "cpu")
    return {"deep_ep": reason or "measured: DeepEP's Buffer dispatch and combine (normal kernels, bf16) on the "
                                 "same routing, cases deepep/bf16/*"}


class MoeSuite(SuiteBase):
    """MoE dispatch/combine over ``all_to_all_single`` (module docstring)."""

    name = "moe"
    description = "MoE dispatch/combine: GB/s in DeepEP's, logical, cross-rank and bus conventions"
    options_type = MoeOptions

    def routing_seed(self, options: MoeOptions, rank: int) -> int:
        """The seed this rank makes its routing from (the same on every rank)."""
        return options.seed

    def setup(self, *, device: Any, options: MoeOptions) -> dict[str, Any]:
        group = open_group(device)
        try:
            shape = resolve_shape(options)
            if shape["experts"] % group.world_size:
                raise ParityError(f"moe: {shape['experts']} experts do not split over {group.world_size} ranks; "
                                  "set moe.experts to a multiple of the rank count")
            agree(group, asdict(options), what="moe configuration")
            routing = make_routing(world=group.world_size, tokens=shape["tokens"], top_k=shape["top_k"],
                                   num_experts=shape["experts"], seed=self.routing_seed(options, group.rank),
                                   skew=options.skew, path=options.routing_file or None)
            agree(group, routing.digest, what="routing (digest)")
        except BaseException:
            close_group(group)
            raise
        topology = group.topology
        # On one node every cross-rank row is scale-up (the cross-rank convention says so): split
        # only where there are several.
        rank_nodes = list(topology.rank_nodes) if topology is not None and topology.nodes > 1 else None
        return {"group": group, "shape": shape, "routing": routing, "device": device,
                "bytes": exchange_bytes(routing, world=group.world_size, hidden=shape["hidden"],
                                        rank_nodes=rank_nodes),
                "topology": ({"nodes": topology.nodes, "ranks_per_node": topology.ranks_per_node,
                              "source": topology.source} if topology is not None else None),
                "library_backends": library_backends(getattr(device, "type", None)),
                "deepep_buffer": self._deepep_buffer(group, device=device, shape=shape)}

    def _deepep_buffer(self, group: Any, *, device: Any, shape: dict[str, int]) -> Any:
        """DeepEP's Buffer on the run's ranks where it runs (None elsewhere)."""
        if deepep_unavailable(getattr(device, "type", "cpu")) is not None:
            return None
        import deep_ep
        import torch.distributed as dist

        nodes = group.topology.nodes if group.topology is not None else 1
        return open_buffer(dist.group.WORLD, hidden=shape["hidden"], world=group.world_size, nodes=nodes,
                           buffer_type=deep_ep.Buffer)

    def teardown(self, state: dict[str, Any] | None) -> None:
        close_group(state["group"] if state else None)

    def cases(self, *, device: Any, quick: bool, options: MoeOptions) -> list[CaseSpec]:
        specs = [CaseSpec(suite=self.name, key=f"{options.preset}/{dtype}/{direction}",
                          params={"preset": options.preset, "dtype": dtype, "direction": direction}, cost=CASE_S)
                 for dtype in options.dispatch_dtypes for direction in ("dispatch", "combine")]
        if deepep_unavailable(getattr(device, "type", "cpu")) is None:  # DeepEP's own kernels where they run
            specs += [CaseSpec(suite=self.name, key=f"{options.preset}/deepep/bf16/{direction}",
                               params={"preset": options.preset, "dtype": "bf16", "direction": direction,
                                       "library": "deep_ep"}, cost=CASE_S) for direction in ("dispatch", "combine")]
        return specs

    def measure(self, case: CaseSpec, *, device: Any, options: MoeOptions, state: dict[str, Any]) -> Work:
        if case.params.get("library") == "deep_ep":
            direction = case.params["direction"]
            work = deepep_work(state, direction=direction, iterations=options.iterations, warmup_s=options.warmup_s,
                               metrics=exchange_metrics(state, dtype="bf16", direction=direction))
        else:
            build = dispatch_work if case.params["direction"] == "dispatch" else combine_work
            work = build(state, dtype=case.params["dtype"], seed=options.seed, iterations=options.iterations,
                         warmup_s=options.warmup_s)
        return replace(work, findings=work.findings + one_rank_findings(state["group"].world_size))

    def summarize(self, results: list[CaseResult], *, options: MoeOptions) -> MoeSummary:
        return summarize_moe(results)

    def figures(self, summary: MoeSummary) -> list[Figure]:
        return moe_figures(summary)
