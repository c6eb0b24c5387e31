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

from dataclasses import asdict
from typing import Any

from parity.families.moe.case import combine_work, dispatch_work, exchange_bytes
from parity.families.moe.figures import moe_figures
from parity.families.moe.options import PRESETS, MoeOptions
from parity.families.moe.routing import make_routing
from parity.families.moe.summary import MoeSummary, summarize_moe
from parity.harness.suite import CaseSpec, SuiteBase
from parity.harness.work import Work
from parity.model.errors import ParityError
from parity.model.figure import Figure
from parity.model.result import CaseResult
from parity.ranks.gather import agree
from parity.ranks.group import close_group, open_group


def resolve_shape(options: MoeOptions) -> dict[str, int]:
    """``tokens``, ``hidden``, ``top_k``, ``experts`` of the preset, with the options' overrides."""
    if options.preset == "custom" and None in (options.tokens, options.hidden, options.top_k, options.experts):
        raise ParityError("moe.preset=custom needs moe.tokens, moe.hidden, moe.top_k and moe.experts")
    base = PRESETS.get(options.preset, (0, 0, 0, 0))
    given = (options.tokens, options.hidden, options.top_k, options.experts)
    return dict(zip(("tokens", "hidden", "top_k", "experts"), (g or b for g, b in zip(given, base))))


def library_backends() -> dict[str, str]:
    """Why each MoE communication library is not measured beside parity's own exchange."""
    import importlib.util

    found = importlib.util.find_spec("deep_ep") is not None
    return {"deep_ep": "installed, but parity does not drive its Buffer dispatch/combine yet" if found
            else "not installed here: only parity's own exchange was measured (parity doctor lists the stack)"}


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
                "library_backends": library_backends()}

    def teardown(self, state: dict[str, Any] | None) -> None:
        close_group(state["group"] if state else None)

    def cases(self, *, device: Any, quick: bool, options: MoeOptions) -> list[CaseSpec]:
        return [CaseSpec(suite=self.name, key=f"{options.preset}/{dtype}/{direction}",
                         params={"preset": options.preset, "dtype": dtype, "direction": direction})
                for dtype in options.dispatch_dtypes for direction in ("dispatch", "combine")]

    def measure(self, case: CaseSpec, *, device: Any, options: MoeOptions, state: dict[str, Any]) -> Work:
        build = dispatch_work if case.params["direction"] == "dispatch" else combine_work
        return build(state, dtype=case.params["dtype"], seed=options.seed, iterations=options.iterations,
                     warmup_s=options.warmup_s)

    def summarize(self, results: list[CaseResult], *, options: MoeOptions) -> MoeSummary:
        return summarize_moe(results)

    def figures(self, summary: MoeSummary) -> list[Figure]:
        return moe_figures(summary)
