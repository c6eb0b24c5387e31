"""The analysis on real traces: Ascend's own step figures reproduced, Kineto figures cross-checked."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pytest

from parity.trace import analyze, load_trace
from parity.trace.ascend_steps import TOLERANCE_US
from parity.trace.categories import UNMATCHED, load_rules
from parity.trace.table import Kind

ASCEND = [
    "ascend/msinsight/text/level0/rank0_ascend_pt",
    "ascend/msinsight/text/level0/rank1_ascend_pt",
    "ascend/msinsight/text/level1/rank0_ascend_pt",
    "ascend/msinsight/text/level1/rank1_ascend_pt",
    "ascend/msinsight/db/level0/rank0_ascend_pt",
    "ascend/msinsight/db/level0/rank1_ascend_pt",
]
KINETO = "kineto/hta/negative_queue_length_values_check/rank0.json.gz"


@pytest.mark.parametrize("folder", ASCEND)
def test_ascend_steps_match_the_profiler(traces_dir: Path, folder: str) -> None:
    result = analyze(load_trace([traces_dir / folder]))
    steps = result.first.ascend_steps
    assert steps, "no Ascend step rebuilt"
    for step in steps:
        assert step.reference, f"step {step.step} has no step_trace_time row to compare with"
        assert {"computing_us", "communication_us", "free_us"} <= set(step.reference)
        for key, expected in step.reference.items():
            assert getattr(step, key) == pytest.approx(expected, abs=TOLERANCE_US), key
    assert not [f for f in result.findings if f.code == "step-trace-mismatch"]
    # exposed communication in the window is the step table's Communication(Not Overlapped)
    first, last = result.first.window.steps
    chosen = [s for s in steps if first <= s.step <= last]
    expected = sum(s.reference["communication_not_overlapped_us"] for s in chosen)
    exposed_us = result.first.comm.exposed_communication_ns / 1e3
    assert exposed_us == pytest.approx(expected, abs=TOLERANCE_US * len(chosen))
    assert not [f for f in result.findings if f.code == "exposed-communication-mismatch"]


def test_ascend_two_ranks_in_one_folder(traces_dir: Path) -> None:
    result = analyze(load_trace([traces_dir / "ascend/msinsight/text/level1"]))
    assert [r.rank for r in result.ranks] == [0, 1]
    assert all(s.max_deviation_us < TOLERANCE_US for r in result.ranks for s in r.ascend_steps)
    assert result.spread is not None and result.spread.slowest_rank in (0, 1)


def _busy_by_loop(starts: list[int], ends: list[int]) -> int:
    """Union length the plain way, to cross-check the vectorised one on real data."""
    total, cur_s, cur_e = 0, None, None
    for s, e in sorted(zip(starts, ends)):
        if cur_e is None or s > cur_e:
            total += 0 if cur_e is None else cur_e - cur_s
            cur_s, cur_e = s, e
        else:
            cur_e = max(cur_e, e)
    return total + (0 if cur_e is None else cur_e - cur_s)


def test_kineto_figures_against_a_plain_loop(traces_dir: Path) -> None:
    table = load_trace([traces_dir / KINETO])
    result = analyze(table)
    rank = result.first
    w = rank.window
    assert w.source == "steps" and w.steps == (551, 554)
    device = np.flatnonzero(table.device_mask())
    s = np.maximum(table.start_ns[device], w.start_ns)
    e = np.minimum(table.end_ns[device], w.end_ns)
    keep = e > s
    assert rank.device.busy_ns == _busy_by_loop(s[keep].tolist(), e[keep].tolist())
    for stream in rank.streams:
        mine = keep & (table.stream[device] == stream.stream)
        assert stream.busy_ns == _busy_by_loop(s[mine].tolist(), e[mine].tolist())
    assert rank.device.busy_ns + rank.device.idle_ns == w.length_ns
    assert sum(rank.device.streams_at_once_ns) == w.length_ns
    assert sum(c * t for c, t in enumerate(rank.device.streams_at_once_ns)) == rank.device.summed_busy_ns
    names = {k.name for k in rank.top_kernels if k.category == "communication"}
    assert any("nccl" in n for n in names)
    kernels = table.kind == Kind.KERNEL
    assert sum(st.kernels for st in rank.streams) <= int(table.device_mask().sum()) and kernels.any()


@pytest.mark.parametrize("name", ["kernel_details_small.csv", "kernel_details_compute_advice.csv"])
def test_every_ascend_core_has_a_category(traces_dir: Path, name: str) -> None:
    rules = load_rules()
    with (traces_dir / "ascend/msprof-analyze" / name).open(newline="") as handle:
        rows = list(csv.DictReader(handle))
    for row in rows:
        got = rules.category_of(row["Name"], Kind.KERNEL, row["Accelerator Core"])
        assert got != UNMATCHED, row["Name"]
        if row["Accelerator Core"] == "HCCL":
            assert got == "communication"
        elif row["Accelerator Core"] == "AI_CORE" and "allreduce" not in row["Name"].lower():
            assert got == "matrix"


def test_kineto_two_ranks_spread(traces_dir: Path) -> None:
    result = analyze(load_trace([traces_dir / "kineto/hta/trace_filter"]))
    assert [r.rank for r in result.ranks] == [0, 1]
    spread = result.spread
    assert spread is not None and set(spread.compute_ns) == {0, 1}
    assert spread.slowest_rank == max(spread.compute_ns, key=spread.compute_ns.get)
    for rank in result.ranks:
        assert rank.device.busy_ns <= rank.window.length_ns
        assert sum(s.share_of_summed for s in rank.streams) == pytest.approx(1.0)


def _shared_units(traces_dir: Path) -> list[Path]:
    kineto = sorted((traces_dir / "kineto").rglob("*.json*"))
    return kineto + sorted((traces_dir / "nsys").rglob("*.sqlite")) + sorted((traces_dir / "ascend").rglob("*_ascend_pt"))


def test_analyze_and_whatif_state_the_same_window_on_every_shared_trace(traces_dir: Path) -> None:
    from parity.model.errors import ParityError
    from parity.trace.whatif import parse_scale, predict

    compared = 0
    for unit in _shared_units(traces_dir):
        try:
            table = load_trace([unit])
        except ParityError:
            continue  # an execution trace: no profiler events
        if not table.device_mask().any():
            continue  # host only: trace analyze refuses it
        windows = [r.window for r in analyze(table).ranks]
        p = predict(table, [parse_scale("matrix=1")], method="first-order", with_sensitivity=False)
        assert (p.window.start_ns, p.window.end_ns) == (min(w.start_ns for w in windows),
                                                         max(w.end_ns for w in windows)), unit
        compared += 1
    assert compared >= 25
