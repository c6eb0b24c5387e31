"""Decode attention over the paged cache: Llama-style GQA and DeepSeek's MLA (absorbed weights).

Both take ``h`` ``[batch, hidden]`` (the normed hidden state of the one new token per
sequence), write the token's cache entry, attend over the sequence's ``context`` tokens and
return ``[batch, hidden]``. RoPE is applied at the new token's position, ``context - 1``; the
cached entries are random values standing for already-rotated keys.

MLA decode, absorbed (DeepSeek-V2 section 2.1.2): the cache holds per token the latent
``c_kv`` (``kv_lora`` values, after its RMSNorm) and the rope key ``k_r`` (``rope_head``), shared
by all heads. The up-projection of keys ``W_uk`` ``[heads, nope, kv_lora]`` is folded into the
query (``q_nope·W_uk``) and that of values ``W_uv`` ``[heads, kv_lora, v_head]`` applied after
the weighted sum, so a step reads ``kv_lora + rope_head`` values per cached token and never
expands keys or values per head. ``mla_reference`` expands them per head (the un-absorbed form)
for one sequence: the check that both agree.
"""

from __future__ import annotations

from typing import Any

from parity.families.decode.cache import PagedCache, attend, reference_attention
from parity.families.decode.config import ModelConfig


def rms_norm(x: Any, weight: Any, eps: float) -> Any:
    """``x / sqrt(mean(x²) + eps) · weight``, computed in float32, returned in ``x``'s dtype."""
    import torch

    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype) * weight


def rope_tables(*, dim: int, position: int, theta: float, device: Any, dtype: Any) -> tuple[Any, Any]:
    """``(cos, sin)`` of the angles ``position·theta^(-2i/dim)``, ``i < dim/2``."""
    import torch

    freqs = theta ** (-torch.arange(0, dim, 2, dtype=torch.float64) / dim)
    angles = position * freqs
    return angles.cos().to(device=device, dtype=dtype), angles.sin().to(device=device, dtype=dtype)


def apply_rope(x: Any, cos: Any, sin: Any) -> Any:
    """Rotate the halves of the last dimension (the rotate-half layout of Llama and DeepSeek)."""
    import torch

    half = x.shape[-1] // 2
    x1, x2 = x[..., :half], x[..., half:]
    return torch.cat((x1 * cos - x2 * sin, x1 * sin + x2 * cos), dim=-1)


def gqa_attention(h: Any, w: dict[str, Any], cache: PagedCache, rope: tuple[Any, Any], config: ModelConfig) -> Any:
    """Grouped-query attention of one new token per sequence; cache entry ``[2, kv_heads, head_dim]``."""
    import torch

    a = config.attention
    batch = h.shape[0]
    q, k, v = torch.split(h @ w["qkv"], (a.heads * a.head_dim, a.kv_heads * a.head_dim, a.kv_heads * a.head_dim), -1)
    q = apply_rope(q.reshape(batch, a.heads, a.head_dim), *rope)
    k = apply_rope(k.reshape(batch, a.kv_heads, a.head_dim), *rope)
    cache.write(torch.stack((k, v.reshape(batch, a.kv_heads, a.head_dim)), dim=1))
    return gqa_heads(q, cache, config).reshape(batch, a.heads * a.head_dim) @ w["o"]


def gqa_heads(q: Any, cache: PagedCache, config: ModelConfig) -> Any:
    """Every sequence's attention values ``[batch, heads, head_dim]`` for queries ``q`` (no write),
    through the block table: what :func:`gqa_reference` checks."""
    a = config.attention
    batch, group = q.shape[0], a.heads // a.kv_heads
    kv = cache.gather()  # [batch, context, 2, kv_heads, head_dim]
    keys, values = kv[:, :, 0].transpose(1, 2), kv[:, :, 1].transpose(1, 2)
    out = attend(q.reshape(batch, a.kv_heads, group, a.head_dim), keys, values, scale=a.head_dim ** -0.5)
    return out.reshape(batch, a.heads, a.head_dim)


def mla_query(h: Any, w: dict[str, Any], rope: tuple[Any, Any], config: ModelConfig) -> tuple[Any, Any]:
    """``(q_nope [batch, heads, nope], q_rope [batch, heads, rope])`` through the query's low rank."""
    import torch

    a = config.attention
    q = rms_norm(h @ w["q_a"], w["q_norm"], config.rms_eps) @ w["q_b"]
    q_nope, q_rope = torch.split(q.reshape(h.shape[0], a.heads, a.nope_head + a.rope_head), (a.nope_head, a.rope_head), -1)
    return q_nope, apply_rope(q_rope, *rope)


def mla_attention(h: Any, w: dict[str, Any], cache: PagedCache, rope: tuple[Any, Any], config: ModelConfig) -> Any:
    """Latent attention with absorbed weights; cache entry ``[kv_lora + rope_head]``."""
    import torch

    a = config.attention
    batch = h.shape[0]
    q_nope, q_rope = mla_query(h, w, rope, config)
    latent, k_rope = torch.split(h @ w["kv_a"], (a.kv_lora, a.rope_head), -1)
    cache.write(torch.cat((rms_norm(latent, w["kv_norm"], config.rms_eps), apply_rope(k_rope, *rope)), -1))
    return mla_heads(q_nope, q_rope, w, cache, config).reshape(batch, a.heads * a.v_head) @ w["o"]


def gqa_reference(query: Any, cache: PagedCache, config: ModelConfig, *, sequence: int) -> Any:
    """One sequence's attention from its blocks walked one by one: ``[heads, head_dim]``."""
    entries = cache.walk(sequence)
    return reference_attention(query, entries[:, 0], entries[:, 1], scale=config.attention.head_dim ** -0.5)


def mla_reference(q_nope: Any, q_rope: Any, w: dict[str, Any], cache: PagedCache, config: ModelConfig,
                  *, sequence: int) -> Any:
    """One sequence's MLA un-absorbed: keys ``[c_kv·W_ukᵀ, k_r]`` and values ``c_kv·W_uv`` expanded
    per head, then per-head attention in float64; returns the heads' values ``[heads, v_head]``."""
    import torch

    a = config.attention
    entries = cache.walk(sequence).double()
    latent, k_rope = entries[:, : a.kv_lora], entries[:, a.kv_lora:]
    keys = torch.cat((torch.einsum("tc,hnc->thn", latent, w["w_uk"].double()),
                      k_rope.unsqueeze(1).expand(-1, a.heads, -1)), -1)
    values = torch.einsum("tc,hcv->thv", latent, w["w_uv"].double())
    query = torch.cat((q_nope, q_rope), -1)
    return reference_attention(query, keys, values, scale=(a.nope_head + a.rope_head) ** -0.5)


def mla_heads(q_nope: Any, q_rope: Any, w: dict[str, Any], cache: PagedCache, config: ModelConfig) -> Any:
    """The absorbed path's per-head values ``[batch, heads, v_head]`` for given queries (no write):
    the key up-projection folded into the query, the value one applied after the weighted sum;
    what :func:`mla_reference` checks."""
    import torch

    a = config.attention
    query = torch.cat((torch.einsum("bhn,hnc->bhc", q_nope, w["w_uk"]), q_rope), -1).unsqueeze(1)
    entries = cache.gather().unsqueeze(1)
    context = attend(query, entries, entries[..., : a.kv_lora], scale=(a.nope_head + a.rope_head) ** -0.5)
    return torch.einsum("bhc,hcv->bhv", context.squeeze(1), w["w_uv"])
