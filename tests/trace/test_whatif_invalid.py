"""A what-if replay outside its own bounds: ``invalid`` when nothing in the trace explains it, a
warning naming the ops that waited for work elsewhere when they do (in the prediction, its JSON,
the sensitivity table and the terminal view). The hand-built trace's device waits on the host,
so scaling the GEMM saves nothing in the replay while the bounds, which hold idle gaps fixed,
promise 1.323x."""

from __future__ import annotations

import numpy as np
import pytest
from rich.console import Console

from parity.model.findings import Severity
from parity.report.whatif import render_prediction
from parity.trace.builder import build_table
from parity.trace.table import Kind
from parity.trace.whatif import parse_scale, predict
from parity.trace.whatif.graph import DependencyGraph, build_graph
from parity.trace.whatif.waits import Waits
from parity.trace.whatif.timeline import build_timeline

MATRIX = "sgemm_128x64_nn"
VECTOR = "vectorized_elementwise_kernel"
WAITED = ("1 of 1 ops following the scaled work on their lanes or through its end waited for work elsewhere (1 for their launch on "
          "the host), so time saved before them turns into idle time; the replay follows those waits, the bounds "
          "hold idle gaps fixed")


def _device_waits_on_host():
    """host: L1 [0,2) K1; L2 [60,62) K2. stream 7: K1 matrix [5,45), K2 vector [67,87).

    Window: device time [5,87) = 82 ns. matrix=2: C = E = 40 ns (nothing overlaps it), so both
    bounds save 20 ns: 82/62 = 1.323x. The replay keeps K2 behind its launch at 60 (the device
    waited on the host there), so the step still ends at 87: 1.000x.
    """
    host = {"kind": Kind.RUNTIME, "stream": 100}
    return build_table([
        {"kind": Kind.STEP, "stream": 100, "name": "ProfilerStep#1", "start_ns": 0, "end_ns": 90},
        dict(host, name="cudaLaunchKernel", start_ns=0, end_ns=2, correlation=1),
        dict(host, name="cudaLaunchKernel", start_ns=60, end_ns=62, correlation=2),
        {"stream": 7, "name": MATRIX, "start_ns": 5, "end_ns": 45, "correlation": 1},
        {"stream": 7, "name": VECTOR, "start_ns": 67, "end_ns": 87, "correlation": 2},
    ])


@pytest.fixture
def no_waits(monkeypatch):
    """The same trace as if no op had waited for work elsewhere: nothing explains the replay."""
    monkeypatch.setattr(DependencyGraph, "waits", lambda self, start_ns, end_ns, scaled, replayed=None: Waits(ops=1, launch=0, elsewhere=0))


def test_the_graph_counts_the_op_that_waited_for_its_launch_after_the_scaled_work() -> None:
    table = _device_waits_on_host()
    timeline = build_timeline(table, None)
    graph = build_graph(table, timeline)
    matrix, vector = (parse_scale(f"{c}=2").mask(timeline) for c in ("matrix", "vector"))
    # K2 follows the GEMM K1 (ended at 45) on stream 7 but starts at 67, after its launch at 60:
    # it waited for the host
    assert graph.waits(5, 87, matrix) == Waits(ops=1, launch=1, elsewhere=0)
    assert graph.waits(5, 60, matrix) == Waits(ops=0, launch=0, elsewhere=0)  # K2 starts outside
    assert graph.waits(5, 87, vector) == Waits(ops=0, launch=0, elsewhere=0)  # nothing follows K2


def test_waits_on_another_lane_than_the_scaled_work_explain_nothing() -> None:
    """stream 7: GEMM [0,40); stream 9: K [10,20) launched at 8, K' [30,50) launched at 28 (it
    waited for its launch, after K on its stream). Scaling the GEMM: nothing after it on stream
    7, so K' waiting for its launch counts for nothing; but nothing waits for the GEMM's end
    before the window's work ends at 50 (it is unfollowed: what it saves is idle time). Scaling
    stream 9's vector work: K' waited, after K."""
    host = {"kind": Kind.RUNTIME, "stream": 100}
    table = build_table([
        dict(host, name="cudaLaunchKernel", start_ns=0, end_ns=1, correlation=1),
        dict(host, name="cudaLaunchKernel", start_ns=8, end_ns=9, correlation=2),
        dict(host, name="cudaLaunchKernel", start_ns=28, end_ns=29, correlation=3),
        {"stream": 7, "name": MATRIX, "start_ns": 0, "end_ns": 40, "correlation": 1},
        {"stream": 9, "name": VECTOR, "start_ns": 10, "end_ns": 20, "correlation": 2},
        {"stream": 9, "name": VECTOR, "start_ns": 30, "end_ns": 50, "correlation": 3},
    ])
    timeline = build_timeline(table, None)
    graph = build_graph(table, timeline)
    assert graph.waits(0, 50, parse_scale("matrix=2").mask(timeline)) == Waits(ops=0, launch=0, elsewhere=0, unfollowed=1)
    assert graph.waits(0, 50, parse_scale("vector=2").mask(timeline)) == Waits(ops=1, launch=1, elsewhere=0)


