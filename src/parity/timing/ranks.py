"""Max over ranks: the time of a collective step is the slowest rank's, iteration by iteration.

Method (nccl-tests' convention, per iteration instead of per batch of iterations): every rank
times the same iterations with its own clock; then, for each iteration ``i``,

    t_i = max over ranks r of t[r, i]        (the timing: the step ends when the last rank does)
    m_i = min over ranks r of t[r, i]        (kept beside it, in ``meta["min_over_ranks_s"]``)
    median over i of t[r, i], for every r   (each rank's own median, ``meta["rank_median_s"]``)

by two ``all_reduce`` calls (MAX and MIN) over a float64 tensor of the per-iteration times, on
the group's gloo control channel (the numbers are tiny; no accelerator is involved). A wide
``t_i - m_i`` says the ranks did not finish together: a straggler, or ranks that did not start
together. Biases: per-rank clocks are not synchronised, so an iteration's max over ranks is a
max of durations, not of end times; ``time_iterations_over_ranks`` therefore starts every
iteration at a barrier, which removes start skew larger than the barrier's own jitter
(sub-millisecond over gloo on one host, more across hosts). An averaging convention (the mean
over ranks, as some vendor tables use) would hide the straggler and is not offered.

Every rank must call these, with the same number of iterations (checked: a mismatch is a
ParityError, not a hang).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from parity.model.errors import ParityError
from parity.model.samples import Samples
from parity.ranks.gather import barrier

if TYPE_CHECKING:  # pragma: no cover
    from parity.ranks.group import RankGroup

METHOD = "max-over-ranks"


def max_over_ranks(
    times_s: Sequence[float],
    *,
    group: RankGroup | None,
    rank_method: str,
    resolution_s: float = 0.0,
    calls_per_sample: int = 1,
    warmup_calls: int = 0,
) -> Samples:
    """Per-iteration ``max`` over ranks as the samples, ``min`` beside it (module docstring).

    ``times_s`` are this rank's per-iteration durations in seconds, taken by ``rank_method``
    (``device-events``, ``host-clock``); the result's ``resolution_s`` is the coarsest rank's.
    Example: rank 0 timed (1, 5, 3) s and rank 1 (4, 2, 3) s -> values (4, 5, 3), min (1, 2, 3).
    With ``group`` None the process is a group of one: the values are its own, unreduced.
    """
    import statistics

    if group is None:
        if not times_s:
            raise ParityError("no iteration was timed; time at least one")
        return Samples(values_s=tuple(times_s), method=METHOD, resolution_s=resolution_s,
                       calls_per_sample=calls_per_sample, warmup_calls=warmup_calls,
                       meta={"min_over_ranks_s": list(times_s), "rank_median_s": [statistics.median(times_s)],
                             "world_size": 1, "rank_method": rank_method})

    import torch
    import torch.distributed as dist

    count = len(times_s)
    shape = torch.tensor([count, -count, resolution_s], dtype=torch.float64)
    dist.all_reduce(shape, op=dist.ReduceOp.MAX, group=group.control)
    most, fewest, coarsest = int(shape[0]), -int(shape[1]), float(shape[2])
    if most != fewest:
        raise ParityError(
            f"ranks timed different numbers of iterations ({fewest} to {most}; rank "
            f"{group.rank} timed {count}); every rank must time the same iterations"
        )
    if count == 0:
        raise ParityError("no iteration was timed on any rank; time at least one")
    high = torch.tensor(list(times_s), dtype=torch.float64)
    low = high.clone()
    dist.all_reduce(high, op=dist.ReduceOp.MAX, group=group.control)
    dist.all_reduce(low, op=dist.ReduceOp.MIN, group=group.control)
    medians = [torch.zeros(1, dtype=torch.float64) for _ in range(group.world_size)]
    dist.all_gather(medians, torch.tensor([statistics.median(times_s)], dtype=torch.float64),
                    group=group.control)
    return Samples(
        values_s=tuple(high.tolist()),
        method=METHOD,
        resolution_s=coarsest,
        calls_per_sample=calls_per_sample,
        warmup_calls=warmup_calls,
        meta={
            "min_over_ranks_s": low.tolist(),
            "rank_median_s": [float(m[0]) for m in medians],
            "world_size": group.world_size,
            "rank_method": rank_method,
        },
    )


FALLBACK_BARRIER_TIMEOUT_S = 60.0  # for a group that states no timeout of its own


def barrier_timeout(group: Any, given: float | None) -> float:
    """How long a timing loop's barrier waits for a missing rank: ``given``, else the group's
    own timeout (``join_group(timeout_s=...)``: the commands' ``--rank-timeout``), so a rank
    that dies mid-measurement is named within the time the user set, as at every other step."""
    if given is not None:
        return given
    own = getattr(group, "timeout_s", None)
    return float(own) if isinstance(own, (int, float)) and own > 0 else FALLBACK_BARRIER_TIMEOUT_S


def time_iterations_over_ranks(
    fn: Callable[[], Any],
    *,
    group: RankGroup,
    iterations: int,
    warmup: int = 1,
    barrier_timeout_s: float | None = None,
) -> Samples:
    """Time ``fn`` for ``iterations`` iterations on every rank of ``group``, each iteration
    started at a barrier and timed by the device's timer, then reduced by ``max_over_ranks``.

    ``warmup`` untimed calls come first. The device queue is drained before each barrier, so
    no earlier work runs into the timed iteration; a rank that stops arriving fails the barrier
    within ``barrier_timeout_s`` with a ParityError naming it.
    """
    device = group.device
    if device is None:
        raise ParityError("the rank group has no device; join it with join_group(device=...)")
    if iterations < 1:
        raise ParityError(f"cannot time {iterations} iterations; ask for 1 or more")
    for _ in range(warmup):
        fn()
    times = [timed_at_barrier(fn, device=device, group=group, barrier_timeout_s=barrier_timeout_s)[1]
             for _ in range(iterations)]
    return max_over_ranks(
        times,
        group=group,
        rank_method="device-events" if device.has_events else "host-clock",
        resolution_s=device.timer_resolution_s(),
        warmup_calls=warmup,
    )


def timed_at_barrier(fn: Callable[[], Any], *, device: Any, group: RankGroup | None,
                     barrier_timeout_s: float | None = None) -> tuple[float, float]:
    """One iteration of ``fn``: the device queue drained, a barrier of ``group`` (none when
    ``group`` is None), then ``fn`` timed by the device's timer; (host clock when it started,
    its time in seconds)."""
    import time

    device.synchronize()
    if group is not None:
        barrier(group, timeout_s=barrier_timeout(group, barrier_timeout_s))
    timer = device.event_timer()
    begin = time.perf_counter()
    timer.start()
    fn()
    timer.stop()
    device.synchronize()
    return begin, timer.elapsed_s()


def measure_over_ranks(
    fn: Callable[..., Any],
    *,
    group: RankGroup,
    inputs: Any = None,
    warmup_s: float = 0.02,
    budget_s: float = 0.1,
    min_samples: int = 5,
    max_samples: int = 1000,
    flush_cache: bool = False,
    device: Any = None,
    barrier_timeout_s: float | None = None,
) -> Any:
    """A ``parity.timing.Measurement`` of ``fn`` timed on every rank, max over ranks per call.

    The same budget rule as ``parity.timing.measure``, agreed by every rank: one call, then
    ``ceil(warmup_s / slowest first call) - 1`` more warm-up calls on every rank (at most 10 s
    of them; the same count everywhere, since ``fn`` may be a collective), and each rank's
    per-call estimate; the iteration count is
    ``clamp(floor(budget_s / slowest per-call estimate), min_samples, max_samples)``, the same
    on every rank; then ``time_iterations_over_ranks``. The cache is not flushed between
    iterations (a flush per rank would be timed by the barrier); ``flush_cache=True`` adds an
    info finding that says so. ``inputs`` (an input rotation) gives call ``i`` its set ``i``.
    """
    import itertools

    from parity.model.findings import Finding, Severity
    from parity.stats.checks import check_samples
    from parity.stats.summary import summarize
    from parity.timing import samples_for_budget
    from parity.timing.measurement import Measurement

    calls = itertools.count()
    call = (lambda: fn(inputs[next(calls)])) if inputs is not None else fn
    dev = device if device is not None else group.device
    if dev is None:
        raise ParityError("the rank group has no device; join it with join_group(device=...)")
    _, slowest = agreed_warmup(call, group=group, device=dev, warmup_s=warmup_s,
                               barrier_timeout_s=barrier_timeout_s)
    count = samples_for_budget(budget_s=budget_s, per_sample_s=slowest, min_samples=min_samples,
                               max_samples=max_samples)
    samples = time_iterations_over_ranks(call, group=group, iterations=count, warmup=0,
                                         barrier_timeout_s=barrier_timeout_s)
    findings = tuple(check_samples(samples))
    if flush_cache:
        findings += (Finding(code="no-flush-over-ranks", severity=Severity.INFO,
                             message="timed over ranks without a cache flush between iterations",
                             hint="the work's inputs may be cache-resident after the first call"),)
    return Measurement(samples=samples, summary=summarize(samples.values_s), findings=findings)


def agreed_warmup(
    call: Callable[[], Any],
    *,
    group: RankGroup | None,
    device: Any,
    warmup_s: float,
    barrier_timeout_s: float | None = None,
) -> tuple[int, float]:
    """Warm ``call`` up the same number of times on every rank; (calls made, the slowest rank's
    per-call estimate in seconds).

    One call, then ``ceil(warmup_s / slowest first call) - 1`` more (at most 10 s of them); the
    count is agreed, not timed per rank: ``call`` may be a collective, and ranks that called it
    a different number of times would wait for each other forever. Each rank's estimate is the
    median of its calls after the first; the slowest rank's is returned. Example: first calls
    of 2 ms and 5 ms with ``warmup_s`` 0.02 give 4 calls on each rank. ``group`` None: this
    process alone.
    """
    import math
    import statistics
    import time

    from parity.ranks.gather import all_gather

    def timed_call() -> float:
        device.synchronize()
        begin = time.perf_counter()
        call()
        device.synchronize()
        return time.perf_counter() - begin

    def slowest(value: float) -> float:
        return value if group is None else max(all_gather(value, group=group, timeout_s=barrier_timeout(group, barrier_timeout_s)))

    times = [timed_call()]
    first = slowest(times[0])
    extra = 0 if first <= 0 else min(math.ceil(warmup_s / first), math.ceil(10.0 / first)) - 1
    times += [timed_call() for _ in range(max(0, extra))]
    return len(times), slowest(statistics.median(times[1:] or times))
