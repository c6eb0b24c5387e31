"""Declared work: what one case runs, what it does, and how to tell it did it right.

A suite returns a :class:`Work` from ``measure`` and the harness does the rest: it times
``call`` with the named ``strategy`` from ``parity.timing``, runs ``check`` on the result,
derives the rates from ``flop`` and ``bytes`` (per call), and records ``bytes_convention`` with
them, so the same code path times, checks and rates every family's declared cases.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from parity.model.findings import ONE_RANK, Finding, Severity

# Strategies the harness knows, by name (see parity.harness.measure.time_work): ``auto`` is the
# device's events, or the host clock plus a synchronize where the device has none (the samples
# say which); ``graph-replay`` times CUDA graph replays (eager, with a finding, elsewhere);
# ``max-over-ranks`` is what every declared work gets on several ranks.
# A strategy may also be an object of ``parity.timing`` with ``time(work, *, device, group) ->
# parity.timing.timed.Timed`` (a protocol of more than one timed call, such as paired rounds).
STRATEGIES = ("auto", "graph-replay", "max-over-ranks")


@dataclass(frozen=True, kw_only=True)
class Work:
    """One case's work.

    ``call`` is one call of the work (``call(inputs)`` when ``inputs`` is an input rotation);
    ``check`` returns the correctness verdict, a dict with at least ``passed`` (bool) and
    ``method`` (what was compared); ``flop`` and ``bytes`` are per call, ``bytes`` counted as
    ``bytes_convention`` says (``bytes read + written (STREAM)``). ``metrics`` are extra
    per-case values in SI units; ``release`` frees the case's buffers after timing; ``findings``
    are what the suite knows of the work's conditions before it is timed (``one_rank_findings``).
    """

    call: Callable[..., Any]
    check: Callable[[], dict[str, Any]]
    flop: float = 0.0
    bytes: float = 0.0
    bytes_convention: str = ""
    strategy: Any = "auto"
    inputs: Any = None
    flush_cache: bool = True
    warmup_s: float = 0.02
    budget_s: float = 0.1
    min_samples: int = 5
    max_samples: int = 1000
    metrics: dict[str, Any] = field(default_factory=dict)
    release: Callable[[], None] | None = None
    findings: tuple[Finding, ...] = ()

    def __post_init__(self) -> None:
        if isinstance(self.strategy, str) and self.strategy not in STRATEGIES:
            raise ValueError(f"unknown timing strategy {self.strategy!r}; use one of {', '.join(STRATEGIES)}")
        if self.flop < 0 or self.bytes < 0:
            raise ValueError("work must declare non-negative flop and bytes")
        if self.bytes and not self.bytes_convention:
            raise ValueError("work that declares bytes must name the convention that counts them")


def one_rank_findings(world_size: int) -> tuple[Finding, ...]:
    """A communication case's finding when its group holds one rank: no data crosses a link, so
    its time is the library's local path (a copy, or nothing) and it has no bus bandwidth; none
    on two ranks or more."""
    if world_size != 1:
        return ()
    return (Finding(code=ONE_RANK, severity=Severity.WARNING,
                    message="one rank: no data crosses a link, so this times the library's local path (a copy "
                            "or nothing), not communication, and gives no bus bandwidth",
                    hint="measure communication on two ranks or more: parity run --ranks 2, or parity comm ... "
                         "--nproc 2"),)

