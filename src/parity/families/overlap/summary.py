"""The overlap suite's summary as a typed, versioned record: per kernel, the times alone and
together (s, medians of the max over ranks per iteration), the slowdowns and the overlap
achieved (fractions: 1 is no slowdown, and the shorter work fully hidden), each with its 95%
CI from the iterations' raw samples (:func:`case_ci95`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any, ClassVar

import numpy as np

from parity.model.result import CaseResult
from parity.model.samples import Samples
from parity.stats.summary import bootstrap_ci, ratio_ci

# Each timed median (a row's field) and the name of its raw series in the case's samples.
SERIES = {"exchange_alone_s": "exchange_alone", "kernel_alone_s": "kernel_alone",
          "exchange_together_s": "exchange_together", "kernel_together_s": "kernel_together", "both_s": "main"}


@dataclass(frozen=True, kw_only=True)
class OverlapRow:
    """One case (the exchange beside one ``kernel``): the five medians, s (``both_s`` the pair's
    wall time), ``exchange_slowdown`` and ``kernel_slowdown`` (together / alone) and
    ``overlap_fraction`` ((a + b - both) / min(a, b)); None where the case was not timed.
    ``ci95`` maps each of those names to its 95% CI ``[low, high]`` where the samples give one."""

    key: str
    ok: bool = False
    error: str | None = None
    kernel: str | None = None
    exchange_alone_s: float | None = None
    kernel_alone_s: float | None = None
    exchange_together_s: float | None = None
    kernel_together_s: float | None = None
    both_s: float | None = None
    exchange_slowdown: float | None = None
    kernel_slowdown: float | None = None
    overlap_fraction: float | None = None
    ci95: dict[str, tuple[float, float]] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        data = {f.name: getattr(self, f.name) for f in fields(self)}
        data["ci95"] = {name: list(ci) for name, ci in self.ci95.items()}
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> OverlapRow:
        kept = {k: v for k, v in data.items() if k in {f.name for f in fields(cls)}}
        kept["ci95"] = {str(name): (float(ci[0]), float(ci[1])) for name, ci in (data.get("ci95") or {}).items()}
        return cls(**kept)

    def interval(self, name: str) -> tuple[float, float] | None:
        """The 95% CI of the row's figure ``name``, or None."""
        return self.ci95.get(name)


# The case metrics a row takes (the harness stores them from the together-and-alone strategy).
ROW_METRICS = tuple(f.name for f in fields(OverlapRow) if f.name not in ("key", "ok", "error", "ci95"))


@dataclass(frozen=True, kw_only=True)
class OverlapSummary:
    """Rows in case order, ``ok``, and the ranks and backend they ran on."""

    VERSION: ClassVar[int] = 1

    rows: tuple[OverlapRow, ...] = ()
    ok: bool = True
    world_size: int | None = None
    backend: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"rows": [r.to_dict() for r in self.rows], "ok": self.ok, "world_size": self.world_size,
                "backend": self.backend, "version": self.VERSION}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> OverlapSummary:
        return cls(rows=tuple(OverlapRow.from_dict(r) for r in data.get("rows", [])), ok=bool(data.get("ok", True)),
                   world_size=data.get("world_size"), backend=data.get("backend"))


def case_ci95(samples: Mapping[str, Samples]) -> dict[str, tuple[float, float]]:
    """95% CIs of one case's figures from its raw series (s, one value per iteration):

    - each time (``exchange_alone_s``...): the bootstrap CI of its median;
    - each slowdown (``together / alone``): the paired bootstrap CI of the ratio of medians (the
      iterations interleave alone and together, so iteration i of both was measured together);
    - ``overlap_fraction``: the bootstrap CI of ``(a + b - both) / min(a, b)`` over medians,
      drawing whole iterations (all five series of one iteration at once).

    A series that is missing, or of another length than the others (paired draws need one value
    per iteration in each), leaves out what needs it. Example: every series constant gives CIs
    of zero width at the medians."""
    series = {name: np.asarray(samples[key].values_s, dtype=np.float64)
              for name, key in SERIES.items() if key in samples and len(samples[key])}
    out: dict[str, tuple[float, float]] = {name: bootstrap_ci(values) for name, values in series.items()}
    lengths = {len(v) for v in series.values()}
    if len(series) != len(SERIES) or len(lengths) != 1:
        return out
    for what in ("exchange", "kernel"):
        together, alone = series[f"{what}_together_s"], series[f"{what}_alone_s"]
        if np.all(alone > 0):
            _, low, high = ratio_ci(together, alone, paired=True)
            out[f"{what}_slowdown"] = (low, high)
    a, b, both = series["exchange_alone_s"], series["kernel_alone_s"], series["both_s"]

    def overlap(picks: np.ndarray) -> np.ndarray:
        ma, mb = np.median(a[picks], axis=1), np.median(b[picks], axis=1)
        shorter = np.minimum(ma, mb)
        return (ma + mb - np.median(both[picks], axis=1)) / np.where(shorter > 0, shorter, np.nan)

    low, high = bootstrap_ci(np.arange(len(a)), statistic=lambda idx: overlap(idx.astype(int)))
    if np.isfinite(low) and np.isfinite(high):
        out["overlap_fraction"] = (low, high)
    return out


def summarize_overlap(results: list[CaseResult]) -> OverlapSummary:
    """One row per case, in case order, each with its CIs; ok when every case is."""
    rows = tuple(OverlapRow(key=r.key, ok=r.ok, error=r.error, ci95=case_ci95(r.samples) if r.error is None else {},
                            **{k: r.metrics.get(k) for k in ROW_METRICS})
                 for r in results)
    first = next((r.metrics for r in results if r.metrics), {})
    return OverlapSummary(rows=rows, ok=all(r.ok for r in rows), world_size=first.get("world_size"),
                          backend=first.get("backend"))
