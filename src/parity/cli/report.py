"""``parity report``: one self-contained HTML file of stored runs and profiler traces."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import click

from parity.cli.output import json_option, write_json
from parity.cli.runs import db_option
from parity.model.errors import ParityError
from parity.model.ids import file_in
from parity.store import Store


def stored_runs(store: Store, run_ids: tuple[str, ...]) -> list[tuple[Any, list[Any]]]:
    """``(run, cases)`` of each id (``latest`` works), in the order given."""
    out = []
    for run_id in run_ids:
        run = store.get_run(run_id)
        out.append((run, store.cases(run.run_id)))
    return out


def default_report_path(store_path: Path, run_id: str) -> Path:
    """Where ``parity run`` writes its report: ``reports/<run id>.html`` next to the store; a
    run id that is not an id (:mod:`parity.model.ids`: a store written before ids were checked)
    cannot name a file there and is a ParityError, so no report leaves ``reports/``."""
    try:
        return file_in(store_path.parent / "reports", run_id, ".html")
    except ValueError as exc:
        raise ParityError(f"{exc}; write this run's report with parity report RUN_ID -o FILE") from None


def read_comparison(path: str) -> dict[str, Any]:
    """A comparison of runs as JSON (what ``parity compare --json`` writes), checked for the
    fields the report draws."""
    import orjson

    from parity.model.schema import check_version
    from parity.report.comparison_file import check_comparison

    try:
        data = orjson.loads(Path(path).read_bytes())
    except (OSError, orjson.JSONDecodeError) as exc:
        raise ParityError(f"--comparison {path}: cannot read it as JSON ({exc}); give a parity compare --json file") from exc
    if not isinstance(data, dict) or not all(isinstance(data.get(k), list) for k in ("runs", "cases", "audit")):
        raise ParityError(f"--comparison {path}: no runs, cases and audit lists; give a parity compare --json file")
    if "schema_version" in data:
        check_version(data, source=path)
    check_comparison(data, source=path)
    return data


def compared_run_names(db_path: str | None, comparison: dict[str, Any] | None) -> dict[str, str]:
    """The report's labels (``--label``, else a short id) of the runs a comparison file names,
    read from the store where it holds them; {} where it does not (the file's own names stand)."""
    from parity.report.html.chart import run_labels

    ids = [str(r.get("id")) for r in (comparison or {}).get("runs") or [] if isinstance(r, dict) and r.get("id")]
    if not ids:
        return {}
    try:
        with Store.open(db_path, read_only=True) as store:
            runs = [store.get_run(i) for i in ids]
    except (ParityError, OSError, sqlite3.Error):
        return {}
    return dict(zip(ids, run_labels(runs)))


def build_report(*, runs: list[tuple[Any, list[Any]]], trace_paths: tuple[str, ...] = (), rules: str | None = None,
                 output: str | Path, svg_dir: str | None = None, comparison: dict[str, Any] | None = None,
                 fleet_dirs: tuple[str, ...] = (), run_names: dict[str, str] | None = None,
                 screen_rows: int | None = None) -> tuple[dict[str, Any], Path, list[Path]]:
    """Analyse the traces, read the fleet folders, build the report's data, write the HTML (and
    SVGs); returns all three."""
    from parity.report.html import export_svgs, load_trace_input, render_data, report_data, write_report
    from parity.trace.fleet.folder import read_fleet_folder

    fleets = [read_fleet_folder(d) for d in fleet_dirs]
    traces = [load_trace_input(p, rules=rules) for p in trace_paths]
    data = report_data(runs=runs, traces=traces, comparison=comparison, fleets=fleets, run_names=run_names)
    path = write_report(output, render_data(data) if screen_rows is None else render_data(data, screen_rows=screen_rows))
    svgs = export_svgs(data, svg_dir) if svg_dir else []
    return data, path, svgs


def report_after_run(store: Store, run: Any, cases: list[Any]) -> str:
    """Write ``run``'s report next to the store; the line that says where (or why not: a run's
    result never depends on its report)."""
    path = default_report_path(Path(store.path), run.run_id)
    try:
        build_report(runs=[(run, cases)], output=path)
    except ParityError as exc:
        return f"report: not written ({exc})"
    return f"report: {path} (next to the store; parity report {run.run_id} -o FILE writes it elsewhere)"


@click.command()
@click.argument("run_ids", nargs=-1, metavar="[RUN_ID...]")
@click.option("--trace", "trace_paths", multiple=True, type=click.Path(exists=True), metavar="PATH",
              help="A profiler trace (any format parity trace analyze reads) to add: timeline and what-if. Repeatable.")
@click.option("--rules", "rules_path", type=click.Path(exists=True, dir_okay=False),
              help="Category rules (TOML or YAML) for the traces, tried before the defaults.")
@click.option("--fleet", "fleet_dirs", multiple=True, type=click.Path(exists=True, file_okay=False), metavar="DIR",
              help="A fleet output folder (parity trace fleet --out DIR) to draw: rank-by-step heatmap, arrival "
                   "skew per op, straggler vote, per-rank table, with fleet.json's findings. Repeatable.")
@click.option("--comparison", "comparison_path", type=click.Path(exists=True, dir_okay=False), metavar="JSON",
              help="A comparison of runs (parity compare --json) to draw: ratios, summary, fairness audit, claims.")
@click.option("--compare", "compare_runs_given", is_flag=True,
              help="Compare the given runs (two or more, as parity compare does) and draw the ratios and audit.")
@click.option("--force", is_flag=True,
              help="With --compare: compare across conventions (byte conventions, timing, offline vs online), every line marked.")
@click.option("-o", "--output", "output", type=click.Path(dir_okay=False), default="report.html", show_default=True,
              help="The HTML file to write.")
@click.option("--screen-rows", type=click.IntRange(min=0), default=None, metavar="N",
              help="On screen, a table of more than N rows scrolls in its own box (default 400; 0: never). "
                   "Printed, every table is flat: every row, no box.")
@click.option("--svg-dir", type=click.Path(file_okay=False), default=None,
              help="Also write each chart as a static SVG file in this folder.")
@db_option
@json_option
def report(run_ids: tuple[str, ...], trace_paths: tuple[str, ...], fleet_dirs: tuple[str, ...], rules_path: str | None,
           comparison_path: str | None, compare_runs_given: bool, force: bool, output: str, svg_dir: str | None,
           screen_rows: int | None, db_path: str | None, json_path: str | None) -> None:
    """Write one self-contained HTML report (opens offline, no network request of any kind):
    each family's charts as its registered view draws them (roofline and efficiency, bandwidth
    and latency curves, collectives, decode throughput; a family without a view, or not
    installed here, shows its figures and cases as tables), every run's figures and provenance, and for each --trace its window's timeline and what-if
    sensitivity, for each --fleet its rank-by-step heatmap, arrival skew per op, straggler vote
    and per-rank table, and with --comparison the ratios and fairness audit. Without RUN_ID,
    --trace, --fleet or --comparison, the latest run. --json writes the data block (every
    chart's data and tables) as JSON.

    \b
    Example:
      parity report -o report.html
      parity report latest 20261201-222257-b477 --trace rank0.json.gz -o report.html --svg-dir charts/
      parity report latest~1 latest --compare -o comparison.html
      parity report --comparison compare.json -o comparison.html
      parity report --fleet fleet_out/ -o fleet.html
    """
    comparison = read_comparison(comparison_path) if comparison_path else None
    if compare_runs_given and (comparison is not None or len(run_ids) < 2):
        raise ParityError("--compare needs two or more RUN_IDs and no --comparison file; e.g. parity report latest~1 latest --compare")
    if not run_ids and not trace_paths and not fleet_dirs and comparison is None:
        run_ids = ("latest",)
    if run_ids:
        with Store.open(db_path, read_only=True) as store:
            runs = stored_runs(store, run_ids)
            if compare_runs_given:
                from parity.compare import compare_runs

                comparison = compare_runs(store, [run.run_id for run, _ in runs], force=force).to_dict()
    else:
        runs = []
    if len({run.run_id for run, _ in runs}) != len(runs):
        raise ParityError(f"run ids {' '.join(run_ids)} name one run twice; give each run once")
    names = compared_run_names(db_path, comparison) if comparison is not None and not compare_runs_given else {}
    data, path, svgs = build_report(runs=runs, trace_paths=trace_paths, rules=rules_path, output=output,
                                    svg_dir=svg_dir, comparison=comparison, fleet_dirs=fleet_dirs, run_names=names,
                                    screen_rows=screen_rows)
    drawn = sum(1 for c in data["charts"] if c["draw"])
    click.echo(f"report: {path} ({drawn} charts, {len(data['charts']) - drawn} tables-only panels)"
               + (f"; {len(svgs)} SVG files in {svg_dir}" if svg_dir else ""), err=json_path == "-")
    write_json(json_path, "report", {k: v for k, v in data.items() if k not in ("schema_version", "kind")})
