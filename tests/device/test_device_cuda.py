"""The CUDA backend on a real GPU: properties, events, flush, random tensors, graphs, NVML.

Skipped, with the reason, where torch sees no GPU.
"""

from __future__ import annotations

import time

import pytest

pytestmark = [pytest.mark.accelerator, pytest.mark.cuda, pytest.mark.torch]


@pytest.fixture(scope="module")
def gpu():
    from parity.device import get_device

    return get_device("cuda:0")


def test_properties(gpu) -> None:
    props = gpu.properties()
    assert gpu.name == "cuda:0" and gpu.type == "cuda" and gpu.has_events
    assert props.vendor in ("NVIDIA", "AMD")
    assert props.compute_units and props.compute_units > 0
    assert props.memory_bytes and props.memory_bytes > 1 << 30
    assert props.llc_bytes and props.llc_bytes >= 1 << 20


def test_event_timer_agrees_with_host_clock(gpu) -> None:
    import torch

    a = gpu.random_tensor((4096, 4096), torch.float32)
    gpu.synchronize()
    timer = gpu.event_timer()
    host_start = time.perf_counter()
    timer.start()
    for _ in range(10):
        a @ a
    timer.stop()
    gpu.synchronize()
    host_s = time.perf_counter() - host_start
    assert 0 < timer.elapsed_s() <= host_s * 1.05
    assert 0 < gpu.timer_resolution_s() < 1e-4


def test_flush_writes_twice_l2(gpu) -> None:
    gpu.flush_cache()
    buffer = gpu._flush_buffer
    assert buffer.is_cuda
    assert buffer.numel() * buffer.element_size() == 2 * gpu.properties().llc_bytes


@pytest.mark.parametrize("dtype", ["bfloat16", "float16", "float32", "int8", "float8_e4m3fn"])
def test_random_tensors_never_zero(gpu, dtype: str) -> None:
    import torch

    tensor = gpu.random_tensor((256, 256), dtype)
    assert tensor.is_cuda and tensor.dtype == getattr(torch, dtype)
    assert int((tensor.float() == 0).sum()) == 0


def test_measure_with_events_and_graph_replay(gpu) -> None:
    import torch

    from parity.timing import measure

    x = gpu.random_tensor((1024,), torch.float32)
    eager = measure(lambda: x.mul_(1.0), device=gpu, budget_s=0.05, flush_cache=False)
    graphed = measure(lambda: x.mul_(1.0), device=gpu, budget_s=0.05, flush_cache=False, graph=True)
    assert eager.samples.method == "device-events"
    assert graphed.samples.method == "graph-replay"
    assert graphed.samples.calls_per_sample > 1
    assert 0 < graphed.summary.median
    # Replay removes launch gaps; per-call graph time should not exceed eager time by much.
    assert graphed.summary.median < eager.summary.median * 2


def test_nvml_telemetry_and_provenance(gpu) -> None:
    pytest.importorskip("pynvml")
    if gpu.properties().vendor != "NVIDIA":
        pytest.skip("NVML is NVIDIA only")
    import torch

    from parity.device.provenance import collect_provenance

    a = gpu.random_tensor((4096, 4096), torch.bfloat16)
    with gpu.telemetry_sampler(interval_s=0.02) as sampler:
        for _ in range(50):
            a @ a
        gpu.synchronize()
    result = sampler.result()
    assert result["clock_mhz"]["max"] > 100
    assert result["temperature_c"]["max"] > 0
    assert "power_w" in result or "power_w" in result["unavailable"]
    assert isinstance(result["throttle_reasons"], list)
    info = collect_provenance(gpu)["device"]
    assert info["count"] >= 1
    assert isinstance(info["nvml"]["driver_version"], str)
    assert info["nvml"]["power_limit_w"] > 0


def test_readiness_smoke_on_cuda(gpu) -> None:
    from parity.device.readiness import backend_row

    row = backend_row("cuda", gpu.name, 300)
    assert row["installed"] and row["smoke"] == "passed", row


def test_free_memory_drops_when_a_tensor_is_held_and_empty_cache_returns_it(gpu) -> None:
    import torch

    total = gpu.properties().memory_bytes
    gpu.empty_cache()
    reserved_before = torch.cuda.memory_reserved(gpu.index)
    free_before = gpu.free_memory_bytes()
    assert free_before is not None and 0 < free_before <= total
    held = torch.empty(1 << 30, dtype=torch.uint8, device=gpu.torch_device)  # 1 GiB
    free_held = gpu.free_memory_bytes()
    assert free_held is not None and free_before - free_held >= 1 << 30
    del held
    assert torch.cuda.memory_reserved(gpu.index) > reserved_before  # the allocator kept it
    gpu.empty_cache()
    assert torch.cuda.memory_reserved(gpu.index) == reserved_before


def test_architecture_and_compute_capability_agree_with_torch(gpu) -> None:
    import torch

    if gpu.is_rocm:
        assert gpu.architecture().startswith("gfx")
        assert gpu.compute_capability() is None
        assert gpu.reduced_fp32_matmul_reason() is None
        return
    major, minor = torch.cuda.get_device_capability(gpu.index)
    assert gpu.compute_capability() == (major, minor)
    assert gpu.architecture() == f"sm_{major}{minor}"
    assert (gpu.reduced_fp32_matmul_reason() is None) == (major >= 8)


def test_distributed_backend_is_nccl(gpu) -> None:
    chosen = gpu.distributed_backend()
    assert chosen.name == "nccl" and chosen.fallback_reason is None


def test_consecutive_events_split_the_time_between_them(gpu) -> None:
    import torch

    a = gpu.random_tensor((4096, 4096), torch.float32)
    events = [gpu.create_event() for _ in range(3)]
    events[0].record()
    for _ in range(5):
        a @ a
    events[1].record()
    for _ in range(5):
        a @ a
    events[2].record()
    gpu.synchronize()
    first, second = events[0].elapsed_s(events[1]), events[1].elapsed_s(events[2])
    assert first > 0 and second > 0
    assert events[0].elapsed_s(events[2]) == pytest.approx(first + second, abs=2e-6)


def test_fp32_matmul_mode_switches_tf32(gpu) -> None:
    import torch

    before = torch.backends.cuda.matmul.allow_tf32
    with gpu.fp32_matmul_mode(reduced=True):
        assert torch.backends.cuda.matmul.allow_tf32 is True
    with gpu.fp32_matmul_mode(reduced=False):
        assert torch.backends.cuda.matmul.allow_tf32 is False
    assert torch.backends.cuda.matmul.allow_tf32 == before
