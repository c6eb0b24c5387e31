"""The ``decode`` suite: the offline engine step of an LLM decoder, per batch size.

A model config (``parity.families.decode.config``) gives the decoder's shape; ``setup`` builds
``layers`` layers of each kind it has (dense, MoE) and the output head with seeded random
weights. Each case is one batch: every sequence's paged cache is filled to ``context`` tokens
and each layer kind is timed by the harness as declared work (``parity.families.decode.step``,
checked after timing): the composite step is a sequence of declared ``Work``, one per layer
kind, each handed to ``parity.harness.measure.measure_work``, and no clock is read here. The
step of the whole model is then scaled from the layers run to the config's layer count
(``model_step_s``) and stored with the scaling stated. TPOT and tokens/s per card follow
``parity.metrics.decode`` (offline: ``TPOT = step / accepted tokens per step``).

Memory: ``memory_bytes`` is the bytes of the tensors the layers run hold (weights and their
filled caches, counted exactly); on accelerators the drop of the device's free memory while
the case was built (allocator caching included) is stored beside it. On the CPU the host's
free memory is shared with every other process, so only the tensor bytes are stored.
"""

from __future__ import annotations

from typing import Any

from parity.families.decode.config import config_to_dict, load_config
from parity.families.decode.cost import layer_bytes, layer_flop, layer_weight_elements
from parity.families.decode.layers import layer_weights, tensor_bytes
from parity.families.decode.moe import grouped_products_supported
from parity.families.decode.options import DecodeOptions
from parity.families.decode.step import build_kind_step, kind_work, model_step_s
from parity.families.decode.figures import decode_figures
from parity.families.decode.summary import (
    MODE,
    SCALING,
    DecodeSummary,
    slower_than_a_larger_batch,
    summarize_decode,
)
from parity.harness.suite import CaseSpec, SuiteBase
from parity.metrics.decode import offline_tpot_s, tokens_per_s_per_card
from parity.metrics.decode_cost import BYTES_CONVENTION, arithmetic_intensity
from parity.model.errors import ParityError
from parity.model.figure import Figure
from parity.model.result import CaseResult

BUDGET_S, QUICK_BUDGET_S = 0.1, 0.04
# The layers' weights may take at most this share of the free memory (caches and the step need the rest).
ROOM_SHARE = 0.8
# ETA: expected seconds of a batch size on a CPU (CaseSpec.cost; 0.1-0.2 s measured on a 2-core
# host for the quick config), growing with the batch
CASE_S = 0.1
TENSOR_BYTES = "tensor bytes: weights and filled paged KV caches of the layers run (exact)"


def layers_run(config: Any, layers: int) -> dict[str, tuple[int, int]]:
    """``{kind: (layers run, layers in the model)}``: ``min(layers, count)`` per decoder kind, the one head."""
    return {kind: (min(layers, total), total) for kind, total in config.layer_counts().items()}


def _check_room(config: Any, options: DecodeOptions, *, device: Any, itemsize: int) -> None:
    """Refuse, before allocating, weights of the layers run beyond ``ROOM_SHARE`` of free memory."""
    need = itemsize * sum(run * layer_weight_elements(config, kind, batch=None)
                          for kind, (run, _) in layers_run(config, options.layers).items())
    free = device.free_memory_bytes()
    if free is not None and need > ROOM_SHARE * free:
        raise ParityError(f"decode.config={options.config}: the weights of {options.layers} layer(s) per kind take "
                          f"{need / 2**30:.1f} GiB, {device.name} has {free / 2**30:.1f} GiB free; "
                          "run fewer layers (--layers 1) or a smaller config")


