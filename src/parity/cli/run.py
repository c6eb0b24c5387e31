"""``parity run``: measure the registered suites on one device into the results store."""

from __future__ import annotations

from typing import Any

import click
import orjson

from parity.harness.coordination import DEFAULT_STEP_TIMEOUT_S
from parity.cli.option_flags import AVAILABILITY_CHOICE, AVAILABILITY_HELP, LABEL_HELP
from parity.cli.output import json_option, write_json
from parity.cli.progress import ProgressRenderer
from parity.cli.runs import db_option, stdout_console
from parity.harness.run_record import new_group_id, run_tags, tag_run
from parity.model.errors import ParityError
from parity.store import Store


def parse_settings(settings: tuple[str, ...]) -> dict[str, dict[str, Any]]:
    """``SUITE.KEY=VALUE`` items into ``{suite: {key: value}}``; VALUE is JSON when it parses
    (``3``, ``0.5``, ``true``, ``["bf16","fp32"]``), else kept as text."""
    options: dict[str, dict[str, Any]] = {}
    for item in settings:
        name, sep, raw = item.partition("=")
        suite, dot, key = name.partition(".")
        if not sep or not dot or not suite or not key:
            raise ParityError(f"--set {item!r}: expected SUITE.KEY=VALUE, e.g. gemm.dtype=bf16")
        try:
            value: Any = orjson.loads(raw)
        except orjson.JSONDecodeError:
            value = raw
        options.setdefault(suite.strip(), {})[key.strip()] = value
    return options


def _check_settings(
    options: dict[str, dict[str, Any]], *, selected: list[str]
) -> dict[str, dict[str, Any]]:
    """Refuse options for unknown suites and unknown keys (typos); drop, with a note, those for
    known suites that are not selected. Keys and values are checked against each suite's typed
    options, so a mistake is a one-line error before anything is measured."""
    from parity.harness.options import parse_options
    from parity.harness.registry import get_suite, names

    known = names()
    kept: dict[str, dict[str, Any]] = {}
    for suite, values in options.items():
        if suite not in known:
            raise ParityError(
                f"--set names unknown suite {suite!r}; known suites: {', '.join(known)}"
            )
        parse_options(get_suite(suite).options_type, values, suite=suite)
        if suite not in selected:
            click.echo(
                f"parity: note: --set {suite}.* ignored, suite {suite} is not selected", err=True
            )
            continue
        kept[suite] = values
    return kept


