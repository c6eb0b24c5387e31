"""Score what-if predictions against measured steps: pair, predict, judge the measurement.

A validation trace alternates base and fast steps. Each base step is paired with the fast step
that follows it, so a slow drift of the machine (another process, a clock change) moves both
alike and cancels in the pair. From the base steps alone each method predicts the fast step;
the error of a method is the median over pairs of ``prediction_error(predicted_i, fast_i)``.

A run is scored only when its measurement is steady:

- a pair is *contended* when either step spent more than :data:`CONTENDED_SHARE` of its wall
  time runnable but off the CPU (run-queue wait of the main or the worker thread): other
  processes took the cores, which no trace shows. Contended pairs are counted and left out;
- of the rest, a pair whose measured speed-up ``base_i / fast_i`` lies outside Tukey's fences
  is an *outlier* (a stall the run-queue wait does not see, such as the hypervisor taking the
  core): counted and left out;
- the run is *unstable* when fewer than :data:`MIN_PAIRS` pairs are left, or when the kept
  pairs' speed-up drifts (:func:`half_drift` above :data:`DRIFT_MAX`, and
  :func:`half_drift_z` above :data:`DRIFT_Z`) or is bimodal or heavy-tailed
  (:func:`bimodality_coefficient` above its threshold). An unstable run is reported with its
  reasons and never scored.

The measured step is inside the bounds when the 95% bootstrap interval of the median error of
the high-speedup bound reaches 0 or below and that of the low-speedup bound 0 or above: where
the bounds meet the truth (all the scaled work on the critical path), noise alone puts half
the pairs on either side.
"""

from __future__ import annotations

import itertools
import statistics
import time

import numpy as np

from parity.metrics.whatif import (
    BIMODAL_THRESHOLD,
    bimodality_coefficient,
    half_drift,
    half_drift_z,
    prediction_error,
    run_queue_share,
)
from parity.stats.summary import bootstrap_ci, tukey_outliers
from parity.trace import Kind
from parity.trace.table import KindCode
from parity.trace.whatif import parse_scale
from parity.trace.whatif.bounds import bounds
from parity.trace.whatif.first_order import first_order
from parity.trace.whatif.graph import build_graph
from parity.trace.whatif.prediction import step_boundaries
from parity.trace.whatif.replay import schedule, step_lengths
from parity.trace.whatif.selection import Window, choose_window, scale_factors
from parity.trace.whatif.timeline import build_timeline

REPLAY_TARGET = 0.05
CONTENDED_SHARE = 0.02  # run-queue wait above this share of a step: other processes interfered
DRIFT_MAX = 0.05  # a measured speed-up that drifts by the target itself cannot score the target
DRIFT_Z = 2.0  # ... when the drift also stands out of the pairs' noise by this many errors
MIN_PAIRS = 6
VARIANT_TAG = "whatif-variant="
METHODS = ("first_order", "bound_low_speedup", "bound_high_speedup", "replay")


def tagged_steps(table) -> list[tuple[int, int, str, int]]:
    """``(start_ns, end_ns, variant, profiler_step)`` of every steady step, from the tags and
    the ``ProfilerStep#N`` markers (``-1`` where a step has no marker)."""
    window = choose_window(table, build_timeline(table))
    tags = [(int(table.start_ns[i]), table.name_of(i)[len(VARIANT_TAG):])
            for i in np.flatnonzero(table.kind == Kind.OTHER)
            if table.name_of(i).startswith(VARIANT_TAG)]
    markers = {int(table.start_ns[i]): table.name_of(i)
               for i in np.flatnonzero(table.kind == KindCode.STEP)}
    steps = []
    for a, b in zip(window.boundaries_ns[:-1], window.boundaries_ns[1:]):
        inside = [v for t, v in tags if a <= t < b]
        name = markers.get(int(a), "")
        number = int(name.rpartition("#")[2]) if name.rpartition("#")[2].isdigit() else -1
        steps.append((a, b, inside[0] if len(inside) == 1 else "cuda", number))
    return steps


def matrix_ns(timeline, a: int, b: int) -> float:
    """Summed time of matrix work in ``[a, b)``, ns, every lane (leaf time on host threads)."""
    sel = timeline.compute & (timeline.category == "matrix")
    s = np.maximum(timeline.start_ns[sel], a)
    e = np.minimum(timeline.end_ns[sel], b)
    return float(np.clip(e - s, 0, None).sum())


def adjacent_pairs(steps: list[tuple], base: str, fast: str) -> list[tuple[tuple, tuple]]:
    """Each base step with the fast step right after it (steps in time order)."""
    return [(s, t) for s, t in itertools.pairwise(steps) if s[2] == base and t[2] == fast]


