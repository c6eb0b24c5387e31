"""The MLPs of a decoder layer: SwiGLU, and DeepSeek-style MoE with shared and routed experts.

Routing (DeepSeek-V3's gate): scores ``s = sigmoid(h·W_g)`` (or ``softmax``); with ``groups >
1`` the experts are split into groups, each group scored by the sum of its two best scores, and
only the ``top_groups`` best groups stay eligible; each token takes its ``top_k`` best eligible
experts, weighted by their scores (normalised to sum 1 for sigmoid) times ``routed_scaling``.
The load-balancing bias of DeepSeek-V3 (``e_score_correction_bias``) is a trained value and is
left out: random weights have no trained balance.

The routed experts run as two grouped matrix products over the token copies sorted by expert
(``torch.nn.functional.grouped_mm``, with offsets per expert): each expert's weights are read
once per step, empty experts cost nothing, and no count leaves the device (no host sync).
Where the device or dtype has no grouped product (``grouped_products_supported``), the experts
run one after another on their slices of the sorted copies (one host sync for the counts), the
way DeepSeek's reference inference code runs them; the method used is stored with each case.
``moe_reference`` computes the same output one (token, expert) pair at a time in float32.
"""

from __future__ import annotations

from typing import Any

from parity.families.decode.config import Moe


def swiglu(h: Any, gate_up: Any, down: Any) -> Any:
    """``(silu(h·W_gate) * (h·W_up))·W_down`` with ``gate_up`` = ``[W_gate | W_up]`` ``[hidden, 2·ffn]``."""
    import torch

    gate, up = (h @ gate_up).chunk(2, dim=-1)
    return (torch.nn.functional.silu(gate) * up) @ down


def route(h: Any, router: Any, moe: Moe) -> tuple[Any, Any]:
    """``(experts [tokens, top_k] int64, weights [tokens, top_k] float32)`` (module docstring)."""
    import torch

    logits = (h @ router).float()
    scores = logits.sigmoid() if moe.gate == "sigmoid" else logits.softmax(dim=-1)
    eligible = scores
    if moe.groups > 1:
        tokens = scores.shape[0]
        grouped = scores.reshape(tokens, moe.groups, -1)
        best = grouped.topk(min(2, grouped.shape[-1]), dim=-1).values.sum(-1)  # [tokens, groups]
        keep = torch.zeros_like(best, dtype=torch.bool).scatter_(1, best.topk(moe.top_groups, dim=-1).indices, True)
        eligible = grouped.masked_fill(~keep.unsqueeze(-1), float("-inf")).reshape(tokens, -1)
    experts = eligible.topk(moe.top_k, dim=-1).indices
    weights = scores.gather(1, experts)
    if moe.gate == "sigmoid":
        weights = weights / weights.sum(-1, keepdim=True)
    return experts, weights * moe.routed_scaling


def grouped_products_supported(device: Any, dtype: Any) -> bool:
    """True when ``grouped_mm`` runs on ``device`` in ``dtype`` and agrees with a plain product."""
    import torch

    grouped = getattr(torch.nn.functional, "grouped_mm", None)
    if grouped is None:
        return False
    try:
        a = device.random_tensor((16, 16), dtype)
        b = device.random_tensor((2, 16, 16), dtype)
        offs = torch.tensor([8, 16], dtype=torch.int32, device=device.torch_device)
        got = grouped(a, b.transpose(-2, -1), offs=offs)
        want = torch.cat((a[:8] @ b[0].T, a[8:] @ b[1].T))
        return bool(torch.allclose(got.float(), want.float(), rtol=5e-2, atol=5e-2))
    except (RuntimeError, TypeError, NotImplementedError, ValueError):
        return False


def _experts_one_by_one(rows: Any, counts: Any, w: dict[str, Any]) -> Any:
    """The sorted copies through their experts one expert at a time (counts read on the host)."""
    import torch

    parts, start = [], 0
    for expert, count in enumerate(counts.tolist()):
        if count:
            part = rows[start:start + count]
            parts.append(swiglu(part, w["experts_gate_up"][expert].T, w["experts_down"][expert].T))
            start += count
    return torch.cat(parts)


def routed_experts(h: Any, experts: Any, weights: Any, w: dict[str, Any], moe: Moe, *, grouped: bool = True) -> Any:
    """``Σ_j weight_j · expert_j(h)`` per token through two grouped products (no host sync), or
    one expert at a time when ``grouped`` is false.

    ``w["experts_gate_up"]`` is ``[E, 2·ffn, hidden]`` and ``w["experts_down"]`` ``[E, hidden,
    ffn]`` (each expert ``out x in``, as a linear layer stores it); they are multiplied through
    their transposes, the layout grouped products want for the right operand.
    """
    import torch

    flat = experts.reshape(-1)
    order = torch.argsort(flat, stable=True)
    token = order // moe.top_k
    counts = torch.bincount(flat, minlength=moe.routed_experts)
    rows = h[token]
    if grouped:
        offsets = torch.cumsum(counts, 0).to(torch.int32)
        gate_up = torch.nn.functional.grouped_mm(rows, w["experts_gate_up"].transpose(-2, -1), offs=offsets)
        gate, up = gate_up.chunk(2, dim=-1)
        acts = (torch.nn.functional.silu(gate) * up).contiguous()
        out = torch.nn.functional.grouped_mm(acts, w["experts_down"].transpose(-2, -1), offs=offsets)
    else:
        out = _experts_one_by_one(rows, counts, w)
    out = out * weights.reshape(-1)[order].unsqueeze(1).to(out.dtype)
    return torch.zeros_like(h).index_add_(0, token, out)


def moe_mlp(h: Any, w: dict[str, Any], moe: Moe, *, grouped: bool = True) -> Any:
    """The shared experts (one SwiGLU of ``shared_experts·expert_ffn``) plus the routed ones."""
    experts, weights = route(h, w["router"], moe)
    out = routed_experts(h, experts, weights, w, moe, grouped=grouped)
    if moe.shared_experts:
        out = out + swiglu(h, w["shared_gate_up"], w["shared_down"])
    return out


def moe_reference(h: Any, w: dict[str, Any], moe: Moe, *, tokens: list[int]) -> Any:
    """The MoE output for the listed tokens, one (token, expert) pair at a time in float32, on
    the routing :func:`route` chose: ``[len(tokens), hidden]``."""
    import torch

    experts, weights = route(h, w["router"], moe)
    rows = []
    for t in tokens:
        x = h[t].float()
        total = torch.zeros_like(x)
        for e, weight in zip(experts[t].tolist(), weights[t].tolist()):
            gate, up = (w["experts_gate_up"][e].float() @ x).chunk(2)
            total += weight * (w["experts_down"][e].float() @ (torch.nn.functional.silu(gate) * up))
        if moe.shared_experts:
            total += swiglu(x, w["shared_gate_up"].float(), w["shared_down"].float())
        rows.append(total)
    return torch.stack(rows)
