"""The Ascend text output on small folders made here: unknown cores, older timelines, missing
or partial files."""

from __future__ import annotations

from pathlib import Path

from ascend_folder import KERNEL_DETAILS, write_rank

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
