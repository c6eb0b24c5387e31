"""What else uses the host and the device: readings of the machine's load, no clocks.

Host, from ``/proc`` (no privileges, no extra packages):

- every process's CPU time, ``utime + stime`` of ``/proc/<pid>/stat`` (all its threads), in
  clock ticks, with its parent and name, so that a window's other-process CPU seconds are the
  difference of two snapshots (``other_cpu_seconds``) with this process, its children and, in
  a run of ranks, the launcher and its other ranks left out (``own_pids``);
- each CPU's time from its ``cpuN`` line of ``/proc/stat``: busy (``user + nice + system``) and
  ``steal`` (time the hypervisor gave to other guests), so that a window's busy time on the CPUs
  this run may use, less this run's own processes' time (their reaped children's included:
  ``cutime + cstime``), counts every other process, one that started and ended inside the
  window too (``host_cpu_ticks``, ``own_cpu_ticks``);
- the run queue: ``procs_running`` of ``/proc/stat`` (threads runnable now, this run's own
  included) and the load averages of ``/proc/loadavg``.

Device, where the vendor tool is readable (each reader says "not readable: why" otherwise):
NVML (``pynvml``) attributes SM utilisation to processes, so the share the device gave other
processes is known; ROCm SMI and npu-smi list the processes holding the device and its
device-wide use, which cannot be split between this run and the others.

A process that starts and ends between two snapshots is not seen by the per-process count (its
time goes to its parent once reaped), only by the per-CPU one; a process already running is
counted from the first snapshot.
"""

from __future__ import annotations

import logging
import os
import re
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

PROC = Path("/proc")
TOOL_TIMEOUT_S = 5.0


@dataclass(frozen=True, kw_only=True)
class ProcessTimes:
    """One process in a snapshot: parent pid, name, CPU time in clock ticks."""

    ppid: int
    name: str
    ticks: int
    child_ticks: int = 0  # cutime + cstime: its children's, once it has reaped them


@dataclass(frozen=True, kw_only=True)
class CpuTicks:
    """One CPU's time in ``/proc/stat``, in clock ticks: ``busy`` (user + nice + system) and
    ``steal`` (given by the hypervisor to other guests while this guest wanted the CPU)."""

    busy: int
    steal: int


@dataclass(frozen=True, kw_only=True)
class HostSnapshot:
    """The host's processes, CPUs and run queue at one moment (``processes`` and ``cpus`` by id)."""

    processes: dict[int, ProcessTimes] = field(default_factory=dict)
    procs_running: int | None = None
    loadavg: tuple[float, float, float] | None = None
    cpus: dict[int, CpuTicks] = field(default_factory=dict)


def parse_stat(text: str) -> ProcessTimes:
    """``/proc/<pid>/stat`` -> ppid, name, utime + stime (ticks). The name is in parentheses
    and may hold spaces or parentheses, so the fields are split after its last ``)``."""
    head, _, rest = text.rpartition(")")
    fields = rest.split()
    name = head.partition("(")[2]
    # fields[0] is the state (field 3 of proc(5)); ppid is field 4, utime 14, stime 15, cutime 16,
    # cstime 17.
    children = int(fields[13]) + int(fields[14]) if len(fields) > 14 else 0
    return ProcessTimes(ppid=int(fields[1]), name=name, ticks=int(fields[11]) + int(fields[12]), child_ticks=children)


def read_processes(proc: Path = PROC) -> dict[int, ProcessTimes]:
    """Every readable process's CPU ticks; processes that vanish while read are skipped."""
    out: dict[int, ProcessTimes] = {}
    try:
        entries = os.listdir(proc)
    except OSError as exc:
        log.debug("cannot list %s: %s", proc, exc)
        return out
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            out[int(entry)] = parse_stat((proc / entry / "stat").read_text())
        except (OSError, ValueError, IndexError):
            continue
    return out


def _stat_lines(proc: Path) -> list[str]:
    """The lines of ``/proc/stat``; [] when unreadable."""
    try:
        return (proc / "stat").read_text().splitlines()
    except OSError:
        return []


def read_procs_running(proc: Path = PROC, lines: list[str] | None = None) -> int | None:
    """Threads runnable now, from the ``procs_running`` line of ``/proc/stat`` (or its ``lines``,
    read already); None if absent."""
    for line in _stat_lines(proc) if lines is None else lines:
        if line.startswith("procs_running"):
            try:
                return int(line.split()[1])
            except (ValueError, IndexError):
                return None
    return None


def read_cpu_ticks(proc: Path = PROC, lines: list[str] | None = None) -> dict[int, CpuTicks]:
    """Each CPU's busy and steal ticks from the ``cpuN`` lines of ``/proc/stat`` (or its
    ``lines``, read already: user nice system idle iowait irq softirq steal ...); {} when
    unreadable. Interrupt time is left out of busy: it is not a process's, and a run's own
    loopback traffic is served there."""
    out: dict[int, CpuTicks] = {}
    for line in _stat_lines(proc) if lines is None else lines:
        name, _, rest = line.partition(" ")
        if not (name.startswith("cpu") and name[3:].isdigit()):
            continue
        try:
            values = [int(v) for v in rest.split()]
            out[int(name[3:])] = CpuTicks(busy=sum(values[:3]), steal=values[7] if len(values) > 7 else 0)
        except (ValueError, IndexError):
            continue
    return out


