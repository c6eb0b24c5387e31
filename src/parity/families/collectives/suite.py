"""The ``collectives`` suite: nccl-tests' sweep over torch.distributed, on any backend.

One case per (collective, dtype, placement, size); sizes from ``min_bytes`` to ``max_bytes``
multiplied by ``factor`` (nccl-tests' ``-b/-e/-f``). Each case is declared work: the harness
times it as the maximum over ranks per iteration (``parity.timing.ranks``), its median and
p99, with the fastest rank's beside it; the check reruns the operation on fresh inputs and
counts wrong elements on every rank. ``algbw`` and ``busbw`` follow
``parity.metrics.collectives``. Every rank checks that all ranks were given the same options
before the first collective.
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from parity.families.collectives.dimensions import CollectivesState, case_key, dimensions_measured, open_dimensions
from parity.families.collectives.drift import drift_figures, with_drift
from parity.families.collectives.figures import collectives_figures
from parity.families.collectives.ops import PLACEMENTS, prepare
from parity.families.collectives.options import CollectivesOptions
from parity.families.collectives.summary import CollectivesSummary, summarize_collectives
from parity.harness.strategies import ForDuration
from parity.harness.suite import CaseSpec, SuiteBase
from parity.harness.work import Work, one_rank_findings
from parity.model.figure import Figure
from parity.model.result import CaseResult
from parity.ranks.gather import agree
from parity.ranks.group import close_group, joined_topology, open_group

# ETA: expected seconds of a sized case on a CPU (CaseSpec.cost; 0.05-0.07 s measured with gloo
# on a 2-core host), growing with the bytes; a duration case costs its duration
CASE_S = 0.05
CHUNK_S = 0.25  # a duration case agrees whether to stop at least this often (wall seconds)

CONVENTION = "nccl-tests: S bytes per rank as nccl-tests counts them"


def sweep_sizes(min_bytes: int, max_bytes: int, factor: float) -> list[int]:
    """``min, min·f, min·f², ...`` up to ``max`` inclusive, in whole bytes (nccl-tests' sweep).
    Example: 1024 to 16384 by 4 is [1024, 4096, 16384]."""
    sizes, size = [], float(min_bytes)
    while size <= max_bytes * (1 + 1e-9):
        sizes.append(int(size))
        size *= factor
    return sorted(set(sizes))


class CollectivesSuite(SuiteBase):
    """nccl-tests' collectives over the run's ranks (module docstring)."""

    name = "collectives"
    description = "collectives (all_reduce ... send/recv): algbw and busbw by the nccl-tests factors"
    options_type = CollectivesOptions

    def setup(self, *, device: Any, options: CollectivesOptions) -> CollectivesState:
        group = open_group(device)
        try:
            agree(group, asdict(options), what="collectives configuration")
            return open_dimensions(group, dimensions_measured(group.topology, options.dimensions))
        except BaseException:
            close_group(group)
            raise

    def teardown(self, state: CollectivesState | None) -> None:
        close_group(state.group if state is not None else None)

    def cases(self, *, device: Any, quick: bool, options: CollectivesOptions) -> list[CaseSpec]:
        if options.duration > 0:
            return self._duration_cases(options)
        top = options.max_bytes or (2**20 if quick else 64 * 2**20)
        specs = []
        for dimension in dimensions_measured(joined_topology(), options.dimensions):
            extra = {} if dimension == "world" else {"dimension": dimension}
            for op in options.ops:
                places = [p for p in PLACEMENTS[op] if options.placement in ("both", p)] or [PLACEMENTS[op][0]]
                for dtype in options.dtypes:
                    for placement in places:
                        for size in sweep_sizes(options.min_bytes, top, options.factor):
                            key = case_key(dimension, f"{op}/{dtype}/{placement}/{size}")
                            specs.append(CaseSpec(suite=self.name, key=key,
                                                  params={"op": op, "dtype": dtype, "placement": placement,
                                                          "size_bytes": size, **extra}, cost=CASE_S * (1.0 + size / 2**20)))
        return specs

    def _duration_cases(self, options: CollectivesOptions) -> list[CaseSpec]:
        """``--duration``: one case per dimension, collective and dtype at ``size_bytes``, timed
        for ``duration``."""
        size = options.size_bytes
        specs = []
        for dimension in dimensions_measured(joined_topology(), options.dimensions):
            extra = {} if dimension == "world" else {"dimension": dimension}
            for op in options.ops:
                placement = next((p for p in PLACEMENTS[op] if options.placement in ("both", p)), PLACEMENTS[op][0])
                for dtype in options.dtypes:
                    key = case_key(dimension, f"{op}/{dtype}/{placement}/{size}/duration")
                    specs.append(CaseSpec(suite=self.name, key=key,
                                          params={"op": op, "dtype": dtype, "placement": placement,
                                                  "size_bytes": size, "duration_s": options.duration, **extra},
                                          cost=options.duration))
        return specs

    def measure(self, case: CaseSpec, *, device: Any, options: CollectivesOptions, state: CollectivesState) -> Work:
        p = case.params
        dimension = p.get("dimension", "world")
        comm = state.comm(dimension)
        rank, size = (comm.members.index(state.rank), len(comm.members)) if comm.members else \
            (state.rank, state.world_size)
        prepared = prepare(p["op"], size_bytes=int(p["size_bytes"]), dtype=p["dtype"], placement=p["placement"],
                           rank=rank, world_size=size, torch_device=device.torch_device, comm=comm)
        extra = {} if dimension == "world" else {"dimension": dimension, "groups": state.groups.get(dimension, 1)}
        if p.get("duration_s"):
            # repeated for the duration in wall-clock time, agreed in chunks of at most a quarter
            # window, so a link that slows mid-run cannot stretch the run (parity.timing.duration)
            warmup_s = max(options.warmup_s, min(2.0, float(p["duration_s"]) / 20))
            strategy = ForDuration(duration_s=float(p["duration_s"]), chunk_s=min(CHUNK_S, options.window / 4))
            return Work(call=prepared.call, check=prepared.check, bytes=float(prepared.size_bytes),
                        bytes_convention=CONVENTION, warmup_s=warmup_s, strategy=strategy,
                        min_samples=3, flush_cache=False, findings=one_rank_findings(size),
                        metrics={"world_size": size, "backend": state.backend,
                                 "size_bytes": prepared.size_bytes, "count": prepared.count, **extra})
        return Work(call=prepared.call, check=prepared.check, bytes=float(prepared.size_bytes),
                    bytes_convention=CONVENTION, warmup_s=options.warmup_s, budget_s=0.0,
                    min_samples=options.iterations, max_samples=options.iterations, flush_cache=False,
                    findings=one_rank_findings(size), metrics={"world_size": size, "backend": state.backend,
                             "size_bytes": prepared.size_bytes, "count": prepared.count, **extra})

    def summarize(self, results: list[CaseResult], *, options: CollectivesOptions) -> CollectivesSummary:
        summary = summarize_collectives(results)
        if options.duration > 0:
            return with_drift(summary, results, window_s=options.window)
        return summary

    def figures(self, summary: CollectivesSummary) -> list[Figure]:
        extra = drift_figures(summary) if hasattr(summary, "drift") else []
        return collectives_figures(summary) + extra
