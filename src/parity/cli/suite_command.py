"""One command per family, made from its suite: ``parity gemm``, ``parity membw``,
``parity latency``, ``parity kernels``, ``parity comm collectives|moe|overlap``,
``parity decode offline``.

Each is built by :func:`family_command` from the suite's typed options (``option_flags``), runs
through the one runner (``parity.harness.runner.run_suites``: in this process, or on ranks by
``parity.cli.run_ranks``), continues an interrupted run with ``--resume RUN_ID``, prints the
family's view of its summary (``parity.report.views.view_for``) and writes one JSON shape
(:func:`family_payload`, documented in docs/cli.md). Nothing here knows a family's keys.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import click

from parity.cli.option_flags import given_options, option_params
from parity.cli.output import json_option, write_json
from parity.cli.runs import db_option, stdout_console
from parity.model.errors import ParityError

DEVICE_HELP = "Device to measure (cuda:0, npu:0, xpu, mps, cpu). Default: the best one here."


@dataclass(frozen=True, kw_only=True)
class FamilyCommand:
    """How one family's command differs from the others: its suite, its ``--quick`` help, whether
    it runs on a group of ranks (and how long a rank waits by default), and hooks. Its flags,
    old spellings included, come from the suite's options type alone.

    ``translate`` rewrites the given options before they are parsed (an old value spelling);
    ``prepare(store, options)`` resolves what needs the store (a stored run to reuse) and
    returns the options the run stores; ``extra`` are the command's own display flags, given to
    the view's ``terminal`` where it takes them by name (``--limit``)."""

    suite: str
    quick_help: str = "Fewer, smaller cases: a smoke run, not a measurement to quote."
    ranks: bool = False
    rank_timeout_s: float = 300.0
    translate: Callable[[dict[str, Any]], dict[str, Any]] | None = None
    prepare: Callable[[Any, dict[str, Any]], dict[str, Any]] | None = None
    extra: Sequence[click.Parameter] = ()


def _common_params(spec: FamilyCommand) -> list[click.Parameter]:
    """``--device``, ``--quick``, ``--resume`` (and the rank flags), then ``--db`` and ``--json``."""
    params: list[click.Parameter] = []
    if spec.ranks:
        params += [
            click.Option(["--nproc"], type=click.IntRange(1), default=1, show_default=True, metavar="N",
                         help="Start N local ranks (one device each; gloo ranks on the CPU)."),
            click.Option(["--join"], is_flag=True, help="Be one rank of the user's torchrun/srun group (multi-node)."),
            click.Option(["--backend"], default=None, metavar="NAME",
                         help="torch.distributed backend (gloo, nccl, hccl, mpi, xccl). Default: the device's."),
            click.Option(["--device", "device_name"], default=None, metavar="DEV",
                         help="Device type per rank (cuda, npu, cpu; rank r takes index r). Default: the best one."),
            click.Option(["--rank-timeout", "step_timeout_s"], type=click.FloatRange(1.0),
                         default=spec.rank_timeout_s, show_default=True, metavar="SECONDS",
                         help="How long a rank waits for the others before naming the one that died or hangs."),
            click.Option(["--topology"], default=None, metavar="NODESxRANKS",
                         help="Declare the nodes (2x4: ranks 0-3 on node 0, 4-7 on node 1). Default: each "
                              "rank's host and network namespace, as the launcher placed it."),
        ]
    else:
        params.append(click.Option(["--device", "device_name"], default=None, metavar="DEV", help=DEVICE_HELP))
    params += [
        click.Option(["--quick"], is_flag=True, help=spec.quick_help),
        click.Option(["--resume", "resume_id"], default=None, metavar="RUN_ID",
                     help="Continue an interrupted run of this command: measure only the cases it lacks."),
        click.Option(["--strict"], is_flag=True,
                     help="Exit 1 when the run is DOUBTFUL too: a figure that cannot be true (invalid) or "
                          "was measured while others used the machine (contended)."),
    ]
    return params