def contended(waits: dict[int, dict], step: tuple) -> bool | None:
    """Whether either thread of ``step`` waited on the run queue more than
    :data:`CONTENDED_SHARE` of the step (None when the kernel did not say)."""
    rec = waits.get(step[3])
    if rec is None or rec.get("main_wait_ns") is None:
        return None
    shares = [run_queue_share(rec[f"{role}_wait_ns"], rec["wall_ns"])
              for role in ("main", "worker") if rec.get(f"{role}_wait_ns") is not None]
    return max(shares) > CONTENDED_SHARE


def stability(speedups: list[float], n_pairs: int, n_contended: int, n_outliers: int = 0
              ) -> list[str]:
    """Reasons (empty when none) not to score a run whose kept pairs measured ``speedups``."""
    reasons = []
    if len(speedups) < MIN_PAIRS:
        reasons.append(f"only {len(speedups)} of {n_pairs} pairs were kept ({n_contended} had "
                       f"run-queue waits above {CONTENDED_SHARE:.0%} of the step, {n_outliers} "
                       "were outliers); run on idle cores")
        return reasons
    drift, z = half_drift(speedups), half_drift_z(speedups)
    if drift > DRIFT_MAX and z > DRIFT_Z:
        reasons.append(f"measured speed-up drifted by {drift:.1%} between the run's halves "
                       f"({z:.1f} standard errors)")
    bimodal = bimodality_coefficient(speedups)
    if bimodal > BIMODAL_THRESHOLD:
        reasons.append(f"measured speed-up is bimodal or heavy-tailed (bimodality coefficient "
                       f"{bimodal:.2f} > {BIMODAL_THRESHOLD:.2f})")
    return reasons


def keep_pairs(speedups: list[float], busy: list[bool]) -> tuple[list[int], list[int]]:
    """``(kept, outliers)``: indices of the pairs not contended (``busy``) whose measured
    speed-up lies inside Tukey's fences among the free ones (fences only from 4 free pairs),
    and of the free pairs outside them."""
    free = [i for i, b in enumerate(busy) if not b]
    outliers = [free[j] for j in tukey_outliers([speedups[i] for i in free])] if len(free) >= 4 else []
    return [i for i in free if i not in outliers], outliers


def pair_flags(pairs: list[tuple[tuple, tuple]], waits: dict[int, dict]) -> tuple[list[bool], bool]:
    """Per pair, whether either step was contended (:func:`contended`), and whether the
    run-queue wait of every step was known."""
    states = [(contended(waits, b), contended(waits, f)) for b, f in pairs]
    return [bool(x or y) for x, y in states], all(x is not None and y is not None for x, y in states)


def validate_interleaved(table, base: str, fast: str, waits: list[dict] | None = None) -> dict:
    """Pair, predict and judge one interleaved trace (see the module docstring).

    ``k`` is the median over the kept pairs (all pairs when fewer than 2 are kept) of the ratio
    of the base step's matrix time to the fast step's. Every base step is predicted; errors
    are medians over the kept pairs, and over the contended ones beside them, for evidence.
    """
    pairs = adjacent_pairs(tagged_steps(table), base, fast)
    if len(pairs) < 2:
        raise RuntimeError(f"too few base/fast pairs in the trace: {len(pairs)}")
    flags, known = pair_flags(pairs, {w["profiler_step"]: w for w in waits or []})
    length = lambda step: step[1] - step[0]
    kept, outliers = keep_pairs([length(b) / length(f) for b, f in pairs], flags)
    use = kept if len(kept) >= 2 else list(range(len(pairs)))
    timeline = build_timeline(table)
    k = statistics.median(matrix_ns(timeline, *pairs[i][0][:2]) / matrix_ns(timeline, *pairs[i][1][:2])
                          for i in use)
    started = time.perf_counter()
    predicted = predict_steps(table, timeline, [b[:2] for b, _ in pairs],
                              [parse_scale(f"matrix={k!r}")])
    predict_s = time.perf_counter() - started
    fast_ns = [length(pairs[i][1]) for i in use]
    base_ns = [length(pairs[i][0]) for i in use]
    errors = _median_errors([predicted[i] for i in use], fast_ns)
    bound_ci = {m: bootstrap_ci([prediction_error(predicted[i][m], t) for i, t in zip(use, fast_ns)])
                for m in ("bound_low_speedup", "bound_high_speedup")}
    busy = [i for i, b in enumerate(flags) if b]
    speedups = [b / f for b, f in zip(base_ns, fast_ns)]
    # Judged on the kept pairs only: with fewer than 2 kept, ``use`` falls back to every pair
    # for the printed errors, and those pairs must not make the run look steady.
    reasons = stability([length(pairs[i][0]) / length(pairs[i][1]) for i in kept], len(pairs), len(busy),
                        len(outliers))
    return {
        "k_matrix": k,
        "measured_base_step_ns": statistics.median(base_ns),
        "measured_fast_step_ns": statistics.median(fast_ns),
        "measured_speedup": statistics.median(speedups),
        "pairs": {"all": len(pairs), "kept": len(kept), "contended": len(busy),
                  "outliers": len(outliers), "run_queue_known": known},
        "errors": errors,
        "errors_contended_pairs": _median_errors([predicted[i] for i in busy],
                                                 [length(pairs[i][1]) for i in busy]) if busy else None,
        "bound_errors_ci95": bound_ci,
        "inside_bounds": inside_bounds(bound_ci),
        "replay_within_target": bool(abs(errors["replay"]) <= REPLAY_TARGET),
        "unstable": reasons,
        "scored": not reasons,
        "replay_reproduction_error": max(p["reproduction_error"] for p in predicted),
        "predict_s": predict_s,
        "assumptions": predicted[0]["assumptions"],
        "graph": predicted[0]["graph"],
    }


