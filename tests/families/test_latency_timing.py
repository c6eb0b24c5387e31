"""The latency family's timing strategies: the two-length slope and the best-of probe."""

from __future__ import annotations

import pytest

from parity.harness.measure import time_work
from parity.harness.strategies import BestOf, TwoLengthSlope
from parity.harness.work import Work
from parity.model.samples import Samples
from parity.stats import summarize
from parity.timing.measurement import Measurement

CHECK = {"passed": True, "method": "none"}


def _chain_device(monkeypatch: pytest.MonkeyPatch, times: list[dict[int, tuple[float, ...]]]) -> list[int]:
    """Make ``parity.timing.slope.measure`` return, for the k-th pair timed, the scripted samples
    of the length the timed call asked for; returns the lengths asked for, in order."""
    import parity.timing.slope as slope

    asked: list[int] = []

    def fake_measure(fn, **_):
        fn()
        values = times[(len(asked) - 1) // 2][asked[-1]]
        samples = Samples(values_s=values, method="fake")
        return Measurement(samples=samples, summary=summarize(values))

    monkeypatch.setattr(slope, "measure", fake_measure)
    return asked


def test_slope_of_medians_and_minima_by_hand(monkeypatch: pytest.MonkeyPatch) -> None:
    # t(n) = 100 us + n * 2 ns at the minimum, 3 ns per load more at the median.
    # short 1000 loads: min 102 us, median 105 us; long 4000: min 108 us, median 120 us.
    # slope of minima (108 - 102) us / 3000 = 2 ns; of medians (120 - 105) us / 3000 = 5 ns.
    asked = _chain_device(monkeypatch, [{1000: (102e-6, 105e-6, 110e-6), 4000: (108e-6, 120e-6, 130e-6)}])
    work = Work(call=lambda n: asked.append(n), check=lambda: CHECK, flush_cache=False,
                strategy=TwoLengthSlope(short=1000, long=4000, attempts=3))
    timed = time_work(work, device=None)
    assert asked == [1000, 4000]
    assert timed.metrics["slope_s"] == pytest.approx(5e-9, rel=1e-9)
    assert timed.metrics["slope_min_s"] == pytest.approx(2e-9, rel=1e-9)
    assert timed.metrics["attempts"] == 1
    assert timed.metrics["short_median_s"] == 105e-6 and timed.metrics["long_min_s"] == 108e-6
    assert timed.samples["main"] is timed.samples["long"] and timed.samples["short"].values_s[0] == 102e-6
    assert timed.summary.median == 120e-6


def test_a_disturbed_pair_is_timed_again(monkeypatch: pytest.MonkeyPatch) -> None:
    disturbed = {100: (2e-3,), 400: (1e-3,)}  # the short chain slower: a slope below zero
    calm = {100: (1e-3,), 400: (2.5e-3,)}  # (2.5 - 1) ms / 300 = 5 us per unit
    asked = _chain_device(monkeypatch, [disturbed, calm])
    work = Work(call=lambda n: asked.append(n), check=lambda: CHECK, flush_cache=False,
                strategy=TwoLengthSlope(short=100, long=400, attempts=3))
    timed = time_work(work, device=None)
    assert asked == [100, 400, 100, 400]
    assert timed.metrics["attempts"] == 2
    assert timed.metrics["slope_s"] == pytest.approx(5e-6)


def test_slope_refuses_lengths_out_of_order() -> None:
    with pytest.raises(ValueError):
        TwoLengthSlope(short=400, long=400)
    with pytest.raises(ValueError):
        TwoLengthSlope(short=1, long=2, attempts=0)


def test_best_of_keeps_every_probe_and_the_shortest(monkeypatch: pytest.MonkeyPatch) -> None:
    from parity.timing import probe

    ticks = iter([0.0, 3.0, 10.0, 12.0, 20.0, 24.0])  # probes of 3 s, 2 s, 4 s

    class Device:
        syncs = 0

        def synchronize(self) -> None:
            Device.syncs += 1

    monkeypatch.setattr(probe.time, "perf_counter", lambda: next(ticks))
    work = Work(call=lambda: None, check=lambda: CHECK, strategy=BestOf(repeats=3))
    timed = time_work(work, device=Device())
    assert timed.samples["main"].values_s == (3.0, 2.0, 4.0)
    assert timed.summary.min == 2.0 and timed.metrics["best_s"] == 2.0
    assert Device.syncs == 6
