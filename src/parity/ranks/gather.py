"""Rank-to-rank helpers over a group's control channel: a barrier that names a missing rank,
gathers of Python objects (provenance, case results) to rank 0 or to every rank, and the check
that every rank was given the same configuration (``agree``).

They all run on ``RankGroup.control``, a gloo group over the CPU whatever the device's backend:
gloo has ``monitored_barrier``, which reports *which* ranks did not arrive, and objects never
need to be copied to an accelerator to be sent. Every helper is collective: every rank must call
it, in the same order.

Bounded time: ``barrier`` waits at most ``timeout_s``; a gather first passes a barrier with
that timeout, so a dead or hung rank is named there, then moves the objects under the group's
own timeout (``join_group(timeout_s=...)``).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from datetime import timedelta
from typing import Any, Protocol

from parity.model.errors import ParityError, one_line


class RankGroup(Protocol):
    """What these helpers need of ``parity.ranks.group.RankGroup`` (named here, not imported,
    since the group module itself gathers through these helpers)."""

    @property
    def world_size(self) -> int: ...

    @property
    def rank(self) -> int: ...

    @property
    def control(self) -> Any: ...

log = logging.getLogger(__name__)

_MISSING = re.compile(r"Ranks? ([\d, ]+) failed to pass monitoredBarrier")
_PEER = re.compile(r"from rank (\d+)")


def barrier(group: RankGroup, *, timeout_s: float) -> None:
    """Wait until every rank of ``group`` arrives; a ParityError naming the ranks that did not
    arrive within ``timeout_s`` seconds (raised on every rank that notices)."""
    import torch.distributed as dist

    try:
        dist.monitored_barrier(
            group=group.control, timeout=timedelta(seconds=timeout_s), wait_all_ranks=True
        )
    except RuntimeError as exc:
        topology = getattr(group, "topology", None)  # nodes are named where there are several
        node_of = getattr(group, "node_of", None) if topology is not None and topology.nodes > 1 else None
        raise ParityError(barrier_failure(str(exc), rank=group.rank, timeout_s=timeout_s, node_of=node_of,
                                          peer_of=getattr(group, "explain", None))) from None


def barrier_failure(message: str, *, rank: int, timeout_s: float, node_of: Callable[[int], str] | None = None,
                    peer_of: Callable[[str], str | None] | None = None) -> str:
    """One line from gloo's monitored-barrier error: which ranks failed, seen from which rank,
    each with its node when ``node_of`` names it (``rank 3 on node h/netns:402``).

    Rank 0 reports ``Ranks 1, 3 failed to pass monitoredBarrier``; the others report an error
    ``from rank 0`` when rank 0 itself is gone. A killed peer may instead reset the connection
    before the timeout (``Read error [198.18.0.2]:3770: Connection reset by peer``): ``peer_of``
    (the group's :meth:`explain`) names the ranks and node behind that address. Anything else
    is kept, on one line.
    """
    missing = _MISSING.search(message)
    if missing:
        numbers = [int(part) for part in missing.group(1).split(",") if part.strip()]
        ranks = ", ".join(_placed(r, node_of) for r in numbers)
        noun = "rank" if len(numbers) == 1 else "ranks"
        return (
            f"{noun} {ranks} did not reach the barrier within {timeout_s:g} s (seen from rank "
            f"{_placed(rank, node_of)}): it died or hangs; see its log"
        )
    peer = _PEER.search(message)
    if peer:
        return (
            f"rank {_placed(int(peer.group(1)), node_of)} stopped answering at a barrier (seen from rank "
            f"{_placed(rank, node_of)}, timeout {timeout_s:g} s): it died or hangs; see its log"
        )
    text = " ".join(message.split())[:300]
    broken = peer_of(message) if peer_of is not None else None
    if broken is not None:
        return (f"barrier failed on rank {_placed(rank, node_of)}: the connection to {broken} broke: it died or "
                f"hangs; see its log ({text})")
    return f"barrier failed on rank {rank}: {text}"


def _placed(rank: int, node_of: Callable[[int], str] | None) -> str:
    """``3`` or, where the node is known, ``3 on node host/netns:402``."""
    node = node_of(rank) if node_of is not None else "?"
    return f"{rank}" if node in ("?", "") else f"{rank} on node {node}"


def gather_to_rank0(obj: Any, *, group: RankGroup, timeout_s: float) -> list[Any] | None:
    """Every rank's ``obj`` (picklable), in rank order, on rank 0; None on the other ranks."""
    import torch.distributed as dist

    barrier(group, timeout_s=timeout_s)
    out: list[Any] | None = [None] * group.world_size if group.rank == 0 else None
    try:
        dist.gather_object(obj, out, dst=0, group=group.control)
    except RuntimeError as exc:
        raise ParityError(_transfer_failure("gather to rank 0", exc, group=group, timeout_s=timeout_s)) from None
    return out


def all_gather(obj: Any, *, group: RankGroup, timeout_s: float) -> list[Any]:
    """Every rank's ``obj`` (picklable), in rank order, on every rank."""
    import torch.distributed as dist

    barrier(group, timeout_s=timeout_s)
    out: list[Any] = [None] * group.world_size
    try:
        dist.all_gather_object(out, obj, group=group.control)
    except RuntimeError as exc:
        raise ParityError(_transfer_failure("all-gather", exc, group=group, timeout_s=timeout_s)) from None
    return out


def _transfer_failure(what: str, exc: Exception, *, group: RankGroup, timeout_s: float) -> str:
    """The failure of a transfer that began after every rank passed the barrier: a rank died
    in between. gloo names only the peer's address; the group's topology names its ranks and
    node where it knows them."""
    text = one_line(exc, 300)
    explain = getattr(group, "explain", None)
    peer = explain(str(exc)) if explain is not None else None
    if peer is not None:
        return (f"{what} failed on rank {group.rank}: the connection to {peer} broke: it died or hangs; "
                f"see its log ({text})")
    return f"{what} failed on rank {group.rank} after every rank passed the barrier: {text}"


def agree(group: RankGroup, value: Any, *, what: str, timeout_s: float = 300.0) -> None:
    """Refuse to go on unless every rank holds the same ``value`` (a configuration, a routing
    hash): a ParityError on every rank naming the ranks that differ from rank 0."""
    if group.world_size == 1:
        return
    values = all_gather(value, group=group, timeout_s=timeout_s)
    differ = [r for r, v in enumerate(values) if v != values[0]]
    if differ:
        ranks = ", ".join(str(r) for r in differ)
        noun, verb = ("rank", "has") if len(differ) == 1 else ("ranks", "have")
        raise ParityError(f"{noun} {ranks} {verb} a different {what} than rank 0 "
                          f"({values[differ[0]]!r} vs {values[0]!r}); give every rank the same options")
