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

# the analysis's own compute/communication sets, so a step's figures are those of
# ``parity trace analyze --steps N-N``
from parity.trace.analysis import _ascend_sets, analyze, clip_to_spans, compute_comm_rows
from parity.trace.ascend_steps import is_ascend
from parity.trace.categories import Categorization, Rules, categorize, load_rules
from parity.trace.fleet.collectives import collective_rows
from parity.trace.fleet.tables import MAP_TABLES, arrow_schema
from parity.trace.intervals import grouped_union_lengths
from parity.trace.load import load_trace
from parity.trace.results import RankAnalysis
from parity.trace.table import ActivityTable
from parity.trace.window import device_steps

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


def _step_candidates(table: ActivityTable, starts: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(step index, row)`` of every device row that may reach into each step's span: the rows
    starting in ``[start - longest row, end]`` (what the analysis's window takes), all steps at once."""
    device = np.flatnonzero(table.device_mask())
    device = device[np.argsort(table.start_ns[device], kind="stable")]
    first = table.start_ns[device]
    longest = int((table.end_ns[device] - first).max()) if len(device) else 0
    lo = np.searchsorted(first, starts - longest, side="left")
    counts = np.searchsorted(first, ends, side="right") - lo
    step = np.repeat(np.arange(len(starts)), counts)
    within = np.arange(int(counts.sum())) - np.repeat(np.cumsum(counts) - counts, counts)
    return step, device[np.repeat(lo, counts) + within]


def step_rows(table: ActivityTable, cats: Categorization, rank: int,
              sets: tuple[np.ndarray, np.ndarray] | None = None) -> dict[str, np.ndarray]:
    """The ``steps`` table's columns (module docstring), by step number; ``sets``: the Ascend
    Computing and Communication rows (:func:`parity.trace.analysis._ascend_sets`) on an Ascend
    table.

    Every step at once: each step's rows clipped to its span as the analysis clips a window
    (:func:`parity.trace.analysis.clip_to_spans`), the compute and communication rows the
    analysis's (:func:`parity.trace.analysis.compute_comm_rows`), then four union lengths per step from one
    grouped merge: all rows (busy), compute ``K``, communication ``C`` and ``K ∪ C``, with
    ``|K ∩ C| = |K| + |C| - |K ∪ C|`` (exact in integer ns), so the figures are
    :func:`parity.trace.analysis._comm`'s for each span."""
    steps, starts, ends = step_spans(table, device_steps(table))
    compute_row, comm_row = compute_comm_rows(cats, sets)
    step, rows = _step_candidates(table, starts, ends)
    inside, s, e = clip_to_spans(table.start_ns[rows], table.end_ns[rows], starts[step], ends[step])
    step, rows = step[inside], rows[inside]
    compute, comm = compute_row[rows], comm_row[rows]
    members = [np.ones(len(rows), dtype=bool), compute, comm, compute | comm]  # busy, K, C, K ∪ C
    groups = np.concatenate([step[m] * 4 + i for i, m in enumerate(members)])
    lengths = grouped_union_lengths(groups, np.concatenate([s[m] for m in members]),
                                    np.concatenate([e[m] for m in members]), 4 * len(steps)).reshape(-1, 4)  # fmt: skip
    busy, compute_ns, communication_ns, either = (lengths[:, i].astype(np.int64) for i in range(4))
    exposed = communication_ns - (compute_ns + communication_ns - either)  # |C| - |K ∩ C|
    idle = (ends - starts) - busy
    assert (idle >= 0).all() and (exposed >= 0).all()
    return {
        "rank": np.full(len(steps), rank, dtype=np.int32), "step": steps.astype(np.int32),
        "start_ns": starts, "end_ns": ends, "compute_ns": compute_ns, "communication_ns": communication_ns,
        "exposed_communication_ns": exposed, "idle_ns": idle,
    }  # fmt: skip


def rank_tables(table: ActivityTable, *, rules=None) -> dict[str, dict[str, np.ndarray]]:
    """The five map tables of one rank's loaded ``table``, as columns; ``rules``: a
    :class:`Rules`, a rules file or None (the defaults), as for :func:`analyze`."""
    rules = rules if isinstance(rules, Rules) else load_rules(rules)
    cats = categorize(table, rules)
    result = analyze(table, rules=rules, cats=cats)
    r: RankAnalysis = result.ranks[0]
    steps = step_rows(table, cats, r.rank, _ascend_sets(table, cats) if is_ascend(table) else None)
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
