"""Test-only suites on the fake device: ``TinySuite`` (many small cases of declared work, with
options that make cases slow, raise, fail their check or interrupt) and ``OtherSuite``.

The CLI, crash and resume tests load them in real ``parity`` processes through
``PARITY_PLUGINS=tiny_suites:TinySuite`` with the tests folder on ``PYTHONPATH``.
"""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass
from typing import Any

from parity.device.fake import FakeDevice
from parity.harness.options import option
from parity.harness.suite import CaseSpec, SuiteBase
from parity.harness.work import Work
from parity.model import CaseResult
from parity.model.figure import Figure


@dataclass(frozen=True, kw_only=True)
class TinyOptions:
    """The typed options of the test-only suite."""

    cases: int | None = option(None, help="case count (4 quick, 8 full)", minimum=0)
    sleep_s: float = option(0.0, help="pause per case, s, so a test can kill a run mid-way", minimum=0.0)
    raise_on: tuple[str, ...] = option((), help="keys whose measure raises")
    wrong: tuple[str, ...] = option((), help="keys whose check fails")
    interrupt_at: str = option("", help="key at which measure raises KeyboardInterrupt, as Ctrl-C would")


class TinySuite(SuiteBase):
    """Many small cases of declared work, timed, checked and rated by the harness.

    Each case declares one call (a sum of ``range(100)``: 99 additions), its check (the sum is
    4950, unless the key is in ``wrong``), and nothing else; the runner and harness do the rest.
    ``setup`` counts how often it ran, so tests see that state is built once per run.
    """

    name = "tiny"
    description = "test-only suite of small cases"
    options_type = TinyOptions

    def __init__(self) -> None:
        self.measured: list[str] = []
        self.setups = 0
        self.teardowns = 0

    def setup(self, *, device: Any, options: TinyOptions) -> dict[str, int]:
        self.setups += 1
        return {"cases_in_this_process": 0}

    def teardown(self, state: dict[str, int]) -> None:
        self.teardowns += 1

    def cases(self, *, device: Any, quick: bool, options: TinyOptions) -> list[CaseSpec]:
        count = options.cases if options.cases is not None else (4 if quick else 8)
        return [
            CaseSpec(suite=self.name, key=f"case-{i:03d}", params={"i": i}, cost=1.0 + i % 3)
            for i in range(count)
        ]

    def measure(self, case: CaseSpec, *, device: Any, options: TinyOptions, state: dict[str, int]) -> Work:
        if case.key == options.interrupt_at:
            raise KeyboardInterrupt
        if case.key in options.raise_on:
            raise RuntimeError(f"boom at {case.key}\nsecond line")
        time.sleep(options.sleep_s)
        state["cases_in_this_process"] += 1
        self.measured.append(case.key)
        out: list[int] = []

        def check() -> dict[str, Any]:
            return {"passed": out[-1] == 4950 and case.key not in options.wrong, "method": "sum(range(100)) == 4950"}

        return Work(call=lambda: out.append(sum(range(100))), check=check, flop=99.0,
                    warmup_s=0.0, budget_s=0.001, min_samples=5, max_samples=10, flush_cache=False,
                    metrics={"i": case.params["i"], "cases_in_this_process": state["cases_in_this_process"]})

    def summarize(self, results: list[CaseResult], *, options: TinyOptions) -> dict[str, Any]:
        measured = [r for r in results if r.error is None]
        return {"measured": len(measured), "sum_i": sum(r.metrics["i"] for r in measured),
                "median_rate": statistics.median(r.metrics["flop_per_s"] for r in measured)}

    def figures(self, summary: dict[str, Any]) -> list[Figure]:
        return [Figure(name="tiny.median_rate", value=summary["median_rate"], unit="FLOP/s",
                       method="median over cases of 99 additions / median time",
                       scope={"cases": summary["measured"]})]


class OtherSuite(TinySuite):
    name = "other"


def _device() -> FakeDevice:
    return FakeDevice(durations_s=[1e-3, 1.1e-3, 0.9e-3])


class DoubtfulSuite(TinySuite):
    """The tiny suite, but its figure cannot be true (an ``invalid`` finding: a fraction of 2.5)
    and the cases in ``contended`` carry a ``contended`` finding, as if others used the machine."""

    name = "doubtful"

    def measure(self, case: CaseSpec, *, device: Any, options: TinyOptions, state: dict[str, int]) -> Any:
        from parity.model.findings import Finding, Severity

        if case.key != "case-000":
            return super().measure(case, device=device, options=options, state=state)
        return CaseResult(suite=self.name, key=case.key, params=dict(case.params), check={"passed": True},
                          metrics={"i": 0, "flop_per_s": 1.0},
                          findings=(Finding(code="contended", severity=Severity.WARNING,
                                            message="others held 180% of a core while this case ran"),))

    def figures(self, summary: dict[str, Any]) -> list[Figure]:
        from parity.metrics.validity import fraction_above_one

        found = fraction_above_one(2.5, (2.4, 2.6), what="the tiny rate")
        return [*super().figures(summary),
                Figure(name="doubtful.fraction", value=2.5, unit="1", method="m", ci95=(2.4, 2.6),
                       findings=(found,) if found else ())]
