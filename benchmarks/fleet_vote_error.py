"""How often the fleet's straggler vote names a fair rank, and how often it names an injected one.

The vote (``docs/definitions.md``, Fleet trace analysis) promises a fleet-wide error below
``α = 0.01``: the chance that a fleet without a straggler names anyone. Its tests (the counts
of times last over all of a rank's collectives and per group, and the time it kept its
collectives waiting) are bounded by Chernoff and Hoeffding, so the real rate should sit well
below ``α``. This script measures it on synthetic jobs (:mod:`parity.trace.fleet.synthetic`:
exact simulations, compute jittered by a seeded ``[0, 3 µs)``), each seed a new job, and the
detection rate of each kind of injected straggler on the same shapes:

- ``null-world``: 16 ranks x 40 steps, three all_reduces of all ranks a step, no straggler;
- ``null-groups``: the same with the step's first two collectives all_gathers in groups of 4;
- ``slow``: rank 3's compute 30 µs longer at every segment (null-groups' shape);
- ``late-every-3``: rank 6 120 µs late before the step's first collective (its group's
  all_gather) in one step of three, 60 steps: the rank the counts miss (last in about 18% of
  its collectives against a fair 11%) and the time test names;
- ``late-in-group``: rank 2 200 µs late at its group's collective every second step;
- ``clock-ahead``: null-groups' shape with no straggler, rank 5's clock 100 µs ahead of the
  others' (longer than a collective, so the others' ops seem to end before it arrives): it seems
  last everywhere, so the vote names it, and it must be named in doubt;
- ``slow-clock-behind``: ``slow`` with rank 9's clock 100 µs behind: the world collectives are
  clock-suspect (rank 9 seems to end them early), rank 3's group collectives are not, so rank 3
  is named on them and not in doubt.

The vote depends on the reduce alone, so each job's map tables are written straight from the
simulation (``tests/fleet_maps.py``, the tables' contract; ``tests/trace/test_fleet_synthetic.py``
checks the same jobs through real Kineto files and the map). Printed per configuration: fleets,
how many named each rank set, the rate of fleets naming a fair rank with its 95% upper limit
(Clopper-Pearson; with no event in ``n`` fleets, ``1 - 0.025^(1/n)``, 1.8% for 200: a rate
below 1% needs more fleets than a quick run to be shown), and the rate of fleets naming the
injected ranks, and how many named a rank in doubt (``vote.in_doubt``: named only with
collectives a clock offset can explain). Bar: the observed rate of naming a fair rank, not in
doubt, at most ``α`` in every configuration.

    python benchmarks/fleet_vote_error.py --fleets 200
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from fleet_maps import write_maps  # noqa: E402

from parity.trace.fleet.reduce import reduce_fleet  # noqa: E402
from parity.trace.fleet.stragglers import VOTE_ALPHA  # noqa: E402
from parity.trace.fleet.synthetic import simulate, with_clock_offsets  # noqa: E402

GROUPS = dict(ranks=16, steps=40, segments=3, group_size=4)
CONFIGS = {  # name -> (simulation, injected stragglers, clock offsets in ns by rank)
    "null-world": (dict(ranks=16, steps=40, segments=3), (), {}),
    "null-groups": (GROUPS, (), {}),
    "slow": (dict(GROUPS, slow_rank=3), (3,), {}),
    "late-every-3": (dict(GROUPS, steps=60, late_rank=6, late_every=3), (6,), {}),
    "late-in-group": (dict(GROUPS, late_rank=2, late_every=2, late_ns=200_000), (2,), {}),
    "clock-ahead": (GROUPS, (), {5: 100_000}),
    "slow-clock-behind": (dict(GROUPS, slow_rank=3), (3,), {9: -100_000}),
}


def upper_bound(events: int, n: int, confidence: float = 0.95) -> float:
    """The upper limit of the two-sided Clopper-Pearson interval of a rate seen ``events`` times
    in ``n`` trials: the ``p`` with ``P(X <= events) = (1 - confidence) / 2``, ``X ~ Binomial(n,
    p)``, by bisection (no SciPy). Example: 0 of 100 -> 1 - 0.025^(1/100) = 0.0362."""
    from math import comb

    if events >= n:
        return 1.0
    tail = (1 - confidence) / 2

    def cdf(p: float) -> float:  # P(X <= events) for X ~ Binomial(n, p)
        return sum(comb(n, k) * p**k * (1 - p) ** (n - k) for k in range(events + 1))

    lo, hi = events / n, 1.0
    for _ in range(60):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if cdf(mid) > tail else (lo, mid)
    return hi


def run(name: str, shape: dict, injected: tuple[int, ...], offsets: dict[int, int], fleets: int, tmp: Path) -> bool:
    named: Counter = Counter()  # (stragglers, those in doubt) -> fleets
    started = time.perf_counter()
    for seed in range(fleets):
        out = tmp / f"{name}-{seed}"
        sim = simulate(**shape, seed=seed)
        write_maps(out, with_clock_offsets(sim, offsets) if offsets else sim)
        summary = reduce_fleet(str(out))
        named[(summary.stragglers, tuple(summary.vote["in_doubt"]))] += 1
        shutil.rmtree(out)
    wrong = sum(n for (ranks, doubted), n in named.items() if set(ranks) - set(injected) - set(doubted))
    found = sum(n for (ranks, _), n in named.items() if set(injected) <= set(ranks))
    doubting = sum(n for (_, doubted), n in named.items() if doubted)
    seen = ", ".join(f"{list(r) or 'none'}" + (f" (in doubt {list(d)})" if d else "") + f": {n}"
                     for (r, d), n in named.most_common())
    clocks = ", ".join(f"rank {r} {o / 1e3:+g} us" for r, o in offsets.items())
    print(f"{name}: {fleets} fleets ({time.perf_counter() - started:.0f} s)" + (f", clocks {clocks}" if clocks else "")
          + f"; named {seen}")
    print(f"  a fair rank named, not in doubt, in {wrong} ({wrong / fleets:.1%}, 95% upper bound "
          f"{upper_bound(wrong, fleets):.1%})"
          + (f"; the injected {list(injected)} named in {found} ({found / fleets:.1%})" if injected else "")
          + f"; a rank in doubt in {doubting} ({doubting / fleets:.1%})")
    return wrong / fleets <= VOTE_ALPHA


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fleets", type=int, default=200, help="jobs (seeds) per configuration")
    parser.add_argument("--configs", default=",".join(CONFIGS), help="configurations, comma-separated")
    args = parser.parse_args()
    ok = True
    with tempfile.TemporaryDirectory() as name:
        for config in args.configs.split(","):
            shape, injected, offsets = CONFIGS[config]
            ok &= run(config, shape, injected, offsets, args.fleets, Path(name))
    print(f"fair ranks named, not in doubt, at most {VOTE_ALPHA:.0%} of the time in every configuration: "
          f"{'PASS' if ok else 'FAIL'}")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
