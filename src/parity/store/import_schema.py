"""The schema a run export is checked against before any of it is written.

What :meth:`RunRecord.from_dict` and :meth:`CaseResult.from_dict` let through (they turn any
value into text with ``str``) but a store must not hold:

- ids: the run id and every suite name are ids (:mod:`parity.model.ids`: letters, digits,
  ``.``, ``_``, ``-``), since run ids name files; a case key is non-empty text;
- known fields: the document, the run, each case, each sample set and each finding have only
  the fields an export writes (a misspelt field is refused rather than dropped);
- types: config, provenance, summary, params, metrics, check and telemetry are objects;
  statuses and severities are of their lists; ``created_at`` is an ISO 8601 time;
- numbers where numbers belong: a metric whose name carries a unit (``_s``, ``_bytes``,
  ``_flops``, ``gbps``, ``_per_s``...) is a finite number, null, or a list of them, and so is
  the metric a case names as its headline;
- positive times: every raw sample is a finite number of seconds, not negative, and a sample
  set's median is above zero; time metrics (``_s``, ``_ms``, ``_us``, ``_ns``) are not
  negative, and a headline is above zero.

Each refusal is one line naming the file, where in it, the value, and what to do.
"""

from __future__ import annotations

import math
import statistics
from datetime import datetime
from typing import Any

from parity.model.errors import ParityError
from parity.model.findings import Severity
from parity.model.ids import ID_RULE, is_id
from parity.store.headlines import MEDIANS

DOCUMENT_FIELDS = frozenset({"schema_version", "kind", "run", "cases", "figures"})
RUN_FIELDS = frozenset({"run_id", "created_at", "config", "provenance", "status", "summary"})
CASE_FIELDS = frozenset({"suite", "key", "params", "samples", "metrics", "check", "findings", "telemetry",
                         "error", "ok"})
SAMPLE_FIELDS = frozenset({"values_s", "method", "resolution_s", "calls_per_sample", "warmup_calls", "meta"})
FINDING_FIELDS = frozenset({"code", "severity", "message", "hint"})
SEVERITIES = tuple(s.value for s in Severity)  # every severity a run can store, "invalid" too
TIME_SUFFIXES = ("_s", "_ms", "_us", "_ns")
UNIT_SUFFIXES = TIME_SUFFIXES + ("_bytes", "_flops", "gbps", "_bps", "_per_s", "_w", "_mhz", "_j")
HEADLINE = "headline_metric"


def check_document(document: dict[str, Any], *, source: str, how: str) -> None:
    """Refuse ``document`` (a parsed run export) unless it keeps the module's rules; ``how``
    ends each message (what to do)."""
    _known(document, DOCUMENT_FIELDS, f"{source}", how)
    run = document.get("run")
    if isinstance(run, dict):
        check_run(run, source=source, how=how)
    cases = document.get("cases")
    for index, case in enumerate(cases if isinstance(cases, list) else ()):
        if isinstance(case, dict):
            check_case(case, where=f"{source}: case {index}", how=how)
    figures = document.get("figures")
    for index, figure in enumerate(figures if isinstance(figures, list) else ()):
        if isinstance(figure, dict):
            check_figure(figure, where=f"{source}: figure {index}", how=how)


def check_run(run: dict[str, Any], *, source: str, how: str) -> None:
    where = f"{source}: run"
    _known(run, RUN_FIELDS, where, how)
    run_id = run.get("run_id")
    if not is_id(run_id):
        raise ParityError(f"{where} id {_show(run_id)} is not an id ({ID_RULE}); {how}")
    created = run.get("created_at")
    if not isinstance(created, str) or not _is_time(created):
        raise ParityError(f"{where} created_at {_show(created)} is not an ISO 8601 time; {how}")
    for name in ("config", "provenance", "summary"):
        if name in run and not isinstance(run[name], dict):
            raise ParityError(f"{where} {name} is a JSON {_kind(run[name])}, not an object; {how}")
    if "status" in run and not isinstance(run["status"], str):
        raise ParityError(f"{where} status {_show(run['status'])} is not text; {how}")


