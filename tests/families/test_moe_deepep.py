"""DeepEP's kernels in the MoE suite, without DeepEP: why a run does not time them, parity's
routing converted to DeepEP's inputs, the layout counted by hand, and a fake ``Buffer`` driven
through the same dispatch and combine calls (the real one needs CUDA or Ascend ranks)."""

from __future__ import annotations

import types
from typing import Any

import pytest

from parity.families.moe.deepep import (
    CONVENTION,
    deepep_inputs,
    deepep_unavailable,
    deepep_work,
    expected_layout,
    open_buffer,
)
from parity.families.moe.options import MoeOptions
from parity.families.moe.routing import make_routing
from parity.families.moe.suite import MoeSuite, library_backends

pytestmark = pytest.mark.torch


class FakeBuffer:
    """DeepEP's Buffer API on one rank: the layout counted with torch, dispatch keeps the rows
    of tokens that pick any expert, combine sums each token's copies (one here)."""

    def __init__(self, group: Any = None, nvl: int = 0, rdma: int = 0, *, wrong_layout: bool = False) -> None:
        self.sizes, self.wrong_layout = (nvl, rdma), wrong_layout

    @staticmethod
    def get_dispatch_config(n: int) -> Any:
        return types.SimpleNamespace(get_nvl_buffer_size_hint=lambda b, n: 1000 * b,
                                     get_rdma_buffer_size_hint=lambda b, n: 10 * b)

    get_combine_config = get_dispatch_config

    def get_dispatch_layout(self, topk_idx: Any, num_experts: int) -> tuple:
        import torch

        in_rank = (topk_idx >= 0).any(dim=1, keepdim=True)
        if self.wrong_layout:
            in_rank = ~in_rank
        per_expert = torch.bincount(topk_idx[topk_idx >= 0], minlength=num_experts).to(torch.int32)
        return in_rank.sum(dim=0).to(torch.int32), None, per_expert, in_rank, None

    def dispatch(self, x: Any, *, num_tokens_per_rank: Any, num_tokens_per_rdma_rank: Any, is_token_in_rank: Any,
                 num_tokens_per_expert: Any, topk_idx: Any, topk_weights: Any) -> tuple:
        keep = is_token_in_rank[:, 0]
        return x[keep], topk_idx[keep], topk_weights[keep], [int(keep.sum())], keep, None

    def combine(self, x: Any, handle: Any, topk_weights: Any = None) -> tuple:
        import torch

        out = torch.zeros(handle.shape[0], x.shape[1], dtype=x.dtype)
        out[handle] = x
        return out, None, None


def _state(buffer: Any) -> dict[str, Any]:
    routing = make_routing(world=1, tokens=6, top_k=2, num_experts=4, seed=3)
    return {"group": types.SimpleNamespace(rank=0, world_size=1), "deepep_buffer": buffer, "routing": routing,
            "device": types.SimpleNamespace(torch_device="cpu", type="cpu"), "shape": {"hidden": 16}}


def test_a_run_says_why_deepep_is_not_timed() -> None:
    assert "this run is on cpu" in deepep_unavailable("cpu")

    def missing(name: str) -> Any:
        raise ModuleNotFoundError(f"No module named {name!r}")

    assert "deep_ep does not import here (No module named 'deep_ep')" in deepep_unavailable("cuda", load=missing)
    assert deepep_unavailable("npu", load=lambda name: types.SimpleNamespace(Buffer=FakeBuffer)) is None
    assert library_backends("cpu")["deep_ep"].startswith("not measured: DeepEP's Buffer runs on CUDA or Ascend")
    keys = [c.key for c in MoeSuite().cases(device=types.SimpleNamespace(type="cpu"), quick=True,
                                            options=MoeOptions())]
    assert not any("deepep" in key for key in keys)


def test_cases_list_deepep_where_it_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("parity.families.moe.suite.deepep_unavailable", lambda device_type: None)
    keys = [c.key for c in MoeSuite().cases(device=types.SimpleNamespace(type="cuda"), quick=True,
                                            options=MoeOptions())]
    assert keys[-2:] == ["low-latency/deepep/bf16/dispatch", "low-latency/deepep/bf16/combine"]


def test_layout_by_hand_and_the_routing_conversion() -> None:
    assert expected_layout([[0, 3], [1, -1]], num_experts=4, world=2) == {
        "num_tokens_per_rank": [2, 1], "num_tokens_per_expert": [1, 1, 0, 1],
        "is_token_in_rank": [[True, True], [True, False]]}
    import torch

    routing = make_routing(world=2, tokens=5, top_k=3, num_experts=8, seed=1)
    idx, weights = deepep_inputs(routing, rank=1)
    assert idx.dtype == torch.int64 and weights.dtype == torch.float32 and tuple(idx.shape) == (5, 3)
    assert torch.equal(idx, routing.experts[1]) and torch.equal(weights, routing.weights[1])
    buffer = open_buffer("group", hidden=16, world=2, nodes=2, buffer_type=FakeBuffer)
    assert buffer.sizes == (32000, 320)  # DeepEP's hints for 32-byte rows; RDMA only across nodes
    assert open_buffer("group", hidden=16, world=2, nodes=1, buffer_type=FakeBuffer).sizes == (32000, 0)


def test_a_fake_buffer_runs_dispatch_and_combine_checked() -> None:
    metrics = {"logical_bytes": 6 * 32.0}
    for direction in ("dispatch", "combine"):
        work = deepep_work(_state(FakeBuffer()), direction=direction, iterations=2, warmup_s=0.0, metrics=metrics)
        work.call()
        check = work.check()
        assert check["passed"] and check["wrong"] == 0, check
        assert work.bytes_convention == CONVENTION and work.metrics["library"] == "deep_ep"
        assert work.metrics["deepep_recv_rows"] == 6 and work.metrics["deepep_recv_bytes"] == 192.0


def test_a_layout_that_differs_from_parity_count_refuses_the_case() -> None:
    with pytest.raises(ValueError, match="is_token_in_rank|num_tokens_per_rank"):
        deepep_work(_state(FakeBuffer(wrong_layout=True)), direction="dispatch", iterations=2, warmup_s=0.0,
                    metrics={"logical_bytes": 1.0})


def test_the_text_names_nodes_and_ranks_in_their_number() -> None:
    from parity.families.moe.views import render_moe

    one = render_moe({"world_size": 2, "backend": "gloo", "topology": {"nodes": 1, "ranks_per_node": 2}})
    assert "2 ranks on 1 node of 2 ranks, backend gloo" in one.splitlines()[0]
    two = render_moe({"world_size": 2, "backend": "gloo", "topology": {"nodes": 2, "ranks_per_node": 1}})
    assert "on 2 nodes of 1 rank," in two.splitlines()[0]
