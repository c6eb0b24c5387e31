"""A synthetic two-stream device trace, for timing the what-if graph and replay at scale.

``python benchmarks/whatif_validation.py --synthetic KERNELS`` builds one with this module and
reports how long the timeline, the graph and two replay passes take, and whether k = 1
reproduces every activity.
"""

from __future__ import annotations

import time

import numpy as np

from parity.trace import Kind
from parity.trace.whatif import parse_scale
from parity.trace.whatif.graph import build_graph
from parity.trace.whatif.replay import schedule
from parity.trace.whatif.selection import scale_factors
from parity.trace.whatif.timeline import build_timeline


def synthetic_table(kernels: int, *, seed: int = 0):
    """A two-stream device trace of ``kernels`` kernels, each launched by a host call, with a
    device synchronize (and its ``cuda_sync`` record) every 1000 launches; ns times."""
    from parity.trace.table import ActivityTable

    rng = np.random.default_rng(seed)
    n = kernels
    launch = np.cumsum(rng.integers(3_000, 6_000, n)).astype(np.int64)
    dur = rng.integers(1_000, 9_000, n).astype(np.int64)
    stream = np.where(rng.random(n) < 0.7, 7, 8)
    start = np.empty(n, np.int64)
    free = {7: 0, 8: 0}
    for i, (t, s, d) in enumerate(zip(launch.tolist(), stream.tolist(), dur.tolist())):
        start[i] = max(t + 4_000, free[s])
        free[s] = start[i] + d
    end = start + dur
    names = ("sgemm_128x64_nn", "vectorized_elementwise_kernel", "cudaLaunchKernel",
             "cudaDeviceSynchronize", "Context Sync")
    syncs = np.arange(999, n, 1000)
    sync_start = launch[syncs] + 2_500
    sync_end = np.maximum(np.maximum.accumulate(end)[syncs], sync_start) + 1_000
    n_rows = 2 * n + 2 * len(syncs)
    col = lambda *parts: np.concatenate(parts)
    sync_corr = n + np.arange(len(syncs))
    return ActivityTable(
        rank=np.zeros(n_rows, np.int32),
        device=col(np.zeros(n), -np.ones(n), -np.ones(len(syncs)), np.zeros(len(syncs))).astype(np.int32),
        stream=col(stream, np.full(n, 100), np.full(len(syncs), 100), np.full(len(syncs), -1)).astype(np.int64),
        kind=col(np.full(n, int(Kind.KERNEL)), np.full(n, int(Kind.RUNTIME)),
                 np.full(len(syncs), int(Kind.RUNTIME)), np.full(len(syncs), int(Kind.SYNC))).astype(np.int8),
        name_id=col(np.where(rng.random(n) < 0.5, 0, 1), np.full(n, 2), np.full(len(syncs), 3),
                    np.full(len(syncs), 4)).astype(np.int32),
        start_ns=col(start, launch, sync_start, sync_start),
        end_ns=col(end, launch + 2_000, sync_end, sync_end),
        correlation=col(np.arange(n), np.arange(n), sync_corr, sync_corr).astype(np.int64),
        step=np.full(n_rows, -1, np.int32),
        names=names,
        extra={"sync_type": np.array([None] * (2 * n + len(syncs)) + ["Context Sync"] * len(syncs),
                                     dtype=object)},
    )


def time_synthetic(kernels: int) -> dict:
    """Seconds to build the graph of a synthetic trace and to replay it (first and second
    pass); checks that k = 1 reproduces every activity."""
    table = synthetic_table(kernels)
    t0 = time.perf_counter()
    timeline = build_timeline(table)
    t1 = time.perf_counter()
    graph = build_graph(table, timeline)
    t2 = time.perf_counter()
    start, _ = schedule(graph, np.ones(len(timeline)))
    t3 = time.perf_counter()
    schedule(graph, scale_factors(timeline, [parse_scale("matrix=2")]))
    t4 = time.perf_counter()
    exact = bool(np.allclose(start, timeline.start_ns - graph.origin_ns, atol=1))
    return {"events": len(table), "timeline_s": t1 - t0, "graph_s": t2 - t1,
            "first_replay_s": t3 - t2, "replay_s": t4 - t3, "k1_exact": exact,
            "edges": graph.to_dict()["edges"]}
