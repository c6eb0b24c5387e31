"""Suite-level bandwidth figures: one curve per operation, its fit, and two utilizations.

The measured ceiling (docs/definitions.md, Bandwidth) is the dedicated large device-to-device copy of
``parity.ceilings.bandwidth`` (its case's ``bandwidth_bps``), bytes read plus written, whatever
the sweep's range, never below a cold copy of the sweep that streamed from memory
(:func:`floor_at_sweep`); a point over it is an ``over-ceiling`` finding. The datasheet peak comes from
the device spec tables when the device has an entry; otherwise the summary says so instead of
inventing one.

The summary is a typed record, :class:`MembwSummary`, in SI units (B/s, s, B, fractions); the
views format GB/s. A stored summary of an earlier layout (GB/s keys, no ``version``) is read
back by ``MembwSummary.from_dict``.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from parity.harness.recheck import settle_rechecks
from parity.metrics.bandwidth import STREAM_CONVENTION, fit_fixed_cost, utilization
from parity.model.errors import ParityError
from parity.metrics.cache_levels import MEMORY_FACTOR
from parity.model.figure import format_bytes, format_value
from parity.model.result import CaseResult
from parity.stats.trend import off_trend

log = logging.getLogger(__name__)

GIGA = 1e9
NO_DATASHEET = "no datasheet entry"
REGIME_LABELS = {"warm": "warm: repeated, no cache flush (launch and fixed cost)",
                 "cold": "cold: cache flushed before every call"}
# A fit whose points miss the model by more than this (relative RMS) gets a note.
POOR_FIT_RESIDUAL = 0.25


def _ceiling_bps(result: CaseResult) -> float | None:
    """The ceiling case's ``B`` in B/s (``bandwidth_bps``, as ``parity.ceilings.bandwidth``
    stores it; ``gbps`` for a copy case, or a ceiling case stored without it)."""
    bps = result.metrics.get("bandwidth_bps")
    if bps:
        return float(bps)
    gbps = result.metrics.get("gbps")
    return gbps * GIGA if gbps else None


def measured_ceiling(results: list[CaseResult]) -> dict[str, Any] | None:
    """The bandwidth ceiling ``B`` in STREAM B/s: the dedicated ceiling copy (``kind`` ceiling,
    ``parity.ceilings.bandwidth``), whatever the sweep's range. A run stored before that
    case existed falls back to its largest copy, and the method says so."""
    dedicated = [r for r in results if r.ok and r.params.get("kind") == "ceiling" and _ceiling_bps(r)]
    if dedicated:
        chosen, method = dedicated[0], "dedicated device-to-device copy"
    else:
        copies = [r for r in results if r.ok and r.params.get("op") == "copy" and "gbps" in r.metrics]
        if not copies:
            return None
        chosen = max(copies, key=lambda r: r.metrics["operand_bytes"])
        method = "largest device-to-device copy measured (this run has no dedicated ceiling copy)"
    return {
        "bps": _ceiling_bps(chosen),
        "op": "copy",
        "operand_bytes": chosen.metrics["operand_bytes"],
        "median_s": chosen.metrics.get("median_s"),
        "convention": STREAM_CONVENTION,
        "method": method,
        "source": chosen.metrics.get("bandwidth_source"),
    }


def floor_at_sweep(ceiling: dict[str, Any] | None, results: list[CaseResult],
                   llc_bytes: int | None) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
    """The ceiling ``B`` never below what the run sustained in memory: the fastest cold copy of
    the sweep whose operands are at least ``MEMORY_FACTOR`` times the last-level cache (so it
    streams from memory, in the ceiling's convention) raises ``B`` to its rate when it beats it,
    with a ``ceiling-raised`` note; ``(ceiling, None)`` otherwise, and without a known cache size
    (nothing then says a point left it)."""
    if not ceiling or not llc_bytes:
        return ceiling, None
    streamed = [r for r in results if r.ok and r.params.get("kind") != "ceiling" and r.params.get("op") == "copy"
                and regime_of(r) == "cold" and not r.params.get("again_of") and "gbps" in r.metrics
                and r.metrics["operand_bytes"] >= MEMORY_FACTOR * llc_bytes]
    best = max(streamed, key=lambda r: r.metrics["gbps"], default=None)
    if best is None or best.metrics["gbps"] * GIGA <= ceiling["bps"]:
        return ceiling, None
    bps, size = best.metrics["gbps"] * GIGA, best.metrics["operand_bytes"]
    raised = {**ceiling, "bps": bps, "raised_from_bps": ceiling["bps"], "raised_at_bytes": size,
              "method": (f"{ceiling['method']}, raised to the sweep's cold copy of {format_bytes(size)}, "
                         f"which streams from memory (at least {MEMORY_FACTOR:g}x the last-level cache)")}
    finding = {"code": "ceiling-raised", "severity": "info",
               "message": (f"B raised from {format_value(ceiling['bps'], 'B/s')} to {format_value(bps, 'B/s')}: the "
                           f"sweep's cold copy of {format_bytes(size)} sustained it beyond the last-level cache, "
                           f"where the dedicated copy of {format_bytes(ceiling['operand_bytes'])} read less"),
               "hint": ("B is never below what the run sustained in memory; a dedicated copy that reads less was "
                        "disturbed or pays more per page (TLB misses at its size)")}
    return raised, finding


def over_ceiling_finding(curves: list[dict[str, Any]], llc_bytes: int | None) -> dict[str, Any] | None:
    """The points whose GB/s exceed the measured ceiling (``utilization_ceiling > 1``), as a
    finding (a dict, as summaries hold); None when there is none. Points beyond the last-level
    cache (every point when its size is unknown) are an ``over-ceiling`` warning: memory beat the
    memory ceiling, so the ceiling copy or the point was disturbed. Points that fit in the cache
    measure the cache: alone they are an ``over-ceiling`` note (info), beside the others a count."""
    over = [(c["op"], p) for c in curves for p in c["points"] if (p.get("utilization_ceiling") or 0) > 1.0]
    if not over:
        return None
    in_cache = [bool(llc_bytes) and p["operand_bytes"] <= llc_bytes for _, p in over]
    cached = [point for point, inside in zip(over, in_cache) if inside]
    beyond = [point for point, inside in zip(over, in_cache) if not inside]

    def listed(points: list[tuple[str, dict[str, Any]]]) -> str:
        shown = ", ".join(f"{op} {format_bytes(p['operand_bytes'])} at {p['utilization_ceiling']:.0%}"
                          for op, p in points[:8])
        return shown + (", ..." if len(points) > 8 else "")

    if not beyond:
        return {"code": "over-ceiling", "severity": "info",
                "message": (f"{len(cached)} point(s) exceed the measured ceiling ({listed(cached)}); every one fits "
                            "in the last-level cache, so it measures the cache, not memory"),
                "hint": "read those points as cache bandwidth"}
    where = " beyond the last-level cache" if llc_bytes else ""
    more = f"; {len(cached)} more fit in the last-level cache and measure it" if cached else ""
    return {"code": "over-ceiling", "severity": "warning",
            "message": (f"{len(beyond)} point(s){where} exceed the measured ceiling ({listed(beyond)}): memory beat "
                        f"the memory ceiling, so the ceiling copy was disturbed, or the point was{more}"),
            "hint": "measure again on an idle machine; until then the ceiling may understate memory bandwidth"}


def datasheet_peak(device_name: str | None) -> dict[str, Any]:
    """The datasheet memory bandwidth of ``device_name`` (``bps``) with its source, or a note
    saying none."""
    if not device_name:
        return {"bps": None, "note": NO_DATASHEET}
    try:
        from parity.metrics import specs  # written with the GEMM suite's spec tables
    except ImportError:
        return {"bps": None, "note": NO_DATASHEET}
    lookup = getattr(specs, "memory_bandwidth", None)
    if lookup is None:
        return {"bps": None, "note": NO_DATASHEET}
    try:
        found = lookup(device_name)
    except ParityError:
        found = None
    if not found:
        return {"bps": None, "note": f"{NO_DATASHEET} for {device_name!r}"}
    return {k: v for k, v in found.items() if k != "gbps"}


def regime_of(result: CaseResult) -> str:
    """``warm`` (timed without a cache flush) or ``cold`` (flushed before every call)."""
    regime = result.params.get("regime")
    if regime in ("warm", "cold"):
        return str(regime)
    return "cold" if result.params.get("flush", True) else "warm"


def _curve(op: str, rows: list[CaseResult], ceiling: float | None, peak: float | None,
           regime: str = "cold") -> dict[str, Any]:
    rows = sorted(rows, key=lambda r: r.metrics["operand_bytes"])
    points = []
    for r in rows:
        m = r.metrics
        points.append({
            "operand_bytes": m["operand_bytes"],
            "bytes_moved": m["bytes_moved"],
            "median_s": m["median_s"],
            "iqr_s": m["iqr_s"],
            "bandwidth_bps": m["gbps"] * GIGA,
            "operand_bps": m["operand_gbps"] * GIGA,
            "utilization_ceiling": utilization(m["gbps"] * GIGA, ceiling),
            "utilization_datasheet": utilization(m["gbps"] * GIGA, peak),
        })
    curve: dict[str, Any] = {"op": op, "regime": regime, "label": REGIME_LABELS[regime],
                             "convention": STREAM_CONVENTION, "points": points}
    volumes = [p["bytes_moved"] for p in points]
    fit = None
    try:
        fit = fit_fixed_cost(volumes, [p["median_s"] for p in points])
    except ParityError as exc:
        curve.update({"fixed_cost_s": None, "asymptotic_bps": None, "n_half_bytes": None,
                      "note": f"no fit: {exc}"})
    if fit is not None:
        curve.update(_fit_si(fit.to_dict()))
        if fit.relative_rms_residual > POOR_FIT_RESIDUAL:
            curve["note"] = (
                f"t = a + V/b misses the points by {fit.relative_rms_residual:.0%} RMS: the curve "
                "has more than one regime (caches, page faults); read b with care"
            )
    return curve


def _fit_si(fit: dict[str, Any]) -> dict[str, Any]:
    """A ``BandwidthFit`` dict with ``b`` in B/s (``asymptotic_bps``) in place of GB/s."""
    return {("asymptotic_bps" if k == "asymptotic_gbps" else k): (v * GIGA if k == "asymptotic_gbps" else v)
            for k, v in fit.items()}


def _copy_headline(curves: list[dict[str, Any]]) -> dict[str, Any]:
    """The copy's asymptotic rate from its cold (full-range) curve; its fixed cost and n½ from
    the warm curve (the fixed cost of a transfer, not of refilling the cache), named so, with the
    cold ones beside them."""
    out: dict[str, Any] = {}
    for curve in curves:
        if curve["op"] != "copy" or curve.get("asymptotic_bps") is None:
            continue
        if curve["regime"] == "cold":
            out.update({"copy_asymptotic_bps": curve["asymptotic_bps"],
                        "copy_cold_fixed_cost_s": curve["fixed_cost_s"],
                        "copy_cold_n_half_bytes": curve["n_half_bytes"]})
        else:
            out.update({"copy_warm_fixed_cost_s": curve["fixed_cost_s"],
                        "copy_warm_n_half_bytes": curve["n_half_bytes"]})
    first = ("copy_warm_fixed_cost_s", "copy_warm_n_half_bytes", "copy_asymptotic_bps")
    return {**{k: out[k] for k in first if k in out}, **{k: v for k, v in out.items() if k not in first}}


def _curve_rows(results: list[CaseResult]) -> dict[tuple[str, str], list[CaseResult]]:
    """First measurements of the sweep's points (no ceiling, no ``again`` rows), by (op, regime),
    sorted by size."""
    by_op: dict[tuple[str, str], list[CaseResult]] = {}
    for r in results:
        if r.ok and "gbps" in r.metrics and r.params.get("kind") != "ceiling" and not r.params.get("again_of"):
            by_op.setdefault((r.params["op"], regime_of(r)), []).append(r)
    return {k: sorted(v, key=lambda r: r.metrics["operand_bytes"]) for k, v in by_op.items()}


def off_trend_points(results: list[CaseResult]) -> list[CaseResult]:
    """The points whose GB/s is off the trend of their neighbours in size (``off_trend``)."""
    out = []
    for rows in _curve_rows(results).values():
        out += [rows[i] for i in off_trend([r.metrics["gbps"] for r in rows])]
    return out


def summarize_membw(results: list[CaseResult]) -> MembwSummary:
    """Curves per operation (points, fit, utilizations), the ceiling and the datasheet peak."""
    ceiling = measured_ceiling(results)
    settled, trend_findings = settle_rechecks(results, find=off_trend_points,
                                              describe=lambda r: f"{r.metrics['gbps']:.3g} GB/s")
    ok = [r for r in settled if r.ok and "gbps" in r.metrics and r.params.get("kind") != "ceiling"]
    device_name = next((r.params.get("device_name") for r in results), None)
    sheet = datasheet_peak(device_name)
    llc = next((r.params.get("llc_bytes") for r in results if r.params.get("llc_bytes")), None)
    ceiling, raised = floor_at_sweep(ceiling, settled, llc)
    ceiling_bps = ceiling["bps"] if ceiling else None
    by_op: dict[tuple[str, str], list[CaseResult]] = {}
    for r in ok:
        by_op.setdefault((r.params["op"], regime_of(r)), []).append(r)
    order = ["copy", "read", "write", "triad", "h2d-pinned", "h2d-pageable", "d2h-pinned", "d2h-pageable"]
    keys = sorted(by_op, key=lambda k: (order.index(k[0]), k[1] != "cold"))
    curves = [_curve(op, by_op[(op, regime)], ceiling_bps, sheet.get("bps"), regime) for op, regime in keys]
    threads = sorted({r.metrics.get("threads") for r in ok if r.metrics.get("threads")})
    headline: dict[str, Any] = {"ceiling_bps": ceiling_bps} if ceiling_bps else {}
    headline.update(_copy_headline(curves))
    findings = [f for f in (raised, over_ceiling_finding(curves, llc)) if f] + trend_findings
    return MembwSummary(
        headline=headline,
        findings=tuple(findings),
        device=device_name,
        ceiling=ceiling,
        datasheet=sheet,
        curves=tuple(curves),
        threads=threads[0] if len(threads) == 1 else threads or None,
        flush=next((r.params.get("flush") for r in results), None),
        pages=next((r.params.get("pages") for r in results), None),
        failed_cases=tuple(r.key for r in results if not r.ok),
    )


VERSION = 2  # 1: the untyped layout, rates in GB/s (``*_gbps``), no ``version`` key


@dataclass(frozen=True, kw_only=True)
class MembwSummary:
    """The membw suite's summary, SI units throughout.

    ``headline``: ``ceiling_bps`` and the copy's ``copy_asymptotic_bps``, warm and cold fixed
    cost (s) and n½ (B). ``ceiling``: ``bps``, ``op``, ``operand_bytes``, ``median_s``,
    ``convention``, ``method`` (the dedicated copy's size and time), and ``raised_from_bps`` and
    ``raised_at_bytes`` when a copy of the sweep raised it (None when no copy was measured). ``datasheet``: ``bps`` (None
    with a ``note`` when the device has no entry), ``device``, ``source``. ``curves``: one per
    operation and regime, each with ``op``, ``regime``, ``label``, ``convention``, ``points``
    (``operand_bytes``, ``bytes_moved``, ``median_s``, ``iqr_s``, ``bandwidth_bps``,
    ``operand_bps``, ``utilization_ceiling``, ``utilization_datasheet``) and the fit
    (``fixed_cost_s``, ``asymptotic_bps``, ``n_half_bytes``, ``relative_rms_residual``, ...).
    ``findings`` are ``Finding`` dicts.
    """

    headline: dict[str, Any]
    findings: tuple[dict[str, Any], ...] = ()
    device: str | None = None
    ceiling: dict[str, Any] | None = None
    datasheet: dict[str, Any]
    curves: tuple[dict[str, Any], ...] = ()
    threads: int | list[int] | None = None
    flush: bool | None = None
    pages: str | None = None
    failed_cases: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"version": VERSION, "headline": dict(self.headline), "findings": list(self.findings),
                "device": self.device, "ceiling": self.ceiling, "datasheet": dict(self.datasheet),
                "curves": list(self.curves), "threads": self.threads, "flush": self.flush, "pages": self.pages,
                "failed_cases": list(self.failed_cases)}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> MembwSummary:
        """The record of a stored summary; one of the untyped layout (GB/s) is converted."""
        if data.get("version") is None:
            data = _from_gbps(data)
        elif data["version"] != VERSION:
            raise ParityError(f"membw summary version {data['version']} is not {VERSION}; upgrade parity")
        return cls(headline=dict(data.get("headline") or {}), findings=tuple(data.get("findings") or ()),
                   device=data.get("device"), ceiling=data.get("ceiling"),
                   datasheet=dict(data.get("datasheet") or {"bps": None, "note": NO_DATASHEET}),
                   curves=tuple(data.get("curves") or ()), threads=data.get("threads"), flush=data.get("flush"),
                   pages=data.get("pages"), failed_cases=tuple(data.get("failed_cases") or ()))


def _si_key(key: str) -> str:
    """``ceiling_gbps`` -> ``ceiling_bps``, ``gbps`` -> ``bandwidth_bps``, others unchanged."""
    if key == "gbps":
        return "bandwidth_bps"
    return key[: -len("gbps")] + "bps" if key.endswith("_gbps") else key


def _si(value: Any, key: str = "") -> Any:
    if isinstance(value, dict):
        return {_si_key(k): _si(v, k) for k, v in value.items()}
    if isinstance(value, list):
        return [_si(v) for v in value]
    if key.endswith("gbps") and isinstance(value, (int, float)) and not isinstance(value, bool):
        return value * GIGA
    return value


def _from_gbps(data: dict[str, Any]) -> dict[str, Any]:
    """A summary of the untyped layout with every GB/s value in B/s under its SI name (the
    ceiling's and the datasheet's ``gbps`` become ``bps``)."""
    out = {k: _si(v, k) for k, v in data.items() if k not in ("ceiling", "datasheet")}
    for name in ("ceiling", "datasheet"):
        part = data.get(name)
        if part is not None:
            out[name] = {("bps" if k == "gbps" else k): (v * GIGA if k == "gbps" and v is not None else v)
                         for k, v in part.items() if not (k == "gbps" and "bps" in part)}
    return out
