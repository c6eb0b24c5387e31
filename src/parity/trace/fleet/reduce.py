"""The reduce: every rank's map tables in, the fleet's tables and summary out.

``reduce_fleet(OUT)`` reads ``OUT/map/<table>/*.parquet`` (one file per rank and table),
matches collectives across ranks (:mod:`.matching`), derives the per-collective figures
(:mod:`.figures`) and the per-rank ones with the straggler vote (:mod:`.stragglers`), and
writes ``OUT/<table>.parquet`` for every table of :data:`FLEET_TABLES` plus ``OUT/fleet.json``.
Rows are sorted ``(group, seq, rank)`` / by rank, so the output depends on the map tables only.

    summary = reduce_fleet("out", ranks_per_node=8)
    summary.stragglers, summary.findings
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from parity.model.errors import ParityError
from parity.trace.fleet import figures as fig
from parity.trace.fleet.matching import Matched, match_collectives
from parity.trace.fleet.stragglers import (FIRST_ORDER, VOTE_ALPHA, VOTE_FLOOR_NS, VOTE_SHARE_RATIO,
                                           rank_order, share_last, straggler_vote, vote_threshold)
from parity.trace.fleet.tables import FLEET_TABLES, MAP_TABLES
from parity.trace.fleet.writing import read_map_table, write_table

_COLLECTIVE_COLUMNS = ["rank", "group", "group_ranks", "op", "seq", "start_ns", "end_ns", "bytes", "step"]
SCHEMA_VERSION = 1  # fleet.json; 1: first version
METHODS = {
    "arrival_ns": "start of the rank's device-side collective op",
    "skew_ns": "last arrival - first arrival",
    "wait_ns": "last arrival - the rank's arrival",
    "lateness_ns": "the rank's arrival - median arrival",
    "comm_ns": "min over members of (end - start)",
    "algbw_bps": "bytes / comm_ns",
    "busbw_bps": "algbw x nccl-tests bus factor f(op, members)",
    "scope": "node of every member (rank // ranks_per_node, else the map's node name)",
    "size_imbalance": "max / mean of the members' bytes",
    "straggler": "arrival-order vote: share last >= 2x expected, Chernoff bound at fleet error 0.01, "
                 "median margin when last >= 1 us",
    "step_cost_ns": FIRST_ORDER,
}  # fmt: skip


@dataclass(frozen=True)
class FleetSummary:
    """What ``fleet.json`` holds: ranks, counts, findings, stragglers and each figure's method."""

    out: str
    ranks: int
    ranks_per_node: int | None
    counts: dict
    findings: dict
    stragglers: tuple[int, ...]
    vote: dict
    methods: dict = field(default_factory=lambda: dict(METHODS))

    def to_json(self) -> dict:
        return {"schema_version": SCHEMA_VERSION, "ranks": self.ranks, "ranks_per_node": self.ranks_per_node,
                "counts": self.counts, "findings": self.findings, "stragglers": list(self.stragglers),
                "vote": self.vote, "methods": self.methods}  # fmt: skip


