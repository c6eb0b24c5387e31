"""The steady-state window ``W`` an analysis looks at, and how it was chosen (docs/definitions.md, Traces).

Rule, in order:

1. ``window=(start_ns, end_ns)`` given by the user: that span (source ``user-window``);
   ``window=WHOLE_SPAN`` (``--window span``): the whole span of device activity, as asked
   (source ``user-span``; what tools without a window, such as ``msprof-analyze compare``, cover).
2. ``steps=(a, b)`` given by the user: the device time of steps ``a..b`` (source ``user-steps``).
3. Step markers (Kineto ``ProfilerStep#N``, Ascend step ids) with device activity launched in
   them: with two or more such steps the first is skipped as warm-up (allocator, autotuning, lazy init and the profiler's own start-up land
   there) and the window covers the rest; with one step, that step (source ``steps``).
4. No markers: a block of kernel names repeating at least three times on the busiest stream,
   explaining at least half of its kernels, is taken as the step; the first repetition is skipped as warm-up and the window runs from the
   second repetition's first kernel to the end of the last repetition (source ``detected``).
5. Otherwise the whole span of device activity (source ``span``).

The device time of a step runs from the start of the first device activity launched in it to
the end of the last one: device work lags its host launch, so the host marker span would clip
the step's tail and include the previous step's. A device row belongs to a step through the
table's ``step`` column when the reader filled it, else through its launching runtime call
(``correlation``) falling inside a step marker, else through its own start time.
"""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation

import msgspec
import numpy as np

from parity.model.errors import ParityError
from parity.trace.readers.columns import MAX_SPAN_NS
from parity.trace.readers.times import MAX_US
from parity.trace.repeats import find_repeats
from parity.trace.table import NO_ID, ActivityTable, KindCode

_STEP_NUMBER = re.compile(r"(\d+)\s*$")
DETECTED_COVERAGE = 0.5  # a detected step must explain half the busiest stream's kernels
_INT64_MIN, _INT64_MAX = int(np.iinfo(np.int64).min), int(np.iinfo(np.int64).max)


class Window(msgspec.Struct, frozen=True, kw_only=True):
    """A half-open span ``[start_ns, end_ns)`` on the trace clock and how it was chosen."""

    start_ns: int
    end_ns: int
    source: str  # user-window | user-span | user-steps | steps | detected | span | empty
    detail: str  # one human sentence: which steps, what was skipped, what repeats
    steps: tuple[int, int] | None = None

    def __post_init__(self) -> None:
        if self.end_ns < self.start_ns:
            raise ValueError(f"window ends before it starts: {self.start_ns} > {self.end_ns}")

    @property
    def length_ns(self) -> int:
        return self.end_ns - self.start_ns

    @property
    def step_count(self) -> int | None:
        """Steps the window holds by their markers, ``last - first + 1``; None for a detected
        block (which may be a layer rather than a step), a span or a window in time."""
        return self.steps[1] - self.steps[0] + 1 if self.steps else None

    def to_dict(self) -> dict:
        return {
            "start_us": self.start_ns / 1e3,
            "end_us": self.end_ns / 1e3,
            "start_ns": self.start_ns,  # exact: epoch microseconds overflow a double's precision
            "end_ns": self.end_ns,
            "length_us": self.length_ns / 1e3,
            "source": self.source,
            "detail": self.detail,
            "steps": list(self.steps) if self.steps else None,
            "step_count": self.step_count,
        }


WHOLE_SPAN = "span"  # --window span: the whole device span, asked for


def parse_steps(text: str) -> tuple[int, int]:
    """``"3-8"`` -> ``(3, 8)``; ``"5"`` -> ``(5, 5)``. Raises ParityError on anything else."""
    match = re.fullmatch(r"\s*(\d+)\s*(?:-\s*(\d+)\s*)?", text or "")
    if not match:
        raise ParityError(f"bad --steps {text!r}; write A-B with step numbers, e.g. 3-8")
    a = int(match.group(1))
    b = int(match.group(2)) if match.group(2) else a
    if b < a:
        raise ParityError(f"bad --steps {text!r}: the last step is before the first; write A-B with A <= B")
    return a, b


