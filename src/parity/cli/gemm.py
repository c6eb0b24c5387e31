"""``parity gemm``: the GEMM sweep (catalog or CSV shapes) and ``parity gemm shapes``."""

from __future__ import annotations

import csv
import io
from typing import Any

import click

from parity.cli.output import json_option, write_json
from parity.cli.progress import ProgressRenderer
from parity.cli.runs import db_option, stdout_console
from parity.model.errors import ParityError

DTYPE_CHOICES = ["bf16", "fp16", "fp32", "tf32", "fp8"]


def _sweep_options(dtype: str, backends: tuple[str, ...], shapes: str, ceiling_budget_s: float | None,
                   ceiling_from: str | None, peak_tflops: float | None = None) -> dict[str, Any]:
    names = [name.strip() for spec in backends for name in spec.split(",") if name.strip()]
    options: dict[str, Any] = {"dtype": dtype, "backends": names or ["matmul"], "shapes": shapes}
    if ceiling_budget_s is not None:
        options["ceiling_budget_s"] = ceiling_budget_s
    if ceiling_from is not None:
        options["ceiling_from"] = ceiling_from
    if peak_tflops is not None:
        options["peak_tflops"] = peak_tflops
    return options


def _refuse_changes(ctx: click.Context) -> None:
    """``--resume`` continues with the stored settings; flags that would change them are refused."""
    given = [f"--{name.replace('_', '-')}" for name in ("dtype", "backends", "shapes", "quick", "ceiling_budget_s",
                                                                   "ceiling_from", "peak_tflops")
             if ctx.get_parameter_source(name) not in (None, click.core.ParameterSource.DEFAULT)]
    if given:
        flags = ", ".join(g.replace("--backends", "--backend").replace("--ceiling-budget-s", "--ceiling-budget")
                          .replace("--peak-tflops", "--peak")
                          for g in given)
        raise ParityError(f"--resume continues a run with its stored settings; drop {flags}")


@click.group(invoke_without_command=True)
@click.option("--dtype", type=click.Choice(DTYPE_CHOICES), default="bf16", show_default=True,
              help="Precision: bf16, fp16, fp32, tf32 (fp32 storage, TF32 matrix math), fp8 (e4m3, scaled matmul).")
@click.option("--backend", "backends", multiple=True, metavar="NAME",
              help="GEMM backends, comma-separated or repeated: matmul (alias torch; the default), linear, "
                   "compile (torch.compile max-autotune), triton (triton.autotune, CUDA), tilelang, or a "
                   "plugin module:Class. With several, the first is the baseline: each other backend's "
                   "speedup over it per shape (alternated rounds, 95% CI), tuning time, and a summary by "
                   "size bucket.")
@click.option("--shapes", default="catalog", show_default=True, metavar="catalog|FILE.csv",
              help="The built-in 1,055-shape catalog, or a CSV of m,n,k[,name] lines.")
@click.option("--quick", is_flag=True, help="The catalog's quick selection and short budgets (minutes on a CPU).")
@click.option("--device", "device_name", default=None, metavar="DEV",
              help="Device to measure (cuda:0, npu:0, xpu, mps, cpu). Default: the best one here.")
@click.option("--ceiling-budget", "ceiling_budget_s", type=float, default=None, metavar="SECONDS",
              help="Time for the compute-ceiling search (default 20 s quick / 60 s full).")
@click.option("--ceiling-from", "ceiling_from", default=None, metavar="RUN_ID",
              help="Reuse that stored run's compute ceiling P (same dtype and device) instead of searching, "
                   "so two sweeps divide by one P.")
@click.option("--peak", "peak_tflops", type=click.FloatRange(0.0, min_open=True), default=None, metavar="TFLOPS",
              help="A peak (dense TFLOP/s) to show beside P instead of the datasheet's or the CPU's derived one.")
@click.option("--resume", "resume_id", default=None, metavar="RUN_ID",
              help="Continue an interrupted sweep: measure only the shapes it lacks.")
