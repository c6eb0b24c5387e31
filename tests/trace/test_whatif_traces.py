"""What-if on the real traces in the shared folder: the graph and the k = 1 reproduction."""

from __future__ import annotations

import numpy as np
import pytest

from parity.trace import load_trace
from parity.trace.whatif import parse_scale, predict
from parity.trace.whatif.graph import build_graph
from parity.trace.whatif.replay import schedule
from parity.trace.whatif.timeline import build_timeline

MULTI_STREAM = "kineto/hta/critical_path/cuda_event_sync_multi_stream/event_sync_trace.json.gz"


@pytest.fixture(scope="module")
def multi_stream(traces_dir):
    return load_trace([traces_dir / MULTI_STREAM])


def test_multi_stream_sync_graph_has_the_recorded_edges(multi_stream) -> None:
    timeline = build_timeline(multi_stream)
    graph = build_graph(multi_stream, timeline)
    edges = graph.edge_counts
    # 3 sgemm kernels and 3 memsets, each launched by a runtime call with its correlation id.
    assert edges["launch"] == 6
    # stream 24 waits on the event recorded behind stream 20's sgemm (cudaStreamWaitEvent).
    assert edges["stream_wait"] == 1
    # cudaEventQuery polls and never blocks; the cudaDeviceSynchronize at the end waits on
    # all three streams.
    assert edges["host_sync"] >= 3
    assert sum(graph.dropped.values()) == 0 and graph.unresolved == 0
    src_lane = timeline.lane[graph.src[graph.kind == 2] // 2]
    dst_lane = timeline.lane[graph.dst[graph.kind == 2] // 2]
    assert [timeline.lane_keys[i][2] for i in (*src_lane, *dst_lane)] == [20, 24]


def test_multi_stream_sync_replay_reproduces_every_activity(multi_stream) -> None:
    timeline = build_timeline(multi_stream)
    graph = build_graph(multi_stream, timeline)
    start, end = schedule(graph, np.ones(len(timeline)))
    np.testing.assert_allclose(start, timeline.start_ns - graph.origin_ns, rtol=0, atol=1)
    np.testing.assert_allclose(end, timeline.end_ns - graph.origin_ns, rtol=0, atol=1)


def test_multi_stream_sync_prediction(multi_stream) -> None:
    p = predict(multi_stream, [parse_scale("matrix=2")])
    assert p.replay is not None and p.replay.reproduction_error < 0.01
    assert p.first_order.speedup > 1 and p.replay.speedup >= 1
    same = predict(multi_stream, [parse_scale("matrix=1")], with_sensitivity=False)
    assert same.first_order.new_step_ns == same.first_order.step_ns
    assert same.replay.new_step_ns == pytest.approx(same.replay.step_ns, rel=1e-9)
    data = p.to_dict()
    assert set(data) >= {"first_order", "bounds", "replay", "assumptions", "sensitivity"}
    assert {"low", "high"} <= set(data["bounds"])


@pytest.mark.parametrize("relative", [
    "kineto/hta/critical_path/cuda_event_sync/event_sync_trace.json.gz",
    "kineto/hta/critical_path/alexnet/benchmark_result_2869224_1695835535_trace.json.gz",
    "kineto/hta/amd_trace/mi250_minitoy_train_ROCm6_2_kineto.json.gz",
    "kineto/hta/ns_resolution_trace/rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz",
])
def test_k_one_reproduces_the_measured_step(traces_dir, relative) -> None:
    table = load_trace([traces_dir / relative])
    p = predict(table, [parse_scale("matrix=1")], with_sensitivity=False)
    assert p.replay is not None, p.replay_error
    assert p.replay.reproduction_error < 0.01
    assert p.replay.new_step_ns == pytest.approx(p.replay.step_ns, rel=0.01)


def test_two_ranks_match_their_collectives(traces_dir) -> None:
    folder = traces_dir / "kineto/hta/trace_filter"
    table = load_trace([folder / "sampled_rank-0.json.gz", folder / "sampled_rank-1.json.gz"])
    p = predict(table, [parse_scale("communication=2")], with_sensitivity=False)
    assert p.graph["edges"]["collective"] > 0
    assert any("collective" in a for a in p.assumptions)
    assert p.replay.reproduction_error < 0.01


def test_cpu_profile_runs_in_host_mode(traces_dir) -> None:
    table = load_trace([traces_dir / "kineto/hta/cpu_only/rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz"])
    p = predict(table, [parse_scale("name:aten::empty=2")], with_sensitivity=False)  # its only ops
    assert p.mode == "host"
    assert p.replay.reproduction_error < 0.01


def test_multi_stream_sync_saving_absorbed_by_a_later_launch_is_a_warning(multi_stream) -> None:
    """matrix=2 replays about 1.003x against bounds of 1.010x: the first GEMM's saving reaches
    stream 24 only through the event the memset there waits for, and that memset was launched
    18 ms later (its launch, not the GEMM, started it). The warning names it; nothing is
    invalid."""
    p = predict(multi_stream, [parse_scale("matrix=2")], with_sensitivity=False)
    assert 1.0 <= p.replay.speedup < p.bounds.low
    assert p.waits is not None and p.waits.launch >= 1
    assert [f.code for f in p.findings if f.severity == "invalid"] == []
    assert "replay-waits-elsewhere" in [f.code for f in p.findings]
