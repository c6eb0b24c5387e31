"""A run on a device with no readable power sensor says so once, in the terminal and the JSON's
provenance, and claims no energy figure."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from parity.cli.main import main

TESTS = Path(__file__).resolve().parents[1]
NO_SENSOR = "no power sensor readable: the fake device has no scripted power sensor"


@pytest.fixture(autouse=True)
def tiny_plugin(monkeypatch: pytest.MonkeyPatch, db_path: Path) -> None:
    monkeypatch.syspath_prepend(str(TESTS))
    monkeypatch.setenv("PARITY_PLUGINS", "tiny_suites:TinySuite")


def test_run_without_a_power_sensor_says_so_once(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    with pytest.raises(SystemExit) as info:
        main(["run", "--device", "fake", "--suite", "tiny", "--set", "tiny.cases=2", "--json", str(tmp_path / "r.json")])
    _, err = capsys.readouterr()
    assert int(info.value.code or 0) == 0, err
    assert err.count(NO_SENSOR) == 1
    doc = orjson.loads((tmp_path / "r.json").read_bytes())
    assert doc["run"]["provenance"]["device"]["power"] == NO_SENSOR
    assert not [f for s in doc["suites"] for f in s["figures"] if "energy" in f["name"]]
