"""Facts about the host CPU read from the operating system, without torch.

Linux first: caches and NUMA from sysfs (``/sys/devices/system/cpu``, ``/sys/devices/system/node``),
model and flags from ``/proc/cpuinfo``, with ``lscpu`` as a fallback for what sysfs lacks. On
other systems the functions return what ``platform`` and ``os`` know and say what is missing.
Sizes are bytes, frequencies MHz (the unit the kernel and vendors publish them in).
"""

from __future__ import annotations

import functools
import logging
import os
import platform
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

log = logging.getLogger(__name__)

SYS_CPU = Path("/sys/devices/system/cpu")
SYS_NODE = Path("/sys/devices/system/node")

# CPU flags that change what a benchmark measures: matrix tiles, wide vectors, dot-product units.
FLAGS_OF_INTEREST = (
    "amx_tile",
    "amx_bf16",
    "amx_int8",
    "amx_fp16",
    "avx512f",
    "avx512_bf16",
    "avx512_fp16",
    "avx512_vnni",
    "avx512bw",
    "avx512vl",
    "avx_vnni",
    "avx2",
    "fma",
    "f16c",
    "avx",
    "asimd",
    "asimddp",
    "sve",
    "sve2",
    "sme",
    "bf16",
    "i8mm",
)


@dataclass(frozen=True, kw_only=True)
class CacheLevel:
    """One CPU cache as the kernel describes it; ``size_bytes`` is one instance's size."""

    level: int
    kind: str
    size_bytes: int
    shared_cpus: int

    def to_dict(self) -> dict[str, int | str]:
        return {
            "level": self.level,
            "type": self.kind,
            "size_bytes": self.size_bytes,
            "shared_cpus": self.shared_cpus,
        }


def parse_size(text: str) -> int:
    """Bytes from a kernel size string: ``"32K"`` -> 32768, ``"32768K"``, ``"1 MiB"``, ``"512"``."""
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([KMGT]?)(?:i?B)?\s*", text, flags=re.IGNORECASE)
    if not match:
        raise ValueError(f"not a size: {text!r}")
    scale = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}[match.group(2).upper()]
    return int(float(match.group(1)) * scale)


def parse_cpu_list(text: str) -> set[int]:
    """CPU ids from the kernel's list syntax: ``"0-3,8,10-11"`` -> {0, 1, 2, 3, 8, 10, 11}."""
    cpus: set[int] = set()
    for part in text.strip().split(","):
        if not part:
            continue
        if "-" in part:
            low, high = part.split("-", 1)
            cpus.update(range(int(low), int(high) + 1))
        else:
            cpus.add(int(part))
    return cpus


def _read(path: Path) -> str | None:
    try:
        return path.read_text().strip()
    except OSError:
        return None


def cpu_caches(cpu: int = 0, *, root: Path = SYS_CPU) -> list[CacheLevel]:
    """The caches of ``cpu`` from ``/sys/devices/system/cpu/cpuN/cache/index*``; [] where absent."""
    levels: list[CacheLevel] = []
    for index in sorted((root / f"cpu{cpu}" / "cache").glob("index*")):
        level, kind, size = (_read(index / name) for name in ("level", "type", "size"))
        if level is None or kind is None or size is None:
            continue
        shared = _read(index / "shared_cpu_list")
        levels.append(
            CacheLevel(
                level=int(level),
                kind=kind.lower(),
                size_bytes=parse_size(size),
                shared_cpus=len(parse_cpu_list(shared)) if shared else 1,
            )
        )
    return levels


def lscpu_fields() -> dict[str, str]:
    """``lscpu``'s "Key: value" lines; {} where lscpu is missing or fails (run once a process)."""
    return dict(_lscpu_once())


@functools.lru_cache(maxsize=1)
def _lscpu_once() -> dict[str, str]:
    if shutil.which("lscpu") is None:
        return {}
    try:
        out = subprocess.run(
            ["lscpu"], capture_output=True, text=True, timeout=10, env={**os.environ, "LC_ALL": "C"}
        ).stdout
    except (OSError, subprocess.SubprocessError) as exc:
        log.debug("lscpu failed: %s", exc)
        return {}
    fields: dict[str, str] = {}
    for line in out.splitlines():
        key, sep, value = line.partition(":")
        if sep:
            fields[key.strip()] = value.strip()
    return fields


