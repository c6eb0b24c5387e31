"""Suite-level latency figures: the size curves with named plateaus, the blocks curves with knees.

Each curve is kept per page size, in ``size_curves`` and ``blocks_curves``. The top-level
``plateaus`` come from the huge-page size curve when there is one (``plateaus_page`` names it):
with 4 KiB pages a chase past the TLB's reach pays page walks, which add steps that are not
cache levels, so cache sizes are read where the TLB covers the whole working set. The base-page
curve's plateaus are then named after the huge-page ones and its page-walk steps marked
(``parity.metrics.page_walks.label_page_walks``). ``blocks_curve`` is the first page size's.

``findings`` judge the top-level plateaus against what the device reports: a cache plateau more
than a factor of two from the reported size, or a reported cache level with no plateau at all.

Curves, plateaus and knees are found in ns per load (``parity.metrics``); the summary is a
typed record, :class:`LatencySummary`, in seconds (``latency_s``, ``L1_s``,
``slope_before_s_per_block``); the views format ns. A stored summary of the earlier layout (ns
keys, no ``version``) is read back by ``LatencySummary.from_dict``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from parity.metrics.cache_levels import (
    MEMORY_FACTOR,
    SIZE_AGREEMENT_FACTOR,
    Plateau,
    left_last_cache,
    name_plateaus,
    size_agrees,
)
from parity.metrics.latency import find_knees
from parity.harness.recheck import settle_rechecks
from parity.metrics.page_walks import label_page_walks
from parity.model.errors import ParityError
from parity.model.figure import format_bytes
from parity.model.findings import Finding, Severity
from parity.model.result import CaseResult
from parity.stats.trend import off_trend

ESTIMATORS = {"median": "ns_per_load", "min": "ns_per_load_min"}
ESTIMATOR_WORDS = {"median": "medians", "min": "minima"}
HUGE_PAGES = "thp"


def _size_curve(page: str, rows: list[CaseResult], metric: str) -> dict[str, Any]:
    """One page size's curve: points, reported caches and its own named ``Plateau`` objects."""
    rows = sorted(rows, key=lambda r: r.params["working_set_bytes"])
    first = rows[0].params
    points = [{"working_set_bytes": r.params["working_set_bytes"], "latency_ns": r.metrics[metric],
               "huge_page_share": r.metrics.get("huge_page_share")} for r in rows]
    sizes, lat = [p["working_set_bytes"] for p in points], [p["latency_ns"] for p in points]
    caches = [(str(name), int(size)) for name, size in first.get("caches", [])]
    plateaus = name_plateaus(sizes, lat, caches=caches, memory_name=first.get("memory_name", "DRAM"),
                             memory_bytes=first.get("memory_bytes"))
    return {
        "page": rows[0].metrics.get("page_label", page),
        "stride_bytes": first.get("stride_bytes"),
        "points": points,
        "plateaus": plateaus,
        "reported_caches": [{"level": n, "size_bytes": s} for n, s in caches],
        "hypervisor": bool(first.get("hypervisor")),
        "sweep_limit": first.get("sweep_limit"),
    }


def _relabel_base(curves: dict[str, dict[str, Any]]) -> None:
    """Name base-page plateaus after the huge-page curve's, marking page-walk steps (in place)."""
    huge = curves.get(HUGE_PAGES)
    if huge is None:
        return
    sizes = [p["working_set_bytes"] for p in huge["points"]]
    lat = [p["latency_ns"] for p in huge["points"]]
    for page, curve in curves.items():
        if page != HUGE_PAGES:
            curve["plateaus"] = label_page_walks(curve["plateaus"], huge["plateaus"], sizes, lat)
            walks = [p.start_bytes for p in curve["plateaus"] if p.page_walk]
            curve["page_walk_from_bytes"] = min(walks) if walks else None


