"""Communication tables: the collectives sweep in nccl-tests' layout, MoE exchange rows in every
labelled convention, and the overlap figures. Plain text (nccl-tests' table is text, and users
diff it); takes the suites' summaries, never measures."""

from __future__ import annotations

from typing import Any

_HEAD = ("size", "count", "type", "redop", "root")
_GROUP = ("time", "p99", "fastest", "algbw", "busbw", "#wrong")
_UNITS_HEAD = ("(B)", "(elements)", "", "", "")
_UNITS_GROUP = ("(us)", "(us)", "(us)", "(GB/s)", "(GB/s)", "")
_REDOP = {"all_reduce": "sum", "reduce_scatter": "sum", "reduce": "sum"}
_ROOT = {"broadcast": "0", "reduce": "0"}


def _us(value: float | None) -> str:
    return "n/a" if value is None else f"{value * 1e6:.1f}"


def _gbps(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.2f}"


def _group_cells(row: dict[str, Any] | None) -> list[str]:
    if row is None:
        return ["-"] * len(_GROUP)
    if row.get("error"):
        return ["error"] + [""] * (len(_GROUP) - 2) + ["n/a"]
    wrong = row.get("wrong")
    return [_us(row.get("time_s")), _us(row.get("time_p99_s")), _us(row.get("fastest_rank_s")),
            _gbps(row.get("algbw_gbps")), _gbps(row.get("busbw_gbps")), "n/a" if wrong is None else str(wrong)]


def _format(lines: list[list[str]]) -> list[str]:
    widths = [max(len(line[i]) for line in lines) for i in range(len(lines[0]))]
    return ["  ".join(cell.rjust(w) for cell, w in zip(line, widths)) for line in lines]


def render_collectives(summary: dict[str, Any]) -> str:
    """One table per collective: size, count, type, redop, root, then out-of-place and in-place
    groups (time = median of the max over ranks, p99, the fastest rank's median, algbw, busbw,
    #wrong), a units row, and the footer: wrong values, average bus bandwidth, OK or FAILED."""
    out: list[str] = [f"# parity collectives: {summary.get('world_size')} ranks, backend {summary.get('backend')}; "
                      "time = max over ranks per iteration (median), p99, fastest rank (median)"]
    rows = summary.get("rows", [])
    for op in dict.fromkeys(r["op"] for r in rows):
        keyed: dict[tuple[str, int], dict[str, dict[str, Any]]] = {}
        for row in (r for r in rows if r["op"] == op):
            keyed.setdefault((row["dtype"], int(row["size_bytes"])), {})[row["placement"]] = row
        lines = [[*_HEAD, *(f"{c}" for c in _GROUP), *(f"{c}" for c in _GROUP)],
                 [*_UNITS_HEAD, *_UNITS_GROUP, *_UNITS_GROUP]]
        for (dtype, size), places in keyed.items():
            first = next(iter(places.values()))
            lines.append([str(size), str(first.get("count") or ""), dtype, _REDOP.get(op, "none"), _ROOT.get(op, "-1"),
                          *_group_cells(places.get("out-of-place")), *_group_cells(places.get("in-place"))])
        out.append(f"#\n# {op}{'':>40}out-of-place{'':>40}in-place")
        out.extend(_format(lines))
    out.append(f"# Out of bounds values : {summary.get('wrong', 0)} {'OK' if not summary.get('wrong') else 'FAILED'}")
    avg = summary.get("avg_busbw_all_gbps")
    out.append(f"# Avg bus bandwidth    : {_gbps(avg)} GB/s")
    out.append("OK" if summary.get("ok") else "FAILED")
    return "\n".join(out)


def render_moe(summary: dict[str, Any]) -> str:
    """One block per exchange: time (max over ranks: p50, p99; fastest rank), then GB/s in each
    labelled convention, then the check, and OK or FAILED."""
    out = [f"# parity moe: {summary.get('world_size')} ranks, backend {summary.get('backend')}; "
           "time = max over ranks per iteration; bytes per rank (mean over ranks)"]
    for row in summary.get("rows", []):
        head = f"{row['key']}: "
        if row.get("error"):
            out.append(head + f"error: {row['error']}")
            continue
        out.append(head + f"p50 {_us(row.get('time_s'))} us, p99 {_us(row.get('time_p99_s'))} us, "
                          f"fastest rank {_us(row.get('fastest_rank_s'))} us; check "
                          f"{'passed' if row.get('ok') else 'FAILED'} ({row.get('check_method', '')})")
        for conv in row.get("conventions", []):
            out.append(f"    {_gbps(conv.get('gbps')):>10} GB/s  {conv['bytes']:>14,.0f} B  {conv['convention']}")
    if summary.get("imbalance_ratio") is not None:
        out.append(f"# routing {summary.get('routing')}: imbalance (max/mean tokens per expert) "
                   f"{summary['imbalance_ratio']:.2f}, hash {(summary.get('routing_digest') or '')[:16]}")
    for library, note in summary.get("library_backends", {}).items():
        out.append(f"# {library}: {note}")
    out.append("OK" if summary.get("ok") else "FAILED")
    return "\n".join(out)


def render_overlap(summary: dict[str, Any]) -> str:
    """Per compute kernel: the exchange's and the kernel's time alone and together, the slowdown
    of each, and the overlap achieved."""
    out = [f"# parity overlap: {summary.get('world_size')} ranks, backend {summary.get('backend')}; "
           "times are medians of the max over ranks per iteration"]
    for row in summary.get("rows", []):
        if row.get("error"):
            out.append(f"{row['key']}: error: {row['error']}")
            continue
        out.append(f"{row['key']}: exchange alone {_us(row['exchange_alone_s'])} us, together "
                   f"{_us(row['exchange_together_s'])} us (x{row['exchange_slowdown']:.2f}); "
                   f"{row['kernel']} alone {_us(row['kernel_alone_s'])} us, together "
                   f"{_us(row['kernel_together_s'])} us (x{row['kernel_slowdown']:.2f}); both "
                   f"{_us(row['both_s'])} us, overlap achieved {row['overlap_fraction']:.0%}")
    out.append("OK" if summary.get("ok") else "FAILED")
    return "\n".join(out)
