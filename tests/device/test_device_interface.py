"""The device interface beyond timing: free memory, empty cache, architecture, compute
capability, the distributed backend, events and the fp32 matmul mode.

Each method runs on the real CPU device and on the fake one; the code every torch accelerator
shares runs against a stand-in ``torch.<type>`` module; the CUDA checks are in
``test_device_cuda.py``, skipped with their reason where torch sees no GPU.
"""

from __future__ import annotations

import inspect
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from parity.device import Device, DeviceProperties, backends, get_device, host
from parity.device.accelerator import TorchAcceleratorDevice
from parity.device.distributed import PREFERRED, choose_backend
from parity.device.fake import FakeDevice
from parity.model.errors import ParityError

INTERFACE = (
    "synchronize",
    "create_event",
    "event_timer",
    "free_memory_bytes",
    "empty_cache",
    "architecture",
    "compute_capability",
    "distributed_backend",
    "reduced_fp32_matmul_reason",
    "fp32_matmul_mode",
)


# --- every backend answers every question ------------------------------------------------------


# Ids are not bare type names: conftest skips tests whose keywords include "cuda".
@pytest.mark.parametrize("type_name", sorted(backends()), ids=lambda name: f"{name}-backend")
def test_every_backend_implements_the_whole_interface(type_name: str) -> None:
    cls = backends()[type_name]
    assert not inspect.isabstract(cls), f"{type_name}: {sorted(cls.__abstractmethods__)}"
    for method in INTERFACE:
        assert callable(getattr(cls, method)), f"{type_name} lacks {method}"


def test_a_backend_that_skips_a_method_cannot_be_built() -> None:
    class Partial(Device):
        type = "partial"

        @classmethod
        def unusable_reason(cls, index: int | None) -> str | None:
            return None

        def synchronize(self) -> None:
            return None

        def properties(self) -> DeviceProperties:
            return DeviceProperties(name="partial", vendor="test", type=self.type)

    with pytest.raises(TypeError) as info:
        Partial()
    for missing in ("architecture", "empty_cache", "free_memory_bytes"):
        assert missing in str(info.value)


# --- the distributed backend table -----------------------------------------------------------


def _having(*names: str) -> Any:
    return lambda name: name in names


@pytest.mark.parametrize(
    ("device_type", "present", "expected"),
    [
        ("cuda", ("nccl", "gloo"), "nccl"),
        ("npu", ("hccl", "gloo"), "hccl"),
        ("xpu", ("xccl", "gloo"), "xccl"),
        ("cpu", ("nccl", "gloo"), "gloo"),
        ("fake", ("gloo",), "gloo"),
    ],
)
def test_each_device_gets_its_own_collectives_backend(
    device_type: str, present: tuple[str, ...], expected: str
) -> None:
    chosen = choose_backend(device_type, available=_having(*present), torch_version="2.9.0")
    assert chosen.name == expected and chosen.fallback_reason is None


def test_a_missing_vendor_backend_falls_back_to_gloo_and_says_why() -> None:
    chosen = choose_backend("xpu", available=_having("gloo"), torch_version="2.5.1")
    assert chosen.name == "gloo"
    assert chosen.fallback_reason == (
        "torch 2.5.1 has no xccl backend for xpu; "
        "collectives fall back to gloo, which runs them on host copies"
    )
    assert chosen.to_dict()["fallback_reason"] == chosen.fallback_reason
    (finding,) = chosen.findings()
    assert finding.code == "collectives-fallback" and finding.severity.value == "warning"
    assert finding.message == chosen.fallback_reason
    native = choose_backend("xpu", available=_having("xccl", "gloo"), torch_version="2.9.0")
    assert native.findings() == []


def test_mps_uses_gloo_with_a_note() -> None:
    chosen = choose_backend("mps", available=_having("gloo"), torch_version="2.9.0")
    assert chosen.name == "gloo" and chosen.fallback_reason is None
    assert chosen.note and "Apple" in chosen.note


