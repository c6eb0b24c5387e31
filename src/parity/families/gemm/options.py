"""What a GEMM sweep is asked to do (``GemmOptions``) and what that resolves to (``GemmPlan``).

``GemmOptions`` is the typed option set users give (``parity run --set gemm.dtype=fp32``,
``parity gemm --dtype fp32``, the Python API); a ``None`` field takes the mode's default.
``GemmPlan.resolve`` turns it into the concrete budgets for one mode and device kind, which
every case records in its params.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

from parity.families.gemm.dtypes import DTYPES, resolve_dtype
from parity.harness.options import option

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
    """The options of the ``gemm`` suite."""

    dtype: str = option("bf16", help="precision: " + ", ".join(DTYPES))
    backends: tuple[str, ...] = option(("matmul",), help="GEMM backends: matmul, linear or module:Class",
                                     aliases=("--backend",))
    shapes: str = option("catalog", help="the built-in catalog, or a CSV of m,n,k[,name] lines")
    warmup_s: float | None = option(None, help="warm-up per shape, s (0.02 quick, 0.025 full)",
                                    minimum=0.0, exclusive_minimum=True)
    budget_s: float | None = option(None, help="timed calls per shape, s (0.08 quick, 0.15 full)",
                                    minimum=0.0, exclusive_minimum=True)
    ceiling_budget_s: float | None = option(None, help="compute-ceiling search, s of its timed calls, cache "
                                                       "flushes not counted (20 quick, 60 full)",
                                            minimum=0.0, exclusive_minimum=True, aliases=("--ceiling-budget",))
    flush: bool = option(True, help="flush the last-level cache before every timed call")
    telemetry: bool = option(True, help="sample clocks, power and throttle reasons while timing")
    check: bool = option(True, help="check every product against a reference")
    graph: str = option("auto", help="graph replay for tiny kernels", choices=("auto", "on", "off"))
    max_call_s: float = option(MAX_CALL_S, help="refuse a shape slower than this per call at the ceiling, s",
                               minimum=0.0, exclusive_minimum=True)
    max_samples: int = option(500, help="most timed calls per shape", minimum=1)
    ceiling_from: str | None = option(None, help="reuse this stored run's compute ceiling P instead of searching")
    peak_tflops: float | None = option(None, help="a peak to show beside P instead of the datasheet's, TFLOP/s",
                                       minimum=0.0, exclusive_minimum=True, aliases=("--peak",))
    stored_ceiling: str | None = option(None, help="filled from ceiling_from: the reused ceiling as JSON",
                                          command_line=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "dtype", resolve_dtype(self.dtype).name)  # aliases, and loud on unknown
        if not self.backends:
            object.__setattr__(self, "backends", ("matmul",))
        object.__setattr__(self, "backends", tuple(dict.fromkeys(self.backends)))


@dataclass(frozen=True, kw_only=True)
class GemmPlan:
    """``GemmOptions`` resolved for one mode (quick or full) and device kind."""

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
    ceiling_from: str | None
    stored_ceiling: str | None
    peak_tflops: float | None

    @classmethod
    def resolve(cls, options: GemmOptions, *, quick: bool, device_type: str) -> GemmPlan:
        timing = QUICK_TIMING if quick else FULL_TIMING
        kind = "cpu" if device_type == "cpu" else "accel"
        resolved = {
            "warmup_s": timing["warmup_s"] if options.warmup_s is None else options.warmup_s,
            "budget_s": timing["budget_s"] if options.budget_s is None else options.budget_s,
            "ceiling_budget_s": (CEILING_BUDGET_S[(kind, quick)] if options.ceiling_budget_s is None
                                 else options.ceiling_budget_s),
        }
        return cls(**{f.name: resolved.get(f.name, getattr(options, f.name)) for f in fields(cls)})
