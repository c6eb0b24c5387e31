"""One decode step of the layers of one kind, as declared work: the call, its cost and its check.

For a batch, each layer kind the config has (``dense``, ``moe``, ``head``) is timed on its own:
``layers_run`` layers of that kind (each with its own weights and paged cache) run one after
another on one new token per sequence. The step of the whole model is then
``Σ_kind layers_total(kind) · median(kind) / layers_run(kind)`` (``model_step_s``): a layer of
one kind costs the same wherever it sits, which holds for decoder layers of one shape.

The check, after timing, on the caches the timed calls wrote to:
- the block-table gather of sequence 0 equals its blocks walked one by one (paged = contiguous);
- the attention of random queries through the paged path against a float64 reference on the
  walked cache, for the first and the last sequence (for MLA, the reference expands keys and
  values per head: absorbed = un-absorbed);
- for MoE, the grouped-product output against one (token, expert) pair at a time;
- for the head, the logits against float64; and the step's output finite, of the right shape.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from parity.families.decode.attention import (
    gqa_heads,
    gqa_reference,
    mla_heads,
    mla_reference,
    rms_norm,
    rope_tables,
)
from parity.families.decode.cache import PagedCache, paged_cache, relative_error
from parity.families.decode.config import ModelConfig
from parity.families.decode.cost import layer_bytes, layer_flop
from parity.families.decode.layers import cache_entry, decoder_layer, head, rope_dim
from parity.families.decode.moe import moe_mlp, moe_reference
from parity.harness.work import Work
from parity.metrics.decode_cost import BYTES_CONVENTION

# Largest relative L2 error of a checked output against its reference, by compute dtype.
TOLERANCE = {"float32": 1e-4, "bfloat16": 3e-2, "float16": 5e-3}


def model_step_s(medians: dict[str, tuple[float, int, int]]) -> float:
    """``Σ_kind total·median/run`` over ``{kind: (median_s, layers_run, layers_total)}``: the
    whole model's step from the layers timed. Example: dense (2 ms, 2 run, 32 total) and head
    (0.5 ms, 1, 1): 32 ms + 0.5 ms = 32.5 ms."""
    return sum(total * median / run for median, run, total in medians.values())


@dataclass(frozen=True, kw_only=True)
class KindStep:
    """The layers of one kind for one batch: weights (shared across batches) and fresh caches."""

    config: ModelConfig
    kind: str
    weights: list[dict[str, Any]]
    caches: list[PagedCache]
    x: Any
    rope: tuple[Any, Any]
    grouped: bool = True

    def __call__(self) -> Any:
        if self.kind == "head":
            return head(self.x, self.weights[0], self.config)
        y = self.x
        for w, cache in zip(self.weights, self.caches):
            y = decoder_layer(y, w, cache, self.rope, self.config, self.kind, grouped=self.grouped)
        return y


def build_kind_step(config: ModelConfig, kind: str, weights: list[dict[str, Any]], *, batch: int, context: int,
                    block_size: int, device: Any, dtype: Any, generator: Any, grouped: bool = True) -> KindStep:
    """Caches filled to ``context`` tokens for ``batch`` sequences, one per layer, and the input."""
    caches = [] if kind == "head" else [
        paged_cache(batch=batch, context=context, block_size=block_size, entry=cache_entry(config),
                    dtype=dtype, device=device, generator=generator) for _ in weights]
    x = device.random_tensor((batch, config.hidden), dtype, generator=generator)
    rope = rope_tables(dim=rope_dim(config), position=context - 1, theta=config.rope_theta,
                       device=device.torch_device, dtype=dtype)
    return KindStep(config=config, kind=kind, weights=weights, caches=caches, x=x, rope=rope, grouped=grouped)


def _attention_errors(step: KindStep, *, generator: Any, device: Any) -> dict[str, float]:
    import torch

    config, cache, w = step.config, step.caches[0], step.weights[0]
    a, batch, dtype = config.attention, cache.batch, step.x.dtype
    errors = {"paged_vs_walked": float((cache.gather()[0] != cache.walk(0)).sum())}
    if a.type == "gqa":
        q = device.random_tensor((batch, a.heads, a.head_dim), dtype, generator=generator)
        got = gqa_heads(q, cache, config)
        want = [gqa_reference(q[s], cache, config, sequence=s) for s in (0, batch - 1)]
    else:
        q_nope = device.random_tensor((batch, a.heads, a.nope_head), dtype, generator=generator)
        q_rope = device.random_tensor((batch, a.heads, a.rope_head), dtype, generator=generator)
        got = mla_heads(q_nope, q_rope, w, cache, config)
        want = [mla_reference(q_nope[s].double(), q_rope[s].double(), w, cache, config, sequence=s)
                for s in (0, batch - 1)]
    errors["attention_vs_reference"] = relative_error(torch.stack((got[0], got[-1])), torch.stack(want))
    return errors


def _mlp_error(step: KindStep, *, generator: Any, device: Any) -> float:
    config, w = step.config, step.weights[0]
    h = rms_norm(device.random_tensor((step.x.shape[0], config.hidden), step.x.dtype, generator=generator),
                 w["mlp_norm"], config.rms_eps)
    tokens = sorted({0, h.shape[0] - 1})
    got = moe_mlp(h, w, config.moe, grouped=step.grouped)[tokens]
    return relative_error(got, moe_reference(h, w, config.moe, tokens=tokens))


def _head_error(step: KindStep) -> float:
    config, w = step.config, step.weights[0]
    got = rms_norm(step.x, w["norm"], config.rms_eps) @ w["lm_head"]
    normed = rms_norm(step.x.double(), w["norm"].double(), config.rms_eps)
    return relative_error(got[:1], normed[:1] @ w["lm_head"].double())


def check_kind_step(step: KindStep, *, device: Any, seed: int) -> dict[str, Any]:
    """The verdict of the module docstring's checks, with every error and the tolerance."""
    import torch

    generator = torch.Generator(device=device.torch_device).manual_seed(seed + 7919)
    out = step()
    dtype = str(step.x.dtype).removeprefix("torch.")
    tol = TOLERANCE.get(dtype, 3e-2)
    want_shape = (step.x.shape[0],) if step.kind == "head" else tuple(step.x.shape)
    errors: dict[str, float] = {}
    if step.kind == "head":
        errors["logits_vs_float64"] = _head_error(step)
    else:
        errors.update(_attention_errors(step, generator=generator, device=device))
        if step.kind == "moe":
            errors["moe_vs_pairwise"] = _mlp_error(step, generator=generator, device=device)
    finite = bool(torch.isfinite(out.float()).all()) if out.is_floating_point() else True
    passed = (finite and tuple(out.shape) == want_shape and errors.get("paged_vs_walked", 0.0) == 0.0
              and all(v <= tol for k, v in errors.items() if k != "paged_vs_walked"))
    return {"passed": passed, "finite": finite, "shape": list(out.shape), "tolerance": tol, "errors": errors,
            "method": "paged gather = blocks walked one by one; attention vs float64 per head on the walked "
                      "cache (MLA un-absorbed), sequences 0 and last; MoE grouped vs per (token, expert) "
                      "pair; head logits vs float64; output finite"}


def kind_work(step: KindStep, *, batch: int, context: int, itemsize: int, device: Any, seed: int,
              warmup_s: float, budget_s: float, min_samples: int) -> Work:
    """The declared work of ``step``: one call runs its layers; FLOP and bytes per call."""
    runs = len(step.weights)
    flop = runs * layer_flop(step.config, step.kind, batch=batch, context=context)
    nbytes = runs * layer_bytes(step.config, step.kind, batch=batch, context=context, itemsize=itemsize)

    def release() -> None:
        step.caches.clear()
        device.empty_cache()

    return Work(call=step, check=lambda: check_kind_step(step, device=device, seed=seed), flop=flop,
                bytes=nbytes, bytes_convention=BYTES_CONVENTION, warmup_s=warmup_s, budget_s=budget_s,
                min_samples=min_samples, release=release)
