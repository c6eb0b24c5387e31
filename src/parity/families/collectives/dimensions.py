"""Collectives per dimension of the topology: every rank, the ranks of each node, and the ranks
that cross the links between nodes (``parity.ranks.topology.dimension_groups``).

A ``world`` case runs on every rank (nccl-tests' default). An ``intra`` case runs one
collective in each node's group at once, an ``inter`` case one in each group of the i-th ranks
of every node at once, as nccl-tests measures split communicators: the time is still the
maximum over every rank per iteration, and busbw uses ``n`` = the group's size. Case keys of
the world keep their form (``all_reduce/fp32/in-place/1024``); the others are prefixed with
their dimension (``inter:all_reduce/fp32/in-place/1024``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from parity.families.collectives.ops import WORLD, Comm
from parity.ranks.topology import DIMENSIONS, Topology, dimension_groups, group_of


def case_key(dimension: str, key: str) -> str:
    """``key`` as it is stored for ``dimension``: itself for the world, ``dim:key`` otherwise."""
    return key if dimension == "world" else f"{dimension}:{key}"


def dimensions_measured(topology: Topology | None, wanted: tuple[str, ...]) -> list[str]:
    """The dimensions of ``wanted`` that apply to ``topology`` (the world always does; without
    a topology, nothing else)."""
    if topology is None:
        return [d for d in wanted if d == "world"]
    return [d for d in DIMENSIONS if d in wanted and (d == "world" or dimension_groups(topology, d) is not None)]


@dataclass(frozen=True, kw_only=True)
class CollectivesState:
    """The suite's state: the run's group, and per dimension this rank's communicator and the
    number of groups measured at once (``groups``)."""

    group: Any
    comms: dict[str, Comm] = field(default_factory=dict)
    groups: dict[str, int] = field(default_factory=dict)

    @property
    def rank(self) -> int:
        return int(self.group.rank)

    @property
    def world_size(self) -> int:
        return int(self.group.world_size)

    @property
    def backend(self) -> str:
        return str(self.group.backend)

    def comm(self, dimension: str) -> Comm:
        return self.comms.get(dimension, WORLD)


def open_dimensions(group: Any, dimensions: list[str]) -> CollectivesState:
    """Every rank makes every subgroup of ``dimensions`` (torch asks all ranks to call
    ``new_group`` for every group, in the same order) and keeps its own."""
    import torch.distributed as dist

    comms: dict[str, Comm] = {"world": WORLD}
    counts: dict[str, int] = {"world": 1}
    topology = getattr(group, "topology", None)
    for dimension in dimensions:
        groups = dimension_groups(topology, dimension) if topology is not None and dimension != "world" else None
        if not groups:
            continue
        handles = [dist.new_group(ranks=members, backend=group.backend, timeout=timedelta(seconds=group.timeout_s))
                   for members in groups]
        mine = group_of(groups, group.rank)
        comms[dimension] = Comm(group=handles[groups.index(mine)], members=tuple(mine))
        counts[dimension] = len(groups)
    return CollectivesState(group=group, comms=comms, groups=counts)
