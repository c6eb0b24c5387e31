"""The AMD GPU's settings read from hand-made amdgpu sysfs and KFD topology trees (files as the
driver writes them), chosen by PCI address among several cards, and what the audit says when
two runs' cards were set up otherwise."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from parity.compare.audit import audit_runs
from parity.device import amdgpu_sysfs
from parity.device.amdgpu_sysfs import (
    amd_cards,
    amdgpu_conditions,
    card_of,
    dpm_lock,
    dpm_levels,
    location_id,
    od_sclk,
    parse_properties,
    read_card,
)
from parity.device.sysfs import pcie_generation
from parity.device.power import amdgpu_sensors
from parity.model.result import CaseResult, RunRecord

OD = """OD_SCLK:
0: 500Mhz
1: 1500Mhz
OD_MCLK:
1: 1300MHz
OD_RANGE:
SCLK:     500Mhz       2100Mhz
MCLK:     1300Mhz      1300Mhz"""


def _write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text + "\n")


def _card(sys_root: Path, number: int, address: str, *, level: str = "auto", od: str = OD,
          compute: str = "SPX", xgmi: int = 7, location: int = 0xC1 << 8, node: int = 2) -> Path:
    """An MI300X-like card ``cardN`` whose device folder is its PCI device, and its KFD node."""
    device = sys_root / "devices" / "pci0000:00" / address
    _write(device, {
        "vendor": "0x1002", "power_dpm_force_performance_level": level,
        "pp_dpm_sclk": "0: 500Mhz\n1: 1300Mhz *\n2: 2100Mhz", "pp_dpm_mclk": "0: 900Mhz\n1: 1300Mhz *",
        "pp_od_clk_voltage": od, "ras/features": "feature mask: 0x3fff", "ras/umc_err_count": "ue: 0\nce: 2\nde: 0",
        "current_compute_partition": compute, "current_memory_partition": "NPS1",
        "hwmon/hwmon4/name": "amdgpu", "hwmon/hwmon4/power1_cap": "650000000",
        "hwmon/hwmon4/power1_cap_default": "750000000", "hwmon/hwmon4/power1_cap_max": "750000000",
        "hwmon/hwmon4/power1_average": "312000000",
        "current_link_speed": "32.0 GT/s PCIe", "current_link_width": "16",
        "max_link_speed": "32.0 GT/s PCIe", "max_link_width": "16",
        "xgmi_hive_info/xgmi_hive_id": "0x5a1b2c3d",
    })
    link = sys_root / "class" / "drm" / f"card{number}"
    link.mkdir(parents=True)
    (link / "device").symlink_to(device)
    kfd = sys_root / "class" / "kfd" / "kfd" / "topology" / "nodes"
    _write(kfd / "0", {"properties": "cpu_cores_count 96\ngpu_id 0\nlocation_id 0\ndomain 0"})
    _write(kfd / str(node), {"properties": f"cpu_cores_count 0\nsimd_count 1216\ngpu_id {1000 + node}\n"
                                           f"location_id {location}\ndomain 0"})
    links = {"io_links/0/properties": "type 2\nnode_from 2\nnode_to 0\nweight 20"}
    links.update({f"io_links/{i + 1}/properties": f"type 11\nnode_from {node}\nnode_to {10 + i}\nweight 15"
                  for i in range(xgmi)})
    _write(kfd / str(node), links)
    return device


def test_the_parsers_on_what_the_driver_writes() -> None:
    assert dpm_levels("0: 500Mhz\n1: 1300Mhz *\n2: 2100Mhz\n") == ([500, 1300, 2100], 1300)
    assert dpm_levels("S: 19Mhz *\n0: 500Mhz\n") == ([500], None)  # a sleep line is no level
    assert dpm_levels(None) == ([], None)
    assert od_sclk(OD) == ((500, 1500), (500, 2100))
    assert od_sclk("OD_SCLK:\n0: 500Mhz\n1: 2100Mhz\nOD_RANGE:\nSCLK: 500Mhz 2100Mhz") == ((500, 2100), (500, 2100))
    assert od_sclk("") == (None, None)
    assert [pcie_generation(s) for s in ("2.5 GT/s PCIe", "8 GT/s", "16.0 GT/s PCIe", "32.0 GT/s PCIe",
                                         "Unknown", None)] == [1, 3, 4, 5, None, None]
    assert location_id("0000:c1:00.0") == (0, 0xC100) and location_id("0001:03:1f.7") == (1, 0x3FF)
    assert location_id("device") is None
    assert parse_properties("gpu_id 4242\nlocation_id 49408\n\nbad\n") == {"gpu_id": "4242", "location_id": "49408"}


def test_dpm_lock_wording() -> None:
    assert dpm_lock("auto", [500, 1300, 2100], (500, 2100), (500, 2100)) == "not locked (SCLK 500-2100 MHz)"
    assert dpm_lock("auto", [500, 2100], (500, 1500), (500, 2100)) == \
        "SCLK capped at 1500 MHz (allowed 500-2100 MHz)"
    assert dpm_lock("manual", [500, 2100], (1500, 1500), (500, 2100)) == \
        "SCLK held at 1500-1500 MHz (allowed 500-2100 MHz); levels chosen by hand"
    assert dpm_lock("profile_peak", [500, 2100], None, None) == "fixed peak clocks (profile_peak)"
    assert dpm_lock("perf_determinism", [], None, None).startswith("determinism mode")
    assert dpm_lock("something_new", [], None, None) == "performance level something_new"


def test_a_cards_settings_from_its_sysfs_and_kfd_node(tmp_path: Path) -> None:
    device = _card(tmp_path, 1, "0000:c1:00.0")
    got = read_card(tmp_path / "class/drm/card1/device", address="0000:c1:00.0",
                    kfd=tmp_path / "class/kfd/kfd/topology/nodes")
    assert got["card"] == "0000:c1:00.0"
    assert got["clocks"] == {"performance_level": "auto", "sclk_levels_mhz": [500, 1300, 2100],
                             "mclk_levels_mhz": [900, 1300], "od_sclk_mhz": [500, 1500],
                             "lock": "SCLK capped at 1500 MHz (allowed 500-2100 MHz)"}
    assert got["ecc"] == {"source": "amdgpu ras", "memory": "on", "feature_mask": "0x3fff", "uncorrected": 0,
                          "corrected": 2}
    assert got["partition"] == "compute SPX, memory NPS1"
    assert got["power_cap"] == {"limit_w": 650.0, "default_w": 750.0, "max_w": 750.0}
    assert got["interconnect"] == {"xgmi_links": 7, "xgmi_hive": "0x5a1b2c3d",
                                   "pcie": {"generation": 5, "width": 16, "max_generation": 5, "max_width": 16}}
    # ECC off for memory when bit 0 (UMC) is clear; what is absent is said, never guessed
    _write(device, {"ras/features": "feature mask: 0x3ffe"})
    for name in ("current_compute_partition", "current_memory_partition", "power_dpm_force_performance_level",
                 "hwmon/hwmon4/power1_cap", "current_link_speed"):
        (device / name).unlink()
    bare = read_card(device, address="0000:c1:00.0", kfd=tmp_path / "nowhere")
    assert bare["ecc"]["memory"] == "off"
    assert bare["partition"].startswith("not partitioned")
    assert bare["clocks"].startswith("not readable: ") and bare["power_cap"].startswith("not readable: ")
    assert bare["interconnect"]["xgmi_links"].startswith("not readable: ")
    assert bare["interconnect"]["pcie"]["generation"] is None
    (device / "ras" / "features").unlink()
    assert read_card(device, address="x", kfd=tmp_path)["ecc"].startswith("not readable: ")


def test_the_measured_card_is_chosen_by_pci_address(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _card(tmp_path, 0, "0000:83:00.0", location=0x83 << 8, node=3, xgmi=0, compute="CPX")
    _card(tmp_path, 1, "0000:c1:00.0", level="profile_peak", node=2)
    _write(tmp_path / "devices/pci0000:00/0000:05:00.0", {"vendor": "0x10de"})  # not AMD: never chosen
    (tmp_path / "class/drm/card2").mkdir()
    (tmp_path / "class/drm/card2/device").symlink_to(tmp_path / "devices/pci0000:00/0000:05:00.0")
    (tmp_path / "class/drm/card1-DP-1").mkdir()  # a connector, not a card
    assert [a for a, _ in amd_cards(sys_root=tmp_path)] == ["0000:83:00.0", "0000:c1:00.0"]

    class Gpu:
        name, index = "cuda:1", 1

    monkeypatch.setattr(amdgpu_sysfs, "pci_address", lambda device: "c1:00.0")
    second = amdgpu_conditions(Gpu(), sys_root=tmp_path)
    assert isinstance(second, dict) and second["card"] == "0000:c1:00.0"
    assert second["clocks"]["lock"].endswith("; fixed peak clocks (profile_peak)")
    assert second["interconnect"]["xgmi_links"] == 7
    (source,) = amdgpu_sensors(Gpu(), sys_root=tmp_path).sources
    assert source.name == "amdgpu-hwmon:0000:c1:00.0" and source.read() == pytest.approx(312.0)
    monkeypatch.setattr(amdgpu_sysfs, "pci_address", lambda device: "83:00.0")
    first = amdgpu_conditions(Gpu(), sys_root=tmp_path)
    assert isinstance(first, dict) and first["partition"] == "compute CPX, memory NPS1"
    assert first["interconnect"]["xgmi_links"] == 0
    monkeypatch.setattr(amdgpu_sysfs, "pci_address", lambda device: None)
    assert amdgpu_conditions(Gpu(), sys_root=tmp_path) == \
        "not readable: 2 AMD cards and no PCI bus id to tell which is cuda:1"
    assert card_of("c1:00.0", [], name="g") == "no AMD card (vendor 0x1002) under /sys/class/drm"
    assert "no AMD card" in amdgpu_sensors(Gpu(), sys_root=tmp_path / "none").unavailable


def _run(run_id: str, setup: dict[str, Any]) -> RunRecord:
    return RunRecord(run_id=run_id, created_at="2026-12-05", config={},
                     provenance={"setup": setup, "target": {"kind": "local", "identity": {"device": "cuda:0"}}})


def test_the_audit_tells_two_cards_set_up_otherwise(tmp_path: Path) -> None:
    trees = {}
    for name, level, compute, od in (("a", "auto", "SPX", OD.replace("1: 1500Mhz", "1: 2100Mhz")),
                                     ("b", "profile_peak", "CPX", OD)):
        _card(tmp_path / name, 1, "0000:c1:00.0", level=level, compute=compute, od=od)
        trees[name] = read_card(tmp_path / name / "class/drm/card1/device", address="0000:c1:00.0",
                                kfd=tmp_path / name / "class/kfd/kfd/topology/nodes")
    b_setup = copy.deepcopy(trees["b"])
    b_setup["ecc"]["corrected"] = 40  # error counts move between runs; they are not a difference of setup
    runs = [_run("a", {"host": {}, "device": trees["a"]}), _run("b", {"host": {}, "device": b_setup})]
    case = CaseResult(suite="s", key="c", check={"passed": True}, metrics={}, findings=(), telemetry={})
    entries, _ = audit_runs(runs, [[case], [case]], [], [[], []])
    got = {e.condition: e.values for e in entries}
    assert got["clock locks"] == (
        "not locked (SCLK 500-2100 MHz); performance level auto",
        "SCLK capped at 1500 MHz (allowed 500-2100 MHz); fixed peak clocks (profile_peak); "
        "performance level profile_peak")
    assert got["partitioning"] == ("compute SPX, memory NPS1", "compute CPX, memory NPS1")
    assert "ECC" not in got and "power cap" not in got
    alike, _ = audit_runs(runs[:1] * 2, [[case], [case]], [], [[], []])
    assert not [e for e in alike if e.condition in ("clock locks", "partitioning", "ECC", "interconnect")]
    unread = _run("c", {"host": {}, "device": "not readable: no AMD card"})
    shown = {e.condition: e.values for e in audit_runs([runs[0], unread], [[case], [case]], [], [[], []])[0]}
    assert shown["ECC"][0] == "on (amdgpu RAS on the GPU's memory; feature mask 0x3fff)"
    assert shown["power cap"][0] == "650 W (default 750 W)"


def test_telemetry_of_the_card_during_a_measurement(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from parity.device.amdgpu_sysfs import AmdgpuTelemetry
    from parity.device.telemetry import TelemetrySampler

    device = _card(tmp_path, 1, "0000:c1:00.0")
    _write(device / "hwmon/hwmon4", {"freq1_input": "1900000000", "temp2_label": "junction", "temp2_input": "71500",
                                     "temp3_label": "mem", "temp3_input": "60000"})
    monkeypatch.setattr(amdgpu_sysfs, "pci_address", lambda device: None)

    class Gpu:
        name, index = "cuda:0", 0

    source = AmdgpuTelemetry(device=Gpu(), sys_root=tmp_path)
    # SCLK from hwmon (Hz), MCLK from the current pp_dpm_mclk level, power in W, junction in °C
    assert source.read() == {"clock_mhz": 1900.0, "memory_clock_mhz": 1300.0, "power_w": 312.0,
                             "temperature_c": 71.5}
    with TelemetrySampler(sources=[source], interval_s=0.01) as sampler:
        pass
    result = sampler.result()
    assert result["clock_mhz"]["median"] == 1900.0 and result["temperature_c"]["max"] == 71.5
    assert "gpu_metrics" in result["unavailable"]["throttle_reasons"]
    (device / "hwmon/hwmon4/freq1_input").unlink()
    (device / "hwmon/hwmon4/power1_average").unlink()
    bare = AmdgpuTelemetry(device=Gpu(), sys_root=tmp_path)
    assert bare.read() == {"clock_mhz": 1300.0, "memory_clock_mhz": 1300.0, "temperature_c": 71.5}
    assert "power1_average" in bare.unavailable()["power_w"]
    none = AmdgpuTelemetry(device=Gpu(), sys_root=tmp_path / "none")
    assert none.read() == {} and set(none.unavailable().values()) == \
        {"no AMD card (vendor 0x1002) under /sys/class/drm"}


@settings(max_examples=300, deadline=None)
@given(text=st.text(alphabet=st.sampled_from(list("0123456789:*. MHzGT/sxabcdefOD_SCLKRANGE\n\t-")), max_size=120))
def test_the_sysfs_parsers_take_any_text_without_raising(text: str) -> None:
    """Whatever a driver or a broken file writes, each parser returns its empty answer or a
    well-formed one, never an exception."""
    levels, current = dpm_levels(text)
    assert all(isinstance(m, int) for m in levels) and (current is None or current in levels)
    chosen, allowed = od_sclk(text)
    assert chosen is None or chosen[0] <= chosen[1]
    assert allowed is None or len(allowed) == 2
    assert pcie_generation(text) in (None, 1, 2, 3, 4, 5, 6)
    assert location_id(text) is None or len(location_id(text)) == 2
    assert dpm_lock(text, levels, chosen, allowed)
    assert all(k and " " not in k for k in parse_properties(text))
