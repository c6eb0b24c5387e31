"""What-if on hand-built traces whose answers are computed by hand in the comments."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from parity.model.errors import ParityError
from parity.trace.builder import build_table
from parity.trace.table import Kind
from parity.trace.whatif import parse_scale, predict
from parity.trace.whatif.graph import build_graph
from parity.trace.whatif.host_edges import wake_chance, wake_edges
from parity.trace.whatif.replay import schedule
from parity.trace.whatif.selection import scale_factors
from parity.trace.whatif.timeline import build_timeline, leaf_segments

MATRIX = "sgemm_128x64_nn"
VECTOR = "vectorized_elementwise_kernel"
NCCL = "ncclKernel_AllReduce_RING_LL_Sum_float"


def _two_streams():
    # stream 7: matrix [0,40) vector [40,60) matrix [60,100); stream 8: nccl [20,80).
    return build_table([
        {"stream": 7, "name": MATRIX, "start_ns": 0, "end_ns": 40},
        {"stream": 7, "name": VECTOR, "start_ns": 40, "end_ns": 60},
        {"stream": 7, "name": MATRIX, "start_ns": 60, "end_ns": 100},
        {"stream": 8, "name": NCCL, "start_ns": 20, "end_ns": 80},
    ])


def test_first_order_and_bounds_on_two_streams() -> None:
    p = predict(_two_streams(), [parse_scale("matrix=2")], method="first-order",
                window=(0, 100), with_sensitivity=False)
    # Critical stream 7 (busy 100 vs 60); T_c = 80; T' = 100 - 0.5 * 80 = 60.
    assert p.first_order.critical_lane == "rank 0 device 0 stream 7"
    assert p.first_order.category_ns == {"matrix=2": 80}
    assert p.first_order.new_step_ns == 60
    assert p.first_order.speedup == pytest.approx(100 / 60)
    # C = [0,40)+[60,100) = 80; N = [20,80) = 60; |C u N| = 100; E = 40.
    # low = 100 / (100 - 20) = 1.25; high = 100 / (100 - 40) = 1.667.
    assert p.bounds.exposed_ns == {"matrix=2": 40}
    assert p.bounds.union_ns == {"matrix=2": 80}
    assert p.bounds.low == pytest.approx(1.25)
    assert p.bounds.high == pytest.approx(100 / 60)
    assert p.replay is None
    assert p.to_dict()["replay"] == {"error": "not requested (method first-order)"}


def test_scale_of_one_reproduces_the_step_exactly() -> None:
    p = predict(_two_streams(), [parse_scale("matrix=1")], window=(0, 100), with_sensitivity=False)
    assert p.first_order.new_step_ns == p.first_order.step_ns == 100
    assert p.bounds.low == p.bounds.high == 1.0
    assert p.replay.new_step_ns == pytest.approx(100)
    assert p.replay.reproduction_error == 0


def test_exposed_work_off_the_busiest_stream_is_flagged() -> None:
    # stream 7: vector [0,50); stream 8: matrix [50,60) exposed. First order sees no matrix on
    # the critical stream (speedup 1) though the low bound saves 5 of 60.
    table = build_table([
        {"stream": 7, "name": VECTOR, "start_ns": 0, "end_ns": 50},
        {"stream": 8, "name": MATRIX, "start_ns": 50, "end_ns": 60},
    ])
    p = predict(table, [parse_scale("matrix=2")], method="first-order", with_sensitivity=False)
    assert p.first_order.speedup == 1.0
    assert p.bounds.low == pytest.approx(60 / 55)
    assert any("outside the bounds" in f.message for f in p.findings)


def _device_step():
    """One step on two streams with launches, an event wait and a device synchronize.

    host tid 100: L1 [0,2) K1; L2 [3,5) K2; record [6,7); wait [8,9); L3 [10,12) K3;
    cudaDeviceSynchronize [13,90); L4 [92,94) K4. Step marker [0,92).
    stream 7: K1 matrix [5,45), K2 vector [45,65), K4 vector [97,107).
    stream 8: K3 matrix [65,85), after stream 8 waits for the event recorded behind K2.
    """
    host = {"kind": Kind.RUNTIME, "stream": 100}
    return build_table([
        {"kind": Kind.STEP, "stream": 100, "name": "ProfilerStep#1", "start_ns": 0, "end_ns": 92},
        dict(host, name="cudaLaunchKernel", start_ns=0, end_ns=2, correlation=1),
        dict(host, name="cudaLaunchKernel", start_ns=3, end_ns=5, correlation=2),
        dict(host, name="cudaEventRecord", start_ns=6, end_ns=7, correlation=3),
        dict(host, name="cudaStreamWaitEvent", start_ns=8, end_ns=9, correlation=4),
        dict(host, name="cudaLaunchKernel", start_ns=10, end_ns=12, correlation=5),
        dict(host, name="cudaDeviceSynchronize", start_ns=13, end_ns=90, correlation=6),
        dict(host, name="cudaLaunchKernel", start_ns=92, end_ns=94, correlation=7),
        {"stream": 7, "name": MATRIX, "start_ns": 5, "end_ns": 45, "correlation": 1},
        {"stream": 7, "name": VECTOR, "start_ns": 45, "end_ns": 65, "correlation": 2},
        {"stream": 8, "name": MATRIX, "start_ns": 65, "end_ns": 85, "correlation": 5},
        {"stream": 7, "name": VECTOR, "start_ns": 97, "end_ns": 107, "correlation": 7},
        {"kind": Kind.SYNC, "device": 0, "stream": 8, "name": "Stream Wait Event", "start_ns": 8, "end_ns": 9,
             "correlation": 4, "sync_type": "Stream Wait Event", "wait_on_stream": 7, "wait_on_event_corr": 3},
        {"kind": Kind.SYNC, "device": 0, "stream": -1, "name": "Context Sync", "start_ns": 13, "end_ns": 90,
             "correlation": 6, "sync_type": "Context Sync", "wait_on_stream": -1, "wait_on_event_corr": -1},
    ])


def test_replay_follows_launches_event_waits_and_syncs() -> None:
    table = _device_step()
    p = predict(table, [parse_scale("matrix=2")], with_sensitivity=False)
    edges = p.graph["edges"]
    assert edges["launch"] == 4 and edges["stream_wait"] == 1 and edges["host_sync"] == 2
    # Ops that waited only for their launch: K1 (gap 5) and K4 (gap 5); K3 waited on an event.
    assert p.graph["launch_latency_ns"] == 5
    # The window is the device time of step 1, as trace analyze takes it: K1..K3 (K4 is launched
    # after the marker), [5, 85) = 80 ns.
    assert (p.window.start_ns, p.window.end_ns, p.window.n_steps) == (5, 85, 1)
    # k=2: K1 [5,25); K2 [25,45); K3 waits for K2: [45,55); the sync returns 5 ns after K3:
    # 60, 30 ns earlier than observed; the step 5..85 becomes 5..55.
    assert p.replay.new_step_ns == pytest.approx(50)
    assert p.replay.speedup == pytest.approx(80 / 50)
    # First order: critical stream 7 holds 40 ns of matrix: 80 - 20 = 60.
    assert p.first_order.new_step_ns == pytest.approx(60)
    # C = [5,45)+[65,85) = 60, N = [45,65) = 20, E = 60: both bounds 80 / 50.
    assert p.bounds.low == pytest.approx(80 / 50) and p.bounds.high == pytest.approx(80 / 50)
    timeline = build_timeline(table)
    graph = build_graph(table, timeline)
    start, end = schedule(graph, scale_factors(timeline, [parse_scale("matrix=2")]))
    k3 = int(np.flatnonzero(timeline.start_ns == 65)[0])
    assert (start[k3], end[k3]) == (45, 55)


def test_replay_reproduces_the_trace_with_k_one() -> None:
    table = _device_step()
    timeline = build_timeline(table)
    graph = build_graph(table, timeline)
    start, end = schedule(graph, np.ones(len(timeline)))
    np.testing.assert_allclose(start + graph.origin_ns, timeline.start_ns)
    np.testing.assert_allclose(end + graph.origin_ns, timeline.end_ns)


def test_collectives_across_ranks_end_together() -> None:
    # rank 0: matrix [0,10), allreduce [10,50); rank 1: matrix [0,30), allreduce [30,50).
    # matrix=2 on both: rank 1 arrives at 15, rank 0 at 5: both end 15 + 20 = 35.
    table = build_table([
        {"rank": 0, "stream": 7, "name": MATRIX, "start_ns": 0, "end_ns": 10},
        {"rank": 0, "stream": 7, "name": NCCL, "start_ns": 10, "end_ns": 50},
        {"rank": 1, "stream": 7, "name": MATRIX, "start_ns": 0, "end_ns": 30},
        {"rank": 1, "stream": 7, "name": NCCL, "start_ns": 30, "end_ns": 50},
    ])
    p = predict(table, [parse_scale("matrix=2")], with_sensitivity=False)
    assert p.graph["edges"]["collective"] == 2
    assert p.replay.new_step_ns == pytest.approx(35)
    assert any("collective" in a for a in p.assumptions)
    assert not any("preempted" in a for a in p.assumptions)  # device times are not host clocks


def _host_two_threads():
    """A CPU profile: main thread 1 runs linear (t + mm) then gelu; worker thread 2 preps.

    steps [0,100) and [100,200) on thread 1; mm [5,60) and [105,160) inside linear spans;
    worker prep [5,75) and [105,175).
    """
    main = {"kind": Kind.CPU_OP, "stream": 1}
    worker = {"kind": Kind.CPU_OP, "stream": 2}
    rows = []
    for base in (0, 100):
        rows += [
            {"kind": Kind.STEP, "stream": 1, "name": f"ProfilerStep#{base // 100}", "start_ns": base,
                 "end_ns": base + 100},
            dict(main, name="aten::linear", start_ns=base, end_ns=base + 60),
            dict(main, name="aten::t", start_ns=base, end_ns=base + 5),
            dict(main, name="aten::mm", start_ns=base + 5, end_ns=base + 60),
            dict(main, name="aten::gelu", start_ns=base + 60, end_ns=base + 80),
            dict(worker, name="aten::mul", start_ns=base + 5, end_ns=base + 75),
        ]
    return build_table(rows)


def test_leaf_segments_give_nested_time_to_the_innermost_op() -> None:
    s, e, i = leaf_segments(np.zeros(3, np.int64), np.ones(3, np.int64),
                            np.array([0, 2, 5]), np.array([10, 4, 7]))
    # [0,2) outer, [2,4) child 1, [4,5) outer, [5,7) child 2, [7,10) outer
    assert s.tolist() == [0, 2, 4, 5, 7] and e.tolist() == [2, 4, 5, 7, 10]
    assert i.tolist() == [0, 1, 0, 2, 0]


def test_host_threads_join_at_step_boundaries() -> None:
    p = predict(_host_two_threads(), [parse_scale("matrix=inf")], with_sensitivity=False)
    assert p.mode == "host"
    # first order: main thread busy 160 > worker 140; T_c = 2 * 55 = 110 per window:
    # T' = (200 - 110) / 2 = 45 per step.
    assert p.first_order.new_step_ns == pytest.approx(45)
    # C = [5,60)+[105,160) = 110, all of it under the worker's prep: E = 0, so low = 1;
    # high = 200 / (200 - 110).
    assert p.bounds.exposed_ns == {"matrix=inf": 0}
    assert p.bounds.low == 1.0
    assert p.bounds.high == pytest.approx(200 / 90)
    # Replay: the worker's 70 ns prep now bounds each step: step 2 starts at max(gelu 25,
    # prep 75) + 20 = 95; the end joins prep 2 (ends 170) + 20 = 190: steps 95, 95.
    assert p.replay.new_steps_ns == pytest.approx((95, 95))
    assert p.replay.speedup == pytest.approx(200 / 190)
    assert p.graph["edges"]["step_barrier"] > 0
    assert any("join at every step boundary" in a for a in p.assumptions)
    assert any("preempted" in a for a in p.assumptions)  # host ops: wall time, said so


def test_sensitivity_rows_cover_categories_and_factors() -> None:
    p = predict(_two_streams(), [parse_scale("matrix=2")], window=(0, 100))
    sens = p.sensitivity
    assert sens.categories[0] == "matrix"  # largest time first
    assert set(sens.categories) == {"matrix", "communication", "vector"}
    assert len(sens.rows) == 3 * 5
    fo = sens.series("matrix", "first_order")
    assert fo[2] == pytest.approx(100 / 60)  # k = 2, as in the first test
    assert fo[-1] == pytest.approx(100 / 20)  # k = inf removes all 80 ns
    assert all(a <= b + 1e-12 for a, b in itertools.pairwise(fo))  # faster never hurts
    data = sens.to_dict()
    assert data["factors"][-1] == "inf" and "series" in data


def test_name_selectors_and_bad_input() -> None:
    p = predict(_two_streams(), [parse_scale("name:sgemm=inf")], method="first-order",
                window=(0, 100), with_sensitivity=False)
    assert p.first_order.new_step_ns == 20
    assert parse_scale("comm=1.5").selector == "communication"
    assert math.isinf(parse_scale("matrix=inf").k)
    with pytest.raises(ParityError, match="CATEGORY=K"):
        parse_scale("matrix")
    with pytest.raises(ParityError, match="regular expression"):
        parse_scale("name:(=2")
    with pytest.raises(ParityError, match="disjoint"):
        predict(_two_streams(), [parse_scale("matrix=2"), parse_scale("name:gemm=3")])
    with pytest.raises(ParityError, match="method"):
        predict(_two_streams(), [parse_scale("matrix=2")], method="magic")


def test_user_rules_win_over_host_op_rules(tmp_path) -> None:
    rules = tmp_path / "rules.toml"
    rules.write_text('[[rules]]\ncategory = "gemm-host"\npatterns = ["^aten::mm$"]\n')
    table = _host_two_threads()
    own = predict(table, [parse_scale("gemm-host=2")], rules=str(rules), method="first-order",
                  with_sensitivity=False)
    assert own.first_order.category_ns == {"gemm-host=2": 110}
    default = predict(table, [parse_scale("matrix=2")], method="first-order", with_sensitivity=False)
    assert default.first_order.category_ns == {"matrix=2": 110}


def _wake_timeline(worker_rows):
    """Main thread 1: op [0,100_000), then after a gap op [at, at + 10_000); worker thread 2."""
    main = {"kind": Kind.CPU_OP, "stream": 1}
    rows = [dict(main, name="aten::mm", start_ns=0, end_ns=100_000),
            dict(main, name="aten::gelu", start_ns=2_000_000, end_ns=2_010_000)]
    rows += [dict(kind=Kind.CPU_OP, stream=2, name="aten::mul", start_ns=s, end_ns=e)
             for s, e in worker_rows]
    return build_timeline(build_table(rows))


def test_wake_chance_is_the_poisson_probability_of_a_nearby_end() -> None:
    # One end in a 400 us gap, 20 us tolerance: p = 1 - exp(-20/400) = 0.04877.
    assert wake_chance(np.array([1]), np.array([400_000]), 20_000)[0] == pytest.approx(0.048771, abs=1e-6)
    # Ten ends in a 100 us gap: p = 1 - exp(-2) = 0.8647.
    assert wake_chance(np.array([10]), np.array([100_000]), 20_000)[0] == pytest.approx(0.864665, abs=1e-6)


def test_a_thread_resuming_after_a_lone_end_waited_for_it() -> None:
    # The worker's one op ends at 1_995_000, 5 us before main resumes after a 1.9 ms gap:
    # p = 1 - exp(-20/1900) = 1.0% <= 5%: an edge.
    timeline = _wake_timeline([(1_000_000, 1_995_000)])
    edges = wake_edges(timeline)
    assert len(edges.src) == 1


def test_a_busy_neighbour_ending_just_before_is_no_evidence_of_a_wait() -> None:
    # The worker ends an op every 20 us through main's 1.9 ms gap, the last at 1_995_000:
    # 85 ends, p = 1 - exp(-85 * 20 / 1900) = 59%: chance, no edge.
    timeline = _wake_timeline([(s, s + 15_000) for s in range(300_000, 1_995_000, 20_000)])
    assert len(wake_edges(timeline).src) == 0
