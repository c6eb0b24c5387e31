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
    # rank 2 is last, by about its 30 µs of extra compute, in the two steps of three rank 5 is on time
    assert 25_000 <= cost[2] <= 30_000


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
    assert {"Collective name", "In msg nelems", "Out msg nelems", "dtype", "Process Group Name",
            "Process Group Ranks", "Group size", "In split size", "Out split size", "correlation", "stream"} <= set(args)
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
