"""Contention on hand-computed cases: scripted /proc readings, the share, the limit, the finding,
the device tools' output, and the audit's share of contended cases."""

from __future__ import annotations

from pathlib import Path

import pytest

from parity.compare.audit import audit_runs, contended_share
from parity.device.load import (
    host_cpu_ticks,
    host_snapshot,
    other_cpu_ticks,
    own_cpu_ticks,
    own_pids,
    parse_smi_pids,
    parse_smi_use,
    parse_stat,
)
from parity.model.findings import Finding, Severity
from parity.model.result import CaseResult, RunRecord
from parity.timing.contention import (
    CPU_SHARE_LIMIT,
    contended_finding,
    contention_record,
    other_cpu_share,
)


def _stat(pid: int, name: str, ppid: int, utime: int, stime: int) -> str:
    # proc(5): pid (comm) state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime stime ...
    return f"{pid} ({name}) R {ppid} 1 1 0 -1 4194304 10 0 0 0 {utime} {stime} 0 0 20 0 1 0 5 0 0\n"


def _write_proc(root: Path, processes: dict[int, tuple[str, int, int, int]], *, running: int,
                cpus: dict[int, tuple[int, int]] | None = None) -> None:
    """A scripted /proc: processes (name, ppid, utime, stime), and per CPU (busy, steal) ticks
    as user ticks and steal in its ``cpuN`` line (none by default, as a kernel without them)."""
    for child in root.glob("[0-9]*"):
        (child / "stat").unlink()
        child.rmdir()
    for pid, (name, ppid, utime, stime) in processes.items():
        (root / str(pid)).mkdir(parents=True)
        (root / str(pid) / "stat").write_text(_stat(pid, name, ppid, utime, stime))
    per_cpu = "".join(f"cpu{c} {busy} 0 0 1000 7 3 5 {steal} 0 0\n" for c, (busy, steal) in (cpus or {}).items())
    (root / "stat").write_text(f"cpu  1 2 3 4\n{per_cpu}procs_running {running}\nprocs_blocked 0\n")
    (root / "loadavg").write_text("2.50 1.25 0.75 3/120 999\n")


def test_parse_stat_keeps_a_name_with_spaces_and_parentheses() -> None:
    times = parse_stat(_stat(42, "a (b) c", 7, 30, 12))
    assert (times.ppid, times.name, times.ticks) == (7, "a (b) c", 42)


def test_other_share_from_scripted_proc_readings(tmp_path: Path) -> None:
    # pid 100 is this run (its child 101 too); 200 runs throughout; 300 starts in the window;
    # 400 exits in it (not seen). At 100 ticks/s: 200 used 300 ticks, 300 used 40: 3.4 s.
    _write_proc(tmp_path, {100: ("parity", 1, 40, 10), 101: ("worker", 100, 0, 0),
                           200: ("busy", 1, 900, 100), 400: ("gone", 1, 5, 5)}, running=3)
    start = host_snapshot(tmp_path)
    _write_proc(tmp_path, {100: ("parity", 1, 120, 30), 101: ("worker", 100, 50, 0),
                           200: ("busy", 1, 1150, 150), 300: ("new", 1, 30, 10)}, running=4)
    end = host_snapshot(tmp_path)
    assert start.procs_running == 3 and end.loadavg == (2.5, 1.25, 0.75)
    exclude = own_pids(start.processes, pid=100, ranks=False)
    assert exclude == {100, 101}
    assert other_cpu_ticks(start, end, exclude=exclude) == {200: 300, 300: 40}
    record = contention_record(start=start, end=end, exclude=exclude, window_s=2.0, cpus=2, hz=100,
                               sampled={"procs_running": {"median": 3.5}})
    # 3.4 CPU-s over a 2 s window of 2 CPUs: 3.4 / (2 * 2) = 0.85 > 0.25.
    assert record["other_cpu_s"] == pytest.approx(3.4)
    assert record["other_cpu_share"] == pytest.approx(0.85)
    # Lower bound, one tick off each of the two processes: 3.38 / 4 = 0.845.
    assert record["other_cpu_share_low"] == pytest.approx(0.845)
    assert record["contended"] and record["cpu_share_limit"] == CPU_SHARE_LIMIT
    assert [p["name"] for p in record["top_processes"]] == ["busy", "new"]
    finding = contended_finding(record)
    assert finding is not None and finding.code == "contended" and finding.severity is Severity.WARNING
    assert "85% of 2 CPU(s) (at least 84%)" in finding.message


