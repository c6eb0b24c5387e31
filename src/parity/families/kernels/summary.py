"""From stored ``kernels`` cases to a typed summary: per-operation rows on the roofline, the
ceilings they are rated against, and why each library kernel did not run (no torch, no device).

Each operation case is placed on the roofline of its dtype's measured ceiling ``P`` (fp8 GEMM
on the fp8 ceiling where one was measured, else bf16's, and the row says which) and the
measured bandwidth ``B``: intensity ``AI = F/Q`` from the declared work, attainable
``min(P, AI·B)``, efficiency ``achieved/attainable`` (``parity.metrics.roofline.place``). A
library kernel's row carries its speedup over the torch reference of the same inputs, the ratio
of medians with a bootstrap CI (``parity.stats.summary.ratio_ci``). Values are SI: s, FLOP,
B, FLOP/s, B/s, fractions; the achieved rate is ``flop_per_s`` (once).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from typing import Any, ClassVar

from parity.metrics.roofline import place
from parity.model.result import CaseResult
from parity.stats.summary import ratio_ci

CEILING_OF = {"fp8_gemm": ("fp8", "bf16")}
DEFAULT_CEILINGS = ("bf16",)
STATISTIC = "median call; P the median confirmation round of the ceiling search"
SPEEDUP_METHOD = "ratio of medians, torch/library"


def _known(cls: type, data: dict[str, Any]) -> dict[str, Any]:
    names = {f.name for f in fields(cls)}
    return {k: v for k, v in data.items() if k in names}


@dataclass(frozen=True, kw_only=True)
class KernelCheck:
    """A case's correctness verdict: the error ``measure`` (``relative_error`` or the library's
    ``similarity_diff``), its ``value`` and the ``tolerance`` it was held to."""

    passed: bool | None
    measure: str | None = None
    value: float | None = None
    tolerance: float | None = None
    tolerance_from: str | None = None


@dataclass(frozen=True, kw_only=True)
class Speedup:
    """A library kernel over its torch reference on the same inputs: ``ratio`` (> 1: faster)."""

    ratio: float
    ci95: tuple[float, float]
    method: str = SPEEDUP_METHOD


@dataclass(frozen=True, kw_only=True)
class KernelRow:
    """One operation case (``<op>/<impl>/<shape>``): its timing (s), declared work (FLOP, B),
    rates (FLOP/s, B/s), roofline placement and check. Rate and roofline fields are None for a
    case that did not run; the roofline ones also where no ceiling was measured."""

    key: str
    op: str
    impl: str
    shape: str
    ok: bool
    check: KernelCheck
    error: str | None = None
    findings: tuple[str, ...] = ()
    median_s: float | None = None
    iqr_s: float | None = None
    ci95_s: tuple[float, float] | None = None
    flop: float | None = None
    flop_per_s: float | None = None
    bytes: float | None = None
    bytes_per_s: float | None = None
    arithmetic_intensity: float | None = None
    flop_without_causal_mask: float | None = None
    reference_computed_flop: float | None = None
    group_m: Any = None
    seqlens: Any = None
    ceiling_dtype: str | None = None
    attainable_flops: float | None = None
    efficiency: float | None = None
    fraction_of_ceiling: float | None = None
    roofline_class: str | None = None
    near_ridge: bool | None = None
    speedup_vs_torch: Speedup | None = None

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["class"] = out.pop("roofline_class")
        out["findings"] = list(self.findings)
        if self.ci95_s is not None:
            out["ci95_s"] = list(self.ci95_s)
        if self.speedup_vs_torch is not None:
            out["speedup_vs_torch"]["ci95"] = list(self.speedup_vs_torch.ci95)
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> KernelRow:
        values = _known(cls, data)
        values["check"] = KernelCheck(**_known(KernelCheck, data.get("check") or {"passed": None}))
        values["findings"] = tuple(data.get("findings") or ())
        values["roofline_class"] = data.get("class", data.get("roofline_class"))
        if data.get("ci95_s") is not None:
            values["ci95_s"] = tuple(data["ci95_s"])
        speed = data.get("speedup_vs_torch")
        values["speedup_vs_torch"] = None if speed is None else Speedup(
            ratio=speed["ratio"], ci95=tuple(speed["ci95"]), method=speed.get("method", SPEEDUP_METHOD))
        return cls(**values)


@dataclass(frozen=True, kw_only=True)
class LibraryStatus:
    """Per (operation, library): ``measured``, or ``not-run`` with the reason."""

    op: str
    library: str
    status: str
    reason: str = ""


@dataclass(frozen=True, kw_only=True)
class KernelsSummary:
    """The ``kernels`` suite's summary (``VERSION`` 1): the ceilings (FLOP/s per dtype, B/s) and
    why one is missing, one row per operation case, the library statuses, failed case keys."""

    VERSION: ClassVar[int] = 1

    ceilings_flops: dict[str, float] = field(default_factory=dict)
    bandwidth_bps: float | None = None
    bandwidth_source: dict[str, Any] | None = None
    ceiling_errors: dict[str, str] = field(default_factory=dict)
    device_name: str | None = None
    statistic: str = STATISTIC
    rows: tuple[KernelRow, ...] = ()
    libraries: tuple[LibraryStatus, ...] = ()
    failed: tuple[str, ...] = ()

    @property
    def operations(self) -> int:
        return len(self.rows)

    @property
    def checked(self) -> int:
        return sum(1 for r in self.rows if r.check.passed)

    def to_dict(self) -> dict[str, Any]:
        return {"version": self.VERSION, "ceilings_flops": dict(self.ceilings_flops),
                "bandwidth_bps": self.bandwidth_bps, "bandwidth_source": self.bandwidth_source,
                "ceiling_errors": dict(self.ceiling_errors),
                "device_name": self.device_name, "statistic": self.statistic, "operations": self.operations,
                "checked": self.checked, "failed": list(self.failed),
                "libraries": [asdict(entry) for entry in self.libraries], "rows": [r.to_dict() for r in self.rows]}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> KernelsSummary:
        """The record from ``to_dict()`` (unknown keys, such as a command's run id, are ignored)."""
        values = _known(cls, data)
        values["rows"] = tuple(KernelRow.from_dict(r) for r in data.get("rows") or ())
        values["libraries"] = tuple(LibraryStatus(**_known(LibraryStatus, e)) for e in data.get("libraries") or ())
        values["failed"] = tuple(data.get("failed") or ())
        return cls(**values)


def _ceilings(results: list[CaseResult]) -> tuple[dict[str, float], float | None, dict[str, Any]]:
    peaks: dict[str, float] = {}
    bandwidth, errors = None, {}
    for r in results:
        kind = r.params.get("kind")
        if kind == "ceiling":
            if r.error is None and r.metrics.get("ceiling_flops"):
                peaks[r.params["dtype"]] = float(r.metrics["ceiling_flops"])
            else:
                errors[f"ceiling/{r.params['dtype']}"] = r.error or "no ceiling measured"
        elif kind == "bandwidth":
            if r.error is None and r.metrics.get("bandwidth_bps"):
                bandwidth = float(r.metrics["bandwidth_bps"])
            else:
                errors["bandwidth"] = r.error or "no bandwidth measured"
    return peaks, bandwidth, errors


def _check(result: CaseResult) -> KernelCheck:
    measure = next((k for k in ("relative_error", "similarity_diff") if k in result.check), None)
    return KernelCheck(passed=result.check.get("passed"), measure=measure,
                       value=result.check.get(measure) if measure else None,
                       tolerance=result.check.get("tolerance"), tolerance_from=result.check.get("tolerance_from"))


def op_row(result: CaseResult, *, peaks: dict[str, float], bandwidth: float | None) -> KernelRow:
    """One operation case's figures (SI units)."""
    p, m = result.params, result.metrics
    row: dict[str, Any] = {"key": result.key, "op": p["op"], "impl": p["impl"], "shape": result.key.split("/", 2)[2],
                           "ok": result.ok, "error": result.error, "findings": tuple(f.code for f in result.findings),
                           "check": _check(result)}
    if result.error is not None or "median_s" not in m:
        return KernelRow(**row)
    row.update({key: m.get(key) for key in ("median_s", "iqr_s", "flop", "flop_per_s", "bytes",
                                            "bytes_per_s", "arithmetic_intensity")})
    row["ci95_s"] = tuple(m["ci95_s"]) if m.get("ci95_s") is not None else None
    row.update({key: m[key] for key in ("flop_without_causal_mask", "reference_computed_flop", "group_m", "seqlens")
                if key in m})
    ceiling_dtype = next((d for d in CEILING_OF.get(p["op"], DEFAULT_CEILINGS) if d in peaks), None)
    row["ceiling_dtype"] = ceiling_dtype
    if ceiling_dtype and bandwidth and m.get("flop_per_s"):
        point = place(intensity=float(m["arithmetic_intensity"]), achieved_flops=float(m["flop_per_s"]),
                      peak_flops=peaks[ceiling_dtype], bandwidth_bps=bandwidth)
        row.update(arithmetic_intensity=point.intensity, attainable_flops=point.attainable_flops,
                   efficiency=point.efficiency, fraction_of_ceiling=point.fraction_of_ceiling,
                   roofline_class=point.kind, near_ridge=point.near_ridge)
    return KernelRow(**row)


def _with_speedups(rows: list[KernelRow], results: list[CaseResult]) -> list[KernelRow]:
    """Library rows get ``speedup_vs_torch`` = torch median / library median with a CI."""
    from dataclasses import replace

    samples = {r.key: r.samples["main"].values_s for r in results if "main" in r.samples}
    out = []
    for row in rows:
        torch_key = f"{row.op}/torch/{row.shape}"
        if row.impl != "torch" and row.key in samples and torch_key in samples:
            ratio, low, high = ratio_ci(samples[torch_key], samples[row.key])
            row = replace(row, speedup_vs_torch=Speedup(ratio=ratio, ci95=(low, high)))
        out.append(row)
    return out


def library_status(results: list[CaseResult]) -> list[LibraryStatus]:
    """Per (operation, library): ``measured`` under a key, or ``not-run`` with the reason."""
    out, seen = [], set()
    for r in results:
        if r.params.get("impl") != "torch":
            continue
        for library, reason in r.params.get("libraries", {}).items():
            if (r.params["op"], library) in seen:
                continue
            seen.add((r.params["op"], library))
            measured = reason.startswith("measured as ")
            out.append(LibraryStatus(op=r.params["op"], library=library,
                                     status="measured" if measured else "not-run", reason="" if measured else reason))
    return out


def summarize_kernels(results: list[CaseResult]) -> KernelsSummary:
    """The suite summary: ceilings, one row per operation case, library statuses, failures."""
    peaks, bandwidth, errors = _ceilings(results)
    rows = _with_speedups([op_row(r, peaks=peaks, bandwidth=bandwidth) for r in results
                           if r.params.get("kind") == "op"], results)
    device = next((r.metrics.get("device_name") for r in results if r.params.get("kind") == "ceiling"), None)
    source = next((r.metrics.get("bandwidth_source") for r in results
                   if r.params.get("kind") == "bandwidth" and r.error is None), None)
    return KernelsSummary(ceilings_flops=peaks, bandwidth_bps=bandwidth, bandwidth_source=source,
                          ceiling_errors=errors, device_name=device,
                          rows=tuple(rows), libraries=tuple(library_status(results)),
                          failed=tuple(r.key for r in rows if not r.ok))
