"""``compare_runs``: stored runs side by side, per joined case and in summary, with the audit.

Each source is a side: one run, several runs of one measurement (``A1,A2,A3``) or a repeat
group (``group:ID``; ``parity.compare.sides``). Per case: each side's headline (``parity.compare.join``;
with several runs, the geometric mean of the runs' values), and for each side after the first
its speed relative to the first with a CI from the hierarchical bootstrap of
``parity.compare.bootstrap`` (runs, then raw samples within each run), between-run with two or
more runs per side, within-run only with one. Summary figures (``parity.compare.summary``): per
suite and kind the median of the per-case ratios, the same over the intersection of the sides'
compute-bound subsets with each side's median efficiency over it, and the ratio of each suite
figure whose scope matches on both sides (else listed as not comparable, with the reason).
Everything is read from the cases' canonical metrics and the store's figures table.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from parity.compare.audit import AuditEntry, audit_runs, run_mode
from parity.compare.bootstrap import RatioDraws, case_interval, ci_kind, hierarchical_log_ratios, side_runs
from parity.compare.join import Headline, JoinedCase, headline, headline_medians, headline_value, join_cases
from parity.compare.ratio import speed_ratio
from parity.compare.records import RatioRecord
from parity.compare.sides import Side, describe_side, load_sides
from parity.compare.summary import PairData, pair_summaries
from parity.compare.wording import LETTERS, verdict
from parity.model.errors import ParityError
from parity.model.figure import Figure
from parity.model.findings import CAVEATS, UNTRUSTED
from parity.model.result import RunRecord
from parity.model.schema import SCHEMA_VERSION
from parity.store.headlines import NOT_COMPARED
from parity.store.database import Store

RATIO_METHOD = ("speed of each side relative to the first (A): rate_B / rate_A for a rate, time_A / time_B for a "
                "time; with several runs a side, the ratio of the geometric means of its runs' values; 95% CI "
                "from a hierarchical bootstrap (runs, then raw samples within each drawn run), between-run with "
                "two or more runs per side, within-run only with one")


@dataclass(frozen=True, kw_only=True)
class Comparison:
    """Sides side by side; :meth:`to_dict` is the schema the renderers read. ``ratios`` holds one
    typed :class:`RatioRecord` per case, summary and suite figure ratio (CI, kind, comparable)."""

    runs: tuple[dict[str, Any], ...]
    cases: tuple[dict[str, Any], ...]
    summary: tuple[Figure, ...]
    audit: tuple[AuditEntry, ...]
    claims: tuple[str, ...]
    forced: bool = False
    notes: tuple[str, ...] = field(default_factory=tuple)
    ratios: tuple[RatioRecord, ...] = field(default_factory=tuple)
    ci_kind: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"schema_version": SCHEMA_VERSION, "kind": "runs", "runs": [dict(r) for r in self.runs],
                "cases": [dict(c) for c in self.cases], "summary": [f.to_dict() for f in self.summary],
                "audit": [a.to_dict() for a in self.audit], "claims": list(self.claims), "forced": self.forced,
                "ratio_method": RATIO_METHOD, "notes": list(self.notes), "ci_kind": self.ci_kind,
                "ratios": [r.to_dict() for r in self.ratios],
                "not_comparable": [r.to_dict() for r in self.ratios if not r.comparable]}


def resolve_run_ids(store: Store, run_ids: list[str]) -> list[str]:
    """Full ids for ids, unique prefixes, ``latest`` and ``latest~N`` (the store resolves each)."""
    return [store.resolve_run_id(text) for text in run_ids]


def run_device(run: RunRecord) -> str:
    """The device a run measured, as its provenance names it."""
    props = (run.provenance.get("device") or {}).get("properties") or {}
    return str(props.get("name") or run.provenance.get("device_identity") or run.config.get("device") or "?")


def describe_run(run: RunRecord, index: int, cases: int) -> dict[str, Any]:
    """The ``runs`` entry of one run: id, label (its ``--label`` or device), device, mode."""
    device = run_device(run)
    name = run.config.get("label") or device
    return {"id": run.run_id, "label": f"{LETTERS[index % 26]}: {name}", "device": device,
            "device_type": (run.provenance.get("device") or {}).get("type"), "mode": run_mode(run),
            "quick": bool(run.config.get("quick")), "created_at": run.created_at,
            "host": (run.provenance.get("host") or {}).get("hostname"), "cases": cases}


def _describe(side: Side, index: int) -> dict[str, Any]:
    out = describe_run(side.first, index, len(side.cases[0]))
    out.update(describe_side(side, letter=LETTERS[index % 26], cases=len(side.cases[0]), device=out["device"]))
    return out


def compare_runs(db: Store, sources: list[str], *, force: bool = False) -> Comparison:
    """Compare two or more sides, each one stored run or several (module docstring)."""
    if len(sources) < 2:
        raise ParityError("compare needs at least two runs or sides; give run ids, latest or latest~1, or sides "
                          "as A1,A2,A3 B1,B2,B3 or group:ID")
    sides = load_sides(db, list(sources))
    starts = [sum(len(s.runs) for s in sides[:i]) for i in range(len(sides))]
    joined_all, only_all = join_cases([list(c) for s in sides for c in s.cases])
    joined = [JoinedCase(suite=j.suite, key=j.key, cases=tuple(j.cases[i] for i in starts)) for j in joined_all]
    only = [sorted(set().union(*only_all[i:i + len(s.runs)])) for i, s in zip(starts, sides)]
    audit, marked = audit_runs([s.first for s in sides], [[c for cs in s.cases for c in cs] for s in sides],
                               joined, only)
    within, within_refused = _within_sides(sides)
    refused = [a for a in audit if a.refused] + within_refused
    if refused and not force:
        what = "; ".join(f"{a.condition}: {' vs '.join(map(str, a.values))}" for a in refused)
        raise ParityError(f"runs {' and '.join(sources)} differ in {what}; pass --force to compare anyway, "
                          "every affected line marked")
    descs = tuple(_describe(s, i) for i, s in enumerate(sides))
    labels = [d["label"] for d in descs]
    rows = [_case_row(j, sides, starts, marked) for j in joined_all]
    ratios: list[RatioRecord] = []
    summary: list[Figure] = []
    claims: list[str] = []
    for index in range(1, len(sides)):
        draws, positions = _pair_ratios(rows, sides, index, starts)
        pair = (labels[0], labels[index])
        ratios += _case_records(rows, index, pair, (len(sides[0].runs), len(sides[index].runs)))
        figures, records, texts = pair_summaries(PairData(rows=rows, index=index, pair=pair, draws=draws,
                                                          positions=positions, sides=(sides[0], sides[index]),
                                                          marked=marked, force=force))
        summary += figures
        ratios += records
        claims += texts
    kinds = {ci_kind(len(sides[0].runs), len(s.runs)) for s in sides[1:]}
    notes = [_ci_note(sides)] + within + not_compared_notes(rows)
    return Comparison(runs=descs, cases=tuple(public_rows(rows)), summary=tuple(summary), audit=tuple(audit),
                      claims=tuple(claims), forced=bool(force and refused), notes=tuple(notes),
                      ratios=tuple(ratios), ci_kind=" / ".join(sorted(kinds)))


def not_compared_notes(rows: list[dict[str, Any]]) -> list[str]:
    """One note per reason a case got no ratio, naming its cases (the first three)."""
    by_reason: dict[str, list[str]] = {}
    for row in rows:
        if row["reason"]:
            by_reason.setdefault(row["reason"], []).append(f"{row['suite']} {row['key']}")
    return [f"{len(keys)} case{'s' if len(keys) > 1 else ''} not compared ({reason}): {', '.join(keys[:3])}"
            + (f" and {len(keys) - 3} more" if len(keys) > 3 else "") for reason, keys in by_reason.items()]


def _ci_note(sides: list[Side]) -> str:
    counts = ", ".join(f"{LETTERS[i % 26]} {len(s.runs)}" for i, s in enumerate(sides))
    if min(len(s.runs) for s in sides) >= 2:
        return (f"CIs are between-run: a hierarchical bootstrap over runs (runs per side: {counts}), then raw "
                "samples within each run")
    return (f"CIs are within-run only (runs per side: {counts}): run-to-run variation is not measured; give "
            "several runs per side (parity run --repeat N, then compare group:ID group:ID) for a between-run CI")


def _within_sides(sides: list[Side]) -> tuple[list[str], list[AuditEntry]]:
    """What differs between the runs of one side (notes), and the refused conditions among them."""
    notes: list[str] = []
    refused: list[AuditEntry] = []
    for i, side in enumerate(sides):
        if len(side.runs) < 2:
            continue
        joined, only = join_cases([list(c) for c in side.cases])
        entries, _ = audit_runs(list(side.runs), [list(c) for c in side.cases], joined, only)
        for entry in entries:
            values = " vs ".join(dict.fromkeys(str(v) for v in entry.values))
            notes.append(f"runs of side {LETTERS[i % 26]} differ in {entry.condition}: {values}")
        refused += [e for e in entries if e.refused]
    return notes, refused


def _case_row(j: JoinedCase, sides: list[Side], starts: list[int], marked: set[tuple[str, str]]) -> dict[str, Any]:
    chosen = None if _declared_not_compared(j) else headline(j.cases[0])
    per_run = [headline_value(c, chosen) if chosen else None for c in j.cases]
    per_side = [per_run[start:start + len(s.runs)] for start, s in zip(starts, sides)]
    values = [_geometric_mean(v) for v in per_side]
    reason = not_compared_reason(j, chosen, per_run, [r.run_id for side in sides for r in side.runs])
    return {"suite": j.suite, "key": j.key, "params": dict(j.cases[0].params), "values": values,
            "run_values": per_side, "unit": chosen.unit if chosen else None,
            "metric": chosen.metric if chosen else None,
            "higher_is_better": chosen.higher_is_better if chosen else None,
            "from_main_samples": bool(chosen and chosen.from_main_samples),
            "ratio": None, "ratio_ci95": None, "ci_kind": None, "verdict": None, "comparable": not reason,
            "reason": reason,
            "ratios": [None] * len(sides), "ratios_ci95": [None] * len(sides),
            "ok": [all(c.ok for c in j.cases[start:start + len(s.runs)]) for start, s in zip(starts, sides)],
            "doubts": _side_codes(j, sides, starts, UNTRUSTED), "caveats": _side_codes(j, sides, starts, CAVEATS),
            "marked": (j.suite, j.key) in marked, "_cases": j.cases, "_headline": chosen}


def _side_codes(j: JoinedCase, sides: list[Side], starts: list[int], codes: tuple[str, ...]) -> list[list[str]]:
    """Per side, the finding codes among ``codes`` that any of its runs' case carries, sorted."""
    return [sorted({f.code for c in j.cases[start:start + len(s.runs)] for f in c.findings if f.code in codes})
            for start, s in zip(starts, sides)]


