"""Start ``parity`` under ``torchrun`` on every node of a namespace set, as on real hosts.

Each node runs one elastic agent (``python -m torch.distributed.run``) with a c10d rendezvous
on node 0's address (node 0 hosts the rendezvous store: ``is_host=1``; the agents share a host
name, so torchrun cannot tell by name), its own address as ``--local-addr``, and gloo on the
node's interface (``GLOO_SOCKET_IFNAME``). Every process is bounded by ``timeout_s``: past it
the set's processes are stopped and the call fails.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from netns import Nodes

RENDEZVOUS_PORT = 29600  # inside fresh namespaces: nothing else listens there


@dataclass(frozen=True)
class NodeOutcome:
    """One node's agent: its exit status and its output (stdout and stderr together)."""

    returncode: int
    output: str


def torchrun_argv(nodes: Nodes, node: int, args: list[str], *, ranks_per_node: int, run_id: str) -> list[str]:
    """The ``torchrun`` command of ``node`` that runs ``python -m parity ARGS`` on its ranks."""
    argv = [sys.executable, "-m", "torch.distributed.run", "--nnodes", str(nodes.count),
            "--nproc-per-node", str(ranks_per_node), "--rdzv-backend", "c10d",
            "--rdzv-endpoint", f"{nodes.addrs[0]}:{RENDEZVOUS_PORT}", "--rdzv-id", run_id,
            "--local-addr", nodes.addrs[node], "--max-restarts", "0", "--monitor-interval", "0.5"]
    if node == 0:
        argv += ["--rdzv-conf", "is_host=1"]
    return [*argv, "-m", "parity", *args]


def start_parity(nodes: Nodes, args: list[str], *, logs: Path, ranks_per_node: int = 2,
                 run_id: str = "parity-test") -> list[subprocess.Popen]:
    """Start the agents of every node; their output goes to ``logs/node<i>.log``."""
    env = {"GLOO_SOCKET_IFNAME": nodes.ifname, "PYTHONPATH": os.environ.get("PYTHONPATH", ""),
           "OMP_NUM_THREADS": "1"}
    procs = []
    for node in range(nodes.count):
        log = open(logs / f"node{node}.log", "w")  # noqa: SIM115 - closed by the child's exit
        procs.append(nodes.popen(node, torchrun_argv(nodes, node, args, ranks_per_node=ranks_per_node,
                                                     run_id=run_id), env=env, stdout=log,
                                 stderr=subprocess.STDOUT))
        log.close()
    return procs


def wait_all(nodes: Nodes, procs: list[subprocess.Popen], *, logs: Path, timeout_s: float) -> list[NodeOutcome]:
    """Every agent's outcome; past ``timeout_s`` the set's processes are stopped and the call
    raises with what each node printed."""
    deadline = time.monotonic() + timeout_s
    for proc in procs:
        try:
            proc.wait(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            nodes.stop_processes()
            tails = "\n".join(f"--- node {i}\n{_read(logs / f'node{i}.log')[-3000:]}" for i in range(len(procs)))
            raise AssertionError(f"torchrun did not finish within {timeout_s:g} s\n{tails}") from None
    return [NodeOutcome(returncode=int(p.returncode), output=_read(logs / f"node{i}.log")) for i, p in enumerate(procs)]


def run_parity(nodes: Nodes, args: list[str], *, logs: Path, timeout_s: float = 400.0,
               run_id: str = "parity-test") -> list[NodeOutcome]:
    """``start_parity`` and ``wait_all``."""
    return wait_all(nodes, start_parity(nodes, args, logs=logs, run_id=run_id), logs=logs, timeout_s=timeout_s)


def rank_pid(nodes: Nodes, node: int, rank: int) -> int | None:
    """The process id of global rank ``rank`` in ``node``'s namespace (its ``RANK`` variable),
    or None while it has not started."""
    listed = subprocess.run(["ip", "netns", "pids", nodes.namespaces[node]], capture_output=True, text=True,
                            timeout=20)
    for pid in listed.stdout.split():
        try:
            environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
        except OSError:
            continue
        if f"RANK={rank}".encode() in environ:  # whole entries: GROUP_RANK=... does not match
            return int(pid)
    return None


def _read(path: Path) -> str:
    try:
        return path.read_text(errors="replace")
    except OSError:
        return ""
