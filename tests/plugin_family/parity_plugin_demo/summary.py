"""The demo family's typed summary: the rate of each size and the best and median of them."""

from __future__ import annotations

import statistics
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from parity.model.result import CaseResult

VERSION = 1


@dataclass(frozen=True, kw_only=True)
class DemoSummary:
    """Rates in FLOP/s (one addition per element after the first), sizes in elements.

    ``rates`` maps each measured case key to its rate; ``case_figures`` is what exports show
    per case (``figure.<name>`` columns). It reads as a mapping too, so a runner that stores
    summaries as dicts stores ``to_dict()``."""

    cases: int
    best_flop_per_s: float
    median_flop_per_s: float
    rates: dict[str, float] = field(default_factory=dict)
    sizes: dict[str, int] = field(default_factory=dict)
    version: int = VERSION

    @classmethod
    def from_cases(cls, results: list[CaseResult]) -> DemoSummary:
        measured = [r for r in results if r.error is None and r.metrics.get("flop_per_s")]
        rates = {r.key: float(r.metrics["flop_per_s"]) for r in measured}
        return cls(cases=len(measured), best_flop_per_s=max(rates.values(), default=0.0),
                   median_flop_per_s=statistics.median(rates.values()) if rates else 0.0, rates=rates,
                   sizes={r.key: int(r.params["n"]) for r in measured})

    def to_dict(self) -> dict[str, Any]:
        best = self.best_flop_per_s or 1.0
        return {"version": self.version, "cases": self.cases, "best_flop_per_s": self.best_flop_per_s,
                "median_flop_per_s": self.median_flop_per_s, "rates": dict(self.rates), "sizes": dict(self.sizes),
                "case_figures": {"units": {"rate": "FLOP/s", "of_best": "1"},
                                 "rows": {k: {"rate": v, "of_best": v / best} for k, v in self.rates.items()}}}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> DemoSummary:
        if int(data.get("version", VERSION)) != VERSION:
            raise ValueError(f"demo summary version {data.get('version')} is not {VERSION}")
        return cls(cases=int(data["cases"]), best_flop_per_s=float(data["best_flop_per_s"]),
                   median_flop_per_s=float(data["median_flop_per_s"]), rates=dict(data.get("rates") or {}),
                   sizes=dict(data.get("sizes") or {}))

    def keys(self) -> Iterator[str]:
        return iter(self.to_dict())

    def __getitem__(self, key: str) -> Any:
        return self.to_dict()[key]
