"""Window choice: markers with warm-up skipped, --steps, --window, detection, whole span."""

from __future__ import annotations

import numpy as np
import pytest

from parity.model.errors import ParityError
from parity.trace.builder import build_table
from parity.trace.repeats import find_repeats
from parity.trace.table import Kind
from parity.trace.window import choose_window, device_steps, parse_steps, parse_window, step_markers


def stepped_rows(n_steps: int = 4, lag: int = 30) -> list[dict]:
    """Step k: host marker [100k, 100k+100), a launch at 100k+10, its kernel at +lag for 20 ns."""
    rows = []
    for k in range(n_steps):
        t = 100 * k
        rows.append(dict(kind=Kind.STEP, device=-1, stream=1, name=f"ProfilerStep#{k + 1}", start_ns=t, end_ns=t + 100))
        rows.append(dict(kind=Kind.RUNTIME, device=-1, stream=1, name="cudaLaunchKernel", start_ns=t + 10,
                         end_ns=t + 15, correlation=k + 1))
        rows.append(dict(stream=7, name="gemm", start_ns=t + 10 + lag, end_ns=t + 30 + lag, correlation=k + 1))
    return rows


def test_markers_skip_first_step_and_follow_device_lag() -> None:
    table = build_table(stepped_rows(lag=80))  # kernel of step k runs at 100k+90 .. 100k+110
    steps = device_steps(table)
    assert steps[table.kind == Kind.KERNEL].tolist() == [1, 2, 3, 4]  # by launch, not by own time
    w = choose_window(table)
    assert (w.start_ns, w.end_ns, w.source, w.steps, w.step_count) == (190, 410, "steps", (2, 4), 3)
    assert "step 1 skipped as warm-up" in w.detail


def test_single_step_is_used_whole() -> None:
    w = choose_window(build_table(stepped_rows(n_steps=1)))
    assert (w.start_ns, w.end_ns, w.steps, w.step_count) == (40, 60, (1, 1), 1)


def test_user_steps_and_window() -> None:
    table = build_table(stepped_rows())
    w = choose_window(table, steps=(1, 2))
    assert (w.start_ns, w.end_ns, w.source, w.step_count) == (40, 160, "user-steps", 2)
    w = choose_window(table, window=(5, 50))
    assert (w.start_ns, w.end_ns, w.source, w.step_count) == (5, 50, "user-window", None)  # a time counts no steps
    with pytest.raises(ParityError, match="steps 7-9 are not in the trace"):
        choose_window(table, steps=(7, 9))
    with pytest.raises(ParityError, match="either --window or --steps"):
        choose_window(table, steps=(1, 2), window=(0, 1))


def test_reader_step_column_wins() -> None:
    rows = stepped_rows()
    rows[2]["step"] = 3  # the reader says the first kernel belongs to step 3
    assert device_steps(build_table(rows))[2] == 3


def test_marker_numbers() -> None:
    steps, starts, ends = step_markers(build_table(stepped_rows(3)))
    assert steps.tolist() == [1, 2, 3] and starts.tolist() == [0, 100, 200] and ends.tolist() == [100, 200, 300]


def test_detected_from_repeating_kernels() -> None:
    rows = []
    t = 0
    for rep in range(5):
        for name in ["embed", "gemm", "softmax", "gemm", "nccl_allreduce"]:
            rows.append(dict(stream=7, name=name, start_ns=t, end_ns=t + 10))
            t += 12
    w = choose_window(build_table(rows))
    assert w.source == "detected"
    assert (w.start_ns, w.end_ns) == (60, 60 * 5 - 2)  # second repetition's start to the last end
    assert w.step_count is None and w.to_dict()["step_count"] is None  # a repeating block may be a layer, not a step
    assert "5 kernels repeats 5 times" in w.detail


def test_whole_span_when_nothing_repeats() -> None:
    rows = [dict(stream=7, name=f"k{i}", start_ns=10 * i, end_ns=10 * i + 5) for i in range(8)]
    w = choose_window(build_table(rows))
    assert (w.start_ns, w.end_ns, w.source, w.step_count) == (0, 75, "span", None)


