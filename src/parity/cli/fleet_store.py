"""``parity trace fleet ... --store``: the options and the step that keep a fleet analysis in the
results store after the reduce wrote its folder (``parity.store.fleet_analyses``)."""

from __future__ import annotations

from collections.abc import Callable
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

if TYPE_CHECKING:
    from parity.store.fleet_analyses import StoredFleetAnalysis


def store_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """``--store``, ``--label`` and ``--db`` for a command that writes a fleet output folder."""
    command = click.option("--db", "db_path", type=click.Path(dir_okay=False), default=None,
                           help="With --store: the results store. Default: $PARITY_DB, else the user data directory.")(command)
    command = click.option("--label", default="", help="With --store: a name for the fleet (default: the folder's name).")(command)
    return click.option("--store", "store_it", is_flag=True,
                        help="Keep the fleet analysis in the results store (folder, rank files, ranks per node, "
                             "median and p99 skew, total wait, per-op busbw, the straggler table) for "
                             "parity compare fleet-ID fleet:latest.")(command)


def store_after_fleet(out_dir: str, *, paths: list[str], label: str, db_path: str | None) -> tuple[dict[str, Any], str]:
    """Store the folder's analysis; its record (for ``--json``) and the line that says where."""
    stored = store_fleet(db_path, out_dir, label=label, paths=paths)
    record = {"id": stored.analysis_id, "label": stored.label, "ranks": stored.ranks}
    return record, (f"stored as {stored.analysis_id} ({stored.label}); "
                    f"parity compare {stored.analysis_id} fleet:latest sets it beside another")


def store_fleet(db: str | os.PathLike[str] | None, out_dir: str | Path, *, label: str = "",
                paths: list[str] | None = None) -> StoredFleetAnalysis:
    """Read the fleet output folder ``out_dir`` and keep its figures in the store at ``db``
    (None: ``$PARITY_DB`` or the default); ``paths`` are the rank files (default: as
    :func:`rank_paths` finds them)."""
    from parity.store.database import Store
    from parity.store.fleet_analyses import add_fleet_analysis
    from parity.trace.fleet.folder import fleet_headline, rank_paths, read_fleet_folder, straggler_rows

    folder = read_fleet_folder(out_dir)
    files = [str(Path(p).resolve()) for p in paths] if paths else rank_paths(folder.out_dir, folder.summary)
    with Store.open(db) as store:
        return add_fleet_analysis(store, out_dir=folder.out_dir, paths=files, headline=fleet_headline(folder),
                                  stragglers=straggler_rows(folder), summary=folder.summary, label=label)
