"""The comparison as the HTML report draws it: a small adapter over a comparison's ``to_dict()``
(runs, per-case ratios sorted by suite then size or intensity, the reading of each ratio, the
warnings that change a reading). The report reads the comparison only through it, so fields a
newer comparison adds (``ci_kind``, ``comparable`` and ``reason`` on a case or summary figure,
``ratios`` per run, ``doubts``) are read with defaults and an older document still draws.
"""

from __future__ import annotations

import re
from typing import Any

import msgspec

from parity.model.findings import doubt_text

NO_DIFFERENCE = "no difference measured"
READINGS = ("faster", "slower", NO_DIFFERENCE, "no CI", "not comparable", "forced: conventions differ", "no ratio")
WITHIN_RUN = "within-run"
NO_CI = "none: one analysis per side, no samples to resample"  # traces and fleets


class ComparedRun(msgspec.Struct, frozen=True, kw_only=True):
    """One run of a comparison: its id and the name legends and headings use; ``runs`` names
    every run of a side of several (:func:`run_ids`)."""

    id: str
    label: str
    device: str = ""
    runs: str = ""


class CaseRatio(msgspec.Struct, frozen=True, kw_only=True):
    """One per-case ratio of run ``against`` to the first run, with its CI, the reading a reader
    takes from it, which of the two runs could not vouch for it and why (``doubt``: ``contended
    in A``, '' when both could), and where it sorts (``order``: suite, the words that group its
    cases, then size or intensity, then key)."""

    suite: str
    key: str
    against: str
    ratio: float | None
    low: float | None
    high: float | None
    reading: str
    reason: str
    ci_kind: str
    order: tuple[Any, ...]
    size_name: str
    size: float | None
    doubt: str = ""


class ComparisonPage(msgspec.Struct, frozen=True, kw_only=True):
    """What the report draws of a comparison: runs, per-case ratios, the CI kind and warnings."""

    runs: tuple[ComparedRun, ...]
    ratios: tuple[CaseRatio, ...]
    ci_kind: str
    warnings: tuple[dict[str, Any], ...]


def run_ids(run: dict[str, Any]) -> str:
    """What a side of the comparison is: its run id (or trace source), or for a side of several
    runs its group and every run's id, so the header names each run the CIs were drawn over."""
    ids = run.get("ids") or []
    if len(ids) > 1:
        named_group = str(run.get("spec") or "").startswith("group:") and run.get("group")
        name = f"group {run['group']}" if named_group else "a list"
        return f"{name}, {len(ids)} runs: {', '.join(ids)}"
    return str(run.get("id") or run.get("source"))


def case_marks(case: dict[str, Any], *first: str) -> str:
    """A case row's mark: ``first`` (its own marks: forced, not compared), then which side could
    not vouch for it and which measured it under a caveat (``contended in A; one-rank in A and
    B``), joined by "; "; '' when there is none."""
    return "; ".join(m for m in (*first, doubt_text(case.get("doubts")), doubt_text(case.get("caveats"))) if m)


def compared_runs(doc: dict[str, Any], labels: dict[str, str] | None = None) -> tuple[ComparedRun, ...]:
    """The runs of ``doc``, named by ``labels`` (run id to the report's label) where given, else
    by the user label the comparison carries, else its own label; never two alike."""
    from parity.report.html.chart import unique_names

    runs = [r for r in doc.get("runs") or [] if isinstance(r, dict)]
    names = []
    for r in runs:
        rid = str(r.get("id") or r.get("source") or "")
        config = r["config"] if isinstance(r.get("config"), dict) else {}
        user = r.get("user_label") or config.get("label")
        names.append(str((labels or {}).get(rid) or user or r.get("label") or rid or "run"))
    return tuple(ComparedRun(id=str(r.get("id") or r.get("source") or ""), label=name, device=str(r.get("device") or ""),
                             runs=run_ids(r)) for r, name in zip(runs, unique_names(names)))


COUNTERS = ("index", "rounds", "repeats", "threads", "max_samples", "again_of")


