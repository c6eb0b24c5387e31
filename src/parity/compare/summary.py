"""The summary of one pair of sides (A, the first, and B): per suite and kind the median of the
per-case speed ratios, the same over the shapes compute-bound on every run of both sides with
each side's median efficiency over them, and the ratio of each suite figure the sides report
with a matching scope (``parity.compare.scope``; else listed as not comparable with the reason,
or, forced, computed and marked). Medians take their CI from the same hierarchical bootstrap
draws as the cases (``parity.compare.bootstrap.median_interval``), the cases held fixed: the
claim is about these cases, and the runs are what is uncertain.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from parity.compare.bootstrap import (RatioDraws, case_interval, ci_kind, hierarchical_log_ratios, median_interval,
                                      side_runs)
from parity.compare.join import headline
from parity.compare.records import RatioRecord
from parity.compare.scope import figure_comparability
from parity.compare.sides import Side
from parity.compare.wording import (LETTERS, NO_DIFFERENCE, caveat_clause, claim, scope_text, untrusted_clause,
                                    verdict)
from parity.model.figure import Figure
from parity.stats.summary import median
from parity.store.figures import StoredFigure

MEDIAN_METHOD = ("median over cases of the per-case speed ratio (in logs); 95% CI from the hierarchical "
                 "bootstrap over runs, then raw samples within runs, the cases held fixed")


@dataclass(frozen=True, kw_only=True)
class PairData:
    """What one pair's summary reads: the case rows, the pair's index among the sides, its two
    labels, its bootstrap draws and each case's position in them, the two sides, the cases a
    refused condition touches, and whether the comparison is forced."""

    rows: list[dict[str, Any]]
    index: int
    pair: tuple[str, str]
    draws: RatioDraws | None
    positions: dict[tuple[str, str], int]
    sides: tuple[Side, Side]
    marked: set[tuple[str, str]]
    force: bool

    @property
    def runs(self) -> tuple[int, int]:
        return len(self.sides[0].runs), len(self.sides[1].runs)


def case_figures(figures: Sequence[StoredFigure]) -> dict[str, dict[str, Any]]:
    """Per suite, ``{"rows": {case key: {name: value}}}``: each case's stored figures by name,
    with the properties in their scope (``class``, ``dtype``) beside them."""
    out: dict[str, dict[str, Any]] = {}
    for figure in figures:
        if figure.case is None:
            continue
        row = out.setdefault(figure.suite, {"rows": {}})["rows"].setdefault(figure.case, {})
        row[figure.name] = figure.value
        for name, value in figure.scope.items():
            if name != "case":
                row.setdefault(name, value)
    return out


def group_of(row: dict[str, Any]) -> str:
    """Cases summarised together: a suite's cases of one ``kind`` (GEMM shapes apart from its
    ceiling search and bandwidth copy), or the whole suite when its cases have no kind."""
    kind = row["params"].get("kind")
    return f"{row['suite']}.{kind}" if isinstance(kind, str) and kind else row["suite"]


def pair_summaries(data: PairData) -> tuple[list[Figure], list[RatioRecord], list[str]]:
    """The pair's summary figures, their typed records and the claims they allow."""
    figures: list[Figure] = []
    records: list[RatioRecord] = []
    claims: list[str] = []
    classes = [case_figures(f) for side in data.sides for f in side.figures]
    seen_suites: set[str] = set()
    for group in dict.fromkeys(group_of(r) for r in data.rows):
        rows = [r for r in data.rows if group_of(r) == group]
        suite = rows[0]["suite"]
        for subset, chosen in (("all joined", rows), ("compute-bound", _compute_bound(suite, rows, classes))):
            if chosen is None:
                continue
            made = _median(group if subset == "all joined" else suite, chosen, data, subset=subset)
            if made is None:
                continue
            figures.append(made[0])
            records.append(made[1])
            if made[0].scope["cases"] > 1:  # one case is its own row, not a claim
                extra = _efficiencies(suite, chosen, data, classes, figures) if subset == "compute-bound" else ""
                claims.append(made[2].replace("; not a ranking", extra + "; not a ranking", 1))
        if suite not in seen_suites:
            seen_suites.add(suite)
            ratios = _figure_ratios(suite, data)
            figures += [f for f, _ in ratios]
            records += [r for _, r in ratios]
    return figures, records, claims


