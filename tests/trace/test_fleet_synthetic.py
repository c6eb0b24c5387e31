"""The synthetic fleet: its rank files are real Kineto traces, and the reduce finds what was
injected (the vote names the stragglers, skews equal the simulation's within 1 µs)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
from fleet_maps import write_maps

from parity.model.errors import ParityError
from parity.trace.fleet.reduce import reduce_fleet
from parity.trace.fleet.synthetic import simulate, truth_of, write_fleet
from parity.trace.load import load_trace
from parity.trace.table import KindCode

STRAGGLERS = dict(ranks=8, steps=60, segments=1, slow_rank=2, late_rank=5, late_every=3, seed=3)
GROUPS = dict(ranks=16, steps=40, segments=3, group_size=4, slow_link=8, slow_rank=9, seed=4)


def _compare(out: Path, truth) -> dict:
    c = pq.read_table(out / "collectives.parquet").to_pydict()
    keys = list(zip(c["group"], c["seq"]))
    assert sorted(keys) == sorted(truth.skew_ns)
    for key, skew, last, comm in zip(keys, c["skew_ns"], c["last_rank"], c["comm_ns"]):
        assert abs(skew - truth.skew_ns[key]) <= 1_000
        assert skew == truth.skew_ns[key] and last == truth.last_rank[key] and comm == truth.comm_ns[key]
    r = pq.read_table(out / "ranks.parquet").to_pydict()
    assert dict(zip(r["rank"], r["times_last"])) == truth.times_last
    return c


def test_the_vote_names_a_slow_rank_and_a_late_rank(tmp_path: Path):
    truth = truth_of(simulate(**STRAGGLERS), stragglers=(2, 5))
    write_maps(tmp_path, truth.simulation)
    summary = reduce_fleet(str(tmp_path))
    _compare(tmp_path, truth)
    assert summary.stragglers == truth.stragglers == (2, 5)
    s = pq.read_table(tmp_path / "stragglers.parquet").to_pydict()
    assert s["rank"][:2] and set(s["rank"][:2]) == {2, 5}
    cost = dict(zip(s["rank"], s["step_cost_ns"]))
    # rank 2 is last, by about its 30 µs of extra compute, in the two steps of three rank 5 is on
    # time: median about 28 µs; rank 5 by its 120 µs less rank 2's 30 in one step of three: mean 30
    assert 25_000 <= cost[2] <= 30_000 and cost[5] == 0
    mean = dict(zip(s["rank"], s["mean_step_cost_ns"]))
    assert 16_000 <= mean[2] <= 20_000 and 28_000 <= mean[5] <= 31_000


def test_groups_and_a_slow_link(tmp_path: Path):
    truth = truth_of(simulate(**GROUPS), stragglers=(9,))
    write_maps(tmp_path, truth.simulation)
    summary = reduce_fleet(str(tmp_path), ranks_per_node=4)
    c = _compare(tmp_path, truth)
    assert summary.stragglers == (9,)
    comm = {g: {x for x, gg in zip(c["comm_ns"], c["group"]) if gg == g} for g in set(c["group"])}
    assert comm["0"] == {120_000} and all(comm[g] == {40_000} for g in comm if g != "0")
    scope = {g: s for g, s in zip(c["group"], c["scope"])}
    assert scope["0"] == "inter-node" and scope["1"] == "intra-node"
    busbw = {g: b for g, b in zip(c["group"], c["busbw_bps"])}
    assert busbw["0"] == pytest.approx(4 * 1024 * 1024 * 4 / 120e-6 * 2 * 15 / 16)


def test_no_straggler_no_vote(tmp_path: Path):
    truth = truth_of(simulate(ranks=8, steps=40, segments=2, seed=5), stragglers=())
    write_maps(tmp_path, truth.simulation)
    assert reduce_fleet(str(tmp_path)).stragglers == ()
    _compare(tmp_path, truth)


def test_rank_files_are_kineto_traces_with_exact_times(tmp_path: Path):
    truth = write_fleet(tmp_path, ranks=4, steps=3, segments=2, group_size=2, slow_rank=1, seed=1)
    sim = truth.simulation
    assert [Path(p).name for p in truth.paths] == [f"rank-{r:06d}.json.gz" for r in range(4)]
    table = load_trace(truth.paths[1])
    assert table.meta["format"] == "kineto" and table.meta["warnings"] == []
    assert np.unique(table.rank).tolist() == [1]
    names = np.array(table.names)[table.name_id]
    nccl = np.flatnonzero((table.kind == KindCode.KERNEL) & np.char.startswith(names.astype(str), "nccl"))
    mine = sim.c_rank == 1
    assert sorted(table.start_ns[nccl].tolist()) == sorted(sim.c_start[mine].tolist())
    assert sorted(table.end_ns[nccl].tolist()) == sorted(sim.c_end[mine].tolist())
    steps = table.kind == KindCode.STEP
    assert sorted(table.step[steps].tolist()) == [1, 2, 3]
    assert set(table.step[nccl].tolist()) == {1, 2, 3}  # placed by their launches
    whole = load_trace(str(tmp_path))
    assert np.unique(whole.rank).tolist() == [0, 1, 2, 3]


def test_rank_files_carry_the_pytorch_args(tmp_path: Path):
    truth = write_fleet(tmp_path, ranks=4, steps=2, segments=2, group_size=2, seed=1)
    with gzip.open(truth.paths[3], "rt") as fh:
        doc = json.load(fh)
    info = doc["distributedInfo"]
    assert info["rank"] == 3 and info["world_size"] == 4
    assert [(pg["pg_name"], pg["ranks"]) for pg in info["pg_config"]] == [("0", [0, 1, 2, 3]), ("1", [0, 1]),
                                                                          ("2", [2, 3])]
    kernels = [e for e in doc["traceEvents"] if e.get("cat") == "kernel" and e["name"].startswith("nccl")]
    args = kernels[0]["args"]
    assert {"Collective name", "In msg nelems", "Out msg nelems", "dtype", "Process Group Name", "Process Group Ranks",
            "Group size", "In split size", "Out split size", "correlation", "stream"} <= set(args)
    assert (args["Collective name"], args["Process Group Name"], args["Process Group Ranks"]) == \
        ("allgather", "2", "[2, 3]")
    launches = {e["args"]["correlation"] for e in doc["traceEvents"] if e.get("cat") == "cuda_runtime"}
    assert all(k["args"]["correlation"] in launches for k in kernels)
    assert sum(e["name"].startswith("ProfilerStep#") for e in doc["traceEvents"] if e.get("ph") == "X") == 2


def test_truth_follows_the_simulation():
    sim = simulate(ranks=4, steps=4, segments=1, late_rank=3, late_every=2, late_ns=500_000, jitter_ns=1, seed=0)
    truth = truth_of(sim, stragglers=(3,))
    # jitter 0: every rank computes 200 us, rank 3 another 500 us in steps 1 and 3 (0-based)
    assert [truth.skew_ns[("0", s)] for s in range(4)] == [0, 500_000, 0, 500_000]
    assert [truth.last_rank[("0", s)] for s in range(4)] == [-1, 3, -1, 3]
    assert truth.times_last == {0: 0, 1: 0, 2: 0, 3: 2}
    with pytest.raises(ParityError, match="group size 3"):
        simulate(ranks=4, steps=1, group_size=3)


@pytest.mark.parametrize("job, ranks_per_node, stragglers", [(STRAGGLERS, None, (2, 5)), (GROUPS, 4, (9,))])
def test_through_the_map_of_real_rank_files(tmp_path: Path, job, ranks_per_node, stragglers):
    """Kineto rank files -> summarize_rank (the map) -> reduce: the same answers as the truth."""
    from parity.trace.fleet.mapper import summarize_rank

    shifts = {k: v for k, v in job.items() if k not in ("ranks", "steps", "seed")}
    truth = write_fleet(tmp_path / "traces", ranks=job["ranks"], steps=job["steps"], seed=job["seed"], **shifts)
    for path in truth.paths:
        summarize_rank(path, str(tmp_path / "out"))
    summary = reduce_fleet(str(tmp_path / "out"), ranks_per_node=ranks_per_node)
    assert summary.stragglers == stragglers and summary.findings == {}
    c = _compare(tmp_path / "out", truth)
    assert c["bytes"][0] == 4 * 1024 * 1024 * 4 and set(c["op"]) <= {"all_reduce", "all_gather"}


def _median_step_ns(sim) -> int:
    ends = {}
    for step, end in zip(sim.c_step.tolist(), sim.c_end.tolist()):
        ends[step] = max(ends.get(step, end), end)
    times = np.diff([ends[s] for s in sorted(ends)])
    return int(np.median(times))


REPLAYED = dict(ranks=8, steps=30, segments=3, group_size=4, slow_rank=1, late_rank=6, late_every=1, seed=1)


def test_replay_cost_matches_the_simulation_without_the_shift(tmp_path: Path):
    """Rank 1 (30 µs slower in every segment, group "1") and rank 6 (120 µs late at each step's
    first collective, group "2"). The first-order cost counts rank 1's 30 µs in its group's
    collective, which the world collective after it does not wait for (group "2" is later);
    the replay does not, and equals the step time the simulation gives without the shift
    (within the 3 µs of jitter: the replay moves the rank to the median, the simulation to its
    own jittered time)."""
    sim = simulate(**REPLAYED)
    write_maps(tmp_path, sim)
    summary = reduce_fleet(str(tmp_path))
    assert summary.stragglers == (1, 6)
    s = pq.read_table(tmp_path / "stragglers.parquet").to_pydict()
    cost = dict(zip(s["rank"], s["step_cost_ns"]))
    method = dict(zip(s["rank"], s["method"]))
    assert method[1] == method[6] == "replay" and method[0] == "first-order"
    base = _median_step_ns(sim)
    without_slow = base - _median_step_ns(simulate(**{**REPLAYED, "slow_rank": None}))
    without_late = base - _median_step_ns(simulate(**{**REPLAYED, "late_rank": None}))
    assert abs(cost[1] - without_slow) <= 3_000 and abs(cost[6] - without_late) <= 3_000
    first = summary.step_cost["ranks"]
    assert first["1"]["first-order"] > 1.8 * first["1"]["replay"]  # 2 x 30 µs against 30 µs


def test_replay_is_not_used_when_the_graph_does_not_reproduce_the_trace(tmp_path: Path):
    sim = simulate(**REPLAYED)
    # rank 0's first collective ends before the last member arrives: a clock offset
    early = np.flatnonzero((sim.c_rank == 0) & (sim.c_seq == 0) & (sim.c_group == "1"))[0]
    sim.c_end[early] = sim.c_start[early] + 1
    write_maps(tmp_path, sim)
    summary = reduce_fleet(str(tmp_path))
    assert summary.step_cost["replay"].startswith("not used")
    assert set(pq.read_table(tmp_path / "stragglers.parquet").column("method").to_pylist()) == {"first-order"}


def test_uneven_all_to_all_through_the_map(tmp_path: Path):
    """Rank 2 sends 3x the others' elements in every all_to_all: size imbalance 3·8 / (7 + 3) = 2.4."""
    from parity.trace.fleet.mapper import summarize_rank

    truth = write_fleet(tmp_path / "traces", ranks=8, steps=4, segments=2, heavy_rank=2, seed=2)
    for path in truth.paths:
        summarize_rank(path, str(tmp_path / "out"))
    reduce_fleet(str(tmp_path / "out"))
    c = _compare(tmp_path / "out", truth)
    for group, seq, op, imbalance, size in zip(c["group"], c["seq"], c["op"], c["size_imbalance"], c["bytes"]):
        assert imbalance == pytest.approx(truth.size_imbalance[(group, seq)])
        if op == "all_to_all":
            assert imbalance == pytest.approx(2.4) and size == 3 * 4 * 1024 * 1024 * 4
        else:
            assert op == "all_reduce" and imbalance == 1.0
    assert c["op"].count("all_to_all") == 4


