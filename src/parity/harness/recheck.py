"""Settling the cases a suite measured again after its sweep (``Suite.recheck``).

A point off the trend of its neighbours is measured once more (``<key>/again``, with
``params["again_of"]``). If the second measurement is back on trend, the first was disturbed
and the second stands for the point; if it stays off, the first stands and an ``off-trend``
warning gives both figures, so an odd point is never silently kept nor silently replaced.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from parity.model.result import CaseResult

Find = Callable[[list[CaseResult]], list[CaseResult]]


def settle_rechecks(results: list[CaseResult], *, find: Find,
                    describe: Callable[[CaseResult], str]) -> tuple[list[CaseResult], list[dict[str, Any]]]:
    """(the rows the summary uses, the findings): each first measurement, or its ``again`` row
    when that one is back on trend by ``find`` (the suite's off-trend rule over first rows);
    ``describe`` renders a row's figure for the finding."""
    firsts = [r for r in results if not r.params.get("again_of")]
    again = {r.params["again_of"]: r for r in results if r.params.get("again_of") and r.ok}
    if not again:
        return firsts, []
    swapped = [as_first(again[r.key]) if r.key in again else r for r in firsts]
    still = {r.key for r in find(swapped)} & set(again)
    rows, stayed = [], []
    for first in firsts:
        second = again.get(first.key)
        if second is not None and first.key in still:
            rows.append(first)
            stayed.append((first, second))
        else:
            rows.append(second if second is not None else first)
    if not stayed:
        return rows, []
    shown = ", ".join(f"{f.key} {describe(f)} then {describe(s)}" for f, s in stayed)
    return rows, [{"code": "off-trend", "severity": "warning",
                   "message": f"{len(stayed)} point(s) stay off the trend of their neighbours when measured "
                              f"again ({shown})",
                   "hint": "something at that point differs (page faults, a cache or tile boundary, another "
                           "job): measure it on an idle machine before quoting it"}]


def as_first(result: CaseResult) -> CaseResult:
    """``result`` standing in for the case it re-measured: its key, ``again_of`` dropped."""
    if not result.params.get("again_of"):
        return result
    params = {k: v for k, v in result.params.items() if k != "again_of"}
    return CaseResult(suite=result.suite, key=str(result.params["again_of"]), params=params, metrics=result.metrics,
                      check=result.check, findings=result.findings, samples=result.samples,
                      telemetry=result.telemetry)
