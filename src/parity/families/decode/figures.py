"""The decode sweep's figures (``parity.model.figure.Figure``): what compare and the report quote."""

from __future__ import annotations

from typing import Any

from parity.families.decode.summary import EXCLUDES, MODE, TPOT_STATISTIC, DecodeSummary
from parity.metrics.decode import INTERPOLATION_METHOD
from parity.model.figure import Figure


def decode_figures(summary: DecodeSummary | dict[str, Any]) -> list[Figure]:
    """Throughput at each TPOT target (value None with the reason when not reached) and every
    point of the Pareto front, each scoped to mode, TPOT statistic, cards and what is excluded."""
    if isinstance(summary, dict):
        summary = DecodeSummary.from_dict(summary)
    scope = {"mode": MODE, "tpot_statistic": TPOT_STATISTIC, "cards": summary.cards,
             "excludes": EXCLUDES, "config": summary.config, "context": summary.context,
             "dtype": summary.dtype, "accepted_tokens_per_step": summary.accepted_tokens_per_step,
             "layers_run": summary.layers_run, "layers_total": summary.layers_total,
             "device": summary.device}
    figures = []
    for entry in summary.at_target:
        figures.append(Figure(
            name=f"decode.offline.tokens_per_s_per_card.at_{entry.tpot_target_s * 1e3:g}ms",
            value=entry.value if entry.status != "not reached" else None, unit="tok/s",
            method=f"{INTERPOLATION_METHOD}; TPOT = median engine step / accepted tokens per step",
            scope={**scope, "tpot_target_s": entry.tpot_target_s, "status": entry.status},
            note=entry.reason))
    for front_point in summary.pareto:
        figures.append(Figure(
            name=f"decode.offline.pareto.batch_{front_point.batch}", value=front_point.tokens_per_s_per_card,
            unit="tok/s", method="Pareto front of (TPOT, tokens/s per card) over the batch sweep",
            scope={**scope, "batch": front_point.batch, "tpot_ms": front_point.tpot_s * 1e3}))
    return figures
