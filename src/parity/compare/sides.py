"""The sides of a comparison: each side one run or several repeats of one measurement.

A side is written as one run (an id, a unique prefix, ``latest``, ``latest~N``), several runs
joined by commas (``A1,A2,A3``), or a repeat group, ``group:ID``: the runs of one ``parity run
--repeat N`` (``config["group"]``; ID whole or a unique prefix, or ``group:latest``, the group of
the newest run that has one). The runs of one side must be distinct, and no run may be on two
sides (a run against itself is 1x by construction, and sides sharing runs are not independent);
a side is labelled with its runs' ``--label`` (``config["label"]``) when they share one, else
with its device.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from parity.model.errors import ParityError
from parity.model.result import CaseResult, RunRecord
from parity.store.database import Store
from parity.store.figures import StoredFigure

GROUP_PREFIX = "group:"


@dataclass(frozen=True, kw_only=True)
class Side:
    """One side: its spelling as given, its runs in the order given, their cases and figures."""

    spec: str
    runs: tuple[RunRecord, ...]
    cases: tuple[tuple[CaseResult, ...], ...]
    figures: tuple[tuple[StoredFigure, ...], ...]

    @property
    def first(self) -> RunRecord:
        return self.runs[0]

    @property
    def run_ids(self) -> tuple[str, ...]:
        return tuple(r.run_id for r in self.runs)

    @property
    def user_label(self) -> str | None:
        """The runs' shared ``--label``, or None when they have none or differ."""
        labels = {r.config.get("label") for r in self.runs}
        label = labels.pop() if len(labels) == 1 else None
        return str(label) if label else None

    @property
    def group(self) -> str | None:
        groups = {r.config.get("group") for r in self.runs}
        group = groups.pop() if len(groups) == 1 else None
        return str(group) if group else None


def group_runs(store: Store, spec: str) -> list[str]:
    """The ids of the runs of repeat group ``spec`` (``group:ID``), oldest first."""
    wanted = spec.removeprefix(GROUP_PREFIX).strip()
    if not wanted:
        raise ParityError(f"side {spec!r} names no group; write group:ID (parity runs list shows groups) "
                          "or group:latest")
    runs = store.list_runs()
    groups = {str(g) for r in runs if (g := r.config.get("group"))}
    if wanted == "latest":
        newest = next((r.config["group"] for r in runs if r.config.get("group")), None)
        if newest is None:
            raise ParityError("group:latest: no stored run belongs to a repeat group; make one with "
                              "parity run --repeat N")
        match = [str(newest)]
    else:
        match = [g for g in groups if g == wanted] or [g for g in groups if g.startswith(wanted)]
    if len(match) != 1:
        what = "no repeat group" if not match else f"{len(match)} repeat groups ({', '.join(sorted(match)[:3])})"
        raise ParityError(f"side {spec!r}: {what} matches {wanted!r}; give a whole group id from parity runs list")
    members = [r for r in runs if r.config.get("group") == match[0]]
    members.sort(key=lambda r: ((r.config.get("repeat") or {}).get("index", 0), r.created_at))
    return [r.run_id for r in members]


def side_run_ids(store: Store, spec: str) -> list[str]:
    """The full run ids of one side's spelling (module docstring)."""
    if spec.startswith(GROUP_PREFIX):
        return group_runs(store, spec)
    parts = [p.strip() for p in spec.split(",")]
    if not all(parts):
        raise ParityError(f"side {spec!r} has an empty run id; write runs as A1,A2,A3 without spaces or "
                          "trailing commas")
    ids = [store.resolve_run_id(p) for p in parts]
    if len(set(ids)) != len(ids):
        raise ParityError(f"side {spec!r} names one run twice; each run of a side counts once")
    return ids


def load_sides(store: Store, specs: list[str]) -> list[Side]:
    """Every side's runs, cases and figures, read from the store; a ParityError when a run is
    on two sides (before any case is read)."""
    resolved = [side_run_ids(store, spec) for spec in specs]
    seen: dict[str, int] = {}  # run id -> the first side naming it (a side names a run once)
    for index, ids in enumerate(resolved):
        for run_id in ids:
            if run_id in seen:
                first = seen[run_id]
                raise ParityError(f"run {run_id} is on side {_side_name(first, specs)} and on side "
                                  f"{_side_name(index, specs)}: a run compared with itself is 1x by construction, "
                                  "not a measurement; compare different runs (latest~1 latest), or see one run with "
                                  "parity runs show")
            seen[run_id] = index
    sides = []
    for spec, ids in zip(specs, resolved):
        runs = tuple(store.get_run(i) for i in ids)
        sides.append(Side(spec=spec, runs=runs, cases=tuple(tuple(store.cases(i)) for i in ids),
                          figures=tuple(tuple(store.figures(i)) for i in ids)))
    return sides


def _side_name(index: int, specs: list[str]) -> str:
    """``A (latest)``: a side's letter in the comparison and its spelling as given."""
    return f"{'ABCDEFGHIJKLMNOPQRSTUVWXYZ'[index % 26]} ({specs[index]})"


def describe_side(side: Side, *, letter: str, cases: int, device: Any) -> dict[str, Any]:
    """The ``runs`` entry of a comparison for one side (one entry per side)."""
    name = side.user_label or device
    run = side.first
    return {"id": run.run_id, "ids": list(side.run_ids), "runs": len(side.runs), "spec": side.spec,
            "letter": letter, "label": f"{letter}: {name}", "user_label": side.user_label, "group": side.group,
            "device": device, "cases": cases}
