"""Measured collective times from stored runs, as ``parity.metrics.alphabeta.Point``.

A collectives case gives one point (its op, ``S``, ranks, the median of its per-iteration max
over ranks); a preflight bandwidth or latency case gives a ``sendrecv`` point (one-way time =
round trip / 2). Each point keeps its case's untrusted finding codes (``contended``,
``invalid``). Duration cases and failed cases give none. The dimension is the case's own
(``params["dimension"]`` where a run measured per-dimension groups, a preflight pair's scope),
else the run's topology (one node: intra; one rank per node: inter), else ``world``.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable
from typing import Any

from parity.metrics.alphabeta import Point
from parity.model.findings import untrusted_codes
from parity.model.result import CaseResult, RunRecord


SCOPES = {"intra-node": "intra", "inter-node": "inter"}


def run_dimension(run: RunRecord) -> str:
    """``intra``, ``inter`` or ``world`` from the run's recorded topology: a world case on one
    node is intra-node, on one rank per node inter-node."""
    topology = run.provenance.get("topology") or {}
    if topology.get("nodes") == 1:
        return "intra"
    if topology.get("ranks_per_node") == 1:
        return "inter"
    return "world"


def case_point(run: RunRecord, case: CaseResult) -> Point | None:
    """The point of one stored case, or None when it gives none (module docstring)."""
    if case.error is not None or "main" not in case.samples or case.params.get("duration_s"):
        return None
    params, metrics = case.params, case.metrics
    median = statistics.median(case.samples["main"].values_s)
    doubts = tuple(sorted(untrusted_codes(case.findings)))
    if case.suite == "preflight":
        return Point(op="sendrecv", dimension=SCOPES.get(str(metrics.get("scope")), run_dimension(run)), world_size=2,
                     size_bytes=float(params["size_bytes"]), time_s=median / 2.0, run_id=run.run_id, doubts=doubts)
    if case.suite != "collectives":
        return None
    dimension = str(params.get("dimension") or "world")
    if dimension == "world":
        dimension = run_dimension(run)
    return Point(op=str(params["op"]), dimension=dimension,
                 world_size=int(metrics.get("world_size") or 1), size_bytes=float(metrics.get("size_bytes",
                                                                                              params["size_bytes"])),
                 time_s=median, run_id=run.run_id, doubts=doubts)


def stored_points(store: Any, run_ids: Iterable[str]) -> tuple[list[RunRecord], list[Point]]:
    """The runs and every point of their collectives and preflight cases."""
    runs, points = [], []
    for run_id in run_ids:
        run = store.get_run(store.resolve_run_id(run_id))
        runs.append(run)
        for case in store.cases(run.run_id):
            if (point := case_point(run, case)) is not None:
                points.append(point)
    return runs, points


def group_points(points: Iterable[Point]) -> dict[tuple[str, str], list[Point]]:
    """Points by (op, dimension)."""
    grouped: dict[tuple[str, str], list[Point]] = {}
    for p in points:
        grouped.setdefault((p.op, p.dimension), []).append(p)
    return grouped


# The figures a simulator's compute and memory inputs come from, first found wins: P of a gemm
# sweep, then B of membw (or the gemm sweep's own copy).
DEVICE_FIGURES = {"peak_flop_per_s": ("gemm.ceiling",), "mem_bytes_per_s": ("membw.ceiling", "gemm.bandwidth_ceiling")}


def device_ceilings(store: Any, runs: Iterable[RunRecord]) -> dict[str, dict[str, Any]]:
    """The measured ``P`` (FLOP/s) and ``B`` (B/s) among the named runs' stored figures
    (``DEVICE_FIGURES``), each with the run and figure it came from and the codes of its
    findings (``contended``, ``invalid`` travel with the value); a key is absent when no named
    run measured it."""
    found: dict[str, dict[str, Any]] = {}
    stored = [(run, store.figures(run.run_id)) for run in runs]  # read once per run
    for key, names in DEVICE_FIGURES.items():
        for name in names:
            for run, figures in stored:
                figure = next((f for f in figures if f.name == name and f.value), None)
                if figure is not None and key not in found:
                    found[key] = {"value": float(figure.value), "run_id": run.run_id, "figure": name,
                                  "scope": figure.scope, "findings": sorted({x.code for x in figure.findings})}
    return found


def device_cases(store: Any, runs: Iterable[RunRecord]) -> dict[str, Any]:
    """What Calculon's compute and memory entries are built from, among the named runs: the
    GEMM sweep's shapes ``(work FLOP, achieved FLOP/s)`` that ran and passed (first timings),
    their dtype, membw's cold copies ``(bytes, B/s)`` that passed, and the device's memory
    (``provenance.device.memory_bytes``) where recorded."""
    shapes: list[tuple[float, float]] = []
    copies: list[tuple[float, float]] = []
    dtype, capacity = None, None
    for run in runs:
        capacity = capacity or (run.provenance.get("device") or {}).get("memory_bytes")
        for case in store.cases(run.run_id):
            p, m = case.params, case.metrics
            if not case.ok or p.get("again_of"):
                continue
            if case.suite == "gemm" and p.get("kind") == "shape" and m.get("work_flop") and m.get("achieved_flops"):
                shapes.append((float(m["work_flop"]), float(m["achieved_flops"])))
                dtype = dtype or p.get("dtype")
            elif (case.suite == "membw" and p.get("op") == "copy" and p.get("regime") != "warm"
                  and p.get("kind") != "ceiling" and p.get("bytes") and m.get("gbps")):
                copies.append((float(p["bytes"]), float(m["gbps"]) * 1e9))
    return {"shapes": shapes, "dtype": dtype, "copies": copies, "capacity_bytes": capacity}
