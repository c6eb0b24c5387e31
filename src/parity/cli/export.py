"""``parity export astra-sim|calculon|vidur|fit RUN...``: measured inputs for simulators.

From stored collectives (and preflight) runs: the α-β fit ``t = α + x/β`` per collective and
dimension (``parity.metrics.alphabeta``), written in each simulator's format
(``parity.export.simulators``) into ``--out``, with ``provenance.json`` beside the files (the
runs' ids, times, targets, topology, preflight, and the fits with their CIs).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from parity.cli.output import json_option, write_json
from parity.cli.runs import db_option
from parity.model.errors import ParityError


@click.group()
def export() -> None:
    """Measured inputs for simulators, from stored runs, with their provenance beside them.

    \b
    Example:
      parity export astra-sim RUN_A RUN_B --out astra/
      parity export fit RUN --fit-max-bytes 4MiB
    """


def _fits(points: list[Any], *, max_bytes: float | None = None) -> list[Any]:
    from parity.export.points import group_points
    from parity.metrics.alphabeta import fit_alpha_beta

    fits = []
    for _key, group in sorted(group_points(points).items()):
        used = [p for p in group if max_bytes is None or p.size_bytes <= max_bytes]
        if len({p.bus_bytes for p in used}) >= 2:
            fits.append(fit_alpha_beta(used))
    if not fits:
        raise ParityError("the runs hold no collective measured at two or more sizes; give runs of "
                          "'parity comm collectives' or 'parity comm preflight'")
    return fits


def _load(db: str | None, run_ids: tuple[str, ...]) -> tuple[list[Any], list[Any]]:
    runs, points, _ = _load_with_ceilings(db, run_ids)
    return runs, points


def _load_with_ceilings(db: str | None, run_ids: tuple[str, ...]) -> tuple[list[Any], list[Any], dict[str, Any]]:
    """The named runs, their collective points, and the device ceilings ``P`` and ``B`` any of
    them measured (``parity.export.points.device_ceilings``)."""
    from parity.export.points import device_ceilings, stored_points
    from parity.store import Store

    if not run_ids:
        raise ParityError("name at least one stored run: parity export astra-sim RUN...")
    with Store.open(db, read_only=True) as store:
        runs, points = stored_points(store, run_ids)
        return runs, points, device_ceilings(store, runs)


def _ranks_per_dimension(runs: list[Any]) -> dict[str, int]:
    """Ranks per node (intra-node) and nodes (inter-node) where a run recorded its topology."""
    out: dict[str, int] = {}
    for run in runs:
        topology = run.provenance.get("topology") or {}
        if topology.get("ranks_per_node"):
            out.setdefault("intra", int(topology["ranks_per_node"]))
        if topology.get("nodes"):
            out.setdefault("inter", int(topology["nodes"]))
    return out


def _provenance(runs: list[Any], fits: list[Any], *, files: list[str], fmt: str) -> dict[str, Any]:
    import parity

    return {"format": fmt, "files": files, "parity_version": getattr(parity, "__version__", None),
            "model": "t = alpha + S*f(op, n)/beta (docs/definitions.md, alpha-beta fit)",
            "fits": [f.to_dict() for f in fits],
            "runs": [{"run_id": r.run_id, "created_at": r.created_at, "config": r.config,
                      "target": r.provenance.get("target"), "topology": r.provenance.get("topology"),
                      "preflight": r.provenance.get("preflight"), "host": r.provenance.get("host")}
                     for r in runs]}


def _doubt_line(fit: Any) -> str | None:
    """What a fit resting on points its runs could not vouch for says on stderr, or None."""
    if not fit.doubtful_points:
        return None
    return (f"parity: the {fit.op} {fit.dimension} fit rests on {fit.doubtful_points} of {fit.points} points measured "
            f"{' or '.join(fit.doubts)} (their run could not vouch for them); measure them again on a quiet machine")


def _write(out: str, files: dict[str, str], runs: list[Any], fits: list[Any], fmt: str,
           extra: dict[str, Any] | None = None) -> dict[str, Any]:
    for line in filter(None, map(_doubt_line, fits)):
        click.echo(line, err=True)
    folder = Path(out)
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (folder / name).write_text(text, encoding="utf-8")
    provenance = {**_provenance(runs, fits, files=sorted(files), fmt=fmt), **(extra or {})}
    (folder / "provenance.json").write_text(json.dumps(provenance, indent=2, default=str), encoding="utf-8")
    for name in [*sorted(files), "provenance.json"]:
        click.echo(str(folder / name))
    return provenance


RUNS = click.argument("run_ids", nargs=-1, metavar="RUN...")
OUT = click.option("--out", "out", default=".", show_default=True, type=click.Path(file_okay=False),
                   help="Folder to write the files into.")


@export.command("astra-sim")
@RUNS
@OUT
@db_option
@json_option
def astra_sim(run_ids: tuple[str, ...], out: str, db_path: str | None, json_path: str | None) -> None:
    """ASTRA-sim's analytical network file (network.yml) and system file (system.json).

    The system file's peak-perf (TFLOP/s) and local-mem-bw (GB/s), with roofline on, come from
    a gemm sweep's P and a membw (or gemm) B among RUN...; without both they are 0, roofline off,
    and a line on stderr says so. provenance.json names the runs and figures they came from.

    \b
    Example:
      parity export astra-sim RUN_INTRA RUN_INTER --out astra/
    """
    from parity.export.simulators import astra_network_yaml, astra_system

    runs, points, ceilings = _load_with_ceilings(db_path, run_ids)
    fits = _fits(points)
    peak, memory = ceilings.get("peak_flop_per_s"), ceilings.get("mem_bytes_per_s")
    system = astra_system(fits, peak_flop_per_s=peak["value"] if peak else None,
                          mem_bytes_per_s=memory["value"] if memory else None)
    if not (peak and memory):
        click.echo("parity: peak-perf and local-mem-bw need a gemm and a membw run among RUN... (none measured "
                   f"{' and '.join(k for k, v in (('P', peak), ('B', memory)) if not v)}): written as 0 with "
                   "roofline-enabled 0", err=True)
    files = {"network.yml": astra_network_yaml(fits, ranks_per_dimension=_ranks_per_dimension(runs)),
             "system.json": json.dumps(system, indent=2) + "\n"}
    written = _write(out, files, runs, fits, "astra-sim", extra={"device_ceilings": ceilings})
    write_json(json_path, "export", written)


@export.command("calculon")
@RUNS
@OUT
@db_option
@json_option
def calculon(run_ids: tuple[str, ...], out: str, db_path: str | None, json_path: str | None) -> None:
    """Calculon's system entries that parity measures: calculon_networks.json (the "networks"
    tiers, from collectives runs) and calculon_system.json (those tiers, with "matrix" from a
    gemm sweep's P and its efficiency by GFLOP, and "mem1" from membw's B and its efficiency by
    MB, when RUN... hold them). "vector", "mem2" and "processing_mode" are not measured: merge the
    file into a system file that gives them (stderr and provenance.json say what is missing).

    \b
    Example:
      parity export calculon COLLECTIVES_RUN GEMM_MEMBW_RUN --out calculon/
    """
    from parity.export.points import device_cases
    from parity.export.simulators import calculon_matrix, calculon_memory, calculon_networks
    from parity.store import Store

    runs, points, ceilings = _load_with_ceilings(db_path, run_ids)
    with Store.open(db_path, read_only=True) as store:
        measured = device_cases(store, runs)
    fits = _fits(points)
    tiers = calculon_networks(fits, ranks_per_dimension=_ranks_per_dimension(runs))
    system: dict[str, Any] = {}
    peak, memory = ceilings.get("peak_flop_per_s"), ceilings.get("mem_bytes_per_s")
    if peak and measured["shapes"]:
        system["matrix"] = calculon_matrix(measured["shapes"], peak_flop_per_s=peak["value"],
                                           dtype=_calculon_dtype(measured["dtype"]))
    if memory and measured["copies"]:
        system["mem1"] = calculon_memory(measured["copies"], bandwidth_bps=memory["value"],
                                         capacity_bytes=measured["capacity_bytes"])
    system["networks"] = tiers
    missing = [key for key in ("matrix", "vector", "mem1", "mem2", "processing_mode") if key not in system]
    click.echo(f"parity: calculon_system.json lacks {', '.join(missing)} (not measured by the named runs); "
               "give them in the system file it is merged into", err=True)
    files = {"calculon_networks.json": json.dumps({"networks": tiers}, indent=2) + "\n",
             "calculon_system.json": json.dumps(system, indent=2) + "\n"}
    written = _write(out, files, runs, fits, "calculon", extra={"device_ceilings": ceilings, "not_measured": missing})
    write_json(json_path, "export", written)


def _calculon_dtype(dtype: str | None) -> str:
    """Calculon's name of a parity dtype (``bf16`` -> ``bfloat16``, ``fp32`` -> ``float32``)."""
    names = {"bf16": "bfloat16", "fp16": "float16", "fp32": "float32", "fp8": "float8", "tf32": "float32"}
    return names.get(str(dtype), str(dtype or "float16"))


