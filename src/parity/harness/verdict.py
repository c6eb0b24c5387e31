"""Which figures of a run cannot be trusted, and why: the counts behind the run's verdict.

A figure cannot be trusted when a finding says it cannot be true (code ``invalid``:
``parity.metrics.validity``) or that others used the machine while it was measured (code
``contended``). The runner stores the counts with each suite's outcome (``doubtful``), and the
run's last line says ``DOUBTFUL: N figures cannot be trusted: ...`` instead of ``OK`` when any
is counted (``parity.report.run_summary.verdict_text``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any

from parity.model.findings import untrusted_codes
from parity.model.result import CaseResult
from parity.store.figures import StoredFigure


def doubtful_figures(figures: Iterable[StoredFigure], cases: Iterable[CaseResult]) -> tuple[int, dict[str, int]]:
    """How many of one suite's figures cannot be trusted, and how many for each reason.

    A figure's reasons are the untrusted codes (``invalid``, ``contended``:
    ``parity.model.findings.UNTRUSTED``) among its findings; a figure of a case also takes its
    case's, and a figure over the suite's cases those of every case (it is derived from them).
    A flagged case that no figure names counts as one figure of its own, so a suite without
    figures cannot hide it. A figure with two reasons counts once in the total and once under
    each reason. Example: figures ``a`` (case x, contended), ``b`` (case y, own ``invalid``) and
    ``c`` (over the cases) give 3, {contended: 2, invalid: 1}.
    """
    flagged = {c.key: untrusted_codes(c.findings) for c in cases}
    flagged = {key: codes for key, codes in flagged.items() if codes}
    over_all = set().union(*flagged.values()) if flagged else set()
    total, by_reason, named = 0, Counter[str](), set()
    for figure in figures:
        reasons = untrusted_codes(figure.findings)
        if figure.case is None:
            reasons |= over_all
        else:
            reasons |= flagged.get(figure.case, set())
            named.add(figure.case)
        if reasons:
            total += 1
            by_reason.update(reasons)
    for key, codes in flagged.items():
        if key not in named:
            total += 1
            by_reason.update(codes)
    return total, dict(sorted(by_reason.items()))


def run_doubtful(outcomes: Sequence[Any]) -> dict[str, Any]:
    """The run's untrusted figures over its suites: ``{"figures": N, "by_reason": {code: n}}``."""
    by_reason: Counter[str] = Counter()
    for o in outcomes:
        by_reason.update(o.doubtful_by)
    return {"figures": sum(o.doubtful for o in outcomes), "by_reason": dict(sorted(by_reason.items()))}
