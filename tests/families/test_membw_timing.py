"""Calls per sample: a warm membw point times several back-to-back calls and divides."""

from __future__ import annotations

import pytest

from parity.device.fake import FakeDevice
from parity.harness.measure import time_work
from parity.harness.strategies import CallsPerSample
from parity.harness.work import Work


def test_each_sample_spans_calls_and_is_divided_by_them() -> None:
    # Every timer reading is 4 ms; 8 calls per sample make each sample 0.5 ms per call.
    device = FakeDevice(durations_s=[4e-3], resolution_s=1e-6)
    calls = []
    work = Work(call=lambda: calls.append(1), check=lambda: {"passed": True, "method": "none"},
                strategy=CallsPerSample(calls=8), flush_cache=False, warmup_s=0.0, budget_s=0.02,
                min_samples=5, max_samples=5)
    timed = time_work(work, device=device)
    main = timed.samples["main"]
    assert main.values_s == (5e-4,) * 5
    assert main.calls_per_sample == 8
    assert main.resolution_s == pytest.approx(1e-6 / 8)
    assert timed.summary.median == 5e-4
    assert len(calls) == 8 * (5 + main.warmup_calls)


def test_one_call_per_sample_is_the_plain_protocol() -> None:
    device = FakeDevice(durations_s=[2e-3])
    work = Work(call=lambda: None, check=lambda: {"passed": True, "method": "none"},
                strategy=CallsPerSample(calls=1), flush_cache=False, warmup_s=0.0, budget_s=0.01,
                min_samples=5, max_samples=5)
    main = time_work(work, device=device).samples["main"]
    assert main.values_s == (2e-3,) * 5 and main.calls_per_sample == 1


def test_calls_per_sample_must_be_positive() -> None:
    with pytest.raises(ValueError):
        CallsPerSample(calls=0)
