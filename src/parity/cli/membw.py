"""``parity membw``: memory bandwidth across transfer sizes, with the t = a + V/b fit."""

from __future__ import annotations

from typing import Any

import click

from parity.cli.output import json_option
from parity.cli.runs import db_option
from parity.cli.suite_command import parse_bytes, run_suite_command


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
    plus written; nvbandwidth's n/t beside it), and utilization against the measured ceiling (a
    dedicated copy of several times the last-level cache, whatever --max-size says; a point over
    it is a finding) and the datasheet peak. Sizes up to 1 MiB are measured cold (cache flushed)
    and warm (repeated, no flush). Each curve is fitted with t = a + V/b: the fixed cost a, the
    asymptotic bandwidth b and n½ = a·b; the quoted fixed cost and n½ are the warm ones.

    \b
    Example:
      parity membw --quick --json membw.json
      parity membw --device cuda:0 --ops copy,h2d-pinned --max-size 1GiB
    """
    from parity.families.membw.views import VIEW

    render_membw = VIEW.terminal

    options: dict[str, Any] = {"flush": not no_flush}
    for key, value in (("ops", ops), ("per_octave", per_octave), ("threads", threads), ("budget_s", budget_s),
                       ("min_bytes", parse_bytes(min_size, option="--min-size")),
                       ("max_bytes", parse_bytes(max_size, option="--max-size"))):
        if value is not None:
            options[key] = value
    return run_suite_command("membw", render=render_membw, device_name=device_name, quick=quick,
                             options=options, db_path=db_path, json_path=json_path)
