"""A group of ranks: join the one a launcher started, and the record of it.

``join_group()`` is what every rank calls first, however it was started (parity's own
``launch_local_ranks``, the user's ``torchrun`` or ``srun``): it reads the rank environment
(``parity.ranks.environment``), picks this rank's device (``cuda:<LOCAL_RANK>`` on indexed
backends, the CPU as it is), initialises torch.distributed with the device's backend (``nccl``,
``hccl``, ``xccl``, ``gloo``), opens a gloo control group for objects and barriers, and gathers
every rank's provenance to rank 0. ``leave_group()`` tears it all down; ``joined_group()`` is
both around a block.

A suite measures on the group this process joined, whoever joined it: ``open_group(device)``
returns that one, or, in a run of one process (``parity run --suite collectives``), a group of
one rank made on an in-memory store, so the same cases run (and check) on one device too;
``close_group`` destroys only a group ``open_group`` made. Every group has one gloo control
group, made once at join (``RankGroup.control``); nothing opens a second one.

Bounded time: ``timeout_s`` is the process group's timeout (rendezvous and every collective) and
the barrier timeout of the provenance gather, so a rank that never starts, dies or hangs ends
``join_group`` on every rank with a ParityError naming it where gloo can tell.
"""

from __future__ import annotations

import contextlib
import inspect
import logging
import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, replace
from datetime import timedelta
from typing import TYPE_CHECKING, Any, ClassVar

from parity.model.errors import ParityError, one_line
from parity.ranks.environment import RankEnv, read_rank_env
from parity.ranks.gather import all_gather, gather_to_rank0
from parity.ranks.provenance import rank_provenance
from parity.ranks.record import Target
from parity.ranks.topology import Topology, declared_topology, launcher_topology, node_identity

if TYPE_CHECKING:  # pragma: no cover
    from parity.device.base import Device

log = logging.getLogger(__name__)

DEFAULT_TIMEOUT_S = 300.0
SOLO = "this process"  # the launcher of a group of one rank that open_group made

_joined: RankGroup | None = None  # the group join_group made in this process, until leave_group


@dataclass(frozen=True, kw_only=True)
class RankGroup:
    """This rank's view of a joined group. ``launcher`` is ``parity``, ``torchrun`` or
    ``srun``; ``master`` the rendezvous ``host:port``; ``timeout_s`` the process group's
    timeout. ``rank_provenance`` holds every rank's provenance (rank order) on rank 0, only this
    rank's elsewhere; ``control`` is the gloo process group the helpers of
    ``parity.ranks.gather`` and ``parity.timing.ranks`` use (not stored); ``owned`` marks a
    group of one rank that ``open_group`` made for a suite (``close_group`` destroys it);
    ``topology`` which node each rank runs on (``parity.ranks.topology``; None for a group
    torch.distributed was given by someone else)."""

    world_size: int
    rank: int
    local_rank: int
    backend: str
    launcher: str
    master: str
    timeout_s: float
    device: Device | None = field(default=None, compare=False)
    rank_provenance: tuple[Mapping[str, Any], ...] = ()
    control: Any = field(default=None, repr=False, compare=False)
    owned: bool = field(default=False, compare=False)
    topology: Topology | None = field(default=None, compare=False)

    kind: ClassVar[str] = "ranks"

    def node_of(self, rank: int) -> str:
        """Rank ``rank``'s node identity (``?`` when the topology is unknown)."""
        return self.topology.node_of(rank) if self.topology is not None else "?"

    @property
    def is_writer(self) -> bool:
        """Only rank 0 writes the store; the others measure and send their results to it."""
        return self.rank == 0

    def record(self) -> Target:
        """The stored record: world size, backend and device type identify the group; every
        rank's provenance (on rank 0) explains it."""
        device_type = self.device.type if self.device is not None else None
        return Target(
            kind="ranks",
            name=f"{self.world_size} ranks ({self.backend}, {device_type}) via {self.launcher}",
            identity={
                "world_size": self.world_size,
                "backend": self.backend,
                "device_type": device_type,
                "hosts": len({p.get("host") for p in self.rank_provenance}) or None,
            },
            provenance=self.rank_provenance,
        )


def distributed_backend(device: Device) -> str:
    """The torch.distributed backend that goes with ``device`` (nccl, hccl, xccl, gloo), as the
    device interface reports it (``Device.distributed_backend()``; a gloo fallback is logged
    with its reason)."""
    chosen = device.distributed_backend()
    if chosen.fallback_reason:
        log.warning("%s", chosen.fallback_reason)
    return chosen.name


def rank_device(device: str | Device | None, local_rank: int) -> Device:
    """This rank's device: ``device`` itself, ``TYPE:<local_rank>`` for a bare indexed type
    (``cuda`` -> ``cuda:1`` on local rank 1), or the best local type when None."""
    from parity.device.base import Device, backend
    from parity.device.selection import detect, get_device, parse_name

    if isinstance(device, Device):
        return device
    type_name, index = parse_name(device) if device is not None else (detect(), None)
    if index is None and backend(type_name).default_index() is not None:
        return get_device(f"{type_name}:{local_rank}")
    return get_device(device if device is not None else type_name)


