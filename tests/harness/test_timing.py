"""The timing protocol on the scripted fake device: order of operations, budget -> count,
input rotation, graph replay and the findings a measurement raises about itself."""

from __future__ import annotations

import pytest

from parity.device.fake import FakeDevice
from parity.model.errors import ParityError
from parity.model.findings import Severity
from parity.timing import (
    InputRotation,
    calls_per_replay,
    clock_drop,
    measure,
    samples_for_budget,
    sets_to_exceed_cache,
)

MS = 1e-3


def test_protocol_order_on_fake_device() -> None:
    # Warm-up calls take 10, 4, 5, 6 ms (25 ms >= 20 ms), the flush 2 ms, then 5 timed calls.
    script = [
        10 * MS,
        4 * MS,
        5 * MS,
        6 * MS,
        2 * MS,
        1.0 * MS,
        1.1 * MS,
        1.2 * MS,
        1.3 * MS,
        1.4 * MS,
    ]
    device = FakeDevice(durations_s=script)
    m = measure(lambda: device.record("call"), device=device, warmup_s=20 * MS, budget_s=10 * MS)
    warm = ["start", "call", "stop", "sync"]
    timed = ["flush", "start", "call", "stop"]
    expected = (
        ["mark:warmup"]
        + warm * 4
        + ["mark:estimate-flush", "start", "flush", "stop", "sync"]
        + ["mark:measure"]
        + timed * 5
        + ["sync"]
    )
    assert device.ops == expected
    assert m.samples.values_s == pytest.approx([1.0 * MS, 1.1 * MS, 1.2 * MS, 1.3 * MS, 1.4 * MS])
    assert m.samples.method == "fake"
    assert m.samples.warmup_calls == 4
    # Median of the warm-up calls after the first: median(4, 5, 6) ms.
    assert m.samples.meta["per_call_estimate_s"] == pytest.approx(5 * MS)
    assert m.samples.meta["flush_s"] == pytest.approx(2 * MS)
    assert m.summary.median == pytest.approx(1.2 * MS)


def test_no_flush_means_no_flush_operations() -> None:
    device = FakeDevice(durations_s=[1 * MS])
    measure(
        lambda: device.record("call"),
        device=device,
        warmup_s=0,
        budget_s=3 * MS,
        flush_cache=False,
        min_samples=3,
    )
    assert "flush" not in device.ops
    assert device.ops[-1] == "sync" and device.ops.count("mark:measure") == 1
    # The last timed sample: start, call, stop, then the single synchronize.
    assert device.ops[-4:] == ["start", "call", "stop", "sync"]


def test_budget_turns_into_count_from_the_estimate() -> None:
    # 1 ms per call plus 1 ms per flush: a 50 ms budget gives 25 samples.
    device = FakeDevice(durations_s=[1 * MS])
    m = measure(lambda: None, device=device, warmup_s=0, budget_s=50 * MS)
    assert len(m.samples) == 25
    device = FakeDevice(durations_s=[1 * MS])
    m = measure(lambda: None, device=device, warmup_s=0, budget_s=50 * MS, flush_cache=False)
    assert len(m.samples) == 50


def test_samples_for_budget_hand_cases() -> None:
    assert (
        samples_for_budget(budget_s=0.2, per_sample_s=1e-3, min_samples=5, max_samples=10_000)
        == 200
    )
    assert samples_for_budget(budget_s=0.2, per_sample_s=0.3, min_samples=5, max_samples=100) == 5
    assert (
        samples_for_budget(budget_s=10, per_sample_s=1e-6, min_samples=5, max_samples=10_000)
        == 10_000
    )
    assert samples_for_budget(budget_s=0.2, per_sample_s=0.0, min_samples=5, max_samples=77) == 77
    assert samples_for_budget(budget_s=0.0299, per_sample_s=0.01, min_samples=1, max_samples=9) == 2
    with pytest.raises(ValueError):
        samples_for_budget(budget_s=1, per_sample_s=1, min_samples=10, max_samples=5)


def test_warmup_runs_at_least_one_call() -> None:
    device = FakeDevice(durations_s=[5.0])
    m = measure(lambda: None, device=device, warmup_s=0.0, budget_s=0.0, flush_cache=False)
    assert m.samples.warmup_calls == 1
    assert len(m.samples) == 5  # min_samples


def test_inputs_rotate_through_every_set_in_order() -> None:
    device = FakeDevice(durations_s=[1 * MS])
    seen: list[int] = []
    rotation = InputRotation(sets=(0, 1, 2), bytes_per_set=100, cache_bytes=250)
    measure(
        seen.append,
        device=device,
        inputs=rotation,
        warmup_s=2.5 * MS,
        budget_s=7 * MS,
        flush_cache=False,
    )
    # 3 warm-up calls (3 ms >= 2.5 ms), then 7 timed calls continue the cycle.
    assert seen == [0, 1, 2, 0, 1, 2, 0, 1, 2, 0]


