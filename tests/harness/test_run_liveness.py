"""A run left ``running`` by a process that is gone reads as interrupted (``parity.store.liveness``)."""

from __future__ import annotations

import platform
import subprocess
import sys

from parity.cli.runs import distinguishing_options
from parity.model.result import RunRecord
from parity.store.liveness import INTERRUPTED, UNKNOWN, run_state


def _run(status: str, *, host: str, pid: int) -> RunRecord:
    provenance = {"target": {"kind": "local", "provenance": [{"rank": 0, "host": host, "pid": pid}]}}
    return RunRecord(run_id="r", created_at="2026-12-01T00:00:00+00:00", status=status, config={},
                     provenance=provenance)


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_running_run_whose_process_is_gone_is_interrupted() -> None:
    here = platform.node()
    assert run_state(_run("running", host=here, pid=_dead_pid())) == INTERRUPTED


def test_running_run_whose_process_lives_is_running() -> None:
    import os

    assert run_state(_run("running", host=platform.node(), pid=os.getpid())) == "running"


def test_other_host_cannot_be_told_and_finished_runs_keep_their_status() -> None:
    assert run_state(_run("running", host="elsewhere", pid=1), hostname="here") == UNKNOWN
    assert run_state(_run("complete", host=platform.node(), pid=_dead_pid())) == "complete"


def test_list_shows_the_options_that_tell_runs_apart() -> None:
    config = {"options": {"gemm": {"dtype": "fp32", "backends": ["matmul", "linear"], "budget_s": 0.1,
                                   "ceiling_from": None}, "membw": {"ops": []}}}
    assert distinguishing_options(config) == {"gemm.dtype": "fp32", "gemm.backends": "matmul,linear"}
