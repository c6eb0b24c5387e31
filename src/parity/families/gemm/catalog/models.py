"""The LLM projection shapes of the catalog: real models' linear layers as (N, K) pairs.

A linear layer ``y = x @ W^T`` with ``W`` of shape ``[out, in]`` is the GEMM ``M x N x K`` with
``M`` = tokens in the batch, ``N = out``, ``K = in``. Tensor parallelism (Megatron-style) splits
column-parallel layers (fused QKV, fused gate/up, the vocabulary-parallel output head) along
``N`` and row-parallel layers (attention output, down projection) along ``K``.

Dimensions come from the models' published configurations (``config.json`` of each release):
Llama 3 8B/70B/405B (Meta, July 2024), DeepSeek-V3 (December 2024), Qwen3-30B-A3B (April 2025).
"""

from __future__ import annotations

from dataclasses import dataclass

# Tokens per forward pass, from single-token decode to long prefill.
TOKEN_COUNTS = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384)


@dataclass(frozen=True, kw_only=True)
class Projection:
    """One linear layer of a model: ``out x in`` features and how tensor parallelism splits it."""

    model: str
    layer: str
    out_features: int
    in_features: int
    split: str  # "column" (split N), "row" (split K) or "none" (replicated)

    def shard(self, tp: int) -> tuple[int, int]:
        """``(N, K)`` on one of ``tp`` ranks."""
        if self.split == "column":
            return self.out_features // tp, self.in_features
        if self.split == "row":
            return self.out_features, self.in_features // tp
        return self.out_features, self.in_features


def _llama(model: str, *, hidden: int, heads: int, kv_heads: int, ffn: int, vocab: int) -> list[Projection]:
    head_dim = hidden // heads
    return [
        Projection(model=model, layer="qkv_proj", out_features=(heads + 2 * kv_heads) * head_dim,
                   in_features=hidden, split="column"),
        Projection(model=model, layer="o_proj", out_features=hidden, in_features=heads * head_dim, split="row"),
        Projection(model=model, layer="gate_up_proj", out_features=2 * ffn, in_features=hidden, split="column"),
        Projection(model=model, layer="down_proj", out_features=hidden, in_features=ffn, split="row"),
        Projection(model=model, layer="lm_head", out_features=vocab, in_features=hidden, split="column"),
    ]


LLAMA3_8B = _llama("llama3-8b", hidden=4096, heads=32, kv_heads=8, ffn=14336, vocab=128256)
LLAMA3_70B = _llama("llama3-70b", hidden=8192, heads=64, kv_heads=8, ffn=28672, vocab=128256)
LLAMA3_405B = _llama("llama3-405b", hidden=16384, heads=128, kv_heads=8, ffn=53248, vocab=128256)

# DeepSeek-V3: hidden 7168, 128 heads, MLA with q_lora_rank 1536, kv_lora_rank 512,
# qk_nope_head_dim 128, qk_rope_head_dim 64, v_head_dim 128; 256 routed experts of intermediate
# 2048 plus one shared expert of the same size; the first three layers dense (intermediate 18432).
DEEPSEEK_V3 = [
    Projection(model="deepseek-v3", layer="q_a_proj", out_features=1536, in_features=7168, split="none"),
    Projection(model="deepseek-v3", layer="q_b_proj", out_features=128 * (128 + 64), in_features=1536, split="column"),
    Projection(model="deepseek-v3", layer="kv_a_proj_with_mqa", out_features=512 + 64, in_features=7168, split="none"),
    Projection(model="deepseek-v3", layer="kv_b_proj", out_features=128 * (128 + 128), in_features=512, split="column"),
    Projection(model="deepseek-v3", layer="o_proj", out_features=7168, in_features=128 * 128, split="row"),
    Projection(model="deepseek-v3", layer="dense_gate_up_proj", out_features=2 * 18432, in_features=7168, split="column"),
    Projection(model="deepseek-v3", layer="dense_down_proj", out_features=7168, in_features=18432, split="row"),
    Projection(model="deepseek-v3", layer="expert_gate_up_proj", out_features=2 * 2048, in_features=7168, split="none"),
    Projection(model="deepseek-v3", layer="expert_down_proj", out_features=7168, in_features=2048, split="none"),
    Projection(model="deepseek-v3", layer="router_gate", out_features=256, in_features=7168, split="none"),
    Projection(model="deepseek-v3", layer="lm_head", out_features=129280, in_features=7168, split="column"),
]

# Qwen3-30B-A3B: hidden 2048, 32 query heads and 4 KV heads of 128, 128 experts of intermediate 768.
QWEN3_30B_A3B = [
    Projection(model="qwen3-30b-a3b", layer="qkv_proj", out_features=(32 + 2 * 4) * 128, in_features=2048, split="column"),
    Projection(model="qwen3-30b-a3b", layer="o_proj", out_features=2048, in_features=32 * 128, split="row"),
    Projection(model="qwen3-30b-a3b", layer="expert_gate_up_proj", out_features=2 * 768, in_features=2048, split="none"),
    Projection(model="qwen3-30b-a3b", layer="expert_down_proj", out_features=2048, in_features=768, split="none"),
    Projection(model="qwen3-30b-a3b", layer="lm_head", out_features=151936, in_features=2048, split="column"),
]

# (projections, tensor-parallel degrees): the deployments people run.
DEPLOYMENTS: tuple[tuple[list[Projection], tuple[int, ...]], ...] = (
    (LLAMA3_8B, (1, 2)),
    (LLAMA3_70B, (1, 4, 8)),
    (LLAMA3_405B, (8,)),
    (DEEPSEEK_V3, (1, 8)),
    (QWEN3_30B_A3B, (1,)),
)