def cache_size_findings(plateaus: list[Plateau], *, reported: list[dict[str, Any]], page: str,
                        huge_pages: bool, hypervisor: bool = False) -> list[Finding]:
    """Warnings for cache plateaus far from the reported sizes, and for reported levels missing.

    The measured size is the plateau's capacity (where the curve crosses half-way to the next
    level), within a grid step of the truth; a factor of two is far beyond that. With huge pages the TLB is not the
    cause, which leaves a cache this process gets only part of (a virtual machine's or a shared
    last-level cache's share) or a report that describes more cache than this process can reach;
    ``hypervisor`` (the CPU says it runs in a virtual machine) makes the first the likely one.
    """
    why = ("with huge pages the TLB covers the working set, so this is the share of the cache this "
           "process can keep (a virtual machine, or other tenants on a shared cache); the size moves "
           "when that share does" if huge_pages else
           "with base pages the TLB's reach can cut a plateau short; measure with huge pages (--pages thp)")
    if hypervisor:
        why = "this CPU runs under a hypervisor (cpuinfo flag 'hypervisor'), sharing its caches with other guests; " + why
    out = []
    for p in plateaus:
        if p.memory or p.page_walk or p.size_ratio is None or size_agrees(p.size_ratio):
            continue
        out.append(Finding(
            code="cache-size-mismatch", severity=Severity.WARNING,
            message=(f"the {p.level} plateau ends at {format_bytes(p.size_bytes)} (capacity "
                     f"{format_bytes(p.capacity_bytes or p.size_bytes)}) with {page} pages, {p.size_ratio:.2g}x the "
                     f"{format_bytes(p.reported_bytes)} the device reports (more than {SIZE_AGREEMENT_FACTOR:g}x off)"),
            hint=why))
    named = {p.level for p in plateaus}
    for level in reported:
        if level["level"] not in named:
            out.append(Finding(
                code="cache-level-not-found", severity=Severity.WARNING,
                message=(f"no plateau matches the reported {level['level']} ({format_bytes(level['size_bytes'])}) "
                         f"on the {page} curve"),
                hint="the level is too small or too shared to hold a flat stretch; " + why))
    return out


def sweep_findings(curve: dict[str, Any], *, sweep_limit: str | None = None) -> list[Finding]:
    """Warnings when a size curve cannot name memory: no reported cache sizes, or a sweep whose
    largest working set is under ``MEMORY_FACTOR`` (2) times the reported last-level cache.

    ``sweep_limit`` says what capped the sweep (``free memory`` or ``max_bytes``), for the hint.
    """
    reported = curve["reported_caches"]
    largest = max(p["working_set_bytes"] for p in curve["points"])
    if not reported:
        return [Finding(code="no-reported-caches", severity=Severity.WARNING,
                        message="the device reports no cache sizes: plateaus are numbered level-1, level-2, ... "
                                "and none is named memory",
                        hint="nothing says where the last cache ends; read the levels from the curve yourself")]
    last = reported[-1]
    if left_last_cache(largest_bytes=largest, llc_bytes=last["size_bytes"]):
        return []
    hint = (f"the sweep was capped by {sweep_limit}; " if sweep_limit else "") + (
        f"raise --max-bytes (latency.max_bytes) to at least {MEMORY_FACTOR:g}x the {last['level']} "
        f"({int(MEMORY_FACTOR * last['size_bytes'])} B) where memory allows")
    return [Finding(code="sweep-inside-cache", severity=Severity.WARNING,
                    message=(f"the largest working set ({largest} B, {curve['page']} pages) is under "
                             f"{MEMORY_FACTOR:g}x the reported {last['level']} ({last['size_bytes']} B): the sweep "
                             "never left the last cache, so no plateau is memory"),
                    hint=hint)]


def _blocks_curve(page: str, rows: list[CaseResult], metric: str) -> dict[str, Any]:
    rows = sorted(rows, key=lambda r: r.params["blocks"])
    first = rows[0].params
    points = [{"blocks": r.params["blocks"], "latency_ns": r.metrics[metric]} for r in rows]
    knees = find_knees([p["blocks"] for p in points], [p["latency_ns"] for p in points])
    label = rows[0].metrics.get("page_label", page)
    return {
        "page": label,
        "region_bytes": first.get("working_set_bytes"),
        "compute_units": first.get("compute_units"),
        "compute_unit_kind": first.get("compute_unit_kind"),
        "block_kind": "thread" if first.get("device") == "cpu" else "block (Triton program)",
        "points": points,
        "knees": [k.to_dict() for k in knees],
    }


