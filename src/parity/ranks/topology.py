"""Which node each rank runs on, and the groups of ranks a run can measure apart.

A **node** is one host's network stack: ranks on one node reach each other without crossing a
network link (scale-up), ranks on two nodes cross one (scale-out). Its identity
(:func:`node_identity`) is the host name plus the inode of the process's network namespace
(``/proc/self/ns/net``): containers or namespaces on one host share a name but not a network
namespace, and every process of one real host shares both. torchrun's ``GROUP_RANK`` (the
node's index among the launcher's agents) is recorded beside it when set.

The run's topology comes from the launcher (every rank's node identity, gathered; nodes are
numbered in the order of their lowest rank) or is declared (``--topology 2x4``: ranks
``0..3`` on node 0, ``4..7`` on node 1, torchrun's and srun's block order), and is stored as
the run's provenance ``topology = {"nodes", "ranks_per_node", "source", "rank_nodes"}``.

Dimensions (:func:`dimension_groups`): ``world`` is every rank; ``intra`` the ranks of each
node (one group per node, all measured at once); ``inter`` the i-th rank of every node (one
group per local index, all at once), the ranks whose traffic crosses the links between nodes.
"""

from __future__ import annotations

import os
import platform
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from parity.model.errors import ParityError

DIMENSIONS = ("world", "intra", "inter")
_DECLARED = re.compile(r"^\s*(\d+)\s*[xX]\s*(\d+)\s*$")


def network_namespace() -> str | None:
    """The inode of this process's network namespace (``net:[4026531840]`` -> ``4026531840``),
    or None where ``/proc`` does not say (not Linux)."""
    try:
        link = os.readlink("/proc/self/ns/net")
    except OSError:
        return None
    match = re.search(r"\[(\d+)\]", link)
    return match.group(1) if match else None


def node_identity(environ: Mapping[str, str] | None = None) -> str:
    """This process's node: ``host`` or ``host/netns:<inode>`` (see the module docstring).
    ``PARITY_NODE`` set by the user wins (a scheduler's own node name)."""
    env = os.environ if environ is None else environ
    if env.get("PARITY_NODE"):
        return str(env["PARITY_NODE"])
    namespace = network_namespace()
    host = platform.node() or "host"
    return f"{host}/netns:{namespace}" if namespace else host


@dataclass(frozen=True, kw_only=True)
class Topology:
    """Nodes and ranks: ``rank_nodes[r]`` is rank r's node index; ``node_names[i]`` node i's
    identity (``declared`` nodes are named ``node<i>``); ``ranks_per_node`` None when the nodes
    hold different rank counts; ``source`` ``launcher`` or ``declared``."""

    rank_nodes: tuple[int, ...]
    node_names: tuple[str, ...]
    source: str

    @property
    def nodes(self) -> int:
        return len(self.node_names)

    @property
    def ranks_per_node(self) -> int | None:
        counts = {self.rank_nodes.count(node) for node in range(self.nodes)}
        return counts.pop() if len(counts) == 1 else None

    def node_of(self, rank: int) -> str:
        """Rank ``rank``'s node identity (``?`` for a rank outside the group)."""
        if 0 <= rank < len(self.rank_nodes):
            return self.node_names[self.rank_nodes[rank]]
        return "?"

    def to_dict(self) -> dict[str, object]:
        return {"nodes": self.nodes, "ranks_per_node": self.ranks_per_node, "source": self.source,
                "rank_nodes": list(self.rank_nodes), "node_names": list(self.node_names)}


def launcher_topology(identities: Sequence[str]) -> Topology:
    """The topology from every rank's node identity (rank order); nodes are numbered by their
    lowest rank. Example: ("a", "a", "b", "b") is 2 nodes of 2 ranks, rank_nodes (0, 0, 1, 1)."""
    names: list[str] = []
    for identity in identities:
        if identity not in names:
            names.append(identity)
    return Topology(rank_nodes=tuple(names.index(i) for i in identities), node_names=tuple(names),
                    source="launcher")


def parse_topology(text: str) -> tuple[int, int]:
    """``NODESxRANKS`` as (nodes, ranks per node); a ParityError naming the value otherwise.
    Example: "2x4" is (2, 4)."""
    match = _DECLARED.match(text or "")
    if not match or int(match.group(1)) < 1 or int(match.group(2)) < 1:
        raise ParityError(f"--topology {text!r} is not NODESxRANKS; give e.g. 2x4 (2 nodes of 4 ranks)")
    return int(match.group(1)), int(match.group(2))


def declared_topology(text: str, *, world_size: int) -> Topology:
    """A declared ``NODESxRANKS`` topology in block order; refused when it does not hold
    ``world_size`` ranks."""
    nodes, per_node = parse_topology(text)
    if nodes * per_node != world_size:
        raise ParityError(f"--topology {text} holds {nodes * per_node} ranks but the group has {world_size}; "
                          "give NODESxRANKS with NODES*RANKS equal to the rank count")
    return Topology(rank_nodes=tuple(r // per_node for r in range(world_size)),
                    node_names=tuple(f"node{i}" for i in range(nodes)), source="declared")


def dimension_groups(topology: Topology, dimension: str) -> list[list[int]] | None:
    """The rank groups of ``dimension`` (module docstring), or None where it does not apply
    (adds nothing to the world): ``intra`` on one node or on nodes of one rank, ``inter`` on one
    node or on nodes of unequal rank counts.
    Example: 2 nodes of 2 ranks: intra [[0, 1], [2, 3]], inter [[0, 2], [1, 3]]."""
    if dimension not in DIMENSIONS:
        raise ParityError(f"unknown dimension {dimension!r}; use one of {', '.join(DIMENSIONS)}")
    world = len(topology.rank_nodes)
    members = [[r for r in range(world) if topology.rank_nodes[r] == node] for node in range(topology.nodes)]
    if dimension == "world":
        return [list(range(world))]
    if dimension == "intra":
        return members if topology.nodes > 1 and max(len(m) for m in members) > 1 else None
    per_node = topology.ranks_per_node
    if topology.nodes < 2 or per_node is None:
        return None
    return [[m[i] for m in members] for i in range(per_node)]


def group_of(groups: Sequence[Sequence[int]], rank: int) -> list[int]:
    """The group in ``groups`` that holds ``rank``."""
    for group in groups:
        if rank in group:
            return list(group)
    raise ParityError(f"rank {rank} is in none of the groups {list(groups)}")
