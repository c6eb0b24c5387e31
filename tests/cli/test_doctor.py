"""``parity doctor``: help with an example, truthful JSON, and the reason for every absent part."""

from __future__ import annotations

import json
import os
import platform
from pathlib import Path

import pytest
from click.testing import CliRunner

from parity.cli.main import cli
from parity.device.readiness import BACKENDS, LIBRARIES


@pytest.fixture(scope="module")
def doctor_json(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """One real ``parity doctor --device cpu --json`` run shared by the tests below (about 15 s:
    each smoke test starts its own Python with torch)."""
    path = tmp_path_factory.mktemp("doctor") / "doctor.json"
    result = CliRunner().invoke(cli, ["doctor", "--device", "cpu", "--json", str(path)])
    assert result.exit_code == 0, result.output
    assert "Readiness" in result.output and "Host" in result.output
    return json.loads(path.read_text())


def test_help_has_an_example() -> None:
    result = CliRunner().invoke(cli, ["doctor", "--help"])
    assert result.exit_code == 0
    assert "Example:" in result.output
    assert "parity doctor --device cuda:0 --json doctor.json" in result.output
    assert "--json" in result.output and "--device" in result.output


@pytest.mark.slow
@pytest.mark.torch
def test_json_envelope_and_truthful_host(doctor_json: dict) -> None:
    import torch

    assert doctor_json["schema_version"] == 1 and doctor_json["kind"] == "doctor"
    assert doctor_json["device_error"] is None
    prov = doctor_json["provenance"]
    arch = {"x86_64": "x86-64", "aarch64": "arm64"}.get(platform.machine(), platform.machine())
    assert prov["host"]["architecture"] == arch
    assert prov["host"]["logical_cpus"] == os.cpu_count()
    assert prov["host"]["affinity_count"] == len(os.sched_getaffinity(0))
    assert prov["torch"]["version"] == str(torch.__version__)
    assert prov["device"]["selected"] == "cpu"


@pytest.mark.slow
@pytest.mark.torch
def test_readiness_rows_say_why_anything_is_missing(doctor_json: dict) -> None:
    rows = doctor_json["readiness"]
    assert [r["name"] for r in rows] == list(BACKENDS) + list(LIBRARIES)
    for row in rows:
        assert row["smoke"] in ("passed", "failed", "skipped")
        if not row["installed"]:
            assert row["reason"], row
            assert row["importable"] is None and row["smoke"] == "skipped"
        if row["smoke"] != "passed":
            assert row["reason"], row
    cpu = rows[0]
    assert cpu["name"] == "cpu" and cpu["installed"] and cpu["importable"] is True
    assert cpu["smoke"] == "passed" and "matmul" in cpu["smoke_kind"]
    for row in rows:
        if row["kind"] == "library" and not row["installed"]:
            assert row["reason"].startswith("not installed: no distribution named")


@pytest.mark.torch
def test_unusable_device_is_reported_and_fails(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import parity.device.readiness as readiness

    monkeypatch.setattr(readiness, "check_stack", lambda device, **kwargs: [])
    path = tmp_path / "doctor.json"
    result = CliRunner().invoke(
        cli, ["doctor", "--device", "tpu:0", "--json", str(path)], standalone_mode=False
    )
    assert result.exception is None and result.return_value == 1  # main() exits with it
    assert "unknown device type 'tpu'" in result.output
    data = json.loads(path.read_text())
    assert data["device_error"].startswith("device 'tpu:0': unknown device type 'tpu'")
    assert data["provenance"]["device"] == {"selected": None}


def test_format_bytes_hand_cases() -> None:
    from parity.cli.doctor import format_bytes

    assert format_bytes(None) == "-"
    assert format_bytes(512) == "512 B"
    assert format_bytes(33554432) == "32 MiB"
    assert format_bytes(1536) == "1.5 KiB"
    assert format_bytes(25276063744) == "23.5 GiB"


def test_tables_show_data_with_brackets_literally() -> None:
    from rich.console import Console

    from parity.cli.doctor import environment_table

    console = Console(record=True, width=120)
    console.print(environment_table({"PYTORCH_X": "[bold]not markup[/bold]"}))
    assert "[bold]not markup[/bold]" in console.export_text()


def test_settings_are_shown_as_the_audit_words_them() -> None:
    from rich.console import Console

    from parity.cli.doctor import settings_table

    cpu = {"host": {"clocks": {"governor": "performance", "lock": "locked at 2400 MHz", "boost": "off"},
                    "ecc": "not readable: no EDAC memory controller in /x", "power_cap": {"package-0": {"long_term": 125.0}},
                    "partition": {"source": "cgroup v2", "cpu_quota": 2.0, "memory_limit_bytes": None}},
           "device": "the host's"}
    console = Console(record=True, width=200)
    console.print(settings_table(cpu))
    text = console.export_text()
    for shown in ("governor performance; locked at 2400 MHz; boost off", "not readable: no EDAC memory controller",
                  "cgroup v2: CPU quota 2 CPUs, no memory limit", "package-0: long_term 125 W",
                  "none: the CPU is the device"):
        assert shown in text, text
    assert "host clocks" not in text
    gpu = {"host": cpu["host"], "device": {"clocks": {"performance_level": "profile_peak", "lock": "fixed peak clocks "
                                                      "(profile_peak)"}, "ecc": "not readable: [no ras]"}}
    console = Console(record=True, width=200)
    console.print(settings_table(gpu))
    text = console.export_text()
    assert "fixed peak clocks (profile_peak); performance level profile_peak" in text
    assert "not readable: [no ras]" in text  # bracketed text is data, not markup
    assert "host clocks" in text and "locked at 2400 MHz" in text
    hidden = "not readable: no cpufreq in /sys (a VM)"
    vm = {"host": {"clocks": {"governor": hidden, "lock": hidden, "boost": "on"}}, "device": "the host's"}
    console = Console(record=True, width=200)
    console.print(settings_table(vm))
    assert f"governor and lock {hidden}; boost on" in console.export_text()
