"""The audit's conditions of the machine and its stack: availability category, topology,
interconnect, power cap and energy method, ECC, partitioning, clock locks, and the engine of a
served model.

Each reads what the run recorded (``config.availability``; ``provenance.setup`` from
``parity.device.conditions``, and each rank's own where ranks recorded it, so that a node set
up otherwise shows as ``A on ranks 0-3; B on ranks 4-7``; ``provenance.topology``; the target;
the endpoint's answer) and gives one value per run; an entry is listed when the values differ, with whether it can change
the figures compared (``AuditEntry.applies``). A fact the run could not read is its recorded
``not readable: why``: two runs that could not read it are not told apart, one that could and
one that could not are.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from parity.compare.audit_values import AuditEntry, get, rank_records, ranks_text, run_mode, world_size
from parity.model.result import CaseResult, RunRecord

AVAILABILITY = {"available": "Available", "preview": "Preview", "rd": "RDI"}
# A PEP 440 pre-release or development version (2.6.0.dev20241112, 2.5.0rc1, 0.7.0a2,
# 2.6.0a0+git1d2c) or a CANN alpha/beta build: a component not (yet) released as such.
PRERELEASE = re.compile(r"(\.dev\d*|\d(a|b|rc)\d+|alpha|beta)", re.IGNORECASE)
NOT_RECORDED = "not recorded"


def _text(value: Any) -> str:
    if value is None:
        return NOT_RECORDED
    if isinstance(value, dict):
        return ", ".join(f"{k} {_text(v)}" for k, v in value.items()) or NOT_RECORDED
    if isinstance(value, float):
        return f"{value:g}"  # a power limit of 650.0 W reads 650 W
    return str(value)


def prerelease_components(run: RunRecord) -> list[str]:
    """The recorded components whose version says pre-release: ``torch 2.6.0.dev20241112``."""
    torch = run.provenance.get("torch") or {}
    found = [(name, torch.get(key)) for name, key in (("torch", "version"), ("torch_npu", "torch_npu"),
                                                       ("CANN", "cann"))]
    found.append(("server", (_server(run) or {}).get("version")))
    found.append(("engine", get(run.provenance, "engine", "version")))
    # only the public part: a local label (+cu124, +g1a2b3c) is no release marker
    return [f"{name} {version}" for name, version in found
            if isinstance(version, str) and PRERELEASE.search(version.split("+", 1)[0])]


def _server(run: RunRecord) -> dict[str, Any] | None:
    """What an endpoint's server reported (``target.provenance[0].server``), None otherwise."""
    records = get(run.provenance, "target", "provenance")
    first = records[0] if isinstance(records, list) and records else None
    server = first.get("server") if isinstance(first, dict) else None
    return server if isinstance(server, dict) else None


def availability(run: RunRecord) -> str:
    """The declared category (``--availability``), then any pre-release component the stack
    reports: ``Preview (declared); pre-release: torch 2.6.0.dev20241112``."""
    declared = run.config.get("availability")
    text = f"{AVAILABILITY.get(str(declared), declared)} (declared)" if declared else "not declared"
    pre = prerelease_components(run)
    return f"{text}; pre-release: {', '.join(pre)}" if pre else text


def topology(run: RunRecord) -> str | None:
    """Nodes and ranks per node as the launcher or the user gave them, else ranks and hosts;
    None for a served endpoint's run (the ranks behind it are the server's, which its client
    does not see)."""
    if run_mode(run) == "online":
        return None
    topo = run.provenance.get("topology")
    if isinstance(topo, dict) and topo.get("nodes"):
        per_node = topo.get("ranks_per_node")
        nodes = topo.get("rank_nodes")
        if per_node is None and isinstance(nodes, list):  # nodes of different rank counts
            per_node = "(" + ", ".join(str(nodes.count(n)) for n in sorted(set(nodes))) + ")"
        return f"{topo['nodes']} node(s) x {per_node or '?'} rank(s) ({topo.get('source', 'source not recorded')})"
    size = world_size(run)
    hosts = get(run.provenance, "target", "identity", "hosts")
    if size is None:
        return NOT_RECORDED
    return f"{size} rank(s)" + (f" on {hosts} host(s)" if hosts else "")


def _setting(setup: Any, key: str) -> Any:
    """A setting of the measured device in one ``setup`` record (``parity.device.conditions``):
    its own reading, the host's for a CPU device, or the recorded reason it was not read."""
    if not isinstance(setup, dict):
        return None
    device = setup.get("device")
    if device == "the host's":
        return get(setup, "host", key)
    return device.get(key) if isinstance(device, dict) else device


