"""analyze() on hand-built tables whose every figure is computed by hand in the comments."""

from __future__ import annotations

import json

import numpy as np
import pytest

from parity.model.errors import ParityError
from parity.trace import analyze, metrics
from parity.trace.builder import build_table
from parity.trace.table import Kind

K, M = Kind.KERNEL, Kind.MEMCPY


def two_stream_rows(rank: int = 0, shift: int = 0) -> list[dict]:
    return [
        dict(rank=rank, stream=7, name="ampere_sgemm_128x64", start_ns=0 + shift, end_ns=40 + shift),
        dict(rank=rank, stream=7, name="ampere_sgemm_128x64", start_ns=30 + shift, end_ns=60 + shift),
        dict(rank=rank, stream=7, name="vectorized_elementwise_kernel", start_ns=80 + shift, end_ns=90 + shift),
        dict(rank=rank, stream=9, name="ncclDevKernel_AllReduce", start_ns=50 + shift, end_ns=75 + shift),
        dict(rank=rank, stream=11, kind=M, name="Memcpy DtoD", start_ns=95 + shift, end_ns=110 + shift),
        dict(rank=rank, stream=1, kind=Kind.CPU_OP, device=-1, name="aten::mm", start_ns=0, end_ns=500),
    ]


@pytest.fixture()
def result():
    return analyze(build_table(two_stream_rows()), window=(0, 100))


def test_streams_hand_computed(result) -> None:
    by_stream = {s.stream: s for s in result.first.streams}
    # stream 7: [0,60) ∪ [80,90) = 70 ns of a 100 ns window; Σ busy = 70 + 25 + 5 = 100
    assert by_stream[7].busy_ns == 70 and by_stream[7].busy_fraction == pytest.approx(0.70)
    assert by_stream[7].share_of_summed == pytest.approx(0.70)
    assert by_stream[7].kernels == 3
    assert by_stream[7].categories == {"matrix": 60, "vector": 10}
    assert by_stream[9].busy_ns == 25 and by_stream[9].share_of_summed == pytest.approx(0.25)
    assert by_stream[11].busy_ns == 5  # [95,110) clipped to [95,100)


def test_device_hand_computed(result) -> None:
    device = result.first.device
    # union [0,75) ∪ [80,90) ∪ [95,100) = 90; idle 10; mean concurrency Σbusy/|W| = 100/100
    assert (device.busy_ns, device.idle_ns, device.summed_busy_ns) == (90, 10, 100)
    assert device.mean_concurrency == pytest.approx(1.0)
    # 0 streams: [75,80)+[90,95) = 10; 2 streams: [50,60) = 10; 1 stream: the remaining 80
    assert device.streams_at_once_ns == (10, 80, 10, 0)


def test_overlap_and_exposed_communication(result) -> None:
    comm = result.first.comm
    # compute [0,60) ∪ [80,90) = 70; comm [50,75) = 25; overlap [50,60) = 10; exposed 15
    assert (comm.compute_ns, comm.communication_ns, comm.overlap_ns, comm.exposed_communication_ns) == (70, 25, 10, 15)
    pairs = {(o.stream_a, o.stream_b): o.overlap_ns for o in result.first.overlaps}
    assert pairs[(7, 9)] == 10 and sum(pairs.values()) == 10


def test_two_busy_streams_without_communication() -> None:
    rows = [
        dict(stream=7, name="ampere_sgemm_128x64", start_ns=0, end_ns=40),
        dict(stream=7, name="vectorized_elementwise_kernel", start_ns=60, end_ns=90),
        dict(stream=9, name="ampere_sgemm_128x64", start_ns=30, end_ns=70),
    ]
    first = analyze(build_table(rows), window=(0, 100)).first
    # both streams run in [30,40) and [60,70): 20 ns, the histogram's two-at-once time
    assert [(o.stream_a, o.stream_b, o.overlap_ns) for o in first.overlaps] == [(7, 9, 20)]
    assert first.device.streams_at_once_ns == (10, 70, 20)
    # no communication: compute is the union [0,90) and nothing is exposed
    comm = first.comm
    assert (comm.compute_ns, comm.communication_ns, comm.overlap_ns, comm.exposed_communication_ns) == (90, 0, 0, 0)


