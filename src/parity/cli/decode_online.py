"""``parity decode online``: a concurrency or request-rate sweep against an OpenAI-compatible
streaming server, with vLLM's figures per level, the client's own ceiling, and the store."""

from __future__ import annotations

import math
import os
import platform
import signal
import sys
from typing import Any

import click

from parity.cli.option_flags import AVAILABILITY_CHOICE, AVAILABILITY_HELP, LABEL_HELP
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


SWEEP_FLAGS = ("model", "endpoint_type", "concurrency", "request_rate", "burstiness", "num_requests", "output_tokens",
               "input_tokens", "shared_prefix", "dataset", "cards", "slo", "tpot_ms", "tpot_stat", "search",
               "client_procs", "seed", "ignore_eos", "timeout_s", "server_metrics", "label")


class Interrupted(Exception):
    """SIGTERM during the sweep (raised from the handler so the levels stored stay stored and
    client processes are joined)."""


@click.command()
@click.option("--url", default=None, metavar="URL", help="The server, e.g. http://127.0.0.1:8000 (with or without /v1).")
@click.option("--model", default=None, metavar="NAME", help="The served model (default: the only one listed).")
@click.option("--api-key-env", default=None, metavar="VAR", help="Environment variable holding the API key (sent with every request, never stored).")
@click.option("--endpoint-type", type=click.Choice(["completions", "chat"]), default="completions", show_default=True,
              help="/v1/completions or /v1/chat/completions.")
@click.option("--concurrency", default=None, metavar="LIST", help="Concurrency limits to sweep, e.g. 1,8,32 (default 1; unbounded with --request-rate alone). A limit given twice is measured twice and kept apart (concurrency/4, concurrency/4#2).")
@click.option("--request-rate", default=None, metavar="LIST", help="Request rates per second to sweep (inf: all at once), e.g. 2,8,inf.")
@click.option("--burstiness", type=click.FloatRange(min=0, min_open=True), default=1.0, show_default=True,
              help="Gamma shape of the gaps between requests: 1 is Poisson, <1 burstier, >1 more even.")
@click.option("--num-requests", type=click.IntRange(1), metavar="N", default=64, show_default=True, help="Requests per level.")
@click.option("--output-tokens", type=click.IntRange(1), metavar="N", default=128, show_default=True, help="max_tokens of each request.")
@click.option("--input-tokens", default="128", show_default=True, metavar="N|LO-HI",
              help="Random prompts of N words, or of a length drawn uniformly in LO-HI (fresh ones each level).")
@click.option("--shared-prefix", type=click.IntRange(0), default=0, show_default=True, metavar="N",
              help="Start every prompt with the same N words, to measure the server's prefix cache on purpose.")
