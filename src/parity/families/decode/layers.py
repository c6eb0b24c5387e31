"""Decoder layers with seeded random weights, and the forward pass of one decode step.

A layer is pre-norm: ``x + attention(norm(x))``, then ``x + mlp(norm(x))``. Its kind says which
MLP: ``dense`` (SwiGLU of ``ffn``) or ``moe`` (``parity.families.decode.moe``); the attention is
the config's (GQA or MLA, ``parity.families.decode.attention``). The ``head`` is the final norm,
the projection to the vocabulary and the greedy pick of the next token (the embedding lookup of
the next step is a gather of one row per sequence and is left out).

Weights are random normals scaled by ``fan_in^-1/2`` (so activations stay near unit size
through the layers) and never zero; norm weights are ones. Large tensors are drawn in slices of
at most ``DRAW_ELEMENTS`` so the float32 draw never holds a whole expert bank at once.
"""

from __future__ import annotations

from typing import Any

from parity.families.decode.attention import gqa_attention, mla_attention, rms_norm
from parity.families.decode.cache import PagedCache
from parity.families.decode.config import ModelConfig
from parity.families.decode.moe import moe_mlp, swiglu

DRAW_ELEMENTS = 1 << 26


def random_weight(shape: tuple[int, ...], *, fan_in: int, device: Any, dtype: Any, generator: Any) -> Any:
    """A ``shape`` tensor of normals times ``fan_in^-1/2``, drawn slice by slice along dim 0."""
    import torch

    out = torch.empty(shape, dtype=dtype, device=device.torch_device)
    step = max(1, DRAW_ELEMENTS // max(1, out.numel() // shape[0]))
    for start in range(0, shape[0], step):
        part = out[start:start + step]
        part.copy_(device.random_tensor(tuple(part.shape), torch.float32, generator=generator) * fan_in ** -0.5)
    return out


def _attention_weights(config: ModelConfig, make: Any) -> dict[str, Any]:
    a, hidden = config.attention, config.hidden
    if a.type == "gqa":
        return {"qkv": make((hidden, (a.heads + 2 * a.kv_heads) * a.head_dim), hidden),
                "o": make((a.heads * a.head_dim, hidden), a.heads * a.head_dim)}
    return {"q_a": make((hidden, a.q_lora), hidden), "q_norm": None,
            "q_b": make((a.q_lora, a.heads * (a.nope_head + a.rope_head)), a.q_lora),
            "kv_a": make((hidden, a.kv_lora + a.rope_head), hidden), "kv_norm": None,
            "w_uk": make((a.heads, a.nope_head, a.kv_lora), a.kv_lora),
            "w_uv": make((a.heads, a.kv_lora, a.v_head), a.kv_lora),
            "o": make((a.heads * a.v_head, hidden), a.heads * a.v_head)}


def _mlp_weights(config: ModelConfig, kind: str, make: Any) -> dict[str, Any]:
    hidden = config.hidden
    if kind == "dense":
        return {"gate_up": make((hidden, 2 * config.ffn), hidden), "down": make((config.ffn, hidden), config.ffn)}
    moe = config.moe
    f, shared = moe.expert_ffn, moe.expert_ffn * moe.shared_experts
    weights = {"router": make((hidden, moe.routed_experts), hidden),
               "experts_gate_up": make((moe.routed_experts, 2 * f, hidden), hidden),
               "experts_down": make((moe.routed_experts, hidden, f), f)}
    if shared:
        weights.update(shared_gate_up=make((hidden, 2 * shared), hidden), shared_down=make((shared, hidden), shared))
    return weights


def layer_weights(config: ModelConfig, kind: str, *, device: Any, dtype: Any, generator: Any) -> dict[str, Any]:
    """One layer's weights: ``kind`` is ``dense``, ``moe`` or ``head``."""
    import torch

    def make(shape: tuple[int, ...], fan_in: int) -> Any:
        return random_weight(shape, fan_in=fan_in, device=device, dtype=dtype, generator=generator)

    def ones(n: int) -> Any:
        return torch.ones(n, dtype=dtype, device=device.torch_device)

    if kind == "head":
        return {"norm": ones(config.hidden), "lm_head": make((config.hidden, config.vocab), config.hidden)}
    weights = {"attn_norm": ones(config.hidden), "mlp_norm": ones(config.hidden),
               **_attention_weights(config, make), **_mlp_weights(config, kind, make)}
    if config.attention.type == "mla":
        weights.update(q_norm=ones(config.attention.q_lora), kv_norm=ones(config.attention.kv_lora))
    return weights


def cache_entry(config: ModelConfig) -> tuple[int, ...]:
    """The shape of one token's cache entry in one layer."""
    a = config.attention
    return (2, a.kv_heads, a.head_dim) if a.type == "gqa" else (a.kv_lora + a.rope_head,)


def rope_dim(config: ModelConfig) -> int:
    """The width RoPE rotates: the head for GQA, the rope part of the head for MLA."""
    a = config.attention
    return a.head_dim if a.type == "gqa" else a.rope_head


def decoder_layer(x: Any, w: dict[str, Any], cache: PagedCache, rope: tuple[Any, Any], config: ModelConfig,
                  kind: str, *, grouped: bool = True) -> Any:
    """``x`` ``[batch, hidden]`` through one pre-norm layer of ``kind`` (writes its cache entry);
    ``grouped`` picks the routed experts' method (``parity.families.decode.moe``)."""
    attention = gqa_attention if config.attention.type == "gqa" else mla_attention
    x = x + attention(rms_norm(x, w["attn_norm"], config.rms_eps), w, cache, rope, config)
    h = rms_norm(x, w["mlp_norm"], config.rms_eps)
    return x + (swiglu(h, w["gate_up"], w["down"]) if kind == "dense" else moe_mlp(h, w, config.moe, grouped=grouped))


def head(x: Any, w: dict[str, Any], config: ModelConfig) -> Any:
    """The next token per sequence: ``argmax(norm(x)·W_vocab)`` (greedy)."""
    return (rms_norm(x, w["norm"], config.rms_eps) @ w["lm_head"]).argmax(dim=-1)


def tensor_bytes(tensors: Any) -> int:
    """Bytes held by the tensors in a (nested) dict or list."""
    if isinstance(tensors, dict):
        return sum(tensor_bytes(v) for v in tensors.values())
    if isinstance(tensors, (list, tuple)):
        return sum(tensor_bytes(v) for v in tensors)
    if isinstance(tensors, PagedCache):
        return tensors.nbytes
    return int(tensors.numel() * tensors.element_size()) if hasattr(tensors, "numel") else 0
