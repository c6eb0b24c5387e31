"""Real rank traces replicated into small jobs with known arrival shifts (the replicas the
benchmarks against msprof-analyze and TraceLens use): the fleet's map and reduce find the
injected last ranks and skews exactly."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("pyarrow")
BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
sys.path.insert(0, str(BENCHMARKS))

import ascend_replica  # noqa: E402  (the benchmark folder is not a package: put on the path above)
import kineto_replica  # noqa: E402

from parity.trace.fleet.mapper import summarize_rank  # noqa: E402
from parity.trace.fleet.reduce import reduce_fleet  # noqa: E402


def _fleet(paths, out: Path) -> tuple[list[dict], list[dict]]:
    import pyarrow.parquet as pq

    for path in paths:
        summarize_rank(str(path), str(out))
    reduce_fleet(str(out))
    collectives = sorted(pq.read_table(out / "collectives.parquet").to_pylist(), key=lambda r: r["seq"])
    return collectives, pq.read_table(out / "stragglers.parquet").to_pylist()


def test_an_ascend_replica_gives_the_injected_last_ranks_and_skews(traces_dir: Path, tmp_path: Path) -> None:
    template = traces_dir / "ascend/msinsight/db/level0/rank0_ascend_pt"
    truth = ascend_replica.replicate(template, tmp_path / "job", ranks=6, slow_rank=4, late_rank=1, late_op=2)
    collectives, stragglers = _fleet(truth.folders, tmp_path / "out")
    assert [c["last_rank"] for c in collectives] == list(truth.last_rank) == [4, 4, 1, 4]
    assert [c["skew_ns"] for c in collectives] == list(truth.skew_ns)
    assert {c["group"] for c in collectives} == {truth.group} and {c["members"] for c in collectives} == {6}
    assert stragglers[0]["rank"] == 4 and stragglers[0]["times_last"] == 3


def test_a_kineto_replica_gives_the_injected_last_ranks_and_skews(traces_dir: Path, tmp_path: Path) -> None:
    template = traces_dir / "kineto/hta/nccl_parser_config/nccl_data.json.gz"
    replica = kineto_replica.replicate(template, tmp_path / "job", ranks=4, slow_rank=2)
    collectives, stragglers = _fleet(replica.paths, tmp_path / "out")
    shift = replica.shift_ns
    assert len(collectives) == shift.shape[1] == 21  # 15 all_reduce and 6 broadcast in group "0"
    assert [c["last_rank"] for c in collectives] == [2] * 21
    skew = np.array([c["skew_ns"] for c in collectives])
    # each start is written in us with three decimals of the template's ns: at most 1 ns off
    assert np.abs(skew - (shift.max(axis=0) - shift.min(axis=0))).max() <= 1
    assert stragglers[0]["rank"] == 2 and stragglers[0]["straggler"]
