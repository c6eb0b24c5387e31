"""The preflight as provenance of the comm runs that follow it.

A comm run (collectives, moe, overlap, or any run on ranks) carries ``provenance["preflight"]``:
the link figures of one preflight run, chosen explicitly (``--preflight RUN``) or, by default,
the newest complete preflight in the same store measured on the same ranks (same world size,
backend and, where both runs know them, the same nodes) and created before the run. The run's
own figures are never changed; this only says what the links were when it was measured.
"""

from __future__ import annotations

from typing import Any

from parity.model.errors import ParityError
from parity.model.result import RunRecord

SUITE = "preflight"


def preflight_summary(run: RunRecord) -> dict[str, Any] | None:
    """The stored preflight summary of ``run`` (None when ``run`` is no preflight)."""
    suites = (run.summary or {}).get("suites") or {}
    entry = suites.get(SUITE) or {}
    summary = entry.get("summary")
    return summary if isinstance(summary, dict) else None


def _identity(run: RunRecord) -> dict[str, Any]:
    target = run.provenance.get("target") or {}
    return dict(target.get("identity") or {})


def _nodes(run: RunRecord) -> list[str] | None:
    """The run's nodes where it recorded them: a preflight's summary, or a topology entry."""
    summary = preflight_summary(run)
    if summary and summary.get("nodes"):
        return sorted(summary["nodes"])
    topology = run.provenance.get("topology") or {}
    return sorted(topology["node_names"]) if topology.get("node_names") else None


def matching_preflight(runs: list[RunRecord], run: RunRecord) -> RunRecord | None:
    """The newest complete preflight among ``runs`` created before ``run`` on the same ranks."""
    identity = _identity(run)
    keys = ("world_size", "backend")
    nodes = _nodes(run)
    found = []
    for candidate in runs:
        if candidate.run_id == run.run_id or candidate.status != "complete":
            continue
        if preflight_summary(candidate) is None or candidate.created_at > run.created_at:
            continue
        other = _identity(candidate)
        if any(identity.get(k) != other.get(k) for k in keys):
            continue
        if nodes is not None and (theirs := _nodes(candidate)) is not None and theirs != nodes:
            continue
        found.append(candidate)
    return max(found, key=lambda r: r.created_at) if found else None


def provenance_entry(preflight: RunRecord) -> dict[str, Any]:
    """What a comm run records of ``preflight``: its id and time, links, slow and slowest."""
    summary = preflight_summary(preflight)
    if summary is None:
        raise ParityError(f"run {preflight.run_id} is not a preflight run; give one of 'parity comm preflight'")
    return {"run_id": preflight.run_id, "created_at": preflight.created_at,
            "links": summary.get("links", []), "slow": summary.get("slow", []),
            "slowest": summary.get("slowest"), "slow_fraction": summary.get("slow_fraction")}


def attach_preflight(store: Any, run_id: str, *, preflight_id: str | None = None) -> dict[str, Any] | None:
    """Record the chosen (or matching) preflight in run ``run_id``'s provenance; the entry, or
    None when no preflight matches. A given ``preflight_id`` that is no preflight is an error."""
    run = store.get_run(run_id)
    if preflight_id is not None:
        chosen: RunRecord | None = store.get_run(store.resolve_run_id(preflight_id))
    else:
        chosen = matching_preflight(store.list_runs(), run)
    if chosen is None:
        return None
    entry = provenance_entry(chosen)
    entry["chosen"] = "given" if preflight_id is not None else "latest on the same ranks"
    store.update_provenance(run_id, {**run.provenance, "preflight": entry})
    return entry
