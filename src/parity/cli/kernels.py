"""``parity kernels``: DeepSeek's kernel-library operations against their torch references."""

from __future__ import annotations

from typing import Any

import click

from parity.cli.output import json_option
from parity.cli.runs import db_option
from parity.cli.suite_command import device_option, run_suite_command


@click.command()
@device_option
@click.option("--quick", is_flag=True, help="CPU-sized shapes and short budgets (well under a minute on 2 cores).")
@click.option("--ops", default=None, metavar="LIST",
              help="Operations, comma-separated: fp8_gemm, grouped_contiguous, grouped_masked, mla_decode. "
                   "Default: all.")
@click.option("--no-libraries", is_flag=True, help="Time only the torch references, not the library kernels.")
@click.option("--seed", type=int, default=None, help="Seed of inputs, group sizes and sequence lengths (default 0).")
@click.option("--ceiling-budget", "ceiling_budget_s", type=click.FloatRange(0.0, min_open=True), default=None,
              metavar="SECONDS", help="Time for each compute-ceiling search (default 3 s quick on a CPU).")
@db_option
@json_option
def kernels(device_name: str | None, quick: bool, ops: str | None, no_libraries: bool, seed: int | None,
            ceiling_budget_s: float | None, db_path: str | None, json_path: str | None) -> int:
    """Block-scaled fp8 GEMM (A per 1x128 group, B per 128x128 block, e4m3), m-grouped GEMM in
    the contiguous and masked layouts, and MLA decode over a paged KV cache (head dim 576, 512
    value, one KV head), each through a torch reference that runs on any device and, where
    installed and runnable, DeepGEMM's, FlashMLA's and TileKernels' kernels on the same inputs.

    Every case declares its FLOP and bytes (valid rows only, causal mask counted), is checked
    against a float64 computation (library kernels with the library's own tolerance), and is
    rated on the roofline of the measured ceilings; a library kernel that did not run says why.
    Exit status 1 when a case failed.

    \b
    Example:
      parity kernels --quick --device cpu --json k.json
      parity kernels --device cuda:0 --ops fp8_gemm,mla_decode
    """
    from parity.families.kernels.views import render_kernels

    options: dict[str, Any] = {"libraries": not no_libraries}
    if ops is not None:
        options["ops"] = [op.strip() for op in ops.split(",") if op.strip()]
    if seed is not None:
        options["seed"] = seed
    if ceiling_budget_s is not None:
        options["ceiling_budget_s"] = ceiling_budget_s
    return run_suite_command("kernels", render=render_kernels, device_name=device_name, quick=quick,
                             options=options, db_path=db_path, json_path=json_path)
