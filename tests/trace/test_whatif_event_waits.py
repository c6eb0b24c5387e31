"""What-if edges of Ascend traces (hand-built, times in us unless said): stream waits recorded as
device tasks that name no event (EVENT_WAIT, EVENT_RECORD), where a wait that blocked is matched
with the record that ended just before it on another stream and one that did not block gets no
edge; and a collective's row holding its tasks on its stream."""

from __future__ import annotations

import numpy as np
import pytest

from parity.trace.builder import build_table
from parity.trace.table import Kind
from parity.trace.whatif import parse_scale, predict
from parity.trace.whatif.graph import EdgeKind, build_graph
from parity.trace.whatif.graph_edges import event_wait_edges
from parity.trace.whatif.timeline import build_timeline

US = 1_000
HOST = {"kind": Kind.RUNTIME, "stream": 100}


def _sync(name: str, stream: int, start_us: float, end_us: float, corr: int) -> dict:
    return {"kind": Kind.SYNC, "device": 0, "stream": stream, "name": name, "sync_type": name,
            "start_ns": int(start_us * US), "end_ns": int(end_us * US), "correlation": corr}


def _compute_waits_for_a_collective():
    """stream 2 (compute): a GEMM [0, 10), then an EVENT_WAIT [10, 60.4) that blocked until the
    collective's record, then a copy [61, 71). stream 4 (communication): an all-reduce
    [5, 60), its EVENT_RECORD [60, 60.01). A second EVENT_WAIT on stream 4 [2, 2.01) did not
    block. Every op launched by the host at 0..1 us."""
    return build_table([
        dict(HOST, name="aclnnMatmul", start_ns=0, end_ns=100, correlation=1),
        dict(HOST, name="hcom_allReduce_", start_ns=200, end_ns=300, correlation=2),
        dict(HOST, name="aclnnInplaceCopy", start_ns=400, end_ns=500, correlation=3),
        {"stream": 2, "name": "MatMul", "start_ns": 0, "end_ns": 10 * US, "correlation": 1},
        {"stream": 4, "name": "hcom_allReduce__1_1", "start_ns": 5 * US, "end_ns": 60 * US, "correlation": 2},
        {"stream": 2, "name": "aclnnInplaceCopy_TensorMove", "start_ns": 61 * US, "end_ns": 71 * US, "correlation": 3},
        _sync("EVENT_RECORD", 4, 60, 60.01, 4),
        _sync("EVENT_WAIT", 2, 10, 60.4, 5),
        _sync("EVENT_WAIT", 4, 2, 2.01, 6),
    ])