def read_loadavg(proc: Path = PROC) -> tuple[float, float, float] | None:
    """The 1, 5 and 15 minute load averages of ``/proc/loadavg``; None if unreadable."""
    try:
        parts = (proc / "loadavg").read_text().split()
        return float(parts[0]), float(parts[1]), float(parts[2])
    except (OSError, ValueError, IndexError):
        return None


def host_snapshot(proc: Path = PROC) -> HostSnapshot:
    """Processes, run queue, load averages and CPU times now."""
    lines = _stat_lines(proc)  # one read for the run queue and the CPUs
    return HostSnapshot(processes=read_processes(proc), procs_running=read_procs_running(proc, lines),
                        loadavg=read_loadavg(proc), cpus=read_cpu_ticks(proc, lines))


def ticks_per_s() -> int:
    """Clock ticks per second of ``/proc`` CPU times (``SC_CLK_TCK``, 100 on Linux)."""
    try:
        return int(os.sysconf("SC_CLK_TCK"))
    except (ValueError, OSError, AttributeError):
        return 100


def own_pids(processes: dict[int, ProcessTimes], *, pid: int, ranks: bool) -> set[int]:
    """This run's processes: ``pid`` and its descendants; with ``ranks``, the launcher (the
    parent every rank shares) and all its descendants, which are the other ranks."""
    root = processes[pid].ppid if ranks and pid in processes else pid
    children: dict[int, list[int]] = {}
    for child, times in processes.items():
        children.setdefault(times.ppid, []).append(child)
    found = {pid, root}
    stack = [root]
    while stack:
        for child in children.get(stack.pop(), []):
            if child not in found:
                found.add(child)
                stack.append(child)
    return found


def other_cpu_ticks(start: HostSnapshot, end: HostSnapshot, *, exclude: set[int]) -> dict[int, int]:
    """Ticks each other process used between two snapshots: ``end - start`` for a process in
    both, its whole time for one that started in between (a pid whose count fell was reused:
    its whole time too); processes in ``exclude`` and those that used nothing are left out."""
    used: dict[int, int] = {}
    for pid, times in end.processes.items():
        if pid in exclude:
            continue
        before = start.processes.get(pid)
        delta = times.ticks - before.ticks if before is not None and before.ticks <= times.ticks else times.ticks
        if delta > 0:
            used[pid] = delta
    return used


def own_cpu_ticks(start: HostSnapshot, end: HostSnapshot, *, own: set[int]) -> int:
    """Ticks this run's processes ``own`` used between two snapshots, with the children they
    reaped meanwhile (``ticks + child_ticks``): ``end - start`` for a process in both, all of it
    for one that started in between. A child alive at the start and reaped by the end is counted
    whole (its time before the window too): the own time reads high, never low."""
    total = 0
    for pid in own:
        times = end.processes.get(pid)
        if times is None:
            continue
        now = times.ticks + times.child_ticks
        before = start.processes.get(pid)
        then = before.ticks + before.child_ticks if before is not None else 0
        total += now - then if then <= now else now
    return total


def host_cpu_ticks(start: HostSnapshot, end: HostSnapshot, *, cpu_ids: set[int]) -> tuple[int, int] | None:
    """Busy and steal ticks of the CPUs ``cpu_ids`` between two snapshots; None when either
    snapshot lacks one of them (no per-CPU lines in ``/proc/stat``)."""
    if not cpu_ids or any(c not in start.cpus or c not in end.cpus for c in cpu_ids):
        return None
    busy = sum(max(0, end.cpus[c].busy - start.cpus[c].busy) for c in cpu_ids)
    steal = sum(max(0, end.cpus[c].steal - start.cpus[c].steal) for c in cpu_ids)
    return busy, steal


# --- the device's other processes ------------------------------------------------------------

class DeviceLoadReader:
    """Reads what else uses one device. ``read(exclude)`` returns ``other_share`` (0..1, the
    device's utilisation attributed to processes not in ``exclude``) where the tool attributes
    it, ``device_use`` (0..1, whole device) and ``other_pids``; ``reason`` says why not."""

    name = "none"

    def __init__(self, *, reason: str) -> None:
        self.reason = reason

    def read(self, exclude: set[int]) -> dict[str, Any]:
        return {}