def size_of(params: dict[str, Any], varying: set[str] | None = None) -> tuple[str, float | None]:
    """What a case sorts by, from its parameters alone: an arithmetic intensity when it has one,
    else a size in bytes, else the product of its one-letter integer dimensions (a shape's
    ``m·n·k``), else its first integer parameter (a batch, a concurrency), harness counters aside.
    With ``varying`` (the parameters whose values differ between the suite's cases), only those:
    an option every case shares (``max_bytes``) sorts nothing."""
    numbers = {k: v for k, v in params.items() if isinstance(v, (int, float)) and not isinstance(v, bool)
               and k not in COUNTERS and (varying is None or k in varying)}
    for name, value in numbers.items():
        if "intensity" in name:
            return "arithmetic intensity", float(value)
    for name, value in numbers.items():
        if name.endswith("bytes"):
            return "size (B)", float(value)
    dims = [float(v) for k, v in numbers.items() if len(k) == 1 and isinstance(v, int) and v > 0]
    if dims:
        product = 1.0
        for v in dims:
            product *= v
        return "size", product
    counts = [(k, float(v)) for k, v in numbers.items() if isinstance(v, int)]
    return counts[0] if counts else ("", None)


def reading(ratio: float | None, ci: Any, *, marked: bool = False, comparable: bool = True) -> str:
    """How a ratio of speed (B over A) reads: forced, not comparable, no CI, or faster or slower
    when its CI excludes 1, else "no difference measured" (never a speed-up)."""
    if marked:
        return READINGS[5]
    if not comparable:
        return READINGS[4]
    if ratio is None:
        return READINGS[6]
    if not ci or ci[0] is None or ci[1] is None:
        return READINGS[3]
    if ci[0] > 1:
        return READINGS[0]
    if ci[1] < 1:
        return READINGS[1]
    return NO_DIFFERENCE


NAMES = ("name", "origin", "family", "again_of")  # parameters that name a case rather than group it