def test_a_replay_the_host_holds_back_is_a_warning_that_names_the_waits() -> None:
    p = predict(_device_waits_on_host(), [parse_scale("matrix=2")], with_sensitivity=False)
    assert p.bounds.low == pytest.approx(82 / 62) and p.bounds.high == pytest.approx(82 / 62)
    assert p.replay.speedup == pytest.approx(1.0)
    assert not [f for f in p.findings if f.severity is Severity.INVALID]
    (waits,) = [f for f in p.findings if f.code == "replay-waits-elsewhere"]
    assert waits.severity is Severity.WARNING
    assert waits.message == f"replay speedup for matrix=2 1.000x lies between 1 and its bounds [1.323x, 1.323x]: {WAITED}"
    assert waits.to_dict() in p.to_dict()["findings"]
    assert p.to_dict()["waits"] == {"ops": 1, "launch": 1, "elsewhere": 0, "unfollowed": 0}


def test_without_waits_a_replay_outside_its_bounds_is_invalid(no_waits) -> None:
    p = predict(_device_waits_on_host(), [parse_scale("matrix=2")], with_sensitivity=False)
    (invalid,) = [f for f in p.findings if f.code == "invalid"]
    assert invalid.severity is Severity.INVALID
    assert invalid.message == "replay speedup for matrix=2 1.000x lies outside its own bounds [1.323x, 1.323x]"
    assert {"code": "invalid", "severity": "invalid", "message": invalid.message, "hint": invalid.hint} in \
        p.to_dict()["findings"]
    assert not [f for f in p.findings if f.code == "replay-waits-elsewhere"]


def test_a_slowdown_the_host_hides_says_the_time_added_fills_idle_time() -> None:
    # matrix=0.5: K1 [5,85) overruns K2's launch at 60; bounds lose 40 ns: 82/122; the replay
    # starts K2 after K1 instead of at 67: about 19 ns lost, about 0.81x, between 1 and the bounds
    p = predict(_device_waits_on_host(), [parse_scale("matrix=0.5")], with_sensitivity=False)
    assert p.bounds.high == pytest.approx(82 / 122) and 82 / 102 < p.replay.speedup < 82 / 99
    (waits,) = [f for f in p.findings if f.code == "replay-waits-elsewhere"]
    assert "so time added before them fills idle time there" in waits.message


def test_a_replay_inside_its_bounds_is_neither() -> None:
    # vector=2: K2 [67,77), nothing waits behind it: 82/72 by every method
    p = predict(_device_waits_on_host(), [parse_scale("vector=2")], with_sensitivity=False)
    assert p.replay.speedup == pytest.approx(82 / 72)
    assert not [f for f in p.findings if f.code in ("invalid", "replay-waits-elsewhere")]


def test_sensitivity_marks_each_point_and_says_so_once_per_category() -> None:
    p = predict(_device_waits_on_host(), [parse_scale("vector=2")])
    rows = p.sensitivity.to_dict()["rows"]
    assert [r["waits_elsewhere"] for r in rows if r["category"] == "matrix"] == [True] * 5
    assert not any(r["invalid"] for r in rows) and not any(r["waits_elsewhere"] for r in rows if r["category"] == "vector")
    (finding,) = p.sensitivity.findings
    assert finding.code == "replay-waits-elsewhere" and finding.severity is Severity.WARNING
    assert finding.message == ("replay of matrix lies between 1 and its bounds at k = 1.25, 1.5, 2, 4, inf "
                               f"(k = inf: 1.000x, bounds [1.952x, 1.952x]): {WAITED}")
    assert p.sensitivity.to_dict()["findings"] == [finding.to_dict()]


def test_sensitivity_without_waits_marks_the_points_invalid(no_waits) -> None:
    p = predict(_device_waits_on_host(), [parse_scale("vector=2")])
    rows = p.sensitivity.to_dict()["rows"]
    assert [r["invalid"] for r in rows if r["category"] == "matrix"] == [True] * 5
    assert [r["invalid"] for r in rows if r["category"] == "vector"] == [False] * 5
    assert not any(r["waits_elsewhere"] for r in rows)
    (finding,) = p.sensitivity.findings
    assert finding.code == "invalid" and finding.message.startswith(
        "replay of matrix lies outside its own bounds at k = 1.25, 1.5, 2, 4, inf (k = inf: 1.000x")


