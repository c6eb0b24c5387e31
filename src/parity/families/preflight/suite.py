"""The ``preflight`` suite: point-to-point bandwidth and latency between every pair of ranks.

Two cases per pair ``(a, b)``: a ping-pong of ``latency_bytes`` and one of ``size_bytes``
(``parity.families.preflight.pairs``), each timed as the maximum over ranks per iteration like
every declared work on ranks (the ranks outside the pair return at once, so it is the pair's
round trip). The whole preflight's timed seconds are bounded by ``budget`` (s): each case gets an
equal share (at least 3 round trips each). Rates follow ``parity.metrics.links``; the summary
names the slow links.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from parity.families.preflight.figures import preflight_figures
from parity.families.preflight.options import PreflightOptions
from parity.families.preflight.pairs import node_id, ping_pong, rank_pairs
from parity.families.preflight.summary import PreflightSummary, summarize_preflight
from parity.harness.suite import CaseSpec, SuiteBase
from parity.harness.work import Work
from parity.metrics.links import link_key
from parity.model.errors import ParityError
from parity.model.figure import Figure
from parity.model.result import CaseResult
from parity.ranks.gather import agree, all_gather
from parity.ranks.group import RankGroup, close_group, open_group

CONVENTION = "ping-pong: S bytes each way per round trip; bytes/t = S/(t/2), the one-way rate"
QUICK_BUDGET_S = 5.0
QUICK_SIZE_BYTES = 256 * 2**10


@dataclass(frozen=True, kw_only=True)
class PreflightState:
    """The group the preflight measures on and the node of every rank (rank order)."""

    group: RankGroup
    nodes: tuple[str, ...]


def _world_size() -> int:
    """The size of the group this process joined (1 when it joined none)."""
    import torch.distributed as dist

    return dist.get_world_size() if dist.is_available() and dist.is_initialized() else 1


class PreflightSuite(SuiteBase):
    """Every pair of ranks, ping-pong (module docstring)."""

    name = "preflight"
    description = "link preflight: p2p bandwidth and latency of every pair of ranks, slow links named"
    min_ranks = 2  # it times pairs of ranks
    options_type = PreflightOptions

    def setup(self, *, device: Any, options: PreflightOptions) -> PreflightState:
        group = open_group(device)
        try:
            agree(group, asdict(options), what="preflight configuration")
            nodes = all_gather(node_id(), group=group, timeout_s=group.timeout_s)
        except BaseException:
            close_group(group)
            raise
        return PreflightState(group=group, nodes=tuple(str(n) for n in nodes))

    def teardown(self, state: PreflightState | None) -> None:
        close_group(state.group if state is not None else None)

    def cases(self, *, device: Any, quick: bool, options: PreflightOptions) -> list[CaseSpec]:
        world = _world_size()
        if world < 2:
            raise ParityError("the preflight times pairs of ranks and found 1; run it with --nproc 2 or more, "
                              "or --join under torchrun")
        size = QUICK_SIZE_BYTES if quick and options.size_bytes == PreflightOptions().size_bytes \
            else options.size_bytes
        pairs = rank_pairs(world)
        budget_s = min(options.budget, QUICK_BUDGET_S) if quick else options.budget
        per_case_s = budget_s / (2 * len(pairs))
        specs = []
        for a, b in pairs:
            for kind, nbytes in (("latency", options.latency_bytes), ("bandwidth", size)):
                specs.append(CaseSpec(suite=self.name, key=f"{kind}/{a}-{b}",
                                      params={"a": a, "b": b, "kind": kind, "size_bytes": nbytes,
                                              "budget_s": per_case_s},
                                      cost=per_case_s + min(0.01, per_case_s / 4)))  # its budget and warm-up, s
        return specs

    def measure(self, case: CaseSpec, *, device: Any, options: PreflightOptions, state: PreflightState) -> Work:
        p = case.params
        pair = (int(p["a"]), int(p["b"]))
        group = state.group
        call, check = ping_pong(pair, size_bytes=int(p["size_bytes"]), rank=group.rank,
                                torch_device=device.torch_device)
        nodes = (state.nodes[pair[0]], state.nodes[pair[1]])
        per_case_s = float(p["budget_s"])
        return Work(call=call, check=check, bytes=2.0 * float(p["size_bytes"]), bytes_convention=CONVENTION,
                    warmup_s=min(0.01, per_case_s / 4), budget_s=per_case_s, min_samples=3, max_samples=10_000,
                    flush_cache=False,
                    metrics={"world_size": group.world_size, "backend": group.backend, "nodes": list(nodes),
                             "link": link_key(*nodes), "size_bytes": int(p["size_bytes"]),
                             "scope": "intra-node" if nodes[0] == nodes[1] else "inter-node"})

    def summarize(self, results: list[CaseResult], *, options: PreflightOptions) -> PreflightSummary:
        return summarize_preflight(results, slow_fraction=options.slow_fraction)

    def figures(self, summary: PreflightSummary) -> list[Figure]:
        return preflight_figures(summary)