def test_categories_and_unmatched_always_shown(result) -> None:
    cats = {c.category: c for c in result.first.categories}
    assert cats["matrix"].time_ns == 60 and cats["matrix"].summed_ns == 70 and cats["matrix"].kernels == 2
    assert cats["communication"].time_ns == 25 and cats["memory"].time_ns == 5
    assert cats["unmatched"].time_ns == 0
    assert "host" not in cats


def test_top_kernels(result) -> None:
    top = result.first.top_kernels[0]
    assert (top.name, top.category, top.count, top.total_ns) == ("ampere_sgemm_128x64", "matrix", 2, 70)
    assert top.share_of_summed == pytest.approx(70 / 110)


def test_json_keys(result) -> None:
    data = json.loads(json.dumps(result.to_dict()))
    assert {"start_us", "end_us", "source"} <= set(data["window"])
    assert data["window"]["source"] == "user-window"
    assert {"stream", "busy_us", "busy_fraction", "share_of_summed"} <= set(data["streams"][0])
    assert {"busy_us", "idle_us", "mean_concurrency"} <= set(data["device"])
    assert data["device"]["busy_us"] == pytest.approx(0.090)
    assert data["categories"] and data["ascend_steps"] == []


def test_named_metric_formulas() -> None:
    assert metrics.busy_fraction(888, 1000) == pytest.approx(0.888)
    assert metrics.share_of_summed(726, [726, 200, 74]) == pytest.approx(0.726)
    assert metrics.mean_concurrency([726, 200, 74], 500) == pytest.approx(2.0)
    assert metrics.idle_ns(70, 100) == 30
    assert metrics.free_ns(100, 64) == 36


def test_multi_rank_spread() -> None:
    rows = two_stream_rows(rank=0) + two_stream_rows(rank=1)
    rows.append(dict(rank=1, stream=7, name="ampere_sgemm_128x64", start_ns=60, end_ns=80))
    rows.append(dict(rank=2, stream=7, name="ampere_sgemm_128x64", start_ns=0, end_ns=70))
    result = analyze(build_table(rows), window=(0, 100))
    assert [r.rank for r in result.ranks] == [0, 1, 2]
    spread = result.spread
    # compute per rank: 70, 90 ([0,90) on stream 7), 70 -> slowest rank 1, median 70, +28.6%
    assert spread.compute_ns == {0: 70, 1: 90, 2: 70}
    assert spread.slowest_rank == 1 and spread.straggler
    assert spread.excess_fraction == pytest.approx(20 / 70)
    assert {s["rank"] for s in result.to_dict()["streams"]} == {0, 1, 2}


def test_no_device_activity_is_a_clear_error() -> None:
    table = build_table([dict(kind=Kind.CPU_OP, name="aten::mm", start_ns=0, end_ns=5),
                         dict(kind=Kind.CPU_OP, name="aten::add", start_ns=5, end_ns=9),
                         dict(kind=Kind.RUNTIME, name="cudaLaunchKernel", start_ns=1, end_ns=2)])
    with pytest.raises(ParityError, match=r"no device activity .* \(it holds 1 runtime call, 2 CPU ops\); profile"):
        analyze(table)


def test_a_range_profiler_trace_says_its_kernels_are_ranges(traces_dir) -> None:
    """HTA's CUPTI range-profiler trace: every kernel is a ``cuda_profiler_range`` with counters
    (77 of them), no kernel activity; the refusal says so rather than only 'no device activity'."""
    from parity.trace import load_trace

    table = load_trace([traces_dir / "kineto/hta/cupti_profiler/benchmark_result_924719_1679055439_trace.json.gz"])
    assert any(w.startswith("77 kernels appear only as CUPTI range-profiler ranges") for w in table.meta["warnings"])
    with pytest.raises(ParityError) as refused:
        analyze(table)
    message = str(refused.value)
    assert "1,862 runtime calls, 375 CPU ops" in message and "77 kernels appear only as CUPTI" in message
    assert "\n" not in message


def test_inputs_untouched() -> None:
    table = build_table(two_stream_rows())
    before = {c: getattr(table, c).copy() for c in table.COLUMNS}
    analyze(table)
    for c, values in before.items():
        assert np.array_equal(getattr(table, c), values)


