"""A hand-made fleet output folder: every FLEET_TABLES table and fleet.json, with numbers that can
be checked by hand (the tests for the fleet report, store and compare use it).

The job: ``ranks`` ranks (``ranks_per_node`` to a node), ``steps`` steps of 1 ms each starting
at ``step * 1 ms``, two collectives per step in the group ``default`` (all ranks): an
``all_reduce`` at 100 us into the step and an ``all_gather`` at 500 us. Rank ``r`` arrives
``r * 10 ns`` after the collective's base time, except the ``late`` rank, which arrives
``late_ns * (step + 1)`` after it (so it is always last). Each op moves 1 MiB in 50 us.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from parity.trace.fleet.tables import FLEET_TABLES

STEP_NS = 1_000_000
COMM_NS = 50_000
BYTES = 1 << 20
OPS = (("all_reduce", 100_000), ("all_gather", 500_000))


def _busbw_factor(op: str, n: int) -> float:
    return 2 * (n - 1) / n if op == "all_reduce" else (n - 1) / n


def fleet_tables(*, ranks: int = 4, steps: int = 3, late: int = 3, late_ns: int = 10_000,
                 ranks_per_node: int = 2, slow_compute: int = 2) -> dict[str, dict[str, list[Any]]]:
    """Every fleet table as columns of Python lists (see the module doc for the job)."""
    tables: dict[str, dict[str, list[Any]]] = {name: {c: [] for c, _, _ in cols} for name, cols in FLEET_TABLES.items()}
    node = [f"node-{r // ranks_per_node}" for r in range(ranks)]
    lateness_of: dict[int, list[int]] = {r: [] for r in range(ranks)}
    wait_of = np.zeros(ranks, dtype=np.int64)
    seq = 0
    cost_per_step = []
    for step in range(steps):
        step_cost = 0
        for op, offset in OPS:
            base = step * STEP_NS + offset
            arrival = np.arange(ranks, dtype=np.int64) * 10 + base
            arrival[late] = base + late_ns * (step + 1)
            last = int(arrival.max())
            mid = float(np.median(arrival))
            others = np.delete(arrival, late)
            step_cost += last - int(others.max())
            algbw = BYTES / (COMM_NS * 1e-9)
            _append(tables["collectives"], group="default", seq=seq, op=op, members=ranks, step=step,
                    first_arrival_ns=int(arrival.min()), last_arrival_ns=last, skew_ns=last - int(arrival.min()),
                    last_rank=late, comm_ns=COMM_NS, bytes=BYTES, algbw_bps=algbw,
                    busbw_bps=algbw * _busbw_factor(op, ranks), scope="inter-node", size_imbalance=1.0)
            for r in range(ranks):
                lateness = int(round(arrival[r] - mid))
                lateness_of[r].append(lateness)
                wait_of[r] += last - int(arrival[r])
                _append(tables["arrivals"], group="default", seq=seq, rank=r, arrival_ns=int(arrival[r]),
                        end_ns=last + COMM_NS, wait_ns=last - int(arrival[r]), lateness_ns=lateness, last=r == late)
            seq += 1
        cost_per_step.append(step_cost)
    for r in range(ranks):
        compute = 800_000 if r == slow_compute else 600_000
        for step in range(steps):
            _append(tables["steps"], rank=r, step=step, start_ns=step * STEP_NS, end_ns=(step + 1) * STEP_NS,
                    compute_ns=compute, communication_ns=2 * COMM_NS, exposed_communication_ns=2 * COMM_NS,
                    idle_ns=STEP_NS - compute - 2 * COMM_NS)
        times_last = 2 * steps if r == late else 0
        median_lateness = int(np.median(lateness_of[r]))
        _append(tables["ranks"], rank=r, node=node[r], collectives=2 * steps, times_last=times_last,
                wait_ns=int(wait_of[r]), compute_ns=compute * steps, communication_ns=2 * COMM_NS * steps,
                idle_ns=(STEP_NS - compute - 2 * COMM_NS) * steps, median_lateness_ns=median_lateness, steps=steps,
                window_ns=STEP_NS * steps)
    order = sorted(range(ranks), key=lambda r: (r != late, r))
    for r in order:
        _append(tables["stragglers"], rank=r, node=node[r], times_last=2 * steps if r == late else 0,
                share_last=1.0 if r == late else 0.0, expected_share=1 / ranks,
                median_lateness_ns=int(np.median(lateness_of[r])),
                step_cost_ns=int(np.median(cost_per_step)) if r == late else 0, step_ns=STEP_NS,
                method="first-order", straggler=r == late, **_added(r == late, late_ns, ranks, steps, tables))
    return tables


def _added(late: bool, late_ns: int, ranks: int, steps: int, tables: dict[str, dict[str, list[Any]]]) -> dict[str, int]:
    """The columns the reduce added at the stragglers table's end, where the contract has them:
    the late rank's median margin over the latest other arrival when it was last
    (L - 10 (ranks - 1) ns, L's median), its mean step cost (2 margins a step), the time it kept
    the collectives waiting (every margin: it is last at all) and every rank's fair share of that
    time (each margin over the members); one clock, so no collective is clock-suspect and no
    straggler in doubt."""
    margins = [late_ns * (s + 1) - 10 * (ranks - 1) for s in range(steps)]
    values = {"median_margin_ns": int(np.median(margins)) if late and margins else 0,
              "mean_step_cost_ns": int(np.mean(margins) * 2) if late and margins else 0,
              "held_ns": 2 * sum(margins) if late else 0, "fair_held_ns": 2 * sum(margins) // ranks,
              "clock_suspect_last": 0, "in_doubt": False}
    return {k: v for k, v in values.items() if k in tables["stragglers"]}


def _append(table: dict[str, list[Any]], **row: Any) -> None:
    assert set(row) == set(table), set(row) ^ set(table)
    for key, value in row.items():
        table[key].append(value)


def fleet_summary(*, ranks: int, ranks_per_node: int, late: int, steps: int) -> dict[str, Any]:
    return {"schema_version": 1, "kind": "fleet", "ranks": ranks, "ranks_per_node": ranks_per_node,
            "methods": {"step_cost": "first-order", "comm": "min over ranks of end - start"},
            "findings": [
                {"code": "straggler-by-arrival", "severity": "warning",
                 "message": f"rank {late} arrived last at {2 * steps} of {2 * steps} collectives (expected 1/{ranks})",
                 "hint": "look at rank <b>host stalls</b>, data loading and its NIC"},
                {"code": "p2p-not-matched", "severity": "info", "message": "0 send/recv operations were not matched"},
            ]}


def _schema(columns: tuple[tuple[str, str, str], ...]) -> Any:
    """The table's arrow schema with each unit in its field's metadata (as ``arrow_schema``;
    pyarrow spells the boolean type ``bool_``)."""
    import pyarrow as pa

    return pa.schema([pa.field(name, getattr(pa, "bool_" if kind == "bool" else kind)(),
                               metadata={"unit": unit} if unit else None) for name, kind, unit in columns])


def write_fleet_folder(out: Path, *, ranks: int = 4, steps: int = 3, late: int = 3, late_ns: int = 10_000,
                       ranks_per_node: int = 2) -> Path:
    """Write the tables (exact FLEET_TABLES schemas) and fleet.json into ``out``; returns it."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    out.mkdir(parents=True, exist_ok=True)
    tables = fleet_tables(ranks=ranks, steps=steps, late=late, late_ns=late_ns, ranks_per_node=ranks_per_node)
    for name, columns in FLEET_TABLES.items():
        pq.write_table(pa.table(tables[name], schema=_schema(columns)), out / f"{name}.parquet")
    summary = fleet_summary(ranks=ranks, ranks_per_node=ranks_per_node, late=late, steps=steps)
    (out / "fleet.json").write_text(json.dumps(summary, indent=1))
    return out
