"""``parity membw``: memory bandwidth across transfer sizes, with the t = a + V/b fit."""

from __future__ import annotations

from typing import Any

import click

from parity.cli.output import json_option, write_json
from parity.cli.runs import db_option, stdout_console
from parity.model.errors import ParityError


def parse_bytes(value: str | None, *, option: str) -> int | None:
    """``64MiB``, ``1K``, ``4 GiB`` or a plain number of bytes; None passes through."""
    if value is None:
        return None
    from parity.device.host import parse_size

    try:
        return parse_size(value)
    except (ValueError, ParityError):
        raise ParityError(f"{option} {value!r} is not a size; write it like 64MiB, 1K or 4096") from None


def run_one_suite(name: str, *, device_name: str | None, quick: bool, options: dict[str, Any],
                  db_path: str | None, label: str) -> tuple[Any, Any]:
    """Measure one registered suite into the store with progress; ``(outcome, device)``."""
    from parity.bench.registry import get_suite
    from parity.bench.runner import run_suites
    from parity.cli.progress import ProgressRenderer
    from parity.device import get_device
    from parity.store import Store

    device = get_device(device_name)
    with Store.open(db_path) as store, ProgressRenderer(label=label) as renderer:
        outcome = run_suites(store, device=device, suites=[get_suite(name)], quick=quick,
                             options={name: options}, progress=renderer)
    return outcome, device


def suite_payload(outcome: Any, name: str) -> dict[str, Any]:
    """The JSON document of a one-suite command: run id, summary fields, every case."""
    suite = next(s for s in outcome.suites if s.name == name)
    if suite.summary_error:
        raise ParityError(f"summarising {name} failed: {suite.summary_error}")
    return {
        "run_id": outcome.run.run_id,
        "ok": outcome.ok,
        **suite.summary,
        "cases": [c.to_dict() for c in outcome.cases],
        "provenance": outcome.run.provenance,
    }


@click.command()
@click.option("--device", "device_name", default=None, metavar="DEV",
              help="Device to measure (cuda:0, npu:0, xpu, mps, cpu). Default: the best one here.")
@click.option("--quick", is_flag=True, help="Sizes up to 64 MiB, one per octave: about a minute on 2 CPU cores.")
@click.option("--ops", default=None, metavar="LIST",
              help="Operations, comma-separated: copy, read, write, triad, and on accelerators "
                   "h2d-pinned, h2d-pageable, d2h-pinned, d2h-pageable. Default: all that apply.")
@click.option("--min-size", default=None, metavar="SIZE", help="Smallest operand size (default 1KiB).")
@click.option("--max-size", default=None, metavar="SIZE",
              help="Largest operand size (default 4GiB, 64MiB with --quick; always capped by free memory).")
@click.option("--per-octave", type=click.IntRange(1, 8), default=None,
              help="Sizes per doubling (default 2, 1 with --quick).")
@click.option("--threads", type=click.IntRange(1), default=None,
              help="CPU only: torch intra-op threads (default: torch's choice, always recorded).")
@click.option("--no-flush", is_flag=True, help="Do not flush the cache between calls (measures cache bandwidth at small sizes).")
@click.option("--budget-s", type=click.FloatRange(0.0, min_open=True), default=None,
              help="Timing budget per case in seconds (default 0.1).")
@db_option
@json_option
def membw(device_name: str | None, quick: bool, ops: str | None, min_size: str | None,
          max_size: str | None, per_octave: int | None, threads: int | None, no_flush: bool,
          budget_s: float | None, db_path: str | None, json_path: str | None) -> int:
    """Memory bandwidth against transfer size: copy, read (a reduction), write (a fill), triad,
    and host<->device copies with pinned and pageable memory on accelerators.

    Each point gives the median time with its IQR, GB/s under the STREAM convention (bytes read
    plus written; nvbandwidth's n/t beside it), and utilization against the measured ceiling (the
    largest copy) and the datasheet peak. Each operation's curve is fitted with t = a + V/b: the
    fixed cost a, the asymptotic bandwidth b and the half-bandwidth size n½ = a·b.

    \b
    Example:
      parity membw --quick --json membw.json
      parity membw --device cuda:0 --ops copy,h2d-pinned --max-size 1GiB
    """
    from parity.report.memory import render_membw

    options: dict[str, Any] = {"flush": not no_flush}
    for key, value in (("ops", ops), ("per_octave", per_octave), ("threads", threads), ("budget_s", budget_s),
                       ("min_bytes", parse_bytes(min_size, option="--min-size")),
                       ("max_bytes", parse_bytes(max_size, option="--max-size"))):
        if value is not None:
            options[key] = value
    outcome, device = run_one_suite("membw", device_name=device_name, quick=quick, options=options,
                                    db_path=db_path, label="parity membw")
    payload = suite_payload(outcome, "membw")
    console = stdout_console(json_path)
    console.print(f"membw on {device.name} (run {outcome.run.run_id})")
    console.print(render_membw(payload))
    write_json(json_path, "membw", payload)
    return 0 if outcome.ok else 1
