"""One collective, ready to time: its buffers, the call, and the data check nccl-tests makes.

Sizes follow nccl-tests: ``size_bytes`` is ``S`` of ``parity.metrics.collectives`` (the buffer
of all_reduce, broadcast, reduce, send/recv; the gathered output of all_gather; the input of
reduce_scatter; the send buffer of all_to_all), rounded down to whole elements per rank.

Inputs are small integers, ``v(rank, i) = (i + 3·rank) mod 5 + 1``, exact in every dtype
offered, so every expected value (a sum over at most a few dozen ranks) is exact and the check
counts elements that differ at all (``wrong``, nccl-tests' ``#wrong``). The check rebuilds the
inputs and runs the operation once more, as nccl-tests does, since a timed in-place reduction
sums its own previous result (the values grow; their speed does not depend on it on any backend
parity knows).

Placement: torch's all_reduce, broadcast and reduce work in place only; all_gather and
reduce_scatter run both ways (in place: the rank's input is its own slice of the output, or
its output its slice of the input, nccl-tests' definition); all_to_all and send/recv run out of
place only.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from parity.model.errors import ParityError

DTYPES = {"fp32": "float32", "fp64": "float64", "bf16": "bfloat16", "fp16": "float16", "int32": "int32"}
PLACEMENTS: dict[str, tuple[str, ...]] = {
    "all_reduce": ("in-place",),
    "all_gather": ("out-of-place", "in-place"),
    "reduce_scatter": ("out-of-place", "in-place"),
    "all_to_all": ("out-of-place",),
    "broadcast": ("in-place",),
    "reduce": ("in-place",),
    "sendrecv": ("out-of-place",),
}
ROOT = 0


@dataclass(frozen=True, kw_only=True)
class Prepared:
    """A collective with its buffers: ``call`` runs it once, ``check`` reruns it on fresh inputs
    and counts the wrong elements; ``size_bytes`` is the ``S`` actually used, ``count`` its
    elements."""

    call: Callable[[], None]
    check: Callable[[], dict[str, Any]]
    size_bytes: int
    count: int


def elements(op: str, size_bytes: int, *, element_size: int, world_size: int) -> int:
    """Elements of ``S``, rounded down to a multiple of the rank count where ``S`` is split
    over ranks (all_gather, reduce_scatter, all_to_all). Example: all_gather of 1000 B of fp32
    on 3 ranks uses 249 elements (83 per rank)."""
    count = size_bytes // element_size
    if op in ("all_gather", "reduce_scatter", "all_to_all"):
        count -= count % world_size
    return count


def pattern(torch: Any, count: int, *, rank: int, start: int = 0) -> Any:
    """``v(rank, i) = (i + 3·rank) mod 5 + 1`` for ``i`` in ``start .. start+count-1``, as float64."""
    return ((torch.arange(start, start + count, dtype=torch.float64) + 3 * rank) % 5) + 1


@dataclass(frozen=True, kw_only=True)
class Comm:
    """The process group a collective runs on: ``group`` None for the default (every rank), else
    a subgroup of the global ranks ``members`` (``rank`` and ``world_size`` given to
    :func:`prepare` are then this rank's place in it and its size)."""

    group: Any = None
    members: tuple[int, ...] = ()

    def global_rank(self, group_rank: int) -> int:
        """The global rank of the member ``group_rank`` (itself on the default group)."""
        return self.members[group_rank] if self.members else group_rank


WORLD = Comm()


def prepare(op: str, *, size_bytes: int, dtype: str, placement: str, rank: int, world_size: int,
            torch_device: Any, comm: Comm = WORLD) -> Prepared:
    """Buffers, call and check of ``op`` on this rank (module docstring), on ``comm``'s group."""
    import torch

    if op not in PLACEMENTS:
        raise ParityError(f"unknown collective {op!r}; use one of {', '.join(PLACEMENTS)}")
    if placement not in PLACEMENTS[op]:
        raise ParityError(f"{op} runs {' and '.join(PLACEMENTS[op])} in torch, not {placement}")
    torch_dtype = getattr(torch, DTYPES[dtype])
    count = elements(op, size_bytes, element_size=torch.empty((), dtype=torch_dtype).element_size(),
                     world_size=world_size)
    if count < 1:
        raise ParityError(f"{op} of {size_bytes} B of {dtype} on {world_size} ranks has no whole element")
    build = _BUILDERS[op]
    call, expected, result, refill = build(torch, count=count, rank=rank, world=world_size,
                                           dtype=torch_dtype, device=torch_device,
                                           inplace=placement == "in-place", comm=comm)
    refill()

    def check() -> dict[str, Any]:
        refill()
        call()
        want = expected()
        if want is None:
            return {"passed": True, "wrong": 0, "method": f"{op}: this rank receives nothing to check"}
        got = result().to(torch.float64)
        wrong = int((got != want.to(torch_dtype).to(torch.float64)).sum())
        return {"passed": wrong == 0, "wrong": wrong,
                "method": f"{op}: every element equals the exact result on inputs (i + 3*rank) % 5 + 1"}

    element_size = torch.empty((), dtype=torch_dtype).element_size()
    return Prepared(call=call, check=check, size_bytes=count * element_size, count=count)


def _gather_single(dist: Any) -> Any:
    """torch's one-tensor all_gather under its current name (older releases: ``_into_tensor``)."""
    return getattr(dist, "all_gather_single", None) or dist.all_gather_into_tensor


def _scatter_single(dist: Any) -> Any:
    """torch's one-tensor reduce_scatter under its current name (older: ``reduce_scatter_tensor``)."""
    return getattr(dist, "reduce_scatter_single", None) or dist.reduce_scatter_tensor


def _others(torch: Any, world: int, count: int, *, start: int = 0) -> list[Any]:
    return [pattern(torch, count, rank=r, start=start) for r in range(world)]


def _all_reduce(torch, *, count, rank, world, dtype, device, inplace, comm):
    import torch.distributed as dist

    buf = torch.empty(count, dtype=dtype, device=device)

    def refill() -> None:
        buf.copy_(pattern(torch, count, rank=rank))

    return (lambda: dist.all_reduce(buf, group=comm.group), lambda: sum(_others(torch, world, count)),
            lambda: buf.cpu(), refill)


def _split(torch, *, count, rank, world, dtype, device, inplace, comm, gather):
    """all_gather (``gather``) or reduce_scatter: a whole buffer of ``count`` elements and this
    rank's part of it (a view of the whole in place)."""
    import torch.distributed as dist

    chunk = count // world
    whole = torch.empty(count, dtype=dtype, device=device)
    part = whole[rank * chunk:(rank + 1) * chunk] if inplace else torch.empty(chunk, dtype=dtype, device=device)
    if gather:
        def refill() -> None:
            whole.zero_()
            part.copy_(pattern(torch, chunk, rank=rank))

        return (lambda: _gather_single(dist)(whole, part, group=comm.group),
                lambda: torch.cat(_others(torch, world, chunk)), lambda: whole.cpu(), refill)

    def refill_whole() -> None:
        whole.copy_(pattern(torch, count, rank=rank))

    return (lambda: _scatter_single(dist)(part, whole, group=comm.group),
            lambda: sum(_others(torch, world, chunk, start=rank * chunk)), lambda: part.cpu(), refill_whole)


def _all_gather(torch, **kwargs):
    return _split(torch, gather=True, **kwargs)


def _reduce_scatter(torch, **kwargs):
    return _split(torch, gather=False, **kwargs)


def _all_to_all(torch, *, count, rank, world, dtype, device, inplace, comm):
    import torch.distributed as dist

    chunk = count // world
    src = torch.empty(count, dtype=dtype, device=device)
    out = torch.empty(count, dtype=dtype, device=device)

    def refill() -> None:
        src.copy_(pattern(torch, count, rank=rank))

    def expected() -> Any:  # block s of the output is block `rank` of rank s's input
        return torch.cat([pattern(torch, chunk, rank=s, start=rank * chunk) for s in range(world)])

    return lambda: dist.all_to_all_single(out, src, group=comm.group), expected, lambda: out.cpu(), refill


def _broadcast(torch, *, count, rank, world, dtype, device, inplace, comm):
    import torch.distributed as dist

    buf = torch.empty(count, dtype=dtype, device=device)

    def refill() -> None:
        buf.copy_(pattern(torch, count, rank=rank))

    return (lambda: dist.broadcast(buf, comm.global_rank(ROOT), group=comm.group),
            lambda: pattern(torch, count, rank=ROOT), lambda: buf.cpu(), refill)


def _reduce(torch, *, count, rank, world, dtype, device, inplace, comm):
    import torch.distributed as dist

    buf = torch.empty(count, dtype=dtype, device=device)

    def refill() -> None:
        buf.copy_(pattern(torch, count, rank=rank))

    def expected() -> Any:
        return sum(_others(torch, world, count)) if rank == ROOT else None

    return lambda: dist.reduce(buf, comm.global_rank(ROOT), group=comm.group), expected, lambda: buf.cpu(), refill


def _sendrecv(torch, *, count, rank, world, dtype, device, inplace, comm):
    import torch.distributed as dist

    src = torch.empty(count, dtype=dtype, device=device)
    out = torch.empty(count, dtype=dtype, device=device)
    peer_to, peer_from = (rank + 1) % world, (rank - 1) % world

    def refill() -> None:
        src.copy_(pattern(torch, count, rank=rank))
        out.zero_()

    def call() -> None:
        if world == 1:
            out.copy_(src)
            return
        ops = [dist.P2POp(dist.isend, src, comm.global_rank(peer_to), comm.group),
               dist.P2POp(dist.irecv, out, comm.global_rank(peer_from), comm.group)]
        for request in dist.batch_isend_irecv(ops):
            request.wait()

    return call, lambda: pattern(torch, count, rank=peer_from), lambda: out.cpu(), refill


_BUILDERS = {"all_reduce": _all_reduce, "all_gather": _all_gather, "reduce_scatter": _reduce_scatter,
             "all_to_all": _all_to_all, "broadcast": _broadcast, "reduce": _reduce, "sendrecv": _sendrecv}