class NvmlLoad(DeviceLoadReader):
    """NVIDIA through NVML: other processes and their SM utilisation since the last read."""

    name = "nvml"

    def __init__(self, device: Any) -> None:
        from parity.device.nvml import open_handle

        super().__init__(reason="")
        self.pynvml, self.handle = open_handle(device)
        self._last_us = 0

    def read(self, exclude: set[int]) -> dict[str, Any]:
        nv = self.pynvml
        out: dict[str, Any] = {"device_use": nv.nvmlDeviceGetUtilizationRates(self.handle).gpu / 100.0}
        listed = {p.pid for p in nv.nvmlDeviceGetComputeRunningProcesses(self.handle)}
        if listed and not listed & exclude:
            # This run holds the device but none of its pids is listed: NVML reports another pid
            # namespace (a container), so no process can be told apart from this run's own.
            self.reason = "not readable: NVML lists pids of another pid namespace (a container?)"
            return out
        out["other_pids"] = sorted(listed - exclude)
        try:
            samples = nv.nvmlDeviceGetProcessUtilization(self.handle, self._last_us)
        except nv.NVMLError as exc:  # NOT_FOUND: no process sample since the last read
            log.debug("NVML process utilisation: %s", exc)
            samples = []
        if samples:
            self._last_us = max(s.timeStamp for s in samples)
        out["other_share"] = min(1.0, sum(s.smUtil for s in samples if s.pid not in exclude) / 100.0)
        return out


class SmiLoad(DeviceLoadReader):
    """ROCm SMI or npu-smi: the processes on the device and its device-wide use (the tool does
    not split the use by process, so ``other_share`` is not given)."""

    def __init__(self, *, name: str, pids_cmd: list[str], use_cmd: list[str]) -> None:
        super().__init__(reason="")
        self.name = name
        self.pids_cmd = pids_cmd
        self.use_cmd = use_cmd

    def read(self, exclude: set[int]) -> dict[str, Any]:
        out: dict[str, Any] = {"other_pids": sorted(set(parse_smi_pids(_run(self.pids_cmd))) - exclude)}
        use = parse_smi_use(_run(self.use_cmd))
        if use is not None:
            out["device_use"] = use
        return out


def _run(cmd: list[str]) -> str:
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=TOOL_TIMEOUT_S, check=False)
    return done.stdout


def parse_smi_pids(text: str) -> list[int]:
    """Process ids from ``rocm-smi --showpids`` (a table whose rows start with the PID) or
    ``npu-smi info`` (``| NPU Chip | Process id | name | memory |`` rows)."""
    pids = []
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) >= 3 and cells[1].isdigit() and re.fullmatch(r"\d+\s+\d+", cells[0]):
            pids.append(int(cells[1]))  # npu-smi: "0       0 | 12345 | python | 2300"
        elif len(cells) == 1 and (first := line.split()) and first[0].isdigit() and len(first) >= 3:
            pids.append(int(first[0]))  # rocm-smi: "12345  python  1  2300  0  0"
    return pids


def parse_smi_use(text: str) -> float | None:
    """Device use 0..1 from ``rocm-smi --showuse`` (``GPU use (%): 37``) or ``npu-smi info -t
    usages`` (``Aicore Usage Rate(%) : 37``); the first such line, None when there is none."""
    match = re.search(r"(?:GPU use \(%\)|Aicore Usage Rate\(%\))\s*:\s*([\d.]+)", text)
    return float(match.group(1)) / 100.0 if match else None


def device_load_reader(device: Any) -> DeviceLoadReader:
    """The reader for ``device``'s other processes, or one that reads nothing and says why."""
    kind = getattr(device, "type", None)
    if kind in (None, "cpu", "fake"):
        return DeviceLoadReader(reason=f"{kind or 'this target'} has no device of its own to share")
    if kind == "cuda":
        import torch

        if getattr(torch.version, "hip", None):
            return _smi_reader("rocm-smi", ["rocm-smi", "--showpids"], ["rocm-smi", "--showuse", "-d",
                                                                          str(device.index or 0)])
        try:
            return NvmlLoad(device)
        except Exception as exc:  # noqa: BLE001 - NVML missing or not permitted: say so
            return DeviceLoadReader(reason=f"not readable: NVML: {type(exc).__name__}: {exc}")
    if kind == "npu":
        index = str(device.index or 0)
        return _smi_reader("npu-smi", ["npu-smi", "info"], ["npu-smi", "info", "-t", "usages", "-i", index])
    return DeviceLoadReader(reason=f"not readable: no tool reads other processes on {kind}")


def _smi_reader(tool: str, pids_cmd: list[str], use_cmd: list[str]) -> DeviceLoadReader:
    if shutil.which(tool) is None:
        return DeviceLoadReader(reason=f"not readable: {tool} is not on PATH")
    return SmiLoad(name=tool, pids_cmd=pids_cmd, use_cmd=use_cmd)


def load_now(proc: Path = PROC) -> dict[str, Any]:
    """The machine's load at one moment, for provenance: load averages, runnable threads, CPUs."""
    avg = read_loadavg(proc)
    return {"loadavg": list(avg) if avg else None, "procs_running": read_procs_running(proc),
            "cpus_online": os.cpu_count(),
            "cpus_usable": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None}
