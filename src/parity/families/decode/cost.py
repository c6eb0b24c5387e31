"""FLOP and bytes of the layers of one decode step, from a config (``parity.metrics.decode_cost``).

Per layer kind (``dense``, ``moe``, ``head``) for ``batch`` new tokens over ``context`` tokens;
a step of the whole model is the sum over kinds of ``layers of that kind x per-layer``.
"""

from __future__ import annotations

from parity.families.decode.config import ModelConfig
from parity.metrics.decode_cost import (
    expected_active_experts,
    gqa_attention_flop_per_token,
    kv_bytes_per_token,
    kv_bytes_read_per_step,
    lm_head_flop_per_token,
    mla_attention_flop_per_token,
    moe_flop_per_token,
    swiglu_flop_per_token,
)


def attention_flop_per_token(config: ModelConfig, *, context: int) -> float:
    """The config's attention per token (GQA or absorbed MLA)."""
    a = config.attention
    if a.type == "gqa":
        return gqa_attention_flop_per_token(hidden=config.hidden, heads=a.heads, kv_heads=a.kv_heads,
                                            head_dim=a.head_dim, context=context)
    return mla_attention_flop_per_token(hidden=config.hidden, heads=a.heads, q_lora=a.q_lora, kv_lora=a.kv_lora,
                                        rope_head=a.rope_head, nope_head=a.nope_head, v_head=a.v_head,
                                        context=context)


def attention_weight_elements(config: ModelConfig) -> int:
    """Weights of one layer's attention (projections; norms left out)."""
    a, hidden = config.attention, config.hidden
    if a.type == "gqa":
        return hidden * (a.heads + 2 * a.kv_heads) * a.head_dim + a.heads * a.head_dim * hidden
    return (hidden * a.q_lora + a.q_lora * a.heads * (a.nope_head + a.rope_head) + hidden * (a.kv_lora + a.rope_head)
            + a.heads * a.nope_head * a.kv_lora + a.heads * a.kv_lora * a.v_head + a.heads * a.v_head * hidden)


def layer_flop(config: ModelConfig, kind: str, *, batch: int, context: int) -> float:
    """FLOP of one layer of ``kind`` for ``batch`` new tokens."""
    if kind == "head":
        return batch * lm_head_flop_per_token(hidden=config.hidden, vocab=config.vocab)
    attention = attention_flop_per_token(config, context=context)
    if kind == "dense":
        return batch * (attention + swiglu_flop_per_token(hidden=config.hidden, ffn=config.ffn))
    m = config.moe
    return batch * (attention + moe_flop_per_token(hidden=config.hidden, expert_ffn=m.expert_ffn,
                                                   routed_experts=m.routed_experts, top_k=m.top_k,
                                                   shared_experts=m.shared_experts))


def layer_weight_elements(config: ModelConfig, kind: str, *, batch: int | None) -> float:
    """Weights one layer of ``kind`` reads in a step: all of them, except that a MoE layer reads
    only the routed experts its ``batch`` tokens activate (expected under uniform routing,
    ``expected_active_experts``); ``batch=None`` counts every expert (what the layer holds)."""
    hidden = config.hidden
    if kind == "head":
        return float(hidden * config.vocab)
    mlp_ffn = 3 * hidden * config.ffn
    if kind == "moe":
        m = config.moe
        active = m.routed_experts if batch is None else expected_active_experts(
            routed_experts=m.routed_experts, top_k=m.top_k, tokens=batch)
        mlp_ffn = hidden * m.routed_experts + 3 * hidden * m.expert_ffn * (m.shared_experts + active)
    return float(attention_weight_elements(config) + mlp_ffn)


def layer_bytes(config: ModelConfig, kind: str, *, batch: int, context: int, itemsize: int) -> float:
    """Bytes one layer of ``kind`` reads in a step: its weights (``layer_weight_elements``) and,
    for decoder layers, every sequence's ``context`` cached tokens."""
    weights = layer_weight_elements(config, kind, batch=batch) * itemsize
    if kind == "head":
        return weights
    return weights + kv_bytes_read_per_step(batch=batch, context=context, layers=1,
                                            bytes_per_token=cache_bytes_per_token(config, itemsize=itemsize))


def cache_bytes_per_token(config: ModelConfig, *, itemsize: int) -> int:
    """One token's cache entry in one layer, bytes."""
    a = config.attention
    return kv_bytes_per_token(attention=a.type, itemsize=itemsize, kv_heads=a.kv_heads, head_dim=a.head_dim,
                              kv_lora=a.kv_lora, rope_head=a.rope_head)
