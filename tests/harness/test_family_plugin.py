"""A family from another package, found by its ``parity.families`` entry point, goes through
every command like a built-in one: ``parity run`` (killed with SIGKILL mid-way, then resumed),
``runs show``, ``runs export``, ``compare`` and ``report``, with no change to parity.

The family is ``tests/plugin_family/parity_plugin_demo``; its entry point is a
``*.dist-info`` folder written on a temporary ``PYTHONPATH``, which ``importlib.metadata``
reads as it reads any installed distribution's.
"""

from __future__ import annotations

import csv
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from plugin_runs import kill_after_stored, stored_keys

PLUGIN = Path(__file__).resolve().parents[1] / "plugin_family"
SRC = Path(__file__).resolve().parents[2] / "src"
CASES = 6
KEYS = [f"sum-{n}" for n in (256, 512, 1024, 2048, 4096, 8192)]


def install_entry_point(site: Path) -> Path:
    """Write the demo's distribution metadata (name, version, entry point) into ``site``."""
    info = site / "parity_plugin_demo-0.1.dist-info"
    info.mkdir(parents=True, exist_ok=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: parity-plugin-demo\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text('[parity.families]\ndemo = parity_plugin_demo:FAMILY\n')
    return info


def plugin_env(tmp_path: Path) -> dict[str, str]:
    """This environment with the demo importable and installed by entry point, and a fresh store."""
    site = tmp_path / "site"
    install_entry_point(site)
    env = {k: v for k, v in os.environ.items() if k != "PARITY_PLUGINS"}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(site), str(PLUGIN), str(SRC), env.get("PYTHONPATH")]))
    env["PARITY_DB"] = str(tmp_path / "runs.sqlite")
    return env


def parity(env: dict[str, str], *args: str, timeout: float = 180) -> subprocess.CompletedProcess[str]:
    done = subprocess.run([sys.executable, "-m", "parity", *args], env=env, cwd=Path(env["PARITY_DB"]).parent,
                          capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, f"parity {' '.join(args)} failed:\n{done.stdout}\n{done.stderr}"
    return done


@pytest.mark.slow
@pytest.mark.torch
def test_a_family_from_an_entry_point_runs_resumes_exports_compares_and_draws(tmp_path: Path) -> None:
    env = plugin_env(tmp_path)
    db = Path(env["PARITY_DB"])

    probe = subprocess.run([sys.executable, "-c", "from parity.harness.registry import names; print(names())"],
                           env=env, capture_output=True, text=True, timeout=60)
    assert "'demo'" in probe.stdout, probe.stderr  # a suite of parity run, like a built-in one

    # A run killed mid-way keeps what it measured; --resume latest measures only the rest.
    command = [sys.executable, "-m", "parity", "run", "--suite", "demo", "--device", "cpu",
               "--set", f"demo.cases={CASES}", "--set", "demo.pause_s=0.4"]
    proc = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    kill_after_stored(proc, db, cases=2, within_s=120)
    assert proc.returncode == -signal.SIGKILL
    before = stored_keys(db)
    assert 2 <= len(before) < CASES, "the kill should land mid-run"
    parity(env, "run", "--resume", "latest", "--json", str(tmp_path / "resumed.json"))
    resumed = json.loads((tmp_path / "resumed.json").read_text())
    assert resumed["ok"] is True and resumed["run"]["status"] == "complete"
    assert (resumed["skipped"], resumed["measured"]) == (len(before), CASES - len(before))
    assert stored_keys(db) == sorted(KEYS)

    # A second run to compare with.
    parity(env, "run", "--suite", "demo", "--device", "cpu", "--set", f"demo.cases={CASES}")

    shown = parity(env, "runs", "show", "latest").stdout
    assert f"demo: {CASES} sizes" in shown  # the family's own terminal view

    parity(env, "runs", "export", "latest", "--format", "csv", "--output", str(tmp_path / "run.csv"))
    with open(tmp_path / "run.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert sorted(r["key"] for r in rows) == sorted(KEYS) and {r["suite"] for r in rows} == {"demo"}
    assert all(float(r["figure.rate"]) > 0 and 0 < float(r["figure.of_best"]) <= 1 for r in rows)
    assert all(float(r["metric.flop_per_s"]) > 0 for r in rows)

    parity(env, "compare", "latest~1", "latest", "--json", str(tmp_path / "compare.json"))
    compared = json.loads((tmp_path / "compare.json").read_text())
    joined = [c for c in compared["cases"] if c.get("suite") == "demo"]
    assert sorted(c["key"] for c in joined) == sorted(KEYS)

    parity(env, "report", "latest~1", "latest", "-o", str(tmp_path / "r.html"), "--json", str(tmp_path / "r.json"))
    report = json.loads((tmp_path / "r.json").read_text())
    charts = {c["id"]: c for c in report["charts"]}
    assert charts["demo-rate-by-size"]["section"] == "demo" and charts["demo-rate-by-size"]["draw"]
    assert len(charts["demo-rate-by-size"]["spec"]["datasets"]["points"]) == 2 * CASES
    assert "demo" in [s["id"] for s in report["sections"]]
    assert "demo-rate-by-size" in (tmp_path / "r.html").read_text()
