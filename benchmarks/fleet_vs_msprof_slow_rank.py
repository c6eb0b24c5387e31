"""parity's fleet analysis against msprof-analyze's ``slow_rank`` recipe (Huawei's cluster
analysis) on the same Ascend ranks: the slow rank, the slow rank of each collective, and the
time each takes as a whole process, alternated.

What each computes:

- msprof-analyze (``msprof-analyze cluster -m slow_rank -d DIR --export_type text``) reads each
  rank's ``COMMUNICATION_OP`` table (the database export only: it refuses the text export),
  drops send/receive and any group whose operations do not occur equally often, and for each
  ``(groupName, opName)`` (one collective: the HCCL name is the same on every member) tests
  the members' durations ``endNs - startNs`` for one abnormally short one: Dixon's test at
  99.5% for 3 to 100 ranks, mean - 3 sigma above 100 (never for fewer than 3 ranks, nor with 3
  or fewer distinct durations). The short one is the rank the others waited for, i.e. the one
  that arrived last. Each such collective is a vote; ``rank_stats.csv`` lists the votes per
  rank (``slowAffectCount``), ``slow_op_stats.csv`` the voted rank of each collective.
- parity (``parity trace fleet RANKS... --out DIR``) matches collectives by (group, seq),
  takes each member's arrival as its operation's start, names the last arriver of every
  collective (``collectives.last_rank``), and votes by arrival order (``stragglers``:
  ``straggler`` true when a rank is last clearly more often than ``1/members``).

The two agree when the ends of a collective coincide on its members (then the shortest
duration is the latest start), which is what a blocking collective does. Compared here: the
slow rank (msprof-analyze's rank with the most votes, none without votes; parity's first row
of ``stragglers`` with ``straggler`` true, none without) and, for every collective
msprof-analyze voted on, its voted rank against parity's ``last_rank`` of the same collective
(paired by the HCCL op name: parity's map table ``collectives`` gives each name's (group, seq)).

Jobs: the shared two-rank folders (``text/level1``, which msprof-analyze's recipe cannot read,
and ``db/level0``), and ``db/level0``'s rank 0 replicated to 64 ranks by
``ascend_replica.py`` (rank 37 arrives 500 us late at every collective, rank 5 1 ms late at the
third, jitter below 50 us) in a temporary folder.

Bar: the slow rank agrees on every job both can answer, every voted collective's rank equals
parity's last rank, and parity's whole process is at least 5x faster (median of the alternated
rounds, a first round of each left out). Both run from compiled bytecode, as installed packages
do: pip compiled the other tool's modules when it installed them, and parity's are compiled
first (``compileall``; a source checkout run with ``PYTHONDONTWRITEBYTECODE=1`` would compile
every module in every process). The load average is printed before and after each job's rounds.
msprof-analyze runs from its own environment, and parity from one of its own with the fleet
extra (the fleet analysis writes Parquet through pyarrow), named by ``--parity``::

    python -m venv /tmp/msprof && /tmp/msprof/bin/pip install msprof-analyze
    python -m venv /tmp/parity-venv && /tmp/parity-venv/bin/pip install -e '.[fast,fleet]'
    python benchmarks/fleet_vs_msprof_slow_rank.py --msprof /tmp/msprof/bin/msprof-analyze --rounds 5 \
        --parity "/tmp/parity-venv/bin/python -m parity"
"""

from __future__ import annotations

import argparse
import csv
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from alternated import alternate, print_verdict, whole_process
from ascend_replica import replicate
from trace_vs_hta_process import compile_parity, load_average

ASCEND = Path(__file__).resolve().parent.parent.parent / "shared/data/traces/ascend/msinsight"
RECIPE = Path("cluster_analysis_output") / "SlowRankAnalysis"
BAR = 5.0


# What every parity trace fleet process does before it reads a rank: the interpreter and the
# command's imports (numpy, pyarrow's Parquet writer, rich, click, the fleet modules).
FLOOR_CODE = ("from parity.cli.numpy_load import import_numpy_single_threaded; import_numpy_single_threaded(); "
              "import parity.cli.main, parity.cli.trace_fleet, parity.trace.fleet.reduce, parity.report.fleet; "
              "import rich.console, rich.table; from parity.trace.fleet.executor import import_pyarrow_for_fork; "
              "import_pyarrow_for_fork()")


