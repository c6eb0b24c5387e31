"""How a GEMM sweep is drawn: its terminal tables and its HTML charts (``VIEW``).

``VIEW.terminal(summary)`` takes the stored summary dict (``GemmSummary.to_dict()``, or a run
stored by an earlier version) and returns a rich renderable: the ceilings and headline figures,
one line per backend, the shape table (best backend beside each backend's rate), the tuned
backends' speedups over the baseline, and the failures. ``VIEW.charts(runs)`` draws the
roofline and the efficiency distribution (``parity.families.gemm.charts``). Values are SI in the
summary and formatted here only; never measures, never prints.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rich import box
from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from parity.report.cases import duration
from parity.report.units import format_seconds as seconds
from parity.report.views import RunData

MAX_SHAPE_ROWS = 40
MAX_FAILURES_SHOWN = 10
# The shape table flags a rate whose IQR is over this share of its median (the high-variance rule).
HIGH_IQR = 0.10
SHAPE_CAPTION = ("AI: FLOP per byte of minimum traffic. class: comp compute-bound (AI >= R), mem memory-bound, "
                 "~ within 25% of the ridge R. of P: median rate / P (P's median round). eff.: median rate / "
                 "attainable min(P, AI·B). rel.err: against a float64 reference. flags: IQR (IQR over 10% of "
                 "the median), power (power-limited), WRONG (failed check), error (below).")
TERA = 1e12


def tflops(value: float | None, scale: float = TERA) -> str:
    """FLOP/s in units of ``scale`` (TFLOP/s by default) with 4 significant digits; '-' when absent."""
    return "-" if value is None else f"{value / scale:.4g}"


def rate_unit(summary: dict[str, Any]) -> tuple[str, float]:
    """TFLOP/s, or GFLOP/s for devices whose ceiling is under 1 TFLOP/s (CPUs)."""
    ceiling = summary.get("ceiling_flops")
    return ("GFLOP/s", 1e9) if ceiling and ceiling < TERA else ("TFLOP/s", TERA)


def percent(value: float | None) -> str:
    """A fraction as a percentage with one decimal; '-' when absent."""
    return "-" if value is None else f"{100.0 * value:.1f}%"


def ceiling_detail(summary: dict[str, Any], scale: float) -> str:
    """P's statistic, best round, CI and rounds, and the unstable flag, for the headline."""
    rounds = summary.get("ceiling_rounds") or {}
    if not rounds:
        return ""
    ci = rounds.get("ci95_flops")
    count = len(rounds.get("rounds_flops", []))
    what = (f"{len(rounds['sentinel_flops'])} sentinel rounds through the sweep" if rounds.get("sentinel_flops")
            else f"{count} rounds")
    text = (f" (median of {what}; best {tflops(rounds.get('best_flops'), scale)}"
            + (f", 95% CI {tflops(ci[0], scale)}-{tflops(ci[1], scale)}" if ci else ", too few rounds for a CI") + ")")
    if rounds.get("unstable"):
        shown = ", ".join(tflops(r, scale) for r in rounds.get("rounds_flops", []))
        if rounds.get("confirm_flops") and rounds.get("sentinel_flops"):
            confirmed = ", ".join(tflops(r, scale) for r in rounds["confirm_flops"])
            shown = f"{shown}; confirmation {confirmed}"
        text += f" [unstable-ceiling: rounds {shown}]"
    return text


