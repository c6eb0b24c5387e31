"""``compare_traces``: two or more trace analyses side by side, per category and per stream.

Each trace's figures are taken as its own analysis states them (``parity trace analyze``'s
JSON document, stored or fresh), never recomputed: per category the union time and its share
of device busy time; per stream role (the compute stream, each communication stream, the
others: :mod:`parity.compare.trace_match`) the busy time, busy fraction and share of summed
device time, with the stream each trace puts in that role; compute, communication, their
overlap and the exposed communication, each with its own share of device busy time; and the
device totals, all of the analysed rank (the first rank, or the one asked for) inside that
trace's own window, which is stated.

The ratio reads as ``parity compare``'s on runs: the speed of a trace relative to the first,
``time in the first / time in this trace``, so > 1 means this trace spends less time there.
The audit lists what differs in how the analyses were made (trace format, category rules, how
the window was chosen and its length), the ranks compared, and a kernel-name overlap so small
that the traces are probably not the same workload. GPU kernels against Ascend tasks are
compared by category only, with the caveat stated.
"""

from __future__ import annotations

import string
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import PurePath
from typing import Any, ClassVar

import msgspec

from parity.compare.audit_values import AuditEntry
from parity.compare.trace_match import (
    CROSS_FAMILY_CAVEAT,
    WORKLOAD_OVERLAP_MIN,
    family,
    kernel_overlap,
    kernel_shares,
    match_streams,
    stream_name,
)
from parity.model.errors import ParityError
from parity.model.figure import Figure, format_seconds
from parity.model.schema import SCHEMA_VERSION


class TraceInput(msgspec.Struct, frozen=True, kw_only=True):
    """One analysis to compare: a label, where it came from, and its analysis document."""

    label: str
    analysis: dict[str, Any]
    analysis_id: str | None = None
    paths: tuple[str, ...] = ()
    sha256: str | None = None
    rank: int | None = None


@dataclass(frozen=True, kw_only=True)
class SideBySide:
    """Analyses side by side (traces, fleets); :meth:`to_dict` follows the runs comparison's
    schema, with the subclass's ``KIND`` and ``RATIO_METHOD``."""

    KIND: ClassVar[str]
    RATIO_METHOD: ClassVar[str]
    runs: tuple[dict[str, Any], ...]
    cases: tuple[dict[str, Any], ...]
    audit: tuple[AuditEntry, ...]
    claims: tuple[str, ...]
    summary: tuple[Figure, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"schema_version": SCHEMA_VERSION, "kind": self.KIND, "runs": [dict(r) for r in self.runs],
                "cases": [dict(c) for c in self.cases], "summary": [f.to_dict() for f in self.summary],
                "audit": [a.to_dict() for a in self.audit],
                "claims": list(self.claims), "forced": False, "ratio_method": self.RATIO_METHOD}



@dataclass(frozen=True, kw_only=True)
class TraceComparison(SideBySide):
    """Traces side by side, with how alike their workloads are and the caveats of the pairing."""

    KIND: ClassVar[str] = "traces"
    RATIO_METHOD: ClassVar[str] = (
        "speed of the trace relative to the first, as for runs: time in the first trace / time in this trace "
        "(> 1: this trace spends less time there), each inside its own window")
    workload: dict[str, Any]
    caveats: tuple[str, ...] = ()
    times: str = "in the window"  # or "per step": each time over the steps its window holds
    steps: tuple[int | None, ...] = ()  # the steps each window holds (None: it counts none)

    def to_dict(self) -> dict[str, Any]:
        out = super().to_dict()
        out["ratio_convention"] = "speed"
        out["workload"] = dict(self.workload)
        out["caveats"] = list(self.caveats)
        out["times"] = self.times
        out["steps"] = list(self.steps)
        return out


def _rank_of(item: TraceInput) -> dict[str, Any]:
    ranks = item.analysis.get("ranks") or []
    if not ranks:
        raise ParityError(f"trace analysis {item.label!r} has no ranks; analyse the trace again")
    if item.rank is None:
        return ranks[0]
    for rank in ranks:
        if rank.get("rank") == item.rank:
            return rank
    raise ParityError(f"trace {item.label!r} has no rank {item.rank}; it has {[r.get('rank') for r in ranks]}")


