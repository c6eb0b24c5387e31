"""``parity trace fleet``: many ranks' traces analysed together, one rank per task."""

from __future__ import annotations

import time
from dataclasses import asdict, is_dataclass
from typing import Any

import click

from parity.cli.fleet_store import store_after_fleet, store_options
from parity.cli.output import json_option, write_json
from parity.cli.progress import ProgressRenderer
from parity.model.figure import format_seconds


def _eta_callback(renderer: ProgressRenderer, started: float | None = None):
    """``progress(done, total)`` of the map as the renderer's update, with an ETA from the
    mean time per finished rank since ``started`` (``time.perf_counter()``; default now)."""
    started = time.perf_counter() if started is None else started

    def callback(done: int, total: int) -> None:
        elapsed = time.perf_counter() - started
        eta = elapsed / done * (total - done) if done else None
        renderer.update(done=done, total=total, label=f"{done}/{total} ranks", eta_s=eta)

    return callback


class _ShownOnFirstReport:
    """The map's ``progress(done, total)``: the renderer entered at the first finished rank, not
    before the map starts, so that no drawing thread of a terminal's bar runs while the local
    pool forks its workers (a child must not inherit a lock that thread holds)."""

    def __init__(self, renderer: ProgressRenderer) -> None:
        self.renderer = renderer
        self.started = time.perf_counter()  # the ETA counts from the map's start
        self.callback: Any = None

    def __enter__(self) -> _ShownOnFirstReport:
        return self

    def __call__(self, done: int, total: int) -> None:
        if self.callback is None:
            self.callback = _eta_callback(self.renderer.__enter__(), started=self.started)
        self.callback(done, total)

    def __exit__(self, *exc: object) -> None:
        if self.callback is not None:
            self.renderer.__exit__(*exc)


def _document(summary: Any) -> Any:
    """The reduce's summary as JSON-ready data (what fleet.json holds)."""
    if hasattr(summary, "to_json"):
        return summary.to_json()
    return asdict(summary) if is_dataclass(summary) else summary


@click.command()
@click.argument("paths", nargs=-1, required=True)
@click.option("--out", "out_dir", required=True, type=click.Path(file_okay=False),
              help="Folder for the tables: OUT/map/<table>/rank-NNNNNN.parquet per rank, OUT/<table>.parquet "
                   "and OUT/fleet.json for the fleet.")
@click.option("--dask", "scheduler", metavar="SCHEDULER|local", default=None,
              help="Run the tasks on a Dask distributed cluster: a scheduler address (tcp://HOST:8786; its workers "
                   "must see PATH and OUT), or 'local' for a LocalCluster on this machine. Default: a local "
                   "process pool. The tables are the same either way.")
@click.option("--workers", type=click.IntRange(min=1), metavar="N", default=None,
              help="Processes (local pool or LocalCluster workers), one rank each at a time; the local pool has "
                   "min(N, ranks), and with 1 (or one rank) this process maps the ranks itself. Default: the CPUs.")
@click.option("--ranks-per-node", type=click.IntRange(min=1), metavar="N", default=None,
              help="Ranks on one node (node = rank // N): collectives are then intra- or inter-node.")
@click.option("--rules", "rules_path", type=click.Path(exists=True, dir_okay=False),
              help="Category rules (TOML or YAML) tried before the defaults, as for parity trace analyze.")
@store_options
@json_option
def fleet(paths: tuple[str, ...], out_dir: str, scheduler: str | None, workers: int | None,
          ranks_per_node: int | None, rules_path: str | None, store_it: bool, label: str, db_path: str | None,
          json_path: str | None) -> None:
    """Analyse every rank of a job: collectives matched across ranks, arrival skew and stragglers.

    PATH is a rank's trace (Kineto .json/.json.gz, an Ascend *_ascend_pt folder, an Nsight
    Systems .sqlite) or a folder of them. Each rank is read and analysed in its own task, as
    parity trace analyze would, and summarised as Parquet under OUT/map (streams, categories,
    steps and one row per collective); the reduce then matches collectives by process group and
    sequence and writes the fleet's tables and OUT/fleet.json. Progress and an ETA go to stderr.
    Arrival order assumes one clock: a straggler named only at collectives a clock offset
    between ranks can explain (an op that ended before the last member arrived) is marked in doubt.

    \b
    Example:
      parity trace fleet traces/ --out fleet/ --ranks-per-node 8 --json fleet.json
      parity trace fleet traces/ --out fleet/ --dask local --workers 4
      parity trace fleet /shared/job42/ --out /shared/job42-fleet --dask tcp://10.0.0.1:8786
      duckdb -c "SELECT rank, times_last, step_cost_ns FROM 'fleet/stragglers.parquet' ORDER BY times_last DESC LIMIT 10"
      parity trace fleet traces/ --out fleet/ --store --label ep32-step40
    """
    from parity.cli.numpy_load import load_modules

    load_modules("parity.trace.fleet.executor")  # numpy first: no OpenBLAS threads when the pool forks
    from parity.trace.fleet.executor import map_ranks

    executor = "dask" if scheduler else "local"
    started = time.perf_counter()
    with _ShownOnFirstReport(ProgressRenderer(label="mapping ranks")) as progress:
        results = map_ranks(list(paths), out_dir, executor=executor, workers=workers, scheduler=scheduler,
                            progress=progress, rules=rules_path)  # fmt: skip
    mapped_s = time.perf_counter() - started
    from parity.trace.fleet.reduce import reduce_fleet

    summary = reduce_fleet(out_dir, ranks_per_node=ranks_per_node)
    total_s = time.perf_counter() - started
    click.echo(f"mapped {len(results)} rank{'' if len(results) == 1 else 's'} in {format_seconds(mapped_s)} "
               f"({executor} executor); reduced in {format_seconds(total_s - mapped_s)}: tables in {out_dir}",
               err=json_path == "-")
    from parity.report.fleet import fleet_lines
    from parity.trace.fleet.folder import fleet_headline, read_fleet_folder, straggler_rows

    folder = read_fleet_folder(out_dir)
    for line in fleet_lines(fleet_headline(folder), _document(summary), straggler_rows(folder)):
        click.echo(line, err=json_path == "-")
    stored = None
    if store_it:
        sources = [str(r["source"]) for r in results if isinstance(r, dict) and r.get("source")]
        stored, line = store_after_fleet(out_dir, paths=sources, label=label, db_path=db_path)
        click.echo(line, err=json_path == "-")
    write_json(json_path, "trace-fleet", {
        "out": out_dir, "ranks": results, "summary": _document(summary), "stored": stored,
    })  # fmt: skip