@export.command("vidur")
@RUNS
@OUT
@db_option
@json_option
def vidur(run_ids: tuple[str, ...], out: str, db_path: str | None, json_path: str | None) -> None:
    """Vidur's network profiles: all_reduce.csv and send_recv.csv, times in ms.

    \b
    Example:
      parity export vidur RUN --out vidur/
    """
    from parity.export.simulators import vidur_csv

    runs, points = _load(db_path, run_ids)
    fits = _fits(points)
    per_node = _ranks_per_dimension(runs).get("intra") or max((p.world_size for p in points), default=1)
    files = {f"{name}.csv": vidur_csv(op, points, devices_per_node=per_node, max_devices_per_node=per_node)
             for op, name in (("all_reduce", "all_reduce"), ("sendrecv", "send_recv"))
             if any(p.op == op for p in points)}
    write_json(json_path, "export", _write(out, files, runs, fits, "vidur"))


@export.command("fit")
@RUNS
@click.option("--fit-max-bytes", "fit_max", default=None, metavar="SIZE",
              help="Fit on sizes up to this (e.g. 4MiB) and check the prediction of the larger ones.")
@click.option("--tolerance", default=0.15, show_default=True, type=click.FloatRange(0, min_open=True),
              help="Relative error the check accepts.")
@db_option
@json_option
def fit(run_ids: tuple[str, ...], fit_max: str | None, tolerance: float, db_path: str | None,
        json_path: str | None) -> None:
    """The α-β fit per collective and dimension with 95% CIs, and how well it predicts the points
    left out of it (sizes above --fit-max-bytes, or rank counts of other runs).

    \b
    Example:
      parity export fit RUN --fit-max-bytes 4MiB
    """
    from parity.cli.option_flags import SizeType
    from parity.metrics.alphabeta import check_predictions

    runs, points = _load(db_path, run_ids)
    limit = float(SizeType().convert(fit_max, None, None)) if fit_max else None
    fits = _fits(points, max_bytes=limit)
    payload: dict[str, Any] = {"fits": [], "runs": [r.run_id for r in runs]}
    for f in fits:
        held = [p for p in points if p.op == f.op and p.dimension == f.dimension and limit is not None
                and p.size_bytes > limit]
        check = check_predictions(f, held, tolerance=tolerance) if held else None
        payload["fits"].append({**f.to_dict(), "check": check.to_dict() if check else None})
        line = f"{f.op} {f.dimension}: alpha {f.alpha_s * 1e6:.1f} us, beta {f.beta_bps / 1e9:.3f} GB/s"
        if f.beta_ci_bps:
            line += f" (95% CI {f.beta_ci_bps[0] / 1e9:.3f}-{f.beta_ci_bps[1] / 1e9:.3f})"
        if f.doubtful_points:
            line += f"; {f.doubtful_points} of its {f.points} points {' or '.join(f.doubts)}"
        if check:
            line += (f"; predicts {len(held)} left-out points within {check.max_abs_error:.1%} "
                     f"({'within' if check.within else 'NOT within'} {tolerance:.0%}"
                     + (f", {check.doubtful_points} of them in doubt" if check.doubtful_points else "") + ")")
        click.echo(line)
        doubt = _doubt_line(f)
        if doubt:
            click.echo(doubt, err=True)
    write_json(json_path, "export", payload)
