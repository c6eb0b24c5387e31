"""The GEMM sweep's summary as a typed, versioned record (SI units; the views format them).

``GemmSummary`` is what ``GemmSuite.summarize`` returns and ``figures`` reads; the run stores
``to_dict()``. Rates are FLOP/s, bandwidths B/s, times s, fractions 1 (no second copy of a
value in another unit: the TFLOP/s and GB/s copies of earlier versions are gone). Each
shape's efficiency is in one place, ``rows[i]["backends"][name]["efficiency"]``; its
distribution over shapes is ``efficiency_compute_bound`` / ``efficiency_all``
(``parity.metrics.roofline.median_efficiency``: median, CI, percentiles), per backend in
``backends[name]``. ``case_figures``, the per-case table an export joins onto its rows, is
derived from ``rows`` when stored (``to_dict``), not kept beside them.

``from_dict`` reads a summary stored by any version: keys it does not know are dropped, keys it
misses take their empty value.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any, ClassVar

TERA = 1e12
# The units of ``case_figures`` (an export's columns; ``tflops`` is the export's own scale).
CASE_FIGURE_UNITS = {"tflops": "TFLOP/s", "best_flops": "FLOP/s", "fraction_of_ceiling": "1",
                     "fraction_of_ceiling_ci95_low": "1", "fraction_of_ceiling_ci95_high": "1",
                     "efficiency_ci95_low": "1", "efficiency_ci95_high": "1",
                     "attainable_flops": "FLOP/s", "efficiency": "1", "arithmetic_intensity": "FLOP/B",
                     "class": "", "near_ridge": "", "dtype": "", "device": ""}


@dataclass(frozen=True, kw_only=True)
class GemmSummary:
    """The sweep's ceilings, headline figures, per-shape rows and tuned-backend speedups.

    ``ceiling_flops`` is ``P`` (FLOP/s, its ``ceiling_statistic``), ``bandwidth_bps`` is ``B``
    (B/s, read + written), ``ridge_flop_per_byte`` is ``P/B``; ``best_fraction_of_ceiling`` the
    best achieved rate over ``P``; ``efficiency_compute_bound`` and ``efficiency_all`` the
    distributions of achieved/attainable (None when no such shape was measured).
    ``ceiling_raised``: how ``P`` was raised after the sweep (``raised.raise_ceiling``), None when
    it was not; ``over_ceiling_beyond_ci``: shapes whose fraction of the final ``P`` is above 1
    beyond both CIs (each row's ``fraction_of_ceiling_ci95``); ``over_attainable_beyond_ci``:
    shapes whose efficiency is above 1 beyond the rate's, ``P``'s and ``B``'s CIs
    (``efficiency_ci95``)."""

    VERSION: ClassVar[int] = 2

    ceiling_flops: float | None = None
    statistic: str = ""
    best_fraction_of_ceiling: float | None = None
    bandwidth_bps: float | None = None
    bandwidth_source: dict[str, Any] | None = None
    dtype: str | None = None
    device_name: str | None = None
    ceiling_shape: dict[str, int] | None = None
    ceiling_best_flops: float | None = None
    ceiling_rounds: dict[str, Any] | None = None
    ceiling_statistic: str | None = None
    ceiling_findings: list[str] = field(default_factory=list)
    ceiling_from: Any = None
    emulation_note: str | None = None
    ceiling_error: str | None = None
    bandwidth_error: str | None = None
    ridge_flop_per_byte: float | None = None
    datasheet: dict[str, Any] = field(default_factory=dict)
    measured: int = 0
    best_shape: dict[str, Any] | None = None
    efficiency_compute_bound: dict[str, Any] | None = None
    efficiency_all: dict[str, Any] | None = None
    shapes: int = 0
    classes: dict[str, int] = field(default_factory=dict)
    throttled: list[str] = field(default_factory=list)
    power_limited: list[str] = field(default_factory=list)
    failed: list[dict[str, Any]] = field(default_factory=list)
    over_ceiling: list[str] = field(default_factory=list)
    over_ceiling_beyond_ci: list[str] = field(default_factory=list)
    over_attainable_beyond_ci: list[str] = field(default_factory=list)
    ceiling_raised: dict[str, Any] | None = None
    ceiling_own_shape: dict[str, Any] | None = None
    findings: list[dict[str, Any]] = field(default_factory=list)
    backends: dict[str, dict[str, Any]] = field(default_factory=dict)
    rows: list[dict[str, Any]] = field(default_factory=list)
    speedups: dict[str, Any] = field(default_factory=dict)

    @property
    def median_efficiency_compute_bound(self) -> float | None:
        """The median of ``efficiency_compute_bound`` (the "41.5%" figure), None without one."""
        return self.efficiency_compute_bound["median"] if self.efficiency_compute_bound else None

    @property
    def case_figures(self) -> dict[str, Any]:
        """Every derived figure of each shape case, by case key, with their units: what an export
        joins onto the case's row (``parity.store.export``), so a query needs no summary JSON.
        ``fraction_of_ceiling`` and ``efficiency`` are median over median (``statistic``)."""
        by_key: dict[str, dict[str, Any]] = {}
        for row in self.rows:
            for backend in row["backends"].values():
                if backend.get("error") is not None:
                    continue
                by_key[backend["key"]] = {
                    "tflops": backend["achieved_flops"] / TERA, "best_flops": backend.get("best_flops"),
                    "fraction_of_ceiling": backend.get("fraction_of_ceiling"),
                    "fraction_of_ceiling_ci95_low": (backend.get("fraction_of_ceiling_ci95") or [None])[0],
                    "fraction_of_ceiling_ci95_high": (backend.get("fraction_of_ceiling_ci95") or [None, None])[1],
                    "efficiency_ci95_low": (backend.get("efficiency_ci95") or [None])[0],
                    "efficiency_ci95_high": (backend.get("efficiency_ci95") or [None, None])[1],
                    "attainable_flops": backend.get("attainable_flops"), "efficiency": backend.get("efficiency"),
                    "class": row.get("class"), "near_ridge": row.get("near_ridge"),
                    "arithmetic_intensity": row.get("arithmetic_intensity"), "dtype": self.dtype,
                    "device": self.device_name}
        return {"units": CASE_FIGURE_UNITS, "statistic": self.statistic, "rows": by_key}

    def to_dict(self) -> dict[str, Any]:
        """The stored form: every field by name (headline figures first), the ``case_figures``
        derived from the rows, and ``version``."""
        return {**{f.name: getattr(self, f.name) for f in fields(self)}, "case_figures": self.case_figures,
                "version": self.VERSION}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> GemmSummary:
        """A summary stored by any version (see the module docstring)."""
        return cls(**{f.name: data[f.name] for f in fields(cls) if data.get(f.name) is not None})
