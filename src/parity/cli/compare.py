"""``parity compare``: runs or trace analyses side by side, with ratios and the fairness audit."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from parity.cli.output import json_option, write_json, write_text
from parity.cli.runs import db_option, stdout_console
from parity.model.errors import ParityError


def _kind(source: str) -> str:
    from parity.cli.trace_compare import refuse_missing_path
    from parity.compare.sides import GROUP_PREFIX
    from parity.store.fleet_analyses import is_fleet_analysis_id
    from parity.store.trace_analyses import is_trace_analysis_id

    refuse_missing_path(source)
    if source.startswith(GROUP_PREFIX) or ("," in source and not Path(source).exists()):
        return "run"  # a side of several runs
    if (Path(source) / "fleet.json").is_file():
        return "fleet-folder"
    if Path(source).exists():
        return "file"
    if is_fleet_analysis_id(source):
        return "fleet"
    return "stored" if is_trace_analysis_id(source) else "run"


def _fleet_inputs(sources: tuple[str, ...], kinds: list[str], *, db_path: str | None) -> list[Any]:
    """Stored fleets (``fleet-...``, ``fleet:latest``) and fleet output folders, read as stored."""
    from parity.compare import FleetInput
    from parity.store import Store
    from parity.store.fleet_analyses import get_fleet_analysis

    inputs = []
    for source, kind in zip(sources, kinds):
        if kind == "fleet-folder":
            from parity.trace.fleet.folder import fleet_headline, read_fleet_folder, straggler_rows

            folder = read_fleet_folder(source)
            inputs.append(FleetInput(label=Path(folder.out_dir).name, headline=fleet_headline(folder),
                                     stragglers=tuple(straggler_rows(folder)), out_dir=folder.out_dir,
                                     summary=folder.summary))
            continue
        with Store.open(db_path, read_only=True) as store:
            stored = get_fleet_analysis(store, source)
        inputs.append(FleetInput(label=stored.label, headline=stored.headline, stragglers=stored.stragglers,
                                 analysis_id=stored.analysis_id, out_dir=stored.out_dir, summary=stored.summary))
    return inputs


def _trace_inputs(sources: tuple[str, ...], kinds: list[str], *, db_path: str | None, window_text: str | None,
                  steps_text: str | None, rank: int | None) -> list[Any]:
    from parity.cli.trace_compare import trace_inputs

    return trace_inputs(sources, db_path=db_path, window_text=window_text, steps_text=steps_text, rank=rank)


@click.command()
@click.argument("sources", nargs=-1, required=True)
@click.option("--force", is_flag=True,
              help="Compare runs whose byte conventions, timing methods or offline/online mode differ, and "
                   "suite figures whose scopes differ; every affected line is marked.")
@click.option("--markdown", "markdown_path", type=click.Path(dir_okay=False, allow_dash=True),
              help="Also write Markdown to FILE ('-' for stdout): the claims as sentences with their scope, "
                   "ready to paste, then the tables.")
@click.option("--window", "window_text", metavar="START_US:END_US",
              help="For trace files: the window to analyse ('span' for the whole device span).")
@click.option("--steps", "steps_text", metavar="A-B", help="For trace files: analyse steps A..B.")
@click.option("--rank", type=int, default=None, metavar="N", help="For traces: the rank to compare (default: the first).")
@click.option("--limit", type=click.IntRange(min=1), metavar="N", default=200, show_default=True,
              help="Case rows shown (all of them in --json).")
@db_option
@json_option
def compare(sources: tuple[str, ...], force: bool, markdown_path: str | None, window_text: str | None,
            steps_text: str | None, rank: int | None, limit: int, db_path: str | None, json_path: str | None) -> None:
    """Compare runs, stored trace analyses, trace files or fleet analyses side by side.

    SOURCES are two or more sides of runs, stored trace analyses (trace-... ids from parity
    trace analyze --store, trace:latest, trace:latest~1), trace files and folders, or fleet
    analyses (fleet-... ids from parity trace fleet --store, fleet:latest, fleet:latest~1, or
    fleet output folders), all of one kind. A side of runs is one run (an id, a
    unique prefix, latest, latest~1), several runs of one measurement joined by commas
    (A1,A2,A3), or a repeat group of parity run --repeat N (group:ID, group:latest). Runs:
    identical cases are joined (same suite and case key: shape, dtype, size, collective, model
    config), each with its speed relative to the first side and a 95% CI from a hierarchical
    bootstrap (runs, then raw samples within each run): between-run with two or more runs per
    side, within-run only with one, as the output says. A ratio whose CI holds 1 reads "no
    difference measured". Then the medians over the joined cases and over the shapes
    compute-bound on every run, the suite figures whose scope (dtype, convention, case set)
    matches (others listed as not comparable, with the reason, unless --force), and a fairness
    audit of every condition that differs. Runs whose byte conventions, timing methods or
    offline/online mode differ are refused unless --force.
    Traces: per category and per stream, busy time and share side by side, each trace's window
    stated. Fleets: median and p99 arrival skew, total wait, and per op the skew, wait, comm
    time and busbw medians, with each straggler's times last and step cost.

    \b
    Example:
      parity compare latest~1 latest
      parity compare 20261129-2303 20261130-0915 --markdown cmp.md --json cmp.json
      parity compare group:rep-20261203-1012-ab12 group:latest --markdown -
      parity compare 20261203-1012,20261203-1013,20261203-1015 20261203-1100,20261203-1101,20261203-1102
      parity compare trace-20261201-1012-ab12 trace:latest
      parity compare rank0_h100.json.gz ASCEND_PROFILER_OUTPUT/ --window span
      parity compare fleet-20261203-1012-ab12 fleet:latest
    """
    from parity.compare import compare_fleets, compare_runs, compare_traces
    from parity.report.comparison import comparison_markdown, render_comparison
    from parity.store import Store

    kinds = [_kind(s) for s in sources]
    families = {"run" if k == "run" else "fleet" if k.startswith("fleet") else "trace" for k in kinds}
    if len(families) > 1:
        mixed = ", ".join(f"{s} ({k})" for s, k in zip(sources, kinds))
        what = "runs or traces, not both" if "fleet" not in families else "runs, traces or fleets, not a mix"
        raise ParityError(f"compare takes {what}: {mixed}; give sources of one kind")
    if families == {"fleet"}:
        if window_text or steps_text or rank is not None:
            raise ParityError("--window, --steps and --rank are for traces; drop them to compare fleets")
        document = compare_fleets(_fleet_inputs(sources, kinds, db_path=db_path)).to_dict()
    elif kinds[0] == "run":
        if window_text or steps_text or rank is not None:
            raise ParityError("--window, --steps and --rank are for traces; drop them to compare runs")
        with Store.open(db_path, read_only=True) as store:
            document = compare_runs(store, list(sources), force=force).to_dict()
    else:
        inputs = _trace_inputs(sources, kinds, db_path=db_path, window_text=window_text, steps_text=steps_text,
                               rank=rank)
        document = compare_traces(inputs).to_dict()
    console = stdout_console("-" if "-" in (json_path, markdown_path) else None)
    console.print(render_comparison(document, limit=limit))
    for note in document.get("notes") or []:
        console.print(f"note: {note}", markup=False, highlight=False)
    if markdown_path:
        write_text(markdown_path, claims_markdown(document) + comparison_markdown(document))
    payload = {k: v for k, v in document.items() if k not in ("schema_version", "kind")}
    write_json(json_path, document["kind"], payload)  # the file is the comparison's to_dict()


def claims_markdown(doc: dict[str, Any]) -> str:
    """The claims as Markdown sentences ready to paste, with the notes that qualify them (the
    kind of CI), before the tables."""
    claims = doc.get("claims") or []
    if not claims:
        return ""
    lines = ["## Claims", ""]
    lines += [f"- {_sentence(c)}" for c in claims]
    notes = [n for n in doc.get("notes") or [] if n.startswith("CIs are")]
    lines += [""] + [f"_{n}._" for n in notes] + [""] if notes else [""]
    return "\n".join(lines) + "\n"


def _sentence(text: str) -> str:
    """A claim as a sentence: capitalised, ending in a full stop."""
    text = " ".join(str(text).split()).replace("|", "\\|").replace("<", "&lt;")
    return (text[:1].upper() + text[1:]).rstrip(".") + "."

