"""Communication formulas on hand-computed cases: nccl-tests' bus factors, MoE byte conventions
(fp8 factor included), the size sweep, the routing and the exchange plan."""

from __future__ import annotations

import math

import pytest

from parity.families.collectives.ops import elements
from parity.families.collectives.suite import sweep_sizes
from parity.families.collectives.summary import percentile
from parity.metrics.collectives import algbw, bus_factor, busbw
from parity.metrics.moe import (
    ExchangeCounts,
    algorithm_bytes,
    bf16_row_bytes,
    cross_rank_bytes,
    exchange_counts,
    fp8_row_bytes,
    imbalance_ratio,
    logical_bytes,
    moe_busbw,
)
from parity.model.errors import ParityError


@pytest.mark.parametrize(("op", "n", "factor"), [
    ("all_reduce", 4, 1.5), ("all_reduce", 2, 1.0), ("all_reduce", 8, 1.75), ("all_reduce", 1, 0.0),
    ("all_gather", 4, 0.75), ("reduce_scatter", 8, 0.875), ("all_to_all", 2, 0.5),
    ("broadcast", 4, 1.0), ("reduce", 8, 1.0), ("sendrecv", 2, 1.0),
])
def test_bus_factors_are_nccl_tests(op: str, n: int, factor: float) -> None:
    assert bus_factor(op, n) == pytest.approx(factor)


def test_algbw_and_busbw_by_hand() -> None:
    assert algbw(1e6, 1e-3) == pytest.approx(1e9)
    assert busbw(1e6, 1e-3, op="all_reduce", world_size=4) == pytest.approx(1.5e9)
    assert busbw(2**20, 2e-3, op="all_gather", world_size=2) == pytest.approx(2**20 / 2e-3 * 0.5)
    assert algbw(1.0, 0.0) is None and busbw(1.0, -1.0, op="reduce", world_size=2) is None
    with pytest.raises(ParityError, match="unknown collective 'allreduce'"):
        bus_factor("allreduce", 2)


def test_row_bytes_bf16_and_fp8_with_scales() -> None:
    assert bf16_row_bytes(7168) == 14336
    assert fp8_row_bytes(7168) == 7168 + 4 * 56 == 7392
    assert fp8_row_bytes(130) == 130 + 4 * 2  # a partial block still has its scale


def test_moe_conventions_on_a_routing_worked_by_hand() -> None:
    # 4 experts on 2 ranks (2 each); rank 0's three tokens pick (0,1), (1,2), (2,3):
    # destination ranks {0}, {0,1}, {1}.
    counts = exchange_counts([(0, 1), (1, 2), (2, 3)], source_rank=0, experts_per_rank=2)
    assert counts == ExchangeCounts(copies=6, rank_copies=4, remote_copies=2)
    row = fp8_row_bytes(256)  # 256 + 4·2 = 264
    assert row == 264
    assert algorithm_bytes(counts, row_bytes=row) == 6 * 264
    assert logical_bytes(counts, row_bytes=row) == 4 * 264
    assert cross_rank_bytes(counts, row_bytes=row) == 2 * 264
    # 1056 B in 1 us on 2 ranks: 1.056e9 B/s logical, half of it on the bus.
    assert moe_busbw(4 * 264, 1e-6, world_size=2) == pytest.approx(0.528e9)
    # an unused slot (-1) is no copy
    assert exchange_counts([(3, -1)], source_rank=1, experts_per_rank=2) == ExchangeCounts(
        copies=1, rank_copies=1, remote_copies=0)


def test_imbalance_ratio_by_hand() -> None:
    assert imbalance_ratio([4, 2, 2, 0]) == pytest.approx(2.0)
    assert imbalance_ratio([3, 3]) == pytest.approx(1.0)
    assert imbalance_ratio([0, 0]) is None


def test_sweep_sizes_elements_and_percentile() -> None:
    assert sweep_sizes(1024, 16384, 4.0) == [1024, 4096, 16384]
    assert sweep_sizes(8, 20, 2.0) == [8, 16]
    assert elements("all_gather", 1000, element_size=4, world_size=3) == 249
    assert elements("all_reduce", 1000, element_size=4, world_size=3) == 250
    assert percentile([float(v) for v in range(1, 101)], 99.0) == pytest.approx(99.01)
    assert percentile([5.0], 99.0) == 5.0


@pytest.mark.torch
def test_routing_is_seeded_skewed_and_hashed() -> None:
    from parity.families.moe.routing import make_routing

    a = make_routing(world=2, tokens=64, top_k=4, num_experts=16, seed=3)
    b = make_routing(world=2, tokens=64, top_k=4, num_experts=16, seed=3)
    c = make_routing(world=2, tokens=64, top_k=4, num_experts=16, seed=4)
    assert a.digest == b.digest and a.digest != c.digest
    assert tuple(a.experts.shape) == (2, 64, 4)
    assert all(len(set(row)) == 4 for row in a.experts.reshape(-1, 4).tolist())  # distinct experts
    assert float(a.weights.sum(dim=2).sub(1).abs().max()) < 1e-5
    skewed = make_routing(world=2, tokens=64, top_k=4, num_experts=16, seed=3, skew=2.0)
    assert skewed.imbalance > a.imbalance and skewed.source == "zipf(s=2)"