def test_a_quiet_window_is_not_contended(tmp_path: Path) -> None:
    _write_proc(tmp_path, {100: ("parity", 1, 0, 0), 200: ("shell", 1, 10, 0)}, running=1)
    start = host_snapshot(tmp_path)
    _write_proc(tmp_path, {100: ("parity", 1, 400, 0), 200: ("shell", 1, 30, 10)}, running=1)
    record = contention_record(start=start, end=host_snapshot(tmp_path), exclude={100}, window_s=2.0,
                               cpus=2, hz=100, sampled={})
    # 30 ticks = 0.3 s over 2 s x 2 CPUs = 0.075 <= 0.25.
    assert record["other_cpu_share"] == pytest.approx(0.075)
    assert not record["contended"] and contended_finding(record) is None


def test_a_window_of_a_few_ticks_is_not_contended_on_rounding(tmp_path: Path) -> None:
    # 0.02 s on 2 CPUs; three processes read 1 tick each: 0.03 / 0.04 = 0.75 by the point
    # estimate, but each may be one tick high: the lower bound is 0, not contended.
    _write_proc(tmp_path, {100: ("parity", 1, 0, 0), 1: ("a", 0, 5, 0), 2: ("b", 0, 5, 0), 3: ("c", 0, 5, 0)},
                running=1)
    start = host_snapshot(tmp_path)
    _write_proc(tmp_path, {100: ("parity", 1, 2, 0), 1: ("a", 0, 6, 0), 2: ("b", 0, 6, 0), 3: ("c", 0, 6, 0)},
                running=1)
    record = contention_record(start=start, end=host_snapshot(tmp_path), exclude={100}, window_s=0.02,
                               cpus=2, hz=100, sampled={})
    assert record["other_cpu_share"] == pytest.approx(0.75) and record["other_cpu_share_low"] == 0.0
    assert not record["contended"]


def test_device_share_above_its_limit_is_contended(tmp_path: Path) -> None:
    _write_proc(tmp_path, {100: ("parity", 1, 0, 0)}, running=1)
    snap = host_snapshot(tmp_path)
    record = contention_record(start=snap, end=snap, exclude={100}, window_s=1.0, cpus=8, hz=100,
                               sampled={"device_other_share": {"median": 0.6}}, other_device_pids={555},
                               device_reader="nvml")
    assert record["contended"] and record["device"]["other_pids"] == [555]
    assert record["reasons"] == ["other processes used 60% of the device"]


def test_share_formula_and_its_refusals() -> None:
    assert other_cpu_share(other_cpu_s=3.0, window_s=2.0, cpus=2) == pytest.approx(0.75)
    with pytest.raises(ValueError, match="positive window"):
        other_cpu_share(other_cpu_s=1.0, window_s=0.0, cpus=2)


def test_ranks_of_one_launcher_are_this_runs_own() -> None:
    procs = {pid: parse_stat(_stat(pid, "p", ppid, 0, 0))
             for pid, ppid in {10: 1, 11: 10, 12: 10, 13: 12, 20: 1}.items()}
    assert own_pids(procs, pid=11, ranks=True) == {10, 11, 12, 13}
    assert own_pids(procs, pid=11, ranks=False) == {11}