class _RunCommand(click.Command):
    """``parity run``, whose help ends with every registered suite's option keys."""

    def format_epilog(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        super().format_epilog(ctx, formatter)
        from parity.harness.options import describe_options
        from parity.harness.registry import get_suite, names

        with formatter.section("Suite options (--set SUITE.KEY=VALUE)"):
            for name in names():
                try:
                    infos = describe_options(get_suite(name).options_type)
                except ParityError as exc:
                    formatter.write_text(f"{name}: unavailable ({exc})")
                    continue
                formatter.write_dl([(f"{name}.{i.key}", i.line().split(": ", 1)[1]) for i in infos])


def nothing_to_resume(run_id: str) -> str:
    """What ``--resume`` says about a run that is already complete (and does not count a resume)."""
    return f"run {run_id} is complete: nothing to resume (see it with parity runs show {run_id})"


def _resume_settings(
    store: Store, run_id: str, *, suites: tuple[str, ...], quick: bool, settings: tuple[str, ...]
) -> tuple[str, dict[str, Any]]:
    """The stored run's id and config; refuses flags that would change what it measures."""
    run = store.get_run(run_id)
    given = [
        flag
        for flag, used in (("--suite", suites), ("--quick", quick), ("--set", settings))
        if used
    ]
    if given:
        raise ParityError(
            f"--resume continues run {run.run_id} with its stored settings; drop {', '.join(given)}"
        )
    return run.run_id, dict(run.config)


@click.command(cls=_RunCommand)
@click.option("--quick", is_flag=True, help="Fewer, smaller cases: a smoke run, not a measurement to quote.")
@click.option(
    "--device",
    "device_name",
    default=None,
    metavar="DEV",
    help="Device to measure (cuda:0, npu:0, xpu, mps, cpu). Default: the best one here.",
)
@click.option(
    "--suite",
    "suite_names",
    multiple=True,
    metavar="NAMES",
    help="Suites to run, comma-separated or repeated. Default: all registered.",
)
@click.option(
    "--set",
    "settings",
    multiple=True,
    metavar="SUITE.KEY=VALUE",
    help="A suite option, repeatable; VALUE is read as JSON when it parses. Keys: see below.",
)
@click.option(
    "--resume",
    "resume_id",
    default=None,
    metavar="RUN_ID",
    help="Continue a run that was interrupted: measure only the cases it lacks.",
)
@click.option("--ranks", type=click.IntRange(1), default=None, metavar="N",
              help="Measure on N local ranks that parity starts (torch.distributed; gloo on the CPU, "
                   "one GPU per rank). Every rank measures, time is the maximum over ranks.")
@click.option("--join", is_flag=True,
              help="Be one rank of a group the user's torchrun or srun started; rank 0 writes the store.")
@click.option("--rank-timeout", "step_timeout_s", type=click.FloatRange(1.0), default=DEFAULT_STEP_TIMEOUT_S, show_default=True,
              metavar="SECONDS", help="With ranks: how long a rank waits for the others at a step before "
                                      "naming the rank that died or hangs.")
@click.option("--endpoint", "endpoint_url", default=None, metavar="URL",
              help="Hand the suites an OpenAI-compatible server (vLLM, SGLang, TGI) at URL instead of a local "
                   "device: for suites written to measure one (a plugin's; the built-in suites measure a device). "
                   "parity decode online sweeps a served model.")
@click.option("--model", default=None, metavar="NAME",
              help="With --endpoint: the served model (default: the only one the server lists).")
@click.option("--api-key-env", default=None, metavar="VAR",
              help="With --endpoint: the environment variable holding the API key (never stored).")
@click.option("--strict", is_flag=True,
              help="Exit 1 when the run is DOUBTFUL too: a figure that cannot be true (invalid) or was "
                   "measured while others used the machine (contended).")
@click.option("--no-report", is_flag=True,
              help="Skip the HTML report written at the end (reports/RUN_ID.html next to the store).")
@click.option("--repeat", type=click.IntRange(1, 100), default=1, show_default=True, metavar="N",
              help="Measure N times, each a stored run of one repeat group (config group and repeat); "
                   "compare groups with parity compare group:ID group:ID for a between-run CI.")
@click.option("--label", default=None, metavar="TEXT", help=LABEL_HELP)
@click.option("--availability", type=AVAILABILITY_CHOICE, default=None, help=AVAILABILITY_HELP)
@db_option
@json_option
def run(
    quick: bool,
    device_name: str | None,
    suite_names: tuple[str, ...],
    settings: tuple[str, ...],
    resume_id: str | None,
    ranks: int | None,
    join: bool,
    step_timeout_s: float,
    endpoint_url: str | None,
    model: str | None,
    api_key_env: str | None,
    strict: bool,
    no_report: bool,
    repeat: int,
    label: str | None,
    availability: str | None,
    db_path: str | None,
    json_path: str | None,
) -> int:
    """Measure the registered benchmarks on one device, store every case as it is measured,
    and print a summary with an overall OK, DOUBTFUL (figures that cannot be trusted: exit
    status 1 with --strict) or FAILED (exit status 1). It ends by writing the
    run's HTML report next to the store (reports/RUN_ID.html) and says where; --no-report skips it.

    A run killed at any moment keeps every finished case; continue it with --resume.

    \b
    Example:
      parity run --quick
      parity run --device cuda:0 --suite gemm,membw --json run.json
      parity run --suite gemm --set gemm.dtype=fp32 --set gemm.backends=matmul,linear
      parity run --resume 20261129-230512-a3f9
      parity run --suite membw --quick --repeat 3 --label "before the BIOS update"
      parity run --quick --availability preview
      parity run --ranks 2 --device cpu --suite collectives --quick
      torchrun --nproc-per-node 8 -m parity run --join --device cuda --suite collectives
      parity decode online --url http://127.0.0.1:8000 --model my-model --concurrency 1,8
    """
    from parity.harness.registry import resolve
    from parity.cli.run_ranks import stored_world_size

    if join and ranks is not None:
        raise ParityError("--join takes the ranks its launcher started; drop --ranks")
    if repeat > 1 and (resume_id is not None or join):
        raise ParityError("--repeat makes new runs; drop --resume or --join (or --repeat)")
    if resume_id is not None and label is not None:
        raise ParityError(f"--resume continues run {resume_id} with its stored label; drop --label")
    tags = {**run_tags(label=label), **({"availability": availability} if availability else {})}
    if endpoint_url is None and (model or api_key_env):
        raise ParityError("--model and --api-key-env go with --endpoint URL; give the server's URL")
    with Store.open(db_path) as store:
        options = parse_settings(settings)
        if resume_id is not None:
            resume_id, config = _resume_settings(
                store, resume_id, suites=suite_names, quick=quick, settings=settings
            )
            if store.get_run(resume_id).status == "complete":
                click.echo(nothing_to_resume(resume_id))
                return 0
            suite_names = tuple(config.get("suites", []))
            quick = bool(config.get("quick", False))
            options = dict(config.get("options", {}))
            device_name = device_name or config.get("device")
            ranks = ranks or (None if join else stored_world_size(store.get_run(resume_id)))
            stored_endpoint = config.get("endpoint") or {}
            endpoint_url = endpoint_url or stored_endpoint.get("url")
            model = model or stored_endpoint.get("model")
        suites = resolve(list(suite_names))
        left_out: dict[str, str] = {}
        if not suite_names and not join:  # every suite: those this run has too few ranks for are left out
            suites, left_out = suites_for_ranks(suites, ranks or 1)
        options = _check_settings(options, selected=[s.name for s in suites])
        for name, reason in left_out.items():
            click.echo(f"parity: {name} left out: {reason}", err=True)
        if left_out:
            tags["left_out"] = left_out
        if "gemm" in options:
            from parity.families.gemm.stored_ceiling import attach_stored_ceiling

            options["gemm"] = attach_stored_ceiling(store, options["gemm"])
        db = str(store.path)
    endpoint = _probe(endpoint_url, model, api_key_env) if endpoint_url else None
    if endpoint is not None and (join or (ranks or 1) > 1):
        raise ParityError("a remote endpoint is measured from one client process; drop --ranks/--join")
    group_id = new_group_id() if repeat > 1 else None
    statuses, payloads = [], []
    for index in range(repeat):
        if group_id is not None:
            click.echo(f"parity: repeat {index + 1} of {repeat} (group {group_id})", err=True)
        run_tags_here = {**tags, **run_tags(group=group_id, index=index, of=repeat)}
        status, payload = _measure_once(db, suites=suites, quick=quick, options=options, device_name=device_name,
                                        resume_id=resume_id, ranks=ranks, join=join, step_timeout_s=step_timeout_s,
                                        endpoint=endpoint, html=not no_report, strict=strict, tags=run_tags_here,
                                        json_path=json_path if repeat == 1 else None)
        statuses.append(status)
        if payload is not None:
            payloads.append(payload)
    if repeat > 1:
        click.echo(f"parity: {repeat} runs in group {group_id}; compare with: parity compare group:{group_id} "
                   "group:OTHER", err=True)
        write_json(json_path, "runs", {"group": group_id, "runs": payloads, "ok": not any(statuses)})
    return max(statuses)


def suites_for_ranks(suites: list[Any], ranks: int) -> tuple[list[Any], dict[str, str]]:
    """``suites`` a run of ``ranks`` ranks measures, and the others (a suite's ``min_ranks``
    above ``ranks``) as name -> why it is left out and the command that measures it."""
    kept, left_out = [], {}
    for suite in suites:
        needs = getattr(suite, "min_ranks", 1)  # a suite not built on SuiteBase measures on one rank
        if needs <= ranks:
            kept.append(suite)
        else:
            left_out[suite.name] = (f"it needs {needs} ranks or more and this run has {ranks} "
                                    f"(parity run --ranks {needs} --suite {suite.name})")
    return kept, left_out


def _measure_once(db: str, *, suites: list[Any], quick: bool, options: dict[str, Any], device_name: str | None,
                  resume_id: str | None, ranks: int | None, join: bool, step_timeout_s: float, endpoint: Any,
                  html: bool, strict: bool, tags: dict[str, Any], json_path: str | None) -> tuple[int, Any]:
    """One run, in this process or on ranks, tagged with ``tags``; its exit status and the run
    (id, ok) for a repeat group's JSON (None on a joined rank other than 0)."""
    from parity.cli.run_ranks import measure_on_ranks

    if join or (ranks or 1) > 1:
        run_id = measure_on_ranks(ranks=ranks, join=join, db=db, suites=[s.name for s in suites], quick=quick,
                                  options=options, device_name=device_name,
                                  resume_id=resume_id, step_timeout_s=step_timeout_s)
        if run_id is None:
            return 0, None  # a joined rank other than 0: rank 0 reports
        with Store.open(db) as store:
            run_record = tag_run(store, run_id, tags)
            status = _report(store, run_record, store.cases(run_id), json_path=json_path, extra={},
                             html=html, strict=strict)
            return status, {"run_id": run_id, "ok": status == 0}
    return _run_here(db, suites=suites, quick=quick, options=options, device_name=device_name,
                     resume_id=resume_id, json_path=json_path, endpoint=endpoint, html=html, strict=strict,
                     tags=tags)


def _probe(url: str, model: str | None, api_key_env: str | None) -> Any:
    """The endpoint at ``url`` as its server reports it (``GET /v1/models``)."""
    import os

    from parity.ranks import probe_endpoint_blocking

    key = None
    if api_key_env:
        key = os.environ.get(api_key_env)
        if not key:
            raise ParityError(f"--api-key-env {api_key_env}: that variable is not set; export the key in it")
    return probe_endpoint_blocking(url, model, api_key=key)


def _run_here(db: str, *, suites: list[Any], quick: bool, options: dict[str, Any], device_name: str | None,
              resume_id: str | None, json_path: str | None, endpoint: Any = None, html: bool = True,
              strict: bool = False, tags: dict[str, Any] | None = None) -> tuple[int, Any]:
    """The run in this process, on one device or against one endpoint, with live progress."""
    from parity.harness.run_record import declare_availability
    from parity.harness.runner import run_suites
    from parity.device import get_device

    with Store.open(db) as store:
        device = get_device("cpu" if endpoint is not None else device_name)
        renderer = ProgressRenderer(label="parity run")
        started: dict[str, str] = {}

        def progress(event: Any) -> None:
            if event.phase == "start":
                started["run_id"] = event.run_id
                where = endpoint.record().name if endpoint is not None else device.name
                renderer.note(f"run {event.run_id} on {where} (store {store.path})")
                if endpoint is None and not (sensors := device.power_sensors()).sources:
                    renderer.note(sensors.describe())  # energy: measured or not claimed
            renderer(event)

        try:
            with renderer:
                outcome = run_suites(
                    store,
                    device=device,
                    suites=suites,
                    quick=quick,
                    options=options,
                    resume_run_id=resume_id,
                    progress=progress,
                    endpoint=endpoint,
                )
        except KeyboardInterrupt:
            if started:
                click.echo(
                    f"parity: continue with: parity run --resume {started['run_id']}", err=True
                )
            raise
        run_record = tag_run(store, outcome.run.run_id, tags or {})
        status = _report(store, run_record, outcome.cases, json_path=json_path,
                         extra={"measured": outcome.measured, "skipped": outcome.skipped}, html=html, strict=strict)
        return status, {"run_id": run_record.run_id, "ok": status == 0}


def _report(store: Store, run_record: Any, cases: list[Any], *, json_path: str | None,
            extra: dict[str, Any], html: bool = True, strict: bool = False) -> int:
    """Print the run's summary, write the HTML report (unless not ``html``) and ``--json``; the
    exit status (1 when the run FAILED, or with ``strict`` when it is DOUBTFUL)."""
    from parity.report.run_summary import doubtful_counts, render_run_summary, run_ok

    stdout_console(json_path).print(render_run_summary(run_record, cases))
    if html:
        from parity.cli.report import report_after_run

        click.echo(report_after_run(store, run_record, cases), err=json_path == "-")
    ok = run_ok(run_record, cases)
    doubtful, by_reason = doubtful_counts(run_record)
    suites = [{"suite": name, **data} for name, data in run_record.summary.get("suites", {}).items()]
    write_json(
        json_path,
        "run",
        {
            "run": run_record.to_dict(),
            "cases": [c.to_dict() for c in cases],
            "suites": suites,
            "ok": ok,
            "doubtful": {"figures": doubtful, "by_reason": by_reason},
            **extra,
            "db": str(store.path),
        },
    )
    return 0 if ok and not (strict and doubtful) else 1
