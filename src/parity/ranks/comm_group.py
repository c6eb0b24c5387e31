"""The process group a communication suite measures on, and its side channel for checks.

Under ``parity run --ranks N`` (or ``parity comm ... --nproc N``) the ranks have joined the
default group already; a suite run in one process (``parity run --suite collectives``) gets a
group of one rank of its own, made here on an in-memory store and destroyed at teardown, so the
same cases run (and check) on one device too.

``side`` is a gloo group over the CPU whatever the data backend is: configurations and routing
hashes are compared there before the first exchange, with ``monitored_barrier`` naming a rank
that does not arrive.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from parity.model.errors import ParityError


@dataclass(frozen=True, kw_only=True)
class CommGroup:
    """This rank's view: ``rank``, ``world_size``, the data ``backend``, the gloo ``side``
    group (``control`` too, for ``parity.ranks.gather``), and whether this suite made the
    group (``owned``: it destroys it at teardown), and this rank's ``device`` (what
    ``parity.timing.ranks`` times on)."""

    rank: int
    world_size: int
    backend: str
    side: Any
    owned: bool
    device: Any = None

    @property
    def control(self) -> Any:
        return self.side


def open_comm_group(device: Any, *, timeout_s: float = 300.0) -> CommGroup:
    """The joined default group, or a one-rank group of this process (module docstring)."""
    import torch.distributed as dist

    owned = False
    if not dist.is_initialized():
        backend = device.distributed_backend().name
        dist.init_process_group(backend=backend, store=dist.HashStore(), rank=0, world_size=1,
                                timeout=timedelta(seconds=timeout_s))
        owned = True
    backend = str(dist.get_backend())
    side = dist.group.WORLD if backend == "gloo" else dist.new_group(backend="gloo",
                                                                     timeout=timedelta(seconds=timeout_s))
    return CommGroup(rank=dist.get_rank(), world_size=dist.get_world_size(), backend=backend,
                     side=side, owned=owned, device=device)


def close_comm_group(group: CommGroup | None) -> None:
    """Destroy the group when this suite made it; a joined group belongs to its launcher."""
    import torch.distributed as dist

    if group is not None and group.owned and dist.is_initialized():
        dist.destroy_process_group()


def agree(group: CommGroup, value: Any, *, what: str, timeout_s: float = 300.0) -> None:
    """Refuse to go on unless every rank holds the same ``value`` (a configuration, a routing
    hash): a ParityError on every rank naming the ranks that differ from rank 0."""
    from parity.ranks.gather import all_gather

    if group.world_size == 1:
        return
    values = all_gather(value, group=group, timeout_s=timeout_s)
    differ = [r for r, v in enumerate(values) if v != values[0]]
    if differ:
        ranks = ", ".join(str(r) for r in differ)
        noun, verb = ("rank", "has") if len(differ) == 1 else ("ranks", "have")
        raise ParityError(f"{noun} {ranks} {verb} a different {what} than rank 0 "
                          f"({values[differ[0]]!r} vs {values[0]!r}); give every rank the same options")
