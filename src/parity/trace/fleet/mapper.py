"""The map of the fleet analysis: one rank's trace to its five small tables.

:func:`summarize_rank` reads one rank (``load_trace([path])``), analyses it with the code of
``parity trace analyze`` (:func:`parity.trace.analysis.analyze`, so its window, streams,
categories and rank figures are that command's, exactly) and writes
``OUT/map/<table>/rank-NNNNNN.parquet`` for each of ``MAP_TABLES``, columns, types and units
as :mod:`parity.trace.fleet.tables` gives them.

The ``steps`` table: one row per step with device activity tied to it (a device row belongs to
the step whose marker its launching call falls in, :func:`parity.trace.window.device_steps`).
A step's span ``[start_ns, end_ns)`` is its device time, from the first start to the last end
of its device rows (what ``parity trace analyze --steps N-N`` takes as its window), and its
figures are that command's over the span, rows clipped to it:

- ``compute_ns = |∪ compute rows|`` (device rows neither communication nor memory; on Ascend
  the profiler's Computing, its operator tasks),
- ``communication_ns = |∪ communication rows|`` (on Ascend the HCCL operations),
- ``exposed_communication_ns = communication_ns - |compute ∩ communication|``,
- ``idle_ns = (end_ns - start_ns) - |∪ all device rows|``.

Device work of one step can run into the next step's span, so steps' spans may overlap and
their figures need not sum to the window's.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

# the analysis's own clipping and compute/communication sets, so a step's figures are those of
# ``parity trace analyze --steps N-N`` by construction
from parity.trace.analysis import _ascend_sets, _Clipped, _comm, analyze
from parity.trace.ascend_steps import is_ascend
from parity.trace.categories import Categorization, Rules, categorize, load_rules
from parity.trace.fleet.collectives import collective_rows
from parity.trace.fleet.tables import MAP_TABLES, arrow_schema
from parity.trace.intervals import union_length
from parity.trace.load import load_trace
from parity.trace.metrics import idle_ns
from parity.trace.results import RankAnalysis
from parity.trace.table import ActivityTable
from parity.trace.window import Window, device_steps

MAP_DIR = "map"


def rank_file(out: str | Path, table: str, rank: int) -> Path:
    """``OUT/map/<table>/rank-NNNNNN.parquet``."""
    return Path(out) / MAP_DIR / table / f"rank-{rank:06d}.parquet"


def step_spans(table: ActivityTable, row_steps: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(steps, start_ns, end_ns)``: each step's device time (module docstring), by step."""
    rows = np.flatnonzero(table.device_mask() & (row_steps >= 0))
    if not len(rows):
        return (np.empty(0, np.int64),) * 3
    steps, inverse = np.unique(row_steps[rows], return_inverse=True)
    start = np.full(len(steps), np.iinfo(np.int64).max, dtype=np.int64)
    end = np.full(len(steps), np.iinfo(np.int64).min, dtype=np.int64)
    np.minimum.at(start, inverse, table.start_ns[rows])
    np.maximum.at(end, inverse, table.end_ns[rows])
    return steps, start, end


def step_rows(table: ActivityTable, cats: Categorization, rank: int) -> dict[str, np.ndarray]:
    """The ``steps`` table's columns (module docstring), by step number."""
    steps, starts, ends = step_spans(table, device_steps(table))
    device = np.flatnonzero(table.device_mask())
    device = device[np.argsort(table.start_ns[device], kind="stable")]
    first = table.start_ns[device]
    longest = int((table.end_ns[device] - first).max()) if len(device) else 0
    sets = _ascend_sets(table, cats) if is_ascend(table) else None
    figures = []
    for step, lo, hi in zip(steps.tolist(), starts.tolist(), ends.tolist()):
        near = device[np.searchsorted(first, lo - longest, side="left"): np.searchsorted(first, hi, side="right")]
        clipped = _Clipped(table, near, Window(start_ns=lo, end_ns=hi, source="steps", detail=""), cats)
        comm = _comm(clipped, cats, sets)
        busy = union_length(clipped.start, clipped.end)
        figures.append((comm.compute_ns, comm.communication_ns, comm.exposed_communication_ns, idle_ns(busy, hi - lo)))
    compute, communication, exposed, idle = (np.array(f, dtype=np.int64).reshape(-1) for f in zip(*figures)) \
        if figures else (np.empty(0, np.int64),) * 4  # fmt: skip
    return {
        "rank": np.full(len(steps), rank, dtype=np.int32), "step": steps.astype(np.int32),
        "start_ns": starts, "end_ns": ends, "compute_ns": compute, "communication_ns": communication,
        "exposed_communication_ns": exposed, "idle_ns": idle,
    }  # fmt: skip


