"""The device layer: selection and its errors, the real CPU device, host facts from sysfs, the
fake device, and the telemetry readers' parsing."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from parity.device import backends, get_device, host, parse_name
from parity.device.fake import FakeDevice
from parity.device.npu import parse_npu_smi
from parity.device.telemetry import TelemetrySampler, throttling
from parity.model.errors import ParityError

SYS_CACHE = Path("/sys/devices/system/cpu/cpu0/cache")


# --- selection -----------------------------------------------------------------------------


def test_parse_name() -> None:
    assert parse_name("cuda:1") == ("cuda", 1)
    assert parse_name("cpu") == ("cpu", None)
    assert parse_name(" NPU:0 ") == ("npu", 0)
    with pytest.raises(ParityError, match="malformed"):
        parse_name("cuda:x")


def test_unknown_device_type_names_the_known_ones() -> None:
    with pytest.raises(ParityError) as info:
        get_device("tpu:0")
    message = str(info.value)
    assert message.startswith("device 'tpu:0': unknown device type 'tpu'")
    assert "cpu, cuda, fake, mps, npu, xpu" in message
    assert "\n" not in message


def test_registry_holds_every_backend() -> None:
    assert set(backends()) >= {"cpu", "cuda", "npu", "xpu", "mps", "fake"}


@pytest.mark.torch
def test_unusable_cuda_error_names_device_torch_and_what_is_available() -> None:
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA")
    with pytest.raises(ParityError) as info:
        get_device("cuda:0")
    message = str(info.value)
    assert message.startswith("device 'cuda:0' is not usable: ")
    assert f"torch {torch.__version__}" in message
    assert message.endswith("available: cpu")
    assert "\n" not in message


@pytest.mark.torch
def test_cpu_index_out_of_range_is_refused() -> None:
    with pytest.raises(ParityError, match="not usable: there is one cpu device"):
        get_device("cpu:3")


@pytest.mark.torch
def test_detect_falls_back_to_the_cpu_without_accelerators() -> None:
    import torch

    if torch.cuda.is_available() or torch.backends.mps.is_available():
        pytest.skip("an accelerator is present")
    device = get_device()
    assert device.name == "cpu" and device.type == "cpu" and device.index is None
    assert str(device.torch_device) == "cpu"
    assert not device.has_events and not device.supports_graphs


# --- the CPU device, for real ----------------------------------------------------------------


def _sysfs_cache_sizes() -> dict[int, int]:
    """Level -> bytes of the data/unified caches, read straight from sysfs for comparison."""
    sizes = {}
    for index in SYS_CACHE.glob("index*"):
        kind = (index / "type").read_text().strip()
        if kind in ("Data", "Unified"):
            text = (index / "size").read_text().strip()
            assert text.endswith("K")
            sizes[int((index / "level").read_text())] = int(text[:-1]) * 1024
    return sizes


@pytest.mark.torch
@pytest.mark.skipif(not SYS_CACHE.is_dir(), reason="no sysfs cache information on this host")
def test_cpu_properties_report_this_machines_caches(reported_llc: None) -> None:
    """Compared with what this host itself says (sysfs caches, affinity, total RAM, machine
    type), never with fixed sizes: it holds on a 32 MiB or a 300 MiB LLC, on any core count and
    any architecture torch runs on."""
    import platform

    props = get_device("cpu").properties()
    expected = _sysfs_cache_sizes()
    assert props.llc_bytes == expected[max(expected)]
    assert props.l1_bytes == expected.get(1)
    assert props.l2_bytes == expected.get(2)
    assert props.compute_units == len(os.sched_getaffinity(0))
    assert props.memory_bytes == os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    assert props.type == "cpu" and props.name
    data = props.to_dict()
    arch = {"x86_64": "x86-64", "aarch64": "arm64"}.get(platform.machine(), platform.machine())
    assert data["llc_bytes"] == props.llc_bytes and data["extra"]["architecture"] == arch


@pytest.mark.torch
@pytest.mark.parametrize("dtype", ["bfloat16", "float16", "float32", "int8"])
def test_cpu_random_tensors_are_random_and_never_zero(dtype: str) -> None:
    import torch

    device = get_device("cpu")
    tensor = device.random_tensor((128, 64), dtype)
    assert tensor.dtype == getattr(torch, dtype)
    assert tuple(tensor.shape) == (128, 64)
    assert int((tensor == 0).sum()) == 0
    assert tensor.unique().numel() > 20  # not a constant fill
    assert bool((tensor < 0).any()) and bool((tensor > 0).any())
    again = device.random_tensor((128, 64), dtype)
    assert not torch.equal(tensor, again)


@pytest.mark.torch
def test_random_tensor_is_reproducible_with_a_generator() -> None:
    import torch

    device = get_device("cpu")
    first = device.random_tensor((16, 16), "bf16", generator=torch.Generator().manual_seed(7))
    second = device.random_tensor((16, 16), "bf16", generator=torch.Generator().manual_seed(7))
    assert torch.equal(first, second)


@pytest.mark.torch
def test_float8_and_bool_tensors() -> None:
    import torch

    device = get_device("cpu")
    fp8 = device.random_tensor((64, 64), torch.float8_e4m3fn)
    assert fp8.dtype == torch.float8_e4m3fn
    assert int((fp8.float() == 0).sum()) == 0
    assert bool(torch.isfinite(fp8.float()).all())
    flags = device.random_tensor((1000,), torch.bool)
    assert 300 < int(flags.sum()) < 700
    with pytest.raises(ParityError, match="unknown dtype"):
        device.random_tensor((2,), "float7")


@pytest.mark.torch
def test_cpu_supports_common_dtypes() -> None:
    device = get_device("cpu")
    for dtype in ("float32", "bfloat16", "float16", "int8"):
        assert device.supports_dtype(dtype)


@pytest.mark.torch
def test_cpu_flush_writes_twice_the_last_level_cache() -> None:
    """Twice whatever LLC this host reports; a host that reports none (some virtual machines
    hide their caches) gets the default flush size instead."""
    from parity.device.base import DEFAULT_FLUSH_BYTES

    device = get_device("cpu")
    llc = device.properties().llc_bytes
    device.flush_cache()
    buffer = device._flush_buffer
    want = 2 * llc if llc else DEFAULT_FLUSH_BYTES
    assert buffer.numel() * buffer.element_size() == want == device.flush_bytes()
    first = int(buffer[0])
    device.flush_cache()
    assert int(device._flush_buffer[-1]) != first  # rewritten with a new value each time


@pytest.mark.torch
def test_cpu_timer_measures_host_time() -> None:
    device = get_device("cpu")
    timer = device.event_timer()
    timer.start()
    time.sleep(0.02)
    timer.stop()
    assert 0.019 < timer.elapsed_s() < 0.5
    resolution = device.timer_resolution_s()
    assert 0 < resolution < 1e-3


@pytest.mark.torch
def test_cpu_telemetry_reads_a_clock_or_says_why_not() -> None:
    device = get_device("cpu")
    with device.telemetry_sampler(interval_s=0.01) as sampler:
        time.sleep(0.05)
    result = sampler.result()
    assert result["readings"] >= 2
    for metric in ("clock_mhz", "power_w", "temperature_c", "throttle_reasons"):
        assert metric in result or result["unavailable"][metric]
    if "clock_mhz" in result:
        assert result["clock_mhz"]["min"] > 100


# --- host facts from sysfs, on a hand-made tree ------------------------------------------------


def test_parse_size_and_cpu_lists() -> None:
    assert host.parse_size("32K") == 32 * 1024
    assert host.parse_size("32768K") == 32 * 1024 * 1024
    assert host.parse_size("1 MiB") == 1 << 20
    assert host.parse_size("512") == 512
    assert host.parse_cpu_list("0-3,8,10-11\n") == {0, 1, 2, 3, 8, 10, 11}
    assert host._format_cpu_list({0, 1, 2, 5, 7, 8}) == "0-2,5,7-8"


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text + "\n")


def test_cache_sizes_from_a_sysfs_tree(tmp_path: Path) -> None:
    for i, (level, kind, size, shared) in enumerate(
        [
            (1, "Data", "48K", "0"),
            (1, "Instruction", "32K", "0"),
            (2, "Unified", "2048K", "0"),
            (3, "Unified", "107520K", "0-55"),
        ]
    ):
        index = tmp_path / "cpu0" / "cache" / f"index{i}"
        _write(index / "level", str(level))
        _write(index / "type", kind)
        _write(index / "size", size)
        _write(index / "shared_cpu_list", shared)
    sizes = host.cache_sizes(root=tmp_path)
    assert sizes == {"l1_bytes": 48 * 1024, "l2_bytes": 2 << 20, "llc_bytes": 105 << 20}
    levels = host.cpu_caches(root=tmp_path)
    assert levels[-1].shared_cpus == 56


def test_numa_nodes_from_a_sysfs_tree(tmp_path: Path) -> None:
    _write(tmp_path / "node0" / "cpulist", "0-3")
    _write(tmp_path / "node1" / "cpulist", "4-7")
    assert host.numa_nodes(root=tmp_path) == {0: {0, 1, 2, 3}, 1: {4, 5, 6, 7}}


def test_placement_matches_the_os() -> None:
    placement = host.placement()
    allowed = os.sched_getaffinity(0)
    assert placement["affinity_count"] == len(allowed)
    assert placement["pinned"] == (allowed < host.online_cpus())


# --- fake device and telemetry parsing -------------------------------------------------------


def test_fake_device_scripts_durations_and_records_operations() -> None:
    device = get_device("fake")
    assert isinstance(device, FakeDevice)
    fake = FakeDevice(durations_s=[1.0, 2.0])
    timers = [fake.event_timer() for _ in range(3)]
    for timer in timers:
        timer.start()
        timer.stop()
    fake.synchronize()
    fake.flush_cache()
    assert [t.elapsed_s() for t in timers] == [1.0, 2.0, 1.0]
    assert fake.ops == ["start", "stop"] * 3 + ["sync", "flush"]
    with pytest.raises(ParityError):
        FakeDevice(durations_s=[])


def test_telemetry_sampler_summarises_and_explains_gaps() -> None:
    class Source:
        name = "test"

        def __init__(self) -> None:
            self.values = iter([1000.0, 1200.0, 1100.0] + [1100.0] * 100)

        def read(self) -> dict[str, object]:
            return {"clock_mhz": next(self.values)}

        def unavailable(self) -> dict[str, str]:
            return {"power_w": "no sensor"}

    with TelemetrySampler(sources=[Source()], interval_s=10.0) as sampler:
        pass  # one reading on entry, one on exit
    result = sampler.result()
    assert result["readings"] == 2
    assert result["clock_mhz"]["min"] == 1000.0 and result["clock_mhz"]["max"] == 1200.0
    assert result["unavailable"]["power_w"] == "test: no sensor"
    assert "temperature_c" in result["unavailable"]


def test_throttling_ignores_benign_reasons() -> None:
    assert throttling({"gpu_idle", "applications_clocks_setting"}) == []
    assert throttling(["sw_power_cap", "gpu_idle", "thermal"]) == ["sw_power_cap", "thermal"]


def test_nvml_reason_bits_decode_with_pynvml_constants() -> None:
    pynvml = pytest.importorskip("pynvml")
    from parity.device.nvml import decode_reasons

    assert decode_reasons(0x1 | 0x4, pynvml) == {"gpu_idle", "sw_power_cap"}
    assert decode_reasons(0x40, pynvml) == {"hw_thermal_slowdown"}
    assert decode_reasons(0, pynvml) == set()


def test_npu_smi_output_parsing() -> None:
    text = """
        NPU ID                         : 0
        Chip Count                     : 1
        Aicore Usage Rate(%)           : 0
        Aicore Freq(MHZ)               : 1800
        Aicore curFreq(MHZ)            : 1650
        Temperature(C)                 : 43
        Power Dissipation(W)           : 92.4
    """
    assert parse_npu_smi(text) == {"clock_mhz": 1650.0, "temperature_c": 43.0, "power_w": 92.4}


def test_cpu_telemetry_on_a_sysfs_tree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from parity.device import telemetry

    cpu = tmp_path / "devices/system/cpu"
    _write(cpu / "cpu0/cpufreq/scaling_cur_freq", "3500000")
    _write(cpu / "cpu1/cpufreq/scaling_cur_freq", "800000")
    _write(cpu / "cpu0/thermal_throttle/core_throttle_count", "4")
    _write(tmp_path / "class/thermal/thermal_zone0/type", "x86_pkg_temp")
    _write(tmp_path / "class/thermal/thermal_zone0/temp", "61000")
    rapl = tmp_path / "class/powercap/intel-rapl:0"
    _write(rapl / "energy_uj", "1000000")
    _write(tmp_path / "class/powercap/intel-rapl:0:0/energy_uj", "5")  # a subdomain: ignored
    clock = iter([10.0, 10.5])
    monkeypatch.setattr(telemetry.time, "perf_counter", lambda: next(clock))

    source = telemetry.CpuTelemetry(cpus={0, 1}, sys_root=tmp_path)
    first = source.read()
    assert first == {"clock_mhz": 3500.0, "temperature_c": 61.0, "throttle_reasons": set()}
    _write(rapl / "energy_uj", "41000000")  # 40 J in 0.5 s
    _write(cpu / "cpu0/thermal_throttle/core_throttle_count", "5")
    second = source.read()
    assert second["power_w"] == pytest.approx(80.0)
    assert second["throttle_reasons"] == {"thermal"}
    assert source.unavailable()["memory_clock_mhz"]


@pytest.mark.torch
def test_a_given_last_level_cache_sizes_the_runs_and_both_sizes_are_recorded(monkeypatch: pytest.MonkeyPatch) -> None:
    """PARITY_CPU_LLC_BYTES (for a VM that reports its host's whole L3) replaces the size runs
    are sized by, and the properties keep the size the system reported and say where the one
    used came from."""
    from parity.device.host import cache_sizes

    monkeypatch.setenv("PARITY_CPU_LLC_BYTES", str(3 << 20))
    device = get_device("cpu")
    props = device.properties()
    assert props.llc_bytes == 3 << 20 and device.flush_bytes() == 6 << 20
    assert props.extra["llc_source"] == "PARITY_CPU_LLC_BYTES"
    assert props.extra["llc_reported_bytes"] == cache_sizes()["llc_bytes"]
    monkeypatch.delenv("PARITY_CPU_LLC_BYTES")
    unset = device.properties()
    assert unset.llc_bytes == cache_sizes()["llc_bytes"] and "llc_source" not in unset.extra


@pytest.mark.torch
@pytest.mark.parametrize("value", ["32MiB", "-1", "0", "1.5e6", "lots"])
def test_a_given_last_level_cache_that_is_no_byte_count_is_one_line_naming_it(
        monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    from parity.model.errors import ParityError

    monkeypatch.setenv("PARITY_CPU_LLC_BYTES", value)
    with pytest.raises(ParityError) as info:
        get_device("cpu").properties()
    assert str(info.value).startswith(f"PARITY_CPU_LLC_BYTES={value!r}: not a size in bytes")
    assert "\n" not in str(info.value)
