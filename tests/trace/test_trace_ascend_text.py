"""The Ascend text output on small folders made here: unknown cores, older timelines, missing
or partial files."""

from __future__ import annotations

from pathlib import Path

import pytest
from ascend_folder import KERNEL_DETAILS, OVERLAP, STEP_TRACE, TASKS, write_rank

from parity.model.errors import ParityError
from parity.trace import analyze, load_trace
from parity.trace.categories import categorize


def categories_by_name(table) -> dict[str, str]:
    labels = categorize(table).of_rows()
    device = table.device_mask()
    return {table.names[table.name_id[i]]: labels[i] for i in range(len(table)) if device[i]}


def test_a_core_the_profiler_did_not_record_leaves_the_category_to_the_name(tmp_path: Path) -> None:
    """Profiler level 0: kernel_details.csv says N/A, the timeline says AI_CORE for every
    kernel; LayerNorm is vector by its name, not matrix by a guessed core."""
    unknown = [(name, "N/A", start, duration) for name, _, start, duration in KERNEL_DETAILS]
    table = load_trace(write_rank(tmp_path, kernel_details=unknown))
    assert categories_by_name(table) == {"MatMulV2": "matrix", "LayerNorm": "vector", "Notify Wait": "communication",
                                         "hcom_allReduce__1_0_1": "communication"}
    found = [f for f in analyze(table).findings if f.code == "core-type-unavailable"]
    assert len(found) == 1 and "2 kernels (100% of summed operator time)" in found[0].message


def test_a_recorded_core_wins_and_no_core_finding(tmp_path: Path) -> None:
    table = load_trace(write_rank(tmp_path))
    assert categories_by_name(table)["LayerNorm"] == "vector"
    result = analyze(table)
    assert not [f for f in result.findings if f.code == "core-type-unavailable"]
    step = result.first.ascend_steps[0]
    assert (step.computing_us, step.communication_us, step.free_us, step.max_deviation_us) == (300.0, 150.0, 50.0, 0.0)


OTHER_TASKS = [(name, stream, start, end, "Other" if task_type == "AI_CORE" else task_type)
               for name, stream, start, end, task_type in TASKS]
OLD_DETAILS = [(name, "", start, duration) for name, _, start, duration in KERNEL_DETAILS]  # no core column


def test_an_older_timeline_typing_every_ai_core_task_other(tmp_path: Path) -> None:
    """Older CANN: AI-core tasks have Task Type Other and kernel_details.csv records no core;
    Computing is still every operator, and the profiler's Overlap Analysis lanes agree."""
    rank = write_rank(tmp_path, tasks=OTHER_TASKS, kernel_details=OLD_DETAILS, overlap=OVERLAP)
    table = load_trace(rank)
    result = analyze(table)
    step = result.first.ascend_steps[0]
    assert (step.computing_us, step.free_us) == (300.0, 50.0)
    assert step.lanes == {"computing_us": 300.0, "communication_us": 150.0,
                          "communication_not_overlapped_us": 150.0, "free_us": 50.0}
    assert step.lanes_deviation_us == 0.0
    assert not [f for f in result.findings if f.code in ("overlap-analysis-mismatch", "step-trace-mismatch")]
    assert categories_by_name(table)["LayerNorm"] == "vector"  # core unknown: the name decides


def test_figures_unlike_the_overlap_analysis_lanes_are_a_finding(tmp_path: Path) -> None:
    wrong = [("Computing", 100, 250), *OVERLAP[1:]]  # the profiler says Computing 150 us
    result = analyze(load_trace(write_rank(tmp_path, tasks=OTHER_TASKS, kernel_details=None, step_trace=None,
                                           overlap=wrong)))
    step = result.first.ascend_steps[0]
    assert step.computing_us == 300.0  # without kernel_details, Other-typed kernels are operators
    found = [f for f in result.findings if f.code == "overlap-analysis-mismatch"]
    assert len(found) == 1 and "150.000 us" in found[0].message


def test_a_standalone_timeline_is_read_under_any_name(tmp_path: Path) -> None:
    rank = write_rank(tmp_path, overlap=OVERLAP)
    copy = tmp_path / "npu_rank0_timeline.json"
    copy.write_bytes((rank / "ASCEND_PROFILER_OUTPUT" / "trace_view.json").read_bytes())
    table = load_trace(copy)
    assert table.meta["format"] == "ascend-text" and table.meta["step_trace"] == []
    assert analyze(table).first.ascend_steps[0].lanes_deviation_us == 0.0


def test_a_rank_folder_without_a_timeline_says_what_is_missing_and_shows_the_step_table(tmp_path: Path) -> None:
    rank = write_rank(tmp_path, timeline=False)
    for path in (rank, rank / "ASCEND_PROFILER_OUTPUT" / "kernel_details.csv"):
        with pytest.raises(ParityError) as info:
            load_trace(path)
        message = str(info.value)
        assert "\n" not in message and "no ASCEND_PROFILER_OUTPUT/trace_view.json" in message
        assert "it has kernel_details.csv, step_trace_time.csv" in message
        assert "the profiler's own step_trace_time.csv figures (us): step 1: Computing 300.000" in message
        assert "Free 50.000" in message


