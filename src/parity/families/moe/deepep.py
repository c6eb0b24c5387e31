"""DeepEP's own dispatch and combine (``deep_ep.Buffer``, its normal kernels), timed on the same
routing as parity's exchange, where DeepEP runs: a CUDA or Ascend device with ``deep_ep``
importable. Elsewhere :func:`deepep_unavailable` says why not, and the summary prints it.

DeepEP's public API, as its ``deep_ep/buffer.py`` documents it:

- ``Buffer(group, num_nvl_bytes, num_rdma_bytes)``, sized from
  ``Buffer.get_dispatch_config(n)`` / ``get_combine_config(n)`` and their
  ``get_nvl_buffer_size_hint(hidden_bytes, n)`` / ``get_rdma_buffer_size_hint(hidden_bytes, n)``;
- ``get_dispatch_layout(topk_idx, num_experts)`` -> ``(num_tokens_per_rank,
  num_tokens_per_rdma_rank, num_tokens_per_expert, is_token_in_rank, event)``;
- ``dispatch(x, num_tokens_per_rank=, num_tokens_per_rdma_rank=, is_token_in_rank=,
  num_tokens_per_expert=, topk_idx=, topk_weights=)`` -> ``(recv_x, recv_topk_idx,
  recv_topk_weights, num_recv_tokens_per_expert_list, handle, event)``;
- ``combine(x, handle, topk_weights=None)`` -> ``(combined_x, combined_topk_weights, event)``,
  a sum **without** weights over the ranks a token went to.

The routing conversion (:func:`deepep_inputs`): this rank's ``topk_idx`` is its slice of
parity's routing as int64 ``[tokens, top_k]`` (``-1`` unused, DeepEP's convention too), its
``topk_weights`` fp32. Before timing, DeepEP's layout is compared with the one parity counts
from the same routing (:func:`expected_layout`); a difference refuses the case.

Bytes, in DeepEP's convention (its ``test_intranode`` "NVL" figure): the bf16 rows this rank
receives in a dispatch (one per source token and destination rank), ``recv_rows · 2·h``; the
same rows travel back in a combine. The mean over ranks of the rows received is the mean of the
rows sent (each is received once): parity's logical bytes of bf16 rows. parity reports the
mean over ranks over the max-over-ranks
time, as for its own exchange; DeepEP's tests average per-rank rates instead.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Sequence
from typing import Any

from parity.harness.work import Work
from parity.model.errors import one_line

DEVICE_TYPES = ("cuda", "npu")
CONVENTION = "DeepEP normal kernels: bf16 rows each rank receives (one per source token and rank), 2*h each"
BF16_ROUNDING = 2.0**-8


def deepep_unavailable(device_type: str, *, load: Callable[[str], Any] = importlib.import_module) -> str | None:
    """Why DeepEP's kernels cannot be timed on ``device_type`` here (None: they can)."""
    if device_type not in DEVICE_TYPES:
        return f"not measured: DeepEP's Buffer runs on CUDA or Ascend devices and this run is on {device_type}"
    try:
        module = load("deep_ep")
    except Exception as exc:  # noqa: BLE001 - an import that fails is a reason, not a crash
        return f"not measured: deep_ep does not import here ({one_line(exc, 160)})"
    if not hasattr(module, "Buffer"):
        return "not measured: this deep_ep has no Buffer"
    return None


def deepep_inputs(routing: Any, *, rank: int) -> tuple[Any, Any]:
    """This rank's routing as DeepEP takes it: ``topk_idx`` int64 ``[tokens, top_k]`` and
    ``topk_weights`` fp32, from parity's ``[world, tokens, top_k]`` routing."""
    import torch

    return routing.experts[rank].to(torch.int64).contiguous(), routing.weights[rank].to(torch.float32).contiguous()