def start_floor(parity: list[str], runs: int = 5) -> float:
    """Median wall seconds of a process that only starts as ``parity trace fleet`` does
    (:data:`FLOOR_CODE`), on the parity command's interpreter: no fleet command can take less."""
    python = parity[0] if parity[1:3] == ["-m", "parity"] else sys.executable
    return statistics.median(whole_process([python, "-c", FLOOR_CODE]) for _ in range(runs))


def floor_line(floor: float, times: dict[str, list[float]], theirs: str, bar: float) -> str:
    """What the start-up floor allows: the reference's median over the floor, beside the bar."""
    other = statistics.median(times[theirs])
    return (f"  start-up floor: parity {floor:.3f} s before it reads a rank (interpreter and imports); "
            f"{theirs} {other:.3f} s / floor = {other / floor:.2f}x at most, against the {bar:g}x bar")


def msprof_command(msprof: str, folder: Path, out: Path) -> list[str]:
    return [msprof, "cluster", "-m", "slow_rank", "-d", str(folder), "-o", str(out), "--export_type", "text"]


def parity_command(parity: list[str], ranks: list[Path], out: Path) -> list[str]:
    return [*parity, "trace", "fleet", *map(str, ranks), "--out", str(out)]


def msprof_refusal(msprof: str, folder: Path, out: Path) -> str | None:
    """msprof-analyze's error line when its recipe refuses ``folder`` (it exits 0 either way)."""
    done = subprocess.run(msprof_command(msprof, folder, out), capture_output=True, text=True)
    errors = [line for line in (done.stdout + done.stderr).splitlines() if "[ERROR]" in line]
    return errors[-1].split("]", 3)[-1].strip() if errors else None


def msprof_votes(out: Path) -> tuple[dict[int, int], list[dict]]:
    """``({rank: votes}, slow_op_stats rows)``; empty when the recipe found no slow rank (it
    then writes no file)."""
    stats, ops = out / RECIPE / "rank_stats.csv", out / RECIPE / "slow_op_stats.csv"
    if not stats.is_file():
        return {}, []
    with open(stats, newline="") as handle:
        votes = {int(row["rankId"]): int(row["slowAffectCount"]) for row in csv.DictReader(handle)}
    with open(ops, newline="") as handle:
        return votes, list(csv.DictReader(handle))


def parity_tables(out: Path) -> tuple[list[dict], dict[tuple[str, int], int], dict[tuple[str, str], int]]:
    """parity's straggler rows, ``{(group, seq): last_rank}`` and ``{(group, op name): seq}``."""
    import pyarrow.parquet as pq

    stragglers = pq.read_table(out / "stragglers.parquet").to_pylist()
    last = {(r["group"], r["seq"]): r["last_rank"] for r in pq.read_table(out / "collectives.parquet").to_pylist()}
    names = pq.read_table(out / "map" / "collectives", columns=["group", "name", "seq"]).to_pylist()
    return stragglers, last, {(r["group"], r["name"]): r["seq"] for r in names}


def slow_rank_of_votes(votes: dict[int, int]) -> int | None:
    """msprof-analyze's slow rank: the most votes (None without votes or on a tie at the top)."""
    if not votes:
        return None
    top = max(votes.values())
    leaders = [rank for rank, n in votes.items() if n == top]
    return leaders[0] if len(leaders) == 1 else None


def compare(msprof_out: Path, parity_out: Path) -> tuple[bool, list[str]]:
    """Agreement of the two outputs and the lines that say it."""
    votes, ops = msprof_votes(msprof_out)
    stragglers, last, seq_of = parity_tables(parity_out)
    theirs = slow_rank_of_votes(votes)
    named = [r for r in stragglers if r["straggler"]]
    ours = named[0]["rank"] if named else None
    lines = [f"  slow rank: msprof-analyze {theirs if theirs is not None else 'none'} (votes {votes or '{}'}), "
             f"parity {ours if ours is not None else 'none'} (stragglers "
             f"{[r['rank'] for r in named]}; times last "
             f"{ {r['rank']: r['times_last'] for r in stragglers if r['times_last']} })"]  # fmt: skip
    paired = agreeing = unpaired = 0
    for row in ops:
        seq = seq_of.get((row["GroupName"], row["OpName"]))
        if seq is None:
            unpaired += 1
            continue
        paired += 1
        mine = last.get((row["GroupName"], seq))
        agreeing += str(mine) == row["SlowRank"]
        if str(mine) != row["SlowRank"]:
            lines.append(f"    {row['OpName']}: msprof-analyze {row['SlowRank']}, parity last rank {mine}")
    lines.append(f"  per collective: msprof-analyze voted on {len(ops)} of parity's {len(last)} collectives; "
                 f"{agreeing} of {paired} paired agree with parity's last rank, {unpaired} not found in parity")
    return theirs == ours and agreeing == paired and not unpaired, lines