def test_a_kernel_table_cut_mid_row_is_a_counted_warning(tmp_path: Path) -> None:
    rank = write_rank(tmp_path)
    details = rank / "ASCEND_PROFILER_OUTPUT" / "kernel_details.csv"
    text = details.read_text()
    details.write_text(text[: text.rindex(",")])  # the last row loses its duration
    table = load_trace(rank)
    assert "1 of 2 rows of kernel_details.csv are cut short" in " ".join(table.meta["warnings"])
    assert categories_by_name(table)["LayerNorm"] == "vector"  # unknown core: the name decides


def test_kernel_table_cells_beyond_range_are_skipped_or_warned(tmp_path: Path) -> None:
    """A Step Id past the int32 step column, a Unicode digit, a start beyond a float: the rows
    lose their step or match (counted), the read goes on."""
    rank = write_rank(tmp_path)
    details = rank / "ASCEND_PROFILER_OUTPUT" / "kernel_details.csv"
    lines = details.read_text().splitlines()
    lines[1] = "99999999999999999999999" + lines[1][lines[1].index(","):]
    lines[2] = "\u00b2" + lines[2][lines[2].index(","):]
    details.write_text("\n".join(lines) + "\n")
    table = load_trace(rank)
    warnings = " ".join(table.meta["warnings"])
    assert "2 rows of kernel_details.csv have a Step Id that is no step number" in warnings
    assert categories_by_name(table)["LayerNorm"] == "vector"  # the core still joined
    lines[1] = lines[1].replace(lines[1].split(",")[4], "1e400")
    details.write_text("\n".join(lines) + "\n")
    assert "1 rows of kernel_details.csv match no task" in " ".join(load_trace(rank).meta["warnings"])


@pytest.mark.parametrize("step", ["1e400", "99999999999", "1.5", "-1"])
def test_a_step_row_whose_step_is_no_step_number_is_skipped(tmp_path: Path, step: str) -> None:
    table = load_trace(write_rank(tmp_path, step_trace={**STEP_TRACE, "Step": step}))
    assert "1 of 1 rows of step_trace_time.csv are cut short or not numbers" in " ".join(table.meta["warnings"])
    assert table.meta["step_trace"] == []


def test_a_step_table_lacking_a_column_is_a_counted_warning(tmp_path: Path) -> None:
    partial = {k: v for k, v in STEP_TRACE.items() if k != "Free"}
    table = load_trace(write_rank(tmp_path, step_trace=partial))
    assert "step_trace_time.csv has no Free column" in " ".join(table.meta["warnings"])
    step = analyze(table).first.ascend_steps[0]
    assert "free_us" not in step.reference and step.max_deviation_us == 0.0


def test_pipeline_figures_hand_computed(tmp_path: Path) -> None:
    """Add a receive [700, 800] on stream 4: span [100, 800] = 700 us, bubble 100, stage 600,
    not overlapped excluding the receive 150 (the all-reduce), preparing 100 (marker at 0)."""
    tasks = [*TASKS, ("Notify Wait", 4, 700, 800, "Notify Wait")]
    ops = [("hcom_allReduce__1_0_1", 450, 600), ("hcom_receive__2_0_1", 700, 800)]
    step = analyze(load_trace(write_rank(tmp_path, tasks=tasks, ops=ops, step_trace=None))).first.ascend_steps[0]
    assert (step.span_us, step.communication_us, step.communication_not_overlapped_us) == (700.0, 250.0, 250.0)
    assert (step.bubble_us, step.stage_us) == (100.0, 600.0)
    assert step.communication_not_overlapped_exclude_receive_us == 150.0
    assert step.preparing_us == 100.0


def test_communication_matrix_hand_computed(tmp_path: Path) -> None:
    """In the all-reduce [450, 600]: a local copy 0->0 (1 MB, 10 us), a local reduce with an
    invalid dst (4 B, 2 us) that counts on 0->0, a notify wait (no data) and two copies 0->1
    over HCCS (2 MB in 20 us + 30 us); a task to local rank 5 (not loaded) is left out."""
    planes = [("Memcpy", 460, 470, 0, 0, 1_000_000, "ON_CHIP"), ("Reduce_Inline", 470, 472, 0, 4294967295, 4, "ON_CHIP"),
              ("Notify_Wait", 472, 500, 0, 1, 0, "INVALID_TYPE"), ("Memcpy", 500, 520, 0, 1, 1_000_000, "HCCS"),
              ("Reduce_Inline", 520, 550, 0, 1, 1_000_000, "HCCS"), ("Memcpy", 550, 560, 0, 5, 1_000_000, "HCCS")]
    other = [("Memcpy", 500, 510, 1, 0, 1_000_000, "HCCS")]  # rank 1 sends 1 MB to rank 0
    ranks = [write_rank(tmp_path, planes=planes), write_rank(tmp_path, planes=other, name="rank1_ascend_pt")]
    result = analyze(load_trace(ranks))
    links = {(f.op, f.src, f.dst): f for f in result.comm_matrix}
    assert links[("hcom_allReduce__1_0_1", 1, 0)].bytes == 1_000_000
    local, remote = links[("hcom_allReduce__1_0_1", 0, 0)], links[("hcom_allReduce__1_0_1", 0, 1)]
    assert (local.transport, local.bytes, local.time_ns) == ("LOCAL", 1_000_004, 12_000)
    assert (remote.transport, remote.bytes, remote.time_ns) == ("HCCS", 2_000_000, 50_000)
    assert remote.bandwidth_gbps == 40.0  # 2e6 B / 50e3 ns
    assert links[("total", 0, 1)].bytes == links[("allreduce-total", 0, 1)].bytes == 2_000_000
    assert any("1 HCCL data tasks name ranks" in w for w in result.warnings)