@click.option("--limit", type=int, default=40, show_default=True, help="Shape rows shown in the terminal.")
@db_option
@json_option
@click.pass_context
def gemm(ctx: click.Context, dtype: str, backends: tuple[str, ...], shapes: str, quick: bool,
         device_name: str | None, ceiling_budget_s: float | None, ceiling_from: str | None,
         peak_tflops: float | None, resume_id: str | None, limit: int,
         db_path: str | None, json_path: str | None) -> int | None:
    """Time matmul over the shape catalog: TFLOP/s per shape, the measured compute and
    bandwidth ceilings, roofline efficiency, correctness, and the sweep summary.

    Every shape is stored as it is measured; an interrupted sweep continues with --resume.
    Exit status 1 when a shape failed (error, wrong result).

    \b
    Example:
      parity gemm --quick --device cpu --json out.json
      parity gemm --dtype fp8 --backend matmul --backend linear
      parity gemm --quick --device cpu --backend torch,compile --json g.json
      parity gemm --shapes my_shapes.csv --device cuda:0
      parity gemm --quick --device cpu --ceiling-from latest
      parity gemm --device cuda:0 --peak 989.5
      parity gemm shapes --count
    """
    if ctx.invoked_subcommand is not None:
        return None
    from parity.harness.registry import get_suite
    from parity.harness.runner import run_suites
    from parity.device import get_device
    from parity.families.gemm.views import VIEW
    from parity.store import Store

    from parity.families.gemm.stored_ceiling import attach_stored_ceiling

    options = _sweep_options(dtype, backends, shapes, ceiling_budget_s, ceiling_from, peak_tflops)
    with Store.open(db_path) as store:
        options = attach_stored_ceiling(store, options)
        if resume_id is not None:
            _refuse_changes(ctx)
            run = store.get_run(resume_id)
            if "gemm" not in run.config.get("suites", []):
                raise ParityError(f"run {run.run_id} has no gemm sweep; resume it with 'parity run --resume'")
            if run.status == "complete":
                from parity.cli.run import nothing_to_resume

                click.echo(nothing_to_resume(run.run_id))
                return 0
            resume_id = run.run_id
            options = dict(run.config.get("options", {}).get("gemm", {}))
            quick = bool(run.config.get("quick", False))
            device_name = device_name or run.config.get("device")
        suite = get_suite("gemm")
        device = get_device(device_name)
        renderer = ProgressRenderer(label="parity gemm")

        def progress(event: Any) -> None:
            if event.phase == "start":
                renderer.note(f"run {event.run_id} on {device.name} (store {store.path})")
            renderer(event)

        with renderer:
            outcome = run_suites(store, device=device, suites=[suite], quick=quick,
                                 options={"gemm": options}, resume_run_id=resume_id, progress=progress)
    result = outcome.suites[0]
    summary = dict(result.summary)
    rows = summary.pop("rows", [])
    console = stdout_console(json_path)
    if result.summary_error:
        console.print(f"summary failed: {result.summary_error}", style="red")
    if rows or summary:
        console.print(VIEW.terminal({**summary, "rows": rows}, limit=limit))
    console.print(f"run {outcome.run.run_id}: {result.cases} cases, {result.failed} failed"
                  + (" - OK" if result.ok else " - FAILED"), style="green" if result.ok else "red")
    write_json(json_path, "gemm", {
        "run_id": outcome.run.run_id,
        "device": device.name,
        "options": options,
        "quick": quick,
        "ok": result.ok,
        "summary": summary,
        "rows": rows,
        "cases": [c.to_dict() for c in outcome.cases],
    })
    return 0 if result.ok else 1


@gemm.command("shapes")
@click.option("--count", is_flag=True, help="Print only the number of shapes.")
@click.option("--csv", "as_csv", is_flag=True, help="Print m,n,k,name,family,origin as CSV.")
@click.option("--quick", is_flag=True, help="Only the --quick selection.")
@click.option("--family", default=None, metavar="NAME", help="Only one family (llm, square, m-sweep, ...).")
@json_option
def shapes(count: bool, as_csv: bool, quick: bool, family: str | None, json_path: str | None) -> None:
    """List the GEMM shape catalog: name, M, N, K, family and origin of every shape.

    \b
    Example:
      parity gemm shapes --count
      parity gemm shapes --csv > catalog.csv
      parity gemm shapes --quick --family llm
    """
    from parity.families.gemm.catalog import CATALOG_VERSION, FAMILIES, catalog, catalog_digest, quick_selection

    selected = quick_selection(catalog()) if quick else catalog()
    if family is not None:
        if family not in FAMILIES:
            raise ParityError(f"unknown family {family!r}; use one of {', '.join(FAMILIES[:-1])}")
        selected = [s for s in selected if s.family == family]
    write_json(json_path, "gemm-shapes", {
        "catalog_version": CATALOG_VERSION, "digest": catalog_digest(), "count": len(selected),
        "shapes": [s.to_dict() for s in selected],
    })
    if count:
        click.echo(str(len(selected)))
        return
    if as_csv:
        buffer = io.StringIO()
        writer = csv.writer(buffer, lineterminator="\n")
        writer.writerow(["m", "n", "k", "name", "family", "origin"])
        for s in selected:
            writer.writerow([s.m, s.n, s.k, s.name, s.family, s.origin])
        click.echo(buffer.getvalue(), nl=False)
        return
    from rich.table import Table

    table = Table(title=f"GEMM catalog v{CATALOG_VERSION}: {len(selected)} shapes", title_justify="left")
    for name, justify in (("name", "left"), ("M", "right"), ("N", "right"), ("K", "right"),
                          ("family", "left"), ("origin", "left")):
        table.add_column(name, justify=justify)
    for s in selected:
        table.add_row(s.name, str(s.m), str(s.n), str(s.k), s.family, s.origin)
    stdout_console(json_path).print(table)
