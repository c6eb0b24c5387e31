"""``parity trace analyze``: busy time, overlap and idle of every stream in the steady state."""

from __future__ import annotations

import time
from typing import Any

import click
from rich.console import Console

from parity.cli.numpy_load import load_modules
from parity.cli.output import json_option, write_json
from parity.cli.progress import ProgressRenderer

PIPE_WIDTH = 140
ETA_MIN_FRACTION = 0.02  # an ETA from the first bytes read is noise (hours for a 1 s read)


def _progress_callback(renderer: ProgressRenderer, label: str):
    """Adapt the library's progress callbacks (``(done, total)`` or an event object)."""
    started = time.perf_counter()

    def callback(*args: Any, **kwargs: Any) -> None:
        event = args[0] if len(args) == 1 and not isinstance(args[0], (int, float)) else None
        done = kwargs.get("done", getattr(event, "done", args[0] if args else 0))
        total = kwargs.get("total", getattr(event, "total", args[1] if len(args) > 1 else None))
        elapsed = time.perf_counter() - started
        eta = elapsed / done * (total - done) if done and total and done >= ETA_MIN_FRACTION * total else None
        renderer.update(done=int(done or 0), total=int(total) if total else None, label=label, eta_s=eta)

    return callback


@click.command()
@click.argument("paths", nargs=-1, required=True, type=click.Path(exists=True))
@click.option("--steps", "steps_text", metavar="A-B", help="Analyse steps A..B (ProfilerStep or Ascend step numbers).")
@click.option("--window", "window_text", metavar="START_US:END_US",
              help="Analyse this span (µs on the trace's clock) instead of the detected steady state; "
                   "'span' for the whole device span.")
@click.option("--rules", "rules_path", type=click.Path(exists=True, dir_okay=False),
              help="Category rules (TOML or YAML) tried before the defaults.")
@click.option("--csv", "csv_dir", type=click.Path(file_okay=False), help="Write streams/categories/kernels CSV files here.")
@click.option("--chrome-trace", "chrome_path", type=click.Path(dir_okay=False),
              help="Write an annotated Chrome trace (window and categories marked) for Perfetto.")
@click.option("--all-ranks", is_flag=True, help="Show every rank in the terminal (default: first and slowest).")
@click.option("--workers", type=click.IntRange(min=1), metavar="N", default=None,
              help="Processes that parse one Kineto JSON file (default: by its size; the result is the same).")
@click.option("--store", "store_it", is_flag=True,
              help="Keep the analysis in the results store (paths, SHA-256, window, categories, streams) "
                   "for parity compare.")
@click.option("--label", default="", help="With --store: a name for the analysis (default: the file names).")
@click.option("--db", "db_path", type=click.Path(dir_okay=False), default=None,
              help="With --store: the results store. Default: $PARITY_DB, else the user data directory.")
@json_option
def analyze(paths: tuple[str, ...], steps_text: str | None, window_text: str | None, rules_path: str | None,
            csv_dir: str | None, chrome_path: str | None, all_ranks: bool, workers: int | None,
            store_it: bool, label: str, db_path: str | None, json_path: str | None) -> None:
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
      parity trace analyze rank0.json.gz --window span --store --label h100-step
    """
    load_modules("parity.report.trace", "parity.trace")
    from parity.report.trace import render_analysis

    result, table, rules = analyse_paths(paths, steps_text=steps_text, window_text=window_text,
                                         rules_path=rules_path, workers=workers)
    console = Console(highlight=False, stderr=json_path == "-")
    if not console.is_terminal:
        console.width = PIPE_WIDTH  # logs and pipes: wide enough that tables do not wrap
    console.print(render_analysis(result, all_ranks=all_ranks))
    document = result.to_dict()
    if store_it:
        stored = store_analysis(paths, document, db_path=db_path, label=label,
                                options={"steps": steps_text, "window": window_text, "rules": rules_path})
        document = {**document, "stored": {"id": stored.analysis_id, "sha256": stored.sha256}}
        console.print(f"stored trace analysis {stored.analysis_id} (sha256 {stored.sha256[:12]}...)", style="dim",
                      markup=False)
    write_json(json_path, "trace-analysis", document)
    if csv_dir:
        from parity.trace.export import write_csv

        for path in write_csv(result, csv_dir):
            console.print(f"wrote {path}", style="dim", markup=False)
    if chrome_path:
        from parity.trace.categories import categorize
        from parity.trace.export import write_chrome_trace

        path = write_chrome_trace(result, table, categorize(table, rules), chrome_path)
        console.print(f"wrote {path} (open it in Perfetto)", style="dim", markup=False)


def analyse_paths(paths: tuple[str, ...] | list[str], *, steps_text: str | None = None,
                  window_text: str | None = None, rules_path: str | None = None,
                  workers: int | None = None) -> tuple[Any, Any, Any]:
    """Load and analyse one trace with the command's options, showing progress:
    ``(TraceAnalysis, table, rules)``. ``--window span`` is the whole device span."""
    from parity.trace import analyze as run_analysis
    from parity.trace import load_trace
    from parity.trace.categories import load_rules
    from parity.trace.window import WHOLE_SPAN, parse_steps, parse_window

    steps = parse_steps(steps_text) if steps_text else None
    if window_text and window_text.strip() == WHOLE_SPAN:
        window: Any = WHOLE_SPAN
    else:
        window = parse_window(window_text) if window_text else None
    rules = load_rules(rules_path)
    with ProgressRenderer(label="trace") as renderer:
        table = load_trace(list(paths), progress=_progress_callback(renderer, "reading"), workers=workers)
        result = run_analysis(table, window=window, steps=steps, rules=rules,
                              progress=_progress_callback(renderer, "analysing ranks"))
    if window_text and window != WHOLE_SPAN:
        refuse_empty_window(result, window_text)
    return result, table, rules


def refuse_empty_window(result: Any, window_text: str) -> None:
    """A ``--window`` the user gave that holds no device activity on some rank is a one-line
    error (the analysis flags it ``empty-window``; its tables would be zeros), naming the rank
    and the span its device activity covers."""
    from parity.model.errors import ParityError

    empty = [f for f in result.findings if f.code == "empty-window"]
    if empty:
        more = f" (and {len(empty) - 1} more ranks)" if len(empty) > 1 else ""
        raise ParityError(f"--window {window_text.strip()}: {empty[0].message}{more}; {empty[0].hint}")


def store_analysis(paths: tuple[str, ...] | list[str], document: dict[str, Any], *, db_path: str | None,
                   label: str, options: dict[str, Any]) -> Any:
    """Keep an analysis document in the results store with the trace's paths and digest."""
    from pathlib import Path

    from parity.store import Store
    from parity.store.trace_analyses import add_trace_analysis
    from parity.trace.digest import trace_digest

    absolute = [str(Path(p).resolve()) for p in paths]
    with Store.open(db_path) as store:
        return add_trace_analysis(store, paths=absolute, sha256=trace_digest(list(paths)), analysis=document,
                                  options=options, label=label)
