"""An Intel GPU's settings read from hand-made i915 and xe sysfs trees (files as the drivers
write them): the GT frequency lock per layout, the power cap, tiles and PCIe; several cards read
only when they agree; the audit's wording; the clock telemetry."""

from __future__ import annotations

from pathlib import Path

import pytest

from parity.compare.audit import audit_runs
from parity.device.intel_sysfs import IntelGpuTelemetry, intel_cards, intel_conditions
from parity.model.result import CaseResult, RunRecord


def _write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text + "\n")


def _card(sys_root: Path, number: int, address: str, files: dict[str, str]) -> Path:
    """``cardN`` with its PCI device folder (vendor, PCIe link, hwmon) and the driver's ``files``."""
    device = sys_root / "devices" / "pci0000:00" / address
    _write(device, {"vendor": "0x8086", "current_link_speed": "16.0 GT/s PCIe", "current_link_width": "16",
                    "max_link_speed": "32.0 GT/s PCIe", "max_link_width": "16",
                    "hwmon/hwmon2/name": "xe", "hwmon/hwmon2/power1_max": "450000000",
                    "hwmon/hwmon2/power1_rated_max": "600000000"})
    card = sys_root / "class" / "drm" / f"card{number}"
    card.mkdir(parents=True)
    (card / "device").symlink_to(device)
    _write(card, files)
    return card


def _xe(low: int = 900, high: int = 1600, act: int = 1550) -> dict[str, str]:
    """Two tiles of one GT each (a Data Center GPU Max), xe layout."""
    files = {}
    for tile in ("tile0", "tile1"):
        base = f"device/{tile}/gt0/freq0/"
        files.update({base + "min_freq": str(low), base + "max_freq": str(high), base + "rpn_freq": "300",
                      base + "rp0_freq": "1600", base + "act_freq": str(act)})
    return files


def test_xe_two_tiles_capped_and_one_gt_i915_locked(tmp_path: Path) -> None:
    _card(tmp_path / "xe", 1, "0000:3a:00.0", _xe(low=300, high=1200))
    got = intel_conditions(None, sys_root=tmp_path / "xe")
    assert isinstance(got, dict) and got["card"] == "0000:3a:00.0"
    assert got["clocks"]["lock"] == "capped at 1200 MHz (hardware 1600 MHz)"
    assert got["clocks"]["gt_mhz"]["tile1/gt0"] == {"min": 300, "max": 1200, "hardware_min": 300,
                                                    "hardware_max": 1600}
    assert got["partition"].startswith("2 tiles")
    assert got["power_cap"] == {"limit_w": 450.0, "default_w": 600.0}
    assert got["interconnect"] == {"pcie": {"generation": 4, "width": 16, "max_generation": 5, "max_width": 16}}
    assert got["ecc"].startswith("not readable: ")
    i915 = {"gt_min_freq_mhz": "1100", "gt_max_freq_mhz": "1100", "gt_RPn_freq_mhz": "300",
            "gt_RP0_freq_mhz": "2050", "gt_act_freq_mhz": "1100"}
    _card(tmp_path / "i915", 0, "0000:03:00.0", i915)
    one = intel_conditions(None, sys_root=tmp_path / "i915")
    assert one["clocks"]["lock"] == "locked at 1100 MHz" and one["partition"].startswith("1 tile ")
    per_gt = {"gt/gt0/rps_min_freq_mhz": "300", "gt/gt0/rps_max_freq_mhz": "1600", "gt/gt0/rps_RPn_freq_mhz": "300",
              "gt/gt0/rps_RP0_freq_mhz": "1600", "gt/gt1/rps_min_freq_mhz": "1600", "gt/gt1/rps_max_freq_mhz": "1600",
              "gt/gt1/rps_RPn_freq_mhz": "300", "gt/gt1/rps_RP0_freq_mhz": "1600"}
    _card(tmp_path / "pergt", 0, "0000:03:00.0", per_gt)
    lock = intel_conditions(None, sys_root=tmp_path / "pergt")["clocks"]["lock"]
    assert lock.startswith("differs between GTs: ") and "locked at 1600 MHz" in lock and "not locked (300-1600" in lock