def parse_window(text: str) -> tuple[int, int]:
    """``"START_US:END_US"`` (microseconds on the trace clock) -> ``(start_ns, end_ns)``.

    Parsed as decimals, not floats: epoch microseconds have 16 digits, more than a double keeps.
    """
    match = re.fullmatch(r"\s*([0-9.eE+-]+)\s*:\s*([0-9.eE+-]+)\s*", text or "")
    try:
        start_us, end_us = Decimal(match.group(1)), Decimal(match.group(2))  # type: ignore[union-attr]
        if not (start_us.is_finite() and end_us.is_finite()):
            raise InvalidOperation
    except (AttributeError, InvalidOperation):
        raise ParityError(f"bad --window {text!r}; write START_US:END_US, e.g. 1000:5000") from None
    if max(abs(start_us), abs(end_us)) > MAX_US:  # as the readers bound a time
        raise ParityError(f"bad --window {text!r}: a trace time is within ±{MAX_US:.0e} us (int64 "
                          "nanoseconds); write START_US:END_US on the trace's clock")
    if not end_us > start_us:
        raise ParityError(f"bad --window {text!r}: the end must be after the start")
    start_ns, end_ns = int((start_us * 1000).to_integral_value()), int((end_us * 1000).to_integral_value())
    if end_ns - start_ns > MAX_SPAN_NS:
        raise ParityError(f"bad --window {text!r}: a window spans at most {MAX_SPAN_NS // 1000} us (its width "
                          "in int64 nanoseconds); choose one on the trace's clock")
    return start_ns, end_ns


def window_text(start_ns: int, end_ns: int) -> str:
    """``"START_US:END_US"`` of a window, exact to the ns and as :func:`parse_window` reads it
    back (``1661203462674792:1661203463063919.5``): a user pastes it into ``--window``."""
    return f"{_us_text(int(start_ns))}:{_us_text(int(end_ns))}"


def _us_text(ns: int) -> str:
    whole, frac = divmod(abs(ns), 1000)
    return ("-" if ns < 0 else "") + str(whole) + (f".{frac:03d}".rstrip("0") if frac else "")