def test_find_repeats_prefers_the_block_that_explains_most() -> None:
    layer = [1, 2, 3]
    step = [9] + layer * 4 + [8]
    seq = np.array(step * 6)
    rep = find_repeats(seq)
    assert rep.length == len(step) and rep.count == 6 and rep.identical == 1.0
    inner = find_repeats(np.array(step), min_repeats=2)
    assert inner.length == 3 and inner.count == 4
    assert find_repeats(np.array([1, 2, 3, 4, 5, 6, 7])) is None


@pytest.mark.parametrize(("text", "expected"), [("3-8", (3, 8)), ("5", (5, 5)), (" 2 - 4 ", (2, 4))])
def test_parse_steps(text: str, expected: tuple[int, int]) -> None:
    assert parse_steps(text) == expected


@pytest.mark.parametrize("text", ["", "a-b", "8-3", "1-2-3"])
def test_parse_steps_errors(text: str) -> None:
    with pytest.raises(ParityError, match="--steps"):
        parse_steps(text)


def test_parse_window() -> None:
    assert parse_window("1000:5000.5") == (1_000_000, 5_000_500)
    for bad in ["1000", "5:1", "x:y", "9e18:9.1e18", "1e400:5", "-1e16:0", "-9e15:9e15"]:
        with pytest.raises(ParityError, match="--window"):
            parse_window(bad)
    assert parse_window("-9e15:-5e15") == (-9 * 10**18, -5 * 10**18)  # times near the bound, 4e18 ns apart


def test_rows_the_reader_left_unplaced_are_placed_by_their_launch() -> None:
    rows = stepped_rows(lag=95)  # each kernel starts inside the next step's marker
    for k, row in enumerate(rows):
        row["step"] = 9 if row["name"] == "gemm" else k // 3 + 1  # the reader's word stands ...
    del rows[5]["step"]  # ... except for the second kernel, placed through its launch in step 2
    steps = device_steps(build_table(rows))
    assert steps.tolist() == [1, 1, 9, 2, 2, 2, 3, 3, 9, 4, 4, 9]


def test_steps_without_device_work_and_gaps_in_numbers() -> None:
    rows = stepped_rows(n_steps=3)
    for row, number in zip([r for r in rows if r.get("kind") == Kind.STEP], (3, 7, 9)):
        row["name"] = f"ProfilerStep#{number}"
    rows.append(dict(kind=Kind.STEP, device=-1, stream=1, name="ProfilerStep#12", start_ns=300, end_ns=400))
    w = choose_window(build_table(rows))  # step 12 has no kernel: it cannot end the window
    assert (w.start_ns, w.end_ns, w.steps) == (140, 260, (7, 9))
    assert w.detail == "steps 7-9 of 3-9; step 3 skipped as warm-up"


@pytest.mark.parametrize(("other_ns", "stream"), [(50, 7), (400, 3)])
def test_detection_looks_at_the_busiest_stream(other_ns: int, stream: int) -> None:
    rows, t = [], 0
    for _ in range(5):
        for name in ["embed", "gemm", "softmax", "gemm", "nccl_allreduce"]:
            rows.append(dict(stream=7, name=name, start_ns=t, end_ns=t + 10))  # 250 ns in all
            t += 12
    rows += [dict(stream=3, name=f"copy{i}", start_ns=20 * i, end_ns=20 * i + other_ns // 8) for i in range(8)]
    w = choose_window(build_table(rows))
    if stream == 7:
        assert w.source == "detected" and "on stream 7" in w.detail
    else:  # stream 3 is busier and does not repeat
        assert w.source == "span"


def test_window_text_is_what_parse_window_reads_back() -> None:
    from parity.trace.window import window_text

    # epoch microseconds with ns: 19 digits, more than a float keeps; a negative start; whole us
    for start, end, text in [(1661203462674792123, 1661203463063919500, "1661203462674792.123:1661203463063919.5"),
                             (-1500, 2000, "-1.5:2"), (0, 1, "0:0.001")]:
        assert window_text(start, end) == text
        assert parse_window(text) == (start, end)
