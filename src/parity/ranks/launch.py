"""parity starts N local ranks itself, through torch's elastic launcher (what torchrun runs).

``launch_local_ranks(nproc, entry, args, timeout_s=...)`` returns every rank's return value of
``entry(*args)``, in rank order. ``entry`` must be a module-level function (it is pickled into
fresh processes) and should begin with ``parity.ranks.join_group()``, exactly as under the
user's ``torchrun``: the ranks find RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR and MASTER_PORT
set, with ``PARITY_LOCAL_LAUNCH=1`` besides.

How (``parity.ranks.supervisor``): a supervisor process, in a session of its own, runs
``torch.distributed.launcher.api.elastic_launch`` with ``nproc`` workers on this host: c10d
rendezvous on 127.0.0.1 at a free port, ``max_restarts=0``, ``spawn``; gloo is kept on the
loopback interface (``GLOO_SOCKET_IFNAME``) unless the user chose one. Each rank marks a file
when it starts and when ``entry`` returns.

Bounded time and nothing left behind:

- a rank that exits with an error (an exception, ``os._exit(3)``, a signal) makes the elastic
  agent stop the others at once; the launch raises a one-line ParityError naming the rank that
  failed first, its exit code or signal, and its exception's message;
- a rank that hangs: ``timeout_s`` after the last rank started, the whole process group is
  sent SIGTERM, then SIGKILL after ``KILL_GRACE_S``, and the ParityError names the ranks that
  had not returned (or, sooner, a rank's own barrier error naming the hung rank, when the entry
  waits at a timed ``barrier``);
- ranks that do not start (each is a fresh interpreter importing torch: seconds on a busy host)
  are ended the same way after ``start_timeout_s``, named;
- the supervisor dies with the calling process (Linux ``PR_SET_PDEATHSIG``), and its SIGTERM
  handler stops the ranks, so a killed parity leaves no rank behind.

So a launch ends within ``start_timeout_s + timeout_s + 2 * KILL_GRACE_S`` plus the
supervisor's own start, whatever the ranks do.
"""

from __future__ import annotations

import contextlib
import logging
import math
import multiprocessing
import os
import pickle
import signal
import socket
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from parity.model.errors import ParityError
from parity.ranks.supervisor import LOOPBACK, RankFailure, mark_path, supervise

log = logging.getLogger(__name__)

KILL_GRACE_S = 3.0
DEFAULT_START_TIMEOUT_S = 120.0
POLL_S = 0.1
GONE_POLL_S = 0.05  # between looks for a supervisor's exit
# Filler torch puts in a failure without an error file; it says nothing about the failure.
_NO_MESSAGE = "To enable traceback"
_OWN_ERROR = "ParityError: "


