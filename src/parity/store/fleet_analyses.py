"""Fleet analyses kept in the results store (``parity trace fleet ... --store``), so two fleets
can be compared later (``parity compare fleet-... fleet:latest``) without their folders.

A stored fleet keeps where its output folder is and which rank files made it, its rank count
and ranks per node, the headline figures as columns (median and p99 arrival skew, the total
wait, the straggler ranks: ``SELECT`` them in SQL), the figures per op, the straggler table and
``fleet.json``. The figures are read from the folder's tables by
:func:`parity.trace.fleet.folder.fleet_headline` (definitions there). Ids are ``fleet-``
followed by a run-style id; ``fleet:latest`` is the newest.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from parity.store.lookup import find_row
from parity.store.database import Store, dump_json, is_latest, load_json, now_utc, unused_run_id

ID_PREFIX = "fleet-"
LATEST = "fleet:latest"
_COLUMNS = "id, created_at, label, out_dir, paths, ranks, ranks_per_node, headline, stragglers, summary"


@dataclass(frozen=True, kw_only=True)
class StoredFleetAnalysis:
    """One stored fleet: its folder, rank files, headline figures, straggler table and fleet.json."""

    analysis_id: str
    created_at: str
    label: str
    out_dir: str
    paths: tuple[str, ...]
    ranks: int
    ranks_per_node: int | None
    headline: dict[str, Any] = field(default_factory=dict)
    stragglers: tuple[dict[str, Any], ...] = ()
    summary: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.analysis_id, "created_at": self.created_at, "label": self.label, "out_dir": self.out_dir,
                "paths": list(self.paths), "ranks": self.ranks, "ranks_per_node": self.ranks_per_node,
                "headline": dict(self.headline), "stragglers": [dict(s) for s in self.stragglers],
                "summary": dict(self.summary)}


def add_fleet_analysis(store: Store, *, out_dir: str, paths: list[str], headline: dict[str, Any],
                       stragglers: list[dict[str, Any]], summary: dict[str, Any], label: str = "") -> StoredFleetAnalysis:
    """Store one fleet's figures (``headline`` as :func:`fleet_headline` returns it) and return
    it with its new id."""
    with store.transaction() as conn:
        analysis_id = unused_run_id(conn, table="fleet_analyses", prefix=ID_PREFIX)
        conn.execute(
            "INSERT INTO fleet_analyses (id, created_at, label, out_dir, paths, ranks, ranks_per_node, skew_median_ns,"
            " skew_p99_ns, wait_total_ns, straggler_ranks, ops, stragglers, summary, headline)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (analysis_id, now_utc(), label or Path(out_dir).name, str(out_dir), dump_json(list(paths)),
             int(headline["ranks"]), headline.get("ranks_per_node"), headline.get("skew_median_ns"),
             headline.get("skew_p99_ns"), int(headline["wait_total_ns"]), dump_json(headline["straggler_ranks"]),
             dump_json(headline.get("ops") or []), dump_json(stragglers), dump_json(summary), dump_json(headline)),
        )
    return get_fleet_analysis(store, analysis_id)


def is_fleet_analysis_id(text: str) -> bool:
    """True for ids (or prefixes) of stored fleets: ``fleet-...``, ``fleet:latest`` or ``fleet:latest~N``."""
    return text.startswith(ID_PREFIX) or is_latest(text, LATEST)


def get_fleet_analysis(store: Store, analysis_id: str) -> StoredFleetAnalysis:
    """The stored fleet with this id, a unique prefix of it, ``fleet:latest`` or ``fleet:latest~N``."""
    hint = "store one with parity trace fleet ... --store"
    return _from_row(find_row(store, table="fleet_analyses", columns=_COLUMNS, wanted=analysis_id, latest=LATEST,
                              what="fleet analysis", plural="fleet analyses", hint=hint))


def list_fleet_analyses(store: Store) -> list[StoredFleetAnalysis]:
    """Every stored fleet, newest first."""
    rows = store.query(f"SELECT {_COLUMNS} FROM fleet_analyses ORDER BY created_at DESC, id DESC")
    return [_from_row(row) for row in rows]


def _from_row(row: tuple[Any, ...]) -> StoredFleetAnalysis:
    return StoredFleetAnalysis(
        analysis_id=row[0], created_at=row[1], label=row[2], out_dir=row[3], paths=tuple(load_json(row[4]) or ()),
        ranks=int(row[5]), ranks_per_node=row[6], headline=load_json(row[7]) or {},
        stragglers=tuple(load_json(row[8]) or ()), summary=load_json(row[9]) or {},
    )