def run_job(name: str, folder: Path, ranks: list[Path], args, parity: list[str], tmp: Path) -> tuple[bool, float]:
    """One job: timing rounds, then agreement of the last round's outputs; ``(agrees, ratio)``."""
    print(f"{name}: {len(ranks)} ranks, {folder}")
    refused = msprof_refusal(args.msprof, folder, tmp / f"{name}-probe")
    if refused:
        subprocess.run(parity_command(parity, ranks, tmp / f"{name}-parity"), check=True, capture_output=True)
        stragglers, last, _ = parity_tables(tmp / f"{name}-parity")
        named = [r["rank"] for r in stragglers if r["straggler"]]
        print(f"  msprof-analyze refuses it: {refused}")
        print(f"  parity: {len(last)} collectives, stragglers {named or 'none'}; nothing to compare")
        return True, float("nan")
    runs = {
        "parity": lambda i: whole_process(parity_command(parity, ranks, tmp / f"{name}-parity{i}")),
        "msprof-analyze": lambda i: whole_process(msprof_command(args.msprof, folder, tmp / f"{name}-msprof{i}")),
    }
    before = load_average()
    times = alternate(runs, args.rounds)
    print(f"  load average: {before} before the rounds, {load_average()} after")
    agrees, lines = compare(tmp / f"{name}-msprof{args.rounds}", tmp / f"{name}-parity{args.rounds}")
    return agrees, print_verdict(times, "msprof-analyze", BAR, agrees,
                                 [*lines, floor_line(args.floor_s, times, "msprof-analyze", BAR)])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--msprof", required=True, help="the msprof-analyze command (its own environment)")
    parser.add_argument("--rounds", type=int, default=5, help="timed rounds of each tool (after one left out)")
    parser.add_argument("--ranks", type=int, default=64, help="ranks of the replicated job")
    parser.add_argument("--parity", default=f"{sys.executable} -m parity", help="the parity command")
    args = parser.parse_args()
    parity = args.parity.split()
    # parity runs from bytecode, as an installed package does (the reference tools do), compiled
    # by the interpreter of the parity command
    compile_parity(parity[0] if parity[1:3] == ["-m", "parity"] else sys.executable)
    args.floor_s = start_floor(parity)
    ok, ratios = True, []
    with tempfile.TemporaryDirectory() as name:
        tmp = Path(name)
        replica = replicate(ASCEND / "db/level0/rank0_ascend_pt", tmp / "replica", ranks=args.ranks)
        print(f"replica: {args.ranks} ranks of db/level0 rank 0; expected last rank per collective "
              f"{list(replica.last_rank)}, slow rank {replica.slow_rank}\n")
        jobs = [("text-level1", ASCEND / "text/level1"), ("db-level0", ASCEND / "db/level0"),
                (f"db-level0-x{args.ranks}", tmp / "replica")]  # fmt: skip
        for job, folder in jobs:
            ranks = sorted(folder.glob("rank*_ascend_pt"), key=lambda p: int(p.name[4:].split("_")[0]))
            agrees, ratio = run_job(job, folder, ranks, args, parity, tmp)
            ok &= agrees
            if ratio == ratio:
                ratios.append(ratio)
            print()
    fast = all(r >= BAR for r in ratios)
    print(f"agreement: {'PASS' if ok else 'FAIL'}; speed: {'PASS' if fast else 'FAIL'} "
          f"(ratios {', '.join(f'{r:.2f}x' for r in ratios)} against the {BAR:g}x bar)")
    sys.exit(0 if ok and fast else 1)


if __name__ == "__main__":
    main()
