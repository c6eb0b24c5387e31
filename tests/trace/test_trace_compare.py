"""Trace compare on hand-made analysis documents: the speed convention, each row's own share,
streams matched by role, the rank and workload audit, GPU against Ascend by category only."""

from __future__ import annotations

import io
from typing import Any

import pytest
from rich.console import Console

from parity.compare.trace_match import (
    WORKLOAD_OVERLAP_MIN,
    kernel_overlap,
    kernel_shares,
    match_streams,
    normalise_kernel_name,
    stream_roles,
)
from parity.compare.traces import TraceInput, compare_traces, speed_ratios
from parity.report.comparison import render_comparison


def _stream(stream: int, busy: float, cats: dict[str, float], device: int = 0) -> dict[str, Any]:
    return {"device": device, "stream": stream, "kernels": 1, "busy_us": busy, "busy_fraction": busy / 1000,
            "share_of_summed": 0.0, "categories_us": cats}


def _analysis(*, fmt: str = "kineto", rank: int = 0, compute: float = 400.0, comm: float = 200.0,
              overlap: float = 50.0, busy: float = 500.0, streams: list[dict[str, Any]] | None = None,
              kernels: list[tuple[str, float]] = (("gemm", 0.6), ("add", 0.4))) -> dict[str, Any]:
    window = {"length_us": 1000.0, "source": "steps"}
    return {"format": fmt, "rules": "default", "source": "x", "ranks": [{
        "rank": rank, "window": window,
        "streams": streams if streams is not None else [_stream(7, compute, {"matrix": compute}),
                                                         _stream(21, comm, {"communication": comm})],
        "device": {"window_us": 1000.0, "busy_us": busy, "idle_us": 1000.0 - busy, "busy_fraction": busy / 1000,
                   "summed_busy_us": compute + comm, "mean_concurrency": 1.0},
        "categories": [{"category": "matrix", "time_us": compute, "summed_us": compute, "kernels": 3,
                        "share_of_busy": compute / busy},
                       {"category": "communication", "time_us": comm, "summed_us": comm, "kernels": 1,
                        "share_of_busy": comm / busy}],
        "compute_communication": {"compute_us": compute, "communication_us": comm, "overlap_us": overlap,
                                  "exposed_communication_us": comm - overlap,
                                  "hidden_fraction": overlap / comm},
        "top_kernels": [{"name": n, "share_of_summed": s} for n, s in kernels]}]}


def _compare(*docs: dict[str, Any]) -> dict[str, Any]:
    inputs = [TraceInput(label=f"t{i}", analysis=d) for i, d in enumerate(docs)]
    return compare_traces(inputs).to_dict()


def _rows(doc: dict[str, Any]) -> dict[tuple[str, str], dict[str, Any]]:
    return {(c["suite"], c.get("role", c["key"])): c for c in doc["cases"]}


def test_ratio_is_speed_of_b_relative_to_a_as_run_compare() -> None:
    # A spends 400 us in matrix kernels, B 200 us: B is 2x the speed there (time_A / time_B)
    doc = _compare(_analysis(compute=400.0), _analysis(compute=200.0))
    row = _rows(doc)[("category", "matrix")]
    assert row["values"] == [400.0, 200.0]
    assert row["ratio"] == pytest.approx(2.0) and row["ratios"] == [None, pytest.approx(2.0)]
    assert doc["ratio_convention"] == "speed" and "time in the first trace / time in this trace" in doc["ratio_method"]
    assert speed_ratios([100.0, 50.0, 0.0, None]) == [None, 2.0, None, None]