def not_compared_reason(j: JoinedCase, chosen: Headline | None, per_run: list[float | None],
                        run_ids: list[str]) -> str:
    """Why a joined case gets no ratio ('' when it gets one): no headline figure (in the case's
    own words where a run's case gives them, ``NOT_COMPARED``: a GEMM sweep's ceiling search and
    sentinels), or a run without a value (the case failed there)."""
    if chosen is None:
        return _declared_not_compared(j) or "no headline figure among its metrics"
    missing = [i for i, v in enumerate(per_run) if v is None]
    if missing:
        error = next((j.cases[i].error for i in missing if j.cases[i].error), None)
        why = f"failed: {error.splitlines()[0][:80]}" if error else "not ok, or no positive value"
        return f"no {chosen.metric} in run {', '.join(run_ids[i] for i in missing)} ({why})"
    return ""


def _declared_not_compared(j: JoinedCase) -> str:
    """The first reason a run's case gives for not being compared (``NOT_COMPARED``), or ''."""
    return next((str(r) for r in (c.metrics.get(NOT_COMPARED) for c in j.cases) if isinstance(r, str) and r), "")


def _geometric_mean(values: list[float | None]) -> float | None:
    if not values or any(v is None or v <= 0 for v in values):
        return None
    if len(values) == 1:
        return values[0]  # exactly the run's value
    return math.exp(sum(math.log(v) for v in values if v is not None) / len(values))


