"""The decode sweep's summary: a typed record of the points, the Pareto front and the throughput
at each TPOT target (SI units: seconds, bytes, FLOP, tokens/s per card).

Offline numbers are labelled so everywhere: ``mode`` offline, the TPOT statistic (the median
engine step over accepted tokens), the card count, the layer scaling, and that they exclude
scheduling and load balancing. They are never set beside online numbers.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from typing import Any, ClassVar

from parity.harness.recheck import settle_rechecks
from parity.metrics.decode import INTERPOLATION_METHOD, DecodePoint, pareto_front, throughput_at_target
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


def _known(cls: type, data: dict[str, Any]) -> dict[str, Any]:
    names = {f.name for f in fields(cls)}
    return {k: v for k, v in data.items() if k in names}


@dataclass(frozen=True, kw_only=True)
class BatchPoint:
    """One batch of the sweep: the model's step and TPOT (s), tokens/s per card, the bytes the
    layers run hold, the layers run and in the model per kind, and the work of one step."""

    batch: int
    tpot_s: float
    step_s: float
    tokens_per_s_per_card: float
    cards: int
    memory_bytes: int
    memory_method: str
    layers_run: dict[str, int]
    layers_total: dict[str, int]
    ok: bool
    flop_per_step: float | None = None
    bytes_per_step: float | None = None

    @property
    def arithmetic_intensity(self) -> float | None:
        """FLOP per byte of one step, None without bytes."""
        if not self.bytes_per_step or self.flop_per_step is None:
            return None
        return self.flop_per_step / self.bytes_per_step


@dataclass(frozen=True, kw_only=True)
class FrontPoint:
    """A batch on the Pareto front of (TPOT, tokens/s per card)."""

    batch: int
    tpot_s: float
    tokens_per_s_per_card: float


@dataclass(frozen=True, kw_only=True)
class TargetThroughput:
    """The throughput per card at one TPOT target: ``value`` None when ``status`` is "not reached"
    (``reason`` says why; never extrapolated)."""

    tpot_target_s: float
    value: float | None
    status: str
    reason: str = ""
    method: str = INTERPOLATION_METHOD
    tpot_statistic: str = TPOT_STATISTIC
    cards: int | None = None
    mode: str = MODE


@dataclass(frozen=True, kw_only=True)
class DecodeSummary:
    """The ``decode`` suite's summary (``VERSION`` 1): the labels, ``points`` (checked cases by
    batch), ``pareto``, ``at_target`` per target, failed case keys, off-trend ``findings``."""

    VERSION: ClassVar[int] = 1

    mode: str = MODE
    tpot_statistic: str = TPOT_STATISTIC
    excludes: str = EXCLUDES
    cards: int | None = None
    config: str | None = None
    context: int | None = None
    dtype: str | None = None
    accepted_tokens_per_step: float | None = None
    layers_run: dict[str, int] | None = None
    layers_total: dict[str, int] | None = None
    scaling: str = SCALING
    device: str | None = None
    points: tuple[BatchPoint, ...] = ()
    pareto: tuple[FrontPoint, ...] = ()
    at_target: tuple[TargetThroughput, ...] = ()
    failed: tuple[str, ...] = ()
    findings: tuple[dict[str, Any], ...] = ()
    interpolation: str = INTERPOLATION_METHOD
    config_detail: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        for key in ("points", "pareto", "at_target", "failed", "findings"):
            out[key] = list(out[key])
        return {"version": self.VERSION, **out}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> DecodeSummary:
        """The record from ``to_dict()`` (unknown keys, such as a command's run id, are ignored)."""
        nested = {"points": BatchPoint, "pareto": FrontPoint, "at_target": TargetThroughput}
        data = data if "version" in data else _from_unversioned(data)
        values = _known(cls, data)
        for key, kind in nested.items():
            values[key] = tuple(kind(**_known(kind, item)) for item in data.get(key) or ())
        for key in ("failed", "findings"):
            values[key] = tuple(data.get(key) or ())
        return cls(**values)


def _from_unversioned(data: dict[str, Any]) -> dict[str, Any]:
    """A summary stored before ``VERSION`` 1, in SI: its front and targets were in ms, and a
    target not reached had the value ``"not reached"``."""
    pareto = [{**f, "tpot_s": f["tpot_ms"] / 1e3} if "tpot_ms" in f else f for f in data.get("pareto") or ()]
    targets = [{**t, "tpot_target_s": t["tpot_ms"] / 1e3,
                "value": t.get("value") if isinstance(t.get("value"), (int, float)) else None}
               if "tpot_ms" in t else t for t in data.get("at_target") or ()]
    return {**data, "pareto": pareto, "at_target": targets}


def point(result: CaseResult) -> BatchPoint:
    """One case as a point of the sweep."""
    m, p = result.metrics, result.params
    return BatchPoint(batch=p["batch"], tpot_s=m["tpot_s"], step_s=m["step_s"],
                      tokens_per_s_per_card=m["tokens_per_s_per_card"], cards=m["cards"],
                      memory_bytes=m["memory_bytes"], memory_method=m["memory_method"],
                      layers_run=p["layers_run"], layers_total=p["layers_total"], ok=result.ok,
                      flop_per_step=m.get("flop_per_step"), bytes_per_step=m.get("bytes_per_step"))


def summarize_decode(results: list[CaseResult], *, targets_ms: tuple[float, ...],
                     config_detail: dict[str, Any] | None = None) -> DecodeSummary:
    """``points`` (checked cases; a re-measured point's second row where it is back on trend),
    ``pareto``, ``at_target`` per target, the labels and the off-trend ``findings``."""
    rows, findings = settle_rechecks(results, find=slower_than_a_larger_batch,
                                     describe=lambda r: f"{r.metrics['step_s'] * 1e3:.3g} ms")
    good = sorted((r for r in rows if r.ok and "tpot_s" in r.metrics), key=lambda r: r.params["batch"])
    points = tuple(point(r) for r in good)
    front = pareto_front(DecodePoint(tpot_s=p.tpot_s, throughput=p.tokens_per_s_per_card, label=p.batch)
                         for p in points)
    first = good[0].params if good else {}
    cards = points[0].cards if points else None
    at_target = []
    for target in targets_ms:
        found = throughput_at_target(front, target / 1e3)
        at_target.append(TargetThroughput(tpot_target_s=found.target_s, value=found.value, status=found.status,
                                          reason=found.reason, cards=cards))
    return DecodeSummary(
        cards=cards, config=first.get("config"), context=first.get("context"), dtype=first.get("dtype"),
        accepted_tokens_per_step=first.get("accepted_tokens_per_step"),
        layers_run=first.get("layers_run"), layers_total=first.get("layers_total"), device=first.get("device"),
        points=points,
        pareto=tuple(FrontPoint(batch=f.label, tpot_s=f.tpot_s, tokens_per_s_per_card=f.throughput) for f in front),
        at_target=tuple(at_target), failed=tuple(r.key for r in rows if not r.ok), findings=tuple(findings),
        config_detail=dict(config_detail or {}))
