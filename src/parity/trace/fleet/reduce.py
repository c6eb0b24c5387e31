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
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from parity.model.errors import ParityError
from parity.trace.fleet import figures as fig
from parity.trace.fleet.matching import Matched, match_collectives
from parity.trace.fleet.replay import MAX_COLLECTIVES, REPLAY, CollectiveGraph, replay_step_cost_ns, reproduces
from parity.trace.fleet.stragglers import (CLOCK_FLOOR_NS, FIRST_ORDER, TIME_VOTE, VOTE_ALPHA, VOTE_FLOOR_NS,
                                           VOTE_SHARE_RATIO, RankOrder, VoteCells, clock_suspect_lasts,
                                           clock_suspect_rows, rank_order, share_last, straggler_vote,
                                           vote_threshold)
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
    "straggler": "arrival-order vote over all of a rank's collectives or one group's: share last >= 2x "
                 "expected, Chernoff bound at fleet error 0.01, median margin when last >= 1 us; or by the time "
                 "it kept its collectives waiting: held >= 2x fair, Hoeffding bound at the same error, mean "
                 "margin when last >= 1 us",
    "held_ns": "sum over the collectives the rank was last at of its margin (last arrival - the one before)",
    "fair_held_ns": "sum over the rank's collectives of margin / members: held if every member were equally "
                    "likely to be last",
    "step_cost_ns": f"{FIRST_ORDER} (sum of margins when last, median over steps); {REPLAY} where the "
                    "collective graph reproduces the trace (each row's method column says which)",
    "mean_step_cost_ns": "as step_cost_ns, the mean over steps",
    "clock_offset_suspected": "ops ending more than 1 us before the last member arrived",
    "clock_suspect_last": "collectives the rank was last at where a member's op ended more than 1 us before the "
                          "last member arrived (impossible on one shared clock)",
    "in_doubt": "a straggler the vote no longer names without the clock-suspect collectives: its naming rests on "
                "arrivals a clock offset between ranks can explain",
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
    step_cost: dict = field(default_factory=dict)
    methods: dict = field(default_factory=lambda: dict(METHODS))

    def to_json(self) -> dict:
        return {"schema_version": SCHEMA_VERSION, "ranks": self.ranks, "ranks_per_node": self.ranks_per_node,
                "counts": self.counts, "findings": self.findings, "stragglers": list(self.stragglers),
                "vote": self.vote, "step_cost": self.step_cost, "methods": self.methods}  # fmt: skip


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
    _release_arrow_memory()
    per_row, per_coll = _collective_figures(m, ranks, nodes)
    rank_idx = np.searchsorted(ranks, m.rank)
    order, (straggler, named_by, tests) = _vote(m, ranks, rank_idx, per_row, per_coll)
    suspect = clock_suspect_rows(per_row["early_end_ns"], m.seg, m.segments)
    clock_last = clock_suspect_lasts(rank_idx, per_row["last"], suspect, len(ranks))
    in_doubt = np.zeros(len(ranks), dtype=bool)
    if suspect.any():  # a straggler the vote names only with the clock-suspect collectives is in doubt
        in_doubt = straggler & ~_vote(m, ranks, rank_idx, per_row, per_coll, ~suspect)[1][0]
    order, method, replay_note = _replay_costs(m, ranks, order, straggler, per_row)
    step_rows = _sorted_steps(steps)
    _write_collectives(root, m, per_coll)
    _write_arrivals(root, m, per_row)
    _write_ranks(root, ranks, nodes, info, order, step_rows)
    _write_stragglers(root, ranks, nodes, order, straggler, step_rows, method, clock_last, in_doubt)
    write_table(root / "steps.parquet", FLEET_TABLES["steps"], step_rows)
    voters = int((order.voted > 0).sum())
    summary = FleetSummary(
        out=str(root), ranks=int(len(ranks)), ranks_per_node=ranks_per_node,
        counts={"ranks": int(len(ranks)), "groups": len(m.groups), "collectives": int(m.segments),
                "arrivals": int(len(m.rank)), "p2p": int(sum(m.p2p_by_rank.values())),
                "ties": int(((per_coll["last_rank"] < 0) & (per_coll["members"] >= 2)).sum()),
                "steps": int(len(np.unique(step_rows["step"]))) if len(step_rows["step"]) else 0},
        findings=m.findings | _clock_finding(m, ranks, per_row), stragglers=tuple(ranks[straggler].tolist()),
        vote={"alpha": VOTE_ALPHA, "share_ratio": VOTE_SHARE_RATIO, "floor_ns": VOTE_FLOOR_NS,
              "voters": voters, "tests": tests, "threshold": vote_threshold(tests),
              "named_by": {str(int(ranks[i])): [_vote_name(g, m.groups) for g in gs]
                           for i, gs in sorted(named_by.items())},
              "in_doubt": ranks[in_doubt].tolist()},
        step_cost=replay_note,
    )  # fmt: skip
    (root / "fleet.json").write_text(json.dumps(summary.to_json(), indent=2, sort_keys=True) + "\n")
    return summary


