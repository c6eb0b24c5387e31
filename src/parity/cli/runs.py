"""``parity runs``: list, show and export the runs in the results store."""

from __future__ import annotations

import sys
from datetime import datetime
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.table import Table
from rich.text import Text

from parity.cli.output import json_option, write_json
from parity.model.errors import ParityError
from parity.store import EXPORT_FORMATS, Store
from parity.store.liveness import run_state

PIPE_WIDTH = 120


def db_option(function):
    """``--db PATH``: the results store (default ``$PARITY_DB``, else the user data directory)."""
    return click.option(
        "--db",
        "db_path",
        type=click.Path(dir_okay=False),
        default=None,
        help="Results store (SQLite). Default: $PARITY_DB, else results.sqlite in the user data "
        "directory.",
    )(function)


def stdout_console(json_path: str | None) -> Console:
    """Where human output goes: standard output, or standard error when JSON takes stdout.

    Off a terminal (logs, pipes) tables get 120 columns instead of rich's 80, so run ids and
    headlines are not cut.
    """
    console = Console(stderr=json_path == "-", highlight=False)
    if not console.is_terminal:
        console.width = PIPE_WIDTH
    return console


# Suite options that tell runs of one suite apart in the list (the rest is in --json).
LISTED_OPTIONS = ("dtype", "backends", "shapes", "ceiling_from", "ops", "max_bytes", "flush", "pages")


# Method labels of serving runs (parity decode online, imported vllm/InferenceX results).
LISTED_LABELS = ("source", "backend", "endpoint_type", "hw", "tokens")


def run_mode(config: dict[str, Any]) -> str:
    """``online`` (a serving run) or another stored mode, else ``quick`` or ``full``."""
    return str(config.get("mode") or ("quick" if config.get("quick") else "full"))


def distinguishing_options(config: dict[str, Any]) -> dict[str, Any]:
    """``suite.key: value`` for the stored options in ``LISTED_OPTIONS`` (lists joined by commas),
    then a serving run's method labels in ``LISTED_LABELS``."""
    out: dict[str, Any] = {}
    labels = config.get("labels") if isinstance(config.get("labels"), dict) else {}
    out.update({key: labels[key] for key in LISTED_LABELS if labels.get(key) is not None})
    for suite, values in (config.get("options") or {}).items():
        for key in LISTED_OPTIONS:
            value = (values or {}).get(key)
            if value is None or value == [] or value == ():
                continue
            out[f"{suite}.{key}"] = ",".join(map(str, value)) if isinstance(value, (list, tuple)) else value
    return out


def _short_time(iso: str) -> str:
    try:
        return datetime.fromisoformat(iso).astimezone().strftime("%Y-%m-%d %H:%M")
    except ValueError:
        return iso


@click.group()
def runs() -> None:
    """List, show and export the runs in the results store.

    \b
    Example:
      parity runs list
      parity runs show latest
      parity runs export latest --format parquet --output h200.parquet
    """


@runs.command("list")
@click.option(
    "--limit",
    type=click.IntRange(min=1), metavar="N",
    default=20,
    show_default=True,
    help="Show at most this many runs, newest first.",
)
@db_option
@json_option
def list_runs(limit: int, db_path: str | None, json_path: str | None) -> None:
    """List stored runs, newest first: status (a running run whose process is gone is
    interrupted), device (or served model), suites, quick, full or online, the options that tell
    runs apart (for serving runs their method labels: source, backend...), case counts.

    \b
    Example:
      parity runs list --limit 5
      parity runs list --db results.sqlite --json runs.json
    """
    with Store.open(db_path, read_only=True) as store:
        records = store.list_runs(limit=limit)
        counts = store.case_counts()
        path = store.path
    entries: list[dict[str, Any]] = []
    table = Table(title=f"runs in {path}", title_justify="left")
    for column in ("run", "created", "status", "device", "suites", "mode", "options", "cases", "not ok"):
        table.add_column(
            column,
            justify="right" if column in ("cases", "not ok") else "left",
            no_wrap=column in ("run", "created", "status"),
        )
    for run in records:
        count = counts.get(run.run_id)
        total, failed = (count.total, count.failed) if count else (0, 0)
        state = run_state(run)
        mode = run_mode(run.config)
        entries.append(
            {
                "run_id": run.run_id,
                "created_at": run.created_at,
                "status": run.status,
                "state": state,
                "mode": mode,
                "options": distinguishing_options(run.config),
                "config": run.config,
                "ok": run.summary.get("ok"),
                "cases": total,
                "not_ok": failed,
            }
        )
        table.add_row(
            run.run_id,
            _short_time(run.created_at),
            state,
            str(run.config.get("device", "?")),
            ",".join(run.config.get("suites", [])),
            mode,
            Text(" ".join(f"{k}={v}" for k, v in distinguishing_options(run.config).items())),  # not markup
            str(total),
            str(failed),
            style=None if failed == 0 else "red",
        )
    console = stdout_console(json_path)
    if records:
        console.print(table)
    else:
        console.print(f"no runs in {path} yet; start one with: parity run --quick", markup=False)
    write_json(json_path, "run-list", {"db": str(path), "runs": entries})


@runs.command("show")
@click.argument("run_id")
@click.option("--limit", type=click.IntRange(min=0), metavar="N", default=200, show_default=True,
              help="Case rows shown (all of them in --json).")
