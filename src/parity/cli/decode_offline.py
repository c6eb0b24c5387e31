"""``parity decode offline``: the engine step of a decoder from a model config, per batch size."""

from __future__ import annotations

from typing import Any

import click

from parity.cli.output import json_option
from parity.cli.runs import db_option
from parity.cli.suite_command import run_suite_command
from parity.model.errors import ParityError


def parse_list(value: str | None, *, option: str, kind: type) -> list[Any] | None:
    """``1,2,4`` as numbers of ``kind``; a one-line error naming the option and the item."""
    if value is None:
        return None
    items = [v.strip() for v in value.split(",") if v.strip()]
    try:
        parsed = [kind(v) for v in items]
    except ValueError:
        raise ParityError(f"{option} {value!r} is not a comma-separated list of numbers; write it like 1,2,4") from None
    if not parsed or any(v <= 0 for v in parsed):
        raise ParityError(f"{option} {value!r} must list positive numbers")
    return parsed


@click.command()
@click.option("--config", "config", default="tiny", show_default=True, metavar="NAME|PATH",
              help="Model config: tiny, tiny-moe, llama-3-8b, deepseek-v3, or a TOML file with the same keys.")
@click.option("--batch", "batches", default=None, metavar="LIST", help="Batch sizes (default 1,2,4,8,16).")
@click.option("--tpot-ms", "tpot_ms", default=None, metavar="LIST", help="TPOT targets in ms (default 5,10).")
@click.option("--context", type=click.IntRange(1), default=None,
              help="Tokens each sequence attends to; the paged cache is filled to it (default 1024).")
@click.option("--layers", type=click.IntRange(1), default=None,
              help="Layers run per layer kind (dense, MoE; default 2); the step is scaled to the config's count.")
@click.option("--block-size", type=click.IntRange(1), default=None, help="Tokens per KV-cache block (default 16).")
@click.option("--cards", type=click.IntRange(1), default=None,
              help="Cards the measured step stands for; tokens/s are divided by it (default 1).")
@click.option("--accepted-tokens", type=click.FloatRange(1.0), default=None,
              help="Accepted tokens per step (multi-token prediction's factor; default: the config's, 1.0 shipped).")
@click.option("--dtype", type=click.Choice(["bfloat16", "float16", "float32"]), default=None,
              help="Weights, cache and activations (default bfloat16).")
@click.option("--device", "device_name", default=None, metavar="DEV",
              help="Device to measure (cuda:0, npu:0, xpu, mps, cpu). Default: the best one here.")
@click.option("--seed", type=int, default=None, help="Seed of the random weights, caches and inputs (default 0).")
@click.option("--budget-s", type=click.FloatRange(0.0, min_open=True), default=None,
              help="Timing budget per layer kind and batch, s (default 0.1; 0.04 with --quick).")
@click.option("--quick", is_flag=True, help="Shorter timing budget (a smoke run).")
@db_option
@json_option
def offline(config: str, batches: str | None, tpot_ms: str | None, context: int | None, layers: int | None,
            block_size: int | None, cards: int | None, accepted_tokens: float | None, dtype: str | None,
            device_name: str | None, seed: int | None, budget_s: float | None, quick: bool, db_path: str | None,
            json_path: str | None) -> int:
    """Offline decode: one engine step of a decoder built from a model config with random weights
    (no downloads), timed per batch size with the paged KV cache filled to --context tokens.

    A few layers of each kind are run (--layers) and the step is scaled to the config's layer
    count, which the output and the stored record state. Per batch: step time, TPOT = step /
    accepted tokens per step, tokens/s per card = batch / TPOT / cards, memory held; then the
    Pareto front of (TPOT, tokens/s per card) and the throughput at each --tpot-ms target,
    interpolated on the front and "not reached" outside the measured range (never extrapolated).
    Offline numbers exclude scheduling and load balancing and are labelled so; every case is
    checked (paged attention against a dense reference, MoE against a per-expert loop).

    \b
    Example:
      parity decode offline --config tiny --batch 1,2,4,8,16 --tpot-ms 5,10 --json out.json
      parity decode offline --config llama-3-8b --device cuda:0 --batch 1,8,32,128 --context 4096
      parity run --suite decode --set decode.config=tiny
    """
    from parity.families.decode.views import render_decode

    options: dict[str, Any] = {"config": config}
    for key, value in (("batches", parse_list(batches, option="--batch", kind=int)),
                       ("tpot_ms", parse_list(tpot_ms, option="--tpot-ms", kind=float)),
                       ("context", context), ("layers", layers), ("block_size", block_size), ("cards", cards),
                       ("accepted_tokens", accepted_tokens), ("dtype", dtype), ("seed", seed),
                       ("budget_s", budget_s)):
        if value is not None:
            options[key] = value
    from parity.families.decode.config import load_config

    load_config(config)  # a bad config is a one-line error before the run starts
    return run_suite_command("decode", render=render_decode, device_name=device_name, quick=quick,
                             options=options, db_path=db_path, json_path=json_path)