def test_function_without_inputs_may_take_no_argument_or_one() -> None:
    device = FakeDevice(durations_s=[1 * MS])
    got: list[object] = []
    measure(
        lambda x: got.append(x),
        device=device,
        warmup_s=0,
        budget_s=0,
        min_samples=1,
        max_samples=1,
        flush_cache=False,
    )
    assert got == [None, None]
    got.clear()
    measure(
        lambda x=7: got.append(x),
        device=device,
        warmup_s=0,
        budget_s=0,
        min_samples=1,
        max_samples=1,
        flush_cache=False,
    )
    assert got == [7, 7]  # defaults are left alone


def test_sets_to_exceed_cache_hand_cases() -> None:
    # 1 MiB sets, 32 MiB cache: 33 sets (33 MiB > 32 MiB).
    assert sets_to_exceed_cache(bytes_per_set=1 << 20, cache_bytes=32 << 20, max_sets=64) == 33
    # A set larger than the cache: two sets, alternating.
    assert sets_to_exceed_cache(bytes_per_set=64 << 20, cache_bytes=32 << 20, max_sets=64) == 2
    # Capped.
    assert sets_to_exceed_cache(bytes_per_set=1024, cache_bytes=32 << 20, max_sets=64) == 64
    with pytest.raises(ParityError):
        sets_to_exceed_cache(bytes_per_set=0, cache_bytes=1, max_sets=4)


def test_input_rotation_build_exceeds_cache_with_distinct_sets() -> None:
    counter = iter(range(1000))
    rotation = InputRotation.build(lambda: next(counter), bytes_per_set=3000, cache_bytes=10_000)
    assert len(rotation) == 4  # floor(10000 / 3000) + 1
    assert rotation.total_bytes == 12_000 > rotation.cache_bytes
    assert rotation.exceeds_cache
    assert list(rotation.sets) == [0, 1, 2, 3]
    assert [rotation[i] for i in range(6)] == [0, 1, 2, 3, 0, 1]
    capped = InputRotation.build(lambda: 0, bytes_per_set=10, cache_bytes=10_000, max_sets=8)
    assert len(capped) == 8 and not capped.exceeds_cache
    assert capped.to_dict()["exceeds_cache"] is False


