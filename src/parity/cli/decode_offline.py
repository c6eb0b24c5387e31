"""``parity decode offline``: the engine step of a decoder from a model config, per batch size;
with ``--engine vllm --model PATH``, the decode step of a real engine through its Python API,
beside the step model of the same config."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import click

from parity.cli.suite_command import FamilyCommand, family_command
from parity.model.errors import ParityError


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

With --engine vllm --model PATH (run by a Python that has vLLM): the engine's own decode step
per batch through its offline API, output length forced (ignore_eos, min_tokens = max_tokens):
generate is timed at two output lengths (2 and --output-tokens) and the slope is the step, so
prefill and call overhead cancel; TPOT, tokens/s per card, Pareto front and targets as above,
labelled "offline, engine", and beside them the step model of the same config (read from the
model's config.json, --context default input + output/2), stored as usual.

\b
Example:
  parity decode offline --config tiny --batches 1,2,4,8,16 --tpot-ms 5,10 --json out.json
  parity decode offline --config llama-3-8b --device cuda:0 --batches 1,8,32,128 --context 4096
  parity decode offline --engine vllm --model ./tiny-llama --batches 1,4,16 --output-tokens 32
  parity run --suite decode --set decode.config=tiny
""")

ENGINE_PARAMS = [
    click.Option(["--engine"], type=click.Choice(["vllm"]), default=None,
                 help="Time a real engine's decode step through its Python API (needs --model)."),
    click.Option(["--model", "engine_model"], default=None, metavar="PATH",
                 help="The model folder the engine loads (with --engine)."),
    click.Option(["--input-tokens"], type=click.IntRange(1), metavar="N", default=128, show_default=True,
                 help="Prompt tokens per sequence (with --engine)."),
    click.Option(["--output-tokens"], type=click.IntRange(3), metavar="N", default=32, show_default=True,
                 help="Forced output tokens of the long generate (with --engine)."),
    click.Option(["--step-model/--no-step-model"], default=True, show_default=True,
                 help="With --engine, also run parity's step model of the same config."),
]
ENGINE_ONLY = ("engine_model", "input_tokens", "output_tokens")
_family_callback = offline.callback


def _callback(**values: Any) -> int | None:
    engine = {key: values.pop(key) for key in ("engine", *ENGINE_ONLY, "step_model")}
    ctx = click.get_current_context()
    if engine["engine"] is None:
        given = [f"--{k.replace('_', '-').replace('engine-model', 'model')}" for k in ENGINE_ONLY
                 if ctx.get_parameter_source(k) not in (None, click.core.ParameterSource.DEFAULT)]
        if given:
            raise ParityError(f"{', '.join(given)} apply with --engine only; add --engine vllm")
        return _family_callback(**values)  # type: ignore[misc]
    if not engine["engine_model"]:
        raise ParityError("--engine vllm needs --model PATH: the model folder the engine loads")
    return run_engine(ctx, engine, values)


offline.params.extend(ENGINE_PARAMS)
offline.callback = _callback


def run_engine(ctx: click.Context, engine: dict[str, Any], values: dict[str, Any]) -> int:
    """Measure the engine's sweep, then the step model of the same config; print and write both."""
    from parity.cli.option_flags import given_options
    from parity.cli.output import write_json
    from parity.cli.runs import stdout_console
    from parity.families.decode.engine import EngineOptions, model_shape, open_engine
    from parity.families.decode.engine_summary import measure_engine, summarize_engine
    from parity.families.decode.engine_view import render_engine
    from parity.families.decode.options import DecodeOptions
    from parity.device import get_device

    given = given_options(ctx, DecodeOptions, values)
    defaults = DecodeOptions()
    shape = model_shape(engine["engine_model"])
    options = EngineOptions(engine=engine["engine"], model=str(Path(engine["engine_model"]).resolve()),
                            batches=tuple(given.get("batches", defaults.batches)),
                            input_tokens=engine["input_tokens"], output_tokens=engine["output_tokens"],
                            cards=int(given.get("cards", defaults.cards)),
                            tpot_ms=tuple(given.get("tpot_ms", defaults.tpot_ms)),
                            dtype=str(given.get("dtype", defaults.dtype)), seed=int(given.get("seed", defaults.seed)))

    def note(line: str) -> None:
        click.echo(f"parity decode offline --engine {options.engine}: {line}", err=True)

    note(f"loading {options.model} (batches {', '.join(map(str, options.batches))})")
    loaded = open_engine(options, shape)
    try:
        results = measure_engine(loaded.generate, options=options, vocab=shape["vocab"],
                                 device=get_device("cpu"), progress=note)
    finally:
        loaded.close()
    summary = summarize_engine(results, options=options, engine_version=loaded.version,
                               engine_args=loaded.engine_args).to_dict()
    step = _step_model(shape, given, options, values) if engine["step_model"] else None
    console = stdout_console(values.get("json_path"))
    console.print(render_engine(summary, step_model=step))
    ok = not summary["failed"] and bool(summary["points"])
    write_json(values.get("json_path"), "decode-offline-engine", {
        "engine": summary, "cases": [r.to_dict() for r in results], "step_model": step, "ok": ok})
    return 0 if ok else 1


def _step_model(shape: dict[str, Any], given: dict[str, Any], options: Any, values: dict[str, Any]) -> dict[str, Any]:
    """parity's step model of the engine's config: a run of suite decode, stored, its summary."""
    from parity.cli.suite_command import _measure_here, family_payload
    from parity.families.decode.engine import step_model_toml
    from parity.store import Store

    folder = Path(tempfile.mkdtemp(prefix="parity-engine-config-"))
    config = folder / f"{shape['name']}.toml"
    config.write_text(step_model_toml(shape))
    step_options = {**given, "config": str(config), "batches": list(options.batches),
                    "context": given.get("context", options.input_tokens + options.output_tokens // 2)}
    with Store.open(values.get("db_path")) as store:
        db = str(store.path)
    run_id = _measure_here("decode", step_options, db=db, quick=bool(values.get("quick")),
                           device_name=values.get("device_name"), resume_id=None)
    with Store.open(db) as store:
        payload = family_payload(store, run_id, "decode")
    return {**payload["summary"], "run_id": run_id, "ok": payload["ok"]}
