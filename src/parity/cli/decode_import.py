"""``parity decode import``: other tools' serving results into the store, with their labels."""

from __future__ import annotations

import sys

import click

from parity.cli.option_flags import AVAILABILITY_CHOICE, AVAILABILITY_HELP, LABEL_HELP
from parity.cli.output import json_option, write_json
from parity.cli.runs import db_option


@click.command("import")
@click.argument("path", type=click.Path(dir_okay=False))
@click.option("--format", "fmt", type=click.Choice(["vllm", "inferencex"]), required=True,
              help="vllm: a vllm bench serve --save-result file; inferencex: an InferenceX agg_*.json result.")
@click.option("--cards", type=click.IntRange(1), metavar="N", default=1, show_default=True,
              help="Cards that served a vllm result (for tok/s per card); InferenceX files state their own.")
@click.option("--availability", type=AVAILABILITY_CHOICE, default=None, help=AVAILABILITY_HELP)
@click.option("--label", default=None, metavar="TEXT", help=LABEL_HELP)
@db_option
@json_option
def import_results(path: str, fmt: str, cards: int, availability: str | None, label: str | None,
                   db_path: str | None, json_path: str | None) -> None:
    """Store a vllm bench serve or InferenceX result as a run (suite serving, mode online) with
    its method labels (source, TPOT and interactivity definitions), one case per level, so that
    parity runs list shows it beside parity's own decode online runs. A file that is not such a
    result is a one-line error and nothing is stored.

    \b
    Example:
      parity decode import vllm-inf-qps-concurrency32-m.json --format vllm --cards 8
      parity decode import agg_dsr1_fp8_tp8_conc64.json --format inferencex --json imported.json
      parity decode import vllm-result.json --format vllm --label 'vLLM H200' --availability available
    """
    from parity.families.decode.serving.imported import import_results as read_results
    from parity.families.decode.serving.record import store_serving_run
    from parity.harness.run_record import run_tags
    from parity.store import Store

    tags = {**run_tags(label=label), **({"availability": availability} if availability else {})}
    imported = read_results(path, fmt=fmt, cards=cards)
    best = max((c.metrics.get("output_throughput_per_card") or 0 for c in imported.cases), default=0)
    # The device (or endpoint) name every exported row carries: the model and, for InferenceX,
    # the hardware the file names.
    provenance = {"command_line": list(sys.argv), "device_identity": imported.config["device"]}
    with Store.open(db_path) as store:
        run = store_serving_run(store, config={**imported.config, **tags}, provenance=provenance,
                                cases=imported.cases, headline={"best_output_tok_s_per_card": best})
    click.echo(f"imported {len(imported.cases)} level(s) of {path} as run {run.run_id} "
               f"({imported.config['labels']['source']})", err=json_path == "-")
    write_json(json_path, "decode-import", {"run_id": run.run_id, "format": fmt, "config": run.config,
                                            "levels": [c.metrics for c in imported.cases]})
