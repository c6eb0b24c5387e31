"""Contention on this machine: a real busy process is seen, every case carries its record, the
runner counts contended cases, and two runs on one device at once both say so."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from parity.device.lock import DeviceLock
from parity.harness.runner import run_suites
from parity.store import Store
from parity.timing import contention
from parity.timing.contention import LoadWindow

from tiny_suites import TinySuite, _device

TESTS = Path(__file__).resolve().parents[1]
SRC = TESTS.parent / "src"


def _busy_orphan() -> int:
    """A busy loop that is not this process's descendant (its shell exits at once); its pid."""
    out = subprocess.run(["sh", "-c", f"timeout 30 {sys.executable} -c 'while True: pass' >/dev/null 2>&1 & echo $!"],
                         capture_output=True, text=True, check=True)
    return int(out.stdout.strip())


def test_a_real_busy_process_is_seen() -> None:
    pid = _busy_orphan()
    try:
        time.sleep(0.2)
        with LoadWindow(cpus=1) as window:
            time.sleep(1.0)
        record = window.record()
    finally:
        os.kill(pid, signal.SIGTERM)
    # The loop ran for most of the second (it shares 2 CPUs with whatever else runs here).
    busy = [p for p in record["top_processes"] if p["name"].startswith("python")]
    assert busy and busy[0]["cpu_s"] > 0.3
    assert record["other_cpu_share"] > contention.CPU_SHARE_LIMIT and record["contended"]


def test_own_children_are_not_contention() -> None:
    child = subprocess.Popen([sys.executable, "-c", "import time\nt = time.time()\nwhile time.time() - t < 3: pass"])
    try:
        time.sleep(0.2)
        with LoadWindow(cpus=1) as window:
            time.sleep(0.5)
        record = window.record()
    finally:
        child.kill()
        child.wait()
    assert child.pid not in [p["pid"] for p in record["top_processes"]]


def test_every_case_carries_its_record_and_the_suite_counts_contended(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(contention, "CPU_SHARE_LIMIT", -1.0)  # every window is over the limit
    with Store.open(tmp_path / "runs.sqlite") as store:
        outcome = run_suites(store, device=_device(), suites=[TinySuite()], options={"tiny": {"cases": 3}})
        assert outcome is not None
        assert all("contention" in c.telemetry for c in outcome.cases)
        assert all("contended" in [f.code for f in c.findings] for c in outcome.cases)
        assert outcome.suites[0].contended == 3 and outcome.contended == 3
        assert outcome.suites[0].to_dict()["contended"] == 3 and outcome.run.summary["contended"] == 3
        load = outcome.run.provenance["load"]
        assert set(load) == {"start", "end"} and "procs_running" in load["end"]


SCRIPT = """
import json, sys
from parity.harness.runner import run_suites
from parity.store import Store
from tiny_suites import TinySuite, _device
with Store.open(sys.argv[1]) as store:
    out = run_suites(store, device=_device(), suites=[TinySuite()], options={"tiny": {"cases": 6, "sleep_s": 0.3}})
    print(json.dumps({"summary": out.run.summary,
                      "cases": [[f.code for f in c.findings] for c in out.cases]}))
"""


def test_two_runs_on_one_device_at_once_both_say_so(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": f"{SRC}{os.pathsep}{TESTS}", "PARITY_LOCK_DIR": str(tmp_path / "locks")}
    first = subprocess.Popen([sys.executable, "-c", SCRIPT, str(tmp_path / "a.sqlite")], env=env,
                             stdout=subprocess.PIPE, text=True)
    time.sleep(1.0)
    second = subprocess.Popen([sys.executable, "-c", SCRIPT, str(tmp_path / "b.sqlite")], env=env,
                              stdout=subprocess.PIPE, text=True)
    outs = [json.loads(p.communicate(timeout=120)[0]) for p in (first, second)]
    for out in outs:
        assert out["summary"]["concurrent_runs"], out["summary"]
        assert out["summary"]["findings"][0]["code"] == "concurrent-run"
        assert any("concurrent-run" in codes for codes in out["cases"])
        assert out["summary"]["suites"]["tiny"]["concurrent"] >= 1
    assert not list((tmp_path / "locks").glob("*.lock"))  # both removed their files


def test_a_dead_runs_lock_is_removed_and_own_ranks_are_not_others(tmp_path: Path) -> None:
    (tmp_path / "cpu.deadrun.0.lock").write_text('{"pid": 1, "run_id": "deadrun"}')
    with DeviceLock(device_name="cpu", run_id="r1", folder=tmp_path) as rank0, \
            DeviceLock(device_name="cpu", run_id="r1", rank=1, folder=tmp_path):
        assert rank0.others() == []
        assert not (tmp_path / "cpu.deadrun.0.lock").exists()
        with DeviceLock(device_name="cpu", run_id="r2", folder=tmp_path):
            assert [o["run_id"] for o in rank0.others()] == ["r2"]
        with DeviceLock(device_name="cuda:1", run_id="r3", folder=tmp_path):
            assert rank0.others() == []  # another device


def test_a_lock_folder_that_cannot_be_made_is_said_not_fatal(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    with DeviceLock(device_name="cpu", run_id="r1", folder=blocker / "locks") as lock:
        assert lock.problem and "cannot hold" in lock.problem and lock.others() == []


def test_only_timed_rows_are_judged_and_other_runs_are_named() -> None:
    from parity.harness.measure import with_conditions
    from parity.model import CaseResult
    from parity.model.samples import Samples

    load = {"contended": True, "reasons": ["other processes used 80% of 2 CPU(s)"]}
    timed = CaseResult(suite="s", key="k", check={"passed": True},
                       samples={"main": Samples(values_s=(1e-3, 1e-3), method="host-clock", resolution_s=1e-9)})
    untimed = CaseResult(suite="s", key="k", check={"passed": True, "skipped": True})
    others = [{"run_id": "r2", "pid": 7}, {"run_id": "r2", "pid": 7}]
    judged = with_conditions(timed, load=load, others=others, device_name="cpu")
    assert [f.code for f in judged.findings] == ["contended", "concurrent-run"]
    assert judged.telemetry["contention"] is load and judged.telemetry["concurrent_runs"] == [others[0]]
    assert "run r2 (pid 7)" in judged.findings[1].message
    skipped = with_conditions(untimed, load=load, others=[], device_name="cpu")
    assert skipped.findings == () and skipped.telemetry["contention"] is load
