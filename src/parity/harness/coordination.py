"""How the runner's steps are shared when a run has several ranks.

One process (``Alone``) or a group of ranks (``Ranked``): the runner walks the same steps with
either, so there is one sweep for every target.

- ``share(value)``: rank 0's value on every rank (the run id, the cases still to measure);
- ``ready(problem)``: every rank says whether it could prepare the case; one rank's problem is
  every rank's, so no rank enters a timed collective that another will never reach;
- ``collect(result)``: every rank's result for a case on rank 0, merged into the one row rank 0
  stores (``merge_rank_results``); None on the other ranks.

Only the writer (rank 0, or the single process) touches the store and reports progress.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from parity.model.findings import Finding
from parity.model.result import CaseResult

# Seconds a rank waits for the others at a step of the sweep before naming the missing ones.
DEFAULT_STEP_TIMEOUT_S = 600.0


class Alone:
    """One process: every step is the identity."""

    writer = True
    group = None

    def share(self, value: Any) -> Any:
        return value

    def ready(self, problem: str | None) -> str | None:
        return problem

    def collect(self, result: CaseResult) -> CaseResult | None:
        return result


@dataclass(frozen=True, kw_only=True)
class Ranked:
    """A joined ``parity.ranks.RankGroup``; every method is collective (all ranks call it)."""

    group: Any
    timeout_s: float = DEFAULT_STEP_TIMEOUT_S

    @property
    def writer(self) -> bool:
        return bool(self.group.is_writer)

    def share(self, value: Any) -> Any:
        from parity.ranks import all_gather

        return all_gather(value, group=self.group, timeout_s=self.timeout_s)[0]

    def ready(self, problem: str | None) -> str | None:
        from parity.ranks import all_gather

        problems = all_gather(problem, group=self.group, timeout_s=self.timeout_s)
        named = [f"rank {r}: {p}" for r, p in enumerate(problems) if p]
        return "; ".join(named) or None

    def collect(self, result: CaseResult) -> CaseResult | None:
        from parity.ranks import gather_to_rank0

        every = gather_to_rank0(result, group=self.group, timeout_s=self.timeout_s)
        return merge_rank_results(every) if every is not None else None


def merge_rank_results(results: list[CaseResult]) -> CaseResult:
    """The stored row of a case measured on every rank (``results`` in rank order).

    Rank 0's samples and metrics are the row's (under max over ranks they are every rank's);
    the row errs when any rank erred, naming it; its check passes only when every rank's did,
    and keeps each rank's check; findings of other ranks are kept, prefixed with their rank;
    each rank's telemetry is kept under ``telemetry["ranks"]``.
    """
    first = results[0]
    errors = [f"rank {r}: {res.error}" for r, res in enumerate(results) if res.error]
    checks = [dict(res.check) for res in results]
    passed = all(c.get("passed") is True for c in checks)
    check = {"passed": passed, "method": first.check.get("method", ""), "ranks": checks}
    findings = list(first.findings)
    for r, res in enumerate(results[1:], start=1):
        findings += [Finding(code=f.code, severity=f.severity, message=f"rank {r}: {f.message}", hint=f.hint)
                     for f in res.findings]
    telemetry = {**first.telemetry, "ranks": [dict(res.telemetry) for res in results]}
    return replace(first, error="; ".join(errors) or None, check=check, findings=tuple(findings),
                   telemetry=telemetry)