def _median(name_base: str, rows: list[dict[str, Any]], data: PairData, *,
            subset: str) -> tuple[Figure, RatioRecord, str] | None:
    usable = [r for r in rows if (r["suite"], r["key"]) in data.positions]
    if not usable or data.draws is None:
        return None
    value, ci = median_interval(data.draws, [data.positions[(r["suite"], r["key"])] for r in usable])
    exact = sorted(float(r["ratios"][data.index]) for r in usable)
    if len(exact) % 2:  # the middle case's own ratio, not its round trip through logs
        value = exact[len(exact) // 2]
    name = f"compare.{name_base}.median_ratio" + ("" if subset == "all joined" else f".{subset}")
    kind = ci_kind(*data.runs)
    marked = any(r["marked"] for r in usable)
    note = "" if ci else "no CI: a case in it has neither raw samples nor several runs per side"
    if ci is not None and ci[0] <= 1.0 <= ci[1]:
        note = NO_DIFFERENCE
    if marked:
        note = (note + "; " if note else "") + "marked: conventions differ between the runs"
    doubted, caveated = _side_codes(usable, "doubts", (0, data.index)), _side_codes(usable, "caveats", (0, data.index))
    untrusted = untrusted_clause({side: (len(sets), set().union(*sets)) for side, sets in doubted.items()},
                                 len(usable))
    caveats = caveat_clause({side: dict(Counter(code for codes in sets for code in codes))
                             for side, sets in caveated.items()}, len(usable))
    for clause in (untrusted, caveats):
        if clause:
            note = (note + "; " if note else "") + clause
    scope = {"suite": name_base, "subset": subset, "cases": len(usable), "runs": list(data.pair),
             "runs_per_side": list(data.runs), "ci_kind": kind}
    figure = Figure(name=name, value=value, unit="x", ci95=ci, note=note, method=MEDIAN_METHOD, scope=scope)
    record = RatioRecord(level="summary", suite=usable[0]["suite"], name=name, pair=data.pair, ratio=value, ci95=ci,
                         ci_kind=kind, runs=data.runs, verdict=verdict(value, ci), marked=marked, scope=scope)
    suite = usable[0]["suite"]
    what = "shapes" if name_base.endswith(".shape") or subset == "compute-bound" else "cases"
    dtypes = sorted({str(r["params"]["dtype"]) for r in usable if r["params"].get("dtype")})
    text = claim(scope=scope_text(len(usable), subset=subset, suite=suite, dtypes=dtypes, what=what),
                 pair=data.pair, ratio=value, ci=ci, runs=data.runs, kind=kind)
    text += "".join(f"; {clause}" for clause in (untrusted, caveats) if clause)
    return figure, record, ("[marked: conventions differ] " + text) if marked else text


def _side_codes(rows: list[dict[str, Any]], field: str, sides: tuple[int, int]) -> dict[str, list[set[str]]]:
    """Per side of the pair (by letter), the codes ``field`` (``doubts`` or ``caveats``) gives
    each of ``rows`` that has any on that side."""
    return {LETTERS[side % 26]: [set(r[field][side]) for r in rows if r.get(field) and r[field][side]]
            for side in sides}


def _compute_bound(suite: str, rows: list[dict[str, Any]], classes: list[dict[str, Any]]) -> list[dict[str, Any]] | None:
    """Rows compute-bound in every run of both sides, or None when the suite does not classify
    its cases."""
    tables = [((c.get(suite) or {}).get("rows") or {}) for c in classes]
    if not tables or not all(any("class" in v for v in t.values()) for t in tables):
        return None
    return [r for r in rows if all((t.get(r["key"]) or {}).get("class") == "compute-bound" for t in tables)]


def _efficiencies(suite: str, rows: list[dict[str, Any]], data: PairData, classes: list[dict[str, Any]],
                  figures: list[Figure]) -> str:
    """Each side's median efficiency over the intersection (per shape, the mean over the side's
    runs), appended as figures; the text added to the claim."""
    usable = [r for r in rows if (r["suite"], r["key"]) in data.positions]
    medians = []
    start = 0
    for label, side in zip(data.pair, data.sides):
        tables = [((c.get(suite) or {}).get("rows") or {}) for c in classes[start:start + len(side.runs)]]
        start += len(side.runs)
        per_shape = []
        for r in usable:
            effs = [(t.get(r["key"]) or {}).get("efficiency") for t in tables]
            if all(isinstance(e, (int, float)) for e in effs):
                per_shape.append(float(np.mean(np.asarray(effs, dtype=np.float64))))
        if not per_shape:
            return ""
        medians.append(median(per_shape))
        figures.append(Figure(name=f"{suite}.median_efficiency.compute-bound.intersection", value=medians[-1],
                              unit="1", method="median of achieved/attainable over the shapes compute-bound on every "
                                               "run (per shape the mean over the side's runs)",
                              scope={"suite": suite, "run": label, "subset": "compute-bound on every run",
                                     "cases": len(per_shape), "runs_per_side": len(side.runs)}))
    return f"; median efficiency {medians[0]:.1%} on {data.pair[0]} vs {medians[1]:.1%} on {data.pair[1]}"


def _suite_figures(side: Side, suite: str) -> list[dict[str, StoredFigure]]:
    return [{f.name: f for f in figs if f.suite == suite and f.case is None} for figs in side.figures]


def _case_sets(side: Side, suite: str) -> list[frozenset[str]]:
    """Per run, the keys of the suite's cases that have a headline (what its figures are over)."""
    return [frozenset(c.key for c in cases if c.suite == suite and headline(c) is not None) for cases in side.cases]


def _figure_ratios(suite: str, data: PairData) -> list[tuple[Figure, RatioRecord]]:
    """``B's figure / A's`` for every suite figure all runs of both sides report: comparable
    scopes only, unless forced (then marked); not comparable ones listed with the reason."""
    per_run = _suite_figures(data.sides[0], suite) + _suite_figures(data.sides[1], suite)
    sets = _case_sets(data.sides[0], suite) + _case_sets(data.sides[1], suite)
    n_a = len(data.sides[0].runs)
    out = []
    for name in per_run[0]:
        stored = [f.get(name) for f in per_run]
        if any(s is None or s.value is None for s in stored):
            continue
        present = [s for s in stored if s is not None]
        check = figure_comparability(present, sets)
        values = [float(s.value) for s in present if s.value is not None]
        value, ci = _figure_ratio(values[:n_a], values[n_a:]) if (check.comparable or data.force) else (None, None)
        if check.comparable and value is None:
            continue  # a figure of no sign (a fitted offset of zero): nothing to divide
        note = "" if check.comparable else (f"forced: not comparable: {check.reason}" if data.force
                                            else f"not comparable: {check.reason}")
        if check.comparable and ci is not None and ci[0] <= 1.0 <= ci[1]:
            note = NO_DIFFERENCE  # said beside the ratio, as for the medians
        scope = {"suite": suite, "figure": name, "runs": list(data.pair), "runs_per_side": list(data.runs),
                 "comparable": check.comparable}
        figure = Figure(name=f"{name}.ratio", value=value, unit="x", ci95=ci, note=note, scope=scope,
                        method=f"{data.pair[1]}'s {name} / {data.pair[0]}'s ({present[0].unit}; larger means "
                               f"{data.pair[1]}'s figure is larger; with several runs, of the geometric means)")
        word = "not comparable" if value is None else ("no CI" if ci is None else
                                                       NO_DIFFERENCE if ci[0] <= 1 <= ci[1] else
                                                       "larger" if value > 1 else "smaller")
        record = RatioRecord(level="figure", suite=suite, name=name, pair=data.pair, ratio=value, ci95=ci,
                             ci_kind=ci_kind(*data.runs), runs=data.runs, verdict=word, comparable=check.comparable,
                             reason=check.reason, marked=not check.comparable, scope=scope)
        out.append((figure, record))
    return out


def _figure_ratio(a: list[float], b: list[float]) -> tuple[float | None, tuple[float, float] | None]:
    """Geometric mean of B's over A's (positive figures); a between-run CI from the run-level
    bootstrap with two or more runs per side; ``(None, None)`` for figures not all positive."""
    if not a or not b or any(v <= 0 for v in a + b):
        return None, None
    if len(a) == 1 and len(b) == 1:
        return b[0] / a[0], None
    value = math.exp(float(np.mean(np.log(b))) - float(np.mean(np.log(a))))
    if min(len(a), len(b)) < 2:
        return value, None
    draws = hierarchical_log_ratios(side_runs([a], [[None] * len(a)], higher_is_better=[True]),
                                    side_runs([b], [[None] * len(b)], higher_is_better=[True]))
    return case_interval(draws, 0)