def side_labels(analyses: Sequence[TraceInput]) -> list[str]:
    """Each input's label as the comparison shows it: a letter, then its name (``A:
    rank0_ascend_pt``); names that repeat (two ranks' folders of one name) grow their path's
    parent folders until they differ (``A: db/level0/rank0_ascend_pt``)."""
    names = [item.label for item in analyses]
    parts = [PurePath(item.paths[0]).parts if len(item.paths) == 1 else () for item in analyses]
    depth = 1
    while len(set(names)) < len(names) and depth < max(len(p) for p in parts):
        depth += 1
        repeated = {n for n in names if names.count(n) > 1}
        names = [str(PurePath(*p[-depth:])) if n in repeated and len(p) >= depth else n for n, p in zip(names, parts)]
    letters = string.ascii_uppercase
    return [f"{letters[i % 26]}: {name}" for i, name in enumerate(names)]


def _describe(item: TraceInput, rank: dict[str, Any], label: str) -> dict[str, Any]:
    return {"id": item.analysis_id, "label": label, "source": item.analysis.get("source"),
            "format": item.analysis.get("format"), "family": family(item.analysis.get("format")),
            "rules": item.analysis.get("rules"), "paths": list(item.paths),
            "sha256": item.sha256, "rank": rank.get("rank"), "window": rank.get("window"),
            "device": None, "device_type": None, "mode": "trace"}


def speed_ratios(times: Sequence[float | None]) -> list[float | None]:
    """Each trace's speed relative to the first from the time both spend somewhere:
    ``time_first / time_this`` (run compare's ``time_A / time_B``); None for the first trace and
    where either time is missing or zero."""
    first = times[0]
    return [None] + [first / t if first and t else None for t in times[1:]]


def _row(suite: str, key: str, entries: Sequence[dict[str, Any] | None], busy: str, share: str,
         extra: tuple[str, ...] = ()) -> dict[str, Any]:
    values = [e.get(busy) if e else None for e in entries]
    ratios = speed_ratios(values)
    row: dict[str, Any] = {"suite": suite, "key": key, "params": {}, "values": values, "unit": "us",
                           "shares": [e.get(share) if e else None for e in entries], "share_name": share,
                           "ratio": ratios[1], "ratios": ratios, "ratio_ci95": None, "marked": False}
    for name in extra:
        row[name] = [e.get(name) if e else None for e in entries]
    return row


