"""parity's fleet analysis against TraceLens's multi-rank collective report (AMD) on the same
Kineto ranks: per collective the communication time and the start skew, per rank how often it
arrived last, and the time each takes as a whole process, alternated.

What each computes (TraceLens ``TraceLens/NcclAnalyser/nccl_analyser.py``):

- TraceLens keeps each rank's ``cat == "kernel"`` events named like a collective kernel that
  carry a correlation or External id; ``rank`` is the file's place in the rank order (the
  number in its name). A collective is ``<Process Group Name>_<index>``, the index the kernel's
  place among that rank's kernels of the group by ``ts`` (every kernel of the group, send and
  recv included). Without group names and with one stream per rank it matches by stream order
  alone. For allreduce, reducescatter, allgather and alltoall (``nccl_implicit_sync.csv``):
  ``comm_latency = min over ranks of dur``, ``skew in start time = max ts - min ts``, per rank
  ``wait = max ts - ts``; all_to_allv apart (``nccl_all2allv.csv``): the same start skew,
  ``min_rank_dur (us)`` and ``size_imbalance = max / mean`` of the ranks' input sizes; other
  collectives (broadcast, send/recv) get no per-collective figures. ``straggler_summary.csv``:
  per rank ``times_arrived_last`` (the rank of least wait in each implicit-sync collective;
  the first such rank on a tie) sorted by total wait, the least first. Times are float µs.
- parity (``parity trace fleet RANKS... --out DIR``): collectives matched by (group, seq),
  ``seq`` the op's place among the rank's collectives of its group by start, send/recv numbered
  apart, ``rank`` from ``distributedInfo``; ``comm_ns = min over members of (end - start)``,
  ``skew_ns = last arrival - first arrival`` (arrival = the kernel's start), ``last_rank`` (-1
  on a tie), ``size_imbalance = max / mean`` of the members' bytes; every collective op,
  broadcast included. Integer ns.

So the definitions of communication time, skew and size imbalance are the same. Pairing:
TraceLens's ``<group>_<index>`` is parity's ``(group, seq)`` (the same ordinal while a group
has no send/recv; checked by the op of each pair). Compared on every pair: |comm| and |skew|
within 1 µs, size imbalance within 1e-9 (all_to_allv), the last rank (pairs where parity sees
no tie), and per rank the times last over the implicit-sync pairs. TraceLens's straggler (its
summary's first row, one rank) and parity's vote (``stragglers.straggler``, any number) are
printed, not judged: they are different rules.

Jobs: synthetic jobs (``parity.trace.fleet.synthetic.write_fleet``, ``--sizes`` RANKSxSTEPS,
16x12, 24x200 and 32x2 by default: a slow rank 3, a rank 6 late every third step, a slow link
between the lower and the upper half of the ranks, sub-group all_gathers of 4, uneven
all_to_allv with rank 11 sending 3x; TraceLens's time grows with collectives x ranks, and it
fails on a process group of more than 30 ranks, whose ``Process Group Ranks`` Kineto cuts
to ``"[0, 1, ..., 29, ...]"``: ``reporting_utils._parse_pg_ranks`` reads the ``...`` as an
Ellipsis and ``int()`` raises, when its node columns are added, i.e. whenever the traces
carry ``deviceProperties`` or ``--gpus_per_node`` is given), the shared
``nccl_data.json.gz`` rank replicated to 8 ranks (``kineto_replica.py``: rank 5 2 µs late at
every collective, jitter below 1 µs), and the two real ranks ``sampled_rank-{0,1}.json.gz``
(SendRecv kernels on two streams, no group names: TraceLens reports nothing for them).

Bar: every pair within 1 µs, last ranks equal, and parity's whole process at least 5x faster
(median of alternated rounds, a first round of each left out). Both run from compiled bytecode,
as installed packages do: pip compiled the other tool's modules when it installed them, and
parity's are compiled first (``compileall``; a source checkout run with
``PYTHONDONTWRITEBYTECODE=1`` would compile every module in every process). The load average is
printed before and after each job's rounds. TraceLens runs from its own environment (from its
repository: ``pip install PATH`` of a checkout into a venv)::

    python benchmarks/fleet_vs_tracelens.py \\
        --tracelens /tmp/tracelens-venv/bin/TraceLens_generate_multi_rank_collective_report_pytorch --rounds 5
"""

