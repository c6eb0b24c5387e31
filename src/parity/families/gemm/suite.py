"""The GEMM suite: the catalog's shapes through each backend, rated against measured ceilings.

Cases, in order: the compute-ceiling search for the dtype (``ceiling/<dtype>``), the bandwidth
ceiling (``bandwidth``), then one case per (shape, backend) keyed ``<dtype>/<backend>/MxNxK``,
with as many sentinel cases as the ceiling has confirmation rounds spread evenly between them
(``ceiling/<dtype>/sentinel-<i>``: one round of the ceiling's shape, timed as ``P``'s rounds are,
beside the same shape timed as the sweep times a shape, so that ``P`` is read from the moments
the shapes were timed in and its own shape is checked against it; ``parity.metrics.ceiling``);
after the sweep (``recheck``) the off-trend shapes again, and, when fewer than three sentinels
were timed (a run resumed past its ceiling has no shape to time), the ceiling's own shape in as
many pairs as ``P`` had rounds (``ceiling/<dtype>/own-shape``).
Each shape case times the backend with the timing core (warm-up, cache flushed before every
call, inputs rotated past the cache, telemetry sampled), checks the product on fresh inputs,
and records what it saw. The roofline figures that need the ceilings (attainable, efficiency,
class, fractions) are derived from the stored cases by ``analysis.analyse``, so a resumed run
gets them too. Failures are rows: an unsupported dtype, an out-of-memory, a backend exception,
a shape too slow to time at the measured ceiling.
"""

from __future__ import annotations

import logging
import math
from dataclasses import replace
from typing import Any

from parity.families.gemm.catalog import catalog, load_user_shapes, quick_selection
from parity.families.gemm.catalog.shapes import Shape
from parity.ceilings.plan import SearchPlan
from parity.families.gemm.analysis import gemm_summary, off_trend_shapes, sentinel_rates, sweep_ceiling
from parity.families.gemm.raised import raise_case
from parity.families.gemm.backends import load_backend
from parity.families.gemm.dtypes import resolve_dtype, unavailable_reason
from parity.families.gemm.measure_case import (
    measure_bandwidth,
    measure_ceiling,
    measure_ceiling_raise,
    measure_ceiling_shape,
    measure_shape,
    skipped_row,
)
from parity.families.gemm.options import GemmOptions, GemmPlan
from parity.families.gemm.figures import gemm_figures
from parity.families.gemm.stored_ceiling import stored_ceiling_row
from parity.families.gemm.summary import GemmSummary
from parity.harness.suite import CaseSpec, SuiteBase
from parity.metrics.ceiling import MIN_ROUNDS_FOR_CI
from parity.model.errors import ParityError
from parity.model.figure import Figure
from parity.model.result import CaseResult

log = logging.getLogger(__name__)

SUITE = "gemm"
# ETA costs are expected seconds (CaseSpec.cost): a shape's fixed time (warm-up, budget, inputs,
# flushes, check) plus about eight calls at a rough rate for the device kind (a quick CPU sweep:
# 0.1-0.3 s a shape on a 2-core host doing 0.9 TFLOP/s bf16); the ceiling its budget.
ROUGH_FLOPS = {"cpu": 1e11}
ROUGH_FLOPS_ACCELERATOR = 2e14
SHAPE_OVERHEAD_S = 0.1
CALLS_PER_SHAPE = 8
BANDWIDTH_S = 0.5  # the shared bandwidth ceiling (0.6 s measured on a 2-core host)
# The options every shape case records and is timed by (``measure_case``).
TIMING_KEYS = ("warmup_s", "budget_s", "flush", "telemetry", "check", "graph", "max_call_s", "max_samples")
# With --quick, tuned backends are measured only on shapes of at most this much work.
TUNED_QUICK_MAX_FLOP = 2.0**34


