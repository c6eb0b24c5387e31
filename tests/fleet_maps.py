"""Map tables written straight from a synthetic simulation, by the contract of
``parity.trace.fleet.tables`` (the reduce's input without reading any trace)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from parity.trace.fleet.synthetic import ELEMENT_BYTES, Simulation
from parity.trace.fleet.tables import MAP_TABLES, arrow_schema


def write_map_table(out: Path, table: str, rank: int, data: dict) -> None:
    """``out/map/<table>/rank-NNNNNN.parquet`` with the contract's schema."""
    folder = Path(out) / "map" / table
    folder.mkdir(parents=True, exist_ok=True)
    schema = arrow_schema(MAP_TABLES[table])
    arrays = [pa.array(data[f.name], type=f.type) for f in schema]
    pq.write_table(pa.Table.from_arrays(arrays, schema=schema), str(folder / f"rank-{rank:06d}.parquet"))


def collective_bytes(op: np.ndarray, in_n: np.ndarray, out_n: np.ndarray) -> np.ndarray:
    """nccl-tests' S: the buffer of all_reduce, the gathered output of all_gather."""
    return np.where(op == "allgather", out_n, in_n) * ELEMENT_BYTES


def write_maps(out: Path, sim: Simulation, *, nodes: dict[int, str] | None = None) -> None:
    """Every rank's rank_info, steps and collectives tables of ``sim``."""
    for rank in range(sim.ranks):
        c = np.flatnonzero(sim.c_rank == rank)
        k = np.flatnonzero(sim.k_rank == rank)
        c = c[np.lexsort((sim.c_start[c], sim.c_group[c].astype(str)))]
        n = len(c)
        compute = int((sim.k_end[k] - sim.k_start[k]).sum())
        comm = int((sim.c_end[c] - sim.c_start[c]).sum())
        start, end = int(sim.k_start[k].min()), int(sim.c_end[c].max())
        steps = np.unique(sim.k_step[k])
        write_map_table(out, "rank_info", rank, {
            "rank": [rank], "node": [(nodes or {}).get(rank, "")], "source": [f"rank-{rank:06d}.json.gz"],
            "format": ["kineto"], "window_start_ns": [start], "window_end_ns": [end], "window_source": ["steps"],
            "device_busy_ns": [compute + comm], "device_idle_ns": [end - start - compute - comm],
            "compute_ns": [compute], "communication_ns": [comm], "exposed_communication_ns": [comm],
            "steps": [len(steps)], "warnings": [0]})
        s_start = [int(sim.k_start[k][sim.k_step[k] == s].min()) for s in steps]
        s_end = [int(sim.c_end[c][sim.c_step[c] == s].max()) for s in steps]
        write_map_table(out, "steps", rank, {
            "rank": [rank] * len(steps), "step": steps, "start_ns": s_start, "end_ns": s_end,
            "compute_ns": [0] * len(steps), "communication_ns": [0] * len(steps),
            "exposed_communication_ns": [0] * len(steps), "idle_ns": [0] * len(steps)})
        groups = sim.c_group[c].astype(str)
        write_map_table(out, "collectives", rank, {
            "rank": [rank] * n, "group": groups,
            "group_ranks": ["[" + ", ".join(map(str, sim.groups[g])) + "]" for g in groups],
            "op": sim.c_op[c].astype(str), "seq": sim.c_seq[c], "name": ["nccl"] * n, "device": [rank % 8] * n,
            "stream": [20] * n, "start_ns": sim.c_start[c], "end_ns": sim.c_end[c],
            "bytes": collective_bytes(sim.c_op[c], sim.c_in_nelems[c], sim.c_out_nelems[c]),
            "dtype": ["Float"] * n, "in_nelems": sim.c_in_nelems[c], "out_nelems": sim.c_out_nelems[c],
            "in_split": ["[]"] * n, "out_split": ["[]"] * n, "step": sim.c_step[c]})


_DEFAULTS = {"int32": -1, "int64": -1, "string": "", "float64": float("nan"), "bool": False}


def write_rows(out: Path, table: str, rank: int, rows: list[dict]) -> None:
    """One rank's map table from row dicts; absent columns are the contract's unknowns."""
    columns = MAP_TABLES[table]
    write_map_table(out, table, rank, {name: [row.get(name, _DEFAULTS[kind]) for row in rows]
                                       for name, kind, _ in columns})
