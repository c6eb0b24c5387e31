"""``parity doctor``: what this machine is, and which parts of the accelerator stack work on it."""

from __future__ import annotations

import time
from typing import Any

import click
from rich.console import Console, Group
from rich.markup import escape
from rich.table import Table

from parity.cli.output import json_option, write_json
from parity.cli.progress import ProgressRenderer
from parity.cli.runs import stdout_console
from parity.model.errors import ParityError
from parity.report.units import format_bytes

SMOKE_STYLE = {"passed": "green", "failed": "red", "skipped": "yellow"}


def _table(title: str) -> Table:
    table = Table(title=title, title_justify="left", show_header=False, box=None, pad_edge=False)
    table.add_column(style="bold", no_wrap=True)
    table.add_column(overflow="fold")
    return table


def host_table(host: dict[str, Any]) -> Table:
    """CPU, architecture, cores, memory, caches, the flags that matter, affinity and NUMA."""
    table = _table("Host")
    table.add_row("cpu", escape(f"{host.get('cpu_model')} ({host.get('architecture')})"))
    table.add_row(
        "cores", f"{host.get('logical_cpus')} logical, {host.get('physical_cores') or '?'} physical"
    )
    table.add_row("memory", format_bytes(host.get("memory_bytes")))
    table.add_row(
        "caches",
        "L1d {} / L2 {} / LLC {} (per instance)".format(
            format_bytes(host.get("l1_bytes")),
            format_bytes(host.get("l2_bytes")),
            format_bytes(host.get("llc_bytes")),
        ),
    )
    clock = host.get("max_clock_mhz")
    table.add_row("clock", f"{clock:.0f} MHz ({host.get('max_clock_source')})" if clock else "-")
    flags = host.get("flags_of_interest", {})
    present = [f for f, on in flags.items() if on]
    absent = [f for f, on in flags.items() if not on]
    table.add_row(
        "cpu flags",
        (", ".join(present) or "none")
        + (f"  [dim](absent: {', '.join(absent)})[/dim]" if absent else ""),
    )
    pinned = host.get("pinned")
    table.add_row(
        "affinity",
        f"cpus {host.get('affinity')} of {host.get('online_cpus')} online"
        + (" [yellow](pinned to a subset)[/yellow]" if pinned else " (not pinned)"),
    )
    if host.get("numa_nodes"):
        used = ", ".join(str(n) for n in host.get("numa_nodes_used", [])) or "?"
        table.add_row(
            "numa",
            f"{host['numa_nodes']} node(s); process may use node {used}"
            + (" [yellow](pinned)[/yellow]" if host.get("numa_pinned") else ""),
        )
    return table


def software_table(prov: dict[str, Any]) -> Table:
    """OS, Python, torch and its backend toolkits, drivers, parity itself."""
    table = _table("Software")
    osi = prov["os"]
    os_text = f"{osi.get('distribution') or osi['system']} (kernel {osi['release']})"
    table.add_row("os", escape(os_text))
    python = prov["python"]
    table.add_row("python", escape(f"{python['version']} ({python['executable']})"))
    torch = prov["torch"]
    if torch.get("installed"):
        table.add_row(
            "torch",
            f"{torch['version']} (cpu kernels: {torch.get('cpu_capability') or '?'}, "
            f"{torch.get('threads')} threads)",
        )
        for key, label in (
            ("cuda", "cuda"),
            ("hip", "rocm/hip"),
            ("cudnn", "cudnn"),
            ("nccl", "nccl"),
            ("torch_npu", "torch_npu"),
            ("cann", "cann"),
        ):
            if torch.get(key):
                table.add_row(label, escape(str(torch[key])))
    else:
        table.add_row("torch", f"[red]{escape(torch['reason'])}[/red]")
    for name, version in prov.get("drivers", {}).items():
        table.add_row(f"driver ({name})", escape(version))
    parity = prov["parity"]
    revision = parity.get("git_revision")
    git = (
        f"git {revision[:12]}{' (modified)' if parity.get('git_dirty') else ''}"
        if revision
        else parity.get("git_reason", "")
    )
    table.add_row("parity", escape(f"{parity['version']} ({git})"))
    return table


def device_table(device: dict[str, Any], error: str | None) -> Table:
    """The selected device: name, vendor, compute units, memory, caches, clocks, power limit."""
    table = _table("Device")
    if error:
        table.add_row("selected", f"[red]{escape(error)}[/red]")
        return table
    props = device.get("properties", {})
    table.add_row("selected", f"{device['selected']} ({device.get('count')} of this type)")
    table.add_row("name", escape(f"{props.get('name')} ({props.get('vendor')})"))
    if props.get("compute_units"):
        table.add_row(
            "compute units", f"{props['compute_units']} {props.get('compute_unit_kind', '')}"
        )
    table.add_row("memory", format_bytes(props.get("memory_bytes")))
    table.add_row("last-level cache", format_bytes(props.get("llc_bytes")))
    for key, value in device.get("nvml", {}).items():
        table.add_row(key.replace("_", " "), escape(str(value)))
    return table


