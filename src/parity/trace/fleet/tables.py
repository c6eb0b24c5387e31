"""The fleet analysis's tables: their columns, types and units, in one place.

The map writes one Parquet file per rank and table (``OUT/map/<table>/rank-NNNNNN.parquet``);
the reduce reads them and writes the fleet's tables (``OUT/<table>.parquet``). Every column
carries its unit in the field metadata (``unit``), so a reader (DuckDB, pyarrow, Spark) never
guesses. Times are integer ns on the trace's own clock; ranks share one clock (the traces of
one job, each written on a host whose clock the job trusts: the same assumption every fleet
tool makes); bytes are B; rates B/s.

Definitions of every figure: ``docs/definitions.md`` (Fleet trace analysis).
"""

from __future__ import annotations

# (column, arrow type name, unit or "" for a plain label or count)
Column = tuple[str, str, str]

# --- map: one rank's summary, one file per rank and table ---------------------------------
MAP_TABLES: dict[str, tuple[Column, ...]] = {
    # one row: the rank and its window (the same figures `parity trace analyze` prints)
    "rank_info": (
        ("rank", "int32", ""), ("node", "string", ""), ("source", "string", ""),
        ("format", "string", ""), ("window_start_ns", "int64", "ns"), ("window_end_ns", "int64", "ns"),
        ("window_source", "string", ""), ("device_busy_ns", "int64", "ns"), ("device_idle_ns", "int64", "ns"),
        ("compute_ns", "int64", "ns"), ("communication_ns", "int64", "ns"),
        ("exposed_communication_ns", "int64", "ns"), ("steps", "int32", ""), ("warnings", "int32", ""),
    ),
    # one row per device stream in the window
    "streams": (
        ("rank", "int32", ""), ("device", "int32", ""), ("stream", "int64", ""), ("kernels", "int64", ""),
        ("busy_ns", "int64", "ns"), ("busy_fraction", "float64", "1"), ("share_of_summed", "float64", "1"),
    ),
    # one row per category in the window
    "categories": (
        ("rank", "int32", ""), ("category", "string", ""), ("time_ns", "int64", "ns"),
        ("share_of_busy", "float64", "1"),
    ),
    # one row per step (from step markers; none when the trace has no steps)
    "steps": (
        ("rank", "int32", ""), ("step", "int32", ""), ("start_ns", "int64", "ns"), ("end_ns", "int64", "ns"),
        ("compute_ns", "int64", "ns"), ("communication_ns", "int64", "ns"),
        ("exposed_communication_ns", "int64", "ns"), ("idle_ns", "int64", "ns"),
    ),
    # one row per collective operation the rank took part in (device side)
    "collectives": (
        ("rank", "int32", ""), ("group", "string", ""), ("group_ranks", "string", ""), ("op", "string", ""),
        ("seq", "int64", ""), ("name", "string", ""), ("device", "int32", ""), ("stream", "int64", ""),
        ("start_ns", "int64", "ns"), ("end_ns", "int64", "ns"), ("bytes", "int64", "B"),
        ("dtype", "string", ""), ("in_nelems", "int64", ""), ("out_nelems", "int64", ""),
        ("in_split", "string", ""), ("out_split", "string", ""), ("step", "int32", ""),
    ),
}

# --- reduce: the fleet's figures, one file per table -------------------------------------
FLEET_TABLES: dict[str, tuple[Column, ...]] = {
    # one row per matched collective (group, seq)
    "collectives": (
        ("group", "string", ""), ("seq", "int64", ""), ("op", "string", ""), ("members", "int32", ""),
        ("step", "int32", ""), ("first_arrival_ns", "int64", "ns"), ("last_arrival_ns", "int64", "ns"),
        ("skew_ns", "int64", "ns"), ("last_rank", "int32", ""), ("comm_ns", "int64", "ns"),
        ("bytes", "int64", "B"), ("algbw_bps", "float64", "B/s"), ("busbw_bps", "float64", "B/s"),
        ("scope", "string", ""), ("size_imbalance", "float64", "1"),
    ),
    # one row per rank and matched collective
    "arrivals": (
        ("group", "string", ""), ("seq", "int64", ""), ("rank", "int32", ""), ("arrival_ns", "int64", "ns"),
        ("end_ns", "int64", "ns"), ("wait_ns", "int64", "ns"), ("lateness_ns", "int64", "ns"),
        ("last", "bool", ""),
    ),
    # one row per rank
    "ranks": (
        ("rank", "int32", ""), ("node", "string", ""), ("collectives", "int64", ""), ("times_last", "int64", ""),
        ("wait_ns", "int64", "ns"), ("compute_ns", "int64", "ns"), ("communication_ns", "int64", "ns"),
        ("idle_ns", "int64", "ns"), ("median_lateness_ns", "int64", "ns"), ("steps", "int32", ""),
        ("window_ns", "int64", "ns"),
    ),
    # one row per rank and step (the heatmap's cells)
    "steps": MAP_TABLES["steps"],
    # one row per rank the vote considered, most often last first
    "stragglers": (
        ("rank", "int32", ""), ("node", "string", ""), ("times_last", "int64", ""),
        ("share_last", "float64", "1"), ("expected_share", "float64", "1"),
        ("median_lateness_ns", "int64", "ns"), ("step_cost_ns", "int64", "ns"),
        ("step_ns", "int64", "ns"), ("method", "string", ""), ("straggler", "bool", ""),
        # added by the reduce: the vote's third test; the step cost's mean over steps
        ("median_margin_ns", "int64", "ns"), ("mean_step_cost_ns", "int64", "ns"),
        # added later: the time test (the time it kept its collectives waiting, and its fair share)
        ("held_ns", "int64", "ns"), ("fair_held_ns", "int64", "ns"),
        # added later: the collectives it was last at that a clock offset can explain; a straggler named on them
        ("clock_suspect_last", "int64", ""), ("in_doubt", "bool", ""),
    ),
}


def arrow_schema(columns: tuple[Column, ...]):
    """The pyarrow schema of a table, each field's unit in its metadata (pyarrow imported here
    only, so the trace package imports without it)."""
    import pyarrow as pa

    # "bool" is pyarrow's bool_() (pa.bool does not exist)
    return pa.schema([pa.field(name, getattr(pa, "bool_" if kind == "bool" else kind)(),
                               metadata={"unit": unit} if unit else None)
                      for name, kind, unit in columns])
