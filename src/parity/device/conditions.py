"""Settings of the machine that decide results without being the device's identity: the clock
policy and any clock lock, ECC, partitioning (MIG, a container's CPU quota and memory limit),
power caps and the interconnect.

Read once per run for provenance (``setup``), from sysfs, ``/proc`` and NVML only: no
subprocess, nothing that can hang. A fact that cannot be read is recorded as ``not readable:
why``, never guessed. The host's settings are always read (they are the device's on a CPU run
and decide launch and copy overheads on an accelerator); an NVIDIA device adds its own through
NVML (``parity.device.nvml_conditions``), an AMD one through the amdgpu driver's sysfs files
(``parity.device.amdgpu_sysfs``), an Intel one through the i915 or xe driver's
(``parity.device.intel_sysfs``); other accelerators say that no reader exists.

- clock policy (``cpu_clock_policy``): the ``scaling_governor`` of the CPUs this process may
  use, the scaling limits against the hardware's (``scaling_min_freq == scaling_max_freq`` is a
  lock; a maximum below ``cpuinfo_max_freq`` a cap), and turbo/boost (``cpufreq/boost``, or
  ``intel_pstate/no_turbo`` inverted);
- ECC (``edac_ecc``): the memory controllers EDAC monitors and their corrected and uncorrected
  error counts; no EDAC controller is "not readable" (it does not prove memory without ECC);
- partitioning (``cgroup_partition``): the cgroup's CPU quota (v2 ``cpu.max``, v1
  ``cpu.cfs_quota_us / cpu.cfs_period_us``) in CPUs and its memory limit;
- power cap (``rapl_power_caps``): each RAPL zone's constraints (long and short term), W.
"""

from __future__ import annotations

import logging
import os
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from parity.device.sysfs import clock_lock, not_readable, read_sysfs

if TYPE_CHECKING:  # pragma: no cover
    from parity.device.base import Device

log = logging.getLogger(__name__)

SYS_CPU = Path("/sys/devices/system/cpu")
SYS_EDAC = Path("/sys/devices/system/edac/mc")
SYS_POWERCAP = Path("/sys/class/powercap")
CGROUP_ROOT = Path("/sys/fs/cgroup")
PROC_CGROUP = Path("/proc/self/cgroup")
UNLIMITED_BYTES = 1 << 60  # cgroup v1 writes "no limit" as a page-rounded 2**63 - 1


def _int(path: Path) -> int | None:
    text = read_sysfs(path)
    try:
        return int(text) if text is not None else None
    except ValueError:
        return None


def cpu_clock_policy(cpus: Iterable[int] | None = None, *, root: Path = SYS_CPU) -> dict[str, Any]:
    """The governor, frequency limits (kHz), lock and boost of ``cpus`` (default: this
    process's). ``governor`` is one name, or ``name xN, other xM`` when the CPUs differ."""
    chosen = sorted(cpus if cpus is not None else _usable_cpus())
    governors: Counter[str] = Counter()
    limits: set[tuple[int | None, ...]] = set()
    for cpu in chosen:
        folder = root / f"cpu{cpu}" / "cpufreq"
        governor = read_sysfs(folder / "scaling_governor")
        if governor is not None:
            governors[governor] += 1
        limits.add(tuple(_int(folder / name) for name in
                         ("scaling_min_freq", "scaling_max_freq", "cpuinfo_min_freq", "cpuinfo_max_freq")))
    if not governors:
        why = f"no cpufreq in {root}/cpu*/cpufreq (a VM or container that hides it)"
        return {"governor": not_readable(why), "lock": not_readable(why), "boost": _boost(root)}
    return {"governor": ", ".join(f"{g} x{n}" for g, n in sorted(governors.items())) if len(governors) > 1
            else next(iter(governors)),
            "lock": clock_lock(limits), "boost": _boost(root)}


def _usable_cpus() -> set[int]:
    getter = getattr(os, "sched_getaffinity", None)
    return set(getter(0)) if getter is not None else set(range(os.cpu_count() or 1))


def _boost(root: Path) -> str:
    boost = read_sysfs(root / "cpufreq" / "boost")
    if boost in ("0", "1"):
        return "on" if boost == "1" else "off"
    no_turbo = read_sysfs(root / "intel_pstate" / "no_turbo")
    if no_turbo in ("0", "1"):
        return "off" if no_turbo == "1" else "on"
    return not_readable("no cpufreq/boost or intel_pstate/no_turbo")


def edac_ecc(*, root: Path = SYS_EDAC) -> dict[str, Any] | str:
    """The memory controllers EDAC monitors and their error counts, or not readable."""
    controllers = sorted(root.glob("mc[0-9]*")) if root.is_dir() else []
    if not controllers:
        return not_readable(f"no EDAC memory controller in {root}")
    corrected = [_int(mc / "ce_count") for mc in controllers]
    uncorrected = [_int(mc / "ue_count") for mc in controllers]
    return {"source": "edac", "controllers": len(controllers),
            "corrected": sum(c for c in corrected if c is not None),
            "uncorrected": sum(u for u in uncorrected if u is not None)}