def join_group(
    *,
    device: str | Device | None = None,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    environ: Mapping[str, str] | None = None,
    backend: str | None = None,
    topology: str | None = None,
) -> RankGroup:
    """Join the group this process's launcher started (see the module docstring); ``backend``
    (``gloo``, ``nccl``, ...) overrides the one that goes with the device; ``topology``
    (``NODESxRANKS``) declares the nodes instead of reading them from every rank."""
    import torch.distributed as dist

    if dist.is_initialized():
        raise ParityError("this process already belongs to a process group; call leave_group()")
    env = read_rank_env(os.environ if environ is None else environ)
    chosen = rank_device(device, env.local_rank)
    backend = backend or distributed_backend(chosen)
    _init_process_group(env, backend=backend, device=chosen, timeout_s=timeout_s)
    try:
        control = _control_group(backend, timeout_s=timeout_s)
        group = RankGroup(
            world_size=env.world_size,
            rank=env.rank,
            local_rank=env.local_rank,
            backend=backend,
            launcher=env.launcher,
            master=f"{env.master_addr}:{env.master_port}",
            timeout_s=timeout_s,
            device=chosen,
            control=control,
        )
        mine = rank_provenance(device=chosen, rank=env.rank, local_rank=env.local_rank)
        gathered = gather_to_rank0(mine, group=group, timeout_s=timeout_s)
        found = _topology(group, declared=topology, timeout_s=timeout_s)
    except BaseException:
        dist.destroy_process_group()
        raise
    log.debug("rank %d of %d joined (%s, %s)", env.rank, env.world_size, backend, chosen.name)
    every = tuple(gathered) if gathered is not None else (mine,)
    if gathered is not None:  # rank 0 holds every rank's provenance: add each rank's node index
        every = tuple({**p, "node_index": found.rank_nodes[r]} for r, p in enumerate(every))
    global _joined
    _joined = replace(group, rank_provenance=every, topology=found)
    return _joined


def _topology(group: RankGroup, *, declared: str | None, timeout_s: float) -> Topology:
    """The declared topology, or the one every rank's node identity gives (gathered on all)."""
    if declared:
        return declared_topology(declared, world_size=group.world_size)
    return launcher_topology(all_gather(node_identity(), group=group, timeout_s=timeout_s))


def joined_topology() -> Topology | None:
    """The topology of the group this process joined (None before ``join_group``); a suite
    lists its per-node cases from it before its setup runs."""
    return _joined.topology if _joined is not None else None


def leave_group() -> None:
    """Destroy the process group (and its control group); a no-op when none is initialised."""
    import torch.distributed as dist

    global _joined
    _joined = None
    if dist.is_initialized():
        dist.destroy_process_group()


def open_group(device: Device, *, timeout_s: float = DEFAULT_TIMEOUT_S) -> RankGroup:
    """The group a suite measures on (module docstring): the one this process joined; else the
    default group someone else initialised, with a control group for it; else a group of one
    rank on ``device``'s backend, made here (``owned``)."""
    import torch.distributed as dist

    if _joined is not None and dist.is_initialized():
        return _joined
    owned = not dist.is_initialized()
    if owned:
        dist.init_process_group(backend=device.distributed_backend().name, store=dist.HashStore(), rank=0,
                                world_size=1, timeout=timedelta(seconds=timeout_s))
    backend = str(dist.get_backend())
    rank = dist.get_rank()
    solo = launcher_topology([node_identity()]) if owned else None
    return RankGroup(world_size=dist.get_world_size(), rank=rank, local_rank=rank, backend=backend,
                     launcher=SOLO if owned else "torch.distributed", master="", timeout_s=timeout_s,
                     device=device, control=_control_group(backend, timeout_s=timeout_s), owned=owned,
                     topology=solo)


def close_group(group: RankGroup | None) -> None:
    """Destroy ``group`` when ``open_group`` made it; a joined group belongs to its launcher."""
    import torch.distributed as dist

    if group is not None and group.owned and dist.is_initialized():
        dist.destroy_process_group()


@contextlib.contextmanager
def joined_group(
    *,
    device: str | Device | None = None,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    environ: Mapping[str, str] | None = None,
    backend: str | None = None,
    topology: str | None = None,
) -> Iterator[RankGroup]:
    """``join_group`` on entry, ``leave_group`` on exit, whatever happens in between."""
    group = join_group(device=device, timeout_s=timeout_s, environ=environ, backend=backend, topology=topology)
    try:
        yield group
    finally:
        leave_group()


def _init_process_group(env: RankEnv, *, backend: str, device: Device, timeout_s: float) -> None:
    import torch.distributed as dist

    kwargs: dict[str, Any] = {}
    if device.type not in ("cpu", "fake", "mps") and device.index is not None:
        if "device_id" in inspect.signature(dist.init_process_group).parameters:
            kwargs["device_id"] = device.torch_device  # binds the communicator to this device
    try:
        dist.init_process_group(
            backend=backend,
            init_method=env.init_method,
            rank=env.rank,
            world_size=env.world_size,
            timeout=timedelta(seconds=timeout_s),
            **kwargs,
        )
    except (RuntimeError, ValueError) as exc:  # DistStoreError is a RuntimeError
        text = one_line(exc, 300)
        raise ParityError(
            f"rank {env.rank} of {env.world_size} could not join the {backend} group at "
            f"{env.master_addr}:{env.master_port} within {timeout_s:g} s: {text}"
        ) from None


def _control_group(backend: str, *, timeout_s: float) -> Any:
    """The gloo group for objects and barriers: the default group when it is gloo already."""
    import torch.distributed as dist

    if backend == "gloo":
        return dist.group.WORLD
    return dist.new_group(backend="gloo", timeout=timedelta(seconds=timeout_s))