@click.option("--dataset", type=click.Path(dir_okay=False), default=None, help="JSONL prompts ({\"prompt\": ...} or {\"messages\": [...]}) instead of random ones.")
@click.option("--cards", type=click.IntRange(1), metavar="N", default=1, show_default=True, help="Cards serving the model (for tok/s per card).")
@click.option("--slo", default=None, metavar="ttft_ms=..,tpot_ms=..", help="Service-level objectives for goodput (also e2el_ms).")
@click.option("--tpot-ms", default=None, metavar="LIST", help="TPOT targets: the largest throughput per card whose TPOT statistic meets each.")
@click.option("--tpot-stat", type=click.Choice(["p50", "p90", "p99"]), default="p50", show_default=True, help="Which TPOT statistic the targets apply to.")
@click.option("--search", is_flag=True, help="Measure levels until the highest concurrency (or, with one --request-rate, rate) meeting the first --tpot-ms target is found (bisection, within 10%).")
@click.option("--client-procs", type=click.IntRange(1), metavar="N", default=1, show_default=True, help="Client processes (each one asyncio loop); requests and concurrency are split between them.")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the prompts and the arrival times.")
@click.option("--ignore-eos/--no-ignore-eos", default=True, show_default=True, help="Ask the server (vLLM, SGLang) to generate the full output length.")
@click.option("--request-timeout", "timeout_s", type=click.FloatRange(1), default=600.0, show_default=True, help="Seconds a request may wait for its next chunk.")
@click.option("--server-metrics/--no-server-metrics", default=True, show_default=True, help="Sample the server's Prometheus /metrics during each level.")
@click.option("--availability", type=AVAILABILITY_CHOICE, default=None, help=AVAILABILITY_HELP)
@click.option("--label", default=None, metavar="TEXT", help=LABEL_HELP)
@click.option("--resume", "resume_id", default=None, metavar="RUN_ID", help="Continue a stored sweep: measure only the levels it lacks, with its stored settings.")
@db_option
@json_option
@click.pass_context
def online(ctx: click.Context, url: str | None, model: str | None, api_key_env: str | None, endpoint_type: str,
           concurrency: str | None, request_rate: str | None, burstiness: float, num_requests: int, output_tokens: int,
           input_tokens: str, shared_prefix: int, dataset: str | None, cards: int, slo: str | None,
           tpot_ms: str | None, tpot_stat: str, search: bool, client_procs: int, seed: int, ignore_eos: bool,
           timeout_s: float, server_metrics: bool, availability: str | None, label: str | None,
           resume_id: str | None, db_path: str | None, json_path: str | None) -> int:
    """Drive an OpenAI-compatible streaming server (vLLM, SGLang, TGI) level by level and report,
    per level, TTFT, TPOT, ITL and E2E (mean, median, p90, p99) with vLLM's definitions and field
    names, throughput (per card with --cards), goodput under --slo, both interactivity
    definitions, the server's own metrics (running and waiting requests, KV cache use, prefix
    cache hit rate, from its /metrics), and whether the client itself was the limit (finding
    client-bound). Every level draws fresh prompts, so a prefix cache cannot serve one level
    from another (finding cache-reuse where the server reports hits anyway). Each level is
    stored as it ends (suite serving, mode online): an interrupted sweep keeps its levels and
    continues with --resume. Exit status 1 when a level fails.

    \b
    Example:
      parity decode online --url http://127.0.0.1:8000 --model m --concurrency 1,32 \\
          --num-requests 64 --output-tokens 32 --json out.json
      parity decode online --url http://127.0.0.1:8000 --request-rate 2,8 --burstiness 0.5 \\
          --endpoint-type chat --slo ttft_ms=500,tpot_ms=50 --tpot-ms 20,50 --cards 8
      parity decode online --url http://127.0.0.1:8000 --tpot-ms 10 --search --num-requests 64
      parity decode online --url http://127.0.0.1:8000 --label 'vLLM 0.11 eager' --availability available
      parity decode online --resume 20261203-160418-364a
    """
    from parity.families.decode.serving.prompts import parse_length
    from parity.families.decode.serving.sweep import OnlineOptions

    if resume_id is not None:
        given = [f"--{name.replace('_', '-')}" for name in SWEEP_FLAGS
                 if ctx.get_parameter_source(name) == click.core.ParameterSource.COMMANDLINE]
        if given:
            raise ParityError(f"--resume continues run {resume_id} with its stored settings; drop {', '.join(given)}")
        return _resume(resume_id, url=url, api_key_env=api_key_env, db_path=db_path, json_path=json_path,
                       tags=_tags(availability, label))
    if url is None:
        raise ParityError("give --url (the server to measure) or --resume RUN_ID")
    rates = parse_numbers(request_rate, option="--request-rate", kind=float, allow_inf=True) or (math.inf,)
    limits: tuple[int | None, ...] = parse_numbers(concurrency, option="--concurrency") or (
        (None,) if request_rate else (1,))
    targets = parse_numbers(tpot_ms, option="--tpot-ms", kind=float)
    if search and not targets:
        raise ParityError("--search needs a target: give --tpot-ms, e.g. --tpot-ms 10 --search")
    if search and (len(limits) > 1 or len(rates) > 1 or (request_rate and concurrency)
                   or (request_rate and math.isinf(rates[0]))):
        raise ParityError("--search chooses the levels itself: give at most one --concurrency (where a search over "
                          "concurrency starts) or one finite --request-rate (where a search over rate starts)")
    options = OnlineOptions(endpoint_type=endpoint_type, concurrency=limits, request_rate=rates,
                            burstiness=burstiness, num_requests=num_requests, output_tokens=output_tokens,
                            input_tokens=parse_length(input_tokens), shared_prefix=shared_prefix, dataset=dataset,
                            cards=cards, slo_s=parse_slo(slo), client_procs=client_procs, seed=seed,
                            ignore_eos=ignore_eos, request_timeout_s=timeout_s, server_metrics=server_metrics,
                            search=search)
    asked = {"targets_ms": list(targets), "tpot_stat": tpot_stat, "output_tokens": output_tokens,
             "input_tokens": "dataset" if dataset else _length_setting(input_tokens)}
    return _sweep(url, model, api_key_env, options, asked, db_path=db_path, json_path=json_path, resume_id=None,
                  tags=_tags(availability, label))


