"""What the one-suite commands (``parity membw``, ``parity latency``) share: sizes on the
command line, measuring one registered suite into the store, and printing its result."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from parity.cli.output import write_json
from parity.cli.runs import stdout_console
from parity.model.errors import ParityError


def device_option(function: Any) -> Any:
    """``--device DEV``: the device to measure, the best one here when not given."""
    import click

    return click.option("--device", "device_name", default=None, metavar="DEV",
                        help="Device to measure (cuda:0, npu:0, xpu, mps, cpu). Default: the best one here.")(function)


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
    from parity.harness.registry import get_suite
    from parity.harness.runner import run_suites
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


def run_suite_command(name: str, *, render: Callable[[dict[str, Any]], Any],
                      device_name: str | None, quick: bool, options: dict[str, Any],
                      db_path: str | None, json_path: str | None) -> int:
    """Measure suite ``name``, print ``render(payload)``, write ``--json``; the exit status."""
    outcome, device = run_one_suite(name, device_name=device_name, quick=quick, options=options,
                                    db_path=db_path, label=f"parity {name}")
    payload = suite_payload(outcome, name)
    console = stdout_console(json_path)
    console.print(f"{name} on {device.name} (run {outcome.run.run_id})")
    console.print(render(payload))
    write_json(json_path, name, payload)
    return 0 if outcome.ok else 1
