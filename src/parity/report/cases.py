"""The per-case table of ``parity runs show``: one row per stored case (never measures).

Columns: suite, key, status (ok, FAILED, error), median time with its IQR as a share of the
median, the case's rate (GFLOP/s or TFLOP/s from ``achieved_flops``, ``flop_per_s``, a ceiling's
``ceiling_flops`` or a sentinel's ``median_flops``; GB/s from ``gbps`` or ``bytes_per_s``), and
its finding codes. A ceiling search's rate (its confirmation median) is marked ``(search)``, a
reused ceiling's (``--ceiling-from``) ``(reused P)``, and a sentinel's (the median of its rounds of
``P``'s shape) ``(P rounds)``: the sweep's ``P`` is the sentinels' median, shown in the run
summary, so each row says which figure it holds. Units are formatted here only.
"""

from __future__ import annotations

from typing import Any

from rich import box
from rich.table import Table
from rich.text import Text

from parity.model.result import CaseResult

MAX_CASE_ROWS = 200


def duration(seconds: float | None) -> str:
    """Seconds in the most readable of s, ms, us, ns ('-' for none)."""
    if seconds is None:
        return "-"
    for scale, unit in ((1.0, "s"), (1e-3, "ms"), (1e-6, "us")):
        if seconds >= scale * (1 - 5e-4):  # 999.6 us rounds to 1 ms, never "1e+03 us"
            return f"{seconds / scale:.3g} {unit}"
    return f"{seconds / 1e-9:.3g} ns"


# Rates that are not a timed shape's, and the mark saying which they are.
MARKED_RATES = (("ceiling_from", " (reused P)"), ("ceiling_flops", " (search)"), ("rounds_flops", " (P rounds)"))
RATE_NOTE = ("(search): the ceiling search's confirmation median; (reused P): the P of the run --ceiling-from "
             "named; (P rounds): the median of a sentinel's rounds of P's shape. The sweep's P is the "
             "sentinels' median, in the summary above.")


def rate_text(metrics: dict[str, Any]) -> str:
    """The case's rate in humans' units, marked when it is a ceiling's (``MARKED_RATES``), '-'
    when it has none."""
    mark = next((text for key, text in MARKED_RATES if metrics.get(key)), "")
    flops = (metrics.get("achieved_flops") or metrics.get("flop_per_s") or metrics.get("ceiling_flops")
             or metrics.get("median_flops"))
    if flops:
        return (f"{flops / 1e12:.4g} TFLOP/s" if flops >= 1e12 else f"{flops / 1e9:.4g} GFLOP/s") + mark
    gbps = metrics.get("gbps")
    if gbps is None and metrics.get("bytes_per_s"):
        gbps = metrics["bytes_per_s"] / 1e9
    return f"{gbps:.4g} GB/s" if gbps else "-"


def status_text(case: CaseResult) -> str:
    """``ok``, ``FAILED`` or ``error`` (the case did not run)."""
    from parity.report.views import case_status

    return case_status(case)


def case_table(cases: list[CaseResult], *, limit: int = MAX_CASE_ROWS) -> Table:
    """One row per case, the first ``limit`` of them (all in --json)."""
    title = "cases" + (f", first {limit} of {len(cases)} (all in --json)" if len(cases) > limit else "")
    marked = any(case.metrics.get(key) for case in cases[:limit] for key, _ in MARKED_RATES)
    table = Table(title=title, title_justify="left", box=box.SIMPLE_HEAD,
                  caption=RATE_NOTE if marked else None, caption_justify="left")
    for name, justify in (("suite", "left"), ("case", "left"), ("status", "left"), ("median", "right"),
                          ("IQR/median", "right"), ("rate", "right"), ("findings", "left")):
        table.add_column(name, justify=justify)  # type: ignore[arg-type]
    for case in cases[:limit]:  # suite and key as Text: a name's "[...]" is not markup
        m = case.metrics
        median_s, iqr_s = m.get("median_s"), m.get("iqr_s")
        spread = f"{100 * iqr_s / median_s:.0f}%" if median_s and iqr_s is not None else "-"
        table.add_row(Text(case.suite), Text(case.key), status_text(case), duration(median_s), spread, rate_text(m),
                      ",".join(f.code for f in case.findings) or "", style=None if case.ok else "red")
    return table
