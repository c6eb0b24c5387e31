"""A ``kernel_details.csv`` cut short is never read silently: cut inside its last value (the row
still has every field, so only the missing final line break tells), or cut at a row boundary
(the timeline then has kernel tasks after the table's last row)."""

from __future__ import annotations

from pathlib import Path

from ascend_folder import KERNEL_DETAILS, TASKS, write_rank

from parity.trace import load_trace
from parity.trace.readers.ascend_csv import ends_mid_row

DETAILS = "ASCEND_PROFILER_OUTPUT/kernel_details.csv"
MORE_TASKS = TASKS + [("Add", 2, 620, 650, "AI_CORE"), ("Mul", 2, 650, 700, "AI_CORE")]
MORE_DETAILS = KERNEL_DETAILS + [("Add", "AI_VECTOR_CORE", 620, 30), ("Mul", "AI_VECTOR_CORE", 650, 50)]


def _warnings(rank: Path) -> str:
    return " ".join(load_trace(rank).meta["warnings"])


def test_a_whole_table_gives_no_warning(tmp_path: Path) -> None:
    assert _warnings(write_rank(tmp_path, tasks=MORE_TASKS, kernel_details=MORE_DETAILS)) == ""


def test_a_table_cut_inside_its_last_value_is_flagged_and_that_row_skipped(tmp_path: Path) -> None:
    rank = write_rank(tmp_path, tasks=MORE_TASKS, kernel_details=MORE_DETAILS)
    details = rank / DETAILS
    text = details.read_text()
    details.write_text(text.rstrip("\r\n")[:-1])  # "50" becomes "5": every field is still there
    assert ends_mid_row(details)
    warnings = _warnings(rank)
    assert "kernel_details.csv ends mid-row (no final line break)" in warnings
    assert "1 kernel tasks after its last row have no row" in warnings  # the skipped Mul


def test_a_table_cut_at_a_row_boundary_is_flagged(tmp_path: Path) -> None:
    rank = write_rank(tmp_path, tasks=MORE_TASKS, kernel_details=MORE_DETAILS)
    details = rank / DETAILS
    lines = details.read_text().splitlines(keepends=True)
    details.write_text("".join(lines[:-2]))  # Add and Mul lost with their line breaks
    assert not ends_mid_row(details)
    warnings = _warnings(rank)
    assert "kernel_details.csv stops before the timeline does: 2 kernel tasks after its last row" in warnings
    assert "ends mid-row" not in warnings


def test_ends_mid_row_hand_cases(tmp_path: Path) -> None:
    path = tmp_path / "t.csv"
    for content, cut in ((b"", False), (b"a,b\n", False), (b"a,b\r\n", False), (b"a,b\n1,2", True)):
        path.write_bytes(content)
        assert ends_mid_row(path) is cut, content
