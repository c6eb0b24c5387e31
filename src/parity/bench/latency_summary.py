"""Suite-level latency figures: the size curves with named plateaus, the blocks curves with knees.

Each curve is kept per page size; ``plateaus`` and ``blocks_curve`` at the top level are those
of the first page size measured (4 KiB pages on the CPU), with every page size's in
``size_curves`` and ``blocks_curves``.
"""

from __future__ import annotations

from typing import Any

from parity.metrics.latency import find_knees, find_plateaus, name_plateaus
from parity.model.errors import ParityError
from parity.model.result import CaseResult

ESTIMATORS = {"median": "ns_per_load", "min": "ns_per_load_min"}
ESTIMATOR_WORDS = {"median": "medians", "min": "minima"}


def _size_curve(page: str, rows: list[CaseResult], metric: str) -> dict[str, Any]:
    rows = sorted(rows, key=lambda r: r.params["working_set_bytes"])
    first = rows[0].params
    points = [{"working_set_bytes": r.params["working_set_bytes"], "latency_ns": r.metrics[metric],
               "huge_page_share": r.metrics.get("huge_page_share")} for r in rows]
    found = find_plateaus([p["working_set_bytes"] for p in points], [p["latency_ns"] for p in points])
    caches = [(str(name), int(size)) for name, size in first.get("caches", [])]
    plateaus = name_plateaus(found, caches=caches, memory_name=first.get("memory_name", "DRAM"),
                             memory_bytes=first.get("memory_bytes"))
    label = rows[0].metrics.get("page_label", page)
    return {
        "page": label,
        "stride_bytes": first.get("stride_bytes"),
        "points": points,
        "plateaus": [{**p.to_dict(), "page": label} for p in plateaus],
        "reported_caches": [{"level": n, "size_bytes": s} for n, s in caches],
    }


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


def summarize_latency(results: list[CaseResult], *, estimator: str = "min") -> dict[str, Any]:
    """Curves per page size, with plateaus (size curves) and knees (blocks curves).

    ``estimator`` picks each point's latency: the slope between the chains' medians
    (``median``) or minima (``min``).
    """
    if estimator not in ESTIMATORS:
        raise ParityError(f"unknown latency estimator {estimator!r}; use median or min")
    metric = ESTIMATORS[estimator]
    ok = [r for r in results if r.ok and metric in r.metrics]
    groups: dict[tuple[str, str], list[CaseResult]] = {}
    for r in ok:
        groups.setdefault((r.params["curve"], r.params["page"]), []).append(r)
    pages = list(dict.fromkeys(r.params["page"] for r in ok))
    size_curves = [_size_curve(pg, groups[("size", pg)], metric) for pg in pages if ("size", pg) in groups]
    blocks_curves = [_blocks_curve(pg, groups[("blocks", pg)], metric) for pg in pages if ("blocks", pg) in groups]
    headline: dict[str, Any] = {}
    if size_curves:
        for p in size_curves[0]["plateaus"][:3]:
            headline[f"{p['level']}_ns"] = p["latency_ns"]
    if blocks_curves and blocks_curves[0]["knees"]:
        headline["first_knee_blocks"] = blocks_curves[0]["knees"][0]["blocks"]
    return {
        "headline": headline,
        "device": next((r.params.get("device_name") for r in results), None),
        "method": "pointer chase through a Sattolo ring; ns per load from the slope between two chain lengths",
        "estimator": f"slope between the chains' {ESTIMATOR_WORDS[estimator]}",
        "size_curves": size_curves,
        "plateaus": size_curves[0]["plateaus"] if size_curves else [],
        "blocks_curves": blocks_curves,
        "blocks_curve": blocks_curves[0] if blocks_curves else {"points": [], "knees": []},
        "failed_cases": [r.key for r in results if not r.ok],
    }
