"""The rows the fleet charts draw, made small enough for a page whatever the fleet's size.

A rank-by-step heatmap of 1,024 ranks and 20 steps would be 20,480 SVG rectangles; of 16,384
ranks and 500 steps, eight million. So ranks and steps are binned first: at most
:data:`MAX_ROWS` rank bins and :data:`MAX_COLS` step bins (consecutive ranks, consecutive
steps), and each cell holds, per measure, the **maximum** over its ranks and steps and the rank
that has it (a straggler stays visible in a bin of 64). With 1,024 ranks there are 8 ranks to a
row; up to :data:`MAX_ROWS` ranks, one each.

Values are SI (seconds); the charts convert to µs for their axes. Never reads a file: takes a
:class:`parity.trace.fleet.folder.FleetFolder`.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from parity.trace.fleet.folder import FleetFolder, arrival_index

MAX_ROWS = 128  # rank bins of the heatmap
MAX_COLS = 64  # step bins of the heatmap
MAX_HIST_BINS = 40  # skew histogram bins (the same edges for every op)
# (field prefix, label): the heatmap's measures, per rank and step
MEASURES = (("lateness", "median lateness at the step's collectives"), ("step", "step time"),
            ("compute", "compute time"), ("idle", "idle time"))


def group_median(keys: np.ndarray, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct ``keys`` (sorted) and the median of ``values`` within each (the mean of
    the two middle values for an even count): one sort, no Python loop."""
    if not len(keys):
        return keys[:0], np.zeros(0)
    order = np.lexsort((values, keys))
    k, v = keys[order], values[order].astype(np.float64)
    starts = np.flatnonzero(np.r_[True, k[1:] != k[:-1]])
    counts = np.diff(np.r_[starts, len(k)])
    return k[starts], (v[starts + (counts - 1) // 2] + v[starts + counts // 2]) / 2


def _cell_max(cell: np.ndarray, values: np.ndarray, ranks: np.ndarray) -> dict[int, tuple[float, int]]:
    """Per cell id: the largest finite value and the (lowest) rank that has it."""
    ok = np.isfinite(values)
    cell, values, ranks = cell[ok], values[ok], ranks[ok]
    if not len(cell):
        return {}
    order = np.lexsort((-ranks, values, cell))  # per cell, the largest value last; ties: lowest rank last
    cell, values, ranks = cell[order], values[order], ranks[order]
    ends = np.flatnonzero(np.r_[cell[1:] != cell[:-1], True])
    return {int(cell[i]): (float(values[i]), int(ranks[i])) for i in ends}


def _bins(ids: np.ndarray, limit: int) -> tuple[np.ndarray, int]:
    """The sorted distinct ``ids`` and how many go in one bin so that at most ``limit`` bins."""
    distinct = np.unique(ids)
    return distinct, max(1, math.ceil(len(distinct) / limit))


def rank_step_values(folder: FleetFolder) -> dict[str, np.ndarray]:
    """Per rank and step of the steps table: rank, step, and each measure in ns (lateness: the
    median ``lateness_ns`` of the rank's arrivals at the step's collectives, NaN without any)."""
    steps = folder.table("steps")
    rank = steps["rank"].astype(np.int64)
    step = steps["step"].astype(np.int64)
    out = {"rank": rank, "step": step, "step_ns": (steps["end_ns"] - steps["start_ns"]).astype(np.float64),
           "compute_ns": steps["compute_ns"].astype(np.float64), "idle_ns": steps["idle_ns"].astype(np.float64)}
    lateness = np.full(len(rank), np.nan)
    index = arrival_index(folder)
    arrivals = folder.table("arrivals")
    coll_step = folder.table("collectives")["step"].astype(np.int64)
    known = index >= 0
    a_rank = arrivals["rank"].astype(np.int64)[known]
    a_step = coll_step[index[known]]
    inside = a_step >= 0
    if len(rank) and inside.any():
        span = int(max(step.max(), a_step.max())) + 1
        keys, medians = group_median(a_rank[inside] * span + a_step[inside],
                                     arrivals["lateness_ns"][known][inside].astype(np.float64))
        pos = np.clip(np.searchsorted(keys, rank * span + step), 0, len(keys) - 1)
        hit = keys[pos] == rank * span + step
        lateness[hit] = medians[pos[hit]]
    out["lateness_ns"] = lateness
    return out


def _label(lo: int, hi: int) -> str:
    return str(lo) if lo == hi else f"{lo}–{hi}"


def heatmap_cells(folder: FleetFolder, *, max_rows: int = MAX_ROWS, max_cols: int = MAX_COLS) -> dict[str, Any]:
    """The heatmap's cells (module doc) and how they were binned: ``rows`` (one per cell with
    ``rank_lo..rank_hi``, ``step_lo..step_hi``, and per measure ``<m>_s`` and ``<m>_rank``),
    ``ranks_per_row``, ``steps_per_col``."""
    v = rank_step_values(folder)
    ranks, per_row = _bins(v["rank"], max_rows)
    steps, per_col = _bins(v["step"], max_cols)
    row = np.searchsorted(ranks, v["rank"]) // per_row
    col = np.searchsorted(steps, v["step"]) // per_col
    n_cols = max(1, math.ceil(len(steps) / per_col))
    cell = row * n_cols + col
    best = {m: _cell_max(cell, v[f"{m}_ns"], v["rank"]) for m, _ in MEASURES}
    rows = []
    for c in np.unique(cell).tolist():
        r, k = divmod(c, n_cols)
        r_ids, s_ids = ranks[r * per_row:(r + 1) * per_row], steps[k * per_col:(k + 1) * per_col]
        item: dict[str, Any] = {"rank_lo": int(r_ids[0]), "rank_hi": int(r_ids[-1]) + 1,
                                "ranks": _label(int(r_ids[0]), int(r_ids[-1])), "step_lo": int(s_ids[0]),
                                "step_hi": int(s_ids[-1]) + 1, "steps": _label(int(s_ids[0]), int(s_ids[-1]))}
        for m, _ in MEASURES:
            value, who = best[m].get(c, (None, None))
            item[f"{m}_s"] = None if value is None else value / 1e9
            item[f"{m}_rank"] = who
        rows.append(item)
    return {"rows": rows, "ranks_per_row": per_row, "steps_per_col": per_col, "ranks": len(ranks),
            "steps": len(steps)}


def step_rows(folder: FleetFolder, *, limit: int = 500) -> list[dict[str, Any]]:
    """Per step (the first ``limit``): ranks, median and max step time with the rank of the max,
    the max compute time with its rank, the largest median lateness with its rank."""
    v = rank_step_values(folder)
    out = []
    for s in np.unique(v["step"])[:limit].tolist():
        at = v["step"] == s
        ranks = v["rank"][at]
        row: dict[str, Any] = {"step": s, "ranks": int(at.sum()),
                               "step_median_s": float(np.median(v["step_ns"][at])) / 1e9}
        for m in ("step", "compute", "lateness"):
            values = v[f"{m}_ns"][at]
            ok = np.isfinite(values)
            if ok.any():
                i = int(np.argmax(np.where(ok, values, -np.inf)))
                row[f"{m}_max_s"], row[f"{m}_max_rank"] = float(values[i]) / 1e9, int(ranks[i])
            else:
                row[f"{m}_max_s"], row[f"{m}_max_rank"] = None, None
        out.append(row)
    return out


def skew_histogram(folder: FleetFolder, *, bins: int = MAX_HIST_BINS) -> list[dict[str, Any]]:
    """Collectives per skew bin and op: the same edges for every op (from all skews, at most
    ``bins``, about sqrt(n) of them), empty bins left out; edges in seconds."""
    coll = folder.table("collectives")
    skew = coll["skew_ns"].astype(np.float64)
    if not len(skew):
        return []
    edges = np.histogram_bin_edges(skew, bins=int(min(bins, max(1, math.ceil(math.sqrt(len(skew)))))))
    rows = []
    for op in sorted(set(coll["op"].tolist())):
        counts, _ = np.histogram(skew[coll["op"] == op], bins=edges)
        rows += [{"op": op, "start_s": float(edges[i]) / 1e9, "end_s": float(edges[i + 1]) / 1e9,
                  "collectives": int(n)} for i, n in enumerate(counts.tolist()) if n]
    return rows
