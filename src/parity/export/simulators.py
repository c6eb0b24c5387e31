"""ASTRA-sim, Calculon and Vidur inputs from α-β fits and measured points.

Schemas, as their public repositories document them (field for field; tests/cli/test_export.py
checks each):

- ASTRA-sim analytical network (``network.yml``): ``topology`` (one per dimension: ``Ring``,
  ``FullyConnected``, ``Switch``), ``npus_count`` (ranks per dimension), ``bandwidth`` (GB/s per
  dimension), ``latency`` (ns per dimension). ASTRA-sim system (``system.json``):
  ``scheduling-policy``, ``endpoint-delay``, ``active-chunks-per-dimension``,
  ``preferred-dataset-splits``, ``all-reduce-implementation``, ``all-gather-implementation``,
  ``reduce-scatter-implementation``, ``all-to-all-implementation`` (one per dimension),
  ``collective-optimization``, ``local-mem-bw`` (GB/s), ``boost-mode``, ``roofline-enabled``,
  ``peak-perf`` (TFLOP/s).
- Calculon system (``networks``, one tier each): ``bandwidth`` (GB/s), ``efficiency`` (0..1],
  ``size`` (processors in the tier), ``latency`` (s), ``ops`` (``p2p``, ``reduce_scatter``,
  ``all_gather``, ``all_reduce``: scalars), ``collective_minus1_scalar``, ``must_be_filled``,
  ``processor_usage`` [0, 1).
- Vidur network profiles (``all_reduce.csv``, ``send_recv.csv``): an unnamed index column, then
  ``time_stats.<op>.min/max/mean/median/std`` (ms), ``rank``, ``num_workers``, ``size`` (B),
  ``collective``, ``devices_per_node``, ``max_devices_per_node``.

Mapping: a dimension's bandwidth is the fit's ``β`` (bus B/s) and its latency ``α``; Calculon's
efficiency is 1 (β is already measured, not a datasheet peak) and its op scalars 1; Vidur's rows
are the measured points themselves (times in ms, every statistic over the case's samples when
given, else the median in each column).
"""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence
from typing import Any

from parity.metrics.alphabeta import AlphaBetaFit, Point

GIGA = 1e9
DIMENSION_ORDER = ("intra", "world", "inter")
ASTRA_TOPOLOGY = {"intra": "FullyConnected", "world": "Ring", "inter": "Switch"}
CALCULON_OPS = ("p2p", "reduce_scatter", "all_gather", "all_reduce")
VIDUR_OPS = {"all_reduce": "all_reduce", "sendrecv": "send_recv"}


def _dimensions(fits: Sequence[AlphaBetaFit], op: str = "all_reduce") -> list[AlphaBetaFit]:
    """One fit per dimension, scale-up first: ``op``'s, else any collective's."""
    chosen: dict[str, AlphaBetaFit] = {}
    for fit in sorted(fits, key=lambda f: f.op != op):
        chosen.setdefault(fit.dimension, fit)
    return [chosen[d] for d in DIMENSION_ORDER if d in chosen]


def _ranks(fit: AlphaBetaFit, ranks_per_dimension: dict[str, int]) -> int:
    return int(ranks_per_dimension.get(fit.dimension) or max(fit.world_sizes or (2,)))


def astra_network_yaml(fits: Sequence[AlphaBetaFit], *, ranks_per_dimension: dict[str, int]) -> str:
    """ASTRA-sim's analytical ``network.yml`` (module docstring), one dimension per fit."""
    dims = _dimensions(fits)
    topology = ", ".join(ASTRA_TOPOLOGY[f.dimension] for f in dims)
    npus = ", ".join(str(_ranks(f, ranks_per_dimension)) for f in dims)
    bandwidth = ", ".join(f"{f.beta_bps / GIGA:.6g}" for f in dims)
    latency = ", ".join(f"{max(f.alpha_s, 0.0) * 1e9:.6g}" for f in dims)
    return (f"topology: [ {topology} ]\nnpus_count: [ {npus} ]\nbandwidth: [ {bandwidth} ]  # GB/s\n"
            f"latency: [ {latency} ]  # ns\n")


def astra_system(fits: Sequence[AlphaBetaFit], *, peak_flop_per_s: float | None,
                 mem_bytes_per_s: float | None) -> dict[str, Any]:
    """ASTRA-sim's ``system.json`` (module docstring); peak and memory bandwidth from stored
    gemm/membw figures where given (roofline off without both)."""
    dims = max(len(_dimensions(fits)), 1)
    roofline = peak_flop_per_s is not None and mem_bytes_per_s is not None
    return {"scheduling-policy": "LIFO", "endpoint-delay": 10, "active-chunks-per-dimension": 1,
            "preferred-dataset-splits": 4, "all-reduce-implementation": ["ring"] * dims,
            "all-gather-implementation": ["ring"] * dims, "reduce-scatter-implementation": ["ring"] * dims,
            "all-to-all-implementation": ["direct"] * dims, "collective-optimization": "localBWAware",
            "local-mem-bw": round((mem_bytes_per_s or 0.0) / GIGA, 3), "boost-mode": 0,
            "roofline-enabled": 1 if roofline else 0, "peak-perf": round((peak_flop_per_s or 0.0) / 1e12, 6)}


