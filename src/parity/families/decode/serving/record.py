"""Serving levels as stored cases, and serving runs (suite ``serving``) with their method labels.

A run's ``config`` holds ``mode`` (``online``) and ``labels``: where the numbers come from
(``source``), which TPOT and interactivity definitions they use, whether TPOT excludes the first
token, and where token counts come from, so ``parity runs list`` can set a parity run beside an
imported one and say how each was measured. Every level is one case: the stored metrics
``median_tpot_s``, ``p99_tpot_s``, ``median_ttft_s``, ``median_itl_s``, ``output_throughput``,
``output_throughput_per_card`` beside every vLLM-named field, and its raw per-request samples.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from parity.families.decode.serving.level import INTERACTIVITY_DEFINITIONS, TPOT_DEFINITION, Level
from parity.model.result import CaseResult, RunRecord
from parity.store.database import Store

SUITE = "serving"
SECONDS_METRICS = ("median_tpot_ms", "p99_tpot_ms", "median_ttft_ms", "median_itl_ms")


def method_labels(source: str, **extra: Any) -> dict[str, Any]:
    """The labels every serving run carries; ``extra`` adds or overrides (an import's own)."""
    return {
        "source": source,
        "mode": "online",
        "tpot_definition": TPOT_DEFINITION,
        "tpot_excludes_first_token": True,
        "interactivity": INTERACTIVITY_DEFINITIONS,
        **extra,
    }


def level_key(fields: dict[str, Any]) -> str:
    """``concurrency/32``, ``rate/4``, or both joined: what tells levels of a run apart."""
    parts = []
    if fields.get("max_concurrency") is not None:
        parts.append(f"concurrency/{fields['max_concurrency']}")
    if fields.get("request_rate") not in (None, "inf"):
        parts.append(f"rate/{fields['request_rate']:g}")
    return ",".join(parts) or "unbounded"


def level_metrics(fields: dict[str, Any]) -> dict[str, Any]:
    """The stored metrics: the named seconds figures, then every vLLM field as is."""
    metrics: dict[str, Any] = {}
    for name in SECONDS_METRICS:
        value = fields.get(name)
        metrics[name.replace("_ms", "_s")] = value / 1e3 if isinstance(value, (int, float)) else None
    metrics["output_throughput"] = fields.get("output_throughput")
    metrics["output_throughput_per_card"] = fields.get("output_throughput_per_card")
    return {**metrics, **{k: v for k, v in fields.items() if k not in metrics}}


def level_case(level: Level, *, params: dict[str, Any]) -> CaseResult:
    """One level as a case of suite ``serving``."""
    return CaseResult(suite=SUITE, key=level_key(level.fields), params=params, samples=dict(level.samples),
                      metrics=level_metrics(level.fields), check=dict(level.check), findings=level.findings)


def store_serving_run(
    store: Store, *, config: dict[str, Any], provenance: dict[str, Any], cases: Sequence[CaseResult],
    headline: dict[str, Any], summary: dict[str, Any] | None = None,
) -> RunRecord:
    """Create the run, commit each case, finish it complete (every case ok) or failed; the
    ``headline`` figures are what ``parity runs show`` prints for the suite."""
    run = store.create_run(config=config, provenance=provenance)
    for case in cases:
        store.add_case(run.run_id, case)
    ok = bool(cases) and all(c.ok for c in cases)
    store.finish_run(run.run_id, status="complete" if ok else "failed",
                     summary={**(summary or {}), "ok": ok,
                              "suites": {SUITE: {"summary": {"headline": headline}}}})
    return store.get_run(run.run_id)