def rank_tables(table: ActivityTable, *, rules=None) -> dict[str, dict[str, np.ndarray]]:
    """The five map tables of one rank's loaded ``table``, as columns; ``rules``: a
    :class:`Rules`, a rules file or None (the defaults), as for :func:`analyze`."""
    rules = rules if isinstance(rules, Rules) else load_rules(rules)
    cats = categorize(table, rules)
    result = analyze(table, rules=rules, cats=cats)
    r: RankAnalysis = result.ranks[0]
    steps = step_rows(table, cats, r.rank)
    meta = table.meta
    source = meta.get("source", "")
    info = {
        "rank": [r.rank], "node": [str(meta.get("node") or meta.get("hostname") or "")],
        "source": [str(source)], "format": [result.format], "window_start_ns": [r.window.start_ns],
        "window_end_ns": [r.window.end_ns], "window_source": [r.window.source],
        "device_busy_ns": [r.device.busy_ns], "device_idle_ns": [r.device.idle_ns],
        "compute_ns": [r.comm.compute_ns], "communication_ns": [r.comm.communication_ns],
        "exposed_communication_ns": [r.comm.exposed_communication_ns], "steps": [len(steps["step"])],
        "warnings": [len(result.warnings)],
    }  # fmt: skip
    streams = {key: [getattr(s, key) for s in r.streams]
               for key in ("rank", "device", "stream", "kernels", "busy_ns", "busy_fraction", "share_of_summed")}
    categories = {"rank": [r.rank] * len(r.categories), "category": [c.category for c in r.categories],
                  "time_ns": [c.time_ns for c in r.categories],
                  "share_of_busy": [float(c.share_of_busy) for c in r.categories]}  # fmt: skip
    return {"rank_info": info, "streams": streams, "categories": categories, "steps": steps,
            "collectives": collective_rows(table, cats)}  # fmt: skip


def write_table(path: Path, name: str, columns: dict) -> int:
    """Write one map table with exactly its ``MAP_TABLES`` schema (atomically: a temporary
    file renamed); its row count."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    schema = arrow_schema(MAP_TABLES[name])
    arrays = [pa.array(list(columns[f.name]) if isinstance(columns[f.name], list) else columns[f.name], type=f.type)
              for f in schema]  # fmt: skip
    data = pa.Table.from_arrays(arrays, schema=schema)
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f".{path.name}.{os.getpid()}.partial")
    pq.write_table(data, partial)
    os.replace(partial, path)
    return data.num_rows


def summarize_rank(path: str, out: str, *, rules=None) -> dict:
    """Read, analyse and write one rank (module docstring); ``{"rank", "rows", "source",
    "format", "node"}`` with ``rows`` the row count of each table written."""
    table = load_trace([path], workers=1)
    tables = rank_tables(table, rules=rules)
    rank = int(tables["rank_info"]["rank"][0])
    rows = {name: write_table(rank_file(out, name, rank), name, tables[name]) for name in MAP_TABLES}
    info = tables["rank_info"]
    return {"rank": rank, "rows": rows, "source": info["source"][0], "format": info["format"][0],
            "node": info["node"][0]}  # fmt: skip
