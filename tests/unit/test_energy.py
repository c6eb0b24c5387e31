"""Energy over a timed window on hand-computed cases: trapezoid, counters and their wrap,
coverage, gaps, when a figure is withheld, RAPL from a sysfs tree, J per unit of work."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from parity.device.power import PowerSensors, ScriptedPower, parse_npu_smi_power, rapl_sensors
from parity.harness.energy import case_energy, energy_figures, joules_per_unit
from parity.model import CaseResult, ParityError
from parity.model.figure import format_value
from parity.timing.energy import (
    PowerSampler,
    SourceEnergy,
    counter_energy_j,
    largest_gap_s,
    source_energy,
    trapezoid_energy_j,
    unwrap_counter,
    window_coverage,
    withheld_reason,
)


def test_trapezoid_over_readings_inside_the_window() -> None:
    # (100 + 200)/2 * 1 + (200 + 100)/2 * 1 = 300 J
    readings = [(0.0, 100.0), (1.0, 200.0), (2.0, 100.0)]
    assert trapezoid_energy_j(readings, 0.0, 2.0) == pytest.approx(300.0)
    assert window_coverage([0.0, 1.0, 2.0], 0.0, 2.0) == 1.0
    assert largest_gap_s([0.0, 1.0, 2.0], 0.0, 2.0) == 1.0


def test_trapezoid_interpolates_the_window_edges() -> None:
    # power at t=0 interpolated between (-1, 100) and (1, 300): 200 W; (200 + 300)/2 * 1 = 250 J
    readings = [(-1.0, 100.0), (1.0, 300.0)]
    assert trapezoid_energy_j(readings, 0.0, 1.0) == pytest.approx(250.0)
    # readings bracket the window: full coverage, but no reading inside: the gap is the window
    assert window_coverage([-1.0, 1.0], 0.0, 1.0) == 1.0
    assert largest_gap_s([-1.0, 1.0], 0.0, 1.0) == 1.0


def test_partial_coverage_and_its_gap() -> None:
    # readings only over [0.5, 1.0] of a 2 s window: 50 J over 0.5 s, coverage 25%, gap 1.0 s
    readings = [(0.5, 100.0), (1.0, 100.0)]
    e = source_energy(name="s", kind="power", readings=readings, start_s=0.0, end_s=2.0)
    assert e.energy_j == pytest.approx(50.0)
    assert e.covered_s == pytest.approx(0.5) and e.coverage == pytest.approx(0.25)
    assert e.max_gap_s == pytest.approx(1.0)
    assert e.mean_power_w == pytest.approx(100.0)
    assert window_coverage([], 0.0, 1.0) == 0.0
    assert window_coverage([3.0, 4.0], 0.0, 1.0) == 0.0


def test_counter_difference_with_interpolated_edges() -> None:
    # counter 0 J at t=0, 100 J at t=2: 50 W; over [0.5, 1.5] -> 50 J
    assert counter_energy_j([(0.0, 0.0), (2.0, 100.0)], 0.5, 1.5) == pytest.approx(50.0)


def test_counter_wrap_is_unrolled_once_per_backwards_step() -> None:
    # range 100 J: 90 -> 10 (wrapped: +20) -> 30 (+20): 40 J over 2 s
    readings = [(0.0, 90.0), (1.0, 10.0), (2.0, 30.0)]
    assert unwrap_counter(readings, 100.0) == [(0.0, 90.0), (1.0, 110.0), (2.0, 130.0)]
    e = source_energy(name="rapl", kind="energy", readings=readings, start_s=0.0, end_s=2.0, wrap_j=100.0)
    assert e.energy_j == pytest.approx(40.0) and e.mean_power_w == pytest.approx(20.0)


def test_counter_going_back_without_a_range_is_refused() -> None:
    with pytest.raises(ParityError, match="range is unknown"):
        unwrap_counter([(0.0, 5.0), (1.0, 1.0)], None)


def test_withheld_below_coverage_or_with_a_long_power_gap() -> None:
    short = SourceEnergy(name="a", kind="power", energy_j=1.0, covered_s=0.85, coverage=0.85, max_gap_s=0.1, readings=9)
    assert "85%" in withheld_reason([short], 1.0) and "90%" in withheld_reason([short], 1.0)
    gappy = SourceEnergy(name="a", kind="power", energy_j=1.0, covered_s=1.0, coverage=1.0, max_gap_s=0.3, readings=4)
    assert "25%" in withheld_reason([gappy], 1.0)
    counter = SourceEnergy(name="c", kind="energy", energy_j=1.0, covered_s=1.0, coverage=1.0, max_gap_s=1.0, readings=2)
    assert withheld_reason([counter], 1.0) is None  # a counter integrates between its reads
    assert withheld_reason([], 1.0) == "no power source was read"


def _rapl_tree(root: Path, *, readable: bool = True) -> None:
    for name, label, uj in (("intel-rapl:0", "package-0", "5000000"), ("intel-rapl:0:0", "core", "1"),
                            ("intel-rapl:1", "psys", "7")):
        d = root / "class/powercap" / name
        d.mkdir(parents=True)
        (d / "name").write_text(label + "\n")
        (d / "max_energy_range_uj").write_text("262143999999\n")
        if readable:
            (d / "energy_uj").write_text(uj + "\n")


def test_rapl_reads_package_domains_only(tmp_path: Path) -> None:
    _rapl_tree(tmp_path)
    sensors = rapl_sensors(sys_root=tmp_path)
    assert [s.name for s in sensors.sources] == ["rapl:package-0"]  # no core (inside it), no psys
    (source,) = sensors.sources
    assert source.kind == "energy" and source.read() == pytest.approx(5.0)
    assert source.wrap_j == pytest.approx(262144.0)


def test_rapl_says_why_it_is_not_read(tmp_path: Path) -> None:
    assert "no " in rapl_sensors(sys_root=tmp_path).unavailable
    _rapl_tree(tmp_path, readable=False)
    assert "not readable" in rapl_sensors(sys_root=tmp_path).unavailable
    assert PowerSensors(unavailable="x").describe() == "no power sensor readable: x"


def test_npu_smi_power_line() -> None:
    assert parse_npu_smi_power("NPU ID : 0\nPower Dissipation(W) : 72.3\n") == pytest.approx(72.3)


def test_sampler_with_a_constant_sensor_and_without_one() -> None:
    sampler = PowerSampler(PowerSensors(sources=(ScriptedPower([150.0]),)), interval_s=0.002)
    with sampler:
        threading.Event().wait(0.2)  # a window long enough for readings inside it
    record = sampler.energy().to_dict(per_call_s=0.002)
    assert record["mean_power_w"] == pytest.approx(150.0)
    assert record["joules_per_call"] == pytest.approx(0.3)  # 150 W x 2 ms
    assert record["coverage"] == 1.0 and record["devices"] == 1
    with PowerSampler(PowerSensors(unavailable="no RAPL")) as none:
        pass
    assert none.energy().to_dict() == {"unavailable": "no power sensor readable: no RAPL"}


def test_joules_per_unit_and_its_human_unit() -> None:
    # 0.3 J per call of 2e11 FLOP: 1.5e-12 J/FLOP, shown as 1.5 J/TFLOP
    assert joules_per_unit(0.3, 2e11) == pytest.approx(1.5e-12)
    assert format_value(1.5e-12, "J/FLOP") == "1.5 J/TFLOP"
    assert format_value(2e-9, "J/B") == "2 J/GB"
    with pytest.raises(ValueError):
        joules_per_unit(1.0, 0.0)


def _case(key: str, metrics: dict, telemetry: dict) -> CaseResult:
    return CaseResult(suite="s", key=key, params={}, metrics=metrics, check={"passed": True}, telemetry=telemetry)


def _given(joules: float) -> dict:
    return {"energy": {"joules_per_call": joules, "mean_power_w": 100.0, "coverage": 1.0, "max_gap_s": 0.01,
                       "devices": 1, "sources": {"fake": {}}, "withheld": None}}


def test_energy_figures_per_flop_byte_and_decode_token() -> None:
    flop = [_case("a", {"work_flop": 1e12}, _given(2.0)), _case("b", {"flop": 1e12}, _given(4.0)),
            _case("c", {"flop": 1e12}, {"energy": {"joules_per_call": None, "coverage": 0.5, "max_gap_s": 0.1,
                                                   "devices": 1, "withheld": "short"}})]
    (f,) = energy_figures("gemm", flop)
    assert f.name == "gemm.energy_per_flop" and f.unit == "J/FLOP"
    assert f.value == pytest.approx(3e-12) and f.best == pytest.approx(2e-12)  # median of 2 and 4 J/TFLOP
    assert f.scope["cases"] == 2 and f.scope["withheld"] == 1 and f.scope["coverage_min"] == 0.5
    assert "1 of 3 cases without energy: short" in f.note
    (b,) = energy_figures("membw", [_case("a", {"bytes_moved": 1e9}, _given(0.5))])
    assert b.unit == "J/B" and b.value == pytest.approx(5e-10)
    # decode: dense timed on 2 of 32 layers at 0.1 J a call, head once at 0.05 J: 1.6 + 0.05 = 1.65 J a step;
    # 100 tokens/s per card over a 0.5 s step: 50 tokens; 1.65 / 50 = 0.033 J/token
    decode = _case("d", {"tokens_per_s_per_card": 100.0, "step_s": 0.5,
                         "kinds": {"dense": {"layers_run": 2, "layers_total": 32},
                                   "head": {"layers_run": 1, "layers_total": 1}}},
                   {"dense": _given(0.1), "head": _given(0.05)})
    assert case_energy(decode)["value"] == pytest.approx(0.033)
    (t,) = energy_figures("decode", [decode])
    assert t.name == "decode.energy_per_token" and t.unit == "J/tok"


def test_no_energy_figure_without_a_sensor_or_declared_work() -> None:
    # no sensor: no record, no figure (the run's provenance says so once)
    assert energy_figures("gemm", [_case("a", {"flop": 1e9}, {})]) == ()
    assert energy_figures("gemm", [_case("a", {"flop": 1e9}, {"energy": {"unavailable": "x"}})]) == ()
    assert energy_figures("latency", [_case("a", {"ns": 1.0}, _given(1.0))]) == ()


def test_rapl_power_telemetry_unrolls_a_wrap() -> None:
    from parity.device.telemetry import rapl_delta_uj

    assert rapl_delta_uj(10, 90, 99) == 20  # 90 -> 99, 0 -> 10: 9 + 1 + 10
    assert rapl_delta_uj(30, 10, 99) == 20
    assert rapl_delta_uj(10, 90, None) is None


def test_a_failing_read_leaves_a_gap_and_is_named() -> None:
    source = ScriptedPower([100.0, RuntimeError("sensor gone")], name="flaky")
    sampler = PowerSampler(PowerSensors(sources=(source,)), interval_s=0.002)
    with sampler:
        threading.Event().wait(0.05)
    energy = sampler.energy()
    assert energy.errors == {"flaky": "RuntimeError: sensor gone"}
    assert energy.withheld is not None and "covered 0%" in energy.withheld
    assert energy.to_dict()["mean_power_w"] is None


class _Nvml:
    """pynvml's two power calls: a total-energy counter (mJ) or not, the power (mW)."""

    def __init__(self, *, counter: bool) -> None:
        self.counter = counter

    def nvmlDeviceGetTotalEnergyConsumption(self, handle: object) -> int:
        if not self.counter:
            raise RuntimeError("NVML_ERROR_NOT_SUPPORTED")
        return 123_456

    def nvmlDeviceGetPowerUsage(self, handle: object) -> int:
        return 250_000