def test_unknown_device_types_and_builds_without_gloo_fail_loudly() -> None:
    with pytest.raises(ParityError, match="no distributed backend is known for device type 'tpu'"):
        choose_backend("tpu", available=_having("gloo"), torch_version="2.9.0")
    with pytest.raises(ParityError, match="has neither nccl nor gloo for cuda collectives"):
        choose_backend("cuda", available=_having(), torch_version="2.9.0")


def test_backend_availability_on_a_torch_without_is_backend_available() -> None:
    from parity.device.distributed import _availability

    old_dist = SimpleNamespace(
        is_gloo_available=lambda: True,
        is_nccl_available=lambda: False,
        Backend=SimpleNamespace(backend_list=["gloo", "nccl", "hccl"]),
    )
    available = _availability(old_dist)
    assert available("gloo") and available("hccl")  # hccl: registered by torch_npu
    assert not available("nccl") and not available("xccl")


def test_the_table_covers_every_registered_backend() -> None:
    assert set(backends()) <= set(PREFERRED)


# --- the real CPU device -----------------------------------------------------------------------


def test_available_memory_from_a_meminfo_file(tmp_path: Path) -> None:
    meminfo = tmp_path / "meminfo"
    meminfo.write_text("MemTotal:  2048 kB\nMemFree:  512 kB\nMemAvailable:  1024 kB\n")
    assert host.available_memory_bytes(meminfo=meminfo) == 1024 * 1024
    meminfo.write_text("MemTotal:       2048 kB\n")  # kernels before 3.14 lack the line
    assert host.available_memory_bytes(meminfo=meminfo) is None
    assert host.available_memory_bytes(meminfo=tmp_path / "absent") is None


@pytest.mark.torch
def test_cpu_free_memory_is_the_hosts_available_memory() -> None:
    cpu = get_device("cpu")
    free = cpu.free_memory_bytes()
    total = cpu.properties().memory_bytes
    assert free is not None and total is not None
    assert 0 < free <= total


@pytest.mark.torch
def test_cpu_identity_and_memory_calls() -> None:
    import torch

    cpu = get_device("cpu")
    assert cpu.architecture() == host.architecture() != ""
    assert cpu.compute_capability() is None
    a = cpu.random_tensor((8, 8), torch.float32)
    cpu.empty_cache()  # nothing cached on the CPU: a no-op that leaves tensors alone
    assert torch.isfinite(a @ a).all()


@pytest.mark.torch
def test_cpu_collectives_run_on_the_backend_it_names(monkeypatch: pytest.MonkeyPatch) -> None:
    import torch
    import torch.distributed as dist

    # One rank, an in-process store, and gloo bound to the loopback interface: no network.
    monkeypatch.setenv("GLOO_SOCKET_IFNAME", "lo")

    chosen = get_device("cpu").distributed_backend()
    assert chosen.name == "gloo" and chosen.fallback_reason is None
    assert not dist.is_initialized()
    dist.init_process_group(chosen.name, store=dist.HashStore(), rank=0, world_size=1)
    try:
        value = torch.tensor([3.0, 4.0])
        dist.all_reduce(value)
        assert value.tolist() == [3.0, 4.0]
        assert dist.get_backend() == "gloo"
    finally:
        dist.destroy_process_group()


@pytest.mark.torch
def test_cpu_events_read_the_host_clock_between_records() -> None:
    cpu = get_device("cpu")
    first, second, third = (cpu.create_event() for _ in range(3))
    with pytest.raises(RuntimeError, match="before both events were recorded"):
        first.elapsed_s(second)
    first.record()
    time.sleep(0.02)
    second.record()
    time.sleep(0.01)
    third.record()
    assert 0.019 < first.elapsed_s(second) < 0.5
    assert 0.009 < second.elapsed_s(third) < 0.5
    whole = first.elapsed_s(third)
    assert whole == pytest.approx(first.elapsed_s(second) + second.elapsed_s(third), rel=1e-9)