def cache_sizes(*, root: Path = SYS_CPU) -> dict[str, int | None]:
    """Per-core L1d, L2 and the last-level cache in bytes (sysfs, else lscpu's totals).

    The LLC is the highest-level data or unified cache; its size is one instance's size, which
    is what a single process's working set competes for.
    """
    levels = [c for c in cpu_caches(root=root) if c.kind in ("data", "unified")]
    sizes: dict[str, int | None] = {"l1_bytes": None, "l2_bytes": None, "llc_bytes": None}
    if levels:
        by_level = {c.level: c.size_bytes for c in levels}
        sizes["l1_bytes"] = by_level.get(1)
        sizes["l2_bytes"] = by_level.get(2)
        sizes["llc_bytes"] = by_level[max(by_level)]
        return sizes
    fields = lscpu_fields()
    for key, name in (
        ("l1_bytes", "L1d cache"),
        ("l2_bytes", "L2 cache"),
        ("llc_bytes", "L3 cache"),
    ):
        value = fields.get(name)
        if value:
            sizes[key] = _lscpu_instance_size(value)
    if sizes["llc_bytes"] is None:
        sizes["llc_bytes"] = sizes["l2_bytes"]
    return sizes


def _lscpu_instance_size(value: str) -> int | None:
    """One instance from lscpu's ``"1 MiB (2 instances)"``."""
    match = re.match(r"([\d.]+\s*[KMGT]?i?B?)\s*(?:\((\d+) instances?\))?", value)
    if not match:
        return None
    total = parse_size(match.group(1))
    return total // int(match.group(2)) if match.group(2) else total


def cpuinfo_fields() -> dict[str, str]:
    """The first processor block of ``/proc/cpuinfo`` (model name, flags...); {} off Linux.

    Read once a process: what it is used for (model, vendor, flags) does not change.
    """
    return dict(_cpuinfo_once())


@functools.lru_cache(maxsize=1)
def _cpuinfo_once() -> dict[str, str]:
    text = _read(Path("/proc/cpuinfo"))
    if not text:
        return {}
    fields: dict[str, str] = {}
    for line in text.splitlines():
        if not line.strip():
            if fields:
                break
            continue
        key, _, value = line.partition(":")
        fields.setdefault(key.strip(), value.strip())
    return fields


def cpu_model() -> str:
    """The CPU's marketing name, e.g. ``"Intel(R) Xeon(R) Platinum 8480+"``."""
    info = cpuinfo_fields()
    for key in ("model name", "Model Name", "Hardware", "cpu model"):
        if info.get(key):
            return info[key]
    fields = lscpu_fields()
    return fields.get("Model name") or platform.processor() or "unknown"


def cpu_flags() -> set[str]:
    """All feature flags the kernel reports (x86 ``flags``, Arm ``Features``)."""
    info = cpuinfo_fields()
    text = info.get("flags") or info.get("Features") or lscpu_fields().get("Flags", "")
    return set(text.split())


def cpu_part() -> tuple[str, int] | None:
    """``(vendor_id, cpu family)`` from ``/proc/cpuinfo`` (``("AuthenticAMD", 25)``), or None
    where either is missing (Arm, off Linux)."""
    info = cpuinfo_fields()
    vendor, family = info.get("vendor_id"), info.get("cpu family", "")
    return (vendor, int(family)) if vendor and family.strip().isdigit() else None


def architecture() -> str:
    """``x86-64``, ``arm64`` or the machine string as given, from ``platform.machine()``."""
    machine = platform.machine().lower()
    if machine in ("x86_64", "amd64"):
        return "x86-64"
    if machine in ("aarch64", "arm64"):
        return "arm64"
    return machine or "unknown"


def online_cpus(*, root: Path = SYS_CPU) -> set[int]:
    """Online CPU ids from sysfs, else ``range(os.cpu_count())``."""
    text = _read(root / "online")
    if text:
        return parse_cpu_list(text)
    return set(range(os.cpu_count() or 1))


def affinity() -> set[int] | None:
    """The CPUs this process may run on; None where the OS does not say (macOS)."""
    getter = getattr(os, "sched_getaffinity", None)
    if getter is None:
        return None
    return set(getter(0))


def numa_nodes(*, root: Path = SYS_NODE) -> dict[int, set[int]]:
    """NUMA node id -> its CPUs, from sysfs; {} where the kernel has no node directory."""
    nodes: dict[int, set[int]] = {}
    for node in sorted(root.glob("node[0-9]*")):
        cpus = _read(node / "cpulist")
        if cpus is not None:
            nodes[int(node.name[4:])] = parse_cpu_list(cpus)
    return nodes


def physical_cores(*, root: Path = SYS_CPU) -> int | None:
    """Distinct (package, core) pairs among online CPUs; None where sysfs lacks topology."""
    pairs = set()
    for cpu in online_cpus(root=root):
        topo = root / f"cpu{cpu}" / "topology"
        package, core = _read(topo / "physical_package_id"), _read(topo / "core_id")
        if package is None or core is None:
            return None
        pairs.add((package, core))
    return len(pairs) or None


