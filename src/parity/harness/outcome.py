"""What a run gives back: each suite's outcome, the run's, and the conditions it ran under
(contended and concurrent cases, other parity runs seen on the device, the load at the end)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from parity.model.figure import Figure
from parity.model.result import CaseResult, RunRecord
from parity.store.database import Store


@dataclass(frozen=True, kw_only=True)
class SuiteOutcome:
    """One suite's share of a run: its summary (or why summarising failed) and case counts;
    ``contended`` cases carry a ``contended`` finding, ``concurrent`` a ``concurrent-run`` one."""

    name: str
    summary: dict[str, Any]
    cases: int
    failed: int
    errors: int
    figures: tuple[Figure, ...] = ()
    summary_error: str | None = None
    doubtful: int = 0
    doubtful_by: dict[str, int] = field(default_factory=dict)
    contended: int = 0
    concurrent: int = 0

    @property
    def ok(self) -> bool:
        return self.failed == 0 and self.summary_error is None

    def to_dict(self) -> dict[str, Any]:
        return {
            "suite": self.name,
            "ok": self.ok,
            "cases": self.cases,
            "failed": self.failed,
            "errors": self.errors,
            "contended": self.contended,
            "concurrent": self.concurrent,
            "summary": self.summary,
            "figures": [f.to_dict() for f in self.figures],
            "summary_error": self.summary_error,
            "doubtful": {"figures": self.doubtful, "by_reason": dict(self.doubtful_by)},
        }


@dataclass(frozen=True, kw_only=True)
class RunOutcome:
    """What ``run_suites`` returns: the finished run record, its cases and per-suite outcomes."""

    run: RunRecord
    cases: list[CaseResult]
    suites: list[SuiteOutcome] = field(default_factory=list)
    measured: int = 0
    skipped: int = 0

    @property
    def ok(self) -> bool:
        return all(s.ok for s in self.suites)

    @property
    def doubtful(self) -> int:
        """Figures of the run that cannot be trusted (``invalid`` or ``contended``)."""
        return sum(s.doubtful for s in self.suites)

    @property
    def contended(self) -> int:
        """Cases measured under contention or beside another parity run, over every suite."""
        return sum(any(f.code in ("contended", "concurrent-run") for f in c.findings) for c in self.cases)


def run_conditions(outcomes: list[SuiteOutcome], lock: Any, *, device_name: str) -> dict[str, Any]:
    """The run's share of what else ran: contended and concurrent case counts, the other
    parity runs seen on the device, and a ``concurrent-run`` finding on the run when any was."""
    from parity.device.lock import concurrent_message
    from parity.model.findings import Finding, Severity

    seen = list(lock.seen.values())
    out: dict[str, Any] = {"contended": sum(o.contended for o in outcomes),
                           "concurrent": sum(o.concurrent for o in outcomes), "concurrent_runs": seen}
    if lock.problem:
        out["lock_problem"] = lock.problem
    if seen:
        out["findings"] = [Finding(code="concurrent-run", severity=Severity.WARNING,
                                   message=concurrent_message(seen, device_name),
                                   hint="measure one run at a time on a device").to_dict()]
    return out


def record_load_at_end(store: Store, run_id: str) -> None:
    """Add the machine's load at the end of the run to its provenance (``load.end``)."""
    from parity.device.load import load_now

    provenance = dict(store.get_run(run_id).provenance)
    provenance["load"] = {**(provenance.get("load") or {}), "end": load_now()}
    store.update_provenance(run_id, provenance)