def test_repeated_blocks_hand_computed() -> None:
    # one step: embed, 3 forward layers [qkv, attn_flash, mlp_gemm], 3 backward layers, loss
    names = ["embed"] + ["qkv_gemm", "flash_fwd", "mlp_gemm"] * 3 + ["bwd_gemm", "flash_bwd"] * 3 + ["loss"]
    rows, t = [], 0
    for name in names:
        rows.append(dict(stream=7, name=name, start_ns=t, end_ns=t + 10))
        t += 15  # 5 ns gap after each kernel
    result = analyze(build_table(rows), window=(0, t))
    blocks = result.first.blocks
    assert (blocks.kernels_per_block, blocks.repeats, blocks.first_kernel) == (3, 3, "qkv_gemm")
    # each layer: 3 kernels of 10 ns spaced 15 ns -> 45 ns start to start, 30 ns of kernel time
    assert blocks.block_ns == (45, 45, 45) and blocks.busy_ns == (30, 30, 30)


def test_find_block_run_ignores_single_kernel_runs() -> None:
    from parity.trace.repeats import find_block_run

    assert find_block_run(np.array([5] * 50)) is None
    rep = find_block_run(np.array([9, 1, 2, 1, 2, 1, 2, 7, 3, 4, 3, 4, 8]))
    assert (rep.length, rep.count, rep.starts.tolist()) == (2, 3, [1, 3, 5])


def test_window_without_device_activity_is_flagged() -> None:
    result = analyze(build_table(two_stream_rows()), window=(1000, 2000))
    assert result.first.device.busy_ns == 0 and result.first.streams == ()
    (finding,) = [f for f in result.findings if f.code == "empty-window"]
    assert "0.000:0.110 us" in finding.hint


def test_public_api_exports() -> None:
    import parity.trace as api

    for name in api.__all__:
        assert getattr(api, name) is not None


def test_a_streams_category_times_never_sum_past_its_busy_time() -> None:
    """Stream 7: a collective [0, 100) and a GEMM [50, 150) overlapping it on the same stream:
    busy 150; the overlap [50, 100) counts for communication, first in order: 100 and 50."""
    table = build_table([
        {"stream": 7, "name": "ncclKernel_AllReduce_RING_LL_Sum_float", "start_ns": 0, "end_ns": 100},
        {"stream": 7, "name": "ampere_sgemm_128x64_nn", "start_ns": 50, "end_ns": 150},
        {"stream": 8, "name": "relu_kernel", "start_ns": 0, "end_ns": 150},
    ])
    streams = {s.stream: s for s in analyze(table).first.streams}
    assert streams[7].busy_ns == 150
    assert streams[7].categories == {"communication": 100, "matrix": 50}
    assert streams[8].categories == {"vector": 150}


def test_every_kernel_goes_to_kernels_csv_and_the_json_says_how_many(tmp_path) -> None:
    import csv

    from parity.trace.export import write_csv
    from parity.trace.results import TOP_KERNELS

    rows = [{"stream": 7, "name": f"relu_kernel_{i}", "start_ns": 10 * i, "end_ns": 10 * i + 5} for i in range(60)]
    result = analyze(build_table(rows))
    data = result.first.to_dict()
    assert len(data["top_kernels"]) == TOP_KERNELS == 50 and data["kernel_names"] == 60
    write_csv(result, tmp_path)
    with open(tmp_path / "kernels.csv", newline="") as handle:
        assert len(list(csv.DictReader(handle))) == 60


def test_the_window_gives_its_offset_from_the_trace_start() -> None:
    """A host op at 1 us starts the trace; the only kernel runs at [5, 9] us: offset 4 us."""
    table = build_table([{"stream": 7, "name": "relu_kernel", "start_ns": 5_000, "end_ns": 9_000},
                         {"stream": 1, "device": -1, "name": "aten::relu", "start_ns": 1_000, "end_ns": 2_000,
                          "kind": Kind.CPU_OP}])
    window = analyze(table).first.to_dict()["window"]
    assert window["start_ns"] == 5_000 and window["offset_from_trace_start_us"] == 4.0