def select_shapes(source: str, *, quick: bool) -> list[Shape]:
    """The catalog (its quick selection with ``quick``) or the user's CSV shapes."""
    if source == "catalog":
        shapes = catalog()
        return quick_selection(shapes) if quick else shapes
    return load_user_shapes(source)


def tuned_subset(backend: Any, shapes: list[Shape], *, quick: bool) -> tuple[set[tuple[int, int, int]], str]:
    """The shapes a candidate backend is measured on, and a note saying so: all of them,
    except that with ``quick`` a backend with ``quick_shapes = n`` (tuning costs seconds per
    shape) gets ``n`` shapes of at most ``TUNED_QUICK_MAX_FLOP``, spread evenly over the
    logarithm of their work so every size bucket is represented (``spread_by_work``)."""
    limit = getattr(backend, "quick_shapes", None)
    if not quick or not limit:
        return {s.dims for s in shapes}, f"all {len(shapes)} shapes"
    chosen = spread_by_work([s for s in shapes if s.flops <= TUNED_QUICK_MAX_FLOP], limit)
    return ({s.dims for s in chosen},
            f"{len(chosen)} of the {len(shapes)} quick shapes, up to 2^34 FLOP, spread over log work: "
            f"{backend.name} tunes each shape, which costs seconds")


def spread_by_work(shapes: list[Shape], count: int) -> list[Shape]:
    """``count`` shapes nearest to evenly spaced points of ``log2(2MNK)`` between the least
    and the most work (each shape used once), in order of work."""
    pool = sorted(shapes, key=lambda s: (s.flops, s.dims))
    if len(pool) <= count:
        return pool
    low, high = math.log2(pool[0].flops), math.log2(pool[-1].flops)
    chosen: list[Shape] = []
    for i in range(count):
        target = low + (high - low) * i / (count - 1) if count > 1 else low
        rest = [s for s in pool if s not in chosen]
        chosen.append(min(rest, key=lambda s: abs(math.log2(s.flops) - target)))
    return sorted(chosen, key=lambda s: (s.flops, s.dims))


def shape_key(dtype: str, backend: str, shape: Shape) -> str:
    return f"{dtype}/{backend}/{shape.m}x{shape.n}x{shape.k}"


