"""reduce_fleet on map tables built by hand: every table, every figure, the findings."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from fleet_maps import write_rows

from parity.model.errors import ParityError
from parity.trace.fleet.reduce import reduce_fleet
from parity.trace.fleet.tables import FLEET_TABLES, arrow_schema

G0 = "[0, 1, 2]"


def _coll(rank, group, seq, op, start, end, nbytes=1000, ranks=G0, step=1):
    return {"rank": rank, "group": group, "group_ranks": ranks, "op": op, "seq": seq, "start_ns": start,
            "end_ns": end, "bytes": nbytes, "step": step}


def _hand_fleet(out: Path) -> None:
    """Three ranks. Group "0" ([0, 1, 2]): an all_reduce (arrivals 10, 40, 25; ends 100, 70, 100)
    and an all_to_all (arrivals 5, 5, 9; ends 50, 60, 40; bytes 10, 30, 20); rank 2 sends a
    point-to-point op between them. Group "pair" (no ranks recorded; ranks 0 and 1): a
    broadcast (arrivals 100, 130; ends 200, 200)."""
    rows = {
        0: [_coll(0, "0", 0, "allreduce", 10, 100), _coll(0, "0", 1, "alltoall", 5, 50, 10),
            _coll(0, "pair", 0, "broadcast", 100, 200, 64, ranks="")],
        1: [_coll(1, "0", 0, "allreduce", 40, 70), _coll(1, "0", 1, "alltoall", 5, 60, 30),
            _coll(1, "pair", 0, "broadcast", 130, 200, 64, ranks="")],
        2: [_coll(2, "0", 0, "allreduce", 25, 100), _coll(2, "0", 1, "send", 30, 35),
            _coll(2, "0", 2, "alltoall", 9, 40, 20)],
    }
    for rank, coll in rows.items():
        write_rows(out, "collectives", rank, coll)
        write_rows(out, "rank_info", rank, [{"rank": rank, "node": f"host{rank}", "compute_ns": 100 + rank,
                                             "communication_ns": 50 + rank, "device_idle_ns": 7 * rank, "steps": 2,
                                             "window_start_ns": 1000, "window_end_ns": 2000 + 10 * rank}])
        write_rows(out, "steps", rank, [{"rank": rank, "step": s, "start_ns": 1000 * s, "end_ns": 1000 * s + 900 + rank}
                                        for s in (2, 1)])


def _table(out: Path, name: str) -> dict:
    return pq.read_table(out / f"{name}.parquet").to_pydict()


@pytest.fixture()
def hand(tmp_path: Path) -> Path:
    _hand_fleet(tmp_path)
    return tmp_path


def test_collectives_table(hand: Path):
    summary = reduce_fleet(str(hand), ranks_per_node=2)
    c = _table(hand, "collectives")
    assert list(zip(c["group"], c["seq"], c["op"])) == [("0", 0, "all_reduce"), ("0", 1, "all_to_all"),
                                                        ("pair", 0, "broadcast")]
    assert c["members"] == [3, 3, 2] and c["step"] == [1, 1, 1]
    assert c["first_arrival_ns"] == [10, 5, 100] and c["last_arrival_ns"] == [40, 9, 130]
    assert c["skew_ns"] == [30, 4, 30] and c["last_rank"] == [1, 2, 1]
    assert c["comm_ns"] == [30, 31, 70] and c["bytes"] == [1000, 30, 64]
    assert c["algbw_bps"][0] == pytest.approx(1000 / 30e-9)
    assert c["busbw_bps"][0] == pytest.approx(1000 / 30e-9 * 2 * 2 / 3)
    assert c["busbw_bps"][1] == pytest.approx(30 / 31e-9 * 2 / 3)
    assert c["busbw_bps"][2] == pytest.approx(64 / 70e-9)
    assert c["scope"] == ["inter-node", "inter-node", "intra-node"]
    assert c["size_imbalance"][0] == 1.0 and c["size_imbalance"][1] == pytest.approx(1.5)
    assert summary.counts["collectives"] == 3 and summary.counts["p2p"] == 1
    assert summary.findings["p2p_not_matched"] == {"count": 1, "ranks": 1}


def test_arrivals_table(hand: Path):
    reduce_fleet(str(hand))
    a = _table(hand, "arrivals")
    assert list(zip(a["group"], a["seq"], a["rank"])) == [("0", 0, 0), ("0", 0, 1), ("0", 0, 2), ("0", 1, 0),
                                                          ("0", 1, 1), ("0", 1, 2), ("pair", 0, 0), ("pair", 0, 1)]
    assert a["wait_ns"] == [30, 0, 15, 4, 4, 0, 30, 0]
    assert a["lateness_ns"] == [-15, 15, 0, 0, 0, 4, -15, 15]
    assert a["last"] == [False, True, False, False, False, True, False, True]


def test_ranks_and_stragglers_tables(hand: Path):
    summary = reduce_fleet(str(hand))
    r = _table(hand, "ranks")
    assert r["rank"] == [0, 1, 2] and r["node"] == ["host0", "host1", "host2"]
    assert r["collectives"] == [3, 3, 2] and r["times_last"] == [0, 2, 1]
    assert r["wait_ns"] == [64, 4, 15]
    assert r["median_lateness_ns"] == [-15, 15, 2]
    assert r["compute_ns"] == [100, 101, 102] and r["communication_ns"] == [50, 51, 52]
    assert r["idle_ns"] == [0, 7, 14] and r["steps"] == [2, 2, 2]
    assert r["window_ns"] == [1000, 1010, 1020]  # what compute, communication and idle are in
    s = _table(hand, "stragglers")
    assert s["rank"] == [1, 2, 0] and s["times_last"] == [2, 1, 0]
    assert s["share_last"] == pytest.approx([2 / 3, 1 / 2, 0])
    assert s["expected_share"] == pytest.approx([(1 / 3 + 1 / 3 + 1 / 2) / 3, 1 / 3, (1 / 3 + 1 / 3 + 1 / 2) / 3])
    assert s["step_cost_ns"] == [45, 4, 0] and s["median_margin_ns"] == [22, 4, 0]
    assert s["mean_step_cost_ns"] == [45, 4, 0]  # one step
    assert s["step_ns"] == [901, 902, 900] and set(s["method"]) == {"first-order"}
    assert s["straggler"] == [False, False, False] and summary.stragglers == ()  # too few collectives
    steps = _table(hand, "steps")
    assert list(zip(steps["rank"], steps["step"])) == [(0, 1), (0, 2), (1, 1), (1, 2), (2, 1), (2, 2)]


def test_every_table_has_the_contract_schema(hand: Path):
    reduce_fleet(str(hand))
    for name, columns in FLEET_TABLES.items():
        schema = pq.read_schema(hand / f"{name}.parquet")
        assert schema.remove_metadata().equals(arrow_schema(columns), check_metadata=True), name
        units = {f.name: (f.metadata or {}).get(b"unit", b"").decode() for f in schema}
        assert units == {n: u for n, _, u in columns}


def test_fleet_json(hand: Path):
    reduce_fleet(str(hand), ranks_per_node=2)
    doc = json.loads((hand / "fleet.json").read_text())
    assert doc["schema_version"] == 1 and doc["ranks"] == 3 and doc["ranks_per_node"] == 2
    assert doc["methods"]["step_cost_ns"].startswith("first-order")
    assert doc["step_cost"] == {"replay": "not used: fewer than two steps", "ranks": {}}
    assert doc["methods"]["comm_ns"].startswith("min over members")
    # 3 ranks, two tests each (counts and time), and ranks 0 and 1 are in two groups: 4 (rank,
    # group) cells more
    assert doc["vote"]["voters"] == 3 and doc["vote"]["tests"] == 10
    assert doc["vote"]["threshold"] == pytest.approx(math.log(1000)) and doc["vote"]["named_by"] == {}
    assert doc["counts"]["groups"] == 2 and doc["counts"]["arrivals"] == 8
    assert not {"executor", "time", "seconds"} & set(doc)


def test_node_names_without_ranks_per_node(tmp_path: Path):
    _hand_fleet(tmp_path)
    reduce_fleet(str(tmp_path))
    assert set(_table(tmp_path, "collectives")["scope"]) == {"inter-node"}  # host0, host1, host2
    write_rows(tmp_path, "rank_info", 1, [{"rank": 1, "node": ""}])
    reduce_fleet(str(tmp_path))
    assert set(_table(tmp_path, "collectives")["scope"]) == {"unknown"}


def test_findings_mismatched_incomplete_missing(tmp_path: Path):
    ranks = "[0, 1, 2, 3]"
    for rank in (0, 1, 2):
        op = "allgather" if rank == 1 else "allreduce"
        write_rows(tmp_path, "collectives", rank, [_coll(rank, "0", 0, op, 10 + rank, 50, ranks=ranks)])
        write_rows(tmp_path, "rank_info", rank, [{"rank": rank}])
    summary = reduce_fleet(str(tmp_path))
    f = summary.findings
    assert f["mismatched_op"]["count"] == 1 and f["mismatched_op"]["examples"][0]["ops"] == ["all_gather", "all_reduce"]
    assert f["incomplete"]["examples"] == [{"group": "0", "seq": 0, "ranks": 3, "members": 4, "missing": [3]}]
    assert f["ranks_missing"] == {"count": 1, "ranks": [3]}
    assert json.loads((tmp_path / "fleet.json").read_text())["findings"] == f


def test_output_does_not_depend_on_how_the_map_split_its_files(tmp_path: Path):
    one, two = tmp_path / "one", tmp_path / "two"
    _hand_fleet(one)
    _hand_fleet(two)
    # the same rows, rank 2's collectives written into rank 0's file in reverse order
    rows0 = pq.read_table(two / "map/collectives/rank-000000.parquet")
    rows2 = pq.read_table(two / "map/collectives/rank-000002.parquet")
    import pyarrow as pa

    (two / "map/collectives/rank-000002.parquet").unlink()
    both = pa.concat_tables([rows2, rows0])
    pq.write_table(both.take(list(range(both.num_rows - 1, -1, -1))), two / "map/collectives/rank-000000.parquet")
    reduce_fleet(str(one))
    reduce_fleet(str(two))
    for name in FLEET_TABLES:
        assert pq.read_table(one / f"{name}.parquet").equals(pq.read_table(two / f"{name}.parquet")), name
    assert (one / "fleet.json").read_text() == (two / "fleet.json").read_text()


def test_errors(tmp_path: Path):
    with pytest.raises(ParityError, match="no map tables"):
        reduce_fleet(str(tmp_path))
    _hand_fleet(tmp_path)
    with pytest.raises(ParityError, match="ranks per node"):
        reduce_fleet(str(tmp_path), ranks_per_node=0)


def test_a_fleet_without_collectives(tmp_path: Path):
    for rank in (0, 1):
        write_rows(tmp_path, "rank_info", rank, [{"rank": rank, "compute_ns": 5}])
    summary = reduce_fleet(str(tmp_path))
    assert summary.counts["collectives"] == 0 and summary.stragglers == ()
    assert _table(tmp_path, "ranks")["rank"] == [0, 1]
    assert _table(tmp_path, "arrivals")["rank"] == []


def test_the_reduce_imports_without_torch_or_pyarrow():
    import subprocess
    import sys

    code = ("import sys; sys.modules['torch'] = None; sys.modules['pyarrow'] = None; "
            "import parity.trace.fleet.reduce, parity.trace.fleet.synthetic, parity.trace.fleet.synthetic_kineto")
    subprocess.run([sys.executable, "-c", code], check=True, env={**__import__("os").environ})


def test_an_op_that_ends_before_the_last_arrival_is_a_clock_finding(tmp_path: Path):
    # rank 1's clock runs 5 us behind: its op "ends" before rank 0 arrived
    write_rows(tmp_path, "collectives", 0, [_coll(0, "0", 0, "allreduce", 10_000, 20_000, ranks="[0, 1]")])
    write_rows(tmp_path, "collectives", 1, [_coll(1, "0", 0, "allreduce", 2_000, 8_000, ranks="[0, 1]")])
    summary = reduce_fleet(str(tmp_path))
    assert summary.findings["clock_offset_suspected"] == {
        "count": 1, "ranks": 1, "examples": [{"rank": 1, "ops": 1, "max_early_end_ns": 2_000}]}
    _hand_fleet(tmp_path / "fine")
    assert "clock_offset_suspected" not in reduce_fleet(str(tmp_path / "fine")).findings


def test_a_truncated_rank_list_names_some_members_only(tmp_path: Path):
    """Kineto writes 30 ranks of a larger group, then "...": the members are those it names and
    every rank with an op of the group, so 40 ranks that all recorded the op are complete."""
    text = "[" + ", ".join(map(str, range(30))) + ", ...]"
    for rank in range(40):
        write_rows(tmp_path, "collectives", rank, [_coll(rank, "0", 0, "allreduce", 10 + rank, 100, ranks=text)])
    summary = reduce_fleet(str(tmp_path))
    assert summary.findings == {} and _table(tmp_path, "collectives")["members"] == [40]
    # rank 39 missing: with a truncated list nothing says it belonged, so nothing is flagged
    (tmp_path / "map/collectives/rank-000039.parquet").unlink()
    assert reduce_fleet(str(tmp_path)).findings == {}