def check_case(case: dict[str, Any], *, where: str, how: str) -> None:
    _known(case, CASE_FIELDS, where, how)
    suite, key = case.get("suite"), case.get("key")
    if not is_id(suite):
        raise ParityError(f"{where} suite {_show(suite)} is not an id ({ID_RULE}); {how}")
    if not isinstance(key, str) or not key.strip():
        raise ParityError(f"{where} ({suite}) key {_show(key)} is not non-empty text; {how}")
    where = f"{where} ({suite}/{key})"
    for name in ("params", "metrics", "check", "telemetry", "samples"):
        if name in case and not isinstance(case[name], dict):
            raise ParityError(f"{where} {name} is a JSON {_kind(case[name])}, not an object; {how}")
    if case.get("error") is not None and not isinstance(case["error"], str):
        raise ParityError(f"{where} error {_show(case['error'])} is not text or null; {how}")
    if "ok" in case and not isinstance(case["ok"], bool):
        raise ParityError(f"{where} ok {_show(case['ok'])} is not true or false; {how}")
    for name, samples in (case.get("samples") or {}).items():
        check_samples(samples, where=f"{where} samples {name!r}", how=how)
    check_metrics(case.get("metrics") or {}, where=where, how=how)
    findings = case.get("findings", [])
    if not isinstance(findings, list):
        raise ParityError(f"{where} findings is a JSON {_kind(findings)}, not a list; {how}")
    for finding in findings:
        check_finding(finding, where=f"{where} finding", how=how)


def check_samples(samples: Any, *, where: str, how: str) -> None:
    """A sample set: known fields, every value a finite number of seconds >= 0, median > 0."""
    if not isinstance(samples, dict):
        raise ParityError(f"{where} is a JSON {_kind(samples)}, not an object; {how}")
    _known(samples, SAMPLE_FIELDS, where, how)
    values = samples.get("values_s")
    if not isinstance(values, list) or not values:
        raise ParityError(f"{where} values_s {_show(values)} is not a non-empty list of seconds; {how}")
    bad = [v for v in values if not _number(v) or v < 0]
    if bad:
        raise ParityError(f"{where} holds {_show(bad[0])}, not a time in seconds (finite, not negative); {how}")
    if statistics.median(values) <= 0:
        raise ParityError(f"{where} has a median of 0 s: times must be positive; {how}")
    if not isinstance(samples.get("method"), str):
        raise ParityError(f"{where} method {_show(samples.get('method'))} is not text; {how}")
    for name in ("calls_per_sample", "warmup_calls"):
        value = samples.get(name, 0 if name == "warmup_calls" else 1)
        low = 1 if name == "calls_per_sample" else 0
        if not isinstance(value, int) or isinstance(value, bool) or value < low:
            raise ParityError(f"{where} {name} {_show(value)} is not an integer >= {low}; {how}")
    resolution = samples.get("resolution_s", 0.0)
    if not _number(resolution) or resolution < 0:
        raise ParityError(f"{where} resolution_s {_show(resolution)} is not a time >= 0 s; {how}")
    if "meta" in samples and not isinstance(samples["meta"], dict):
        raise ParityError(f"{where} meta is a JSON {_kind(samples['meta'])}, not an object; {how}")


