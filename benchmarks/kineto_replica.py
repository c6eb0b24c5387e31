"""One real Kineto rank trace replicated into a job of many ranks with known arrival shifts,
for the fleet analysis and TraceLens's multi-rank collective report to read the same files.

The template is one rank's PyTorch profiler trace (JSON, gzip or not) whose NCCL kernels carry
PyTorch's arguments (``Collective name``, ``Process Group Name``, ...). Rank ``r``'s copy is
``rank-NNNNNN.json.gz`` with ``distributedInfo.rank = r``, ``world_size`` and the default
group's ``pg_config`` ranks set to the job's, and on every NCCL kernel ``Process Group Ranks``
and ``Group size`` made the job's. Only the NCCL kernels move: the ``c``-th one (by start)
starts ``shift[r, c]`` later and ends where it ended, as in a real collective, where every
member finishes together once the last one has arrived::

    shift[r, c] = jitter[r, c] + (slow_ns if r == slow_rank)

``jitter`` a seeded integer in ``[0, jitter_ns)`` ns. Shifts must stay below half the
shortest NCCL kernel. Times are written in µs with three decimals (ns), as Kineto writes them.
"""

from __future__ import annotations

import gzip
import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np


@dataclass(frozen=True)
class KinetoReplica:
    """The replica's files (rank r at index r) and the shift applied to each rank's NCCL kernels."""

    paths: tuple[Path, ...]
    shift_ns: np.ndarray  # (ranks, kernels), kernels by start
    slow_rank: int


def load(path: Path) -> dict:
    opener = gzip.open if str(path).endswith(".gz") else open
    with opener(path, "rt") as handle:
        return json.load(handle)


def nccl_kernels(trace: dict) -> list[dict]:
    """The trace's NCCL kernels (``cat == "kernel"`` with a ``Collective name``), by start."""
    kernels = [e for e in trace["traceEvents"]
               if e.get("cat") == "kernel" and "Collective name" in (e.get("args") or {})]  # fmt: skip
    return sorted(kernels, key=lambda e: e["ts"])


def _rank_copy(template: dict, rank: int, ranks: int, shift_ns: np.ndarray) -> dict:
    trace = json.loads(json.dumps(template))  # a deep copy
    info = trace.setdefault("distributedInfo", {})
    info.update(rank=rank, world_size=ranks)
    for pg in info.get("pg_config") or []:
        pg.update(ranks=list(range(ranks)), pg_size=ranks)
    members = str(list(range(ranks)))
    for kernel, shift in zip(nccl_kernels(trace), shift_ns.tolist()):
        start_ns = round(kernel["ts"] * 1000)
        end_ns = start_ns + round(kernel["dur"] * 1000)
        kernel["ts"] = round((start_ns + shift) / 1000, 3)
        kernel["dur"] = round((end_ns - start_ns - shift) / 1000, 3)
        kernel["args"].update({"Process Group Ranks": members, "Group size": ranks})
    return trace


def replicate(template: Path, out: Path, *, ranks: int = 8, slow_rank: int = 5, slow_ns: int = 2_000,
              jitter_ns: int = 1_000, seed: int = 0) -> KinetoReplica:
    """Write ``ranks`` copies of ``template`` into ``out`` with the shifts of the module docstring."""
    trace = load(Path(template))
    kernels = nccl_kernels(trace)
    if not kernels:
        raise SystemExit(f"{template}: no NCCL kernel with a 'Collective name' argument; take another trace")
    groups = {str(k["args"].get("Process Group Name")) for k in kernels}
    if len(groups) != 1:
        raise SystemExit(f"{template}: NCCL kernels in {len(groups)} process groups; this replica assumes one")
    shortest_ns = min(round(k["dur"] * 1000) for k in kernels)
    if slow_ns + jitter_ns >= shortest_ns // 2:
        raise SystemExit(f"shifts up to {slow_ns + jitter_ns} ns reach half the shortest NCCL kernel "
                         f"({shortest_ns} ns); take smaller shifts")  # fmt: skip
    shift = np.random.default_rng(seed).integers(0, jitter_ns, size=(ranks, len(kernels)), dtype=np.int64)
    shift[slow_rank] += slow_ns
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    for rank in range(ranks):
        path = out / f"rank-{rank:06d}.json.gz"
        with gzip.open(path, "wt", compresslevel=1) as handle:
            json.dump(_rank_copy(trace, rank, ranks, shift[rank]), handle)
        paths.append(path)
    return KinetoReplica(paths=tuple(paths), shift_ns=shift, slow_rank=slow_rank)
