"""A level's figures with ``vllm bench serve``'s field names, its correctness check and its
findings (the client-bound flag among them). Formulas: ``parity.metrics.serving`` and
``parity.metrics.decode``; definitions in docs/definitions.md (decode online).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from parity.families.decode.serving.client import TOKENS_FROM_CHUNKS, TOKENS_FROM_USAGE, RequestRecord
from parity.families.decode.serving.load import LevelRun
from parity.metrics.decode import interactivity_per_user, request_tpot_s, throughput_per_concurrency
from parity.metrics.serving import distribution_ms, per_card, rate_per_s, request_goodput
from parity.model.findings import Finding, Severity
from parity.model.samples import Samples

CLIENT_BUSY_LIMIT = 0.8  # the busiest client process used this share of one CPU: saturated
LAG_BUSY_FLOOR = 0.5  # send lag counts as the client's own only when it was at least this busy
LAG_SHARE_OF_ITL = 0.1
LAG_FLOOR_S = 0.002
CACHE_REUSE_FLOOR = 0.01  # a prefix-cache hit rate above this is reuse (a warm-up hit may round up)
SAMPLE_METHOD = "host-clock-stream"
TPOT_DEFINITION = "vLLM: (E2E - TTFT) / (output_tokens - 1), per request; excludes the first token"
ITL_DEFINITION = "vLLM: every gap between consecutive content chunks, all requests pooled"
INTERACTIVITY_DEFINITIONS = {
    "interactivity_per_user": "InferenceX: 1000 / median_tpot_ms, tok/s per user",
    "output_throughput_per_concurrency": "vLLM Pareto plot: output_throughput / max_concurrency, tok/s per user",
}


@dataclass(frozen=True, kw_only=True)
class Level:
    """One measured level: its figures (vLLM names), raw samples, check and findings."""

    fields: dict[str, Any]
    samples: dict[str, Samples] = field(default_factory=dict)
    check: dict[str, Any] = field(default_factory=dict)
    findings: tuple[Finding, ...] = ()


def request_times(record: RequestRecord) -> dict[str, float | None]:
    """``ttft``, ``tpot`` (None under 2 tokens) and ``e2el`` of one finished request, seconds."""
    ttft, e2e = record.ttft_s(), record.e2e_s()
    return {"ttft": ttft, "tpot": request_tpot_s(e2e, ttft, record.output_tokens), "e2el": e2e}


def _token_source(done: list[RequestRecord]) -> str:
    sources = {r.token_source for r in done}
    if sources == {TOKENS_FROM_USAGE}:
        return TOKENS_FROM_USAGE
    return TOKENS_FROM_CHUNKS if sources == {TOKENS_FROM_CHUNKS} else "mixed: usage where sent, else content chunks"


def summarize_level(
    run: LevelRun, *, concurrency: int | None, rate_per_s_asked: float, burstiness: float, cards: int,
    slo_s: Mapping[str, float] | None = None, server: dict[str, Any] | None = None, ignore_eos: bool = True,
    shared_prefix: int = 0, repeat: int = 1,
) -> Level:
    """Figures, samples, check and findings of one level (see the module docstring)."""
    done = [r for r in run.records if r.ok]
    times = [request_times(r) for r in done]
    starts = [r.start_ns for r in run.records]  # the level's wall time starts at the first start stamp
    ends = [max(r.end_ns, r.content_ns[-1] if r.content_ns else 0) for r in run.records]
    duration = (max(ends) - min(starts)) / 1e9 if run.records else 0.0
    itls = [gap for r in done for gap in r.itl_s()]
    tpots = [t["tpot"] for t in times if t["tpot"] is not None]
    out_tokens = sum(r.output_tokens for r in done)
    prompt_counts = [r.usage_prompt_tokens for r in done]
    # The server's count (usage.prompt_tokens, with any start token it adds): not vLLM's
    # total_input_tokens, which its client counts with its tokenizer and no special tokens.
    in_tokens = sum(prompt_counts) if done and all(c is not None for c in prompt_counts) else None
    fields: dict[str, Any] = {
        "max_concurrency": concurrency,
        "request_rate": "inf" if math.isinf(rate_per_s_asked) else rate_per_s_asked,
        "burstiness": burstiness,
        "num_prompts": len(run.records),
        "duration": duration,
        "completed": len(done),
        "failed": len(run.records) - len(done),
        "total_usage_prompt_tokens": in_tokens,
        "total_output_tokens": out_tokens,
        "request_throughput": rate_per_s(len(done), duration) if duration > 0 else None,
        "request_goodput": request_goodput(times, slo_s, duration) if slo_s and duration > 0 else None,
        "output_throughput": rate_per_s(out_tokens, duration) if duration > 0 else None,
        "usage_token_throughput": rate_per_s(in_tokens + out_tokens, duration)
        if in_tokens is not None and duration > 0 else None,
        **distribution_ms("ttft", [t["ttft"] for t in times]),
        **distribution_ms("tpot", tpots),
        **distribution_ms("itl", itls),
        **distribution_ms("e2el", [t["e2el"] for t in times]),
        **distribution_ms("send", [r.send_s() for r in done]),
        "cards": cards,
        "token_count_source": _token_source(done) if done else None,
        "shared_prefix": shared_prefix,
        "repeat": repeat,
    }
    fields["output_throughput_per_card"] = (
        per_card(fields["output_throughput"], cards) if fields["output_throughput"] is not None else None)
    median_tpot = fields["median_tpot_ms"]
    fields["interactivity_per_user"] = interactivity_per_user(median_tpot / 1e3) if median_tpot else None
    fields["output_throughput_per_concurrency"] = (
        throughput_per_concurrency(fields["output_throughput"], concurrency)
        if concurrency and fields["output_throughput"] is not None else None)
    fields["client"] = client_figures(run)
    fields["server"] = dict(server or {"available": False, "reason": "not sampled"})
    samples = {
        name: Samples(values_s=values, method=SAMPLE_METHOD, meta={"definition": definition})
        for name, values, definition in (
            ("ttft", [t["ttft"] for t in times], "first content chunk - request sent (last body byte written)"),
            ("tpot", tpots, TPOT_DEFINITION),
            ("itl", itls, ITL_DEFINITION),
            ("e2el", [t["e2el"] for t in times], "last content chunk - request sent"),
        )
    }
    return Level(fields=fields, samples=samples, check=_check(run, done),
                 findings=_findings(run, done, fields, ignore_eos=ignore_eos))


def client_figures(run: LevelRun) -> dict[str, Any]:
    """The client's own load: processes, the busiest one's busy fraction, event-loop lag p99
    (ms), handling cost per event (µs), and events handled per CPU second of the client."""
    lags = [lag for c in run.clients for lag in c.lags_s]
    events = sum(c.events for c in run.clients)
    cpu = sum(c.cpu_s for c in run.clients)
    return {
        "procs": len(run.clients),
        "busy_fraction_max": max((c.busy_fraction for c in run.clients), default=0.0),
        "loop_lag_p99_ms": float(np.percentile(lags, 99)) * 1e3 if lags else None,
        "handling_us_per_event": sum(c.handling_s for c in run.clients) / events * 1e6 if events else None,
        "cpu_us_per_event": cpu / events * 1e6 if events else None,
    }


def _check(run: LevelRun, done: list[RequestRecord]) -> dict[str, Any]:
    errors = sorted({r.error for r in run.records if r.error})
    return {
        "passed": bool(run.records) and len(done) == len(run.records),
        "method": "every request answered HTTP 200 with a text/event-stream holding at least one content chunk",
        "errors": errors[:5],
    }


def client_bound(fields: dict[str, Any]) -> Finding | None:
    """``client-bound`` only on evidence that the client itself saturated: its busiest process
    used ``CLIENT_BUSY_LIMIT`` of a CPU, or its send lag (from a request's turn to its last
    byte written, ``send``) p99 exceeded ``max(LAG_FLOOR_S, LAG_SHARE_OF_ITL x median
    ITL)`` while that process was at least ``LAG_BUSY_FLOOR`` busy. Event-loop lag alone is no
    evidence: other processes on a busy host delay the loop as much. None when no request
    completed (nothing was limited by the client)."""
    client = fields["client"]
    if not fields.get("completed"):
        return None
    busy = client["busy_fraction_max"]
    lag_ms = fields.get("p99_send_ms")
    itl_ms = fields.get("median_itl_ms")
    lag_limit_ms = max(LAG_FLOOR_S * 1e3, LAG_SHARE_OF_ITL * itl_ms) if itl_ms else LAG_FLOOR_S * 1e3
    lagging = lag_ms is not None and lag_ms > lag_limit_ms and busy >= LAG_BUSY_FLOOR
    if busy < CLIENT_BUSY_LIMIT and not lagging:
        return None
    procs = client.get("procs", 1)
    return Finding(
        code="client-bound", severity=Severity.WARNING,
        message=f"the client, not the server, may be the limit here: busiest client process {busy:.0%} of a CPU "
                f"(limit {CLIENT_BUSY_LIMIT:.0%}), send lag p99 {lag_ms or 0:.2f} ms (limit {lag_limit_ms:.2f} ms "
                f"when over {LAG_BUSY_FLOOR:.0%} busy)",
        hint=f"rerun with --client-procs {procs * 2} (each process then drives half the requests) or run the "
             "client on another machine")


def cache_reuse(fields: dict[str, Any]) -> Finding | None:
    """``cache-reuse``: the server's prefix cache served part of the prompts of a level that
    did not ask for it (no ``--shared-prefix``): its TTFT is then not a cold prefill's."""
    server = fields.get("server") or {}
    rate = server.get("prefix_cache_hit_rate")
    if fields.get("shared_prefix") or rate is None or rate <= CACHE_REUSE_FLOOR:
        return None
    return Finding(code="cache-reuse", severity=Severity.WARNING,
                   message=f"the server's prefix cache served {rate:.1%} of this level's prompt tokens "
                           f"({server.get('prefix_cache_hit_rate_from')}); its TTFT is not a cold prefill's",
                   hint="an earlier sweep with the same --seed sent these prompts (pass another --seed), another "
                        "client did, or a dataset repeats them; --shared-prefix N measures caching on purpose")


