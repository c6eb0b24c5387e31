"""``parity decode online``: a concurrency or request-rate sweep against an OpenAI-compatible
streaming server, with vLLM's figures per level, the client's own ceiling, and the store."""

from __future__ import annotations

import math
import os
import sys
from typing import Any

import click

from parity.cli.output import json_option, write_json
from parity.cli.runs import db_option, stdout_console
from parity.model.errors import ParityError

SLO_KEYS = {"ttft_ms": "ttft", "tpot_ms": "tpot", "e2el_ms": "e2el"}


def parse_numbers(text: str | None, *, option: str, kind: type = int, allow_inf: bool = False) -> tuple[Any, ...]:
    """``"1,32"`` -> (1, 32); ``inf`` where allowed; every value positive."""
    if text is None:
        return ()
    values = []
    for item in text.split(","):
        item = item.strip()
        try:
            value = math.inf if allow_inf and item.lower() == "inf" else kind(item)
        except ValueError:
            raise ParityError(f"{option} {text!r}: {item!r} is not a number; e.g. {option} 1,8,32") from None
        if not value > 0:
            raise ParityError(f"{option} {text!r}: {item!r} must be positive")
        values.append(value)
    return tuple(values)


def parse_slo(text: str | None) -> dict[str, float]:
    """``"ttft_ms=200,tpot_ms=20"`` -> ``{"ttft": 0.2, "tpot": 0.02}`` (seconds)."""
    slo: dict[str, float] = {}
    for item in (text or "").split(","):
        if not item.strip():
            continue
        key, sep, raw = item.partition("=")
        name = SLO_KEYS.get(key.strip())
        try:
            value = float(raw) if sep else -1.0
        except ValueError:
            value = -1.0
        if name is None or not value >= 0:
            raise ParityError(f"--slo {item!r}: expected ttft_ms=, tpot_ms= or e2el_ms= with a number of ms")
        slo[name] = value / 1e3
    return slo


def api_key(api_key_env: str | None) -> str | None:
    """The API key from the named environment variable (sent with requests, never stored)."""
    if not api_key_env:
        return None
    key = os.environ.get(api_key_env)
    if not key:
        raise ParityError(f"--api-key-env {api_key_env}: that variable is not set; export the key in it")
    return key


@click.command()
@click.option("--url", required=True, metavar="URL", help="The server, e.g. http://127.0.0.1:8000 (with or without /v1).")
@click.option("--model", default=None, metavar="NAME", help="The served model (default: the only one listed).")
@click.option("--api-key-env", default=None, metavar="VAR", help="Environment variable holding the API key (sent with every request, never stored).")
@click.option("--endpoint-type", type=click.Choice(["completions", "chat"]), default="completions", show_default=True,
              help="/v1/completions or /v1/chat/completions.")
@click.option("--concurrency", default=None, metavar="LIST", help="Concurrency limits to sweep, e.g. 1,8,32 (default 1; unbounded with --request-rate alone).")
@click.option("--request-rate", default=None, metavar="LIST", help="Request rates per second to sweep (inf: all at once), e.g. 2,8,inf.")
@click.option("--burstiness", type=click.FloatRange(min=0, min_open=True), default=1.0, show_default=True,
              help="Gamma shape of the gaps between requests: 1 is Poisson, <1 burstier, >1 more even.")
@click.option("--num-requests", type=click.IntRange(1), default=64, show_default=True, help="Requests per level.")
@click.option("--output-tokens", type=click.IntRange(1), default=128, show_default=True, help="max_tokens of each request.")
@click.option("--input-tokens", default="128", show_default=True, metavar="N|LO-HI",
              help="Random prompts of N words, or of a length drawn uniformly in LO-HI.")