def per_rank(run: RunRecord, show: Callable[[Any], str]) -> str:
    """``show`` of the run's setup: of every rank's where each recorded its own and they differ
    (``A on ranks 0-3; B on ranks 4-7``: one node set up otherwise), else of the writer's."""
    setups = [r.get("setup") for r in rank_records(run)]
    if len(setups) > 1 and all(isinstance(s, dict) for s in setups):
        seen: dict[str, list[int]] = {}
        for index, setup in enumerate(setups):
            seen.setdefault(show(setup), []).append(index)
        if len(seen) > 1:
            return "; ".join(f"{text} on {ranks_text(idx)}" for text, idx in seen.items())
    return show(run.provenance.get("setup"))


def show_links(setup: Any) -> str:
    """``NVLink 18 of 18 links active; PCIe gen 5 x16`` (NVML), ``XGMI 7 link(s) in hive 0x...;
    PCIe gen 5 x16`` (amdgpu), the PCIe link alone (Intel), none on a CPU device, or not read."""
    if isinstance(setup, dict) and setup.get("device") == "the host's":
        return "none: the CPU is the device (ranks meet in host memory or over the network)"
    value = _setting(setup, "interconnect")
    if not isinstance(value, dict):
        return _text(value)
    pcie = value.get("pcie") or {}
    link = (f"PCIe gen {pcie.get('generation')} x{pcie.get('width')}" if isinstance(pcie, dict)
            and isinstance(pcie.get("generation"), int) else "PCIe not readable")
    if "xgmi_links" in value:
        hive = value.get("xgmi_hive")
        xgmi = (f"XGMI {value['xgmi_links']} link(s)" + (f" in hive {hive}" if hive else "")
                if isinstance(value["xgmi_links"], int) else f"XGMI {_text(value['xgmi_links'])}")
        return f"{xgmi}; {link}"
    if "nvlink_links" not in value:
        return link
    return f"NVLink {value.get('nvlink_active')} of {value.get('nvlink_links')} links active; {link}"


def interconnect(run: RunRecord) -> str:
    """The device's links (:func:`show_links`, per rank where ranks differ), then the links a
    preflight run measured between the ranks where the run records one."""
    return per_rank(run, show_links) + _preflight(run)


def _preflight(run: RunRecord) -> str:
    """``; preflight RUN: 12 link(s) measured, 1 slow`` (``provenance.preflight``), else ``""``."""
    pre = run.provenance.get("preflight")
    if not isinstance(pre, dict):
        return ""
    links, slow = pre.get("links"), pre.get("slow")
    counted = f"{len(links)} link(s) measured" if isinstance(links, list) else "links not recorded"
    return f"; preflight {pre.get('run_id')}: {counted}, {len(slow) if isinstance(slow, list) else 0} slow"


def show_power_cap(setup: Any) -> str:
    """The management limit against its default (W: NVML's, amdgpu's hwmon power1_cap, i915/xe's
    power1_max); RAPL's constraints on a CPU."""
    value = _setting(setup, "power_cap")
    if isinstance(value, dict) and "limit_w" in value:
        return f"{_text(value.get('limit_w'))} W (default {_text(value.get('default_w'))} W)"
    if isinstance(value, dict):
        return "; ".join(f"{zone}: " + ", ".join(f"{k} {w:g} W" for k, w in caps.items())
                         for zone, caps in value.items() if isinstance(caps, dict)) or NOT_RECORDED
    return _text(value)


def energy_method(run: RunRecord) -> str:
    """How energy was read (``power read from nvml (power)``) or why it was not."""
    return _text(get(run.provenance, "device", "power"))


def show_ecc(setup: Any) -> str:
    """ECC: NVML's mode, amdgpu RAS on the GPU's memory, EDAC's controllers on a CPU, or not
    readable (error counts are recorded, not compared: they move between runs)."""
    value = _setting(setup, "ecc")
    if isinstance(value, dict) and value.get("source") == "amdgpu ras":
        return f"{value.get('memory')} (amdgpu RAS on the GPU's memory; feature mask {value.get('feature_mask')})"
    if isinstance(value, dict):
        return f"{value.get('controllers')} EDAC memory controller(s) (ECC memory)"
    return _text(value)


def show_partition(setup: Any) -> str:
    """MIG mode or instance (NVML), the compute and memory partition (amdgpu), the tiles (Intel),
    or the cgroup's CPU quota and memory limit on a CPU device."""
    value = _setting(setup, "partition")
    if isinstance(value, dict):
        cpus, memory = value.get("cpu_quota"), value.get("memory_limit_bytes")
        quota = f"CPU quota {cpus:g} CPUs" if isinstance(cpus, (int, float)) else "no CPU quota"
        limit = f"memory limit {memory / 2**30:.1f} GiB" if isinstance(memory, int) else "no memory limit"
        return f"{value.get('source')}: {quota}, {limit}"
    return _text(value)