def test_compute_communication_rows_each_have_their_own_share() -> None:
    # busy 500 us: compute 400 -> 0.8, communication 200 -> 0.4, overlap 50 -> 0.1, exposed 150 -> 0.3
    doc = _compare(_analysis(), _analysis(busy=1000.0))
    rows = _rows(doc)
    shares = [rows[("compute-communication", k)]["shares"][0]
              for k in ("compute", "communication", "overlap", "exposed communication")]
    assert shares == pytest.approx([0.8, 0.4, 0.1, 0.3])
    assert rows[("compute-communication", "compute")]["shares"][1] == pytest.approx(0.4)
    assert rows[("compute-communication", "overlap")]["hidden_fraction"] == [0.25, 0.25]  # 50 / 200
    assert all(rows[("compute-communication", k)]["share_name"] == "share_of_busy"
               for k in ("compute", "communication", "overlap", "exposed communication"))


def test_streams_matched_by_role_and_the_match_is_named() -> None:
    a = [_stream(7, 300.0, {"matrix": 250.0, "memory": 50.0}), _stream(13, 80.0, {"vector": 80.0}),
         _stream(21, 200.0, {"communication": 190.0, "memory": 10.0}), _stream(22, 50.0, {"communication": 50.0})]
    b = [_stream(2, 500.0, {"vector": 100.0, "matrix": 300.0}), _stream(4, 120.0, {"communication": 120.0}),
         _stream(9, 600.0, {"memory": 600.0})]
    roles = dict(stream_roles(a))
    assert roles["compute"]["stream"] == 7 and roles["communication 1"]["stream"] == 21
    assert roles["communication 2"]["stream"] == 22 and roles["other 1"]["stream"] == 13
    # the busiest stream of b is a copy stream: the compute role goes to the one with most compute
    assert dict(stream_roles(b))["compute"]["stream"] == 2 and dict(stream_roles(b))["other 1"]["stream"] == 9
    matched = match_streams([a, b])
    assert [r for r, _ in matched] == ["compute", "communication 1", "communication 2", "other 1"]
    assert [s["stream"] if s else None for s in matched[2][1]] == [22, None]
    doc = _compare(_analysis(streams=a), _analysis(streams=b))
    row = _rows(doc)[("stream", "compute")]
    assert row["key"] == "compute (d0 s7 | d0 s2)" and row["values"] == [300.0, 500.0]
    assert row["streams"] == [{"device": 0, "stream": 7}, {"device": 0, "stream": 2}]


def test_weighted_jaccard_hand_computed() -> None:
    # A: gemm 0.6, add 0.4; B: gemm 0.3, add 0.3, relu 0.4
    # shared = min: 0.3 + 0.3 = 0.6; either = max: 0.6 + 0.4 + 0.4 = 1.4; J = 0.6 / 1.4
    a = {"gemm": 0.6, "add": 0.4}
    b = {"gemm": 0.3, "add": 0.3, "relu": 0.4}
    assert kernel_overlap(a, b) == pytest.approx(0.6 / 1.4)
    assert kernel_overlap(a, a) == pytest.approx(1.0)
    assert kernel_overlap(a, {"relu": 1.0}) == 0.0
    # listed kernels covering 0.5 of A's time: the other 0.5 counts as A's own names
    # shared min(0.5, 1.0) = 0.5; either max(0.5, 1.0) + 0.5 (A's rest) = 1.5 -> 1/3
    assert kernel_overlap({"gemm": 0.5}, {"gemm": 1.0}) == pytest.approx(1 / 3)
    assert kernel_overlap({}, b) is None


def test_kernel_names_normalised_before_matching() -> None:
    assert normalise_kernel_name("void  Foo<4,  float>(int)") == "foo<4, float>(int)"
    shares = kernel_shares([{"name": "void k<1>()", "share_of_summed": 0.25}, {"name": "K<1>()", "share_of_summed": 0.5}])
    assert shares == {"k<1>()": 0.75}