def test_nvml_prefers_the_energy_counter() -> None:
    from parity.device.power import NvmlPower

    counter = NvmlPower(nvml=_Nvml(counter=True), handle=None, label="cuda:0")
    assert counter.kind == "energy" and counter.read() == pytest.approx(123.456)  # mJ -> J
    power = NvmlPower(nvml=_Nvml(counter=False), handle=None, label="cuda:0")
    assert power.kind == "power" and power.read() == pytest.approx(250.0)  # mW -> W


def test_amdgpu_hwmon_power_of_the_only_card(tmp_path: Path) -> None:
    from parity.device.power import amdgpu_sensors

    hwmon = tmp_path / "class/drm/card0/device/hwmon/hwmon3"
    hwmon.mkdir(parents=True)
    (hwmon.parent.parent / "vendor").write_text("0x1002\n")
    (hwmon / "name").write_text("amdgpu\n")
    (hwmon / "power1_average").write_text("312000000\n")

    class _Rocm:
        name, index = "cuda:0", 0

    (source,) = amdgpu_sensors(_Rocm(), sys_root=tmp_path).sources
    assert source.kind == "power" and source.read() == pytest.approx(312.0)  # µW -> W
    assert "no AMD card" in amdgpu_sensors(_Rocm(), sys_root=tmp_path / "none").unavailable