def test_a_rank_with_a_clock_behind_is_a_finding(tmp_path: Path):
    """Rank 3's clock runs 50 µs behind: its ops seem to end 10 µs before the last member
    arrives (40 µs transfer); the reduce says so, and names no straggler for it."""
    from parity.trace.fleet.mapper import summarize_rank

    truth = write_fleet(tmp_path / "traces", ranks=4, steps=10, segments=1, clock_offsets={3: -50_000}, seed=1)
    for path in truth.paths:
        summarize_rank(path, str(tmp_path / "out"))
    summary = reduce_fleet(str(tmp_path / "out"))
    clock = summary.findings["clock_offset_suspected"]
    assert clock["count"] == 10 and clock["ranks"] == 1 and clock["examples"][0]["rank"] == 3
    assert 7_000 <= clock["examples"][0]["max_early_end_ns"] <= 10_000
    assert summary.stragglers == ()


def test_a_rank_with_a_clock_ahead_is_named_in_doubt(tmp_path: Path):
    """Rank 3's clock runs 50 µs ahead: it seems last at every collective by about 50 µs, so
    the vote names it; but the others' ops seem to end before it arrived (impossible on one
    clock), and without those collectives the vote names no one: the straggler is in doubt, in
    fleet.json, the stragglers table and the terminal line. A slow rank on one clock is not."""
    from parity.report.fleet import fleet_lines
    from parity.trace.fleet.folder import fleet_headline, read_fleet_folder, straggler_rows
    from parity.trace.fleet.mapper import summarize_rank

    truth = write_fleet(tmp_path / "traces", ranks=4, steps=10, segments=1, clock_offsets={3: 50_000}, seed=1)
    for path in truth.paths:
        summarize_rank(path, str(tmp_path / "out"))
    summary = reduce_fleet(str(tmp_path / "out"))
    assert summary.stragglers == (3,) and summary.vote["in_doubt"] == [3]
    assert summary.findings["clock_offset_suspected"]["count"] == 30  # ranks 0, 1 and 2 at each of 10
    folder = read_fleet_folder(tmp_path / "out")
    rows = {r["rank"]: r for r in straggler_rows(folder)}
    assert rows[3]["in_doubt"] and rows[3]["clock_suspect_last"] == rows[3]["times_last"] == 10
    assert not any(r["in_doubt"] for k, r in rows.items() if k != 3)
    headline = fleet_headline(folder)
    assert headline["straggler_ranks_in_doubt"] == [3]
    lines = fleet_lines(headline, summary.to_json(), straggler_rows(folder))
    assert "stragglers by arrival order: rank 3 (in doubt: clock offset)" in lines
    line = next(x for x in lines if x.startswith("  rank 3:"))
    assert "IN DOUBT: at 10 of the 10 collectives it was last at" in line and "clock offset" in line

    slow = write_fleet(tmp_path / "slow", ranks=4, steps=10, segments=1, slow_rank=2, seed=1)
    for path in slow.paths:
        summarize_rank(path, str(tmp_path / "slow-out"))
    fine = reduce_fleet(str(tmp_path / "slow-out"))
    assert fine.stragglers == (2,) and fine.vote["in_doubt"] == []
    assert "clock_offset_suspected" not in fine.findings
    assert not any(r["in_doubt"] or r["clock_suspect_last"] for r in straggler_rows(read_fleet_folder(tmp_path / "slow-out")))


