"""What parity's harness adds to a collective's time: gloo all_reduce through the collectives
suite and the harness, beside a bare torch.distributed timing loop, same sizes, same run.

On 2 local gloo ranks on the CPU (``launch_local_ranks``, rendezvous on 127.0.0.1), per size
and round, alternated (A B, then B A, so the machine's load at each moment falls on both):

- bare: nccl-tests' loop with torch.distributed alone: a barrier, ``--iters`` all_reduce calls
  of one fp32 buffer, the elapsed time over ``--iters``, then the maximum over ranks;
- parity: the ``collectives`` suite's declared work for the same op and size, timed by
  ``parity.harness.measure.measure_work`` (max over ranks per iteration, each iteration started
  at a barrier), its median.

The ratio parity/bare, median over rounds, is the harness's cost (or saving: the per-iteration
barrier removes the pipelining a bare loop gets from back-to-back calls).

    flock /tmp/parity-cpu.lock python benchmarks/comm_overhead.py --rounds 5 --out /tmp/co.json
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from typing import Any

from parity.ranks import barrier, joined_group, launch_local_ranks

SIZES = (2**20, 4 * 2**20, 16 * 2**20)


def bare_loop(buffer: Any, *, iterations: int, group: Any) -> float:
    """Seconds per all_reduce by a bare loop, the maximum over ranks (nccl-tests' convention)."""
    import torch
    import torch.distributed as dist

    dist.all_reduce(buffer)  # warm-up
    barrier(group, timeout_s=60)
    begin = time.perf_counter()
    for _ in range(iterations):
        dist.all_reduce(buffer)
    elapsed = torch.tensor([(time.perf_counter() - begin) / iterations], dtype=torch.float64)
    dist.all_reduce(elapsed, op=dist.ReduceOp.MAX)
    return float(elapsed[0])


def parity_time(size: int, *, iterations: int, group: Any) -> float:
    """Median seconds of the collectives suite's all_reduce of ``size`` bytes through the harness."""
    from parity.families.collectives.suite import CollectivesOptions, CollectivesSuite
    from parity.harness.measure import measure_work
    from parity.harness.suite import CaseSpec

    options = CollectivesOptions(iterations=iterations, warmup_s=0.0)
    state = group  # the suite measures on the joined group itself
    case = CaseSpec(suite="collectives", key=f"all_reduce/fp32/in-place/{size}",
                    params={"op": "all_reduce", "dtype": "fp32", "placement": "in-place", "size_bytes": size})
    work = CollectivesSuite().measure(case, device=group.device, options=options, state=state)
    result = measure_work(case, work, device=group.device, group=group)
    assert result.check["passed"], result.check
    return float(result.metrics["median_s"])


def rank_entry(rounds: int, iterations: int) -> dict[str, Any]:
    """Every rank: the alternated rounds; rank 0's answer holds the times."""
    import torch

    times: dict[int, dict[str, list[float]]] = {s: {"bare": [], "parity": []} for s in SIZES}
    with joined_group(device="cpu", backend="gloo", timeout_s=120) as group:
        for r in range(rounds):
            for size in SIZES:
                buffer = torch.ones(size // 4, dtype=torch.float32)
                order = ("bare", "parity") if r % 2 == 0 else ("parity", "bare")
                for which in order:
                    seconds = (bare_loop(buffer, iterations=iterations, group=group) if which == "bare"
                               else parity_time(size, iterations=iterations, group=group))
                    times[size][which].append(seconds)
    return {str(size): value for size, value in times.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--iters", type=int, default=20)
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    answers = launch_local_ranks(2, rank_entry, (args.rounds, args.iters), timeout_s=1800)
    rows = []
    for size, series in answers[0].items():
        ratios = [p / b for p, b in zip(series["parity"], series["bare"])]
        rows.append({"size_bytes": int(size), "bare_s": statistics.median(series["bare"]),
                     "parity_s": statistics.median(series["parity"]), "ratio_median": statistics.median(ratios),
                     "ratios": ratios, "series": series})
    for row in rows:
        print(f"{row['size_bytes']:>10} B  bare {row['bare_s'] * 1e6:9.1f} us  parity {row['parity_s'] * 1e6:9.1f} us"
              f"  parity/bare {row['ratio_median']:.3f} (rounds: {', '.join(f'{r:.3f}' for r in row['ratios'])})")
    if args.out:
        with open(args.out, "w") as handle:
            json.dump({"ranks": 2, "backend": "gloo", "iterations": args.iters, "rows": rows}, handle, indent=2)


if __name__ == "__main__":
    main()