def test_the_terminal_shows_the_replay_the_host_holds_back() -> None:
    p = predict(_device_waits_on_host(), [parse_scale("matrix=2")])
    console = Console(width=300, record=True)
    console.print(render_prediction(p))
    text = console.export_text()
    assert "replay 1.000x (between 1 and its bounds: ops wait for work elsewhere)" in text.splitlines()[0]
    assert "between 1 and the bounds: ops wait for work elsewhere" in text and "INVALID" not in text
    assert "warning: replay speedup for matrix=2 1.000x lies between 1 and its bounds" in text
    assert "1.000x~" in text and "1.000x!" not in text


def test_the_terminal_shows_the_invalid_replay(no_waits) -> None:
    p = predict(_device_waits_on_host(), [parse_scale("matrix=2")])
    console = Console(width=250, record=True)
    console.print(render_prediction(p))
    text = console.export_text()
    assert "replay 1.000x (invalid: outside its bounds)" in text.splitlines()[0]
    assert "INVALID: outside the bounds" in text
    assert "invalid: replay speedup for matrix=2 1.000x lies outside its own bounds [1.323x, 1.323x]" in text
    assert "1.000x!" in text and "invalid: replay of matrix lies outside its own bounds" in text


def test_speedups_near_one_are_printed_with_the_decimals_that_tell_them_apart(traces_dir) -> None:
    # AlexNet's step is 99.5% idle: matrix=2 moves every method by about 0.03%, and the first
    # order (the busiest stream's GEMMs) saves less than the bounds (GEMMs on two streams); the
    # figures differ in the fifth decimal, so they are printed with it
    from parity.trace import load_trace

    table = load_trace([traces_dir / "kineto/hta/critical_path/alexnet/benchmark_result_2869224_1695835535_trace.json.gz"])
    p = predict(table, [parse_scale("matrix=2")], with_sensitivity=False)
    assert p.first_order.speedup < p.bounds.low and f"{p.first_order.speedup:.3f}" == f"{p.bounds.low:.3f}"
    console = Console(width=250, record=True)
    console.print(render_prediction(p))
    first, *rest = console.export_text().splitlines()
    fo, low, high = (f"{v:.5f}" for v in (p.first_order.speedup, p.bounds.low, p.bounds.high))
    assert fo != low and f"first order {fo}x, bounds [{low}x, {high}x]" in first
    # the methods table too: the measured step reads 1.00000x and no method reads it alike
    rows = {line.split("│")[1].strip(): line.split("│")[3].strip() for line in rest if line.count("│") >= 4}
    assert rows["measured"] == "1.00000x" and rows["first order"] == f"{fo}x" and rows["bound (low)"] == f"{low}x"
    # below the bounds by 0.003% of the step: within AGREEMENT (1%), so no warning
    assert not [f for f in p.findings if f.code == "first-order-outside-bounds"]


def _exposed_communication_off_the_busiest_stream():
    """stream 7 (busiest): matrix [0,60); stream 9: an all-reduce [60,80) after it, nothing else.

    Window [0,80). communication=2: the first order looks at stream 7 only, so 1.000x; the
    all-reduce is all exposed, so both bounds save 10 ns: 80/70 = 1.143x.
    """
    return build_table([
        {"kind": Kind.STEP, "stream": 100, "name": "ProfilerStep#1", "start_ns": 0, "end_ns": 80},
        {"stream": 7, "name": MATRIX, "start_ns": 0, "end_ns": 60},
        {"stream": 9, "name": "ncclDevKernel_AllReduce_Sum_f32_RING_LL", "start_ns": 60, "end_ns": 80},
    ])


def test_sensitivity_marks_a_first_order_outside_its_bounds() -> None:
    p = predict(_exposed_communication_off_the_busiest_stream(), [parse_scale("matrix=2")])
    rows = [r for r in p.sensitivity.to_dict()["rows"] if r["category"] == "communication"]
    assert [r["first_order"] for r in rows] == [1.0] * 5
    assert rows[2]["k"] == 2 and rows[2]["low"] == pytest.approx(80 / 70) and rows[2]["high"] == pytest.approx(80 / 70)
    assert [r["first_order_outside"] for r in rows] == [True] * 5
    matrix = [r for r in p.sensitivity.to_dict()["rows"] if r["category"] == "matrix"]
    assert not any(r["first_order_outside"] for r in matrix)
    (warning,) = [f for f in p.sensitivity.findings if f.code == "first-order-outside-bounds"]
    assert warning.severity is Severity.WARNING and warning.message.startswith(
        "first order of communication lies outside its bounds at k = 1.25, 1.5, 2, 4, inf (k = inf: 1.000x, "
        "bounds [1.333x, 1.333x])")
    console = Console(width=250, record=True)
    console.print(render_prediction(p))
    text = console.export_text()
    assert "1.000x*" in text and "warning: first order of communication lies outside its bounds" in text


