"""``parity comm collectives --duration`` on one host (gloo on loopback, ``--nproc 2``): one case
per collective at the size asked, windows of busbw with median, p1 and p99, and the drift
figures, stored and in the JSON."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path


def test_duration_mode_gives_windows_and_a_drift_figure(tmp_path: Path) -> None:
    out = tmp_path / "d.json"
    command = [sys.executable, "-m", "parity", "comm", "collectives", "--nproc", "2", "--backend", "gloo",
               "--ops", "all_reduce", "--duration", "2", "--window", "0.5", "--size-bytes", "64KiB",
               "--db", str(tmp_path / "runs.sqlite"), "--json", str(out)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    payload = json.loads(out.read_text())
    drift = payload["summary"]["drift"]
    assert len(drift) == 1 and drift[0]["op"] == "all_reduce" and drift[0]["size_bytes"] == 65536
    assert len(drift[0]["windows"]) >= 2
    for window in drift[0]["windows"]:
        assert window["p1_bps"] <= window["median_bps"] <= window["p99_bps"]
    assert drift[0]["drift_spread"] >= 0
    names = {f["name"] for f in payload["figures"]}
    assert {"collectives.all_reduce.busbw.drift_spread", "collectives.all_reduce.busbw.drift_last_first"} <= names
    assert [c["key"] for c in payload["cases"]] == ["all_reduce/fp32/in-place/65536/duration"]
