"""``parity trace whatif``: predict a step when one kind of work gets k times faster."""

from __future__ import annotations

import time

import click
from rich.console import Console

from parity.cli.output import json_option, write_json
from parity.cli.progress import ProgressRenderer
from parity.cli.trace_analyze import PIPE_WIDTH


def _progress(renderer: ProgressRenderer):
    """Render the library's ``(what, done, total)`` callbacks with an ETA per phase."""
    started: dict[str, float] = {}
    shown = [0.0]

    def callback(what: str, done: int, total: int) -> None:
        now = time.perf_counter()
        t0 = started.setdefault(what, now)
        if done != total and now - shown[0] < 1.0:  # at most one update a second, plus the last
            return
        shown[0] = now
        eta = (now - t0) / done * (total - done) if done and total else None
        renderer.update(done=done, total=total, label=what, eta_s=eta)

    return callback


@click.command()
@click.argument("paths", nargs=-1, required=True, type=click.Path(exists=True))
@click.option("--scale", "scale_texts", multiple=True, required=True, metavar="SEL=K",
              help="Make SEL K times faster: a category (matrix, communication, vector, memory, "
                   "attention, other) or name:REGEX; K may be inf. Repeat for several.")
@click.option("--method", type=click.Choice(["first-order", "replay", "all"]), default="all",
              show_default=True, help="first-order (with bounds), the dependency replay, or both.")
@click.option("--window", "window_text", metavar="START_US:END_US",
              help="Predict for this span (us on the trace's clock) instead of the steady steps.")
@click.option("--steps", "steps_text", metavar="A-B", help="Predict for steps A..B (ProfilerStep numbers).")
@click.option("--rules", "rules_path", type=click.Path(exists=True, dir_okay=False),
              help="Category rules (TOML or YAML) tried before the defaults.")
@click.option("--no-sensitivity", is_flag=True, help="Skip the speedup-against-k table.")
@json_option
def whatif(paths: tuple[str, ...], scale_texts: tuple[str, ...], method: str, window_text: str | None,
           steps_text: str | None, rules_path: str | None, no_sensitivity: bool,
           json_path: str | None) -> None:
    """Predict a step's speedup when some work runs K times faster, from a profiler trace.

    Three answers, side by side: the first order (the critical stream saves (1 - 1/K)·T_c,
    overlap and idle held fixed), bounds consistent with the trace (overlapped time may save
    nothing, exposed time saves fully), and a replay of the trace's dependency graph (stream
    order, launches, event waits, host syncs, collectives across ranks) with the chosen work
    scaled. Every prediction prints its assumptions. A PyTorch CPU profile works too: its
    threads are the lanes and its ops (leaf time) the work.

    \b
    Example:
      parity trace whatif rank0.json.gz --scale matrix=2
      parity trace whatif rank0.json.gz --scale matrix=2 --scale comm=1.5 --json out.json
      parity trace whatif trace.json --scale 'name:sgemm=inf' --method replay --steps 3-8
    """
    from parity.cli.numpy_load import load_modules

    load_modules("parity.report.whatif", "parity.trace", "parity.trace.whatif")
    from parity.report.whatif import render_prediction
    from parity.trace import load_trace
    from parity.trace.whatif import parse_scale, predict
    from parity.trace.window import parse_steps, parse_window

    scales = [parse_scale(text) for text in scale_texts]
    steps = parse_steps(steps_text) if steps_text else None
    window = parse_window(window_text) if window_text else None
    with ProgressRenderer(label="whatif") as renderer:
        table = load_trace(list(paths))
        prediction = predict(table, scales, method=method, window=window, steps=steps,
                             rules=rules_path, with_sensitivity=not no_sensitivity,
                             progress=_progress(renderer))
    console = Console(highlight=False, stderr=json_path == "-")
    if not console.is_terminal:
        console.width = PIPE_WIDTH  # as trace analyze: logs and pipes get tables that do not wrap
    console.print(render_prediction(prediction))
    write_json(json_path, "trace-whatif", prediction.to_dict())