def test_a_blocked_wait_is_matched_with_the_record_that_released_it() -> None:
    table = _compute_waits_for_a_collective()
    timeline = build_timeline(table, None)
    edges, unmatched, loose = event_wait_edges(table, timeline)
    assert (unmatched, loose) == (0, 1)  # the wait on stream 4 did not block: no edge
    names = [str(timeline.name[p // 2]) for p in (*edges.src, *edges.dst)]
    assert names == ["hcom_allReduce__1_1", "aclnnInplaceCopy_TensorMove"]
    assert edges.src[0] % 2 == 1 and edges.dst[0] % 2 == 0  # the collective's end -> the copy's start
    graph = build_graph(table, timeline)
    assert graph.edge_counts["event_wait"] == 1 and graph.edge_counts["event_waits_not_blocking"] == 1
    assert any("did not block and were given no edge" in a for a in graph.assumptions())
    assert any(a.endswith("(1 edge)") for a in graph.assumptions())  # one edge, in its number
    assert not any("(1 edges)" in a for a in graph.assumptions())


def test_a_faster_collective_lets_the_waiting_stream_go_on_sooner() -> None:
    # communication=2: the all-reduce ends at 32.5 instead of 60, so the copy (1 us after it, as
    # observed) starts 27.5 us sooner: the window [0, 71) becomes [0, 43.5). Without the edge the
    # copy keeps its observed start and nothing is saved
    p = predict(_compute_waits_for_a_collective(), [parse_scale("communication=2")], with_sensitivity=False)
    assert p.replay.speedup == pytest.approx(71 / (71 - 27.5), rel=0.02)


def test_a_blocked_wait_with_no_record_before_its_end_gets_no_edge() -> None:
    table = build_table([
        {"stream": 2, "name": "MatMul", "start_ns": 0, "end_ns": 10 * US},
        {"stream": 4, "name": "hcom_allReduce__1_1", "start_ns": 5 * US, "end_ns": 60 * US},
        {"stream": 2, "name": "aclnnInplaceCopy_TensorMove", "start_ns": 61 * US, "end_ns": 71 * US},
        _sync("EVENT_RECORD", 4, 30, 30.01, 4),  # 30 us before the wait ends: not what released it
        _sync("EVENT_WAIT", 2, 10, 60.4, 5),
    ])
    edges, unmatched, loose = event_wait_edges(table, build_timeline(table, None))
    assert (len(edges.src), unmatched, loose) == (0, 1, 0)


def test_waits_that_name_their_record_are_left_to_the_kineto_rule() -> None:
    table = build_table([
        {"stream": 7, "name": "sgemm", "start_ns": 0, "end_ns": 10},
        {"kind": Kind.SYNC, "device": 0, "stream": 8, "name": "Stream Wait Event", "start_ns": 8, "end_ns": 9000,
         "correlation": 4, "sync_type": "Stream Wait Event", "wait_on_stream": 7, "wait_on_event_corr": 3},
    ])
    edges, unmatched, loose = event_wait_edges(table, build_timeline(table, None))
    assert (len(edges.src), unmatched, loose) == (0, 0, 0)
    assert EdgeKind.EVENT_WAIT.name == "EVENT_WAIT"


def _all_reduce_holding_its_tasks():
    """stream 4: an all-reduce row [0, 100) holding SDMA [10, 30), Notify Wait [30, 40), SDMA
    [60, 100); then a kernel [100, 110)."""
    return build_table([
        {"stream": 4, "name": "hcom_allReduce__1_1", "start_ns": 0, "end_ns": 100},
        {"stream": 4, "name": "SDMA", "start_ns": 10, "end_ns": 30},
        {"stream": 4, "name": "Notify Wait", "start_ns": 30, "end_ns": 40},
        {"stream": 4, "name": "SDMA", "start_ns": 60, "end_ns": 100},
        {"stream": 4, "name": "vector_add", "start_ns": 100, "end_ns": 110},
    ])


def test_a_collectives_tasks_follow_each_other_and_it_ends_with_the_last() -> None:
    """stream 4: an all-reduce row [0, 100) holding its tasks: SDMA [10, 30), Notify Wait [30, 40),
    SDMA [60, 100); then a kernel [100, 110). Each task follows the one before it inside the
    all-reduce, and the all-reduce ends no earlier than its last task."""
    table = _all_reduce_holding_its_tasks()
    timeline = build_timeline(table, None)
    graph = build_graph(table, timeline)
    lane = graph.kind == EdgeKind.LANE
    label = {i: f"{timeline.name[i]}@{timeline.start_ns[i]}" for i in range(len(timeline))}
    edges = {(label[s // 2] + (".end" if s % 2 else ".start"), label[d // 2] + (".end" if d % 2 else ".start"))
             for s, d in zip(graph.src[lane].tolist(), graph.dst[lane].tolist())}
    assert ("hcom_allReduce__1_1@0.start", "SDMA@10.start") in edges  # the first task: tied to the start
    assert ("SDMA@10.end", "Notify Wait@30.start") in edges and ("Notify Wait@30.end", "SDMA@60.start") in edges
    assert {("SDMA@60.end", "hcom_allReduce__1_1@0.end"), ("Notify Wait@30.end", "hcom_allReduce__1_1@0.end")} <= edges
    assert edges & {("hcom_allReduce__1_1@0.end", "vector_add@100.start"), ("SDMA@60.end", "vector_add@100.start")}
    # communication=2: the SDMAs take 10 and 20 ns, the Notify Wait (a wait for the peer, not
    # scaled) its 10; the 20 ns gap before the last SDMA stays, so the kernel starts at
    # 10 + 10 + 10 + 20 + 20 = 70 and the window [0, 110) becomes [0, 80)
    p = predict(table, [parse_scale("communication=2")], with_sensitivity=False)
    assert p.replay.speedup == pytest.approx(110 / 80)


def test_a_container_and_its_twin_of_the_same_span_replay_as_observed() -> None:
    """A host API call and the launch node under it cover the same span (Ascend's
    AscendCL@hcom_allReduce and Node@launch): the twin is not held by it, so no pair of tied
    starts points both ways and nothing with k = 1 moves (it once moved 15.6 us earlier)."""
    from parity.trace.whatif.replay import schedule

    host = {"kind": Kind.RUNTIME, "stream": 100}
    table = build_table([
        dict(host, name="AscendCL@hcom_allReduce_", start_ns=1_000, end_ns=9_000, correlation=1),
        dict(host, name="Node@launch", start_ns=1_000, end_ns=9_000),
        dict(host, name="Hccl@Launch_Ffts", start_ns=6_000, end_ns=7_000),
        {"stream": 4, "name": "hcom_allReduce__1_1", "start_ns": 7_500, "end_ns": 20_000, "correlation": 1},
        {"stream": 4, "name": "SDMA", "start_ns": 8_000, "end_ns": 20_000},
    ])
    timeline = build_timeline(table, None)
    graph = build_graph(table, timeline)
    position = np.empty(len(graph.order), dtype=np.int64)
    position[graph.order] = np.arange(len(graph.order))
    assert (position[graph.src] < position[graph.dst]).all()  # no two ties pointing both ways
    start, end = schedule(graph, np.ones(len(timeline)))
    assert start.tolist() == (timeline.start_ns - graph.origin_ns).astype(float).tolist()
    assert end.tolist() == (timeline.end_ns - graph.origin_ns).astype(float).tolist()


def test_a_notify_wait_is_a_wait_for_the_peer_unless_it_ends_an_rdma_transfer() -> None:
    """HCCL's Notify Wait (by task type, else name; any spelling) waits for the peer and moves
    no data; one whose two tasks before it on its stream are RDMASend, or whose four are
    RDMASend, RDMASend, Notify Wait, RDMASend, completes an RDMA transfer (the vendor's own
    split of wait and transit time), so only the first and last waits here are waits."""
    from parity.trace.peer_waits import peer_wait_mask

    rows = [("Notify Wait", 0), ("RDMASend", 10), ("RDMASend", 20), ("Notify_Wait", 30), ("RDMASend", 40),
            ("Notify Wait", 50), ("SDMA", 60), ("Notify_Wait", 70)]
    table = build_table([{"stream": 4, "name": n, "start_ns": t, "end_ns": t + 5} for n, t in rows]
                        + [{"stream": 5, "name": "RDMASend", "start_ns": 61, "end_ns": 62},
                           {"stream": 5, "name": "RDMASend", "start_ns": 63, "end_ns": 64},
                           {"stream": 4, "name": "kernel", "start_ns": 80, "end_ns": 90, "task_type": "Notify_Wait"}])
    timeline = build_timeline(table, None)
    waiting = dict(zip(zip(timeline.name.tolist(), timeline.start_ns.tolist()), timeline.waiting.tolist()))
    assert [waiting[r] for r in rows] == [True, False, False, False, False, False, False, True]
    assert waiting[("kernel", 80)]  # the task type decides over the name
    assert peer_wait_mask(table).sum() == 3 and not peer_wait_mask(build_table([])).any()


def test_scaling_communication_leaves_a_wait_for_the_peer_and_counts_a_collective_through_its_tasks() -> None:
    """stream 4: an all-reduce [0, 100) holding SDMA [10, 30), Notify Wait [30, 40), SDMA
    [60, 100); a kernel [100, 110). communication=2 selects the all-reduce and the SDMAs, not
    the wait; its time for the first order and the bounds is the SDMAs' (20 + 40 = 60 ns), not
    the all-reduce's span (100): bounds 110 / (110 - 30) = 1.375 both, and the replay
    (SDMAs halved, the wait and the 20 ns gap kept: the kernel ends at 80) lies on them."""
    table = _all_reduce_holding_its_tasks()
    timeline = build_timeline(table, None)
    scale = parse_scale("communication=2")
    names = lambda m: sorted(f"{timeline.name[i]}@{timeline.start_ns[i]}" for i in np.flatnonzero(m))  # noqa: E731
    assert names(scale.mask(timeline)) == ["SDMA@10", "SDMA@60", "hcom_allReduce__1_1@0"]
    assert names(scale.work(timeline)) == ["SDMA@10", "SDMA@60"]
    p = predict(table, [scale], with_sensitivity=False)
    assert p.bounds.union_ns["communication=2"] == 60 and p.bounds.exposed_ns["communication=2"] == 60
    assert p.bounds.low == pytest.approx(110 / 80) and p.bounds.high == pytest.approx(110 / 80)
    assert p.first_order.category_ns["communication=2"] == 60
    assert p.replay.speedup == pytest.approx(110 / 80)
    assert not [f for f in p.findings if f.severity == "invalid"]


def test_a_task_started_beside_a_longer_one_follows_the_work_that_ended_before_it() -> None:
    """One stream, several engines: SDMA P [0, 40), SDMA A [10, 45) on another engine, then a
    Write Value X [42, 50) that starts after P ended while A still runs, and a kernel [50, 60).
    X follows P's end (and keeps A's start before it): with communication=2, P ends at 20 and
    X starts 2 ns later, at 22, instead of keeping its 32 ns offset from A's start."""
    from parity.trace.whatif.replay import schedule
    from parity.trace.whatif.selection import scale_factors

    table = build_table([
        {"stream": 4, "name": "SDMA", "start_ns": 0, "end_ns": 40},
        {"stream": 4, "name": "SDMA", "start_ns": 10, "end_ns": 45},
        {"stream": 4, "name": "Write Value", "start_ns": 42, "end_ns": 50},
        {"stream": 4, "name": "vector_add", "start_ns": 50, "end_ns": 60},
    ])
    timeline = build_timeline(table, None)
    graph = build_graph(table, timeline)
    p, a, x = (int(np.flatnonzero(timeline.start_ns == t)[0]) for t in (0, 10, 42))
    edges = set(zip(graph.src.tolist(), graph.dst.tolist()))
    assert (2 * p + 1, 2 * x) in edges and (2 * a, 2 * x) in edges
    start, _ = schedule(graph, scale_factors(timeline, [parse_scale("name:SDMA=2")]))
    assert start[x] == 22


def test_the_analysis_says_how_much_of_the_communication_waits_for_a_peer() -> None:
    """The all-reduce [0, 100) holding SDMA [10, 30), Notify Wait [30, 40), SDMA [60, 100) on
    an Ascend rank: 10 ns of its 100 ns of communication wait for a peer. A trace of another
    profiler records no such task: null, not 0."""
    from parity.trace.analysis import analyze

    table = _all_reduce_holding_its_tasks()
    ascend = build_table([dict(r, task_type=t) for r, t in zip(
        [{"stream": 4, "name": "hcom_allReduce__1_1", "start_ns": 0, "end_ns": 100},
         {"stream": 4, "name": "SDMA", "start_ns": 10, "end_ns": 30},
         {"stream": 4, "name": "Notify Wait", "start_ns": 30, "end_ns": 40},
         {"stream": 4, "name": "SDMA", "start_ns": 60, "end_ns": 100},
         {"stream": 4, "name": "aclnnAdd_AddAiCore_Add", "start_ns": 100, "end_ns": 110}],
        ["HCCL", "SDMA", "Notify Wait", "SDMA", "AI_VECTOR_CORE"])], meta={"format": "ascend-text"})
    comm = analyze(ascend).ranks[0].comm
    assert comm.peer_wait_ns == 10 and comm.to_dict()["peer_wait_us"] == 0.01
    assert analyze(table).ranks[0].comm.to_dict()["peer_wait_us"] is None
