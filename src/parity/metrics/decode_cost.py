"""The work of one decode step, for the roofline: FLOP per token and bytes read per step.

Conventions: a multiply-add is 2 FLOP; only matrix products are counted (norms, RoPE, softmax
and the SwiGLU product are a few FLOP per value and left out); ``context`` is the number of
tokens each new token attends to (its own included). Bytes are bytes read from memory per
step: weights once per step (whatever the batch), the KV cache once per sequence; activations
and the one-token KV write are left out. Sizes are element counts, ``itemsize`` is bytes per
element.
"""

from __future__ import annotations

BYTES_CONVENTION = ("bytes read per step: weights of the layers run once (routed experts: those the "
                    "step's routing activates) + every sequence's KV cache; activations and the KV write left out")


def gqa_attention_flop_per_token(*, hidden: int, heads: int, kv_heads: int, head_dim: int, context: int) -> float:
    """Grouped-query attention of one token over ``context`` cached tokens:
    ``2·hidden·(heads + 2·kv_heads)·head_dim`` (QKV projection) ``+ 2·heads·head_dim·hidden``
    (output projection) ``+ 4·heads·head_dim·context`` (scores and the weighted sum of values).

    Example: hidden 8, 2 heads, 1 KV head of 4, context 10: 2·8·16 + 2·8·8 + 4·8·10 = 704.
    """
    projections = 2 * hidden * (heads + 2 * kv_heads) * head_dim + 2 * heads * head_dim * hidden
    return float(projections + 4 * heads * head_dim * context)


def mla_attention_flop_per_token(*, hidden: int, heads: int, q_lora: int, kv_lora: int, rope_head: int,
                                 nope_head: int, v_head: int, context: int) -> float:
    """DeepSeek's latent attention decoded with absorbed weights, per token:
    ``2·hidden·q_lora + 2·q_lora·heads·(nope+rope)`` (query down and up),
    ``2·hidden·(kv_lora+rope)`` (the latent and rope key of the new token),
    ``2·heads·nope·kv_lora`` (the query absorbed into the latent space),
    ``2·heads·(kv_lora+rope)·context + 2·heads·kv_lora·context`` (scores and the latent sum),
    ``2·heads·kv_lora·v_head + 2·heads·v_head·hidden`` (values up, output projection).

    Example: hidden 8, 2 heads, q_lora 4, kv_lora 4, rope 2, nope 2, v 2, context 10:
    64 + 64 + 96 + 32 + 240 + 160 + 32 + 64 = 752.
    """
    query = 2 * hidden * q_lora + 2 * q_lora * heads * (nope_head + rope_head)
    latent = 2 * hidden * (kv_lora + rope_head)
    absorb = 2 * heads * nope_head * kv_lora
    attend = 2 * heads * (kv_lora + rope_head) * context + 2 * heads * kv_lora * context
    out = 2 * heads * kv_lora * v_head + 2 * heads * v_head * hidden
    return float(query + latent + absorb + attend + out)


def swiglu_flop_per_token(*, hidden: int, ffn: int) -> float:
    """A SwiGLU MLP: gate and up ``2·hidden·2·ffn`` plus down ``2·ffn·hidden`` = ``6·hidden·ffn``.

    Example: hidden 8, ffn 16: 768.
    """
    return float(6 * hidden * ffn)


def moe_flop_per_token(*, hidden: int, expert_ffn: int, routed_experts: int, top_k: int,
                       shared_experts: int) -> float:
    """A MoE layer per token: the router ``2·hidden·routed_experts`` plus ``top_k +
    shared_experts`` SwiGLU experts of ``6·hidden·expert_ffn`` each.

    Example: hidden 8, expert_ffn 4, 16 experts, top-2, 1 shared: 256 + 3·192 = 832.
    """
    return float(2 * hidden * routed_experts + (top_k + shared_experts) * 6 * hidden * expert_ffn)


def lm_head_flop_per_token(*, hidden: int, vocab: int) -> float:
    """The output projection to the vocabulary: ``2·hidden·vocab``. Example: 8, 100 -> 1600."""
    return float(2 * hidden * vocab)


def expected_active_experts(*, routed_experts: int, top_k: int, tokens: int) -> float:
    """Distinct experts a step touches when ``tokens`` each pick ``top_k`` of ``routed_experts``
    uniformly: ``E·(1 - (1 - k/E)^tokens)`` (each expert is missed by a token with probability
    ``1 - k/E``). Example: E 4, k 2, 2 tokens: 4·(1 - 0.25) = 3.
    """
    if routed_experts <= 0 or not 0 < top_k <= routed_experts or tokens < 0:
        raise ValueError(f"experts {routed_experts!r}, top_k {top_k!r}, tokens {tokens!r} are not a routing")
    return routed_experts * (1.0 - (1.0 - top_k / routed_experts) ** tokens)


def kv_bytes_per_token(*, attention: str, itemsize: int, kv_heads: int = 0, head_dim: int = 0,
                       kv_lora: int = 0, rope_head: int = 0) -> int:
    """Cache bytes one token holds in one layer: ``2·kv_heads·head_dim·itemsize`` for GQA (K and
    V), ``(kv_lora + rope_head)·itemsize`` for MLA (the latent and the shared rope key).

    Examples: Llama-3-8B in bf16, 2·8·128·2 = 4096 B; DeepSeek-V3, (512 + 64)·2 = 1152 B.
    """
    if attention == "gqa":
        return 2 * kv_heads * head_dim * itemsize
    if attention == "mla":
        return (kv_lora + rope_head) * itemsize
    raise ValueError(f"attention {attention!r} is not gqa or mla")


def kv_bytes_read_per_step(*, batch: int, context: int, bytes_per_token: int, layers: int) -> float:
    """The KV cache a step reads: ``batch·context·bytes_per_token·layers``.

    Example: 16 sequences of 4096 tokens at 4096 B per token over 32 layers: 8 GiB.
    """
    return float(batch * context * bytes_per_token * layers)


def arithmetic_intensity(flop: float, nbytes: float) -> float | None:
    """``flop / bytes`` (FLOP per byte read), None without bytes. Example: 100, 50 -> 2.0."""
    return float(flop) / float(nbytes) if nbytes > 0 else None