from __future__ import annotations

import argparse
import csv
import math
import sys
import tempfile
from collections import Counter
from pathlib import Path

from alternated import ProcessFailed, alternate, print_verdict, whole_process
from fleet_vs_msprof_slow_rank import floor_line, start_floor
from kineto_replica import replicate
from trace_vs_hta_process import compile_parity, load_average

KINETO = Path(__file__).resolve().parent.parent.parent / "shared/data/traces/kineto/hta"
TOLERANCE_US = 1.0
BAR = 5.0
# TraceLens "Collective name" -> parity op
OPS = {"allreduce": "all_reduce", "allreduce_coalesced": "all_reduce", "allgather": "all_gather",
       "all_gather": "all_gather", "_allgather_base": "all_gather", "all_gather_into_tensor_coalesced": "all_gather",
       "allgather_into_tensor_coalesced": "all_gather", "reducescatter": "reduce_scatter",
       "_reduce_scatter_base": "reduce_scatter", "reduce_scatter_tensor_coalesced": "reduce_scatter",
       "all_to_all": "all_to_all", "all_to_allv": "all_to_all"}  # fmt: skip


def tracelens_command(tracelens: str, glob: str, ranks: int, out: Path) -> list[str]:
    return [tracelens, "--trace_glob", glob, "--world_size", str(ranks), "--output_csvs_dir", str(out)]


def parity_command(parity: list[str], paths: list[Path], out: Path) -> list[str]:
    return [*parity, "trace", "fleet", *map(str, paths), "--out", str(out)]


def read_csv(path: Path) -> list[dict]:
    if not path.is_file():
        return []
    with open(path, newline="") as handle:
        return list(csv.DictReader(handle))


def pair_key(collective_id: str) -> tuple[str, int]:
    """TraceLens's ``<group>_<index>`` as parity's ``(group, seq)``."""
    group, _, index = collective_id.rpartition("_")
    return (group or "default"), int(index)


def tracelens_last(row: dict) -> int:
    """The rank of least wait (TraceLens's ``idxmin``: the first on a tie)."""
    waits = {int(k[5:-10]): float(v) for k, v in row.items()
             if k.startswith("rank_") and k.endswith("_wait_time") and v}  # fmt: skip
    least = min(waits.values())
    return next(r for r, w in waits.items() if w == least)


def tracelens_all2allv_last(row: dict) -> int:
    starts = {int(k[5:-3]): float(v) for k, v in row.items() if k.startswith("rank_") and k.endswith("_ts") and v}
    latest = max(starts.values())
    return next(r for r, t in starts.items() if t == latest)