@click.option("--dataset", type=click.Path(dir_okay=False), default=None, help="JSONL prompts ({\"prompt\": ...} or {\"messages\": [...]}) instead of random ones.")
@click.option("--cards", type=click.IntRange(1), default=1, show_default=True, help="Cards serving the model (for tok/s per card).")
@click.option("--slo", default=None, metavar="ttft_ms=..,tpot_ms=..", help="Service-level objectives for goodput (also e2el_ms).")
@click.option("--tpot-ms", default=None, metavar="LIST", help="TPOT targets: the largest throughput per card whose TPOT statistic meets each.")
@click.option("--tpot-stat", type=click.Choice(["p50", "p90", "p99"]), default="p50", show_default=True, help="Which TPOT statistic the targets apply to.")
@click.option("--client-procs", type=click.IntRange(1), default=1, show_default=True, help="Client processes (each one asyncio loop); requests and concurrency are split between them.")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the prompts and the arrival times.")
@click.option("--ignore-eos/--no-ignore-eos", default=True, show_default=True, help="Ask the server (vLLM, SGLang) to generate the full output length.")
@click.option("--request-timeout", "timeout_s", type=click.FloatRange(1), default=600.0, show_default=True, help="Seconds a request may wait for its next chunk.")
@db_option
@json_option
def online(url: str, model: str | None, api_key_env: str | None, endpoint_type: str, concurrency: str | None,
           request_rate: str | None, burstiness: float, num_requests: int, output_tokens: int, input_tokens: str,
           dataset: str | None, cards: int, slo: str | None, tpot_ms: str | None, tpot_stat: str, client_procs: int,
           seed: int, ignore_eos: bool, timeout_s: float, db_path: str | None, json_path: str | None) -> int:
    """Drive an OpenAI-compatible streaming server (vLLM, SGLang, TGI) level by level and report,
    per level, TTFT, TPOT, ITL and E2E (mean, median, p90, p99) with vLLM's definitions and field
    names, throughput (per card with --cards), goodput under --slo, both interactivity
    definitions, and whether the client itself was the limit (finding client-bound). Every level
    is stored as a case of a run (suite serving, mode online). Exit status 1 when a level fails.

    \b
    Example:
      parity decode online --url http://127.0.0.1:8000 --model m --concurrency 1,32 \\
          --num-requests 64 --output-tokens 32 --json out.json
      parity decode online --url http://127.0.0.1:8000 --request-rate 2,8 --burstiness 0.5 \\
          --endpoint-type chat --slo ttft_ms=500,tpot_ms=50 --tpot-ms 20,50 --cards 8
    """
    from parity.families.decode.serving.at_target import throughput_at_tpot
    from parity.families.decode.serving.prompts import parse_length
    from parity.families.decode.serving.sweep import OnlineOptions, measure_online
    from parity.ranks.remote import probe_endpoint_blocking

    rates = parse_numbers(request_rate, option="--request-rate", kind=float, allow_inf=True) or (math.inf,)
    limits: tuple[int | None, ...] = parse_numbers(concurrency, option="--concurrency") or (
        (None,) if request_rate else (1,))
    options = OnlineOptions(endpoint_type=endpoint_type, concurrency=limits, request_rate=rates,
                            burstiness=burstiness, num_requests=num_requests, output_tokens=output_tokens,
                            input_tokens=parse_length(input_tokens), dataset=dataset, cards=cards,
                            slo_s=parse_slo(slo), client_procs=client_procs, seed=seed, ignore_eos=ignore_eos,
                            request_timeout_s=timeout_s)
    targets = parse_numbers(tpot_ms, option="--tpot-ms", kind=float)
    key = api_key(api_key_env)
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    endpoint = probe_endpoint_blocking(url, model, api_key=key)

    def note(line: str) -> None:
        click.echo(f"parity decode online: {line}", err=True)

    levels = measure_online(options, base_url=endpoint.url, model=endpoint.model, headers=headers, progress=note)
    fields = [level.fields for level in levels]
    search = throughput_at_tpot(fields, targets_ms=targets, stat=tpot_stat, cards=cards) if targets else None
    run = _store(db_path, endpoint=endpoint, options=options, levels=levels, search=search)
    from parity.families.decode.views import serving_table

    rows = [{**level.fields, "findings": [f.code for f in level.findings]} for level in levels]
    stdout_console(json_path).print(serving_table(rows, title=f"{endpoint.record().name} (run {run.run_id})"))
    ok = all(level.check.get("passed") for level in levels)
    write_json(json_path, "decode-online", {
        "url": endpoint.url, "model": endpoint.model, "endpoint_type": endpoint_type, "run_id": run.run_id,
        "labels": run.config["labels"], "options": options.to_dict(),
        "levels": [{**level.fields, "check": level.check, "findings": [f.to_dict() for f in level.findings]}
                   for level in levels],
        "tpot_target": search, "ok": ok,
    })
    return 0 if ok else 1


def _store(db_path: str | None, *, endpoint: Any, options: Any, levels: list[Any], search: Any) -> Any:
    """The sweep as one run of suite serving, identified by the endpoint as it reported itself."""
    from parity.families.decode.serving.client import TOKENS_FROM_USAGE
    from parity.families.decode.serving.record import SUITE, level_case, method_labels, store_serving_run
    from parity.device.provenance import collect_provenance
    from parity.store import Store

    sources = sorted({str(level.fields.get("token_count_source")) for level in levels})
    labels = method_labels("parity decode online", endpoint_type=options.endpoint_type,
                           output_tokens_from=sources[0] if len(sources) == 1 else ", ".join(sources),
                           tokens="usage" if sources == [TOKENS_FROM_USAGE] else "chunks (no usage)")
    config = {"device": endpoint.record().name, "suites": [SUITE], "quick": False, "mode": "online",
              "labels": labels, "endpoint": {"url": endpoint.url, "model": endpoint.model},
              "options": {SUITE: options.to_dict()}}
    provenance = {**collect_provenance(None, argv=list(sys.argv)), "target": endpoint.record().to_dict()}
    cases = [level_case(level, params={"max_concurrency": level.fields["max_concurrency"],
                                       "request_rate": level.fields["request_rate"]}) for level in levels]
    best = max((f.get("output_throughput_per_card") or 0 for f in (lv.fields for lv in levels)), default=0)
    headline = {"best_output_tok_s_per_card": best}
    with Store.open(db_path) as store:
        return store_serving_run(store, config=config, provenance=provenance, cases=cases, headline=headline,
                                 summary={"tpot_target": search} if search else None)
