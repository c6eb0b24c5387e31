"""``parity latency``: pointer-chase latency against working-set size and concurrent blocks."""

from __future__ import annotations

from typing import Any

import click

from parity.cli.output import json_option
from parity.cli.runs import db_option
from parity.cli.suite_command import parse_bytes, run_suite_command


@click.command()
@click.option("--device", "device_name", default=None, metavar="DEV",
              help="Device to measure (cuda:0, npu:0, xpu, mps, cpu). Default: the best one here.")
@click.option("--quick", is_flag=True,
              help="Working sets to 4x the last-level cache (8x without --quick), within a quarter of free memory; short chains.")
@click.option("--pages", type=click.Choice(["base", "thp", "both"]), default="both", show_default=True,
              help="CPU page size: base pages (4 KiB), transparent huge pages, or both where the OS allows.")
@click.option("--max-size", default=None, metavar="SIZE",
              help="Largest working set (default 8x the last-level cache, 4x with --quick, within a quarter of free memory).")
@click.option("--stride", "stride_bytes", type=click.IntRange(8), default=None,
              help="Bytes between slots (default: 64 on the CPU, 128 on GPUs).")
@click.option("--estimator", type=click.Choice(["min", "median"]), default="min", show_default=True,
              help="Slope between the two chains' minima (undisturbed hardware latency) or medians.")
@db_option
@json_option
def latency(device_name: str | None, quick: bool, pages: str, max_size: str | None,
            stride_bytes: int | None, estimator: str, db_path: str | None, json_path: str | None) -> int:
    """Pointer-chase latency: ns per dependent load through a random single-cycle ring, from the slope
    between two chain lengths.

    Curve one, latency against working-set size, shows the cache levels as plateaus, named and
    compared with the sizes the device reports. Curve two, latency against concurrent blocks each
    chasing its own 16 KiB, shows knees where a shared resource saturates (blocks are threads on
    the CPU, Triton programs on GPUs). Every figure names its page size.

    \b
    Example:
      parity latency --quick --json latency.json
      parity latency --pages thp --max-size 256MiB
    """
    from parity.families.latency.views import VIEW

    render_latency = VIEW.terminal

    options: dict[str, Any] = {"estimator": estimator,
                               "pages": ["base", "thp"] if pages == "both" else [pages]}
    if (top := parse_bytes(max_size, option="--max-size")) is not None:
        options["max_bytes"] = top
    if stride_bytes is not None:
        options["stride_bytes"] = stride_bytes
    return run_suite_command("latency", render=render_latency, device_name=device_name,
                             quick=quick, options=options, db_path=db_path, json_path=json_path)