class GemmSuite(SuiteBase):
    """``parity gemm`` / ``parity run --suite gemm``.

    State (``setup``): the compute ceilings measured in this run, by (device, dtype): their rate
    and the fastest swept shape's, the larger of which guards against shapes too slow to time
    (a shape's least call time is its work over the fastest rate seen), and their shape, which
    the sentinels time. A resumed run that skips the ceiling case has neither: no guard, and
    its sentinels are skipped.
    """

    name = SUITE
    description = "matmul over the 1,055-shape catalog: TFLOP/s, roofline efficiency, ceilings"
    options_type = GemmOptions

    def setup(self, *, device: Any, options: GemmOptions) -> dict[tuple[str, str], dict[str, Any]]:
        return {}

    def cases(self, *, device: Any, quick: bool, options: GemmOptions) -> list[CaseSpec]:
        opts = GemmPlan.resolve(options, quick=quick, device_type=device.type)
        for spec in opts.backends:
            load_backend(spec)  # unknown names fail now, before the run starts
        shapes = select_shapes(opts.shapes, quick=quick)
        timing = {key: getattr(opts, key) for key in TIMING_KEYS}
        fixed_s = opts.warmup_s + opts.budget_s + SHAPE_OVERHEAD_S
        rate = ROUGH_FLOPS.get(device.type, ROUGH_FLOPS_ACCELERATOR)
        cases = [
            CaseSpec(suite=SUITE, key=f"ceiling/{opts.dtype}",
                     cost=0.01 if opts.stored_ceiling else opts.ceiling_budget_s,
                     params={"kind": "ceiling", "dtype": opts.dtype, "backend": opts.backends[0],
                             "ceiling_budget_s": opts.ceiling_budget_s, "ceiling_from": opts.ceiling_from,
                             "peak_tflops": opts.peak_tflops, "flush": opts.flush}),
            CaseSpec(suite=SUITE, key="bandwidth", cost=BANDWIDTH_S, params={"kind": "bandwidth"}),
        ]
        subsets = {spec: tuned_subset(load_backend(spec), shapes, quick=quick) for spec in opts.backends[1:]}
        baseline = opts.backends[0]
        swept: list[CaseSpec] = []
        for shape in shapes:
            for spec in opts.backends:
                params = {"kind": "shape", "dtype": opts.dtype, "backend": spec, **shape.to_dict(), **timing}
                if spec != baseline:
                    chosen, note = subsets[spec]
                    if shape.dims not in chosen:
                        continue
                    params.update({"baseline": baseline, "subset": note})
                swept.append(CaseSpec(suite=SUITE, key=shape_key(opts.dtype, spec, shape),
                                      cost=(2 if spec != baseline else 1) * (fixed_s + CALLS_PER_SHAPE * shape.flops / rate),
                                      params=params))
        plan = SearchPlan.for_device(device.type, budget_s=opts.ceiling_budget_s)
        sentinels = [
            CaseSpec(suite=SUITE, key=f"ceiling/{opts.dtype}/sentinel-{index + 1}",
                     cost=2 * plan.confirm_budget_s + fixed_s,
                     params={**timing, "kind": "ceiling-sentinel", "dtype": opts.dtype, "backend": baseline,
                             "ceiling_budget_s": opts.ceiling_budget_s, "rounds": 1, "index": index})
            for index in range(plan.confirm_repeats if swept else 0)]
        return cases + spread_between(swept, sentinels)

    def measure(self, case: CaseSpec, *, device: Any, options: GemmOptions,
                state: dict[tuple[str, str], dict[str, Any]]) -> CaseResult:
        params = case.params
        kind = params.get("kind")
        if kind == "bandwidth":
            return measure_bandwidth(case, device=device)
        dtype = resolve_dtype(params["dtype"])
        reason = unavailable_reason(dtype, device)
        if kind == "ceiling-shape":
            return measure_ceiling_shape(case, device=device, dtype=dtype, unavailable=reason)
        if kind == "ceiling-raise":
            return measure_ceiling_raise(case, device=device, dtype=dtype, unavailable=reason)
        if kind == "ceiling-sentinel":
            ceiling = state.get((device.name, dtype.name))
            if ceiling is None or ceiling["dims"] is None:
                return skipped_row(case, code="sentinel-skipped",
                                   message="no ceiling was measured in this process (a resumed run, or the ceiling "
                                           "failed), so its shape is unknown and this sentinel round was not timed")
            m, n, k = ceiling["dims"]
            timed = replace(case, params={**case.params, "m": m, "n": n, "k": k})
            return measure_ceiling_shape(timed, device=device, dtype=dtype, unavailable=reason)
        if kind == "ceiling":
            if options.ceiling_from and not options.stored_ceiling:
                raise ParityError(f"gemm.ceiling_from={options.ceiling_from}: the stored ceiling was not "
                                  "resolved; give it through parity gemm --ceiling-from or parity run --set")
            result = (stored_ceiling_row(case, stored=options.stored_ceiling, device_name=device.properties().name,
                                         given_peak_tflops=options.peak_tflops)
                      if options.stored_ceiling
                      else measure_ceiling(case, device=device, dtype=dtype, unavailable=reason, final=False))
            if result.error is None:
                dims = result.metrics.get("ceiling_shape") or {}
                state[(device.name, dtype.name)] = {
                    "flops": float(result.metrics["ceiling_flops"]),
                    "dims": (int(dims["m"]), int(dims["n"]), int(dims["k"])) if dims else None}
            return result
        backend = load_backend(params["backend"])
        baseline = load_backend(params["baseline"]) if params.get("baseline") else None
        ceiling = state.get((device.name, dtype.name))
        fastest = max(ceiling["flops"], ceiling.get("fastest", 0.0)) if ceiling else None
        result = measure_shape(case, device=device, dtype=dtype, backend=backend, unavailable=reason,
                               ceiling_flops=fastest, baseline=baseline)
        if ceiling is not None and result.ok and result.metrics.get("achieved_flops"):
            ceiling["fastest"] = max(ceiling.get("fastest", 0.0), float(result.metrics["achieved_flops"]))
        return result

    def recheck(self, results: list[CaseResult], *, options: GemmOptions) -> list[CaseSpec]:
        """Shapes whose rate is off the trend of their neighbours in shape, measured once more;
        with fewer than three sentinel rounds, the ceiling's own shape timed again as ``P``
        was (``own_shape_case``); and when a shape beat ``P`` beyond both CIs, the search again
        around it (``raised.raise_case``)."""
        again = [CaseSpec(suite=SUITE, key=f"{r.key}/again", params={**r.params, "again_of": r.key})
                 for r in off_trend_shapes(results)]
        own = own_shape_case(results)
        ceiling = next((r for r in results if r.params.get("kind") == "ceiling"), None)
        search_again = raise_case(results, sweep_ceiling(ceiling, sentinel_rates(results))) if ceiling else None
        return again + [c for c in (own, search_again) if c is not None]

    def summarize(self, results: list[CaseResult], *, options: GemmOptions) -> GemmSummary:
        return gemm_summary(results)

    def figures(self, summary: GemmSummary | dict[str, Any]) -> list[Figure]:
        """The sweep's figures (``parity.families.gemm.figures``); a stored dict is read first."""
        return gemm_figures(summary if isinstance(summary, GemmSummary) else GemmSummary.from_dict(summary))