def compare(tl_out: Path, parity_out: Path) -> tuple[bool, list[str]]:
    """Agreement of the two outputs (module docstring) and the lines that say it."""
    import pyarrow.parquet as pq

    ours = {(r["group"], r["seq"]): r for r in pq.read_table(parity_out / "collectives.parquet").to_pylist()}
    named = [r["rank"] for r in pq.read_table(parity_out / "stragglers.parquet").to_pylist() if r["straggler"]]
    sync, a2a = read_csv(tl_out / "nccl_implicit_sync.csv"), read_csv(tl_out / "nccl_all2allv.csv")
    worst = {"comm": 0.0, "skew": 0.0, "imbalance": 0.0}
    pairs, missing, op_mismatch, last_differs, ties = 0, [], 0, [], 0
    tl_last, our_last = Counter(), Counter()
    for row, kind in [(r, "sync") for r in sync] + [(r, "a2a") for r in a2a]:
        key = pair_key(row["collective_id"])
        mine = ours.get(key)
        if mine is None:
            missing.append(row["collective_id"])
            continue
        pairs += 1
        op_mismatch += OPS.get(row["Collective name"], row["Collective name"]) != mine["op"]
        comm_us = float(row["comm_latency"] if kind == "sync" else row["min_rank_dur (us)"])
        worst["comm"] = max(worst["comm"], abs(mine["comm_ns"] / 1e3 - comm_us))
        worst["skew"] = max(worst["skew"], abs(mine["skew_ns"] / 1e3 - float(row["skew in start time"])))
        if kind == "a2a":
            worst["imbalance"] = max(worst["imbalance"], abs(mine["size_imbalance"] - float(row["size_imbalance"])))
        theirs = tracelens_last(row) if kind == "sync" else tracelens_all2allv_last(row)
        if mine["last_rank"] < 0:
            ties += 1
        elif theirs != mine["last_rank"]:
            last_differs.append(f"{row['collective_id']}: TraceLens {theirs}, parity {mine['last_rank']}")
        if kind == "sync" and mine["last_rank"] >= 0:
            tl_last[theirs] += 1
            our_last[mine["last_rank"]] += 1
    summary = read_csv(tl_out / "straggler_summary.csv")
    counted = {int(r["rank"]): int(r["times_arrived_last"]) for r in summary}
    counted = Counter({r: n for r, n in counted.items() if n})
    only_ours = Counter(r["op"] for k, r in ours.items()
                        if k not in {pair_key(x["collective_id"]) for x in sync + a2a})  # fmt: skip
    ok = (pairs > 0 and not missing and not op_mismatch and not last_differs
          and worst["comm"] <= TOLERANCE_US and worst["skew"] <= TOLERANCE_US and worst["imbalance"] <= 1e-9
          and (ties or counted == our_last))  # fmt: skip
    lines = [
        f"  pairs: {pairs} ({len(sync)} implicit-sync, {len(a2a)} all_to_allv rows of TraceLens); "
        f"TraceLens rows missing in parity {len(missing)}{' ' + str(missing[:5]) if missing else ''}; "
        f"op differs {op_mismatch}; parity-only collectives {dict(only_ours) or 'none'}",
        f"  max |parity - TraceLens|: comm {worst['comm']:.4f} us, skew {worst['skew']:.4f} us, "
        f"size imbalance {worst['imbalance']:.2e} (bar {TOLERANCE_US:g} us)",
        f"  last rank: {pairs - ties - len(last_differs)} of {pairs - ties} agree ({ties} ties in parity left out)"
        + "".join(f"\n    {d}" for d in last_differs[:5]),
        f"  times last per rank (implicit-sync pairs): TraceLens summary {dict(sorted(counted.items()))}, "
        f"parity {dict(sorted(our_last.items()))}",
        f"  straggler: TraceLens's first row {summary[0]['rank'] if summary else 'none'} (least total wait), "
        f"parity's vote {named or 'none'}",
    ]  # fmt: skip
    if not sync and not a2a:
        lines = [f"  TraceLens reports no per-collective figures (no group names, or several streams per rank); "
                 f"parity: {len(ours)} collectives {dict(Counter(r['op'] for r in ours.values()))}, "
                 f"stragglers {named or 'none'}; nothing to compare"]  # fmt: skip
        ok = True
    return ok, lines


