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
STRATEGY = "host-clock-stream"
# The settings of a level that make its figures comparable, as case parameters (compare's
# audit lists those that differ between joined levels).
SETTINGS = ("max_concurrency", "request_rate", "burstiness", "num_prompts", "input_tokens", "output_tokens",
            "shared_prefix")
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
    """``concurrency/32``, ``rate/4``, or both joined: what tells levels of a run apart; a
    level asked for again in one sweep gets ``#2``, ``#3`` (kept apart, never collapsed)."""
    parts = []
    if fields.get("max_concurrency") is not None:
        parts.append(f"concurrency/{fields['max_concurrency']}")
    if fields.get("request_rate") not in (None, "inf"):
        parts.append(f"rate/{fields['request_rate']:g}")
    key = ",".join(parts) or "unbounded"
    repeat = fields.get("repeat")
    return f"{key}#{repeat}" if isinstance(repeat, int) and repeat > 1 else key


def level_metrics(fields: dict[str, Any]) -> dict[str, Any]:
    """The stored metrics: the named seconds figures, then every vLLM field as is."""
    metrics: dict[str, Any] = {}
    for name in SECONDS_METRICS:
        value = fields.get(name)
        metrics[name.replace("_ms", "_s")] = value / 1e3 if isinstance(value, (int, float)) else None
    metrics["output_throughput"] = fields.get("output_throughput")
    metrics["output_throughput_per_card"] = fields.get("output_throughput_per_card")
    # The figure compare takes its ratio of: output tokens/s, a unit its name says.
    metrics["output_tokens_per_s"] = fields.get("output_throughput")
    metrics["headline_metric"] = "output_tokens_per_s"
    metrics["headline_from_samples"] = False
    # vLLM's client and parity's both stamp each streamed chunk on the host clock.
    metrics.setdefault("strategy", STRATEGY)
    return {**metrics, **{k: v for k, v in fields.items() if k not in metrics}}


def level_case(level: Level, *, params: dict[str, Any]) -> CaseResult:
    """One level as a case of suite ``serving``."""
    return CaseResult(suite=SUITE, key=level_key(level.fields), params=params, samples=dict(level.samples),
                      metrics=level_metrics(level.fields), check=dict(level.check), findings=level.findings)


def level_params(fields: dict[str, Any], *, input_tokens: Any, output_tokens: Any) -> dict[str, Any]:
    """A level's settings as case parameters: its limits, requests, burstiness, the asked input
    and output lengths per request (``input_tokens``: N, "LO-HI" or "dataset"), shared prefix."""
    return {"max_concurrency": fields.get("max_concurrency"), "request_rate": fields.get("request_rate"),
            "burstiness": fields.get("burstiness"), "num_prompts": fields.get("num_prompts"),
            "input_tokens": input_tokens, "output_tokens": output_tokens,
            "shared_prefix": fields.get("shared_prefix") or 0}


def serving_summary(cases: Sequence[CaseResult], *, extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """The suite's summary, from its cases: the headline, ``mode`` online and every level's
    figures in order (what the decode view draws in ``parity runs show``)."""
    levels = [{**{k: v for k, v in c.metrics.items() if not k.endswith("_s") or k.endswith("_per_s")},
               "key": c.key, "findings": [f.code for f in c.findings], "failed": not c.ok} for c in cases]
    best = max((lv.get("output_throughput_per_card") or 0 for lv in levels), default=0)
    return {"mode": "online", "headline": {"best_output_tok_s_per_card": best}, "levels": levels, **(extra or {})}


def open_serving_run(store: Store, *, config: dict[str, Any], provenance: dict[str, Any]) -> RunRecord:
    """Create the run (status running) before the first level, so each is committed as measured."""
    return store.create_run(config=config, provenance=provenance)


def finish_serving_run(store: Store, run_id: str, *, extra: dict[str, Any] | None = None,
                       complete: bool = True) -> RunRecord:
    """Mark the run complete (every level stored and ok) or failed, its summary from its cases."""
    cases = store.cases(run_id, SUITE)
    ok = complete and bool(cases) and all(c.ok for c in cases)
    summary = serving_summary(cases, extra=extra)
    store.finish_run(run_id, status="complete" if ok else "failed",
                     summary={"ok": ok, "suites": {SUITE: {"summary": summary}}})
    return store.get_run(run_id)


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
                              "suites": {SUITE: {"summary": serving_summary(cases, extra={"headline": headline})}}})
    return store.get_run(run.run_id)
