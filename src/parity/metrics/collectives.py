"""Collective bandwidth by the nccl-tests conventions (``doc/PERFORMANCE.md`` of nccl-tests).

``S`` is the operation's size in bytes as nccl-tests counts it: the buffer of all_reduce,
broadcast, reduce and send/recv; the whole gathered output of all_gather; the whole input of
reduce_scatter; the whole send buffer of all_to_all. ``t`` is the time of one operation in
seconds (in parity: the maximum over ranks per iteration, then its median).

- algorithm bandwidth ``algbw = S / t`` (B/s);
- bus bandwidth ``busbw = algbw · f(op, n)``, the rate each rank's link must carry for a ring
  to finish in ``t``, comparable with the hardware's peak whatever the rank count ``n``:
  ``f = 2(n-1)/n`` for all_reduce, ``(n-1)/n`` for all_gather, reduce_scatter and all_to_all,
  ``1`` for broadcast, reduce and send/recv.

An HCCL test's "algorithm bandwidth" is ``algbw``: beside an nccl-tests ``busbw`` it is off by
``f``.
"""

from __future__ import annotations

from parity.model.errors import ParityError

# nccl-tests' bus factor of each collective, as a function of the rank count n.
_FACTORS = {
    "all_reduce": lambda n: 2.0 * (n - 1) / n,
    "all_gather": lambda n: (n - 1) / n,
    "reduce_scatter": lambda n: (n - 1) / n,
    "all_to_all": lambda n: (n - 1) / n,
    "broadcast": lambda n: 1.0,
    "reduce": lambda n: 1.0,
    "sendrecv": lambda n: 1.0,
}
COLLECTIVES = tuple(_FACTORS)


def bus_factor(op: str, world_size: int) -> float:
    """nccl-tests' ``f(op, n)`` (module docstring). Example: all_reduce on 4 ranks is 1.5."""
    if op not in _FACTORS:
        raise ParityError(f"unknown collective {op!r}; use one of {', '.join(COLLECTIVES)}")
    if world_size < 1:
        raise ParityError(f"a collective needs at least one rank, not {world_size}")
    return float(_FACTORS[op](world_size))


def algbw(size_bytes: float, seconds: float) -> float | None:
    """``algbw = S / t`` in B/s; None when ``t`` is not positive. Example: 1 MB in 1 ms is 1e9 B/s."""
    if seconds is None or seconds <= 0 or size_bytes < 0:
        return None
    return float(size_bytes) / float(seconds)


def busbw(size_bytes: float, seconds: float, *, op: str, world_size: int) -> float | None:
    """``busbw = (S / t) · f(op, n)`` in B/s; None when ``t`` is not positive, or on one rank:
    no data crosses a link there, so no rate compares with a link's peak (nccl-tests prints 0 for
    an all_reduce and ``algbw`` for a broadcast, a copy's speed, not a bus's).

    Example: all_reduce of 1 MB in 1 ms on 4 ranks is 1e9 · 2·3/4 = 1.5e9 B/s."""
    rate = algbw(size_bytes, seconds)
    factor = bus_factor(op, world_size)  # refuses an unknown op or rank count, one rank included
    return None if rate is None or world_size == 1 else rate * factor