def _cgroup_paths(text: str) -> dict[str, str]:
    """``/proc/self/cgroup`` -> controller -> path; the v2 unified entry under ``""``."""
    paths: dict[str, str] = {}
    for line in text.splitlines():
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        for controller in parts[1].split(",") if parts[1] else [""]:
            paths[controller] = parts[2]
    return paths


def cgroup_partition(*, root: Path = CGROUP_ROOT, proc_cgroup: Path = PROC_CGROUP) -> dict[str, Any] | str:
    """The cgroup's CPU quota (CPUs, None for none) and memory limit (B, None for none)."""
    text = read_sysfs(proc_cgroup)
    if text is None:
        return not_readable(f"no {proc_cgroup}")
    paths = _cgroup_paths(text)
    v2 = root / paths.get("", "/").lstrip("/")
    if (v2 / "cpu.max").exists() or (root / "cpu.max").exists():
        folder = v2 if (v2 / "cpu.max").exists() else root
        quota, _, period = (read_sysfs(folder / "cpu.max") or "max").partition(" ")
        cpus = int(quota) / int(period) if quota.isdigit() and period.isdigit() and int(period) else None
        memory = read_sysfs(folder / "memory.max")
        limit = int(memory) if memory and memory.isdigit() else None
        return {"source": "cgroup v2", "cpu_quota": cpus, "memory_limit_bytes": limit}
    cpu_dir = root / "cpu" / paths.get("cpu", "/").lstrip("/")
    quota_us, period_us = _int(cpu_dir / "cpu.cfs_quota_us"), _int(cpu_dir / "cpu.cfs_period_us")
    mem = _int(root / "memory" / paths.get("memory", "/").lstrip("/") / "memory.limit_in_bytes")
    if quota_us is None and mem is None:
        return not_readable(f"no cgroup CPU or memory controller under {root}")
    cpus = quota_us / period_us if quota_us is not None and quota_us > 0 and period_us else None
    return {"source": "cgroup v1", "cpu_quota": cpus,
            "memory_limit_bytes": mem if mem is not None and mem < UNLIMITED_BYTES else None}


def rapl_power_caps(*, root: Path = SYS_POWERCAP) -> dict[str, Any] | str:
    """Each RAPL zone's power constraints in W: ``{"package-0": {"long_term": 125.0}}``."""
    zones = sorted(root.glob("intel-rapl:*")) if root.is_dir() else []
    caps: dict[str, dict[str, float]] = {}
    for zone in zones:
        name = read_sysfs(zone / "name") or zone.name
        constraints = {}
        for index in range(4):
            limit = _int(zone / f"constraint_{index}_power_limit_uw")
            if limit is None:
                continue
            constraints[read_sysfs(zone / f"constraint_{index}_name") or f"constraint_{index}"] = limit / 1e6
        if constraints:
            caps[name] = constraints
    return caps or not_readable(f"no RAPL power limit readable in {root}")


def host_conditions() -> dict[str, Any]:
    """The host's clock policy, ECC, partitioning and power caps (see the module docstring)."""
    return {"clocks": cpu_clock_policy(), "ecc": edac_ecc(), "partition": cgroup_partition(),
            "power_cap": rapl_power_caps()}


def device_conditions(device: Device | None) -> dict[str, Any] | str:
    """The accelerator's own settings: NVML on NVIDIA, the amdgpu driver's sysfs on AMD, the i915
    or xe driver's on Intel, "the host's" on the CPU; else not readable."""
    if device is None:
        return not_readable("no device selected")
    if device.type in ("cpu", "fake"):
        return "the host's"
    if device.type == "cuda" and getattr(device, "is_rocm", False):
        from parity.device.amdgpu_sysfs import amdgpu_conditions

        return amdgpu_conditions(device)
    if device.type == "cuda":
        from parity.device.nvml_conditions import nvml_conditions

        return nvml_conditions(device)
    if device.type == "xpu":
        from parity.device.intel_sysfs import intel_conditions

        return intel_conditions(device)
    return not_readable(f"no reader of clocks, ECC, partitioning or interconnect for {device.type} devices yet")


def setup_conditions(device: Device | None) -> dict[str, Any]:
    """``{"host": ..., "device": ...}`` for provenance; never raises."""
    out: dict[str, Any] = {}
    for key, read in (("host", host_conditions), ("device", lambda: device_conditions(device))):
        try:
            out[key] = read()
        except Exception as exc:  # noqa: BLE001 - a fact we cannot read is recorded as missing
            log.debug("setup conditions (%s) unavailable: %s", key, exc)
            out[key] = not_readable(f"{type(exc).__name__}: {exc}")
    return out