def _tags(availability: str | None, label: str | None) -> dict[str, Any]:
    """The user's ``--label`` and ``--availability`` as config entries, as the family commands
    store them (``--resume`` refuses ``--label``: the run keeps its name; an availability
    describes the stack, not the sweep, so it may be given then too)."""
    from parity.harness.run_record import run_tags

    return {**run_tags(label=label), **({"availability": availability} if availability else {})}


def _length_setting(text: str) -> int | str:
    """``"128"`` -> 128 (a fixed length compares with other tools' numbers); ``"64-256"`` kept."""
    return int(text) if text.strip().isdigit() else text


def _resume(resume_id: str, *, url: str | None, api_key_env: str | None, db_path: str | None,
            json_path: str | None, tags: dict[str, Any]) -> int:
    """The stored sweep's settings, then the sweep with its stored levels kept."""
    from parity.families.decode.serving.sweep import OnlineOptions
    from parity.store import Store

    with Store.open(db_path) as store:
        run = store.get_run(resume_id)
    stored = run.config.get("online")
    if run.config.get("mode") != "online" or not isinstance(stored, dict) or "options" not in stored:
        raise ParityError(f"run {run.run_id} is not a parity decode online sweep; resume it with parity run --resume")
    if run.status == "complete":
        click.echo(f"run {run.run_id} is complete: nothing to resume (see it with parity runs show {run.run_id})")
        return 0
    endpoint = run.config.get("endpoint") or {}
    if not (url or endpoint.get("url")):
        raise ParityError(f"run {run.run_id} stores no server URL; give --url with --resume")
    return _sweep(str(url or endpoint.get("url")), endpoint.get("model"), api_key_env,
                  OnlineOptions.from_dict(stored["options"]), stored, db_path=db_path, json_path=json_path,
                  resume_id=run.run_id, tags=tags)


