"""The declared work of one MoE case: buffers, the timed exchange and its check, and its bytes."""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from typing import Any

from parity.families.moe.exchange import decode, encode, plan_exchange, token_rows, token_table
from parity.harness.work import Work
from parity.metrics.moe import (
    algorithm_bytes,
    bf16_row_bytes,
    cross_rank_bytes,
    exchange_counts,
    fp8_row_bytes,
    logical_bytes,
)

LOGICAL = "logical: rank-deduplicated rows (own rank included), mean over ranks"
BF16_ROUNDING = 2.0**-8  # unit roundoff of bf16 (8 significant bits)


def row_bytes(dtype: str, hidden: int) -> int:
    """Bytes of one row of ``dtype`` (``bf16`` or ``fp8`` with scales)."""
    return fp8_row_bytes(hidden) if dtype == "fp8" else bf16_row_bytes(hidden)


def scale_split(experts: Sequence[Sequence[int]], *, source_rank: int, experts_per_rank: int,
                rank_nodes: Sequence[int]) -> tuple[int, int]:
    """The cross-rank rows rank ``source_rank`` sends, split by where they go (one row per
    destination rank, as logical bytes count them): (scale-up rows, to other ranks of its own
    node; scale-out rows, to ranks of other nodes). Their sum is ``remote_copies``.

    Example: 2 nodes of 2 ranks (rank_nodes 0, 0, 1, 1), one expert per rank, rank 0's tokens
    picking (0, 1, 2) and (3, 2, 1): destinations {1, 2} and {1, 2, 3}: scale-up 2, scale-out 3."""
    up = out = 0
    home = rank_nodes[source_rank]
    for chosen in experts:
        ranks = {int(e) // experts_per_rank for e in chosen if int(e) >= 0} - {source_rank}
        same = sum(1 for r in ranks if rank_nodes[r] == home)
        up, out = up + same, out + len(ranks) - same
    return up, out


def exchange_bytes(routing: Any, *, world: int, hidden: int, rank_nodes: Sequence[int] | None = None) -> dict[str, Any]:
    """Per-rank row counts of the routing (``parity.metrics.moe.exchange_counts``) and, where
    each rank's node is known (``rank_nodes``), each rank's scale-up and scale-out rows."""
    per_rank = routing.num_experts // world
    counts = [exchange_counts(routing.experts[s].tolist(), source_rank=s, experts_per_rank=per_rank)
              for s in range(world)]
    split = None
    if rank_nodes is not None and len(rank_nodes) == world:
        split = [scale_split(routing.experts[s].tolist(), source_rank=s, experts_per_rank=per_rank,
                             rank_nodes=rank_nodes) for s in range(world)]
    return {"counts": counts, "hidden": hidden, "split": split}


def case_bytes(state: dict[str, Any], *, dtype: str) -> dict[str, float]:
    """Mean over ranks of each rank's bytes in the byte conventions, for rows of ``dtype``; the
    scale-up and scale-out bytes too where the topology is known."""
    counts, row = state["bytes"]["counts"], row_bytes(dtype, state["bytes"]["hidden"])
    moved = {"algorithm_bytes": statistics.fmean(algorithm_bytes(c, row_bytes=row) for c in counts),
             "logical_bytes": statistics.fmean(logical_bytes(c, row_bytes=row) for c in counts),
             "cross_rank_bytes": statistics.fmean(cross_rank_bytes(c, row_bytes=row) for c in counts),
             "row_bytes": row}
    split = state["bytes"].get("split")
    if split:
        moved["scale_up_bytes"] = statistics.fmean(up * row for up, _ in split)
        moved["scale_out_bytes"] = statistics.fmean(out * row for _, out in split)
    return moved


def _setting(state: dict[str, Any], *, dtype: str, seed: int) -> tuple[Any, Any, Any]:
    """This rank's plan (cached), the token table, and its own rows encoded for dispatch."""
    import torch

    group, shape, device = state["group"], state["shape"], state["device"].torch_device
    plan = state.setdefault("plan", plan_exchange(state["routing"], rank=group.rank, world=group.world_size))
    table = state.setdefault("table", token_table(hidden=shape["hidden"], seed=seed))
    own = token_rows(table, source=torch.full_like(plan.send_order, group.rank), token=plan.send_order,
                     tokens_per_rank=shape["tokens"])
    return plan, table, encode(own, dtype=dtype).to(device)


def exchange_metrics(state: dict[str, Any], *, dtype: str, direction: str) -> dict[str, Any]:
    """A case's metrics: its shape, its bytes in every convention, the routing, the topology."""
    group, routing = state["group"], state["routing"]
    moved = case_bytes(state, dtype=dtype if direction == "dispatch" else "bf16")
    return {**state["shape"], **moved, "world_size": group.world_size, "backend": group.backend,
            "dispatch_dtype": dtype, "direction": direction, "routing": routing.source,
            "routing_digest": routing.digest, "imbalance_ratio": routing.imbalance,
            "topology": state.get("topology"),
            "library_backends": state.get("library_backends", {})}


def dispatch_work(state: dict[str, Any], *, dtype: str, seed: int, iterations: int, warmup_s: float) -> Work:
    """Dispatch: ``all_to_all_single`` of the encoded rows; checked bit for bit on every rank."""
    import torch
    import torch.distributed as dist

    plan, table, send = _setting(state, dtype=dtype, seed=seed)
    recv = torch.empty(sum(plan.recv_counts), send.shape[1], dtype=torch.uint8, device=send.device)

    def call() -> None:
        dist.all_to_all_single(recv, send, plan.recv_counts, plan.send_counts)

    def check() -> dict[str, Any]:
        rows = token_rows(table, source=plan.recv_source, token=plan.recv_token,
                          tokens_per_rank=state["shape"]["tokens"])
        expected = encode(rows, dtype=dtype).to(recv.device)
        wrong = int((recv != expected).any(dim=1).sum()) if recv.numel() else 0
        return {"passed": wrong == 0, "wrong": wrong,
                "method": "every received row equals the sender's encoded row, byte for byte"}

    return _exchange_work(call, check, exchange_metrics(state, dtype=dtype, direction="dispatch"),
                          iterations=iterations, warmup_s=warmup_s)


def combine_work(state: dict[str, Any], *, dtype: str, seed: int, iterations: int, warmup_s: float) -> Work:
    """Combine: one untimed dispatch and expert step, then the timed return of bf16 rows and the
    per-token sum; checked against ``x̂·Σ w·g`` within bf16 rounding on every rank."""
    import torch
    import torch.distributed as dist

    plan, _, send = _setting(state, dtype=dtype, seed=seed)
    hidden, tokens = state["shape"]["hidden"], state["shape"]["tokens"]
    recv = torch.empty(sum(plan.recv_counts), send.shape[1], dtype=torch.uint8, device=send.device)
    dist.all_to_all_single(recv, send, plan.recv_counts, plan.send_counts)
    factor = plan.recv_factor.to(recv.device)
    partial = (decode(recv, dtype=dtype, hidden=hidden) * factor[:, None]).to(torch.bfloat16)
    outgoing = partial.contiguous().view(torch.uint8)
    back = torch.empty(send.shape[0], 2 * hidden, dtype=torch.uint8, device=send.device)
    out = torch.empty(tokens, hidden, dtype=torch.float32, device=send.device)
    order = plan.send_order.to(send.device)

    def call() -> None:
        dist.all_to_all_single(back, outgoing, plan.send_counts, plan.recv_counts)
        out.zero_()
        out.index_add_(0, order, back.view(torch.bfloat16).float())

    def check() -> dict[str, Any]:
        mine = torch.zeros(tokens, hidden, dtype=torch.float32, device=send.device)
        mine[order] = decode(send, dtype=dtype, hidden=hidden)  # x̂: this rank's tokens as dispatched
        expected = mine * plan.total_factor.to(send.device)[:, None]
        bound = BF16_ROUNDING * expected.abs() * 1.001 + 1e-30
        wrong = int(((out - expected).abs() > bound).sum())
        return {"passed": wrong == 0, "wrong": wrong,
                "method": "combine(dispatch(x)) = x_hat * sum(w * g_e) over the top-k, within bf16 rounding"}

    return _exchange_work(call, check, exchange_metrics(state, dtype=dtype, direction="combine"),
                          iterations=iterations, warmup_s=warmup_s)


def _exchange_work(call: Any, check: Any, metrics: dict[str, Any], *, iterations: int, warmup_s: float) -> Work:
    """An exchange's declared work: its logical bytes, a fixed number of iterations, no flush."""
    return Work(call=call, check=check, bytes=metrics["logical_bytes"], bytes_convention=LOGICAL,
                warmup_s=warmup_s, budget_s=0.0, min_samples=iterations, max_samples=iterations,
                flush_cache=False, metrics=metrics)
