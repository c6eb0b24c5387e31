"""The fleet map: one rank's trace to its tables, figures equal to ``parity trace analyze``'s."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from parity.trace import analyze, load_trace
from parity.trace.categories import categorize, load_rules
from parity.trace.fleet.collectives import collective_rows
from parity.trace.fleet.mapper import rank_file, rank_tables, step_rows, summarize_rank
from parity.trace.fleet.tables import MAP_TABLES, arrow_schema
from parity.trace.table import NO_ID, ActivityTable, Kind

pq = pytest.importorskip("pyarrow.parquet")

KINETO_RANKS = ("kineto/hta/trace_filter/sampled_rank-0.json.gz", "kineto/hta/trace_filter/sampled_rank-1.json.gz")
ASCEND_RANKS = {
    "text-level0": ("ascend/msinsight/text/level0/rank0_ascend_pt", "ascend/msinsight/text/level0/rank1_ascend_pt"),
    "text-level1": ("ascend/msinsight/text/level1/rank0_ascend_pt", "ascend/msinsight/text/level1/rank1_ascend_pt"),
    "db-level0": ("ascend/msinsight/db/level0/rank0_ascend_pt", "ascend/msinsight/db/level0/rank1_ascend_pt"),
}
JOBS = {"kineto": KINETO_RANKS, **ASCEND_RANKS}


def _read(out: Path, table: str, rank: int) -> list[dict]:
    data = pq.read_table(rank_file(out, table, rank))
    assert data.schema == arrow_schema(MAP_TABLES[table]), f"{table}: schema differs from the contract"
    return data.to_pylist()


@pytest.mark.parametrize("job", sorted(JOBS))
def test_each_ranks_tables_equal_the_analysis_of_all_ranks_together(job, traces_dir: Path, tmp_path: Path) -> None:
    paths = [traces_dir / p for p in JOBS[job]]
    together = analyze(load_trace(paths))
    assert len(together.ranks) == len(paths)
    for path in paths:
        done = summarize_rank(str(path), str(tmp_path))
        expected = next(r for r in together.ranks if r.rank == done["rank"])
        rank = done["rank"]
        [info] = _read(tmp_path, "rank_info", rank)
        assert (info["window_start_ns"], info["window_end_ns"], info["window_source"]) == (
            expected.window.start_ns, expected.window.end_ns, expected.window.source)
        assert (info["device_busy_ns"], info["device_idle_ns"]) == (expected.device.busy_ns, expected.device.idle_ns)
        assert (info["compute_ns"], info["communication_ns"], info["exposed_communication_ns"]) == (
            expected.comm.compute_ns, expected.comm.communication_ns, expected.comm.exposed_communication_ns)
        streams = [(s["device"], s["stream"], s["kernels"], s["busy_ns"], s["busy_fraction"], s["share_of_summed"])
                   for s in _read(tmp_path, "streams", rank)]
        assert streams == [(s.device, s.stream, s.kernels, s.busy_ns, s.busy_fraction, s.share_of_summed)
                           for s in expected.streams]
        categories = [(c["category"], c["time_ns"], c["share_of_busy"]) for c in _read(tmp_path, "categories", rank)]
        assert categories == [(c.category, c.time_ns, c.share_of_busy) for c in expected.categories]
        assert done["rows"]["collectives"] > 0


@pytest.mark.parametrize("job", ["kineto", "text-level1"])
def test_each_steps_figures_are_the_analysis_of_that_step(job, traces_dir: Path) -> None:
    """A step's row is ``parity trace analyze --steps N-N``'s window, compute, communication,
    exposed communication and idle."""
    table = load_trace([traces_dir / JOBS[job][0]])
    steps = rank_tables(table)["steps"]
    assert len(steps["step"]) >= 1
    for i, step in enumerate(steps["step"].tolist()):
        r = analyze(table, steps=(step, step)).ranks[0]
        assert (steps["start_ns"][i], steps["end_ns"][i]) == (r.window.start_ns, r.window.end_ns)
        assert steps["compute_ns"][i] == r.comm.compute_ns
        assert steps["communication_ns"][i] == r.comm.communication_ns
        assert steps["exposed_communication_ns"][i] == r.comm.exposed_communication_ns
        assert steps["idle_ns"][i] == r.device.idle_ns


def test_kineto_collectives_come_from_the_nccl_arguments(traces_dir: Path) -> None:
    """nccl_data.json.gz: 15 all-reduce and 6 broadcast kernels of group "0" with their
    arguments; the GPU-side ``nccl:*`` annotations are not counted again."""
    table = load_trace([traces_dir / "kineto/hta/nccl_parser_config/nccl_data.json.gz"])
    rows = collective_rows(table, categorize(table, load_rules(None)))
    ops = rows["op"].tolist()
    assert (ops.count("all_reduce"), ops.count("broadcast"), len(ops)) == (15, 6, 21)
    assert set(rows["group"].tolist()) == {"0"} and set(rows["group_ranks"].tolist()) == {"[0, 1]"}
    assert rows["seq"].tolist() == list(range(21))
    assert (np.diff(rows["start_ns"]) >= 0).all()
    first = [i for i, op in enumerate(ops) if op == "all_reduce"][0]
    # In msg nelems 2,049,000 floats: the all-reduce buffer, 4 B each
    assert (rows["in_nelems"][first], rows["dtype"][first], rows["bytes"][first]) == (2049000, "Float", 8196000)
    assert set(rows["step"].tolist()) <= {4, 5, 6}


def test_kernels_without_arguments_are_found_by_name(traces_dir: Path) -> None:
    """sampled_rank-0: ten NCCL SendRecv kernels, no arguments: group "default", bytes -1."""
    table = load_trace([traces_dir / KINETO_RANKS[0]])
    rows = collective_rows(table, categorize(table, load_rules(None)))
    assert rows["op"].tolist() == ["sendrecv"] * 10
    assert set(rows["group"].tolist()) == {"default"}
    assert (rows["bytes"] == -1).all() and (rows["in_nelems"] == -1).all()


@pytest.mark.parametrize("job, group", [("text-level0", "868"), ("text-level1", "17522688603477080586"),
                                        ("db-level0", "90.91.105.46%enp189s0f0_60000_0_1736407029972691")])
def test_ascend_hccl_operations_are_collectives(job, group, traces_dir: Path) -> None:
    """Four all-reduce operations of 4,097,000 .. FP32 elements; the group from
    communication.json or the db, else the number in the op name (level 0 text)."""
    table = load_trace([traces_dir / JOBS[job][0]])
    rows = collective_rows(table, categorize(table, load_rules(None)))
    assert rows["op"].tolist() == ["all_reduce"] * 4
    assert set(rows["group"].tolist()) == {group}
    assert rows["in_nelems"].tolist() == [4097000, 16781312, 37752832, 2469696]
    assert rows["bytes"].tolist() == [4 * n for n in rows["in_nelems"].tolist()]
    assert rows["seq"].tolist() == [0, 1, 2, 3]


def _stepped_table() -> ActivityTable:
    """Two steps on two streams, the reader's step column set: step 0 a GEMM [0, 100) and an
    all-reduce [50, 150) (50 ns overlapped); step 1 a GEMM [200, 260) and an all-reduce
    [300, 340) (none overlapped, 40 ns idle between)."""
    names = ("sm90_xmma_gemm_f16f16_f32", "ncclDevKernel_AllReduce_Sum_f32_RING_LL")
    rows = [(0, 0, 0, 100), (1, 0, 50, 150), (0, 1, 200, 260), (1, 1, 300, 340)]  # (name, step, start, end)
    n = len(rows)
    return ActivityTable(
        rank=np.zeros(n, np.int32), device=np.zeros(n, np.int32), stream=np.array([7, 9, 7, 9], np.int64),
        kind=np.full(n, int(Kind.KERNEL), np.int8), name_id=np.array([r[0] for r in rows], np.int32),
        start_ns=np.array([r[2] for r in rows], np.int64), end_ns=np.array([r[3] for r in rows], np.int64),
        correlation=np.full(n, NO_ID, np.int64), step=np.array([r[1] for r in rows], np.int32), names=names,
    )  # fmt: skip


def test_step_figures_by_hand() -> None:
    """Per step: span = first start .. last end; compute |K|, communication |C|, exposed
    |C| - |K ∩ C| with |K ∩ C| = |K| + |C| - |K ∪ C|, idle = span - |all rows|.
    Step 0: span [0, 150), K 100, C 100, K ∪ C 150, so K ∩ C 50, exposed 50, idle 0.
    Step 1: span [200, 340), K 60, C 40, K ∪ C 100, so K ∩ C 0, exposed 40, idle 40."""
    table = _stepped_table()
    steps = step_rows(table, categorize(table, load_rules(None)), 0)
    assert steps["step"].tolist() == [0, 1]
    assert (steps["start_ns"].tolist(), steps["end_ns"].tolist()) == ([0, 200], [150, 340])
    assert steps["compute_ns"].tolist() == [100, 60]
    assert steps["communication_ns"].tolist() == [100, 40]
    assert steps["exposed_communication_ns"].tolist() == [50, 40]
    assert steps["idle_ns"].tolist() == [0, 40]
    for i in (0, 1):  # and what the analysis of that one step says
        r = analyze(table, steps=(i, i)).ranks[0]
        assert (r.comm.compute_ns, r.comm.communication_ns, r.comm.exposed_communication_ns, r.device.idle_ns) == (
            steps["compute_ns"][i], steps["communication_ns"][i], steps["exposed_communication_ns"][i],
            steps["idle_ns"][i])  # fmt: skip
