"""The engine sweep of ``parity decode offline --engine``: each batch measured through the
harness, then a typed record with the same Pareto front and target interpolation as the step
model's (``parity.metrics.decode``), labelled "offline, engine" (SI units: s, tokens/s per card).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any, ClassVar

from parity.families.decode.engine import (
    MODE,
    EngineOptions,
    FreshPrompts,
    batch_metrics,
    calls_per_batch,
    engine_work,
)
from parity.harness.measure import measure_work
from parity.harness.suite import CaseSpec
from parity.metrics.decode import INTERPOLATION_METHOD, DecodePoint, pareto_front, throughput_at_target
from parity.model.result import CaseResult

SUITE = "decode-engine"
TPOT_STATISTIC = "slope of median generate times between two output lengths"
EXCLUDES = "request arrival and load balancing (the engine's own scheduling and sampling are included)"


@dataclass(frozen=True, kw_only=True)
class EnginePoint:
    """One batch: the engine's decode step and TPOT (s), tokens/s per card, the whole call's output
    tokens/s (vLLM bench throughput's definition), and whether its check passed."""

    batch: int
    step_s: float | None
    tpot_s: float | None
    tokens_per_s_per_card: float | None
    call_output_tok_s: float
    ok: bool


@dataclass(frozen=True, kw_only=True)
class EngineTarget:
    """Tokens/s per card at one TPOT target; ``value`` None when not reached (``reason``)."""

    tpot_target_s: float
    value: float | None
    status: str
    reason: str = ""


@dataclass(frozen=True, kw_only=True)
class EngineSummary:
    """``parity decode offline --engine``'s record (``VERSION`` 2: ``engine_args``, the engine
    arguments asked and those the engine resolved, the conditions two engine runs are compared on)."""

    VERSION: ClassVar[int] = 2

    mode: str = MODE
    engine: str = ""
    engine_version: str = ""
    model: str = ""
    input_tokens: int = 0
    output_tokens: int = 0
    short_tokens: int = 0
    cards: int = 1
    engine_args: dict[str, Any] = field(default_factory=dict)
    tpot_statistic: str = TPOT_STATISTIC
    excludes: str = EXCLUDES
    interpolation: str = INTERPOLATION_METHOD
    points: tuple[EnginePoint, ...] = ()
    pareto: tuple[dict[str, Any], ...] = ()
    at_target: tuple[EngineTarget, ...] = ()
    failed: tuple[int, ...] = ()
    findings: tuple[dict[str, Any], ...] = ()

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        for key in ("points", "pareto", "at_target", "failed", "findings"):
            out[key] = list(out[key])
        return {"version": self.VERSION, **out}


def measure_engine(generate: Callable[[list[list[int]], int], list[int]], *, options: EngineOptions, vocab: int,
                   device: Any, progress: Callable[[str], None] = lambda line: None) -> list[CaseResult]:
    """Each batch of ``options.batches`` as one case timed by the harness (``engine_work``)."""
    results = []
    for index, batch in enumerate(options.batches, 1):
        prompts = FreshPrompts(batch=batch, tokens=options.input_tokens, vocab=vocab, seed=options.seed,
                               calls=calls_per_batch(options))
        case = CaseSpec(suite=SUITE, key=f"batch={batch}",
                        params={"batch": batch, "input_tokens": options.input_tokens,
                                "output_tokens": options.output_tokens, "short_tokens": options.short_tokens,
                                "cards": options.cards, "engine": options.engine, "mode": MODE})
        result = measure_work(case, engine_work(generate, prompts, options=options), device=device)
        result = CaseResult(suite=result.suite, key=result.key, params=result.params, samples=result.samples,
                            metrics={**result.metrics, **batch_metrics(result.metrics, batch=batch, options=options)},
                            check=result.check, findings=result.findings, telemetry=result.telemetry)
        m = result.metrics
        tpot = f"{m['tpot_s'] * 1e3:.3g} ms" if m.get("tpot_s") else "n/a (slope not positive)"
        progress(f"[{index}/{len(options.batches)}] batch {batch}: step {tpot}, "
                 f"whole call {m['call_output_tok_s']:.1f} output tok/s, check "
                 f"{'ok' if result.check.get('passed') else 'FAILED'}")
        results.append(result)
    return results


def summarize_engine(results: list[CaseResult], *, options: EngineOptions, engine_version: str,
                     engine_args: dict[str, Any] | None = None) -> EngineSummary:
    """Points, the Pareto front of (TPOT, tokens/s per card), tokens/s at each TPOT target."""
    points = tuple(EnginePoint(batch=r.params["batch"], step_s=r.metrics.get("step_s"), tpot_s=r.metrics.get("tpot_s"),
                               tokens_per_s_per_card=r.metrics.get("tokens_per_s_per_card"),
                               call_output_tok_s=r.metrics["call_output_tok_s"], ok=r.ok)
                   for r in results)
    good = [p for p in points if p.ok and p.tpot_s is not None and p.tokens_per_s_per_card is not None]
    front = pareto_front(DecodePoint(tpot_s=p.tpot_s, throughput=p.tokens_per_s_per_card, label=p.batch)
                         for p in good if p.tpot_s is not None and p.tokens_per_s_per_card is not None)
    targets = []
    for target_ms in options.tpot_ms:
        found = throughput_at_target(front, target_ms / 1e3)
        targets.append(EngineTarget(tpot_target_s=found.target_s, value=found.value, status=found.status,
                                    reason=found.reason))
    findings = [f.to_dict() for r in results for f in r.findings]
    return EngineSummary(engine=options.engine, engine_version=engine_version, model=options.model,
                         input_tokens=options.input_tokens, output_tokens=options.output_tokens,
                         short_tokens=options.short_tokens, cards=options.cards,
                         engine_args=dict(engine_args or {}), points=points,
                         pareto=tuple({"batch": f.label, "tpot_s": f.tpot_s, "tokens_per_s_per_card": f.throughput}
                                      for f in front),
                         at_target=tuple(targets), failed=tuple(p.batch for p in points if not p.ok),
                         findings=tuple(findings))