def calculon_networks(fits: Sequence[AlphaBetaFit], *, ranks_per_dimension: dict[str, int]) -> list[dict[str, Any]]:
    """Calculon's ``networks`` tiers (module docstring), scale-up first."""
    tiers = []
    for index, fit in enumerate(_dimensions(fits)):
        tiers.append({"bandwidth": fit.beta_bps / GIGA, "efficiency": 1.0, "size": _ranks(fit, ranks_per_dimension),
                      "latency": max(fit.alpha_s, 0.0), "ops": {op: 1.0 for op in CALCULON_OPS},
                      "collective_minus1_scalar": False, "must_be_filled": index == 0, "processor_usage": 0.0})
    return tiers


VIDUR_COLUMNS = ("min", "max", "mean", "median", "std")


def vidur_csv(op: str, points: Sequence[Point], *, devices_per_node: int, max_devices_per_node: int,
              stats: dict[tuple[str, float, int], dict[str, float]] | None = None) -> str:
    """Vidur's profile CSV for ``op`` (``all_reduce`` or ``sendrecv``) from measured points."""
    name = VIDUR_OPS[op]
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["", *[f"time_stats.{name}.{c}" for c in VIDUR_COLUMNS], "rank", "num_workers", "size",
                     "collective", "devices_per_node", "max_devices_per_node"])
    rows = sorted((p for p in points if p.op == op), key=lambda p: (p.world_size, p.size_bytes))
    for index, p in enumerate(rows):
        given = (stats or {}).get((p.run_id, p.size_bytes, p.world_size)) or {}
        values = [given.get(c, p.time_s if c != "std" else 0.0) * (1e3 if c != "std" else 1e3) for c in VIDUR_COLUMNS]
        writer.writerow([index, *values, 0, p.world_size, int(p.size_bytes), name, devices_per_node,
                         max_devices_per_node])
    return out.getvalue()


# Calculon's efficiency curves: ``[[threshold, efficiency], ...]``, thresholds descending, the
# last 0; an operation of size ``x`` takes the efficiency of the first threshold ``<= x``.
MATRIX_GFLOP_THRESHOLDS = (64.0, 8.0, 1.0, 0.125, 0.015625, 0.0)
MEMORY_MB_THRESHOLDS = (100.0, 10.0, 1.0, 0.1, 0.0)


def efficiency_curve(points: Sequence[tuple[float, float]], thresholds: Sequence[float]) -> list[list[float]]:
    """Calculon's curve from measured ``(size, efficiency)`` points: for each threshold ``T_i``
    (descending), the median efficiency of the points with ``T_i <= size < T_{i-1}``; thresholds
    with no point are left out, and the smallest one kept is written as 0 (an operation smaller
    than any measured takes the smallest measured one's efficiency). Efficiencies are capped at 1.
    Example: points (100, 0.9), (2, 0.5), (3, 0.7), (0.01, 0.2) with thresholds (64, 1, 0.1, 0)
    give [[64, 0.9], [1, 0.6], [0, 0.2]]."""
    curve: list[list[float]] = []
    upper = float("inf")
    for threshold in thresholds:
        inside = sorted(min(e, 1.0) for s, e in points if threshold <= s < upper)
        upper = threshold
        if inside:
            middle = len(inside) // 2
            median = inside[middle] if len(inside) % 2 else (inside[middle - 1] + inside[middle]) / 2
            curve.append([threshold, round(median, 6)])
    if curve:
        curve[-1][0] = 0.0
    return curve


def calculon_matrix(shapes: Sequence[tuple[float, float]], *, peak_flop_per_s: float, dtype: str) -> dict[str, Any]:
    """Calculon's ``matrix``: ``tflops`` = ``P`` and ``gflops_efficiency[dtype]`` from the GEMM
    sweep's shapes ``(work FLOP, achieved FLOP/s)``: efficiency = achieved / ``P`` by GFLOP of
    work (``efficiency_curve`` over ``MATRIX_GFLOP_THRESHOLDS``)."""
    points = [(work / 1e9, rate / peak_flop_per_s) for work, rate in shapes]
    return {"tflops": round(peak_flop_per_s / 1e12, 6),
            "gflops_efficiency": {dtype: efficiency_curve(points, MATRIX_GFLOP_THRESHOLDS)}}


def calculon_memory(transfers: Sequence[tuple[float, float]], *, bandwidth_bps: float,
                    capacity_bytes: float | None) -> dict[str, Any]:
    """Calculon's ``mem1``: ``GBps`` = ``B``, ``GiB`` = the device's memory when recorded, and
    ``MB_efficiency`` from membw's copies ``(bytes, B/s)``: efficiency = rate / ``B`` by MB
    (``efficiency_curve`` over ``MEMORY_MB_THRESHOLDS``)."""
    points = [(size / 1e6, rate / bandwidth_bps) for size, rate in transfers]
    memory: dict[str, Any] = {"GBps": round(bandwidth_bps / GIGA, 3),
                              "MB_efficiency": efficiency_curve(points, MEMORY_MB_THRESHOLDS)}
    if capacity_bytes:
        memory["GiB"] = round(capacity_bytes / 2**30, 3)
    return memory