def test_a_group_of_more_than_30_ranks_as_kineto_records_it(tmp_path: Path):
    """Kineto cuts "Process Group Ranks" after 30 entries; the reduce still matches all 40."""
    from parity.trace.fleet.mapper import summarize_rank

    truth = write_fleet(tmp_path / "traces", ranks=40, steps=2, segments=1, slow_rank=7, seed=1)
    with gzip.open(truth.paths[0], "rt") as fh:
        kernel = next(e for e in json.load(fh)["traceEvents"] if e.get("name", "").startswith("nccl"))
    assert kernel["args"]["Process Group Ranks"].endswith(", 29, ...]")
    for path in truth.paths:
        summarize_rank(path, str(tmp_path / "out"))
    summary = reduce_fleet(str(tmp_path / "out"))
    assert summary.findings == {} and summary.counts["collectives"] == 2
    c = _compare(tmp_path / "out", truth)
    assert c["members"] == [40, 40] and c["last_rank"] == [7, 7]


LATE_IN_GROUP = dict(ranks=16, steps=40, segments=3, group_size=4, slow_link=8, slow_rank=9, late_rank=2,
                     late_every=2, late_ns=200_000, seed=5)


def test_a_rank_late_in_its_sub_group_is_named_by_that_group(tmp_path: Path):
    """Rank 2 is 200 µs late at its sub-group's collective every second step; the world
    collectives after it are last-arrived by its group's other members (the delay it passed
    on), so over all its collectives it is last in 24% against a fair 12.5%: too little. In
    group "1" it is last in most: the vote names it there, and by the time it kept its
    collectives waiting (200 µs each time, where its group's others pass on a few µs)."""
    truth = truth_of(simulate(**LATE_IN_GROUP), stragglers=(2, 9))
    write_maps(tmp_path, truth.simulation)
    summary = reduce_fleet(str(tmp_path))
    _compare(tmp_path, truth)
    assert summary.stragglers == (2, 9)
    assert summary.vote["named_by"]["2"] == ["time", "1"] and "all" in summary.vote["named_by"]["9"]
    # every rank: counts and time over all its collectives, and counts in the world group and
    # in its sub-group
    assert summary.vote["tests"] == 16 * 2 + 16 * 2