def estimator_metric(estimator: str) -> str:
    """The metric an estimator's points read (``ns_per_load_min`` for ``min``)."""
    if estimator not in ESTIMATORS:
        raise ParityError(f"unknown latency estimator {estimator!r}; use median or min")
    return ESTIMATORS[estimator]


def off_trend_latency_points(results: list[CaseResult], *, estimator: str = "min") -> list[CaseResult]:
    """First measurements whose latency (by ``estimator``) is off the trend of their two
    neighbours on the same curve and page size (``parity.stats.trend.off_trend``): along the
    working-set size for ``size`` cases, along the block count for ``blocks`` cases. A step
    between cache levels puts a point near one neighbour, never far outside both."""
    metric = estimator_metric(estimator)
    along = {"size": "working_set_bytes", "blocks": "blocks"}
    lines: dict[tuple[str, str], list[CaseResult]] = {}
    for r in results:
        if r.ok and metric in r.metrics and not r.params.get("again_of"):
            lines.setdefault((r.params["curve"], r.params["page"]), []).append(r)
    out = []
    for (curve, _), rows in lines.items():
        rows.sort(key=lambda r: r.params[along[curve]])
        out += [rows[i] for i in off_trend([float(r.metrics[metric]) for r in rows])]
    return out


def summarize_latency(results: list[CaseResult], *, estimator: str = "min") -> LatencySummary:
    """Curves per page size, with plateaus (size curves) and knees (blocks curves).

    ``estimator`` picks each point's latency: the slope between the chains' medians
    (``median``) or minima (``min``). A point measured again because it was off trend
    (``off_trend_latency_points``) is settled first (``parity.harness.recheck.settle_rechecks``).
    """
    metric = estimator_metric(estimator)
    settled, trend_findings = settle_rechecks(
        results, find=lambda rows: off_trend_latency_points(rows, estimator=estimator),
        describe=lambda r: f"{float(r.metrics[metric]):.3g} ns")
    ok = [r for r in settled if r.ok and metric in r.metrics]
    groups: dict[tuple[str, str], list[CaseResult]] = {}
    for r in ok:
        groups.setdefault((r.params["curve"], r.params["page"]), []).append(r)
    pages = list(dict.fromkeys(r.params["page"] for r in ok))
    curves = {pg: _size_curve(pg, groups[("size", pg)], metric) for pg in pages if ("size", pg) in groups}
    _relabel_base(curves)
    preferred = HUGE_PAGES if HUGE_PAGES in curves else next(iter(curves), None)
    findings = [] if preferred is None else cache_size_findings(
        curves[preferred]["plateaus"], reported=curves[preferred]["reported_caches"],
        page=curves[preferred]["page"], huge_pages=preferred == HUGE_PAGES,
        hypervisor=curves[preferred]["hypervisor"])
    if preferred is not None:
        findings += sweep_findings(curves[preferred], sweep_limit=curves[preferred].get("sweep_limit"))
    size_curves = [{**c, "plateaus": [{**p.to_dict(), "page": c["page"]} for p in c["plateaus"]]}
                   for c in curves.values()]
    top = size_curves[list(curves).index(preferred)]["plateaus"] if preferred is not None else []
    blocks_curves = [_blocks_curve(pg, groups[("blocks", pg)], metric) for pg in pages if ("blocks", pg) in groups]
    # The reported levels and memory only: their names are the same on every run, where a
    # "-part" stretch comes and goes with the noise.
    headline: dict[str, Any] = {f"{p['level']}_ns": p["latency_ns"] for p in top
                                if p["reported_bytes"] is not None or p["memory"]}
    if blocks_curves and blocks_curves[0]["knees"]:
        headline["first_knee_blocks"] = blocks_curves[0]["knees"][0]["blocks"]
    return LatencySummary(
        headline=in_seconds(headline),
        device=next((r.params.get("device_name") for r in results), None),
        method="pointer chase through a random single-cycle ring; ns per load from the slope between two chain lengths",
        estimator=f"slope between the chains' {ESTIMATOR_WORDS[estimator]}",
        size_curves=tuple(in_seconds(size_curves)),
        plateaus=tuple(in_seconds(top)),
        plateaus_page=curves[preferred]["page"] if preferred is not None else None,
        findings=tuple([f.to_dict() for f in findings] + trend_findings),
        blocks_curves=tuple(in_seconds(blocks_curves)),
        failed_cases=tuple(r.key for r in results if not r.ok),
    )


