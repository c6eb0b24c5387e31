"""The fleet map at scale: 1,024 ranks of a few MB each, two workers, local pool and Dask.

A real Kineto rank (``nccl_parser_config/nccl_data.json.gz``: 8.6 MB of JSON, 40,573 events,
21 NCCL kernels with their arguments) is replicated into ``--ranks`` files, each with its
``distributedInfo.rank`` rewritten. Each file is two gzip members: the few bytes up to the rank
number, compressed per rank, and the rest, compressed once (gzip readers inflate the members as
one stream), so writing 1,024 files takes seconds and ~0.75 MB of disk each.

Measured, each in a fresh process (pyperf's rule: nothing warm carried from one figure to the
next), and printed with the machine's load average (other work on the cores slows every figure):

- ``per_rank_s``: one rank's ``summarize_rank`` in a fresh process, once the process has
  mapped one rank before it (so the imports a worker pays once, pyarrow's among them, are left
  out: the stricter bar); the median over ``--samples`` fresh processes. The first rank's time
  (imports included) is printed beside it. The bar is ``ideal_s = per_rank_s x ranks / workers``
  and the map's wall time must be within 1.2x of it;
- ``one_rank_rss``: the peak RSS (``ru_maxrss``) of a fresh process that mapped one rank, imports
  included;
- the local map (``map_ranks``, ``--workers`` processes): wall time from the call to its return
  (pool start-up included) and the peak RSS of its largest worker (``RUSAGE_CHILDREN`` of the
  process that ran it: the largest ``ru_maxrss`` among its waited-for children); bar 1.5x
  ``one_rank_rss``;
- the CPU time of the local map's workers (``RUSAGE_CHILDREN`` user + system) against one
  rank's CPU time x ranks: how much work the executor adds, whatever else runs on the cores
  (wall times are slowed by other work there; CPU times much less);
- the same map on a Dask ``LocalCluster`` (``--workers`` single-threaded worker processes on
  loopback): wall time, and every file it wrote compared byte for byte with the local map's.

    python benchmarks/fleet_scaling.py                    # 1,024 ranks, 2 workers
    python benchmarks/fleet_scaling.py --ranks 32 --keep /tmp/fleet   # a quick look, files kept
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SOURCE = Path(__file__).resolve().parent.parent.parent / "shared/data/traces/kineto/hta/nccl_parser_config/nccl_data.json.gz"
MARK = 987654321  # placeholder rank, unique in the source text


def write_fleet(folder: Path, ranks: int) -> int:
    """``ranks`` copies of :data:`SOURCE`, rank rewritten (module docstring); bytes written."""
    document = json.loads(gzip.decompress(SOURCE.read_bytes()))
    document["distributedInfo"]["rank"] = MARK
    text = json.dumps(document).encode()
    assert text.count(str(MARK).encode()) == 1
    head, tail = text.split(str(MARK).encode())
    tail_gz = gzip.compress(tail, compresslevel=6, mtime=0)
    folder.mkdir(parents=True, exist_ok=True)
    total = 0
    for rank in range(ranks):
        data = gzip.compress(head + str(rank).encode(), mtime=0) + tail_gz
        (folder / f"rank-{rank:06d}.json.gz").write_bytes(data)
        total += len(data)
    return total


def _child(code: str) -> dict:
    """Run ``code`` in a fresh interpreter (this checkout's ``src`` first on the path); the JSON
    object it prints last."""
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parent.parent / "src"))
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=False)
    if done.returncode != 0:
        raise SystemExit(f"child failed: {done.stderr.strip().splitlines()[-1] if done.stderr else done.returncode}")
    return json.loads(done.stdout.strip().splitlines()[-1])


ONE_RANK = """
import json, resource, time
from parity.trace.fleet.mapper import summarize_rank
t = time.perf_counter()
summarize_rank({path!r}, {out!r})
cold = time.perf_counter() - t
rss_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
t, c = time.perf_counter(), time.process_time()
summarize_rank({second!r}, {out!r})
print(json.dumps({{"cold_s": cold, "s": time.perf_counter() - t, "cpu_s": time.process_time() - c, "rss_kb": rss_kb}}))
"""
MAP = """
import json, resource, time
from parity.trace.fleet.executor import map_ranks
if __name__ == "__main__":
    t = time.perf_counter()
    map_ranks([{folder!r}], {out!r}, executor={executor!r}, workers={workers}, scheduler={scheduler!r})
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    print(json.dumps({{"s": time.perf_counter() - t, "children_rss_kb": children.ru_maxrss,
                      "children_cpu_s": children.ru_utime + children.ru_stime}}))
"""


def _files(out: Path) -> dict[str, bytes]:
    return {str(p.relative_to(out)): p.read_bytes() for p in sorted((out / "map").rglob("*.parquet"))}


def _load() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3]) if Path("/proc/loadavg").exists() else "?"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ranks", type=int, default=1024)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--samples", type=int, default=5, help="fresh processes timing one rank each")
    parser.add_argument("--keep", type=Path, help="write the fleet and outputs here and keep them")
    args = parser.parse_args()
    root = args.keep or Path(tempfile.mkdtemp(prefix="parity-fleet-"))
    try:
        t = time.perf_counter()
        size = write_fleet(root / "traces", args.ranks)
        print(f"fleet: {args.ranks} ranks of {size / args.ranks / 1e6:.2f} MB gzip (8.6 MB JSON) each, "
              f"{size / 1e9:.2f} GB, written in {time.perf_counter() - t:.1f} s; load average {_load()}")
        step = max(1, args.ranks // args.samples)
        trace = root / "traces"
        ones = [_child(ONE_RANK.format(path=str(trace / f"rank-{r:06d}.json.gz"), out=str(root / "one"),
                                       second=str(trace / f"rank-{(r + 1) % args.ranks:06d}.json.gz")))
                for r in range(0, args.ranks, step)[: args.samples]]  # fmt: skip
        per_rank_s = statistics.median(o["s"] for o in ones)
        one_rss_mb = statistics.median(o["rss_kb"] for o in ones) / 1024
        ideal_s = per_rank_s * args.ranks / args.workers
        samples = ", ".join(f"{o['s'] * 1e3:.0f}" for o in ones)
        cold_s = statistics.median(o["cold_s"] for o in ones)
        print(f"one rank, fresh process: {per_rank_s * 1e3:.0f} ms after a first rank (median of {len(ones)} "
              f"processes: {samples} ms; the first rank, imports included: {cold_s * 1e3:.0f} ms), "
              f"peak RSS of one rank alone {one_rss_mb:.0f} MB; "
              f"load average {_load()}")
        runs = {}
        for executor, scheduler in (("local", None), ("dask", "local")):
            runs[executor] = _child(MAP.format(folder=str(root / "traces"), out=str(root / executor), executor=executor,
                                               workers=args.workers, scheduler=scheduler))  # fmt: skip
            print(f"{executor} map: {runs[executor]['s']:.1f} s wall; load average {_load()}")
        local, dask = runs["local"], runs["dask"]
        worker_rss_mb = local["children_rss_kb"] / 1024
        same = _files(root / "local") == _files(root / "dask")
        count = len(_files(root / "local"))
        wall_ratio = local["s"] / ideal_s
        rss_ratio = worker_rss_mb / one_rss_mb
        print(f"wall: local {local['s']:.1f} s vs per-rank x ranks / workers = {per_rank_s:.3f} x {args.ranks} / "
              f"{args.workers} = {ideal_s:.1f} s: {wall_ratio:.2f}x (bar 1.2x): {'PASS' if wall_ratio <= 1.2 else 'FAIL'}")
        per_rank_cpu_s = statistics.median(o["cpu_s"] for o in ones)
        print(f"cpu: local workers {local['children_cpu_s']:.1f} s vs one rank's {per_rank_cpu_s:.3f} s x {args.ranks} = "
              f"{per_rank_cpu_s * args.ranks:.1f} s: {local['children_cpu_s'] / (per_rank_cpu_s * args.ranks):.2f}x")
        print(f"memory: largest local worker peak RSS {worker_rss_mb:.0f} MB vs one rank alone {one_rss_mb:.0f} MB: "
              f"{rss_ratio:.2f}x (bar 1.5x): {'PASS' if rss_ratio <= 1.5 else 'FAIL'}")
        print(f"dask LocalCluster: {dask['s']:.1f} s wall ({dask['s'] / ideal_s:.2f}x ideal); {count} files "
              f"{'identical' if same else 'DIFFER'} to the local map's: {'PASS' if same else 'FAIL'}")
        print(f"load average at the end {_load()} on {os.cpu_count()} CPUs")
    finally:
        if args.keep is None:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