def placement() -> dict[str, object]:
    """Where this process may run: affinity, whether it is pinned, and the NUMA nodes it touches.

    ``pinned`` is True when the affinity is a strict subset of the online CPUs (taskset, numactl,
    a container's cpuset). ``numa_nodes_used`` lists the nodes with at least one allowed CPU;
    ``numa_pinned`` is True when that is a strict subset of all nodes.
    """
    online = online_cpus()
    allowed = affinity()
    nodes = numa_nodes()
    result: dict[str, object] = {
        "online_cpus": len(online),
        "affinity": _format_cpu_list(allowed) if allowed is not None else "unavailable",
        "affinity_count": len(allowed) if allowed is not None else None,
        "pinned": (allowed < online) if allowed is not None else None,
        "numa_nodes": len(nodes) if nodes else None,
    }
    if nodes and allowed is not None:
        used = sorted(node for node, cpus in nodes.items() if cpus & allowed)
        result["numa_nodes_used"] = used
        result["numa_pinned"] = len(used) < len(nodes)
    return result


def _format_cpu_list(cpus: set[int]) -> str:
    """The kernel's list syntax back from ids: {0, 1, 2, 5} -> ``"0-2,5"``."""
    ordered = sorted(cpus)
    runs: list[str] = []
    start = prev = None
    for cpu in ordered + [None]:  # type: ignore[list-item]
        if start is None:
            start = prev = cpu
            continue
        if cpu is not None and cpu == prev + 1:
            prev = cpu
            continue
        runs.append(f"{start}" if start == prev else f"{start}-{prev}")
        start = prev = cpu
    return ",".join(runs)


def memory_bytes() -> int | None:
    """Total RAM from ``/proc/meminfo`` (``MemTotal`` is in KiB), else sysconf."""
    text = _read(Path("/proc/meminfo"))
    if text:
        match = re.search(r"^MemTotal:\s+(\d+)\s*kB", text, flags=re.MULTILINE)
        if match:
            return int(match.group(1)) * 1024
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return None


def available_memory_bytes(*, meminfo: Path = Path("/proc/meminfo")) -> int | None:
    """``MemAvailable`` from ``/proc/meminfo`` (KiB there) in bytes: the kernel's estimate of
    what new allocations can take without swapping; None where the line is missing."""
    text = _read(meminfo)
    match = re.search(r"^MemAvailable:\s+(\d+)\s*kB", text or "", flags=re.MULTILINE)
    return int(match.group(1)) * 1024 if match else None


def max_clock() -> tuple[float | None, str]:
    """``(MHz, source)``: cpufreq ``cpuinfo_max_freq`` (kHz), else lscpu, else ``cpu MHz``.

    The last is the current clock, not the maximum (VMs often show only that); ``source`` says
    which one was used so a reader can tell.
    """
    khz = _read(SYS_CPU / "cpu0" / "cpufreq" / "cpuinfo_max_freq")
    if khz:
        return int(khz) / 1000.0, "cpufreq cpuinfo_max_freq"
    fields = lscpu_fields()
    if fields.get("CPU max MHz"):
        return float(fields["CPU max MHz"]), "lscpu CPU max MHz"
    mhz = cpuinfo_fields().get("cpu MHz")
    if mhz:
        return float(mhz), "/proc/cpuinfo cpu MHz (current clock; no maximum exposed)"
    return None, "no clock exposed"


def max_clock_mhz() -> float | None:
    """The highest clock the OS reports, in MHz (see ``max_clock`` for the source)."""
    return max_clock()[0]


def host_summary() -> dict[str, object]:
    """Everything above in one JSON-ready dictionary (used by provenance and CPU properties)."""
    flags = cpu_flags()
    clock, clock_source = max_clock()
    return {
        "cpu_model": cpu_model(),
        "architecture": architecture(),
        "machine": platform.machine(),
        "logical_cpus": os.cpu_count(),
        "physical_cores": physical_cores(),
        "memory_bytes": memory_bytes(),
        "caches": [c.to_dict() for c in cpu_caches()],
        **cache_sizes(),
        "max_clock_mhz": clock,
        "max_clock_source": clock_source,
        "flags_of_interest": {flag: flag in flags for flag in FLAGS_OF_INTEREST if _relevant(flag)},
        **placement(),
    }


def _relevant(flag: str) -> bool:
    """x86 flags on x86 hosts, Arm flags on Arm hosts, so the table is not half ``False``."""
    arm = {"asimd", "asimddp", "sve", "sve2", "sme", "bf16", "i8mm"}
    return (flag in arm) == (architecture() == "arm64")
