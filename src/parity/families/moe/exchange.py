"""parity's own MoE exchange: dispatch and combine as ``all_to_all_single`` with uneven splits.

Dispatch: rank ``r`` sends each of its tokens once to every rank holding one of the token's
experts (itself included), grouped by destination rank; a row is the token in bf16, or in fp8
e4m3 with one fp32 scale per 128 values, carried as bytes so any backend moves it. The split
sizes follow from the routing every rank holds (checked by digest), so no count exchange runs.
Expert ``e`` scales its input by ``g_e = 1 + e/E``; the receiving rank sums its own experts'
weighted outputs per token, ``Σ_j w_j·g_{e_j}·x̂`` over the picks on that rank, in bf16.
Combine sends those rows back and each rank adds them per token (fp32), so
``combine(dispatch(x)) = x̂·Σ_j w_j·g_{e_j}`` over all ``k`` picks, which the check verifies
within bf16 rounding (``x̂``: the token as dispatched, dequantized).

Token values are rows of a seeded 257-row table, scaled by ``1 + (i mod 7)/8`` for global token
``i``, so any rank rebuilds any other rank's rows to check what it received, bit for bit.
Quantization, the expert step and the table are outside the timed calls; dispatch times the
exchange, combine the exchange and the per-token reduction.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from parity.families.moe.routing import Routing
from parity.metrics.moe import SCALE_BLOCK

FP8_MAX = 448.0  # largest finite e4m3fn value
TABLE_ROWS = 257


@dataclass(frozen=True, kw_only=True)
class Plan:
    """This rank's side of the exchange: ``send_order`` (its token ids, by destination rank),
    ``send_counts`` and ``recv_counts`` (rows per rank), ``recv_source``/``recv_token`` (whose
    token each received row is) and ``recv_factor`` (``Σ w·g`` of this rank's experts per row)."""

    send_order: Any
    send_counts: list[int]
    recv_counts: list[int]
    recv_source: Any
    recv_token: Any
    recv_factor: Any
    total_factor: Any


def plan_exchange(routing: Routing, *, rank: int, world: int) -> Plan:
    """The split sizes and row order of rank ``rank`` (module docstring)."""
    import torch

    per_rank = routing.num_experts // world
    gains = 1.0 + torch.arange(routing.num_experts, dtype=torch.float32) / routing.num_experts
    valid = routing.experts >= 0
    home = torch.where(valid, routing.experts // per_rank, torch.full_like(routing.experts, -1))
    to = torch.stack([(home == d).any(dim=2) for d in range(world)], dim=2)  # [world, tokens, world]
    order = torch.cat([torch.nonzero(to[rank, :, d]).flatten() for d in range(world)])
    sources, tokens = [], []
    for s in range(world):
        ids = torch.nonzero(to[s, :, rank]).flatten()
        sources.append(torch.full_like(ids, s))
        tokens.append(ids)
    source, token = torch.cat(sources), torch.cat(tokens)
    contribution = routing.weights * gains[routing.experts.clamp_min(0)] * valid
    mine = (contribution * (home == rank))[source, token].sum(dim=1)
    return Plan(send_order=order, send_counts=[int(to[rank, :, d].sum()) for d in range(world)],
                recv_counts=[int(to[s, :, rank].sum()) for s in range(world)], recv_source=source,
                recv_token=token, recv_factor=mine, total_factor=contribution[rank].sum(dim=1))


def token_table(*, hidden: int, seed: int) -> Any:
    """The seeded table token rows are made from (bf16, ``[257, hidden]``)."""
    import torch

    generator = torch.Generator().manual_seed(seed + 1)
    return torch.randn(TABLE_ROWS, hidden, generator=generator).to(torch.bfloat16)


def token_rows(table: Any, *, source: Any, token: Any, tokens_per_rank: int) -> Any:
    """Rows of tokens ``token`` of ranks ``source`` (bf16): table row ``i mod 257`` scaled by
    ``1 + (i mod 7)/8``, ``i = source·tokens_per_rank + token``."""
    import torch

    index = source * tokens_per_rank + token
    scale = 1.0 + (index % 7).to(torch.float32) / 8.0
    return (table[index % TABLE_ROWS].float() * scale[:, None]).to(torch.bfloat16)


def encode(rows: Any, *, dtype: str) -> Any:
    """Rows as bytes (uint8 ``[n, row_bytes]``): bf16 as is, or fp8 e4m3 with fp32 scales."""
    import torch

    if dtype == "bf16":
        return rows.contiguous().view(torch.uint8)
    n, hidden = rows.shape
    blocks = -(-hidden // SCALE_BLOCK)
    padded = torch.zeros(n, blocks * SCALE_BLOCK, dtype=torch.float32, device=rows.device)
    padded[:, :hidden] = rows.float()
    grouped = padded.view(n, blocks, SCALE_BLOCK)
    scale = (grouped.abs().amax(dim=2) / FP8_MAX).clamp_min(1e-12)
    values = (grouped / scale[:, :, None]).to(torch.float8_e4m3fn).view(n, -1)[:, :hidden]
    return torch.cat([values.contiguous().view(torch.uint8), scale.contiguous().view(torch.uint8)], dim=1)


def decode(data: Any, *, dtype: str, hidden: int) -> Any:
    """Bytes from :func:`encode` back to fp32 rows."""
    import torch

    if dtype == "bf16":
        return data.contiguous().view(torch.bfloat16).float()
    n = data.shape[0]
    blocks = -(-hidden // SCALE_BLOCK)
    values = data[:, :hidden].contiguous().view(torch.float8_e4m3fn).float()
    scale = data[:, hidden:].contiguous().view(torch.float32)
    padded = torch.zeros(n, blocks * SCALE_BLOCK, dtype=torch.float32, device=data.device)
    padded[:, :hidden] = values
    return (padded.view(n, blocks, SCALE_BLOCK) * scale[:, :, None]).view(n, -1)[:, :hidden]