def _findings(run: LevelRun, done: list[RequestRecord], fields: dict[str, Any], *,
              ignore_eos: bool = True) -> tuple[Finding, ...]:
    found: list[Finding] = [f for f in (client_bound(fields), cache_reuse(fields)) if f is not None]
    if run.records and len(done) < len(run.records):
        found.append(Finding(code="failed-requests", severity=Severity.ERROR,
                             message=f"{len(run.records) - len(done)} of {len(run.records)} requests failed",
                             hint="see check.errors; the figures cover the completed requests only"))
    short = sum(1 for r in done if r.output_tokens < r.asked_tokens)
    if short:
        found.append(Finding(code="short-outputs", severity=Severity.WARNING,
                             message=f"{short} requests returned fewer tokens than asked",
                             hint="ignore_eos was sent, so the server clamped the length: its max_model_len "
                                  "(prompt + output) or a max-tokens limit; lower --output-tokens or --input-tokens"
                             if ignore_eos else "the server stopped at end-of-sequence; use --ignore-eos on vLLM/SGLang"))
    if done and fields["token_count_source"] != TOKENS_FROM_USAGE:
        found.append(Finding(code="tokens-from-chunks", severity=Severity.INFO,
                             message=f"output tokens counted as {fields['token_count_source']}",
                             hint="a server that honours stream_options.include_usage gives exact counts"))
    return tuple(found)