def _category_rows(ranks: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    categories = [{c["category"]: c for c in r.get("categories") or []} for r in ranks]
    return [_row("category", name, [t.get(name) for t in categories], "time_us", "share_of_busy",
                 ("kernels", "summed_us"))
            for name in dict.fromkeys(k for table in categories for k in table)]


def _stream_rows(ranks: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per stream role, its key naming the stream each trace puts in it."""
    rows = []
    for role, streams in match_streams([r.get("streams") or [] for r in ranks]):
        key = f"{role} ({' | '.join(stream_name(s) for s in streams)})"
        row = _row("stream", key, [dict(s) if s else None for s in streams], "busy_us", "share_of_summed",
                   ("busy_fraction", "kernels"))
        row["role"] = role
        row["streams"] = [None if s is None else {"device": s.get("device"), "stream": s.get("stream")}
                          for s in streams]
        rows.append(row)
    return rows


def _compute_communication_rows(ranks: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Compute, communication, overlap and exposed communication, each with its own share of the
    device's busy time (union of all streams); the overlap row also carries the hidden fraction
    (overlap / communication) each analysis states."""
    comm = [dict(r.get("compute_communication") or {}) for r in ranks]
    busy = [float((r.get("device") or {}).get("busy_us") or 0.0) for r in ranks]
    rows = []
    for name, field_name in (("compute", "compute_us"), ("communication", "communication_us"),
                             ("overlap", "overlap_us"), ("exposed communication", "exposed_communication_us")):
        entries = [{"time_us": c.get(field_name),
                    "share_of_busy": c[field_name] / b if b and c.get(field_name) is not None else None}
                   for c, b in zip(comm, busy)]
        rows.append(_row("compute-communication", name, entries, "time_us", "share_of_busy"))
    rows[2]["hidden_fraction"] = [c.get("hidden_fraction") for c in comm]  # overlap / communication
    if any(c.get("peer_wait_us") for c in comm):  # Ascend: the part of communication spent waiting for a peer
        entries = [{"time_us": c.get("peer_wait_us"), "share_of_busy": c["peer_wait_us"] / b
                    if b and c.get("peer_wait_us") is not None else None} for c, b in zip(comm, busy)]
        rows.append(_row("compute-communication", "waiting for a peer", entries, "time_us", "share_of_busy"))
    return rows


def window_steps(window: dict[str, Any] | None) -> int | None:
    """How many steps a window holds: its ``step_count``, else (an analysis stored before it was
    recorded) ``last - first + 1`` of its ``steps``; None for a window that counts no steps (a
    span, a window given in time, a detected repeating block, which may be a layer)."""
    window = window or {}
    if isinstance(window.get("step_count"), int) and window["step_count"] > 0:
        return window["step_count"]
    steps = window.get("steps")
    if isinstance(steps, list) and len(steps) == 2 and all(isinstance(s, int) for s in steps) and steps[1] >= steps[0]:
        return steps[1] - steps[0] + 1
    return None


PER_STEP_TIMES = {"categories": ("time_us", "summed_us"), "streams": ("busy_us",),
                  "compute_communication": ("compute_us", "communication_us", "overlap_us",
                                            "exposed_communication_us", "peer_wait_us"),
                  "device": ("busy_us", "idle_us", "window_us", "summed_busy_us")}  # fmt: skip


def per_step(rank: dict[str, Any], steps: int) -> dict[str, Any]:
    """A rank's analysis with every time the comparison lines up divided by the ``steps`` its
    window holds (time per step = time in the window / steps); fractions and shares, the same
    per step as over the window, unchanged."""
    def divided(entry: dict[str, Any], fields: tuple[str, ...]) -> dict[str, Any]:
        return {k: v / steps if k in fields and isinstance(v, (int, float)) else v for k, v in entry.items()}

    out = dict(rank)
    for section, fields in PER_STEP_TIMES.items():
        value = rank.get(section)
        if isinstance(value, dict):
            out[section] = divided(value, fields)
        elif isinstance(value, list):
            out[section] = [divided(e, fields) if isinstance(e, dict) else e for e in value]
    return out


def compare_traces(analyses: list[TraceInput]) -> TraceComparison:
    """Per category, per stream role and for the device: busy and share side by side; times per
    step when every window counts its steps and the counts differ (:func:`per_step`), each
    window's time otherwise."""
    if len(analyses) < 2:
        raise ParityError("compare needs at least two traces or stored trace analyses")
    refuse_repeated(analyses)
    stated = [_rank_of(a) for a in analyses]
    runs = tuple(_describe(a, r, label) for a, r, label in zip(analyses, stated, side_labels(analyses)))
    counts = [window_steps(r.get("window")) for r in stated]
    by_step = None not in counts and len(set(counts)) > 1
    ranks = [per_step(r, n) for r, n in zip(stated, counts)] if by_step else stated  # type: ignore[arg-type]
    one_family = len({run["family"] for run in runs}) == 1
    rows = _category_rows(ranks)
    devices = [dict(r.get("device") or {}) for r in ranks]
    if one_family:
        rows += _stream_rows(ranks) + _compute_communication_rows(ranks)
        rows.append(_row("device", "all streams", devices, "busy_us", "busy_fraction",
                         ("window_us", "idle_us", "summed_busy_us", "mean_concurrency")))
    overlaps: list[float | None] = _overlaps(ranks) if one_family else [None] * len(ranks)
    workload = {"kernel_overlap": overlaps, "threshold": WORKLOAD_OVERLAP_MIN,
                "measure": "weighted Jaccard of normalised kernel names by share of summed kernel time, "
                           "against the first trace (over each analysis's listed kernels)"}
    caveats = () if one_family else (CROSS_FAMILY_CAVEAT,)
    audit = _audit(runs, overlaps, counts)
    stated_devices = [dict(r.get("device") or {}) for r in stated]
    comm = [dict(r.get("compute_communication") or {}) for r in stated]
    claims = [_claim(runs, stated_devices), *caveats]
    if by_step:
        claims.insert(1, "the windows hold different numbers of steps ("
                      + ", ".join(f"{run['label'].split(':', 1)[0]} {n}" for run, n in zip(runs, counts))
                      + "), so every time is compared per step: the time in the window / its steps")
    return TraceComparison(runs=runs, cases=tuple(rows), audit=tuple(audit), claims=tuple(claims),
                           summary=tuple(_figures(runs, stated_devices, comm, overlaps)), workload=workload,
                           caveats=caveats, times="per step" if by_step else "in the window", steps=tuple(counts))


def refuse_repeated(analyses: Sequence[TraceInput]) -> None:
    """A ParityError when two inputs are one analysis of one trace: the same digest (a file and
    its copy too) and the same analysis but for where it was read (``source``). Compared with
    itself, a trace is 1x by construction."""
    def figures(item: TraceInput) -> dict[str, Any]:
        return {k: v for k, v in item.analysis.items() if k != "source"}

    for index, item in enumerate(analyses):
        if item.sha256 is None:
            continue  # nothing tells what it was read from
        for earlier in analyses[:index]:
            if (earlier.sha256, earlier.rank) == (item.sha256, item.rank) and figures(earlier) == figures(item):
                raise ParityError(f"{earlier.label} and {item.label} are the same trace analysed the same way "
                                  f"(sha256 {item.sha256[:12]}...): a trace compared with itself is 1x by "
                                  "construction, not a measurement; compare different traces, or one trace over "
                                  "different windows as stored analyses (parity trace analyze --window ... --store)")


def _overlaps(ranks: Sequence[dict[str, Any]]) -> list[float | None]:
    shares = [kernel_shares(r.get("top_kernels") or []) for r in ranks]
    return [None] + [kernel_overlap(shares[0], s) for s in shares[1:]]


def _figures(runs: tuple[dict[str, Any], ...], devices: list[dict[str, Any]],
             comm: list[dict[str, Any]], overlaps: list[float | None]) -> list[Figure]:
    """Each trace's device busy fraction and exposed communication, as its analysis states them,
    and its kernel-name overlap with the first trace."""
    out = []
    for run, device, overlap, kernels in zip(runs, devices, comm, overlaps):
        window = run["window"] or {}
        scope = {"trace": run["label"], "rank": run["rank"], "window": window.get("source"),
                 "window_us": window.get("length_us")}
        out.append(Figure(name="trace.device.busy_fraction", value=device.get("busy_fraction", 0.0), unit="1",
                          method="|union of all device activity inside W| / |W|", scope=scope))
        out.append(Figure(name="trace.exposed_communication", value=overlap.get("exposed_communication_us", 0.0) / 1e6,
                          unit="s", method="communication minus compute inside W", scope=scope))
        if kernels is not None:
            out.append(Figure(name="trace.kernel_overlap", value=kernels, unit="1",
                              method="weighted Jaccard of normalised kernel names by share of summed kernel "
                                     f"time, against {runs[0]['label']}", scope=scope))
    return out


def _audit(runs: tuple[dict[str, Any], ...], overlaps: list[float | None],
           counts: list[int | None]) -> list[AuditEntry]:
    entries = []
    for condition, read, matters in (
        ("device family", lambda r: r["family"],
         "GPU kernels against Ascend tasks: only the category table is lined up (see the caveat)"),
        ("trace format", lambda r: r["format"], "profilers attribute device time differently (tasks, kernels, ops)"),
        ("category rules", lambda r: r["rules"], "categories made by other rules hold other kernels"),
        ("rank", lambda r: r["rank"],
         "ranks of one job do different work (pipeline stages, the rank that waits) and a straggler's "
         "time is not its peers'; compare the same rank, or say why not"),
        ("window choice", lambda r: (r["window"] or {}).get("source"),
         "windows chosen differently hold different steps, warm-up and idle time (a whole span holds them all; "
         "a steady-state window leaves the warm-up out)"),
        ("window length", lambda r: _length_text((r["window"] or {}).get("length_us")),
         "busy fractions are over each trace's own window; times are compared per step only where every "
         "window counts its steps by their markers, else each is the time in its window"),
    ):
        values = tuple(read(r) for r in runs)
        if len({repr(v) for v in values}) > 1:
            entries.append(AuditEntry(condition=condition, values=values, matters=matters))
    if len(set(counts)) > 1:
        entries.append(AuditEntry(
            condition="steps in the window", values=tuple(counts),
            matters="times per step (time in the window / its steps)" if None not in counts else
            "a window without step markers (a span, a window in time, a detected repeating block) holds an "
            "unknown number of steps: its times are totals over other work than the others'; choose the same "
            "steps (--steps A-B) on each"))
    low = [o for o in overlaps[1:] if o is not None and o < WORKLOAD_OVERLAP_MIN]
    if low:
        values = tuple("reference" if i == 0 else "-" if o is None else f"{o:.3f}" for i, o in enumerate(overlaps))
        entries.append(AuditEntry(condition="workload (kernel-name overlap)", values=values,
                                  matters=f"under {WORKLOAD_OVERLAP_MIN:.0%} of kernel time shares a kernel name with "
                                          "the first trace: probably not the same workload, so its times are of "
                                          "other work"))
    return entries


def _length_text(length_us: float | None) -> str | None:
    """A window's length as the audit shows it (``389 ms``); the number stays in each trace's
    window (``length_us``)."""
    return None if length_us is None else format_seconds(length_us / 1e6)


def _claim(runs: tuple[dict[str, Any], ...], devices: list[dict[str, Any]]) -> str:
    parts = []
    for run, device in zip(runs, devices):
        window = run["window"] or {}
        parts.append(f"{run['label']}: device busy {device.get('busy_fraction', 0.0):.1%} of a "
                     f"{format_seconds(window.get('length_us', 0.0) / 1e6)} {window.get('source')} window")
    return ("in each trace's own window (rank shown), " + "; ".join(parts)
            + f"; each ratio is a speed relative to {runs[0]['label']}: its time / the other trace's time "
              "(> 1: less time spent there, as for runs)")
