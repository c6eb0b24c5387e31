"""The decode sweep's summary: points, the Pareto front, throughput at each TPOT target, figures.

Offline numbers are labelled so everywhere: ``mode`` offline, the TPOT statistic (the median
engine step over accepted tokens), the card count, the layer scaling, and that they exclude
scheduling and load balancing. They are never set beside online numbers.
"""

from __future__ import annotations

from typing import Any

from parity.harness.recheck import settle_rechecks
from parity.metrics.decode import INTERPOLATION_METHOD, DecodePoint, pareto_front, throughput_at_target
from parity.model.figure import Figure
from parity.model.result import CaseResult

MODE = "offline"
TPOT_STATISTIC = "median step"
EXCLUDES = "scheduling and load balancing"
SCALING = ("step = sum over layer kinds of (median time of the layers run / layers run) x the config's "
           "layers of that kind; the embedding lookup is left out")


# A step more than this much slower than the step of a larger batch is off the trend.
OFF_TREND_SHARE = 0.1


def slower_than_a_larger_batch(results: list[CaseResult]) -> list[CaseResult]:
    """Checked first measurements whose step exceeds a larger batch's by over ``OFF_TREND_SHARE``:
    a step does more work as the batch grows, so such a point was disturbed or is a real
    anomaly, and is measured once more (``DecodeSuite.recheck``)."""
    rows = sorted((r for r in results if r.ok and "step_s" in r.metrics and not r.params.get("again_of")),
                  key=lambda r: r.params["batch"])
    return [r for i, r in enumerate(rows)
            if any(r.metrics["step_s"] > (1 + OFF_TREND_SHARE) * later.metrics["step_s"] for later in rows[i + 1:])]


def point(result: CaseResult) -> dict[str, Any]:
    """One case as a point of the sweep (times in ms for people, SI beside them)."""
    m, p = result.metrics, result.params
    return {"batch": p["batch"], "tpot_ms": m["tpot_s"] * 1e3, "tokens_per_s_per_card": m["tokens_per_s_per_card"],
            "step_ms": m["step_s"] * 1e3, "tpot_s": m["tpot_s"], "step_s": m["step_s"], "cards": m["cards"],
            "memory_bytes": m["memory_bytes"], "memory_method": m["memory_method"],
            "layers_run": p["layers_run"], "layers_total": p["layers_total"], "ok": result.ok,
            "flop_per_step": m.get("flop_per_step"), "bytes_per_step": m.get("bytes_per_step")}


def summarize_decode(results: list[CaseResult], *, targets_ms: tuple[float, ...]) -> dict[str, Any]:
    """``points`` (checked cases; a re-measured point's second row where it is back on trend),
    ``pareto``, ``at_target`` per target, the labels and the off-trend ``findings``."""
    rows, findings = settle_rechecks(results, find=slower_than_a_larger_batch,
                                     describe=lambda r: f"{r.metrics['step_s'] * 1e3:.3g} ms")
    good = sorted((r for r in rows if r.ok and "tpot_s" in r.metrics), key=lambda r: r.params["batch"])
    points = [point(r) for r in good]
    front = pareto_front(DecodePoint(tpot_s=p["tpot_s"], throughput=p["tokens_per_s_per_card"], label=p["batch"])
                         for p in points)
    first = good[0].params if good else {}
    cards = points[0]["cards"] if points else None
    at_target = []
    for target in targets_ms:
        entry = throughput_at_target(front, target / 1e3).to_dict()
        at_target.append({**entry, "tpot_statistic": TPOT_STATISTIC, "cards": cards, "mode": MODE})
    return {
        "mode": MODE, "tpot_statistic": TPOT_STATISTIC, "excludes": EXCLUDES, "cards": cards,
        "config": first.get("config"), "context": first.get("context"), "dtype": first.get("dtype"),
        "accepted_tokens_per_step": first.get("accepted_tokens_per_step"),
        "layers_run": first.get("layers_run"), "layers_total": first.get("layers_total"),
        "scaling": SCALING, "device": first.get("device"), "points": points,
        "pareto": [{"batch": f.label, "tpot_ms": f.tpot_s * 1e3, "tokens_per_s_per_card": f.throughput}
                   for f in front],
        "at_target": at_target, "failed": [r.key for r in rows if not r.ok], "findings": findings,
        "interpolation": INTERPOLATION_METHOD,
    }


def decode_figures(summary: dict[str, Any]) -> list[Figure]:
    """Throughput at each TPOT target (value None with the reason when not reached) and every
    point of the Pareto front, each scoped to mode, TPOT statistic, cards and what is excluded."""
    scope = {"mode": MODE, "tpot_statistic": TPOT_STATISTIC, "cards": summary.get("cards"),
             "excludes": EXCLUDES, "config": summary.get("config"), "context": summary.get("context"),
             "dtype": summary.get("dtype"), "accepted_tokens_per_step": summary.get("accepted_tokens_per_step"),
             "layers_run": summary.get("layers_run"), "layers_total": summary.get("layers_total"),
             "device": summary.get("device")}
    figures = []
    for entry in summary.get("at_target", []):
        value = entry["value"] if entry["status"] != "not reached" else None
        figures.append(Figure(
            name=f"decode.offline.tokens_per_s_per_card.at_{entry['tpot_ms']:g}ms", value=value, unit="tok/s",
            method=f"{INTERPOLATION_METHOD}; TPOT = median engine step / accepted tokens per step",
            scope={**scope, "tpot_target_s": entry["tpot_ms"] / 1e3, "status": entry["status"]},
            note=entry.get("reason", "")))
    for front_point in summary.get("pareto", []):
        figures.append(Figure(
            name=f"decode.offline.pareto.batch_{front_point['batch']}", value=front_point["tokens_per_s_per_card"],
            unit="tok/s", method="Pareto front of (TPOT, tokens/s per card) over the batch sweep",
            scope={**scope, "batch": front_point["batch"], "tpot_ms": front_point["tpot_ms"]}))
    return figures