def varying_params(cases: list[dict[str, Any]]) -> dict[str, tuple[set[str], list[str]]]:
    """Per suite, the parameters whose values differ between its cases, and of those the words
    that group cases (an operation, a regime: at most half as many values as cases hold them)."""
    seen: dict[str, dict[str, list[Any]]] = {}
    for case in cases:
        values = seen.setdefault(str(case.get("suite")), {})
        for k, v in (case.get("params") or {}).items():
            values.setdefault(k, []).append(v)
    out = {}
    for suite, values in seen.items():
        count = sum(1 for c in cases if str(c.get("suite")) == suite)
        varying = {k for k, v in values.items() if len({repr(x) for x in v}) > 1 or count == 1}
        groups = [k for k in values if k in varying and k not in NAMES and all(isinstance(x, str) for x in values[k])
                  and len(set(values[k])) <= max(1, len(values[k]) // 2)]
        out[suite] = (varying, groups)
    return out


def _case_ratios(case: dict[str, Any], names: list[str], default_kind: str,
                 varying: tuple[set[str], list[str]]) -> list[CaseRatio]:
    ratios = case.get("ratios") or [None, case.get("ratio")]
    cis = case.get("ratios_ci95") or [None, case.get("ratio_ci95")]
    params = case.get("params") or {}
    size_name, size = size_of(params, varying[0])
    group = tuple(str(params.get(k, "")) for k in varying[1])
    comparable = bool(case.get("comparable", True))
    out = []
    for index in range(1, len(ratios)):
        ratio = ratios[index]
        ci = cis[index] if index < len(cis) else None
        low, high = (ci[0], ci[1]) if ci else (None, None)
        out.append(CaseRatio(
            suite=str(case.get("suite")), key=str(case.get("key")),
            against=names[index] if index < len(names) else f"run {index + 1}", ratio=ratio, low=low, high=high,
            reading=reading(ratio, ci, marked=bool(case.get("marked")), comparable=comparable),
            reason=str(case.get("reason") or ""), ci_kind=str(case.get("ci_kind") or default_kind),
            order=(str(case.get("suite")), group, size is None, size_name, size or 0.0, str(case.get("key"))),
            size_name=size_name, size=size,
            doubt=doubt_text([d if i in (0, index) else [] for i, d in enumerate(case.get("doubts") or [])])))
    return out


def value_titles(doc: dict[str, Any], names: list[str]) -> list[str]:
    """The titles of a comparison's value columns, one per run named in ``names``: a trace by its
    letter (its label can be a path, named in full above the table), with ``per step`` where the
    comparison lines up times per step."""
    per = " per step" if doc.get("times") == "per step" else ""
    traces = doc.get("kind") == "traces"
    return [f"{name.split(':', 1)[0] if traces else name}{per}" for name in names]


def comparison_page(doc: dict[str, Any], labels: dict[str, str] | None = None) -> ComparisonPage:
    """The comparison ``doc`` as the report draws it, sorted by suite then size or intensity."""
    runs = compared_runs(doc, labels)
    names = [r.label for r in runs]
    kinds = {str(c.get("ci_kind")) for c in doc.get("cases") or [] if c.get("ci_kind")}
    default = NO_CI if doc.get("kind") in ("traces", "fleets") else WITHIN_RUN  # an analysis per side has no samples
    ci_kind = str(doc.get("ci_kind") or (kinds.pop() if len(kinds) == 1 else "mixed" if kinds else default))
    cases = [c for c in doc.get("cases") or [] if isinstance(c, dict)]
    varying = varying_params(cases)
    ratios = sorted((r for case in cases for r in _case_ratios(case, names, ci_kind, varying[str(case.get("suite"))])),
                    key=lambda r: r.order)
    return ComparisonPage(runs=runs, ratios=tuple(ratios), ci_kind=ci_kind, warnings=tuple(comparison_warnings(doc, ci_kind)))


def comparison_warnings(doc: dict[str, Any], ci_kind: str) -> list[dict[str, Any]]:
    """What changes how the ratios read, as findings to show beside the ratio chart: forced
    conventions, refused or mattering audit lines, figures not comparable, within-run CIs."""
    out = []
    if doc.get("forced"):
        out.append(_finding("forced", "warning", "forced across different conventions: every marked case mixes them"))
    notes = [str(n) for n in doc.get("notes") or []]
    if "within" in ci_kind and not any("within-run" in n for n in notes):  # the comparison may say it itself
        out.append(_finding("within-run", "info", "CIs are within-run only (one run per side): they leave out "
                                                  "run-to-run variance, so a small difference may be noise"))
    for a in doc.get("audit") or []:
        if a.get("refused") or a.get("matters"):
            why = a["matters"] if isinstance(a.get("matters"), str) else ""
            values = " vs ".join("-" if v is None else str(v) for v in a.get("values") or [])
            out.append(_finding("audit", "warning", f"{a.get('condition')} differs: {values}"
                                + (" (refused unless forced)" if a.get("refused") else "") + (f" ({why})" if why else "")))
    said: set[str] = set()
    cases_said = " ".join(n for n in notes if " not compared (" in n)  # a run comparison groups its cases by reason
    for item in [*(doc.get("cases") or []), *(doc.get("summary") or []), *(doc.get("not_comparable") or [])]:
        if "key" in item and item.get("reason") and f"not compared ({item['reason']})" in cases_said:
            continue
        if isinstance(item, dict) and item.get("comparable") is False:
            what = item.get("name") or f"{item.get('suite')} {item.get('key')}"
            message = f"{what}: not comparable" + (f" ({item['reason']})" if item.get("reason") else "")
            if message not in said:
                said.add(message)
                out.append(_finding("not-comparable", "warning", message))
    out += [_finding("note", "info", n) for n in notes]
    return out


def _finding(code: str, severity: str, message: str) -> dict[str, Any]:
    return {"code": code, "severity": severity, "message": message, "hint": ""}


def relabel_comparison(doc: dict[str, Any], names: dict[str, str]) -> dict[str, Any]:
    """``doc`` with each run's own label (``A: AMD EPYC``) replaced by the report's name for it
    (``names``: run id to label) in the runs, claims and summary, so one run reads by one name
    across the page. Only text is changed; no number."""
    swaps = {str(r["label"]): names[str(r.get("id"))] for r in doc.get("runs") or []
             if isinstance(r, dict) and r.get("label") and names.get(str(r.get("id"))) not in (None, r.get("label"))}
    if not swaps:
        return doc
    order = sorted(swaps, key=len, reverse=True)
    pattern = re.compile("|".join(re.escape(old) for old in order))

    def text(value: Any) -> Any:
        if isinstance(value, str):
            return pattern.sub(lambda m: swaps[m.group(0)], value)
        if isinstance(value, list):
            return [text(v) for v in value]
        if isinstance(value, dict):
            return {k: text(v) for k, v in value.items()}
        return value

    runs = [{**r, "label": swaps.get(str(r.get("label")), r.get("label"))} if isinstance(r, dict) else r
            for r in doc.get("runs") or []]
    return {**doc, "runs": runs, "claims": text(list(doc.get("claims") or [])),
            "summary": [{k: (text(v) if k in ("name", "note", "method", "scope") else v) for k, v in f.items()}
                        for f in doc.get("summary") or [] if isinstance(f, dict)],
            "notes": text(list(doc.get("notes") or []))}
