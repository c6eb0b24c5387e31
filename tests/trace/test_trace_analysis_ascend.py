"""Ascend per-step Computing / Communication / Free, on a hand-built table."""

from __future__ import annotations

import pytest

from parity.trace import analyze
from parity.trace.ascend_steps import ascend_steps, reference_steps
from parity.trace.builder import build_table
from parity.trace.categories import categorize, load_rules
from parity.trace.table import Kind

STEP_TRACE = [{"Step": "1", "Computing": "0.020", "Communication(Not Overlapped)": "0.020",
               "Overlapped": "0.005", "Communication": "0.025", "Free": "0.010"}]


def ascend_table(core_column: bool = True):
    core = {"accelerator_core": "AI_VECTOR_CORE"} if core_column else {}
    none = {"accelerator_core": None} if core_column else {}
    rows = [
        dict(kind=Kind.STEP, device=-1, stream=1, name="ProfilerStep#1", start_ns=-100, end_ns=200, step=1, **none),
        dict(stream=2, name="Add", start_ns=0, end_ns=10, **core),
        dict(stream=2, name="MatMulV2", start_ns=20, end_ns=30, **core),
        dict(stream=2, name="EVENT_RECORD", start_ns=30, end_ns=31, **none),  # runtime task: not Computing
        dict(stream=4, name="Notify Wait", start_ns=26, end_ns=40, **none),  # HCCL stream task
        dict(stream=1000, name="hcom_allReduce__1_0_1", start_ns=25, end_ns=50, **none),
    ]
    return build_table(rows, meta={"format": "ascend-text", "source": "<built>", "step_trace": STEP_TRACE})


@pytest.mark.parametrize("core_column", [True, False])
def test_step_figures_hand_computed(core_column: bool) -> None:
    table = ascend_table(core_column)
    (step,) = ascend_steps(table, categorize(table, load_rules()))
    # span [0,50); Computing [0,10)+[20,30) = 20; Communication [25,50) = 25; overlap [25,30) = 5
    # not overlapped 20; Free = 50 - |[0,10) ∪ [20,50)| = 10
    assert step.step == 1 and step.span_us == pytest.approx(0.050)
    assert step.computing_us == pytest.approx(0.020)
    assert step.communication_us == pytest.approx(0.025)
    assert step.overlapped_us == pytest.approx(0.005)
    assert step.communication_not_overlapped_us == pytest.approx(0.020)
    assert step.free_us == pytest.approx(0.010)
    assert step.max_deviation_us == pytest.approx(0.0, abs=1e-9)


def test_analysis_reports_ascend_steps_in_json() -> None:
    data = analyze(ascend_table()).to_dict()
    (row,) = data["ascend_steps"]
    assert {"step", "computing_us", "communication_us", "communication_not_overlapped_us", "free_us"} <= set(row)
    assert not [f for f in data["findings"] if f["code"] == "step-trace-mismatch"]


def test_reference_rows_from_csv_or_db_names() -> None:
    db_row = {"step": "50", "computing": 8843.91, "communication_not_overlapped": 85881.122,
              "overlapped": 3999.454, "communication": 89880.576, "free": 25900.158}
    ref = reference_steps({"step_trace": [db_row]})
    assert ref[50]["computing_us"] == pytest.approx(8843.91)
    assert ref[50]["communication_not_overlapped_us"] == pytest.approx(85881.122)
    assert reference_steps({"step_trace": STEP_TRACE})[1]["free_us"] == pytest.approx(0.010)


def test_reference_cells_that_are_no_numbers_are_not_compared() -> None:
    """A text cell (``N/A`` in an optional column, as a CSV keeps it), a value beyond a float
    or a step that is no step number: that figure, or that row, is left out; nothing raises."""
    rows = [{"Step": "7", "Computing": 10.0, "Stage": "N/A", "Bubble": "inf", "Free": None, "Preparing": "1e400"},
            {"Step": "1e400", "Computing": 1.0}, {"Step": "2.5", "Computing": 1.0}, {"Step": None, "Computing": 1.0},
            {"Step": 3, "Computing": "x"}]  # fmt: skip
    assert reference_steps({"step_trace": rows}) == {7: {"computing_us": 10.0}}


def test_receive_rows_are_named_by_a_receive_token_and_kept_within_the_rows_asked() -> None:
    import numpy as np

    from parity.trace.ascend_steps import receive_mask

    rows = [dict(stream=1000, name=name, start_ns=i * 10, end_ns=i * 10 + 5) for i, name in enumerate(
        ["hcom_receive__1_0_1", "HcomRecv", "hcom_send__1_0_1", "receiver_kernel", "hcom_receive__1_0_1"])]
    table = build_table(rows, meta={"format": "ascend-text", "source": "<built>"})
    assert receive_mask(table).tolist() == [True, True, False, False, True]  # "receiver" is another word
    among = np.array([True, False, True, True, False])
    assert receive_mask(table, among).tolist() == [True, False, False, False, False]