def _sweep(url: str, model: str | None, api_key_env: str | None, options: Any, asked: dict[str, Any], *,
           db_path: str | None, json_path: str | None, resume_id: str | None, tags: dict[str, Any] | None = None) -> int:
    """Measure the sweep into a new run or into the resumed one; ``tags`` (:func:`_tags`) go into
    its config before the first level."""
    from parity.families.decode.serving.at_target import throughput_at_tpot
    from parity.families.decode.serving.record import SUITE, finish_serving_run
    from parity.harness.run_record import tag_run
    from parity.ranks.remote import probe_endpoint_blocking
    from parity.store import Store

    key = api_key(api_key_env)
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    endpoint = probe_endpoint_blocking(url, model, api_key=key)

    def note(line: str) -> None:
        click.echo(f"parity decode online: {line}", err=True)

    from parity.families.decode.serving.sweep import Sweep

    sweep = Sweep(options, base_url=endpoint.url, model=endpoint.model, headers=headers, progress=note)
    first = sweep.warm_up()  # before the run is stored: a server that cannot answer stores nothing
    with Store.open(db_path) as store:
        run_id, done = _open_run(store, endpoint=endpoint, options=options, asked=asked, resume_id=resume_id,
                                 usage=first.usage_output_tokens is not None)
        tag_run(store, run_id, tags or {})
        note(f"run {run_id}: each level is stored as it ends")
        previous = signal.signal(signal.SIGTERM, _raise_interrupted)
        search_result = None
        try:
            levels, search_result = _measure(store, run_id, sweep, options, asked, note, done)
        except (Interrupted, KeyboardInterrupt):
            stored = len(store.cases(run_id, SUITE))
            note(f"interrupted: {stored} level(s) stored in run {run_id}; continue with "
                 f"parity decode online --resume {run_id}")
            return 130
        except ParityError as exc:
            finish_serving_run(store, run_id, complete=False)
            stored = len(store.cases(run_id, SUITE))
            raise ParityError(f"{exc}; {stored} level(s) stored in run {run_id}, continue with "
                              f"parity decode online --resume {run_id}") from None
        finally:
            signal.signal(signal.SIGTERM, previous)
        fields = [level.fields for level in levels]
        targets = asked.get("targets_ms") or []
        at_target = throughput_at_tpot(fields, targets_ms=targets, stat=asked.get("tpot_stat", "p50"),
                                       cards=options.cards) if targets else None
        extra = {k: v for k, v in (("tpot_target", at_target), ("search", search_result)) if v is not None}
        run = finish_serving_run(store, run_id, extra=extra)
    _report(run, endpoint, options, levels, at_target, search_result, json_path)
    return 0 if all(level.check.get("passed") for level in levels) else 1


def _raise_interrupted(signum: int, frame: Any) -> None:
    raise Interrupted(f"signal {signum}")


def _measure(store: Any, run_id: str, sweep: Any, options: Any, asked: dict[str, Any], note: Any,
             done: dict[str, Any]) -> tuple[list[Any], dict[str, Any] | None]:
    """The grid's levels, or the search's; each stored by ``on_level`` when it ends."""
    from parity.families.decode.serving.search import search_concurrency, search_rate
    from parity.families.decode.serving.sweep import LevelSpec, measure_online

    def on_level(spec: Any, level: Any) -> None:
        store.add_case(run_id, _case(level, asked))
        if not level.check.get("passed"):
            errors = level.check.get("errors") or ["see the level's check"]
            click.echo(f"parity decode online: level {spec.describe()} failed: {level.fields['failed']} of "
                       f"{level.fields['num_prompts']} requests failed ({errors[0]})", err=True)

    sweep.on_level = on_level
    if not options.search:
        return measure_online(options, base_url=sweep.base_url, model=sweep.model, headers=sweep.headers,
                              progress=note, on_level=on_level, done=done, sweep=sweep), None
    levels: list[Any] = []
    by_rate = options.concurrency == (None,)

    def measure(value: float) -> Any:
        spec = LevelSpec(ordinal=len(levels), concurrency=None if by_rate else int(value),
                         rate=value if by_rate else math.inf)
        if spec.key in done:
            note(f"level {spec.describe()}: stored already, not measured again")
            level = done[spec.key]
        else:
            level = sweep.measure(spec, total="?")
        levels.append(level)
        return level

    target, stat = asked["targets_ms"][0], asked.get("tpot_stat", "p50")
    if by_rate:
        result = search_rate(measure, target_ms=target, stat=stat, start=options.request_rate[0])
    else:
        result = search_concurrency(measure, target_ms=target, stat=stat, start=options.concurrency[0] or 1,
                                    limit=options.num_requests)
    what = "request rate" if by_rate else "concurrency"
    note(f"search: highest {what} meeting TPOT {stat} <= {target:g} ms: "
         f"{result.get('request_rate' if by_rate else 'concurrency') or 'not reached'} ({result['status']}, "
         f"lowest failing {result['lowest_failing']})")
    return levels, result