def step_markers(table: ActivityTable) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Step numbers with their marker spans ``(steps, start_ns, end_ns)``, sorted by start.

    The number comes from the marker's ``step`` column, else from the digits ending its name
    (``ProfilerStep#12`` -> 12). Markers repeated for one step (one per thread) are merged.
    """
    rows = np.flatnonzero(table.kind == KindCode.STEP)
    if len(rows) == 0:
        return np.empty(0, np.int64), np.empty(0, np.int64), np.empty(0, np.int64)
    numbers = table.step[rows].astype(np.int64)
    for i in np.flatnonzero(numbers < 0).tolist():
        found = _STEP_NUMBER.search(table.name_of(int(rows[i])))
        numbers[i] = int(found.group(1)) if found else -1
    keep = numbers >= 0
    rows, numbers = rows[keep], numbers[keep]
    steps, inverse = np.unique(numbers, return_inverse=True)
    starts = np.full(len(steps), _INT64_MAX, dtype=np.int64)
    ends = np.full(len(steps), _INT64_MIN, dtype=np.int64)
    np.minimum.at(starts, inverse, table.start_ns[rows])
    np.maximum.at(ends, inverse, table.end_ns[rows])
    order = np.argsort(starts, kind="stable")
    return steps[order], starts[order], ends[order]


def device_steps(table: ActivityTable) -> np.ndarray:
    """The step each row was launched in (``-1`` when none), per the module's rule.

    A reader's ``step`` column wins where it is set; other rows are placed by step markers.
    """
    out = table.step.astype(np.int64)
    missing = out < 0
    if not missing.any():  # the reader placed every row: no markers needed
        return out
    steps, m_start, m_end = step_markers(table)
    if len(steps) == 0:
        return out
    rows = np.flatnonzero(missing)  # only these are placed: often a handful in a large trace
    when = table.start_ns[rows]
    has_corr = table.correlation[rows] != NO_ID
    device = np.flatnonzero(table.device_mask()[rows] & has_corr)  # indices into rows
    runtime = np.flatnonzero(table.kind == KindCode.RUNTIME) if len(device) else np.empty(0, np.int64)
    runtime = runtime[table.correlation[runtime] != NO_ID]
    if len(runtime):
        key = table.correlation[runtime] * 4096 + table.rank[runtime]
        order = np.argsort(key, kind="stable")
        sorted_key, sorted_rows = key[order], runtime[order]
        launched = rows[device]
        dkey = table.correlation[launched] * 4096 + table.rank[launched]
        pos = np.clip(np.searchsorted(sorted_key, dkey), 0, len(sorted_key) - 1)
        found = sorted_key[pos] == dkey
        when[device[found]] = table.start_ns[sorted_rows[pos[found]]]
    idx = np.searchsorted(m_start, when, side="right") - 1
    inside = (idx >= 0) & (when < m_end[np.clip(idx, 0, None)])
    out[rows[inside]] = steps[idx[inside]]
    return out


def _device_span(table: ActivityTable, rows: np.ndarray) -> tuple[int, int]:
    return int(table.start_ns[rows].min()), int(table.end_ns[rows].max())


def _window_of_steps(
    table: ActivityTable, device_rows: np.ndarray, steps_of: np.ndarray, first: int, last: int, *,
    source: str, detail: str,
) -> Window:
    """The device time of steps ``first..last``; ``steps_of`` is the step of each of the
    ``device_rows`` (the work is on device rows only, often a small part of a trace)."""
    rows = device_rows[(steps_of >= first) & (steps_of <= last)]
    if len(rows) == 0:
        steps, m_start, m_end = step_markers(table)
        chosen = (steps >= first) & (steps <= last)
        if not chosen.any():
            have = f"{steps.min()}-{steps.max()}" if len(steps) else "none"
            raise ParityError(f"steps {first}-{last} are not in the trace (steps present: {have}); "
                              "choose steps from that range")
        start, end = int(m_start[chosen].min()), int(m_end[chosen].max())
        detail += " (no device activity tied to them; host marker span used)"
    else:
        start, end = _device_span(table, rows)
    return Window(start_ns=start, end_ns=end, source=source, detail=detail, steps=(first, last))


def _detected_window(table: ActivityTable) -> Window | None:
    kernels = np.flatnonzero(table.kind == KindCode.KERNEL)
    if len(kernels) < 6:
        return None
    stream = table.stream[kernels]
    if (stream == stream[0]).all():  # one stream (the common case): it is the busiest
        streams, busiest, rows = stream[:1], 0, kernels
    else:
        streams, inverse = np.unique(stream, return_inverse=True)
        busiest = np.argmax(np.bincount(inverse, weights=table.duration_ns[kernels]))
        rows = kernels[inverse == busiest]
    rows = rows[np.argsort(table.start_ns[rows], kind="stable")]
    repeat = find_repeats(table.name_id[rows])
    if repeat is None or repeat.count < 3 or repeat.coverage < DETECTED_COVERAGE * len(rows):
        return None
    first_row = rows[repeat.starts[1]]
    last_index = min(repeat.starts[-1] + repeat.length, len(rows)) - 1
    start = int(table.start_ns[first_row])
    end = int(table.end_ns[rows[repeat.starts[1] : last_index + 1]].max())
    detail = (f"a block of {repeat.length} kernels repeats {repeat.count} times on stream "
              f"{int(streams[busiest])}; first repetition skipped as warm-up")
    return Window(start_ns=start, end_ns=end, source="detected", detail=detail)


def choose_window(
    table: ActivityTable,
    *,
    window: tuple[int, int] | str | None = None,
    steps: tuple[int, int] | None = None,
    row_steps: np.ndarray | None = None,
) -> Window:
    """The analysis window of ``table`` (one rank) per the module's rule; never fails silently.

    ``row_steps`` is :func:`device_steps` of the table when the caller has it already.
    """
    if window is not None and steps is not None:
        raise ParityError("give either --window or --steps, not both")
    if window == WHOLE_SPAN:
        device_rows = np.flatnonzero(table.device_mask())
        if len(device_rows) == 0:
            return Window(start_ns=0, end_ns=0, source="empty", detail="no device activity in the trace")
        start, end = _device_span(table, device_rows)
        return Window(start_ns=start, end_ns=end, source="user-span",
                      detail="whole device span, given with --window span")
    if window is not None:
        start, end = int(window[0]), int(window[1])
        if end <= start:
            raise ParityError(f"window {start / 1e3}:{end / 1e3} us is empty; the end must be after the start")
        return Window(start_ns=start, end_ns=end, source="user-window", detail="given with --window")
    row_steps = device_steps(table) if row_steps is None else row_steps
    device_rows = np.flatnonzero(table.device_mask())
    steps_of = row_steps[device_rows]
    if steps is not None:
        return _window_of_steps(table, device_rows, steps_of, *steps, source="user-steps",
                                detail=f"steps {steps[0]}-{steps[1]} given with --steps")
    # steps that device activity is tied to (a marker without device work, such as the last
    # step of a trace stopped early, cannot be a device window): the lowest, the next one and
    # the highest are all the rule needs, found by reductions rather than a sort of every row
    tied = steps_of[steps_of >= 0]
    lowest = int(tied.min()) if len(tied) else -1
    last = int(tied.max()) if len(tied) else -1
    if last > lowest:
        first = int(tied[tied > lowest].min())
        return _window_of_steps(table, device_rows, steps_of, first, last, source="steps",
                                detail=f"steps {first}-{last} of {lowest}-{last}; "
                                       f"step {lowest} skipped as warm-up")
    if len(tied):
        return _window_of_steps(table, device_rows, steps_of, lowest, lowest, source="steps",
                                detail=f"step {lowest}, the only step with device activity")
    detected = _detected_window(table)
    if detected is not None:
        return detected
    if len(device_rows) == 0:
        return Window(start_ns=0, end_ns=0, source="empty", detail="no device activity in the trace")
    start, end = _device_span(table, device_rows)
    return Window(start_ns=start, end_ns=end, source="span",
                  detail="no step markers and no repeating kernel sequence: whole device span")