def _vote(m: Matched, ranks: np.ndarray, rank_idx: np.ndarray, per_row: dict, per_coll: dict,
          rows: np.ndarray | None = None):
    """The per-rank figures and the straggler vote over the matched rows (``rank_idx``: each
    row's index in ``ranks``; ``rows``: a mask of the rows to count, whole collectives; all of
    them, uncopied, by default): ``(order, (straggler, named_by, tests))``."""
    keep = slice(None) if rows is None else rows
    idx = rank_idx[keep]
    members, margin = per_coll["members"][m.seg][keep], per_coll["margin"][m.seg][keep]
    order = rank_order(ranks, idx, members, per_row["last"][keep], per_row["wait_ns"][keep],
                       per_row["lateness_ns"][keep], margin, m.step[keep])
    cells = VoteCells.of(idx, m.group[keep], members, per_row["last"][keep], margin)
    return order, straggler_vote(order, cells)


def _vote_name(code: int, groups: list[str]) -> str:
    """What named a straggler, as ``fleet.json`` says it: ``all`` (the counts over all its
    collectives), ``time`` (the time it kept them waiting) or a process group's name."""
    return "all" if code == -1 else "time" if code == TIME_VOTE else groups[code]


def _release_arrow_memory() -> None:
    """Hand the freed Arrow buffers back to the system (the pool keeps them otherwise)."""
    import pyarrow as pa

    pa.default_memory_pool().release_unused()


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
        return {"wait_ns": empty, "lateness_ns": empty, "last": np.zeros(0, bool), "early_end_ns": empty}, per_coll
    arrival = m.start_ns
    first, last = fig.first_arrival_ns(arrival, starts), fig.last_arrival_ns(arrival, starts)
    median = fig.grouped_median_ns(seg, arrival, n)
    members = np.bincount(seg, minlength=n)
    last_rank, is_last = fig.last_arrivers(arrival, last[seg], seg, m.rank, n)
    comm = fig.comm_ns(m.start_ns, m.end_ns, starts)
    size = fig.collective_bytes(m.bytes, starts)
    algbw = fig.algbw_bps(size, comm)
    ops = np.array(m.ops, dtype=object)[m.op[starts]].astype(str)
    node_index = {name: i for i, name in enumerate(sorted({x for x in nodes.tolist() if x}))}
    node_code = np.array([node_index.get(x, -1) for x in nodes.tolist()], dtype=np.int64)
    per_coll = {
        "members": members, "op": ops, "step": np.maximum.reduceat(m.step, starts),
        "first": first, "last": last, "skew": fig.arrival_skew_ns(first, last), "last_rank": last_rank,
        "comm": comm, "bytes": size, "algbw": algbw, "busbw": fig.busbw_bps(algbw, ops, members),
        "scope": fig.collective_scope(node_code[np.searchsorted(ranks, m.rank)], starts),
        "imbalance": fig.size_imbalance(m.bytes, seg, starts), "margin": fig.last_margin_ns(arrival, seg, n),
    }  # fmt: skip
    per_row = {"wait_ns": fig.wait_ns(arrival, last[seg]), "lateness_ns": fig.lateness_ns(arrival, median[seg]),
               "last": is_last, "early_end_ns": fig.early_end_ns(m.end_ns, last[seg])}
    return per_row, per_coll


