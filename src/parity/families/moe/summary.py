"""The stored MoE cases as rows: times over ranks, and GB/s in each labelled convention."""

from __future__ import annotations

from typing import Any

from parity.families.collectives.summary import rank_times, wrong_elements
from parity.metrics.collectives import algbw
from parity.metrics.moe import moe_busbw
from parity.model.figure import Figure
from parity.model.result import CaseResult

# Convention key -> its label (bytes per rank, mean over ranks; t the max over ranks).
CONVENTIONS = {
    "algorithm": "DeepEP algorithm bytes: every top-k copy, own rank included",
    "logical": "logical bytes: one row per destination rank, own rank included",
    "cross_rank": "cross-rank bytes: rows to other ranks only (one host: all scale-up)",
    "bus": "nccl-tests-style bus: logical/t * (n-1)/n",
}


def moe_row(result: CaseResult) -> dict[str, Any]:
    """One MoE case as a row: times, ``conventions`` (label, bytes, gbps), ``algbw_gbps`` (the
    nccl-tests algbw of the exchange: logical bytes / t) and ``busbw_gbps``."""
    m = result.metrics
    row: dict[str, Any] = {"key": result.key, "ok": result.ok, "error": result.error,
                           "wrong": wrong_elements(result), "check_method": result.check.get("method", ""),
                           **{k: m.get(k) for k in ("direction", "dispatch_dtype", "tokens", "hidden", "top_k",
                                                    "experts", "world_size", "backend", "row_bytes")}}
    if result.error is not None or "main" not in result.samples:
        return row
    times = rank_times(result)
    t, world = times["time_s"], int(m.get("world_size") or 1)
    rates = {"algorithm": algbw(m["algorithm_bytes"], t), "logical": algbw(m["logical_bytes"], t),
             "cross_rank": algbw(m["cross_rank_bytes"], t),
             "bus": moe_busbw(m["logical_bytes"], t, world_size=world)}
    amounts = {"algorithm": m["algorithm_bytes"], "logical": m["logical_bytes"],
               "cross_rank": m["cross_rank_bytes"], "bus": m["logical_bytes"]}
    row.update(times)
    row["conventions"] = [{"name": key, "convention": label, "bytes": amounts[key],
                           "gbps": rates[key] / 1e9 if rates[key] else None} for key, label in CONVENTIONS.items()]
    row["algbw_gbps"] = rates["logical"] / 1e9 if rates["logical"] else None
    row["busbw_gbps"] = rates["bus"] / 1e9 if rates["bus"] else None
    return row


def summarize_moe(results: list[CaseResult]) -> dict[str, Any]:
    """Rows in case order, the routing's source, digest and imbalance, wrong rows, and ok."""
    rows = [moe_row(r) for r in results]
    first = next((r.metrics for r in results if r.metrics), {})
    return {"rows": rows, "ok": all(r["ok"] for r in rows), "wrong": sum(r["wrong"] or 0 for r in rows),
            "world_size": first.get("world_size"), "backend": first.get("backend"),
            "routing": first.get("routing"), "routing_digest": first.get("routing_digest"),
            "imbalance_ratio": first.get("imbalance_ratio"), "conventions": dict(CONVENTIONS),
            "library_backends": first.get("library_backends", {})}


def moe_figures(summary: dict[str, Any]) -> list[Figure]:
    """Every measured row's GB/s in every convention, one figure each."""
    figures = []
    for row in summary.get("rows", []):
        for conv in row.get("conventions", []):
            if conv["gbps"] is None:
                continue
            figures.append(Figure(name=f"moe.{row['direction']}.{conv['name']}", value=conv["gbps"] * 1e9,
                                  unit="B/s", method=f"{conv['convention']}; t = max over ranks per iteration, median",
                                  scope={"case": row["key"], "world_size": row.get("world_size"),
                                         "backend": row.get("backend"), "dispatch_dtype": row.get("dispatch_dtype")}))
    return figures
