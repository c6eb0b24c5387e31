"""The typed options of the ``decode`` suite (offline engine step)."""

from __future__ import annotations

from dataclasses import dataclass

from parity.harness.options import option

DTYPES = ("bfloat16", "float16", "float32")


@dataclass(frozen=True, kw_only=True)
class DecodeOptions:
    """The options of the ``decode`` suite."""

    config: str = option("tiny", help="model config: tiny, tiny-moe, llama-3-8b, deepseek-v3 or a TOML path")
    batches: tuple[int, ...] = option((1, 2, 4, 8, 16), help="batch sizes (sequences per step)", minimum=1,
                                     aliases=("--batch",))
    context: int = option(1024, help="tokens each sequence attends to (cache filled to it)", minimum=1)
    layers: int = option(2, help="layers run per layer kind (dense, moe); the step is scaled to the config's count",
                         minimum=1)
    block_size: int = option(16, help="tokens per KV-cache block", minimum=1)
    cards: int = option(1, help="cards the measured step stands for (tokens/s are divided by it)", minimum=1)
    accepted_tokens: float | None = option(None, help="accepted tokens per step, MTP's factor (the config's)",
                                           minimum=1.0)
    tpot_ms: tuple[float, ...] = option((5.0, 10.0), help="TPOT targets, ms", minimum=0.0, exclusive_minimum=True)
    dtype: str = option("bfloat16", help="weights, cache and activations", choices=DTYPES)
    seed: int = option(0, help="seed of the weights, caches and inputs")
    warmup_s: float = option(0.02, help="warm-up per layer kind, s", minimum=0.0)
    budget_s: float | None = option(None, help="timed calls per layer kind, s (0.1; 0.04 quick)",
                                    minimum=0.0, exclusive_minimum=True)
    min_samples: int = option(5, help="fewest timed calls per layer kind", minimum=1)