def test_after_scaled_work_is_per_lane_and_in_start_order() -> None:
    from parity.trace.whatif.waits import after_scaled as _after_scaled

    lane = np.array([2, 1, 2, 1, 2, 1, 3])
    start = np.array([5, 1, 1, 3, 9, 2, 0])
    scaled = np.array([True, False, False, True, False, False, True])
    # lane 2: [1] then the scaled [5] then [9]; lane 1's scaled op is its last; lane 3 has one op
    assert _after_scaled(lane, start, scaled).tolist() == [False, False, False, False, True, False, False]


def _backlogged_window():
    """host: launches of W at 0, A at 1, B at 139. stream 7: warm-up GEMM W [0, 100), then, in
    the window [100, 160): GEMM A [100, 140) (it waited behind W) and B [140, 160), launched at
    139."""
    host = {"kind": Kind.RUNTIME, "stream": 100}
    return build_table([
        dict(host, name="cudaLaunchKernel", start_ns=0, end_ns=1, correlation=1),
        dict(host, name="cudaLaunchKernel", start_ns=1, end_ns=2, correlation=2),
        dict(host, name="cudaLaunchKernel", start_ns=139, end_ns=140, correlation=3),
        {"stream": 7, "name": MATRIX, "start_ns": 0, "end_ns": 100, "correlation": 1},
        {"stream": 7, "name": MATRIX, "start_ns": 100, "end_ns": 140, "correlation": 2},
        {"stream": 7, "name": VECTOR, "start_ns": 140, "end_ns": 160, "correlation": 3},
    ])


def test_work_before_the_window_runs_as_measured_so_the_window_never_grows() -> None:
    """matrix=2 over [100, 160): scaling W too would start A at 50 while B still waits for its
    launch at 139, a window of 110 ns for 60 measured (0.55x, slower when work gets faster).
    Only the window's work is scaled: A [100, 120), B still behind its launch at 139: about
    1.0x (60/59: the graph's launch latency), B having waited for its launch (a warning), and
    never below 1 at any k."""
    p = predict(_backlogged_window(), [parse_scale("matrix=2")], window=(100, 160))
    assert 1.0 <= p.replay.speedup <= 60 / 59 + 1e-9
    assert p.bounds.high == pytest.approx(60 / 40)
    assert [f.code for f in p.findings if f.severity is Severity.INVALID] == []
    assert "replay-waits-elsewhere" in [f.code for f in p.findings]
    replays = [r["replay"] for r in p.sensitivity.to_dict()["rows"] if r["category"] == "matrix"]
    assert all(r >= 1.0 - 1e-9 for r in replays) and replays == sorted(replays)


def test_a_host_call_inside_a_device_window_does_not_end_it() -> None:
    """A [100, 140) then B [140, 160), both launched early; a host poll [155, 165) that no edge
    explains. The device window [100, 160) ends with the device: matrix=2 gives 60/40 = 1.5x
    (with the poll as the window's last activity the end would stay at 165: 1.0x)."""
    host = {"kind": Kind.RUNTIME, "stream": 100}
    table = build_table([
        dict(host, name="cudaLaunchKernel", start_ns=0, end_ns=1, correlation=2),
        dict(host, name="cudaLaunchKernel", start_ns=1, end_ns=2, correlation=3),
        dict(host, name="cudaStreamQuery", start_ns=155, end_ns=165),
        {"stream": 7, "name": MATRIX, "start_ns": 100, "end_ns": 140, "correlation": 2},
        {"stream": 7, "name": VECTOR, "start_ns": 140, "end_ns": 160, "correlation": 3},
    ])
    p = predict(table, [parse_scale("matrix=2")], window=(100, 160), with_sensitivity=False)
    assert p.replay.speedup == pytest.approx(1.5)


def test_the_waits_say_what_held_the_saving_back() -> None:
    both = Waits(ops=3, launch=1, elsewhere=1, unfollowed=2)
    assert both.waited == 4
    assert both.text() == ("2 of 3 ops following the scaled work on their lanes or through its end waited for work "
                           "elsewhere (1 for their launch on the host, 1 for another stream, thread or rank); 2 scaled "
                           "ops ended with nothing later waiting for their end, so time saved before them turns into "
                           "idle time; the replay follows those waits, the bounds hold idle gaps fixed")
    assert Waits(ops=0, launch=0, elsewhere=0, unfollowed=1).text().startswith(
        "1 scaled op ended with nothing later waiting for its end, so")
