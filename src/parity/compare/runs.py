"""``compare_runs``: stored runs side by side, per joined case and in summary, with the audit.

Per case: every run's headline figure (``parity.compare.join``), and for each run after the
first its speed relative to the first (``parity.compare.ratio``), with a bootstrap CI of the
ratio of medians from the raw samples where both cases stored one sample set. Summary figures
(``parity.model.figure.Figure``): per suite the median of the per-case ratios over the joined
cases that ran and passed their checks in every run; where a suite classifies its cases
(``class`` in the scope of its stored per-case figures) the same over the intersection of the
runs' compute-bound subsets, beside each run's median ``efficiency`` figure over that
intersection; and the ratio of each suite figure both runs report. Everything is read from the
cases' canonical metrics and the store's figures table, never from a suite's summary.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from parity.compare.audit import AuditEntry, audit_runs, run_mode
from parity.compare.join import JoinedCase, headline, headline_value, join_cases, main_times
from parity.compare.ratio import median_ratio, sample_speed_ratio_ci, speed_ratio
from parity.model.errors import ParityError
from parity.model.figure import Figure
from parity.model.result import CaseResult, RunRecord
from parity.model.schema import SCHEMA_VERSION
from parity.stats.summary import median
from parity.store.database import Store
from parity.store.figures import StoredFigure

LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
RATIO_METHOD = ("speed of the run relative to the first: rate / first run's rate (time: first run's time / "
                "time); 95% bootstrap CI of the ratio of medians of the raw samples")


@dataclass(frozen=True, kw_only=True)
class Comparison:
    """Runs side by side; :meth:`to_dict` is the schema the renderers read."""

    runs: tuple[dict[str, Any], ...]
    cases: tuple[dict[str, Any], ...]
    summary: tuple[Figure, ...]
    audit: tuple[AuditEntry, ...]
    claims: tuple[str, ...]
    forced: bool = False
    notes: tuple[str, ...] = field(default_factory=tuple)

    def to_dict(self) -> dict[str, Any]:
        return {"schema_version": SCHEMA_VERSION, "kind": "runs", "runs": [dict(r) for r in self.runs],
                "cases": [dict(c) for c in self.cases], "summary": [f.to_dict() for f in self.summary],
                "audit": [a.to_dict() for a in self.audit], "claims": list(self.claims), "forced": self.forced,
                "ratio_method": RATIO_METHOD, "notes": list(self.notes)}


def resolve_run_ids(store: Store, run_ids: list[str]) -> list[str]:
    """Full ids for ids, unique prefixes, ``latest`` and ``latest~N`` (the store resolves each)."""
    return [store.resolve_run_id(text) for text in run_ids]


def describe_run(run: RunRecord, index: int, cases: int) -> dict[str, Any]:
    """The ``runs`` entry of a comparison: id, label, device, mode and what else tells it apart."""
    props = (run.provenance.get("device") or {}).get("properties") or {}
    device = props.get("name") or run.provenance.get("device_identity") or run.config.get("device") or "?"
    return {"id": run.run_id, "label": f"{LETTERS[index % 26]}: {device}", "device": device,
            "device_type": (run.provenance.get("device") or {}).get("type"), "mode": run_mode(run),
            "quick": bool(run.config.get("quick")), "created_at": run.created_at,
            "host": (run.provenance.get("host") or {}).get("hostname"), "cases": cases}


def compare_runs(db: Store, run_ids: list[str], *, force: bool = False) -> Comparison:
    """Compare two or more stored runs (ids, prefixes, ``latest``, ``latest~N``)."""
    if len(run_ids) < 2:
        raise ParityError("compare needs at least two runs; give run ids, latest or latest~1")
    ids = resolve_run_ids(db, run_ids)
    runs = [db.get_run(i) for i in ids]
    per_run = [db.cases(i) for i in ids]
    stored = [db.figures(i) for i in ids]
    joined, only = join_cases(per_run)
    audit, marked = audit_runs(runs, per_run, joined, only)
    refused = [a for a in audit if a.refused]
    if refused and not force:
        what = "; ".join(f"{a.condition}: {' vs '.join(map(str, a.values))}" for a in refused)
        raise ParityError(f"runs {' and '.join(ids)} differ in {what}; pass --force to compare anyway, "
                          "every affected line marked")
    rows = [_case_row(j, marked) for j in joined]
    summary, claims = _summaries(runs, stored, rows, marked)
    descs = tuple(describe_run(r, i, len(c)) for i, (r, c) in enumerate(zip(runs, per_run)))
    return Comparison(runs=descs, cases=tuple(rows), summary=tuple(summary), audit=tuple(audit),
                      claims=tuple(claims), forced=bool(force and refused))


def _case_row(j: JoinedCase, marked: set[tuple[str, str]]) -> dict[str, Any]:
    chosen = headline(j.cases[0])
    values = [headline_value(c, chosen) if chosen else None for c in j.cases]
    ratios: list[float | None] = [None]
    cis: list[list[float] | None] = [None]
    for case, value in zip(j.cases[1:], values[1:]):
        ratio, ci = _pair_ratio(j.cases[0], case, values[0], value, chosen)
        ratios.append(ratio)
        cis.append(ci)
    return {"suite": j.suite, "key": j.key, "params": dict(j.cases[0].params), "values": values,
            "unit": chosen.unit if chosen else None, "metric": chosen.metric if chosen else None,
            "higher_is_better": chosen.higher_is_better if chosen else None,
            "ratio": ratios[1], "ratio_ci95": cis[1], "ratios": ratios, "ratios_ci95": cis,
            "ok": [c.ok for c in j.cases], "marked": (j.suite, j.key) in marked}


def _pair_ratio(a: CaseResult, b: CaseResult, va: float | None, vb: float | None,
                chosen: Any) -> tuple[float | None, list[float] | None]:
    if va is None or vb is None:
        return None, None
    ratio = speed_ratio(va, vb, higher_is_better=chosen.higher_is_better)
    times_a, times_b = main_times(a), main_times(b)
    if times_a and times_b and chosen.from_main_samples:
        _, (low, high) = sample_speed_ratio_ci(times_a, times_b)
        return ratio, [low, high]
    return ratio, None


def case_figures(figures: list[StoredFigure]) -> dict[str, dict[str, Any]]:
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


def _summaries(runs: list[RunRecord], stored: list[list[StoredFigure]], rows: list[dict[str, Any]],
               marked: set[tuple[str, str]]) -> tuple[list[Figure], list[str]]:
    figures: list[Figure] = []
    claims: list[str] = []
    labels = [describe_run(r, i, 0)["label"] for i, r in enumerate(runs)]
    classes = [case_figures(s) for s in stored]
    for group in dict.fromkeys(_group(r) for r in rows):
        suite_rows = [r for r in rows if _group(r) == group]
        suite = suite_rows[0]["suite"]
        for index in range(1, len(runs)):
            pair = (labels[0], labels[index])
            figures_claims = _median_figure(group, suite_rows, index, pair, subset="all joined", marked=marked)
            if figures_claims:
                figures.append(figures_claims[0])
                if figures_claims[0].scope["cases"] > 1:  # one case is its own row, not a claim
                    claims.append(figures_claims[1])
            bound = _compute_bound(suite, suite_rows, [classes[0], classes[index]])
            if bound is not None:
                extra = _compute_bound_figures(suite, bound, index, pair, [classes[0], classes[index]], marked)
                figures += extra[0]
                claims += extra[1]
            if group == _first_group(rows, suite):
                figures += _figure_ratios(suite, stored[0], stored[index], pair)
    return figures, claims


def _group(row: dict[str, Any]) -> str:
    """Cases summarised together: a suite's cases of one ``kind`` (GEMM shapes apart from its
    ceiling search and bandwidth copy), or the whole suite when its cases have no kind."""
    kind = row["params"].get("kind")
    return f"{row['suite']}.{kind}" if isinstance(kind, str) and kind else row["suite"]


def _first_group(rows: list[dict[str, Any]], suite: str) -> str:
    return next(_group(r) for r in rows if r["suite"] == suite)


def _mark(text: str, marked_rows: list[dict[str, Any]]) -> str:
    return f"[marked: conventions differ] {text}" if any(r["marked"] for r in marked_rows) else text


def _median_figure(suite: str, rows: list[dict[str, Any]], index: int, pair: tuple[str, str], *, subset: str,
                   marked: set[tuple[str, str]]) -> tuple[Figure, str] | None:
    usable = [r for r in rows if r["ratios"][index] is not None]
    if not usable:
        return None
    value, ci = median_ratio([r["ratios"][index] for r in usable])
    name = f"compare.{suite}.median_ratio" + ("" if subset == "all joined" else f".{subset}")
    note = "" if ci else f"too few for a CI (n={len(usable)}, a CI needs 5)"
    if any(r["marked"] for r in usable):
        note = (note + "; " if note else "") + "marked: conventions differ between the runs"
    figure = Figure(name=name, value=value, unit="x", ci95=ci, note=note,
                    method="median over cases of the per-case speed ratio; 95% bootstrap CI over cases",
                    scope={"suite": suite, "subset": subset, "cases": len(usable), "runs": list(pair)})
    what = "shapes" if suite.endswith(".shape") or subset == "compute-bound" else "cases"
    ci_text = f" (95% CI {ci[0]:.3g}-{ci[1]:.3g})" if ci else ""
    kind = "" if subset == "all joined" else f" {subset}"
    claim = (f"on these {len(usable)}{kind} {suite.split('.')[0]} {what}, {pair[1]} runs at a median {value:.3g}x the speed of "
             f"{pair[0]}{ci_text}; not a ranking beyond these cases")
    return figure, _mark(claim, usable)


def _compute_bound(suite: str, rows: list[dict[str, Any]], classes: list[dict[str, Any]]) -> list[dict[str, Any]] | None:
    """Rows compute-bound in every run, or None when the suite does not classify its cases."""
    tables = [((c.get(suite) or {}).get("rows") or {}) for c in classes]
    if not all(any("class" in v for v in t.values()) for t in tables):
        return None
    return [r for r in rows if all((t.get(r["key"]) or {}).get("class") == "compute-bound" for t in tables)]


def _compute_bound_figures(suite: str, rows: list[dict[str, Any]], index: int, pair: tuple[str, str],
                           classes: list[dict[str, Any]], marked: set[tuple[str, str]]) -> tuple[list[Figure], list[str]]:
    figures: list[Figure] = []
    claims: list[str] = []
    pair_ratio = _median_figure(suite, rows, index, pair, subset="compute-bound", marked=marked)
    if pair_ratio:
        figures.append(pair_ratio[0])
    usable = [r for r in rows if r["ratios"][index] is not None]
    medians = []
    for label, table in zip(pair, classes):
        effs = [((table.get(suite) or {}).get("rows") or {}).get(r["key"], {}).get("efficiency") for r in usable]
        effs = [e for e in effs if isinstance(e, (int, float))]
        if not effs:
            return figures, claims
        medians.append(median(effs))
        figures.append(Figure(name=f"{suite}.median_efficiency.compute-bound.intersection", value=medians[-1], unit="1",
                              method="median of achieved/attainable over the shapes compute-bound on every run",
                              scope={"suite": suite, "run": label, "subset": "compute-bound on every run",
                                     "cases": len(effs)}))
    if pair_ratio:
        claims.append(pair_ratio[1].replace("not a ranking", f"median efficiency {medians[0]:.1%} on {pair[0]} vs "
                                            f"{medians[1]:.1%} on {pair[1]}; not a ranking"))
    return figures, claims


def _figure_ratios(suite: str, a: list[StoredFigure], b: list[StoredFigure], pair: tuple[str, str]) -> list[Figure]:
    """``value in B / value in A`` for every figure over the suite's cases both runs report with
    one unit (of a name given twice, the last stored)."""
    def figures_of(figures: list[StoredFigure]) -> dict[str, StoredFigure]:
        return {f.name: f for f in figures if f.suite == suite and f.case is None}

    fa, fb = figures_of(a), figures_of(b)
    out = []
    for name, first in fa.items():
        other = fb.get(name)
        if not other or other.unit != first.unit or not first.value or other.value is None:
            continue
        out.append(Figure(name=f"{name}.ratio", value=other.value / first.value, unit="x",
                          method=f"{pair[1]}'s {name} / {pair[0]}'s ({first.unit}; larger means "
                                 f"{pair[1]}'s figure is larger)",
                          scope={"suite": suite, "figure": name, "runs": list(pair)}))
    return out