def reduce_fleet(out: str, *, ranks_per_node: int | None = None) -> FleetSummary:
    """Read ``out/map``, write the fleet's tables and ``out/fleet.json`` (module docstring)."""
    root = Path(out)
    if not (root / "map").is_dir():
        raise ParityError(f"no map tables in {root}/map; run the map first (parity trace fleet PATH... --out {root})")
    if ranks_per_node is not None and ranks_per_node < 1:
        raise ParityError(f"ranks per node must be at least 1, not {ranks_per_node}")
    info = read_map_table(root, "rank_info")
    coll = read_map_table(root, "collectives", columns=_COLLECTIVE_COLUMNS, dictionary=("group", "group_ranks", "op"))
    steps = read_map_table(root, "steps")
    info_rank = info.column("rank").to_numpy().astype(np.int64)
    coll_rank = coll.column("rank").to_numpy().astype(np.int64)
    ranks = np.unique(np.concatenate([info_rank, coll_rank]))
    if not len(ranks):
        raise ParityError(f"the map tables in {root}/map hold no rank; run the map on the rank traces")
    nodes = _node_names(ranks, info, ranks_per_node)
    m = match_collectives(coll, ranks)
    del coll  # the matched arrays hold what the figures need
    per_row, per_coll = _collective_figures(m, ranks, nodes)
    order = rank_order(ranks, np.searchsorted(ranks, m.rank), per_coll["members"][m.seg], per_row["last"],
                       per_row["wait_ns"], per_row["lateness_ns"], per_coll["margin"][m.seg], m.step)
    straggler = straggler_vote(order)
    step_rows = _sorted_steps(steps)
    _write_collectives(root, m, per_coll)
    _write_arrivals(root, m, per_row)
    _write_ranks(root, ranks, nodes, info, order, step_rows)
    _write_stragglers(root, ranks, nodes, order, straggler, step_rows)
    write_table(root / "steps.parquet", FLEET_TABLES["steps"], step_rows)
    voters = int((order.voted > 0).sum())
    summary = FleetSummary(
        out=str(root), ranks=int(len(ranks)), ranks_per_node=ranks_per_node,
        counts={"ranks": int(len(ranks)), "groups": len(m.groups), "collectives": int(m.segments),
                "arrivals": int(len(m.rank)), "p2p": int(sum(m.p2p_by_rank.values())),
                "ties": int(((per_coll["last_rank"] < 0) & (per_coll["members"] >= 2)).sum()),
                "steps": int(len(np.unique(step_rows["step"]))) if len(step_rows["step"]) else 0},
        findings=m.findings, stragglers=tuple(ranks[straggler].tolist()),
        vote={"alpha": VOTE_ALPHA, "share_ratio": VOTE_SHARE_RATIO, "floor_ns": VOTE_FLOOR_NS,
              "voters": voters, "threshold": vote_threshold(voters)},
    )  # fmt: skip
    (root / "fleet.json").write_text(json.dumps(summary.to_json(), indent=2, sort_keys=True) + "\n")
    return summary