@pytest.mark.torch
def test_cpu_fp32_matmuls_stay_fp32_and_the_setting_is_restored() -> None:
    import torch

    cpu = get_device("cpu")
    assert cpu.reduced_fp32_matmul_reason() == (
        "tf32 mode is not available on cpu: torch has no reduced-precision fp32 matmul switch there"
    )
    before = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = True
    try:
        with cpu.fp32_matmul_mode(reduced=False):
            assert torch.backends.cuda.matmul.allow_tf32 is False
            assert torch.get_float32_matmul_precision() == "highest"
        assert torch.backends.cuda.matmul.allow_tf32 is True
    finally:
        torch.backends.cuda.matmul.allow_tf32 = before


# --- the fake device -----------------------------------------------------------------------------


def test_fake_device_scripts_memory_identity_and_collectives() -> None:
    fake = FakeDevice(free_bytes=123, arch="gfx942:sramecc+:xnack-", capability=(9, 0))
    assert fake.free_memory_bytes() == 123
    assert FakeDevice(free_bytes=None).free_memory_bytes() is None
    assert fake.architecture() == "gfx942:sramecc+:xnack-"
    assert fake.compute_capability() == (9, 0)
    assert FakeDevice().architecture() == "fake" and FakeDevice().compute_capability() is None
    fake.empty_cache()
    with fake.fp32_matmul_mode(reduced=True):
        fake.synchronize()
    assert fake.ops == ["empty-cache", "fp32-matmul:reduced", "sync"]
    assert fake.reduced_fp32_matmul_reason() == (
        "tf32 mode is not available on fake: torch has no reduced-precision fp32 matmul switch "
        "there"
    )


@pytest.mark.torch
def test_fake_device_collectives_backend_is_gloo() -> None:
    chosen = FakeDevice().distributed_backend()
    assert chosen.name == "gloo" and chosen.fallback_reason is None


def test_fake_events_advance_a_scripted_clock() -> None:
    fake = FakeDevice(durations_s=[1.0, 2.0, 4.0])
    events = [fake.create_event() for _ in range(3)]
    with pytest.raises(RuntimeError, match="before both events were recorded"):
        events[0].elapsed_s(events[1])
    for event in events:
        event.record()
    # Stamped at 0, 1 and 3 s: the work between consecutive records takes 1 s, then 2 s.
    assert events[0].elapsed_s(events[1]) == 1.0
    assert events[1].elapsed_s(events[2]) == 2.0
    assert events[0].elapsed_s(events[2]) == 3.0
    assert fake.ops == ["record"] * 3


# --- what every torch accelerator shares, against a stand-in torch.<type> module --------------


class _StandInEvent:
    clock_ms = 0.0

    def __init__(self, *, enable_timing: bool) -> None:
        assert enable_timing
        self.at_ms: float | None = None
        self.stream: Any = None

    def record(self, stream: Any = None) -> None:
        self.at_ms, self.stream = _StandInEvent.clock_ms, stream
        _StandInEvent.clock_ms += 2.5

    def elapsed_time(self, end: _StandInEvent) -> float:
        assert self.at_ms is not None and end.at_ms is not None
        return end.at_ms - self.at_ms


class _StandIn(TorchAcceleratorDevice):
    """An accelerator whose ``torch.<type>`` module is a namespace, so the shared code runs
    without one."""

    type = "standin"

    def __init__(self, *, module: SimpleNamespace, index: int | None = 0) -> None:
        self._module = module
        super().__init__(index=index)

    def module(self) -> Any:
        return self._module

    @classmethod
    def unusable_reason(cls, index: int | None) -> str | None:
        return None

    def architecture(self) -> str:
        return "standin-1"

    def properties(self) -> DeviceProperties:
        return DeviceProperties(name="stand-in", vendor="test", type=self.type)