@pytest.mark.torch
def test_routing_file_is_read_and_checked(tmp_path) -> None:
    import numpy as np

    from parity.families.moe.routing import make_routing

    path = tmp_path / "routing.npy"
    np.save(path, np.array([[[0, 1]], [[2, 3]]]))
    routing = make_routing(world=2, tokens=1, top_k=2, num_experts=4, seed=0, path=str(path))
    assert routing.experts.tolist() == [[[0, 1]], [[2, 3]]] and routing.source == f"file {path}"
    np.save(path, np.array([[[0, 9]], [[2, 3]]]))
    with pytest.raises(ParityError, match=r"routing file .*expert ids from 0 to 9"):
        make_routing(world=2, tokens=1, top_k=2, num_experts=4, seed=0, path=str(path))


@pytest.mark.torch
def test_exchange_plan_and_fp8_round_trip() -> None:
    import torch

    from parity.families.moe.exchange import decode, encode, plan_exchange
    from parity.families.moe.routing import Routing

    experts = torch.tensor([[[0, 1], [1, 2], [2, 3]], [[3, 2], [0, 3], [1, 0]]])
    weights = torch.full((2, 3, 2), 0.5)
    routing = Routing(experts=experts, weights=weights, num_experts=4, source="hand", digest="", imbalance=None)
    plan = plan_exchange(routing, rank=0, world=2)
    assert plan.send_counts == [2, 2] and plan.send_order.tolist() == [0, 1, 1, 2]
    assert plan.recv_counts == [2, 2]  # from rank 0: tokens 0, 1; from rank 1: tokens 1, 2
    assert plan.recv_token.tolist() == [0, 1, 1, 2]
    # gains g_e = 1 + e/4; rank 0 holds experts 0, 1: token (0,1) of rank 0 -> 0.5·1 + 0.5·1.25
    assert plan.recv_factor.tolist() == pytest.approx([1.125, 0.625, 0.5, 1.125])
    assert plan.total_factor.tolist() == pytest.approx([1.125, 1.375, 1.625])

    rows = torch.randn(3, 200).to(torch.bfloat16)
    data = encode(rows, dtype="fp8")
    assert tuple(data.shape) == (3, fp8_row_bytes(200))
    back = decode(data, dtype="fp8", hidden=200)
    assert float(((back - rows.float()).abs() / rows.float().abs().clamp_min(0.05)).max()) < 0.13
    assert torch.equal(decode(encode(rows, dtype="bf16"), dtype="bf16", hidden=200), rows.float())
    assert math.isfinite(float(back.sum()))


def test_slowdown_and_overlap_by_hand() -> None:
    from parity.metrics.interference import overlap_achieved, slowdown

    assert slowdown(4.5e-3, 3e-3) == pytest.approx(1.5)
    assert slowdown(1.0, 0.0) is None
    assert overlap_achieved(4e-3, 2e-3, 5e-3) == pytest.approx(0.5)
    assert overlap_achieved(4e-3, 2e-3, 4e-3) == pytest.approx(1.0)
    assert overlap_achieved(4e-3, 2e-3, 6e-3) == pytest.approx(0.0)
    assert overlap_achieved(4e-3, 2e-3, 7e-3) == pytest.approx(-0.5)


def test_the_collectives_table_has_nccl_tests_layout_units_and_footer() -> None:
    from parity.families.collectives.views import render_collectives

    row = {"op": "all_reduce", "dtype": "fp32", "placement": "in-place", "size_bytes": 1024, "count": 256,
           "time_s": 2e-4, "time_p99_s": 3e-4, "fastest_rank_s": 1e-4, "algbw_gbps": 0.00512,
           "busbw_gbps": 0.00768, "wrong": 0, "error": None}
    text = render_collectives({"rows": [row], "wrong": 0, "ok": True, "avg_busbw_all_gbps": 0.00768,
                               "world_size": 4, "backend": "gloo"})
    lines = text.splitlines()
    header = next(i for i, line in enumerate(lines) if line.split()[:3] == ["size", "count", "type"])
    assert lines[header + 1].split()[:2] == ["(B)", "(elements)"] and "(GB/s)" in lines[header + 1]
    assert lines[header + 2].split() == ["1024", "256", "fp32", "sum", "-1", "-", "-", "-", "-", "-", "-",
                                         "200.0", "300.0", "100.0", "0.01", "0.01", "0"]
    assert lines[-3:] == ["# Out of bounds values : 0 OK", "# Avg bus bandwidth    : 0.01 GB/s", "OK"]
    failed = render_collectives({"rows": [{**row, "wrong": 3}], "wrong": 3, "ok": False})
    assert failed.splitlines()[-1] == "FAILED" and "3 FAILED" in failed


@pytest.mark.parametrize("op", ["all_reduce", "all_gather", "reduce_scatter", "all_to_all", "broadcast", "reduce",
                                "sendrecv"])
def test_one_rank_has_no_bus_bandwidth(op: str) -> None:
    """On one rank nothing crosses a link: no busbw (nccl-tests' factor would give 0 for an
    all_reduce and a copy's speed for a broadcast), while algbw stays S / t."""
    assert busbw(1e6, 1e-3, op=op, world_size=1) is None and algbw(1e6, 1e-3) == pytest.approx(1e9)


def test_one_rank_exchange_has_no_bus_figure_and_its_cases_say_why() -> None:
    from parity.harness.work import ONE_RANK, one_rank_findings
    from parity.metrics.moe import moe_busbw

    assert moe_busbw(1e6, 1e-3, world_size=1) is None and moe_busbw(1e6, 1e-3, world_size=4) == pytest.approx(7.5e8)
    (finding,) = one_rank_findings(1)
    assert finding.code == ONE_RANK and "no data crosses a link" in finding.message and "--ranks 2" in finding.hint
    assert one_rank_findings(2) == () and one_rank_findings(8) == ()