def headline_table(summary: dict[str, Any]) -> Table:
    """Ceilings, datasheet, and the sweep's headline figures."""
    table = Table(title=f"GEMM {summary.get('dtype') or ''} on {summary.get('device_name') or 'unknown device'}",
                  show_header=False, title_justify="left")
    table.add_column("figure", style="bold")
    table.add_column("value")
    shape = summary.get("ceiling_shape")
    where = f" at {shape['m']}x{shape['n']}x{shape['k']}" if shape else ""
    unit, scale = rate_unit(summary)
    ceiling = (f"{tflops(summary.get('ceiling_flops'), scale)} {unit}{where}" if summary.get("ceiling_flops")
               else f"not measured: {summary.get('ceiling_error')}")
    table.add_row("measured compute ceiling P", ceiling + ceiling_detail(summary, scale))
    if summary.get("ceiling_from"):
        table.add_row("P taken from", f"run {summary['ceiling_from']}")
    if summary.get("emulation_note"):
        table.add_row("emulated", summary["emulation_note"])
    bandwidth = summary.get("bandwidth_bps")
    table.add_row("measured bandwidth ceiling B",
                  f"{bandwidth / 1e9:.4g} GB/s (copy, read + write)" if bandwidth
                  else f"not measured: {summary.get('bandwidth_error')}")
    ridge = summary.get("ridge_flop_per_byte")
    table.add_row("ridge R = P/B", f"{ridge:.4g} FLOP/B" if ridge else "-")
    sheet = summary.get("datasheet") or {}
    if sheet.get("flops"):
        label = "derived peak (dense)" if sheet.get("derived") and "FLOP/cycle" in sheet["derived"] else "datasheet peak (dense)"
        source = sheet.get("source") or ""
        if sheet.get("derived"):
            source = f"{sheet['derived']}; {source}"
        table.add_row(label, f"{tflops(sheet['flops'])} TFLOP/s ({source}); "
                      f"P is {percent(sheet.get('ceiling_fraction_of_datasheet'))} of it")
    else:
        table.add_row("datasheet peak", sheet.get("note", "no datasheet entry"))
    best = summary.get("best_shape")
    table.add_row("best fraction of P", percent(summary.get("best_fraction_of_ceiling"))
                  + (f" ({best['name']})" if best else ""))
    own = summary.get("ceiling_own_shape")
    if own:
        low, high = own["ci95"]
        table.add_row("P's own shape, timed as a sweep shape",
                      Text(f"{percent(own['fraction'])} of P [95% CI {percent(low)}, {percent(high)}], median of "
                           f"{len(own['own_flops'])} timings ({own.get('source', 'rounds')})"
                           + ("" if own["reproduced"] else "; 100% is outside the CI")
                           + (f"; the sweep's rounds of P's shape read {percent(own['confirm_fraction']['fraction'])}"
                              " of the confirmation's median" if own.get("confirm_fraction") else "")))
    eff = summary.get("efficiency_compute_bound")
    if eff:
        ci = (f"95% CI {percent(eff['ci95_low'])}, {percent(eff['ci95_high'])}" if eff.get("ci95_low") is not None
              else "too few for a CI")
        # Text, not markup: rich would take "[too few for a CI]" for a style tag and drop it.
        table.add_row("median efficiency, compute-bound",
                      Text(f"{percent(eff['median'])} [{ci}], n={eff['n']}; p10 {percent(eff['p10'])}, "
                           f"p90 {percent(eff['p90'])}"))
    else:
        table.add_row("median efficiency, compute-bound", "- (no compute-bound shape measured)")
    classes = summary.get("classes") or {}
    table.add_row("shapes by class", ", ".join(f"{k} {v}" for k, v in classes.items()))
    table.add_row("throttled / power-limited", f"{len(summary.get('throttled', []))} / "
                  f"{len(summary.get('power_limited', []))}")
    table.add_row("failed", str(len(summary.get("failed", []))))
    for finding in summary.get("findings") or []:
        table.add_row(finding["code"], f"{finding['message']}; {finding['hint']}")
    if summary.get("over_ceiling"):
        table.add_row("over the ceiling", f"{len(summary['over_ceiling'])} shapes beat P: the search missed "
                      "the true maximum; raise the ceiling budget")
    return table


def backend_table(summary: dict[str, Any]) -> Table:
    """One row per backend: its own best fraction, median efficiency, wins and failures."""
    table = Table(title="backends", title_justify="left")
    for name, justify in (("backend", "left"), ("shapes", "right"), ("best of P", "right"),
                          ("median eff. (compute-bound)", "right"), ("best on", "right"), ("failed", "right")):
        table.add_column(name, justify=justify)
    for name, fig in (summary.get("backends") or {}).items():
        table.add_row(name, str(fig.get("measured", 0)), percent(fig.get("best_fraction_of_ceiling")),
                      percent((fig.get("efficiency_compute_bound") or {}).get("median")), str(fig.get("wins", 0)),
                      str(fig.get("failed", 0)))
    return table


