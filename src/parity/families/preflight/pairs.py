"""Which ranks the preflight pairs, which node each rank is on, and one ping-pong between two.

Node identity: ``parity.ranks.topology.node_identity`` (the host name plus the inode of the
process's network namespace), so two namespaces of one host (the project's multi-node test
hosts) are two nodes, and two processes of one namespace are one. Every pair of ranks ``a < b`` is
timed, so every pair of nodes and every pair of ranks within a node is covered.

The ping-pong: rank ``a`` sends ``S`` bytes to ``b`` and receives them back; the other ranks do
nothing. Its check sends a fresh pattern there and back and counts the bytes that differ on
each of the two ranks.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def node_id() -> str:
    """This process's node, as every run records it (``parity.ranks.topology.node_identity``)."""
    from parity.ranks.topology import node_identity

    return node_identity()


def rank_pairs(world_size: int) -> list[tuple[int, int]]:
    """Every pair ``(a, b)``, ``a < b``. Example: 3 ranks -> (0, 1), (0, 2), (1, 2)."""
    return [(a, b) for a in range(world_size) for b in range(a + 1, world_size)]


def ping_pong(pair: tuple[int, int], *, size_bytes: int, rank: int,
              torch_device: Any) -> tuple[Callable[[], None], Callable[[], dict[str, Any]]]:
    """The call (one round trip) and check of ``pair`` on this rank (module docstring)."""
    import torch
    import torch.distributed as dist

    a, b = pair
    buffer = torch.zeros(size_bytes, dtype=torch.uint8, device=torch_device)
    peer = b if rank == a else a

    def call() -> None:
        if rank == a:
            dist.send(buffer, b)
            dist.recv(buffer, b)
        elif rank == b:
            dist.recv(buffer, a)
            dist.send(buffer, a)

    def check() -> dict[str, Any]:
        method = "a fresh byte pattern sent there and back, compared on both ranks"
        if rank not in pair:
            return {"passed": True, "wrong": 0, "method": method}
        pattern = (torch.arange(size_bytes, dtype=torch.int64) * 7 + 3) % 251
        expected = pattern.to(torch.uint8).to(torch_device)
        if rank == a:
            buffer.copy_(expected)
        else:
            buffer.zero_()
        call()
        wrong = int((buffer != expected).sum().item())
        return {"passed": wrong == 0, "wrong": wrong, "method": method, "peer": peer}

    return call, check
