"""Runs on a group of ranks: what each rank does, started by parity or by the user's launcher.

``parity run --ranks N`` starts N ranks on this host (``parity.ranks.launch_local_ranks``),
each running :func:`rank_main`; under the user's ``torchrun`` or ``srun``, ``parity run --join``
runs :func:`rank_main` in every process it started. Each rank joins the group, takes its own
device (``cuda:<local rank>``, or the CPU), and calls ``run_suites`` with the same request:
every rank measures every case, rank 0 alone opens the store, commits, summarises and answers
with the run id. A rank that dies or hangs is named by the first collective step that misses it
(within ``step_timeout_s``), which ends every rank; the cases committed before stay, and the
run can be resumed with the same ranks.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from typing import Any

from parity.harness.coordination import DEFAULT_STEP_TIMEOUT_S

# A whole multi-rank run may take as long as a full sweep does; hangs are caught per step.
RUN_LIMIT_S = 7 * 24 * 3600.0


@dataclass(frozen=True, kw_only=True)
class RankRequest:
    """What every rank of one run is asked to do (picklable: it travels to fresh processes)."""

    suites: tuple[str, ...]
    quick: bool
    options: dict[str, Any] = field(default_factory=dict)
    device: str | None = None
    db: str | None = None
    resume_run_id: str | None = None
    argv: tuple[str, ...] = ()
    step_timeout_s: float = DEFAULT_STEP_TIMEOUT_S
    progress_path: str | None = None  # rank 0 appends its progress events here, one JSON line each
    backend: str | None = None  # torch.distributed backend; None: the one that goes with the device
    topology: str | None = None  # declared NODESxRANKS; None: read from every rank (parity.ranks.topology)


def rank_main(request: RankRequest) -> dict[str, Any] | None:
    """One rank's whole run: join the group, measure, leave. Rank 0 answers ``{run_id, ok}``."""
    from parity.ranks import joined_group

    with joined_group(device=request.device, timeout_s=request.step_timeout_s,
                      backend=request.backend, topology=request.topology) as group:
        return run_rank(group, request)


def run_rank(group: Any, request: RankRequest) -> dict[str, Any] | None:
    """``run_suites`` on this rank of ``group``; the store is opened on rank 0 only."""
    from parity.harness.registry import resolve
    from parity.harness.runner import run_suites
    from parity.store import Store

    suites = resolve(list(request.suites))
    opened = Store.open(request.db) if group.is_writer else contextlib.nullcontext(None)
    with opened as store:
        outcome = run_suites(store, device=group.device, suites=suites, quick=request.quick,
                             options=request.options, resume_run_id=request.resume_run_id,
                             argv=list(request.argv), group=group,
                             progress=_progress_writer(request.progress_path))
    if outcome is None:
        return None
    return {"run_id": outcome.run.run_id, "ok": outcome.ok}


def _progress_writer(path: str | None) -> Any:
    """A progress callback that appends each event to ``path`` as a JSON line (None: no callback),
    so the process that started the ranks can show rank 0's progress."""
    if path is None:
        return None
    import dataclasses
    import json

    def write(event: Any) -> None:
        with open(path, "a", encoding="utf-8") as out:
            out.write(json.dumps(dataclasses.asdict(event)) + "\n")

    return write


def read_progress(path: str, *, offset: int) -> tuple[list[Any], int]:
    """The progress events appended to ``path`` since ``offset`` (whole lines only), and the
    new offset."""
    import json

    from parity.harness.progress import ProgressEvent

    try:
        with open(path, encoding="utf-8") as source:
            source.seek(offset)
            text = source.read()
    except FileNotFoundError:
        return [], offset
    complete = text[: text.rfind("\n") + 1]
    events = [ProgressEvent(**json.loads(line)) for line in complete.splitlines() if line.strip()]
    return events, offset + len(complete.encode("utf-8"))


def launch_run(nproc: int, request: RankRequest) -> dict[str, Any]:
    """Start ``nproc`` local ranks for ``request``; rank 0's answer."""
    from parity.ranks import launch_local_ranks

    answers = launch_local_ranks(nproc, rank_main, (request,), timeout_s=RUN_LIMIT_S)
    return answers[0]