def readiness_table(rows: list[dict[str, Any]], device_name: str) -> Table:
    """One row per backend or library: installed (version), importable, smoke test, why not."""
    table = Table(title=f"Readiness (smoke tests on {device_name})", title_justify="left")
    for column in ("component", "installed", "import", "smoke", "status"):
        table.add_column(column, no_wrap=True)
    table.add_column("detail", overflow="fold", ratio=1)
    kind = None
    for row in rows:
        if kind is not None and row["kind"] != kind:
            table.add_section()
        kind = row["kind"]
        version = escape(str(row["version"]))
        installed = f"[green]{version}[/green]" if row["installed"] else "[dim]no[/dim]"
        importable = {True: "[green]yes[/green]", False: "[red]no[/red]", None: "[dim]-[/dim]"}
        smoke = row["smoke"]
        detail = row["smoke_kind"] if smoke == "passed" else row["reason"]
        style = SMOKE_STYLE[smoke]
        table.add_row(
            row["name"],
            installed,
            importable[row["importable"]],
            f"[{style}]{smoke}[/{style}]",
            row["status"],
            escape(detail),
        )
    return table


def environment_table(env: dict[str, str]) -> Table:
    """The variables that change results, as set for this process."""
    table = _table("Environment (variables that change results)")
    for name, value in env.items():
        table.add_row(name, escape(value))
    if not env:
        table.add_row("-", "none of NCCL_*, HCCL_*, PYTORCH_*, CUDA_*, OMP_*... is set")
    return table


def settings_table(setup: Any) -> Table:
    """The settings a run records and the audit compares (clock locks, ECC, partitioning, power
    cap, interconnect), worded as the audit words them; the host's clocks too beside an
    accelerator (they decide launch and copy overheads)."""
    from parity.compare.audit_setup import show_clock_lock, show_ecc, show_links, show_partition, show_power_cap

    table = _table("Settings that decide results (recorded by every run, compared by the audit)")
    for name, show in (("clock locks", show_clock_lock), ("ECC", show_ecc), ("partitioning", show_partition),
                       ("power cap", show_power_cap), ("interconnect", show_links)):
        table.add_row(name, escape(show(setup)))
    if isinstance(setup, dict) and setup.get("device") != "the host's":
        table.add_row("host clocks", escape(show_clock_lock({"device": "the host's", "host": setup.get("host")})))
    return table


@click.command()
@click.option(
    "--device",
    "device_name",
    default=None,
    metavar="DEV",
    help="Device to check (cuda:0, npu:0, xpu, mps, cpu). Default: the best one here.",
)
@click.option(
    "--timeout",
    "timeout_s",
    default=180.0,
    show_default=True,
    metavar="SECONDS",
    help="Time allowed for each import and smoke test (each runs in its own process).",
)
@json_option
def doctor(device_name: str | None, timeout_s: float, json_path: str | None) -> int:
    """Report this machine (CPU, architecture, cores, flags, affinity, OS, torch, drivers,
    device), the settings that decide results (clock locks, ECC, partitioning, power cap,
    interconnect, as every run records them) and a readiness matrix of the accelerator stack: for torch's backends, DeepSeek's
    six libraries (tilelang, deep_gemm, deep_ep, tile_kernels, flash_mla, deep_select) and
    torch_npu, vllm, vllm_ascend, sglang and triton, whether each is installed (version),
    importable (the error in one line when not), and passes a smoke test of one real kernel
    against its torch reference on the device, with a status word and the reason when not (no
    accelerator, wrong host architecture, an import error). Exit status 1 when the chosen
    device is not usable.

    \b
    Example:
      parity doctor
      parity doctor --device cuda:0 --json doctor.json
    """
    from parity.device import get_device
    from parity.device.provenance import collect_provenance
    from parity.device.readiness import check_stack

    device, error = None, None
    try:
        device = get_device(device_name)
    except ParityError as exc:
        error = str(exc)
    provenance = collect_provenance(device)
    started = time.perf_counter()
    with ProgressRenderer(label="parity doctor") as renderer:

        def progress(row: dict[str, Any], done: int, total: int) -> None:
            elapsed = time.perf_counter() - started
            renderer.update(
                done=done,
                total=total,
                label=row["name"],
                ok=row["smoke"] != "failed",
                eta_s=elapsed / done * (total - done),
            )

        rows = check_stack(device, timeout_s=timeout_s, progress=progress)
    console = stdout_console(json_path)  # off a terminal as wide as the other commands' tables
    console.print(
        Group(
            host_table(provenance["host"]),
            "",
            software_table(provenance),
            "",
            device_table(provenance["device"], error),
            "",
            settings_table(provenance.get("setup")),
            "",
            environment_table(provenance["environment"]),
            "",
            readiness_table(rows, device.name if device else "cpu"),
        )
    )
    write_json(
        json_path, "doctor", {"provenance": provenance, "readiness": rows, "device_error": error}
    )
    return 1 if error else 0