def spread_between(cases: list[CaseSpec], inserts: list[CaseSpec]) -> list[CaseSpec]:
    """``cases`` with ``inserts`` spread evenly between them: insert ``j`` of ``r`` goes before
    case ``floor((j + 0.5) * n / r)`` of ``n``, so the first and last fall half a gap in from
    each end (2 inserts into 8 cases: before cases 2 and 6)."""
    out = list(cases)
    for j in reversed(range(len(inserts))):
        out.insert(math.floor((j + 0.5) * len(cases) / len(inserts)), inserts[j])
    return out


def own_shape_case(results: list[CaseResult]) -> CaseSpec | None:
    """``ceiling/<dtype>/own-shape``: the measured (or reused) ceiling's shape, to be timed after
    the sweep in as many pairs as ``P`` has rounds (``measure_ceiling_shape``), with the timing
    of the sweep's shapes; None without an ok ceiling case with its rounds, without a swept
    shape, or when the sweep timed at least ``MIN_ROUNDS_FOR_CI`` sentinels (they are the
    own shape's timings then)."""
    ceiling = next((r for r in results if r.params.get("kind") == "ceiling"), None)
    swept = next((r for r in results if r.params.get("kind") == "shape"), None)
    if ceiling is None or not ceiling.ok or swept is None or len(sentinel_rates(results)) >= MIN_ROUNDS_FOR_CI:
        return None
    shape = ceiling.metrics.get("ceiling_shape") or {}
    rounds = (ceiling.metrics.get("ceiling_rounds") or {}).get("rounds_flops") or []
    if not shape or not rounds:
        return None
    p = ceiling.params
    timing = {key: swept.params[key] for key in TIMING_KEYS}
    return CaseSpec(suite=SUITE, key=f"{ceiling.key}/own-shape", cost=1.0,
                    params={**timing, "kind": "ceiling-shape", "dtype": p["dtype"], "backend": p["backend"],
                            "ceiling_budget_s": p["ceiling_budget_s"], "rounds": len(rounds), "index": 0,
                            "m": int(shape["m"]), "n": int(shape["n"]), "k": int(shape["k"])})