def _pair_ratios(rows: list[dict[str, Any]], sides: list[Side], index: int,
                 starts: list[int]) -> tuple[RatioDraws | None, dict[tuple[str, str], int]]:
    """Side ``index`` against side 0 on every case both measured in all their runs: the
    bootstrap's draws, each case's position in them, and the rows' ratios and CIs filled in."""
    usable = [r for r in rows if r["values"][0] is not None and r["values"][index] is not None]
    if not usable:
        return None, {}
    sided = []
    for side_index in (0, index):
        start, n = starts[side_index], len(sides[side_index].runs)
        values = [r["run_values"][side_index] for r in usable]
        times = [[headline_medians(c, r["_headline"]) for c in r["_cases"][start:start + n]] for r in usable]
        sided.append(side_runs(values, times, higher_is_better=[bool(r["higher_is_better"]) for r in usable]))
    draws = hierarchical_log_ratios(sided[0], sided[1])
    positions = {}
    for i, row in enumerate(usable):
        ratio, ci = case_interval(draws, i)
        if draws.runs == (1, 1):  # the same number without a round trip through logs
            ratio = speed_ratio(row["values"][0], row["values"][index], higher_is_better=bool(row["higher_is_better"]))
        row["ratios"][index] = ratio
        row["ratios_ci95"][index] = list(ci) if ci else None
        if index == 1:
            row.update(ratio=ratio, ratio_ci95=row["ratios_ci95"][1], ci_kind=draws.kind, verdict=verdict(ratio, ci))
        positions[(row["suite"], row["key"])] = i
    return draws, positions


def _case_records(rows: list[dict[str, Any]], index: int, pair: tuple[str, str],
                  runs: tuple[int, int]) -> list[RatioRecord]:
    out = []
    for row in rows:
        ratio, ci = row["ratios"][index], row["ratios_ci95"][index]
        ci_t = (ci[0], ci[1]) if ci else None
        out.append(RatioRecord(level="case", suite=row["suite"], name=row["key"], pair=pair, ratio=ratio, ci95=ci_t,
                               ci_kind=ci_kind(*runs), runs=runs, verdict=verdict(ratio, ci_t) if ratio else "no value",
                               marked=row["marked"], scope={"params": row["params"], "unit": row["unit"]}))
    return out


def public_rows(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The rows without the bookkeeping key ``_cases``."""
    return [{k: v for k, v in r.items() if not k.startswith("_")} for r in rows]