def _node_names(ranks: np.ndarray, info, ranks_per_node: int | None) -> np.ndarray:
    """Per rank its node: ``str(rank // ranks_per_node)`` when given, else the map's node name
    ("" when the trace named none)."""
    if ranks_per_node is not None:
        return np.array([str(r // ranks_per_node) for r in ranks.tolist()], dtype=object)
    names = dict(zip(info.column("rank").to_pylist(), info.column("node").to_pylist()))
    return np.array([names.get(r) or "" for r in ranks.tolist()], dtype=object)


def _collective_figures(m: Matched, ranks: np.ndarray, nodes: np.ndarray) -> tuple[dict, dict]:
    n, starts, seg = m.segments, m.starts, m.seg
    if not n:
        empty, none = np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float64)
        keys = ("members", "step", "first", "last", "skew", "last_rank", "comm", "bytes", "margin")
        per_coll = {k: empty for k in keys} | {"algbw": none, "busbw": none, "imbalance": none,
                                               "op": np.zeros(0, dtype=str), "scope": np.zeros(0, dtype=str)}
        return {"wait_ns": empty, "lateness_ns": empty, "last": np.zeros(0, bool)}, per_coll
    arrival = m.start_ns
    first, last = fig.first_arrival_ns(arrival, starts), fig.last_arrival_ns(arrival, starts)
    median = fig.grouped_median_ns(seg, arrival, n)
    members = np.bincount(seg, minlength=n)
    last_rank, is_last = fig.last_arrivers(arrival, last[seg], seg, m.rank, n)
    comm = fig.comm_ns(m.start_ns, m.end_ns, starts)
    size = fig.collective_bytes(m.bytes, starts)
    algbw = fig.algbw_bps(size, comm)
    ops = np.array(m.ops, dtype=object)[m.op[starts]].astype(str)
    node_names = sorted({x for x in nodes.tolist() if x})
    node_code = np.array([node_names.index(x) if x else -1 for x in nodes.tolist()], dtype=np.int64)
    per_coll = {
        "members": members, "op": ops, "step": np.maximum.reduceat(m.step, starts),
        "first": first, "last": last, "skew": fig.arrival_skew_ns(first, last), "last_rank": last_rank,
        "comm": comm, "bytes": size, "algbw": algbw, "busbw": fig.busbw_bps(algbw, ops, members),
        "scope": fig.collective_scope(node_code[np.searchsorted(ranks, m.rank)], starts),
        "imbalance": fig.size_imbalance(m.bytes, seg, starts), "margin": fig.last_margin_ns(arrival, seg, n),
    }  # fmt: skip
    per_row = {"wait_ns": fig.wait_ns(arrival, last[seg]), "lateness_ns": fig.lateness_ns(arrival, median[seg]),
               "last": is_last}
    return per_row, per_coll


def _group_names(m: Matched, codes: np.ndarray):
    import pyarrow as pa

    return pa.array(list(m.groups), pa.string()).take(pa.array(codes, pa.int64()))


def _write_collectives(root: Path, m: Matched, c: dict) -> None:
    s = m.starts
    write_table(root / "collectives.parquet", FLEET_TABLES["collectives"], {
        "group": _group_names(m, m.group[s]), "seq": m.seq[s], "op": c["op"], "members": c["members"],
        "step": c["step"], "first_arrival_ns": c["first"], "last_arrival_ns": c["last"], "skew_ns": c["skew"],
        "last_rank": c["last_rank"], "comm_ns": c["comm"], "bytes": c["bytes"], "algbw_bps": c["algbw"],
        "busbw_bps": c["busbw"], "scope": c["scope"], "size_imbalance": c["imbalance"],
    })  # fmt: skip


def _write_arrivals(root: Path, m: Matched, r: dict) -> None:
    write_table(root / "arrivals.parquet", FLEET_TABLES["arrivals"], {
        "group": _group_names(m, m.group), "seq": m.seq, "rank": m.rank, "arrival_ns": m.start_ns,
        "end_ns": m.end_ns, "wait_ns": r["wait_ns"], "lateness_ns": r["lateness_ns"], "last": r["last"],
    })  # fmt: skip


def _info_column(info, ranks: np.ndarray, name: str) -> np.ndarray:
    """A rank_info column aligned with ``ranks`` (-1 for a rank without a rank_info row)."""
    out = np.full(len(ranks), -1, dtype=np.int64)
    have = info.column("rank").to_numpy().astype(np.int64)
    at = np.searchsorted(ranks, have)
    out[at] = info.column(name).to_numpy().astype(np.int64)
    return out


def _write_ranks(root: Path, ranks, nodes, info, order, steps: dict) -> None:
    write_table(root / "ranks.parquet", FLEET_TABLES["ranks"], {
        "rank": ranks, "node": nodes.tolist(), "collectives": order.collectives, "times_last": order.times_last,
        "wait_ns": order.wait_ns, "compute_ns": _info_column(info, ranks, "compute_ns"),
        "communication_ns": _info_column(info, ranks, "communication_ns"),
        "idle_ns": _info_column(info, ranks, "device_idle_ns"), "median_lateness_ns": order.median_lateness_ns,
        "steps": _info_column(info, ranks, "steps"),
    })  # fmt: skip


def median_step_ns(ranks: np.ndarray, steps: dict) -> np.ndarray:
    """Per rank, the median of its steps' ``end - start`` (ns; -1 for a rank without steps)."""
    idx = np.searchsorted(ranks, steps["rank"])
    inside = (idx < len(ranks)) & (ranks[np.minimum(idx, len(ranks) - 1)] == steps["rank"])
    median = fig.grouped_median_ns(idx[inside], (steps["end_ns"] - steps["start_ns"])[inside], len(ranks))
    has = np.bincount(idx[inside], minlength=len(ranks)) > 0
    return np.where(has, median, -1)


def _write_stragglers(root: Path, ranks, nodes, order, straggler, steps: dict) -> None:
    """One row per rank with a voted collective: most often last first (times last, then
    median lateness, descending; rank ascending)."""
    keep = np.flatnonzero(order.voted > 0)
    sort = keep[np.lexsort((ranks[keep], -order.median_lateness_ns[keep], -order.times_last[keep]))]
    share = share_last(order.times_last, order.voted)
    write_table(root / "stragglers.parquet", FLEET_TABLES["stragglers"], {
        "rank": ranks[sort], "node": nodes[sort].tolist(), "times_last": order.times_last[sort],
        "share_last": share[sort], "expected_share": order.expected_share[sort],
        "median_lateness_ns": order.median_lateness_ns[sort], "step_cost_ns": order.step_cost_ns[sort],
        "step_ns": median_step_ns(ranks, steps)[sort], "method": [FIRST_ORDER] * len(sort),
        "straggler": straggler[sort], "median_margin_ns": order.median_margin_ns[sort],
    })  # fmt: skip


def _sorted_steps(steps) -> dict:
    """The map's step rows of every rank, sorted by (rank, step), as numpy columns."""
    cols = {name: steps.column(name).to_numpy() for name, _, _ in MAP_TABLES["steps"]}
    order = np.lexsort((cols["step"], cols["rank"]))
    return {name: values[order] for name, values in cols.items()}
