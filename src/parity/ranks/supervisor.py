"""The supervisor of a local launch: the process that runs torch's elastic agent, and the
wrapper each rank runs.

``parity.ranks.launch`` starts ``supervise`` in a fresh (spawned) interpreter. It makes
itself the leader of a new session, so the caller can end it and every rank with one signal to
its process group; asks Linux to send it SIGTERM if the caller dies (the agent's handler then
stops the ranks); keeps gloo on the loopback interface unless the user chose one; runs
``elastic_launch`` (c10d rendezvous on 127.0.0.1, no restarts, spawned workers) and sends the
outcome back through a pipe. Each rank runs ``rank_main``, which leaves a mark when it starts
and when the entry returns, so the caller can name the ranks that hang.
"""

from __future__ import annotations

import contextlib
import ctypes
import dataclasses
import logging
import os
import signal
import socket
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

from parity.model.errors import one_line
from parity.ranks.environment import LOCAL_LAUNCH_VAR

LOOPBACK = "127.0.0.1"


class RankFailure(NamedTuple):
    """One failed rank as the elastic agent saw it: exit code (negative: the signal), the
    message of its error file (``Type: text`` of the exception) and its traceback, if any."""

    rank: int
    exitcode: int
    message: str
    timestamp: float
    traceback: str = ""


def supervise(job: dict[str, Any], send: Any) -> None:
    """The supervisor process's body: own session, die with the parent, run the elastic
    agent, send ``("ok", values)``, ``("failed", [RankFailure])`` or ``("error", text)``."""
    os.setsid()
    _die_with_parent(job["parent"])
    os.environ[LOCAL_LAUNCH_VAR] = "1"
    os.environ.setdefault("GLOO_SOCKET_IFNAME", _loopback_interface())
    if job["nproc"] > 1:  # as torchrun does for several ranks on a node, unless the user chose
        os.environ.setdefault("OMP_NUM_THREADS", str(rank_threads(job["nproc"])))
    try:
        send.send(_run_agent(job))
    except BaseException as exc:  # noqa: BLE001 - every failure goes back to the caller
        send.send(("error", f"{type(exc).__name__}: {one_line(exc, 300)}"))
    finally:
        send.close()


def rank_threads(nproc: int, cpus: int | None = None) -> int:
    """Intra-op threads for each of ``nproc`` ranks on this host: the usable CPUs (this
    process's affinity) shared out, ``max(1, cpus // nproc)``, so that the ranks' threads
    together never outnumber the CPUs. torchrun sets 1 for more than one rank per node; with
    torch's default (every core in every rank) the ranks' threads contend, and a GEMM timed on 2
    ranks of a 2-CPU host ran 1.8-2.9x slower alone than beside an exchange, which it waited for."""
    if cpus is None:
        getter = getattr(os, "sched_getaffinity", None)
        cpus = len(getter(0)) if getter is not None else (os.cpu_count() or 1)
    return max(1, cpus // max(1, nproc))


def _run_agent(job: dict[str, Any]) -> tuple[str, Any]:
    """One elastic launch of ``job["nproc"]`` ranks on this host; its outcome as data."""
    from torch.distributed.elastic.multiprocessing import DefaultLogsSpecs
    from torch.distributed.elastic.multiprocessing.errors import ChildFailedError
    from torch.distributed.launcher.api import LaunchConfig, elastic_launch

    if job["quiet"]:
        _quiet_torch_launcher()
    nproc = job["nproc"]
    wanted = {
        "min_nodes": 1,
        "max_nodes": 1,
        "nproc_per_node": nproc,
        "run_id": f"parity-{os.getpid()}",
        "rdzv_backend": "c10d",
        "rdzv_endpoint": f"{LOOPBACK}:{job['port']}",
        "max_restarts": 0,
        "monitor_interval": 0.1,
        "start_method": "spawn",
        "local_addr": LOOPBACK,
        "logs_specs": DefaultLogsSpecs(log_dir=str(Path(job["workdir"]) / "logs")),
        "shutdown_timeout": int(job["grace_s"]),
    }
    known = {f.name for f in dataclasses.fields(LaunchConfig)}
    config = LaunchConfig(**{k: v for k, v in wanted.items() if k in known})
    status = str(Path(job["workdir"]) / "status")
    try:
        values = elastic_launch(config, rank_main)(job["entry"], status, *job["args"])
    except ChildFailedError as exc:
        return ("failed", [rank_failure(rank, f) for rank, f in exc.failures.items()])
    return ("ok", [values[rank] for rank in range(nproc)])


def _quiet_torch_launcher() -> None:
    """Silence the elastic agent's own log lines (the launch's error says what failed): torch
    gives each of its loggers an explicit level, so every one is set, not only the parent."""
    prefixes = ("torch.distributed.elastic", "torch.distributed.launcher", "torch.multiprocessing")
    for name in list(logging.root.manager.loggerDict):
        if name.startswith(prefixes):
            logging.getLogger(name).setLevel(logging.CRITICAL)


def rank_failure(rank: int, failure: Any) -> RankFailure:
    """A plain record of torch's ``ProcessFailure`` (its error file holds ``{"message": text,
    "extraInfo": {"py_callstack": ...}}`` when the rank raised)."""
    message, stack = failure.message, ""
    if isinstance(message, dict):
        stack = str(message.get("extraInfo", {}).get("py_callstack", ""))
        message = message.get("message", "")
    return RankFailure(
        rank=int(rank),
        exitcode=int(failure.exitcode),
        message=str(message or ""),
        timestamp=float(failure.timestamp),
        traceback=stack,
    )


def rank_main(entry: Callable[..., Any], status: str, *args: Any) -> Any:
    """What each rank runs: mark the start, call ``entry``, mark the return."""
    rank = int(os.environ["RANK"])
    mark_path(status, rank, "started").write_text(str(os.getpid()))
    value = entry(*args)
    mark_path(status, rank, "done").write_text(str(time.time()))
    return value


def mark_path(status: str | Path, rank: int, mark: str) -> Path:
    """Where rank ``rank`` leaves its ``started`` or ``done`` mark in the status folder."""
    return Path(status, f"rank{rank}.{mark}")


def _die_with_parent(parent: int) -> None:
    """Ask Linux to send SIGTERM when the calling process dies (the elastic agent's handler
    then stops the ranks); exit at once if it already has."""
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError, AttributeError):
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    if os.getppid() != parent:
        os._exit(1)


def _loopback_interface() -> str:
    """The loopback interface's name (``lo`` on Linux, ``lo0`` on macOS)."""
    with contextlib.suppress(OSError):
        for _, name in socket.if_nameindex():
            if name.startswith("lo"):
                return name
    return "lo"
