"""What parity's own launch of local ranks costs, beside torchrun, and how fast it ends a failure.

One run measures, on this host, with 2 gloo ranks on the CPU (rendezvous and gloo on
127.0.0.1 for both launchers):

1. start-up: the wall time of a launch whose ranks join the group (``join_group``: init, the
   gloo control group, the provenance gather) and return, through ``launch_local_ranks`` and
   through ``torchrun`` (``python -m torch.distributed.run``) running the same join, alternated
   for ``--rounds`` rounds (A B, B A, ...), so the machine's load at each moment falls on both;
2. a dead rank: rank 1 stamps the wall clock and calls ``os._exit(3)`` while rank 0 waits at a
   barrier; the seconds from that stamp to the launch's ParityError (``detect_dead_s``);
3. a hung rank: rank 1 sleeps, rank 0 returns; the launch's ``timeout_s`` is ``--hang-timeout``
   and the figure is the seconds from the last rank's start stamp to the ParityError, less the
   timeout (``hang_overrun_s``: the kill and reap after the bound).

Wall-clock stamps are compared across processes of one host (``time.time()``, the same clock).

    flock /tmp/parity-cpu.lock python benchmarks/rank_launch.py --rounds 3 --out /tmp/rl.json
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from parity.model.errors import ParityError
from parity.ranks import barrier, joined_group, launch_local_ranks

NPROC = 2


def join_and_return() -> int:
    """A rank that joins the group (device: the CPU) and returns its rank."""
    with joined_group(device="cpu", timeout_s=60) as group:
        return group.rank


def die_after_join(stamps: str) -> None:
    """Rank 1 stamps the time and exits with status 3; rank 0 waits at a barrier."""
    with joined_group(device="cpu", timeout_s=60) as group:
        if group.rank == 1:
            Path(stamps, "died").write_text(repr(time.time()))
            os._exit(3)
        barrier(group, timeout_s=60)


def hang_in_rank1(stamps: str) -> None:
    """Each rank stamps its start; rank 1 then sleeps far past the bound."""
    Path(stamps, f"start{os.environ['RANK']}").write_text(repr(time.time()))
    if os.environ["RANK"] == "1":
        time.sleep(600)


def time_parity() -> float:
    begun = time.perf_counter()
    assert launch_local_ranks(NPROC, join_and_return, timeout_s=120) == [0, 1]
    return time.perf_counter() - begun


def time_torchrun(port: int) -> float:
    command = [
        sys.executable, "-m", "torch.distributed.run",
        f"--nproc-per-node={NPROC}", "--nnodes=1", "--max-restarts=0",
        "--rdzv-backend=c10d", f"--rdzv-endpoint=127.0.0.1:{port}", "--local-addr=127.0.0.1",
        __file__, "--as-rank",
    ]  # fmt: skip
    env = {**os.environ, "GLOO_SOCKET_IFNAME": os.environ.get("GLOO_SOCKET_IFNAME", "lo")}
    begun = time.perf_counter()
    subprocess.run(command, check=True, env=env, capture_output=True, timeout=300)
    return time.perf_counter() - begun


def detect_dead_s() -> float:
    with tempfile.TemporaryDirectory() as stamps:
        try:
            launch_local_ranks(NPROC, die_after_join, (stamps,), timeout_s=120)
        except ParityError as exc:
            ended = time.time()
            assert "rank 1 of 2 exited with code 3" in str(exc), exc
            return ended - float(Path(stamps, "died").read_text())
    raise AssertionError("the launch with a dead rank did not fail")


def hang_overrun_s(timeout_s: float) -> float:
    with tempfile.TemporaryDirectory() as stamps:
        try:
            launch_local_ranks(NPROC, hang_in_rank1, (stamps,), timeout_s=timeout_s)
        except ParityError as exc:
            ended = time.time()
            assert "rank 1 of 2 did not return" in str(exc), exc
            started = max(float(p.read_text()) for p in Path(stamps).glob("start*"))
            return ended - started - timeout_s
    raise AssertionError("the launch with a hung rank did not fail")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=3, help="alternated start-up rounds")
    parser.add_argument("--hang-timeout", type=float, default=2.0, help="launch timeout_s (s)")
    parser.add_argument("--out", type=Path, help="write the figures as JSON here")
    parser.add_argument("--as-rank", action="store_true", help=argparse.SUPPRESS)
    options = parser.parse_args()
    if options.as_rank:  # torchrun's worker: the same join as parity's ranks
        join_and_return()
        return
    from parity.ranks import free_port

    parity_s: list[float] = []
    torchrun_s: list[float] = []
    for i in range(options.rounds):  # A B, B A, ...
        if i % 2 == 0:
            parity_s.append(time_parity())
            torchrun_s.append(time_torchrun(free_port()))
        else:
            torchrun_s.append(time_torchrun(free_port()))
            parity_s.append(time_parity())
    figures: dict[str, Any] = {
        "ranks": NPROC,
        "startup_parity_s": parity_s,
        "startup_torchrun_s": torchrun_s,
        "startup_parity_median_s": statistics.median(parity_s),
        "startup_torchrun_median_s": statistics.median(torchrun_s),
        "detect_dead_s": detect_dead_s(),
        "hang_timeout_s": options.hang_timeout,
        "hang_overrun_s": hang_overrun_s(options.hang_timeout),
        "cpus": os.cpu_count(),
        "load_average": os.getloadavg(),
    }
    text = json.dumps(figures, indent=2)
    print(text)
    if options.out:
        options.out.write_text(text + "\n")


if __name__ == "__main__":
    main()