def check_metrics(metrics: dict[str, Any], *, where: str, how: str) -> None:
    """Unit-named metrics hold numbers (time ones not negative); the headline is positive."""
    for name, value in metrics.items():
        if not name.endswith(UNIT_SUFFIXES):
            continue
        values = value if isinstance(value, list) else [value]
        if any(v is not None and not _number(v) for v in values):
            raise ParityError(f"{where} metric {name} = {_show(value)} is not a number; {how}")
        if name.endswith(TIME_SUFFIXES) and any(v is not None and v < 0 for v in values):
            raise ParityError(f"{where} metric {name} = {_show(value)} is a negative time; {how}")
    medians = metrics.get(MEDIANS)
    if medians is not None and (not isinstance(medians, dict) or not medians
                                or not all(_number(w) for w in medians.values())):
        raise ParityError(f"{where} metric {MEDIANS} = {_show(medians)} is not an object of sample sets and "
                          f"finite weights; {how}")
    headline = metrics.get(HEADLINE)
    if headline is None:
        return
    if not isinstance(headline, str) or headline not in metrics:
        raise ParityError(f"{where} names headline {_show(headline)}, which is not one of its metrics; {how}")
    value = metrics[headline]
    if value is not None and (not _number(value) or value <= 0):
        raise ParityError(f"{where} headline {headline} = {_show(value)} is not a positive number; {how}")


def check_finding(finding: Any, *, where: str, how: str) -> None:
    if not isinstance(finding, dict):
        raise ParityError(f"{where} is a JSON {_kind(finding)}, not an object; {how}")
    _known(finding, FINDING_FIELDS, where, how)
    for name in ("code", "message"):
        if not isinstance(finding.get(name), str):
            raise ParityError(f"{where} {name} {_show(finding.get(name))} is not text; {how}")
    if finding.get("severity") not in SEVERITIES:
        raise ParityError(f"{where} severity {_show(finding.get('severity'))} is not one of "
                          f"{', '.join(SEVERITIES)}; {how}")


def _known(data: dict[str, Any], fields: frozenset[str], where: str, how: str) -> None:
    unknown = sorted(str(k) for k in data if k not in fields)
    if unknown:
        raise ParityError(f"{where} has unknown field {_show(unknown[0])} (known: {', '.join(sorted(fields))}); {how}")


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _is_time(text: str) -> bool:
    try:
        datetime.fromisoformat(text)
    except ValueError:
        return False
    return True


def _kind(value: Any) -> str:
    return {dict: "object", list: "list", str: "string", bool: "boolean", type(None): "null"}.get(
        type(value), "number")


def _show(value: Any, limit: int = 60) -> str:
    """A value for a one-line message: its repr, on one line, shortened."""
    text = " ".join(repr(value).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


FIGURE_FIELDS = frozenset({"suite", "case", "name", "value", "unit", "method", "scope", "ci95", "best", "note",
                           "findings"})


def check_figure(figure: dict[str, Any], *, where: str, how: str) -> None:
    """A stored figure: known fields, its suite an id, its value and best numbers or null."""
    _known(figure, FIGURE_FIELDS, where, how)
    if not is_id(figure.get("suite")):
        raise ParityError(f"{where} suite {_show(figure.get('suite'))} is not an id ({ID_RULE}); {how}")
    if not isinstance(figure.get("name"), str) or not figure["name"]:
        raise ParityError(f"{where} name {_show(figure.get('name'))} is not non-empty text; {how}")
    for name in ("value", "best"):
        if figure.get(name) is not None and not _number(figure[name]):
            raise ParityError(f"{where} {figure['name']} {name} = {_show(figure[name])} is not a number; {how}")
    ci = figure.get("ci95")
    if ci is not None and not (isinstance(ci, list) and len(ci) == 2 and all(_number(v) for v in ci)):
        raise ParityError(f"{where} {figure['name']} ci95 = {_show(ci)} is not two numbers; {how}")
    if figure.get("scope") is not None and not isinstance(figure["scope"], dict):
        raise ParityError(f"{where} {figure['name']} scope is a JSON {_kind(figure['scope'])}, not an object; {how}")
    findings = figure.get("findings") or []
    if not isinstance(findings, list):
        raise ParityError(f"{where} {figure['name']} findings is a JSON {_kind(findings)}, not a list; {how}")
    for finding in findings:
        check_finding(finding, where=f"{where} {figure['name']} finding", how=how)