INTERMITTENT = dict(ranks=16, steps=60, segments=3, group_size=4, slow_rank=3, late_rank=6, late_every=3, seed=1)


def test_a_rank_late_by_far_at_one_collective_in_nine_is_named_by_the_time_it_held(tmp_path: Path):
    """Rank 6 stalls 120 µs before its sub-group's all_gather in one step of three (one of its
    nine collectives): last in too small a share for any count, over all its collectives or its
    group's, but it kept its collectives waiting far beyond its fair share of that time."""
    truth = truth_of(simulate(**INTERMITTENT), stragglers=(3, 6))
    write_maps(tmp_path, truth.simulation)
    summary = reduce_fleet(str(tmp_path))
    _compare(tmp_path, truth)
    assert summary.stragglers == truth.stragglers == (3, 6)
    assert summary.vote["named_by"]["6"] == ["time"] and "all" in summary.vote["named_by"]["3"]
    s = {r["rank"]: r for r in pq.read_table(tmp_path / "stragglers.parquet").to_pylist()}
    # 20 stalls of about 120 µs less the group's others' jitter: held near 20 x 120 µs
    assert 2_200_000 <= s[6]["held_ns"] <= 2_450_000 and s[6]["held_ns"] >= 2 * s[6]["fair_held_ns"]
    assert s[6]["share_last"] < 2 * s[6]["expected_share"] and s[6]["step_cost_ns"] == 0
    # no fair rank holds twice its fair share
    assert all(r["held_ns"] < 2 * r["fair_held_ns"] for k, r in s.items() if k not in (3, 6))
