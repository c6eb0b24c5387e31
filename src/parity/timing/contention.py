"""What else used the host and the device while a case was measured, and whether it was too much.

``LoadWindow`` wraps a case's measurement: a snapshot of every process's CPU time on entry and
on exit (``parity.device.load``), and, on the telemetry sampler's background thread, the run
queue and the device's other processes every ``interval_s`` seconds. ``record()`` gives the
case's contention record; ``contended_finding`` judges it.

Definitions (docs/definitions.md, Contention):

- other processes' CPU share = ``other_cpu_s / (window_s * cpus)``, where ``other_cpu_s`` is the
  CPU time of every process but this run's own (this process, its children, and in a run of
  ranks the launcher and the other ranks) during the window, and ``cpus`` the CPUs this process
  may use (its affinity);
- ``/proc`` counts CPU time in whole ticks (10 ms), so each process's reading may be one tick
  high: the share's lower bound takes one tick off each process that used any;
- host-wide, from each usable CPU's busy ticks in ``/proc/stat`` less this run's own processes'
  (with the children they reaped): ``host_other_cpu_share``, which counts the processes that
  started and ended inside the window (a test suite's short subprocesses, a compiler's), which
  the per-process count misses; its lower bound takes one tick off per CPU and per own process;
- ``steal_share`` = the usable CPUs' steal ticks / ``(window_s * cpus)``: time a hypervisor gave
  other guests while this one wanted the CPU, less one tick per CPU for its lower bound;
- a case is ``contended`` when any of the three lower bounds exceeds ``CPU_SHARE_LIMIT`` (0.25),
  or when the device's utilisation attributed to other processes (NVML) exceeds
  ``DEVICE_SHARE_LIMIT`` (0.25) at its median reading.

The window is the whole case (preparation, warm-up, timed calls, check): several families time
more than one sample set per case, and contention in any of them moves the case's figures.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from parity.device.load import (
    PROC,
    HostSnapshot,
    device_load_reader,
    host_cpu_ticks,
    host_snapshot,
    other_cpu_ticks,
    own_cpu_ticks,
    own_pids,
    read_procs_running,
    ticks_per_s,
)
from parity.device.telemetry import TelemetrySampler
from parity.model.findings import Finding, Severity

# Other processes may hold a quarter of the usable CPUs before a case is contended. Background
# noise on a quiet machine (shells, editors, daemons) stays under 0.05; one busy process on a
# 2-CPU machine is 0.5; and a benchmark sharing its CPUs with a quarter of a CPU's worth of
# other work per CPU loses a share of its rate that shows beyond the CIs of a quick run.
CPU_SHARE_LIMIT = 0.25
# Other processes' share of the device's SM utilisation (NVML), at the median reading.
DEVICE_SHARE_LIMIT = 0.25
# The run queue and the device are read on the telemetry thread this often; a vendor tool run
# as a process (rocm-smi, npu-smi) costs tens of ms, so not faster.
LOAD_INTERVAL_S = 0.5
# The record's host-wide fields (None without per-CPU readings): ``_host_shares``.
HOST_FIELDS = ("host_other_cpu_s", "host_other_cpu_share", "host_other_cpu_share_low", "steal_share", "steal_share_low")
LOAD_METRICS = ("procs_running", "device_other_share", "device_use")
TOP_PROCESSES = 5


def other_cpu_share(*, other_cpu_s: float, window_s: float, cpus: int) -> float:
    """Other processes' share of the usable CPUs: ``other_cpu_s / (window_s * cpus)``.

    Example: two busy loops for a 2 s window on 2 CPUs, 1.5 CPU-s each: ``3.0 / (2 * 2) = 0.75``.
    """
    if window_s <= 0 or cpus < 1:
        raise ValueError(f"need a positive window and CPU count, got {window_s!r} s, {cpus!r} CPUs")
    return other_cpu_s / (window_s * cpus)


def usable_cpus() -> int:
    """CPUs this process may run on (its affinity), else the online count."""
    return len(usable_cpu_ids()) or os.cpu_count() or 1


def usable_cpu_ids() -> set[int]:
    """The ids of the CPUs this process may run on (its affinity); empty where unknown."""
    return set(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else set()


class _LoadSource:
    """The run queue and the device's other processes, as a telemetry source."""

    name = "load"

    def __init__(self, *, device: Any, proc: Path, exclude: set[int]) -> None:
        self.proc = proc
        self.exclude = exclude
        self.device = device_load_reader(device)
        self.other_pids: set[int] = set()

    def read(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        running = read_procs_running(self.proc)
        if running is not None:
            out["procs_running"] = running
        seen = self.device.read(self.exclude)
        self.other_pids.update(seen.pop("other_pids", []))
        out.update({f"device_{k}" if k == "other_share" else k: v for k, v in seen.items()})
        return out

    def unavailable(self) -> dict[str, str]:
        why = self.device.reason or f"{self.device.name} does not attribute use to processes"
        return {"procs_running": "no procs_running line in /proc/stat", "device_other_share": why,
                "device_use": self.device.reason or f"{self.device.name} reports no device use"}


class LoadWindow:
    """Context manager around one case: ``with LoadWindow(device=d) as w: ...; w.record()``.

    ``ranks`` marks one rank of a run of ranks (the launcher and its descendants are this run's
    own); ``rank_pids`` are the ranks' pids the group knows (their provenance), left out too."""

    def __init__(self, *, device: Any = None, ranks: bool = False, rank_pids: set[int] | None = None,
                 proc: Path = PROC, cpus: int | None = None, interval_s: float = LOAD_INTERVAL_S) -> None:
        self.proc = proc
        self.rank_pids = set(rank_pids or ())
        self.cpu_ids = usable_cpu_ids() if cpus is None else set()
        self.cpus = cpus if cpus is not None else len(self.cpu_ids) or usable_cpus()
        self.ranks = ranks
        self._device = device
        self._interval_s = interval_s
        self._start = HostSnapshot()
        self._end = HostSnapshot()
        self._t0 = 0.0
        self._started_utc = ""
        self._window_s = 0.0
        self._sampler: TelemetrySampler | None = None
        self._source: _LoadSource | None = None

    def __enter__(self) -> LoadWindow:
        self._start = host_snapshot(self.proc)
        self._exclude = self.rank_pids | own_pids(self._start.processes, pid=os.getpid(), ranks=self.ranks)
        self._source = _LoadSource(device=self._device, proc=self.proc, exclude=self._exclude)
        self._sampler = TelemetrySampler(sources=[self._source], interval_s=self._interval_s,
                                         metrics=LOAD_METRICS)
        self._t0 = time.perf_counter()
        self._started_utc = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        self._sampler.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._sampler is not None
        self._sampler.__exit__(*exc)
        self._window_s = time.perf_counter() - self._t0
        self._end = host_snapshot(self.proc)

    def record(self) -> dict[str, Any]:
        """The case's contention record (seconds, shares 0..1, the limits it was judged by)."""
        assert self._sampler is not None and self._source is not None
        exclude = self._exclude | own_pids(self._end.processes, pid=os.getpid(), ranks=self.ranks)
        record = contention_record(start=self._start, end=self._end, exclude=exclude,
                                   window_s=self._window_s, cpus=self.cpus, hz=ticks_per_s(),
                                   sampled=self._sampler.result(), other_device_pids=self._source.other_pids,
                                   device_reader=self._source.device.name, cpu_ids=self.cpu_ids)
        return {"started_utc": self._started_utc, **record}


def contention_record(*, start: HostSnapshot, end: HostSnapshot, exclude: set[int], window_s: float,
                      cpus: int, hz: int, sampled: dict[str, Any], other_device_pids: set[int] | None = None,
                      device_reader: str = "none", cpu_ids: set[int] | None = None) -> dict[str, Any]:
    """The record one window leaves (see the module docstring for the shares and the limits);
    the host-wide share and the steal need ``cpu_ids``, the usable CPUs, in both snapshots."""
    used = other_cpu_ticks(start, end, exclude=exclude)
    other_s = sum(used.values()) / hz
    share = other_cpu_share(other_cpu_s=other_s, window_s=window_s, cpus=cpus) if window_s > 0 else 0.0
    # Each process's time is whole ticks, so each delta may read up to one tick high: the share is
    # judged on its lower bound, which keeps a short window (a few ticks) from reading contended
    # on rounding alone.
    low_s = sum(max(0, ticks - 1) for ticks in used.values()) / hz
    low = other_cpu_share(other_cpu_s=low_s, window_s=window_s, cpus=cpus) if window_s > 0 else 0.0
    top = sorted(used.items(), key=lambda kv: -kv[1])[:TOP_PROCESSES]
    device_share = (sampled.get("device_other_share") or {}).get("median")
    host = _host_shares(start, end, exclude=exclude, cpu_ids=cpu_ids or set(), window_s=window_s, cpus=cpus, hz=hz)
    reasons = []
    if low > CPU_SHARE_LIMIT:
        reasons.append(f"other processes used {share:.0%} of {cpus} CPU(s) (at least {low:.0%})")
    elif host and host["host_other_cpu_share_low"] > CPU_SHARE_LIMIT:
        reasons.append(f"other processes used {host['host_other_cpu_share']:.0%} of {cpus} CPU(s) counted on the "
                       f"CPUs (at least {host['host_other_cpu_share_low']:.0%}), most in processes that came and "
                       "went inside the case")
    if host and host["steal_share_low"] > CPU_SHARE_LIMIT:
        reasons.append(f"the hypervisor gave {host['steal_share']:.0%} of the CPUs' time to other guests (steal, at "
                       f"least {host['steal_share_low']:.0%})")
    if device_share is not None and device_share > DEVICE_SHARE_LIMIT:
        reasons.append(f"other processes used {device_share:.0%} of the device")
    return {
        "window_s": window_s,
        "cpus": cpus,
        "other_cpu_s": other_s,
        "other_cpu_share": share,
        "other_cpu_share_low": low,
        "cpu_share_limit": CPU_SHARE_LIMIT,
        **(host or dict.fromkeys(HOST_FIELDS)),
        "top_processes": [{"pid": pid, "name": end.processes[pid].name, "cpu_s": ticks / hz} for pid, ticks in top],
        "excluded_pids": len(exclude),
        "loadavg": {"start": list(start.loadavg) if start.loadavg else None,
                    "end": list(end.loadavg) if end.loadavg else None},
        "procs_running": sampled.get("procs_running"),
        "device": {"reader": device_reader, "other_share": device_share, "share_limit": DEVICE_SHARE_LIMIT,
                   "use": sampled.get("device_use"), "other_pids": sorted(other_device_pids or ()),
                   "unavailable": {k: v for k, v in (sampled.get("unavailable") or {}).items()
                                   if k.startswith("device")}},
        "contended": bool(reasons),
        "reasons": reasons,
    }


def _host_shares(start: HostSnapshot, end: HostSnapshot, *, exclude: set[int], cpu_ids: set[int], window_s: float,
                 cpus: int, hz: int) -> dict[str, float] | None:
    """The host-wide other-process share and the steal share with their lower bounds (module
    docstring); None without per-CPU readings of ``cpu_ids`` or a window."""
    ticks = host_cpu_ticks(start, end, cpu_ids=cpu_ids) if window_s > 0 else None
    if ticks is None:
        return None
    busy, steal = ticks
    own = own_cpu_ticks(start, end, own=exclude)
    other = max(0, busy - own)
    other_low = max(0, busy - len(cpu_ids) - own - sum(1 for pid in exclude if pid in end.processes))

    def share(t: int) -> float:
        return other_cpu_share(other_cpu_s=t / hz, window_s=window_s, cpus=cpus)

    return dict(zip(HOST_FIELDS, (other / hz, share(other), share(other_low), share(steal),
                                  share(max(0, steal - len(cpu_ids))))))


def contended_finding(record: dict[str, Any]) -> Finding | None:
    """``contended`` (warning) when the record's shares exceed their limits, else None."""
    if not record.get("contended"):
        return None
    return Finding(code="contended", severity=Severity.WARNING,
                   message="measured under contention: " + "; ".join(record.get("reasons", [])),
                   hint="stop other work on this machine or pin parity to CPUs nothing else uses, then measure again")
