"""What a GEMM sweep was asked to do, from the suite options dict (CLI flags or ``parity run``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from parity.bench.gemm.dtypes import resolve_dtype
from parity.model.errors import ParityError

# Per-shape timing: seconds of warm-up and of timed calls. Quick keeps the CPU sweep short; the
# full budgets fit the 1,055-shape catalog in under ten minutes on a current GPU.
QUICK_TIMING = {"warmup_s": 0.02, "budget_s": 0.08}
FULL_TIMING = {"warmup_s": 0.025, "budget_s": 0.15}
# Seconds for the compute-ceiling search, by device kind and mode.
CEILING_BUDGET_S = {("cpu", True): 20.0, ("cpu", False): 60.0, ("accel", True): 20.0, ("accel", False): 60.0}
# Refuse a shape whose call would take longer than this at the measured ceiling.
MAX_CALL_S = 20.0


@dataclass(frozen=True, kw_only=True)
class GemmOptions:
    dtype: str
    backends: tuple[str, ...]
    shapes: str  # "catalog" or a CSV path
    warmup_s: float
    budget_s: float
    ceiling_budget_s: float
    flush: bool
    telemetry: bool
    check: bool
    graph: str  # "auto", "on" or "off"
    max_call_s: float
    max_samples: int

    @classmethod
    def parse(cls, options: dict[str, Any], *, quick: bool, device_type: str) -> GemmOptions:
        timing = QUICK_TIMING if quick else FULL_TIMING
        backends = options.get("backends") or options.get("backend") or ("matmul",)
        if isinstance(backends, str):
            backends = tuple(b.strip() for b in backends.split(",") if b.strip())
        graph = str(options.get("graph", "auto")).lower()
        if graph not in ("auto", "on", "off"):
            raise ParityError(f"gemm option graph={graph!r} is invalid; use auto, on or off")
        kind = "cpu" if device_type == "cpu" else "accel"
        return cls(
            dtype=resolve_dtype(options.get("dtype", "bf16")).name,
            backends=tuple(dict.fromkeys(backends)),
            shapes=str(options.get("shapes", "catalog")),
            warmup_s=_positive(options, "warmup_s", timing["warmup_s"]),
            budget_s=_positive(options, "budget_s", timing["budget_s"]),
            ceiling_budget_s=_positive(options, "ceiling_budget_s", CEILING_BUDGET_S[(kind, quick)]),
            flush=bool(options.get("flush", True)),
            telemetry=bool(options.get("telemetry", True)),
            check=bool(options.get("check", True)),
            graph=graph,
            max_call_s=_positive(options, "max_call_s", MAX_CALL_S),
            max_samples=int(options.get("max_samples", 500)),
        )


def _positive(options: dict[str, Any], key: str, default: float) -> float:
    value = options.get(key, default)
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise ParityError(f"gemm option {key}={value!r} is not a number") from None
    if not number > 0:
        raise ParityError(f"gemm option {key}={value!r} must be positive")
    return number
