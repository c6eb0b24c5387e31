"""How often the own-shape check's 95% CI misses 1.0 when nothing is wrong.

The GEMM sweep quotes ``P``'s own shape, timed as a sweep shape, as a fraction of ``P`` with a
paired bootstrap CI over ``n`` pairs (``parity.metrics.ceiling.paired_own_shape_fraction``).
This draws pairs from a protocol with no bias: both members of pair ``i`` share the moment's
speed ``d_i`` (log-normal, sigma ``--drift``) and each has its own timing noise (log-normal,
sigma ``--noise``), so the true fraction is 1.0 and every miss is the CI's. It prints the miss
rate per ``n`` against the nominal 5%, and the chance that ``--runs`` runs in a row all hold
1.0 within their CI.

    python benchmarks/own_shape_ci_coverage.py --trials 1000
    python benchmarks/own_shape_ci_coverage.py --n 7 --drift 0.1 --noise 0.05 --json out.json
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np


def miss_rate(*, n: int, drift: float, noise: float, trials: int, seed: int) -> float:
    """Share of ``trials`` whose paired own-shape CI excludes 1.0 (unbiased pairs, see module)."""
    from parity.metrics.ceiling import paired_own_shape_fraction

    rng = np.random.default_rng(seed)
    misses = 0
    for _ in range(trials):
        moment = np.exp(rng.normal(0.0, drift, n))
        own = moment * np.exp(rng.normal(0.0, noise, n))
        rounds = moment * np.exp(rng.normal(0.0, noise, n))
        misses += not paired_own_shape_fraction(own.tolist(), rounds.tolist()).reproduced
    return misses / trials


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                     epilog="example: python benchmarks/own_shape_ci_coverage.py --trials 1000")
    parser.add_argument("--n", type=int, nargs="+", default=[5, 7, 10], help="pairs per run (7: a CPU sweep's)")
    parser.add_argument("--drift", type=float, nargs="+", default=[0.0, 0.1, 0.3],
                        help="sigma of the log speed of each pair's moment")
    parser.add_argument("--noise", type=float, default=0.05, help="sigma of each timing's log noise")
    parser.add_argument("--trials", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=5, help="runs in a row for the all-hold chance")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--json", type=Path, help="write the rows here")
    args = parser.parse_args(argv)
    rows = []
    print(f"{'n':>3} {'drift':>6} {'noise':>6} {'miss':>7} {'nominal':>8} {f'all {args.runs} hold':>12}")
    for n in args.n:
        for drift in args.drift:
            miss = miss_rate(n=n, drift=drift, noise=args.noise, trials=args.trials, seed=args.seed + n)
            hold = (1.0 - miss) ** args.runs
            rows.append({"n": n, "drift": drift, "noise": args.noise, "trials": args.trials, "miss_rate": miss,
                         "nominal": 0.05, f"all_{args.runs}_hold": hold})
            print(f"{n:>3} {drift:>6.2f} {args.noise:>6.2f} {miss:>7.3f} {0.05:>8.3f} {hold:>12.3f}")
    if args.json:
        args.json.write_text(json.dumps({"rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