def shape_table(summary: dict[str, Any], *, limit: int = MAX_SHAPE_ROWS) -> Table:
    """Per shape: dims, intensity, class, each backend's TFLOP/s, the best one's figures.

    Class is ``comp`` (compute-bound) or ``mem`` (memory-bound), with ``~`` when the shape lies
    within 25% of the ridge.
    With one backend its TFLOP/s is the only rate column and the "best" column is left out.
    """
    rows = summary.get("rows") or []
    backends = list((summary.get("backends") or {}).keys())
    several = len(backends) > 1
    unit, scale = rate_unit(summary)
    shown = rows[:limit]
    title = (f"shapes ({unit} per backend)" if several else "shapes") + (
        f", first {limit} of {len(rows)} (all in --json)" if len(rows) > limit else "")
    table = Table(title=title, title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False, collapse_padding=True,
                  caption=SHAPE_CAPTION, caption_justify="left")
    table.add_column("shape", justify="left", overflow="fold")  # the name whole, wrapped where the row is too wide
    for name, justify in (("M x N x K", "right"), ("AI", "right"), ("class", "left")):
        table.add_column(name, justify=justify, no_wrap=True)
    for name in backends:
        table.add_column(name if several else unit, justify="right", no_wrap=True)
    columns = (["best"] if several else []) + ["median (IQR)", "of P", "eff.", "rel.err", "flags"]
    for name in columns:
        table.add_column(name, justify="left" if name in ("best", "flags") else "right", no_wrap=True)
    for row in shown:
        per = row.get("backends", {})
        best_name = row.get("best_backend")
        best = per.get(best_name) if best_name else None
        kind = {"compute-bound": "comp", "memory-bound": "mem"}.get(row.get("class", ""), "-")
        cells: list[Any] = [Text(str(row.get("name", ""))), f"{row['m']}x{row['n']}x{row['k']}",
                            f"{row['arithmetic_intensity']:.4g}" if row.get("arithmetic_intensity") else "-",
                            kind + ("~" if row.get("near_ridge") else "")]
        cells += [tflops(per[b].get("achieved_flops"), scale) if b in per and not per[b].get("error") else
                  ("error" if b in per else "") for b in backends]
        if best:
            cells += ([best_name] if several else []) + [
                f"{duration(best.get('median_s'))} ({duration(best.get('iqr_s'))})",
                percent(best.get("fraction_of_ceiling")), percent(best.get("efficiency")),
                f"{best['relative_error']:.2g}" if best.get("relative_error") is not None else "-",
                _notes(per, dispersed=_dispersed(best))]
        else:
            cells += ["-"] * (len(columns) - 1) + [_notes(per)]
        table.add_row(*cells, style=None if best else "red")
    return table


def _dispersed(best: dict[str, Any]) -> bool:
    """True when the best backend's IQR is over ``HIGH_IQR`` of its median."""
    median_s, iqr_s = best.get("median_s"), best.get("iqr_s")
    return bool(median_s and iqr_s is not None and iqr_s / median_s > HIGH_IQR)


def _notes(per_backend: dict[str, Any], *, dispersed: bool = False) -> str:
    """Short flags per backend: ``error`` (details below the table), ``power`` (power-limited),
    ``WRONG`` (failed its correctness check); ``IQR`` when the shown rate's IQR is over 10% of
    its median (read it with care)."""
    notes = ["IQR"] if dispersed else []
    for name, b in per_backend.items():
        tag = (f"{name}:" if len(per_backend) > 1 else "")
        if b.get("error"):
            notes.append(tag + "error")
        elif b.get("check_passed") is False:
            notes.append(tag + "WRONG")
        elif b.get("power_limited"):
            notes.append(tag + "power")
    return " ".join(notes)