def _clock_finding(m: Matched, ranks: np.ndarray, per_row: dict) -> dict:
    """``clock_offset_suspected``: ops that ended before the last member arrived
    (:func:`figures.early_end_ns` > 1 µs), with the ranks that have most of them and each one's
    largest early end: arrival figures of those ranks carry their clock's offset."""
    early = per_row["early_end_ns"] > CLOCK_FLOOR_NS
    if not early.any():
        return {}
    idx = np.searchsorted(ranks, m.rank[early])
    count = np.bincount(idx, minlength=len(ranks))
    worst = np.zeros(len(ranks), dtype=np.int64)
    np.maximum.at(worst, idx, per_row["early_end_ns"][early])
    top = [i for i in np.lexsort((ranks, -count)).tolist() if count[i]][:8]
    return {"clock_offset_suspected": {
        "count": int(early.sum()), "ranks": int((count > 0).sum()),
        "examples": [{"rank": int(ranks[i]), "ops": int(count[i]), "max_early_end_ns": int(worst[i])} for i in top],
    }}  # fmt: skip


def _group_names(m: Matched, codes: np.ndarray):
    import pyarrow as pa

    # indexed in numpy: Array.take would import pyarrow's compute functions for this one call
    return pa.array(np.array(list(m.groups) or [""], dtype=object)[codes], pa.string())


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


def _write_ranks(root: Path, ranks: np.ndarray, nodes: np.ndarray, info, order: RankOrder, steps: dict) -> None:
    write_table(root / "ranks.parquet", FLEET_TABLES["ranks"], {
        "rank": ranks, "node": nodes.tolist(), "collectives": order.collectives, "times_last": order.times_last,
        "wait_ns": order.wait_ns, "compute_ns": _info_column(info, ranks, "compute_ns"),
        "communication_ns": _info_column(info, ranks, "communication_ns"),
        "idle_ns": _info_column(info, ranks, "device_idle_ns"), "median_lateness_ns": order.median_lateness_ns,
        "steps": _info_column(info, ranks, "steps"),
        "window_ns": _window_ns(info, ranks),
    })  # fmt: skip


def _window_ns(info, ranks: np.ndarray) -> np.ndarray:
    """Each rank's analysis window, ``end - start`` (ns; -1 for a rank without a rank_info row):
    what its compute, communication and idle are measured in."""
    start, end = _info_column(info, ranks, "window_start_ns"), _info_column(info, ranks, "window_end_ns")
    return np.where((start >= 0) & (end >= start), end - start, -1)


def median_step_ns(ranks: np.ndarray, steps: dict) -> np.ndarray:
    """Per rank, the median of its steps' ``end - start`` (ns; -1 for a rank without steps)."""
    idx = np.searchsorted(ranks, steps["rank"])
    inside = (idx < len(ranks)) & (ranks[np.minimum(idx, len(ranks) - 1)] == steps["rank"])
    median = fig.grouped_median_ns(idx[inside], (steps["end_ns"] - steps["start_ns"])[inside], len(ranks))
    has = np.bincount(idx[inside], minlength=len(ranks)) > 0
    return np.where(has, median, -1)


REPLAY_BUDGET = 200_000  # collectives x ranks replayed (one Python step each)
REPLAY_RANKS = 16  # at most this many ranks replayed: the stragglers, then the most often last