def family_command(spec: FamilyCommand, *, help: str, group: bool = False,  # noqa: A002 - click's word
                   name: str | None = None) -> click.Command:
    """The click command of ``spec``'s family, its flags made from the suite's options type;
    with ``group`` a group that runs the family when no subcommand is given."""
    from parity.harness.registry import get_suite

    options_type = get_suite(spec.suite).options_type
    params = [*option_params(options_type), *spec.extra, *_common_params(spec)]

    def callback(**values: Any) -> int | None:
        ctx = click.get_current_context()
        if group and ctx.invoked_subcommand is not None:
            return None
        options = given_options(ctx, options_type, values)
        if spec.translate is not None:
            options = spec.translate(options)
        common = {key: values.get(key) for key in ("device_name", "quick", "resume_id", "db_path", "json_path",
                                                   "strict")}
        extra = {str(p.name): values.get(str(p.name)) for p in spec.extra}
        if spec.ranks:
            ranks = {key: values[key] for key in ("nproc", "join", "backend", "step_timeout_s", "topology")}
            return run_family(spec, options, given=_given_flags(ctx, keep=extra), ranks=ranks, extra=extra, **common)
        return run_family(spec, options, given=_given_flags(ctx, keep=extra), extra=extra, **common)

    cls = click.Group if group else click.Command
    kwargs: dict[str, Any] = {"invoke_without_command": True} if group else {}
    command = cls(name or spec.suite, params=params, callback=callback, help=help, **kwargs)
    for decorate in (db_option, json_option):  # the same --db and --json as every command
        command = decorate(command)
    return command


# Flags that say where and how to run or show a run, not what it measures: kept on --resume.
KEPT_ON_RESUME = ("resume_id", "db_path", "json_path", "device_name", "step_timeout_s", "nproc", "join", "backend",
                  "strict", "topology")


def _given_flags(ctx: click.Context, *, keep: dict[str, Any]) -> list[str]:
    """The flags the user gave that would change what a run measures (refused by ``--resume``);
    ``keep`` are the command's own display flags."""
    flags = []
    for param in ctx.command.params:
        if not isinstance(param, click.Option) or param.name in KEPT_ON_RESUME or param.name in keep:
            continue
        if ctx.get_parameter_source(str(param.name)) not in (None, click.core.ParameterSource.DEFAULT):
            flags.append(param.opts[0])
    return flags


def run_family(spec: FamilyCommand, options: dict[str, Any], *, given: list[str], device_name: str | None,
               quick: bool, resume_id: str | None, db_path: str | None, json_path: str | None,
               ranks: dict[str, Any] | None = None, extra: dict[str, Any] | None = None, strict: bool = False) -> int:
    """Measure (or continue) the family's run, print its view, write ``--json``; the exit status
    (1 when it FAILED, or with ``strict`` when it is DOUBTFUL)."""
    from parity.store import Store

    name = spec.suite
    with Store.open(db_path) as store:
        db = str(store.path)
        if resume_id is not None:
            stored = _resume(store, name, resume_id, given=given)
            if stored is None:
                return 0
            resume_id, options, quick, stored_device, world = stored
            device_name = device_name or stored_device
            if ranks is not None and not ranks["join"]:
                ranks = {**ranks, "nproc": world or ranks["nproc"]}
        elif spec.prepare is not None:
            options = spec.prepare(store, options)
    if ranks is not None:
        run_id = _measure_on_ranks(name, options, db=db, quick=quick, device_name=device_name,
                                   resume_id=resume_id, **ranks)
        if run_id is None:
            return 0  # a joined rank other than 0: rank 0 reports
    else:
        run_id = _measure_here(name, options, db=db, quick=quick, device_name=device_name, resume_id=resume_id)
    with Store.open(db) as store:
        payload = family_payload(store, run_id, name)
    from parity.cli.family_view import print_family

    print_family(stdout_console(json_path), payload, db=db, extra=extra or {})
    write_json(json_path, name, payload)
    return 0 if payload["ok"] and not (strict and payload["doubtful"]["figures"]) else 1


def _resume(store: Any, name: str, resume_id: str, *, given: list[str]) -> tuple[Any, ...] | None:
    """The stored run's id, options, mode, device and rank count; None (said) when complete."""
    from parity.cli.run import nothing_to_resume
    from parity.cli.run_ranks import stored_world_size

    if given:
        raise ParityError(f"--resume continues a run with its stored settings; drop {', '.join(given)}")
    run = store.get_run(resume_id)
    suites = list(run.config.get("suites", []))
    if suites != [name]:
        measured = ", ".join(suites) or "nothing"
        raise ParityError(f"run {run.run_id} measured {measured}, not {name} alone; "
                          f"resume it with 'parity run --resume {run.run_id}'")
    if run.status == "complete":
        click.echo(nothing_to_resume(run.run_id))
        return None
    return (run.run_id, dict(run.config.get("options", {}).get(name, {})), bool(run.config.get("quick", False)),
            run.config.get("device"), stored_world_size(run))


