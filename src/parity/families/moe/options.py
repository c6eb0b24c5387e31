"""The typed options of the ``moe`` suite and its shape presets; ``None`` takes the preset's value."""

from __future__ import annotations

from dataclasses import dataclass

from parity.harness.options import option

# (tokens per rank, hidden, top_k, experts): DeepEP's low-latency and normal tests, and the
# configuration DeepEP's Ascend port publishes (its token count is not part of it: 4,096 here).
PRESETS = {
    "low-latency": (128, 7168, 8, 288),
    "normal": (4096, 7168, 8, 256),
    "ascend": (4096, 7168, 6, 256),
}


@dataclass(frozen=True, kw_only=True)
class MoeOptions:
    """The options of the ``moe`` suite."""

    preset: str = option("low-latency", help="shape preset, or custom", choices=(*PRESETS, "custom"))
    tokens: int | None = option(None, help="tokens per rank (the preset's)", minimum=1)
    hidden: int | None = option(None, help="hidden size, values per token (the preset's)", minimum=1)
    top_k: int | None = option(None, help="experts per token (the preset's)", minimum=1)
    experts: int | None = option(None, help="experts in all, a multiple of the rank count (the preset's)", minimum=1)
    dispatch_dtypes: tuple[str, ...] = option(("fp8", "bf16"), help="dispatch row formats", choices=("fp8", "bf16"))
    skew: float = option(0.0, help="Zipf exponent of expert popularity (0: uniform)", minimum=0.0)
    routing_file: str = option("", help=".npy expert ids [world, tokens, top_k] instead of seeded routing")
    seed: int = option(0, help="seed of the routing, its weights and the token values")
    iterations: int = option(20, help="timed iterations per case", minimum=1, aliases=("--iters",))
    warmup_s: float = option(0.02, help="untimed warm-up per case, s", minimum=0.0)
