"""Whether a run marked ``running`` is still being measured, or was interrupted.

A run is committed case by case and marked ``complete`` or ``failed`` at its end; a process
killed on the way leaves it ``running`` for ever. The writing process's host and pid are in the
run's provenance (``target.provenance[0]``, rank 0): on that host, a pid that no longer exists
means the run was interrupted (resume it with ``parity run --resume``). On another host parity
cannot tell, and says so.
"""

from __future__ import annotations

import os
import platform
from typing import Any

from parity.model.result import RunRecord

INTERRUPTED = "interrupted"
UNKNOWN = "running (on another host)"


def writer_process(run: RunRecord) -> tuple[str | None, int | None]:
    """(host, pid) of the process that wrote ``run``, from its provenance; None where absent."""
    target: dict[str, Any] = run.provenance.get("target") or {}
    entries = target.get("provenance") or []
    first = entries[0] if entries and isinstance(entries[0], dict) else {}
    pid = first.get("pid")
    return first.get("host"), int(pid) if isinstance(pid, int) else None


def pid_alive(pid: int) -> bool:
    """True when a process ``pid`` exists on this host (signal 0 probes without sending)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def run_state(run: RunRecord, *, hostname: str | None = None) -> str:
    """``run.status``, except that a ``running`` run whose writer is gone is ``interrupted``
    and one written on another host is ``running (on another host)``."""
    if run.status != "running":
        return run.status
    host, pid = writer_process(run)
    if host is None or pid is None:
        return run.status
    if host != (hostname or platform.node()):
        return UNKNOWN
    return run.status if pid_alive(pid) else INTERRUPTED