def run_job(name: str, paths: list[Path], glob: str, args, parity: list[str], tmp: Path) -> tuple[bool, float]:
    print(f"{name}: {len(paths)} ranks, {glob}")
    runs = {
        "parity": lambda i: whole_process(parity_command(parity, paths, tmp / f"{name}-parity{i}")),
        "TraceLens": lambda i: whole_process(tracelens_command(args.tracelens, glob, len(paths),
                                                               tmp / f"{name}-tl{i}")),
    }  # fmt: skip
    try:
        before = load_average()
        times = alternate(runs, args.rounds)
        print(f"  load average: {before} before the rounds, {load_average()} after")
    except ProcessFailed as failed:  # round 0 runs parity first: this is TraceLens's
        import pyarrow.parquet as pq

        named = [r["rank"] for r in pq.read_table(tmp / f"{name}-parity0" / "stragglers.parquet").to_pylist()
                 if r["straggler"]]  # fmt: skip
        print(f"  TraceLens fails: {failed}\n  parity: stragglers {named or 'none'}; nothing to compare\n")
        return True, float("nan")
    agrees, lines = compare(tmp / f"{name}-tl{args.rounds}", tmp / f"{name}-parity{args.rounds}")
    return agrees, print_verdict(times, "TraceLens", BAR, agrees,
                                 [*lines, floor_line(args.floor_s, times, "TraceLens", BAR)], end="\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tracelens", required=True,
                        help="TraceLens's TraceLens_generate_multi_rank_collective_report_pytorch (its own venv)")
    parser.add_argument("--rounds", type=int, default=5, help="timed rounds of each tool (after one left out)")
    parser.add_argument("--sizes", default="16x12,24x200,32x2", help="synthetic jobs, RANKSxSTEPS, comma-separated")
    parser.add_argument("--parity", default=f"{sys.executable} -m parity", help="the parity command")
    args = parser.parse_args()
    parity = args.parity.split()
    # parity runs from bytecode, as an installed package does (the reference tools do), compiled
    # by the interpreter of the parity command
    compile_parity(parity[0] if parity[1:3] == ["-m", "parity"] else sys.executable)
    args.floor_s = start_floor(parity)
    from parity.trace.fleet.synthetic import write_fleet

    ok, ratios = True, []
    with tempfile.TemporaryDirectory() as name:
        tmp = Path(name)
        jobs = []
        for size in args.sizes.split(","):
            ranks, steps = (int(x) for x in size.split("x"))
            folder = tmp / f"synthetic-{size}"
            truth = write_fleet(folder, ranks=ranks, steps=steps, slow_rank=3, late_rank=6, slow_link=ranks // 2,
                                group_size=4, heavy_rank=11 % ranks, seed=1)  # fmt: skip
            print(f"synthetic-{size}: {ranks} ranks x {steps} steps, {len(truth.skew_ns)} collectives, "
                  f"injected stragglers {list(truth.stragglers)}")
            jobs.append((f"synthetic-{size}", sorted(folder.glob("rank-*.json.gz")), str(folder / "rank-*.json.gz")))
        replica = replicate(KINETO / "nccl_parser_config/nccl_data.json.gz", tmp / "replica", ranks=8)
        print(f"nccl_data-x8: nccl_data.json.gz x 8 ranks, slow rank {replica.slow_rank}\n")
        real = KINETO / "trace_filter"
        jobs += [("nccl_data-x8", list(replica.paths), str(tmp / "replica" / "rank-*.json.gz")),
                 ("sampled_rank-0-1", sorted(real.glob("sampled_rank-*.json.gz")),
                  str(real / "sampled_rank-*.json.gz"))]  # fmt: skip
        for job, paths, glob in jobs:
            agrees, ratio = run_job(job, paths, glob, args, parity, tmp)
            ok &= agrees
            ratios.append((job, ratio))
    fast = all(r >= BAR for _, r in ratios if not math.isnan(r))
    named = ", ".join(f"{job} TraceLens failed" if math.isnan(r) else f"{job} {r:.2f}x" for job, r in ratios)
    print(f"agreement: {'PASS' if ok else 'FAIL'}; speed: {'PASS' if fast else 'FAIL'} "
          f"(ratios {named}, against the {BAR:g}x bar)")
    sys.exit(0 if ok and fast else 1)


if __name__ == "__main__":
    main()
