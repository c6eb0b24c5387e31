"""Copy and triad bandwidth: parity's membw suite against a STREAM-style C program, same run.

Compiles ``benchmarks/ref/stream.c`` with ``-O3 -march=native -fopenmp``, then for each round
measures copy and triad at ``--size`` per operand with parity (the membw suite's own case, cache
flushed before each call as in a normal run) and with the C program (``--reps`` repetitions),
alternating which goes first. Both count bytes the STREAM way (copy 2n, triad 3n) and use the
same number of threads (torch intra-op threads = OMP_NUM_THREADS). Prints the median GB/s of
each side over the rounds, the ratio, and whether it is within the 10% bar.

    python benchmarks/membw_vs_stream.py --size 1GiB --rounds 5
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
OUT = HERE / "out"
BAR = 0.10


def compile_reference() -> Path:
    OUT.mkdir(exist_ok=True)
    exe = OUT / "stream"
    subprocess.run(["gcc", "-O3", "-march=native", "-fopenmp", "-o", str(exe), str(HERE / "ref" / "stream.c")], check=True)
    return exe


def run_reference(exe: Path, *, size: int, reps: int, threads: int) -> dict[str, float]:
    env = {**os.environ, "OMP_NUM_THREADS": str(threads), "OMP_PROC_BIND": "false"}
    lines = subprocess.run([str(exe), str(size), str(reps)], env=env, check=True, capture_output=True, text=True).stdout
    rates: dict[str, list[float]] = {}
    for line in lines.splitlines():
        op, _, gbps = line.split()
        rates.setdefault(op, []).append(float(gbps))
    return {op: statistics.median(v) for op, v in rates.items()}


def run_parity(*, size: int, threads: int, budget_s: float) -> dict[str, float]:
    from parity.families.membw.options import MembwOptions
    from parity.families.membw.suite import MembwSuite
    from parity.harness.suite import CaseSpec
    from parity.device import get_device

    cpu = get_device("cpu")
    suite = MembwSuite()
    rates = {}
    for op in ("copy", "triad"):
        case = CaseSpec(suite="membw", key=f"{op}/{size}", params={
            "op": op, "bytes": size, "dtype": "float32", "flush": True, "quick": False, "device_name": "cpu"})
        result = suite.measure(case, device=cpu, options=MembwOptions(threads=threads, budget_s=budget_s))
        if not result.ok:
            raise SystemExit(f"parity {op} failed: {result.error or result.check}")
        rates[op] = result.metrics["gbps"]
    return rates


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size", default="1GiB", help="bytes per operand array (default 1GiB)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--reps", type=int, default=7, help="C repetitions per round")
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--budget-s", type=float, default=2.0, help="parity timing budget per case")
    args = parser.parse_args()
    from parity.device.host import parse_size

    size = parse_size(args.size)
    exe = compile_reference()
    ours: dict[str, list[float]] = {"copy": [], "triad": []}
    ref: dict[str, list[float]] = {"copy": [], "triad": []}
    for r in range(args.rounds):
        order = (run_parity, run_reference) if r % 2 == 0 else (run_reference, run_parity)
        for fn in order:
            if fn is run_parity:
                got = run_parity(size=size, threads=args.threads, budget_s=args.budget_s)
                for op in ours:
                    ours[op].append(got[op])
            else:
                got = run_reference(exe, size=size, reps=args.reps, threads=args.threads)
                for op in ref:
                    ref[op].append(got[op])
        print(f"round {r + 1}: parity " + ", ".join(f"{op} {ours[op][-1]:.2f}" for op in ours)
              + " | C " + ", ".join(f"{op} {ref[op][-1]:.2f}" for op in ref) + " GB/s", flush=True)
    print(f"\n{size} B per operand, {args.threads} threads, {args.rounds} rounds, STREAM bytes (copy 2n, triad 3n)")
    print(f"{'op':6} {'parity GB/s':>12} {'C GB/s':>10} {'ratio':>7}  within {BAR:.0%}")
    worst = 0.0
    for op in ours:
        a, b = statistics.median(ours[op]), statistics.median(ref[op])
        worst = max(worst, abs(a / b - 1))
        print(f"{op:6} {a:12.2f} {b:10.2f} {a / b:7.3f}  {'yes' if abs(a / b - 1) <= BAR else 'NO'}")
    return 0 if worst <= BAR else 1


if __name__ == "__main__":
    sys.exit(main())
