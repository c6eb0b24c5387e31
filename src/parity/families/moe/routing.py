"""MoE routing for every rank of a run, the same on every rank: from a seed or from a file.

Each of ``world`` ranks holds ``tokens`` tokens; each token picks ``top_k`` distinct experts of
``experts``, with routing weights (a softmax over its ``top_k`` logits, fp32). Picks are drawn
without replacement with probability proportional to ``p_e ∝ 1/(r_e + 1)^s`` (Gumbel top-k),
``r_e`` each expert's place in a seeded permutation: ``s = 0`` is uniform, ``s > 0`` Zipf-skewed
(hot experts scattered over the ranks). A routing file is a ``.npy`` array of expert ids of
shape ``[world, tokens, top_k]`` (or ``[world·tokens, top_k]``); its weights still come from the
seed. ``digest`` (SHA-256 of the ids, weights and shape) is what every rank compares before
the first exchange.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from parity.metrics.moe import imbalance_ratio
from parity.model.errors import ParityError


@dataclass(frozen=True, kw_only=True)
class Routing:
    """``experts`` (int64 ``[world, tokens, top_k]``), ``weights`` (fp32, same shape), the
    expert count, how it was made (``source``), its SHA-256 ``digest`` and ``imbalance``
    (max / mean tokens per expert)."""

    experts: Any
    weights: Any
    num_experts: int
    source: str
    digest: str
    imbalance: float | None


def make_routing(*, world: int, tokens: int, top_k: int, num_experts: int, seed: int, skew: float = 0.0,
                 path: str | None = None) -> Routing:
    """The run's routing (module docstring)."""
    import torch

    if top_k > num_experts:
        raise ParityError(f"top_k {top_k} is more than the {num_experts} experts; lower top_k")
    generator = torch.Generator().manual_seed(seed)
    order = torch.randperm(num_experts, generator=generator)
    place = torch.empty(num_experts).index_copy_(0, order, torch.arange(num_experts, dtype=torch.float32))
    log_p = -skew * torch.log(place + 1.0)
    gumbel = -torch.log(-torch.log(torch.rand(world * tokens, num_experts, generator=generator).clamp_min(1e-20)))
    picked = (log_p + gumbel).topk(top_k, dim=1).indices
    weights = torch.softmax(torch.randn(world * tokens, top_k, generator=generator), dim=1)
    source = "uniform" if skew == 0 else f"zipf(s={skew:g})"
    if path is not None:
        picked, source = read_routing_file(path, world=world, tokens=tokens, top_k=top_k,
                                           num_experts=num_experts), f"file {path}"
    experts = picked.reshape(world, tokens, top_k).to(torch.int64)
    weights = weights.reshape(world, tokens, top_k).to(torch.float32)
    counts = torch.bincount(experts[experts >= 0].flatten(), minlength=num_experts).tolist()
    return Routing(experts=experts, weights=weights, num_experts=num_experts, source=source,
                   digest=routing_digest(experts, weights), imbalance=imbalance_ratio(counts))


def routing_digest(experts: Any, weights: Any) -> str:
    """SHA-256 over the shape, the int64 expert ids and the fp32 weights (little-endian bytes)."""
    digest = hashlib.sha256(repr(tuple(experts.shape)).encode())
    digest.update(experts.contiguous().numpy().astype("<i8").tobytes())
    digest.update(weights.contiguous().numpy().astype("<f4").tobytes())
    return digest.hexdigest()


def read_routing_file(path: str, *, world: int, tokens: int, top_k: int, num_experts: int) -> Any:
    """Expert ids from a ``.npy`` file, checked against the run's shape and expert count."""
    import numpy as np
    import torch

    try:
        ids = np.load(Path(path), allow_pickle=False)
    except (OSError, ValueError) as exc:
        raise ParityError(f"routing file {path}: cannot read it as .npy ({exc}); "
                          "save an int array of expert ids with numpy.save") from None
    if ids.dtype.kind not in "iu" or ids.size != world * tokens * top_k:
        raise ParityError(f"routing file {path}: {ids.dtype} array of shape {ids.shape}; expected integer "
                          f"expert ids of shape [{world}, {tokens}, {top_k}] for this run")
    if ids.max(initial=-1) >= num_experts or ids.min(initial=0) < -1:
        raise ParityError(f"routing file {path}: expert ids from {ids.min()} to {ids.max()}; expected -1 "
                          f"(unused) or 0..{num_experts - 1}")
    return torch.from_numpy(ids.reshape(world * tokens, top_k).astype("int64"))