def test_workload_audited_when_kernel_names_barely_overlap() -> None:
    same = _compare(_analysis(), _analysis(kernels=[("gemm", 0.5), ("add", 0.5)]))
    assert not [a for a in same["audit"] if a["condition"].startswith("workload")]
    assert same["workload"]["kernel_overlap"][1] == pytest.approx(0.9 / 1.1)
    other = _compare(_analysis(), _analysis(kernels=[("softmax", 0.95), ("gemm", 0.05)]))
    entry = next(a for a in other["audit"] if a["condition"].startswith("workload"))
    # shared 0.05; either 0.6 + 0.4 + 0.95 = 1.95 -> 0.0256 < 0.1
    assert entry["values"] == ["reference", "0.026"] and other["workload"]["threshold"] == WORKLOAD_OVERLAP_MIN
    assert any(f["name"] == "trace.kernel_overlap" for f in other["summary"])


def test_different_ranks_are_audited() -> None:
    doc = _compare(_analysis(rank=3), _analysis(rank=1))
    entry = next(a for a in doc["audit"] if a["condition"] == "rank")
    assert entry["values"] == [3, 1]
    assert not [a for a in _compare(_analysis(rank=2), _analysis(rank=2))["audit"] if a["condition"] == "rank"]


def test_gpu_against_ascend_compares_categories_only_with_a_caveat() -> None:
    doc = _compare(_analysis(fmt="kineto"), _analysis(fmt="ascend-text", kernels=[("MatMul_AiCore", 1.0)]))
    assert {c["suite"] for c in doc["cases"]} == {"category"}
    assert doc["caveats"] and "category only" in doc["caveats"][0]
    assert doc["caveats"][0] in doc["claims"]
    assert any(a["condition"] == "device family" for a in doc["audit"])
    # kernel names of two device families never match: no workload verdict, no false warning
    assert doc["workload"]["kernel_overlap"] == [None, None]
    assert not [a for a in doc["audit"] if a["condition"].startswith("workload")]
    same_family = _compare(_analysis(fmt="kineto"), _analysis(fmt="nsys"))
    assert {c["suite"] for c in same_family["cases"]} == {"category", "stream", "compute-communication", "device"}


def test_names_that_look_like_console_markup_are_printed_as_written() -> None:
    """A kernel named ``...[anon]...[bold]`` (rich's markup syntax) keeps its brackets in the
    terminal table, as in the JSON and Markdown."""

    from rich.console import Console

    from parity.report.comparison import render_comparison

    name = "void at::native::[anon]::reduce[bold]_kernel"
    analyses = [_analysis(), _analysis(compute=200.0)]
    for analysis in analyses:  # a category named as a user's rules may name one
        analysis["ranks"][0]["categories"][0]["category"] = name
    doc = _compare(*analyses)
    assert any(c["key"] == name for c in doc["cases"])
    out = io.StringIO()
    Console(file=out, width=400, color_system=None).print(render_comparison(doc))
    assert name in out.getvalue()


def test_window_lengths_read_in_their_unit_in_the_claim_and_the_header() -> None:
    long = _analysis()
    long["ranks"][0]["window"] = {"length_us": 12_920_244.0, "source": "user-span"}
    doc = _compare(long, _analysis())
    assert "of a 12.9 s user-span window" in doc["claims"][0] and "of a 1 ms steps window" in doc["claims"][0]
    header = " ".join(str(t) for t in render_comparison(doc).renderables[:2])
    assert "window 12.9 s (user-span)" in header and "window 1 ms (steps)" in header and "e+" not in header
    length = next(a for a in doc["audit"] if a["condition"] == "window length")
    assert length["values"] == ["12.9 s", "1 ms"]


