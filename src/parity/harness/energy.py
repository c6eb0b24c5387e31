"""Energy per unit of work, derived once for every family from its cases' declared work.

Each case timed through ``parity.harness.measure.time_work`` carries ``telemetry["energy"]``
(``parity.timing.energy``): the mean power over its timed window and ``joules_per_call = mean
power x median time per call``, or why none was given. The work per call is what the case
declared:

- FLOP (``flop``, or GEMM's ``work_flop``): ``J/FLOP = joules_per_call / flop`` (shown as J/TFLOP);
- bytes (``bytes``, or membw's ``bytes_moved``, in the case's byte convention): ``J/B =
  joules_per_call / bytes`` (shown as J/GB);
- decode tokens: a decode case times its layer kinds separately, so the step's joules are
  scaled like its time (``sum_kind total/run x joules_per_call``, ``model_step_s``), and
  ``J/token = joules_per_step / (tokens_per_s_per_card x step_s)``, the tokens one card
  produces per step.

A suite's figure is the median over its cases with energy, the lowest beside it (``best``).
Where every case's coverage was short, the figure is there with no value and a note that says
why. Where no sensor is readable, cases carry no record and there is no figure: the run's
provenance says so once (``device.power``). Energy is measured or not claimed, never derived
from a TDP.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from typing import Any

from parity.model.figure import Figure
from parity.model.result import CaseResult

# unit of work -> (figure suffix, figure unit, metric keys that declare it, in order)
WORK_UNITS = (
    ("token", "J/tok", ()),
    ("flop", "J/FLOP", ("flop", "work_flop")),
    ("byte", "J/B", ("bytes", "bytes_moved")),
)


def joules_per_unit(joules_per_call: float, work_per_call: float) -> float:
    """``J per unit = joules per call / work per call`` (J/FLOP, J/B or J/token).
    Example: 0.3 J per call of 2.0e11 FLOP is 1.5e-12 J/FLOP = 1.5 J/TFLOP."""
    if work_per_call <= 0:
        raise ValueError(f"work per call {work_per_call!r} must be positive")
    return joules_per_call / work_per_call


def _record(telemetry: Any) -> dict[str, Any] | None:
    energy = telemetry.get("energy") if isinstance(telemetry, dict) else None
    return energy if isinstance(energy, dict) else None


def _decode_step(result: CaseResult) -> tuple[float | None, float | None, list[dict[str, Any]]]:
    """``(joules per step, tokens per step per card, the kinds' records)`` of a decode case."""
    m = result.metrics
    kinds = m.get("kinds")
    if not isinstance(kinds, dict) or not m.get("tokens_per_s_per_card") or not m.get("step_s"):
        return None, None, []
    records = [_record(result.telemetry.get(k)) for k in kinds]
    if any(r is None or "unavailable" in r for r in records):
        return None, None, []
    read = [r for r in records if r is not None]
    joules = [r.get("joules_per_call") for r in read]
    tokens = float(m["tokens_per_s_per_card"]) * float(m["step_s"])
    if any(j is None for j in joules):
        return None, tokens, read
    step_j = sum(float(k["layers_total"]) * float(j) / float(k["layers_run"])
                 for k, j in zip(kinds.values(), joules) if j is not None)
    return step_j, tokens, read


def case_energy(result: CaseResult) -> dict[str, Any] | None:
    """A case's energy per unit of work: ``{"unit", "value", "records"}`` (value None when the
    energy was not given), or None when the case declares no work or carries no record."""
    step_j, tokens, records = _decode_step(result)
    if records:
        value = joules_per_unit(step_j, tokens) if step_j is not None and tokens else None
        return {"unit": "token", "value": value, "records": records}
    record = _record(result.telemetry)
    if record is None or "unavailable" in record:
        return None
    for unit, _, keys in WORK_UNITS:
        work = next((float(result.metrics[k]) for k in keys if result.metrics.get(k)), None)
        if work:
            joules = record.get("joules_per_call")
            value = joules_per_unit(float(joules), work) if joules is not None else None
            return {"unit": unit, "value": value, "records": [record]}
    return None


def energy_figures(suite: str, results: Sequence[CaseResult]) -> tuple[Figure, ...]:
    """One figure per unit of work the suite's cases declare: the median J per unit over the
    cases whose energy was given (see the module docstring)."""
    per_unit: dict[str, list[dict[str, Any]]] = {}
    for r in results:
        if r.error is None and (e := case_energy(r)) is not None:
            per_unit.setdefault(e["unit"], []).append(e)
    figures = []
    for unit, figure_unit, _ in WORK_UNITS:
        if unit in per_unit:
            figures.append(_figure(suite, unit, figure_unit, per_unit[unit]))
    return tuple(figures)


def _figure(suite: str, unit: str, figure_unit: str, cases: list[dict[str, Any]]) -> Figure:
    given = [c["value"] for c in cases if c["value"] is not None]
    read = [r for c in cases for r in c["records"]]
    scope: dict[str, Any] = {"cases": len(given), "withheld": len(cases) - len(given),
                             "coverage_min": min(float(r.get("coverage", 0.0)) for r in read),
                             "max_gap_s": max(float(r.get("max_gap_s", 0.0)) for r in read),
                             "devices": max(int(r.get("devices", 0)) for r in read),
                             "sources": sorted({s for r in read for s in r.get("sources", {})})}
    note = ""
    if len(given) < len(cases):
        reasons = [r["withheld"] for r in read if r.get("withheld")]
        note = f"{len(cases) - len(given)} of {len(cases)} cases without energy" + (f": {reasons[0]}" if reasons else "")
    return Figure(name=f"{suite}.energy_per_{unit}", value=statistics.median(given) if given else None,
                  unit=figure_unit, best=min(given) if given else None, scope=scope, note=note,
                  method=(f"J per {unit}: mean power over each case's timed window x its median time per call / "
                          f"its work per call; median over cases, lowest as best; measured, never from a TDP"))
