"""``parity trace analyze``: busy time, overlap and idle of every stream in the steady state."""

from __future__ import annotations

import time
from typing import Any

import click
from rich.console import Console

from parity.cli.output import json_option, write_json
from parity.cli.progress import ProgressRenderer

PIPE_WIDTH = 140


def _progress_callback(renderer: ProgressRenderer, label: str):
    """Adapt the library's progress callbacks (``(done, total)`` or an event object)."""
    started = time.perf_counter()

    def callback(*args: Any, **kwargs: Any) -> None:
        event = args[0] if len(args) == 1 and not isinstance(args[0], (int, float)) else None
        done = kwargs.get("done", getattr(event, "done", args[0] if args else 0))
        total = kwargs.get("total", getattr(event, "total", args[1] if len(args) > 1 else None))
        elapsed = time.perf_counter() - started
        eta = elapsed / done * (total - done) if done and total else None
        renderer.update(done=int(done or 0), total=int(total) if total else None, label=label, eta_s=eta)

    return callback


@click.command()
@click.argument("paths", nargs=-1, required=True, type=click.Path(exists=True))
@click.option("--steps", "steps_text", metavar="A-B", help="Analyse steps A..B (ProfilerStep or Ascend step numbers).")
@click.option("--window", "window_text", metavar="START_US:END_US",
              help="Analyse this span (µs on the trace's clock) instead of the detected steady state.")
@click.option("--rules", "rules_path", type=click.Path(exists=True, dir_okay=False),
              help="Category rules (TOML or YAML) tried before the defaults.")
@click.option("--csv", "csv_dir", type=click.Path(file_okay=False), help="Write streams/categories/kernels CSV files here.")
@click.option("--chrome-trace", "chrome_path", type=click.Path(dir_okay=False),
              help="Write an annotated Chrome trace (window and categories marked) for Perfetto.")
@click.option("--all-ranks", is_flag=True, help="Show every rank in the terminal (default: first and slowest).")
@click.option("--workers", type=click.IntRange(min=1), default=None,
              help="Processes that parse one Kineto JSON file (default: by its size; the result is the same).")
@json_option
def analyze(paths: tuple[str, ...], steps_text: str | None, window_text: str | None, rules_path: str | None,
            csv_dir: str | None, chrome_path: str | None, all_ranks: bool, workers: int | None,
            json_path: str | None) -> None:
    """Per-stream busy time, overlap and idle in the steady-state window of profiler traces.

    PATH is a Kineto/PyTorch profiler trace (.json, .json.gz), a folder of rank traces, a
    torch_npu Ascend profiler folder (text or .db) or an Nsight Systems SQLite export; the format
    is detected. The window is the steady state (step markers with the first step skipped as
    warm-up, else a repeating kernel sequence, else the whole span) and is always printed with
    how it was chosen.

    \b
    Example:
      parity trace analyze rank0.json.gz --json out.json
      parity trace analyze rank0.json.gz --steps 3-8 --csv tables/
      parity trace analyze ASCEND_PROFILER_OUTPUT/ --window 1000:5000 --chrome-trace annotated.json
    """
    from parity.report.trace import render_analysis
    from parity.trace import analyze as run_analysis
    from parity.trace import load_trace
    from parity.trace.categories import categorize, load_rules
    from parity.trace.export import write_chrome_trace, write_csv
    from parity.trace.window import parse_steps, parse_window

    steps = parse_steps(steps_text) if steps_text else None
    window = parse_window(window_text) if window_text else None
    rules = load_rules(rules_path)
    with ProgressRenderer(label="trace") as renderer:
        table = load_trace(list(paths), progress=_progress_callback(renderer, "reading"), workers=workers)
        result = run_analysis(table, window=window, steps=steps, rules=rules,
                              progress=_progress_callback(renderer, "analysing ranks"))
    console = Console(highlight=False, stderr=json_path == "-")
    if not console.is_terminal:
        console.width = PIPE_WIDTH  # logs and pipes: wide enough that tables do not wrap
    console.print(render_analysis(result, all_ranks=all_ranks))
    write_json(json_path, "trace-analysis", result.to_dict())
    if csv_dir:
        for path in write_csv(result, csv_dir):
            console.print(f"wrote {path}", style="dim")
    if chrome_path:
        path = write_chrome_trace(result, table, categorize(table, rules), chrome_path)
        console.print(f"wrote {path} (open it in Perfetto)", style="dim")