def _case(level: Any, asked: dict[str, Any]) -> Any:
    from parity.families.decode.serving.record import level_case, level_params

    return level_case(level, params=level_params(level.fields, input_tokens=asked.get("input_tokens"),
                                                 output_tokens=asked.get("output_tokens")))


def _open_run(store: Any, *, endpoint: Any, options: Any, asked: dict[str, Any], resume_id: str | None,
              usage: bool) -> tuple[str, dict[str, Any]]:
    """The run to store levels in (a new one, or the resumed one) and its stored levels."""
    from parity.families.decode.serving.client import TOKENS_FROM_CHUNKS, TOKENS_FROM_USAGE
    from parity.families.decode.serving.level import Level
    from parity.families.decode.serving.record import SUITE, method_labels, open_serving_run

    writer = {"host": platform.node(), "pid": os.getpid()}
    if resume_id is not None:
        run = store.get_run(resume_id)
        target = dict(run.provenance.get("target") or {})
        target["provenance"] = [{**(target.get("provenance") or [{}])[0], **writer}]
        resumes = [*run.provenance.get("resumes", []), {**writer, "argv": list(sys.argv)}]
        store.update_provenance(run.run_id, {**run.provenance, "target": target, "resumes": resumes})
        done = {c.key: Level(fields=dict(c.metrics), samples=dict(c.samples), check=dict(c.check),
                             findings=tuple(c.findings)) for c in store.cases(run.run_id, SUITE)}
        return run.run_id, done
    from parity.device.provenance import collect_provenance

    labels = method_labels("parity decode online", endpoint_type=options.endpoint_type,
                           output_tokens_from=TOKENS_FROM_USAGE if usage else TOKENS_FROM_CHUNKS,
                           tokens="usage" if usage else "chunks (no usage)")
    name = endpoint.record().name
    config = {"device": name, "suites": [SUITE], "quick": False, "mode": "online", "labels": labels,
              "endpoint": {"url": endpoint.url, "model": endpoint.model},
              "online": {**asked, "options": options.to_dict()}}
    target = endpoint.record().to_dict()
    target["provenance"] = [{**(target.get("provenance") or [{}])[0], **writer}]
    # The client host's facts are the client's, not the measured server's: kept apart so that
    # compare's audit does not set them against a result measured elsewhere.
    provenance = {"device_identity": name, "target": target, "client": collect_provenance(None, argv=list(sys.argv)),
                  "command_line": list(sys.argv)}
    return open_serving_run(store, config=config, provenance=provenance).run_id, {}


def _report(run: Any, endpoint: Any, options: Any, levels: list[Any], at_target: Any, search: Any,
            json_path: str | None) -> None:
    from parity.families.decode.views import fitted_console, serving_table

    rows = [{**level.fields, "findings": [f.code for f in level.findings],
             "failed": not level.check.get("passed")} for level in levels]
    table = serving_table(rows, title=f"{endpoint.record().name} (run {run.run_id})")
    fitted_console(stdout_console(json_path), table).print(table)
    write_json(json_path, "decode-online", {
        "url": endpoint.url, "model": endpoint.model, "endpoint_type": options.endpoint_type, "run_id": run.run_id,
        "labels": run.config["labels"], "options": options.to_dict(),
        "levels": [{**level.fields, "check": level.check,
                    "findings": [f.to_dict() if hasattr(f, "to_dict") else f for f in level.findings]}
                   for level in levels],
        "tpot_target": at_target, "search": search, "ok": all(level.check.get("passed") for level in levels),
    })
