"""A search's budget leaves the cache flushes out: the device adds the host seconds of each
``flush_cache`` to ``flushed_s``, and ``SearchClock`` is wall time less the flushes made since it
started (a flush writes 2 x the last-level cache: 70 ms a call where a VM reports a 480 MiB L3,
which used up a 3 s ceiling search on its first shape)."""

from __future__ import annotations

from dataclasses import replace

from parity.device.cpu import CpuDevice
from parity.harness.strategies import SearchClock


class _SmallCache(CpuDevice):
    """The CPU device with a 1 MiB last-level cache, so a flush writes 2 MiB."""

    def properties(self):
        return replace(super().properties(), llc_bytes=1 << 20)


class _Ledger:
    flushed_s = 0.0


def test_every_flush_adds_its_host_seconds_to_the_ledger() -> None:
    device = _SmallCache()
    assert device.flushed_s == 0.0
    device.flush_cache()
    first = device.flushed_s
    device.flush_cache()
    assert 0.0 < first < device.flushed_s
    assert device.flush_bytes() == 2 << 20


def test_the_search_clock_is_wall_time_less_the_flushes_since_it_started() -> None:
    device = _Ledger()
    device.flushed_s = 100.0  # flushes before the clock started are not its own
    clock = SearchClock(device)
    device.flushed_s += 5.0  # 5 s of flushes while the clock ran
    assert clock.flushed_s() == 5.0
    assert -5.0 < clock() < -4.0  # well under a second of wall time, less 5 s of flushes


def test_a_device_without_a_ledger_counts_every_second() -> None:
    clock = SearchClock(object())
    assert clock.flushed_s() == 0.0 and clock() >= 0.0
