"""``parity trace compare``: two or more traces (or stored trace analyses) side by side.

The same comparison ``parity compare`` gives for traces, as a ``trace`` subcommand: it imports
only the trace side (no run store unless a stored analysis is named), so it starts fast.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from parity.cli.numpy_load import load_modules
from parity.cli.output import json_option, write_json, write_text


PATH_SUFFIXES = (".json", ".gz", ".sqlite", ".db", ".csv", ".parquet", ".nsys-rep", "_ascend_pt")


def refuse_missing_path(source: str) -> None:
    """A source written as a path (a folder separator, or a trace file's or folder's ending)
    that names nothing on disk: a one-line error saying so, rather than a search of the store
    for a run or analysis of that name."""
    if ("/" in source or source.lower().endswith(PATH_SUFFIXES)) and not Path(source).exists():
        from parity.model.errors import ParityError

        raise ParityError(f"{source}: no such file or folder; check the path (stored runs and trace analyses "
                          "are named by id, latest or trace:latest)")


def trace_inputs(sources: tuple[str, ...] | list[str], *, db_path: str | None, window_text: str | None,
                 steps_text: str | None, rank: int | None) -> list[Any]:
    """One :class:`parity.compare.traces.TraceInput` per source: a trace file or folder is
    analysed now (with ``--window``/``--steps``), anything else is read from the store as a
    stored trace analysis (``trace-...``, ``trace:latest``)."""
    from parity.cli.trace_analyze import analyse_paths
    from parity.compare.traces import TraceInput
    from parity.trace.digest import trace_digest

    if len(sources) < 2:  # before anything is read
        from parity.model.errors import ParityError

        raise ParityError(f"trace compare needs at least two traces or stored trace analyses (got {len(sources)}: "
                          f"{', '.join(sources) or 'none'}); name a second one")
    for source in sources:  # every source checked before the first is read
        refuse_missing_path(source)
    inputs = []
    for source in sources:
        if Path(source).exists():
            result, _, _ = analyse_paths([source], steps_text=steps_text, window_text=window_text)
            inputs.append(TraceInput(label=Path(source).name, analysis=result.to_dict(), rank=rank,
                                     paths=(str(Path(source).resolve()),), sha256=trace_digest([source])))
            continue
        from parity.store import Store
        from parity.store.trace_analyses import get_trace_analysis

        with Store.open(db_path, read_only=True) as store:
            stored = get_trace_analysis(store, source)
        inputs.append(TraceInput(label=stored.label, analysis=stored.analysis, analysis_id=stored.analysis_id,
                                 paths=stored.paths, sha256=stored.sha256, rank=rank))
    return inputs


@click.command()
@click.argument("sources", nargs=-1, required=True)
@click.option("--window", "window_text", metavar="START_US:END_US",
              help="For trace files: the window to analyse ('span' for the whole device span).")
@click.option("--steps", "steps_text", metavar="A-B", help="For trace files: analyse steps A..B.")
@click.option("--rank", type=int, default=None, metavar="N", help="The rank to compare in every trace (default: each trace's first).")
@click.option("--markdown", "markdown_path", type=click.Path(dir_okay=False, allow_dash=True),
              help="Also write a GitHub Markdown table to FILE ('-' for stdout).")
@click.option("--limit", type=click.IntRange(min=1), metavar="N", default=200, show_default=True,
              help="Rows shown (all of them in --json).")
@click.option("--db", "db_path", type=click.Path(dir_okay=False), default=None,
              help="Results store holding stored trace analyses (default: $PARITY_DB, else the user data directory).")
@json_option
def compare(sources: tuple[str, ...], window_text: str | None, steps_text: str | None, rank: int | None,
            markdown_path: str | None, limit: int, db_path: str | None, json_path: str | None) -> None:
    """Compare traces side by side: categories, streams matched by role, compute against
    communication, the device; with an audit of ranks, windows and workloads.

    SOURCES are two or more trace files or folders (Kineto, Ascend, Nsight Systems) or stored
    trace analyses (trace-... ids, trace:latest). Each ratio is a speed relative to the first
    trace, as for runs: time in the first / time in this trace (> 1: less time spent there).
    Streams are lined up by role (the compute stream, communication streams, the others) and
    the streams matched are named. A different rank, or a kernel-name overlap under 10% of
    kernel time (probably not the same workload), is listed in the audit. A GPU trace against
    an Ascend one is compared by category only, with the caveat stated.

    \b
    Example:
      parity trace compare h100_rank0.json.gz ASCEND_PROFILER_OUTPUT/ --window span
      parity trace compare trace-20261201-1012-ab12 trace:latest --json cmp.json
    """
    load_modules("parity.compare.traces", "parity.report.comparison", "parity.cli.trace_analyze", "parity.trace",
                 "parity.trace.digest")
    from parity.compare.traces import compare_traces
    from parity.report.comparison import comparison_markdown, render_comparison

    inputs = trace_inputs(sources, db_path=db_path, window_text=window_text, steps_text=steps_text, rank=rank)
    document = compare_traces(inputs).to_dict()
    console = _console("-" in (json_path, markdown_path))
    console.print(render_comparison(document, limit=limit))
    if markdown_path:
        write_text(markdown_path, comparison_markdown(document))
    write_json(json_path, document["kind"], {k: v for k, v in document.items() if k not in ("schema_version", "kind")})


def _console(to_stderr: bool) -> Any:
    from rich.console import Console

    console = Console(stderr=to_stderr, highlight=False, emoji=False)  # a kernel named :x: stays as named
    if not console.is_terminal:
        console.width = 140  # as the other commands off a terminal
    return console