def failure_lines(summary: dict[str, Any], *, limit: int = MAX_FAILURES_SHOWN) -> Text:
    failed = summary.get("failed") or []
    text = Text()
    for item in failed[:limit]:
        text.append(f"FAILED {item['key']}: [{item['code']}] {item['error']}\n", style="red")
    if len(failed) > limit:
        text.append(f"... and {len(failed) - limit} more failed shapes (see --json)\n", style="red")
    return text


def render_gemm(summary: dict[str, Any], *, limit: int = MAX_SHAPE_ROWS) -> RenderableType:
    """Everything above, stacked: the terminal view of a stored GEMM summary."""
    parts: list[RenderableType] = [headline_table(summary)]
    if len(summary.get("backends") or {}) > 1:
        parts.append(backend_table(summary))
    parts.append(shape_table(summary, limit=limit))
    if summary.get("speedups"):
        parts.append(render_speedups(summary["speedups"]))
    failures = failure_lines(summary)
    if failures.plain:
        parts.append(failures)
    return Group(*parts)

# Tuned backends against the baseline (``summary["speedups"]``, ``parity.families.gemm.speedup_summary``):
# per shape, then per size bucket.


def _ratio(value: float | None) -> str:
    return "-" if value is None else f"{value:.3g}x"


def shape_speedup_table(candidate: str, entry: dict[str, Any]) -> Table:
    table = Table(title=f"{candidate} against {entry['baseline']} per shape ({entry['subset']})", title_justify="left",
                  caption=entry["method"])
    for name, justify in (("shape", "left"), ("MxNxK", "left"), ("bucket", "left"), ("speedup", "right"),
                          ("95% CI", "right"), ("tuning", "right"), ("winner", "left"), ("re-check", "left")):
        table.add_column(name, justify=justify)
    for row in entry["rows"]:
        dims = f"{row['m']}x{row['n']}x{row['k']}"
        if row.get("error"):
            table.add_row(row["name"], dims, row["bucket"], "-", "-", "-", "-", f"[red]{row['error']}[/red]")
            continue
        ci = row.get("speedup_ci95") or [None, None]
        recheck = row.get("winner_check") or {}
        table.add_row(row["name"], dims, row["bucket"], _ratio(row.get("speedup")),
                      f"{_ratio(ci[0])}-{_ratio(ci[1])}", seconds(row.get("tuning_s")), str(row.get("winner")),
                      "[green]ok[/green]" if recheck.get("passed") else "[red]WRONG[/red]")
    return table


def bucket_table(candidate: str, entry: dict[str, Any]) -> Table:
    table = Table(title=f"{candidate} over {entry['baseline']}: speedup distribution by size bucket "
                        f"(tuning {seconds(entry['tuning_s_total'])} in all)", title_justify="left")
    for name in ("bucket", "shapes", "median", "p25", "p75", "min", "max"):
        table.add_column(name, justify="left" if name == "bucket" else "right")
    for name, dist in [*entry["buckets"].items(), ("all", entry["overall"])]:
        if not dist["n"]:
            table.add_row(name, "0", "-", "-", "-", "-", "-")
            continue
        table.add_row(name, str(dist["n"]), *(_ratio(dist[k]) for k in ("median", "p25", "p75", "min", "max")))
    return table


def render_speedups(speedups: dict[str, Any]) -> RenderableType:
    """Per candidate backend: its per-shape table, then its bucket summary."""
    parts: list[RenderableType] = []
    for candidate, entry in speedups.items():
        parts += [shape_speedup_table(candidate, entry), bucket_table(candidate, entry)]
    return Group(*parts)


@dataclass(frozen=True)
class GemmView:
    """The GEMM family's view (``parity.report.views.View``)."""

    section: tuple[str, str] = ("gemm", "GEMM: roofline and efficiency")

    def terminal(self, summary: dict[str, Any], *, limit: int = MAX_SHAPE_ROWS) -> RenderableType:
        """``render_gemm``: every table of the sweep, at most ``limit`` shape rows."""
        return render_gemm(summary, limit=limit)

    def charts(self, runs: list[RunData]) -> list[Any]:
        """The roofline and the efficiency histogram over every run (one series per run)."""
        from parity.families.gemm.charts import gemm_charts

        return gemm_charts([(run.label, run.summary) for run in runs])


VIEW = GemmView()