@db_option
@json_option
def show_run(run_id: str, limit: int, db_path: str | None, json_path: str | None) -> None:
    """Show one run's summary table, each suite's summary as its family draws it, a table of
    its cases, and provenance highlights.

    RUN_ID is a run id, a unique prefix of one, or 'latest'. The JSON holds the run with its
    full provenance and every case with its raw samples.

    \b
    Example:
      parity runs show latest
      parity runs show 20261129-2303 --json run.json
    """
    from parity.report.cases import case_table
    from parity.report.run_summary import render_run_summary
    from parity.report.views import print_view, suite_details

    with Store.open(db_path, read_only=True) as store:
        run = store.get_run(run_id)
        cases = store.cases(run.run_id)
    console = stdout_console(json_path)
    state = run_state(run)
    if state != run.status:
        console.print(f"run {run.run_id} is {state}: its process is gone; continue it with "
                      f"{resume_command(run)} {run.run_id}" if state == "interrupted" else f"run {run.run_id}: {state}",
                      style="yellow", markup=False)
    console.print(render_run_summary(run, cases))
    for drawn in suite_details(run):
        print_view(console, drawn)
    if cases:
        console.print(case_table(cases, limit=limit))
    console.print(_provenance_line(run.provenance), style="dim")
    write_json(
        json_path,
        "run",
        {"run": run.to_dict(), "state": state, "cases": [c.to_dict() for c in cases], "ok": run.summary.get("ok")},
    )


def resume_command(run: Any) -> str:
    """The command that continues an interrupted run: an online sweep's own, else parity run's."""
    return "parity decode online --resume" if isinstance(run.config.get("online"), dict) else "parity run --resume"


def _provenance_line(provenance: dict[str, Any]) -> str:
    keys = [k for k in provenance if k != "resumes"]
    resumes = len(provenance.get("resumes", []))
    resumed = f"; resumed {resumes} time(s)" if resumes else ""
    return f"provenance: {', '.join(keys) or 'none'}{resumed} (all of it with --json)"


@runs.command("export")
@click.argument("run_id")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(EXPORT_FORMATS),
    default="json",
    show_default=True,
    help="json: the full run; csv, parquet: one row per case (or per figure, with --table figures).",
)
@click.option("--table", type=click.Choice(("cases", "figures")), default="cases", show_default=True,
              help="csv, parquet: one row per case with its figures, or one row per stored figure.")
@click.option(
    "--output",
    "-o",
    "output",
    type=click.Path(dir_okay=False, allow_dash=True),
    default=None,
    help="Where to write ('-' for stdout, json and csv). "
    "Default: parity-RUN_ID.FORMAT in the current directory.",
)
@db_option
@json_option
def export_run(
    run_id: str, fmt: str, table: str, output: str | None, db_path: str | None, json_path: str | None
) -> None:
    """Export a run for DuckDB, Spark or pandas: JSON, CSV or Parquet (parity[parquet]).

    \b
    Example:
      parity runs export latest --format csv --output run.csv
      duckdb -c "select suite, key, ok from 'run.csv'"
      parity runs export 20261129-2303 --format parquet --json export.json
      parity runs export latest --format csv --table figures --output figures.csv
    """
    from parity.store.export import export_bytes, write_export

    with Store.open(db_path, read_only=True) as store:
        run = store.get_run(run_id)
        cases = store.cases(run.run_id)
        figures = store.figures(run.run_id)
    target = output or str(_default_export_path(run.run_id, fmt))
    if target == "-":
        sys.stdout.buffer.write(export_bytes(run, cases, fmt=fmt, figures=figures, table=table))
        sys.stdout.flush()
        written: Path | None = None
    else:
        written = write_export(run, cases, fmt=fmt, path=target, figures=figures, table=table)
        click.echo(
            f"wrote {len(cases)} cases of run {run.run_id} to {written}", err=json_path == "-"
        )
    write_json(
        json_path,
        "run-export-result",
        {
            "run_id": run.run_id,
            "format": fmt,
            "path": str(written) if written else "-",
            "cases": len(cases),
        },
    )


def _default_export_path(run_id: str, fmt: str) -> Path:
    """``parity-RUN_ID.FORMAT`` in the current folder; a stored id that is not an id cannot name it."""
    from parity.model.ids import file_in

    try:
        return file_in(".", f"parity-{run_id}", f".{fmt}")
    except ValueError as exc:
        raise ParityError(f"{exc}; give the file with --output") from None


@runs.command("import")
@click.argument("path", type=click.Path(dir_okay=False))
@click.option("--as-new", is_flag=True,
              help="Import under a new run id when the file's id is already in the store.")
@db_option
@json_option
def import_run(path: str, as_new: bool, db_path: str | None, json_path: str | None) -> None:
    """Import a run exported on another machine (parity runs export RUN --format json).

    The file's schema version and kind are checked and every case is parsed before anything is
    written; the run keeps its id (refused when the store has it, unless --as-new), config,
    provenance, summary and every case with its raw samples.

    \b
    Example:
      parity runs export latest --format json --output h200.json     # on the H200 host
      parity runs import h200.json --db laptop.sqlite                # on the laptop
      parity compare 20261129-2303-a1b2 latest --db laptop.sqlite
    """
    from parity.store.runs_import import read_export, write_run

    export = read_export(path)  # checked whole before the store is even opened
    with Store.open(db_path) as store:
        imported = write_run(store, export, source=path, as_new=as_new)
        where = store.path
    renamed = "" if imported.run_id == imported.original_id else f" (was {imported.original_id})"
    click.echo(f"imported run {imported.run_id}{renamed} with {imported.cases} cases into {where}",
               err=json_path == "-")
    write_json(json_path, "run-import", {"run_id": imported.run_id, "original_id": imported.original_id,
                                         "cases": imported.cases, "db": str(where), "source": path})