@pytest.mark.torch
def test_input_rotation_of_real_tensors_exceeds_the_cpu_cache() -> None:
    """Real tensors rotate past this host's LLC, whatever its size (32 MiB to 300 MiB and more).

    The set size follows the reported LLC (about 1/16 of it, at least 1 MiB), so the rotation
    needs about 17 sets on any host instead of assuming a cache small enough for 256 fixed sets.
    A host that reports no LLC (some virtual machines hide their caches) is given 32 MiB.
    """
    import math

    from parity.device import get_device

    device = get_device("cpu")
    llc = device.properties().llc_bytes or 32 * 1024 * 1024
    side = max(512, math.isqrt(max(llc // 16, 1) // 4) + 1)
    shape = (side, side)
    bytes_per_set = side * side * 4
    rotation = InputRotation.build(
        lambda: device.random_tensor(shape, "fp32"),
        bytes_per_set=bytes_per_set,
        cache_bytes=llc,
        max_sets=64,
    )
    assert len(rotation) <= 64
    assert rotation.exceeds_cache
    actual = sum(t.numel() * t.element_size() for t in rotation.sets)
    assert actual == rotation.total_bytes > llc
    assert not bool((rotation[0] == rotation[1]).all())


def test_rotation_that_fits_in_cache_without_flush_is_flagged() -> None:
    device = FakeDevice(durations_s=[1 * MS])
    rotation = InputRotation(sets=(0, 1), bytes_per_set=3 * 2**19, cache_bytes=32 * 2**20)
    m = measure(
        lambda _: None, device=device, inputs=rotation, warmup_s=0, budget_s=0, flush_cache=False
    )
    (found,) = [f for f in m.findings if f.code == "inputs-fit-in-cache"]
    assert found.message == "2 input sets of 1.5 MiB fit in the 32 MiB cache and the cache is not flushed"
    m = measure(lambda _: None, device=device, inputs=rotation, warmup_s=0, budget_s=0)
    assert "inputs-fit-in-cache" not in {f.code for f in m.findings}


def test_findings_high_variance_and_below_resolution() -> None:
    device = FakeDevice(durations_s=[1 * MS, 1 * MS, 1 * MS, 3 * MS], resolution_s=1e-4)
    m = measure(
        lambda: None, device=device, warmup_s=0, budget_s=0, min_samples=8, flush_cache=False
    )
    codes = {f.code for f in m.findings}
    assert "high-variance" in codes
    assert "below-resolution" in codes  # median 1 ms < 100 x 0.1 ms
    assert m.samples.resolution_s == 1e-4


def test_graph_replay_divides_by_calls_per_replay() -> None:
    # 10 us per call -> 100 calls per 1 ms replay; each replay "takes" 0.5 ms -> 5 us per call.
    device = FakeDevice(durations_s=[10e-6], graphs=True)
    calls: list[int] = []
    m = measure(
        lambda: calls.append(1),
        device=device,
        warmup_s=0,
        budget_s=0,
        flush_cache=False,
        graph=True,
    )
    assert m.samples.method == "graph-replay"
    assert m.samples.calls_per_sample == 100
    assert m.samples.resolution_s == pytest.approx(1e-9 / 100)  # per-call share of one reading
    assert device.ops.count("capture") == 1 and device.ops.count("replay") == 5
    assert len(calls) == 1 + 100  # one warm-up call, then the captured calls
    assert m.samples.values_s == pytest.approx([10e-6 / 100] * 5)
    capture = device.ops.index("capture")
    assert device.ops.index("mark:measure") > capture


def test_graph_on_device_without_graphs_falls_back_with_a_finding() -> None:
    device = FakeDevice(durations_s=[1 * MS])
    m = measure(lambda: None, device=device, warmup_s=0, budget_s=0, graph=True)
    assert m.samples.method == "fake"
    finding = next(f for f in m.findings if f.code == "graph-unavailable")
    assert finding.severity is Severity.INFO


def test_calls_per_replay_hand_cases() -> None:
    assert calls_per_replay(per_call_s=5e-6, inputs=1) == 200
    assert calls_per_replay(per_call_s=5e-6, inputs=3) == 201  # whole cycles of 3 sets
    assert calls_per_replay(per_call_s=1.0, inputs=1) == 1
    assert calls_per_replay(per_call_s=0.0, inputs=1) == 1000


def test_throttling_in_telemetry_becomes_a_finding() -> None:
    readings = [
        {"clock_mhz": 1980.0, "throttle_reasons": {"gpu_idle"}},
        {"clock_mhz": 1410.0, "throttle_reasons": {"hw_thermal_slowdown"}},
    ]
    device = FakeDevice(durations_s=[1 * MS], telemetry=readings)
    m = measure(lambda: None, device=device, warmup_s=0, budget_s=0, telemetry=True)
    throttled = [f for f in m.findings if f.code == "throttled"]
    assert len(throttled) == 1 and "hw_thermal_slowdown" in throttled[0].message
    assert m.telemetry["clock_mhz"]["min"] == 1410.0
    assert m.telemetry["clock_mhz"]["max"] == 1980.0
    assert m.telemetry["throttle_reasons"] == ["gpu_idle", "hw_thermal_slowdown"]
    assert "power_w" in m.telemetry["unavailable"]
    varied = next(f for f in m.findings if f.code == "clock-varied")
    assert "1410-1980 MHz (29% below its peak)" in varied.message


def test_clock_drop_hand_case() -> None:
    assert clock_drop(min_mhz=1410.0, max_mhz=1980.0) == pytest.approx(0.28788, abs=1e-5)
    assert clock_drop(min_mhz=2000.0, max_mhz=2000.0) == 0.0
    assert clock_drop(min_mhz=0.0, max_mhz=0.0) == 0.0


def test_steady_clock_raises_nothing() -> None:
    readings = [{"clock_mhz": 1980.0}, {"clock_mhz": 1900.0}]
    device = FakeDevice(durations_s=[1 * MS], telemetry=readings)
    m = measure(lambda: None, device=device, warmup_s=0, budget_s=0, telemetry=True)
    assert not {"clock-varied", "throttled"} & {f.code for f in m.findings}


def test_idle_reason_alone_is_not_throttling() -> None:
    device = FakeDevice(durations_s=[1 * MS], telemetry=[{"throttle_reasons": {"gpu_idle"}}])
    m = measure(lambda: None, device=device, warmup_s=0, budget_s=0, telemetry=True)
    assert "throttled" not in {f.code for f in m.findings}


def test_measurement_to_dict_keeps_raw_samples() -> None:
    device = FakeDevice(durations_s=[1 * MS, 2 * MS])
    m = measure(lambda: None, device=device, warmup_s=0, budget_s=0, flush_cache=False)
    data = m.to_dict()
    assert data["samples"]["values_s"] == list(m.samples.values_s)
    assert data["summary"]["median"] == m.summary.median
    assert isinstance(data["findings"], list)


@pytest.mark.torch
def test_measure_real_matmul_on_cpu() -> None:
    import torch

    from parity.device import get_device

    device = get_device("cpu")
    a = device.random_tensor((64, 64), torch.float32)
    b = device.random_tensor((64, 64), torch.float32)
    m = measure(
        lambda: a @ b,
        device=device,
        warmup_s=0.005,
        budget_s=0.02,
        min_samples=5,
        max_samples=50,
        flush_cache=True,
    )
    assert m.samples.method == "host-clock"
    assert 5 <= len(m.samples) <= 50
    assert all(v > 0 for v in m.samples.values_s)
    assert m.summary.min <= m.summary.median <= m.summary.max
    assert m.samples.meta["flush_s"] > 0


def test_max_over_ranks_of_one_process_keeps_its_own_values() -> None:
    from parity.timing.ranks import max_over_ranks

    samples = max_over_ranks((0.5, 0.25, 0.75), group=None, rank_method="injected", resolution_s=1e-6)
    assert samples.values_s == (0.5, 0.25, 0.75) and samples.method == "max-over-ranks"
    assert samples.meta == {"min_over_ranks_s": [0.5, 0.25, 0.75], "rank_median_s": [0.5], "world_size": 1,
                            "rank_method": "injected"}
    with pytest.raises(ParityError, match="no iteration was timed"):
        max_over_ranks((), group=None, rank_method="injected")


def _together(iterations: int = 3, **kwargs):
    from parity.harness.work import Work
    from parity.timing.together import TogetherAndAlone

    calls = {"work": 0, "companion": 0}

    def bump(name: str):
        return lambda: calls.__setitem__(name, calls[name] + 1)

    strategy = TogetherAndAlone(companion=kwargs.pop("companion", bump("companion")), iterations=iterations,
                                names=("exchange", "kernel"), **kwargs)
    return Work(call=bump("work"), check=lambda: {"passed": True, "method": "none"}, strategy=strategy), calls


def test_together_and_alone_times_five_series_and_derives_from_their_medians() -> None:
    seen = {}

    def derive(medians):
        seen.update(medians)
        return {"ratio": medians["both_s"] / medians["exchange_alone_s"]}, ()

    work, calls = _together(3, derive=derive)
    device = FakeDevice()
    timed = work.strategy.time(work, device=device, group=None)
    # one untimed call of each, then per iteration: alone, alone, together
    assert calls == {"work": 1 + 2 * 3, "companion": 1 + 2 * 3}
    assert set(timed.samples) == {"main", "exchange_alone", "kernel_alone", "exchange_together", "kernel_together"}
    assert all(len(s) == 3 and s.meta["rank_method"] == "host-clock" and s.meta["world_size"] == 1
               for s in timed.samples.values())
    assert set(seen) == {"exchange_alone_s", "kernel_alone_s", "both_s", "exchange_together_s", "kernel_together_s"}
    assert timed.metrics["both_s"] == timed.summary.median
    assert timed.metrics["ratio"] == pytest.approx(seen["both_s"] / seen["exchange_alone_s"])
    # every run starts with the device queue drained
    assert device.ops.count("sync") >= 3 * 3


def test_together_and_alone_raises_what_the_companion_raised() -> None:
    def broken() -> None:
        raise RuntimeError("kernel failed")

    work, _ = _together(2, companion=broken)
    with pytest.raises(RuntimeError, match="kernel failed"):
        work.strategy.time(work, device=FakeDevice(), group=None)
    with pytest.raises(ParityError, match="cannot time 0 iterations"):
        _together(0)


def test_a_timed_strategy_becomes_a_row_with_its_series_metrics_and_findings() -> None:
    from parity.harness.measure import measure_work
    from parity.harness.suite import CaseSpec
    from parity.model.findings import Finding

    note = Finding(code="noted", severity=Severity.WARNING, message="m", hint="h")
    work, _ = _together(2, derive=lambda medians: ({"x": 1.0}, (note,)))
    row = measure_work(CaseSpec(suite="s", key="k", params={}), work, device=FakeDevice())
    assert set(row.samples) == {"main", "exchange_alone", "kernel_alone", "exchange_together", "kernel_together"}
    assert row.metrics["x"] == 1.0 and row.metrics["strategy"] == "max-over-ranks"
    assert row.metrics["median_s"] == row.metrics["both_s"]
    assert [f.code for f in row.findings] == ["noted"] and row.ok
