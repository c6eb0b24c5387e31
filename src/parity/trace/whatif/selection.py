"""What to scale and where to look: scale selectors and the analysis window.

The window of a trace with device activity is the one ``trace analyze`` takes
(:func:`device_window`), so both commands state the same window.

A selector names the work to make faster: a category (``matrix``, ``communication``, ...) or a
regular expression over activity names (``name:REGEX``). ``parse_scale("matrix=2")`` gives a
:class:`Scale`. Only compute nodes (device activities, or host ops in host mode) are ever
scaled.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

import numpy as np

from parity.metrics.whatif import check_factor
from parity.model.errors import ParityError
from parity.trace.table import ActivityTable, KindCode
from parity.trace.whatif.timeline import Timeline
from parity.trace.window import choose_window as analysis_window

_ALIASES = {"comm": "communication", "mem": "memory", "attn": "attention", "gemm": "matrix"}


@dataclass(frozen=True, kw_only=True)
class Scale:
    """Scale the selected work by ``k`` (``k`` times faster)."""

    selector: str  # a category label, or "name:REGEX"
    k: float

    @property
    def label(self) -> str:
        return f"{self.selector}={_format_k(self.k)}"

    def mask(self, timeline: Timeline) -> np.ndarray:
        """Compute nodes this scale selects: never a wait for a peer (``timeline.waiting``),
        which no faster unit shortens."""
        if self.selector.startswith("name:"):
            regex = re.compile(self.selector[5:], re.IGNORECASE)
            hits = np.array([regex.search(str(n)) is not None for n in timeline.name], dtype=bool)
        else:
            hits = timeline.category == self.selector
        return hits & timeline.compute & ~timeline.waiting

    def work(self, timeline: Timeline) -> np.ndarray:
        """The selected nodes whose time is the scaled work, for the first order and the bounds:
        a container (``timeline.holds``) counts through the nodes it holds, not its own span."""
        return self.mask(timeline) & ~timeline.holds

    def to_dict(self) -> dict:
        return {"selector": self.selector, "k": self.k}


def _format_k(k: float) -> str:
    return "inf" if math.isinf(k) else f"{k:g}"


def parse_scale(text: str) -> Scale:
    """``"matrix=2"``, ``"comm=1.5"``, ``"name:sgemm|gemv=inf"`` -> :class:`Scale`."""
    selector, sep, value = text.rpartition("=")
    if not sep or not selector.strip():
        raise ParityError(f"scale {text!r} must look like CATEGORY=K or name:REGEX=K, e.g. matrix=2")
    selector = selector.strip()
    selector = _ALIASES.get(selector, selector)
    if selector.startswith("name:"):
        try:
            re.compile(selector[5:])
        except re.error as exc:
            raise ParityError(f"scale {text!r}: bad regular expression ({exc}); fix it") from None
    return Scale(selector=selector, k=check_factor(value.strip()))


def scale_factors(timeline: Timeline, scales: list[Scale]) -> np.ndarray:
    """Per-node speed factor (1 where unscaled); refuses scales that select the same node."""
    factors = np.ones(len(timeline), dtype=np.float64)
    taken = np.zeros(len(timeline), dtype=bool)
    for scale in scales:
        mask = scale.mask(timeline)
        if (mask & taken).any():
            raise ParityError(f"scale {scale.label} selects work another scale already selects; "
                              "make the selections disjoint")
        factors[mask] = scale.k
        taken |= mask
    return factors


@dataclass(frozen=True, kw_only=True)
class Window:
    """The analysed span ``[start_ns, end_ns)`` and the steps it holds.

    ``boundaries_ns`` are step starts plus the last step's end when step markers exist (so
    ``n_steps = len(boundaries_ns) - 1``), else empty and ``n_steps = 1``; ``marker_lane`` is the
    ``(rank, -1, tid)`` thread that holds the markers.
    """

    start_ns: int
    end_ns: int
    boundaries_ns: tuple[int, ...] = ()
    marker_lane: tuple[int, int, int] | None = None
    source: str = "span"
    step_count: int | None = None  # steps in a device window (which has no boundaries)

    @property
    def length_ns(self) -> int:
        return self.end_ns - self.start_ns

    @property
    def n_steps(self) -> int:
        if self.step_count is not None:
            return self.step_count
        return max(len(self.boundaries_ns) - 1, 1)

    def to_dict(self) -> dict:
        return {"start_ns": self.start_ns, "end_ns": self.end_ns, "length_ns": self.length_ns,
                "n_steps": self.n_steps, "source": self.source}


def choose_window(
    table: ActivityTable,
    timeline: Timeline,
    *,
    span_ns: tuple[int, int] | None = None,
    steps: tuple[int, int] | None = None,
) -> Window:
    """The window: an explicit span, else, for a trace with device activity, the analysis
    window of ``trace analyze`` (:func:`device_window`), else (host ops only) chosen steps,
    steady steps or the whole span of host markers.

    ``steps`` are inclusive step numbers (``ProfilerStep#N``'s ``N``; marker order from 0 when
    the trace numbers none). Step boundaries are the host-side marker starts (and the last
    marker's end): a replay moves them with the marker thread's activities.

    With step markers (``Kind.STEP`` rows of one thread, the one with most markers) and no
    choice given, the steady state is every step but the first when there are three or more
    (the first pays warm-up), else all of them. Without markers it is the span of the timeline.
    """
    if span_ns is not None:
        lo, hi = int(span_ns[0]), int(span_ns[1])
        if hi <= lo:
            raise ParityError(f"window {lo}..{hi} ns is empty; give START < END")
        return Window(start_ns=lo, end_ns=hi, source="given span")
    if timeline.mode != "host" and table.device_mask().any():
        return device_window(table, steps=steps)
    marks = np.flatnonzero(table.kind == KindCode.STEP)
    if len(marks):
        keys = np.stack([table.rank[marks], table.stream[marks]], 1)
        unique, counts = np.unique(keys, axis=0, return_counts=True)
        rank, tid = (int(v) for v in unique[int(np.argmax(counts))])
        mine = marks[(table.rank[marks] == rank) & (table.stream[marks] == tid)]
        mine = mine[np.argsort(table.start_ns[mine], kind="stable")]
        if steps is not None:
            first, last = steps
            numbers = table.step[mine]
            if (numbers < 0).any():  # no step numbers: count markers from 0
                numbers = np.arange(len(mine))
            chosen = mine[(numbers >= first) & (numbers <= last)]
            if not len(chosen):
                raise ParityError(f"steps {first}-{last} asked, but the trace's steps are "
                                  f"{int(numbers.min())}-{int(numbers.max())}; pick from those")
            source = f"steps {first}-{last}"
        elif len(mine) >= 3:
            chosen, source = mine[1:], "step markers (first step skipped as warm-up)"
        else:
            chosen, source = mine, "step markers"
        starts = table.start_ns[chosen].tolist()
        bounds = tuple(int(v) for v in starts) + (int(table.end_ns[chosen[-1]]),)
        return Window(start_ns=bounds[0], end_ns=bounds[-1], boundaries_ns=bounds,
                      marker_lane=(rank, -1, tid), source=source)
    if steps is not None:
        raise ParityError("--steps needs step markers (ProfilerStep#N) and this trace has none; "
                          "use --window START:END instead")
    subject = timeline.compute if timeline.compute.any() else np.ones(len(timeline), bool)
    lo = int(timeline.start_ns[subject].min())
    hi = int(timeline.end_ns[subject].max())
    return Window(start_ns=lo, end_ns=hi, source="whole span of the activities")


def device_window(table: ActivityTable, *, steps: tuple[int, int] | None = None) -> Window:
    """The window ``trace analyze`` takes (:func:`parity.trace.window.choose_window`: the device
    time of the steady steps, not the host ``ProfilerStep`` span, whose end cuts the tail of a
    step the device runs late), over all ranks: from the earliest rank's start to the latest
    rank's end. It has no host boundaries; ``step_count`` is the number of steps in it."""
    chosen = []
    for rank in np.unique(table.rank).tolist():
        sub = table.take(table.rank == rank) if len(np.unique(table.rank)) > 1 else table
        if sub.device_mask().any():
            chosen.append(analysis_window(sub, steps=steps))
    first = chosen[0]
    count = first.steps[1] - first.steps[0] + 1 if first.steps else None
    ranks = f" (earliest start to latest end over {len(chosen)} ranks)" if len(chosen) > 1 else ""
    return Window(start_ns=min(w.start_ns for w in chosen), end_ns=max(w.end_ns for w in chosen),
                  source=f"{first.detail}{ranks}", step_count=count)
