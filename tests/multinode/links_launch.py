"""Run a parity comm command as 2 ranks on each of the namespace nodes, under torchrun.

One ``torchrun --nnodes N --nproc-per-node 2`` per node, static rendezvous at node 0's address,
gloo over the nodes' interface; every rank runs ``parity comm ... --join`` and rank 0 writes the
store (a file every namespace sees: they share the file system). Bounded: each launcher is
waited for ``timeout_s`` seconds and killed after it (the namespace set stops the rest).
"""

from __future__ import annotations

import itertools
import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

from netns import Nodes

_ports = itertools.count(29600 + os.getpid() % 200)
SRC = Path(__file__).resolve().parents[2] / "src"


def launch(nodes: Nodes, args: Sequence[str], *, db: Path, json_path: Path, timeout_s: float = 300.0,
           ranks_per_node: int = 2) -> subprocess.CompletedProcess[str]:
    """``parity comm <args> --join --backend gloo --db db --json json_path`` on every node; the
    completed launcher of node 0 (its output holds rank 0's)."""
    port = next(_ports)
    env = {"GLOO_SOCKET_IFNAME": nodes.ifname, "PYTHONPATH": str(SRC), "OMP_NUM_THREADS": "1"}
    procs = []
    for index in range(nodes.count):
        argv = [sys.executable, "-m", "torch.distributed.run", f"--nnodes={nodes.count}",
                f"--nproc-per-node={ranks_per_node}", f"--node-rank={index}", f"--master-addr={nodes.addrs[0]}",
                f"--master-port={port}", "-m", "parity", "comm", *args, "--join", "--backend", "gloo",
                "--db", str(db), "--json", str(json_path)]
        procs.append(nodes.popen(index, argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                 text=True))
    outputs = []
    try:
        for proc in procs:
            out, _ = proc.communicate(timeout=timeout_s)
            outputs.append(out)
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
    return subprocess.CompletedProcess(procs[0].args, procs[0].returncode, outputs[0], "\n".join(outputs[1:]))