class DecodeSuite(SuiteBase):
    """Offline decode: step time, TPOT and tokens/s per card against batch size."""

    name = "decode"
    description = "offline LLM decode step: TPOT and tokens/s per card per batch, Pareto front, throughput at TPOT targets"
    options_type = DecodeOptions
    mode = MODE

    def cases(self, *, device: Any, quick: bool, options: DecodeOptions) -> list[CaseSpec]:
        config = load_config(options.config)
        runs = layers_run(config, options.layers)
        accepted = options.accepted_tokens or config.accepted_tokens_per_step
        common = {"config": config.name, "config_origin": config.origin, "context": options.context,
                  "block_size": options.block_size, "dtype": options.dtype, "cards": options.cards,
                  "accepted_tokens_per_step": accepted, "mode": MODE, "device": device.name, "quick": bool(quick),
                  "layers_run": {k: r for k, (r, _) in runs.items()},
                  "layers_total": {k: t for k, (_, t) in runs.items()}, "scaling": SCALING}
        return [CaseSpec(suite=self.name, key=f"batch={b}", params={**common, "batch": b}, cost=CASE_S * (1.0 + b / 16))
                for b in options.batches]

    def setup(self, *, device: Any, options: DecodeOptions) -> dict[str, Any]:
        import torch

        from parity.device.tensors import as_dtype

        config = load_config(options.config)
        dtype = as_dtype(options.dtype)
        _check_room(config, options, device=device, itemsize=torch.empty((), dtype=dtype).element_size())
        free_before = device.free_memory_bytes() if device.type != "cpu" else None
        generator = torch.Generator(device=device.torch_device).manual_seed(options.seed)
        weights = {kind: [layer_weights(config, kind, device=device, dtype=dtype, generator=generator)
                          for _ in range(run)] for kind, (run, _) in layers_run(config, options.layers).items()}
        grouped = config.moe is not None and grouped_products_supported(device, dtype)
        return {"config": config, "dtype": dtype, "weights": weights, "free_before": free_before, "grouped": grouped}

    def measure(self, case: CaseSpec, *, device: Any, options: DecodeOptions, state: dict[str, Any]) -> CaseResult:
        import torch

        from parity.harness.measure import measure_work

        config, dtype, p = state["config"], state["dtype"], case.params
        batch, context = int(p["batch"]), int(p["context"])
        itemsize = torch.empty((), dtype=dtype).element_size()
        budget = options.budget_s or (QUICK_BUDGET_S if p.get("quick") else BUDGET_S)
        kinds: dict[str, CaseResult] = {}
        medians: dict[str, tuple[float, int, int]] = {}
        held, drop = tensor_bytes(state["weights"]), None
        for kind, weights in state["weights"].items():
            generator = torch.Generator(device=device.torch_device).manual_seed(options.seed * 1_000_003 + batch)
            step = build_kind_step(config, kind, weights, batch=batch, context=context, block_size=options.block_size,
                                   device=device, dtype=dtype, generator=generator, grouped=state["grouped"])
            held += tensor_bytes(step.caches)
            if state["free_before"] is not None:
                free = device.free_memory_bytes()
                drop = max(drop or 0, state["free_before"] - free) if free is not None else drop
            work = kind_work(step, batch=batch, context=context, itemsize=itemsize, device=device, seed=options.seed,
                             warmup_s=options.warmup_s, budget_s=budget, min_samples=options.min_samples)
            kinds[kind] = measure_work(case, work, device=device)
            medians[kind] = (kinds[kind].metrics["median_s"], len(weights), p["layers_total"][kind])
        method = None if config.moe is None else (
            "grouped_mm" if state["grouped"] else "one expert at a time (no grouped product on this device and dtype)")
        return self._combine(case, kinds, medians, config=config, held=held, drop=drop, itemsize=itemsize,
                             moe_method=method)

    def _combine(self, case: CaseSpec, kinds: dict[str, CaseResult], medians: dict[str, tuple[float, int, int]], *,
                 config: Any, held: int, drop: int | None, itemsize: int, moe_method: str | None) -> CaseResult:
        """One row for the batch: the model's step scaled from the kinds timed, TPOT, tokens/s per card."""
        p = case.params
        batch, context, cards = int(p["batch"]), int(p["context"]), int(p["cards"])
        step_s = model_step_s(medians)
        tpot_s = offline_tpot_s(step_s, float(p["accepted_tokens_per_step"]))
        flop = sum(total * layer_flop(config, k, batch=batch, context=context) for k, (_, _, total) in medians.items())
        nbytes = sum(total * layer_bytes(config, k, batch=batch, context=context, itemsize=itemsize)
                     for k, (_, _, total) in medians.items())
        per_kind = {k: {key: r.metrics.get(key) for key in ("median_s", "iqr_s", "ci95_s", "min_s", "flop",
                                                              "bytes", "flop_per_s", "bytes_per_s", "strategy")}
                    for k, r in kinds.items()}
        for k, (median, run, total) in medians.items():
            per_kind[k].update(layers_run=run, layers_total=total, per_layer_s=median / run)
        metrics = {"step_s": step_s, "tpot_s": tpot_s, "cards": cards,
                   "tokens_per_s_per_card": tokens_per_s_per_card(batch, tpot_s, cards),
                   "headline_metric": "tokens_per_s_per_card",  # compare's ratio: from the step, not "main"
                   # 1 / Σ_kind (total/run)·median · cards/(batch·accepted): each kind's samples resampled
                   "headline_medians": {k: total / run * cards / (batch * float(p["accepted_tokens_per_step"]))
                                        for k, (_, run, total) in medians.items()},
                   "memory_bytes": held, "memory_method": TENSOR_BYTES, "scaling": SCALING, "kinds": per_kind,
                   "flop_per_step": flop, "bytes_per_step": nbytes, "bytes_convention": BYTES_CONVENTION,
                   "arithmetic_intensity": arithmetic_intensity(flop, nbytes)}
        if moe_method is not None:
            metrics["moe_method"] = moe_method
        if drop is not None:
            metrics.update(device_memory_drop_bytes=drop, device_memory_method="drop of the device's free memory "
                           "from before the weights were built to after the case's caches were")
        checks = {k: r.check for k, r in kinds.items()}
        findings = tuple(f for r in kinds.values() for f in r.findings)
        return CaseResult(suite=case.suite, key=case.key, params=dict(p),
                          samples={k: r.samples["main"] for k, r in kinds.items()}, metrics=metrics,
                          check={"passed": all(c.get("passed") is True for c in checks.values()),
                                 "method": "every layer kind checked (parity.families.decode.step)", "kinds": checks},
                          findings=findings, telemetry={k: dict(r.telemetry) for k, r in kinds.items()})

    def recheck(self, results: list[CaseResult], *, options: DecodeOptions) -> list[CaseSpec]:
        """Batches whose step is slower than a larger batch's (``slower_than_a_larger_batch``)."""
        return [CaseSpec(suite=self.name, key=f"{r.key}/again", params={**r.params, "again_of": r.key})
                for r in slower_than_a_larger_batch(results)]

    def summarize(self, results: list[CaseResult], *, options: DecodeOptions) -> DecodeSummary:
        return summarize_decode(results, targets_ms=options.tpot_ms,
                                config_detail=config_to_dict(load_config(options.config)))

    def figures(self, summary: DecodeSummary | dict[str, Any]) -> list[Figure]:
        return decode_figures(summary)