def _measure_here(name: str, options: dict[str, Any], *, db: str, quick: bool, device_name: str | None,
                  resume_id: str | None) -> str:
    """The run on one device in this process, with live progress; its id."""
    from parity.cli.progress import ProgressRenderer
    from parity.device import get_device
    from parity.harness.registry import get_suite
    from parity.harness.runner import run_suites
    from parity.store import Store

    device = get_device(device_name)
    with Store.open(db) as store:
        renderer = ProgressRenderer(label=f"parity {name}")
        started: dict[str, str] = {}

        def progress(event: Any) -> None:
            if event.phase == "start":
                started["run_id"] = event.run_id
                renderer.note(f"run {event.run_id} on {device.name} (store {store.path})")
                if not (sensors := device.power_sensors()).sources:  # energy: measured or not claimed
                    renderer.note(sensors.describe())
            renderer(event)

        try:
            with renderer:
                outcome = run_suites(store, device=device, suites=[get_suite(name)], quick=quick,
                                     options={name: options}, resume_run_id=resume_id, progress=progress)
        except KeyboardInterrupt:
            if started:
                click.echo(f"parity: continue with: parity {_command_path(name)} --resume {started['run_id']}",
                           err=True)
            raise
    return outcome.run.run_id


def _command_path(name: str) -> str:
    ctx = click.get_current_context(silent=True)
    return ctx.command_path.removeprefix("parity ") if ctx is not None else name


def _measure_on_ranks(name: str, options: dict[str, Any], *, db: str, quick: bool, device_name: str | None,
                      resume_id: str | None, nproc: int, join: bool, backend: str | None,
                      step_timeout_s: float, topology: str | None = None) -> str | None:
    """The run on ``nproc`` local ranks (or as one rank of the user's launcher); rank 0's run id."""
    from parity.cli.run_ranks import measure_on_ranks

    if join and nproc != 1 and resume_id is None:
        raise ParityError("--join takes the ranks its launcher started; drop --nproc")
    return measure_on_ranks(ranks=nproc, join=join, db=db, suites=[name], quick=quick, options={name: options},
                            device_name=device_name, resume_id=resume_id, step_timeout_s=step_timeout_s,
                            backend=backend, topology=topology)


def family_payload(store: Any, run_id: str, name: str) -> dict[str, Any]:
    """The JSON document of every family command, read back from the store (docs/cli.md):
    ``run_id``, ``suite``, ``ok``, ``quick``, ``device``, ``options`` (as stored: only those that
    differ from the defaults), ``summary`` (the suite's stored summary), ``summary_error``,
    ``figures`` (each ``Figure.to_dict()``, its ``findings`` included), ``counts`` (cases,
    failed, errors, contended, concurrent), ``doubtful`` (``figures``: how many cannot be
    trusted, ``by_reason``: how many are ``invalid``, ``contended``), ``cases`` (each
    ``CaseResult.to_dict()``) and ``provenance``."""
    run = store.get_run(run_id)
    outcome = run.summary.get("suites", {}).get(name, {})
    summary = dict(outcome.get("summary") or {})
    error = outcome.get("summary_error")
    ok = bool(outcome.get("ok")) and error is None and summary.get("ok") is not False
    return {
        "run_id": run.run_id,
        "suite": name,
        "ok": ok,
        "quick": bool(run.config.get("quick", False)),
        "device": run.config.get("device") or (run.provenance.get("device") or {}).get("name"),
        "options": dict(run.config.get("options", {}).get(name, {})),
        "summary": summary,
        "summary_error": error,
        "figures": list(outcome.get("figures") or []),
        "counts": {key: int(outcome.get(key) or 0)
                   for key in ("cases", "failed", "errors", "contended", "concurrent")},
        "doubtful": _doubtful(outcome.get("doubtful")),
        "cases": [c.to_dict() for c in store.cases(run.run_id, name)],
        "provenance": run.provenance,
    }


def _doubtful(stored: Any) -> dict[str, Any]:
    """A suite's stored ``doubtful`` counts (none for a run stored before they were kept)."""
    stored = stored if isinstance(stored, dict) else {}
    by_reason = stored.get("by_reason") if isinstance(stored.get("by_reason"), dict) else {}
    return {"figures": int(stored.get("figures") or 0), "by_reason": {str(k): int(v) for k, v in by_reason.items()}}