def test_several_cards_are_read_only_when_they_agree(tmp_path: Path) -> None:
    for n, address in enumerate(("0000:3a:00.0", "0000:9a:00.0")):
        _card(tmp_path / "alike", n, address, _xe())
    _write(tmp_path / "alike/devices/pci0000:00/0000:05:00.0", {"vendor": "0x1002"})  # not Intel
    (tmp_path / "alike/class/drm/card2").mkdir()
    (tmp_path / "alike/class/drm/card2/device").symlink_to(tmp_path / "alike/devices/pci0000:00/0000:05:00.0")
    assert [a for a, _ in intel_cards(sys_root=tmp_path / "alike")] == ["0000:3a:00.0", "0000:9a:00.0"]
    both = intel_conditions(None, sys_root=tmp_path / "alike")
    assert both["card"] == "all 2 alike" and both["clocks"]["lock"] == "not locked (900-1600 MHz)"
    _card(tmp_path / "apart", 0, "0000:3a:00.0", _xe())
    _card(tmp_path / "apart", 1, "0000:9a:00.0", _xe(high=1000))

    class Gpu:
        name = "xpu:1"

    assert intel_conditions(Gpu(), sys_root=tmp_path / "apart") == (
        "not readable: 2 Intel GPUs set up otherwise, and torch.xpu reports no PCI address to tell which is xpu:1")
    assert intel_conditions(Gpu(), sys_root=tmp_path / "none").startswith("not readable: no Intel GPU")


def _run(run_id: str, device: object) -> RunRecord:
    return RunRecord(run_id=run_id, created_at="2026-12-05", config={},
                     provenance={"setup": {"host": {}, "device": device},
                                 "target": {"kind": "local", "identity": {"device": "xpu:0"}}})


def test_the_audit_words_an_intel_cards_settings(tmp_path: Path) -> None:
    _card(tmp_path / "a", 0, "0000:3a:00.0", _xe())
    _card(tmp_path / "b", 0, "0000:3a:00.0", _xe(high=1200))
    runs = [_run(n, intel_conditions(None, sys_root=tmp_path / n)) for n in ("a", "b")]
    case = CaseResult(suite="s", key="c", check={"passed": True}, metrics={}, findings=(), telemetry={})
    got = {e.condition: e.values for e in audit_runs(runs, [[case], [case]], [], [[], []])[0]}
    assert got["clock locks"] == ("not locked (900-1600 MHz) (GT frequency range)",
                                  "capped at 1200 MHz (hardware 1600 MHz) (GT frequency range)")
    assert set(got) == {"clock locks"}
    unread = _run("c", "not readable: no Intel GPU")
    shown = {e.condition: e.values for e in audit_runs([runs[0], unread], [[case], [case]], [], [[], []])[0]}
    assert shown["power cap"][0] == "450 W (default 600 W)"
    assert shown["partitioning"][0].startswith("2 tiles")


def test_clock_telemetry_of_the_only_card(tmp_path: Path) -> None:
    _card(tmp_path, 0, "0000:3a:00.0", _xe(act=1450))
    source = IntelGpuTelemetry(sys_root=tmp_path)
    assert source.read() == {"clock_mhz": 1450.0}
    assert "clock_mhz" not in source.unavailable() and source.unavailable()["power_w"] == "not read on Intel GPUs"
    _card(tmp_path, 1, "0000:9a:00.0", _xe())
    two = IntelGpuTelemetry(sys_root=tmp_path)
    assert two.read() == {} and "no PCI address" in two.unavailable()["clock_mhz"]


@pytest.mark.parametrize("layout", ["xe", "i915"])
def test_an_idle_gt_reads_zero_not_nothing(tmp_path: Path, layout: str) -> None:
    files = _xe(act=0) if layout == "xe" else {"gt_max_freq_mhz": "1100", "gt_act_freq_mhz": "0"}
    _card(tmp_path, 0, "0000:3a:00.0", files)
    assert IntelGpuTelemetry(sys_root=tmp_path).read() == {"clock_mhz": 0.0}


def test_energy_counter_of_the_only_card(tmp_path: Path) -> None:
    from parity.device.power import intel_gpu_sensors

    card = _card(tmp_path, 0, "0000:3a:00.0", _xe())
    assert "no hwmon energy1_input" in intel_gpu_sensors(sys_root=tmp_path).unavailable
    _write(card / "device", {"hwmon/hwmon2/energy1_input": "123456789012"})
    (source,) = intel_gpu_sensors(sys_root=tmp_path).sources
    assert source.kind == "energy" and source.read() == pytest.approx(123456.789012)  # µJ -> J
    assert source.name == "intel-hwmon:0000:3a:00.0"
    _card(tmp_path, 1, "0000:9a:00.0", _xe())
    assert "2 Intel GPUs" in intel_gpu_sensors(sys_root=tmp_path).unavailable
    assert "no Intel GPU" in intel_gpu_sensors(sys_root=tmp_path / "none").unavailable
