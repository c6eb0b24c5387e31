"""Which other parity runs measure the same device now: one advisory lock file per run.

Each run (each rank of a run) holds an exclusive ``fcntl.flock`` on its own file,
``<folder>/<device>.<run id>.<rank>.lock``, for as long as it measures. ``others()`` tries a
shared lock on every other file of the same device: one that cannot be taken belongs to a run
that is alive, and its record (pid, run id) is returned; one that can be taken was left by a
run that died, and is removed. Files of the same run id (its other ranks) are not others. So a
second run sees the first at its first case, and the first sees the second at its next one:
both say so.

The folder is ``$PARITY_LOCK_DIR``, else ``parity-locks`` in the system's temporary folder
(shared by every user of the machine, like the device). A lock is advice, never a wait: a run
that cannot create its file measures anyway and says why in ``problem``.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import os
import re
import tempfile
from pathlib import Path
from typing import IO, Any

log = logging.getLogger(__name__)

ENV = "PARITY_LOCK_DIR"


def lock_folder(environ: dict[str, str] | None = None) -> Path:
    """``$PARITY_LOCK_DIR``, else ``<tmp>/parity-locks``."""
    env = os.environ if environ is None else environ
    return Path(env[ENV]) if env.get(ENV) else Path(tempfile.gettempdir()) / "parity-locks"


def device_slug(name: str) -> str:
    """A file-name-safe form of a device name or run id (no dots: they separate the parts): ``cuda:0`` -> ``cuda-0``."""
    return re.sub(r"[^A-Za-z0-9_]+", "-", name).strip("-") or "device"


class DeviceLock:
    """``with DeviceLock(device_name="cpu", run_id=r) as lock: ... lock.others()``."""

    def __init__(self, *, device_name: str, run_id: str, rank: int = 0, folder: Path | None = None) -> None:
        self.slug = device_slug(device_name)
        self.run_id = run_id
        self.folder = folder if folder is not None else lock_folder()
        self.path = self.folder / f"{self.slug}.{device_slug(run_id)}.{rank}.lock"
        self.problem: str | None = None
        self.seen: dict[str, dict[str, Any]] = {}  # every other run seen, by run id
        self._file: IO[str] | None = None

    def __enter__(self) -> DeviceLock:
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            with contextlib.suppress(OSError):
                self.folder.chmod(0o1777)  # every user's runs meet here, as on /tmp
            # Locked under a name no prober looks at, then renamed: never seen unlocked.
            fresh = self.path.with_name(self.path.name + ".new")
            handle = open(fresh, "w")  # noqa: SIM115 - held until __exit__
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            handle.write(json.dumps({"pid": os.getpid(), "run_id": self.run_id, "device": self.slug}))
            handle.flush()
            os.replace(fresh, self.path)
            self._file = handle
        except OSError as exc:
            self.problem = f"cannot hold {self.path}: {exc}"
            log.warning("concurrent runs on this device will not be detected: %s", self.problem)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._file is not None:
            with contextlib.suppress(OSError):
                self.path.unlink()
            self._file.close()
            self._file = None

    def others(self) -> list[dict[str, Any]]:
        """Other live runs holding a lock on this device now (their pid and run id)."""
        found = []
        own = f".{device_slug(self.run_id)}."
        try:
            paths = sorted(self.folder.glob(f"{self.slug}.*.lock"))
        except OSError:
            return []
        for path in paths:
            if own in path.name[len(self.slug):]:
                continue
            holder = _holder(path)
            if holder is not None:
                found.append(holder)
                self.seen.setdefault(str(holder.get("run_id")), holder)
        return found


def _holder(path: Path) -> dict[str, Any] | None:
    """The record of the live run holding ``path``, or None (a dead run's file is removed)."""
    try:
        handle = open(path)  # noqa: SIM115 - closed below
    except OSError:
        return None
    with handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            try:
                record = json.loads(handle.read() or "{}")
            except ValueError:
                record = {}
            return {"pid": record.get("pid"), "run_id": record.get("run_id"), "file": path.name}
        except OSError:
            return None
        with contextlib.suppress(OSError):
            path.unlink()  # nobody holds it: its run ended without removing it
        return None


def concurrent_message(others: list[dict[str, Any]], device_name: str) -> str:
    """One line naming the other runs: ``another parity run measured cpu at the same time ...``."""
    names = ", ".join(f"run {o.get('run_id')} (pid {o.get('pid')})" for o in others)
    return f"another parity run measured {device_name} at the same time: {names}"