NS = 1e-9
VERSION = 2  # 1: the untyped layout, latencies in ns (``*_ns``), no ``version`` key


def _key_in_seconds(key: str) -> str:
    """``latency_ns`` -> ``latency_s``, ``slope_before_ns_per_block`` -> ``slope_before_s_per_block``."""
    if key.endswith("_ns"):
        return key[: -len("_ns")] + "_s"
    return key.replace("_ns_per_", "_s_per_") if "_ns_per_" in key else key


def in_seconds(value: Any, key: str = "") -> Any:
    """``value`` with every ns quantity (a key ending ``_ns`` or holding ``_ns_per_``) in seconds
    under its SI name, through nested dicts and lists."""
    if isinstance(value, dict):
        return {_key_in_seconds(k): in_seconds(v, k) for k, v in value.items()}
    if isinstance(value, list):
        return [in_seconds(v) for v in value]
    if (key.endswith("_ns") or "_ns_per_" in key) and isinstance(value, (int, float)) and not isinstance(value, bool):
        return value * NS
    return value


@dataclass(frozen=True, kw_only=True)
class LatencySummary:
    """The latency suite's summary, seconds throughout.

    ``headline``: ``<level>_s`` for the reported levels and memory, ``first_knee_blocks``.
    ``size_curves``: per page size, ``page``, ``stride_bytes``, ``points`` (``working_set_bytes``,
    ``latency_s``, ``huge_page_share``), ``plateaus`` (``Plateau`` dicts with ``latency_s`` and
    ``page_walk_s``), ``reported_caches``, ``hypervisor``, ``sweep_limit``. ``plateaus``: the
    preferred curve's (``plateaus_page``). ``blocks_curves``: per page size, ``points``
    (``blocks``, ``latency_s``) and ``knees`` (``blocks``, ``latency_s``,
    ``slope_before_s_per_block``, ``slope_after_s_per_block``, ``rise``).
    """

    headline: dict[str, Any]
    device: str | None = None
    method: str = ""
    estimator: str = ""
    size_curves: tuple[dict[str, Any], ...] = ()
    plateaus: tuple[dict[str, Any], ...] = ()
    plateaus_page: str | None = None
    findings: tuple[dict[str, Any], ...] = ()
    blocks_curves: tuple[dict[str, Any], ...] = ()
    failed_cases: tuple[str, ...] = ()

    @property
    def blocks_curve(self) -> dict[str, Any]:
        """The first page size's blocks curve (its knees give ``latency.first_knee``)."""
        return self.blocks_curves[0] if self.blocks_curves else {"points": [], "knees": []}

    def to_dict(self) -> dict[str, Any]:
        return {"version": VERSION, "headline": dict(self.headline), "device": self.device, "method": self.method,
                "estimator": self.estimator, "size_curves": list(self.size_curves), "plateaus": list(self.plateaus),
                "plateaus_page": self.plateaus_page, "findings": list(self.findings),
                "blocks_curves": list(self.blocks_curves), "failed_cases": list(self.failed_cases)}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> LatencySummary:
        """The record of a stored summary; one of the untyped layout (ns) is converted."""
        if data.get("version") is None:
            first = data.get("blocks_curve")
            if not data.get("blocks_curves") and first and (first.get("points") or first.get("knees")):
                data = {**data, "blocks_curves": [first]}
            data = in_seconds({k: v for k, v in data.items() if k != "blocks_curve"})
        elif data["version"] != VERSION:
            raise ParityError(f"latency summary version {data['version']} is not {VERSION}; upgrade parity")
        return cls(headline=dict(data.get("headline") or {}), device=data.get("device"),
                   method=data.get("method", ""), estimator=data.get("estimator", ""),
                   size_curves=tuple(data.get("size_curves") or ()), plateaus=tuple(data.get("plateaus") or ()),
                   plateaus_page=data.get("plateaus_page"), findings=tuple(data.get("findings") or ()),
                   blocks_curves=tuple(data.get("blocks_curves") or ()),
                   failed_cases=tuple(data.get("failed_cases") or ()))