def free_port(host: str = LOOPBACK) -> int:
    """A TCP port nothing listens on at ``host`` now (the OS picks it; a race is possible but
    the rendezvous then fails loudly rather than joining another run)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def launch_local_ranks(
    nproc: int,
    entry: Callable[..., Any],
    args: Sequence[Any] = (),
    *,
    timeout_s: float,
    start_timeout_s: float = DEFAULT_START_TIMEOUT_S,
) -> list[Any]:
    """Run ``entry(*args)`` on ``nproc`` local ranks; their return values in rank order.

    ``timeout_s`` bounds the ranks' run, counted from the moment the last rank started;
    ``start_timeout_s`` bounds their start (a fresh interpreter importing torch each).
    """
    if nproc < 1:
        raise ParityError(f"cannot launch {nproc} ranks; ask for 1 or more")
    if timeout_s <= 0 or start_timeout_s <= 0:
        raise ParityError(
            f"launch timeouts must be positive, got {timeout_s!r} and {start_timeout_s!r} s"
        )
    with tempfile.TemporaryDirectory(prefix="parity-ranks-") as workdir:
        status = Path(workdir) / "status"
        status.mkdir()
        job = {
            "nproc": nproc,
            "entry": entry,
            "args": tuple(args),
            "port": free_port(),
            "workdir": workdir,
            "parent": os.getpid(),
            "quiet": not log.isEnabledFor(logging.DEBUG),
            "grace_s": KILL_GRACE_S,
        }
        limits = {"timeout_s": timeout_s, "start_timeout_s": start_timeout_s}
        outcome = _supervised(job, status=status, limits=limits)
    if isinstance(outcome, str):
        raise ParityError(outcome)
    kind, payload = outcome
    if kind == "failed":
        for failure in payload:
            if failure.traceback:
                log.info("rank %d failed:\n%s", failure.rank, failure.traceback)
        raise ParityError(failure_message(payload, nproc=nproc))
    if kind == "error":
        raise ParityError(f"local launch of {nproc} ranks failed: {payload}")
    return list(payload)


def _supervised(
    job: dict[str, Any], *, status: Path, limits: dict[str, float]
) -> tuple[str, Any] | str:
    """Start the supervisor and wait for its answer; the timeout's message instead when the
    ranks do not start or do not return in time. The supervisor's process group is ended on
    every way out."""
    context = multiprocessing.get_context("spawn")
    receive, send = context.Pipe(duplex=False)
    process = context.Process(target=supervise, args=(job, send), name="parity-ranks")
    try:
        process.start()
    except (pickle.PicklingError, TypeError, AttributeError) as exc:
        receive.close()
        send.close()
        raise ParityError(
            f"cannot start ranks with entry {getattr(job['entry'], '__qualname__', job['entry'])}"
            f": {exc}; pass a module-level function and picklable arguments"
        ) from None
    send.close()
    answered = False
    try:
        late = _wait(receive, status, nproc=job["nproc"], **limits)
        if late is not None:
            return late
        answered = True
        with contextlib.suppress(EOFError):
            return receive.recv()
        process.join(timeout=KILL_GRACE_S)
        return ("error", f"the launcher process exited with code {process.exitcode}")
    finally:
        _end_group(process, answered=answered)
        receive.close()


def _wait(
    receive: Any, status: Path, *, nproc: int, timeout_s: float, start_timeout_s: float
) -> str | None:
    """Poll for the supervisor's answer: None when it comes, else the message of the bound
    that ran out first (start, then run). The bounds are counted in polls: a poll that returns
    without an answer has waited ``POLL_S``, so ``n`` of them have waited at least ``n * POLL_S``
    (a deadline is a bound, not a measurement: no clock is read)."""
    polls, all_started = 0, None
    while not receive.poll(POLL_S):
        polls += 1
        if all_started is None:
            if len(_marked(status, "started", nproc)) == nproc:
                all_started = polls
            elif polls * POLL_S > start_timeout_s:
                return start_message(status, nproc=nproc, start_timeout_s=start_timeout_s)
        elif (polls - all_started) * POLL_S > timeout_s:
            return hang_message(status, nproc=nproc, timeout_s=timeout_s)
    return None


def _marked(status: Path, mark: str, nproc: int) -> list[int]:
    """The ranks whose wrapper left ``rank<r>.<mark>`` in the status folder."""
    return [r for r in range(nproc) if mark_path(status, r, mark).exists()]


def _end_group(process: Any, *, answered: bool) -> None:
    """End the supervisor's process group: a grace for a supervisor that answered to exit by
    itself, then SIGTERM to the group, SIGKILL after ``KILL_GRACE_S``; reap the supervisor."""
    if answered:
        _wait_gone(process, KILL_GRACE_S)
    for sig in (signal.SIGTERM, signal.SIGKILL):
        if _wait_gone(process, 0):
            break
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, sig)  # the supervisor leads its own session
        _wait_gone(process, KILL_GRACE_S)
    process.join()


def _wait_gone(process: Any, wait_s: float) -> bool:
    """True once the supervisor has exited (and is reaped) and no process of its group is
    left, looking every ``GONE_POLL_S`` for at most ``wait_s`` seconds (counted in looks)."""
    for look in range(math.ceil(wait_s / GONE_POLL_S) + 1):
        if look:
            time.sleep(GONE_POLL_S)
        if not process.is_alive() and not _group_alive(process.pid):
            return True
    return False


def _group_alive(pgid: int) -> bool:
    """True while some process of group ``pgid`` exists (a zombie leader counts until reaped)."""
    try:
        os.killpg(pgid, 0)
    except (ProcessLookupError, PermissionError):
        return False
    return True


def start_message(status: Path, *, nproc: int, start_timeout_s: float) -> str:
    """Which ranks had not started when the start bound ran out."""
    missing = sorted(set(range(nproc)) - set(_marked(status, "started", nproc)))
    return (
        f"{_ranks(missing)} of {nproc} did not start within {start_timeout_s:g} s; raise "
        "start_timeout_s on a busy host; the processes were ended"
    )


def hang_message(status: Path, *, nproc: int, timeout_s: float) -> str:
    """Which ranks had not returned ``timeout_s`` after the last one started."""
    late = sorted(set(range(nproc)) - set(_marked(status, "done", nproc)))
    if not late:
        return (
            f"all {nproc} ranks returned but the launcher did not finish within {timeout_s:g} s"
            " of their start; the processes were ended"
        )
    return (
        f"{_ranks(late)} of {nproc} did not return within {timeout_s:g} s of starting (it "
        "hangs, or waits on a rank that does); the processes were ended"
    )


def _ranks(ranks: list[int]) -> str:
    return ("rank " if len(ranks) == 1 else "ranks ") + ", ".join(map(str, ranks))


def failure_message(failures: Sequence[RankFailure], *, nproc: int) -> str:
    """One line for the ranks that failed: the earliest is the root cause, the others are
    listed after it."""
    first = min(failures, key=lambda f: (f.timestamp, f.rank))
    code = first.exitcode
    how = f"was killed by {_signal_name(-code)}" if code < 0 else f"exited with code {code}"
    line = f"rank {first.rank} of {nproc} {how}"
    message = " ".join(first.message.split())[:300]
    if message.startswith(_OWN_ERROR):  # parity's own one-line error, already explicit
        line = f"rank {first.rank} of {nproc} stopped: {message[len(_OWN_ERROR):]}"
    elif message and _NO_MESSAGE not in message:
        line += f": {message}"
    others = sorted(f.rank for f in failures if f.rank != first.rank)
    if others:
        line += f" (also failed: rank {', '.join(map(str, others))})"
    return line


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"
