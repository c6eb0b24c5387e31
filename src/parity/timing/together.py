"""Together and alone: a work's time alone, a companion's time alone, and both at once.

"How much does running B beside A cost each, and how much of the shorter one hides under the
other" as a timing strategy. Per iteration, three runs, interleaved so that a drift of the
machine's speed falls on all three alike (alone, alone, together), each started at a barrier of
the group after the device queue is drained:

1. the work (``Work.call``) alone;
2. the companion alone;
3. both together: the companion in a second thread, the work in this one, each timing itself
   with the host clock and a device synchronize, and the wall time of the pair.

Threads on every device: on the CPU they share the cores and the memory bandwidth, which is
the point; on an accelerator the companion's thread synchronizes the device to time itself, so
its time there includes the work's kernels when they share the device queue.

Each of the five series is reduced over ranks by ``parity.timing.ranks.max_over_ranks``
(``host-clock``), and named after ``names`` (``("exchange", "kernel")`` gives
``exchange_alone``, ``kernel_alone``, ``exchange_together``, ``kernel_together``); the pair's
wall time is ``main``. The metrics hold each series' median as ``<series>_s`` (``both_s`` for
the pair) and whatever the caller's ``derive`` makes of those medians (slowdowns, the overlap
achieved), with its findings: the formulas belong to ``parity.metrics``, which this layer does
not import.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from parity.model.errors import ParityError
from parity.model.findings import Finding
from parity.model.samples import Samples
from parity.timing.timed import Timed


# What the caller makes of the medians: (metrics, findings).
Derive = Callable[[Mapping[str, float]], tuple[Mapping[str, Any], tuple[Finding, ...]]]


@dataclass(frozen=True, kw_only=True)
class TogetherAndAlone:
    """Time ``Work.call`` alone, ``companion`` alone and both at once (module docstring) for
    ``iterations`` interleaved iterations, after one untimed call of each."""

    companion: Callable[[], Any]
    iterations: int
    names: tuple[str, str] = ("work", "companion")
    derive: Derive | None = None
    barrier_timeout_s: float | None = None  # None: the group's own timeout (timing.ranks.barrier_timeout)

    def __post_init__(self) -> None:
        if self.iterations < 1:
            raise ParityError(f"cannot time {self.iterations} iterations together and alone; ask for 1 or more")

    def time(self, work: Any, *, device: Any, group: Any = None) -> Timed:
        """The five series over ranks (``group`` None: this process alone), their medians and
        what ``derive`` makes of them."""
        from parity.stats.summary import summarize
        from parity.timing.ranks import max_over_ranks

        mine = run_together_and_alone(work.call, self.companion, device=device, group=group,
                                      iterations=self.iterations, names=self.names,
                                      barrier_timeout_s=self.barrier_timeout_s)
        series = {name: max_over_ranks(values, group=group, rank_method="host-clock")
                  for name, values in mine.items()}
        medians = {f"{name}_s": statistics.median(s.values_s) for name, s in series.items()}
        derived, findings = self.derive(medians) if self.derive is not None else ({}, ())
        samples: dict[str, Samples] = {("main" if name == "both" else name): s for name, s in series.items()}
        return Timed(samples=samples, summary=summarize(samples["main"].values_s),
                     metrics={**medians, **derived}, findings=tuple(findings))


def run_together_and_alone(work: Callable[[], Any], companion: Callable[[], Any], *, device: Any, group: Any,
                           iterations: int, names: tuple[str, str],
                           barrier_timeout_s: float | None = None) -> dict[str, list[float]]:
    """This rank's durations, s, of each series by name (``<a>_alone``, ``<b>_alone``, ``both``,
    ``<a>_together``, ``<b>_together``); an exception of either call is raised again here."""
    import threading
    import time

    from parity.ranks.gather import barrier
    from parity.timing.ranks import barrier_timeout

    a, b = names
    mine: dict[str, list[float]] = {name: [] for name in
                                    (f"{a}_alone", f"{b}_alone", "both", f"{a}_together", f"{b}_together")}
    failure: list[BaseException] = []

    def timed(name: str, fn: Callable[[], Any]) -> None:
        begin = time.perf_counter()
        try:
            fn()
            device.synchronize()
        except BaseException as exc:  # noqa: BLE001 - raised again on this rank's main thread
            failure.append(exc)
        mine[name].append(time.perf_counter() - begin)

    def both() -> None:
        worker = threading.Thread(target=timed, args=(f"{b}_together", companion))
        worker.start()
        timed(f"{a}_together", work)
        worker.join()

    work()
    companion()
    for _ in range(iterations):
        for name, fn in ((f"{a}_alone", work), (f"{b}_alone", companion), ("both", both)):
            device.synchronize()
            if group is not None:
                barrier(group, timeout_s=barrier_timeout(group, barrier_timeout_s))
            timed(name, fn)
            if failure:
                raise failure[0]
    return mine
