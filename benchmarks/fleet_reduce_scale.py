"""The fleet reduce at scale: a synthetic job's map tables, reduced in a fresh process, timed.

Usage:

    python benchmarks/fleet_reduce_scale.py --ranks 1024 --steps 1000 --segments 3 --out /tmp/fleet

writes ``OUT/map/{rank_info,collectives}/rank-NNNNNN.parquet`` for a simulated job
(:func:`parity.trace.fleet.synthetic.simulate`: sub-groups of 8 ranks, rank 5 slower in
compute, rank ``ranks - 3`` late every second step) unless they exist, then runs
``reduce_fleet(OUT)`` REPEATS times, each in a new Python process (imports included, as a user
meets it), and prints one JSON line: wall seconds of each run, the child's peak RSS in MB,
the fleet's counts and the stragglers the vote named. Expected stragglers: 5 and ranks - 3.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

CHILD = ("import sys, json, resource; from parity.trace.fleet.reduce import reduce_fleet; "
         "s = reduce_fleet(sys.argv[1], ranks_per_node=8); "
         "print(json.dumps({'counts': s.counts, 'stragglers': list(s.stragglers), "
         "'rss_mb': resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024}))")


def write_maps(out: Path, *, ranks: int, steps: int, segments: int, seed: int) -> int:
    """The map tables a real map would write for the simulated job (rank_info and collectives)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from parity.trace.fleet.synthetic import ELEMENT_BYTES, simulate
    from parity.trace.fleet.tables import MAP_TABLES, arrow_schema

    sim = simulate(ranks=ranks, steps=steps, segments=segments, slow_rank=5, late_rank=ranks - 3,
                   late_every=2, group_size=8, seed=seed)
    order = np.argsort(sim.c_rank, kind="stable")
    bounds = np.searchsorted(sim.c_rank[order], np.arange(ranks + 1))

    def write(table: str, rank: int, data: dict) -> None:
        schema = arrow_schema(MAP_TABLES[table])
        folder = out / "map" / table
        folder.mkdir(parents=True, exist_ok=True)
        columns = [pa.array(data.get(f.name, [-1 if pa.types.is_integer(f.type) else ""] * len(data["rank"])),
                            type=f.type) for f in schema]  # fmt: skip
        pq.write_table(pa.Table.from_arrays(columns, schema=schema), folder / f"rank-{rank:06d}.parquet")

    for rank in range(ranks):
        c = order[bounds[rank]: bounds[rank + 1]]
        ops = sim.c_op[c]
        write("collectives", rank, {
            "rank": [rank] * len(c), "group": sim.c_group[c].astype(str), "op": ops.astype(str), "seq": sim.c_seq[c],
            "start_ns": sim.c_start[c], "end_ns": sim.c_end[c], "step": sim.c_step[c],
            "bytes": np.where(ops == "allgather", sim.c_out_nelems[c], sim.c_in_nelems[c]) * ELEMENT_BYTES,
        })  # fmt: skip
        write("rank_info", rank, {"rank": [rank], "steps": [steps]})
    return len(sim.c_rank)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--ranks", type=int, default=1024)
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument("--segments", type=int, default=3)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--seed", type=int, default=2)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    out = Path(args.out)
    if not (out / "map").is_dir():
        write_maps(out, ranks=args.ranks, steps=args.steps, segments=args.segments, seed=args.seed)
    runs, last = [], {}
    for _ in range(args.repeats):
        start = time.perf_counter()
        done = subprocess.run([sys.executable, "-c", CHILD, str(out)], capture_output=True, text=True, check=True)
        runs.append(round(time.perf_counter() - start, 3))
        last = json.loads(done.stdout.strip().splitlines()[-1])
    print(json.dumps({"ranks": args.ranks, "steps": args.steps, "segments": args.segments, "wall_s": runs,
                      "median_s": sorted(runs)[len(runs) // 2], "peak_rss_mb": last["rss_mb"],
                      "counts": last["counts"], "stragglers": last["stragglers"],
                      "children_rss_mb": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss // 1024}))


if __name__ == "__main__":
    main()