def test_windows_of_different_step_counts_are_compared_per_step() -> None:
    # A's window holds 2 steps (800 us of matrix work, 400 a step), B's 1 step of 400 us: the same
    # speed. Compared as totals B read 2x; per step it is 1x, and every time row says per step
    two = _analysis(compute=800.0, comm=400.0, overlap=100.0, busy=1000.0)
    two["ranks"][0]["window"] = {"length_us": 2000.0, "source": "steps", "steps": [3, 4], "step_count": 2}
    two["ranks"][0]["device"] |= {"window_us": 2000.0, "idle_us": 1000.0, "busy_fraction": 0.5}
    one = _analysis(compute=400.0, comm=200.0, overlap=50.0, busy=500.0)
    one["ranks"][0]["window"] = {"length_us": 1000.0, "source": "user-steps", "steps": [5, 5]}  # stored before step_count
    doc = _compare(two, one)
    rows = _rows(doc)
    assert doc["times"] == "per step" and doc["steps"] == [2, 1]
    matrix = rows[("category", "matrix")]
    assert matrix["values"] == [400.0, 400.0] and matrix["ratio"] == pytest.approx(1.0)
    assert matrix["summed_us"] == [400.0, 400.0] and matrix["shares"] == [pytest.approx(0.8), pytest.approx(0.8)]
    assert rows[("stream", "compute")]["values"] == [400.0, 400.0]
    assert rows[("compute-communication", "exposed communication")]["values"] == [150.0, 150.0]
    device = rows[("device", "all streams")]
    assert device["values"] == [500.0, 500.0] and device["window_us"] == [1000.0, 1000.0]
    assert device["shares"] == [0.5, 0.5]  # a busy fraction is the same per step as over the window
    assert any("per step" in c and "A 2, B 1" in c for c in doc["claims"])
    steps = next(a for a in doc["audit"] if a["condition"] == "steps in the window")
    assert steps["values"] == [2, 1] and "per step" in steps["matters"]
    # the summary keeps each trace's own figures over its window, as its analysis states them
    exposed = [f["value"] for f in doc["summary"] if f["name"] == "trace.exposed_communication"]
    assert exposed == [pytest.approx(300e-6), pytest.approx(150e-6)]
    header = " ".join(str(t) for t in render_comparison(doc).renderables[:3])
    assert "(steps, steps 3-4)" in header and "(user-steps, step 5)" in header
    out = io.StringIO()
    Console(file=out, width=200, color_system=None).print(render_comparison(doc))
    assert "A per step" in out.getvalue() and "B per step" in out.getvalue()


def test_windows_of_equal_steps_or_without_a_count_keep_their_times() -> None:
    # the same number of steps: each window's time, as stated (the ratio is the same either way)
    a, b = _analysis(compute=800.0), _analysis(compute=400.0)
    for doc_in in (a, b):
        doc_in["ranks"][0]["window"] = {"length_us": 1000.0, "source": "steps", "steps": [2, 3], "step_count": 2}
    doc = _compare(a, b)
    assert doc["times"] == "in the window" and _rows(doc)[("category", "matrix")]["values"] == [800.0, 400.0]
    assert not any(a["condition"] == "steps in the window" for a in doc["audit"])
    # a span holds no known number of steps: times stay totals and the audit says what to do
    span = _analysis(compute=800.0)
    span["ranks"][0]["window"] = {"length_us": 5000.0, "source": "span", "steps": None}
    doc = _compare(span, _analysis(compute=400.0) | {})
    assert doc["times"] == "in the window" and doc["steps"] == [None, None]
    stepped = _analysis(compute=400.0)
    stepped["ranks"][0]["window"] = {"length_us": 1000.0, "source": "steps", "steps": [7, 7], "step_count": 1}
    doc = _compare(span, stepped)
    assert doc["times"] == "in the window" and _rows(doc)[("category", "matrix")]["ratio"] == pytest.approx(2.0)
    steps = next(a for a in doc["audit"] if a["condition"] == "steps in the window")
    assert steps["values"] == [None, 1] and "--steps" in steps["matters"]


def test_window_step_count_hand_cases() -> None:
    from parity.compare.traces import window_steps

    assert window_steps({"step_count": 3, "steps": [1, 9]}) == 3  # the count, where recorded
    assert window_steps({"steps": [1009, 1010]}) == 2  # stored before it was: from the step numbers
    assert window_steps({"source": "detected", "step_count": None, "steps": None}) is None
    assert window_steps({"source": "span", "steps": None}) is None
    assert window_steps({"steps": [5, 2]}) is None and window_steps(None) is None
