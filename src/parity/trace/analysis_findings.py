"""The findings of a trace analysis: what each rank's figures say of themselves (unmatched
kernels, an empty window, no steady state), what the trace could not record (accelerator cores
of unknown type), and on Ascend how the rebuilt steps agree with the profiler's own tables.
"""

from __future__ import annotations

import numpy as np

from parity.model.findings import Finding, Severity
from parity.trace.ascend_steps import TOLERANCE_US
from parity.trace.categories import UNMATCHED
from parity.trace.results import RankAnalysis
from parity.trace.table import UNKNOWN_CORE, ActivityTable

UNMATCHED_WARN_FRACTION = 0.10


def rank_findings(ranks: list[RankAnalysis]) -> list[Finding]:
    """What each analysed rank's figures say of themselves: unmatched kernels, an empty window, no
    steady state, and on Ascend the rebuilt steps against the profiler's own tables."""
    out = []
    for r in ranks:
        unmatched = next((c for c in r.categories if c.category == UNMATCHED), None)
        if unmatched and r.device.busy_ns and unmatched.time_ns > UNMATCHED_WARN_FRACTION * r.device.busy_ns:
            out.append(Finding(code="unmatched-kernels", severity=Severity.WARNING,
                               message=f"rank {r.rank}: {unmatched.share_of_busy:.0%} of device busy time matches no category rule",
                               hint="add rules for those kernel names with --rules FILE (see the top kernels)"))
        if r.device.busy_ns == 0:
            lo, hi = r.device_span_ns
            out.append(Finding(code="empty-window", severity=Severity.WARNING,
                               message=f"rank {r.rank}: no device activity in the window",
                               hint=f"the device activity spans {lo / 1e3:.3f}:{hi / 1e3:.3f} us; "
                                    "choose a window inside it"))
        if r.window.source == "span":
            out.append(Finding(code="no-steady-state", severity=Severity.INFO,
                               message=f"rank {r.rank}: no step markers or repeating kernels; the whole span is analysed",
                               hint="choose the steady state with --steps A-B or --window START_US:END_US"))
        out.extend(exposed_against_step_table(r))
        for s in r.ascend_steps:
            lanes = s.lanes_deviation_us
            if lanes is not None and lanes > TOLERANCE_US:
                out.append(Finding(code="overlap-analysis-mismatch", severity=Severity.WARNING,
                                   message=f"rank {r.rank} step {s.step}: rebuilt figures differ from the timeline's "
                                           f"Overlap Analysis lanes by {lanes:.3f} us",
                                   hint="the task types of this timeline may not be the ones parity knows "
                                        "(older CANN release); compare the lanes with the step table"))
            dev = s.max_deviation_us
            if dev is not None and dev > TOLERANCE_US:
                out.append(Finding(code="step-trace-mismatch", severity=Severity.ERROR,
                                   message=f"rank {r.rank} step {s.step}: rebuilt figures differ from step_trace_time.csv by {dev:.3f} us",
                                   hint="report this trace: the Ascend step rules do not match this profiler version"))
    return out


def unknown_core_findings(table: ActivityTable, rank: int) -> list[Finding]:
    """A finding when some device rows' accelerator core is unknown (``N/A``: Ascend profiler
    level 0), so their category was decided by name alone: how many, and their share of the
    operators' summed time (Σ duration of those rows / Σ duration of the rows with a core other
    than HCCL)."""
    cores = table.extra.get("accelerator_core")
    if cores is None:
        return []
    cores = np.asarray(cores, dtype=object)
    operators = table.device_mask() & np.array([isinstance(c, str) and c not in ("", "HCCL") for c in cores], dtype=bool)
    unknown = operators & (cores == UNKNOWN_CORE)
    if not unknown.any():
        return []
    share = float(table.duration_ns[unknown].sum()) / float(max(table.duration_ns[operators].sum(), 1))
    return [Finding(code="core-type-unavailable", severity=Severity.WARNING,
                    message=f"rank {rank}: the accelerator core of {int(unknown.sum())} kernels ({share:.0%} of "
                            "summed operator time) was not recorded (Accelerator Core N/A); their categories "
                            "come from their names",
                    hint="profile with profiler level 1 or higher so kernel_details.csv records the core")]


def exposed_against_step_table(r: RankAnalysis) -> list[Finding]:
    """A finding when the window is whole steps and its exposed communication differs from the
    sum of the profiler's Communication(Not Overlapped) over those steps by more than
    :data:`TOLERANCE_US` per step."""
    if r.window.steps is None:
        return []
    first, last = r.window.steps
    steps = [s for s in r.ascend_steps if first <= s.step <= last]
    reference = [s.reference.get("communication_not_overlapped_us") for s in steps if s.reference]
    if not steps or len(reference) != len(steps) or None in reference:
        return []
    ours_us = r.comm.exposed_communication_ns / 1e3
    theirs_us = float(sum(reference))
    if abs(ours_us - theirs_us) <= TOLERANCE_US * len(steps):
        return []
    return [Finding(code="exposed-communication-mismatch", severity=Severity.WARNING,
                    message=f"rank {r.rank}: exposed communication {ours_us:,.3f} us differs from the profiler's "
                            f"Communication(Not Overlapped) {theirs_us:,.3f} us over steps {first}-{last}",
                    hint="the profiler's step table and parity's categories disagree on what is compute or "
                         "communication; check the top kernels' categories or pass --rules FILE")]
