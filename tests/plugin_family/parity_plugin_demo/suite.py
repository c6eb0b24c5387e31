"""The demo suite: declared work only (a sum of ``n`` floats in Python), timed by the harness."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from parity.harness.options import option
from parity.harness.suite import CaseSpec, SuiteBase
from parity.harness.work import Work
from parity.model.figure import Figure
from parity.model.result import CaseResult
from parity_plugin_demo.summary import DemoSummary

SIZES = (256, 512, 1024, 2048, 4096, 8192, 16384, 32768)


@dataclass(frozen=True, kw_only=True)
class DemoOptions:
    cases: int = option(4, help="how many sizes, from 256 elements up (at most 8)", minimum=1)
    pause_s: float = option(0.0, help="pause before each case, s (a test kills a run mid-way)", minimum=0.0)


class DemoSuite(SuiteBase):
    """Sum ``n`` floats: ``n - 1`` additions, ``8 n`` bytes read; the check compares the sum."""

    name = "demo"
    description = "sums of floats on the CPU"
    options_type = DemoOptions

    def cases(self, *, device: Any, quick: bool, options: DemoOptions) -> list[CaseSpec]:
        # cost: expected seconds (the pause, the 2 ms budget, a few ms to build the list)
        return [CaseSpec(suite=self.name, key=f"sum-{n}", params={"n": n}, cost=options.pause_s + 0.002 + n * 1e-7)
                for n in SIZES[: min(options.cases, len(SIZES))]]

    def measure(self, case: CaseSpec, *, device: Any, options: DemoOptions, state: Any) -> Work:
        time.sleep(options.pause_s)
        n = int(case.params["n"])
        values = [float(i % 7) for i in range(n)]
        expected = float(sum(i % 7 for i in range(n)))
        out: list[float] = []

        def check() -> dict[str, Any]:
            return {"passed": bool(out) and out[-1] == expected, "method": f"sum == {expected:g}"}

        return Work(call=lambda: out.append(sum(values)), check=check, flop=float(n - 1), bytes=8.0 * n,
                    bytes_convention="bytes read", warmup_s=0.0, budget_s=0.002, min_samples=5, max_samples=20,
                    flush_cache=False)

    def summarize(self, results: list[CaseResult], *, options: DemoOptions) -> DemoSummary:
        return DemoSummary.from_cases(results)

    def figures(self, summary: DemoSummary | dict[str, Any]) -> list[Figure]:
        typed = summary if isinstance(summary, DemoSummary) else DemoSummary.from_dict(dict(summary))
        scope = {"cases": typed.cases}
        return [Figure(name="demo.best_rate", value=typed.best_flop_per_s, unit="FLOP/s",
                       method="best over sizes of (n - 1) additions / median time", scope=scope),
                Figure(name="demo.median_rate", value=typed.median_flop_per_s, unit="FLOP/s",
                       method="median over sizes of (n - 1) additions / median time", scope=scope)]
