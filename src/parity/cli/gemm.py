"""``parity gemm``: the GEMM sweep (catalog or CSV shapes) and ``parity gemm shapes``."""

from __future__ import annotations

import csv
import io
from typing import Any

import click

from parity.cli.output import json_option, write_json
from parity.cli.runs import stdout_console
from parity.cli.suite_command import FamilyCommand, family_command
from parity.model.errors import ParityError


def _latest_gemm_run(store: Any, reference: str) -> str:
    """``latest`` or ``latest~N`` counted among the runs with a gemm sweep (the latest run may
    have measured something else); any other reference as given."""
    if reference != "latest" and not reference.startswith("latest~"):
        return reference
    back = reference.removeprefix("latest").removeprefix("~") or "0"
    if not back.isdigit():
        return reference  # the store says what is wrong with it
    sweeps = [r.run_id for r in store.list_runs() if "gemm" in r.config.get("suites", [])]
    if int(back) >= len(sweeps):
        raise ParityError(f"--ceiling-from {reference}: the store has {len(sweeps)} runs with a gemm sweep; "
                          "run one first (parity gemm --quick) or name a run")
    return sweeps[int(back)]


def _stored_ceiling(store: Any, options: dict[str, Any]) -> dict[str, Any]:
    """``--ceiling-from RUN``: that run's compute ceiling copied into the options, so the run's
    stored config holds it and a resume needs no lookup."""
    from parity.families.gemm.stored_ceiling import attach_stored_ceiling

    if options.get("ceiling_from"):
        options = {**options, "ceiling_from": _latest_gemm_run(store, str(options["ceiling_from"]))}
    return attach_stored_ceiling(store, options)


SPEC = FamilyCommand(
    suite="gemm", prepare=_stored_ceiling,
    quick_help="The catalog's quick selection and short budgets (minutes on a CPU).",
    extra=(click.Option(["--limit"], type=int, default=40, show_default=True,
                        help="Shape rows shown in the terminal."),),
)

gemm = family_command(SPEC, group=True, help="""Time matmul over the shape catalog: TFLOP/s per shape, the measured
compute and bandwidth ceilings, roofline efficiency, correctness, and the sweep summary.

Every shape is stored as it is measured; an interrupted sweep continues with --resume. With
several --backends the first is the baseline: each other backend's speedup over it per shape
(alternated rounds, 95% CI), tuning time, and a summary by size bucket (matmul, alias torch;
linear; compile, torch.compile max-autotune; triton, CUDA; tilelang; or a plugin module:Class).
Exit status 1 when a shape failed (error, wrong result).

\b
Example:
  parity gemm --quick --device cpu --json out.json
  parity gemm --dtype fp8 --backends matmul,linear
  parity gemm --quick --device cpu --backends torch,compile --json g.json
  parity gemm --shapes my_shapes.csv --device cuda:0
  parity gemm --quick --device cpu --ceiling-from latest
  parity gemm --device cuda:0 --peak-tflops 989.5
  parity gemm shapes --count
""")


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