def show_clock_lock(setup: Any) -> str:
    """Applications clocks and auto boost (NVML), the lock and performance level (amdgpu), the GT
    frequency range's lock (i915/xe), or governor, lock and boost (cpufreq)."""
    value = _setting(setup, "clocks")
    if not isinstance(value, dict):
        return _text(value)
    if "governor" in value:
        governor, lock = value.get("governor"), value.get("lock")
        if governor == lock:  # one reason why neither was read (a VM hides cpufreq)
            return f"governor and lock {governor}; boost {value.get('boost')}"
        return f"governor {governor}; {lock}; boost {value.get('boost')}"
    if "gt_mhz" in value:
        return f"{value.get('lock')} (GT frequency range)"
    if "performance_level" in value:
        return f"{value.get('lock')}; performance level {value.get('performance_level')}"
    return f"{value.get('lock')}; auto boost {value.get('auto_boost')}"


def engine(run: RunRecord, cases: list[CaseResult]) -> str | None:
    """A served model's engine as its endpoint reported it (server, version, flags given), or an
    offline engine step's mode (graph replay or eager); None for a run with no engine."""
    config = run.config or {}
    recorded = run.provenance.get("engine") or config.get("engine")
    server = _server(run)
    if server is not None or get(config, "endpoint", "url"):
        server = server or {}
        parts = [f"server {server.get('header') or 'unnamed'}", f"version {server.get('version') or NOT_RECORDED}"]
        flags = server.get("flags") or get(config, "endpoint", "flags")
        parts.append(f"flags {_text(flags)}" if flags else "flags not given")
        return "online: " + "; ".join(parts) + (f"; engine {_text(recorded)}" if recorded else "")
    if not config.get("modes") and not recorded:
        return None
    graph = [c.metrics["graph"] is True for c in cases if isinstance(c.metrics.get("graph"), bool)]
    failed = sum(any(f.code == "graph-failed" for f in c.findings) for c in cases)
    mode = ("graph replay" if graph and all(graph) else "eager" if graph and not any(graph)
            else f"graph replay on {sum(graph)} of {len(graph)} cases" if graph else "eager (no graph recorded)")
    mode += f", graph capture failed on {failed} case(s)" if failed else ""
    return "offline: " + mode + (f"; engine {_text(recorded)}" if recorded else "")


def _multi(runs: list[RunRecord]) -> str | None:
    if any((world_size(r) or 2) > 1 for r in runs):
        return None
    return "no figure compared was measured over more than one rank"


def _energy_cases(per_run: list[list[CaseResult]]) -> str | None:
    if any(isinstance((c.telemetry or {}).get("energy"), dict) and "unavailable" not in c.telemetry["energy"]
           for cases in per_run for c in cases):
        return None
    return "no case compared carries an energy reading"


# (condition, why it matters, per-run value, why it cannot change these figures or None)
Reader = Callable[[RunRecord, list[CaseResult]], Any]
Scope = Callable[[list[RunRecord], list[list[CaseResult]]], str | None]
SETUP_CONDITIONS: tuple[tuple[str, str, Reader, Scope], ...] = (
    ("availability", "MLPerf's categories: Available (every component released and obtainable now), Preview "
     "(released within 180 days), RDI (research, development or internal: prototype hardware, proof-of-concept "
     "firmware or software); a figure of one category is no claim about another",
     lambda r, c: availability(r), lambda runs, per_run: None),
    ("topology", "how ranks split over nodes decides which links a collective crosses (scale-up or scale-out)",
     lambda r, c: topology(r), lambda runs, per_run: _multi(runs)),
    ("interconnect", "NVLink, PCIe generation and width bound device-to-device and host-device transfers",
     lambda r, c: interconnect(r), lambda runs, per_run: _multi(runs)),
    ("power cap", "a cap below the default lowers sustained clocks under load",
     lambda r, c: per_rank(r, show_power_cap), lambda runs, per_run: None),
    ("energy method", "energy read from another sensor (board, package, a counter or sampled power) is "
     "another quantity", lambda r, c: energy_method(r), lambda runs, per_run: _energy_cases(per_run)),
    ("ECC", "ECC costs memory capacity and, on some memories, bandwidth", lambda r, c: per_rank(r, show_ecc),
     lambda runs, per_run: None),
    ("partitioning", "a MIG slice or a CPU quota gives the run a fraction of the device",
     lambda r, c: per_rank(r, show_partition), lambda runs, per_run: None),
    ("clock locks", "locked, capped or boosted clocks set the rate every timed figure runs at",
     lambda r, c: per_rank(r, show_clock_lock), lambda runs, per_run: None),
    ("engine mode", "a served engine's version, flags and graph or eager mode change its step time",
     engine, lambda runs, per_run: None),
)


def setup_entries(runs: list[RunRecord], per_run: list[list[CaseResult]]) -> list[AuditEntry]:
    """One entry per condition whose values differ between the runs that have it (a value of
    None is a condition the run has no such thing for: no engine, no ranks of its own)."""
    entries = []
    for condition, matters, read, scope in SETUP_CONDITIONS:
        values = tuple(read(r, c) for r, c in zip(runs, per_run))
        if len({repr(v) for v in values if v is not None}) > 1:
            entries.append(AuditEntry.make(condition, values, matters, not_here=scope(runs, per_run)))
    return entries
