"""Progress of long work on standard error: a rich bar with ETA on a terminal, plain lines
(one per finished step, with its ETA) otherwise, so logs of unattended runs stay readable.

The library reports progress through a callback (``parity.harness.runner.ProgressEvent`` or any
object with ``phase``, ``done``, ``total`` and optionally ``suite``, ``key``, ``ok``,
``elapsed_s``, ``eta_s``, ``skipped``); this module only renders it::

    with ProgressRenderer(label="gemm") as progress:
        run_suites(..., progress=progress)

Code without such events can call :meth:`ProgressRenderer.update` directly; off a terminal those
anonymous steps print only once the work has lasted ``min_interval_s`` (a read over in a fraction
of a second leaves a log untouched), then at most once per ``min_interval_s`` and at the last
step; failures always print, and a run's named cases each get their line.
"""

from __future__ import annotations

import math
import sys
import time
from types import SimpleNamespace
from typing import Any, TextIO

from rich.console import Console

# Plain output: anonymous progress steps (bytes read, events parsed) at most this often.
PLAIN_INTERVAL_S = 2.0


def format_duration(seconds: float | None) -> str:
    """``45s``, ``3m07s``, ``2h05m``; ``?`` when unknown."""
    if seconds is None or seconds != seconds or seconds < 0:
        return "?"
    whole = int(round(seconds))
    if whole < 60:
        return f"{whole}s"
    if whole < 3600:
        return f"{whole // 60}m{whole % 60:02d}s"
    return f"{whole // 3600}h{whole % 3600 // 60:02d}m"


def _rich_bar(console: Console) -> Any:
    """The bar drawn on a terminal (a ``rich.progress.Progress``, not started). rich.progress is
    imported here, only when a terminal shows the bar: piped output never needs it."""
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        ProgressColumn,
        SpinnerColumn,
        Task,
        TextColumn,
        TimeElapsedColumn,
    )
    from rich.text import Text

    class EtaColumn(ProgressColumn):
        """The caller's own ETA (cost-weighted), not rich's speed-based guess."""

        def render(self, task: Task) -> Text:
            eta = task.fields.get("eta_s")
            return Text(f"eta {format_duration(eta)}", style="progress.remaining")

    return Progress(
        SpinnerColumn(),
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        EtaColumn(),
        TextColumn("{task.fields[current]}", style="dim"),
        console=console,
        transient=False,
    )


def _label(event: Any) -> str:
    suite, key = getattr(event, "suite", ""), getattr(event, "key", "")
    return f"{suite}/{key}" if suite and key else suite or key


class ProgressRenderer:
    """Render progress events on ``stream`` (standard error by default).

    ``tty`` forces the rich bar (True) or plain lines (False); by default the stream decides.
    ``clock`` gives seconds (``time.perf_counter``; tests pass their own).
    """

    def __init__(
        self,
        *,
        label: str = "measuring",
        stream: TextIO | None = None,
        tty: bool | None = None,
        min_interval_s: float = PLAIN_INTERVAL_S,
        clock: Any = time.perf_counter,
    ) -> None:
        self.label = label
        self._clock = clock
        self.min_interval_s = min_interval_s
        self._last_line = -math.inf
        self._last_count: tuple[int, int | None] | None = None
        self._stream = stream if stream is not None else sys.stderr
        self._console = Console(file=self._stream, force_terminal=tty, highlight=False)
        self.tty = self._console.is_terminal if tty is None else tty
        self._progress: Any = None  # the rich bar while it is shown
        self._task: Any = None
        self._started = clock()
        self._printed_anonymous = False  # an anonymous step has had its line

    def __enter__(self) -> ProgressRenderer:
        self._started = self._clock()
        if self.tty:
            self._progress = _rich_bar(self._console)
            self._progress.start()
            self._task = self._progress.add_task(self.label, total=None, current="", eta_s=None)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._progress is not None:
            self._progress.stop()
            self._progress = None

    def update(
        self,
        *,
        done: int,
        total: int | None,
        label: str = "",
        ok: bool | None = None,
        eta_s: float | None = None,
        phase: str = "measured",
    ) -> None:
        """Report progress without an event object (``phase`` as in :meth:`__call__`)."""
        self(
            SimpleNamespace(
                phase=phase,
                done=done,
                total=total,
                key=label,
                suite="",
                ok=ok,
                eta_s=eta_s,
                elapsed_s=self._clock() - self._started,
                skipped=0,
            )
        )

    def __call__(self, event: Any) -> None:
        if self._progress is not None:
            self._render_bar(event)
        else:
            self._render_line(event)

    def _render_bar(self, event: Any) -> None:
        assert self._progress is not None
        phase = getattr(event, "phase", "measured")
        current = {"summary": "summarising", "done": "done"}.get(phase, _label(event))
        self._progress.update(
            self._task,
            completed=event.done,
            total=event.total,
            current=current,
            eta_s=getattr(event, "eta_s", None),
        )

    def _render_line(self, event: Any) -> None:
        phase = getattr(event, "phase", "measured")
        total = event.total
        if phase == "start":
            skipped = getattr(event, "skipped", 0)
            extra = f" ({skipped} already stored, skipped)" if skipped else ""
            self._write(f"{self.label}: {total} cases{extra}")
        elif phase == "measured" and self._due(event):
            pct = f"{100.0 * event.done / total:3.0f}%" if total else "   "
            width = len(str(total)) if total else 1
            verdict = {True: "ok", False: "FAILED", None: ""}[getattr(event, "ok", None)]
            elapsed = format_duration(getattr(event, "elapsed_s", None))
            eta = format_duration(getattr(event, "eta_s", None))
            self._write(
                f"[{event.done:>{width}}/{total} {pct}] {_label(event)} {verdict}"
                f"  elapsed {elapsed}  eta {eta}"
            )
        elif phase == "summary":
            self._write(f"{self.label}: summarising")

    def _due(self, event: Any) -> bool:
        """Plain lines: every named case (a run's log lists each one) and every failure; an
        anonymous ``update`` step once the work has lasted ``min_interval_s``, then at most once
        per ``min_interval_s``, and the last step when an earlier one had its line; never the
        same count twice (a reader and its caller may both report the end)."""
        now = self._clock()
        total = event.total
        named = bool(getattr(event, "suite", ""))
        failed = getattr(event, "ok", None) is False
        if not named and (event.done, total) == self._last_count:
            return False
        if named or failed:
            due = True
        else:
            last = total is not None and event.done >= total
            long = now - self._started >= self.min_interval_s
            due = long and (now - self._last_line >= self.min_interval_s or (last and self._printed_anonymous))
            self._printed_anonymous = self._printed_anonymous or due
        if due:
            self._last_line = now
            self._last_count = (event.done, total)
        return due

    def note(self, line: str) -> None:
        """A line of context (which run, which store) above the bar or among the lines."""
        if self._progress is not None:
            self._progress.console.print(line, highlight=False, markup=False)
        else:
            self._write(line)

    def _write(self, line: str) -> None:
        self._stream.write(line.rstrip() + "\n")
        self._stream.flush()
