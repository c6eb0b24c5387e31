"""``scripts/device_check.sh``: its syntax, its usage error, and its CPU dry path end to end."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import click
import orjson
import pytest

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "scripts" / "device_check.sh"
TESTS = REPO / "tests"

pytestmark = pytest.mark.skipif(
    shutil.which("bash") is None or shutil.which("timeout") is None,
    reason="needs bash and coreutils timeout",
)


def test_script_parses_and_is_executable() -> None:
    assert os.access(SCRIPT, os.X_OK)
    subprocess.run(["bash", "-n", str(SCRIPT)], check=True)


def test_script_without_outdir_prints_usage() -> None:
    proc = subprocess.run(["bash", str(SCRIPT)], capture_output=True, text=True)
    assert proc.returncode == 2 and proc.stderr.startswith("usage:")


def _parity_calls() -> list[list[str]]:
    """The words after ``-m parity`` of every call in the script (continued lines joined)."""
    text = SCRIPT.read_text(encoding="utf-8").replace("\\\n", " ")
    return [line.split("-m parity ", 1)[1].split() for line in text.splitlines() if "-m parity " in line]


def test_script_uses_each_commands_current_flags() -> None:
    from click.testing import CliRunner

    from parity.cli.main import cli

    calls = _parity_calls()
    assert len(calls) >= 6
    for words in calls:
        path: list[str] = []
        command: click.Command = cli
        for word in words:
            sub = command.get_command(click.Context(command), word) if isinstance(command, click.Group) else None
            if sub is None:
                break
            path.append(word)
            command = sub
        result = CliRunner().invoke(cli, [*path, "--help"])
        assert result.exit_code == 0, result.output
        listed = set(re.findall(r"(?m)^\s+(?:-\w, )?(--[a-z0-9-]+)", result.output))
        for flag in (w for w in words if re.fullmatch(r"--[a-z0-9-]+", w)):
            assert flag in listed, f"scripts/device_check.sh: parity {' '.join(path)} lists no {flag}"


@pytest.mark.slow
@pytest.mark.torch
def test_cpu_dry_run_writes_results_and_logs(tmp_path: Path) -> None:
    env = dict(os.environ)
    env.update(
        {
            "DEVICE": "cpu",
            "QUICK": "1",
            "SUITES": "tiny",
            "RUN_BUDGET_S": "120",
            "DOCTOR": "0",
            "PYTHONPATH": os.pathsep.join(filter(None, [str(TESTS), env.get("PYTHONPATH")])),
            "PARITY_PLUGINS": "tiny_suites:TinySuite",
            # the interpreter running the tests, whatever `python` on PATH is (a venv's
            # interpreter need not be activated)
            "PYTHON": sys.executable,
        }
    )
    env.pop("PARITY_DB", None)
    out = tmp_path / "check"
    proc = subprocess.run(
        ["bash", str(SCRIPT), str(out)], env=env, capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stderr
    summary = orjson.loads((out / "summary.json").read_bytes())
    assert summary["ok"] is True and summary["kind"] == "device-check"
    # The doctor step is skipped here for time; parity doctor has its own tests.
    assert [s["step"] for s in summary["steps"]] == ["env", "run", "export"]
    run = orjson.loads((out / "run.json").read_bytes())
    assert run["ok"] is True and run["run"]["config"]["quick"] is True
    export = orjson.loads((out / "run-export.json").read_bytes())
    assert export["run"]["run_id"] == run["run"]["run_id"] and len(export["cases"]) == 4
    assert (out / "run-export.csv").read_text().startswith("run_id,")
    log = (out / "device_check.log").read_text()
    assert "OK: every step passed" in log and "torch" in (out / "env.out").read_text()


@pytest.mark.slow
def test_a_failing_step_makes_the_script_fail(tmp_path: Path) -> None:
    env = dict(os.environ, DEVICE="no-such-device", QUICK="1", TESTS="0", TRACE="0", DOCTOR="0")
    env.pop("PARITY_DB", None)
    out = tmp_path / "check"
    proc = subprocess.run(
        ["bash", str(SCRIPT), str(out)], env=env, capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 1
    steps = orjson.loads((out / "summary.json").read_bytes())["steps"]
    status = {s["step"]: s["status"] for s in steps}
    assert status["env"] == 0 and status["run"] != 0
    assert "FAILED:" in (out / "device_check.log").read_text()
