"""``ForDuration``: a work repeated for a wall-clock duration, in chunks agreed between ranks,
each iteration's start stamped; a work that slows mid-run ends the run on time."""

from __future__ import annotations

import time

import pytest

from parity.harness.work import Work
from parity.model.errors import ParityError
from parity.timing.duration import ForDuration, chunk_size


def test_chunk_size_hand_cases() -> None:
    assert chunk_size(0.25, 0.002) == 125
    assert chunk_size(0.25, 1.0) == 1  # a call longer than the chunk: one per chunk
    assert chunk_size(0.25, 0.0) == 1
    assert chunk_size(0.25, 0.002, limit=7) == 7  # what is left of max_iterations
    assert chunk_size(10.0, 1e-9) == 100_000  # MAX_CHUNK


def test_a_duration_must_be_positive() -> None:
    with pytest.raises(ParityError, match="longer than 0 s"):
        ForDuration(duration_s=0)
    with pytest.raises(ParityError, match="chunk"):
        ForDuration(duration_s=1, chunk_s=0)


@pytest.mark.torch
def test_a_work_that_slows_mid_run_does_not_stretch_the_run() -> None:
    from parity.device import get_device

    begin = time.perf_counter()
    pauses: list[float] = []

    def call() -> None:  # 1 ms calls for the first 0.3 s, then 20 ms: a count fixed from the
        pause = 0.001 if time.perf_counter() - begin < 0.3 else 0.02  # first calls would run ~20x long
        pauses.append(pause)
        time.sleep(pause)

    strategy = ForDuration(duration_s=1.0, chunk_s=0.1)
    work = Work(call=call, check=lambda: {"passed": True, "method": "none"}, strategy=strategy,
                warmup_s=0.005, min_samples=3)
    timed = strategy.time(work, device=get_device("cpu"), group=None)
    samples = timed.samples["main"]
    starts = samples.meta["start_s"]
    assert len(starts) == len(samples.values_s) == timed.metrics["iterations"]
    assert starts == sorted(starts) and starts[0] >= 0
    wall = timed.metrics["wall_s"]
    assert 1.0 <= wall < 3.0  # the duration plus at most one chunk (a slow host gets room)
    slow = [t for s, t in zip(starts, samples.values_s) if s > 0.5]
    fast = [t for s, t in zip(starts, samples.values_s) if s < 0.2]
    assert slow and fast and min(slow) > max(fast)
    assert samples.meta["duration_s"] == 1.0


@pytest.mark.torch
def test_an_input_rotation_is_cycled() -> None:
    from parity.device import get_device

    seen: list[int] = []
    strategy = ForDuration(duration_s=0.05, chunk_s=0.01)
    work = Work(call=lambda i: seen.append(i), check=lambda: {"passed": True, "method": "none"},
                strategy=strategy, inputs=[0, 1, 2], warmup_s=0.0, min_samples=5)
    strategy.time(work, device=get_device("cpu"), group=None)
    assert seen[:6] == [0, 1, 2, 0, 1, 2] and len(seen) >= 5
