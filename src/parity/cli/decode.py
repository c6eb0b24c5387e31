"""``parity decode offline|online|import``: LLM decode throughput per card at a TPOT target.

``offline`` times engine steps of decoder layers built from a model config (random weights);
``online`` drives an OpenAI-compatible streaming server; ``import`` reads other tools' serving
results into the store with their method labels. Each subcommand lives in its own module and is
imported only when used.
"""

from __future__ import annotations

import click

from parity.cli.lazy import LazyGroup

SUBCOMMANDS = {
    "offline": ("parity.cli.decode_offline:offline", "Offline decode: one engine step of a decoder built from a model config"),
    "online": ("parity.cli.decode_online:online", "Drive an OpenAI-compatible streaming server (vLLM, SGLang, TGI) level by level"),
    "import": ("parity.cli.decode_import:import_results", "Store a vllm bench serve or InferenceX result as a run"),
}


@click.group(cls=LazyGroup, lazy_commands=SUBCOMMANDS)
def decode() -> None:
    """LLM decode: tokens/s per card at a time-per-output-token target, offline and online.

    \b
    Examples:
      parity decode offline --config tiny --batches 1,2,4,8 --tpot-ms 5,10 --json out.json
      parity decode online --url http://127.0.0.1:8000 --model m --concurrency 1,32 --json on.json
      parity decode import vllm-result.json --format vllm
    """