def _replay_costs(m: Matched, ranks: np.ndarray, order: RankOrder, straggler: np.ndarray, per_row: dict):
    """Replace the first-order step cost by the replayed one (:mod:`.replay`) for the stragglers
    and the ranks most often last, where the fleet is small enough and the graph reproduces the
    trace. Returns the figures with those costs, each rank's method and the note for
    ``fleet.json``."""
    method = np.array([FIRST_ORDER] * len(ranks), dtype=object)
    cost_ns, mean_ns = order.step_cost_ns.copy(), order.mean_step_cost_ns.copy()
    picked = np.lexsort((ranks, -order.times_last, ~straggler))
    picked = [int(i) for i in picked if order.times_last[i] > 0][:REPLAY_RANKS]
    if not picked or not m.segments:
        return order, method, {"replay": "no rank was last in a collective"}
    budget = REPLAY_BUDGET // m.segments
    if m.segments > MAX_COLLECTIVES or budget < 1:
        return order, method, {"replay": f"not run: {m.segments} collectives (at most {MAX_COLLECTIVES})"}
    idx = np.searchsorted(ranks, m.rank)
    graph = CollectiveGraph(idx, m.start_ns, m.end_ns, m.seg, m.starts, len(ranks))
    if not reproduces(graph, m.end_ns):
        return order, method, {"replay": "not used: the collective graph does not reproduce the trace's ends"}
    costs = {}
    for i in picked[:budget]:
        replayed = replay_step_cost_ns(graph, m.end_ns, per_row["lateness_ns"], m.step, i)
        if replayed is not None:
            costs[int(ranks[i])] = {FIRST_ORDER: int(order.step_cost_ns[i]), REPLAY: replayed[0],
                                    f"{FIRST_ORDER} mean": int(order.mean_step_cost_ns[i]),
                                    f"{REPLAY} mean": replayed[1]}
            cost_ns[i], mean_ns[i] = replayed
            method[i] = REPLAY
    note = f"{len(costs)} ranks" if costs else "not used: fewer than two steps"
    note = {"replay": note, "ranks": {str(k): v for k, v in costs.items()}}
    return replace(order, step_cost_ns=cost_ns, mean_step_cost_ns=mean_ns), method, note


def _write_stragglers(root: Path, ranks: np.ndarray, nodes: np.ndarray, order: RankOrder, straggler: np.ndarray,
                      steps: dict, method: np.ndarray, clock_last: np.ndarray, in_doubt: np.ndarray) -> None:
    """One row per rank with a voted collective: most often last first (times last, then
    median lateness, descending; rank ascending)."""
    keep = np.flatnonzero(order.voted > 0)
    sort = keep[np.lexsort((ranks[keep], -order.median_lateness_ns[keep], -order.times_last[keep]))]
    share = share_last(order.times_last, order.voted)
    write_table(root / "stragglers.parquet", FLEET_TABLES["stragglers"], {
        "rank": ranks[sort], "node": nodes[sort].tolist(), "times_last": order.times_last[sort],
        "share_last": share[sort], "expected_share": order.expected_share[sort],
        "median_lateness_ns": order.median_lateness_ns[sort], "step_cost_ns": order.step_cost_ns[sort],
        "step_ns": median_step_ns(ranks, steps)[sort], "method": method[sort].tolist(),
        "straggler": straggler[sort], "median_margin_ns": order.median_margin_ns[sort],
        "mean_step_cost_ns": order.mean_step_cost_ns[sort], "held_ns": order.held_ns[sort],
        "fair_held_ns": np.floor(order.fair_held_ns[sort]).astype(np.int64),
        "clock_suspect_last": clock_last[sort], "in_doubt": in_doubt[sort],
    })  # fmt: skip


def _sorted_steps(steps) -> dict:
    """The map's step rows of every rank, sorted by (rank, step), as numpy columns."""
    cols = {name: steps.column(name).to_numpy() for name, _, _ in MAP_TABLES["steps"]}
    order = np.lexsort((cols["step"], cols["rank"]))
    return {name: values[order] for name, values in cols.items()}
