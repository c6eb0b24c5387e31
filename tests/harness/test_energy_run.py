"""A run on the fake device with a scripted power sensor: the energy figure, its coverage, and
what the run says when the sensor is missing or its readings cover too little of the window.

Hand-computed: the fake timers give 1 ms a call, the sensor 250 W throughout, each case declares
1e9 FLOP a call: 250 W x 1 ms = 0.25 J a call; 0.25 J / 1e9 FLOP = 2.5e-10 J/FLOP = 250 J/TFLOP.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from parity.device.fake import FakeDevice
from parity.harness.options import option
from parity.harness.runner import run_suites
from parity.harness.suite import CaseSpec, SuiteBase
from parity.harness.work import Work
from parity.model.figure import Figure
from parity.store import Store


@dataclass(frozen=True, kw_only=True)
class EnergyOptions:
    """No options but one, as the runner wants a typed options record."""

    cases: int = option(2, help="case count", minimum=1)


class EnergySuite(SuiteBase):
    """Two cases of 1e9 declared FLOP a call; each call waits 5 ms of real time, so the power
    sampler (every 10 ms) reads inside the window."""

    name = "joules"
    description = "test-only suite for energy figures"
    options_type = EnergyOptions

    def cases(self, *, device: Any, quick: bool, options: Any) -> list[CaseSpec]:
        return [CaseSpec(suite=self.name, key=f"case-{i}", params={"i": i}) for i in range(options.cases)]

    def measure(self, case: CaseSpec, *, device: Any, options: Any, state: Any) -> Work:
        return Work(call=lambda: threading.Event().wait(0.005), check=lambda: {"passed": True}, flop=1e9,
                    warmup_s=0.0, budget_s=0.01, min_samples=40, max_samples=40, flush_cache=False)

    def summarize(self, results: list[Any], *, options: Any) -> dict[str, Any]:
        return {"measured": len(results)}

    def figures(self, summary: dict[str, Any]) -> list[Figure]:
        return []


def _run(tmp_path: Path, device: FakeDevice) -> Any:
    with Store.open(tmp_path / "runs.sqlite") as store:
        return run_suites(store, device=device, suites=[EnergySuite()])


def _energy_figure(outcome: Any) -> Figure:
    (suite,) = outcome.suites
    (figure,) = [f for f in suite.figures if f.name == "joules.energy_per_flop"]
    return figure


def test_scripted_sensor_gives_the_hand_computed_j_per_tflop(tmp_path: Path) -> None:
    outcome = _run(tmp_path, FakeDevice(durations_s=[1e-3], power=[250.0]))
    figure = _energy_figure(outcome)
    assert figure.value == pytest.approx(2.5e-10) and figure.unit == "J/FLOP"
    assert figure.scope["cases"] == 2 and figure.scope["withheld"] == 0
    assert figure.scope["coverage_min"] == 1.0 and figure.scope["devices"] == 1
    assert figure.scope["max_gap_s"] < 0.25 * 0.2  # readings every ~10 ms over a window of ~0.2 s
    for case in outcome.cases:
        energy = case.telemetry["energy"]
        assert energy["joules_per_call"] == pytest.approx(0.25) and energy["coverage"] == 1.0
        assert energy["readings"]["fake-power"]  # the raw readings are kept


def test_a_sensor_that_stops_reading_withholds_the_figure(tmp_path: Path) -> None:
    # one reading before the window, none after: the readings cover 0% of it
    outcome = _run(tmp_path, FakeDevice(durations_s=[1e-3], power=[250.0, None]))
    figure = _energy_figure(outcome)
    assert figure.value is None and figure.scope["withheld"] == 2
    assert "covered 0% of the" in figure.note and "at least 90% needed" in figure.note


def test_no_sensor_says_so_once(tmp_path: Path) -> None:
    outcome = _run(tmp_path, FakeDevice(durations_s=[1e-3]))
    assert outcome.run.provenance["device"]["power"] == ("no power sensor readable: "
                                                        "the fake device has no scripted power sensor")
    (suite,) = outcome.suites
    assert not [f for f in suite.figures if "energy" in f.name]  # nothing claimed
    assert all("energy" not in case.telemetry for case in outcome.cases)