def _module(**extra: Any) -> SimpleNamespace:
    calls: list[str] = []
    return SimpleNamespace(
        calls=calls,
        set_device=lambda index: calls.append(f"set_device:{index}"),
        synchronize=lambda index=None: calls.append(f"synchronize:{index}"),
        current_stream=lambda index=None: f"stream{index}",
        Event=_StandInEvent,
        **extra,
    )


def test_accelerator_free_memory_and_empty_cache_call_the_backend_module() -> None:
    module = _module(mem_get_info=lambda index: (7 << 30, 80 << 30))
    module.empty_cache = lambda: module.calls.append("empty_cache")
    device = _StandIn(module=module, index=1)
    assert device.free_memory_bytes() == 7 << 30
    device.empty_cache()
    assert module.calls == ["set_device:1", "empty_cache"]


def test_accelerator_without_mem_get_info_says_it_does_not_know() -> None:
    def failing(index: int) -> tuple[int, int]:
        raise RuntimeError("driver busy")

    assert _StandIn(module=_module()).free_memory_bytes() is None
    assert _StandIn(module=_module(mem_get_info=failing)).free_memory_bytes() is None
    _StandIn(module=_module()).empty_cache()  # a module without empty_cache: nothing to do


def test_accelerator_events_are_recorded_on_the_current_stream_and_read_in_seconds() -> None:
    device = _StandIn(module=_module(), index=2)
    begin, end = device.create_event(), device.create_event()
    begin.record()
    end.record()
    assert begin._event.stream == "stream2"
    assert begin.elapsed_s(end) == pytest.approx(2.5e-3)
    timer = device.event_timer()
    timer.start()
    timer.stop()
    assert timer.elapsed_s() == pytest.approx(2.5e-3)


# --- the GEMM precisions ask the device --------------------------------------------------------


@pytest.mark.torch
def test_gemm_precisions_read_capability_and_architecture_from_the_device() -> None:
    import torch

    from parity.families.gemm.dtypes import (
        precision_mode,
        resolve_dtype,
        storage_dtype,
        unavailable_reason,
    )

    fp8, tf32 = resolve_dtype("fp8"), resolve_dtype("tf32")
    old = FakeDevice(capability=(8, 0))
    if hasattr(torch, "_scaled_mm"):
        assert unavailable_reason(fp8, old) == (
            "fp8 matmul needs compute capability 8.9 or newer; fake has 8.0"
        )
    assert unavailable_reason(tf32, FakeDevice()) == FakeDevice().reduced_fp32_matmul_reason()
    assert storage_dtype(fp8, FakeDevice(arch="gfx942:sramecc+:xnack-")) == torch.float8_e4m3fnuz
    assert storage_dtype(fp8, FakeDevice(arch="sm_90")) == torch.float8_e4m3fn
    fake = FakeDevice()
    with precision_mode(tf32, fake), precision_mode(resolve_dtype("fp32"), fake):
        pass
    assert fake.ops == ["fp32-matmul:reduced", "fp32-matmul:full"]


class _FakeWithMemory(FakeDevice):
    def properties(self) -> DeviceProperties:
        return DeviceProperties(name="fake", vendor="test", type=self.type, memory_bytes=64)


@pytest.mark.torch
def test_bench_free_memory_falls_back_as_before() -> None:
    from parity.families.gemm.inputs import free_memory_bytes as gemm_free
    from parity.families.membw.suite import free_memory_bytes as membw_free

    assert gemm_free(FakeDevice(free_bytes=5)) == membw_free(FakeDevice(free_bytes=5)) == 5
    # Unknown free memory: GEMM says so, membw falls back to the total memory.
    assert gemm_free(_FakeWithMemory(free_bytes=None)) is None
    assert membw_free(_FakeWithMemory(free_bytes=None)) == 64
