"""``parity decode offline``: the engine step of a decoder from a model config, per batch size."""

from __future__ import annotations

from typing import Any

from parity.cli.suite_command import FamilyCommand, family_command


def _check_config(store: Any, options: dict[str, Any]) -> dict[str, Any]:
    """A bad config is a one-line error before the run starts."""
    from parity.families.decode.config import load_config

    load_config(str(options.get("config", "tiny")))
    return options


SPEC = FamilyCommand(suite="decode", prepare=_check_config, quick_help="Shorter timing budget (a smoke run).")

offline = family_command(SPEC, name="offline", help="""Offline decode: one engine step of a decoder built from a
model config with random weights (no downloads), timed per batch size with the paged KV cache
filled to --context tokens.

A few layers of each kind are run (--layers) and the step is scaled to the config's layer
count, which the output and the stored record state. Per batch: step time, TPOT = step /
accepted tokens per step, tokens/s per card = batch / TPOT / cards, memory held; then the
Pareto front of (TPOT, tokens/s per card) and the throughput at each --tpot-ms target,
interpolated on the front and "not reached" outside the measured range (never extrapolated).
Offline numbers exclude scheduling and load balancing and are labelled so; every case is
checked (paged attention against a dense reference, MoE against a per-expert loop).

\b
Example:
  parity decode offline --config tiny --batches 1,2,4,8,16 --tpot-ms 5,10 --json out.json
  parity decode offline --config llama-3-8b --device cuda:0 --batches 1,8,32,128 --context 4096
  parity run --suite decode --set decode.config=tiny
""")
