"""``parity run --ranks N`` and ``parity run --join``: one run measured on a group of ranks."""

from __future__ import annotations

import sys
from typing import Any

import click

from parity.model.errors import ParityError
from parity.store import Store


def stored_world_size(run: Any) -> int | None:
    """The number of ranks a stored run was measured on (None for a single-device run)."""
    target = run.provenance.get("target") or {}
    if target.get("kind") != "ranks":
        return None
    return int(target.get("identity", {}).get("world_size") or 0) or None


def measure_on_ranks(
    *, ranks: int | None, join: bool, db: str, suites: list[str], quick: bool, options: dict[str, Any],
    device_name: str | None, resume_id: str | None, step_timeout_s: float, backend: str | None = None,
    topology: str | None = None,
) -> str | None:
    """Measure on ``ranks`` local ranks (or, with ``join``, as one rank of the user's launcher);
    the run id on the process that holds rank 0's answer, None on the other joined ranks."""
    from parity.harness.ranked import RankRequest, rank_main

    request = RankRequest(suites=tuple(suites), quick=quick, options=options, device=device_name, db=db,
                          resume_run_id=resume_id, argv=tuple(sys.argv), step_timeout_s=step_timeout_s,
                          backend=backend, topology=topology)
    if join:
        answer = rank_main(request)
        return None if answer is None else str(answer["run_id"])
    with Store.open(db) as store:
        before = {r.run_id for r in store.list_runs()}
    click.echo(f"parity: measuring on {ranks} local ranks (store {db})", err=True)
    try:
        answer = _launch_showing_progress(int(ranks or 1), request)
    except ParityError as exc:
        raise ParityError(f"{exc}{_resume_hint(db, before, resume_id, ranks)}") from None
    return str(answer["run_id"])


def _launch_showing_progress(nproc: int, request: Any) -> dict[str, Any]:
    """``launch_run`` in a thread while this one shows rank 0's progress events as they come."""
    import dataclasses
    import tempfile
    import threading

    from parity.harness.ranked import launch_run, read_progress
    from parity.cli.progress import ProgressRenderer

    with tempfile.TemporaryDirectory(prefix="parity-progress-") as folder:
        path = f"{folder}/events.jsonl"
        request = dataclasses.replace(request, progress_path=path)
        outcome: dict[str, Any] = {}

        def launch() -> None:
            try:
                outcome["answer"] = launch_run(nproc, request)
            except BaseException as exc:  # noqa: BLE001 - re-raised in the calling thread
                outcome["error"] = exc

        worker = threading.Thread(target=launch, name="parity-launch", daemon=True)
        offset = 0
        with ProgressRenderer(label=f"parity run ({nproc} ranks)") as renderer:
            worker.start()
            while True:
                worker.join(timeout=0.25)
                events, offset = read_progress(path, offset=offset)
                for event in events:
                    renderer(event)
                if not worker.is_alive():
                    break
    if "error" in outcome:
        raise outcome["error"]
    return outcome["answer"]


def _resume_hint(db: str, before: set[str], resume_id: str | None, ranks: int | None) -> str:
    """``; continue with: parity run --resume ID --ranks N`` for the run this launch started."""
    with Store.open(db) as store:
        started = resume_id or next((r.run_id for r in store.list_runs() if r.run_id not in before), None)
    if started is None:
        return ""
    return f"; the cases measured so far are stored: continue with parity run --resume {started} --ranks {ranks}"