def _median_errors(predicted: list[dict], measured_ns: list[float]) -> dict[str, float]:
    """Per method, the median over pairs of ``prediction_error(predicted_i, measured_i)``."""
    return {m: statistics.median(prediction_error(p[m], t) for p, t in zip(predicted, measured_ns))
            for m in METHODS}


def inside_bounds(bound_ci: dict[str, tuple[float, float]]) -> bool:
    """Whether the measured step can lie between the bounds' steps: the interval of the
    high-speedup bound's error reaches 0 or below, that of the low-speedup bound 0 or above
    (errors as fractions; a single value is an interval of width 0)."""
    return bound_ci["bound_high_speedup"][0] <= 1e-9 and bound_ci["bound_low_speedup"][1] >= -1e-9


def predict_steps(table, timeline, steps: list[tuple[int, int]], scale) -> list[dict]:
    """Each method's predicted length of every step in ``steps`` (ns), from one graph and one
    replay of the whole trace (the library's parts, as :func:`parity.trace.whatif.predict`
    uses them, shared across steps)."""
    window = choose_window(table, timeline)
    graph = build_graph(table, timeline, step_boundaries=step_boundaries(table, timeline))
    base = schedule(graph, np.ones(len(timeline)))
    new = schedule(graph, scale_factors(timeline, scale))
    out = []
    for a, b in steps:
        step = Window(start_ns=a, end_ns=b, boundaries_ns=(a, b), marker_lane=window.marker_lane)
        fo = first_order(timeline, step, scale)
        bd = bounds(timeline, step, scale)
        reproduced = float(step_lengths(graph, step, *base)[0])
        out.append({
            "first_order": fo.new_step_ns,
            "bound_low_speedup": (b - a) / bd.low,
            "bound_high_speedup": (b - a) / bd.high,
            "replay": float(step_lengths(graph, step, *new)[0]),
            "reproduction_error": abs(reproduced - (b - a)) / (b - a),
            "assumptions": graph.assumptions(),
            "graph": graph.to_dict(),
        })
    return out


def validate_pair(base_table, fast_table) -> dict:
    """Errors of each method for two traces, one per variant (the CUDA mode): medians of the
    base steps' predictions against the median fast step (no pairing, no run-queue data)."""
    base_steps = [s[:2] for s in tagged_steps(base_table)]
    fast_steps = [s[:2] for s in tagged_steps(fast_table)]
    if len(base_steps) < 2 or len(fast_steps) < 2:
        raise RuntimeError(f"too few steps: {len(base_steps)} base, {len(fast_steps)} fast")
    base_tl, fast_tl = build_timeline(base_table), build_timeline(fast_table)
    k = (statistics.median(matrix_ns(base_tl, a, b) for a, b in base_steps)
         / statistics.median(matrix_ns(fast_tl, a, b) for a, b in fast_steps))
    predicted = predict_steps(base_table, base_tl, base_steps, [parse_scale(f"matrix={k!r}")])
    t_fast = statistics.median(b - a for a, b in fast_steps)
    t_base = statistics.median(b - a for a, b in base_steps)
    errors = {m: prediction_error(statistics.median(p[m] for p in predicted), t_fast)
              for m in METHODS}  # two traces: no pairs, medians of each side
    return {"k_matrix": k, "measured_base_step_ns": t_base, "measured_fast_step_ns": t_fast,
            "measured_speedup": t_base / t_fast, "errors": errors,
            "inside_bounds": inside_bounds({m: (errors[m], errors[m]) for m in
                                            ("bound_low_speedup", "bound_high_speedup")}),
            "replay_within_target": bool(abs(errors["replay"]) <= REPLAY_TARGET),
            "unstable": [], "scored": True,
            "replay_reproduction_error": max(p["reproduction_error"] for p in predicted),
            "assumptions": predicted[0]["assumptions"], "graph": predicted[0]["graph"]}