def expected_layout(topk_idx: Sequence[Sequence[int]], *, num_experts: int, world: int) -> dict[str, list[Any]]:
    """What ``get_dispatch_layout`` must return for ``topk_idx``, counted here: tokens per
    destination rank, tokens per expert, and whether each token goes to each rank.

    Example: 4 experts on 2 ranks, tokens picking (0, 3) and (1, -1): tokens per rank [2, 1],
    per expert [1, 1, 0, 1], in rank [[True, True], [True, False]]."""
    per_rank = num_experts // world
    in_rank = [[False] * world for _ in topk_idx]
    per_expert = [0] * num_experts
    for token, chosen in enumerate(topk_idx):
        for expert in (int(e) for e in chosen):
            if expert >= 0:
                per_expert[expert] += 1
                in_rank[token][expert // per_rank] = True
    return {"num_tokens_per_rank": [sum(row[r] for row in in_rank) for r in range(world)],
            "num_tokens_per_expert": per_expert, "is_token_in_rank": in_rank}


def layout_problem(layout: Sequence[Any], expected: dict[str, list[Any]]) -> str | None:
    """How DeepEP's ``get_dispatch_layout`` answer differs from ``expected`` (None: it agrees)."""
    per_rank, _, per_expert, in_rank = layout[:4]
    found = {"num_tokens_per_rank": [int(v) for v in per_rank.tolist()],
             "num_tokens_per_expert": [int(v) for v in per_expert.tolist()],
             "is_token_in_rank": [[bool(v) for v in row] for row in in_rank.tolist()]}
    for name, want in expected.items():
        if found[name] != want:
            return f"DeepEP's {name} {found[name]} differs from parity's count {want} of the same routing"
    return None


def token_values(rank: int, *, tokens: int, hidden: int) -> Any:
    """Rank ``rank``'s bf16 tokens, ``[tokens, hidden]``, the same on every rank that builds them."""
    import torch

    generator = torch.Generator().manual_seed(1000 + rank)
    return torch.randn(tokens, hidden, generator=generator).to(torch.bfloat16)


def open_buffer(group: Any, *, hidden: int, world: int, nodes: int, buffer_type: Any) -> Any:
    """A ``Buffer`` on ``group`` sized by DeepEP's own hints for bf16 rows of ``hidden``."""
    hidden_bytes = 2 * hidden
    configs = (buffer_type.get_dispatch_config(world), buffer_type.get_combine_config(world))
    nvl = max(c.get_nvl_buffer_size_hint(hidden_bytes, world) for c in configs)
    rdma = max(c.get_rdma_buffer_size_hint(hidden_bytes, world) for c in configs) if nodes > 1 else 0
    return buffer_type(group, nvl, rdma)


def deepep_work(state: dict[str, Any], *, direction: str, iterations: int, warmup_s: float,
                metrics: dict[str, Any]) -> Work:
    """DeepEP's dispatch (or combine, after one untimed dispatch) of this rank's tokens, bf16."""
    import torch

    group, buffer, routing = state["group"], state["deepep_buffer"], state["routing"]
    device = state["device"].torch_device
    topk_idx, topk_weights = (t.to(device) for t in deepep_inputs(routing, rank=group.rank))
    expected = expected_layout(routing.experts[group.rank].tolist(), num_experts=routing.num_experts,
                               world=group.world_size)
    layout = buffer.get_dispatch_layout(topk_idx, routing.num_experts)
    problem = layout_problem(layout, expected)
    if problem is not None:
        raise ValueError(problem)
    per_rank, per_rdma_rank, per_expert, in_rank = layout[:4]
    hidden, world, me = state["shape"]["hidden"], group.world_size, group.rank
    x = token_values(me, tokens=topk_idx.shape[0], hidden=hidden).to(device)
    want_rows, want_sum = 0, torch.zeros(hidden, dtype=torch.float64)
    for source in range(world):  # every rank rebuilds every rank's tokens: what must arrive here
        goes = expected_layout(routing.experts[source].tolist(), num_experts=routing.num_experts, world=world)
        mask = torch.tensor([row[me] for row in goes["is_token_in_rank"]], dtype=torch.bool)
        want_rows += int(mask.sum())
        want_sum += token_values(source, tokens=mask.numel(), hidden=hidden)[mask].double().sum(dim=0)

    def dispatch() -> Any:
        return buffer.dispatch(x, num_tokens_per_rank=per_rank, num_tokens_per_rdma_rank=per_rdma_rank,
                               is_token_in_rank=in_rank, num_tokens_per_expert=per_expert, topk_idx=topk_idx,
                               topk_weights=topk_weights)

    received = dispatch()
    recv_x, handle = received[0], received[4]
    recv_rows = int(recv_x.shape[0])
    fanout = in_rank.sum(dim=1).to(torch.float32)[:, None]

    def check() -> dict[str, Any]:
        if direction == "dispatch":
            got = dispatch()[0].double().cpu()
            off = (got.sum(dim=0) - want_sum).abs() > 1e-6 * (want_sum.abs() + 1.0) * max(1, want_rows)
            wrong = abs(int(got.shape[0]) - want_rows) + int(off.sum())
            return {"passed": wrong == 0, "wrong": wrong,
                    "method": "DeepEP dispatch: the rows parity's routing sends here, their column sums exact"}
        combined = buffer.combine(recv_x, handle)[0].float()
        expected_x = x.float() * fanout
        bound = BF16_ROUNDING * expected_x.abs() * 2.0 + 1e-6
        wrong = int(((combined - expected_x).abs() > bound).sum())
        return {"passed": wrong == 0, "wrong": wrong,
                "method": "DeepEP combine(dispatch(x)) = x * ranks the token went to, within bf16 rounding"}

    call: Callable[[], Any] = dispatch if direction == "dispatch" else (lambda: buffer.combine(recv_x, handle))
    moved = {**metrics, "library": "deep_ep", "deepep_recv_rows": recv_rows,
             "deepep_recv_bytes": metrics["logical_bytes"]}  # mean over ranks: every row sent is received once
    return Work(call=call, check=check, bytes=float(moved["deepep_recv_bytes"]), bytes_convention=CONVENTION,
                warmup_s=warmup_s, budget_s=0.0, min_samples=iterations, max_samples=iterations,
                flush_cache=False, metrics=moved)