def test_vendor_tool_output_is_read() -> None:
    npu = ("| NPU     Chip          | Process id    | Process name             | Process memory(MB)      |\n"
           "| 0       0             | 12345         | python3                  | 2300                    |\n"
           "| 1       0             | 777           | train                    | 100                     |\n")
    rocm = ("======= PIDs for KFD processes =======\n"
            "PID    PROCESS NAME  GPU(s)  VRAM USED  SDMA USED  CU OCCUPANCY\n"
            "4242   python        1       1024       0          UNKNOWN\n")
    assert parse_smi_pids(npu) == [12345, 777]
    assert parse_smi_pids(rocm) == [4242]
    assert parse_smi_use("GPU[0]		: GPU use (%): 37\n") == pytest.approx(0.37)
    assert parse_smi_use("        Aicore Usage Rate(%)           : 80\n") == pytest.approx(0.8)
    assert parse_smi_use("nothing here") is None


def _case(key: str, *codes: str, error: str | None = None) -> CaseResult:
    return CaseResult(suite="s", key=key, check={"passed": True}, error=error,
                      findings=tuple(Finding(code=c, severity=Severity.WARNING, message="m") for c in codes),
                      telemetry={"contention": {"contended": bool(codes)}} if error is None else {})


def test_audit_share_of_contended_cases() -> None:
    # 12 measured cases, 2 contended and 1 beside another run: 3/12 = 0.25; the error row is left out.
    loaded = ([_case(f"c{i}") for i in range(9)] + [_case("a", "contended"), _case("b", "contended"),
                                                    _case("c", "concurrent-run"), _case("x", error="boom")])
    quiet = [_case(f"c{i}") for i in range(12)]
    assert contended_share(loaded) == pytest.approx(0.25)
    assert contended_share(quiet) == 0.0 and contended_share([]) is None
    runs = [RunRecord(run_id=r, created_at="2026-01-01") for r in ("a", "b")]
    entries, _ = audit_runs(runs, [loaded, quiet], [], [[], []])
    entry = next(e for e in entries if e.condition == "contention")
    assert entry.values == ("3 of 12 case(s) contended (25%), 1 beside another parity run; no load record",
                            "0 of 12 case(s) contended (0%); no load record")
    same, _ = audit_runs(runs, [loaded, loaded], [], [[], []])
    assert any(e.condition == "contention" for e in same)  # equal, but it matters on its own
    itself, _ = audit_runs([runs[0], runs[0]], [loaded, loaded], [], [[], []])
    assert not any(e.condition == "contention" for e in itself)  # a run compared with itself lists nothing
    none, _ = audit_runs(runs, [quiet, quiet], [], [[], []])
    assert not any(e.condition == "contention" for e in none)


class _FakeNvml:
    """The few pynvml calls ``NvmlLoad`` makes, scripted."""

    class NVMLError(Exception):
        pass

    def __init__(self, *, listed: list[int], samples: list[tuple[int, int]]) -> None:
        self.listed, self.samples = listed, samples

    def nvmlDeviceGetUtilizationRates(self, handle: object) -> object:
        return type("U", (), {"gpu": 90})()

    def nvmlDeviceGetComputeRunningProcesses(self, handle: object) -> list[object]:
        return [type("P", (), {"pid": pid})() for pid in self.listed]

    def nvmlDeviceGetProcessUtilization(self, handle: object, since: int) -> list[object]:
        return [type("S", (), {"pid": pid, "smUtil": util, "timeStamp": 5})() for pid, util in self.samples]


def test_nvml_attributes_the_device_to_other_processes() -> None:
    from parity.device.load import NvmlLoad

    reader = NvmlLoad.__new__(NvmlLoad)
    reader.reason, reader.handle, reader._last_us = "", object(), 0
    # This run (pid 10) at 30% SM, two others at 25% and 15%: others' share 0.40.
    reader.pynvml = _FakeNvml(listed=[10, 20, 30], samples=[(10, 30), (20, 25), (30, 15)])
    seen = reader.read({10})
    assert seen["other_share"] == pytest.approx(0.40) and seen["other_pids"] == [20, 30]
    assert seen["device_use"] == pytest.approx(0.9) and reader._last_us == 5
    # Pids of another namespace (this run's own is not among them): nothing is attributed.
    reader.pynvml = _FakeNvml(listed=[4001, 4002], samples=[(4001, 50)])
    seen = reader.read({10})
    assert "other_share" not in seen and "another pid namespace" in reader.reason


