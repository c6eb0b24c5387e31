"""The fairness audit: every condition that differs between the runs and matters to a reader.

Each condition reads what the runs recorded (provenance, config, the cases' parameters,
samples, metrics and telemetry) and yields one value per run; a condition whose values are not
all equal is listed, with why it matters. Three conventions make the numbers mean different
things, and a comparison across them is refused unless forced (then every line they touch is
marked): how bytes are counted, how time is taken, and offline (engine step) against online
(a served endpoint) measurement. A run compared with itself lists nothing.

Beside the conditions here, ``audit_setup`` reads the machine and its stack (availability
category, topology, interconnect, power cap and energy method, ECC, partitioning, clock locks, a
served engine's mode and flags) and ``audit_environment`` the communication libraries'
variables (``NCCL_*``, ``HCCL_*``, ``NVSHMEM_*``...). Each entry says whether it can change the
figures compared (``applies``): ``NCCL_ALGO`` is listed for two runs of gloo ranks, marked as
read by no library they used.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from parity.compare.audit_environment import environment_entries
from parity.compare.audit_setup import setup_entries
from parity.compare.audit_values import AuditEntry, run_mode
from parity.compare.join import IGNORED_PARAMS, JoinedCase, byte_convention, headline, timing_method
from parity.model.result import CaseResult, RunRecord

CLOCK_TOLERANCE = 0.02  # maximum clocks within 2% are the same setting read twice
REFUSED = ("byte conventions", "timing methods", "offline vs online")


def _get(data: Any, *path: str) -> Any:
    for part in path:
        if not isinstance(data, dict):
            return None
        data = data.get(part)
    return data


def _text(value: Any) -> str | None:
    if value is None or value == {} or value == []:
        return None
    if isinstance(value, dict):
        return ", ".join(f"{k} {v}" for k, v in sorted(value.items()) if v is not None) or None
    if isinstance(value, (list, tuple, set)):
        return ", ".join(sorted(map(str, value))) or None
    return str(value)


def _versions(run: RunRecord) -> str | None:
    torch = run.provenance.get("torch") or {}
    parts = {k: torch.get(k) for k in ("cuda", "hip", "torch_npu", "cann") if torch.get(k)}
    return _text(parts)


def _firmware(run: RunRecord) -> str | None:
    return _text(_get(run.provenance, "device", "nvml", "vbios_version") or run.provenance.get("firmware"))


def _cards(run: RunRecord) -> str:
    ranks = len(_get(run.provenance, "target", "provenance") or []) or 1
    count = _get(run.provenance, "device", "count")
    return f"{ranks} rank(s) of {count if count is not None else '?'} device(s) present"


def _affinity(run: RunRecord) -> str | None:
    host = run.provenance.get("host") or {}
    if not host:
        return None
    pinned = "pinned" if host.get("pinned") else "not pinned"
    threads = _get(run.provenance, "torch", "threads")
    return f"affinity {host.get('affinity')} ({host.get('affinity_count')} CPUs, {pinned}), torch threads {threads}"


def _clock(run: RunRecord) -> float | None:
    value = _get(run.provenance, "device", "nvml", "max_sm_clock_mhz") or \
        _get(run.provenance, "device", "properties", "clock_max_mhz")
    return float(value) if isinstance(value, (int, float)) else None


def _throttling(cases: list[CaseResult]) -> str:
    seen = [c for c in cases if c.metrics.get("power_limited") or c.metrics.get("throttle_reasons")
            or (c.telemetry or {}).get("power_limited")]
    reasons = sorted({r for c in seen for r in (c.metrics.get("throttle_reasons") or [])})
    return f"{len(seen)} case(s){': ' + ', '.join(reasons) if reasons else ''}" if seen else "none seen"


def contended_share(cases: list[CaseResult]) -> float | None:
    """The share of a run's measured cases that carry a ``contended`` or ``concurrent-run``
    finding: ``contended / measured``; None when no case was measured.

    Example: 3 of 12 measured cases contended -> 0.25."""
    measured = [c for c in cases if c.error is None]
    if not measured:
        return None
    return sum(_contended(c) for c in measured) / len(measured)


def _contended(case: CaseResult) -> bool:
    return any(f.code in ("contended", "concurrent-run") for f in case.findings)


def _contention(run: RunRecord, cases: list[CaseResult]) -> str:
    """``3 of 12 case(s) contended (25%), 2 beside another parity run; load 4.4 at start, 6.1
    at end on 2 CPUs``: the cases' findings, then the run's load record."""
    share = contended_share(cases)
    if share is None:
        return "no case measured"
    measured = [c for c in cases if c.error is None]
    recorded = sum("contention" in (c.telemetry or {}) for c in measured)
    concurrent = sum(any(f.code == "concurrent-run" for f in c.findings) for c in measured)
    text = f"{sum(_contended(c) for c in measured)} of {len(measured)} case(s) contended ({share:.0%})"
    text += f", {concurrent} beside another parity run" if concurrent else ""
    text += "" if recorded == len(measured) else f"; {len(measured) - recorded} without a load record"
    return f"{text}; {load_record(run)}"


def load_record(run: RunRecord) -> str:
    """The run's load record: 1-minute load average at start and end, on how many usable CPUs
    (``provenance.load``); ``no load record`` for a run stored before it was kept."""
    load = run.provenance.get("load")
    if not isinstance(load, dict) or not load:
        return "no load record"
    parts = []
    for when in ("start", "end"):
        avg = _get(load, when, "loadavg")
        if isinstance(avg, list) and avg:
            parts.append(f"{avg[0]:g} at {when}")
    cpus = _get(load, "start", "cpus_usable") or _get(load, "start", "cpus_online")
    return "load average " + (", ".join(parts) or "not read") + (f" on {cpus} CPUs" if cpus else "")


def _options(run: RunRecord) -> dict[str, Any]:
    flat = {}
    for suite, values in (run.config.get("options") or {}).items():
        for key, value in (values or {}).items():
            if key not in ("shapes", "warmup_s", "budget_s", "ceiling_budget_s"):
                flat[f"{suite}.{key}"] = value
    return flat


# (condition, why it matters, per-run value from the run record)
RUN_CONDITIONS: tuple[tuple[str, str, Callable[[RunRecord], Any]], ...] = (
    ("offline vs online", "engine-step figures exclude scheduling and serving overhead; never compare them "
     "with a served endpoint's", run_mode),
    ("quick or full", "a quick run is a smoke test with fewer, shorter cases, not a measurement to quote",
     lambda r: "quick" if r.config.get("quick") else "full"),
    ("torch version", "kernels and their dispatch change between torch releases",
     lambda r: _get(r.provenance, "torch", "version")),
    ("accelerator software", "CUDA, ROCm, CANN and torch_npu versions choose the kernels", _versions),
    ("drivers", "drivers change clocks, scheduling and kernel selection", lambda r: _text(r.provenance.get("drivers"))),
    ("firmware", "firmware (VBIOS, hand-configured proof-of-concept builds) sets clocks and power", _firmware),
    ("power limit", "a lower power limit caps sustained clocks",
     lambda r: _get(r.provenance, "device", "nvml", "power_limit_w")),
    ("card count", "rates per device and collective figures depend on how many devices took part", _cards),
    ("host architecture", "host-side overheads (launch, copies, the CPU's own kernels) differ by architecture",
     lambda r: _get(r.provenance, "host", "architecture")),
    ("CPU affinity and threads", "the CPUs and threads a process may use bound host work and CPU kernels", _affinity),
)


def audit_runs(runs: list[RunRecord], per_run: list[list[CaseResult]], joined: list[JoinedCase],
               only: list[list[str]]) -> tuple[list[AuditEntry], set[tuple[str, str]]]:
    """The audit entries and the ``(suite, key)`` of every joined case a refused condition
    touches (all of them when the runs differ in offline vs online)."""
    entries: list[AuditEntry] = []
    for condition, matters, read in RUN_CONDITIONS:
        _add(entries, condition, tuple(read(r) for r in runs), matters)
    clocks = [_clock(r) for r in runs]
    known = [c for c in clocks if c]
    if len(known) == len(clocks) and known and (max(known) - min(known)) > CLOCK_TOLERANCE * max(known):
        entries.append(AuditEntry(condition="clocks", values=tuple(clocks),
                                  matters="maximum clocks (MHz) differ by more than 2%: rates scale with them"))
    entries += setup_entries(runs, per_run)
    entries += environment_entries(runs)
    _add(entries, "throttling seen", tuple(_throttling(c) for c in per_run),
         "throttled or power-limited cases ran below the device's sustained clock")
    # Listed even when the shares are equal (contention matters on its own), but not for a run
    # compared with itself, which lists nothing.
    if len({r.run_id for r in runs}) > 1 and any((contended_share(c) or 0.0) > 0 for c in per_run):
        entries.append(AuditEntry(condition="contention", values=tuple(_contention(r, c) for r, c in zip(runs, per_run)),
                                  matters="cases measured while other processes or another parity run used the "
                                          "machine ran slower than the device can; every timed figure of theirs "
                                          "is in doubt"))
    _add(entries, "dtypes", tuple(_text({c.params.get("dtype") for c in cases if c.params.get("dtype")})
                                  for cases in per_run),
         "matrix and vector units run each precision at its own rate; only cases of one dtype are joined")
    if any(only):
        _add(entries, "case sets", tuple(f"{len(o)} of {len(c)} cases not in every run" for o, c in zip(only, per_run)),
             "cases measured in one run only are left out of every ratio and median", force=True)
    opts = [_options(r) for r in runs]
    for name in sorted(set().union(*opts)):
        _add(entries, f"option {name}", tuple(o.get(name) for o in opts), "the suite was asked to measure differently")
    _case_params(entries, joined)
    marked = _conventions(entries, joined)
    if any(e.condition == "offline vs online" for e in entries):
        entries = [replace(e, refused=True) if e.condition == "offline vs online" else e for e in entries]
        marked = {(j.suite, j.key) for j in joined}
    return entries, marked


def _add(entries: list[AuditEntry], condition: str, values: tuple[Any, ...], matters: str, *,
         refused: bool = False, force: bool = False) -> None:
    if force or len({_key(v) for v in values}) > 1:
        entries.append(AuditEntry(condition=condition, values=values, matters=matters, refused=refused))


def _key(value: Any) -> str:
    return repr(value)


def _case_params(entries: list[AuditEntry], joined: list[JoinedCase]) -> None:
    """Parameters of joined cases that differ between runs (a flush, a budget, a placement),
    among the cases that give a ratio (a headline on every side): a case without one is
    compared on nothing, so its parameters decide nothing (a GEMM ceiling's sentinel rounds
    carry the shape each run's search found)."""
    differing: dict[str, list[set[str]]] = {}
    for j in joined:
        if any(headline(c) is None for c in j.cases):
            continue
        names = set().union(*(c.params for c in j.cases)) - IGNORED_PARAMS
        for name in names:
            values = [repr(c.params.get(name)) for c in j.cases]
            if len(set(values)) > 1:
                slot = differing.setdefault(name, [set() for _ in j.cases])
                for i, v in enumerate(values):
                    slot[i].add(v)
    for name, per_run in sorted(differing.items()):
        entries.append(AuditEntry(condition=f"case parameter {name}", values=tuple(", ".join(sorted(s)) for s in per_run),
                                  matters="joined cases were measured with different settings"))


def _conventions(entries: list[AuditEntry], joined: list[JoinedCase]) -> set[tuple[str, str]]:
    """Byte conventions and timing methods of joined cases: refused where they differ between
    runs in which the case ran (a failed case has no figure, so no convention to mix)."""
    marked: set[tuple[str, str]] = set()
    for condition, read, matters in (
        ("byte conventions", byte_convention, "bytes counted another way give another GB/s for the same transfer"),
        ("timing methods", timing_method, "device events, host clock and max-over-ranks time different spans"),
    ):
        per_run: list[set[str]] = [set() for _ in (joined[0].cases if joined else ())]
        for j in joined:
            values = [read(c) for c in j.cases]
            if len({v for v, c in zip(values, j.cases) if c.ok}) > 1:  # a failed case has no figure to mix
                marked.add((j.suite, j.key))
                for i, (v, c) in enumerate(zip(values, j.cases)):
                    if c.ok:
                        per_run[i].add(str(v))
        if any(per_run):
            entries.append(AuditEntry(condition=condition, values=tuple(", ".join(sorted(s)) for s in per_run),
                                      matters=matters, refused=True))
    return marked
