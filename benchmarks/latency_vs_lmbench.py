"""Pointer-chase latency: parity's latency suite against an lmbench-style C chase, same run.

Compiles ``benchmarks/ref/lat_mem_rd.c`` (the lat_mem_rd method: a random ring at cache-line
stride, ``p = *p`` unrolled, total time over loads) and, page size for page size (4 KiB pages
and transparent huge pages), measures an L1-resident, an L2-resident and a DRAM-sized working
set with both, alternating which goes first each round, both pinned to one CPU (a virtual
machine's CPUs can differ: one may share its physical core's caches with another tenant). parity's figure is the slope between two
chain lengths; the C program's is the average over one long chain. Prints, for each point, the
median over rounds of both (each side's per-round figure is its median over repetitions, and,
on the second line, its minimum), the ratio, and whether it is within the 10% bar.

With ``--plateaus`` it also sweeps the size curve and compares the detected plateaus with the
cache sizes ``lscpu`` reports (the bar: within a factor of two).

    python benchmarks/latency_vs_lmbench.py --rounds 5 --plateaus
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
KIB, MIB = 1024, 1024 * 1024
POINTS = {"L1": 16 * KIB, "L2": 64 * KIB, "DRAM": 256 * MIB}
# Loads per timed chain of the C program: a few milliseconds at each level's latency, like
# parity's chains, so both sides see the same odds of being preempted on a shared machine.
C_LOADS = {"L1": 1 << 22, "L2": 1 << 20, "DRAM": 1 << 15}


def compile_reference() -> Path:
    OUT.mkdir(exist_ok=True)
    exe = OUT / "lat_mem_rd"
    subprocess.run(["gcc", "-O3", "-march=native", "-o", str(exe), str(HERE / "ref" / "lat_mem_rd.c")], check=True)
    return exe


def run_reference(exe: Path, *, size: int, page: str, loads: int, reps: int) -> tuple[float, float]:
    out = subprocess.run([str(exe), str(size), "64", page, str(loads), str(reps)], check=True,
                         capture_output=True, text=True).stdout
    values = [float(v) for v in out.split()]
    return statistics.median(values), min(values)


def run_parity(*, size: int, page: str) -> tuple[float, float]:
    from parity.bench.latency import LatencySuite
    from parity.bench.suite import CaseSpec
    from parity.device import get_device

    case = CaseSpec(suite="latency", key=f"size/{page}/{size}", params={
        "curve": "size", "page": page, "working_set_bytes": size, "blocks": 1, "stride_bytes": 64,
        "quick": False, "device": "cpu"})
    result = LatencySuite().measure(case, device=get_device("cpu"), options={})
    if not result.ok:
        raise SystemExit(f"parity {case.key} failed: {result.error or result.check}")
    m = result.metrics
    return m["ns_per_load"], m["ns_per_load_min"]


def compare(exe: Path, *, rounds: int, reps: int, pages: list[str]) -> bool:
    rows = []
    for page in pages:
        for level, size in POINTS.items():
            ours_med, ours_min, ref_med, ref_min = [], [], [], []
            for r in range(rounds):
                sides = ("parity", "c") if r % 2 == 0 else ("c", "parity")
                for side in sides:
                    if side == "parity":
                        med, low = run_parity(size=size, page=page)
                        ours_med.append(med), ours_min.append(low)
                    else:
                        med, low = run_reference(exe, size=size, page=page, loads=C_LOADS[level], reps=reps)
                        ref_med.append(med), ref_min.append(low)
            rows.append((page, level, size, statistics.median(ours_med), statistics.median(ref_med),
                         statistics.median(ours_min), statistics.median(ref_min)))
            print(f"{page:5} {level:5} done", flush=True)
    print(f"\n{'pages':5} {'level':5} {'size':>10} {'stat':6} {'parity ns':>10} {'C ns':>9} {'ratio':>7}  within {BAR:.0%}")
    ok = True
    for page, level, size, om, cm, on, cn in rows:
        for stat, a, b in (("median", om, cm), ("min", on, cn)):
            good = abs(a / b - 1) <= BAR
            ok &= good
            print(f"{page:5} {level:5} {size:>10} {stat:6} {a:10.2f} {b:9.2f} {a / b:7.3f}  {'yes' if good else 'NO'}")
    return ok


def lscpu_caches() -> dict[str, int]:
    out = subprocess.run(["lscpu", "-B", "-C=NAME,ONE-SIZE"], check=True, capture_output=True, text=True).stdout
    sizes = {}
    for line in out.splitlines()[1:]:
        name, size = line.split()
        if name != "L1i":
            sizes[name] = int(size)
    return sizes


def check_plateaus(pages: list[str]) -> bool:
    from parity.bench.latency import LatencySuite
    from parity.device import get_device

    cpu = get_device("cpu")
    suite = LatencySuite()
    cases = [c for c in suite.cases(device=cpu, quick=False, options={"pages": pages, "max_bytes": 256 * MIB})
             if c.params["curve"] == "size"]
    results = [suite.measure(c, device=cpu, options={}) for c in cases]
    summary = suite.summarize(results, options={})
    reported = lscpu_caches()
    print(f"\nlscpu: {reported}")
    ok = True
    for curve in summary["size_curves"]:
        print(f"{curve['page']} pages: " + ", ".join(f"{p['working_set_bytes'] // KIB} KiB {p['latency_ns']:.1f}"
                                                      for p in curve["points"]))
        for p in curve["plateaus"]:
            ratio = p.get("size_ratio")
            good = ratio is None or 0.5 <= ratio <= 2.0
            ok &= good
            print(f"  {p['level']:8} {p['latency_ns']:8.1f} ns  {p['start_bytes'] // KIB:>8} .. {p['size_bytes'] // KIB:>8} KiB"
                  f"  reported {p.get('reported_bytes') and p['reported_bytes'] // KIB} KiB"
                  f"  ratio {'-' if ratio is None else f'{ratio:.2f}'}  {'ok' if good else 'OUTSIDE 2x'}")
    return ok


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--reps", type=int, default=51, help="C repetitions per round")
    parser.add_argument("--pages", default="base,thp")
    parser.add_argument("--plateaus", action="store_true", help="also compare detected plateaus with lscpu")
    parser.add_argument("--cpu", type=int, default=None,
                        help="pin this process and the C program (which inherits it) to one CPU; "
                             "default: the first CPU this process may use")
    args = parser.parse_args()
    allowed = sorted(os.sched_getaffinity(0))
    cpu = allowed[0] if args.cpu is None else args.cpu
    os.sched_setaffinity(0, {cpu})  # both sides then run on the same core and its caches
    print(f"pinned to CPU {cpu}", flush=True)
    pages = args.pages.split(",")
    exe = compile_reference()
    ok = compare(exe, rounds=args.rounds, reps=args.reps, pages=pages)
    if args.plateaus:
        ok &= check_plateaus(pages)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