def test_the_cpus_count_the_processes_that_came_and_went_inside_the_window(tmp_path: Path) -> None:
    """Per-CPU busy ticks less this run's own count what the per-process snapshots miss. On
    CPUs 0 and 1 (CPU 2 is not this run's), 2 s: the CPUs were busy 150 + 130 = 280 ticks; this
    run (pid 100, 120 ticks, and its child 101 reaped meanwhile, 40 ticks in its cutime) used
    160; a shell used 10 and processes that started and ended in the window the rest (110,
    unseen by the per-process count). Host-wide other = 280 - 160 = 120 ticks = 1.2 s over
    2 s x 2 CPUs = 0.30; its lower bound takes one tick per CPU and per own process seen at the
    end (2 + 1): 117 / 400 = 0.2925 > 0.25, contended; per process only 10 ticks: 0.025."""
    _write_proc(tmp_path, {100: ("parity", 1, 0, 0), 101: ("child", 100, 0, 0), 200: ("shell", 1, 0, 0)},
                running=1, cpus={0: (1000, 50), 1: (2000, 60), 2: (500, 0)})
    start = host_snapshot(tmp_path)
    _write_proc(tmp_path, {100: ("parity", 1, 100, 20), 200: ("shell", 1, 10, 0)},
                running=1, cpus={0: (1150, 50), 1: (2130, 60), 2: (900, 0)})
    (tmp_path / "100" / "stat").write_text(_stat(100, "parity", 1, 100, 20).replace(" 0 0 20 0", " 30 10 20 0", 1))
    end = host_snapshot(tmp_path)
    assert end.processes[100].child_ticks == 40 and end.cpus[1].busy == 2130 and end.cpus[0].steal == 50
    assert host_cpu_ticks(start, end, cpu_ids={0, 1}) == (280, 0)
    assert own_cpu_ticks(start, end, own={100, 101}) == 160
    record = contention_record(start=start, end=end, exclude={100, 101}, window_s=2.0, cpus=2, hz=100, sampled={},
                               cpu_ids={0, 1})
    assert record["other_cpu_share"] == pytest.approx(0.025)
    assert record["host_other_cpu_share"] == pytest.approx(0.30)
    assert record["host_other_cpu_share_low"] == pytest.approx(0.2925)
    assert record["contended"] and "counted on the CPUs (at least 29%)" in record["reasons"][0]
    assert record["steal_share"] == 0.0


def test_steal_above_the_limit_is_contended_and_a_kernel_without_cpu_lines_is_judged_as_before(
        tmp_path: Path) -> None:
    # 2 s on 2 CPUs, 140 steal ticks: 1.4 / 4 = 0.35, lower bound (140 - 2) / 400 = 0.345.
    _write_proc(tmp_path, {100: ("parity", 1, 0, 0)}, running=1, cpus={0: (0, 0), 1: (0, 0)})
    start = host_snapshot(tmp_path)
    _write_proc(tmp_path, {100: ("parity", 1, 200, 0)}, running=1, cpus={0: (100, 70), 1: (100, 70)})
    record = contention_record(start=start, end=host_snapshot(tmp_path), exclude={100}, window_s=2.0, cpus=2,
                               hz=100, sampled={}, cpu_ids={0, 1})
    assert record["steal_share"] == pytest.approx(0.35) and record["steal_share_low"] == pytest.approx(0.345)
    assert record["host_other_cpu_share"] == 0.0 and record["contended"]
    assert record["reasons"] == ["the hypervisor gave 35% of the CPUs' time to other guests (steal, at least 34%)"]
    _write_proc(tmp_path, {100: ("parity", 1, 0, 0)}, running=1)
    bare = host_snapshot(tmp_path)
    assert bare.cpus == {} and host_cpu_ticks(bare, bare, cpu_ids={0, 1}) is None
    quiet = contention_record(start=bare, end=bare, exclude={100}, window_s=2.0, cpus=2, hz=100, sampled={},
                              cpu_ids={0, 1})
    assert quiet["host_other_cpu_share"] is None and quiet["steal_share"] is None and not quiet["contended"]

